"""Racks, links and disks: placement as Kafka's, latency as the sum of the legs a protocol waits for,
fsync where Kafka and Raft put it, and what a power loss keeps."""

from __future__ import annotations

from collections import Counter

import pytest

from kafkamodel import simulate
from kafkamodel.sim.controller.placement import rack_alternated, rack_aware

from shipped import UNLIMITED_MACHINE, ZERO_COSTS

# ---- placement: Kafka's own test cases (AdminRackAwareTest), then its invariants ---------------------------------


def test_rack_alternated_list_and_assignment_are_kafkas():
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    assert rack_alternated(racks) == [0, 3, 1, 5, 4, 2]
    assert rack_alternated({k: v for k, v in racks.items() if k != 5}) == [0, 3, 1, 4, 2]
    # assignReplicasToBrokers(brokers, 7 partitions, RF 3, fixedStartIndex 0, startPartitionId 0)
    assert rack_aware(7, 3, racks) == [(0, 3, 1), (3, 1, 5), (1, 5, 4), (5, 4, 2), (4, 2, 0), (2, 0, 3), (0, 4, 2)]


@pytest.mark.parametrize("brokers,racks,partitions,rf", [
    (6, ["rack1", "rack2", "rack2", "rack3", "rack3", "rack1"], 6, 3),
    (6, ["rack1", "rack2", "rack2", "rack3", "rack3", "rack1"], 12, 2),
    (6, ["a", "b", "c"], 12, 3),
    (9, ["a", "b", "c"], 18, 5),
    (4, ["a", "b"], 8, 3),
])
def test_replicas_span_min_rf_racks_and_leaders_and_replicas_spread_evenly(brokers, racks, partitions, rf):
    rack_of = {b: racks[b % len(racks)] if len(racks) < brokers else racks[b] for b in range(brokers)}
    assignment = rack_aware(partitions, rf, rack_of)
    n_racks = len(set(rack_of.values()))
    for replicas in assignment:
        assert len(set(replicas)) == rf
        assert len({rack_of[b] for b in replicas}) == min(rf, n_racks)
    leaders = Counter(r[0] for r in assignment)
    assert set(leaders.values()) == {partitions // brokers}
    counts = Counter(b for r in assignment for b in r)
    assert set(counts.values()) == {partitions * rf // brokers}


def test_a_run_places_replicas_rack_aware_and_reports_them():
    r = simulate({"name": "racks", "duration.ms": 500, "brokers": 6, "racks": ["a", "b", "c"],
                  "topics": [{"name": "t", "partitions": 6, "replication.factor": 3}],
                  "producers": [{"topic": "t", "rate.per.s": 100}]})
    racks = {b: "abc"[b % 3] for b in range(6)}
    expected = [",".join(map(str, replicas)) for replicas in rack_aware(6, 3, racks)]
    assert list(r.partitions.replicas) == expected
    assert all(len({racks[int(b)] for b in row.split(",")}) == 3 for row in r.partitions.replicas)
    assert list(r.partitions.leader) == [int(row.split(",")[0]) for row in expected]


def test_a_topic_given_its_replicas_keeps_them_and_leads_from_the_first():
    # as kafka-topics --describe printed them for an operator's cluster (cluster import reads them): not the placement
    given = [[2, 0, 1], [2, 1, 0], [0, 2, 1], [1, 2, 0]]
    r = simulate({"name": "given", "duration.ms": 500, "brokers": 3,
                  "topics": [{"name": "t", "partitions": 4, "replication.factor": 3, "replicas": given}],
                  "producers": [{"topic": "t", "rate.per.s": 100}]})
    assert list(r.partitions.replicas) == [",".join(map(str, g)) for g in given]
    assert list(r.partitions.leader) == [g[0] for g in given]
    assert r.summary["records_acked"] > 0


# ---- links: latency is the sum of the legs the protocol waits for -------------------------------------------------

FAR = 6.0  # one way between zones a and b
NEAR = 1.0  # between zones a and c, and b and c
INSIDE = 0.2  # within a zone
ZONES = [{"between": ["*", "*"], "latency.ms": NEAR},
         {"between": ["rack:a", "rack:b"], "latency.ms": FAR},
         {"between": ["rack:a", "rack:a"], "latency.ms": INSIDE},
         {"between": ["rack:b", "rack:b"], "latency.ms": INSIDE},
         {"between": ["rack:c", "rack:c"], "latency.ms": INSIDE}]


def zoned(mode: str, rf: int, brokers: int, **extra) -> dict:
    return {"name": "zones", "seed": 2, "duration.ms": 10000, "brokers": brokers, "replication": mode,
            "racks": ["a", "b", "c"], "costs": ZERO_COSTS, "disk": {"fsync.ms": 0}, "hardware": UNLIMITED_MACHINE,
            "network": {"latency.ms": 99.0, "links": ZONES},
            "topics": [{"name": "t", "partitions": 1, "replication.factor": rf}],
            "producers": [{"topic": "t", "acks": "all", "linger.ms": 0, "client.rack": "a",
                           "burst": {"records": 1, "every.ms": 100, "start.ms": 1000}}], **extra}


def one_way(x: str, y: str) -> float:
    if x == y:
        return INSIDE
    return FAR if {x, y} == {"a", "b"} else NEAR


@pytest.mark.parametrize("mode", ["isr", "quorum"])
@pytest.mark.parametrize("rf,brokers", [(3, 3), (5, 6)])
def test_acks_all_latency_is_the_sum_of_the_legs_the_protocol_waits_for(mode, rf, brokers):
    r = simulate(zoned(mode, rf, brokers))
    racks = {b: "abc"[b % 3] for b in range(brokers)}
    replicas = [int(b) for b in r.partitions.replicas.iloc[0].split(",")]
    leader = replicas[0]
    # each follower: the append reaches it (its parked fetch is answered), its next fetch reports it
    trips = sorted(2 * one_way(racks[leader], racks[f]) for f in replicas[1:])
    commit = trips[-1] if mode == "isr" else trips[(rf // 2 + 1) - 2]  # the slowest; the majority's last
    expected = one_way("a", racks[leader]) + commit + one_way(racks[leader], "a")
    s = r.summary
    assert s["produce_latency_ms_p50"] == pytest.approx(expected, abs=1e-6)
    assert s["produce_latency_ms_p99"] == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize("mode", ["isr", "quorum"])
def test_an_fsync_per_message_adds_its_latency_on_the_leader_and_on_the_followers_path(mode):
    fsync = 0.7
    extra = {"disk": {"fsync.ms": fsync}, "hardware": UNLIMITED_MACHINE}
    if mode == "isr":
        extra["broker"] = {"log.flush.interval.messages": 1}  # a quorum fsyncs each append anyway (quorum.fsync)
    base = simulate(zoned(mode, 3, 3)).summary["produce_latency_ms_p50"]
    synced = simulate(zoned(mode, 3, 3, **extra)).summary["produce_latency_ms_p50"]
    # the leader fsyncs before the followers are woken; a follower fsyncs before it fetches again
    assert synced - base == pytest.approx(2 * fsync, abs=1e-6)


def test_without_links_every_link_is_network_latency():
    plain = zoned("isr", 3, 3)
    del plain["racks"]
    plain["network"] = {"latency.ms": 2.0}
    del plain["producers"][0]["client.rack"]
    assert simulate(plain).summary["produce_latency_ms_p50"] == pytest.approx(4 * 2.0, abs=1e-6)


# ---- durability: what a power loss of every replica keeps ---------------------------------------------------------


def power_loss(mode: str, victims: list, **extra) -> dict:
    return {"name": "power", "seed": 4, "duration.ms": 12000, "brokers": 3, "replication": mode,
            "broker": {"broker.session.timeout.ms": 2000, "broker.heartbeat.interval.ms": 500, **extra.pop("broker", {})},
            "os": {"vm.dirty_expire_centisecs": 3000},
            "topics": [{"name": "t", "partitions": 1, "replication.factor": 3}],
            "producers": [{"topic": "t", "rate.per.s": 2000, "acks": "all", "request.timeout.ms": 3000,
                           "stop.ms": 5000}],
            "faults": [{"at.ms": 4000, "kind": "power_loss", "broker": victims, "duration.ms": 2000}], **extra}


def test_every_replica_losing_power_loses_acknowledged_records_unless_each_append_is_fsynced():
    lost = simulate(power_loss("isr", [0, 1, 2])).summary
    assert lost["records_acked"] > 0 and lost["acked_records_lost"] > 0
    kept = simulate(power_loss("isr", [0, 1, 2], broker={"log.flush.interval.messages": 1})).summary
    assert kept["records_acked"] > 0 and kept["acked_records_lost"] == kept["committed_records_lost"] == 0


@pytest.mark.parametrize("victims", [[0, 1], [1, 2], [0, 1, 2]])
def test_a_quorum_that_fsyncs_survives_a_majority_losing_power(victims):
    s = simulate(power_loss("quorum", victims)).summary
    assert s["records_acked"] > 0
    assert s["acked_records_lost"] == s["committed_records_lost"] == 0
    assert s["committed_prefixes_agree_violations"] == 0


def test_a_quorum_acknowledging_from_memory_loses_when_every_replica_loses_power():
    loose = simulate(power_loss("quorum", [0, 1, 2], **{"quorum.fsync": False})).summary
    assert loose["records_acked"] > 0 and loose["acked_records_lost"] > 0


@pytest.mark.parametrize("target, expected", [("rack:b", {1, 4}), ("*", set(range(6))), (["rack:c", 2, 0], {0, 2, 5})])
def test_a_fault_on_a_rack_hits_exactly_the_brokers_with_that_broker_rack(target, expected):
    s = {"name": "zone", "duration.ms": 3000, "brokers": 6, "racks": ["a", "b", "c"],
         "topics": [{"name": "t", "partitions": 6, "replication.factor": 3}],
         "producers": [{"topic": "t", "rate.per.s": 500}],
         "faults": [{"at.ms": 1000, "kind": "power_loss", "broker": target, "duration.ms": 1000}]}
    events = simulate(s).events
    hit = events[events["kind"] == "fault_power_loss"]
    assert sorted(hit["broker"]) == sorted(expected)  # each once
    assert (hit["time_ms"] == 1000).all()
