"""The controller: broker liveness, leader elections, ISR metadata.

It stands for ZooKeeper plus the controller broker (or KRaft's quorum
controller) and does not fail here. A broker that stops answering (crashed,
isolated, paused) is declared dead ``zookeeper.session.timeout.ms`` after it
went silent; a broker that comes back registers again. Elections:

* ``isr``: the first live replica of the ISR in assignment order; with
  unclean.leader.election.enable and no live ISR member, the first live
  replica at all (its missing records are lost); otherwise the partition is
  offline and its ISR keeps the last leader.
* ``quorum``: the most up-to-date live replica (last epoch, then LEO), and
  only while a majority of the replicas is alive, as a Raft vote would.
"""

from __future__ import annotations

from .state import Partition, Replica

CONTROLLER = -2


class ControllerActor:
    def init_controller(self) -> None:
        self.live_brokers: set[int] = set(range(len(self.brokers)))  # brokers the controller believes alive

    def health_changed(self, b: int) -> None:
        """Call after any change to a broker's up/paused/isolated state."""
        broker = self.brokers[b]
        now = self.kernel.now
        if not broker.healthy and broker.unhealthy_since is None:
            broker.unhealthy_since = now
            broker.episode += 1
            timeout = float(self.broker_cfg["zookeeper.session.timeout.ms"])
            self.kernel.schedule(now + timeout, self.controller_session_expired, b, broker.episode)
        elif broker.healthy and broker.unhealthy_since is not None:
            broker.unhealthy_since = None
            broker.episode += 1
            # it answers again: it registers (if it was declared dead) and gets the current state
            self.send(b, CONTROLLER, self.controller_handle_registration, (b,))
        self.note_availability()

    def controller_session_expired(self, b: int, episode: int) -> None:
        if self.brokers[b].episode != episode or b not in self.live_brokers:
            return
        self.controller_broker_failed(b, "session expired")

    def controller_broker_failed(self, b: int, why: str) -> None:
        live = self.live_brokers
        live.discard(b)
        self.event("broker_failure_detected", -1, b, why)
        for p in self.partitions_of[b]:
            part = self.partitions[p]
            if part.leader == b:
                self.controller_elect_leader(part)
            elif not self.quorum and b in part.isr and len(part.isr) > 1:
                part.isr = tuple(r for r in part.isr if r != b)
                self.event("isr_shrink", p, b, f"controller removed dead broker {b}; isr now {list(part.isr)}")
                self.stats["isr_shrinks"] += 1
                self._controller_send(part)
        self.note_availability()

    def controller_handle_registration(self, b: int) -> None:
        """Broker b (re)registers: restarted, healed from isolation, or resumed."""
        live = self.live_brokers
        broker = self.brokers[b]
        if not broker.healthy:
            return
        if b in live and broker.restarted:
            # a restart faster than the session timeout: the new process fences the old one
            self.controller_broker_failed(b, "restarted before its session expired")
        broker.restarted = False
        if b not in live:
            live.add(b)
            self.event("broker_registered", -1, b, "")
        for p in self.partitions_of[b]:
            part = self.partitions[p]
            if part.leader < 0:
                self.controller_elect_leader(part)
        for p in self.partitions_of[b]:
            part = self.partitions[p]
            self.send(CONTROLLER, b, self.broker_handle_leader_and_isr, (b, p, part.leader, part.leader_epoch, part.isr))
        self.note_availability()

    def controller_elect_leader(self, part: Partition) -> None:
        live = self.live_brokers
        kind = "clean"
        if self.quorum:
            voters = [r for r in part.replicas if r in live]
            leader = -1
            if len(voters) >= self.majority[part.index]:
                reps = self.replicas[part.index]
                leader = max(voters, key=lambda r: (reps[r].last_epoch(), reps[r].log_end_offset, -part.replicas.index(r)))
            isr = part.replicas
            kind = "quorum"
        else:
            candidates = [r for r in part.replicas if r in part.isr and r in live]
            if candidates:
                leader = candidates[0]
                isr = tuple(r for r in part.isr if r in live)
            elif part.unclean and any(r in live for r in part.replicas):
                leader = next(r for r in part.replicas if r in live)
                isr = (leader,)
                kind = "unclean"
            else:
                leader, isr = -1, part.isr
        old = part.leader
        part.leader = leader
        part.leader_epoch += 1
        part.isr = isr
        if leader < 0:
            self.event("partition_offline", part.index, old, f"no eligible replica; isr {list(isr)}")
        else:
            part.last_leader = leader
            self.stats["leader_elections"] += 1
            if kind == "unclean":
                self.stats["unclean_leader_elections"] += 1
            self.event("leader_election", part.index, leader, f"{kind}: epoch {part.leader_epoch}, isr {list(isr)}, was {old}")
        self._controller_send(part)

    def _controller_send(self, part: Partition) -> None:
        """LeaderAndIsr to every live replica of the partition."""
        for r in part.replicas:
            if r in self.live_brokers:
                self.send(CONTROLLER, r, self.broker_handle_leader_and_isr, (r, part.index, part.leader, part.leader_epoch, part.isr))

    def controller_alter_isr(self, rep: Replica, new_isr: set) -> bool:
        """A leader asks to change the ISR; refused if it is not the current leader or cannot reach the controller."""
        part = self.partitions[rep.partition]
        if self.brokers[rep.broker].isolated or part.leader != rep.broker or part.leader_epoch != rep.leader_epoch:
            return False
        part.isr = tuple(r for r in part.replicas if r in new_isr)
        rep.isr = set(part.isr)
        return True
