"""kafkamodel/sim/controller/replication.py: the controller's partition state changes (Kafka's
ReplicationControlManager), against Kafka's rules.

* Whom it elects when a leader's session expires: the first replica in assignment order that is in the ISR and
  live (PartitionChangeBuilder's election), never a live replica out of the ISR while an ISR member is live; once
  no ISR member is live, the partition goes offline with its ISR kept (unclean.leader.election.enable false) or a
  live replica out of the ISR is elected uncleanly, alone in the ISR (true). What the election code decides on a
  given partition is tested against PartitionChangeBuilderTest in ``test_kafka_cases.py``; here the controller
  applies it in whole runs.
* The preferred-leader rebalance (auto.leader.rebalance.enable): every leader.imbalance.check.interval.seconds, a
  broker leading fewer than (100 - leader.imbalance.per.broker.percentage)% of the partitions it is preferred for
  takes them back (KafkaController.checkAndTriggerAutoLeaderRebalance; moved here from test_operations.py).
* AlterPartition from leaders: a RECOVERING partition's ISR may not grow until its leader reports its log
  recovered (KIP-704), a fenced broker may not join an ISR, and one in a controlled shutdown may not either from
  3.4 (KAFKA-14140, KIP-841).
"""

from __future__ import annotations

import pytest

from kafkamodel import simulate
from kafkamodel.config.scenario import load_scenario
from kafkamodel.sim.simulation import Simulation
from helpers import BOUNCE, led_by, preferred_elections

SLOW_AT, ISOLATE_AT = 1000.0, 6000.0


def elections(unclean: bool, crash_2: bool):
    """t-0 on brokers 0, 1, 2 (assignment order; 0 leads). Broker 1's fetches crawl from 1 s (a slow fault): it
    leaves the ISR but stays live. At 6 s the leader is cut off from everyone (and with `crash_2` broker 2
    crashes too); the controller acts when their sessions expire."""
    faults = [{"at.ms": SLOW_AT, "kind": "slow", "broker": 1, "factor": 100000, "duration.ms": 19000},
              {"at.ms": ISOLATE_AT, "kind": "isolate", "broker": 0, "duration.ms": 14000}]
    if crash_2:
        faults.append({"at.ms": ISOLATE_AT, "kind": "crash", "broker": 2, "duration.ms": 14000})
    r = simulate({"name": "elect", "seed": 3, "duration.ms": 20000, "brokers": 3, "kafka.version": "4.1",
                  "broker": {"min.insync.replicas": 1, "replica.lag.time.max.ms": 2000,
                             "unclean.leader.election.enable": unclean, "eligible.leader.replicas.enable": False},
                  "network": {"latency.ms": 1.0},
                  "topics": [{"name": "t", "partitions": 1, "replication.factor": 3}],
                  "producers": [{"topic": "t", "acks": 1, "rate.per.s": 2000}], "faults": faults})
    ev = r.events
    return r, ev[ev.kind.isin(["isr_shrink", "broker_failure_detected", "leader_election", "partition_offline"])]


@pytest.mark.parametrize("unclean", [False, True])
def test_the_controller_elects_the_first_live_isr_member_in_assignment_order(unclean):
    r, ev = elections(unclean, crash_2=False)
    assert r.partitions.replicas.iloc[0] == "0,1,2"
    shrink = ev[ev.kind == "isr_shrink"].iloc[0]
    assert shrink.time_ms < ISOLATE_AT and shrink.detail == "removed [1]; isr now [0, 2]"
    expired = ev[ev.kind == "broker_failure_detected"].iloc[0]
    election = ev[ev.kind == "leader_election"]
    # broker 1 comes first after 0 and is live, but out of the ISR: 2 is elected, cleanly even where unclean
    # elections are allowed, the moment 0's session expires, in the next epoch, and the ISR loses 0
    assert len(election) == 1 and election.broker.iloc[0] == 2 and election.time_ms.iloc[0] == expired.time_ms
    assert election.detail.iloc[0] == "clean: epoch 1, isr [2], was 0"


def test_with_no_live_isr_member_the_partition_goes_offline_or_is_elected_uncleanly():
    # broker 2 (the ISR's last member once 0 is fenced) crashed too; when its session expires no ISR member is live
    r, ev = elections(unclean=False, crash_2=True)
    offline = ev[ev.kind == "partition_offline"]
    assert len(offline) == 1 and offline.detail.iloc[0] == "no eligible replica; isr [2]"  # the ISR keeps its last
    assert offline.time_ms.iloc[0] == ev[(ev.kind == "broker_failure_detected") & (ev.broker == 2)].time_ms.iloc[0]
    assert not (ev[ev.kind == "leader_election"].broker == 1).any() and r.partitions.leader.iloc[0] == -1
    r, ev = elections(unclean=True, crash_2=True)
    unclean = ev[(ev.kind == "leader_election") & (ev.broker == 1)]
    assert len(unclean) == 1 and unclean.detail.iloc[0].startswith("unclean: epoch 2, isr [1], was 2")
    assert r.summary["unclean_leader_elections"] == 1 and r.summary["committed_records_lost"] > 0


# ---- the preferred-leader rebalance -------------------------------------------------------------------------------

def bounced(broker):
    """Broker 0 shut down and restarted (helpers.BOUNCE): it leads none of the partitions it is preferred for."""
    return {"name": "ops", "brokers": 3, "duration.ms": 12000, "kafka.version": "4.1",
            "broker": {"min.insync.replicas": 2, **broker}, "network": {"latency.ms": 1.0},
            "topics": [{"name": "t", "partitions": 6, "replication.factor": 3}],
            "producers": [{"topic": "t", "rate.per.s": 2000, "acks": "all"}], "operations": BOUNCE}


def test_automatic_preferred_leader_rebalance_comes_at_the_first_check_after_the_imbalance():
    every = 4.0  # leader.imbalance.check.interval.seconds
    r = simulate(bounced(broker={"leader.imbalance.check.interval.seconds": every,
                                 "leader.imbalance.per.broker.percentage": 10}))
    back = r.events[r.events.kind == "operation_end"].time_ms.tolist()[1]  # broker 0 back in every ISR
    first_check = (back // (every * 1000) + 1) * every * 1000
    pref = preferred_elections(r)
    assert sorted(pref["partition"]) == sorted(led_by(r, 0))
    assert (pref["time_ms"] == first_check).all()
    assert (pref["broker"] == 0).all()


def test_no_automatic_rebalance_while_the_imbalance_is_within_the_percentage():
    # broker 0 leads none of its 2 preferred partitions: 100% imbalance, which never exceeds 100
    r = simulate(bounced(broker={"leader.imbalance.check.interval.seconds": 4,
                                 "leader.imbalance.per.broker.percentage": 100}))
    assert preferred_elections(r).empty
    r = simulate(bounced(broker={"auto.leader.rebalance.enable": False}))
    assert preferred_elections(r).empty



# ---- AlterPartition ---------------------------------------------------------------------------------------------

def _recovering_partition():
    sim = Simulation(load_scenario({"name": "recovering", "kafka.version": "4.1", "brokers": 3,
                                    "topics": [{"name": "t", "partitions": 1, "replication.factor": 3}]}))
    return sim, sim.partitions[0], sim.replicas[0][0]


def test_recovering_refuses_isr_growth_until_the_leader_reports_its_log_recovered():
    sim, part, rep = _recovering_partition()
    sim.replica_manager.start()
    part.isr, rep.lead.isr = (0,), {0}
    part.recovering = True  # as a last-known-leader election leaves it
    assert not sim.replication.alter_isr(rep, {0, 1}) and part.isr == (0,)
    assert sim.replication.alter_isr(rep, {0})  # no growth: allowed
    sim.replication.handle_recovered(0, part.leader_epoch - 1)  # an older epoch's report changes nothing
    assert part.recovering
    sim.replication.handle_recovered(0, part.leader_epoch)
    assert not part.recovering
    assert sim.replication.alter_isr(rep, {0, 1}) and part.isr == (0, 1)


def test_a_fenced_broker_may_not_join_an_isr():
    sim, part, rep = _recovering_partition()
    sim.replica_manager.start()
    part.isr, rep.lead.isr = (0,), {0}
    sim.cluster.live_brokers.discard(1)
    sim.cluster.fenced.add(1)
    assert not sim.replication.alter_isr(rep, {0, 1}) and part.isr == (0,)
    sim.cluster.live_brokers.add(1)
    assert sim.replication.alter_isr(rep, {0, 1}) and part.isr == (0, 1)


@pytest.mark.parametrize("version,refused", [("3.3", False), ("3.4", True), ("4.1", True)])
def test_a_broker_in_controlled_shutdown_may_join_an_isr_only_before_kafka_14140(version, refused):
    """KIP-841 (KRaft) and KAFKA-14140 (ZooKeeper from 3.4): the controller refuses an ISR that adds a broker in a
    controlled shutdown, until its session closes; before 3.4 a ZooKeeper-era leader writes it back."""
    session = {"broker.session.timeout.ms": 9000} if version >= "4" else {"zookeeper.session.timeout.ms": 6000}
    sim = Simulation(load_scenario({"name": "ctl", "seed": 1, "duration.ms": 20000, "brokers": 3,
                                    "kafka.version": version, "broker": session, "network": {"latency.ms": 0.5},
                                    "topics": [{"name": "t", "partitions": 3, "replication.factor": 3}],
                                    "producers": [{"topic": "t", "acks": "all", "rate.per.s": 100}],
                                    "faults": [{"at.ms": 2000, "kind": "crash", "broker": 1}]}))
    sim.replica_manager.start()
    part = next(p for p in sim.partitions if p.leader == 0)
    rep = sim.replicas[part.index][0]
    part.isr, rep.lead.isr = (0,), {0}
    sim.replication.shutting_down.add(1)
    assert sim.replication.alter_isr(rep, {0, 1}) is not refused and part.isr == ((0,) if refused else (0, 1))
    part.isr, rep.lead.isr = (0,), {0}
    sim.replication.fence(1)  # its session closed: no longer shutting down (and no longer live)
    sim.cluster.live_brokers.add(1)  # back, registered again: it may join
    assert sim.replication.alter_isr(rep, {0, 1}) and part.isr == (0, 1)
