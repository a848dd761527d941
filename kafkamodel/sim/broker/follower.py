"""The follower: what a replica fetcher thread does with its leader's answers, and truncation on a leader change
(Kafka's ReplicaFetcherThread.processPartitionData and truncate; KafkaReplication.tla's FollowerReplicate and
BecomeFollowerAndTruncateTo).

A fetch answer's records are appended where the follower's log ends, and the
leader's HW taken (capped at its own LEO); an OFFSET_OUT_OF_RANGE truncates to
the leader's LEO; a leader whose log starts past ours restarts ours there; a
refused partition waits. An OffsetsForLeaderEpoch answer says where to
truncate (KIP-101, KIP-279). The threads themselves, and their requests, are
``fetcher``'s.
"""

from __future__ import annotations

from array import array

from ..protocol import LOG_START_MOVED, NONE, OFFSET_OUT_OF_RANGE
from ..results.measures import TRUNCATION
from ..state import Replica


class FollowerRole:
    """Every broker's follower replicas."""

    MESSAGES = ("handle_response", "handle_epoch_answer")

    def __init__(self, sim):
        self.kernel = sim.kernel
        self.batches = sim.batches
        self.truncation = sim.truncation
        self.counters = sim.recorder.counters
        self.event = sim.recorder.event
        self.flush_messages = sim.flush_messages  # fsync after this many appended records (0: never forced)
        self.fsync = sim.fsync  # one fsync's duration, draw after draw
        self.caches = sim.caches  # broker -> its page cache and disk
        self.allocate = sim.cpu.allocate  # the JVM's heap: what a fetcher reads into it
        self.allocated, self.young_bytes, self.request_bytes = sim.cpu.allocated, sim.cpu.young_bytes, sim.cpu.request_bytes
        self.retention_on = sim.retention_on
        costs = sim.settings.costs  # a fetcher thread's processing of an answer: per answer, partition, KiB
        self.response_ms = costs.fetcher_response_us / 1000.0
        self.partition_ms = costs.fetcher_partition_us / 1000.0
        self.byte_ms = (costs.fetcher_kib_us + costs.crc32_kib_us) / 1024.0 / 1000.0  # Log.append checks it too
        self.fetchers = self.leader = None  # wired
        self.threads: dict = {}  # wired: the fetcher threads by key (leader, follower, fetcher id)
        # its partitions' fetcher threads (where truncation rules, faults and the leader find them): wired
        self.start_fetching = self.start_truncating = self.stop_fetching = None
        self.drop_broker = self.leader_died = self.busiest_ms = None
        self.hw_waiters, self.hw_learned = {}, None  # wired (3.4+): consumer fetches parked on followers (KIP-392)

    def wire(self, fetchers, leader) -> None:
        self.fetchers, self.leader, self.threads = fetchers, leader, fetchers.fetchers
        self.start_fetching, self.start_truncating = fetchers.start_fetching, fetchers.start_truncating
        self.stop_fetching, self.drop_broker = fetchers.stop_fetching, fetchers.drop_broker
        self.leader_died, self.busiest_ms = fetchers.leader_died, fetchers.busiest_ms
        if leader.consumer_fetch.wake_on_follower_hw:  # KAFKA-14334 (3.4): the fetcher completes their purgatory
            self.hw_waiters, self.hw_learned = leader.consumer_fetch.at_followers, leader.consumer_fetch.hw_learned

    # ---- the leader's answers -----------------------------------------------------------------------------------

    def handle_response(self, key: tuple, req: int, parts: list) -> None:
        """FollowerReplicate: a fetch response, per partition (protocol.FETCH_RESPONSE_PARTITION) records and the
        HW, or an error."""
        f = self.threads.get(key)
        if f is None or f.outstanding != req:
            return
        f.outstanding = 0
        now = self.kernel.now
        size = 0
        fsync = 0.0
        flushed = False
        bytes_of = self.batches.bytes
        mine, changed = f.parts, f.changed
        retention_on, flush_messages = self.retention_on, self.flush_messages
        taken: array | None = None  # the batches of the several-batch answers (an array once there is one)
        for p, error, hw, chunk, log_start_offset, log_end_offset in parts:
            rep = mine.get(p)
            if rep is None or rep.truncating or rep.delayed_until > now:
                continue
            if error != NONE:
                self._refused(f, rep, p, error, log_start_offset, log_end_offset, now)
                continue
            log = rep.log
            if chunk:
                bases, epochs, ids, end = chunk  # a log.Chunk
                if bases.__class__ is int:  # one batch (the usual answer): its fields themselves
                    if bases != log.log_end_offset:  # not where we are: fetch again from our LEO
                        changed[p] = rep
                        continue
                    log.append(bases, end, epochs, ids, now)
                    if ids >= 0:
                        size += bytes_of[ids]
                    if retention_on:
                        log.segment_append(bases, ids, now)
                else:
                    if bases[0] != log.log_end_offset:
                        changed[p] = rep
                        continue
                    log.extend(chunk, now)
                    if taken is None:
                        taken = ids[:]
                    else:
                        taken += ids
                    if retention_on:
                        for base, b in zip(bases, ids):
                            log.segment_append(base, b, now)
                log.producers = None  # a follower's producer state is rebuilt from its log if it comes to lead
                if flush_messages and log.needs_flush(flush_messages):
                    log.flushed(log.begin_flush())  # the thread fsyncs before it fetches again
                    fsync += next(self.fsync)
                    flushed = True
                changed[p] = rep
                rep.high_watermark = hw if hw < end else end  # the LEO now (capped at ours)
            else:
                leo = log.log_end_offset
                rep.high_watermark = hw if hw < leo else leo
        if taken is not None:  # the several-batch answers' bytes, summed once (a control record has none)
            size += sum(map(bytes_of.__getitem__, taken)) if min(taken) >= 0 else sum(
                bytes_of[b] for b in taken if b >= 0)
        # the thread reads the answer into its heap, writes the records into the page cache (throttled when too
        # much is dirty) and fsyncs what it must; then it goes on at once
        blocked = fsync
        if size:
            follower = f.follower
            a = self.allocated[follower] + size + self.request_bytes  # cpu.allocate's usual case inline
            if a < self.young_bytes:
                self.allocated[follower] = a
            else:
                self.allocate(follower, size)
            cache = self.caches[follower]
            blocked += cache.append(now, size)
            if flushed:
                blocked += cache.fsync(now, size)
        if self.hw_waiters:  # consumers parked on these replicas (KIP-392) see the HW the answer brought (3.4+)
            self.hw_learned(f.follower, parts)
        # (processFetchRequest goes through every partition of the answer: those with records append them)
        self.fetchers.request(f, self.response_ms + self.partition_ms * len(parts) + self.byte_ms * size, blocked)

    def _refused(self, f, rep: Replica, p: int, error: int, log_start_offset: int, log_end_offset: int,
                 now: float) -> None:
        """A partition of the answer came with an error instead of records."""
        if error == OFFSET_OUT_OF_RANGE:  # we have more than the leader: truncate to its LEO
            self.truncate(rep, log_end_offset, "offset out of range: to leader's log end offset")
            f.changed[p] = rep
        elif error == LOG_START_MOVED:  # truncateFullyAndStartAt: the leader deleted what we need
            rep.restart_log_at(log_start_offset)
            self.event(TRUNCATION, p, rep.broker, f"below the leader's log start: log restarts at {log_start_offset}")
            f.changed[p] = rep
        else:  # NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH: wait, then try again
            self.fetchers.delay(f, rep, now)

    def handle_epoch_answer(self, key: tuple, req: int, answers: list) -> None:
        """OffsetsForLeaderEpoch answered, an EpochEndOffset each: truncate where the leader says (KIP-101, KIP-279)."""
        f = self.threads.get(key)
        if f is None or f.outstanding != req:
            return
        f.outstanding = 0
        now = self.kernel.now
        rule = self.truncation
        for p, error, asked, epoch, end in answers:
            rep = f.parts.get(p)
            if rep is None or not rep.truncating:
                continue
            if error:
                self.fetchers.delay(f, rep, now)
                continue
            self.truncate(rep, rule.target(rep, epoch, end), f"to end of leader epoch {epoch}")
            if not rule.ask_again(rep, asked, epoch):  # KIP-279: else ask again with our new last epoch
                rep.truncating = False
                f.truncating.pop(p, None)
                f.changed[p] = rep
        self.fetchers.request(f, self.response_ms)

    # ---- changes of role ---------------------------------------------------------------------------------------

    def become_follower_and_truncate(self, rep: Replica, leader: int, epoch: int) -> None:
        """BecomeFollowerAndTruncateTo: follow `leader` in `epoch`; the version's truncation rule says where the log
        is cut (at once to the HW, or after asking the leader where our last epoch ends) before fetching."""
        self.leader.resign(rep)
        self.stop_fetching(rep)
        rep.leader = leader
        rep.leader_epoch = epoch
        if leader >= 0:
            self.truncation.begin(self, rep)

    def truncate(self, rep: Replica, offset: int, why: str) -> int:
        """Cut a replica's log at `offset`; an event says how much went, and how much of it belongs to batches
        some leader committed (at these offsets, or resent at others) (also a power loss's cut)."""
        log = rep.log
        if offset >= log.log_end_offset:
            return 0
        i = log.entry_index(offset)
        committed, count = self.batches.committed, self.batches.count
        gone = sum(count[b] for b in log.batch_ids[i:log.rows] if b >= 0 and committed(b))
        removed = rep.truncate_to(offset)
        self.counters.truncated_offsets += removed
        detail = f"{why}: removed {removed} offsets, LEO now {log.log_end_offset}"
        if gone:
            detail += f"; {gone} of them committed (here, or resent at other offsets)"
            self.counters.committed_records_truncated += gone
        self.event(TRUNCATION, rep.partition, rep.broker, detail)
        return removed
