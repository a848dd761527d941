"""kafkamodel/sim/faults.py: the faults a scenario schedules, checked on the model's runs (disk_loss: a machine
replaced, its log gone; power_loss: only what was fsynced survives; slow: a broker whose fetches crawl; a fault aimed
at a rack hits that rack's brokers)."""

from __future__ import annotations

import pytest

from kafkamodel import load_scenario, simulate
from kafkamodel.paths import scenario_path
from durability_specs import steady as _steady


def test_disk_loss_follower_comes_back_empty_and_catches_up():
    """A follower whose machine is replaced returns with no log, fetches everything from its leader and
    rejoins the ISR; nothing acknowledged is lost (the leader and the other follower hold it)."""
    r = simulate(_steady(faults=[{"at.ms": 3000, "kind": "disk_loss", "broker": 1, "duration.ms": 3000}]))
    ev = r.events
    lost = ev[ev.kind == "fault_disk_loss"].detail.iloc[0]
    on_broker_1 = int(lost.split()[0])
    assert on_broker_1 > 0  # every offset it held went
    assert r.summary["acked_records_lost"] == 0
    assert all(sorted(p.isr.split(",")) == sorted(p.replicas.split(",")) for p in r.partitions.itertuples())
    back = ev[(ev.kind == "isr_expand") & ev.detail.str.startswith("added 1")]
    assert len(back) == 6  # every partition took broker 1 back once caught up


def test_disk_loss_of_every_replica_loses_everything_acknowledged_before():
    """All three machines replaced: what was acknowledged before is on no disk any more (Kafka keeps no other
    copy); what is acknowledged after they return is kept."""
    r = simulate(_steady(faults=[{"at.ms": 3000, "kind": "disk_loss", "broker": [0, 1, 2], "duration.ms": 3000}]))
    rec = r.records
    before = int((rec.acked & (rec.ack_ms < 3000)).sum())
    assert before > 0
    assert r.summary["acked_records_lost"] == before


def test_zookeeper_keeps_the_last_isr_member_so_its_empty_disk_is_elected():
    """ZooKeeper mode (2.8): the controller never removes the last ISR member (ZkReplicaStateMachine keeps an
    ISR of one as it is), so the broker whose disk was replaced is still "in sync" in ZooKeeper when it returns,
    leads again with an empty log (elected cleanly, or kept as the leader ZooKeeper names when the controller
    fails over at that instant), and the other replicas truncate to it: every record acknowledged on
    that partition before is lost."""
    faults = [{"at.ms": 3000, "kind": "crash", "broker": 1, "duration.ms": 40000},
              {"at.ms": 3000, "kind": "crash", "broker": 2, "duration.ms": 40000},
              {"at.ms": 25000, "kind": "disk_loss", "broker": 0, "duration.ms": 5000}]
    r = simulate(load_scenario(scenario_path("steady-state")).with_overrides(
        {"kafka.version": "2.8", "duration.ms": 60000, "producers[0].rate.per.s": 600,
         "broker.min.insync.replicas": 1, "faults": faults}))
    ev = r.events
    mine = ev[ev.partition == 0]
    # ZooKeeper kept broker 0 as the ISR's last member while it was away ...
    assert mine[mine.kind == "isr_shrink"].detail.iloc[-1].endswith("isr now [0]")
    # ... so once its old session is gone it leads again, with the empty log its new disk holds (elected cleanly,
    # or kept as the leader ZooKeeper names when the controller fails over at the same instant)
    led = mine[(mine.kind.isin(["leader_election", "become_leader"])) & (mine.time_ms > 25000)]
    assert led.broker.iloc[-1] == 0 and not led.detail.str.startswith("unclean").any()
    assert "LEO 0" in mine[(mine.kind == "become_leader") & (mine.time_ms > 25000)].detail.iloc[-1]
    rec = r.records
    before = int((rec.acked & (rec.partition == 0) & (rec.ack_ms < 25000)).sum())
    row = r.partitions[r.partitions.partition == 0].iloc[0]
    assert before > 0 and row.acked_records_lost == before


def test_a_slow_follower_leaves_the_isr_after_replica_lag_time_max_ms():
    """The detailed model's slow fault: a follower whose fetches take 100,000 times longer (ms -> minutes) stops
    catching up when the spell starts; the leader drops it once it has been behind replica.lag.time.max.ms, at
    its next check (every half of that: Kafka's isr-expiration task), so between lag and 1.5 x lag after the
    start. Ten times slower (a few ms), it keeps up and stays."""
    lag = 30000.0
    scenario = load_scenario(scenario_path("three-zones")).with_overrides(
        {"producers[0].rate.per.s": 500, "duration.ms": 70000, "broker.replica.lag.time.max.ms": lag})
    from kafkamodel.durability.estimate import groups_of

    _, partition, replicas = groups_of(scenario)[0].partitions[0]
    for factor, leaves in ((100000, True), (10, False)):
        r = simulate(scenario.with_overrides({"faults": [{"at.ms": 5000, "kind": "slow", "broker": replicas[1],
                                                          "duration.ms": 60000, "factor": factor}]}))
        ev = r.events
        shrinks = ev[(ev.partition == partition) & (ev.kind == "isr_shrink")
                     & ev.detail.str.contains(rf"removed \[[^]]*\b{replicas[1]}\b", regex=True)]
        if leaves:
            assert len(shrinks) == 1 and 5000 + lag <= shrinks.time_ms.iloc[0] <= 5000 + 1.5 * lag + 100, shrinks
        else:
            assert shrinks.empty, shrinks


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


@pytest.mark.parametrize("flush", [None, 1])
def test_a_power_loss_keeps_only_what_was_fsynced(flush):
    """power_loss: the page cache is gone, the disk keeps what was fsynced. Kafka's default forces no fsync
    (log.flush.interval.messages unset: it relies on replication), and Linux writes a dirty page back only once it is
    older than dirty_expire_centisecs (30 s), so a follower that loses power 3 s in keeps nothing: every record
    acknowledged with acks=all was in its log (it was in the ISR) and is gone from it, though not from the
    partition. With an fsync per message (log.flush.interval.messages 1) it keeps its whole log."""
    broker = {"min.insync.replicas": 2, **({"log.flush.interval.messages": flush} if flush else {})}
    r = simulate({"name": "power", "seed": 2, "duration.ms": 8000, "brokers": 3, "kafka.version": "4.1",
                  "broker": broker, "topics": [{"name": "t", "partitions": 1, "replication.factor": 3}],
                  "producers": [{"topic": "t", "acks": "all", "rate.per.s": 2000}],
                  "faults": [{"at.ms": 3000, "kind": "power_loss", "broker": 2, "duration.ms": 1000}]})
    ev = r.events
    cut = ev[(ev.kind == "truncation") & (ev.broker == 2) & ev.detail.str.startswith("power loss")]
    lost = ev[ev.kind == "fault_power_loss"].detail.iloc[0]
    acked_before = int((r.records.acked & (r.records.ack_ms < 3000)).sum())
    if flush:
        assert cut.empty and lost == "0 unflushed offsets lost"
    else:
        removed = int(lost.split()[0])
        assert len(cut) == 1 and f"removed {removed} offsets, LEO now 0;" in cut.detail.iloc[0]
        assert acked_before > 0 and removed >= acked_before
    assert r.summary["acked_records_lost"] == 0  # the other two replicas held every record


@pytest.mark.parametrize("name", ["acks1-leader-crash", "jepsen-2013", "quorum-paused-leader-resumes",
                                  "slow-follower-isr", "kip101-double-power-loss-divergence", "last-replica-standing"])
def test_messages_skip_the_fault_checks_only_when_nothing_can_change(name, monkeypatch):
    """Between broker faults' steps (while every broker is up and reachable), messages and timers due before the next
    step go onto the heap as their handlers (``Transport.expect``): the run is the same as one that sends every
    message and timer through the checks."""
    from kafkamodel.sim.engine.transport import Transport

    scenario = load_scenario(scenario_path(name))
    fast = simulate(scenario)
    checked = Transport.start
    monkeypatch.setattr(Transport, "start", lambda self, changes: checked(self, None))  # never skip the checks
    slow = simulate(scenario)
    assert fast.summary == slow.summary
    assert fast.events.equals(slow.events)
