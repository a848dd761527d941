"""The group coordinator (Kafka's GroupCoordinator and GroupMetadataManager): membership, rebalances,
generations and committed offsets of every consumer group.

It runs on the broker side, on a reliable node (``COORDINATOR``). It starts a
rebalance on a join, a leave, and a member silent for ``session.timeout.ms``;
the members that did not start it learn of it from their next heartbeat's
answer (REBALANCE_IN_PROGRESS) and rejoin (``KafkaConsumer.rejoin``: eager, it
revokes everything first), and once every member in the group has, JoinGroup and SyncGroup take
two round trips before the new generation's assignment (computed by the
group leader's assignor, as in Kafka's classic protocol) reaches the members.
OffsetCommit is refused from a member of an older generation. The members'
side is ``clients.consumer``.
"""

from __future__ import annotations

import numpy as np

from ..protocol import CONSUMER_CONN, COORDINATOR
from ..results.measures import CONSUMER_SESSION_EXPIRED, REBALANCE_START
from ..rules.assignors import range_assign, sticky_assign
from ..state import Group


class GroupCoordinator:
    """Every consumer group's coordinator."""

    MESSAGES = ("handle_commit", "handle_commit_sync", "heartbeat_response", "revocation_acked")
    TIMERS = ("complete_rebalance", "expire_member", "heartbeat_due")

    def __init__(self, sim):
        self.kernel = sim.kernel
        self.send = sim.transport.send
        self.draw = sim.transport.draws[CONSUMER_CONN]
        self.batches = sim.batches  # (its ``lo``: each batch's first record)
        self.event = sim.recorder.event
        n = sim.workload.records
        self.groups: list[Group] = []
        for i, c in enumerate(sim.settings.consumers):
            first = sim.topic_first[c.topic]
            count = sim.settings.topic(c.topic).partitions
            g = Group(i, c, list(range(first, first + count)), n, sim.layout.client_node(c.client_rack))
            sim.workload.track(g, "processed", 0)  # per record: they move with the producers' slots
            sim.workload.track(g, "first_processed_ms", np.nan)
            self.groups.append(g)

    def connect(self, consumer) -> None:
        """The members it answers and tells to rejoin (built after it: they send to it)."""
        self.members = consumer

    # ---- rebalances ---------------------------------------------------------------

    def start_rebalance(self, g: Group, why: str, prompt: tuple = ()) -> None:
        """JoinGroup from a new member, LeaveGroup, an expired session, or members that revoked partitions
        (``prompt``: they rejoin at once): the group prepares a rebalance; the others learn at their heartbeat."""
        if g.protocol == "consumer":  # KIP-848: no rebalance, a new target assignment
            self.new_target(g, why)
            return
        if not g.rebalancing:
            g.rebalancing = True
            g.joined = set()
            g.rebalances += 1
            self.event(REBALANCE_START, -1, -1, f"group {g.name}: {why}")
        self.members.rejoin_all(g, prompt)
        self.maybe_complete(g)

    def join_group(self, g: Group, member: int) -> None:
        """The member revoked what it owned and rejoins."""
        g.joined.add(member)
        self.maybe_complete(g)

    def maybe_complete(self, g: Group) -> None:
        members = {m.index for m in g.members if m.in_group}
        if g.rebalancing and members <= g.joined:
            # JoinGroup and SyncGroup: two round trips to the coordinator
            draw = self.draw
            delay = draw() + draw() + draw() + draw()
            self.kernel.schedule(self.kernel.now + delay, self.complete_rebalance, g, g.rebalances)

    def complete_rebalance(self, g: Group, rebalance: int) -> None:
        if not g.rebalancing or rebalance != g.rebalances:
            return
        if not {m.index for m in g.members if m.in_group} <= g.joined:
            return  # someone joined meanwhile; it completes when that one has joined
        members = [m for m in g.members if m.in_group]
        plan = self.members.perform_assignment(g, members)
        g.generation += 1
        g.rebalancing = False
        revoked = tuple(m.index for m in members if self.members.on_assignment(g, m, plan.get(m.id, [])))
        if revoked:  # cooperative: those members rejoin at once, and a second rebalance hands the partitions out
            self.start_rebalance(g, "members revoked partitions and re-join", revoked)

    # ---- membership -------------------------------------------------------------------

    def heartbeats_stopped(self, g: Group, m, last_heartbeat: float) -> None:
        """The member's heartbeats stopped (its process died): session.timeout.ms after the last one it expires."""
        expires = last_heartbeat + g.config.session_timeout_ms
        self.kernel.schedule(max(expires, self.kernel.now), self.expire_member, g, m)

    def expire_member(self, g: Group, m) -> None:
        if m.expired:
            return  # it left, or a static member's restart took its place (KIP-345)
        m.expired = True
        self.event(CONSUMER_SESSION_EXPIRED, -1, -1, f"group {g.name}: {m.id}")
        if g.protocol == "consumer":  # fenced: what it owned is free for the others
            g.free.update(m.assignment)
            m.assignment = []
        g.joined.discard(m.index)
        self.start_rebalance(g, f"{m.id} session expired")

    # ---- offsets ------------------------------------------------------------------------

    def handle_commit(self, gi: int, generation: int, offsets: dict, output) -> bool:
        """OffsetCommit (with the output, for atomic): refused from a member of an older generation."""
        g = self.groups[gi]
        if generation != g.generation and g.protocol != "consumer":  # KIP-848 checks the member's own epoch
            return False
        g.committed.update(offsets)
        if output is not None:
            g.mark_processed(self.batches.lo, *output)
        return True

    def handle_commit_sync(self, gi, mi, token, generation, offsets, slices) -> None:
        """commitSync: the member waits for the answer."""
        accepted = self.handle_commit(gi, generation, offsets, None)
        self.send(COORDINATOR, self.groups[gi].node, self.members.commit_answer,
                  (gi, mi, token, accepted, slices, offsets), conn=CONSUMER_CONN)

    # ---- the consumer group protocol (KIP-848, group.protocol: consumer) -------------------------------------------

    def new_target(self, g: Group, why: str) -> None:
        """A member joined or left: the group epoch bumps and the coordinator's assignor computes the target
        assignment; members learn theirs at their next heartbeat. No member waits for another."""
        members = [m for m in g.members if m.in_group]
        g.generation += 1
        g.rebalances += 1
        self.event(REBALANCE_START, -1, -1, f"group {g.name} epoch {g.generation}: {why} (new target assignment)")
        ids = [m.id for m in members]
        if g.config.remote_assignor == "range":
            plan = range_assign(ids, g.partitions) if ids else {}
        else:  # uniform: balanced, and sticky to the current targets
            plan = sticky_assign(ids, g.partitions, {m.id: g.target.get(m.index, []) for m in members if m.index in g.target})
        g.target = {m.index: plan.get(m.id, []) for m in members}

    def join(self, g: Group, m) -> None:
        """ConsumerGroupHeartbeat with member epoch 0: the member joins and heartbeats from now on."""
        self.new_target(g, f"{m.id} joined")
        self.start_heartbeats(g, m)

    def start_heartbeats(self, g: Group, m) -> None:
        m.started_ms = self.kernel.now
        self.consumer_heartbeat(g.index, m.index, m.incarnation)
        self.kernel.schedule(self.kernel.now + g.config.heartbeat_interval_ms, self.heartbeat_due, g, m, m.incarnation)

    def static_rejoin(self, g: Group, old, new) -> None:
        """A static member back within its session (KIP-345 under KIP-848): it takes its old place and target;
        what the old process owned is handed to it at its first heartbeat."""
        g.target[new.index] = g.target.pop(old.index, [])
        g.free.update(old.assignment)
        old.assignment = []
        self.start_heartbeats(g, new)

    def consumer_heartbeat(self, gi: int, mi: int, incarnation: int) -> None:
        """The member heartbeats; the answer carries its target: it revokes what is no longer its, and is given
        what is its and free."""
        g = self.groups[gi]
        m = g.members[mi]
        if not m.alive or m.expired:
            return
        self.send(g.node, COORDINATOR, self.heartbeat_response, (gi, mi), conn=CONSUMER_CONN)

    def heartbeat_response(self, gi: int, mi: int) -> None:
        g = self.groups[gi]
        m = g.members[mi]
        if m.expired:
            return
        target = g.target.get(m.index, [])
        given = [p for p in target if p in g.free and p not in m.assignment]
        g.free.difference_update(given)
        self.send(COORDINATOR, g.node, self.members.reconcile, (gi, mi, target, given), conn=CONSUMER_CONN)

    def heartbeat_due(self, g: Group, m, incarnation: int) -> None:
        """heartbeat.interval.ms (the broker's group.consumer.heartbeat.interval.ms) since the last one."""
        if m.alive and not m.expired:
            self.consumer_heartbeat(g.index, m.index, incarnation)
            self.kernel.schedule(self.kernel.now + g.config.heartbeat_interval_ms, self.heartbeat_due, g, m, incarnation)

    def revocation_acked(self, gi: int, revoked: list) -> None:
        """The member's heartbeat right after it revoked: those partitions are free for their new owners."""
        self.groups[gi].free.update(revoked)
