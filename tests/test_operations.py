"""Operations as SREs run them (issue 22): controlled shutdown, rolling restarts and their gates, preferred-leader
elections on demand (the controller's automatic ones are its own tests: test_sim_controller_replication.py), Kafka's
partition gauges, and bad input. Each expectation is computed here
from the settings (a constant one-way latency L, the session timeout, the gate, the check interval)."""

from __future__ import annotations

import functools
import math
import re

import numpy as np
import pytest
import yaml

from kafkamodel import load_scenario, simulate
from kafkamodel.cli import main
from kafkamodel.sim.results.health import broker_gauges
from kafkamodel.sim.simulation import Simulation
from helpers import BOUNCE, led_by, preferred_elections

L = 1.0  # one-way latency, ms (constant: every message takes exactly this)
MIN_ISR = 2


def scenario(operations=(), faults=(), duration=8000, broker=None, rate=2000, **extra):
    return {"name": "ops", "brokers": 3, "duration.ms": duration, "kafka.version": "4.1",
            "broker": {"min.insync.replicas": MIN_ISR, **(broker or {})},
            "network": {"latency.ms": L},
            "topics": [{"name": "t", "partitions": 6, "replication.factor": 3}],
            "producers": [{"topic": "t", "rate.per.s": rate, "acks": "all"}],
            "operations": list(operations), "faults": list(faults), **extra}


def events(result, kind):
    ev = result.events
    return ev[ev["kind"] == kind]


def shutdown_batches_ms(result):
    """The KRaft controller's time for one controlled shutdown of a broker that holds every partition (RF 3 on 3
    brokers): a record per partition, and two batches (its leaderships, then the other ISRs), a commit each."""
    c = Simulation(load_scenario(scenario())).settings.controller
    return len(result.partitions) * c.kraft_record_ms + 2 * c.kraft_commit_ms


# ---- controlled shutdown ----------------------------------------------------------------------------------------

def test_controlled_shutdown_loses_nothing_and_moves_each_leader_once():
    at = 2000.0
    given = scenario([{"at.ms": at, "kind": "controlled_shutdown", "broker": 0}])
    r = simulate(given)
    s = r.summary
    assert s["acked_records_lost"] == 0 and s["records_acked"] > 0
    moved = led_by(r, 0)
    assert moved
    # the controller's time (issue 21; KRaft): the leaderships are one batch (a record each, one commit), then
    # broker 0 leaves the other ISRs in a second batch
    c = Simulation(load_scenario(given)).settings.controller
    held = len(r.partitions)  # RF 3 on 3 brokers: broker 0 holds every partition
    first = len(moved) * c.kraft_record_ms + c.kraft_commit_ms
    second = (held - len(moved)) * c.kraft_record_ms + c.kraft_commit_ms
    # one leader move: the controller decides, writes the batch, the new leader hears it one message later (L)
    per = dict(zip(r.partitions["partition"], r.partitions["unavailable_ms"]))
    for p, ms in per.items():
        assert ms <= first + L + 1e-9, (p, ms)
    assert all(per[p] == pytest.approx(first + L) for p in moved)
    # each partition broker 0 led elected once, at the controller, one message after the request
    elections = events(r, "leader_election")
    assert sorted(elections["partition"]) == sorted(moved)
    assert (elections["time_ms"] == at + L).all()
    # the process stops when the answer comes back (after both batches); its session closes then, not after a
    # timeout
    assert events(r, "broker_shutdown")["time_ms"].tolist() == [pytest.approx(at + 2 * L + first + second)]
    assert s["operation_ms"] == pytest.approx(2 * L + first + second)
    assert s["offline_partition_ms"] == 0 and s["under_min_isr_partition_ms"] == 0
    # every partition (broker 0 holds all 6 at RF 3 on 3 brokers) is under-replicated from the controller's
    # change (at + L) to the end of the run
    assert s["under_replicated_partition_ms"] == pytest.approx(6 * (8000 - at - L))


def test_an_uncontrolled_crash_is_unavailable_for_the_session_timeout():
    at, timeout, beat = 2000.0, 9000.0, 2000.0  # broker.session.timeout.ms, broker.heartbeat.interval.ms (KRaft)
    r = simulate(scenario(faults=[{"at.ms": at, "kind": "crash", "broker": 0}], duration=14000))
    # fenced a session timeout after its last heartbeat, which came at most one interval before the crash (the
    # heartbeats run on a phase drawn from the seed)
    expiry = at - beat + timeout
    per = dict(zip(r.partitions["partition"], r.partitions["unavailable_ms"]))
    for p in led_by(r, 0):
        assert per[p] >= expiry - at  # far above the controlled shutdown's L plus the controller's batches
    assert r.summary["operation_ms"] is None


def test_without_controlled_shutdown_the_leaders_move_after_the_process_stopped():
    at = 2000.0
    r = simulate(scenario([{"at.ms": at, "kind": "controlled_shutdown", "broker": 0}],
                          broker={"controlled.shutdown.enable": False}))
    assert r.summary["acked_records_lost"] == 0
    # the process stops at once; the controller sees its session close at once and elects; L later the new
    # leaders know: the same one message, but no leader lives in between
    assert events(r, "broker_shutdown")["time_ms"].tolist() == [at]
    assert (events(r, "leader_election")["time_ms"] == at).all()
    assert events(r, "controlled_shutdown").empty


# ---- rolling restart ----------------------------------------------------------------------------------------------

def test_rolling_restart_gated_on_no_under_replicated_never_goes_under_min_isr():
    at, down = 1000.0, 1500.0
    r = simulate(scenario([{"at.ms": at, "kind": "rolling_restart", "gate": "no_under_replicated",
                            "downtime.ms": down}], duration=12000))
    s = r.summary
    assert s["under_min_isr_partition_ms"] == 0 and s["offline_partition_ms"] == 0
    assert s["acked_records_lost"] == 0 and s["not_enough_replicas_errors"] == 0
    shutdowns = events(r, "broker_shutdown")
    assert shutdowns["broker"].tolist() == [0, 1, 2]
    # each broker is down for downtime.ms, plus its controlled shutdown's round trip (2L)
    assert s["operation_ms"] >= 3 * (down + 2 * L)
    assert s["operation_ms"] < 12000 - at


def test_a_fixed_wait_shorter_than_the_catch_up_goes_under_min_isr_when_predicted():
    at, down, wait = 1000.0, 1500.0, 0.0
    r = simulate(scenario([{"at.ms": at, "kind": "rolling_restart", "gate": {"wait.ms": wait},
                            "downtime.ms": down}], duration=8000))
    s = r.summary
    assert s["under_min_isr_partition_ms"] > 0
    # broker 0: request at `at`, answered at at + 2L + the controller's two batches, restarted downtime.ms later; the gate lets broker 1 go
    # `wait` after that; the controller takes broker 1 out of the ISRs one message later. Broker 0 has 1.5 s of
    # records to fetch first: not back yet, so every partition both hold drops to one replica then.
    predicted = at + 2 * L + shutdown_batches_ms(r) + down + wait + L
    singles = [t for t, d in zip(events(r, "isr_shrink")["time_ms"], events(r, "isr_shrink")["detail"])
               if re.search(r"isr now \[\d+\]$", d)]
    assert min(singles) == pytest.approx(predicted)
    assert s["acked_records_lost"] == 0


def test_full_isr_for_gate_waits_that_long_after_the_last_partition_rejoined():
    at, down, hold = 1000.0, 1000.0, 700.0
    r = simulate(scenario([{"at.ms": at, "kind": "rolling_restart", "gate": {"full_isr_for.ms": hold},
                            "downtime.ms": down, "brokers": [0, 1]}], duration=8000))
    expands = events(r, "isr_expand")["time_ms"]
    second = events(r, "operation_start")  # only the operation's own start
    assert len(second) == 1
    # broker 1's shutdown request leaves `hold` after broker 0's last ISR expansion before it
    request = events(r, "broker_shutdown")["time_ms"].tolist()[1] - 2 * L - shutdown_batches_ms(r)
    last_expand = max(t for t in expands if t < request)
    assert request == pytest.approx(last_expand + hold)
    assert r.summary["under_min_isr_partition_ms"] == 0


# ---- preferred leader election -----------------------------------------------------------------------------------

def bounced(extra_ops=(), broker=None, duration=12000):
    """Broker 0 shut down (its leaderships move away) and restarted: the cluster is imbalanced after."""
    return scenario([*BOUNCE, *extra_ops], broker=broker, duration=duration)


def test_preferred_leader_election_on_demand():
    at = 6000.0
    r = simulate(bounced([{"at.ms": at, "kind": "preferred_leader_election", "topic": "t"}],
                         broker={"auto.leader.rebalance.enable": False}))
    pref = preferred_elections(r)
    assert sorted(pref["partition"]) == sorted(led_by(r, 0))
    assert (pref["time_ms"] == at + L).all()  # the admin client's ElectLeaders reaches the controller


# ---- Kafka's gauges over time -------------------------------------------------------------------------------------

def test_broker_gauges_count_what_the_timeline_holds():
    r = simulate(scenario([{"at.ms": 2000, "kind": "controlled_shutdown", "broker": 0}],
                          **{"timeline.interval.ms": 1000}))
    g = broker_gauges(r.timeline, r.partitions, {"t": MIN_ISR}, 3)
    start, after = g[g["time_ms"] == 0], g[g["time_ms"] == 3000]
    assert start["leader_count"].tolist() == [2, 2, 2] and start["UnderReplicatedPartitions"].sum() == 0
    # after: broker 0 leads nothing; each of its partitions went to the next replica in assignment order, and
    # every partition has ISR 2 = min ISR (under-replicated, at min ISR) where it is led
    leaders = [0, 0, 0]
    for r_ in r.partitions["replicas"]:
        replicas = [int(x) for x in str(r_).split(",")]
        leaders[replicas[1] if replicas[0] == 0 else replicas[0]] += 1
    assert after["leader_count"].tolist() == leaders
    assert after["UnderReplicatedPartitions"].tolist() == leaders
    assert after["AtMinIsrPartitionCount"].tolist() == leaders
    assert after["UnderMinIsrPartitionCount"].sum() == 0 and after["OfflinePartitionsCount"].sum() == 0


# ---- bad input ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("op, start", [
    ({"at.ms": 10, "kind": "controlled_shutdown", "broker": 7}, "operations[0].broker: no broker 7"),
    ({"at.ms": 10, "kind": "rolling_restart", "brokers": [0, 9]}, "operations[0].brokers[1]: no broker 9"),
    ({"at.ms": 10, "kind": "reassign", "topic": "t", "partitions": [0], "replicas": [[0, 0, 1]]},
     "operations[0].replicas[0]: lists a broker twice"),
    ({"at.ms": 10, "kind": "reassign", "topic": "t", "partitions": [0], "replicas": [[]]},
     "operations[0].replicas[0]: must be a non-empty list of broker ids"),
    ({"at.ms": 10, "kind": "reassign", "topic": "t", "partitions": [0], "replicas": [[0, 1, 2]], "throttle": 0},
     "operations[0].throttle: must be > 0"),
    ({"at.ms": 10, "kind": "reassign", "topic": "t", "partitions": [0], "replicas": [[0, 1, 2]], "throttle": -5},
     "operations[0].throttle: must be > 0"),
    ({"at.ms": 10, "kind": "rolling_restart", "gate": {"wait": 5}}, "operations[0].gate: must be"),
    ({"at.ms": 10, "kind": "restart"}, "operations[0].broker: required for kind restart"),
])
def test_bad_operations_are_one_line_exit_2(tmp_path, capsys, op, start):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(scenario([op])))
    code = main(["run", str(path), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.splitlines()
    assert code == 2 and len(err) == 1, (code, err)
    assert err[0].startswith(f"error: {start}"), err[0]
    assert not (tmp_path / "out").exists()


# ---- reassignment with throttles ----------------------------------------------------------------------------------

def moving(operations, rate=10000, stop=5000.0, duration=16000, broker=None):
    """4 brokers, 4 partitions at RF 3 (partition 0 on 0,1,2); the producer stops at `stop` unless None."""
    producer = {"topic": "t", "rate.per.s": rate, "acks": "all"}
    if stop is not None:
        producer["stop.ms"] = stop
    return {"name": "move", "brokers": 4, "duration.ms": duration, "kafka.version": "4.1",
            "broker": {"min.insync.replicas": MIN_ISR, **(broker or {})}, "network": {"latency.ms": L},
            "topics": [{"name": "t", "partitions": 4, "replication.factor": 3}], "producers": [producer],
            "operations": operations}


def record_bytes(records: int) -> tuple[int, int]:
    """Bounds on the bytes of `records` 100-byte null-key records in v2 batches (kafka_format): each record 106
    or 107 bytes (offset delta below or above 63), each batch 61 more, at most one batch per record."""
    from kafka_format import v2_record

    return records * v2_record(0, 0, None, 100), records * (v2_record(100, 0, None, 100) + 61)


def test_a_throttled_reassignment_takes_bytes_over_throttle():
    # ~1.3 MB to move at 200 kB/s: ~6.7 s (the last allowance may wait one replica.fetch.wait.max.ms, 0.5 s)
    at, throttle = 6000.0, 200_000.0
    r = simulate(moving([{"at.ms": at, "kind": "reassign", "topic": "t", "partitions": [0], "replicas": [[3, 1, 2]],
                          "throttle": throttle}]))
    s = r.summary
    records = int((r.records["partition"] == 0).sum())
    low, high = record_bytes(records)
    assert low <= s["reassignment_bytes"] <= high  # the whole log went to the new replica
    assert s["operation_ms"] == pytest.approx(s["reassignment_bytes"] / throttle * 1000, rel=0.10)
    assert s["acked_records_lost"] == 0
    end = r.partitions.set_index("partition")
    assert end.loc[0, "replicas"] == "3,1,2" and end.loc[0, "leader"] == 3  # the leader moved to the new replica
    # the partition is under-replicated (4 replicas, 3 in the ISR) for the whole move
    assert s["under_replicated_partition_ms"] == pytest.approx(s["operation_ms"] - L, abs=2 * L)


def test_a_throttle_below_the_ingress_never_finishes():
    at, throttle, rate, duration = 2000.0, 100_000.0, 10000, 8000
    # 10,000 records/s over 4 partitions: at least 2,500 x 106 bytes/s into partition 0, above the throttle
    assert rate / 4 * record_bytes(1)[0] > throttle
    r = simulate(moving([{"at.ms": at, "kind": "reassign", "topic": "t", "partitions": [0], "replicas": [[3, 1, 2]],
                          "throttle": throttle}], rate=rate, stop=None, duration=duration))
    s = r.summary
    end = r.partitions.set_index("partition")
    assert 3 not in [int(x) for x in str(end.loc[0, "isr"]).split(",")]  # never joined the ISR
    assert events(r, "operation_end").empty
    assert s["operation_ms"] is None  # unfinished: no duration, and an event says so
    assert events(r, "operation_unfinished")["detail"].tolist() == ["0: reassign; 1 partitions still moving"]
    assert s["operation_produce_p99_ms"] is not None  # the window still runs to the run's end
    # Kafka counts the in-sync followers' bytes of a throttled partition against the leader's rate too
    # (KafkaApis.sizeOfThrottledPartitions): partition 0's two in-sync followers alone take twice its ingress, above
    # the throttle, so the leader's allowance never refills and the new replica gets no more than one response
    # before it is spent (the allowance starts empty and holds at most one second's worth)
    assert 2 * rate / 4 * record_bytes(1)[0] > throttle
    assert 0 < s["reassignment_bytes"] <= throttle * 1.0


def test_raising_the_throttle_during_the_move_speeds_it_up():
    # ~0.5 MB in the first 5 s, the remaining ~0.8 MB at twice the rate (~4 s); within one fetch wait (0.5 s)
    at, change, slow, fast = 6000.0, 11000.0, 100_000.0, 200_000.0
    move = {"kind": "reassign", "topic": "t", "partitions": [0], "replicas": [[3, 1, 2]]}
    r = simulate(moving([{**move, "at.ms": at, "throttle": slow}, {**move, "at.ms": change, "throttle": fast}]))
    total = r.summary["reassignment_bytes"]
    done = events(r, "operation_end")["time_ms"].max()
    predicted = change + (total - slow * (change - at) / 1000) / fast * 1000
    assert done - at == pytest.approx(predicted - at, rel=0.10)


def test_remove_broker_moves_its_replicas_away_then_shuts_it_down():
    r = simulate(moving([{"at.ms": 6000, "kind": "remove_broker", "broker": 3}], duration=14000))
    end = r.partitions
    assert all("3" not in str(x).split(",") for x in end["replicas"])
    assert all(len(str(x).split(",")) == 3 for x in end["replicas"])
    assert events(r, "broker_shutdown")["broker"].tolist() == [3]
    assert r.summary["acked_records_lost"] == 0 and r.summary["offline_partition_ms"] == 0


def test_an_added_broker_starts_empty_and_takes_replicas_by_reassignment():
    r = simulate(moving([{"at.ms": 3000, "kind": "add_broker", "broker": 3},
                         {"at.ms": 4000, "kind": "reassign", "topic": "t", "partitions": [1], "replicas": [[3, 2, 0]]}],
                        duration=12000))
    # placed on brokers 0..2 only (as Kafka places over the brokers it has), partition p on p, p+1, p+2 mod 3
    assert all("3" not in str(x) for x in r.timeline[r.timeline["time_ms"] < 3000]["leader"].astype(str))
    assert events(r, "broker_registered")["time_ms"].tolist() == [3000 + L]
    end = r.partitions.set_index("partition")
    assert end.loc[1, "replicas"] == "3,2,0"
    assert end.loc[1, "leader"] == 3
    assert r.summary["acked_records_lost"] == 0


def test_add_broker_leaves_enough_brokers_for_each_topic(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(scenario([{"at.ms": 10, "kind": "add_broker", "broker": 2}])))
    assert main(["run", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("error: topics[0].replication.factor: 3 exceeds the brokers running")


# ---- produce latency, errors and throttled bytes during the operations ---------------------------------------------

def window_latency(r) -> np.ndarray:
    """Send -> ack of the acknowledged records sent from the first operation's start to the last one's end (read
    from the events and records tables)."""
    start = events(r, "operation_start")["time_ms"].min()
    end = events(r, "operation_end")["time_ms"].max()
    rec = r.records
    sent = rec[rec["acked"] & (rec["send_ms"] >= start) & (rec["send_ms"] <= end)]
    return (sent["ack_ms"] - sent["send_ms"]).to_numpy()


def latency_between(r, lo: float, hi: float) -> np.ndarray:
    rec = r.records
    sent = rec[rec["acked"] & (rec["send_ms"] >= lo) & (rec["send_ms"] < hi)]
    return (sent["ack_ms"] - sent["send_ms"]).to_numpy()


def test_without_operations_the_operation_keys_are_null():
    s = simulate(scenario(duration=2000)).summary
    assert s["operation_ms"] is None and s["operation_produce_p99_ms"] is None
    assert s["operation_produce_errors"] is None and s["throttled_bytes"] == 0


def test_produce_latency_and_errors_during_a_rolling_restart_by_gate():
    roll = {"at.ms": 1000, "kind": "rolling_restart", "downtime.ms": 1500}
    gated = simulate(scenario([{**roll, "gate": "no_under_replicated"}], duration=12000))
    rushed = simulate(scenario([{**roll, "gate": {"wait.ms": 0}}], duration=8000))
    for r in (gated, rushed):
        s, lat = r.summary, window_latency(r)
        assert s["operation_produce_p50_ms"] == pytest.approx(np.percentile(lat, 50))
        assert s["operation_produce_p99_ms"] == pytest.approx(np.percentile(lat, 99))
        assert s["operation_produce_max_ms"] == pytest.approx(lat.max())
        assert s["operation_produce_max_ms"] >= s["operation_produce_p99_ms"] >= s["operation_produce_p50_ms"]
    # gated: never two replicas down at once, so never NOT_ENOUGH_REPLICAS (its errors are the in-flight requests
    # of the connections each shutdown closes); with no wait, two brokers are out of the ISRs at once and every
    # acks=all batch to those partitions is refused until broker 0 is back: each refusal is an error
    assert gated.summary["not_enough_replicas_errors"] == 0
    s = rushed.summary
    assert s["operation_produce_errors"] >= s["not_enough_replicas_errors"] > 0
    assert s["operation_produce_errors"] > gated.summary["operation_produce_errors"]
    assert s["acked_records_lost"] == 0 and s["records_failed"] == 0  # refused batches are retried, not lost


def test_produce_p99_during_a_preferred_election_onto_a_slow_replica():
    # broker 0 bounces (its leaderships move away), then its fetches turn 20x slower at `slow`; the election at
    # `elect` hands it back its preferred partitions
    slow, elect, backoff = 3000.0, 5000.0, 100.0  # retry.backoff.ms (Kafka's default)

    def run(election: bool):
        given = bounced([{"at.ms": elect, "kind": "preferred_leader_election", "topic": "t"}] if election else [],
                        broker={"auto.leader.rebalance.enable": False}, duration=9000)
        given["faults"] = [{"at.ms": slow, "kind": "slow", "broker": 0, "factor": 20, "duration.ms": 6000}]
        given["kafka.version"] = "3.6"  # before KIP-951 (3.7 resends at once to the leader the answer names)
        return simulate(given)

    r, calm = run(True), run(False)
    s = r.summary
    assert sorted(preferred_elections(r)["partition"]) == sorted(led_by(r, 0))
    assert s["operation_produce_p99_ms"] == pytest.approx(np.percentile(window_latency(r), 99))
    steady = np.percentile(latency_between(r, 0, 1000), 99)
    assert s["operation_produce_p99_ms"] > 10 * steady
    # the second after the election, against the same second without it (broker 0 as slow, but a follower): the
    # batches in flight to the old leaders are refused (NOT_LEADER_OR_FOLLOWER) and resent after a metadata refresh
    # (retry.backoff.ms) to a leader both of whose followers fetch across the slow broker
    after = np.percentile(latency_between(r, elect, elect + 1000), 99)
    assert after > np.percentile(latency_between(calm, elect, elect + 1000), 99) + backoff


def test_throttled_bytes_are_the_bytes_a_throttle_bound_move_fetched():
    at, throttle = 6000.0, 200_000.0
    move = {"at.ms": at, "kind": "reassign", "topic": "t", "partitions": [0], "replicas": [[3, 1, 2]]}
    r = simulate(moving([{**move, "throttle": throttle}]))
    s = r.summary
    low, high = record_bytes(int((r.records["partition"] == 0).sum()))
    assert low <= s["throttled_bytes"] <= high  # the whole log of partition 0, under the throttle
    assert s["throttled_bytes"] == s["reassignment_bytes"]
    assert s["throttled_bytes"] == pytest.approx(throttle * s["operation_ms"] / 1000, rel=0.10)
    free = simulate(moving([move])).summary  # no --throttle: the same bytes move, none of them throttled
    assert free["throttled_bytes"] == 0 and low <= free["reassignment_bytes"] <= high


def test_time_under_min_isr_per_partition():
    # the rushed roll, its timeline sampled every millisecond: each partition's under_min_isr_ms is its samples with
    # a leader and an ISR below min.insync.replicas, to within a sample at each end of each stretch
    step = 1.0
    r = simulate(scenario([{"at.ms": 1000, "kind": "rolling_restart", "gate": {"wait.ms": 0}, "downtime.ms": 1500}],
                          duration=8000, **{"timeline.interval.ms": step}))
    tl = r.timeline
    under = tl[(tl["leader"] >= 0) & (tl["isr_size"] < MIN_ISR)]
    sampled = under.groupby("partition").size() * step
    stretches = under.groupby("partition")["time_ms"].apply(lambda t: int((t.diff() > step).sum()) + 1)
    per = r.partitions.set_index("partition")["under_min_isr_ms"]
    assert (per > 0).all()
    for p, ms in per.items():
        assert abs(ms - sampled[p]) <= 2 * step * stretches[p], (p, ms, sampled[p])
    assert per.sum() == pytest.approx(r.summary["under_min_isr_partition_ms"])
    gated = simulate(scenario([{"at.ms": 1000, "kind": "rolling_restart", "gate": "no_under_replicated",
                                "downtime.ms": 1500}], duration=12000))
    assert (gated.partitions["under_min_isr_ms"] == 0).all()


# ---- reassignments that change the replication factor (kafka-reassign-partitions, KIP-455) ------------------------

def one_partition(operations, rf, rate=1000, duration=20000, min_isr=1):
    """4 brokers, one partition of replication factor `rf` (on brokers 0..rf-1), a producer that keeps writing."""
    return {"name": "rf", "brokers": 4, "duration.ms": duration, "kafka.version": "3.7",
            "broker": {"min.insync.replicas": min_isr}, "network": {"latency.ms": L},
            "topics": [{"name": "t", "partitions": 1, "replication.factor": rf}],
            "producers": [{"topic": "t", "rate.per.s": rate, "acks": "all"}], "operations": operations}


def test_raising_the_replication_factor_catches_up_in_backlog_over_throttle_minus_twice_the_ingress():
    """Kafka's documented way to raise a replication factor: a reassignment naming one more replica. The new
    replica copies the backlog under the throttle while the producer keeps writing. Kafka counts every byte of a
    throttled partition against the leader's leader.replication.throttled.rate, the in-sync follower's too
    ("Traffic from both in-sync and out of sync replicas are accounted for in replication quota",
    KafkaApis.sizeOfThrottledPartitions), and holds back only the out-of-sync one: the new replica gets throttle -
    ingress (the in-sync follower's share) and must cover the backlog plus the ingress meanwhile, so it catches up
    after backlog / (throttle - 2 x ingress); then it joins the ISR and the factor is 3. One record per batch
    (batch.size 1): each is 106 bytes + the batch's 61 (kafka_format), exactly."""
    from kafka_format import v2_record

    at, throttle, rate = 8000.0, 100_000.0, 150
    s = one_partition([{"at.ms": at, "kind": "reassign", "topic": "t", "partitions": [0], "replicas": [[0, 1, 3]],
                        "throttle": throttle}], rf=2, rate=rate)
    s["producers"][0]["batch.size"] = 1
    r = simulate(load_scenario(s))
    each = v2_record(0, 0, None, 100) + 61
    rec, ms = r.records, r.summary["operation_ms"]
    assert rec[rec["send_ms"] < at + ms]["acked"].all()  # the producer keeps up: what it sends is the ingress
    backlog = int((rec["send_ms"] < at).sum()) * each
    ingress = int(((rec["send_ms"] >= at) & (rec["send_ms"] < at + ms)).sum()) * each / ms * 1000  # bytes/s
    assert ms == pytest.approx(backlog / (throttle - 2 * ingress) * 1000, rel=0.05, abs=500)  # + one fetch wait
    # without the in-sync follower's share it would take backlog / (throttle - ingress): 2/3 of this
    assert ms > 1.2 * backlog / (throttle - ingress) * 1000
    end = r.partitions.set_index("partition")
    assert end.loc[0, "replicas"] == "0,1,3" and sorted(int(x) for x in str(end.loc[0, "isr"]).split(",")) == [0, 1, 3]
    assert r.summary["acked_records_lost"] == 0


def test_a_throttle_at_twice_the_ingress_never_lets_the_new_replica_catch_up():
    """The same move with the ingress at half the throttle (300 records/s of 167 bytes, 50,100 bytes/s): the in-sync
    follower takes half the leader's rate, the new replica the other half, which only keeps pace with the ingress;
    it never catches up and the move reports unfinished (Kafka's accounting; with in-sync bytes left out it would
    finish in backlog / (throttle - ingress), about 8 s)."""
    from kafka_format import v2_record

    at, throttle, rate = 8000.0, 100_000.0, 300
    assert 2 * rate * (v2_record(0, 0, None, 100) + 61) >= throttle
    s = one_partition([{"at.ms": at, "kind": "reassign", "topic": "t", "partitions": [0], "replicas": [[0, 1, 3]],
                        "throttle": throttle}], rf=2, rate=rate, duration=40000)
    s["producers"][0]["batch.size"] = 1
    r = simulate(load_scenario(s))
    assert r.summary["operation_ms"] is None
    assert events(r, "operation_unfinished")["detail"].tolist() == ["0: reassign; 1 partitions still moving"]


def test_lowering_the_replication_factor_drops_a_replica_and_loses_nothing():
    """RF 3 -> 2: nothing to copy; the removed replica leaves the replicas and the ISR (StopReplica), the leader
    stays, no acknowledged record is lost."""
    r = simulate(load_scenario(one_partition([{"at.ms": 5000, "kind": "reassign", "topic": "t", "partitions": [0],
                                               "replicas": [[0, 1]]}], rf=3, duration=10000, min_isr=2)))
    s = r.summary
    end = r.partitions.set_index("partition")
    assert end.loc[0, "replicas"] == "0,1" and sorted(int(x) for x in str(end.loc[0, "isr"]).split(",")) == [0, 1]
    assert s["acked_records_lost"] == 0 and s["operation_ms"] < 50 and s["reassignment_bytes"] == 0
    assert s["under_replicated_partition_ms"] == 0  # ISR = replicas throughout: 3 of 3, then 2 of 2


@pytest.mark.parametrize("min_isr", [2, 3])
def test_lowering_the_replication_factor_below_min_insync_replicas_refuses_writes_before_3_7_only(min_isr):
    """RF 3 -> 2 on a topic with min.insync.replicas 2 or 3 (the topic keeps its value: a reassignment changes no
    config). The leader checks the ISR against it at each acks=all write (Partition.appendRecordsToLeader): before
    3.7 against the value as set, so with 3 every write after the move is refused NOT_ENOUGH_REPLICAS (2 in the ISR
    < 3) and retried until delivery.timeout.ms; from 3.7 against effectiveMinIsr = min(min.insync.replicas, the
    replicas it has now) = 2 (KAFKA-15583), so the writes go on. With 2 both versions write. Nothing acknowledged is
    lost either way."""
    at = 5000.0
    move = [{"at.ms": at, "kind": "reassign", "topic": "t", "partitions": [0], "replicas": [[0, 1]]}]
    for version in ("3.6", "3.7"):
        given = one_partition(move, rf=3, duration=10000)
        given["kafka.version"] = version
        given["topics"][0]["min.insync.replicas"] = min_isr
        r = simulate(load_scenario(given))
        s, rec = r.summary, r.records
        assert s["acked_records_lost"] == 0
        assert r.partitions.set_index("partition").loc[0, "replicas"] == "0,1"
        # sent once the move completed (a few ms: nothing to copy) and a second before the end (answered by then)
        after = rec[(rec["send_ms"] > at + 100) & (rec["send_ms"] < 9000)]
        refused = min_isr == 3 and version == "3.6"
        if refused:
            assert s["not_enough_replicas_errors"] > 0 and not after["acked"].any()
        else:
            assert s["not_enough_replicas_errors"] == 0 and after["acked"].all()


def test_quorum_mode_keeps_the_replication_factor(tmp_path, capsys):
    s = one_partition([{"at.ms": 10, "kind": "reassign", "topic": "t", "partitions": [0], "replicas": [[0, 1]]}], rf=3)
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({**s, "replication": "quorum"}))
    code = main(["run", str(path), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith(
        "error: operations[0].replicas[0]: 2 replicas; topic 't' has replication.factor 3"), err


# ---- a rolling restart per version (issue 35): KIP-951's hint against the metadata refresh ----------------------

RETRY_BACKOFF = 100.0  # retry.backoff.ms, Kafka's default (3.7's KIP-580 backoff draws it x [0.8, 1.2] at first)


def rolled(version: str):
    """The operations study's roll_versions part: a rolling restart (controlled, gated on no under-replicated
    partition) with the automatic preferred-leader election every 5 s handing each restarted broker its leaders
    back, under four producers (one producer alone would stall itself: see docs/restarts.md)."""
    return simulate({
        "name": "roll", "brokers": 3, "duration.ms": 35000, "kafka.version": version,
        "broker": {"min.insync.replicas": MIN_ISR, "leader.imbalance.check.interval.seconds": 5},
        "network": {"latency.ms": L},
        "topics": [{"name": "t", "partitions": 6, "replication.factor": 3}],
        "producers": [{"topic": "t", "rate.per.s": 1250, "acks": "all"} for _ in range(4)],
        "operations": [{"at.ms": 2000, "kind": "rolling_restart", "gate": "no_under_replicated",
                        "downtime.ms": 3000}]})


def test_a_rolling_restart_on_3_7_drops_the_metadata_refresh_kip_951_removes_from_the_produce_tail():
    """3.6: a batch answered NOT_LEADER_OR_FOLLOWER (a leader moved away for a shutdown, or handed back) waits
    retry.backoff.ms, then a metadata round trip, so the roll's produce p99 is at least the backoff; 3.7: the
    answer names the new leader (KIP-951's CurrentLeader, counted as a hint) and the batch goes there at once
    (RecordAccumulator.shouldBackoff skips the backoff for a new leader), so the p99 is below the smallest backoff
    KIP-580 could draw. The batches the closed connections failed take the refresh in both versions."""
    old, new = rolled("3.6"), rolled("3.7")
    assert old.summary["producer_leader_hints"] == 0 and new.summary["producer_leader_hints"] > 0
    assert old.summary["operation_produce_p99_ms"] >= RETRY_BACKOFF
    assert new.summary["operation_produce_p99_ms"] < 0.8 * RETRY_BACKOFF
    slow_old, slow_new = ((window_latency(r) >= 0.8 * RETRY_BACKOFF).sum() for r in (old, new))
    assert slow_new < slow_old  # fewer records waited a backoff at all
    for r in (old, new):
        assert r.summary["acked_records_lost"] == 0 and r.summary["records_failed"] == 0


# ---- Kafka's own system test of a throttled reassignment (issue 35) ----------------------------------------------
# apache/kafka tests/kafkatest/tests/core/throttling_test.py (unchanged since 2020, 4e65030): 6 brokers, topic
# test_topic of 3 partitions at RF 2 with segment.bytes 64 MiB; kafka-producer-perf-test first sends 2,000 records
# of 4096 x 100 bytes at --throughput -1 (bulk_producer.run() returns once they are sent); then, while a
# VerifiableProducer writes 1,000 records/s, kafka-reassign-partitions --execute --throttle 4194304 moves each
# partition i onto partition (i+1) % 3's replicas. kafka.py's execute_reassign_partitions passes --throttle, and
# ReassignPartitionsCommand (tools/.../reassign/ReassignPartitionsCommand.java) sets both
# leader.replication.throttled.rate and follower.replication.throttled.rate to it on every broker the move involves
# (modifyInterBrokerThrottle), leader.replication.throttled.replicas to each moving partition's current replicas
# and follower.replication.throttled.replicas to its added ones (calculateLeaderThrottles / calculateFollowerThrottles).
# The test then asserts, with partition_size = num_records * record_size // num_partitions and max_num_moves the
# most replicas any partition gains:
#     estimated = ceil(max_num_moves * partition_size / throttle)       seconds
#     wait_until(verify_reassign_partitions, timeout_sec=2 * estimated)  -> finished within 2 x estimated
#     assert time_taken >= 0.9 * estimated
# With bounce_brokers=True it also restarts every other broker (kafka.nodes[::2]: broker ids 1, 3, 5, the model's
# 0, 2, 4) cleanly, one after the other, right after --execute; restart_node stops the process (a controlled
# shutdown), starts it and returns once it has started.
# Assumed (the test does not say): Kafka 3.9 on ZooKeeper (the test starts a ZookeeperService; 3.9 is the last line
# with ZooKeeper), the model's default hardware, 6-byte values for the VerifiableProducer's integers, acks=all for
# both producers (perf-test's and VerifiableProducer's default on 3.x), 5 s from a broker's stop to its registration
# in the bounce, the reassignment 20 s after the bulk load began. The ConsoleConsumer is left out (it reads only).

THROTTLING_TEST = {"brokers": 6, "partitions": 3, "num_records": 2000, "record_size": 4096 * 100,
                   "throttle": 4 * 1024 * 1024, "producer_throughput": 1000}


@functools.lru_cache(maxsize=None)
def throttling_test(bounce_brokers: bool):
    """(Run once per variant: two tests read the same run.) The scenario of Kafka's ThrottlingTest, its reassignment built as the test builds it from the placement;
    returns the result, the move (partition -> new replicas), the placement, and Kafka's estimated seconds."""
    t = THROTTLING_TEST
    at = 20000.0
    given = {"name": "throttling-test", "brokers": t["brokers"], "kafka.version": "3.9", "kafka.metadata": "zookeeper",
             "topics": [{"name": "test_topic", "partitions": t["partitions"], "replication.factor": 2,
                         "segment.bytes": 64 * 1024 * 1024}],
             "producers": [{"topic": "test_topic", "burst": {"records": t["num_records"], "every.ms": 1e9},
                            "record.size.bytes": t["record_size"], "acks": "all", "linger.ms": 0},
                           {"topic": "test_topic", "rate.per.s": t["producer_throughput"], "record.size.bytes": 6,
                            "acks": "all", "linger.ms": 0, "start.ms": at - 5000}]}
    # parse_describe_topic, then each partition i takes partition (i+1)'s replicas
    placed = {p.number: p.replicas for p in Simulation(load_scenario({**given, "duration.ms": 1})).partitions}
    n = t["partitions"]
    target = {i: placed[(i + 1) % n] for i in range(n)}
    max_num_moves = max(len(set(target[i]) - set(placed[i])) for i in range(n))
    partition_size = t["num_records"] * t["record_size"] // n
    estimated = math.ceil(max_num_moves * partition_size / t["throttle"])
    operations = [{"at.ms": at, "kind": "reassign", "topic": "test_topic", "partitions": list(range(n)),
                   "replicas": [list(target[i]) for i in range(n)], "throttle": t["throttle"]}]
    if bounce_brokers:
        operations.append({"at.ms": at, "kind": "rolling_restart", "brokers": list(range(0, t["brokers"], 2)),
                           "gate": {"wait.ms": 0}, "downtime.ms": 5000})
    # the run lasts until wait_until's timeout: a move not finished by then has no operation_ms
    r = simulate({**given, "duration.ms": at + 2 * estimated * 1000, "operations": operations})
    return r, at, placed, target, estimated


def reassign_end(r) -> float:
    ends = events(r, "operation_end")
    return float(ends[ends["detail"].str.endswith("reassign")]["time_ms"].iloc[0])


@pytest.mark.parametrize("bounce_brokers", [False, True])
def test_kafkas_throttling_test_holds_in_the_model(bounce_brokers):
    """Kafka's ThrottlingTest's own assertion: the throttled reassignment takes at least 0.9 x and at most 2 x
    ceil(max_num_moves x partition_size / throttle), with and without bouncing every other broker; and nothing
    acknowledged is lost (its produce-consume validation)."""
    r, at, placed, target, estimated = throttling_test(bounce_brokers)
    rec = r.records
    bulk = rec[rec["producer"] == 0]
    assert bulk["acked"].all() and bulk["ack_ms"].max() < at  # perf-test finished before the move, as run() does
    taken_s = (reassign_end(r) - at) / 1000
    assert 0.9 * estimated <= taken_s <= 2 * estimated, (taken_s, estimated)
    s = r.summary
    assert s["acked_records_lost"] == 0
    if bounce_brokers:  # the restarted old replicas caught up under the leaders' rates (shouldLeaderThrottle)
        assert s["throttled_bytes"] > s["reassignment_bytes"]
    else:  # only the added replicas were ever out of the ISR
        assert s["throttled_bytes"] == s["reassignment_bytes"]
    end = r.partitions.set_index("partition")
    for i, replicas in target.items():
        assert end.loc[i, "replicas"] == ",".join(map(str, replicas))


def test_kafkas_throttling_test_moves_at_the_busiest_brokers_throttle():
    """Tighter than Kafka's bounds, from the same settings: each broker's leader.replication.throttled.rate is
    shared by every throttled replica it serves, and its follower.replication.throttled.rate by every one it
    fetches, so without the bounce the move lasts the largest of (bytes a broker sends to added replicas, bytes a
    broker fetches for them) / throttle. A partition's bytes are its records' batches (v2 format, kafka_format):
    the 400 KiB records exceed batch.size (16,384), one batch each, exactly; the VerifiableProducer's at most one
    batch per record. Kafka's estimate uses the mean partition size; this uses each partition's own."""
    from kafka_format import v2_record

    r, at, placed, target, estimated = throttling_test(False)
    end = reassign_end(r)
    rec = r.records
    rec = rec[rec["send_ms"] < end]
    t = THROTTLING_TEST
    bulk = v2_record(0, 0, None, t["record_size"]) + 61
    small_low, small_high = v2_record(0, 0, None, 6), v2_record(0, 0, None, 6) + 61
    out_low, out_high, in_low, in_high = ({b: 0 for b in range(t["brokers"])} for _ in range(4))
    for i in range(t["partitions"]):
        mine = rec[rec["partition"] == i]
        big = int((mine["producer"] == 0).sum())
        small = int((mine["producer"] == 1).sum())
        low, high = big * bulk + small * small_low, big * bulk + small * small_high
        added = set(target[i]) - set(placed[i])
        leader = placed[i][0]  # no broker stops: the preferred leader leads throughout
        out_low[leader] += low * len(added)
        out_high[leader] += high * len(added)
        for b in added:
            in_low[b] += low
            in_high[b] += high
    fastest = max(max(out_low.values()), max(in_low.values())) / t["throttle"]
    slowest = max(max(out_high.values()), max(in_high.values())) / t["throttle"]
    taken_s = (end - at) / 1000
    # the allowances start empty and hold at most one second's worth; the last bytes may wait out one
    # replica.fetch.wait.max.ms (0.5 s)
    assert fastest * 0.99 <= taken_s <= slowest * 1.01 + 0.5, (fastest, taken_s, slowest)


def test_kafkas_reassign_partitions_cluster_test_throttled_move_holds_in_the_model():
    """apache/kafka core/src/test/scala/unit/kafka/admin/ReassignPartitionsClusterTest.scala,
    shouldExecuteThrottledReassignment (as of 2.6.0-SNAPSHOT, before 56051e7 replaced the test for KIP-455's
    tool): brokers 100, 101, 102 (the model's 0, 1, 2; replica.fetch.backoff.ms 100, controlled shutdown off), one
    partition on 100, 101; 500 records of 100,000 bytes produced with acks=0 (TestUtils.createProducer: linger.ms 0,
    batch.size 16384, buffer.memory 1 MiB); a throttle of 10,000,000 bytes/s; the move to 101, 102. The test asserts
    numMessages x msgSize / throttle = 5 s and that the move takes more than 0.9 x and less than 2 x that (its
    time from the reassignment's start, the 1 s it sleeps after setting the throttle taken off)."""
    num_messages, msg_size, throttle, at = 500, 100 * 1000, 10 * 1000 * 1000, 3000.0
    expected_s = num_messages * msg_size / throttle
    assert expected_s == 5
    r = simulate({"name": "reassign-partitions-cluster-test", "brokers": 3, "duration.ms": at + 2 * expected_s * 1000,
                  "kafka.version": "2.6", "kafka.metadata": "zookeeper",
                  "broker": {"replica.fetch.backoff.ms": 100, "controlled.shutdown.enable": False},
                  "topics": [{"name": "my-topic", "partitions": 1, "replication.factor": 2, "replicas": [[0, 1]]}],
                  "producers": [{"topic": "my-topic", "burst": {"records": num_messages, "every.ms": 1e9},
                                 "record.size.bytes": msg_size, "acks": 0, "linger.ms": 0, "batch.size": 16384,
                                 "buffer.memory": 1024 * 1024}],
                  "operations": [{"at.ms": at, "kind": "reassign", "topic": "my-topic", "partitions": [0],
                                  "replicas": [[1, 2]], "throttle": throttle}]})
    rec = r.records
    assert rec["acked"].all() and rec["ack_ms"].max() < at  # produceMessages waits for every send's future
    took_s = (reassign_end(r) - at) / 1000
    assert 0.9 * expected_s < took_s < 2 * expected_s, took_s
    assert r.partitions.set_index("partition").loc[0, "replicas"] == "1,2"
