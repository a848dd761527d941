"""The leader's side of consumer fetches: Kafka's ReplicaManager.fetchMessages for a consumer, and DelayedFetch.

A consumer's fetch names its partitions led by this broker and an offset for
each (or ``RESET``: auto.offset.reset chooses). It is answered at once when
it finds ``fetch.min.bytes`` below the HW (or an error); else it waits in
purgatory until the HW brings them, or ``fetch.max.wait.ms`` passes. Before
0.8.2 (Kafka 0.8.1, ``kafka.version: "0.8.1"``) a moving HW answered no
parked fetch: a produce to one of its partitions (or an acks=-1 request's
acknowledgement there) added its bytes to the fetch's count, and once the
count reached ``fetch.min.bytes`` the fetch was answered with what was below
the HW then, often nothing (0.8.1's ``KafkaApis.maybeUnblockDelayedFetchRequests``
and ``FetchRequestPurgatory.checkSatisfied``; KAFKA-1430 changed it in 0.8.2). Each
partition gives whole batches below the HW (``Log.read``), up to
``max.partition.fetch.bytes``, and ``fetch.max.bytes`` in all, sliced to the
records the consumer has not had.
"""

from __future__ import annotations

from ..protocol import CONSUMER_CONN, NONE, NOT_LEADER_OR_FOLLOWER, OFFSET_OUT_OF_RANGE, ConsumerFetchPartition
from ..state import Replica

RESET = -1  # a consumer position still to be set by auto.offset.reset


class DelayedFetch:
    """A consumer's fetch at one leader broker (waiting in purgatory while it finds too little)."""

    __slots__ = ("broker", "gi", "mi", "token", "fid", "parts", "done", "uncached", "accumulated")

    def __init__(self, broker: int, gi: int, mi: int, token: int, fid: int, parts: list):
        self.broker, self.gi, self.mi, self.token, self.fid = broker, gi, mi, token, fid
        self.parts = parts  # (partition, offset) asked
        self.done = False
        self.uncached = 0  # bytes its last read found out of the page cache
        self.accumulated = 0  # before 0.8.2: bytes found when parked plus those produced to its partitions since


class ConsumerFetchHandler:
    """Every leader broker's consumer fetches."""

    MESSAGES = ("handle_consumer_fetch",)  # through the server
    TIMERS = ("_wait_expired",)  # fetch.max.wait.ms

    def __init__(self, sim):
        self.kernel = sim.kernel
        self.send = sim.transport.send
        self.replicas = sim.replicas
        self.batches = sim.batches
        self.caches = sim.caches  # broker -> its page cache and disk
        self.server = self.groups = self.consumer_handle_fetch = None  # wired

    def wire(self, server, consumers) -> None:
        self.server = server
        self.groups = consumers.groups
        self.consumer_handle_fetch = consumers.handle_fetch

    def handle_consumer_fetch(self, broker, gi, mi, token, fid, parts) -> None:
        """A consumer's fetch for its partitions led here, read by a handler thread: answered at once if it
        finds fetch.min.bytes below the HW (or an error), else when the HW brings them, or after fetch.max.wait.ms."""
        fetch = DelayedFetch(broker, gi, mi, token, fid, parts)
        ready = self.server.departure
        answer, found = self._read(fetch)
        if found >= self.groups[gi].config.fetch_min_bytes or any(a.error_code for a in answer):
            self._answer(fetch, answer, ready, broker)
            return
        fetch.accumulated = found
        for p, _ in parts:
            self.replicas[p][broker].lead.consumer_parked[fetch] = True
        self.kernel.schedule(self.kernel.now + self.groups[gi].config.fetch_max_wait_ms, self._wait_expired, fetch)

    def _read(self, fetch: DelayedFetch) -> tuple[list[ConsumerFetchPartition], int]:
        """Per partition its answer, and the bytes found: whole batches below the HW, up to
        max.partition.fetch.bytes each and fetch.max.bytes in all (the first batch always)."""
        cfg = self.groups[fetch.gi].config
        budget = cfg.fetch_max_bytes
        answer, total = [], 0
        cut = self.caches[fetch.broker].evicted_before()  # what was written before this has left the page cache
        fetch.uncached = 0
        for p, pos in fetch.parts:
            rep = self.replicas[p][fetch.broker]
            if not rep.is_leader:
                answer.append(ConsumerFetchPartition(p, pos, [], pos, NOT_LEADER_OR_FOLLOWER))
                continue
            log = rep.log
            if pos == RESET:
                pos = rep.high_watermark if cfg.auto_offset_reset == "latest" else log.log_start_offset
            if pos < log.log_start_offset or pos > log.log_end_offset:
                answer.append(ConsumerFetchPartition(p, pos, [], pos, OFFSET_OUT_OF_RANGE))
                continue
            hw = rep.high_watermark
            i, j, size = log.read(pos, hw, min(cfg.max_partition_fetch_bytes, budget), not total)
            if size and log.append_ms[i] < cut:
                fetch.uncached += log.bytes_written_before(i, j, cut)
            slices, nxt = [], pos
            for base, end, _, b in log.entries[i:j]:
                lo, hi = max(base, nxt), min(end, hw)
                if b >= 0:
                    slices.append((b, lo - base, hi - base, lo))
                nxt = hi
            total += size
            budget -= size
            answer.append(ConsumerFetchPartition(p, pos, slices, nxt, NONE))
        return answer, total

    def _answer(self, fetch: DelayedFetch, answer: list, ready: float, src: int) -> None:
        fetch.done = True
        for p, _ in fetch.parts:
            lead = self.replicas[p][fetch.broker].lead
            if lead is not None:
                lead.consumer_parked.pop(fetch, None)
        bytes_of = self.batches.bytes
        nbytes = sum(bytes_of[s[0]] for a in answer for s in a.records)
        args = (fetch.gi, fetch.mi, fetch.token, fetch.fid, fetch.broker, answer)
        node = self.groups[fetch.gi].node
        if src == fetch.broker:
            if nbytes:  # sendfile from the page cache, or from the disk once read
                cache = self.caches[src]
                cache.read_bytes += nbytes
                if fetch.uncached:
                    there = cache.read(self.kernel.now, fetch.uncached)
                    ready = there if there > ready else ready
            self.server.respond(src, ready, node, self.consumer_handle_fetch, args, nbytes=nbytes, kind=CONSUMER_CONN)
        else:  # the dead process's kernel resets the connection
            self.send(src, node, self.consumer_handle_fetch, args, conn=CONSUMER_CONN)

    def hw_moved(self, rep: Replica) -> None:
        """The HW moved: parked consumer fetches that now find fetch.min.bytes are answered."""
        now = self.kernel.now
        for fetch in list(rep.lead.consumer_parked):
            if fetch.done:
                continue
            answer, found = self._read(fetch)
            if found >= self.groups[fetch.gi].config.fetch_min_bytes:
                self._answer(fetch, answer, now, fetch.broker)

    def produced(self, rep: Replica, nbytes: int) -> None:
        """Before 0.8.2: `nbytes` were produced to this partition (or acknowledged there at acks=-1): each parked
        fetch adds them to its count, and one whose count reaches fetch.min.bytes is answered with what is below
        the HW now (0.8.1's FetchRequestPurgatory.checkSatisfied, then readMessageSets)."""
        now = self.kernel.now
        for fetch in list(rep.lead.consumer_parked):
            if fetch.done:
                continue
            fetch.accumulated += nbytes
            if fetch.accumulated >= self.groups[fetch.gi].config.fetch_min_bytes:
                answer, _ = self._read(fetch)
                self._answer(fetch, answer, now, fetch.broker)

    def release(self, rep: Replica, src: int) -> None:
        """The leader steps down or its process dies: parked consumer fetches are answered now, this partition
        with NOT_LEADER_OR_FOLLOWER (from `src`: the broker, or CLIENT for a connection its dead process's
        kernel resets)."""
        for fetch in list(rep.lead.consumer_parked):
            if fetch.done:
                continue
            answer = [ConsumerFetchPartition(p, pos, [], pos, NOT_LEADER_OR_FOLLOWER) for p, pos in fetch.parts]
            self._answer(fetch, answer, self.kernel.now, src)
        rep.lead.consumer_parked = {}

    def _wait_expired(self, fetch: DelayedFetch) -> None:
        if not fetch.done:
            answer, _ = self._read(fetch)
            self._answer(fetch, answer, self.kernel.now, fetch.broker)
