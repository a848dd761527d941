"""Faults: ordinary scheduled events. Each docstring says what survives.

A fault's target is a broker id, ``leader:TOPIC-P`` (resolved to the
partition's leader, as the controller has it, when the fault fires),
``rack:NAME`` (every broker with that broker.rack), ``*`` (every broker), or a
list of them hit at the same instant (a zone losing power).
"""

from __future__ import annotations

from ..config.settings import FaultSettings
from .protocol import CLIENT, CONTROLLER
from .results.measures import (
    FAULT_CRASH,
    FAULT_DISK_LOSS,
    FAULT_ISOLATE,
    FAULT_ISOLATE_END,
    FAULT_PAUSE,
    FAULT_POWER_LOSS,
    FAULT_RESTART,
    FAULT_RESUME,
    FAULT_SKIPPED,
    FAULT_SLOW,
    FAULT_SLOW_END,
    LOG_RECOVERY,
)

class FaultInjector:
    """Every scheduled fault: ``fire`` starts one (``START``), ``END`` ends it after its duration.ms."""

    # (a broker fault's steps arrive inside ``fault_step``, an envelope as the transport's are: Simulation.check_handlers)
    TIMERS = ("fire", "fault_restart", "logs_loaded", "fault_end_isolate", "fault_end_pause", "fault_end_slow")

    def __init__(self, sim, *, producer_network, leader, follower, sessions, server, replica_manager, controller,
                 consumer):
        self.kernel = sim.kernel
        self.transport = sim.transport
        self.send = sim.transport.send
        self.brokers = sim.brokers
        self.partitions = sim.partitions
        self.partitions_of = sim.partitions_of
        self.replicas = sim.replicas
        self.topic_first = sim.topic_first
        self.faults = sim.settings.faults
        self.caches = sim.caches  # broker -> its page cache and disk (what the OS has written back)
        self.client_nodes = sim.layout.client_nodes()
        self.event = sim.recorder.event
        self.recorder = sim.recorder
        self.recovery = sim.recovery  # recovery points, and what an unclean start re-reads (storage.recovery)
        self.loading: set[int] = set()  # brokers whose new process is loading (recovering) its logs
        self.producer_network, self.leader, self.follower = producer_network, leader, follower
        self.sessions, self.server = sessions, server
        self.replica_manager, self.controller, self.consumer = replica_manager, controller, consumer
        # each broker fault kind: what starts it, and what ends it after its duration.ms (a restart has no end)
        self.start_of = {"crash": self.fault_crash, "power_loss": self.fault_power_loss, "restart": self.fault_restart,
                         "disk_loss": self.fault_disk_loss, "isolate": self.fault_isolate, "pause": self.fault_pause, "slow": self.fault_slow}
        self.end_of = {"crash": self.fault_restart, "power_loss": self.fault_restart, "disk_loss": self.fault_restart,
                       "isolate": self.fault_end_isolate,
                       "pause": self.fault_end_pause, "slow": self.fault_end_slow}

    def starts(self) -> list[float]:
        """When the broker faults start (``start`` schedules them; the transport expects them)."""
        return [max(f.at_ms, self.kernel.now) for f in self.faults if not f.consumer]

    def start(self) -> None:
        for i, f in enumerate(self.faults):
            if f.consumer:
                self.kernel.schedule(f.at_ms, self.fire, i)
            else:  # (its time is among ``starts``)
                self.kernel.schedule(f.at_ms, self.fault_step, self.fire, (i,))

    def _step_at(self, at: float, action, *args) -> None:
        """A broker fault's next step, action(*args) at `at`: the transport expects it (``Transport.expect``)."""
        at = max(at, self.kernel.now)  # (as Kernel.schedule)
        self.transport.expect(at)
        self.kernel.schedule(at, self.fault_step, action, args)

    def fault_step(self, action, args: tuple) -> None:
        """A broker fault's step: it runs (checked as the transport checks what its envelopes carry), then the
        transport knows it has."""
        check = self.transport.check
        if check is not None:
            check(action)
        action(*args)
        self.transport.arrived()

    def _resolve(self, target) -> int:
        if isinstance(target, int):
            return target
        if target == "controller":  # ZooKeeper: the broker holding the role; KRaft: the quorum's leader (-1 here)
            return self.controller.controller_crashed()
        return self.partitions[self.topic_first[target.topic] + target.partition].leader  # a LeaderTarget

    def fire(self, i: int) -> None:
        f = self.faults[i]
        kind = f.kind
        if f.consumer:
            self._consumer_fault(f)
            return
        resolved = [self._resolve(t) for t in f.targets]  # all resolved first: the faults are simultaneous
        hit = set()
        for target, b in zip(f.targets, resolved):
            if b < 0:
                if target != "controller" or self.controller.metadata.controller_is_broker:  # KRaft's quorum: no broker
                    self.event(FAULT_SKIPPED, -1, -1, f"{kind} {target}: no {target} to target"
                               if target == "controller" else f"{kind} {target}: no leader to target")
                continue
            if b in hit:  # leader:T-P resolved to a broker the list already names
                continue
            hit.add(b)
            self.start_of[kind](b, f)
            if f.duration_ms is not None and kind in self.end_of:
                self._step_at(self.kernel.now + f.duration_ms, self.end_of[kind], b, f)

    def _consumer_fault(self, f: FaultSettings) -> None:
        """consumer_crash (restarts as a new member after duration.ms, if given), consumer_leave, consumer_join,
        consumer_restart (close, then start again after duration.ms)."""
        consumers = self.consumer
        g = consumers.group_by_name(f.group)
        kind = f.kind
        if kind == "consumer_join":
            consumers.join(g)
            return
        if f.member >= len(g.members) or not g.members[f.member].alive:
            self.event(FAULT_SKIPPED, -1, -1, f"{kind} {g.name}[{f.member}]: no such live member")
            return
        m = g.members[f.member]
        if kind == "consumer_crash":
            consumers.crash(g, m, f.duration_ms)
        elif kind == "consumer_restart":
            consumers.close_and_restart(g, m, f.duration_ms)
        else:
            consumers.leave(g, m)

    def _stop_process(self, b: int, clean: bool = False) -> bool:
        """The process is gone: roles, ISR state, waiting requests and fetch sessions with it. A `clean` stop has
        flushed every log and written their recovery points (and the clean-shutdown marker)."""
        broker = self.brokers[b]
        if not broker.up:
            return False
        broker.up = False
        self.transport.refresh()
        broker.incarnation += 1
        broker.deferred.clear()
        now = self.kernel.now
        self.recovery.stopped(b, now, clean)
        for p in self.partitions_of[b]:
            rep = self.replicas[p][b]
            if rep.is_leader:
                self.sessions.resigned(rep)
            rep.stop_leading()
            rep.is_leader = False
            rep.leader = -1
            self.follower.stop_fetching(rep)
            rep.high_watermark = min(rep.hw_checkpoint, rep.log.log_end_offset)
        self.follower.drop_broker(b)
        self.sessions.drop_broker(b)
        self.server.reset(b)
        return True

    def _reset_connections(self, b: int) -> None:
        """The dead process's kernel resets its TCP connections: whoever waits on it hears at once."""
        network = self.producer_network
        for ps in network.states:
            conn = ps.conns[b]
            if conn.inflight:
                self.send(CLIENT, ps.node, network.connection_reset, (ps.index, b, conn.epoch))
        for p in self.partitions_of[b]:
            rep = self.replicas[p][b]
            if rep.is_leader:
                self.leader.release_consumers(rep, CLIENT)
        self.leader.consumer_fetch.reset(b)  # and those parked on its followers (KIP-392)
        self.follower.leader_died(b)

    def fault_crash(self, b: int, f: FaultSettings) -> None:
        """The broker process dies. Its log survives whole (the page cache outlives a
        process); its HW falls back to the last replication-offset-checkpoint. Its
        connections are reset, so clients and followers waiting on it find out at once."""
        if self.brokers[b].up:
            self._reset_connections(b)
        if not self._stop_process(b):
            self.event(FAULT_SKIPPED, -1, b, "crash: already down")
            return
        self.brokers[b].unclean_shutdown = True  # no clean shutdown: Kafka cannot tell it from a power cut (KIP-966)
        self.event(FAULT_CRASH, -1, b, "")
        self.controller.health_changed(b)

    def stop_cleanly(self, b: int) -> bool:
        """A clean shutdown's end (operations): the process stops with its log whole and its HW checkpointed; its
        connections close, so clients and followers find out at once; no unclean shutdown is recorded. The
        caller closes its session (``Controller.session_closed``)."""
        if not self.brokers[b].up:
            return False
        self._reset_connections(b)
        for p in self.partitions_of[b]:  # a clean shutdown writes the replication-offset-checkpoint last
            rep = self.replicas[p][b]
            rep.hw_checkpoint = rep.high_watermark
        self._stop_process(b, clean=True)
        self.controller.health_changed(b)
        return True

    def fault_power_loss(self, b: int, f: FaultSettings) -> None:
        """The machine loses power. What was fsynced (log.flush.interval.*) or written back
        by the OS (past vm.dirty_expire_centisecs or vm.dirty_background_ratio: ``disk``)
        survives; the rest of each log is gone, and the page cache is empty when it comes back.
        The HW checkpoint file is fsynced when written, so it survives (clamped to the log)."""
        self._lose_storage(b, "power_loss", FAULT_POWER_LOSS, "power loss: unflushed log tail gone", "unflushed offsets")

    def fault_disk_loss(self, b: int, f: FaultSettings) -> None:
        """The machine fails and is replaced (duration.ms later) with an empty disk, as an operator brings back a
        broker id on a new machine: every log, the HW checkpoint and the page cache are gone. It truncates
        nothing more when it comes back; as a follower it fetches every partition from the log start offset of
        its leader, and it rejoins the ISR only once caught up. Its old session expires meanwhile, so the
        controller has removed it from every ISR (ZooKeeper and KRaft alike) before it registers again."""
        self._lose_storage(b, "disk_loss", FAULT_DISK_LOSS, "disk loss: the machine came back empty", "offsets")

    def _lose_storage(self, b: int, kind: str, event: str, why: str, what: str) -> None:
        """The process stops and each log keeps only what its disk still holds (power loss: the durable part;
        disk loss: nothing); the page cache is empty afterwards."""
        if not self._stop_process(b):
            self.event(FAULT_SKIPPED, -1, b, f"{kind}: already down")
            return
        now = self.kernel.now
        cache = self.caches[b]
        cutoff = cache.durable_before(now) if kind == "power_loss" else None
        cache.power_loss(now)
        lost = 0
        for p in self.partitions_of[b]:
            rep = self.replicas[p][b]
            keep = rep.log.durable_offset(cutoff) if cutoff is not None else rep.log.log_start_offset
            lost += self.follower.truncate(rep, keep, why)
        self.brokers[b].unclean_shutdown = True
        self.event(event, -1, b, f"{lost} {what} lost")
        self.controller.health_changed(b)

    def fault_restart(self, b: int, f, held_from: float | None = None) -> None:
        """A new process starts on the old disk: log and checkpointed HW, no roles until the controller speaks.
        It loads its logs first (LogManager.loadLogs): after an unclean shutdown (no clean-shutdown marker) it
        recovers what lies past each log's checkpointed recovery point (``storage.recovery``), and only then
        registers. It cannot register while the old process's session lives (ZooKeeper's znode, KRaft's
        registration): it starts once that session has expired."""
        broker = self.brokers[b]
        if broker.up or (held_from is None and b in self.loading):
            self.event(FAULT_SKIPPED, -1, b, "restart: not down" if broker.up else "restart: already starting")
            return
        if held_from is None and broker.unclean_shutdown:
            ms, nbytes, segments = self.recovery.recover(b, self.kernel.now)
            self.loading.add(b)
            self._step_at(self.kernel.now + ms, self.logs_loaded, b, f, ms, nbytes, segments)
            return
        self._register(b, f, held_from)

    def logs_loaded(self, b: int, f, ms: float, nbytes: int, segments: int) -> None:
        """An unclean start's log recovery is over: the broker may register now."""
        self.loading.discard(b)
        self.recorder.recovery_ms.append(ms)
        self.event(LOG_RECOVERY, -1, b, f"{nbytes} bytes in {segments} segments recovered in {ms:g} ms")
        self._register(b, f, None)

    def _register(self, b: int, f, held_from: float | None) -> None:
        broker = self.brokers[b]
        if broker.up:
            return
        until = self.controller.old_session_until(b) if held_from is None else None  # held once: expired by now
        if until is not None:
            self._step_at(until, self.fault_restart, b, f, self.kernel.now if held_from is None else held_from)
            return
        broker.up = True
        self.transport.refresh()
        broker.incarnation += 1
        self.recovery.started_at(b, self.kernel.now)
        self.replica_manager.start_timers(b)
        self.event(FAULT_RESTART, -1, b, "" if held_from is None else
                   f"held from {held_from:g} ms: the old session lived until now")
        self.controller.health_changed(b)

    def _peers(self, f: FaultSettings, b: int) -> list[int]:
        peers = []
        for peer in f.isolate_from:
            if peer == "controller":
                peers.append(CONTROLLER)
            elif peer == "clients":
                peers.extend(self.client_nodes)
            elif peer != b:
                peers.append(peer)
        return peers

    def fault_isolate(self, b: int, f: FaultSettings) -> None:
        """Cut from every other node (or only from the nodes in `from`). State survives
        whole; messages over a cut link are lost. Cut from the controller (ZooKeeper),
        its session lapses as if it were dead."""
        if f.isolate_from is None:
            self.brokers[b].isolated = True
            self.transport.refresh()
            self.event(FAULT_ISOLATE, -1, b, f"for {f.duration_ms:g} ms")
        else:
            for peer in self._peers(f, b):
                self.transport.cut(b, peer)
                if peer == CONTROLLER:
                    self.brokers[b].cut_from_zk += 1
            self.event(FAULT_ISOLATE, -1, b, f"from {f.isolate_from} for {f.duration_ms:g} ms")
        self.controller.health_changed(b)

    def fault_end_isolate(self, b: int, f: FaultSettings) -> None:
        if f.isolate_from is None:
            self.brokers[b].isolated = False
            self.transport.refresh()
        else:
            for peer in self._peers(f, b):
                self.transport.heal(b, peer)
                if peer == CONTROLLER:
                    self.brokers[b].cut_from_zk -= 1
        self.event(FAULT_ISOLATE_END, -1, b, "")
        self.controller.health_changed(b)
        if f.isolate_from is not None:
            for peer in self._peers(f, b):
                if not self.transport.is_cut(b, peer):
                    self.controller.link_healed(b, peer)

    def fault_pause(self, b: int, f: FaultSettings) -> None:
        """A stuck process (GC, disk stall): nothing is lost; messages and timers wait until it resumes."""
        self.brokers[b].paused = True
        self.transport.refresh()
        self.event(FAULT_PAUSE, -1, b, f"for {f.duration_ms:g} ms")
        self.controller.health_changed(b)

    def fault_end_pause(self, b: int, f: FaultSettings) -> None:
        broker = self.brokers[b]
        broker.paused = False
        self.transport.refresh()
        self.event(FAULT_RESUME, -1, b, f"{len(broker.deferred)} held messages and timers run now")
        self.transport.release_held(b)
        self.controller.health_changed(b)

    def fault_slow(self, b: int, f: FaultSettings) -> None:
        """Fetch messages to and from the broker take `factor` times longer; nothing else changes."""
        self.transport.set_slow(b, f.factor)
        self.event(FAULT_SLOW, -1, b, f"x{f.factor:g} for {f.duration_ms:g} ms")

    def fault_end_slow(self, b: int, f: FaultSettings) -> None:
        self.transport.set_slow(b, 1.0)
        self.event(FAULT_SLOW_END, -1, b, "")
