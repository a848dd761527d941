"""Replica fetcher threads (Kafka's ReplicaFetcherManager and AbstractFetcherThread's request side).

Each broker runs ``num.replica.fetchers`` fetcher threads per leader broker
it follows; a partition goes to thread ``abs(31 * hash(topic) + partition)
% num.replica.fetchers`` (Java's string hash, as Kafka's
AbstractFetcherManager). A thread keeps one request outstanding at its
leader: a fetch for all its partitions (incrementally from 1.1: only those
whose offset changed, KIP-227; before, every fetch names every partition and
its answer carries every one of them, records or not), or first an OffsetsForLeaderEpoch for the ones that
must learn where to truncate. What comes back is the follower's to process
(``follower``); then the thread spends its processing time and fetches again
at once. A partition the leader refuses waits ``replica.fetch.backoff.ms``; a
leader that cannot be reached, or does not answer for
``replica.socket.timeout.ms``, holds the whole thread back likewise.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..protocol import OffsetForLeaderPartition
from ..state import Replica


def java_string_hash(text: str) -> int:
    """Java's String.hashCode (32-bit, wrapping)."""
    h = 0
    for ch in text.encode("utf-16-be").decode("utf-16-be"):
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def fetcher_id(topic: str, partition: int, fetchers: int) -> int:
    """AbstractFetcherManager.getFetcherId: Utils.abs(31 * topic.hashCode + partition) % num.replica.fetchers."""
    x = (31 * java_string_hash(topic) + partition) & 0xFFFFFFFF
    x = x - (1 << 32) if x >= 1 << 31 else x
    return (0 if x == -(1 << 31) else abs(x)) % fetchers


class Fetcher:
    """One replica fetcher thread: a follower broker fetching from one leader broker."""

    __slots__ = ("key", "follower", "leader", "parts", "changed", "truncating", "delayed", "forgotten", "outstanding",
                 "full", "sent_ms", "busy_until", "busy_ms", "kick_armed", "wake_at")

    def __init__(self, key: tuple):
        self.key = key  # (leader, follower, fetcher id): its session's name at the leader
        self.leader, self.follower, _ = key
        self.parts: dict[int, Replica] = {}  # partitions it fetches (or truncates), in the order added
        self.changed: dict[int, Replica] = {}  # partitions to put in the next request (new, or their offset moved),
        #                                        with their replicas (as in `parts`)
        self.truncating: dict[int, bool] = {}  # partitions to ask OffsetsForLeaderEpoch for first (not delayed)
        self.delayed: dict[int, float] = {}  # partitions held back after an error, until when
        self.forgotten: list[int] = []  # partitions to drop from the session with the next request
        self.outstanding = 0  # the id of its request at the leader (0: none)
        self.full = True  # the next fetch sends every partition (a new session)
        self.sent_ms = 0.0
        self.busy_until = 0.0  # the thread is processing a response until then
        self.busy_ms = 0.0  # processing time so far
        self.kick_armed = False  # a send is scheduled for this instant
        self.wake_at = 0.0  # a send is scheduled for when a delayed partition may go again


class ReplicaFetcherManager:
    """Every broker's replica fetcher threads: which thread fetches which partition, and their requests."""

    MESSAGES = ("refused", "connection_reset")
    TIMERS = ("check_socket_timeout", "_wake", "_kick")

    def __init__(self, sim):
        self.kernel = sim.kernel
        self.cpu_run = sim.cpu.run  # the follower machine's cores
        self.sessionless = not sim.settings.kafka.fetch_sessions  # before 1.1: no incremental fetch sessions
        self.send = sim.transport.send
        self.timer = sim.transport.timer
        self.counters = sim.recorder.counters
        cfg = sim.settings.broker
        self.backoff_ms = cfg.replica_fetch_backoff_ms
        self.socket_timeout_ms = cfg.replica_socket_timeout_ms
        self.fetchers_per_pair = cfg.num_replica_fetchers
        self.fetcher_of = [fetcher_id(p.topic, p.number, self.fetchers_per_pair) for p in sim.partitions]
        self.fetchers: dict[tuple, Fetcher] = {}
        self.next_request = 0
        self.retired_busy_ms = 0.0  # the busiest fetcher thread that is gone (its broker died)
        self.server_request = self.sessions_handle_fetch = self.leader_handle_epoch_query = None  # wired
        self.on_refused = self.refused  # bound once: every fetch request carries it

    def wire(self, server, sessions, leader) -> None:
        self.server_request, self.sessions_handle_fetch = server.request, sessions.handle_fetch
        self.leader_handle_epoch_query = leader.handle_epoch_query

    def busiest_ms(self) -> float:
        """The processing time of the busiest fetcher thread of the run."""
        return max([self.retired_busy_ms] + [f.busy_ms for f in self.fetchers.values()])

    # ---- which thread fetches what ------------------------------------------------------------------------------

    def start_fetching(self, rep: Replica) -> None:
        """Fetch the partition from its leader, from our LEO."""
        self._add(rep, truncating=False)

    def start_truncating(self, rep: Replica) -> None:
        """Ask the leader where our last epoch ends (OffsetsForLeaderEpoch) before fetching."""
        self._add(rep, truncating=True)

    def _add(self, rep: Replica, truncating: bool) -> None:
        if rep.leader < 0 or rep.is_leader:
            return
        key = (rep.leader, rep.broker, self.fetcher_of[rep.partition])
        f = self.fetchers.get(key)
        if f is None:
            f = self.fetchers[key] = Fetcher(key)
        if rep.fetcher is not f:
            self.stop_fetching(rep)
        rep.fetcher = f
        rep.truncating = truncating
        rep.delayed_until = 0.0
        p = rep.partition
        f.parts[p] = rep
        f.delayed.pop(p, None)
        if truncating:
            f.truncating[p] = True
        else:
            f.truncating.pop(p, None)
            f.changed[p] = rep
        self._kick_soon(f)

    def stop_fetching(self, rep: Replica) -> None:
        f = rep.fetcher
        if f is None:
            return
        rep.fetcher = None
        p = rep.partition
        if f.parts.pop(p, None) is not None:
            f.changed.pop(p, None)
            f.truncating.pop(p, None)
            f.delayed.pop(p, None)
            f.forgotten.append(p)

    def drop_broker(self, b: int) -> None:
        """Broker b's process died: its fetcher threads are gone (a restart starts new ones)."""
        for key in [k for k in self.fetchers if k[1] == b]:
            f = self.fetchers.pop(key)
            self.retired_busy_ms = max(self.retired_busy_ms, f.busy_ms)
            for rep in f.parts.values():
                rep.fetcher = None
            f.parts.clear()

    # ---- sending ------------------------------------------------------------------------------------------------

    def _kick_soon(self, f: Fetcher) -> None:
        """Send once everything happening at this instant has been added (partitions join one request)."""
        if not f.kick_armed and not f.outstanding:
            f.kick_armed = True
            self.timer(f.follower, 0.0, self._kick, f)

    def _wake(self, f: Fetcher) -> None:
        f.wake_at = 0.0
        self._kick(f)

    def _kick(self, f: Fetcher) -> None:
        """Send the thread's next request, unless one is out or the thread is gone."""
        f.kick_armed = False
        if f.outstanding or self.fetchers.get(f.key) is not f:
            return
        self.request(f)

    def request(self, f: Fetcher, cost: float = 0.0, blocked: float = 0.0) -> None:
        """The thread's next request, once it has spent `cost` ms of CPU processing an answer (one at a time) and
        waited `blocked` ms on the disk (an fsync, the page cache throttling its write):
        OffsetsForLeaderEpoch for the partitions that must truncate, else a fetch with the partitions whose
        offset changed."""
        f.kick_armed = False
        now = self.kernel.now
        if cost > 0.0 or blocked > 0.0:
            start = f.busy_until if f.busy_until > now else now
            f.busy_until = self.cpu_run(f.follower, start, cost) + blocked
            f.busy_ms += f.busy_until - start
            delay = f.busy_until - now
        else:
            delay = 0.0
        depart = now + delay
        if f.delayed:
            self._release_delayed(f, depart)
        self.next_request += 1
        req = self.next_request
        if f.truncating:
            entries = [OffsetForLeaderPartition(p, f.parts[p].log.last_epoch()) for p in f.truncating]
            f.outstanding, f.sent_ms = req, depart
            self.send(f.follower, f.leader, self.server_request,
                      (f.leader, None, self.leader_handle_epoch_query, (f.key, req, entries), len(entries), 0),
                      refused=self.on_refused, delay=delay)
            return
        if not f.parts or (f.delayed and len(f.parts) <= len(f.delayed)):  # nothing to fetch until a delay ends
            if f.delayed:
                waiting = min(f.delayed.values())
                if not f.wake_at or waiting < f.wake_at:
                    f.wake_at = waiting
                    self.timer(f.follower, waiting - now, self._wake, f)
            return
        parts, delayed, changed = f.parts, f.delayed, f.changed
        full = f.full
        # (protocol.FETCH_PARTITION) every partition it fetches (full), or the changed ones (each one it fetches: a
        # partition leaves `changed` as it leaves `parts`), but those held back
        fetched = parts if full else changed  # p -> its replica, either way
        wanted = []  # (a loop: a comprehension's own call costs more than it saves on a request of a few partitions)
        for p, rep in fetched.items():
            if delayed and p in delayed:
                continue
            wanted.append((p, rep.log.log_end_offset, rep.leader_epoch))
        forgotten: Sequence[int]
        if f.forgotten:
            forgotten, f.forgotten = f.forgotten, []
        else:
            forgotten = ()  # the usual fetch drops nothing: no new list for it
        f.full = self.sessionless  # before KIP-227 (1.1) every fetch is a full one
        f.changed = {}
        f.outstanding, f.sent_ms = req, depart
        self.counters.fetch_requests += 1
        self.send(f.follower, f.leader, self.server_request,
                  (f.leader, None, self.sessions_handle_fetch, (f.key, req, wanted, forgotten, full), len(wanted), 0),
                  True, self.on_refused, 0, 0, delay)

    def _release_delayed(self, f: Fetcher, at: float) -> None:
        """Partitions whose delay has ended by `at` are fetched (or truncated) again."""
        for p, until in list(f.delayed.items()):
            if until <= at:
                del f.delayed[p]
                rep = f.parts.get(p)
                if rep is not None:
                    rep.delayed_until = 0.0
                    if rep.truncating:
                        f.truncating[p] = True
                    else:
                        f.changed[p] = rep

    def refused(self, leader: int, conn, handler, args: tuple, partitions: int, nbytes: int) -> None:
        """The leader's process is down: every partition of the thread waits replica.fetch.backoff.ms."""
        key, req = args[0], args[1]
        f = self.fetchers.get(key)
        if f is None or f.outstanding != req:
            return
        self._hold_back(f)

    def connection_reset(self, key: tuple, req: int) -> None:
        """The leader's process died and its kernel reset the connection: as refused."""
        f = self.fetchers.get(key)
        if f is not None and f.outstanding == req:
            self._hold_back(f)

    def leader_died(self, b: int) -> None:
        """Fetchers waiting on broker b hear its connections reset (each on its own broker's clock)."""
        for key, f in self.fetchers.items():
            if key[0] == b and f.outstanding:
                self.send(f.follower, f.follower, self.connection_reset, (key, f.outstanding))

    def _hold_back(self, f: Fetcher) -> None:
        f.outstanding = 0
        f.full = True
        until = self.kernel.now + self.backoff_ms
        for p, rep in f.parts.items():
            rep.delayed_until = until
            f.delayed[p] = until
        f.truncating = {}
        self._kick(f)

    def check_socket_timeout(self, b: int) -> None:
        """A fetcher of broker b whose leader has not answered for replica.socket.timeout.ms gives up on that
        request and starts again."""
        timeout = self.socket_timeout_ms
        now = self.kernel.now
        for key, f in list(self.fetchers.items()):
            if key[1] == b and f.outstanding and now - f.sent_ms >= timeout:
                self._hold_back(f)
        self.timer(b, timeout / 2, self.check_socket_timeout, b)

    def delay(self, f: Fetcher, rep: Replica, now: float) -> None:
        """The leader refused the partition: it waits replica.fetch.backoff.ms, then is sent again."""
        rep.delayed_until = now + self.backoff_ms
        p = rep.partition
        f.delayed[p] = rep.delayed_until  # sent again (re-added to the session) when the delay ends
        f.changed.pop(p, None)
        f.truncating.pop(p, None)
        f.forgotten.append(p)
