"""``python -m kafkamodel bench``: speed and memory of the model; ``--sweep``: of the sweep engines.

The steady state of DESIGN.md: RF=3, acks=all, 600k records, no faults.
Speed is simulated records per CPU-second (process time, median of
repeats); memory is the peak traced by tracemalloc during one extra run
(NumPy reports its buffers to it), divided by the records.
"""

from __future__ import annotations

import os
import statistics
import time
import tracemalloc

from .scenario import load_scenario
from .simulation import simulate

TARGET_RECORDS_PER_CPU_S = 1_000_000
TARGET_BYTES_PER_RECORD = 300


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


def run_bench(records: int = 600_000, repeats: int = 5) -> int:
    scenario = steady_state(records)
    simulate(scenario)  # warm-up: imports, caches
    cpu, sent = [], 0
    for _ in range(repeats):
        t0 = time.process_time()
        result = simulate(scenario)
        cpu.append(time.process_time() - t0)
        sent = result.summary["records_sent"]
    tracemalloc.start()
    simulate(scenario)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    median = statistics.median(cpu)
    rate = sent / median
    per_record = peak / sent
    s = result.summary
    print(f"steady state: RF=3, acks=all, {sent} records, {s['batches']} batches, "
          f"{s['fetch_requests']} fetches")
    print(f"cpu seconds per run: median {median:.3f} over {repeats} (min {min(cpu):.3f}, max {max(cpu):.3f})")
    print(f"simulated records per cpu-second: {rate:,.0f} (target >= {TARGET_RECORDS_PER_CPU_S:,})")
    print(f"peak traced memory: {peak / 2**20:.1f} MiB = {per_record:.0f} bytes/record (target < {TARGET_BYTES_PER_RECORD})")
    print(f"produce latency p50 {s['produce_latency_ms_p50']:.2f} ms, p99 {s['produce_latency_ms_p99']:.2f} ms")
    return 0


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
SWEEP_ENGINES = (("papermill", None), ("spark", "local[1]"), ("spark", "local[2]"))


def run_sweep_bench(points: int = 24) -> int:
    """Points per second and per-point overhead of each sweep engine, on the same points.

    Overhead per point = (wall x parallel slots - time in the model and
    writing) / points: the slot-seconds each point costs beyond its own work.
    A Spark session's start and its first job (JVM and Python worker warm-up)
    are paid once per sweep and reported apart.
    """
    import filecmp
    import tempfile
    from pathlib import Path

    from .study.spark import spark_session
    from .study.specfile import load_spec
    from .study.sweep import run_sweeps

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
        for engine, master in SWEEP_ENGINES:
            runs = tmp / f"runs-{engine}-{master or 'workers'}"
            label = f"{engine} {master}" if master else f"papermill, {os.cpu_count() or 1} workers"
            if engine == "papermill":
                (outcome,) = run_sweeps([spec], runs=runs, progress=False)
                fixed = None
            else:
                t0 = time.perf_counter()
                with spark_session(master, app_name="kafkamodel bench") as spark:
                    run_sweeps([warm], runs=tmp / "warm-runs" / master, progress=False, engine="spark", spark=spark)
                    fixed = time.perf_counter() - t0
                    (outcome,) = run_sweeps([spec], runs=runs, progress=False, engine="spark", spark=spark)
            if not outcome.ok:
                print(f"{label}: {len(outcome.failed)} points failed: {outcome.failed[0][1]}")
                return 1
            rows.append((label, runs, outcome, fixed))
        print(f"{'engine':<24} {'points/s':>9} {'overhead/point':>15} {'model+write/point':>18} {'fixed':>8}")
        for label, _, o, fixed in rows:
            print(f"{label:<24} {len(o.ran) / o.wall_s:>9.2f} {o.overhead_per_point():>13.3f} s "
                  f"{statistics.mean(o.model_s):>16.3f} s {'' if fixed is None else f'{fixed:.1f} s':>8}")
        first = rows[0][1] / spec.study
        same = all(filecmp.cmp(first / p.run_id / "summary.json", r / spec.study / p.run_id / "summary.json",
                               shallow=False) for _, r, _, _ in rows[1:] for p in spec.points())
        print("fixed: Spark session start + first job (JVM and Python worker warm-up), once per sweep")
        print(f"summaries identical across engines: {'yes' if same else 'NO'}")
        return 0 if same else 1
