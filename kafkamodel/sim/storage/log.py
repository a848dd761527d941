"""A replica's log: entries with offsets and leader epochs, segments, flushes, retention, producer state.

An entry is a ``LogEntry``, a plain tuple ``(base_offset, end_offset,
leader_epoch, batch)`` read through the field constants ``BASE_OFFSET``,
``END_OFFSET``, ``LEADER_EPOCH``, ``BATCH`` (or unpacked into names): ``batch``
indexes the producer batch it holds (``CONTROL``, -1, for a control record
such as a quorum leader's epoch marker, one offset and no data). The log end
offset (LEO) is the next offset to be written. What survives a power loss is
what was fsynced (``flushed_offset``) or written back by the OS.

The idempotent producer's state (each producer's last five entries here)
lives with the log, as Kafka's ProducerStateManager does (``producer_state``);
it is dropped on truncation and rebuilt from the entries when next needed.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from itertools import repeat
from operator import itemgetter

CONTROL = -1  # batch id of a control record (one offset, no data records)
EMPTY: list = []  # shared by every log that has retired nothing (``retire`` gives a log its own list)
_base = itemgetter(0)  # an entry's base offset: the key its bisections search the entries by


# A record batch in a log (Kafka's RecordBatch as the log holds it): a plain tuple, its fields named by position.
# Not a named tuple: every fetch reads entries, and CPython 3.11 specialises neither a named tuple's attribute
# reads nor its indexing or unpacking (measured: named-tuple entries cost the one-partition bench ~1.3% of its
# instructions, under valgrind)
LogEntry = tuple[int, int, int, int]
BASE_OFFSET = 0  # its first offset
END_OFFSET = 1  # one past its last offset
LEADER_EPOCH = 2  # the epoch of the leader that wrote it
BATCH = 3  # the producer batch it holds (an index of the batch table), or CONTROL


class Log:
    __slots__ = ("entries", "append_ms", "log_start_offset", "log_end_offset", "flushed_offset", "flush_target",
                 "segment_bytes", "batch_bytes", "segments", "retired", "producers")

    def __init__(self, segment_bytes: int, batch_bytes: array):
        self.entries: list[LogEntry] = []  # in offset order
        self.append_ms: list[float] = []  # when each entry reached this broker's page cache
        self.log_start_offset = 0  # first offset still in the log (retention deletes whole segments below it)
        self.log_end_offset = 0  # LEO: next offset to be written
        self.flushed_offset = 0  # on disk (fsynced) below this offset
        self.flush_target = 0  # an fsync under way makes the log durable up to here
        self.segment_bytes = segment_bytes  # segment.bytes in force
        self.batch_bytes = batch_bytes  # the batch table's sizes (a batch id -> bytes)
        self.segments: list | None = None  # [base offset, bytes, last append ms] per segment; None: (re)build
        self.retired: list = EMPTY  # entries retention deleted (they were there: not lost)
        self.producers: dict | None = None  # producer -> BatchMetadata of its last 5 batches here; None: rebuild

    # ---- reading ---------------------------------------------------------------------------------------------

    def last_epoch(self) -> int:
        """Leader epoch of the last entry (-1 for an empty log)."""
        return self.entries[-1][LEADER_EPOCH] if self.entries else -1

    def entry_index(self, offset: int) -> int:
        """Index of the entry holding `offset` (or the first one after it)."""
        i = bisect_right(self.entries, offset, key=_base) - 1
        if i < 0:
            return 0
        return i if self.entries[i][END_OFFSET] > offset else i + 1

    def read(self, offset: int, max_offset: int, max_bytes: int, min_one: bool) -> tuple[int, int, int]:
        """Kafka's Log.read: whole batches from the one holding `offset`, those starting below `max_offset`
        (the LEO for a follower, the HW for a consumer), up to `max_bytes` of batch data; with `min_one`
        (Kafka's minOneMessage: nothing given yet in the response) the first batch even if it is larger.
        Returns (first index, end index, bytes): the batches are ``entries[first:end]``; an end short of the
        log's last entry below `max_offset` means the next batch did not fit."""
        entries = self.entries
        n = len(entries)
        # a reader usually lacks just the last entry: found without a search (entry_index)
        i = n - 1 if n and entries[-1][BASE_OFFSET] == offset else self.entry_index(offset)
        bytes_of = self.batch_bytes
        j, size = i, 0
        while j < n:
            base, _, _, b = entries[j]
            if base >= max_offset:
                break
            if b >= 0:
                grown = size + bytes_of[b]
                if grown > max_bytes and (j > i or not min_one):
                    break
                size = grown
            j += 1
        return i, j, size

    def bytes_written_before(self, i: int, j: int, cut: float) -> int:
        """Bytes of the batches ``entries[i:j]`` that reached this broker's page cache before `cut` (evicted
        from it since: a read of them goes to the disk)."""
        times = self.append_ms
        if i >= j or times[i] >= cut:
            return 0
        k = bisect_left(times, cut, i, j)
        bytes_of = self.batch_bytes
        return sum(bytes_of[e[BATCH]] for e in self.entries[i:k] if e[BATCH] >= 0)

    def end_offset_for_epoch(self, epoch: int, end: int) -> tuple[int, int]:
        """Kafka's LeaderEpochFileCache.endOffsetFor over the epochs of this log, the last one ending at `end`:
        (the largest epoch <= `epoch`, where it ends: where the next higher one starts); an epoch older than
        every epoch here gives (`epoch`, where the first one starts); an undefined epoch, an empty log or an
        epoch newer than the last, (-1, -1) (KIP-279's UNDEFINED)."""
        entries = self.entries
        if epoch < 0 or not entries or epoch > entries[-1][LEADER_EPOCH]:
            return -1, -1
        for base, _, e, _ in reversed(entries):
            if e <= epoch:
                return e, end
            end = base
        return epoch, end

    def first_offset_after_epoch(self, epoch: int) -> int:
        """Where the first epoch later than `epoch` starts here (the LEO if none): where `epoch` ends in this log."""
        end = self.log_end_offset
        for base, _, e, _ in reversed(self.entries):
            if e <= epoch:
                break
            end = base
        return end

    def durable_offset(self, cutoff: float) -> int:
        """End of the log that survives a power loss: fsynced, or written back by the OS (every entry that reached
        the page cache before `cutoff`: ``disk.PageCache.durable_before``)."""
        i = bisect_left(self.append_ms, cutoff)  # entries the OS has written back (appended before the cutoff)
        written_back = self.entries[i - 1][END_OFFSET] if i else 0
        return max(self.flushed_offset, written_back)

    def batches(self) -> list[int]:
        return [e[BATCH] for e in self.entries]

    # ---- writing ---------------------------------------------------------------------------------------------

    def append(self, entry: LogEntry, now: float) -> None:
        self.entries.append(entry)
        self.append_ms.append(now)
        self.log_end_offset = entry[END_OFFSET]

    def extend(self, entries: list[LogEntry], now: float) -> None:
        if len(entries) == 1:  # a follower's usual fetch: one batch (append's lines: no call on the hot path)
            entry = entries[0]
            self.entries.append(entry)
            self.append_ms.append(now)
            self.log_end_offset = entry[END_OFFSET]
            return
        self.entries.extend(entries)
        self.append_ms.extend(repeat(now, len(entries)))
        self.log_end_offset = entries[-1][END_OFFSET]

    def needs_flush(self, flush_messages: int) -> bool:
        """log.flush.interval.messages (> 0; callers skip 0, "never"): are that many records unflushed (and no
        fsync already covers them)?"""
        return self.log_end_offset - max(self.flushed_offset, self.flush_target) >= flush_messages

    def begin_flush(self) -> int:
        """An fsync of everything written so far starts; returns the offset it makes durable when it ends."""
        self.flush_target = self.log_end_offset
        return self.flush_target

    def flushed(self, offset: int) -> None:
        """An fsync ended: the log is durable up to `offset` (what truncation left of it)."""
        offset = min(offset, self.log_end_offset)
        if offset > self.flushed_offset:
            self.flushed_offset = offset

    def truncate_to(self, offset: int) -> int:
        """Drop every entry that ends past `offset` (a batch is removed whole); returns the offsets removed."""
        if offset >= self.log_end_offset:
            return 0
        i = self.entry_index(offset)  # an entry straddling `offset` goes whole, as Kafka drops whole batches
        del self.entries[i:]
        del self.append_ms[i:]
        self.producers = None  # the idempotence state is rebuilt from what remains
        self.segments = None
        old = self.log_end_offset
        self.log_end_offset = self.entries[-1][END_OFFSET] if self.entries else self.log_start_offset
        if self.flushed_offset > self.log_end_offset:
            self.flushed_offset = self.log_end_offset
        if self.flush_target > self.log_end_offset:
            self.flush_target = self.log_end_offset
        return old - self.log_end_offset

    def retire(self, entries: list) -> None:
        """Entries that leave the log without being lost (retention, or a restart at the leader's log start)."""
        if self.retired is EMPTY:
            self.retired = []
        self.retired.extend(entries)

    # ---- segments and retention ------------------------------------------------------------------------------

    def segment_append(self, entry: LogEntry, now: float) -> None:
        """Account an appended entry to the active segment (rolling a new one past segment.bytes)."""
        if self.segments is None:
            self._rebuild_segments()
            return
        b = entry[BATCH]
        size = self.batch_bytes[b] if b >= 0 else 0
        segs = self.segments
        if not segs or segs[-1][1] + size > self.segment_bytes:
            segs.append([entry[BASE_OFFSET], 0, now])  # roll a new segment
        segs[-1][1] += size
        segs[-1][2] = now

    def _rebuild_segments(self) -> None:
        self.segments = []
        for entry, at in zip(self.entries, self.append_ms):
            self.segment_append(entry, at)

    def apply_retention(self, now: float, high_watermark: int, retention_ms: float | None,
                        retention_bytes: int | None) -> int:
        """Delete whole old segments (never the active one, never above the HW) by age and by size;
        returns how many segments went."""
        if self.segments is None:
            self._rebuild_segments()
        segs = self.segments
        cut = 0
        deletable = lambda k: k < len(segs) - 1 and segs[k + 1][0] <= high_watermark
        if retention_ms is not None:
            while deletable(cut) and now - segs[cut][2] > retention_ms:
                cut += 1
        if retention_bytes is not None:
            total = sum(s[1] for s in segs[cut:])
            while deletable(cut) and total - segs[cut][1] >= retention_bytes:
                total -= segs[cut][1]
                cut += 1
        if cut:
            start = segs[cut][0]
            k = self.entry_index(start)
            self.retire(self.entries[:k])
            del self.entries[:k], self.append_ms[:k], segs[:cut]
            self.log_start_offset = start
        return cut
