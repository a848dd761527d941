"""KIP-951's micro-benchmark measured on the model, by hand (docs/validation-sources.md section 8.1).

Published: kafka-producer-perf-test, 40,000,000 records at 100,000 records/s (95.37 MB/s: 1,000-byte records), the
leaderships of all partitions of a 100-partition topic reassigned; p99.9 produce latency over the run 1,675 ms
(3.6) and 215 ms (3.7). Assumed (the KIP does not say): 6 brokers, replication factor 3, acks=all and the
producer's other defaults (perf-test's), one move: a reassignment rotating each replica list at 4 s (no data
moves), then one preferred-leader election at 6 s.

The move is simulated (16 s; records sent from 2 s to 14 s); the run's other records are the same scenario's
without the move (its records sent from 2 s to 14 s, each weighted (40,000,000 - the move run's count) / its
count), so the run's percentiles are the pooled, weighted ones. A record never answered counts as infinitely late.

    python tests/measure_kip951.py VERSION SEED     # one JSON line: the window's and the run's figures
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kafkamodel import simulate  # noqa: E402

TOTAL = 40_000_000  # the published run's records
LO, HI = 2000.0, 14000.0  # the records taken from each run: sent in [LO, HI)
PARTITIONS, BROKERS = 100, 6


def scenario(version: str, seed: int, move: bool) -> dict:
    s = {"name": "kip951-micro", "seed": seed, "duration.ms": 16000, "brokers": BROKERS, "kafka.version": version,
         "topics": [{"name": "t", "partitions": PARTITIONS, "replication.factor": 3}],
         "producers": [{"topic": "t", "rate.per.s": 100000, "acks": "all", "record.size.bytes": 1000}]}
    if move:  # partition p's replicas are p, p+1, p+2 (mod 6), the first its preferred leader: rotate them
        s["operations"] = [
            {"at.ms": 4000, "kind": "reassign", "topic": "t", "partitions": list(range(PARTITIONS)),
             "replicas": [[(p + 1) % BROKERS, (p + 2) % BROKERS, p % BROKERS] for p in range(PARTITIONS)]},
            {"at.ms": 6000, "kind": "preferred_leader_election", "topic": "t"}]
    return s


def latencies(result) -> np.ndarray:
    rec = result.records
    sent = rec[(rec["send_ms"] >= LO) & (rec["send_ms"] < HI)]
    lat = (sent["ack_ms"] - sent["send_ms"]).to_numpy(dtype=float)
    lat[~sent["acked"].to_numpy(dtype=bool)] = np.inf
    return lat


def weighted_quantile(values: np.ndarray, weights: np.ndarray, q: float) -> float:
    """The smallest value whose cumulative weight reaches q of the whole (the order statistic at n q, weighted)."""
    order = np.argsort(values, kind="stable")
    cum = np.cumsum(weights[order])
    return float(values[order][min(np.searchsorted(cum, q * cum[-1]), len(cum) - 1)])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("version", help="kafka.version, e.g. 3.6 or 3.7")
    parser.add_argument("seed", help="the runs' seed (an integer >= 0)")
    args = parser.parse_args(argv)
    if not args.seed.isdigit():
        print(f"seed: must be an integer >= 0, got {args.seed!r}", file=sys.stderr)
        return 2
    seed = int(args.seed)
    try:
        moved = simulate(scenario(args.version, seed, True))
    except ValueError as e:  # ScenarioError: the scenario's one line (kafka.version)
        print(str(e).splitlines()[0], file=sys.stderr)
        return 2
    steady = simulate(scenario(args.version, seed, False))
    a, b = latencies(moved), latencies(steady)
    values = np.concatenate([a, b])
    weights = np.concatenate([np.ones(len(a)), np.full(len(b), (TOTAL - len(a)) / len(b))])
    s = moved.summary
    print(json.dumps({
        "version": args.version, "seed": seed, "move_records": len(a),
        "move_p99_ms": float(np.quantile(a, 0.99)), "move_p999_ms": float(np.quantile(a, 0.999)),
        "steady_p99_ms": float(np.quantile(b, 0.99)), "steady_p999_ms": float(np.quantile(b, 0.999)),
        "run_p99_ms": weighted_quantile(values, weights, 0.99), "run_p999_ms": weighted_quantile(values, weights, 0.999),
        "run_max_ms": float(values.max()), "move_records_over_200_ms": int((a > 200).sum()),
        "producer_metadata_refreshes": s["producer_metadata_refreshes"], "producer_leader_hints": s["producer_leader_hints"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
