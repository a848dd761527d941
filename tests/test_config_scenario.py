"""Scenario validation: every broken scenario names its field and its rule.

A table of broken scenarios, each derived from one small valid base by a
few edits, with the exact problem expected; then Kafka's defaults,
immutability, ``with_overrides`` and the CLI's one-line errors (exit 2).
"""

from __future__ import annotations

import copy
import math
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kafkamodel.config.scenario import Scenario, ScenarioError, load_scenario

REPO = Path(__file__).resolve().parents[1]

BASE = {
    "name": "base",
    "seed": 7,
    "duration.ms": 10000,
    "brokers": 3,
    "topics": [{"name": "orders", "partitions": 3, "replication.factor": 3}],
    "producers": [{"topic": "orders", "rate.per.s": 100}],
    "faults": [{"at.ms": 1000, "kind": "crash", "broker": 0}],
}

DELETE = object()  # an edit value: remove the key


def broken(*edits: tuple[tuple, object]) -> dict:
    """A copy of BASE with each (path, value) edit applied; a path is a tuple of keys and list indices."""
    s = copy.deepcopy(BASE)
    for path, value in edits:
        parent = s
        for step in path[:-1]:
            if isinstance(parent, dict) and step not in parent:
                parent[step] = {}
            parent = parent[step]
        if value is DELETE:
            del parent[path[-1]]
        else:
            parent[path[-1]] = copy.deepcopy(value)
    return s


T0, P0, F0 = ("topics", 0), ("producers", 0), ("faults", 0)
NET = ("network", "latency.ms")

# (scenario dict or YAML text, field path the message starts with, rule text it contains)
CASES = [
    # unknown keys, with the nearest valid name (or the list of valid ones)
    pytest.param(broken((("broker", "min.insync.replica"), 2)),
                 "broker.min.insync.replica", "unknown key; did you mean 'min.insync.replicas'?", id="unknown-broker-key"),
    pytest.param(broken((("results.records",), "some")), "results.records", "must be one of all, sample, none, got 'some'",
                 id="results-records"),
    pytest.param(broken((("dration.ms",), 5000)),
                 "dration.ms", "unknown key; did you mean 'duration.ms'?", id="unknown-top-key-suggest"),
    pytest.param(broken((("zzzz",), 1)),
                 "zzzz", "unknown key; valid keys: name, seed, duration.ms", id="unknown-top-key-no-match"),
    pytest.param(broken((T0 + ("partiton",), 3)),
                 "topics[0].partiton", "unknown key; did you mean 'partitions'?", id="unknown-topic-key"),
    pytest.param(broken((P0 + ("lingr.ms",), 3)),
                 "producers[0].lingr.ms", "unknown key; did you mean 'linger.ms'?", id="unknown-producer-key"),
    pytest.param(broken((F0 + ("durration.ms",), 3)),
                 "faults[0].durration.ms", "unknown key; did you mean 'duration.ms'?", id="unknown-fault-key"),
    pytest.param(broken((P0 + ("burst",), {"records": 10, "every.ms": 100, "evry.ms": 5})),
                 "producers[0].burst.evry.ms", "unknown key; did you mean 'every.ms'?", id="unknown-burst-key"),
    pytest.param(broken((NET, {"dist": "uniform", "low": 1, "high": 2, "mean": 1})),
                 "network.latency.ms.mean", "unknown parameter for dist uniform; it takes low, high", id="unknown-dist-param"),
    # wrong types
    pytest.param(broken((("brokers",), "3")),
                 "brokers", "must be an integer, got '3'", id="string-for-int"),
    pytest.param(broken((("brokers",), True)),
                 "brokers", "must be an integer, got True", id="bool-for-int"),
    pytest.param(broken((T0 + ("partitions",), "3")),
                 "topics[0].partitions", "must be an integer, got '3'", id="string-for-int-in-topic"),
    pytest.param(broken((("seed",), 1.5)),
                 "seed", "must be an integer, got 1.5", id="float-for-int"),
    pytest.param(broken((("broker",), [1, 2])),
                 "broker", "must be a mapping, got list", id="list-for-mapping"),
    pytest.param(broken((P0 + ("burst",), [10, 100])),
                 "producers[0].burst", "must be a mapping, got list", id="list-for-burst"),
    pytest.param(broken((("topics",), {"name": "orders"})),
                 "topics", "must be a list, got dict", id="mapping-for-list"),
    pytest.param(broken((("producers",), [None])),
                 "producers[0]", "must be a mapping, got NoneType", id="null-list-item"),
    pytest.param(broken((("broker", "unclean.leader.election.enable"), "yes")),
                 "broker.unclean.leader.election.enable", "must be true or false, got 'yes'", id="string-for-bool"),
    pytest.param(broken((("duration.ms",), float("nan"))),
                 "duration.ms", "must be a finite number, got nan", id="nan-duration"),
    pytest.param("- 1\n- 2\n", "scenario", "must be a mapping of keys, got list", id="yaml-list-not-mapping"),
    # ranges and choices
    pytest.param(broken((P0 + ("rate.per.s",), -5)),
                 "producers[0].rate.per.s", "must be >= 0, got -5", id="negative-rate"),
    pytest.param(broken((("brokers",), 0)),
                 "brokers", "must be >= 1, got 0", id="brokers-0"),
    pytest.param(broken((P0 + ("batch.size",), 0)),
                 "producers[0].batch.size", "must be >= 1, got 0", id="batch-size-0"),
    pytest.param(broken((P0 + ("acks",), 2)),
                 "producers[0].acks", "must be 0, 1, all or -1, got 2", id="acks-2"),
    pytest.param(broken((P0 + ("acks",), True)),
                 "producers[0].acks", "must be 0, 1, all or -1, got True", id="acks-bool"),
    pytest.param(broken((F0 + ("kind",), "explode")),
                 "faults[0].kind", "must be one of crash, restart, power_loss, isolate, pause, slow, disk_loss, consumer_crash, consumer_leave, consumer_join, consumer_restart, got 'explode'", id="fault-kind"),
    pytest.param(broken((P0 + ("keys",), {"cardinality": 0})),
                 "producers[0].keys.cardinality", "must be >= 1, got 0", id="keys-cardinality-0"),
    # relations between fields
    pytest.param(broken((T0 + ("replication.factor",), 5)),
                 "topics[0].replication.factor", "5 exceeds brokers (3)", id="rf-exceeds-brokers"),
    pytest.param(broken((T0 + ("replicas",), [[0, 1, 2], [1, 2, 0]])),
                 "topics[0].replicas", "must be a list of 3 broker lists (one per partition), got [[0, 1, 2], [1, 2, 0]]",
                 id="replicas-one-list-per-partition"),
    pytest.param(broken((T0 + ("replicas",), [[0, 1, 2], [1, 1, 0], [2, 0, 1]])),
                 "topics[0].replicas[1]", "a broker is listed twice in [1, 1, 0]", id="replicas-distinct"),
    pytest.param(broken((T0 + ("replicas",), [[0, 1, 2], [1, 2, 3], [2, 0, 1]])),
                 "topics[0].replicas[1]", "broker ids must be 0..2, got [1, 2, 3]", id="replicas-known-brokers"),
    pytest.param(broken((T0 + ("min.insync.replicas",), 4)),
                 "topics[0].min.insync.replicas", "4 exceeds topics[0].replication.factor (3)", id="topic-min-isr-exceeds-rf"),
    pytest.param(broken((P0 + ("topic",), "order")),
                 "producers[0].topic", "no topic named 'order'; did you mean 'orders'?", id="producer-topic-unknown"),
    pytest.param(broken((P0 + ("topic",), "zzz")),
                 "producers[0].topic", "no topic named 'zzz'; topics are orders", id="producer-topic-unknown-no-match"),
    pytest.param(broken((("topics",), [{"name": "orders"}, {"name": "orders"}])),
                 "topics[1].name", "duplicate topic 'orders'", id="duplicate-topic"),
    pytest.param(broken((P0 + ("delivery.timeout.ms",), 1000)),
                 "producers[0].delivery.timeout.ms", "must be >= linger.ms + request.timeout.ms (30005), got 1000",
                 id="delivery-timeout-too-small"),
    pytest.param(broken((P0 + ("acks",), 1), (P0 + ("enable.idempotence",), True)),
                 "producers[0].enable.idempotence", "true needs acks=all, got acks=1", id="idempotence-with-acks-1"),
    pytest.param(broken((P0 + ("retries",), 0), (P0 + ("enable.idempotence",), True)),
                 "producers[0].enable.idempotence", "true needs retries > 0", id="idempotence-with-retries-0"),
    pytest.param(broken((P0 + ("rate.per.s",), 0)),
                 "producers[0].rate.per.s", "must be > 0 unless a burst is given", id="rate-0-no-burst"),
    pytest.param(broken((P0 + ("start.ms",), 500), (P0 + ("stop.ms",), 500)),
                 "producers[0].stop.ms", "must be after start.ms (500), got 500", id="stop-not-after-start"),
    # missing required keys
    pytest.param(broken((T0 + ("name",), DELETE)), "topics[0].name", "required", id="missing-topic-name"),
    pytest.param(broken((P0 + ("topic",), DELETE)), "producers[0].topic", "required", id="missing-producer-topic"),
    pytest.param(broken((F0 + ("kind",), DELETE)), "faults[0].kind", "required", id="missing-fault-kind"),
    pytest.param(broken((P0 + ("rate.per.s",), 0), (P0 + ("burst",), {"every.ms": 100})),
                 "producers[0].burst.records", "required", id="missing-burst-records"),
    # faults
    pytest.param(broken((F0 + ("at.ms",), 20000)),
                 "faults[0].at.ms", "20000 is outside the run (duration.ms 10000)", id="fault-after-run"),
    pytest.param(broken((F0 + ("at.ms",), 10000)),
                 "faults[0].at.ms", "10000 is outside the run (duration.ms 10000)", id="fault-at-end-of-run"),
    pytest.param(broken((F0 + ("at.ms",), -1)),
                 "faults[0].at.ms", "must be >= 0, got -1", id="fault-before-run"),
    pytest.param(broken((F0 + ("broker",), 3)),
                 "faults[0].broker", "no broker 3; ids are 0..2", id="fault-broker-unknown"),
    pytest.param(broken((F0 + ("broker",), "leader:nope-0")),
                 "faults[0].broker", "no topic named 'nope'", id="leader-target-unknown-topic"),
    pytest.param(broken((F0 + ("broker",), "leader:orders-3")),
                 "faults[0].broker", "topic 'orders' has partitions 0..2, not 3", id="leader-target-partition-out-of-range"),
    pytest.param(broken((F0 + ("broker",), "orders-0")),
                 "faults[0].broker", "must be a broker id, leader:TOPIC-P, rack:NAME, * or controller, got 'orders-0'", id="leader-target-malformed"),
    pytest.param(broken((F0 + ("kind",), "restart"), (F0 + ("broker",), "leader:orders-0")),
                 "faults[0].broker", "restart needs a broker id", id="restart-leader-target"),
    pytest.param(broken((F0 + ("kind",), "isolate")),
                 "faults[0].duration.ms", "required for kind isolate", id="isolate-without-duration"),
    pytest.param(broken((F0 + ("kind",), "restart"), (F0 + ("duration.ms",), 100)),
                 "faults[0].duration.ms", "not used by kind restart", id="restart-with-duration"),
    # distributions
    pytest.param(broken((NET, {"dist": "gamma", "mean": 1})),
                 "network.latency.ms.dist", "must be one of constant, exponential, lognormal, uniform, got 'gamma'",
                 id="dist-unknown"),
    pytest.param(broken((NET, {"dist": "lognormal", "median": 1})),
                 "network.latency.ms.sigma", "required for dist lognormal", id="dist-missing-parameter"),
    pytest.param(broken((NET, {"dist": "exponential", "mean": -1})),
                 "network.latency.ms.mean", "must be > 0, got -1", id="dist-negative-mean"),
    pytest.param(broken((NET, {"dist": "uniform", "low": 3, "high": 1})),
                 "network.latency.ms.low", "must not exceed high (1), got 3", id="dist-uniform-low-above-high"),
    pytest.param(broken((NET, -2)),
                 "network.latency.ms", "must be a finite number >= 0 (ms), got -2", id="dist-negative-constant"),
    # producer settings that only make sense together
    pytest.param(broken((P0 + ("partitioner",), {"mapping": {"key-1": 7}}), (P0 + ("keys",), {"cardinality": 10})),
                 "producers[0].partitioner.mapping.key-1", "topic 'orders' has partitions 0..2, not 7",
                 id="mapping-beyond-partitions"),
    pytest.param(broken((P0 + ("acks",), "all"), (P0 + ("enable.idempotence",), True),
                        (P0 + ("max.in.flight.requests.per.connection",), 6)),
                 "producers[0].max.in.flight.requests.per.connection", "must be <= 5 with enable.idempotence, got 6",
                 id="idempotence-in-flight"),
    # the request layer's keys, with Kafka's ranges (num.*.threads >= 1; byte limits >= 0)
    pytest.param(broken((("broker", "num.io.threads"), 0)),
                 "broker.num.io.threads", "must be >= 1, got 0", id="io-threads-zero"),
    pytest.param(broken((("broker", "num.network.threads"), 2.5)),
                 "broker.num.network.threads", "must be an integer, got 2.5", id="network-threads-float"),
    pytest.param(broken((("broker", "num.replica.fetchers"), 0)),
                 "broker.num.replica.fetchers", "must be >= 1, got 0", id="replica-fetchers-zero"),
    pytest.param(broken((("broker", "replica.fetch.min.bytes"), -1)),
                 "broker.replica.fetch.min.bytes", "must be >= 0, got -1", id="replica-fetch-min-bytes-negative"),
    pytest.param(broken((("broker", "replica.fetch.response.max.bytes"), "10MB")),
                 "broker.replica.fetch.response.max.bytes", "must be an integer, got '10MB'", id="response-max-bytes-text"),
    pytest.param(broken((P0 + ("max.request.size",), -5)),
                 "producers[0].max.request.size", "must be >= 0, got -5", id="max-request-size-negative"),
    pytest.param(broken((("consumers",), [{"group": "g", "topic": "orders", "fetch.max.bytes": -1}])),
                 "consumers[0].fetch.max.bytes", "must be >= 0, got -1", id="fetch-max-bytes-negative"),
    pytest.param(broken((("consumers",), [{"group": "g", "topic": "orders", "max.partition.fetch.bytes": True}])),
                 "consumers[0].max.partition.fetch.bytes", "must be an integer, got True", id="partition-fetch-bytes-bool"),
    pytest.param(broken((("costs", "partition.us"), -1)),
                 "costs.partition.us", "must be >= 0, got -1", id="cost-negative"),
    pytest.param(broken((("costs", "request.ms"), 1)),
                 "costs.request.ms", "unknown key; did you mean 'request.us'?", id="cost-unknown-unit"),
    pytest.param(broken((("network", "bandwidth.mbps"), 0)),
                 "network.bandwidth.mbps", "must be > 0, got 0", id="bandwidth-zero"),
    # racks, links and disks (issue 12)
    pytest.param(broken((("racks",), ["a", "b"]),
                        (("network",), {"links": [{"between": ["rack:x", "rack:a"], "latency.ms": 2}]})),
                 "network.links[0].between[0]", "no rack named 'x'; racks are a, b", id="link-unknown-rack"),
    pytest.param(broken((("network",), {"links": [{"between": [7, "*"], "latency.ms": 2}]})),
                 "network.links[0].between[0]", "no broker 7; ids are 0..2", id="link-unknown-broker"),
    pytest.param(broken((("network",), {"links": [{"between": [0], "latency.ms": 2}]})),
                 "network.links[0].between", "must be a list of two ends", id="link-one-end"),
    pytest.param(broken((("disk",), {"fsync.ms": -1})),
                 "disk.fsync.ms", "must be a finite number >= 0 (ms), got -1", id="fsync-negative"),
    pytest.param(broken((("racks",), ["a", "b", "c", "d"])),
                 "racks", "4 racks for 3 brokers; a rack needs a broker (at most 3)", id="racks-longer-than-brokers"),
    pytest.param(broken((("racks",), ["a", "b"]), (("faults", 0, "broker"), "rack:c")),
                 "faults[0].broker", "no broker in rack 'c'; broker racks are a, b", id="fault-unknown-rack"),
    pytest.param(broken((("faults", 0, "broker"), "rack:a")),
                 "faults[0].broker", "no broker in rack 'a'; no racks are defined (racks)", id="fault-rack-without-racks"),
    pytest.param(broken((("quorum.fsync",), "yes")),
                 "quorum.fsync", "must be true or false", id="quorum-fsync-text"),
    # not YAML at all
    pytest.param("name: x\ntopics: [1, 2\n", "scenario", "line 3 not valid YAML", id="invalid-yaml"),
    pytest.param("name: x\n\tbrokers: 3\n", "scenario", "line 2 not valid YAML", id="invalid-yaml-tab"),
    pytest.param("name: x\nbrokers: 3\nbrokers: 5\n", "scenario", "line 3 not valid YAML (duplicate key 'brokers')",
                 id="duplicate-key"),
    # property names per Kafka version (docs/versions.md): a property the version lacks, later or earlier, is one line
    # naming the version and what to use instead; a mechanism the version lacks cannot be switched on
    pytest.param(broken((("kafka.version",), "0.10"), (("broker", "eligible.leader.replicas.enable"), True)),
                 "broker.eligible.leader.replicas.enable",
                 'not a property of Kafka 0.10 (Eligible Leader Replicas came in 4.0 with KIP-966); '
                 'set kafka.version "4.0" or later', id="version-4x-key-under-0.10"),
    pytest.param(broken((("broker", "zookeeper.session.timeout.ms"), 6000)),
                 "broker.zookeeper.session.timeout.ms",
                 "not a property of Kafka 4.1 in KRaft mode (ZooKeeper mode only, removed in 4.0 by KIP-500); "
                 "use broker.session.timeout.ms", id="version-removed-key-under-4.1"),
    pytest.param(broken((("kafka.version",), "2.8"), (("broker", "replica.lag.max.messages"), 4000)),
                 "broker.replica.lag.max.messages", 'not a property of Kafka 2.8 (0.9 removed it: KIP-16',
                 id="version-count-rule-after-0.8"),
    pytest.param(broken((("kafka.version",), "3.9"), (("broker", "broker.session.timeout.ms"), 6000)),
                 "broker.broker.session.timeout.ms",
                 "not a property of Kafka 3.9 in ZooKeeper mode (KRaft mode only, KIP-631); "
                 "use zookeeper.session.timeout.ms (ZooKeeper), or set kafka.metadata: kraft", id="version-kraft-key-on-zk"),
    pytest.param(broken((("kafka.version",), "0.10"), (P0 + ("enable.idempotence",), True)),
                 "producers[0].enable.idempotence", "not a property of Kafka 0.10 (the idempotent producer came in 0.11",
                 id="version-idempotence-before-0.11"),
    pytest.param(broken((("kafka.version",), "2.3"), (P0 + ("partitioner",), "sticky")),
                 "producers[0].partitioner", 'sticky is not in Kafka 2.3 (KIP-480, 2.4); set kafka.version "2.4" or later',
                 id="version-sticky-before-2.4"),
    pytest.param(broken((("kafka.version",), "0.10"), (("broker", "truncation"), "leader_epoch")),
                 "broker.truncation", "Kafka 0.10 truncates by high watermark, not leader epoch (KIP-101, 0.11)",
                 id="version-truncation-disagrees"),
    pytest.param(broken((("kafka.version",), "3.10")),
                 "kafka.version", "unknown version '3.10'; known: 0.8, 0.9, 0.10, 0.11, 1.0, 1.1, 2.0, ", id="version-unknown"),
    pytest.param(broken((("kafka.version",), 0.1)),
                 "kafka.version", 'must be a quoted string such as "2.8" (YAML reads 0.10 as the number 0.1), got 0.1',
                 id="version-not-a-string"),
    pytest.param(broken((("kafka.version",), "2.8"), (("kafka.metadata",), "kraft")),
                 "kafka.metadata", "kraft needs kafka.version 3.3 or later (KRaft production-ready, KIP-833)",
                 id="version-kraft-before-3.3"),
    pytest.param(broken((("kafka.metadata",), "zookeeper")),
                 "kafka.metadata", 'zookeeper is not in Kafka 4.1 (removed in 4.0, KIP-500)', id="version-zk-in-4.1"),
    pytest.param(broken((("kafka.version",), "0.11"), (P0 + ("enable.idempotence",), True),
                        (P0 + ("max.in.flight.requests.per.connection",), 5)),
                 "producers[0].max.in.flight.requests.per.connection",
                 "must be <= 1 with enable.idempotence, got 5 (Kafka 0.11; 5 from 1.0, KAFKA-5494)",
                 id="version-idempotence-in-flight-0.11"),
]


@pytest.mark.parametrize("source, field, rule", CASES)
def test_broken_scenario_names_field_and_rule(source, field, rule):
    with pytest.raises(ScenarioError) as info:
        load_scenario(source)
    err = info.value
    message = str(err)
    assert message.startswith(f"{field}: "), message
    assert rule in message, message
    assert err.problems == [message], "each broken scenario breaks exactly one rule"
    assert isinstance(err, ValueError)


def test_table_is_large_enough():
    assert len(CASES) >= 24


def test_rf_exceeding_brokers_message_is_exact():
    with pytest.raises(ScenarioError) as info:
        load_scenario(broken((T0 + ("replication.factor",), 5)))
    assert str(info.value) == "topics[0].replication.factor: 5 exceeds brokers (3)"


def test_every_problem_is_reported_at_once():
    with pytest.raises(ScenarioError) as info:
        load_scenario(broken((("brokers",), "3"), (P0 + ("acks",), 2), (("seeed",), 1)))
    problems = info.value.problems
    assert len(problems) == 3
    assert {p.split(":")[0] for p in problems} == {"brokers", "producers[0].acks", "seeed"}
    assert str(info.value).endswith("(and 2 more problems)")


def test_yaml_text_and_file_give_the_same_scenario(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(BASE))
    assert load_scenario(path) == load_scenario(str(path)) == load_scenario(yaml.safe_dump(BASE)) == load_scenario(BASE)


def test_empty_and_missing_files(tmp_path):
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    with pytest.raises(ScenarioError, match=r"empty\.yaml: empty scenario"):
        load_scenario(empty)
    with pytest.raises(ScenarioError, match=r"nope\.yaml: no such scenario file"):
        load_scenario(tmp_path / "nope.yaml")
    with pytest.raises(ScenarioError, match=r"nope: no such scenario file"):
        load_scenario(tmp_path / "nope")  # a Path is always a file, whatever its suffix


# --- a valid scenario and Kafka's defaults ------------------------------------


def test_valid_scenario_loads():
    s = load_scenario(BASE)
    assert isinstance(s, Scenario)
    assert s["name"] == "base" and s["seed"] == 7 and s["brokers"] == 3
    assert s["topics"][0]["replication.factor"] == 3
    assert s["faults"][0]["kind"] == "crash"
    assert load_scenario(s) is s


def test_defaults_are_todays_kafka():
    """Checked against docs/kafka-facts.md: with no kafka.version, the newest modelled (4.1, KRaft)."""
    s = load_scenario(BASE)
    broker, producer = s["broker"], s["producers"][0]
    assert s["kafka.version"] == "4.1" and s["kafka.metadata"] == "kraft"
    assert broker["replica.lag.time.max.ms"] == 30000
    assert broker["min.insync.replicas"] == 1
    assert broker["unclean.leader.election.enable"] is False
    assert broker["replica.fetch.wait.max.ms"] == 500
    assert broker["broker.session.timeout.ms"] == 9000 and broker["broker.heartbeat.interval.ms"] == 2000
    assert broker["zookeeper.session.timeout.ms"] is None  # removed in 4.0
    assert broker["eligible.leader.replicas.enable"] is True  # on by default from 4.1
    assert broker["replica.lag.max.messages"] is None  # removed in 0.9
    assert broker["truncation"] == "leader_epoch"
    assert producer["acks"] == "all"
    assert producer["enable.idempotence"] is True
    assert producer["linger.ms"] == 5
    assert producer["batch.size"] == 16384
    assert producer["delivery.timeout.ms"] == 120000
    assert producer["retries"] == 2147483647
    assert producer["partitioner"] == "default"
    assert s["topics"][0]["min.insync.replicas"] is None  # the broker's setting applies
    assert s["faults"][0]["duration.ms"] is None


@pytest.mark.parametrize(
    "acks, explicit, expected",
    [
        ("all", None, True),
        (-1, None, True),
        (1, None, False),
        (0, None, False),
        ("all", False, False),
        (1, False, False),
    ],
)
def test_idempotence_default_follows_acks(acks, explicit, expected):
    edits = [(P0 + ("acks",), acks)]
    if explicit is not None:
        edits.append((P0 + ("enable.idempotence",), explicit))
    producer = load_scenario(broken(*edits))["producers"][0]
    assert producer["enable.idempotence"] is expected
    assert producer["acks"] == ("all" if acks == -1 else acks)


def test_idempotence_off_by_default_when_retries_0():
    assert load_scenario(broken((P0 + ("retries",), 0)))["producers"][0]["enable.idempotence"] is False


def test_burst_section_is_filled():
    s = load_scenario(broken((P0 + ("rate.per.s",), 0), (P0 + ("burst",), {"records": 10, "every.ms": 100})))
    assert dict(s["producers"][0]["burst"]) == {"records": 10, "every.ms": 100, "start.ms": 0}


@pytest.mark.parametrize("version", ["2.1", "2.8", "4.1"])
def test_an_unset_delivery_timeout_below_linger_plus_request_timeout_is_raised_to_their_sum(version):
    # KafkaProducer.configureDeliveryTimeout (KIP-91, 2.1 on): the default 120000 below linger.ms + request.timeout.ms
    # becomes that sum ("for backward compatibility", with a warning); only a value the user set is refused
    linger, request = 20, 150000
    edits = [(("kafka.version",), version), (P0 + ("linger.ms",), linger), (P0 + ("request.timeout.ms",), request)]
    s = load_scenario(broken(*edits))
    assert s["producers"][0]["delivery.timeout.ms"] == linger + request
    with pytest.raises(ScenarioError, match=rf"producers\[0\]\.delivery\.timeout\.ms: must be >= linger\.ms \+ "
                                            rf"request\.timeout\.ms \({linger + request}\), got 120000"):
        load_scenario(broken(*edits, (P0 + ("delivery.timeout.ms",), 120000)))
    # an override is a value set, as a property passed to KafkaProducer is
    with pytest.raises(ScenarioError, match="delivery.timeout.ms: must be >="):
        Scenario(broken(*edits)).with_overrides({"producers[0].delivery.timeout.ms": 120000})
    # the default at or above the sum stays the default
    assert load_scenario(broken(*edits[:1]))["producers"][0]["delivery.timeout.ms"] == 120000


def test_before_2_1_there_is_no_delivery_timeout_to_raise():
    # delivery.timeout.ms came with KIP-91 in 2.1: before it a batch has no overall deadline (what the model resolves)
    s = load_scenario(broken((("kafka.version",), "2.0"), (P0 + ("request.timeout.ms",), 150000)))
    assert s["producers"][0]["delivery.timeout.ms"] == 2147483647


# --- immutability -------------------------------------------------------------


def test_scenario_is_immutable():
    s = load_scenario(BASE)
    with pytest.raises(TypeError):
        s["seed"] = 1  # type: ignore[index]
    with pytest.raises(TypeError):
        del s["seed"]  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        s["broker"]["min.insync.replicas"] = 2
    with pytest.raises(TypeError):
        s["topics"][0]["replication.factor"] = 1
    with pytest.raises(TypeError):
        s["network"]["latency.ms"]["median"] = 9
    with pytest.raises((TypeError, AttributeError)):
        s["topics"].append({"name": "x"})
    with pytest.raises(TypeError):
        s["producers"][0] = {}


def test_copies_do_not_reach_the_scenario():
    source = copy.deepcopy(BASE)
    s = load_scenario(source)
    source["topics"][0]["replication.factor"] = 1  # the caller's dict is not shared
    d = s.to_dict()
    d["broker"]["min.insync.replicas"] = 3
    g = s.given
    g["seed"] = 99
    assert s["topics"][0]["replication.factor"] == 3
    assert s["broker"]["min.insync.replicas"] == 1
    assert s["seed"] == 7 and s.given["seed"] == 7


# --- with_overrides -----------------------------------------------------------


def test_with_overrides_returns_a_new_scenario():
    s = load_scenario(broken((("producers",), [{"topic": "orders", "rate.per.s": 10}, {"topic": "orders", "rate.per.s": 20}])))
    before = s.to_dict()
    t = s.with_overrides({
        "broker.min.insync.replicas": 2,
        "topics[0].replication.factor": 2,
        "producers[*].acks": 1,
        "seed": 11,
        "network.latency.ms": {"dist": "constant", "value": 1},
        "producers[1].burst.records": 5,
        "producers[1].burst.every.ms": 50,
    })
    assert t is not s and isinstance(t, Scenario)
    assert t["broker"]["min.insync.replicas"] == 2
    assert t["topics"][0]["replication.factor"] == 2
    assert [p["acks"] for p in t["producers"]] == [1, 1]
    assert [p["enable.idempotence"] for p in t["producers"]] == [False, False]  # re-derived
    assert t["seed"] == 11
    assert dict(t["network"]["latency.ms"]) == {"dist": "constant", "value": 1}
    assert dict(t["producers"][1]["burst"]) == {"records": 5, "every.ms": 50, "start.ms": 0}
    assert s.to_dict() == before  # the original is unchanged
    assert s["seed"] == 7 and s["producers"][0]["acks"] == "all"
    assert t != s
    assert s.with_overrides({}) == s


def test_with_overrides_revalidates():
    s = load_scenario(BASE)
    with pytest.raises(ScenarioError) as info:
        s.with_overrides({"topics[0].replication.factor": 5})
    assert str(info.value) == "topics[0].replication.factor: 5 exceeds brokers (3)"
    with pytest.raises(ScenarioError, match=r"^topics\[0\]\.min\.insync\.replicas: 4 exceeds"):
        s.with_overrides({"topics[0].min.insync.replicas": 4})
    with pytest.raises(ScenarioError, match=r"^producers\[0\]\.acks: must be 0, 1, all or -1"):
        s.with_overrides({"producers[*].acks": "two"})
    with pytest.raises(ScenarioError, match=r"^seed: must be an integer"):
        s.with_overrides({"seed": "x"})
    with pytest.raises(ScenarioError, match=r"^producers\[0\]\.topic: no topic named 'orders'"):
        s.with_overrides({"topics[0].name": "payments"})


@pytest.mark.parametrize(
    "path, start, hint",
    [
        ("sed", "sed", "did you mean 'seed'?"),
        ("duration", "duration", "did you mean 'duration.ms'?"),
        ("broker.min.insync.replica", "broker.min.insync.replica", "did you mean 'min.insync.replicas'?"),
        ("topics[0].replicaton.factor", "topics[0].replicaton.factor", "did you mean 'replication.factor'?"),
        ("producers[*].ack", "producers[0].ack", "did you mean 'acks'?"),
        ("topics[3].partitions", "topics[3].partitions", "topics has 1 item(s)"),
        ("topic[0].partitions", "topic[0].partitions", "no list named 'topic'"),
    ],
)
def test_unknown_override_path(path, start, hint):
    s = load_scenario(BASE)
    with pytest.raises(ScenarioError) as info:
        s.with_overrides({path: 1})
    assert str(info.value).startswith(f"{start}: "), str(info.value)
    assert hint in str(info.value)


def test_broker_min_isr_above_a_topics_rf_is_applied_as_the_rf():
    # docs/kafka-facts.md: min.insync.replicas is applied as min(min.insync.replicas, RF)
    from kafkamodel.sim.simulation import Simulation

    s = load_scenario(BASE).with_overrides({"broker.min.insync.replicas": 4})
    assert {p.min_isr for p in Simulation(s).partitions} == {3}


def test_resolved_scenario_round_trips():
    s = load_scenario(BASE)
    assert load_scenario(s.to_dict()) == s


# --- the CLI: exit 2, one line on stderr naming the field ---------------------
#
# Each `python -m kafkamodel` start costs most of a second (the package imports
# pandas), so the subprocess runs are started together, once per module; the
# remaining command-line cases call cli.main() in-process, which is what
# `python -m kafkamodel` runs.

CLI_CASES = {
    "unknown-broker-key": (broken((("broker", "min.insync.replica"), 2)), "broker.min.insync.replica"),
    "rf-exceeds-brokers": (broken((T0 + ("replication.factor",), 5)), "topics[0].replication.factor"),
    "acks-2": (broken((P0 + ("acks",), 2)), "producers[0].acks"),
    "producer-topic-unknown": (broken((P0 + ("topic",), "order")), "producers[0].topic"),
    "isolate-without-duration": (broken((F0 + ("kind",), "isolate")), "faults[0].duration.ms"),
    # property names per version: a 4.x-only key under 0.10, a removed key under 4.1, an unknown version
    "version-4x-key-under-0.10": (broken((("kafka.version",), "0.10"), (("broker", "eligible.leader.replicas.enable"), True)),
                                  "broker.eligible.leader.replicas.enable"),
    "version-removed-key-under-4.1": (broken((("broker", "zookeeper.session.timeout.ms"), 6000)),
                                      "broker.zookeeper.session.timeout.ms"),
    "version-unknown": (broken((("kafka.version",), "5.0")), "kafka.version"),
}


@pytest.fixture(scope="module")
def cli_runs(tmp_path_factory):
    """name -> (completed process, scenario path, out dir) for every subprocess run, started at once."""
    root = tmp_path_factory.mktemp("cli")
    jobs: dict[str, tuple[list[str], Path | None, Path | None]] = {}
    for case, (scenario, _) in CLI_CASES.items():
        folder = root / case
        folder.mkdir()
        path = folder / "bad.yaml"
        path.write_text(yaml.safe_dump(scenario, sort_keys=False))
        out = folder / "runs" / "out"
        jobs[case] = (["run", str(path), "--out", str(out)], path, out)
    jobs["bad-flag"] = (["run", str(root / "x.yaml"), "--bogus"], None, None)
    jobs["missing-file"] = (["run", str(root / "missing.yaml")], root / "missing.yaml", None)
    jobs["scenario-typo"] = (["run", "steady_state"], None, None)
    jobs["unwritable-out"] = (["run", "key-ordering", "--out", "/proc/kafkamodel-unwritable/run"], None, None)
    (root / "under-a-file").mkdir()
    a_file = root / "under-a-file" / "a-file"
    a_file.write_text("not a folder\n")
    jobs["out-under-a-file"] = (["run", "key-ordering", "--out", str(a_file / "run")], None, a_file)
    procs = {
        name: subprocess.Popen(
            [sys.executable, "-m", "kafkamodel", *args], cwd=REPO,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for name, (args, _, _) in jobs.items()
    }
    done = {}
    for name, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=120)
        done[name] = (subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr), *jobs[name][1:])
    return done


def assert_one_line_error(returncode: int, stdout: str, stderr: str, *expected_start: str) -> str:
    assert returncode == 2, (returncode, stderr)
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert stdout == ""
    line = lines[0]
    assert line.startswith("error: "), line
    if expected_start:
        assert any(line.startswith(f"error: {s}") for s in expected_start), line
    return line


def run_main(capsys, *args: str) -> tuple[int, str, str]:
    from kafkamodel.cli import main

    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("case", list(CLI_CASES))
def test_cli_run_bad_scenario(cli_runs, case):
    proc, path, out = cli_runs[case]
    line = assert_one_line_error(proc.returncode, proc.stdout, proc.stderr, f"{CLI_CASES[case][1]}: ")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert line == f"error: {info.value}"
    # --out was given: nothing is created for a scenario that does not load
    assert not out.exists() and not out.parent.exists()
    assert sorted(p.name for p in path.parent.iterdir()) == ["bad.yaml"]


def test_cli_bad_flag(cli_runs):
    proc = cli_runs["bad-flag"][0]
    line = assert_one_line_error(proc.returncode, proc.stdout, proc.stderr, "python -m kafkamodel")
    assert "--bogus" in line


def test_cli_run_missing_file(cli_runs):
    proc, path, _ = cli_runs["missing-file"]
    line = assert_one_line_error(proc.returncode, proc.stdout, proc.stderr)
    assert line == f"error: {path}: no such scenario file"


def test_cli_scenario_name_typo(cli_runs):
    line = assert_one_line_error(*_streams(cli_runs["scenario-typo"][0]), "scenario 'steady_state': ")
    assert "no shipped scenario of that name; did you mean 'steady-state'?" in line
    assert "(shipped: acks1-leader-crash, acksall-leader-crash, " in line and " unclean-election, " in line
    assert line.endswith("; or give a YAML path)")


def test_cli_unwritable_out(cli_runs):
    line = assert_one_line_error(*_streams(cli_runs["unwritable-out"][0]), "--out: ")
    assert line == "error: --out: cannot write /proc/kafkamodel-unwritable/run (No such file or directory in /proc)"
    proc, _, a_file = cli_runs["out-under-a-file"]
    line = assert_one_line_error(*_streams(proc), "--out: ")
    assert line == f"error: --out: cannot write {a_file}/run ({a_file} is not a folder)"
    assert a_file.read_text() == "not a folder\n"  # untouched, and nothing beside it
    assert sorted(p.name for p in a_file.parent.iterdir()) == ["a-file"]


def _streams(proc) -> tuple[int, str, str]:
    return proc.returncode, proc.stdout, proc.stderr


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["run", "x.yaml", "--bogus"], id="unknown-flag"),
        pytest.param(["run", "x.yaml", "--out"], id="flag-without-value"),
        pytest.param(["run"], id="missing-argument"),
        pytest.param(["frobnicate"], id="unknown-verb"),
        pytest.param(["bench", "--records", "many"], id="bad-int-flag"),
    ],
)
def test_cli_bad_command_line_in_process(capsys, args):
    assert_one_line_error(*run_main(capsys, *args), "python -m kafkamodel", "--records: must be an integer >= 1")


def test_cli_bad_scenario_in_process(capsys, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(broken((("broker", "min.insync.replica"), 2), (P0 + ("acks",), 2))))
    for verb in ("run", "validate"):
        line = assert_one_line_error(*run_main(capsys, verb, str(path)), "broker.min.insync.replica: ")
        assert "did you mean 'min.insync.replicas'?" in line and line.endswith("(and 1 more problem)")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.yaml"]


def test_cli_missing_file_in_process(capsys, tmp_path):
    for missing in (tmp_path / "missing.yaml", tmp_path / "missing", tmp_path):
        line = assert_one_line_error(*run_main(capsys, "run", str(missing)))
        assert line == f"error: {missing}: no such scenario file"


@pytest.mark.parametrize(
    "content, rule",
    [
        pytest.param(b"name: x\ntopics: [1, 2\n", "line 3 not valid YAML", id="unclosed-list"),
        pytest.param(b"name: a\x07b\n", "not valid YAML (special characters are not allowed)", id="control-char"),
        pytest.param(b"\xff\xfe\x00name: x\n", "cannot read scenario file", id="not-utf8"),
        pytest.param(b"", "empty scenario", id="empty"),
    ],
)
def test_cli_unreadable_file_in_process(capsys, tmp_path, content, rule):
    path = tmp_path / "s.yaml"
    path.write_bytes(content)
    line = assert_one_line_error(*run_main(capsys, "run", str(path)), f"{path}: ")
    assert rule in line


def test_nan_in_yaml_is_rejected(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(broken((("duration.ms",), math.inf))))
    with pytest.raises(ScenarioError, match=r"^duration\.ms: must be a finite number, got inf$"):
        load_scenario(path)


def test_yaml_merge_keys_share_settings_and_the_keys_beside_them_win():
    text = """
name: merged
duration.ms: 1000
brokers: 3
topics:
  - &orders {name: orders, partitions: 2, replication.factor: 3}
  - <<: *orders
    name: audit
producers:
  - {topic: audit, rate.per.s: 10}
"""
    topics = load_scenario(text)["topics"]
    assert [(t["name"], t["partitions"], t["replication.factor"]) for t in topics] == [
        ("orders", 2, 3), ("audit", 2, 3)]
