"""OpenMessagingBenchmark result JSON, as its ``TestResult`` writes it (openmessaging/benchmark,
benchmark-framework/.../TestResult.java): ``workload``, ``driver``, ``messageSize``, ``topics``, ``partitions``,
``producersPerTopic``, ``publishRate`` (one value per reporting window, records/s),
``aggregatedPublishLatencyAvg`` / ``50pct`` / ``95pct`` / ``99pct`` / ``999pct`` (ms), and the same for
``aggregatedEndToEndLatency``. A point is run in the model at the measured publish rate (OMB drives a target rate
open loop); ``--omb FILE.json:TOPIC`` names the scenario's topic, else the scenario's first."""

from __future__ import annotations

import json

from .errors import InputError
from .perftest import Measurement

LATENCIES = {"avg": "Avg", "p50": "50pct", "p95": "95pct", "p99": "99pct", "p999": "999pct"}


def read_omb(text: str, source: str, topic: str) -> Measurement:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(source, exc.lineno, f"expected OpenMessagingBenchmark result JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise InputError(source, None, "expected OpenMessagingBenchmark result JSON (an object)")
    missing = [k for k in ("publishRate", "aggregatedPublishLatency50pct", "aggregatedPublishLatency99pct",
                           "messageSize") if k not in data]
    if missing:
        raise InputError(source, None, f"expected TestResult's fields; missing {', '.join(missing)}")
    rates = data["publishRate"]
    if not isinstance(rates, list) or not rates or not all(isinstance(r, (int, float)) for r in rates):
        raise InputError(source, None, "expected publishRate: a list of records/s, one per window")
    rate = sum(rates) / len(rates)
    latency = {k: float(data[f"aggregatedPublishLatency{v}"]) for k, v in LATENCIES.items()
               if isinstance(data.get(f"aggregatedPublishLatency{v}"), (int, float))}
    e2e = {k: float(data[f"aggregatedEndToEndLatency{v}"]) for k, v in LATENCIES.items()
           if isinstance(data.get(f"aggregatedEndToEndLatency{v}"), (int, float))}
    m = Measurement(source, topic, int(data["messageSize"]), round(rate, 3), {}, records_per_s=rate,
                    latency_ms=latency)
    object.__setattr__(m, "e2e_latency_ms", e2e)
    return m
