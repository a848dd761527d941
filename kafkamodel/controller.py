"""The controller: broker liveness, leader elections, ISR metadata.

ZooKeeper (node ``CONTROLLER``) never fails; the controller *role* runs on a
broker (the lowest id at start) and fails with it. A broker that stops
answering ZooKeeper (crashed, isolated, paused, cut from it) loses its
session ``zookeeper.session.timeout.ms`` after it went silent; a broker that
comes back registers again. When the controller's own session expires, the
lowest-id healthy broker takes the role over and rebuilds its view from
ZooKeeper (``controller_resync``): nothing the old controller knew is lost.

Whom it elects is the replication mode's election policy (``elections``).
Preferred-replica election (ISR mode): every
``leader.imbalance.check.interval.seconds``, a broker that leads fewer than
(100 - ``leader.imbalance.per.broker.percentage``)% of the partitions it is
preferred for takes them back where it is in the ISR.
"""

from __future__ import annotations

from .measures import (BROKER_FAILURE_DETECTED, BROKER_REGISTERED, CONTROLLER_FAILOVER, CONTROLLER_LOST, ISR_SHRINK,
                       LEADER_ELECTION, PARTITION_OFFLINE)
from .protocol import CONTROLLER
from .state import Partition, Replica


class Controller:
    MESSAGES = ("handle_registration",)

    def __init__(self, sim):
        self.kernel = sim.kernel
        self.send = sim.transport.send
        self.reachable = sim.transport.reachable
        self.brokers = sim.brokers
        self.partitions = sim.partitions
        self.partitions_of = sim.partitions_of
        self.replicas = sim.replicas
        self.mode = sim.mode
        self.counters = sim.recorder.counters
        self.event = sim.recorder.event
        self.note_availability = sim.availability.note
        cfg = sim.settings.broker
        self.session_timeout_ms = cfg.zookeeper_session_timeout_ms
        self.elr_enabled = cfg.eligible_leader_replicas_enable
        self.rebalance = cfg.auto_leader_rebalance_enable and self.mode.preferred_leader_rebalance
        self.rebalance_every_ms = cfg.leader_imbalance_check_interval_ms
        self.imbalance = cfg.leader_imbalance_per_broker_percentage / 100.0
        self.live_brokers: set[int] = set(range(len(self.brokers)))  # brokers with a live session, as it saw
        self.controller_broker = 0  # the broker holding the controller role (-1: none can)
        self.handle_leader_and_isr = None  # wired: the brokers' LeaderAndIsr handler

    def wire(self, replica_manager) -> None:
        self.handle_leader_and_isr = replica_manager.handle_leader_and_isr

    def start(self) -> None:
        if self.rebalance:
            every = self.rebalance_every_ms
            self.kernel.schedule(every, self.check_preferred_leaders, every)

    # ---- liveness ---------------------------------------------------------------------------------------------

    def active(self) -> bool:
        c = self.controller_broker
        return c >= 0 and self.brokers[c].healthy

    def session_alive(self, b: int) -> bool:
        """Does ZooKeeper still hold broker b's session?"""
        since = self.brokers[b].unhealthy_since
        # the same sum the expiry event was scheduled at, so both agree at that very instant
        return since is None or since + self.session_timeout_ms > self.kernel.now

    def health_changed(self, b: int) -> None:
        """Call after any change to a broker's up/paused/isolated/cut state."""
        broker = self.brokers[b]
        now = self.kernel.now
        if not broker.healthy and broker.unhealthy_since is None:
            broker.unhealthy_since = now
            broker.episode += 1
            self.kernel.schedule(now + self.session_timeout_ms, self.session_expired, b, broker.episode)
        elif broker.healthy and broker.unhealthy_since is not None:
            broker.unhealthy_since = None
            broker.episode += 1
            if self.controller_broker < 0:  # nobody could hold the role: this broker takes it
                self.failover()
            elif b == self.controller_broker:
                # the controller is back within its session: its ZooKeeper watches fire for what it missed
                self.resync()
            # it answers again: it registers (if it was declared dead) and gets the current state
            self.send(b, CONTROLLER, self.handle_registration, (b,))
        self.note_availability()

    def session_expired(self, b: int, episode: int) -> None:
        if self.brokers[b].episode != episode:
            return
        if b == self.controller_broker:
            self.failover()
        elif self.active() and b in self.live_brokers:
            self.broker_failed(b, "session expired")

    def failover(self) -> None:
        """The controller's session is gone: the lowest-id healthy broker takes over from ZooKeeper's state."""
        old = self.controller_broker
        healthy = [b.id for b in self.brokers if b.healthy and b.id != old]
        if not healthy:
            self.controller_broker = -1
            self.event(CONTROLLER_LOST, -1, old, "no healthy broker can take the controller role")
            return
        self.controller_broker = healthy[0]
        self.event(CONTROLLER_FAILOVER, -1, healthy[0], f"was {old}")
        self.resync()

    def resync(self) -> None:
        """controller_resync: read the broker registrations and partition states, and act on what changed."""
        alive = {b.id for b in self.brokers if self.session_alive(b.id) and not b.restarted}
        gone = sorted(self.live_brokers - alive)
        self.live_brokers -= set(gone)  # all of them, before any election picks one
        for b in gone:
            why = "restarted" if self.brokers[b].restarted else "session expired"
            self.broker_failed(b, f"{why} (seen by the controller on resync)")
        for broker in self.brokers:
            if broker.healthy and (broker.id not in self.live_brokers or broker.restarted):
                broker.restarted = False  # fenced above if it bounced; now it registers as new
                self.handle_registration(broker.id)
        for part in self.partitions:
            if part.leader < 0 or part.leader not in self.live_brokers:
                self.elect_leader(part)
            else:
                self._send(part)
        self.note_availability()

    def broker_failed(self, b: int, why: str) -> None:
        self.live_brokers.discard(b)
        self.event(BROKER_FAILURE_DETECTED, -1, b, why)
        for p in self.partitions_of[b]:
            part = self.partitions[p]
            if part.leader == b:
                self.elect_leader(part)
            elif self.mode.keeps_isr and b in part.isr and len(part.isr) > 1:
                self._set_isr(part, tuple(r for r in part.isr if r != b))
                self.event(ISR_SHRINK, p, b, f"controller removed dead broker {b}; isr now {list(part.isr)}")
                self.counters.isr_shrinks += 1
                self._send(part)
        self.note_availability()

    def handle_registration(self, b: int) -> None:
        """Broker b (re)registers: restarted, healed from isolation, or resumed."""
        broker = self.brokers[b]
        if not broker.healthy:
            return
        if not self.active():
            return  # the next controller's resync will see the registration
        live = self.live_brokers
        if b in live and broker.restarted:
            # a restart faster than the session timeout: the new process fences the old one
            self.broker_failed(b, "restarted before its session expired")
        broker.restarted = False
        if b not in live:
            live.add(b)
            self.event(BROKER_REGISTERED, -1, b, "after an unclean shutdown" if broker.unclean_shutdown else "")
        if broker.unclean_shutdown and self.elr_enabled:
            # KIP-966: a replica that lost power may miss acknowledged data; it is no longer electable as in sync
            for p in self.partitions_of[b]:
                part = self.partitions[p]
                if b in part.isr and part.leader != b:
                    self._set_isr(part, tuple(r for r in part.isr if r != b))
                part.elr = tuple(r for r in part.elr if r != b)
        broker.unclean_shutdown = False
        for p in self.partitions_of[b]:
            part = self.partitions[p]
            if part.leader < 0:
                self.elect_leader(part)
        self.send_state(b)
        self.note_availability()

    def send_state(self, b: int) -> None:
        """LeaderAndIsr for every partition broker b holds (the controller's channel resends on reconnect)."""
        for p in self.partitions_of[b]:
            part = self.partitions[p]
            self.send(self.controller_broker, b, self.handle_leader_and_isr,
                      (b, p, part.leader, part.leader_epoch, part.isr))

    def link_healed(self, a: int, b: int) -> None:
        """A cut between brokers a and b healed: if one holds the controller role, it resends the other its state."""
        if not self.active() or b < 0 or a < 0:
            return
        if a == self.controller_broker and b in self.live_brokers:
            self.send_state(b)
        elif b == self.controller_broker and a in self.live_brokers:
            self.send_state(a)

    # ---- elections -------------------------------------------------------------------------------------------------

    def elect_leader(self, part: Partition) -> None:
        """controller_elect_leader: as the mode's election policy chooses."""
        replicas = self.replicas[part.index]
        leader, isr, kind = self.mode.election.choose(part, self.live_brokers, replicas)
        old = part.leader
        if leader < 0 and old < 0:
            return  # still offline: nothing changes, no new epoch
        at_risk = self._offsets_beyond(part, leader) if kind == "unclean" else 0
        part.leader = leader
        part.leader_epoch += 1
        self.mode.elected(part, replicas, self.live_brokers)
        if self.mode.keeps_isr:
            self._set_isr(part, isr)
        else:
            part.isr = isr
        if leader < 0:
            self.event(PARTITION_OFFLINE, part.index, old, f"no eligible replica; isr {list(isr)}")
        else:
            part.last_leader = leader
            self.counters.leader_elections += 1
            if kind == "unclean":
                self.counters.unclean_leader_elections += 1
            detail = f"{kind}: epoch {part.leader_epoch}, isr {list(part.isr)}, was {old}"
            if at_risk:
                detail += f"; {at_risk} offsets other replicas hold beyond its log end are lost"
            self.event(LEADER_ELECTION, part.index, leader, detail)
        self._send(part)

    def _offsets_beyond(self, part: Partition, leader: int) -> int:
        reps = self.replicas[part.index]
        return max(reps[r].log.log_end_offset for r in part.replicas) - reps[leader].log.log_end_offset

    def check_preferred_leaders(self, every: float) -> None:
        """auto.leader.rebalance.enable: move leadership back to preferred replicas."""
        self.kernel.schedule(self.kernel.now + every, self.check_preferred_leaders, every)
        if not self.active():
            return
        for b in sorted(self.live_brokers):
            preferred = [part for part in self.partitions if part.replicas[0] == b]
            elsewhere = [part for part in preferred if part.leader != b]
            if not preferred or len(elsewhere) / len(preferred) <= self.imbalance:
                continue
            for part in elsewhere:
                if b in part.isr and self.brokers[b].healthy:
                    old = part.leader
                    part.leader = b
                    part.leader_epoch += 1
                    part.last_leader = b
                    self.counters.leader_elections += 1
                    self.event(LEADER_ELECTION, part.index, b, f"preferred: epoch {part.leader_epoch}, was {old}")
                    self._send(part)
        self.note_availability()

    # ---- ISR metadata ------------------------------------------------------------------------------------------------

    def _set_isr(self, part: Partition, new_isr: tuple) -> None:
        """Store a new ISR; with ELR, members removed while it is below min.insync.replicas stay electable."""
        old = part.isr
        part.isr = new_isr
        if self.elr_enabled:
            if len(new_isr) < part.min_isr:
                part.elr = tuple(r for r in part.replicas if (r in part.elr or r in old) and r not in new_isr)
            else:
                part.elr = ()

    def _send(self, part: Partition) -> None:
        """LeaderAndIsr to every live replica of the partition."""
        src = self.controller_broker
        for r in part.replicas:
            if r in self.live_brokers:
                self.send(src, r, self.handle_leader_and_isr, (r, part.index, part.leader, part.leader_epoch, part.isr))

    def alter_isr(self, rep: Replica, new_isr: set) -> bool:
        """A leader writes a new ISR to ZooKeeper; refused if it is not the current leader or cannot reach ZooKeeper."""
        part = self.partitions[rep.partition]
        if not self.reachable(rep.broker, CONTROLLER) or part.leader != rep.broker or part.leader_epoch != rep.leader_epoch:
            return False
        self._set_isr(part, tuple(r for r in part.replicas if r in new_isr))
        rep.lead.isr = set(part.isr)
        return True
