"""Sweeps: run a study's points, resumably, with papermill (worker processes) or on Spark.

``run_sweeps`` plans (expands every spec, locks each study's folder, skips
finished runs) and hands the rest to an engine: ``papermill`` (here) or
``spark`` (``kafkamodel.study.spark_engine``: each point a Spark task, no
notebook). Both publish the same run folders and record failures alike.

With papermill, each point executes the spec's point notebook (``00_explore.ipynb`` by
default) with the point as a parameter; the notebook calls
``kafkamodel.study.point.execute_point`` into a hidden staging folder, then
the worker adds the executed notebook and timing.json and publishes the
folder with one rename to ``data/runs/<study>/<run_id>/``. So a run folder is
complete or absent; a re-run skips finished runs; a killed sweep loses only
what was in flight; a failed point is recorded under ``_failed/`` (its error
and its executed notebook) and retried on the next sweep.
"""

from __future__ import annotations

import fcntl
import json
import logging
import multiprocessing
import os
import shutil
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ..paths import ROOT, RUNS
from .point import amend_timing, commit_run, is_finished, staging_dir
from .spec import Spec, StudyError, check_scale
from .specfile import notebook_path

ENGINES = ("papermill", "spark")
# a kernel that does not answer its first request (seen about once in 300 runs on a loaded 2-core machine)
KERNEL_START_FAILURES = ("Kernel didn't respond in", "Kernel died before replying to kernel_info")
KERNEL_RETRIES = 1  # starts of a fresh kernel for such a point before it counts as failed
KERNEL_ARGS = ["--IPKernelApp.log_level=CRITICAL"]  # ERROR hides "running over TCP without encryption" but not "KeyboardInterrupt caught in kernel" at shutdown
FAILED = "_failed"  # failed points: <run_id>.json (error, point) and <run_id>.ipynb


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
    folder: Path | None = None  # data/runs/<study>/
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
            out.append(f"  errors and executed notebooks: {self.folder / FAILED if self.folder else FAILED}/")
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


def check_runs(runs) -> Path:
    """Where run folders go: a filesystem path (a task publishes its run with a rename)."""
    if runs is None:
        return RUNS
    if "://" in str(runs):
        raise StudyError([f"--runs: must be a filesystem path every executor sees (a shared mount), got {str(runs)!r}; "
                          "object stores cannot hold run folders"])
    return Path(runs)


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


@contextmanager
def _study_lock(study_dir: Path):
    study_dir.mkdir(parents=True, exist_ok=True)
    handle = open(study_dir / ".lock", "w")
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise StudyError([f"sweep: another sweep of {study_dir.name} is running ({study_dir / '.lock'})"]) from None
        yield
    finally:
        handle.close()


def _clean_staging(study_dir: Path) -> None:
    """Leftovers of a killed sweep: hidden staging folders and notebooks (never the lock)."""
    for entry in study_dir.iterdir():
        if entry.name.startswith(".") and entry.name != ".lock":
            if entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)


def record_failure(study_dir: Path, point: dict, error: str, notebook: Path | None) -> None:
    folder = study_dir / FAILED
    folder.mkdir(exist_ok=True)
    tmp = folder / f".{point['run_id']}.json"
    tmp.write_text(json.dumps({"run_id": point["run_id"], "error": error, "point": point}, indent=2, default=str) + "\n")
    tmp.rename(folder / f"{point['run_id']}.json")
    if notebook is not None and notebook.exists():
        notebook.rename(folder / f"{point['run_id']}.ipynb")


def clear_failure(study_dir: Path, run_id: str) -> None:
    for suffix in (".json", ".ipynb"):
        (study_dir / FAILED / f"{run_id}{suffix}").unlink(missing_ok=True)


def error_line(exc: BaseException) -> str:
    ename, evalue = getattr(exc, "ename", None), getattr(exc, "evalue", None)
    text = f"{ename}: {evalue}" if ename else f"{type(exc).__name__}: {exc}"
    return " ".join(text.split())[:500]


def papermill_point(point: dict, study_dir: str, notebook: str, timeout: float, replace: bool) -> dict:
    """Worker: execute the point notebook for one point and publish its run folder."""
    import papermill as pm

    logging.getLogger("papermill").setLevel(logging.ERROR)
    study_dir = Path(study_dir)
    staging = staging_dir(study_dir, point["run_id"])
    executed = staging.with_name(staging.name + ".ipynb")
    t0 = time.perf_counter()
    restarts = 0
    try:
        while True:
            try:
                pm.execute_notebook(
                    notebook, str(executed),
                    parameters={"point": point, "out": str(staging), "plots": False, "interactive": False},
                    execution_timeout=timeout, progress_bar=False, log_output=False, kernel_name="python3",
                    request_save_on_cell_execute=False, cwd=str(ROOT), extra_arguments=KERNEL_ARGS,
                )
                break
            except RuntimeError as exc:  # the kernel never started: the machine's problem, not the point's
                if restarts >= KERNEL_RETRIES or not str(exc).startswith(KERNEL_START_FAILURES):
                    raise
                restarts += 1
                shutil.rmtree(staging, ignore_errors=True)
                executed.unlink(missing_ok=True)
        total = time.perf_counter() - t0
        if not (staging / "summary.json").is_file():
            raise StudyError([f"{notebook}: finished without writing the run folder (does it call execute_point?)"])
        timing = amend_timing(staging, total, engine="papermill", kernel_restarts=restarts)
        executed.rename(staging / "notebook.ipynb")
        commit_run(staging, study_dir / point["run_id"], replace=replace)
        clear_failure(study_dir, point["run_id"])
        return {"run_id": point["run_id"], "ok": True, **timing}
    except Exception as exc:  # recorded, and the sweep carries on
        record_failure(study_dir, point, error_line(exc), executed)
        return {"run_id": point["run_id"], "ok": False, "error": error_line(exc)}
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        executed.unlink(missing_ok=True)


def run_sweeps(specs: list[Spec], *, scale: float = 1.0, workers: int | None = None, timeout: float = 600.0,
               resume: bool = True, runs: Path | None = None, progress: bool = True, engine: str = "papermill",
               master: str | None = None, spark=None) -> list[SweepOutcome]:
    """Run every point of these studies not finished yet, on one engine shared by all of them.

    papermill: a pool of `workers` processes. spark: tasks on `spark` (a
    session given, left running) or on a session started on `master` and
    stopped here.
    """
    scale, workers, timeout = check_scale(scale), check_workers(workers), check_timeout(timeout)
    engine = check_engine(engine)
    if engine == "spark" and spark is None:
        from .spark import check_java, check_master

        check_master(master)
        check_java()
    runs = check_runs(runs)
    active = [s for s in specs if not s.is_pending]
    plans = []
    for spec in active:  # expand (and so validate) everything before running anything
        nb = notebook_path(spec.point_notebook, Path(spec.source).parent)
        plans.append((spec, spec.points(scale), nb))
    outcomes: dict[str, SweepOutcome] = {}
    with ExitStack() as stack:
        jobs = []
        for spec, points, nb in plans:
            study_dir = runs / spec.study
            stack.enter_context(_study_lock(study_dir))
            _clean_staging(study_dir)
            outcome = outcomes[spec.study] = SweepOutcome(spec.study, len(points), folder=study_dir, engine=engine)
            for p in points:
                if resume and is_finished(study_dir, p.run_id):
                    outcome.skipped += 1
                else:
                    jobs.append((spec.study, p.to_dict(), str(study_dir), str(nb)))
        if jobs and engine == "spark":
            _execute_spark(jobs, outcomes, spark=spark, master=master, timeout=timeout, replace=not resume,
                           progress=progress)
        elif jobs:
            _execute(jobs, outcomes, workers=min(workers, len(jobs)), timeout=timeout,
                     replace=not resume, progress=progress)
        for outcome in outcomes.values():  # again: a killed sweep's kernels (own sessions) may outlive it by ~1 s
            _clean_staging(outcome.folder)
    return [outcomes[s.study] for s in active]


def _tally(outcomes, remaining, started, study: str, r: dict) -> None:
    """Count one point's result in its study's outcome."""
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
        outcome.wall_s = time.perf_counter() - started


def _remaining(jobs, outcomes) -> dict:
    remaining = {s: 0 for s in outcomes}
    for study, *_ in jobs:
        remaining[study] += 1
    return remaining


def _execute_spark(jobs, outcomes, *, spark, master, timeout, replace, progress) -> None:
    from .spark import spark_session
    from .spark_engine import run_on_spark, slots

    remaining = _remaining(jobs, outcomes)

    def run(session):
        for outcome in outcomes.values():
            outcome.slots = slots(session.sparkContext)
        started = time.perf_counter()  # after the session's start: that is paid once, not per point
        run_on_spark(session, jobs, timeout=timeout, replace=replace, progress=progress,
                     on_result=lambda study, r: _tally(outcomes, remaining, started, study, r))
        points = sum(len(o.ran) for o in outcomes.values())
        work = sum(sum(o.model_s) for o in outcomes.values())
        for outcome in outcomes.values():  # one job: its wall time is every study's
            outcome.job_points, outcome.job_work_s = points, work

    if spark is not None:
        run(spark)
    else:
        if progress:
            print(f"starting Spark ({master or 'local[*]'}) ...", file=sys.stderr, flush=True)
        with spark_session(master, app_name="kafkamodel sweep") as session:
            run(session)


def _execute(jobs, outcomes, *, workers, timeout, replace, progress) -> None:
    from tqdm import tqdm

    started = time.perf_counter()
    for outcome in outcomes.values():
        outcome.slots = workers
    skipped = sum(o.skipped for o in outcomes.values())
    bar = tqdm(total=len(jobs), desc="sweep", unit="run", file=sys.stderr, disable=not progress, dynamic_ncols=True)
    bar.set_postfix_str(f"{skipped} already done")
    remaining = _remaining(jobs, outcomes)
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))
    try:
        futures = {pool.submit(papermill_point, point, study_dir, nb, timeout, replace): study
                   for study, point, study_dir, nb in jobs}
        failed = 0
        for future in as_completed(futures):
            r = future.result()
            _tally(outcomes, remaining, started, futures[future], r)
            if not r["ok"]:
                failed += 1
                bar.set_postfix_str(f"{skipped} already done, {failed} failed")
            bar.update(1)
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    finally:
        bar.close()
    pool.shutdown(wait=True)
