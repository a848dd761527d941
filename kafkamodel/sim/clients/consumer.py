"""The consumer client (Kafka's KafkaConsumer and the member's side of ConsumerCoordinator): the poll loop,
commits as its policy says, and rejoining when the group rebalances.

Each member loops: poll (at most ``max.poll.records`` from what ``fetcher``
buffered, sending the next fetches first; with nothing buffered it waits for
a fetch), process them (``processing.ms`` each), commit as its policy says,
poll again:

* ``before_processing`` (at most once): commit the new position, then process;
* ``after_processing`` (at least once): process, then commit;
* ``auto``: at a poll, every ``auto.commit.interval.ms``, commit the positions
  (what earlier polls returned);
* ``atomic`` (exactly once): output and offset are stored together: the
  records count as processed only when their commit is accepted.

Rebalances are eager: when the group coordinator (``broker.group_coordinator``)
starts one, every member revokes everything (an auto-committing member commits
first) and rejoins, so no partition is ever owned by two members; the group
leader's assignor (``assignors``) computes the new assignment. Consumers and
the coordinator talk over their own connections with their own latency stream
(``CONSUMER_CONN``).
"""

from __future__ import annotations

from ..protocol import CONSUMER_CONN, COORDINATOR
from ..results.measures import CONSUMER_ASSIGN, CONSUMER_CRASH, CONSUMER_LEAVE, CONSUMER_REVOKE
from ..state import Group
from .assignors import assign
from .fetcher import RESET


class Member:
    __slots__ = ("index", "id", "alive", "assignment", "positions", "fetched", "buffer", "pending", "waiting", "token",
                 "fetch_id", "started_ms", "last_commit_ms", "processing", "busy", "leaving", "generation",
                 "incarnation", "expired", "instance_id", "restart_after", "told", "hearing", "preferred", "asked", "metadata")

    def __init__(self, index: int, group: str, now: float, incarnation: int = 0):
        self.index = index  # place in the group's member list
        self.id = f"consumer-{group}-{index}" + (f"-{incarnation}" if incarnation else "")  # member.id (sorted as strings)
        self.alive = True  # the process runs
        self.assignment: list[int] = []  # global partition indices it owns
        self.positions: dict[int, int] = {}  # partition -> next offset poll returns (RESET: ask auto.offset.reset)
        self.fetched: dict[int, int] = {}  # partition -> next offset to fetch (ahead of positions while buffered)
        self.buffer: dict[int, list] = {}  # partition -> fetched slices poll has not returned yet, in fetch order
        self.pending: dict[int, int] = {}  # broker -> the id of its fetch in flight there
        self.waiting = False  # in poll with nothing buffered: the next fetch answer wakes it
        self.token = 0  # bumps on revoke/crash: answers to older requests are void
        self.fetch_id = 0  # its last fetch's id
        self.started_ms = now  # heartbeats run from here
        self.last_commit_ms = now  # auto commit clock
        self.processing = None  # (t0, slices, positions after them) while processing a poll
        self.busy = False  # a fetch or processing is under way
        self.leaving = False  # will leave the group at its next poll
        self.generation = -1  # group generation of its assignment
        self.incarnation = incarnation  # restarts so far
        self.expired = False  # the coordinator removed it (left, or silent for session.timeout.ms)
        self.instance_id: str | None = None  # group.instance.id: a static member (KIP-345)
        self.restart_after: float | None = None  # consumer_restart: it starts again this long after it closes
        self.told = -1  # the group's rebalance it knows of (it started it, or a heartbeat answer said so)
        self.hearing = -1  # the rebalance its next heartbeat answer will tell it of
        self.preferred: dict[int, tuple] = {}  # partition -> (preferred read replica, expiry ms) (KIP-392)
        self.asked: dict[int, list] = {}  # broker -> the partitions of its fetch in flight there
        self.metadata = None  # its metadata (fetcher.MemberMetadata), from its first fetch

    @property
    def in_group(self) -> bool:
        """Still a member as the coordinator sees it: a crashed one until its session expires,
        a leaving one until its LeaveGroup is sent (after the poll it is busy with)."""
        return not self.expired


class KafkaConsumer:
    """Every consumer group's members (clients never fail; their processes may crash, leave and join)."""

    MESSAGES = ("commit_answer", "reconcile")
    TIMERS = ("poll", "done_processing", "restart", "learn_rebalance")

    def __init__(self, sim, coordinator, fetcher):
        self.kernel = sim.kernel
        self.send = sim.transport.send
        self.partitions = sim.partitions
        self.batches = sim.batches  # (its ``lo``: each batch's first record)
        self.event = sim.recorder.event
        self.coordinator = coordinator
        self.groups: list[Group] = coordinator.groups
        self.fetcher = fetcher
        self.static_member_order = sim.settings.kafka.static_member_order  # 2.4: assignors order by instance id

    def start(self) -> None:
        for g in self.groups:
            g.members = [Member(i, g.name, 0.0) for i in range(g.config.members)]
            for m, instance in zip(g.members, g.config.instance_ids or ()):
                m.instance_id = instance
            if g.protocol == "consumer":  # KIP-848: one target for all, then each member heartbeats
                g.free = set(g.partitions)
                self.coordinator.new_target(g, "initial join")
                for m in g.members:
                    self.coordinator.start_heartbeats(g, m)
                continue
            self.coordinator.start_rebalance(g, "initial join")

    def group_by_name(self, name: str) -> Group:
        return next(g for g in self.groups if g.name == name)

    # ---- rebalances (the coordinator's calls) -------------------------------------------------------------

    def rejoin_all(self, g: Group, prompt: tuple = ()) -> None:
        """A rebalance started. The members that start it (a new member, those that revoked partitions: ``prompt``)
        rejoin now, or at their next poll if busy; the others learn of it from their next heartbeat's answer
        (REBALANCE_IN_PROGRESS), heartbeats running every heartbeat.interval.ms from the member's start."""
        for m in g.members:
            if not m.alive or m.index in g.joined:
                continue
            if m.index in prompt or m.generation < 0:
                self.learn_rebalance(g, m, g.rebalances)
            elif m.told != g.rebalances and m.hearing != g.rebalances:
                m.hearing = g.rebalances
                hb = g.config.heartbeat_interval_ms
                beat = m.started_ms + hb * (int((self.kernel.now - m.started_ms) // hb) + 1)
                answer = beat + self.coordinator.draw() + self.coordinator.draw()
                self.kernel.schedule(answer, self.learn_rebalance, g, m, g.rebalances)

    def learn_rebalance(self, g: Group, m: Member, rebalance: int) -> None:
        """The member knows the group rebalances (AbstractCoordinator.requestRejoin): it rejoins now, or at its
        next poll if busy with one."""
        if not m.alive or m.expired or not g.rebalancing or rebalance != g.rebalances:
            return
        m.told = rebalance
        if not m.busy:
            self.rejoin(g, m)

    def rejoin(self, g: Group, m: Member) -> None:
        """onJoinPrepare: the member commits first if it auto-commits and rejoins; eager, it revokes everything
        first; cooperative (KIP-429), it keeps its partitions and goes on consuming them."""
        if m.index in g.joined:
            return
        if m.assignment:
            if g.config.commit == "auto":
                self._commit(g, m, self._known_positions(m), sync=True)
            if g.protocol == "eager":
                self.event(CONSUMER_REVOKE, -1, -1, f"group {g.name}: {m.id} revokes {self._names(m.assignment)}")
                g.stop_consuming(m.assignment, self.kernel.now)
        if g.protocol == "eager":
            m.assignment = []
            m.token += 1
        self.coordinator.join_group(g, m.index)

    def perform_assignment(self, g: Group, members: list[Member]) -> dict:
        """The group leader's assignor (ConsumerCoordinator.onLeaderElected): who gets which partitions. The sticky
        assignors read each member's MemberData: eager sticky its last assignment and generation (user data),
        cooperative what it still owns and its generation."""
        ids = [m.id for m in members]
        if g.protocol == "cooperative":
            owned = {m.id: m.assignment for m in members if m.generation >= 0}
            generations = {m.id: m.generation for m in members}
        else:
            owned, generations = g.previous, None
        instance_ids = {m.id: m.instance_id for m in members} if self.static_member_order else None
        plan = assign(g.config.assignment_strategy, ids, g.partitions, owned, generations, instance_ids)
        g.previous = plan
        return plan

    def on_assignment(self, g: Group, m: Member, partitions: list[int]) -> bool:
        """SyncGroup's answer: the member starts from the committed offsets of what it now owns. Cooperative, it
        keeps consuming what it keeps, drops what it no longer has (onPartitionsRevoked) and says whether it
        revoked any (then it rejoins: a second rebalance hands them out)."""
        now = self.kernel.now
        kept = set(m.assignment) & set(partitions) if g.protocol != "eager" else set()
        revoked = [p for p in m.assignment if p not in set(partitions)] if g.protocol != "eager" else []
        added = [p for p in partitions if p not in kept]
        if revoked:
            if g.protocol == "consumer" and g.config.commit == "auto":  # the new consumer commits before revoking
                self._commit(g, m, {p: v for p, v in self._known_positions(m).items() if p in revoked}, sync=True)
            self.event(CONSUMER_REVOKE, -1, -1, f"group {g.name}: {m.id} revokes {self._names(revoked)}")
            g.stop_consuming(revoked, now)
        m.assignment = list(partitions)
        if kept or revoked:  # cooperative: what it keeps goes on where it is
            for p in revoked:
                m.positions.pop(p, None)
                m.fetched.pop(p, None)
                m.buffer.pop(p, None)
                m.preferred.pop(p, None)
            for p in added:
                m.positions[p] = m.fetched[p] = g.committed.get(p, RESET)
                m.preferred.pop(p, None)
        else:  # nothing carried over: it starts afresh, and answers to earlier fetches are void
            m.positions = {p: g.committed.get(p, RESET) for p in m.assignment}
            m.fetched = dict(m.positions)
            m.buffer = {}
            m.pending = {}
            m.asked = {}
            m.preferred = {}
            m.token += 1
        m.generation = g.generation
        g.resume_consuming(added, now)
        self.event(CONSUMER_ASSIGN, -1, -1, f"group {g.name} generation {g.generation}: {m.id} gets {self._names(m.assignment)}")
        if m.assignment and (not (kept or revoked) or not m.busy):
            self.kernel.schedule(now, self.poll, g, m, m.token)
        return bool(revoked)

    def reconcile(self, gi: int, mi: int, target: list[int], given: list[int]) -> None:
        """KIP-848: a heartbeat's answer. The member revokes what left its target and acknowledges at once (a
        heartbeat the coordinator frees them on); it starts on what it was given. The others carry on."""
        g = self.groups[gi]
        m = g.members[mi]
        if not m.alive:
            g.free.update(given)  # (an answer to a process that died meanwhile: the coordinator fences it later)
            return
        keep = [p for p in m.assignment if p in target]
        revoked = [p for p in m.assignment if p not in target]
        m.generation = g.generation
        if not revoked and not given:
            return
        self.on_assignment(g, m, keep + given)
        if revoked:
            self.send(g.node, COORDINATOR, self.coordinator.revocation_acked, (gi, revoked), conn=CONSUMER_CONN)

    def _names(self, parts: list[int]) -> str:
        return "[" + ", ".join(self.partitions[p].name for p in parts) + "]"

    # ---- the poll loop --------------------------------------------------------------

    def poll(self, g: Group, m: Member, token: int) -> None:
        if not m.alive or token != m.token or m.processing is not None:
            return  # (a wake-up for a poll that is already processing its records)
        m.busy = False
        m.waiting = False
        if m.leaving:
            self._member_leave(g, m)
            return
        if g.rebalancing and m.told == g.rebalances:
            self.rejoin(g, m)
            if g.protocol == "eager":
                return
        if not m.assignment:
            return
        now = self.kernel.now
        cfg = g.config
        if cfg.commit == "auto" and now - m.last_commit_ms >= cfg.auto_commit_interval_ms:
            self._commit(g, m, self._known_positions(m))
            m.last_commit_ms = now
        slices, positions = self.fetcher.take(m, cfg.max_poll_records)
        self.fetcher.send_fetches(g, m)  # the next round is in flight while these are processed
        m.busy = True
        if not slices:
            m.waiting = True  # a fetch answer wakes it
            if not m.pending:  # nothing could be sent (no leader known): look again after the backoff
                self.kernel.schedule(now + max(cfg.retry_backoff_ms, 1.0), self.poll, g, m, m.token)
            return
        if cfg.commit == "before_processing":  # commitSync, then process only if it went through
            m.processing = (None, slices, positions)  # fetched, not started: lost if the member dies now
            self.send(g.node, COORDINATOR, self.coordinator.handle_commit_sync,
                      (g.index, m.index, m.token, m.generation, positions, slices), conn=CONSUMER_CONN)
            return
        self._process(g, m, slices, positions)

    def commit_answer(self, gi, mi, token, accepted, slices, positions) -> None:
        g = self.groups[gi]
        m = g.members[mi]
        if not m.alive or token != m.token:
            return
        if accepted:
            self._process(g, m, slices, positions)
        else:  # CommitFailedException: the group moved on; these records are not ours to process
            m.processing = None
            self.poll(g, m, m.token)

    def _process(self, g: Group, m: Member, slices: list, positions: dict) -> None:
        now = self.kernel.now
        count = sum(s[2] - s[1] for s in slices)
        m.processing = (now, slices, positions)
        self.kernel.schedule(now + count * g.config.processing_ms, self.done_processing, g, m, m.token)

    def done_processing(self, g: Group, m: Member, token: int) -> None:
        if not m.alive or token != m.token or m.processing is None:
            return
        t0, slices, positions = m.processing
        m.processing = None
        policy = g.config.commit
        if policy == "atomic":
            self._commit(g, m, positions, output=(t0, slices, None))
        else:
            g.mark_processed(self.batches.lo, t0, slices, None)
            if policy == "after_processing":
                self._commit(g, m, positions)
        self.poll(g, m, m.token)

    # ---- commits ------------------------------------------------------------------------

    @staticmethod
    def _known_positions(m: Member) -> dict:
        """What the member would commit: the positions of its partitions (not those still to be reset)."""
        return {p: m.positions[p] for p in m.assignment if m.positions.get(p, RESET) >= 0}

    def _commit(self, g: Group, m: Member, offsets: dict, output=None, sync: bool = False) -> None:
        if not offsets:
            return
        if sync:  # commitSync before revoking: done before the member rejoins
            self.coordinator.handle_commit(g.index, m.generation, offsets, output)
            return
        self.send(g.node, COORDINATOR, self.coordinator.handle_commit, (g.index, m.generation, offsets, output),
                  conn=CONSUMER_CONN)

    # ---- membership changes ---------------------------------------------------------

    def crash(self, g: Group, m: Member, restart_after: float | None) -> None:
        """The member's process dies mid-poll: the records it finished processing stay processed
        (an atomic member's uncommitted output is rolled back); nothing else is committed."""
        if not m.alive:
            return
        now = self.kernel.now
        if m.processing is not None and m.processing[0] is not None and g.config.commit != "atomic":
            t0, slices, _ = m.processing
            proc = g.config.processing_ms
            done = int((now - t0) / proc) if proc > 0 else sum(s[2] - s[1] for s in slices)
            g.mark_processed(self.batches.lo, t0, slices, done)
        m.processing = None
        m.alive = False
        m.busy = False
        m.token += 1
        g.stop_consuming(m.assignment, now)
        self.event(CONSUMER_CRASH, -1, -1, f"group {g.name}: {m.id}")
        hb = g.config.heartbeat_interval_ms
        self.coordinator.heartbeats_stopped(g, m, m.started_ms + hb * int((now - m.started_ms) // hb))
        if restart_after is not None:
            self.kernel.schedule(now + restart_after, self.restart, g, m.index)

    def restart(self, g: Group, index: int) -> None:
        """The process comes back as a new member (a new member.id); the old one lingers until it expires. A static
        member (KIP-345) whose session has not expired takes its old place: the coordinator hands it the old
        assignment, and the group does not rebalance."""
        old = g.members[index]
        new = Member(len(g.members), g.name, self.kernel.now, old.incarnation + 1)
        new.id = f"consumer-{g.name}-{index}-{old.incarnation + 1}"
        new.instance_id = old.instance_id
        g.members.append(new)
        if old.instance_id is None or old.expired:
            self._joined(g, new)
            return
        old.expired = True  # its member.id is replaced by the new one's
        if g.protocol == "consumer":
            self.coordinator.static_rejoin(g, old, new)
            return
        g.previous[new.id] = g.previous.pop(old.id, [])
        if g.rebalancing:  # it joins the rebalance under way in its old place
            g.joined.discard(old.index)
            self.coordinator.start_rebalance(g, f"{new.id} rejoined as {new.instance_id}")
            return
        new.generation = g.generation
        self.on_assignment(g, new, list(old.assignment))

    def join(self, g: Group) -> None:
        g.members.append(Member(len(g.members), g.name, self.kernel.now))
        self._joined(g, g.members[-1])

    def _joined(self, g: Group, m: Member) -> None:
        """A new member: the group rebalances (KIP-848: a new target, and the member starts heartbeating)."""
        if g.protocol == "consumer":
            self.coordinator.join(g, m)
        else:
            self.coordinator.start_rebalance(g, f"{m.id} joined")

    def close_and_restart(self, g: Group, m: Member, after: float) -> None:
        """consumer_restart: close() (as leave), then the process starts again `after` ms later."""
        m.restart_after = after
        self.leave(g, m)

    def leave(self, g: Group, m: Member) -> None:
        m.leaving = True
        if not m.busy:
            self._member_leave(g, m)

    def _member_leave(self, g: Group, m: Member) -> None:
        """close(): commit if auto-committing, LeaveGroup; the group rebalances at once. A static member sends no
        LeaveGroup (KIP-345): its session runs out session.timeout.ms later unless it comes back first."""
        now = self.kernel.now
        if g.config.commit == "auto" and m.assignment:
            self._commit(g, m, self._known_positions(m), sync=True)
        if m.restart_after is not None:
            self.kernel.schedule(now + m.restart_after, self.restart, g, m.index)
        if m.instance_id is not None:
            m.alive = False
            m.token += 1
            g.stop_consuming(m.assignment, now)
            self.event(CONSUMER_LEAVE, -1, -1, f"group {g.name}: {m.id} closes (static {m.instance_id}: no LeaveGroup)")
            self.coordinator.heartbeats_stopped(g, m, now)
            return
        g.stop_consuming(m.assignment, now)
        if g.protocol == "consumer":  # heartbeat with member epoch -1: what it owned is free at once
            g.free.update(m.assignment)
        m.alive = False
        m.expired = True
        m.token += 1
        m.assignment = []
        self.event(CONSUMER_LEAVE, -1, -1, f"group {g.name}: {m.id}")
        self.coordinator.start_rebalance(g, f"{m.id} left")
