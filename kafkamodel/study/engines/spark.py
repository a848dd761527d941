"""The Spark engine for sweeps: each point a Spark task that runs the model directly (no notebook kernel).

The points to run become a DataFrame (run id, the point as JSON, its base
scenario's YAML, where its run folder goes), one partition per point, so
tasks balance across executors and a failure costs one point.
``mapInArrow`` runs ``execute_point`` (``run_point`` + ``write_point``, the
code the papermill engine's notebook calls) on the executors into a hidden
staging folder beside the final one, and publishes it with one rename: the
same ``<runs>/<study>/<run_id>/`` folders, Parquet tables and summary as
papermill's, without the executed notebook. So ``aggregate`` and ``report``
read them unchanged, and the same point gives the same bytes either way.

The runs folder must be a path the driver and every executor see at the
same place: the local disk for ``local[N]`` masters, a shared filesystem
(NFS, a mounted bucket) on a cluster. The package travels as ``--py-files``
(``kafkamodel.study.ship``); the base scenario travels in the DataFrame, so
executors need neither the repository nor its data.

A point that raises (or outlives ``--timeout``) inside its task is recorded
under ``_failed/`` with its error, as in the papermill engine, and the other
tasks go on.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import uuid
from pathlib import Path

from ..point import publish_point

MAX_TASKS = 10_000  # one point per task up to this many; beyond, points share tasks
POLL_S = 0.5  # progress bar refresh
RESULT_FIELDS = (("run_id", "string"), ("ok", "boolean"), ("error", "string"), ("model_s", "double"),
                 ("write_s", "double"))


def run_task_point(row: dict, timeout: float, replace: bool) -> dict:
    """Executor side: run one point into its staging folder and publish it, or record its failure."""
    r = publish_point(json.loads(row["point"]), row["study_dir"], replace=replace, timeout=timeout,
                      base_text=row["base"], engine="spark", executor=f"{socket.gethostname()}:{os.getpid()}")
    return {name: r.get(name) for name, _ in RESULT_FIELDS}


def _task(timeout: float, replace: bool):
    """The mapInArrow function: Arrow batches of points in, one result row per point out."""
    def run(batches):
        import pyarrow as pa

        schema = pa.schema([(name, pa.string() if kind == "string" else pa.bool_() if kind == "boolean"
                             else pa.float64()) for name, kind in RESULT_FIELDS])
        for batch in batches:
            rows = [run_task_point(row, timeout, replace) for row in batch.to_pylist()]
            yield pa.RecordBatch.from_pylist(rows, schema=schema)

    return run


def slots(sc) -> int | None:
    """Task slots of a local master (local[N], local[*]); None for a cluster, whose size is its own."""
    master = sc.master
    if master == "local":
        return 1
    if master.startswith("local["):
        n = master[6:-1].split(",")[0]
        return (os.cpu_count() or 1) if n == "*" else int(n)
    return None


def run_on_spark(spark, jobs: list, *, timeout: float, replace: bool, progress: bool, on_result) -> None:
    """Run `jobs` ((study, point dict, study_dir, _)) as Spark tasks; `on_result(study, row)` per point."""
    from pyspark.sql.types import StringType, StructField, StructType

    from ..progress import progress_bar
    from ..ship import ship

    sc = spark.sparkContext
    ship(sc)
    bases: dict[str, str] = {}
    rows, study_of = [], {}
    for study, point, study_dir, _ in jobs:
        if point["base_path"] not in bases:
            bases[point["base_path"]] = Path(point["base_path"]).read_text(encoding="utf-8")
        rows.append((point["run_id"], json.dumps(point, default=str), bases[point["base_path"]], study_dir))
        study_of[point["run_id"]] = study
    schema = StructType([StructField(n, StringType(), False) for n in ("run_id", "point", "base", "study_dir")])
    points = spark.createDataFrame(sc.parallelize(rows, min(len(rows), MAX_TASKS)), schema)
    out_schema = ", ".join(f"{name} {kind}" for name, kind in RESULT_FIELDS)
    results = points.mapInArrow(_task(timeout, replace), out_schema)

    group = f"kafkamodel-sweep-{uuid.uuid4().hex[:8]}"
    box: dict = {}

    def collect():
        sc.setJobGroup(group, "kafkamodel sweep", interruptOnCancel=True)
        try:
            box["rows"] = results.collect()
        except BaseException as exc:  # re-raised on the caller's thread
            box["error"] = exc

    from pyspark import InheritableThread

    worker = InheritableThread(target=collect, daemon=True)
    bar = progress_bar(len(rows), "sweep (spark)", disable=not progress)
    try:
        worker.start()
        while worker.is_alive():
            worker.join(POLL_S)
            done = _completed_tasks(sc, group)
            if done > bar.n:
                bar.update(done - bar.n)
    except BaseException:
        sc.cancelJobGroup(group)
        worker.join(30)
        raise
    finally:
        bar.close()
    if "error" in box:
        raise box["error"]
    for row in box["rows"]:
        on_result(study_of[row["run_id"]], row.asDict())


def _completed_tasks(sc, group: str) -> int:
    tracker = sc.statusTracker()
    done = 0
    for job_id in tracker.getJobIdsForGroup(group):
        job = tracker.getJobInfo(job_id)
        for stage_id in (job.stageIds if job else []):
            stage = tracker.getStageInfo(stage_id)
            if stage:
                done += stage.numCompletedTasks
    return done


def run_spark(jobs: list, on_result, *, spark=None, master: str | None = None, timeout: float, replace: bool,
              progress: bool, on_start=None) -> None:
    """Run `jobs` as Spark tasks on `spark` (a session given, left running) or on a session started on
    `master` and stopped here. `on_start(slots)` is called once the session is up (its start is paid once,
    not per point); `on_result(study, row)` per point."""
    from ..spark import spark_session

    def run(session):
        if on_start is not None:
            on_start(slots(session.sparkContext))
        run_on_spark(session, jobs, timeout=timeout, replace=replace, progress=progress, on_result=on_result)

    if spark is not None:
        run(spark)
        return
    if progress:
        print(f"starting Spark ({master or 'local[*]'}) ...", file=sys.stderr, flush=True)
    with spark_session(master, app_name="kafkamodel sweep") as session:
        run(session)
