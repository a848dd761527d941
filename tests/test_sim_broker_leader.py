"""kafkamodel/sim/broker/leader.py: the leader replica's ISR and high watermark, against Kafka's Partition.

* LeaderShrinkIsr (Partition.maybeShrinkIsr): the isr-expiration task runs every replica.lag.time.max.ms / 2
  (ReplicaManager.startup) and drops a follower that has not caught up to the leader's log end for more than
  replica.lag.time.max.ms (Replica.isCaughtUp); the controller's session timeout is set far longer here, so the
  leader's own rule is what acts.
* LeaderIncHighWatermark (Partition.maybeIncrementLeaderHW): the HW is the smallest log end offset of the ISR, so a
  dead follower still in the ISR holds it; it moves when the ISR shrinks (maybeShrinkIsr increments the HW at once).
  The mode's rule reads the ISR as the leader last set it (``LeaderState.set_isr`` keeps its followers' states),
  held below min.insync.replicas from 3.7 (KAFKA-15583).
* BecomeLeader (Partition.makeLeader): the new leader's epoch is the controller's, and its epoch starts at its log
  end offset (the first record it appends is there).
"""

from __future__ import annotations

import math
import re
from types import SimpleNamespace

from kafkamodel import simulate
from kafkamodel.sim.rules.modes import IsrMode
from kafkamodel.sim.state import Replica
from kafkamodel.sim.storage.log import Log

LAG = 2000.0  # replica.lag.time.max.ms
CRASH = 3300.0  # the follower (broker 2) crashes; not on a multiple of LAG / 2


def run(faults, acks="all", session=30000, duration=12000, **producer):
    return simulate({"name": "leader", "seed": 3, "duration.ms": duration, "brokers": 3, "kafka.version": "4.1",
                     "broker": {"min.insync.replicas": 2, "replica.lag.time.max.ms": LAG,
                                "broker.session.timeout.ms": session},
                     "network": {"latency.ms": 1.0},
                     "topics": [{"name": "t", "partitions": 1, "replication.factor": 3}],
                     "producers": [{"topic": "t", "acks": acks, "rate.per.s": 500, **producer}], "faults": faults})


def test_a_dead_follower_leaves_the_isr_at_the_first_check_after_replica_lag_time_max_ms():
    r = run([{"at.ms": CRASH, "kind": "crash", "broker": 2, "duration.ms": 20000}])
    shrinks = r.events[r.events.kind == "isr_shrink"]
    # it caught up last just before it crashed (a fetch every few ms); checks run at multiples of LAG / 2
    expected = math.ceil((CRASH + LAG) / (LAG / 2)) * (LAG / 2)
    assert shrinks.time_ms.tolist() == [expected] and shrinks.detail.iloc[0] == "removed [2]; isr now [0, 1]"
    assert shrinks.broker.iloc[0] == 0  # the leader's own decision (its session is far from expired)


def test_the_hw_waits_for_the_dead_follower_until_it_leaves_the_isr_and_moves_at_once():
    r = run([{"at.ms": CRASH, "kind": "crash", "broker": 2, "duration.ms": 20000}])
    shrink = r.events[r.events.kind == "isr_shrink"].time_ms.iloc[0]
    rec = r.records
    after = rec[rec.send_ms > CRASH + 10]  # appended after broker 2's last fetch: it never has them
    assert len(after) > 0 and not (after.visible_ms < shrink).any()  # none committed while 2 was still in the ISR
    assert (rec.visible_ms == shrink).any()  # what the other follower had fetched: committed at the shrink itself
    before = rec[rec.send_ms < CRASH - 100]
    assert (before.visible_ms < CRASH).all()  # with all three live, each committed within the crash's margin


def test_a_new_leader_starts_its_epoch_at_its_log_end_offset():
    # the leader (broker 0) is cut off from everyone; its session expires (4 s), broker 1 is elected; the producer
    # (acks=1; its requests to broker 0 time out after 1.5 s) moves to it
    r = run([{"at.ms": CRASH, "kind": "isolate", "broker": 0, "duration.ms": 20000}], acks=1, session=4000,
            duration=16000, **{"request.timeout.ms": 1500})
    ev = r.events
    election = ev[ev.kind == "leader_election"].iloc[0]
    became = ev[ev.kind == "become_leader"].iloc[0]
    assert became.broker == election.broker == 1 and became.time_ms >= election.time_ms
    epoch = int(re.match(r"clean: epoch (\d+)", election.detail)[1])
    m = re.match(r"epoch (\d+), LEO (\d+), HW (\d+)", became.detail)
    assert int(m[1]) == epoch == 1
    rec = r.records
    written = rec[(rec.ack_ms > became.time_ms) & (rec.offset >= 0)]  # acknowledged by broker 1, and kept
    assert len(written) > 0 and written.offset.min() == int(m[2])  # the epoch's first record lands at that LEO


def test_the_hw_rule_reads_the_isr_as_the_leader_last_set_it():
    # Partition.maybeIncrementLeaderHW: the smallest LEO over the ISR, the leader's own included; a follower out of
    # the ISR does not hold it, and 3.7+ holds it while the ISR is below min.insync.replicas (KAFKA-15583)
    log = Log(1 << 30, [100])
    for offset in range(10):
        log.append(offset, offset + 1, 0, 0, 0.0)
    rep = Replica(0, 0, log)
    rep.is_leader = True
    lead = rep.start_leading(0.0)
    lead.follower(1).log_end_offset, lead.follower(2).log_end_offset = 7, 4
    part = SimpleNamespace(min_isr=2)
    mode = IsrMode([part], None, None)
    lead.set_isr((0, 1, 2))
    assert mode.new_high_watermark(rep) == min(10, 7, 4)
    lead.set_isr((0, 1))  # broker 2 left the ISR
    assert mode.new_high_watermark(rep) == min(10, 7)
    lead.follower(1).log_end_offset = 10  # caught up: the leader's own LEO is the smallest
    assert mode.new_high_watermark(rep) == 10
    lead.set_isr((0, 1, 2))  # broker 2 back, at its old offset
    assert mode.new_high_watermark(rep) == 4
    part.min_isr = 3
    rep.high_watermark = 3
    lead.set_isr((0, 1))
    assert mode.new_high_watermark(rep) == 3  # held below min.insync.replicas
    assert IsrMode([part], None, None, hw_held_below_min_isr=False).new_high_watermark(rep) == 10  # before 3.7
