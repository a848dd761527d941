"""The kit's verbs: ``study`` (everything: all sweeps -> Spark aggregation -> reports -> index), ``sweep``,
``aggregate`` and ``report``: their parsers (``add_study``, ``add_sweep``, ``add_aggregate``, ``add_report``) and
handlers, and ``run_study``.

Sweeps of every active study share one engine (a pool of papermill workers,
or Spark tasks); one Spark session runs those tasks and aggregates every
study (and is stopped here); each analysis notebook
is executed and exported; a pending study gets its placeholder. Failed
points are reported at the end (exit status 1) after the rest has run.
"""

from __future__ import annotations

import sys
import threading
import time
from concurrent.futures import as_completed
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ..command import REPORTING, UsageError, default_scale, engine_modules, needs, seconds, sweep_options
from ..paths import PROCESSED, REPORTS
from .engines.pool import spawned_pool
from .spec import StudyError, check_scale
from .specfile import all_specs


REPORT_WORKERS = 2  # report notebooks at once: one beside Spark's aggregation, one more on a second core


# ---- the verbs ----------------------------------------------------------------------------------------------------

def keep_option(p) -> None:
    from .sweep import KEEP

    p.add_argument("--keep", choices=KEEP, default="needed",
                   help="needed: the per-record table (records.parquet) only in runs of parts whose analysis "
                        "pools record latency; all: in every new run (default: needed)")


def add_study(verbs) -> None:
    study = verbs.add_parser("study", help="every study: sweeps, Spark aggregation, HTML reports, index")
    study.add_argument("studies", nargs="*", metavar="STUDY", help="only these shipped studies (default: all)")
    sweep_options(study)
    study.add_argument("--runs", help="where run folders go (default: data/runs), or with --engine spark a URI "
                                      "Spark writes the runs to as Parquet datasets (file:///..., hdfs://..., s3a://...)")
    keep_option(study)
    study.set_defaults(func=cmd_study)


def add_sweep(verbs) -> None:
    sweep = verbs.add_parser("sweep", help="run a study's grid x seeds with papermill or Spark (finished runs are skipped)")
    sweep.add_argument("spec", help="a study name (data/studies/NAME.yaml) or a sweep spec file")
    sweep_options(sweep)
    sweep.add_argument("--runs", help="where run folders go (default: data/runs); with --engine spark, or a URI "
                                      "Spark writes to (file:///..., hdfs://..., s3a://...): the runs as Parquet "
                                      "datasets there")
    sweep.add_argument("--no-resume", action="store_true", help="run every point again, replacing finished runs")
    keep_option(sweep)
    sweep.set_defaults(func=cmd_sweep)


def add_aggregate(verbs) -> None:
    agg = verbs.add_parser("aggregate", help="per-configuration statistics over seeds, on Spark -> data/processed/STUDY/")
    agg.add_argument("study", help="a study name or spec file")
    agg.add_argument("--master", help="Spark master URL (default: local[*])")
    agg.add_argument("--runs", help="where the run folders are (default: data/runs), or the URI a Spark sweep "
                                    "wrote the runs to")
    agg.set_defaults(func=cmd_aggregate)


def add_report(verbs) -> None:
    rep = verbs.add_parser("report", help="execute the study's notebook on its aggregates -> reports/STUDY.html")
    rep.add_argument("study", help="a study name or spec file")
    rep.add_argument("--timeout", type=seconds("--timeout"), default=600.0, help="execution timeout per notebook cell (s)")
    rep.set_defaults(func=cmd_report)


def cmd_study(args) -> int:
    """All sweeps, Spark aggregation, reports and the index; prints where the reports are."""
    needs("study", *engine_modules(args.engine), "pyspark", *REPORTING)
    scale = args.scale if args.scale is not None else default_scale()
    outcome = run_study(scale=scale, workers=args.workers, timeout=args.timeout, master=args.master,
                        engine=args.engine, runs=args.runs, studies=args.studies, keep=args.keep)
    print(f"reports: {outcome.index.parent}/ (open {outcome.index}) after {outcome.timing()}")
    if outcome.failed_points:
        print(f"error: {outcome.failed_points} failure(s); see the lines above", file=sys.stderr)
        return 1
    return 0


def cmd_sweep(args) -> int:
    needs("sweep", *engine_modules(args.engine))
    from .specfile import load_spec
    from .sweep import run_sweeps

    spec = load_spec(args.spec)
    if spec.is_pending:
        raise UsageError(f"{spec.study}: pending ({spec.pending}); it has no points to run")
    scale = args.scale if args.scale is not None else default_scale()
    if args.master is not None and args.engine != "spark":
        raise UsageError("--master: only with --engine spark (papermill runs on this machine)")
    (outcome,) = run_sweeps([spec], scale=scale, workers=args.workers, timeout=args.timeout,
                            resume=not args.no_resume, engine=args.engine, master=args.master, runs=args.runs,
                            keep=args.keep)
    for line in outcome.lines():
        print(line)
    if outcome.failed:
        print(f"error: {len(outcome.failed)} of {outcome.total} points failed; re-run to retry them", file=sys.stderr)
        return 1
    return 0


def cmd_aggregate(args) -> int:
    needs("aggregate", "pyspark")
    from .aggregate import aggregate

    print(aggregate(args.study, master=args.master, runs=args.runs).line())
    return 0


def cmd_report(args) -> int:
    needs("report", *REPORTING)
    from .report import report

    outcome = report(args.study, timeout=args.timeout)
    print(outcome.line())
    print(f"index: {outcome.html.parent / 'index.html'}")
    return 0


# ---- every study, end to end --------------------------------------------------------------------------------------


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
    from .report import write_index
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
    with spark_starting(master, "kafkamodel study") as session, Aggregating(
            say, outcome, session, runs=runs, processed=processed, reports=reports, timeout=timeout,
            workers=max(1, min(check_workers(workers), REPORT_WORKERS, len(specs)))) as aggregating:
        for spec in specs:
            if spec.is_pending:  # its placeholder report needs no sweep
                aggregating.report(spec)
        by_name = {spec.study: spec for spec in active}
        t_sweep = time.perf_counter()
        # each study is aggregated (and then reported) as soon as its last point is in, while the others sweep
        sweeps = run_sweeps(active, scale=scale, workers=workers, timeout=timeout, runs=runs, progress=progress,
                            engine=engine, spark=session() if engine == "spark" else None, keep=keep,
                            on_study=lambda o: aggregating.put(by_name[o.study]))
        outcome.phases["sweep"] = time.perf_counter() - t_sweep
        for s in sweeps:
            outcome.lines += s.lines()
            outcome.failed_points += len(s.failed)
            for line in s.lines():
                say(line)
        aggregating.sweep_done()
    outcome.phases.update(aggregating.phases)
    t_index = time.perf_counter()
    outcome.index = write_index(reports, every)
    outcome.phases["reports after the last aggregate"] += time.perf_counter() - t_index
    outcome.seconds = time.perf_counter() - t0
    return outcome


class Aggregating:
    """Spark aggregation on a thread of its own, each study as it is handed over (``put``), in that order; each
    aggregated study's report notebook goes to a pool of report workers at once. Lines wait until the sweep's
    progress bar is gone (``sweep_done``), then are said as they come. Leaving the block waits for every
    aggregation and report, and records the phases after the sweep."""

    def __init__(self, say, outcome: StudyOutcome, session, *, runs, processed, reports, timeout, workers):
        import queue

        self.say, self.outcome, self.session = say, outcome, session
        self.where = {"runs": runs, "processed": processed}
        self.report_args = {"processed": processed, "reports": reports, "timeout": timeout, "index": False}
        self.workers = workers
        self.queue: queue.Queue = queue.Queue()
        self.lock = threading.Lock()
        self.held: list | None = []  # lines said once the sweep is done (None: say them now)
        self.pending: dict = {}  # report future -> study
        self.phases: dict = {}

    def __enter__(self):
        self.pool = spawned_pool(self.workers)
        self.thread = threading.Thread(target=self._work, name="aggregate", daemon=True)
        self.thread.start()
        return self

    def put(self, spec) -> None:
        self.queue.put(spec)

    def report(self, spec) -> None:
        from .report import report

        with self.lock:
            self.pending[self.pool.submit(report, spec, **self.report_args)] = spec.study

    def sweep_done(self) -> None:
        with self.lock:
            held, self.held = self.held, None
            self.t_sweep_done = time.perf_counter()
        self.say("aggregating on Spark, reporting each study as its aggregates are ready ...")
        for line in held:
            self._line(line)

    def _line(self, line: str, failed: bool = False) -> None:
        with self.lock:
            self.outcome.failed_points += failed
            if self.held is not None:
                self.held.append(line)
                return
            self.outcome.lines.append(line)
        self.say(line)

    def _work(self) -> None:
        from .aggregate import aggregate

        for spec in iter(self.queue.get, None):
            try:
                line = aggregate(spec, spark=self.session(), **self.where).line()
                self.report(spec)
                failed = False
            except Exception as exc:  # one study's problem must not hide the others' reports
                line, failed = _failed(spec.study, "aggregation", exc), True
            self._line(line, failed)

    def __exit__(self, *exc) -> None:
        self.queue.put(None)
        try:
            if exc[0] is not None:  # interrupted or failed: the thread (a daemon) is not waited for
                return
            self.thread.join()
            if self.held is not None:  # the sweep did not finish: what the aggregation said is still owed
                self.sweep_done()
            done = time.perf_counter()
            self.phases["aggregate after the sweep"] = done - self.t_sweep_done
            for future in as_completed(list(self.pending)):
                try:
                    line = future.result().line()
                    failed = False
                except Exception as exc:
                    line, failed = _failed(self.pending[future], "report", exc), True
                self._line(line, failed)
            self.phases["reports after the last aggregate"] = time.perf_counter() - done
        finally:
            self.pool.shutdown(wait=True, cancel_futures=True)


def _failed(study: str, what: str, exc: Exception) -> str:
    """The line for a study whose aggregation or report failed: its error on one line (at most 300 characters)."""
    return f"{study}: {what} failed: {' '.join(str(exc).split())[:300]}"
