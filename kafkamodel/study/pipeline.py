"""Everything, for ``python -m kafkamodel study``: all sweeps -> Spark aggregation -> reports -> index.

Sweeps of every active study share one engine (a pool of papermill workers,
or Spark tasks); one Spark session runs those tasks and aggregates every
study (and is stopped here); each analysis notebook
is executed and exported; a pending study gets its placeholder. Failed
points are reported at the end (exit status 1) after the rest has run.
"""

from __future__ import annotations

import multiprocessing
import sys
import threading
from concurrent.futures import ProcessPoolExecutor, as_completed
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ..paths import PROCESSED, REPORTS
from .spec import StudyError, check_scale
from .specfile import all_specs


REPORT_WORKERS = 2  # report notebooks at once: one beside Spark's aggregation, one more on a second core


@dataclass
class StudyOutcome:
    lines: list = field(default_factory=list)
    failed_points: int = 0
    index: Path | None = None
    seconds: float = 0.0
    phases: dict = field(default_factory=dict)  # phase -> wall seconds: sweep, aggregate, reports

    def timing(self) -> str:
        """The closing line's times: the whole command and each phase."""
        parts = ", ".join(f"{name} {seconds:.0f} s" for name, seconds in self.phases.items())
        return f"{self.seconds:.0f} s" + (f" ({parts})" if parts else "")


@contextmanager
def spark_starting(master: str | None, app_name: str):
    """A Spark session built on a thread while the caller works (a papermill sweep does not need it: the JVM's
    start, 7-17 s on 2 cores, overlaps the sweep); ``get()`` waits for it; stopped on exit."""
    from .spark import build_spark

    box: dict = {}

    def start():
        try:
            box["spark"] = build_spark(master, app_name)
        except BaseException as exc:  # re-raised where the session is needed
            box["error"] = exc

    thread = threading.Thread(target=start, name="spark-start", daemon=True)
    thread.start()

    def get():
        thread.join()
        if "error" in box:
            raise box["error"]
        return box["spark"]

    try:
        yield get
    finally:
        thread.join()
        if "spark" in box:
            box["spark"].stop()


def run_study(*, scale: float = 1.0, workers: int | None = None, timeout: float = 600.0, master: str | None = None,
              progress: bool = True, runs: Path | None = None, processed: Path | None = None,
              reports: Path | None = None, engine: str = "papermill", studies=(), say=None,
              keep: str = "needed") -> StudyOutcome:
    """Sweep, aggregate and report every shipped study (or only `studies`, by name), then write the index."""
    from .aggregate import aggregate
    from .report import report, write_index
    from .spark import check_java, check_master
    from .sweep import check_engine, check_folder, check_keep, check_runs, check_timeout, check_workers, run_sweeps

    say = say or (lambda line: print(line, file=sys.stderr, flush=True))
    t0 = time.perf_counter()
    scale, timeout = check_scale(scale), check_timeout(timeout)
    check_workers(workers)
    check_engine(engine)
    check_keep(keep)
    check_master(master)
    check_java()  # before hours of sweeping, not after
    runs = check_runs(runs, engine)  # and every folder it writes: before Spark starts
    processed = check_folder(processed or PROCESSED, "aggregates folder")
    reports = check_folder(reports or REPORTS, "reports folder")
    every = all_specs()
    names = [s.study for s in every]
    unknown = [name for name in studies if name not in names]
    if unknown:
        raise StudyError([f"study: no shipped study {unknown[0]!r} (shipped: {', '.join(names)})"])
    specs = [s for s in every if not studies or s.study in studies]
    active = [s for s in specs if not s.is_pending]
    outcome = StudyOutcome()
    total = sum(len(s.points(scale)) for s in active)
    say(f"study: {len(active)} studies, {total} runs at scale {scale:g} "
        f"({', '.join(s.study for s in specs if s.is_pending) or 'none'} pending)")
    with spark_starting(master, "kafkamodel study") as session:
        t_sweep = time.perf_counter()
        sweeps = run_sweeps(active, scale=scale, workers=workers, timeout=timeout, runs=runs, progress=progress,
                            engine=engine, spark=session() if engine == "spark" else None, keep=keep)
        outcome.phases["sweep"] = time.perf_counter() - t_sweep
        for s in sweeps:
            outcome.lines += s.lines()
            outcome.failed_points += len(s.failed)
            for line in s.lines():
                say(line)
        say("aggregating on Spark, reporting each study as its aggregates are ready ...")
        t_aggregate = time.perf_counter()
        spark = session()
        # reports in worker processes (a report is a notebook kernel, papermill is not thread-safe), each started as
        # soon as its study is aggregated: the notebooks run while Spark aggregates the next studies
        pool = ProcessPoolExecutor(max_workers=max(1, min(check_workers(workers), REPORT_WORKERS, len(specs))),
                                   mp_context=multiprocessing.get_context("spawn"))
        pending = {}
        try:
            for spec in specs:
                if spec.is_pending:
                    pending[pool.submit(report, spec, processed=processed, reports=reports, timeout=timeout,
                                        index=False)] = spec.study
                    continue
                try:
                    line = aggregate(spec, spark=spark, runs=runs, processed=processed).line()
                    pending[pool.submit(report, spec, processed=processed, reports=reports, timeout=timeout,
                                        index=False)] = spec.study
                except Exception as exc:  # one study's problem must not hide the others' reports
                    line = f"{spec.study}: aggregation failed: {' '.join(str(exc).split())[:300]}"
                    outcome.failed_points += 1
                outcome.lines.append(line)
                say(line)
            outcome.phases["aggregate"] = time.perf_counter() - t_aggregate
            for future in as_completed(pending):
                try:
                    line = future.result().line()
                except Exception as exc:
                    line = f"{pending[future]}: report failed: {' '.join(str(exc).split())[:300]}"
                    outcome.failed_points += 1
                outcome.lines.append(line)
                say(line)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    outcome.index = write_index(reports, every)
    outcome.phases["reports after the last aggregate"] = time.perf_counter() - t_aggregate - outcome.phases["aggregate"]
    outcome.seconds = time.perf_counter() - t0
    return outcome
