"""Replication modes: what a write needs, how the HW advances, who keeps an ISR.

One object answers every question whose answer depends on the mode, so a
new variant (a quorum that fsyncs before it counts, say) is one new class:

* ``IsrMode`` (Kafka): the HW is the minimum LEO over the ISR, held while
  the ISR is smaller than min.insync.replicas (3.7+, KAFKA-15583; before,
  it advances and a waiting acks=all request it covers is answered
  NOT_ENOUGH_REPLICAS_AFTER_APPEND); acks=all is refused with
  NOT_ENOUGH_REPLICAS below it; leaders shrink and expand the ISR and the
  controller keeps it; elections pick from it (``elections.partition_change``).
* ``QuorumMode`` (Raft-like): the HW is the LEO a majority has reached, and
  only for entries of the leader's own epoch (which it opens with a control
  record); no ISR; the most up-to-date live replica of a live majority is
  elected; truncation is always by leader epoch. With ``quorum.fsync`` (the
  default, as Raft), every replica fsyncs each append before it counts: a
  follower before it fetches again (so the offset it reports is durable),
  the leader with its flushed offset.
"""

from __future__ import annotations

from ..controller.elections import QuorumElection
from ..state import Partition, Replica


class IsrMode:
    name = "isr"
    durable = False  # replicas count towards the HW from memory (Kafka's ISR does not fsync first)
    keeps_isr = True  # leaders shrink and expand an ISR; the controller stores it; leader_in_isr applies
    opens_epoch_with_marker = False  # a new leader appends a control record first
    preferred_leader_rebalance = True  # auto.leader.rebalance.enable applies
    truncation = None  # a truncation it always uses (None: broker.truncation decides)
    # the HW is the minimum LEO over the ISR and a fetch counts when its follower is in the ISR: a fetch at or below
    # the HW cannot move it (a fetch's caller may skip asking, new_high_watermark's answer would be the HW)
    hw_is_isr_minimum = True

    def __init__(self, partitions: list[Partition], brokers, broker_settings, durable: bool = False,
                 hw_held_below_min_isr: bool = True):
        self.partitions = partitions
        self.brokers = brokers
        self.hw_held = hw_held_below_min_isr  # 3.7+: the HW waits while the ISR is below min.insync.replicas

    def refuses_acks_all(self, rep: Replica) -> bool:
        """NOT_ENOUGH_REPLICAS: the ISR is smaller than min.insync.replicas (checked before the append)."""
        return len(rep.lead.isr) < self.partitions[rep.partition].min_isr

    def fetch_counts(self, rep: Replica, follower: int) -> bool:
        """Does this follower's fetch move the HW (else it may rejoin the ISR)?"""
        return follower in rep.lead.isr

    def append_commits(self, rep: Replica) -> bool:
        """Can an append alone move the HW (no follower must have it first)?"""
        return len(rep.lead.isr) <= 1

    def writable(self, part: Partition, rep: Replica) -> bool:
        """Could the leader's replica take an acks=all write now (the leader itself is sound)?"""
        return len(rep.lead.isr) >= part.min_isr

    def elected(self, part: Partition, replicas: dict, live: set) -> None:
        """A leader was elected: the replicas learn it from LeaderAndIsr alone."""

    def committed_too_few(self, rep: Replica) -> bool:
        """Before 3.7: the HW reached an acks=all request while the ISR is below min.insync.replicas
        (NOT_ENOUGH_REPLICAS_AFTER_APPEND: in the log, but not acknowledged)."""
        return not self.hw_held and len(rep.lead.isr) < self.partitions[rep.partition].min_isr

    def new_high_watermark(self, rep: Replica) -> int:
        """The HW the ISR's LEOs allow (their minimum, the leader's own included); at most the current HW while
        the ISR is below min.insync.replicas (3.7+), asked only when the minimum would move it."""
        lead = rep.lead
        hw = rep.log.log_end_offset
        for fs in lead.isr_followers:
            v = fs.log_end_offset  # (-1: it has reported no offset yet)
            if v < hw:
                hw = v
        if self.hw_held and hw > rep.high_watermark and len(lead.isr) < self.partitions[rep.partition].min_isr:
            return rep.high_watermark
        return hw


class QuorumMode:
    name = "quorum"
    keeps_isr = False
    opens_epoch_with_marker = True  # KRaft-style: the leader's epoch starts with a control record
    preferred_leader_rebalance = False
    truncation = "leader_epoch"
    hw_is_isr_minimum = False  # a majority's LEO, of the leader's epoch (new_high_watermark)

    def __init__(self, partitions: list[Partition], brokers, broker_settings, durable: bool = True,
                 hw_held_below_min_isr: bool = True):
        self.partitions = partitions
        self.brokers = brokers
        self.durable = durable  # quorum.fsync: a replica counts once it fsynced (the leader, its flushed offset)
        self.majority = [len(part.replicas) // 2 + 1 for part in partitions]
        self.election = QuorumElection(self.majority)

    def refuses_acks_all(self, rep: Replica) -> bool:
        return False

    def committed_too_few(self, rep: Replica) -> bool:
        return False

    def fetch_counts(self, rep: Replica, follower: int) -> bool:
        return True

    def append_commits(self, rep: Replica) -> bool:
        return self.majority[rep.partition] <= 1 and not self.durable

    def writable(self, part: Partition, rep: Replica) -> bool:
        brokers = self.brokers
        healthy = sum(1 for b in part.replicas if brokers[b].healthy)
        return healthy >= self.majority[part.index]

    def elected(self, part: Partition, replicas: dict, live: set) -> None:
        """Raft's vote: the live replicas that elected the leader promise its epoch at once (the vote's round
        trips are not timed). Their fetches carry the new epoch from then on, so an old leader that still
        reaches them (cut off from the controller alone) gets no more fetches it may count, and commits nothing
        the new leader lacks. A replica that still leads learns from LeaderAndIsr, as it steps down."""
        epoch = part.leader_epoch
        for r in part.replicas:
            rep = replicas[r]
            if r in live and not rep.is_leader and rep.leader_epoch < epoch:
                rep.leader_epoch = epoch

    def new_high_watermark(self, rep: Replica) -> int:
        part = self.partitions[rep.partition]
        lead = rep.lead
        log = rep.log
        leos = [lead.follower_leo(f) for f in part.replicas if f != rep.broker]
        leos.append(log.flushed_offset if self.durable else log.log_end_offset)
        leos.sort(reverse=True)
        hw = leos[self.majority[rep.partition] - 1]
        if hw <= rep.high_watermark:
            return rep.high_watermark
        # Raft: a leader commits by counting only entries of its own epoch
        i = log.entry_index(hw - 1)
        if i >= log.rows or log.epoch_at(i) != rep.leader_epoch:
            return rep.high_watermark
        return hw


MODES = {"isr": IsrMode, "quorum": QuorumMode}


def make_mode(name: str, partitions, brokers, broker_settings, durable: bool = False, hw_held_below_min_isr: bool = True):
    """`durable`: quorum.fsync (a quorum counts a replica once it fsynced); the ISR never does.
    `hw_held_below_min_isr`: Kafka 3.7+'s HW rule (the ISR mode's)."""
    return MODES[name](partitions, brokers, broker_settings, durable, hw_held_below_min_isr)
