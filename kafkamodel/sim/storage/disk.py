"""A broker's disk and the Linux page cache in front of it: writes land in memory, the kernel writes them back.

Kafka appends with ``write()`` into the page cache and leaves flushing to the
OS. Linux (mm/page-writeback.c) writes dirty pages back at the disk's
bandwidth when they pass ``vm.dirty_background_ratio`` of the dirtyable
memory or are older than ``vm.dirty_expire_centisecs``; a process that dirties
pages past the midpoint between the background and the hard limit
(``dirty_freerun_ceiling``) is throttled in ``balance_dirty_pages``, paced
towards the disk's bandwidth, and past ``vm.dirty_ratio`` it waits until
writeback has brought the dirty pages back under the limit.

The model, per broker:

* **dirty pages** are a queue of (time written, bytes), oldest first. Between
  two events the flusher writes the oldest of them back at the disk's write
  bandwidth while the dirty bytes are above the background limit or the
  oldest are older than the expiry (a fluid: no event of its own); what is
  left is the queue's tail. Everything written before the oldest dirty bytes
  is on the disk: what survives a power loss (``durable_before``).
* **an append** of n bytes adds to the dirty pages, and returns how long its
  writer is throttled: nothing up to the freerun ceiling; between it and the
  hard limit all writers together are let through at pos_ratio x the disk's
  bandwidth, each waiting its turn (Linux's pos_ratio, simplified to a straight
  line: twice the bandwidth at the ceiling, the bandwidth at the setpoint
  midway to the limit, nothing at the limit), so many writers settle, as
  Linux's do, with the dirty pages near the setpoint and their total rate at
  the disk's bandwidth; past the hard limit, a writer waits until the excess
  is written back ((dirty - limit) / bandwidth).
* **reads**: the page cache holds the last (memory - JVM heap) bytes written
  on the broker; older data is read from the disk at its read bandwidth plus
  one access latency, one read at a time, and the time the disk spends reading
  is taken from writeback.
* **fsync** of a log writes that log's dirty bytes: the caller pays
  bytes / bandwidth on top of the device's flush latency; those bytes are
  clean afterwards.

Not modelled: the flusher's 5 s wake-up granularity (``vm.dirty_writeback_centisecs``;
expired pages are written as soon as they expire), per-device (JBOD) placement
of partitions (one disk per broker with the machine's total bandwidth), file
system journals (ext4's jbd2 commits), readahead, and the cache's LRU order
(oldest written is evicted first).
"""

from __future__ import annotations

from collections import deque

MIB = 1048576.0
GIB = 1073741824.0
CHUNK_MS = 10.0  # writes within this long of the newest dirty chunk join it (the queue stays short)
MARK_MS = 10.0  # how often the eviction history notes (time, bytes written so far)


class PageCache:
    """One broker's page cache and disk."""

    __slots__ = ("write_per_ms", "read_per_ms", "capacity", "background", "limit", "freerun", "expire_ms",
                 "chunks", "dirty", "clean_credit", "last", "written", "marks", "read_free", "read_debt",
                 "writeback_ms", "read_ms", "stall_ms", "dirty_max", "read_bytes", "read_uncached_bytes",
                 "latency", "cold_before", "quiet_until", "next_mark", "tail", "chunk_until", "admit")

    def __init__(self, write_mib_per_s: float | None, read_mib_per_s: float | None, cache_bytes: float,
                 background_ratio: float, dirty_ratio: float, expire_ms: float, latency):
        self.write_per_ms = None if write_mib_per_s is None else write_mib_per_s * MIB / 1000.0  # bytes per ms
        self.read_per_ms = None if read_mib_per_s is None else read_mib_per_s * MIB / 1000.0
        self.capacity = cache_bytes  # what the page cache holds (memory not taken by the JVM heap)
        self.background = cache_bytes * background_ratio / 100.0  # the flusher starts past this
        self.limit = cache_bytes * dirty_ratio / 100.0  # writers wait past this
        self.freerun = (self.background + self.limit) / 2.0  # writers are throttled past this
        self.expire_ms = expire_ms
        self.latency = latency  # an iterator of the disk's access latency (ms), draw after draw
        self.chunks: deque = deque()  # [time written, bytes] of the dirty pages, oldest first
        self.dirty = 0.0  # dirty bytes
        self.clean_credit = 0.0  # bytes of the queue an fsync already wrote (skipped when their turn comes)
        self.last = 0.0  # when writeback was last brought up to date
        self.written = 0.0  # bytes ever written to the page cache
        self.marks: deque = deque([(0.0, 0.0)])  # (time, bytes written by then), every MARK_MS: eviction history
        self.read_free = 0.0  # when the disk has finished the reads queued so far
        self.read_debt = 0.0  # disk time reads took since `last` (writeback did not have it)
        self.writeback_ms = 0.0  # disk time spent writing back (and fsyncing)
        self.read_ms = 0.0  # disk time spent reading
        self.stall_ms = 0.0  # time writers were throttled or blocked (summed over threads)
        self.dirty_max = 0.0
        self.read_bytes = 0.0  # bytes read by fetches (counted by the readers)
        self.read_uncached_bytes = 0.0  # of them, from the disk
        self.cold_before = float("-inf")  # the machine restarted then: nothing written before is cached
        self.quiet_until = 0.0  # the flusher has nothing to do before this while under the background limit
        self.next_mark = 0.0  # the next note in the eviction history is due then
        self.tail: list | None = None  # the newest dirty chunk ...
        self.chunk_until = float("-inf")  # ... which writes join until then
        self.admit = 0.0  # past the freerun ceiling: when the writes let through so far have had their turn

    # ---- writeback -----------------------------------------------------------------------------------------

    def advance(self, now: float) -> None:
        """Bring the flusher's work up to `now`: the oldest dirty pages written back while over the
        background limit or expired, at the write bandwidth, in the disk time reads left it."""
        dt = now - self.last
        if dt <= 0.0:
            return
        self.last = now
        chunks = self.chunks
        if not chunks:
            self.read_debt = 0.0
            return
        rate = self.write_per_ms
        if rate is None:  # no bandwidth limit: what is due is on the disk at once
            budget = float("inf")
        else:
            spare = dt - self.read_debt
            self.read_debt = -spare if spare < 0.0 else 0.0
            budget = spare * rate if spare > 0.0 else 0.0
        expired = now - self.expire_ms
        written = 0.0
        while chunks and budget > 0.0:
            head = chunks[0]
            if self.dirty <= self.background and head[0] > expired:
                break
            credit = self.clean_credit
            if credit > 0.0:  # bytes an fsync wrote already
                used = credit if credit < head[1] else head[1]
                self.clean_credit -= used
                head[1] -= used
                if head[1] <= 0.0:
                    self._drop_head()
                continue
            # the background flusher writes only what brings it back to the limit; expired pages all
            due = head[1] if head[0] <= expired else min(head[1], self.dirty - self.background)
            n = due if due < budget else budget
            head[1] -= n
            self.dirty -= n
            budget -= n
            written += n
            if head[1] <= 0.0:
                self._drop_head()
            elif n < due:
                break
            elif head[0] > expired:
                break  # back under the background limit with this chunk partly written
        if rate is not None:
            self.writeback_ms += written / rate

    def _drop_head(self) -> None:
        """The oldest dirty chunk is written back whole (new writes no longer join it if it was the newest)."""
        if self.chunks.popleft() is self.tail:
            self.chunk_until = float("-inf")

    def append(self, now: float, nbytes: float) -> float:
        """`nbytes` written into the page cache now: how long the writer is throttled (ms)."""
        dirty = self.dirty + nbytes
        if now < self.quiet_until and dirty <= self.background:
            self.last = now  # nothing was due since the last update: the flusher had no work (advance's result)
        else:
            self.advance(now)
            dirty = self.dirty + nbytes
            chunks = self.chunks
            self.quiet_until = (chunks[0][0] if chunks else now) + self.expire_ms if not self.read_debt else now
        self.dirty = dirty
        written = self.written = self.written + nbytes
        if now >= self.next_mark:
            self.marks.append((now, written))
            self.next_mark = now + MARK_MS
        if now < self.chunk_until:
            self.tail[1] += nbytes
        else:
            self.tail = [now, nbytes]
            self.chunks.append(self.tail)
            self.chunk_until = now + CHUNK_MS
        if dirty > self.dirty_max:
            self.dirty_max = dirty
        if dirty <= self.freerun:
            return 0.0
        rate = self.write_per_ms
        if rate is None:
            return 0.0
        admit = self.admit if self.admit > now else now
        if dirty >= self.limit:  # balance_dirty_pages: wait until writeback brings it under the limit
            admit += (dirty - self.limit) / rate
        else:  # all writers together let through at pos_ratio x the disk's bandwidth, each waiting its turn
            pos = (dirty - self.freerun) / (self.limit - self.freerun)
            admit += nbytes / (rate * 2.0 * (1.0 - pos))
        self.admit = admit
        pause = admit - now
        self.stall_ms += pause
        return pause

    def fsync(self, now: float, nbytes: float) -> float:
        """An fsync writes `nbytes` of dirty data now (one log's): the disk time it takes beyond its flush
        latency; those bytes are clean afterwards."""
        self.advance(now)
        n = nbytes if nbytes < self.dirty else self.dirty
        if n <= 0.0:
            return 0.0
        self.dirty -= n
        self.clean_credit += n
        rate = self.write_per_ms
        if rate is None:
            return 0.0
        ms = n / rate
        self.writeback_ms += ms
        return ms

    def durable_before(self, now: float) -> float:
        """Everything written before this time is on the disk (the oldest dirty page's time)."""
        self.advance(now)
        chunks = self.chunks
        return chunks[0][0] if chunks else now

    # ---- reads --------------------------------------------------------------------------------------------------

    def evicted_before(self) -> float:
        """Data written before this time has left the page cache (the last `capacity` bytes written stay)."""
        target = self.written - self.capacity
        marks = self.marks
        if target <= 0.0:
            return self.cold_before
        while len(marks) > 1 and marks[1][1] <= target:
            marks.popleft()
        return marks[0][0] if marks[0][0] > self.cold_before else self.cold_before

    def power_loss(self, now: float) -> None:
        """The machine lost power: its dirty pages are gone (the logs lose them) and its cache is cold."""
        self.advance(now)
        self.chunks.clear()
        self.chunk_until = float("-inf")
        self.dirty = self.clean_credit = 0.0
        self.cold_before = now

    def read(self, now: float, uncached: float) -> float:
        """A fetch reads `uncached` bytes the page cache no longer holds (callers count every byte they read in
        ``read_bytes``): when the disk has read them, one read at a time."""
        self.read_uncached_bytes += uncached
        if self.read_per_ms is None:
            return now
        start = self.read_free if self.read_free > now else now
        took = next(self.latency) + uncached / self.read_per_ms
        self.read_free = start + took
        self.read_ms += took
        self.advance(now)
        self.read_debt += took
        self.quiet_until = 0.0  # the writeback that debt takes from is worked out at the next write
        return self.read_free
