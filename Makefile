# The two commands a new user types: `make study` and `make test`.
# Both create the virtual environment when it is missing.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: study test test-slow bench run clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

## study: set up, then run every shipped scenario and print its summary
study: $(STAMP)
	$(PY) -m kafkamodel study

## test: the fast test suite
test: $(STAMP)
	$(PY) -m pytest

## test-slow: the long tests (more hypothesis examples), bounded
test-slow: $(STAMP)
	$(PY) -m pytest -m slow

## bench: simulated records per CPU-second and bytes per record
bench: $(STAMP)
	$(PY) -m kafkamodel bench

clean:
	rm -rf $(VENV) data/runs data/processed .pytest_cache .hypothesis
