"""Partition state changes (Kafka's ReplicationControlManager): leader elections, ISR and ELR changes, the
preferred-leader rebalance, and AlterPartition from leaders.

Whom it elects, with the ISR and ELR that go with it, is
``elections.partition_change`` (ISR mode) or the quorum's vote. Every change
is stored by ``apply``: a new leader (or none) is a new leader epoch, and the
replicas hear it by LeaderAndIsr (``cluster.ControllerChannel``).
Preferred-replica election (ISR mode): every
``leader.imbalance.check.interval.seconds``, a broker that leads fewer than
(100 - ``leader.imbalance.per.broker.percentage``)% of the partitions it is
preferred for takes them back where it is in the ISR, by the same
``partition_change`` (Kafka's PartitionChangeBuilder with Election.PREFERRED),
so the election bumps the epoch, updates the ELR and clears the last known
leader as any other does.
"""

from __future__ import annotations

from ...config.versions import at_least
from ..protocol import CONTROLLER
from ..results.measures import ISR_SHRINK, LEADER_ELECTION, PARTITION_OFFLINE
from ..state import Partition, Replica
from .elections import UNCLEAN_KINDS, Change, partition_change


class ReplicationControl:
    """Every partition's leader, epoch, ISR and ELR as the controller stores them."""

    MESSAGES = ("handle_recovered",)
    TIMERS = ("check_preferred_leaders",)

    def __init__(self, sim, view, channel):
        self.kernel = sim.kernel
        self.reachable = sim.transport.reachable
        self.brokers = sim.brokers
        self.partitions = sim.partitions
        self.partitions_of = sim.partitions_of
        self.replicas = sim.replicas
        self.mode = sim.mode
        self.counters = sim.recorder.counters
        self.event = sim.recorder.event
        self.note_availability = sim.availability.note
        self.view = view
        self.live_brokers = view.live_brokers  # the same set, changed in place
        self.send_partition = channel.send_partition
        self.close_batch = channel.close_batch
        self.controller_done = lambda: max(channel.busy_until, self.kernel.now)  # when the controller's thread is free
        # before 1.1 (KAFKA-5642) a controlled shutdown moved partitions one at a time, each its own batch
        self.partition_at_a_time = not sim.settings.kafka.kraft and not at_least(sim.settings.kafka.version, "1.1")
        self.awaiting_leader = sim.recorder.awaiting_leader
        self.kraft = sim.settings.kafka.kraft
        cfg = sim.settings.broker
        self.elr_enabled = cfg.eligible_leader_replicas_enable and self.mode.keeps_isr
        self.unclean_shutdown_fencing = sim.settings.kafka.unclean_shutdown_fencing and self.mode.keeps_isr
        self.rebalance = cfg.auto_leader_rebalance_enable and self.mode.preferred_leader_rebalance
        self.rebalance_every_ms = cfg.leader_imbalance_check_interval_ms
        self.imbalance = cfg.leader_imbalance_per_broker_percentage / 100.0

    def start(self) -> None:
        if self.rebalance:
            every = self.rebalance_every_ms
            self.kernel.schedule(every, self.check_preferred_leaders, every)

    # ---- a broker leaves or comes back --------------------------------------------------------------------

    def fence(self, b: int) -> None:
        """Broker b's session expired (KRaft: it is fenced): what it led elects anew, then it leaves every other
        ISR: two batches, as Kafka's onBrokerFailure (OnlinePartition, then OfflineReplica) does."""
        died = self.brokers[b].unhealthy_since
        died = self.kernel.now if died is None else died
        led = [p for p in self.partitions_of[b] if self.partitions[p].leader == b]
        for p in led:
            self.awaiting_leader.setdefault(p, died)
            self.leave(self.partitions[p], b)
        self.close_batch()
        for p in self.partitions_of[b]:
            if self.partitions[p].leader != b:
                self.leave(self.partitions[p], b)

    def controlled_shutdown(self, b: int) -> float:
        """ControlledShutdown from broker b: what it leads moves to another ISR member, then it leaves the other
        ISRs. Before 1.1 the ZooKeeper controller moved one partition at a time, each its own write and its own
        LeaderAndIsr (KafkaController.shutdownBroker); from 1.1 (KAFKA-5642) and in KRaft, two batches. Returns
        when the controller is done with it (its answer to the broker)."""
        one_by_one = self.partition_at_a_time
        led = [p for p in self.partitions_of[b] if self.partitions[p].leader == b]
        for p in led:
            self.leave(self.partitions[p], b)
            if one_by_one:
                self.close_batch()
        self.close_batch()
        for p in self.partitions_of[b]:
            if self.partitions[p].leader != b:
                self.leave(self.partitions[p], b)
                if one_by_one:
                    self.close_batch()
        self.close_batch()
        return self.controller_done()

    def leave(self, part: Partition, b: int) -> None:
        """Broker b leaves the partition's ISR (the controller fences it, or it shuts down): a new leader if it led."""
        if not self.mode.keeps_isr:
            if part.leader == b:
                self.elect_leader(part)
        elif b in part.isr or part.leader == b:
            self.apply(part, self.change(part, tuple(r for r in part.isr if r != b), exclude=b),
                       f"controller removed dead broker {b}", b)

    def registered(self, b: int, unclean_shutdown: bool) -> None:
        """Broker b registers. KIP-966: after an unclean shutdown its log may miss what it had acknowledged:
        it leaves every ISR and ELR."""
        if not (unclean_shutdown and self.unclean_shutdown_fencing):
            return
        for p in self.partitions_of[b]:
            part = self.partitions[p]
            if b in part.isr or b in part.elr:
                self.apply(part, self.change(part, tuple(r for r in part.isr if r != b), exclude=b,
                                             unclean_shutdown=(b,)),
                           f"broker {b} registered after an unclean shutdown", b)

    def elect_leaderless(self, b: int) -> None:
        """Partitions of broker b that have no leader try an election (b may lead them now)."""
        for p in self.partitions_of[b]:
            part = self.partitions[p]
            if part.leader < 0:
                self.elect_leader(part)

    # ---- elections -------------------------------------------------------------------------------------------------

    def elect_leader(self, part: Partition) -> None:
        """controller_elect_leader: the partition has no live leader; as the mode's election chooses."""
        if self.mode.keeps_isr:
            self.apply(part, self.change(part, part.isr), "")
        else:
            self.apply(part, self.mode.election.choose(part, self.live_brokers, self.replicas[part.index]), "")

    def change(self, part: Partition, target_isr: tuple, exclude: int = -1, unclean_shutdown: tuple = (),
               preferred: bool = False) -> Change:
        """The partition with `target_isr` applied (electing if its leader no longer may lead, or the preferred
        replica if `preferred` and it may); `exclude`: a broker that may not lead (the one being fenced)."""
        live = self.live_brokers
        return partition_change(part, target_isr, lambda r: r in live and r != exclude, unclean=part.unclean,
                                elr_enabled=self.elr_enabled, min_isr=part.min_isr, unclean_shutdown=unclean_shutdown,
                                preferred=preferred)

    def apply(self, part: Partition, change: Change, why: str, broker: int = -1) -> None:
        """Store a partition change; a new leader (or none) is a new leader epoch; LeaderAndIsr to the replicas.
        `why`, `broker`: what an ISR shrink alone is put down to, and which broker it removed."""
        old, old_isr = part.leader, part.isr
        part.elr, part.last_known_elr = change.elr, change.last_known_elr
        if change.leader == old:
            if change.isr == old_isr:
                return
            part.isr = change.isr
            if len(change.isr) < len(old_isr):
                self.counters.isr_shrinks += 1
                self.event(ISR_SHRINK, part.index, broker, f"{why}; isr now {list(part.isr)}")
            self.send_partition(part)
            return
        replicas = self.replicas[part.index]
        leader, kind = change.leader, change.kind
        at_risk = self._offsets_beyond(part, leader) if kind in UNCLEAN_KINDS else 0
        part.leader = leader
        part.leader_epoch += 1
        part.recovering = self.kraft and kind in UNCLEAN_KINDS  # KIP-704: RECOVERING until the leader reports back
        self.mode.elected(part, replicas, self.live_brokers)
        part.isr = change.isr
        if leader < 0:
            self.event(PARTITION_OFFLINE, part.index, old, f"no eligible replica; isr {list(part.isr)}")
        else:
            part.last_leader = leader
            self.counters.leader_elections += 1
            if kind in UNCLEAN_KINDS:
                self.counters.unclean_leader_elections += 1
            detail = f"{kind}: epoch {part.leader_epoch}, isr {list(part.isr)}, was {old}"
            if at_risk:
                detail += f"; {at_risk} offsets other replicas hold beyond its log end are lost"
            self.event(LEADER_ELECTION, part.index, leader, detail)
        self.send_partition(part)

    def _offsets_beyond(self, part: Partition, leader: int) -> int:
        reps = self.replicas[part.index]
        return max(reps[r].log.log_end_offset for r in part.replicas) - reps[leader].log.log_end_offset

    def check_preferred_leaders(self, every: float) -> None:
        """auto.leader.rebalance.enable: move leadership back to preferred replicas."""
        self.kernel.schedule(self.kernel.now + every, self.check_preferred_leaders, every)
        if not self.view.active():
            return
        for b in sorted(self.live_brokers):
            preferred = [part for part in self.partitions if part.replicas[0] == b]
            elsewhere = [part for part in preferred if part.leader != b]
            if not preferred or len(elsewhere) / len(preferred) <= self.imbalance:
                continue
            for part in elsewhere:
                if b in part.isr and self.brokers[b].healthy:
                    self.apply(part, self.change(part, part.isr, preferred=True), "")
        self.note_availability()

    # ---- AlterPartition ------------------------------------------------------------------------------------------------

    def handle_recovered(self, p: int, epoch: int) -> None:
        """AlterPartition with LeaderRecoveryState RECOVERED (KIP-704) from the leader of `epoch`: ISR growth is
        allowed again."""
        part = self.partitions[p]
        if part.leader_epoch == epoch:
            part.recovering = False

    def alter_isr(self, rep: Replica, new_isr: set) -> bool:
        """A leader writes a new ISR to ZooKeeper (KRaft: AlterPartition to the controller); refused if it is not
        the current leader or cannot reach ZooKeeper; in KRaft, a growth is refused while the partition is
        RECOVERING (KIP-704) or if it adds a fenced broker (ReplicationControlManager: INELIGIBLE_REPLICA)."""
        part = self.partitions[rep.partition]
        if not self.reachable(rep.broker, CONTROLLER) or part.leader != rep.broker or part.leader_epoch != rep.leader_epoch:
            return False
        live = self.live_brokers
        added = new_isr.difference(part.isr)
        if self.kraft and added and (part.recovering or not added <= live):
            return False
        change = partition_change(part, tuple(r for r in part.replicas if r in new_isr),
                                  lambda r: r == part.leader or r in live, unclean=part.unclean,
                                  elr_enabled=self.elr_enabled, min_isr=part.min_isr)
        part.isr, part.elr, part.last_known_elr = change.isr, change.elr, change.last_known_elr  # the leader stays
        rep.lead.isr = set(part.isr)
        return True
