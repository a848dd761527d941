"""``python -m kafkamodel durability SPEC --out DIR``: failure rates -> DIR/durability.json (its parser:
``add_parser``).

1. The spec is loaded and checked whole (``spec``), and DIR checked writable, before anything runs.
2. ``estimate``: the failure process per replica layout (failure biasing), the detailed model once per class of
   critical events (a tqdm bar counts the simulations; `workers` processes run them), Kafka's rules where they
   decide alone.
3. ``DIR/durability.json`` (the contract's rows, one per configuration) and ``DIR/durability-details.json``
   (intervals of every measure, each class's measured loss, the assumptions) are each written whole (a hidden
   file renamed over the old one, only over a file the kit wrote). Each detailed run's answer is kept in
   ``DIR/runs/`` as it finishes, so a killed run resumes where it stopped.
"""

from __future__ import annotations

import json
import math
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from ..command import engine_modules, needs, positive_int
from ..folders import check_file_replaceable, writable_folder, write_atomic
from .estimate import WARMUP_MS, DetailedRunError, at_least_once, estimate, gaps_ms, workers_or_cores
from .spec import DurabilitySpec, load_durability


def add_parser(verbs) -> None:
    durability = verbs.add_parser("durability", help="failure rates -> acknowledged records lost per year and the "
                                                     "yearly loss probability per partition, per configuration")
    durability.add_argument("spec", help="a durability spec name (data/durability/NAME.yaml) or a spec file")
    durability.add_argument("--out", required=True, help="folder for durability.json (and durability-details.json)")
    durability.add_argument("--workers", type=positive_int("--workers"),
                            help="processes (local) or notebook kernels (papermill) running the detailed runs "
                                 "(default: cores; the answers do not depend on it)")
    durability.add_argument("--engine", default="local",
                            help="local: in this process or a process pool; papermill or spark: the detailed runs "
                                 "as the campaign's sweep points (run folders in OUT/runs/sweep/); the same answers")
    durability.add_argument("--master", help="with --engine spark: the Spark master URL (default: local[*])")
    durability.set_defaults(func=cmd_durability)


def cmd_durability(args) -> int:
    if args.engine in ("papermill", "spark"):
        needs("durability", *engine_modules(args.engine))
    try:
        rows, path = run_durability(args.spec, args.out, workers=args.workers, engine=args.engine,
                                    master=args.master)
    except DetailedRunError as exc:  # one line; the detailed runs that finished are kept in DIR/runs
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for line in lines(rows):
        print(line)
    print(f"wrote {path}")
    return 0

FEW_WINDOWS = 100  # below it the intervals undercover (docs/durability.md: measured coverage)
RUNS = "runs"  # DIR/runs/: one JSON file per detailed run (what it ran, what it lost); a rerun reuses them

ASSUMPTIONS = (
    "Failures are Poisson processes with the spec's rates; down times are fixed (broker.restart.ms, broker.pause.ms, "
    "broker.slow.ms, machine.replace.hours, zone.outage.hours, zone.partition.minutes).",
    "After a crash or a power loss a broker is down for broker.restart.ms (the process's start) plus the log "
    "recovery its brokers need on average (docs/restarts.md): what each log holds past its checkpointed recovery "
    "point in a long steady run at the producers' rates, re-read by num.recovery.threads.per.data.dir threads "
    "(a power loss: from the disk, the unflushed tail gone; a process crash: from the page cache where it holds it).",
    "machine.replace.hours is the whole rebuild: replacement and catch-up (the detailed model's catch-up of a "
    "compressed run is seconds; a real log's is not added).",
    "A broker that is down has no further failure until it is back; back, it is in sync again.",
    "A zone power loss takes every broker of the zone down for broker.restart.ms; a zone outage isolates them "
    "for zone.outage.hours (modelled as the isolate fault).",
    "A machine crash (machine.crash.per.year) is a power loss of one broker: its page cache (what it had not "
    "flushed) is gone, its disk kept, and it is back after broker.restart.ms; a process crash "
    "(broker.crash.per.year) keeps the page cache.",
    "A broker pause (broker.pause.per.year, 0 unless the spec sets it) takes the broker out of the ISR for "
    "broker.pause.ms with its log and page cache kept (the pause fault in the detailed model); a pause shorter "
    "than the session timeout and replica.lag.time.max.ms changes nothing in Kafka, so this is conservative.",
    "A slow spell (broker.slow.per.year, 0 unless the spec sets it) lasts broker.slow.ms; the broker keeps running "
    "and its log. A slow follower is counted out of the ISR for the whole spell (conservative: Kafka drops it only "
    "after replica.lag.time.max.ms behind, and only if broker.slow.factor makes it fall behind); a slow leader stays "
    "leader with an ISR of itself (its followers cannot keep up). The detailed model runs the slow fault with that "
    "factor, which slows the broker's replication fetches (latency, not bandwidth). Unavailability from slow spells "
    "is an upper bound.",
    "A zone partition (zone.partition.per.year, 0 unless the spec sets it) cuts every broker of the zone from the "
    "brokers of the other zones and from the controller quorum (on the other side) for zone.partition.minutes; "
    "clients reach both sides (the isolate fault from those brokers and the controller). A cluster in one zone has "
    "none.",
    "A critical event (one hitting the leader, or leaving no replica in sync) is measured by the detailed model "
    "once per class (the kinds and sizes of the steps down), on the first partition with that many replicas, "
    "with the steps compressed in time (each 'gaps_ms' of its kind after the previous one).",
    "With ISR, acks=all and unclean election off, Kafka's rules decide without a run: an event that leaves an "
    "in-sync replica up and intact, or that takes the last in-sync replicas down with their logs, loses nothing.",
    "Records lost by a class that loses a whole log are those the compressed run acknowledged before it (the "
    "scenario's rate over its warm-up and steps), not a real log's retention.",
    "Unavailability counts the time a partition has fewer in-sync replicas than its writes need (failure "
    "process only: detection and election times are not added).",
)


def check_engine_options(engine: str, master: str | None, spark=None) -> str:
    """--engine one of local, papermill, spark; --master only with spark (a Spark master URL, Java found): a
    StudyError naming the flag otherwise (one line, exit 2), before anything runs."""
    from ..kit import StudyError
    from .sweep import check_durability_engine

    check_durability_engine(engine)
    if master is not None and engine != "spark":
        raise StudyError(["--master: only with --engine spark (local and papermill run on this machine)"])
    if engine == "spark" and spark is None:
        from ..kit import check_java, check_master

        check_master(master)
        check_java()
    return engine


def engine_words(engine: str, workers: int, master: str | None, spark=None) -> str:
    """How the detailed runs run, for the progress line."""
    if engine == "spark":
        where = spark.sparkContext.master if spark is not None else master or "local[*]"
        return f"as Spark tasks ({where})"
    what = "notebook kernel" if engine == "papermill" else "worker process"
    plural = ("es" if what.endswith("s") else "s") if workers > 1 else ""
    return f"{workers} {what}{plural}" + (" (papermill)" if engine == "papermill" else "")


def run_durability(spec, out, *, progress: bool = True, say=None, runs: Path | None = None,
                   workers: int | None = None, engine: str = "local", master: str | None = None,
                   spark=None) -> tuple[list[dict], Path]:
    """Estimate every configuration of `spec` (a name, a path or a loaded DurabilitySpec) and write
    DIR/durability.json; returns the rows and the file. `runs`: the detailed runs' folder (default DIR/runs);
    `workers`: processes for the detailed runs (default: the cores; the answers do not depend on it); `engine`:
    local (in-process or a process pool), papermill or spark (the campaign's sweep: ``sweep``), with `master` or
    a running session `spark` (left running); the same durability.json whatever the engine."""
    t0 = time.perf_counter()
    say = say or (lambda line: print(line, file=sys.stderr, flush=True))
    check_engine_options(engine, master, spark)
    loaded = spec if isinstance(spec, DurabilitySpec) else load_durability(spec)
    folder = writable_folder(out, "--out")
    for name in ("durability.json", "durability-details.json"):  # refused now, not after the simulations
        check_file_replaceable(folder / name, "--out")
    workers = workers_or_cores(workers)
    say(f"durability: {len(loaded.configurations)} configurations x {loaded.windows} failure windows per replica "
        f"layout; the detailed model once per class of critical events, {engine_words(engine, workers, master, spark)}")
    if loaded.windows < FEW_WINDOWS:
        say(f"durability: {loaded.windows} windows are few: measured on RF 3 against the Markov chain, 95% "
            "intervals from 5 / 30 / 100 windows hold the true value 60% / 76% / 89% of the time (1,000: 96%); "
            f"use windows >= {FEW_WINDOWS} for intervals to trust")
    estimates = estimate(loaded, progress=progress, cache=Path(runs) if runs is not None else folder / RUNS,
                         workers=workers, engine=engine, master=master, spark=spark)
    rows = [e.row() for e in estimates]
    details = {
        "spec": str(loaded.source), "scenario": loaded.base, "seed": loaded.seed, "windows": loaded.windows,
        "failures": dict(loaded.failures.given),
        "method": "failure biasing (importance sampling with likelihood-ratio weights) over renewal cycles, each "
                  "window's first event from a defensive mixture (half at the rates, half uniform over the "
                  "processes); "
                  "95% intervals by the delta method (Student's t), widened to Garwood's Poisson interval on the "
                  "count of windows that lose when that count is small; zero losses: rule-of-three upper bound; "
                  "per cluster-year: the first loss in any partition, its point from the same process over every broker, "
                  "its interval from the partitions' (the largest low end to the union bound)",
        "configurations": [{
            "configuration": e.configuration, "overrides": c.overrides, "partitions": e.partitions,
            "gaps_ms": gaps_ms(c.scenario), "warmup_ms": WARMUP_MS,
            "loss_rate_per_partition_year": vars(e.loss), "acked_records_lost_per_year": vars(e.records),
            "unavailable_share": vars(e.unavailable),
            "mean_years_to_first_loss_per_partition": _inverse(e.loss),
            "loss_rate_per_cluster_year": vars(e.cluster),
            "loss_probability_per_cluster_year": _probability(e.cluster),
            "mean_years_to_first_loss_in_cluster": _inverse(e.cluster),
            "classes_records_lost": e.classes}
            for e, c in zip(estimates, loaded.configurations)],
        "assumptions": list(ASSUMPTIONS),
        "seconds": round(time.perf_counter() - t0, 1), "workers": workers, "engine": engine,
        "generated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "written_by": "kafkamodel durability",
    }
    path = folder / "durability.json"
    write_atomic(folder / "durability-details.json", json.dumps(details, indent=1, default=str) + "\n")
    write_atomic(path, json.dumps(rows, indent=1) + "\n")
    return rows, path


def _probability(rate) -> dict:
    """At least one loss in a year, with its 95% interval, from a rate of first losses per year."""
    return {k: at_least_once(v) for k, v in (("p", rate.rate), ("low", rate.low), ("high", rate.high))}


def _inverse(rate) -> dict:
    """Mean years to the first loss (1 / rate) and its 95% interval (null: unbounded)."""
    def inv(x):
        return 1 / x if x > 0 else None

    return {"years": inv(rate.rate), "low": inv(rate.high), "high": inv(rate.low)}


def nines(p: float, high: float) -> str:
    """-log10 of a yearly loss probability; with none observed, at least -log10 of its upper bound."""
    if p > 0:
        return f"{-math.log10(p):.1f}"
    return f">={-math.log10(high):.1f}" if high > 0 else "inf"


def lines(rows: list[dict]) -> list[str]:
    """The rows as a table in nines (-log10 of the yearly loss probability per partition)."""
    out = [f"{'configuration':<20} {'P(loss)/partition-yr':>22} {'95% interval':>24} {'nines':>6} "
           f"{'acked lost/yr':>14} {'unavail min/yr':>15}"]
    for r in rows:
        p, lo, hi = (r["loss_probability_per_partition_year"], r["loss_probability_per_partition_year_low"],
                     r["loss_probability_per_partition_year_high"])
        out.append(f"{r['configuration']:<20} {p:>22.3g} {f'[{lo:.3g}, {hi:.3g}]':>24} {nines(p, hi):>6} "
                   f"{r['acked_records_lost_per_year']:>14.3g} {r['unavailable_minutes_per_year']:>15.3g}")
    return out
