"""Everything, for ``python -m kafkamodel study``: all sweeps -> Spark aggregation -> reports -> index.

Sweeps of every active study share one engine (a pool of papermill workers,
or Spark tasks); one Spark session runs those tasks and aggregates every
study (and is stopped here); each analysis notebook
is executed and exported; a pending study gets its placeholder. Failed
points are reported at the end (exit status 1) after the rest has run.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..paths import PROCESSED, REPORTS
from .spec import StudyError, check_scale
from .specfile import all_specs


@dataclass
class StudyOutcome:
    lines: list = field(default_factory=list)
    failed_points: int = 0
    index: Path | None = None
    seconds: float = 0.0


def run_study(*, scale: float = 1.0, workers: int | None = None, timeout: float = 600.0, master: str | None = None,
              progress: bool = True, runs: Path | None = None, processed: Path | None = None,
              reports: Path | None = None, engine: str = "papermill", studies=(), say=None,
              keep: str = "needed") -> StudyOutcome:
    """Sweep, aggregate and report every shipped study (or only `studies`, by name), then write the index."""
    from .aggregate import aggregate
    from .report import report, write_index
    from .spark import check_java, check_master, spark_session
    from .sweep import check_engine, check_folder, check_keep, check_runs, check_timeout, check_workers, run_sweeps

    say = say or (lambda line: print(line, file=sys.stderr, flush=True))
    t0 = time.perf_counter()
    scale, timeout = check_scale(scale), check_timeout(timeout)
    check_workers(workers)
    check_engine(engine)
    check_keep(keep)
    check_master(master)
    check_java()  # before hours of sweeping, not after
    runs = check_runs(runs)  # and every folder it writes: before Spark starts
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
    with spark_session(master, app_name="kafkamodel study") as spark:
        sweeps = run_sweeps(active, scale=scale, workers=workers, timeout=timeout, runs=runs, progress=progress,
                            engine=engine, spark=spark if engine == "spark" else None, keep=keep)
        for s in sweeps:
            outcome.lines += s.lines()
            outcome.failed_points += len(s.failed)
            for line in s.lines():
                say(line)
        say("aggregating on Spark ...")
        for spec in active:
            try:
                line = aggregate(spec, spark=spark, runs=runs, processed=processed).line()
            except Exception as exc:  # one study's problem must not hide the others' reports
                line = f"{spec.study}: aggregation failed: {' '.join(str(exc).split())[:300]}"
                outcome.failed_points += 1
            outcome.lines.append(line)
            say(line)
    for spec in specs:
        try:
            line = report(spec, processed=processed, reports=reports, timeout=timeout, index=False).line()
        except Exception as exc:
            line = f"{spec.study}: report failed: {' '.join(str(exc).split())[:300]}"
            outcome.failed_points += 1
        outcome.lines.append(line)
        say(line)
    outcome.index = write_index(reports, every)
    outcome.seconds = time.perf_counter() - t0
    return outcome
