"""Sweep engines: how the points a sweep plans get run. Each runs ``point.execute_point`` per point into a
staging folder and publishes it with ``runs.commit_run``, recording failures with ``runs.record_failure``;
each reports every point's result to the planner (``sweep``) through a callback.

* ``papermill``: each point executes the point notebook in a pool of worker processes;
* ``spark``: each point is a Spark task (no notebook kernel).
"""

ENGINES = ("papermill", "spark")
