"""The consumers' Fetcher: fetch requests to the partitions' leaders and the buffer poll takes from.

Each member fetches as Kafka's consumer does: one fetch per leader broker
for all its assigned partitions there that have nothing buffered, at most one
in flight per broker (``fetch.min.bytes``, ``fetch.max.bytes``,
``max.partition.fetch.bytes``, ``fetch.max.wait.ms`` at the leader); what
comes back waits in its buffer until a poll takes it. A fetch unanswered for
``request.timeout.ms`` (beyond ``fetch.max.wait.ms``) is given up. The
leader's side of a consumer fetch is in ``broker.leader``.
"""

from __future__ import annotations

from ..protocol import CONSUMER_CONN, NOT_LEADER_OR_FOLLOWER, OFFSET_OUT_OF_RANGE
from ..results.measures import OFFSET_RESET

RESET = -1  # position unknown: auto.offset.reset decides at the leader


class Fetcher:
    """Every consumer member's fetches and buffered records."""

    MESSAGES = ("handle_fetch", "refused")
    TIMERS = ("fetch_timeout",)

    def __init__(self, sim, groups: list, server, leader):
        self.kernel = sim.kernel
        self.send = sim.transport.send
        self.partitions = sim.partitions
        self.counters = sim.recorder.counters
        self.event = sim.recorder.event
        self.groups = groups  # the consumer groups (the leader reads their fetch settings)
        self.server_request = server.request
        self.leader_handle_consumer_fetch = leader.handle_consumer_fetch

    def connect(self, consumer) -> None:
        """The poll loop an answer wakes (built after it: it fetches through it)."""
        self.poll = consumer.poll

    def take(self, m, budget: int) -> tuple[list, dict]:
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

    def send_fetches(self, g, m) -> None:
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
            self.send(g.node, leader, self.server_request,
                      (leader, None, self.leader_handle_consumer_fetch,
                       (leader, g.index, m.index, m.token, m.fetch_id, parts), len(parts), 0),
                      refused=self.refused, conn=CONSUMER_CONN)
            # no answer (leader cut off or stuck): give up after request.timeout.ms
            self.kernel.schedule(now + g.config.fetch_max_wait_ms + g.config.request_timeout_ms, self.fetch_timeout,
                                 g, m, m.token, leader, m.fetch_id)

    def refused(self, leader, conn, handler, args, partitions, nbytes) -> None:
        _, gi, mi, token, fid, parts = args
        self.handle_fetch(gi, mi, token, fid, leader, [(p, pos, [], pos, NOT_LEADER_OR_FOLLOWER) for p, pos in parts])

    def fetch_timeout(self, g, m, token: int, leader: int, fid: int) -> None:
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
