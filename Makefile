# The two commands a new user types: `make study` and `make test`.
# Both create the virtual environment when it is missing (with the study kit:
# papermill, Spark, Jupyter; Spark needs Java 17+ on PATH).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
SCALE  ?= 1
ENGINE ?= papermill
KEEP   ?= needed
CAMPAIGN ?= safety
SCHEDULES ?= 2500

.PHONY: durability study test test-slow test-accelerated accelerate test-browser s3a-jars bench bench-sweep dist lab run clean snapshot campaign validation

# setuptools' notice on every editable install ("Editable installation ... be careful with folders ...") says nothing
# to act on here: hidden, so the install prints nothing unless something goes wrong
$(STAMP): pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	PYTHONWARNINGS='ignore:Editable installation' $(PY) -m pip install --quiet -e '.[study,test]'
	touch $(STAMP)

## study: set up, run every study (sweeps, Spark aggregation, HTML reports); SCALE=4 for 4x the seeds,
## ENGINE=spark to run the sweep points as Spark tasks instead of notebooks; KEEP=all to keep every run's
## per-record table (by default only the parts whose analysis pools record latency keep it)
study: $(STAMP)
	SCALE=$(SCALE) $(PY) -m kafkamodel study --engine $(ENGINE) --keep $(KEEP)

## test: the fast test suite (the study kit's tests start one local Spark session); the browser tests run when
## Debian's Chromium is installed (apt-get install chromium) and are skipped, saying so, when it is not.
## TEST_WORKERS=N runs N pytest-xdist workers (default auto: one per core; 0: in this process); every test that
## starts Spark runs on one of them (tests/conftest.py)
TEST_WORKERS ?= auto
test: $(STAMP)
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadgroup

## test-browser: only the browser tests (the explorer in JupyterLab, the reports), a missing Chromium a failure
test-browser: $(STAMP)
	KAFKAMODEL_REQUIRE_BROWSER=1 $(PY) -m pytest -n $(TEST_WORKERS) --dist loadgroup -m browser

## test-slow: the long tests (more hypothesis examples), bounded; the object-store test runs when `make s3a-jars`
## has fetched its jars (skipped, saying so, when not)
S3A_JARS := .cache/s3a-jars
S3A_VERSION := 1.4.5
S3A_JAR_NAMES := hadoop-aws-3.3.1.jar aws-java-sdk-bundle-1.11.901.jar
test-slow: $(STAMP)
	KAFKAMODEL_S3A_JARS=$${KAFKAMODEL_S3A_JARS:-$(CURDIR)/$(S3A_JARS)} $(PY) -m pytest -n $(TEST_WORKERS) --dist loadgroup -m 'slow and not accelerated'

## accelerate: the optional mypyc accelerator (docs/speed.md, "mypyc, measured"): the event loop's modules compiled
## from the same source into build/accelerated (mypy in its own venv, .cache/mypyc-venv); run a command from there
## (cd build/accelerated && ../../.venv/bin/python -m kafkamodel bench). The interpreted package is not touched.
accelerate: $(STAMP)
	PYTHON=$(PY) tools/build_accelerated.sh

## test-accelerated: build the accelerator into a temporary folder and check that it gives the snapshot's numbers
test-accelerated: $(STAMP)
	$(PY) -m pytest -m accelerated

## s3a-jars: hadoop-aws and the AWS SDK for the object-store test (tests/test_object_store.py), taken from the
## PyPI package that carries them (sagemaker-pyspark 1.4.5, 181 MB; Maven Central is not needed)
s3a-jars: $(S3A_JARS)/.fetched
$(S3A_JARS)/.fetched: | $(STAMP)
	rm -rf $(S3A_JARS).tmp && mkdir -p $(S3A_JARS).tmp
	$(PY) -m pip download --quiet --no-deps --dest $(S3A_JARS).tmp sagemaker-pyspark==$(S3A_VERSION)
	tar -xzf $(S3A_JARS).tmp/sagemaker_pyspark-$(S3A_VERSION).tar.gz -C $(S3A_JARS).tmp --strip-components=3 \
		$(addprefix sagemaker_pyspark-$(S3A_VERSION)/deps/jars/,$(S3A_JAR_NAMES))
	mkdir -p $(S3A_JARS) && mv $(S3A_JARS).tmp/*.jar $(S3A_JARS)/ && rm -rf $(S3A_JARS).tmp && touch $@

## validation: the validation set (data/validation/): published measurements of real Kafka vs the model ->
## reports/validation.html and validation.json; then README.md's table from them
validation: $(STAMP)
	$(PY) -m kafkamodel validation
	$(PY) -m kafkamodel validation --readme

## campaign: the fault campaign data/campaigns/$(CAMPAIGN).yaml, $(SCHEDULES) schedules per setting (the safety
## campaign's 4 settings: 10,000 runs) on Spark local[*]; resumable. Counterexamples go to data/campaigns/$(CAMPAIGN)/,
## the report to reports/campaign_$(CAMPAIGN).html
campaign: $(STAMP)
	$(PY) -m kafkamodel campaign $(CAMPAIGN) --engine spark --master 'local[*]' --schedules $(SCHEDULES)

## durability: the durability study (data/durability/studies/durability.yaml: configurations x failure-rate
## profiles) -> reports/durability.html and durability.json; 150 windows: 977 detailed runs, 13 min measured cold
## on 2 quiet cores (docs/durability.md), not part of `make study`; resumable (the detailed runs are kept in data/runs/durability/); WINDOWS=N overrides the spec's failure windows; WORKERS=N
## processes for the detailed runs (default: cores); ENGINE=spark (MASTER=local[2]) or ENGINE=papermill runs them as
## the campaign's sweep points (default here: local, a process pool; the same numbers)
durability: $(STAMP)
	$(PY) -m kafkamodel.durability.study $(if $(WINDOWS),--windows $(WINDOWS)) $(if $(WORKERS),--workers $(WORKERS)) \
		$(if $(filter command line environment,$(origin ENGINE)),--engine $(ENGINE)) $(if $(MASTER),--master '$(MASTER)')

## snapshot: re-record the model's regression snapshot (tests/snapshots/) after a change that moves numbers
## on purpose; prints which numbers moved. Commit it on its own, saying why.
snapshot: $(STAMP)
	$(PY) tests/snapshot.py --update
	$(PY) tests/snapshot.py --update --studies

## bench: simulated records per CPU-second and bytes per record
bench: $(STAMP)
	$(PY) -m kafkamodel bench

## bench-sweep: points per second and per-point overhead of papermill and Spark local[1], local[2] (run folders)
## and local[2] into a runs dataset at a file:// URI
bench-sweep: $(STAMP)
	$(PY) -m kafkamodel bench --sweep

## dist: the package for Spark executors: dist/kafkamodel-VERSION+HASH.zip (--py-files) and a wheel
dist: $(STAMP)
	$(PY) -m pip wheel --quiet --no-deps --wheel-dir dist .
	$(PY) -m kafkamodel.kit.ship dist

## lab: JupyterLab on the notebooks, with the repository's jupyter_server_config.py (the kit's notebooks are
## saved without outputs); as root it needs --allow-root, added here
lab: $(STAMP)
	$(VENV)/bin/jupyter lab --config=jupyter_server_config.py notebooks $(if $(filter 0,$(shell id -u)),--allow-root)

clean:
	rm -rf $(VENV) data/runs data/processed dist build .pytest_cache .hypothesis
