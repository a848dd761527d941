"""Faults: ordinary scheduled events. Each docstring says what survives.

A fault's target is a broker id or ``leader:TOPIC-P``, resolved to the
partition's leader (as the controller has it) when the fault fires.
"""

from __future__ import annotations

import re

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
        part = self.partitions[self.topic_first[m["topic"]] + int(m["partition"])]
        return part.leader

    def _fault_fire(self, i: int) -> None:
        f = self.faults[i]
        b = self._resolve(f["broker"])
        kind = f["kind"]
        if b < 0:
            self.event("fault_skipped", -1, -1, f"{kind} {f['broker']}: no leader to target")
            return
        duration = f["duration.ms"]
        getattr(self, f"fault_{kind}")(b, f)
        if duration is not None and kind != "restart":
            self.kernel.schedule(self.kernel.now + float(duration), getattr(self, f"fault_end_{kind}"), b)

    def fault_crash(self, b: int, f: dict) -> None:
        """The broker process dies. Its log survives (the page cache outlives a process);
        its HW falls back to the last replication-offset-checkpoint; everything else
        in memory (roles, ISR state, waiting requests, fetch sessions) is gone."""
        broker = self.brokers[b]
        if not broker.up:
            self.event("fault_skipped", -1, b, "crash: already down")
            return
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
        self.event("fault_crash", -1, b, "")
        self.health_changed(b)

    def fault_end_crash(self, b: int) -> None:
        self.fault_restart(b, None)

    def fault_restart(self, b: int, f) -> None:
        """A new process starts on the old disk: log and checkpointed HW, no roles until the controller speaks."""
        broker = self.brokers[b]
        if broker.up:
            self.event("fault_skipped", -1, b, "restart: not down")
            return
        broker.up = True
        broker.incarnation += 1
        broker.restarted = True
        self.start_broker_timers(b)
        self.event("fault_restart", -1, b, "")
        self.health_changed(b)

    def fault_isolate(self, b: int, f: dict) -> None:
        """Cut from every other node (brokers, controller, clients). State survives whole;
        messages to or from it are lost."""
        self.brokers[b].isolated = True
        self.event("fault_isolate", -1, b, f"for {f['duration.ms']:g} ms")
        self.health_changed(b)

    def fault_end_isolate(self, b: int) -> None:
        self.brokers[b].isolated = False
        self.event("fault_isolate_end", -1, b, "")
        self.health_changed(b)

    def fault_pause(self, b: int, f: dict) -> None:
        """A stuck process (GC, disk stall): nothing is lost; messages and timers wait until it resumes."""
        self.brokers[b].paused = True
        self.event("fault_pause", -1, b, f"for {f['duration.ms']:g} ms")
        self.health_changed(b)

    def fault_end_pause(self, b: int) -> None:
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

    def fault_end_slow(self, b: int) -> None:
        self.brokers[b].slow = 1.0
        self.event("fault_slow_end", -1, b, "")
