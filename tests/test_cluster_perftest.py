"""kafka-producer-perf-test output as ProducerPerformance prints it (progress and final lines)."""

from __future__ import annotations

import pytest

from kafkamodel.cluster.errors import InputError
from kafkamodel.cluster.perftest import Measurement, read_perf_test, write_perf_test

OUTPUT = """$ bin/kafka-producer-perf-test.sh --topic orders --num-records 5000000 --record-size 1024 --throughput 50000 --producer-props bootstrap.servers=b1:9092 acks=all linger.ms=5 batch.size=65536
[2024-03-01 10:00:00,123] WARN some log4j line (org.apache.kafka.clients.NetworkClient)
249826 records sent, 49965.2 records/sec (48.79 MB/sec), 3.4 ms avg latency, 212.0 ms max latency.
250100 records sent, 50020.0 records/sec (48.85 MB/sec), 2.9 ms avg latency, 41.0 ms max latency.
5000000 records sent, 49993.850757 records/sec (48.82 MB/sec), 3.05 ms avg latency, 212.00 ms max latency, 3 ms 50th, 5 ms 95th, 9 ms 99th, 31 ms 99.9th.
"""


def test_the_command_and_the_final_line_are_read():
    m = read_perf_test(OUTPUT, "pt.txt")
    assert (m.topic, m.record_size_bytes, m.rate_per_s) == ("orders", 1024, 50000.0)
    assert m.producer == {"acks": "all", "linger.ms": 5, "batch.size": 65536}
    assert m.records_per_s == 49993.850757
    assert m.latency_ms == {"avg": 3.05, "max": 212.0, "p50": 3, "p95": 5, "p99": 9, "p999": 31}


def test_written_output_reads_back():
    m = Measurement("x", "t", 100, "max", {"acks": 1}, records_per_s=1234.5,
                    latency_ms={"avg": 2.25, "max": 9, "p50": 2, "p95": 4, "p99": 6, "p999": 8})
    back = read_perf_test(write_perf_test(m, 1000), "x")
    assert (back.rate_per_s, back.producer, back.records_per_s, back.latency_ms) == (
        "max", {"acks": 1}, 1234.5, m.latency_ms)


@pytest.mark.parametrize("text, expected", [
    (OUTPUT.split("\n", 1)[1], "pt.txt:1: expected the kafka-producer-perf-test command line first"),
    ("$ kafka-producer-perf-test --topic t --record-size 10\n", "pt.txt:1: expected --throughput in the command line"),
    (OUTPUT.rsplit("5000000 records", 1)[0], "pt.txt: expected the tool's final line"),
])
def test_what_it_cannot_read_is_named(text, expected):
    with pytest.raises(InputError) as info:
        read_perf_test(text, "pt.txt")
    assert str(info.value).startswith(expected)
