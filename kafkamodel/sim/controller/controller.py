"""The controller: broker liveness, leader elections, ISR metadata.

Two metadata modes, as ``kafka.version`` (and ``kafka.metadata``) choose
(docs/versions.md):

* **ZooKeeper** (up to 3.9). ZooKeeper (node ``CONTROLLER``) never fails;
  the controller *role* runs on a broker (the lowest id at start) and fails
  with it. A broker that stops answering ZooKeeper (crashed, isolated,
  paused, cut from it) loses its session ``zookeeper.session.timeout.ms``
  after it went silent. When the controller's own session expires, the
  lowest-id healthy broker takes the role over and rebuilds its view from
  ZooKeeper (``resync``): it sees which brokers are registered now, not
  which of them restarted meanwhile (no broker incarnation survives a
  failover), so a broker that bounced while no controller watched keeps
  its place in the ISR.
* **KRaft** (3.3+, the only mode from 4.0). The controller quorum (node
  ``CONTROLLER``) holds the role and never fails. A broker heartbeats every
  ``broker.heartbeat.interval.ms``; ``broker.session.timeout.ms`` after its
  last heartbeat it is fenced. From 4.0 (KIP-966) a broker that registers
  after an unclean shutdown (any death of its process: Kafka cannot tell a
  kill from a power cut) leaves every ISR and ELR it is in.

In both, a restarted process cannot register while its old session lives
(ZooKeeper: the old ephemeral znode is still there; KRaft:
DuplicateBrokerRegistrationException), so the restart waits for the expiry
(``faults``) and the controller always sees the failure first.

Whom it elects, with the ISR and ELR that go with it, is
``elections.partition_change`` (ISR mode) or the quorum's vote.
Preferred-replica election (ISR mode): every
``leader.imbalance.check.interval.seconds``, a broker that leads fewer than
(100 - ``leader.imbalance.per.broker.percentage``)% of the partitions it is
preferred for takes them back where it is in the ISR.
"""

from __future__ import annotations

from ..protocol import CONTROLLER
from ..results.measures import (
    BROKER_FAILURE_DETECTED,
    BROKER_REGISTERED,
    CONTROLLER_FAILOVER,
    CONTROLLER_LOST,
    ISR_SHRINK,
    LEADER_ELECTION,
    PARTITION_OFFLINE,
)
from ..state import Partition, Replica
from .elections import UNCLEAN_KINDS, Change, partition_change


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
        kafka = sim.settings.kafka
        self.kraft = kafka.kraft  # KRaft: the role sits in the controller quorum (it never fails); else ZooKeeper
        self.session_timeout_ms = cfg.session_timeout_ms
        self.heartbeat_ms = cfg.heartbeat_interval_ms  # KRaft: expiry counts from the last heartbeat; None: ZooKeeper
        self.elr_enabled = cfg.eligible_leader_replicas_enable and self.mode.keeps_isr
        self.unclean_shutdown_fencing = kafka.unclean_shutdown_fencing and self.mode.keeps_isr
        self.rebalance = cfg.auto_leader_rebalance_enable and self.mode.preferred_leader_rebalance
        self.rebalance_every_ms = cfg.leader_imbalance_check_interval_ms
        self.imbalance = cfg.leader_imbalance_per_broker_percentage / 100.0
        self.live_brokers: set[int] = set(range(len(self.brokers)))  # brokers with a live session, as it saw
        self.broker_epoch = [0] * len(self.brokers)  # broker -> the incarnation it last registered (KIP-380's epoch)
        self.controller_broker = CONTROLLER if self.kraft else 0  # who holds the role: a broker (-1: none can), the quorum
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
        return c == CONTROLLER or (c >= 0 and self.brokers[c].healthy)

    def session_alive(self, b: int) -> bool:
        """Does broker b still hold its session (ZooKeeper's, or its KRaft registration unfenced)?"""
        broker = self.brokers[b]
        # the same time the expiry event was scheduled at, so both agree at that very instant
        return broker.unhealthy_since is None or broker.session_expires > self.kernel.now

    def old_session_until(self, b: int) -> float | None:
        """While a dead broker's old session still lives (until and including its expiry instant), when it
        expires: a new process of it cannot register before (faults holds the restart)."""
        broker = self.brokers[b]
        if broker.unhealthy_since is None or broker.session_expires < self.kernel.now:
            return None
        return broker.session_expires

    def _expiry(self, broker, now: float) -> float:
        """When the session of a broker silent from `now` expires: ZooKeeper counts from the silence; KRaft from
        its last heartbeat (every broker.heartbeat.interval.ms since it became healthy)."""
        if self.heartbeat_ms is None:
            return now + self.session_timeout_ms
        beats = int((now - broker.healthy_since) // self.heartbeat_ms)
        return broker.healthy_since + beats * self.heartbeat_ms + self.session_timeout_ms

    def health_changed(self, b: int) -> None:
        """Call after any change to a broker's up/paused/isolated/cut state."""
        broker = self.brokers[b]
        now = self.kernel.now
        if not broker.healthy and broker.unhealthy_since is None:
            broker.unhealthy_since = now
            broker.episode += 1
            broker.session_expires = self._expiry(broker, now)
            self.kernel.schedule(broker.session_expires, self.session_expired, b, broker.episode)
        elif broker.healthy and broker.unhealthy_since is not None:
            broker.unhealthy_since = None
            broker.healthy_since = now
            broker.episode += 1
            if self.controller_broker == -1:  # ZooKeeper: nobody could hold the role: this broker takes it
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
        alive = {b.id for b in self.brokers if self.session_alive(b.id)}  # registered now: a bounce is not seen
        for b in alive:
            self.broker_epoch[b] = self.brokers[b].incarnation  # the registration it reads is the current process's
        gone = sorted(self.live_brokers - alive)
        self.live_brokers -= set(gone)  # all of them, before any election picks one
        for b in gone:
            self.broker_failed(b, "session expired (seen by the controller on resync)")
        for broker in self.brokers:
            if broker.healthy and broker.id not in self.live_brokers:
                self.handle_registration(broker.id)
        for part in self.partitions:
            if part.leader < 0 or part.leader not in self.live_brokers:
                self.elect_leader(part)
            else:
                self._send(part)
        self.note_availability()

    def broker_failed(self, b: int, why: str) -> None:
        """Broker b's session expired (KRaft: it is fenced): it leaves every ISR; what it led elects anew."""
        self.live_brokers.discard(b)
        self.event(BROKER_FAILURE_DETECTED, -1, b, why)
        for p in self.partitions_of[b]:
            part = self.partitions[p]
            if not self.mode.keeps_isr:
                if part.leader == b:
                    self.elect_leader(part)
            elif b in part.isr or part.leader == b:
                self._apply(part, self._change(part, tuple(r for r in part.isr if r != b), exclude=b),
                            f"controller removed dead broker {b}", b)
        self.note_availability()

    def handle_registration(self, b: int) -> None:
        """Broker b (re)registers: restarted, healed from isolation, or resumed."""
        broker = self.brokers[b]
        if not broker.healthy:
            return
        if not self.active():
            return  # the next controller's resync will see the registration
        live = self.live_brokers
        if broker.unclean_shutdown and self.unclean_shutdown_fencing:
            # KIP-966: after an unclean shutdown its log may miss what it had acknowledged: out of every ISR and ELR
            for p in self.partitions_of[b]:
                part = self.partitions[p]
                if b in part.isr or b in part.elr:
                    self._apply(part, self._change(part, tuple(r for r in part.isr if r != b), exclude=b,
                                                   unclean_shutdown=(b,)),
                                f"broker {b} registered after an unclean shutdown", b)
        self.broker_epoch[b] = broker.incarnation  # the process that registers now
        if b not in live:
            live.add(b)
            self.event(BROKER_REGISTERED, -1, b, "after an unclean shutdown" if broker.unclean_shutdown else "")
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
                      (b, p, part.leader, part.leader_epoch, part.isr, self.broker_epoch[b]))

    def link_healed(self, a: int, b: int) -> None:
        """A cut between brokers a and b healed: if one holds the controller role, it resends the other its state."""
        if not self.active() or b == -1 or a == -1:
            return
        if a == self.controller_broker and b in self.live_brokers:
            self.send_state(b)
        elif b == self.controller_broker and a in self.live_brokers:
            self.send_state(a)

    # ---- elections -------------------------------------------------------------------------------------------------

    def elect_leader(self, part: Partition) -> None:
        """controller_elect_leader: the partition has no live leader; as the mode's election chooses."""
        if self.mode.keeps_isr:
            self._apply(part, self._change(part, part.isr), "")
        else:
            self._apply(part, self.mode.election.choose(part, self.live_brokers, self.replicas[part.index]), "")

    def _change(self, part: Partition, target_isr: tuple, exclude: int = -1, unclean_shutdown: tuple = ()) -> Change:
        """The partition with `target_isr` applied (electing if its leader no longer may lead); `exclude`: a broker
        that may not lead (the one being fenced)."""
        live = self.live_brokers
        return partition_change(part, target_isr, lambda r: r in live and r != exclude, unclean=part.unclean,
                                elr_enabled=self.elr_enabled, min_isr=part.min_isr, unclean_shutdown=unclean_shutdown)

    def _apply(self, part: Partition, change: Change, why: str, broker: int = -1) -> None:
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
            self._send(part)
            return
        replicas = self.replicas[part.index]
        leader, kind = change.leader, change.kind
        at_risk = self._offsets_beyond(part, leader) if kind in UNCLEAN_KINDS else 0
        part.leader = leader
        part.leader_epoch += 1
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

    def _send(self, part: Partition) -> None:
        """LeaderAndIsr to every live replica of the partition."""
        src = self.controller_broker
        for r in part.replicas:
            if r in self.live_brokers:
                self.send(src, r, self.handle_leader_and_isr,
                          (r, part.index, part.leader, part.leader_epoch, part.isr, self.broker_epoch[r]))

    def alter_isr(self, rep: Replica, new_isr: set) -> bool:
        """A leader writes a new ISR to ZooKeeper; refused if it is not the current leader or cannot reach ZooKeeper."""
        part = self.partitions[rep.partition]
        if not self.reachable(rep.broker, CONTROLLER) or part.leader != rep.broker or part.leader_epoch != rep.leader_epoch:
            return False
        live = self.live_brokers
        change = partition_change(part, tuple(r for r in part.replicas if r in new_isr),
                                  lambda r: r == part.leader or r in live, unclean=part.unclean,
                                  elr_enabled=self.elr_enabled, min_isr=part.min_isr)
        part.isr, part.elr, part.last_known_elr = change.isr, change.elr, change.last_known_elr  # the leader stays
        rep.lead.isr = set(part.isr)
        return True

