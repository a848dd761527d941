"""Sweeps: plan a study's points and hand them to an engine, resumably.

``run_sweeps`` expands every spec (validating it), locks each study's run
folder, skips finished runs, clears a killed sweep's leftovers, and gives the
rest to one engine shared by all the studies (``engines.papermill``: a
notebook per batch of points, one kernel per worker process;
``engines.spark``: a Spark task per batch of points). Both publish the same
run folders and record failures alike (``runs``); here each point's result is
tallied into its study's ``SweepOutcome``. So a run folder is complete or absent; a re-run skips
finished runs; a killed sweep loses only what was in flight; a failed point
is recorded under ``_failed/`` and retried on the next sweep.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from ..folders import FolderError, writable_folder
from ..paths import RUNS
from .dataset import check_uri, is_finished_local, is_uri, local_path
from .engines import ENGINES
from .runs import FAILED, clean_staging, is_finished, study_lock
from .spec import DEFAULT_POINT_NOTEBOOK, Spec, StudyError, check_scale
from .specfile import notebook_path


@dataclass
class SweepOutcome:
    study: str
    total: int  # points at this scale
    skipped: int = 0  # finished by an earlier sweep
    ran: list = field(default_factory=list)  # run ids published now
    failed: list = field(default_factory=list)  # (run_id, error line)
    overhead_s: list = field(default_factory=list)  # per run: papermill time not spent in the model
    model_s: list = field(default_factory=list)  # per run: simulate + write (inside the notebook or task)
    wall_s: float = 0.0
    folder: Path | str | None = None  # data/runs/<study>/ (or <URI>/<study>: the runs dataset)
    engine: str = "papermill"
    slots: int | None = None  # parallel runs (workers, or a local Spark master's task slots; None: a cluster's)
    kernel_restarts: int = 0  # papermill: kernels that never started and were started again
    job_points: int = 0  # spark: points of the job this study's points ran in (all studies of a `study` run)
    job_work_s: float = 0.0  # spark: their model + write time

    @property
    def ok(self) -> bool:
        return not self.failed

    def lines(self) -> list[str]:
        out = [f"{self.study}: {self.total} points: {len(self.ran)} ran, {self.skipped} already done, "
               f"{len(self.failed)} failed ({self.wall_s:.0f} s)"]
        if self.overhead_s:
            out.append(f"  papermill overhead per run: mean {statistics.mean(self.overhead_s):.2f} s, "
                       f"median {statistics.median(self.overhead_s):.2f} s "
                       f"(model + write: mean {statistics.mean(self.model_s):.2f} s)"
                       + (f"; {self.kernel_restarts} kernel(s) did not start and were started again"
                          if self.kernel_restarts else ""))
        elif self.engine == "spark" and self.ran and self.wall_s > 0:
            per_point = self.overhead_per_point()
            points = self.job_points or len(self.ran)
            shared = f" (one job for {points} points of several studies)" if self.job_points > len(self.ran) else ""
            out.append(f"  spark: {points / self.wall_s:.2f} points/s{shared}"
                       + (f" on {self.slots} slots, overhead per point {per_point:.3f} s of a slot"
                          if per_point is not None else "")
                       + f"; model + write: mean {statistics.mean(self.model_s):.3f} s")
        for run_id, error in self.failed:
            out.append(f"  FAILED {run_id}: {error}")
        if self.failed:
            out.append(f"  errors and executed notebooks: {f'{self.folder}/{FAILED}' if self.folder else FAILED}/")
        return out

    def overhead_per_point(self) -> float | None:
        """Slot-seconds per run spent outside the model and writing: wall x slots - work, over runs
        (over the whole job when studies shared one)."""
        points, work = (self.job_points, self.job_work_s) if self.job_points else (len(self.ran), sum(self.model_s))
        if not points or not self.slots or self.wall_s <= 0:
            return None
        return (self.wall_s * self.slots - work) / points


def check_engine(engine) -> str:
    if engine not in ENGINES:
        raise StudyError([f"--engine: must be one of {', '.join(ENGINES)}, got {engine!r}"])
    return engine


def check_runs(runs, engine: str = "papermill") -> "Path | str":
    """Where runs go: a folder path, absolute (run folders; a folder or one that can be made, writable), or for
    the Spark engine a URI Spark writes to (``file:///...``, ``hdfs://...``, ``s3a://...``: the runs dataset,
    ``kafkamodel.kit.dataset``; whether Spark can write there is checked once its session is up)."""
    if is_uri(runs):
        runs = check_uri(runs)
        if engine != "spark":
            if not runs.lower().startswith("file://"):
                raise StudyError([f"--runs: the papermill engine writes the runs dataset to a file:/// URI (this "
                                  f"machine's disk), got {runs!r}; use --engine spark for other filesystems"])
            check_folder(local_path(runs), "--runs")
        return runs
    if runs is not None and "://" in str(runs):
        raise StudyError([f"--runs: must be a folder path or a URI like file:///data/runs, got {str(runs)!r}"])
    return check_folder(RUNS if runs is None else runs, "--runs")


def check_folder(path, flag: str) -> Path:
    """A folder the kit will write into, checked now (``folders.writable_folder``), as a StudyError."""
    try:
        return writable_folder(path, flag)
    except FolderError as exc:
        raise StudyError([str(exc)]) from None


def check_workers(workers) -> int:
    if workers is None:
        return os.cpu_count() or 1
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise StudyError([f"--workers: must be an integer >= 1, got {workers!r}"])
    return workers


def check_timeout(timeout) -> float:
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise StudyError([f"--timeout: must be a number of seconds > 0, got {timeout!r}"])
    return float(timeout)


KEEP = ("needed", "all")  # --keep: the per-record table where a part pools record latency, or in every run


def check_keep(keep) -> str:
    if keep not in KEEP:
        raise StudyError([f"--keep: must be one of {', '.join(KEEP)}, got {keep!r}"])
    return keep


def run_sweeps(specs: list[Spec], *, scale: float = 1.0, workers: int | None = None, timeout: float = 600.0,
               resume: bool = True, runs: Path | None = None, progress: bool = True, engine: str = "papermill",
               master: str | None = None, spark=None, keep: str = "needed", on_study=None) -> list[SweepOutcome]:
    """Run every point of these studies not finished yet, on one engine shared by all of them.

    papermill: a pool of `workers` processes. spark: tasks on `spark` (a
    session given, left running) or on a session started on `master` and
    stopped here. `keep`: ``needed`` writes the per-record table only for
    parts that pool record latency, ``all`` for every point (runs finished
    earlier are not rewritten). `on_study(outcome)`: called once a study has every point's result (a study with
    nothing left to run: at once), while the others may still run.
    """
    scale, workers, timeout = check_scale(scale), check_workers(workers), check_timeout(timeout)
    engine, keep = check_engine(engine), check_keep(keep)
    if engine == "spark" and spark is None:
        from .spark import check_java, check_master

        check_master(master)
        check_java()
    runs = check_runs(runs, engine)
    active = [s for s in specs if not s.is_pending]
    plans = []
    for spec in active:  # expand (and so validate) everything before running anything
        nb = notebook_path(spec.point_notebook, Path(spec.source).parent)
        if not isinstance(runs, str):
            check_folder(runs / spec.study, "--runs")  # a file where the study's folder goes
        plans.append((spec, spec.points(scale), nb))
    if isinstance(runs, str) and engine == "spark":
        return _dataset_sweeps(plans, runs, spark=spark, master=master, timeout=timeout, resume=resume,
                               progress=progress, keep=keep, on_study=on_study)
    dataset = isinstance(runs, str)  # papermill into the runs dataset at a file: URI: the layout Spark writes
    if dataset:
        own = [spec.study for spec, _, nb in plans if Path(nb).name != DEFAULT_POINT_NOTEBOOK]
        if own:
            raise StudyError([f"--runs: {own[0]} names its own point_notebook, whose runs are run folders; "
                              "give a folder path"])
    outcomes: dict[str, SweepOutcome] = {}
    with ExitStack() as stack:
        jobs = []
        for spec, points, nb in plans:
            study_dir = (local_path(runs) if dataset else runs) / spec.study
            stack.enter_context(study_lock(study_dir))
            clean_staging(study_dir)
            outcome = outcomes[spec.study] = SweepOutcome(spec.study, len(points), folder=study_dir, engine=engine)
            finished = is_finished_local if dataset else is_finished
            for p in points:
                if resume and finished(study_dir, p.run_id):
                    outcome.skipped += 1
                else:
                    jobs.append((spec.study, {**p.to_dict(), "records": p.records or keep == "all"},
                                 f"{runs}/{spec.study}" if dataset else str(study_dir), str(nb)))
        _run(jobs, outcomes, engine=engine, spark=spark, master=master, workers=min(workers, len(jobs)),
             timeout=timeout, replace=not resume, progress=progress, on_study=on_study)
        for outcome in outcomes.values():  # again: a killed sweep's kernels (own sessions) may outlive it by ~1 s
            clean_staging(outcome.folder)
    return [outcomes[s.study] for s in active]


def _dataset_sweeps(plans, runs: str, *, spark, master, timeout, resume, progress, keep,
                    on_study=None) -> list[SweepOutcome]:
    """run_sweeps with the runs dataset at the URI `runs` (the Spark engine; ``kafkamodel.kit.dataset``)."""
    from .dataset import Storage
    from .spark import spark_session

    with ExitStack() as stack:
        if spark is None:
            if progress:
                print(f"starting Spark ({master or 'local[*]'}) ...", file=sys.stderr, flush=True)
            spark = stack.enter_context(spark_session(master, app_name="kafkamodel sweep"))
        storage = Storage(spark, runs)
        storage.check_writable([f"{runs}/{spec.study}" for spec, _, _ in plans])
        outcomes: dict[str, SweepOutcome] = {}
        jobs = []
        for spec, points, nb in plans:
            study_uri = f"{runs}/{spec.study}"
            done = storage.finished(spec.study) if resume else set()
            outcome = outcomes[spec.study] = SweepOutcome(spec.study, len(points), folder=study_uri, engine="spark")
            for p in points:
                if p.run_id in done:
                    outcome.skipped += 1
                else:
                    jobs.append((spec.study, {**p.to_dict(), "records": p.records or keep == "all"}, study_uri,
                                 str(nb)))
        _run(jobs, outcomes, engine="spark", spark=spark, master=master, workers=1, timeout=timeout,
             replace=not resume, progress=progress, storage=storage, on_study=on_study)
    return [outcomes[spec.study] for spec, _, _ in plans]


def _run(jobs, outcomes, *, engine, spark, master, workers, timeout, replace, progress, storage=None,
         on_study=None) -> None:
    """Hand the jobs to the engine (if any); tally each point's result into its study's outcome, and tell
    `on_study` of each study as its last result comes in."""
    remaining = {s: 0 for s in outcomes}
    for study, *_ in jobs:
        remaining[study] += 1
    clock = {"started": time.perf_counter()}
    on_study = on_study or (lambda outcome: None)
    for study, left in remaining.items():
        if not left:  # finished before this sweep
            on_study(outcomes[study])
    if not jobs:
        return

    def on_result(study: str, r: dict) -> None:
        outcome = outcomes[study]
        if r["ok"]:
            outcome.ran.append(r["run_id"])
            outcome.model_s.append(r["model_s"] + r["write_s"])
            if "overhead_s" in r:
                outcome.overhead_s.append(r["overhead_s"])
            outcome.kernel_restarts += r.get("kernel_restarts", 0)
        else:
            outcome.failed.append((r["run_id"], r["error"]))
        remaining[study] -= 1
        if remaining[study] == 0:
            outcome.wall_s = time.perf_counter() - clock["started"]
            on_study(outcome)

    def on_start(slots) -> None:  # the engine is up: its start is paid once, not per point
        for outcome in outcomes.values():
            outcome.slots = slots
        clock["started"] = time.perf_counter()

    if engine == "spark":
        from .engines.spark import run_spark

        run_spark(jobs, on_result, spark=spark, master=master, timeout=timeout, replace=replace, progress=progress,
                  on_start=on_start, storage=storage)
        points = sum(len(o.ran) for o in outcomes.values())
        work = sum(sum(o.model_s) for o in outcomes.values())
        for outcome in outcomes.values():  # one job: its wall time is every study's
            outcome.job_points, outcome.job_work_s = points, work
    else:
        from .engines.papermill import run_papermill

        on_start(workers)
        run_papermill(jobs, on_result, workers=workers, timeout=timeout, replace=replace, progress=progress,
                      already_done=sum(o.skipped for o in outcomes.values()))
