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

from ..protocol import CONTROLLER
from ..results.measures import ISR_SHRINK, LEADER_ELECTION, PARTITION_OFFLINE
from ..state import Partition, Replica
from .elections import UNCLEAN_KINDS, Change, partition_change


class ReplicationControl:
    """Every partition's leader, epoch, ISR and ELR as the controller stores them."""

    MESSAGES = ("handle_recovered", "elect_preferred", "alter_partition_reassignments")
    TIMERS = ("check_preferred_leaders", "complete_reassignment")

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
        self.health_changed = sim.health.changed  # Kafka's partition gauges (results.health)
        self.view = view
        self.live_brokers = view.live_brokers  # the same set, changed in place
        self.send_partition = channel.send_partition
        self.close_batch = channel.close_batch
        self.controller_done = lambda: max(channel.busy_until, self.kernel.now)  # when the controller's thread is free
        # before 1.1 (KAFKA-5642) a controlled shutdown moved partitions one at a time, each its own batch
        self.partition_at_a_time = not sim.settings.kafka.controlled_shutdown_batched
        self.awaiting_leader = sim.recorder.awaiting_leader
        self.metadata = sim.metadata  # ZooKeeper or KRaft (controller.metadata)
        self.send_stop_replica = channel.send_stop_replica
        cfg = sim.settings.broker
        self.elr_enabled = cfg.eligible_leader_replicas_enable and self.mode.keeps_isr
        self.unclean_shutdown_fencing = sim.settings.kafka.unclean_shutdown_fencing and self.mode.keeps_isr
        self.rebalance = cfg.auto_leader_rebalance_enable and self.mode.preferred_leader_rebalance
        self.rebalance_every_ms = cfg.leader_imbalance_check_interval_ms
        self.imbalance = cfg.leader_imbalance_per_broker_percentage / 100.0
        self.kip841 = sim.settings.kafka.kip841
        self.shutting_down: set[int] = set()  # brokers in a controlled shutdown (shuttingDownBrokerIds) until fenced
        self.reassigning: dict[int, tuple] = {}  # partition -> its target replicas, while it moves
        self.reassigned = None  # set by operations: called with a partition once its move completed

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
        self.shutting_down.discard(b)
        led = [p for p in self.partitions_of[b] if self.partitions[p].leader == b]
        for p in led:
            self.awaiting_leader.setdefault(p, died)
            self.leave(self.partitions[p], b)
        self.close_batch()
        for p in self.partitions_of[b]:
            if self.partitions[p].leader != b:
                self.leave(self.partitions[p], b)

    def controlled_shutdown(self, b: int) -> tuple[float, int]:
        """ControlledShutdown from broker b (ZooKeeper's request; KRaft's heartbeat with wantShutDown): what it leads
        moves to another live ISR member, then it leaves the other ISRs. With ZooKeeper the partitions it follows
        get StopReplica (without delete) first, so it stops fetching them and cannot rejoin their ISRs before it
        stops (KafkaController.doControlledShutdown); a partition it led, it follows from the new leader's
        LeaderAndIsr on and may rejoin, as in Kafka. A partition whose ISR has no other live
        member stays led by it (Kafka cannot move it: the answer's partitionsRemaining). Before 1.1 the ZooKeeper
        controller moved one partition at a time, each its own write and its own LeaderAndIsr
        (KafkaController.shutdownBroker); from 1.1 (KAFKA-5642) and in KRaft, two batches. Returns when the
        controller is done with it (its answer to the broker) and how many partitions b still leads."""
        one_by_one = self.partition_at_a_time
        why = f"controlled shutdown of broker {b}"
        remaining = 0
        self.shutting_down.add(b)
        if self.mode.keeps_isr:
            led = [p for p in self.partitions_of[b] if self.partitions[p].leader == b]
            followed = [p for p in self.partitions_of[b] if self.partitions[p].leader != b]
            for p in led:
                part = self.partitions[p]
                if not any(r != b and r in self.live_brokers for r in part.isr):
                    remaining += 1
                    continue
                self.leave(part, b, why)
                if one_by_one:
                    self.close_batch()
            self.close_batch()
            # ZooKeeper: one request, once the leaderships are written
            if self.metadata.stop_replica_on_shutdown and not one_by_one and followed:
                self.send_stop_replica(b, tuple(followed), delete=False, at=self.controller_done())
            for p in followed:
                if one_by_one:  # its own request, when the controller's thread gets to the partition
                    self.send_stop_replica(b, (p,), delete=False, at=self.controller_done())
                self.leave(self.partitions[p], b, why)
                if one_by_one:
                    self.close_batch()
            self.close_batch()
            self.note_availability()
        return self.controller_done(), remaining

    def leave(self, part: Partition, b: int, why: str = "") -> None:
        """Broker b leaves the partition's ISR (the controller fences it, or it shuts down): a new leader if it led."""
        if not self.mode.keeps_isr:
            if part.leader == b:
                self.elect_leader(part)
        elif b in part.isr or part.leader == b:
            self.apply(part, self.change(part, tuple(r for r in part.isr if r != b), exclude=b),
                       why or f"controller removed dead broker {b}", b)

    def registered(self, b: int, unclean_shutdown: bool) -> None:
        """Broker b registers. KIP-966: after an unclean shutdown its log may miss what it had acknowledged:
        it leaves every ISR and ELR."""
        self.shutting_down.discard(b)
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
            self.health_changed(part)
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
        # KIP-704 (KRaft): RECOVERING until the leader reports back
        part.recovering = self.metadata.recovering_after_unclean and kind in UNCLEAN_KINDS
        self.mode.elected(part, replicas, self.live_brokers)
        part.isr = change.isr
        self.health_changed(part)
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
            self.elect_preferred([part.index for part in elsewhere])
        self.note_availability()

    def elect_preferred(self, indices) -> None:
        """Preferred-replica election (ElectLeaders with PREFERRED, as kafka-leader-election and the automatic
        rebalance ask it): each partition whose preferred replica is live, healthy and in its ISR is led by it."""
        for i in indices:
            part = self.partitions[i]
            b = part.replicas[0]
            if part.leader != b and b in part.isr and b in self.live_brokers and self.brokers[b].healthy:
                self.apply(part, self.change(part, part.isr, preferred=True), "")
        self.note_availability()

    # ---- reassignment -----------------------------------------------------------------------------------------------

    def alter_partition_reassignments(self, moves: list) -> None:
        """AlterPartitionReassignments: each (partition, target replicas) moves in Kafka's steps. Its replicas
        become the target followed by the old ones it drops (AddingReplicas: target - old; RemovingReplicas:
        old - target); the new replicas hear LeaderAndIsr and fetch from the leader; once every target replica
        is in the ISR, ``complete_reassignment``. The brokers have the new replicas' (empty) logs already."""
        for p, target in moves:
            part = self.partitions[p]
            self.reassigning[p] = target
            part.replicas = tuple(dict.fromkeys((*target, *part.replicas)))
            part.min_isr = part.config.min_isr_for(len(part.replicas))  # 3.7+: effectiveMinIsr follows the replicas
            self.health_changed(part)
            self.send_partition(part)
            self.reassignment_progress(part)

    def reassignment_progress(self, part: Partition) -> None:
        target = self.reassigning.get(part.index)
        if target is not None and all(r in part.isr for r in target):
            self.kernel.schedule(self.kernel.now, self.complete_reassignment, part.index)

    def complete_reassignment(self, p: int) -> None:
        """Every target replica is in the ISR: the replicas become the target, the leader moves to the first live
        target ISR member if it is not one, the ISR drops the removed replicas, which get StopReplica."""
        part = self.partitions[p]
        target = self.reassigning.get(p)
        if target is None or not all(r in part.isr for r in target):
            return
        del self.reassigning[p]
        removing = [r for r in part.replicas if r not in target]
        part.replicas = target
        part.min_isr = part.config.min_isr_for(len(target))  # 3.7+ capped by the replicas left; before, as set
        self.apply(part, self.change(part, tuple(r for r in part.isr if r in target)), "reassignment completed")
        self.health_changed(part)
        for r in removing:
            self.partitions_of[r].remove(p)
            if r in self.live_brokers:
                self.send_stop_replica(r, (p,))
        self.note_availability()
        if self.reassigned is not None:
            self.reassigned(p)

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
        RECOVERING (KIP-704); in KRaft (KIP-841) and with ZooKeeper from 3.4 (KAFKA-14140), if it adds a broker the
        controller does not count live: fenced or offline, or in a controlled shutdown (INELIGIBLE_REPLICA; Kafka
        checks the whole new ISR, the model the brokers it adds)."""
        part = self.partitions[rep.partition]
        if not self.reachable(rep.broker, CONTROLLER) or part.leader != rep.broker or part.leader_epoch != rep.leader_epoch:
            return False
        live = self.live_brokers
        added = new_isr.difference(part.isr)
        if added and (part.recovering or  # KIP-704 RECOVERING (KRaft)
                      (self.kip841 and not (added <= live and self.shutting_down.isdisjoint(added)))):
            return False  # KIP-841, KAFKA-14140: a fenced, offline or shutting-down broker may not join an ISR
        change = partition_change(part, tuple(r for r in part.replicas if r in new_isr),
                                  lambda r: r == part.leader or r in live, unclean=part.unclean,
                                  elr_enabled=self.elr_enabled, min_isr=part.min_isr)
        part.isr, part.elr, part.last_known_elr = change.isr, change.elr, change.last_known_elr  # the leader stays
        rep.lead.set_isr(part.isr)
        self.health_changed(part)
        if self.reassigning:
            self.reassignment_progress(part)
        return True
