"""A broker's side of consumer fetches: Kafka's ReplicaManager.fetchMessages for a consumer, and DelayedFetch.

A consumer's fetch names partitions and an offset for each (or ``RESET``:
auto.offset.reset chooses), with the leader epoch of its metadata. It is
answered at once when it finds ``fetch.min.bytes`` below the HW (or an error);
else it waits in purgatory until the HW brings them, or ``fetch.max.wait.ms``
passes. Before 0.8.2 (Kafka 0.8.1, ``kafka.version: "0.8.1"``) a moving HW
answered no parked fetch: a produce to one of its partitions (or an acks=-1
request's acknowledgement there) added its bytes to the fetch's count, and once
the count reached ``fetch.min.bytes`` the fetch was answered with what was below
the HW then, often nothing (0.8.1's ``KafkaApis.maybeUnblockDelayedFetchRequests``
and ``FetchRequestPurgatory.checkSatisfied``; KAFKA-1430 changed it in 0.8.2). Each
partition gives whole batches below the HW (``Log.read``), up to
``max.partition.fetch.bytes``, and ``fetch.max.bytes`` in all, sliced to the
records the consumer has not had.

Fetch from follower (KIP-392, 2.4; docs/zones.md). A leader whose broker sets
``replica.selector.class`` asks its selector for each partition of a consumer's
fetch (``rules.replica_selector``); when the selector names another replica,
the answer carries no records, only that preferred read replica, and the
consumer fetches there. From 2.4 a consumer may fetch from any replica: a
follower serves records below the HW it knows (it learns the leader's HW from
its own fetch answers), after checking the consumer's leader epoch against the
one it was told (older: UNKNOWN_LEADER_EPOCH, newer: FENCED_LEADER_EPOCH). A
fetch parked on a follower is answered when a fetch answer moves the follower's
HW from 3.4 (KAFKA-14334: ``ReplicaFetcherThread`` completes the purgatory);
before, only when ``fetch.max.wait.ms`` passes.
"""

from __future__ import annotations

from ..protocol import (CLIENT, CONSUMER_CONN, FENCED_LEADER_EPOCH, NETWORK_EXCEPTION, NONE, NOT_LEADER_OR_FOLLOWER,
                        OFFSET_OUT_OF_RANGE, UNKNOWN_LEADER_EPOCH, ConsumerFetchPartition)
from ..rules.replica_selector import ReplicaView, make_selector, preferred_read_replica
from ..state import Replica

RESET = -1  # a consumer position still to be set by auto.offset.reset


class DelayedFetch:
    """A consumer's fetch at one broker (waiting in purgatory while it finds too little)."""

    __slots__ = ("broker", "gi", "mi", "token", "fid", "parts", "done", "uncached", "accumulated", "incarnation",
                 "on_followers", "unknown")

    def __init__(self, broker: int, gi: int, mi: int, token: int, fid: int, parts: list, incarnation: int):
        self.broker, self.gi, self.mi, self.token, self.fid = broker, gi, mi, token, fid
        self.parts = parts  # (partition, offset, the leader epoch of the consumer's metadata) asked
        self.done = False
        self.uncached = 0  # bytes its last read found out of the page cache
        self.accumulated = 0  # before 0.8.2: bytes found when parked plus those produced to its partitions since
        self.incarnation = incarnation  # the broker process it reached (a new one never answers it)
        self.on_followers: list = []  # partitions it read from this broker's follower replicas
        self.unknown: set = set()  # partitions its first read sent elsewhere (a preferred read replica): parked, they
        # count no bytes (their offset metadata is UnknownOffsetMetadata: DelayedFetch.tryComplete skips them)


class ConsumerFetchHandler:
    """Every broker's consumer fetches."""

    MESSAGES = ("handle_consumer_fetch",)  # through the server
    TIMERS = ("_wait_expired",)  # fetch.max.wait.ms

    def __init__(self, sim):
        self.kernel = sim.kernel
        self.send = sim.transport.send
        self.brokers = sim.brokers
        self.replicas = sim.replicas
        self.batches = sim.batches
        self.caches = sim.caches  # broker -> its page cache and disk
        settings = sim.settings
        kafka = settings.kafka
        self.selector = make_selector(settings.broker.replica_selector_class)  # KIP-392: None without one
        self.racks = settings.racks  # broker -> broker.rack (() without racks)
        self.in_isr_only = kafka.preferred_replica_in_isr  # 3.4 (KAFKA-14372)
        self.followers_serve = kafka.kip392  # 2.4: a consumer's fetch carries its client metadata: any replica serves
        self.preferred_at_once = kafka.preferred_replica_answers_at_once  # 3.3 (KAFKA-13767)
        self.wake_on_follower_hw = kafka.follower_completes_delayed_fetch  # 3.4 (KAFKA-14334)
        self.at_followers: dict[tuple[int, int], dict] = {}  # (partition, broker) -> fetches parked on that follower
        self.server = self.groups = self.consumer_handle_fetch = None  # wired
        self.leader_hint = None  # wired: the replica manager's KIP-951 hint (broker, partition -> leader, epoch),
        # carried in the preferred-read-replica field, which an error leaves unused

    def wire(self, server, consumers) -> None:
        self.server = server
        self.groups = consumers.groups
        self.consumer_handle_fetch = consumers.handle_fetch

    def handle_consumer_fetch(self, broker, gi, mi, token, fid, parts) -> None:
        """A consumer's fetch for its partitions here, read by a handler thread: answered at once if it finds
        fetch.min.bytes below the HW (or an error), else when the HW brings them, or after fetch.max.wait.ms."""
        fetch = DelayedFetch(broker, gi, mi, token, fid, parts, self.brokers[broker].incarnation)
        ready = self.server.departure
        answer, found = self._read(fetch)
        if found >= self.groups[gi].config.fetch_min_bytes or any(
                a.error_code or (self.preferred_at_once and a.preferred_read_replica >= 0) for a in answer):
            self._answer(fetch, answer, ready, broker)
            return
        fetch.accumulated = found
        fetch.unknown = {a.partition for a in answer if a.preferred_read_replica >= 0}  # (before 3.3: KAFKA-13767)
        for p, _, _ in parts:
            rep = self.replicas[p].get(broker)
            if rep is not None and rep.is_leader:
                rep.lead.consumer_parked[fetch] = True
        for p in fetch.on_followers:
            self.at_followers.setdefault((p, broker), {})[fetch] = True
        self.kernel.schedule(self.kernel.now + self.groups[gi].config.fetch_max_wait_ms, self._wait_expired, fetch)

    def _read(self, fetch: DelayedFetch) -> tuple[list[ConsumerFetchPartition], int]:
        """Per partition its answer, and the bytes found: whole batches below the HW, up to
        max.partition.fetch.bytes each and fetch.max.bytes in all (the first batch always); or a preferred read
        replica (KIP-392: no records)."""
        cfg = self.groups[fetch.gi].config
        budget = cfg.fetch_max_bytes
        answer, total = [], 0
        cut = self.caches[fetch.broker].evicted_before()  # what was written before this has left the page cache
        fetch.uncached = 0
        fetch.on_followers = []
        for p, pos, epoch in fetch.parts:
            rep = self.replicas[p].get(fetch.broker)
            if rep is None or not (rep.is_leader or self.followers_serve):
                answer.append(ConsumerFetchPartition(p, pos, [], pos, NOT_LEADER_OR_FOLLOWER,
                                                     *self.leader_hint(fetch.broker, p)))
                continue
            if not rep.is_leader:  # a follower (KIP-392): below the HW it knows, for the epoch it was told
                if rep.leader_epoch != epoch:
                    code = UNKNOWN_LEADER_EPOCH if rep.leader_epoch < epoch else FENCED_LEADER_EPOCH
                    answer.append(ConsumerFetchPartition(p, pos, [], pos, code, *self.leader_hint(fetch.broker, p)))
                    continue
                fetch.on_followers.append(p)
            log = rep.log
            if pos == RESET:
                pos = rep.high_watermark if cfg.auto_offset_reset == "latest" else log.log_start_offset
            if pos < log.log_start_offset or pos > log.log_end_offset:
                answer.append(ConsumerFetchPartition(p, pos, [], pos, OFFSET_OUT_OF_RANGE))
                continue
            hw = rep.high_watermark
            if self.selector is not None and rep.is_leader:
                preferred = self._preferred(rep, cfg.client_rack, pos)
                if preferred >= 0:  # the read is skipped: the consumer is sent to the replica
                    answer.append(ConsumerFetchPartition(p, pos, [], pos, NONE, preferred))
                    if pos < hw and p not in fetch.unknown:  # a parked fetch counts what it would find (tryComplete)
                        total += log.read(pos, hw, min(cfg.max_partition_fetch_bytes, budget), not total)[2]
                    continue
            i, j, size = log.read(pos, hw, min(cfg.max_partition_fetch_bytes, budget), not total)
            if size and log.instants[log.append_at[i - log.forgotten]] < cut:
                fetch.uncached += log.bytes_written_before(i, j, cut)
            slices, nxt = [], pos
            bases = log.bases
            ends = bases[i + 1:j + 1]  # each batch ends where the next begins, the last at the LEO
            if j == log.rows:
                ends.append(log.log_end_offset)
            for base, end, b in zip(bases[i:j], ends, log.batch_ids[i:j]):
                lo, hi = max(base, nxt), min(end, hw)
                if b >= 0:
                    slices.append((b, lo - base, hi - base, lo))
                nxt = hi
            total += size
            budget -= size
            answer.append(ConsumerFetchPartition(p, pos, slices, nxt, NONE))
        return answer, total

    def _preferred(self, rep: Replica, client_rack: str | None, offset: int) -> int:
        """findPreferredReadReplica: the replica the leader's selector names for this consumer (-1: this one)."""
        lead, now, racks = rep.lead, self.kernel.now, self.racks
        leo = rep.log.log_end_offset
        leader = ReplicaView(rep.broker, racks[rep.broker] if racks else None, leo, 0.0)
        followers = []
        for b, other in self.replicas[rep.partition].items():
            if b == rep.broker:
                continue
            f_leo = lead.follower_leo(b)  # the offset of its last fetch, as the leader knows it
            view = ReplicaView(b, racks[b] if racks else None, f_leo, now - lead.caught_up_ms(b, leo))
            followers.append((view, other.log.log_start_offset))
        return preferred_read_replica(self.selector, client_rack, leader, followers, offset, self.in_isr_only,
                                      lead.isr)

    def _answer(self, fetch: DelayedFetch, answer: list, ready: float, src: int) -> None:
        self._forget(fetch)
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

    def _forget(self, fetch: DelayedFetch) -> None:
        """The fetch is done: it leaves every purgatory it waits in."""
        fetch.done = True
        for p, _, _ in fetch.parts:
            rep = self.replicas[p].get(fetch.broker)
            lead = rep.lead if rep is not None else None
            if lead is not None:
                lead.consumer_parked.pop(fetch, None)
            waiting = self.at_followers.get((p, fetch.broker))
            if waiting is not None:
                waiting.pop(fetch, None)
                if not waiting:
                    del self.at_followers[(p, fetch.broker)]

    def hw_moved(self, rep: Replica) -> None:
        """The HW moved: parked consumer fetches that now find fetch.min.bytes are answered."""
        now = self.kernel.now
        for fetch in list(rep.lead.consumer_parked):
            if fetch.done:
                continue
            answer, found = self._read(fetch)
            if found >= self.groups[fetch.gi].config.fetch_min_bytes:
                self._answer(fetch, answer, now, fetch.broker)

    def hw_learned(self, broker: int, parts: list) -> None:
        """3.4+ (KAFKA-14334): a fetch answer reached follower `broker` (``FollowerRole.handle_response``'s
        partitions): the consumer fetches parked on its replicas of them that now find fetch.min.bytes are answered."""
        now = self.kernel.now
        for part in parts:
            waiting = self.at_followers.get((part[0], broker))
            if not waiting:
                continue
            for fetch in list(waiting):
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
            answer = [ConsumerFetchPartition(p, pos, [], pos, NOT_LEADER_OR_FOLLOWER,
                                             *((-1, -1) if src == CLIENT else self.leader_hint(rep.broker, p)))
                      for p, pos, _ in fetch.parts]  # (a reset connection names nothing)
            self._answer(fetch, answer, self.kernel.now, src)
        rep.lead.consumer_parked = {}

    def reset(self, broker: int) -> None:
        """The broker's process died and its kernel resets its connections: the consumer fetches parked on its
        follower replicas fail (NETWORK_EXCEPTION, from CLIENT: no process answers)."""
        for (p, b), waiting in list(self.at_followers.items()):
            if b != broker:
                continue
            for fetch in list(waiting):
                if not fetch.done:
                    answer = [ConsumerFetchPartition(q, pos, [], pos, NETWORK_EXCEPTION) for q, pos, _ in fetch.parts]
                    self._answer(fetch, answer, self.kernel.now, CLIENT)

    def _wait_expired(self, fetch: DelayedFetch) -> None:
        if fetch.done:
            return
        if fetch.on_followers:
            b = self.brokers[fetch.broker]
            if not b.up or b.incarnation != fetch.incarnation:  # its process is gone (a power cut): no answer comes
                self._forget(fetch)
                return
        answer, _ = self._read(fetch)
        self._answer(fetch, answer, self.kernel.now, fetch.broker)
