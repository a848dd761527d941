"""Racks, links and disks in whole runs: latency as the sum of the legs a protocol waits for, fsync where Kafka and
Raft put it, and what a power loss keeps (placement itself: test_sim_controller_placement.py)."""

from __future__ import annotations

import pytest

from kafkamodel import simulate

from shipped import UNLIMITED_MACHINE, ZERO_COSTS

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
