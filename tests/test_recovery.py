"""Failure and recovery: the published anomalies, each against its fix, on the same seed and schedule."""

from __future__ import annotations

import pytest

from kafkamodel import load_scenario, simulate
from kafkamodel.sim.storage.disk import CHUNK_MS

from shipped import SCENARIOS, run

SEEDS = [1, 2, 3]


@pytest.mark.parametrize("seed", SEEDS)
def test_kip101_follower_truncating_to_its_stale_hw_loses_committed_records(seed):
    old = run("kip101-hw-truncation-loss", seed=seed)
    fix = run("kip101-leader-epoch", seed=seed)
    assert old.summary["committed_records_lost"] > 0
    assert old.summary["acked_records_lost"] > 0
    assert old.summary["no_committed_record_lost_violations"] == 1
    # the loss happens where and when the follower truncated to its own HW, and nowhere else
    truncations = old.events[(old.events.kind == "truncation") & old.events.detail.str.contains("committed")]
    assert truncations.broker.iloc[0] == 2 and "to local high watermark" in truncations.detail.iloc[0]
    assert fix.summary["committed_records_lost"] == fix.summary["acked_records_lost"] == 0
    assert fix.summary["no_committed_record_lost_violations"] == 0
    # same schedule: both elect twice
    assert old.summary["leader_elections"] == fix.summary["leader_elections"] == 2


@pytest.mark.parametrize("seed", SEEDS)
def test_kip101_double_power_loss_diverges_with_hw_truncation_only(seed):
    old = run("kip101-double-power-loss-divergence", seed=seed)
    fix = run("kip101-double-power-loss-leader-epoch", seed=seed)
    assert old.summary["replica_divergence"] > 0
    assert old.summary["committed_prefixes_agree_violations"] > 0
    assert fix.summary["replica_divergence"] == 0
    assert fix.summary["committed_prefixes_agree_violations"] == 0
    # what neither broker had flushed is lost in both: the fix is about divergence
    assert old.summary["committed_records_lost"] > 0 and fix.summary["committed_records_lost"] > 0


def test_double_power_loss_loses_exactly_what_was_not_flushed():
    # log.flush.interval.ms 10000: the last fsync before the 40 s power loss was at 30 s (timers
    # start at 0), so the records the old leader appended after 30 s, and only those, are gone.
    result = run("kip101-double-power-loss-leader-epoch")
    records = result.records
    lost = records[(records.copies == 0) & records.acked]
    assert len(lost) == result.summary["acked_records_lost"] > 0
    latency = 5.0  # constant one-way latency of this scenario; appended = sent-to-leader + latency
    assert lost.send_ms.min() > 30000 - 60  # (linger 5 ms + latency)
    assert lost.ack_ms.max() < 40000 + latency
    kept = records[(records.copies == 1) & (records.send_ms < 30000 - 60)]
    assert len(kept) == ((records.send_ms < 30000 - 60)).sum()


@pytest.mark.parametrize("seed", SEEDS)
def test_last_replica_standing_loses_committed_records_that_elr_keeps(seed):
    old = run("last-replica-standing", seed=seed)
    elr = run("last-replica-standing-elr", seed=seed)
    assert old.summary["committed_records_lost"] > 0 and old.summary["acked_records_lost"] > 0
    assert elr.summary["committed_records_lost"] == elr.summary["acked_records_lost"] == 0
    election = elr.events[elr.events.kind == "leader_election"]
    assert "eligible leader replica" in election.detail.iloc[0]
    # ELR brings the partition back before the unclean broker returns: less unavailable, not more
    assert elr.summary["unavailable_ms"] < old.summary["unavailable_ms"]


@pytest.mark.parametrize("seed", SEEDS)
def test_jepsen_2013_loses_acknowledged_writes_unless_min_isr_2_and_clean_elections(seed):
    old = run("jepsen-2013", seed=seed)
    safe = run("jepsen-2013-safe", seed=seed)
    s = old.summary
    assert s["unclean_leader_elections"] == 1 and s["acked_records_lost"] > 0
    # what is lost is what the lone leader acknowledged after its followers were cut off (5 s) and before it was (20 s)
    records = old.records
    lost = records[records.acked & (records.copies == 0)]
    assert lost.ack_ms.min() > 5000 and lost.ack_ms.max() < 20000 + 10
    alone = records[records.acked & (records.send_ms > 5000 + 10) & (records.ack_ms < 20000)]  # sent after the cut
    assert len(alone) and set(alone.index) <= set(lost.index)
    assert safe.summary["acked_records_lost"] == safe.summary["committed_records_lost"] == 0
    assert safe.summary["unclean_leader_elections"] == 0
    # once the ISR is the leader alone, nothing is acknowledged until the followers are back (60 s)
    shrink = safe.events.loc[safe.events.kind == "isr_shrink", "time_ms"].iloc[0]
    acked = safe.records[safe.records.acked]
    assert not ((acked.ack_ms > shrink + 10) & (acked.ack_ms < 60000)).any()
    assert safe.summary["unavailable_ms"] > 5 * s["unavailable_ms"]


def test_power_loss_keeps_what_the_os_wrote_back():
    # one broker, acks=1, constant latency: a record is appended at ack_ms - latency; after a power loss
    # at T only what was appended before T - os.vm.dirty_expire_centisecs survives (nothing is fsynced by default;
    # the page cache keeps its dirty pages in CHUNK_MS chunks, written back whole: the boundary is that coarse)
    latency, T, expire = 1.0, 20000.0, 3000.0
    result = simulate({
        "name": "os-writeback", "seed": 5, "duration.ms": 40000, "brokers": 1, "kafka.version": "3.9",
        "broker": {"zookeeper.session.timeout.ms": 1000},
        "os": {"vm.dirty_expire_centisecs": int(expire / 10)},
        "network": {"latency.ms": latency},
        "topics": [{"name": "t", "replication.factor": 1}],
        "producers": [{"topic": "t", "rate.per.s": 500, "acks": 1}],
        "faults": [{"at.ms": T, "kind": "power_loss", "broker": 0, "duration.ms": 1000}],
    })
    r = result.records
    acked_before = r[r.acked & (r.ack_ms < T)]
    appended = acked_before.ack_ms - latency
    survived = acked_before.copies == 1
    assert survived[appended <= T - expire].all()
    assert not survived[appended > T - expire + CHUNK_MS].any()
    assert (~survived).sum() == result.summary["acked_records_lost"] > 0


@pytest.mark.parametrize("every", [1000, 5000])
def test_log_flush_interval_messages_bounds_the_power_loss(every):
    result = simulate({
        "name": "flush-messages", "seed": 3, "duration.ms": 20000, "brokers": 1, "kafka.version": "3.9",
        "broker": {"log.flush.interval.messages": every, "zookeeper.session.timeout.ms": 1000},
        "topics": [{"name": "t", "replication.factor": 1}],
        "producers": [{"topic": "t", "rate.per.s": 2000, "acks": 1}],
        "faults": [{"at.ms": 10000, "kind": "power_loss", "broker": 0, "duration.ms": 1000}],
    })
    lost = result.summary["acked_records_lost"]
    # fsync once `every` records are unflushed: at most every - 1 plus the batch that crossed it are lost
    batch = 163
    assert 0 < lost < every + batch


def test_preferred_replica_election_moves_leadership_back():
    base = {
        "name": "preferred", "seed": 2, "duration.ms": 30000, "brokers": 3, "kafka.version": "3.9",
        "broker": {"zookeeper.session.timeout.ms": 2000, "leader.imbalance.check.interval.seconds": 10},
        "topics": [{"name": "t", "partitions": 3, "replication.factor": 3}],
        "producers": [{"topic": "t", "rate.per.s": 300, "acks": "all"}],
        "faults": [{"at.ms": 1000, "kind": "crash", "broker": 1, "duration.ms": 3000}],
    }
    on = simulate(base)
    preferred = on.events[on.events.detail.str.startswith("preferred")]
    assert len(preferred) == 1 and preferred.broker.iloc[0] == 1 and preferred.time_ms.iloc[0] == 10000
    assert list(on.partitions.leader) == [0, 1, 2]
    off = simulate({**base, "broker": {**base["broker"], "auto.leader.rebalance.enable": False}})
    assert list(off.partitions.leader) != [0, 1, 2]
    assert on.summary["acked_records_lost"] == off.summary["acked_records_lost"] == 0


def test_the_preferred_election_is_a_partition_change():
    """The rebalance elects as every election does (Kafka's PartitionChangeBuilder with Election.PREFERRED): one
    epoch bump and one election counted; the ELR recomputed (maybePopulateTargetElr: empty once the ISR has
    min.insync.replicas) and the last known leader cleared (maybeUpdateLastKnownLeader: the partition has a leader)."""
    from kafkamodel.sim.simulation import Simulation

    sim = Simulation(load_scenario({
        "name": "preferred-change", "seed": 1, "duration.ms": 1000, "brokers": 3, "kafka.version": "4.1",
        "topics": [{"name": "t", "partitions": 1, "replication.factor": 3, "min.insync.replicas": 2}],
        "producers": [{"topic": "t", "rate.per.s": 10, "acks": "all"}]}))
    part = sim.partitions[0]
    preferred, other = part.replicas[0], part.replicas[1]
    part.leader, part.leader_epoch, part.isr = other, 5, tuple(part.replicas)
    part.elr, part.last_known_elr = (part.replicas[2],), (other,)  # stale: as a change would leave neither
    elections = sim.recorder.counters.leader_elections
    sim.replication.check_preferred_leaders(1000.0)
    assert (part.leader, part.leader_epoch, part.isr) == (preferred, 6, tuple(part.replicas))
    assert part.elr == () and part.last_known_elr == ()
    assert sim.recorder.counters.leader_elections == elections + 1


def test_controller_failover_recovers_partition_state():
    # broker 0 holds the controller role and leads t-0; it crashes for good
    result = simulate({
        "name": "controller-failover", "seed": 4, "duration.ms": 20000, "brokers": 3,
        "kafka.version": "3.9",  # ZooKeeper: the controller role sits on a broker and fails over
        "broker": {"zookeeper.session.timeout.ms": 3000, "min.insync.replicas": 2},
        "topics": [{"name": "t", "partitions": 3, "replication.factor": 3}],
        "producers": [{"topic": "t", "rate.per.s": 600, "acks": "all"}],
        "faults": [{"at.ms": 2000, "kind": "crash", "broker": 0}],
    })
    e = result.events
    failover = e[e.kind == "controller_failover"]
    assert len(failover) == 1 and failover.broker.iloc[0] == 1 and failover.time_ms.iloc[0] == 5000
    # the new controller elects a leader for the partition the old one led, from ZooKeeper's state
    assert (result.partitions.leader != 0).all() and (result.partitions.leader >= 0).all()
    assert result.summary["acked_records_lost"] == 0
    assert result.summary["leader_in_isr_violations"] == 0
    # unavailable only while the crash went unnoticed (t-0 led by broker 0): about the session timeout
    assert result.summary["unavailable_ms"] == pytest.approx(3000, abs=20)


def test_debug_mode_checks_invariants_after_every_event():
    scenario = load_scenario(SCENARIOS / "kip101-double-power-loss-divergence.yaml").with_overrides(
        {"debug.invariants": True, "duration.ms": 58000, "producers[0].rate.per.s": 40, "network.latency.ms": 50})
    result = simulate(scenario)
    violations = result.events[result.events.kind == "invariant_violation"]
    # the divergence is seen the moment it appears, long before the end of the run
    first = violations[violations.detail.str.startswith("committed_prefixes_agree")].time_ms.min()
    assert first < 58000
    plain = run("kip101-leader-epoch", **{"debug.invariants": True, "duration.ms": 20000, "producers[0].rate.per.s": 200})
    assert not (plain.events.kind == "invariant_violation").any()


def test_a_quorum_leader_cut_off_from_the_controller_alone_commits_nothing_after_the_vote():
    # The leader (broker 0) loses the controller but not its followers; the controller's link to
    # follower 2 is slow (30 ms), so 2 keeps fetching from the old leader for a while after broker 1
    # is elected. Those fetches carry the epoch 2 voted for, so the old leader counts none of them:
    # what 2 took from it after the vote is truncated, and none of it was acknowledged (as in Raft,
    # where a voter refuses an older term). Found by test_quorum_many_schedules (a CI run).
    cut_seeds = 0
    for seed in range(6):
        r = simulate(load_scenario({
            "name": "quorum-split", "seed": seed, "duration.ms": 8000, "replication": "quorum", "brokers": 3,
            "kafka.version": "3.9",
            "broker": {"zookeeper.session.timeout.ms": 2000},
            "network": {"latency.ms": 0.5, "links": [{"between": [1, 2], "latency.ms": 30.0}]},
            "topics": [{"name": "t", "partitions": 1, "replication.factor": 3}],
            "producers": [{"topic": "t", "rate.per.s": 400, "acks": "all", "request.timeout.ms": 2000}],
            "faults": [{"at.ms": 1000, "kind": "isolate", "broker": 0, "duration.ms": 3000, "from": ["controller"]}],
        }))
        events = r.events
        elected = list(events[events.kind == "leader_election"].broker)
        assert elected in ([1], [2])  # the most up-to-date follower at the vote (a race the seed decides)
        assert r.summary["acked_records_lost"] == r.summary["committed_records_lost"] == 0
        assert r.summary["no_committed_record_lost_violations"] == 0
        if elected != [1]:
            continue  # 2 itself leads: no follower keeps fetching from the old leader over the slow link
        # follower 2 held epoch-0 records beyond the new leader's log: the old leader sent to it after the vote
        cut = events[(events.kind == "truncation") & (events.broker == 2)]
        assert all("committed" not in d for d in cut.detail)
        cut_seeds += any(int(d.split("removed ")[1].split(" ")[0]) > 0 for d in cut.detail)
    assert cut_seeds >= 3  # the window the vote closes is open on most seeds


def test_a_paused_quorum_leader_resuming_at_the_end_diverges_only_above_the_committed_prefix():
    # issue 15: the old leader resumes 1 ms before the end with an uncommitted epoch-0 tail
    at_end = run("quorum-paused-leader-resumes")
    s = at_end.summary
    assert s["replica_divergence"] == 0 and s["committed_prefixes_agree_violations"] == 0
    assert s["acked_records_lost"] == s["committed_records_lost"] == 0
    tail = s["replica_uncommitted_divergence"]
    assert tail > 0
    # a second later the old leader has heard of epoch 1 and truncated: exactly that tail, and no more
    later = run("quorum-paused-leader-resumes", **{"duration.ms": 25000})
    assert later.summary["replica_divergence"] == later.summary["replica_uncommitted_divergence"] == 0
    cut = later.events[(later.events.kind == "truncation") & (later.events.time_ms > 23999)]
    assert len(cut) == 1 and cut.broker.iloc[0] == 0
    assert f"removed {tail} offsets" in cut.detail.iloc[0]
    # those offsets were never acknowledged where they were: every acknowledged record is in the final log
    records = later.records
    assert not (records.acked & (records.copies == 0)).any()


def test_an_unclean_leader_with_an_empty_log_makes_its_followers_truncate_everything():
    # found by the fault campaign (issue 15): the followers used to keep what they had below their HW
    # (an UNDEFINED answer), diverging from the new leader on 498 committed offsets for good
    result = run("unclean-election-empty-leader")
    s = result.summary
    assert s["unclean_leader_elections"] == 1
    assert s["replica_divergence"] == 0 and s["committed_prefixes_agree_violations"] == 0
    events = result.events
    election = events[(events.kind == "leader_election") & events.detail.str.startswith("unclean")].iloc[0]
    # the new leader's log was empty: what t-1 acknowledged before the election is lost, and nothing else
    records = result.records
    before = records[(records.partition == 1) & records.acked & (records.ack_ms < election.time_ms)]
    assert s["acked_records_lost"] == s["committed_records_lost"] == len(before) > 0
    cut = events[(events.kind == "truncation") & (events.time_ms > election.time_ms) & (events.partition == 1)]
    assert sorted(cut.broker) == [1, 2] and cut.detail.str.contains("LEO now 0").all()
    part = result.partitions[result.partitions.partition == 1].iloc[0]
    assert part.isr == "1,2,3"  # both followers caught up again


def test_offsets_for_leader_epoch_answers_as_kafkas_epoch_cache():
    from kafkamodel.sim.state import Replica
    from kafkamodel.sim.storage.log import Log

    log = Log(None, [0] * 10)
    assert log.end_offset_for_epoch(0, 0) == (-1, -1)  # no epoch known: UNDEFINED
    leader = Replica(0, 1, log)  # a leader of epoch 2 whose log is empty: its own epoch is known before any entry
    leader.is_leader, leader.leader_epoch = True, 2
    leader.start_leading(0.0)
    assert leader.end_offset_for_epoch(0) == (0, 0)  # older than its epoch: ends where that epoch starts
    assert leader.end_offset_for_epoch(2) == (2, 0)
    for entry in [(0, 3, 1, 0), (3, 5, 1, 1), (5, 9, 3, 2)]:  # epochs 1 (offsets 0-4) and 3 (5-8)
        log.append(entry, 0.0)
    assert log.end_offset_for_epoch(1, 9) == (1, 5)  # a known epoch ends where the next starts
    assert log.end_offset_for_epoch(2, 9) == (1, 5)  # the largest epoch at or below the one asked
    assert log.end_offset_for_epoch(3, 9) == (3, 9)
    assert log.end_offset_for_epoch(0, 9) == (0, 0)  # older than any: where the first later epoch starts
    assert log.end_offset_for_epoch(4, 9) == (-1, -1)  # newer than the last epoch of a follower's log: UNDEFINED


def _two_brokers_die_together(version: str, seed: int) -> dict:
    # t-1 lives on brokers 1, 2, 3 (leader 1). Broker 1 crashes and broker 2 loses power (its log is gone) at
    # the same instant, so both sessions expire together: the controller first elects broker 2 (epoch 1, its
    # session not yet seen to expire), then broker 3 (epoch 2). Both restart when their old sessions expire,
    # and the LeaderAndIsr of epoch 1 reaches broker 2's new process. Each batch of the controller's writes takes
    # 2 ms a partition (the Kafka wiki's "each ZK write takes 2ms"), so epoch 2 follows epoch 1 by a few ms.
    return {"name": "kip380", "kafka.version": version, "seed": seed, "duration.ms": 16000, "brokers": 4,
            "controller": {"zookeeper.write.ms": 2},
            "broker": {"min.insync.replicas": 2, "zookeeper.session.timeout.ms": 2000, "replica.lag.time.max.ms": 1500,
                       "replica.socket.timeout.ms": 3000, "unclean.leader.election.enable": False},
            "topics": [{"name": "t", "partitions": 2, "replication.factor": 3}],
            "producers": [{"topic": "t", "rate.per.s": 400, "acks": "all", "request.timeout.ms": 2000,
                           "delivery.timeout.ms": 6000}],
            "faults": [{"at.ms": 6000, "kind": "crash", "broker": 1, "duration.ms": 50},
                       {"at.ms": 6000, "kind": "power_loss", "broker": 2, "duration.ms": 50}]}


def test_kip380_a_restarted_broker_refuses_the_leader_and_isr_meant_for_its_predecessor():
    # Before 2.2 the new process acts on the stale request: it leads epoch 1 with an empty log, broker 3 truncates
    # to it before epoch 2 arrives, and acknowledged records are lost. With broker epochs (KIP-380, 2.2; KRaft)
    # it refuses the request, and nothing is lost on the same schedule.
    old = [simulate(load_scenario(_two_brokers_die_together("2.1", seed))) for seed in (1, 2, 3)]
    lost = [r for r in old if r.summary["acked_records_lost"] > 0]
    assert lost, "the stale request never won the race: the test shows nothing"
    for r in lost:
        e = r.events
        assert ((e.kind == "become_leader") & (e.broker == 2) & e.detail.str.startswith("epoch 1, LEO 0")).any()
    for seed in (1, 2, 3):
        new = simulate(load_scenario(_two_brokers_die_together("2.2", seed)))
        assert new.summary["acked_records_lost"] == new.summary["committed_records_lost"] == 0
        e = new.events
        assert not ((e.kind == "become_leader") & (e.broker == 2) & e.detail.str.startswith("epoch 1")).any()


def test_the_campaigns_first_counterexample_on_safe_settings_loses_nothing_now():
    # Found by the safety campaign on Kafka 4.1 (isr_safe, schedule 175), shrunk to a crash and a power loss
    # 200 ms apart: the restarted broker 2 took the stale LeaderAndIsr of epoch 1 and led with an empty log.
    r = run("stale-leader-and-isr")
    assert r.summary["acked_records_lost"] == r.summary["committed_records_lost"] == 0
    assert r.summary["no_committed_record_lost_violations"] == 0
    e = r.events
    assert not ((e.kind == "become_leader") & (e.broker == 2) & (e.partition == 1)).any()
