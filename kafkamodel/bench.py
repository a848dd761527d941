"""``python -m kafkamodel bench``: speed and memory of the model; ``--sweep``: of the sweep engines.

Four cases (docs/design.md's targets):

* ``steady-state``: RF=3, acks=all, 3 partitions, 100k records/s, 600k
  records: at least 5 million simulated records per CPU-second;
* ``one-partition``: one partition at 10k records/s for 60 s: at least 3
  million;
* ``many-partitions``: 6 brokers, 3,000 partitions of RF 3, 20k records/s
  (null keys: Kafka's default partitioner), 10 simulated seconds: at most 2
  CPU-seconds (work follows requests, not partitions);
* ``100k-partitions``: 5 brokers, 100,000 partitions of RF 3, 10k records/s
  with null keys, 60 simulated seconds: under 2 CPU-minutes. Run once (no
  warm-up run, no memory trace: its memory is the partitions' state, not
  records').
* ``production``: a production-sized cluster (issue 39): 12 brokers in three
  racks, 3,000 partitions of RF 3, six producers of 300k keyed 1 KiB
  records/s each (linger.ms 5, batch.size 64 KiB, acks=all, Kafka 3.7),
  10 simulated seconds, no per-record table (``results.records: none``):
  at most 45 CPU-seconds and 1.5 GiB. Run once, in a
  fresh process whose peak resident memory is read from the OS (tracemalloc
  would slow a run this size several times over). ``production-60s``: the
  same for 60 simulated seconds (at most 5 CPU-minutes and 2 GiB), beside the
  10-second run's peak, to show memory flat in the duration.
* ``explorer``: the explorer panel's redraw of ``steady-state`` (issue 39),
  what runs when a control changes: the simulation, the status line and the
  drawing (the figure built, rendered to PNG, shown with the summary table),
  in the panel itself (``ExplorerPanel.rerun``, headless): at most 0.5
  CPU-seconds. Run only when named (it needs the notebook's libraries).

Speed is CPU time (process time), the median of repeats; memory is the peak
traced by tracemalloc during one extra run (NumPy reports its buffers to it),
divided by the records: below 300 bytes each.
"""

from __future__ import annotations

import os
import statistics
import time
import tracemalloc

from .command import positive_int
from .config.scenario import load_scenario

TARGET_BYTES_PER_RECORD = 300


def add_parser(verbs) -> None:
    bench = verbs.add_parser("bench", help="simulated records per CPU-second and bytes per record (--sweep: engines)")
    bench.add_argument("--records", type=positive_int("--records"), default=600_000, help="records in the steady-state run")
    bench.add_argument("--repeats", type=positive_int("--repeats"), default=5, help="timed repeats (the median is reported)")
    bench.add_argument("--case", action="append",
                       choices=("steady-state", "one-partition", "many-partitions", "100k-partitions", "production",
                                "production-60s", "explorer"),
                       help="only this case (repeatable; default: the first four; production and production-60s, "
                            "minutes each, and explorer run only when named)")
    bench.add_argument("--sweep", action="store_true",
                       help="instead: points/s and per-point overhead of papermill and Spark local[1], local[2]")
    bench.add_argument("--points", type=positive_int("--points"), default=24, help="points per engine with --sweep")
    bench.set_defaults(func=cmd_bench)


def cmd_bench(args) -> int:
    if args.sweep:
        return run_sweep_bench(points=args.points)
    return run_bench(records=args.records, repeats=args.repeats, cases=args.case)


def simulate(scenario):
    """The model's run (imported when a case runs: building the command line's parser stays light)."""
    from .sim.simulation import simulate as run

    return run(scenario)


def steady_state(records: int = 600_000):
    """RF=3, acks=all, one topic of 3 partitions, 100k records/s, no faults."""
    rate = 100_000.0
    return load_scenario({
        "name": "bench-steady-state",
        "seed": 7,
        "duration.ms": records / rate * 1000.0,
        "brokers": 3,
        "topics": [{"name": "bench", "partitions": 3, "replication.factor": 3}],
        "producers": [{"topic": "bench", "rate.per.s": rate, "acks": "all"}],
    })


def one_partition():
    """One partition of RF 3 at 10k records/s for 60 s."""
    return load_scenario({
        "name": "bench-one-partition", "seed": 7, "duration.ms": 60000, "brokers": 3,
        "topics": [{"name": "bench", "partitions": 1, "replication.factor": 3}],
        "producers": [{"topic": "bench", "rate.per.s": 10000, "acks": "all"}],
    })


def many_partitions():
    """6 brokers, 3,000 partitions of RF 3, 20k records/s with null keys, 10 simulated seconds."""
    return load_scenario({
        "name": "bench-many-partitions", "seed": 7, "duration.ms": 10000, "brokers": 6,
        "topics": [{"name": "bench", "partitions": 3000, "replication.factor": 3}],
        "producers": [{"topic": "bench", "rate.per.s": 20000, "acks": "all"}],
    })


def partitions_100k():
    """5 brokers, 100,000 partitions of RF 3, 10k records/s with null keys, 60 simulated seconds (issue 23: a
    100k-partition cluster under a modest load; most partitions exist and carry nothing)."""
    return load_scenario({
        "name": "bench-100k-partitions", "seed": 7, "duration.ms": 60000, "brokers": 5,
        "topics": [{"name": "bench", "partitions": 100_000, "replication.factor": 3}],
        "producers": [{"topic": "bench", "rate.per.s": 10000, "acks": "all"}],
    })


def production(duration_ms: float = 10_000.0):
    """12 brokers in three racks, 3,000 partitions of RF 3, six producers of 300k keyed 1 KiB records/s
    (linger.ms 5, batch.size 64 KiB, acks=all), Kafka 3.7 (KRaft), on the default broker machine. The run keeps no
    per-record table (``results.records: none``): its counts are per batch either way and its percentiles come from
    the streamed histogram (docs/scenarios.md), which is what a production-sized run wants."""
    return load_scenario({
        "name": "bench-production", "seed": 7, "kafka.version": "3.7", "duration.ms": duration_ms,
        "results.records": "none", "brokers": 12, "racks": ["a", "b", "c"],
        "topics": [{"name": "events", "partitions": 3000, "replication.factor": 3}],
        "producers": [{"topic": "events", "rate.per.s": 300_000, "instances": 6, "acks": "all", "linger.ms": 5,
                       "batch.size": 65536, "record.size.bytes": 1024, "keys": {"cardinality": 1_000_000}}],
    })


# the production cases: name, simulated ms, CPU-seconds at most, peak resident GiB at most
PRODUCTION = (("production", 10_000.0, 45.0, 1.5), ("production-60s", 60_000.0, 300.0, 2.0))


def _production_child(duration_ms: float, conn) -> None:
    """Run the production case in this (fresh) process and send back its CPU time, summary and peak RSS."""
    import resource

    scenario = production(duration_ms)
    t0 = time.process_time()
    summary = simulate(scenario).summary
    cpu = time.process_time() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB
    conn.send((cpu, summary, peak))
    conn.close()


def measure_production(duration_ms: float) -> tuple[float, dict, int]:
    """CPU seconds, summary and peak resident bytes of one production run in a fresh process."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_production_child, args=(duration_ms, child))
    proc.start()
    child.close()
    try:
        result = parent.recv()
    except EOFError:
        proc.join()
        raise RuntimeError(f"the production run ended without a result (exit code {proc.exitcode})") from None
    proc.join()
    return result


def run_production(names: list[str]) -> bool:
    """The production cases asked for; each line with its target."""
    ok = True
    peaks = {}
    for name, duration, cpu_target, gib_target in PRODUCTION:
        if name not in names:
            continue
        cpu, s, peak = measure_production(duration)
        peaks[name] = peak
        met_cpu, met_mem = cpu <= cpu_target, peak <= gib_target * 2**30
        ok = ok and met_cpu and met_mem
        sent = s["records_sent"]
        print(f"{name}: {duration / 1000:g} simulated s, {sent:,} records, {s['batches']:,} batches, "
              f"{s['produce_requests']:,} produce requests, {s['fetch_requests']:,} fetches")
        print(f"  cpu seconds: {cpu:.1f} (target <= {cpu_target:g}: {'met' if met_cpu else 'NOT MET'}) -> "
              f"{sent / cpu:,.0f} records per cpu-second")
        print(f"  peak resident memory: {peak / 2**30:.2f} GiB (target <= {gib_target:g}: "
              f"{'met' if met_mem else 'NOT MET'})")
        print(f"  produce latency p50 {s['produce_latency_ms_p50']:.2f} ms, p99 {s['produce_latency_ms_p99']:.2f} ms; "
              f"e2e p99 {s['e2e_latency_ms_p99']:.2f} ms")
    if len(peaks) == 2:
        short, long = peaks["production"], peaks["production-60s"]
        print(f"  peak memory 60 s / 10 s: {long / short:.2f}")
    return ok


# name, scenario, target kind ("rate": records per CPU-second at least; "cpu": CPU-seconds at most), target,
# repeats at most (None: as asked), memory traced (bytes per record)
CASES = (
    ("steady-state", steady_state, "rate", 5_000_000, None, True),
    ("one-partition", one_partition, "rate", 3_000_000, None, True),
    ("many-partitions", many_partitions, "cpu", 2.0, None, True),
    ("100k-partitions", partitions_100k, "cpu", 120.0, 1, False),
)


def measure(scenario, repeats: int, memory: bool = True) -> tuple[list[float], dict, int | None]:
    """CPU seconds of each repeat, the summary, and the peak traced bytes of one more run (None: not traced).
    With one repeat there is no warm-up run (a case that long does not need one)."""
    if repeats > 1:
        simulate(scenario)  # warm-up: imports, caches
    cpu, summary = [], {}
    for _ in range(repeats):
        t0 = time.process_time()
        summary = simulate(scenario).summary
        cpu.append(time.process_time() - t0)
    if not memory:
        return cpu, summary, None
    tracemalloc.start()
    simulate(scenario)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return cpu, summary, peak


EXPLORER_TARGET = 0.5  # CPU-seconds for the panel's redraw of steady-state (issue 39)


def run_explorer(repeats: int) -> bool:
    """The explorer panel's redraw of steady-state, split into its parts (CPU seconds, medians of the repeats).

    Each repeat is the panel's own ``rerun`` (what a control's change runs) with its kept results dropped first,
    its parts as the panel timed them; the drawing is then split by building and rendering the same figure again
    on the run's result. Then the redraw of a setting the panel has kept (a control moved back): no simulation."""
    import contextlib
    import io

    from .kit import plots
    from .studies.explorer.runfigure import run_figure
    from .studies.explorer.summary import setting
    from .studies.explorer.widgets import explorer_panel

    quiet = io.StringIO()  # headless, the panel's output area prints each display's repr: not measured output
    with contextlib.redirect_stdout(quiet):
        panel = explorer_panel("steady-state")  # its first run warms up the imports and caches
        parts = {"redraw": [], "simulate": [], "status": [], "draw": [], "build": [], "render": [], "kept": []}
        for _ in range(repeats):
            panel.forget()
            t0 = time.process_time()
            panel.rerun()
            parts["redraw"].append(time.process_time() - t0)
            for name, cpu in panel.timings.items():
                parts[name].append(cpu)
            t0 = time.process_time()
            fig = run_figure(panel.result, f"{panel.result.summary['scenario']}: {setting(panel.result)}")
            t1 = time.process_time()
            plots.png(fig)
            parts["build"].append(t1 - t0)
            parts["render"].append(time.process_time() - t1)
        for _ in range(repeats):
            t0 = time.process_time()
            panel.rerun()  # the result kept
            parts["kept"].append(time.process_time() - t0)
    m = {name: statistics.median(cpu) for name, cpu in parts.items()}
    s = panel.result.summary
    met = m["redraw"] <= EXPLORER_TARGET
    print(f"explorer: the panel's redraw of steady-state ({s['records_sent']:,} records, {s['batches']:,} batches), "
          f"median of {repeats}")
    print(f"  cpu seconds per redraw: {m['redraw']:.3f} (min {min(parts['redraw']):.3f}, max "
          f"{max(parts['redraw']):.3f}; target <= {EXPLORER_TARGET:g}: {'met' if met else 'NOT MET'})")
    print(f"  simulation {m['simulate']:.3f}, status line {m['status']:.3f}, drawing {m['draw']:.3f} "
          f"(figure built {m['build']:.3f}, rendered to PNG {m['render']:.3f}, the rest shown)")
    print(f"  a setting the panel has kept (a control moved back): {m['kept']:.3f} cpu seconds, no simulation")
    return met


def run_bench(records: int = 600_000, repeats: int = 5, cases: list[str] | None = None) -> int:
    """Every case (or the named ones): CPU time, records per CPU-second, bytes per record, against the targets."""
    ok = True
    if cases and "explorer" in cases:
        ok = run_explorer(repeats)
        cases = [c for c in cases if c != "explorer"]
        if not cases:
            return 0 if ok else 1
    production_cases = [n for n, *_ in PRODUCTION if cases and n in cases]
    if production_cases:
        ok = run_production(production_cases) and ok
        if all(c in production_cases for c in cases):
            return 0 if ok else 1
    for name, make, kind, target, most, memory in CASES:
        if cases and name not in cases:
            continue
        scenario = make(records) if make is steady_state else make()
        n = repeats if most is None else min(repeats, most)
        cpu, s, peak = measure(scenario, n, memory)
        median = statistics.median(cpu)
        sent = s["records_sent"]
        rate = sent / median
        met = rate >= target if kind == "rate" else median <= target
        mem_ok = peak is None or peak / sent < TARGET_BYTES_PER_RECORD
        ok = ok and met and mem_ok
        goal = f">= {target:,.0f} records/cpu-s" if kind == "rate" else f"<= {target:g} cpu-s"
        print(f"{name}: {sent:,} records, {s['batches']:,} batches, {s['produce_requests']:,} produce requests, "
              f"{s['fetch_requests']:,} fetches")
        print(f"  cpu seconds per run: median {median:.3f} over {n} (min {min(cpu):.3f}, max {max(cpu):.3f})"
              f" -> {rate:,.0f} records per cpu-second (target {goal}: {'met' if met else 'NOT MET'})")
        if peak is not None:
            print(f"  peak traced memory: {peak / 2**20:.1f} MiB = {peak / sent:.0f} bytes/record "
                  f"(target < {TARGET_BYTES_PER_RECORD}: {'met' if mem_ok else 'NOT MET'})")
        print(f"  produce latency p50 {s['produce_latency_ms_p50']:.2f} ms, p99 {s['produce_latency_ms_p99']:.2f} ms")
    return 0 if ok else 1


SWEEP_SPEC = """\
# python -m kafkamodel bench --sweep: the same points on every engine
study: bench_sweep
notebook: 00_explore.ipynb
base: steady-state
seeds: {seeds}
overrides: {{duration.ms: 2000}}
grid:
  producers[*].acks: [0, 1, all]
"""
# engine, Spark master, runs as a dataset at a file:// URI (kafkamodel.kit.dataset) rather than run folders
SWEEP_ENGINES = (("papermill", None, False), ("spark", "local[1]", False), ("spark", "local[2]", False),
                 ("spark", "local[2]", True))


def run_sweep_bench(points: int = 24) -> int:
    """Points per second and per-point overhead of each sweep engine, on the same points.

    The last row runs Spark ``local[2]`` into the runs dataset at a
    ``file://`` URI (``kafkamodel.kit.dataset``) instead of run folders.
    Overhead per point = (wall x parallel slots - time in the model and
    writing) / points: the slot-seconds each point costs beyond its own work.
    A Spark session's start and its first job (JVM and Python worker warm-up)
    are paid once per sweep and reported apart.
    """
    import filecmp
    import tempfile
    from pathlib import Path

    from .kit.spark import spark_session
    from .kit.specfile import load_spec
    from .kit.sweep import run_sweeps

    seeds = max(1, -(-points // 3))
    with tempfile.TemporaryDirectory(prefix="kafkamodel-bench-") as tmp:
        tmp = Path(tmp)
        (tmp / "bench_sweep.yaml").write_text(SWEEP_SPEC.format(seeds=seeds))
        (tmp / "warm").mkdir()
        (tmp / "warm" / "bench_sweep.yaml").write_text(SWEEP_SPEC.format(seeds=1))
        spec, warm = load_spec(tmp / "bench_sweep.yaml"), load_spec(tmp / "warm" / "bench_sweep.yaml")
        n = len(spec.points())
        print(f"sweep: {n} points of steady-state (RF=3, 20k records/s, 2 s: 40k records each) per engine")
        rows = []
        for engine, master, dataset in SWEEP_ENGINES:
            runs = tmp / f"runs-{engine}-{master or 'workers'}{'-dataset' if dataset else ''}"
            label = f"{engine} {master}" if master else f"papermill, {os.cpu_count() or 1} workers"
            if dataset:
                runs, label = runs.as_uri(), f"{label} -> file:// dataset"
            if engine == "papermill":
                (outcome,) = run_sweeps([spec], runs=runs, progress=False)
                fixed = None
            else:
                t0 = time.perf_counter()
                with spark_session(master, app_name="kafkamodel bench") as spark:
                    warm_runs = tmp / "warm-runs" / f"{master}{'-dataset' if dataset else ''}"  # each row warms up
                    run_sweeps([warm], runs=warm_runs.as_uri() if dataset else warm_runs, progress=False,
                               engine="spark", spark=spark)
                    fixed = time.perf_counter() - t0
                    (outcome,) = run_sweeps([spec], runs=runs, progress=False, engine="spark", spark=spark)
                    if dataset:  # summary.json's text as the dataset holds it
                        texts = dict(spark.read.parquet(f"{runs}/{spec.study}/files")
                                     .select("run_id", "summary_json").collect())
            if not outcome.ok:
                print(f"{label}: {len(outcome.failed)} points failed: {outcome.failed[0][1]}")
                return 1
            rows.append((label, runs, outcome, fixed))
        print(f"{'engine':<36} {'points/s':>9} {'overhead/point':>15} {'model+write/point':>18} {'fixed':>8}")
        for label, _, o, fixed in rows:
            print(f"{label:<36} {len(o.ran) / o.wall_s:>9.2f} {o.overhead_per_point():>13.3f} s "
                  f"{statistics.mean(o.model_s):>16.3f} s {'' if fixed is None else f'{fixed:.1f} s':>8}")
        first = rows[0][1] / spec.study
        same = all(filecmp.cmp(first / p.run_id / "summary.json", r / spec.study / p.run_id / "summary.json",
                               shallow=False) for _, r, _, _ in rows[1:] if not isinstance(r, str)
                   for p in spec.points())
        same = same and all(texts[p.run_id] == (first / p.run_id / "summary.json").read_text()
                            for p in spec.points())
        print("fixed: Spark session start + first job (JVM and Python worker warm-up), once per sweep")
        print(f"summaries identical across engines: {'yes' if same else 'NO'}")
        return 0 if same else 1
