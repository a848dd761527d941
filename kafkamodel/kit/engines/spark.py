"""The Spark engine for sweeps: each point a Spark task that runs the model directly (no notebook kernel).

The points to run become a DataFrame (run id, the point as JSON, its base
scenario's YAML, where its run folder goes), a partition per point while
there are few of them per task slot, else batches of up to
``POINTS_PER_TASK`` points (``task_count``): a task costs ~56 ms of CPU
beyond its points, a third of a campaign run's event loop
(docs/performance.md, *Campaign runs*), while enough tasks per slot stay to
balance the last ones. Each point in a task is run, published and timed on
its own, so a point that fails costs that point alone.
``mapInArrow`` runs ``execute_point`` (``run_point`` + ``write_point``, the
code the papermill engine's notebook calls) on the executors into a hidden
staging folder beside the final one, and publishes it with one rename: the
same ``<runs>/<study>/<run_id>/`` folders, Parquet tables and summary as
papermill's, without the executed notebook. So ``aggregate`` and ``report``
read them unchanged, and the same point gives the same bytes either way.

Run folders need a path the driver and every executor see at the same
place: the local disk for ``local[N]`` masters, a shared filesystem (NFS, a
mounted bucket) on a cluster. With a URI as ``--runs`` (``run_dataset``) no
executor writes a file: tasks return their points' tables as Arrow rows and
Spark writes them as the runs dataset (``kafkamodel.kit.dataset``) to any
filesystem it writes to (``file://``, ``hdfs://``, ``s3a://``). The package travels as ``--py-files``
(``kafkamodel.kit.ship``); the base scenario travels in the DataFrame, so
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
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..point import publish_point

MAX_TASKS = 10_000  # at most this many tasks in one job
POINTS_PER_TASK = 25  # at most this many points share a task ...
TASKS_PER_SLOT = 16  # ... and only when every task slot still gets this many tasks
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


def task_count(points: int, slots: int | None) -> int:
    """Spark tasks for `points` points on `slots` task slots: one per point while a slot would get fewer than
    TASKS_PER_SLOT of them, else batches of up to POINTS_PER_TASK points (at most MAX_TASKS tasks). A batch of
    consecutive points is a few schedules or seeds of one configuration, alike in cost, and at least
    TASKS_PER_SLOT tasks a slot keep the last ones short beside the sweep."""
    per_task = max(1, min(POINTS_PER_TASK, points // (TASKS_PER_SLOT * max(slots or 1, 1))))
    return max(1, min(MAX_TASKS, -(-points // per_task)))


def _task_slots(sc) -> int:
    """The task slots tasks are cut for: a local master's, else the cluster's default parallelism."""
    return slots(sc) or sc.defaultParallelism


def _point_rows(sc, jobs: list) -> tuple[list, object]:
    """The package shipped to the executors, and the points as rows (run id, point JSON, its base scenario's
    YAML, where it goes) with their schema: executors need neither the repository nor its data."""
    from pyspark.sql.types import StringType, StructField, StructType

    from ..ship import ship

    ship(sc)
    bases: dict[str, str] = {}
    rows = []
    for _, point, study_dir, _ in jobs:
        if point["base_path"] not in bases:
            bases[point["base_path"]] = Path(point["base_path"]).read_text(encoding="utf-8")
        rows.append((point["run_id"], json.dumps(point, default=str), bases[point["base_path"]], study_dir))
    return rows, StructType([StructField(n, StringType(), False) for n in ("run_id", "point", "base", "study_dir")])


def run_on_spark(spark, jobs: list, *, timeout: float, replace: bool, progress: bool, on_result) -> None:
    """Run `jobs` ((study, point dict, study_dir, _)) as Spark tasks; `on_result(study, row)` per point."""
    from ..progress import progress_bar

    sc = spark.sparkContext
    rows, schema = _point_rows(sc, jobs)
    study_of = {point["run_id"]: study for study, point, _, _ in jobs}
    tasks = task_count(len(rows), _task_slots(sc))
    points = spark.createDataFrame(sc.parallelize(rows, tasks), schema)
    out_schema = ", ".join(f"{name} {kind}" for name, kind in RESULT_FIELDS)
    results = points.mapInArrow(_task(timeout, replace), out_schema)

    bar = progress_bar(len(rows), "sweep (spark)", disable=not progress)
    try:
        collected = _collect(sc, results, bar, len(rows), tasks)
    finally:
        bar.close()
    for row in collected:
        on_result(study_of[row["run_id"]], row.asDict())


def _collect(sc, frame, bar, points: int, tasks: int) -> list:
    """frame.collect() in a job group of its own on a thread, the bar advanced from where it stands by the
    points of its completed tasks (`points` over `tasks` partitions of nearly equal size); the job is cancelled
    if this thread is interrupted."""
    from pyspark import InheritableThread

    group = f"kafkamodel-sweep-{uuid.uuid4().hex[:8]}"
    box: dict = {}
    start = bar.n

    def collect():
        sc.setJobGroup(group, "kafkamodel sweep", interruptOnCancel=True)
        try:
            box["rows"] = frame.collect()
        except BaseException as exc:  # re-raised on the caller's thread
            box["error"] = exc

    worker = InheritableThread(target=collect, daemon=True)
    try:
        worker.start()
        while worker.is_alive():
            worker.join(POLL_S)
            done = start + min(tasks, _completed_tasks(sc, group)) * points // tasks
            if done > bar.n:
                bar.update(done - bar.n)
    except BaseException:
        sc.cancelJobGroup(group)
        worker.join(30)
        raise
    if "error" in box:
        raise box["error"]
    return box["rows"]


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


# --- runs as a dataset at a URI (kafkamodel.kit.dataset) ---------------------------------------------

CHUNKS = 20  # a dataset sweep's points go in about this many Spark jobs (each committed when it ends) ...
CHUNK_MIN = 64  # ... of at least this many points: a killed sweep loses at most the chunk it was running
WRITERS = 4  # tables written at once (each a Spark job)


def run_dataset_point(row: dict, timeout: float) -> list[dict]:
    """Executor side: run one point; its tables as envelope rows, then its status row (no file is written)."""
    from ..dataset import STATUS, encode
    from ..point import deadline, point_tables, run_point
    from ..runs import error_line

    point = json.loads(row["point"])
    status = {"study": point["study"], "run_id": point["run_id"], "table": STATUS, "ok": True, "error": None,
              "model_s": None, "write_s": None, "schema": None, "data": None}
    t0 = time.perf_counter()
    try:
        with deadline(timeout):
            result = run_point(point, row["base"])
            t1 = time.perf_counter()
            rows = encode(point["study"], point["run_id"], point_tables(result, point))
        status.update(model_s=t1 - t0, write_s=time.perf_counter() - t1)
    except Exception as exc:  # reported to the driver, which records it; the other points go on
        rows = []
        status.update(ok=False, error=error_line(exc))
    return rows + [status]


def _dataset_task(timeout: float):
    def run(batches):
        import pyarrow as pa

        from ..dataset import envelope_schema

        schema = envelope_schema()
        for batch in batches:
            for row in batch.to_pylist():
                yield pa.RecordBatch.from_pylist(run_dataset_point(row, timeout), schema=schema)

    return run


def run_dataset(spark, jobs: list, storage, *, timeout: float, progress: bool, on_result) -> None:
    """Run `jobs` ((study, point dict, study URI, _)) as Spark tasks that return their tables as Arrow rows, and
    write them as the runs dataset (``kafkamodel.kit.dataset``), a chunk of points per job; `on_result(study,
    row)` per point once its chunk is committed."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import from_arrow_schema

    from ..dataset import ENVELOPE, PARTITION, STATUS, TABLES, decoder, unified
    from ..progress import progress_bar

    sc = spark.sparkContext
    rows, schema = _point_rows(sc, jobs)
    where = {study: study_uri for study, _, study_uri, _ in jobs}
    envelope = ", ".join(f"`{name}` {kind}" for name, kind in ENVELOPE)
    writers = max(1, sc.defaultParallelism)
    bar = progress_bar(len(rows), "sweep (spark)", disable=not progress)
    try:
        size = max(CHUNK_MIN, -(-len(rows) // CHUNKS))
        for at in range(0, len(rows), size):
            chunk = rows[at:at + size]
            tasks = task_count(len(chunk), _task_slots(sc))
            points = spark.createDataFrame(sc.parallelize(chunk, tasks), schema)
            out = points.mapInArrow(_dataset_task(timeout), envelope).persist(StorageLevel.MEMORY_AND_DISK)
            try:
                meta = _collect(sc, out.drop("data"), bar, len(chunk), tasks)
                writes = [(study, study_uri, table) for study, study_uri in where.items() for table in TABLES
                          if any(m["study"] == study and m["table"] == table for m in meta)]

                def write(job):
                    study, study_uri, table = job
                    target = unified([m["schema"] for m in meta if m["study"] == study and m["table"] == table])
                    (out.where((F.col("study") == study) & (F.col("table") == table)).select("data")
                     .coalesce(writers).mapInArrow(decoder(target.serialize().to_pybytes()), from_arrow_schema(target))
                     .write.mode("overwrite").option("partitionOverwriteMode", "dynamic")
                     .option("compression", "zstd").partitionBy(PARTITION).parquet(f"{study_uri}/{table}"))

                # every table but the summaries at once (a job's fixed cost overlaps the others'), then the
                # summaries: a run with a summary partition is complete
                with ThreadPoolExecutor(max_workers=WRITERS) as pool:
                    list(pool.map(write, [w for w in writes if w[2] != "summary"]))
                    list(pool.map(write, [w for w in writes if w[2] == "summary"]))
            finally:
                out.unpersist()
            points_of = {r[0]: json.loads(r[1]) for r in chunk}
            statuses = [m for m in meta if m["table"] == STATUS]
            for study in where:
                storage.clear_failures(study, [m["run_id"] for m in statuses if m["ok"] and m["study"] == study])
            for m in statuses:
                if not m["ok"]:
                    storage.record_failure(m["study"], points_of[m["run_id"]], m["error"])
                on_result(m["study"], {"run_id": m["run_id"], "ok": m["ok"], "error": m["error"],
                                       "model_s": m["model_s"], "write_s": m["write_s"]})
    finally:
        bar.close()


def run_spark(jobs: list, on_result, *, spark=None, master: str | None = None, timeout: float, replace: bool,
              progress: bool, on_start=None, storage=None) -> None:
    """Run `jobs` as Spark tasks on `spark` (a session given, left running) or on a session started on
    `master` and stopped here. `on_start(slots)` is called once the session is up (its start is paid once,
    not per point); `on_result(study, row)` per point. With `storage` (a ``dataset.Storage``) the runs go to
    the dataset at its URI, else to run folders."""
    from ..spark import spark_session

    def run(session):
        if on_start is not None:
            on_start(slots(session.sparkContext))
        if storage is not None:
            run_dataset(session, jobs, storage, timeout=timeout, progress=progress, on_result=on_result)
        else:
            run_on_spark(session, jobs, timeout=timeout, replace=replace, progress=progress, on_result=on_result)

    if spark is not None:
        run(spark)
        return
    if progress:
        print(f"starting Spark ({master or 'local[*]'}) ...", file=sys.stderr, flush=True)
    with spark_session(master, app_name="kafkamodel sweep") as session:
        run(session)
