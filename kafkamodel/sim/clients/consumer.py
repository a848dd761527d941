"""Consumer groups: membership, eager rebalances, fetching below the HW, commits.

Each member fetches as Kafka's consumer does: one fetch per leader broker
for all its assigned partitions there that have nothing buffered, at most one
in flight per broker (``fetch.min.bytes``, ``fetch.max.bytes``,
``max.partition.fetch.bytes``, ``fetch.max.wait.ms`` at the leader); what
comes back waits in its buffer. It loops: poll (at most ``max.poll.records``
from the buffer, sending the next fetches first; with nothing buffered it
waits for a fetch), process them (``processing.ms`` each), commit as its
policy says, poll again:

* ``before_processing`` (at most once): commit the new position, then process;
* ``after_processing`` (at least once): process, then commit;
* ``auto``: at a poll, every ``auto.commit.interval.ms``, commit the positions
  (what earlier polls returned);
* ``atomic`` (exactly once): output and offset are stored together: the
  records count as processed only when their commit is accepted.

The group coordinator (reliable here) starts a rebalance on join, leave and
on a member silent for ``session.timeout.ms``. Rebalances are eager: every
member revokes everything (an auto-committing member commits first) before
the new assignment, so no partition is ever owned by two members. Consumers
and the coordinator talk over their own connections with their own latency
stream (``CONSUMER_CONN``). The leader's side of a consumer fetch is in
``leader``.
"""

from __future__ import annotations

import numpy as np

from ...config.settings import ConsumerSettings
from ..protocol import CLIENT, CONSUMER_CONN, COORDINATOR, NOT_LEADER_OR_FOLLOWER, OFFSET_OUT_OF_RANGE
from ..results.measures import (
    CONSUMER_ASSIGN,
    CONSUMER_CRASH,
    CONSUMER_LEAVE,
    CONSUMER_REVOKE,
    CONSUMER_SESSION_EXPIRED,
    OFFSET_RESET,
    REBALANCE_START,
)
from .assignors import assign

RESET = -1  # position unknown: auto.offset.reset decides at the leader


class Member:
    __slots__ = ("index", "id", "alive", "assignment", "positions", "fetched", "buffer", "pending", "waiting", "token",
                 "fetch_id", "started_ms", "last_commit_ms", "processing", "busy", "leaving", "generation",
                 "incarnation", "expired")

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

    @property
    def in_group(self) -> bool:
        """Still a member as the coordinator sees it: a crashed one until its session expires,
        a leaving one until its LeaveGroup is sent (after the poll it is busy with)."""
        return not self.expired


class Group:
    __slots__ = ("index", "name", "config", "node", "partitions", "members", "committed", "generation", "rebalancing",
                 "joined", "previous", "processed", "first_processed_ms", "rebalances", "origin")

    def __init__(self, index: int, config: ConsumerSettings, partitions: list[int], records: int, node: int):
        self.index = index
        self.name = config.group  # group.id
        self.config = config  # its settings
        self.node = node  # its members' network node (their client.rack's, or the clients')
        self.partitions = partitions  # subscribed partitions (global indices)
        self.members: list[Member] = []
        self.committed: dict[int, int] = {}  # partition -> committed offset (next record to read)
        self.generation = 0  # bumps with every completed rebalance
        self.rebalancing = False
        self.joined: set[int] = set()  # members that revoked and rejoined in this rebalance
        self.previous: dict[str, list[int]] = {}  # last assignment (the sticky assignor keeps it)
        self.processed = np.zeros(records, dtype=np.int16)  # times each record was processed by the group
        self.first_processed_ms = np.full(records, np.nan)  # when it was first processed
        self.rebalances = 0
        self.origin: dict[int, int] = {}  # partition -> where the group first started (auto.offset.reset)


class ConsumerGroups:
    """Every consumer group: its members (clients) and its coordinator."""

    MESSAGES = ("handle_fetch", "refused", "coordinator_commit", "coordinator_commit_sync", "commit_answer")

    def __init__(self, sim):
        self.kernel = sim.kernel
        self.send = sim.transport.send
        self.draw = sim.transport.draws[CONSUMER_CONN]
        self.partitions = sim.partitions
        self.batch_lo = sim.batches.lo
        self.event = sim.recorder.event
        n = sim.workload.records
        self.groups: list[Group] = []
        for i, c in enumerate(sim.settings.consumers):
            first = sim.topic_first[c.topic]
            count = sim.settings.topic(c.topic).partitions
            self.groups.append(Group(i, c, list(range(first, first + count)), n, sim.layout.client_node(c.client_rack)))
        self.counters = sim.recorder.counters
        self.server_request = self.leader_handle_consumer_fetch = None  # wired

    def wire(self, server, leader) -> None:
        self.server_request = server.request
        self.leader_handle_consumer_fetch = leader.handle_consumer_fetch

    def consumer_send(self, src: int, dst: int, action, args: tuple, refused=None) -> None:
        """A consumer or coordinator message: on the consumers' own connections (not queued
        behind produce traffic), with latencies from their own random stream."""
        self.send(src, dst, action, args, refused=refused, conn=CONSUMER_CONN)

    def start(self) -> None:
        for g in self.groups:
            g.members = [Member(i, g.name, 0.0) for i in range(g.config.members)]
            self.start_rebalance(g, "initial join")

    def group_by_name(self, name: str) -> Group:
        return next(g for g in self.groups if g.name == name)

    # ---- rebalances ---------------------------------------------------------------

    def start_rebalance(self, g: Group, why: str) -> None:
        if not g.rebalancing:
            g.rebalancing = True
            g.joined = set()
            g.rebalances += 1
            self.event(REBALANCE_START, -1, -1, f"group {g.name}: {why}")
        for m in g.members:
            if m.alive and not m.busy:
                self._member_join(g, m)
        self._maybe_complete(g)

    def _member_join(self, g: Group, m: Member) -> None:
        """The member revokes what it owns (committing first if it auto-commits) and rejoins."""
        if m.index in g.joined:
            return
        if m.assignment:
            if g.config.commit == "auto":
                self._commit(g, m, self._known_positions(m), sync=True)
            self.event(CONSUMER_REVOKE, -1, -1, f"group {g.name}: {m.id} revokes {self._names(m.assignment)}")
        m.assignment = []
        m.token += 1
        g.joined.add(m.index)
        self._maybe_complete(g)

    def _maybe_complete(self, g: Group) -> None:
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
        plan = assign(g.config.assignment_strategy, [m.id for m in members], g.partitions, g.previous)
        g.previous = plan
        g.generation += 1
        g.rebalancing = False
        now = self.kernel.now
        for m in members:
            m.assignment = list(plan.get(m.id, []))
            m.positions = {p: g.committed.get(p, RESET) for p in m.assignment}
            m.fetched = dict(m.positions)
            m.buffer = {}
            m.pending = {}
            m.generation = g.generation
            m.token += 1
            self.event(CONSUMER_ASSIGN, -1, -1, f"group {g.name} generation {g.generation}: {m.id} gets {self._names(m.assignment)}")
            if m.assignment:
                self.kernel.schedule(now, self.poll, g, m, m.token)

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
        if g.rebalancing:
            self._member_join(g, m)
            return
        if not m.assignment:
            return
        now = self.kernel.now
        cfg = g.config
        if cfg.commit == "auto" and now - m.last_commit_ms >= cfg.auto_commit_interval_ms:
            self._commit(g, m, self._known_positions(m))
            m.last_commit_ms = now
        slices, positions = self._take(m, cfg.max_poll_records)
        self._send_fetches(g, m)  # the next round is in flight while these are processed
        m.busy = True
        if not slices:
            m.waiting = True  # a fetch answer wakes it
            if not m.pending:  # nothing could be sent (no leader known): look again after the backoff
                self.kernel.schedule(now + max(cfg.retry_backoff_ms, 1.0), self.poll, g, m, m.token)
            return
        if cfg.commit == "before_processing":  # commitSync, then process only if it went through
            m.processing = (None, slices, positions)  # fetched, not started: lost if the member dies now
            self.consumer_send(g.node, COORDINATOR, self.coordinator_commit_sync,
                               (g.index, m.index, m.token, m.generation, positions, slices))
            return
        self._process(g, m, slices, positions)

    def _take(self, m: Member, budget: int) -> tuple[list, dict]:
        """Up to `budget` buffered records, partition by partition in fetch order; the positions after them."""
        slices, positions = [], {}
        for p in list(m.buffer):
            chunks = m.buffer[p]
            while chunks and budget > 0:
                b, first, last, offset = chunks[0]
                n = min(last - first, budget)
                slices.append((b, first, first + n, offset))
                budget -= n
                if n == last - first:
                    chunks.pop(0)
                else:
                    chunks[0] = (b, first + n, last, offset + n)
                positions[p] = offset + n
            if not chunks:
                del m.buffer[p]
            if budget <= 0:
                break
        m.positions.update(positions)
        return slices, positions

    def _send_fetches(self, g: Group, m: Member) -> None:
        """One fetch per leader broker without one in flight, for the assigned partitions with nothing buffered."""
        by_leader: dict[int, list] = {}
        for p in m.assignment:
            if p in m.buffer:
                continue
            leader = self.partitions[p].leader  # the client's metadata, refreshed from the controller
            if leader >= 0 and leader not in m.pending:
                by_leader.setdefault(leader, []).append((p, m.fetched.get(p, RESET)))
        now = self.kernel.now
        for leader, parts in by_leader.items():
            m.fetch_id += 1
            m.pending[leader] = m.fetch_id
            self.counters.consumer_fetch_requests += 1
            self.consumer_send(g.node, leader, self.server_request,
                               (leader, None, self.leader_handle_consumer_fetch,
                                (leader, g.index, m.index, m.token, m.fetch_id, parts), len(parts), 0),
                               refused=self.refused)
            # no answer (leader cut off or stuck): give up after request.timeout.ms (30 s)
            self.kernel.schedule(now + g.config.fetch_max_wait_ms + 30000.0, self._fetch_timeout, g, m, m.token,
                                 leader, m.fetch_id)

    def refused(self, leader, conn, handler, args, partitions, nbytes) -> None:
        _, gi, mi, token, fid, parts = args
        self.handle_fetch(gi, mi, token, fid, leader, [(p, pos, [], pos, NOT_LEADER_OR_FOLLOWER) for p, pos in parts])

    def _fetch_timeout(self, g: Group, m: Member, token: int, leader: int, fid: int) -> None:
        if m.alive and token == m.token and m.pending.get(leader) == fid:
            del m.pending[leader]
            if m.waiting:
                self.poll(g, m, m.token)

    def handle_fetch(self, gi, mi, token, fid, leader, parts) -> None:
        """A fetch answer: per partition (partition, offset asked, slices, next offset, error)."""
        g = self.groups[gi]
        m = g.members[mi]
        if not m.alive or token != m.token or m.pending.get(leader) != fid:
            return
        del m.pending[leader]
        failed = False
        for p, pos, slices, nxt, error in parts:
            if p not in m.fetched:
                continue
            if error:
                failed = True
                if error == OFFSET_OUT_OF_RANGE:
                    m.positions[p] = m.fetched[p] = RESET  # auto.offset.reset next; what it skips is lost to the group
                    m.buffer.pop(p, None)
                    self.event(OFFSET_RESET, p, -1, f"group {g.name}: {m.id} at {pos} is out of range")
                continue
            asked = m.fetched[p]
            if asked == RESET:
                if p not in g.origin:
                    g.origin[p] = pos  # where auto.offset.reset put the group first: nothing before is its to lose
                if m.positions.get(p) == RESET:
                    m.positions[p] = pos
            elif asked != pos:
                continue  # an answer for an offset it no longer wants
            m.fetched[p] = nxt
            if slices:
                m.buffer.setdefault(p, []).extend(slices)
        if m.waiting:
            if m.buffer:
                self.poll(g, m, m.token)
            elif failed:
                m.busy = True
                self.kernel.schedule(self.kernel.now + max(g.config.retry_backoff_ms, 1.0), self.poll, g, m, m.token)
            elif not m.pending:
                self.poll(g, m, m.token)  # nothing came within fetch.max.wait.ms: fetch again

    def coordinator_commit_sync(self, gi, mi, token, generation, offsets, slices) -> None:
        accepted = self.coordinator_commit(gi, generation, offsets, None)
        self.consumer_send(COORDINATOR, self.groups[gi].node, self.commit_answer, (gi, mi, token, accepted, slices, offsets))

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
            self._mark_processed(g, t0, slices, None)
            if policy == "after_processing":
                self._commit(g, m, positions)
        self.poll(g, m, m.token)

    def _mark_processed(self, g: Group, t0: float, slices: list, upto: int | None) -> None:
        """Records of a poll are processed one after another from t0; only the first `upto` if given."""
        proc = g.config.processing_ms
        lo_of = self.batch_lo
        done = 0
        for b, first, last, _ in slices:
            n = last - first
            if upto is not None:
                n = min(n, upto - done)
                if n <= 0:
                    break
            start = int(lo_of[b]) + first
            g.processed[start:start + n] += 1
            finish = t0 + proc * np.arange(done + 1, done + n + 1)
            seen = g.first_processed_ms[start:start + n]
            g.first_processed_ms[start:start + n] = np.where(np.isnan(seen), finish, seen)
            done += n

    # ---- commits ------------------------------------------------------------------------

    @staticmethod
    def _known_positions(m: Member) -> dict:
        """What the member would commit: the positions of its partitions (not those still to be reset)."""
        return {p: m.positions[p] for p in m.assignment if m.positions.get(p, RESET) >= 0}

    def _commit(self, g: Group, m: Member, offsets: dict, output=None, sync: bool = False) -> None:
        if not offsets:
            return
        if sync:  # commitSync before revoking: done before the member rejoins
            self.coordinator_commit(g.index, m.generation, offsets, output)
            return
        self.consumer_send(g.node, COORDINATOR, self.coordinator_commit, (g.index, m.generation, offsets, output))

    def coordinator_commit(self, gi: int, generation: int, offsets: dict, output) -> bool:
        """OffsetCommit (with the output, for atomic): refused from a member of an older generation."""
        g = self.groups[gi]
        if generation != g.generation:
            return False
        g.committed.update(offsets)
        if output is not None:
            self._mark_processed(g, *output)
        return True

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
            self._mark_processed(g, t0, slices, done)
        m.processing = None
        m.alive = False
        m.busy = False
        m.token += 1
        self.event(CONSUMER_CRASH, -1, -1, f"group {g.name}: {m.id}")
        hb, timeout = g.config.heartbeat_interval_ms, g.config.session_timeout_ms
        last_heartbeat = m.started_ms + hb * int((now - m.started_ms) // hb)
        self.kernel.schedule(max(last_heartbeat + timeout, now), self._coordinator_expire, g, m)
        if restart_after is not None:
            self.kernel.schedule(now + restart_after, self._restart, g, m.index)

    def _coordinator_expire(self, g: Group, m: Member) -> None:
        m.expired = True
        self.event(CONSUMER_SESSION_EXPIRED, -1, -1, f"group {g.name}: {m.id}")
        g.joined.discard(m.index)
        self.start_rebalance(g, f"{m.id} session expired")

    def _restart(self, g: Group, index: int) -> None:
        """The process comes back as a new member (a new member.id); the old one lingers until it expires."""
        old = g.members[index]
        new = Member(len(g.members), g.name, self.kernel.now, old.incarnation + 1)
        new.id = f"consumer-{g.name}-{index}-{old.incarnation + 1}"
        g.members.append(new)
        self.start_rebalance(g, f"{new.id} joined")

    def join(self, g: Group) -> None:
        g.members.append(Member(len(g.members), g.name, self.kernel.now))
        self.start_rebalance(g, f"{g.members[-1].id} joined")

    def leave(self, g: Group, m: Member) -> None:
        m.leaving = True
        if not m.busy:
            self._member_leave(g, m)

    def _member_leave(self, g: Group, m: Member) -> None:
        """close(): commit if auto-committing, LeaveGroup; the group rebalances at once."""
        if g.config.commit == "auto" and m.assignment:
            self._commit(g, m, self._known_positions(m), sync=True)
        m.alive = False
        m.expired = True
        m.token += 1
        m.assignment = []
        self.event(CONSUMER_LEAVE, -1, -1, f"group {g.name}: {m.id}")
        self.start_rebalance(g, f"{m.id} left")
