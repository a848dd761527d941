"""Consumer groups: membership, eager rebalances, fetching below the HW, commits.

Each member loops: poll (fetch from one assigned partition's leader, records
below the HW only, at most ``max.poll.records``), process them
(``processing.ms`` each), commit as its policy says, poll again:

* ``before_processing`` (at most once): commit the new position, then process;
* ``after_processing`` (at least once): process, then commit;
* ``auto``: at a poll, every ``auto.commit.interval.ms``, commit the positions
  (what earlier polls returned);
* ``atomic`` (exactly once): output and offset are stored together: the
  records count as processed only when their commit is accepted.

The group coordinator (reliable here) starts a rebalance on join, leave and
on a member silent for ``session.timeout.ms``. Rebalances are eager: every
member revokes everything (an auto-committing member commits first) before
the new assignment, so no partition is ever owned by two members.
"""

from __future__ import annotations

import numpy as np

from .assignors import assign

CLIENT, COORDINATOR = -1, -2
CONSUMER_CONN = 1  # consumers' connections and latency stream (Simulation.send's `conn`)
RESET = -1  # position unknown: auto.offset.reset decides at the leader
NOT_LEADER, OUT_OF_RANGE = 1, 2


class Member:
    __slots__ = ("index", "id", "alive", "assignment", "positions", "cursor", "token", "fetch_id",
                 "started_ms", "last_commit_ms", "processing", "busy", "leaving", "generation", "incarnation", "expired")

    def __init__(self, index: int, group: str, now: float, incarnation: int = 0):
        self.index = index  # place in the group's member list
        self.id = f"consumer-{group}-{index}" + (f"-{incarnation}" if incarnation else "")  # member.id (sorted as strings)
        self.alive = True  # the process runs
        self.assignment: list[int] = []  # global partition indices it owns
        self.positions: dict[int, int] = {}  # partition -> next offset to fetch (RESET: ask auto.offset.reset)
        self.cursor = 0  # round robin over its partitions
        self.token = 0  # bumps on revoke/crash: answers to older requests are void
        self.fetch_id = 0  # the fetch it waits for
        self.started_ms = now  # heartbeats run from here
        self.last_commit_ms = now  # auto commit clock
        self.processing = None  # (t0, slices, partition, next offset) while processing a poll
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
    __slots__ = ("index", "name", "cfg", "partitions", "members", "committed", "generation", "rebalancing",
                 "joined", "previous", "processed", "first_processed_ms", "rebalances", "origin")

    def __init__(self, index: int, cfg: dict, partitions: list[int], records: int):
        self.index = index
        self.name = cfg["group"]  # group.id
        self.cfg = cfg
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


class ConsumerActor:
    def init_consumers(self) -> None:
        n = self.workload.records
        self.groups: list[Group] = []
        for i, c in enumerate(self.scenario["consumers"]):
            first = self.topic_first[c["topic"]]
            count = next(t["partitions"] for t in self.scenario["topics"] if t["name"] == c["topic"])
            self.groups.append(Group(i, c, list(range(first, first + count)), n))

    def consumer_send(self, src: int, dst: int, action, args: tuple, refused=None) -> None:
        """A consumer or coordinator message: on the consumers' own connections (not queued
        behind produce traffic), with latencies from their own random stream."""
        self.send(src, dst, action, args, refused=refused, conn=CONSUMER_CONN)

    def start_consumers(self) -> None:
        for g in self.groups:
            g.members = [Member(i, g.name, 0.0) for i in range(g.cfg["members"])]
            self.group_start_rebalance(g, "initial join")

    def group_by_name(self, name: str) -> Group:
        return next(g for g in self.groups if g.name == name)

    # ---- rebalances ---------------------------------------------------------------

    def group_start_rebalance(self, g: Group, why: str) -> None:
        if not g.rebalancing:
            g.rebalancing = True
            g.joined = set()
            g.rebalances += 1
            self.event("rebalance_start", -1, -1, f"group {g.name}: {why}")
        for m in g.members:
            if m.alive and not m.busy:
                self._member_join(g, m)
        self._group_maybe_complete(g)

    def _member_join(self, g: Group, m: Member) -> None:
        """The member revokes what it owns (committing first if it auto-commits) and rejoins."""
        if m.index in g.joined:
            return
        if m.assignment:
            if g.cfg["commit"] == "auto":
                self._consumer_commit(g, m, self._known_positions(m), sync=True)
            self.event("consumer_revoke", -1, -1, f"group {g.name}: {m.id} revokes {self._names(m.assignment)}")
        m.assignment = []
        m.token += 1
        g.joined.add(m.index)
        self._group_maybe_complete(g)

    def _group_maybe_complete(self, g: Group) -> None:
        members = {m.index for m in g.members if m.in_group}
        if g.rebalancing and members <= g.joined:
            # JoinGroup and SyncGroup: two round trips to the coordinator
            draw = self.draws[CONSUMER_CONN]
            delay = draw() + draw() + draw() + draw()
            self.kernel.schedule(self.kernel.now + delay, self.group_complete_rebalance, g, g.rebalances)

    def group_complete_rebalance(self, g: Group, rebalance: int) -> None:
        if not g.rebalancing or rebalance != g.rebalances:
            return
        if not {m.index for m in g.members if m.in_group} <= g.joined:
            return  # someone joined meanwhile; it completes when that one has joined
        members = [m for m in g.members if m.in_group]
        plan = assign(g.cfg["partition.assignment.strategy"], [m.id for m in members], g.partitions, g.previous)
        g.previous = plan
        g.generation += 1
        g.rebalancing = False
        now = self.kernel.now
        for m in members:
            m.assignment = list(plan.get(m.id, []))
            m.positions = {p: g.committed.get(p, RESET) for p in m.assignment}
            m.generation = g.generation
            m.token += 1
            self.event("consumer_assign", -1, -1, f"group {g.name} generation {g.generation}: {m.id} gets {self._names(m.assignment)}")
            if m.assignment:
                self.kernel.schedule(now, self.consumer_poll, g, m, m.token)

    def _names(self, parts: list[int]) -> str:
        return "[" + ", ".join(self.partitions[p].name for p in parts) + "]"

    # ---- the poll loop --------------------------------------------------------------

    def consumer_poll(self, g: Group, m: Member, token: int) -> None:
        if not m.alive or token != m.token:
            return
        m.busy = False
        if m.leaving:
            self._member_leave(g, m)
            return
        if g.rebalancing:
            self._member_join(g, m)
            return
        if not m.assignment:
            return
        now = self.kernel.now
        cfg = g.cfg
        if cfg["commit"] == "auto" and now - m.last_commit_ms >= cfg["auto.commit.interval.ms"]:
            self._consumer_commit(g, m, self._known_positions(m))
            m.last_commit_ms = now
        p = m.assignment[m.cursor % len(m.assignment)]
        m.cursor += 1
        leader = self.partitions[p].leader  # the client's metadata, refreshed from the controller
        if leader < 0:
            self.kernel.schedule(now + max(cfg["retry.backoff.ms"], 1.0), self.consumer_poll, g, m, m.token)
            m.busy = True
            return
        m.busy = True
        m.fetch_id += 1
        self.consumer_send(CLIENT, leader, self.leader_handle_consumer_fetch,
                  (leader, g.index, m.index, m.token, m.fetch_id, p, m.positions[p]), refused=self._consumer_refused)
        # no answer (leader cut off or stuck): give up after request.timeout.ms (30 s) and poll again
        self.kernel.schedule(now + cfg["fetch.max.wait.ms"] + 30000.0, self._consumer_fetch_timeout, g, m, m.token, m.fetch_id)

    def _consumer_refused(self, leader, gi, mi, token, fid, p, pos) -> None:
        self.consumer_handle_fetch(gi, mi, token, fid, p, pos, [], pos, NOT_LEADER)

    def _consumer_fetch_timeout(self, g: Group, m: Member, token: int, fid: int) -> None:
        if m.alive and token == m.token and fid == m.fetch_id and m.processing is None:
            m.fetch_id += 1
            self.consumer_poll(g, m, m.token)

    def leader_handle_consumer_fetch(self, broker, gi, mi, token, fid, p, pos) -> None:
        rep = self.replicas[p][broker]
        g = self.groups[gi]
        if not rep.is_leader:
            self.consumer_send(broker, CLIENT, self.consumer_handle_fetch, (gi, mi, token, fid, p, pos, [], pos, NOT_LEADER))
            return
        if pos == RESET:
            pos = rep.high_watermark if g.cfg["auto.offset.reset"] == "latest" else rep.log_start_offset
        if pos < rep.log_start_offset or pos > rep.log_end_offset:
            self.consumer_send(broker, CLIENT, self.consumer_handle_fetch, (gi, mi, token, fid, p, pos, [], pos, OUT_OF_RANGE))
            return
        if pos >= rep.high_watermark:  # nothing committed to read (or a new leader's HW still behind): long poll
            rep.consumer_parked[(gi, mi, fid)] = (token, p, pos)
            self.kernel.schedule(self.kernel.now + g.cfg["fetch.max.wait.ms"], self._consumer_wait_expired, rep, gi, mi, fid)
            return
        self._leader_answer_consumer(rep, gi, mi, token, fid, p, pos)

    def _leader_answer_consumer(self, rep, gi, mi, token, fid, p, pos) -> None:
        """Records from `pos` up to the HW, at most max.poll.records, as (batch, first, last+1, offset) slices."""
        budget = self.groups[gi].cfg["max.poll.records"]
        hw = rep.high_watermark
        log = rep.log
        i = rep.entry_index(pos)
        slices, nxt = [], pos
        while i < len(log) and budget > 0 and log[i][0] < hw:
            base, end, _, b = log[i]
            lo, hi = max(base, nxt), min(end, hw)
            if b >= 0:
                hi = min(hi, lo + budget)
                slices.append((b, lo - base, hi - base, lo))
                budget -= hi - lo
            nxt = hi
            i += 1
        self.consumer_send(rep.broker, CLIENT, self.consumer_handle_fetch, (gi, mi, token, fid, p, pos, slices, nxt, 0))

    def leader_wake_consumers(self, rep) -> None:
        """The HW moved: parked consumer fetches are answered."""
        parked, rep.consumer_parked = rep.consumer_parked, {}
        for (gi, mi, fid), (token, p, pos) in parked.items():
            self._leader_answer_consumer(rep, gi, mi, token, fid, p, pos)

    def leader_release_consumers(self, rep, src: int) -> None:
        """The leader steps down or its process dies: parked consumer fetches hear NOT_LEADER_OR_FOLLOWER
        (from `src`: the broker, or CLIENT for a connection its dead process's kernel resets)."""
        for (gi, mi, fid), (token, p, pos) in rep.consumer_parked.items():
            self.consumer_send(src, CLIENT, self.consumer_handle_fetch, (gi, mi, token, fid, p, pos, [], pos, NOT_LEADER))

    def _consumer_wait_expired(self, rep, gi, mi, fid) -> None:
        parked = rep.consumer_parked.pop((gi, mi, fid), None)
        if parked is not None:
            token, p, pos = parked
            self.consumer_send(rep.broker, CLIENT, self.consumer_handle_fetch, (gi, mi, token, fid, p, pos, [], pos, 0))

    def consumer_handle_fetch(self, gi, mi, token, fid, p, pos, slices, nxt, error) -> None:
        g = self.groups[gi]
        m = g.members[mi]
        if not m.alive or token != m.token or fid != m.fetch_id:
            return
        now = self.kernel.now
        if error:
            if error == OUT_OF_RANGE:
                m.positions[p] = RESET  # auto.offset.reset at the next fetch; what it skips is lost to the group
                self.event("offset_reset", p, -1, f"group {g.name}: {m.id} at {pos} is out of range")
            self.kernel.schedule(now + max(g.cfg["retry.backoff.ms"], 1.0), self.consumer_poll, g, m, m.token)
            return
        if m.positions.get(p) == RESET and p not in g.origin:
            g.origin[p] = pos  # where auto.offset.reset put the group first: nothing before is its to lose
        m.positions[p] = nxt
        if not slices:
            self.consumer_poll(g, m, m.token)
            return
        if g.cfg["commit"] == "before_processing":  # commitSync, then process only if it went through
            m.processing = (None, slices, p, nxt)  # fetched, not started: lost if the member dies now
            self.consumer_send(CLIENT, COORDINATOR, self.coordinator_commit_sync, (gi, mi, m.token, m.generation, {p: nxt}, slices, p, nxt))
            return
        self._consumer_process(g, m, slices, p, nxt)

    def coordinator_commit_sync(self, gi, mi, token, generation, offsets, slices, p, nxt) -> None:
        accepted = self.coordinator_commit(gi, generation, offsets, None)
        self.consumer_send(COORDINATOR, CLIENT, self.consumer_commit_answer, (gi, mi, token, accepted, slices, p, nxt))

    def consumer_commit_answer(self, gi, mi, token, accepted, slices, p, nxt) -> None:
        g = self.groups[gi]
        m = g.members[mi]
        if not m.alive or token != m.token:
            return
        if accepted:
            self._consumer_process(g, m, slices, p, nxt)
        else:  # CommitFailedException: the group moved on; these records are not ours to process
            m.processing = None
            self.consumer_poll(g, m, m.token)

    def _consumer_process(self, g: Group, m: Member, slices: list, p: int, nxt: int) -> None:
        now = self.kernel.now
        count = sum(s[2] - s[1] for s in slices)
        m.processing = (now, slices, p, nxt)
        self.kernel.schedule(now + count * g.cfg["processing.ms"], self.consumer_done_processing, g, m, m.token)

    def consumer_done_processing(self, g: Group, m: Member, token: int) -> None:
        if not m.alive or token != m.token or m.processing is None:
            return
        t0, slices, p, nxt = m.processing
        m.processing = None
        policy = g.cfg["commit"]
        if policy == "atomic":
            self._consumer_commit(g, m, {p: nxt}, output=(t0, slices, None))
        else:
            self._mark_processed(g, t0, slices, None)
            if policy == "after_processing":
                self._consumer_commit(g, m, {p: nxt})
        self.consumer_poll(g, m, m.token)

    def _mark_processed(self, g: Group, t0: float, slices: list, upto: int | None) -> None:
        """Records of a poll are processed one after another from t0; only the first `upto` if given."""
        proc = g.cfg["processing.ms"]
        lo_of = self.workload.batch_lo
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

    def _consumer_commit(self, g: Group, m: Member, offsets: dict, output=None, sync: bool = False) -> None:
        if not offsets:
            return
        if sync:  # commitSync before revoking: done before the member rejoins
            self.coordinator_commit(g.index, m.generation, offsets, output)
            return
        self.consumer_send(CLIENT, COORDINATOR, self.coordinator_commit, (g.index, m.generation, offsets, output))

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

    def consumer_crash(self, g: Group, m: Member, restart_after: float | None) -> None:
        """The member's process dies mid-poll: the records it finished processing stay processed
        (an atomic member's uncommitted output is rolled back); nothing else is committed."""
        if not m.alive:
            return
        now = self.kernel.now
        if m.processing is not None and m.processing[0] is not None and g.cfg["commit"] != "atomic":
            t0, slices, _, _ = m.processing
            proc = g.cfg["processing.ms"]
            done = int((now - t0) / proc) if proc > 0 else sum(s[2] - s[1] for s in slices)
            self._mark_processed(g, t0, slices, done)
        m.processing = None
        m.alive = False
        m.busy = False
        m.token += 1
        self.event("consumer_crash", -1, -1, f"group {g.name}: {m.id}")
        hb, timeout = g.cfg["heartbeat.interval.ms"], g.cfg["session.timeout.ms"]
        last_heartbeat = m.started_ms + hb * int((now - m.started_ms) // hb)
        self.kernel.schedule(max(last_heartbeat + timeout, now), self._coordinator_expire, g, m)
        if restart_after is not None:
            self.kernel.schedule(now + restart_after, self._consumer_restart, g, m.index)

    def _coordinator_expire(self, g: Group, m: Member) -> None:
        m.expired = True
        self.event("consumer_session_expired", -1, -1, f"group {g.name}: {m.id}")
        g.joined.discard(m.index)
        self.group_start_rebalance(g, f"{m.id} session expired")

    def _consumer_restart(self, g: Group, index: int) -> None:
        """The process comes back as a new member (a new member.id); the old one lingers until it expires."""
        old = g.members[index]
        new = Member(len(g.members), g.name, self.kernel.now, old.incarnation + 1)
        new.id = f"consumer-{g.name}-{index}-{old.incarnation + 1}"
        g.members.append(new)
        self.group_start_rebalance(g, f"{new.id} joined")

    def consumer_join(self, g: Group) -> None:
        g.members.append(Member(len(g.members), g.name, self.kernel.now))
        self.group_start_rebalance(g, f"{g.members[-1].id} joined")

    def consumer_leave(self, g: Group, m: Member) -> None:
        m.leaving = True
        if not m.busy:
            self._member_leave(g, m)

    def _member_leave(self, g: Group, m: Member) -> None:
        """close(): commit if auto-committing, LeaveGroup; the group rebalances at once."""
        if g.cfg["commit"] == "auto" and m.assignment:
            self._consumer_commit(g, m, self._known_positions(m), sync=True)
        m.alive = False
        m.expired = True
        m.token += 1
        m.assignment = []
        self.event("consumer_leave", -1, -1, f"group {g.name}: {m.id}")
        self.group_start_rebalance(g, f"{m.id} left")
