"""``python -m kafkamodel bench``: speed and memory of the model.

The steady state of DESIGN.md: RF=3, acks=all, 600k records, no faults.
Speed is simulated records per CPU-second (process time, median of
repeats); memory is the peak traced by tracemalloc during one extra run
(NumPy reports its buffers to it), divided by the records.
"""

from __future__ import annotations

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
