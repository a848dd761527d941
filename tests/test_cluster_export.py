"""The round trip: a scenario exported as kafka-topics --describe, server.properties and the traffic table, then
imported, is the same scenario."""

from __future__ import annotations

import pytest

from kafkamodel import load_scenario
from kafkamodel.cluster.export import files
from kafkamodel.cluster.importer import build

SCENARIOS = {
    "racks-and-overrides": {
        "kafka.version": "3.6", "brokers": 6, "racks": ["a", "b", "c"],
        "broker": {"min.insync.replicas": 2, "num.io.threads": 16, "replica.lag.time.max.ms": 10000},
        "topics": [{"name": "orders", "partitions": 12, "replication.factor": 3, "retention.ms": 86400000},
                   {"name": "clicks", "partitions": 5, "replication.factor": 2, "min.insync.replicas": 1}],
        "producers": [{"topic": "orders", "rate.per.s": 3000, "record.size.bytes": 512, "acks": "all",
                       "linger.ms": 10, "batch.size": 65536, "instances": 4, "keys": {"cardinality": 5000}},
                      {"topic": "clicks", "rate.per.s": 12345.5, "record.size.bytes": 200, "acks": 1}],
        "consumers": [{"group": "orders-group-0", "topic": "orders", "members": 3},
                      {"group": "orders-group-1", "topic": "orders", "members": 3}]},
    "own-assignment-kraft": {
        "brokers": 3, "topics": [{"name": "t", "partitions": 3, "replication.factor": 2,
                                  "replicas": [[2, 1], [0, 2], [2, 0]]}],
        "producers": [{"topic": "t", "rate.per.s": 1000}]},
    "zookeeper-0.10": {
        "kafka.version": "0.10", "brokers": 3, "broker": {"unclean.leader.election.enable": True},
        "topics": [{"name": "t", "partitions": 4, "replication.factor": 3}],
        "producers": [{"topic": "t", "rate.per.s": 500, "acks": 1, "linger.ms": 0}]},
}


@pytest.mark.parametrize("name", SCENARIOS)
def test_export_then_import_is_the_same_scenario(name):
    original = load_scenario({"name": name, "seed": 1, "duration.ms": 10000, **SCENARIOS[name]})
    written = files(original)
    imported = build((written["describe.txt"], "describe.txt"),
                     [(text, f) for f, text in written.items() if f.endswith(".properties")],
                     traffic=(written["traffic.csv"], "traffic.csv"), name=name)
    again = load_scenario(imported.yaml())  # the written YAML, comments and all
    assert again == original
