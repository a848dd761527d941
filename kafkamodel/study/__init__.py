"""The study kit: sweep specs, sweeps, Spark aggregation, plots, reports, widgets.

One module per job:

* ``spec``: a study's sweep spec (``data/studies/<study>.yaml``), expanded into points;
  ``specfile`` reads and validates spec files;
* ``point``: running one point (``run_point(point) -> Result``), the pure unit every engine calls;
* ``sweep``: planning a sweep (validate, lock, skip finished runs) and tallying its outcome;
* ``runs``: run folders: staging, publishing, the study lock, failure records, timing;
* ``engines``: ``papermill`` (notebooks of a batch of points, one kernel per worker process) and ``spark``
  (Spark tasks of a batch of points); ``ship``: the package as --py-files for Spark executors;
* ``spark``: the one helper that builds a Spark session;
* ``aggregate``: per-configuration statistics over seeds, on Spark;
* ``tables``: reading the aggregates back (notebooks);
* ``plots``, ``analyses``, ``explore``: figures and findings;
* ``headline``: numbers a notebook records for tests and the index;
* ``report``: executed notebook -> offline HTML, and the index;
* ``widgets``: the interactive panel;
* ``pipeline``: everything, for ``python -m kafkamodel study``.

Heavy dependencies (papermill, pyspark, matplotlib, ipywidgets) are imported
by the module that needs them, so ``kafkamodel`` itself stays light.
"""

from .spec import SpecError, StudyError
from .specfile import all_specs, load_spec

__all__ = ["SpecError", "StudyError", "load_spec", "all_specs"]
