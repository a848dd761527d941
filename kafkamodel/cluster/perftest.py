"""``kafka-producer-perf-test`` output, as the tool prints it (``ProducerPerformance``), and the same lines made
from a model run.

The tool prints a progress line every five seconds and a final line::

    %d records sent, %.1f records/sec (%.2f MB/sec), %.1f ms avg latency, %.1f ms max latency.
    %d records sent, %f records/sec (%.2f MB/sec), %.2f ms avg latency, %.2f ms max latency, %d ms 50th, %d ms 95th, %d ms 99th, %d ms 99.9th.

(MB/sec there is 2^20 bytes.) The output does not say how the test was run, so a file given to ``cluster
calibrate`` starts with the command line as it was typed (``$ kafka-producer-perf-test --topic T --num-records N
--record-size B --throughput R --producer-props acks=all linger.ms=5 ...``, ``.sh`` and ``bin/`` forms too).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from .errors import InputError

_NUM = r"(-?[\d.]+(?:[eE][-+]?\d+)?)"
PROGRESS = re.compile(rf"^(\d+) records sent, {_NUM} records/sec \({_NUM} MB/sec\), {_NUM} ms avg latency, "
                      rf"{_NUM} ms max latency\.$")
FINAL = re.compile(rf"^(\d+)\S* records sent, {_NUM} records/sec \({_NUM} MB/sec\), {_NUM} ms avg latency, "
                   rf"{_NUM} ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99\.9th\.$")
COMMAND = re.compile(r"^\$?\s*(\S*kafka-producer-perf-test(?:\.sh)?|\S*kafka-run-class(?:\.sh)? \S*ProducerPerformance)\s")


@dataclass(frozen=True)
class Measurement:
    """One measured point: how the load was made, and what was measured."""
    source: str
    topic: str
    record_size_bytes: int
    rate_per_s: float | str  # the target (records/s) or "max" (--throughput -1)
    producer: dict = field(default_factory=dict)  # Kafka's producer properties the model has
    records_per_s: float | None = None  # measured
    latency_ms: dict = field(default_factory=dict)  # {"avg": ..., "p50": ..., "p95": ..., "p99": ..., "p999": ...}


PRODUCER_PROPS = ("acks", "linger.ms", "batch.size", "compression.type", "enable.idempotence", "buffer.memory",
                  "max.in.flight.requests.per.connection")


def _command(line: str, source: str, number: int) -> tuple[str, int, float | str, dict]:
    words = shlex.split(line.lstrip("$ "))
    opts: dict[str, list[str]] = {}
    key = None
    for w in words[1:]:
        if w.startswith("--"):
            key = w[2:]
            opts[key] = []
        elif key:
            opts[key].append(w)
    for need in ("topic", "record-size", "throughput"):
        if need not in opts or not opts[need]:
            raise InputError(source, number, f"expected --{need} in the command line (--topic, --record-size and "
                                             "--throughput say where and how the load was made)")
    try:
        size = int(opts["record-size"][0])
        throughput = float(opts["throughput"][0])
    except ValueError:
        raise InputError(source, number, "expected numbers after --record-size and --throughput") from None
    props = {}
    for item in opts.get("producer-props", []):
        k, eq, v = item.partition("=")
        if not eq:
            raise InputError(source, number, f"expected --producer-props key=value ..., got {item!r}")
        if k in PRODUCER_PROPS:
            low = v.lower()
            props[k] = (low == "true") if low in ("true", "false") else (int(v) if re.fullmatch(r"-?\d+", v) else v)
    if props.get("acks") == -1:
        props["acks"] = "all"
    return opts["topic"][0], size, ("max" if throughput < 0 else throughput), props


def read_perf_test(text: str, source: str) -> Measurement:
    topic = size = rate = None
    props: dict = {}
    final = None
    progress = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        if COMMAND.match(line):
            topic, size, rate, props = _command(line, source, number)
        elif m := FINAL.match(line):
            final = m
        elif m := PROGRESS.match(line):
            progress.append(m)
        elif topic is None:
            raise InputError(source, number, "expected the kafka-producer-perf-test command line first ($ "
                                             "kafka-producer-perf-test --topic T --record-size B --throughput R ...)")
        # other lines (log4j warnings, the shell's prompt) are the tool's surroundings: skipped
    if topic is None:
        raise InputError(source, None, "expected the kafka-producer-perf-test command line (--topic, --record-size, "
                                       "--throughput)")
    if final is None:
        raise InputError(source, None, "expected the tool's final line (N records sent, ... ms 50th, ... ms 95th, "
                                       "... ms 99th, ... ms 99.9th.)")
    g = final.groups()
    return Measurement(source, topic, size, rate, props, records_per_s=float(g[1]),
                       latency_ms={"avg": float(g[3]), "max": float(g[4]), "p50": float(g[5]), "p95": float(g[6]),
                                   "p99": float(g[7]), "p999": float(g[8])})


def write_perf_test(m: Measurement, records: int, command_topic: str | None = None) -> str:
    """The tool's output for a measurement (the model's, in the tests): the command line and the final line."""
    throughput = -1 if m.rate_per_s == "max" else m.rate_per_s
    props = " ".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in m.producer.items())
    lat = m.latency_ms
    mb = m.records_per_s * m.record_size_bytes / 2**20
    return (f"$ kafka-producer-perf-test --topic {command_topic or m.topic} --num-records {records} "
            f"--record-size {m.record_size_bytes} --throughput {throughput:g} --producer-props "
            f"bootstrap.servers=localhost:9092 {props}\n"
            f"{records} records sent, {m.records_per_s:f} records/sec ({mb:.2f} MB/sec), {lat['avg']:.2f} ms avg "
            f"latency, {lat['max']:.2f} ms max latency, {int(lat['p50'])} ms 50th, {int(lat['p95'])} ms 95th, "
            f"{int(lat['p99'])} ms 99th, {int(lat['p999'])} ms 99.9th.\n")
