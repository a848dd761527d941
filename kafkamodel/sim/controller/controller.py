"""The controller: broker liveness, leader elections, ISR metadata.

The same code serves both metadata modes; where ZooKeeper and KRaft differ it
asks the run's mode (``metadata``: who holds the role, what a change costs,
when a session expires, whether a registration starts fenced).

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
  Taking over, it first reads every partition's state
  (``controller.zookeeper.read.ms`` each): until then it does nothing.
* **KRaft** (3.3+, the only mode from 4.0). The controller quorum (node
  ``CONTROLLER``) holds the role. When its active controller dies (a fault
  ``crash`` on ``controller``), a standby, which already holds the state
  (it replays the metadata log), notices after
  ``controller.quorum.fetch.timeout.ms`` without an answer to its fetches,
  wins the election and commits its leadership: no reload, so the pause does
  not grow with the partitions. Meanwhile nothing is decided; the new active
  controller then times every broker's session from its own start
  (BrokerHeartbeatManager is new) and takes the registrations retried to it. A
  broker heartbeats every ``broker.heartbeat.interval.ms``, on its own phase
  (drawn from the seed), so sessions expire in the order the brokers went
  silent; ``broker.session.timeout.ms`` after its last heartbeat it is
  fenced. A broker registers **fenced**; while starting it heartbeats every
  10 ms until it has caught up with the metadata log (its registration
  committed, ``controller.kraft.commit.ms``), then at once asks to be
  unfenced (BrokerLifecycleManager): only then may it lead or join an ISR
  (BrokerHeartbeatManager). From 4.0 (KIP-966) a broker that registers
  after an unclean shutdown (any death of its process: Kafka cannot tell a
  kill from a power cut) leaves every ISR and ELR it is in.

In both, a restarted process cannot register while its old session lives
(ZooKeeper: the old ephemeral znode is still there; KRaft:
DuplicateBrokerRegistrationException), so the restart waits for the expiry
(``faults``) and the controller always sees the failure first.

What it does to partitions when a broker leaves or comes back (elections,
ISR and ELR changes) is ``replication``; the registrations it believes and
its LeaderAndIsr channel to the brokers are ``cluster``.
"""

from __future__ import annotations

from ..protocol import CONTROLLER
from ..results.measures import (BROKER_FAILURE_DETECTED, BROKER_REGISTERED, BROKER_UNFENCED, CONTROLLER_FAILOVER,
                                CONTROLLER_LOST)



class Controller:
    """Broker liveness (sessions, heartbeats, registrations) and, with ZooKeeper, who holds the controller role."""

    MESSAGES = ("handle_registration", "handle_controlled_shutdown")
    TIMERS = ("session_expired", "loaded", "unfence", "quorum_elected")

    def __init__(self, sim, view, replication, channel):
        self.kernel = sim.kernel
        self.send = sim.transport.send
        self.brokers = sim.brokers
        self.partitions = sim.partitions
        self.event = sim.recorder.event
        self.note_availability = sim.availability.note
        self.metadata = sim.metadata  # ZooKeeper or KRaft (controller.metadata)
        self.view = view  # the registrations it believes and who holds the role
        self.live_brokers = view.live_brokers  # the same set, changed in place
        self.replication = replication
        self.channel = channel

    # ---- liveness ---------------------------------------------------------------------------------------------

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

    def health_changed(self, b: int) -> None:
        """Call after any change to a broker's up/paused/isolated/cut state."""
        broker = self.brokers[b]
        now = self.kernel.now
        if not broker.healthy and broker.unhealthy_since is None:
            broker.unhealthy_since = now
            broker.episode += 1
            broker.session_expires = self.metadata.session_expiry(broker, now)
            self.kernel.schedule(broker.session_expires, self.session_expired, b, broker.episode)
        elif broker.healthy and broker.unhealthy_since is not None:
            broker.unhealthy_since = None
            broker.healthy_since = now
            broker.episode += 1
            if self.view.controller_broker == -1:  # ZooKeeper: nobody could hold the role: this broker takes it
                self.failover()
            elif b == self.view.controller_broker:
                # the controller is back within its session: its ZooKeeper watches fire for what it missed
                self.resync()
            # it answers again: it registers (if it was declared dead) and gets the current state
            self.send(b, CONTROLLER, self.handle_registration, (b,))
        self.note_availability()

    def session_expired(self, b: int, episode: int) -> None:
        if self.brokers[b].episode != episode:
            return
        self.view.fenced.discard(b)  # KRaft: a fenced registration lapses too
        if b == self.view.controller_broker:
            self.failover()
        elif self.view.active() and b in self.live_brokers:
            self.broker_failed(b, "session expired")

    def failover(self) -> None:
        """The controller's session is gone: the lowest-id healthy broker takes over from ZooKeeper's state."""
        view = self.view
        old = view.controller_broker
        healthy = [b.id for b in self.brokers if b.healthy and b.id != old]
        if not healthy:
            view.controller_broker = -1
            self.event(CONTROLLER_LOST, -1, old, "no healthy broker can take the controller role")
            return
        view.controller_broker = healthy[0]
        view.epoch += 1
        self.event(CONTROLLER_FAILOVER, -1, healthy[0], f"was {old}")
        view.loading = True  # it reads the registrations, then every partition's state, from ZooKeeper first
        self.kernel.schedule(self.channel.load(), self.loaded, view.epoch, self.registrations())

    def controller_crashed(self) -> int:
        """A fault crashes whoever holds the controller role: ZooKeeper's controller broker (returned: the fault
        crashes it), or KRaft's active controller, whose standby takes over once the quorum has elected it (-1)."""
        return self.metadata.controller_crashed(self)

    def quorum_lost(self, elected: float) -> None:
        """KRaft: the active controller died; nothing is decided until a standby is elected and has committed its
        leadership at `elected`."""
        view = self.view
        view.loading = True
        view.epoch += 1  # what the dead controller had not sent is lost with it
        self.event(CONTROLLER_FAILOVER, -1, -1, "active quorum controller died; the quorum elects a standby")
        self.kernel.schedule(elected, self.quorum_elected, view.epoch)

    def quorum_elected(self, epoch: int) -> None:
        """KRaft: the new active controller holds the metadata log already; a broker still silent now gets a whole
        session from this instant (its heartbeat manager is new), and what waited for a controller happens."""
        view = self.view
        if view.epoch != epoch:
            return
        view.loading = False
        now = self.kernel.now
        for broker in self.brokers:  # ClusterControlManager.activate: every registration touched now
            if broker.unhealthy_since is not None and broker.id in self.live_brokers:
                broker.episode += 1  # the old leader's expiry is void
                broker.session_expires = now + self.metadata.session_timeout_ms
                self.kernel.schedule(broker.session_expires, self.session_expired, broker.id, broker.episode)
        self.resync()

    def loaded(self, epoch: int, registrations: dict) -> None:
        """The new controller has read the cluster's state: it acts on it, with the registrations it read first
        (KafkaController.initializeControllerContext); a broker that registered meanwhile is a new registration."""
        view = self.view
        if view.epoch != epoch:
            return
        view.loading = False
        if view.active():
            self.resync(registrations)

    def registrations(self) -> dict:
        """The brokers registered now (a live session), each with the process that registered."""
        return {b.id: b.incarnation for b in self.brokers if self.session_alive(b.id)}

    def resync(self, registrations: dict | None = None) -> None:
        """controller_resync: read the broker registrations (or act on those read at `registrations`) and partition
        states, and act on what changed."""
        if registrations is None:
            registrations = self.registrations()  # registered now: a bounce is not seen
        alive = set(registrations)
        for b, incarnation in registrations.items():
            self.view.broker_epoch[b] = incarnation  # the registration it reads is that process's
        gone = sorted(self.live_brokers - alive)
        self.live_brokers -= set(gone)  # all of them, before any election picks one
        for b in gone:
            self.broker_failed(b, "session expired (seen by the controller on resync)")
        for broker in self.brokers:
            if broker.healthy and broker.id not in self.live_brokers:
                self.handle_registration(broker.id)
        for part in self.partitions:
            if part.leader < 0 or part.leader not in self.live_brokers:
                self.replication.elect_leader(part)
        for b in sorted(self.live_brokers):  # what it read, to every broker (the changes follow in their batches)
            self.channel.send_state(b)
        self.note_availability()

    def broker_failed(self, b: int, why: str) -> None:
        """Broker b's session expired (KRaft: it is fenced): it leaves every ISR; what it led elects anew."""
        self.live_brokers.discard(b)
        self.view.fenced.discard(b)
        self.event(BROKER_FAILURE_DETECTED, -1, b, why)
        self.replication.fence(b)
        self.note_availability()

    def handle_controlled_shutdown(self, b: int, reply) -> None:
        """A broker asks to shut down: its leaderships move (``replication.controlled_shutdown``); the answer
        (partitions it still leads) goes back to it. Without an active controller nothing moves."""
        if not self.view.active():
            self.send(CONTROLLER, b, reply, (b, -1))
            return
        done, remaining = self.replication.controlled_shutdown(b)  # through the controller's per-partition time
        self.send(CONTROLLER, b, reply, (b, remaining), delay=max(0.0, done - self.kernel.now))

    def session_closed(self, b: int) -> None:
        """Broker b shut down cleanly: its session closes at once (ZooKeeper deletes its znode; KRaft fences it),
        not after a timeout. Call after its process stopped (``health_changed``)."""
        broker = self.brokers[b]
        broker.session_expires = self.kernel.now
        broker.episode += 1  # the expiry scheduled for its silence is void
        if b == self.view.controller_broker:
            self.failover()
        elif self.view.active() and b in self.live_brokers:
            self.broker_failed(b, "shut down")

    def handle_registration(self, b: int) -> None:
        """Broker b (re)registers: restarted, healed from isolation, or resumed."""
        broker = self.brokers[b]
        if not broker.healthy:
            return
        if not self.view.active():
            return  # the next controller's resync will see the registration
        live = self.live_brokers
        self.replication.registered(b, broker.unclean_shutdown)
        self.view.broker_epoch[b] = broker.incarnation  # the process that registers now
        fenced = self.metadata.registers_fenced and b not in live
        if b not in live:
            how = "after an unclean shutdown" if broker.unclean_shutdown else ""
            if fenced:
                how = f"fenced{', ' + how if how else ''}"
                self.view.fenced.add(b)
            else:
                live.add(b)
            self.event(BROKER_REGISTERED, -1, b, how)
        broker.unclean_shutdown = False
        if fenced:  # it replays the metadata log (and follows its partitions); unfenced once caught up
            self.kernel.schedule(self.kernel.now + self.metadata.caught_up_after(), self.unfence, b, broker.episode)
        else:
            self.replication.elect_leaderless(b)
        self.channel.send_state(b)
        self.note_availability()

    def unfence(self, b: int, episode: int) -> None:
        """KRaft: broker b's heartbeat after it caught up with the metadata log: it is unfenced, and may lead."""
        broker = self.brokers[b]
        if broker.episode != episode or not broker.healthy or b in self.live_brokers:
            return
        self.live_brokers.add(b)
        self.view.fenced.discard(b)
        self.event(BROKER_UNFENCED, -1, b, "")
        self.replication.elect_leaderless(b)
        self.note_availability()

    def link_healed(self, a: int, b: int) -> None:
        """A cut between brokers a and b healed: if one holds the controller role, it resends the other its state."""
        if not self.view.active() or b == -1 or a == -1:
            return
        c = self.view.controller_broker
        if a == c and b in self.live_brokers:
            self.channel.send_state(b)
        elif b == c and a in self.live_brokers:
            self.channel.send_state(a)
