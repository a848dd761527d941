"""The kit: the machinery every batch job uses (sweeps of points, engines, run folders, aggregation, reports).

The studies (``kafkamodel.studies``), the fault campaigns (``kafkamodel.campaign``), the durability study
(``kafkamodel.durability``) and the validation set (``kafkamodel.validation``) use the kit through the names
this module exports (``__all__``), never its modules' other names; ``tests/test_layers.py`` holds them to it.

One module per job:

* ``spec``: a sweep spec expanded into points (``Spec``, ``Point``, ``point_of``); ``specfile`` reads and
  checks spec files (``load_spec``, ``load_spec_file``); ``fields``: the one declarative checker of every spec
  kind's keys (sweeps, campaigns, durability, validation cases);
* ``point``: running one point (``run_point(point) -> Result``), the pure unit every engine calls;
* ``sweep``: planning a sweep (check, lock, skip finished runs), running it on an engine, tallying its outcome;
* ``runs``: run folders: staging, publishing, the study lock, failure records, timing; ``dataset``: the runs'
  tables as one dataset (local or an object store);
* ``engines``: ``papermill`` (notebooks of a batch of points, one kernel per worker process) and ``spark``
  (Spark tasks of a batch of points); ``pool``: the one process pool (the papermill engine's, a campaign's
  shrinks, durability's detailed runs, the pipeline's reports); ``ship``: the package as --py-files for Spark
  executors;
* ``spark``: the one helper that builds a Spark session (``log4j2.properties`` quiets it);
* ``aggregate``: per-configuration statistics over seeds, on Spark; ``tables``: reading them back;
* ``present`` (tables and numbers in words), ``plots`` (figures), ``headline`` (numbers a notebook records):
  what a study's notebook shows;
* ``report``: executed notebook -> offline HTML (``templates/``), and the index; ``cleaning``: a notebook's
  outputs made reproducible;
* ``progress``: the one progress bar;
* ``command``: the kit's verb, every study end to end, for ``python -m kafkamodel study``.

Heavy dependencies (papermill, pyspark, matplotlib, ipywidgets) are imported by the module that needs them,
and the names below are imported on first use, so ``import kafkamodel.kit`` stays light.
"""

from __future__ import annotations

import importlib

# public name -> the kit module that defines it
_EXPORTS = {
    # specs and points
    "StudyError": "spec", "SpecError": "spec", "Spec": "spec", "Part": "spec", "Point": "spec", "NAME": "spec",
    "DEFAULT_POINT_NOTEBOOK": "spec", "point_of": "spec", "named": "spec", "stable_hash": "spec",
    "load_spec": "specfile", "load_spec_file": "specfile", "all_specs": "specfile",
    # running points and sweeps
    "run_point": "point", "execute_point": "point", "scenario_for": "point", "SUMMARY_TABLE": "point",
    "run_sweeps": "sweep", "SweepOutcome": "sweep", "check_engine": "sweep", "check_folder": "sweep",
    "check_runs": "sweep", "check_timeout": "sweep", "check_workers": "sweep",
    "ENGINES": "engines",
    "as_finished": "engines.pool", "in_order": "engines.pool", "spawned_pool": "engines.pool",
    "Storage": "dataset",
    "spark_session": "spark", "check_java": "spark", "check_master": "spark",
    "progress_bar": "progress",
    # aggregates and what a notebook shows
    "Aggregates": "tables", "load_aggregates": "tables",
    "MIN_T_SEEDS": "aggregate", "RANGE": "aggregate", "T": "aggregate", "T_CLIPPED": "aggregate",
    "T_LOG": "aggregate",
    "Table": "present", "number": "present", "interval": "present", "percent": "present",
    "percent_interval": "present",
    "fit": "headline", "record_headline": "headline",
    # reports
    "execute_report_notebook": "report", "publish": "report", "provenance": "report", "write_index": "report",
    "STYLE": "report",
}
# the kit's modules that are public as a whole: the figure helpers, the spec checker's fields
_MODULES = ("plots", "fields")

__all__ = sorted((*_EXPORTS, *_MODULES))


def __getattr__(name: str):
    if name in _MODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return __all__
