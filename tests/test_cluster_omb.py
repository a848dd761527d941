"""OpenMessagingBenchmark result JSON, with TestResult's field names."""

from __future__ import annotations

import json

import pytest

from kafkamodel.cluster.errors import InputError
from kafkamodel.cluster.omb import read_omb

RESULT = {"workload": "1 topic / 100 partitions / 1kb", "driver": "Kafka", "messageSize": 1024, "topics": 1,
          "partitions": 100, "producersPerTopic": 1, "consumersPerTopic": 1,
          "publishRate": [50010.2, 49990.1, 50000.0], "consumeRate": [50001.0, 49999.0, 50000.0], "backlog": [0, 0, 0],
          "aggregatedPublishLatencyAvg": 3.1, "aggregatedPublishLatency50pct": 2.9,
          "aggregatedPublishLatency75pct": 3.3, "aggregatedPublishLatency95pct": 4.8,
          "aggregatedPublishLatency99pct": 7.7, "aggregatedPublishLatency999pct": 21.0,
          "aggregatedEndToEndLatency50pct": 4.0, "aggregatedEndToEndLatency99pct": 11.0}


def test_a_result_is_a_point_at_its_measured_publish_rate():
    m = read_omb(json.dumps(RESULT), "omb.json", "orders")
    assert (m.topic, m.record_size_bytes, m.rate_per_s) == ("orders", 1024, pytest.approx(50000.1, abs=1e-3))
    assert m.latency_ms == {"avg": 3.1, "p50": 2.9, "p95": 4.8, "p99": 7.7, "p999": 21.0}
    assert m.e2e_latency_ms == {"p50": 4.0, "p99": 11.0}


def test_a_result_without_its_fields_is_refused_naming_them():
    with pytest.raises(InputError, match=r"^omb.json: expected TestResult's fields; missing publishRate$"):
        read_omb(json.dumps({k: v for k, v in RESULT.items() if k != "publishRate"}), "omb.json", "t")
    with pytest.raises(InputError, match=r"^omb.json:1: expected OpenMessagingBenchmark result JSON"):
        read_omb("{oops", "omb.json", "t")
