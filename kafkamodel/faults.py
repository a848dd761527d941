"""Faults: ordinary scheduled events. Each docstring says what survives.

A fault's target is a broker id, ``leader:TOPIC-P`` (resolved to the
partition's leader, as the controller has it, when the fault fires), or a
list of them hit at the same instant (a rack losing power).
"""

from __future__ import annotations

import re

CLIENT, CONTROLLER = -1, -2

_LEADER = re.compile(r"^leader:(?P<topic>.+)-(?P<partition>\d+)$")


class FaultActor:
    def init_faults(self) -> None:
        self.faults = [dict(f) for f in self.scenario["faults"]]

    def start_faults(self) -> None:
        for i, f in enumerate(self.faults):
            self.kernel.schedule(float(f["at.ms"]), self._fault_fire, i)

    def _resolve(self, target) -> int:
        if isinstance(target, int):
            return target
        m = _LEADER.match(target)
        return self.partitions[self.topic_first[m["topic"]] + int(m["partition"])].leader

    def _fault_fire(self, i: int) -> None:
        f = self.faults[i]
        kind = f["kind"]
        if kind.startswith("consumer_"):
            self._consumer_fault(f)
            return
        targets = f["broker"] if isinstance(f["broker"], (list, tuple)) else [f["broker"]]
        resolved = [self._resolve(t) for t in targets]  # all resolved first: the faults are simultaneous
        for target, b in zip(targets, resolved):
            if b < 0:
                self.event("fault_skipped", -1, -1, f"{kind} {target}: no leader to target")
                continue
            getattr(self, f"fault_{kind}")(b, f)
            if f["duration.ms"] is not None and kind != "restart":
                self.kernel.schedule(self.kernel.now + float(f["duration.ms"]), getattr(self, f"fault_end_{kind}"), b, f)

    def _consumer_fault(self, f: dict) -> None:
        """consumer_crash (restarts as a new member after duration.ms, if given), consumer_leave, consumer_join."""
        g = self.group_by_name(f["group"])
        kind = f["kind"]
        if kind == "consumer_join":
            self.consumer_join(g)
            return
        if f["member"] >= len(g.members) or not g.members[f["member"]].alive:
            self.event("fault_skipped", -1, -1, f"{kind} {g.name}[{f['member']}]: no such live member")
            return
        m = g.members[f["member"]]
        if kind == "consumer_crash":
            self.consumer_crash(g, m, f["duration.ms"])
        else:
            self.consumer_leave(g, m)

    def _stop_process(self, b: int) -> bool:
        """The process is gone: roles, ISR state, waiting requests and fetch sessions with it."""
        broker = self.brokers[b]
        if not broker.up:
            return False
        broker.up = False
        broker.incarnation += 1
        broker.deferred.clear()
        for p in self.partitions_of[b]:
            rep = self.replicas[p][b]
            rep.reset_leader_state()
            rep.is_leader = False
            rep.leader = -1
            rep.fetch_session += 1
            rep.high_watermark = min(rep.hw_checkpoint, rep.log_end_offset)
        return True

    def _reset_connections(self, b: int) -> None:
        """The dead process's kernel resets its TCP connections: whoever waits on it hears at once."""
        for p in self.partitions_of[b]:
            rep = self.replicas[p][b]
            if not rep.is_leader:
                continue
            for _, batch, attempt, _ in rep.pending:
                self.send(CLIENT, CLIENT, self._producer_refused, (b, batch, attempt))
            self.leader_release_consumers(rep, CLIENT)
            for follower, (_, _, session) in rep.parked.items():
                self.send(follower, follower, self.follower_handle_fetch_error, (follower, p, session))

    def fault_crash(self, b: int, f: dict) -> None:
        """The broker process dies. Its log survives whole (the page cache outlives a
        process); its HW falls back to the last replication-offset-checkpoint. Its
        connections are reset, so clients and followers waiting on it find out at once."""
        if self.brokers[b].up:
            self._reset_connections(b)
        if not self._stop_process(b):
            self.event("fault_skipped", -1, b, "crash: already down")
            return
        self.event("fault_crash", -1, b, "")
        self.health_changed(b)

    def fault_power_loss(self, b: int, f: dict) -> None:
        """The machine loses power. What was fsynced (log.flush.interval.*) or written back
        by the OS (os.dirty.expire.ms) survives; the rest of each log is gone. The HW
        checkpoint file is fsynced when written, so it survives (clamped to the log)."""
        if not self._stop_process(b):
            self.event("fault_skipped", -1, b, "power_loss: already down")
            return
        now = self.kernel.now
        expire = float(self.broker_cfg["os.dirty.expire.ms"])
        lost = 0
        for p in self.partitions_of[b]:
            rep = self.replicas[p][b]
            lost += self.truncate_replica(rep, rep.durable_offset(now, expire), "power loss: unflushed log tail gone")
        self.brokers[b].unclean_shutdown = True
        self.event("fault_power_loss", -1, b, f"{lost} unflushed offsets lost")
        self.health_changed(b)

    def fault_end_crash(self, b: int, f: dict) -> None:
        self.fault_restart(b, f)

    fault_end_power_loss = fault_end_crash

    def fault_restart(self, b: int, f) -> None:
        """A new process starts on the old disk: log and checkpointed HW, no roles until the controller speaks."""
        broker = self.brokers[b]
        if broker.up:
            self.event("fault_skipped", -1, b, "restart: not down")
            return
        broker.up = True
        broker.incarnation += 1
        broker.restarted = True  # a new broker epoch: the controller fences the old one (KRaft, KIP-380)
        self.start_broker_timers(b)
        self.event("fault_restart", -1, b, "")
        self.health_changed(b)

    def _peers(self, f: dict, b: int) -> list[int]:
        peers = []
        for peer in f["from"]:
            if peer == "controller":
                peers.append(CONTROLLER)
            elif peer == "clients":
                peers.append(CLIENT)
            elif peer != b:
                peers.append(peer)
        return peers

    def fault_isolate(self, b: int, f: dict) -> None:
        """Cut from every other node (or only from the nodes in `from`). State survives
        whole; messages over a cut link are lost. Cut from the controller (ZooKeeper),
        its session lapses as if it were dead."""
        if f["from"] is None:
            self.brokers[b].isolated = True
            self.event("fault_isolate", -1, b, f"for {f['duration.ms']:g} ms")
        else:
            for peer in self._peers(f, b):
                for link in ((b, peer), (peer, b)):
                    self.cuts[link] = self.cuts.get(link, 0) + 1
                if peer == CONTROLLER:
                    self.brokers[b].cut_from_zk += 1
            self.event("fault_isolate", -1, b, f"from {f['from']} for {f['duration.ms']:g} ms")
        self.health_changed(b)

    def fault_end_isolate(self, b: int, f: dict) -> None:
        if f["from"] is None:
            self.brokers[b].isolated = False
        else:
            for peer in self._peers(f, b):
                for link in ((b, peer), (peer, b)):
                    self.cuts[link] -= 1
                    if not self.cuts[link]:
                        del self.cuts[link]
                if peer == CONTROLLER:
                    self.brokers[b].cut_from_zk -= 1
        self.event("fault_isolate_end", -1, b, "")
        self.health_changed(b)
        if f["from"] is not None:
            for peer in self._peers(f, b):
                if (b, peer) not in self.cuts:
                    self.controller_link_healed(b, peer)

    def fault_pause(self, b: int, f: dict) -> None:
        """A stuck process (GC, disk stall): nothing is lost; messages and timers wait until it resumes."""
        self.brokers[b].paused = True
        self.event("fault_pause", -1, b, f"for {f['duration.ms']:g} ms")
        self.health_changed(b)

    def fault_end_pause(self, b: int, f: dict) -> None:
        broker = self.brokers[b]
        broker.paused = False
        self.event("fault_resume", -1, b, f"{len(broker.deferred)} held messages and timers run now")
        held, broker.deferred = broker.deferred, []
        for action, args in held:
            if not broker.up or broker.paused:
                break
            action(*args)
        self.health_changed(b)

    def fault_slow(self, b: int, f: dict) -> None:
        """Fetch messages to and from the broker take `factor` times longer; nothing else changes."""
        self.brokers[b].slow = float(f["factor"])
        self.event("fault_slow", -1, b, f"x{f['factor']:g} for {f['duration.ms']:g} ms")

    def fault_end_slow(self, b: int, f: dict) -> None:
        self.brokers[b].slow = 1.0
        self.event("fault_slow_end", -1, b, "")
