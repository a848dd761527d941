"""A replica's log: entries with offsets and leader epochs, segments, flushes, retention, producer state.

A log keeps its entries as columns (``array.array``), one row per record batch
(Kafka's RecordBatch as the log holds it): ``bases`` (its base offset: int32
while the partition's offsets fit it, widened to int64 by the append that passes
2^31 - 1, ``AppendTable.widen``),
``batch_ids`` (the producer batch it holds, an index of the batch table, int32;
``CONTROL``, -1, for a control record such as a quorum leader's epoch marker:
one offset, no data) and ``append_at`` (when it reached this broker's page
cache: the index of that instant in the run's ``instants``, int32, see below), where a tuple per entry with its int objects, and each
replica's list slots and float, cost about 200 bytes a batch over three
replicas (an ``array.array`` append costs more than a list's, as it parses its
argument: see docs/performance.md). The leader epochs that wrote the rows are
kept as runs, one entry per epoch as Kafka's LeaderEpochFileCache keeps them
(its epoch and where it starts): ``leader_epochs`` and ``epoch_rows`` (the
row each epoch's run starts at, both int32), so a fault-free run holds one
epoch per partition, not one per batch (``epoch_at``, ``row_epochs``). A log is contiguous (a leader appends at its log end offset, a
follower only what starts there, truncation and retention cut whole batches),
so an entry's end offset is the next one's base, the last one's the log end
offset (LEO): the next offset to be written (``end_of``). ``entry`` and
``entry_list`` give entries as ``LogEntry`` tuples ``(base_offset, end_offset,
leader_epoch, batch)`` for the readers off the hot path (the results, the
producer state's rebuild, tests). A follower's fetch answer carries a
``Chunk``: the leader's rows copied as column slices, appended by ``extend``
(one batch, the usual answer, as its fields, appended by ``append``).

The rows' columns and epochs belong to the partition's ``AppendTable``, shared by
its replicas' logs: in one leader epoch an offset is written once, so replicas
that agree hold the same rows, and a log's entries are its table's first
``rows`` rows (only ``append_at`` is its own: 4 bytes a batch a follower, and
a follower's append of a row its leader wrote checks it and counts it). A
write where the table holds other rows (a new leader after a truncation) first
gives each other log holding them its own copy (``detach``), so an old leader
that diverged reads its own rows until it truncates; retention on a shared log
detaches it too (its rows then start elsewhere). Readers take a log's length
from ``rows``, never from its columns.
The append times are kept once per instant, not once per row: a produce
request's batches reach the leader's logs at one instant, a fetch answer's
reach the follower's logs at one, so the run's logs share one column of the
instants at which some log appended (``instants``: float64, strictly
increasing, of the ``Instants`` every AppendTable of the run holds; its
first cell is -inf, so it is never empty; the latest instant and its index are
kept beside it, so an append neither reads the column back nor makes a new
int), and a row keeps the index of its instant (``append_at``,
nondecreasing in a log as its times are). The first 300 simulated ms of the
production case append 885,170 rows at 8,227 instants: 4 bytes a row a
replica instead of 8. ``appended_ms`` reads a row's time; a search by time
searches the instants, then the indexes (``written_before``).
A follower's instants are read only by a read of its log, its recovery or
a power loss, retention, or once it leads: a run with none of these
keeps none for its followers (``untimed``: 4 bytes a batch a follower), and
its leaders' logs drop those below every follower's fetch position
(``forget_times_below``, ``forgotten``).
What survives a power loss is what was fsynced (``flushed_offset``) or written
back by the OS.

The idempotent producer's state (each producer's last five entries here)
lives with the log, as Kafka's ProducerStateManager does (``producer_state``);
it is dropped on truncation and rebuilt from the entries when next needed.
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left, bisect_right
from itertools import repeat

CONTROL = -1  # batch id of a control record (one offset, no data records)
_INT32 = array("i")  # empty columns a log's own are copied from (a copy
#                                                                 costs a quarter of array(typecode): 9,000 logs)

# A record batch in a log as ``Log.entry`` and ``Log.entry_list`` give it: a plain tuple, its fields named by position
LogEntry = tuple[int, int, int, int]
BASE_OFFSET = 0  # its first offset
END_OFFSET = 1  # one past its last offset
LEADER_EPOCH = 2  # the epoch of the leader that wrote it
BATCH = 3  # the producer batch it holds (an index of the batch table), or CONTROL

# A fetch answer's batches for a follower: (bases, epochs, batch ids, end offset): the leader's column slices of
# bases and batch ids (array.array), its epochs over those rows as runs (a pair of arrays: each run's first row,
# counted from the chunk's first, and its epoch: ``Log.runs``), and where the last batch ends; one batch as its
# own fields (base, epoch, batch, end), ints (a follower's usual answer: slices of one row cost four times its reads)
Chunk = tuple
_INT32_MAX = 2**31 - 1
FORGET_AT_LEAST = 1024  # rows of append instants a log drops at a time (``forget_times_below``: 4 KiB)
_FIRST_ROW = array("i", (0,))  # the runs of rows that are all of one epoch start at their first row (never written)


class Instants:
    """A column of the instants at which something happened, each kept once, in order (time never goes back), and
    the latest with its index, which every event at that instant reuses (it reads two attributes: no float read
    back from the column, no new int for the index). The run's logs share one for their append times
    (``AppendTable.clock``); the batch table has one for its visible times (``Batches.visible_instants``).
    ``times`` holds `first` in its first cell (-inf: below every time, so never empty; NaN: an index 0 that reads
    as no time)."""
    __slots__ = ("times", "now", "last")

    def __init__(self, first: float = -math.inf) -> None:
        self.times = array("d", (first,))
        self.now = first  # the latest instant (times[-1]; NaN equals no time, so the first index() keeps one)
        self.last = 0  # its index (len(times) - 1)

    def index(self, now: float) -> int:
        """The index of `now`, the latest instant (kept if new)."""
        if now != self.now:
            self.times.append(now)
            self.now = now
            self.last = len(self.times) - 1
        return self.last


class AppendTable:
    """A partition's rows (base offset, batch id) as columns and the leader epochs that wrote them as runs, shared
    by the replicas' logs that hold them: a log's entries are its table's first ``Log.rows`` rows. In one leader
    epoch an offset is written once, so replicas that agree share one table; a log whose rows would differ from
    another holder's (a write at a row another log holds with other contents, retention cutting its own prefix)
    takes its own copy first (``detach``)."""
    __slots__ = ("bases", "batch_ids", "leader_epochs", "epoch_rows", "logs", "clock")

    def __init__(self, bases: array | None = None, batch_ids: array | None = None, leader_epochs: array | None = None,
                 epoch_rows: array | None = None, clock: Instants | None = None) -> None:
        self.bases = _INT32.__copy__() if bases is None else bases  # each entry's base offset, in order (int32, then
        #                                                                  int64 once an offset passes 2^31 - 1: widen)
        self.batch_ids = _INT32.__copy__() if batch_ids is None else batch_ids  # its producer batch, or CONTROL
        # the leader epochs that wrote the rows, one per run of rows of one epoch (int32, each unlike the one before)
        self.leader_epochs = _INT32.__copy__() if leader_epochs is None else leader_epochs
        self.epoch_rows = _INT32.__copy__() if epoch_rows is None else epoch_rows  # the row each run starts at
        self.logs: list[Log] = []  # the logs holding a prefix of these rows
        # the instants at which the run's logs appended, shared by every table of the run (``Instants``; a
        # table of its own when none is given: a log alone in a test)
        self.clock = Instants() if clock is None else clock

    def widen(self) -> array:
        """The base offsets as int64 from now on (an offset past int32's range is to be written; Kafka's offsets are
        int64): the column is copied and every log holding these rows reads the copy. Returns it."""
        bases = self.bases = array("q", self.bases)
        for log in self.logs:
            log.bases = bases
        return bases


class Log:
    __slots__ = ("bases", "batch_ids", "leader_epochs", "epoch_rows", "rows", "table", "clock", "instants", "append_at", "timed", "forgotten", "log_start_offset", "log_end_offset",
                 "flushed_offset", "flush_target", "segment_bytes", "batch_bytes", "segments", "retired", "producers")

    def __init__(self, segment_bytes: int, batch_bytes, table: AppendTable | None = None):
        self.table = AppendTable() if table is None else table  # the partition's rows, shared with its replicas
        self.table.logs.append(self)
        self.bases = self.table.bases  # the table's columns (its rows past ``rows`` are not this log's)
        self.batch_ids = self.table.batch_ids
        self.leader_epochs = self.table.leader_epochs  # its epochs' runs (those starting past ``rows`` not this log's)
        self.epoch_rows = self.table.epoch_rows
        self.rows = 0  # this log's entries: the table's first `rows` rows
        self.clock = self.table.clock  # the run's append instants (every table it takes shares them)
        self.instants = self.clock.times
        # when each row reached this broker's page cache: the index of that instant (int32, `rows` of them; int64
        # from an index past int32's range on)
        self.append_at = _INT32.__copy__()
        # whether appends keep their instants (``untimed``: a follower's in a run where nothing can read them)
        self.timed = True
        self.forgotten = 0  # rows at the front whose instants are no longer kept (``forget_times_below``)
        self.log_start_offset = 0  # first offset still in the log (retention deletes whole segments below it)
        self.log_end_offset = 0  # LEO: next offset to be written
        self.flushed_offset = 0  # on disk (fsynced) below this offset
        self.flush_target = 0  # an fsync under way makes the log durable up to here
        self.segment_bytes = segment_bytes  # segment.bytes in force
        self.batch_bytes = batch_bytes  # the batch table's sizes (a batch id -> bytes)
        self.segments: list | None = None  # [base offset, bytes, last append ms] per segment; None: (re)build
        self.retired: tuple | None = None  # (bases, batch ids) of the entries retention deleted (there: not lost)
        self.producers: dict | None = None  # producer -> BatchMetadata of its last 5 batches here; None: rebuild

    # ---- reading ---------------------------------------------------------------------------------------------

    def end_of(self, i: int) -> int:
        """End offset of entry `i` (one past its last offset): the next entry's base, or the LEO."""
        return self.bases[i + 1] if i + 1 < self.rows else self.log_end_offset

    def appended_ms(self, i: int) -> float:
        """When entry `i` reached this broker's page cache."""
        return self.instants[self.append_at[self._kept(i)]]

    def _kept(self, i: int) -> int:
        """Where row `i`'s instant is in ``append_at`` (rows below ``forgotten`` have none)."""
        k = i - self.forgotten
        if k < 0:
            raise IndexError(f"row {i}'s append time is no longer kept (rows below {self.forgotten})")
        return k

    def append_times(self) -> array:
        """Each entry's append time, a row each from row ``forgotten`` on (float64: for the readers off the hot path
        and tests)."""
        instants = self.instants
        return array("d", [instants[a] for a in self.append_at])

    def written_before(self, cut: float, i: int = 0, j: int = -1) -> int:
        """The first of entries i..j-1 (j -1: to the last) appended at or after `cut` (j if none): the entries
        before it reached the page cache before `cut` (append times are nondecreasing in a log)."""
        f = self.forgotten
        return bisect_left(self.append_at, bisect_left(self.instants, cut), self._kept(i),
                           (self.rows if j < 0 else j) - f) + f

    def epoch_at(self, i: int) -> int:
        """Leader epoch of row `i` (one of the table's rows): its run's."""
        rows = self.epoch_rows
        if rows[-1] <= i:  # the last run (a reader usually reads near the log's end)
            return self.leader_epochs[-1]
        return self.leader_epochs[bisect_right(rows, i) - 1]

    def _last_run(self) -> int:
        """Index of the run holding this log's last row (the log is not empty)."""
        rows = self.epoch_rows
        k = len(rows) - 1
        return k if rows[k] < self.rows else bisect_left(rows, self.rows) - 1

    def runs(self, i: int, j: int) -> tuple[array, array]:
        """The epochs of rows i..j-1 (i < j, rows of the table) as runs: (each run's first row counted from row `i`,
        its epoch), as a fetch answer carries them."""
        rows, epochs = self.epoch_rows, self.leader_epochs
        if rows[-1] <= i:  # all in the last run (the usual case)
            return _FIRST_ROW, epochs[-1:]
        k, m = bisect_right(rows, i) - 1, bisect_left(rows, j)
        return array("i", [0] + [r - i for r in rows[k + 1:m]]), epochs[k:m]

    def row_epochs(self, start: int = 0) -> array:
        """Each entry's leader epoch from index `start` on, a row each (int32: for the readers off the hot path)."""
        out = array("i")
        if start >= self.rows:
            return out
        starts, epochs = self.runs(start, self.rows)
        for k, e in enumerate(epochs):
            until = starts[k + 1] if k + 1 < len(starts) else self.rows - start
            out.extend(repeat(e, until - starts[k]))
        return out

    def entry(self, i: int) -> LogEntry:
        """Entry `i` as a LogEntry tuple."""
        return self.bases[i], self.end_of(i), self.epoch_at(i), self.batch_ids[i]

    def entry_list(self, start: int = 0) -> list[LogEntry]:
        """The entries from index `start` on as LogEntry tuples (for the readers off the hot path)."""
        bases, n = self.bases, self.rows
        ends = bases[start + 1:n]
        if start < n:
            ends.append(self.log_end_offset)
        return list(zip(bases[start:n], ends, self.row_epochs(start), self.batch_ids[start:n]))

    def last_epoch(self) -> int:
        """Leader epoch of the last entry (-1 for an empty log)."""
        return self.leader_epochs[self._last_run()] if self.rows else -1

    def entry_index(self, offset: int) -> int:
        """Index of the entry holding `offset` (or the first one after it)."""
        n = self.rows
        i = bisect_right(self.bases, offset, 0, n) - 1
        if i < 0:
            return 0
        # the next entry starts past `offset`: entry i holds it unless it is the last and the log ends at or below it
        return i if i + 1 < n or self.log_end_offset > offset else i + 1

    def read(self, offset: int, max_offset: int, max_bytes: int, min_one: bool) -> tuple[int, int, int]:
        """Kafka's Log.read: whole batches from the one holding `offset`, those starting below `max_offset`
        (the LEO for a follower, the HW for a consumer), up to `max_bytes` of batch data; with `min_one`
        (Kafka's minOneMessage: nothing given yet in the response) the first batch even if it is larger.
        Returns (first index, end index, bytes): the batches are rows first..end-1; an end short of the
        log's last entry below `max_offset` means the next batch did not fit. (A follower's fetch reads to the LEO by
        this rule inline, ``SessionManager._answer``: a change here goes there too.)"""
        bases = self.bases
        n = self.rows
        # a reader usually lacks just the last entry: found without a search (entry_index)
        i = n - 1 if n and bases[n - 1] == offset else self.entry_index(offset)
        bytes_of, ids = self.batch_bytes, self.batch_ids
        j, size = i, 0
        while j < n:
            if bases[j] >= max_offset:
                break
            b = ids[j]
            if b >= 0:
                grown = size + bytes_of[b]
                if grown > max_bytes and (j > i or not min_one):
                    break
                size = grown
            j += 1
        return i, j, size

    def chunk(self, i: int, j: int) -> Chunk:
        """Rows i..j-1 (i < j) as a follower's fetch answer carries them (``Chunk``): one row as its fields (the
        usual answer; ``append`` takes them), several as column slices (``extend``)."""
        bases = self.bases
        end = bases[j] if j < self.rows else self.log_end_offset
        if j == i + 1:  # (the row's epoch read here as in epoch_at: this is a follower's usual answer)
            epoch = self.leader_epochs[-1] if self.epoch_rows[-1] <= i else self.epoch_at(i)
            return bases[i], epoch, self.batch_ids[i], end
        return bases[i:j], self.runs(i, j), self.batch_ids[i:j], end

    def bytes_written_before(self, i: int, j: int, cut: float) -> int:
        """Bytes of the batches of rows i..j-1 that reached this broker's page cache before `cut` (evicted
        from it since: a read of them goes to the disk)."""
        if i >= j or self.instants[self.append_at[self._kept(i)]] >= cut:
            return 0
        k = self.written_before(cut, i, j)
        bytes_of = self.batch_bytes
        return sum(bytes_of[b] for b in self.batch_ids[i:k] if b >= 0)

    def end_offset_for_epoch(self, epoch: int, end: int) -> tuple[int, int]:
        """Kafka's LeaderEpochFileCache.endOffsetFor over the epochs of this log, the last one ending at `end`:
        (the largest epoch <= `epoch`, where it ends: where the next higher one starts); an epoch older than
        every epoch here gives (`epoch`, where the first one starts); an undefined epoch, an empty log or an
        epoch newer than the last, (-1, -1) (KIP-279's UNDEFINED)."""
        if epoch < 0 or not self.rows:
            return -1, -1
        epochs, rows, bases = self.leader_epochs, self.epoch_rows, self.bases
        k = self._last_run()
        if epoch > epochs[k]:
            return -1, -1
        while k >= 0:  # the runs from the last back: where the epoch after the one found starts
            e = epochs[k]
            if e <= epoch:
                return e, end
            end = bases[rows[k]]
            k -= 1
        return epoch, end

    def first_offset_after_epoch(self, epoch: int) -> int:
        """Where the first epoch later than `epoch` starts here (the LEO if none): where `epoch` ends in this log."""
        end = self.log_end_offset
        if not self.rows:
            return end
        epochs, rows, bases = self.leader_epochs, self.epoch_rows, self.bases
        k = self._last_run()
        while k >= 0 and epochs[k] > epoch:
            end = bases[rows[k]]
            k -= 1
        return end

    def durable_offset(self, cutoff: float) -> int:
        """End of the log that survives a power loss: fsynced, or written back by the OS (every entry that reached
        the page cache before `cutoff`: ``disk.PageCache.durable_before``)."""
        i = self.written_before(cutoff)  # entries the OS has written back (appended before the cutoff)
        written_back = self.end_of(i - 1) if i else 0
        return max(self.flushed_offset, written_back)

    # ---- writing ---------------------------------------------------------------------------------------------

    def append(self, base: int, end: int, epoch: int, batch: int, now: float) -> None:
        """Append a batch at the LEO (`base` is the LEO): offsets base..end-1, written in `epoch`. A row the
        table already has with these fields (a follower taking what its leader wrote) is only counted."""
        r = self.rows
        bases = self.bases
        if r == len(bases):
            try:
                bases.append(base)
            except OverflowError:  # past int32: the table's offsets go int64
                self.table.widen().append(base)
            self.batch_ids.append(batch)
            epochs = self.leader_epochs
            if not epochs or epochs[-1] != epoch:  # a new epoch's first row starts its run
                epochs.append(epoch)
                self.epoch_rows.append(r)
        elif bases[r] != base or self.batch_ids[r] != batch or (
                self.leader_epochs[-1] if self.epoch_rows[-1] <= r else self.epoch_at(r)) != epoch:
            self._overwrite(r)
            try:
                self.bases.append(base)
            except OverflowError:
                self.table.widen().append(base)
            self.batch_ids.append(batch)
            epochs = self.leader_epochs
            if not epochs or epochs[-1] != epoch:
                epochs.append(epoch)
                self.epoch_rows.append(r)
        self.rows = r + 1
        if self.timed:
            clock = self.clock
            if clock.now != now:  # the first append at this instant in the run (Instants.index, inline: a call
                clock.times.append(now)  # here costs a small scenario more than the index saves, as each of its
                clock.now = now  #          requests appends at an instant of its own)
                clock.last = len(clock.times) - 1
            try:
                self.append_at.append(clock.last)
            except OverflowError:  # a 2^31st instant: this log's indexes go int64
                self._widen_append_at().append(clock.last)
        self.log_end_offset = end

    def extend(self, chunk: Chunk, now: float) -> None:
        """Append a fetch answer's batches (a Chunk of several: they start at the LEO)."""
        bases, runs, ids, end = chunk
        r, n = self.rows, len(bases)
        own = self.bases
        if own.typecode != bases.typecode:  # the leader's offsets went int64 (its table or ours: both, then)
            if own.typecode == "i":
                own = self.table.widen()
            else:
                bases = array("q", bases)
        if r == len(own):
            own += bases
            self.batch_ids += ids
            self._add_runs(r, runs)
        elif own[r:r + n] != bases or self.batch_ids[r:r + n] != ids or self.runs(r, r + n) != runs:
            self._overwrite(r)
            self.bases += bases
            self.batch_ids += ids
            self._add_runs(r, runs)
        self.rows = r + n
        if self.timed:
            at = self.clock.index(now)
            if at > _INT32_MAX and self.append_at.typecode == "i":
                self._widen_append_at()
            self.append_at.extend(repeat(at, n))
        self.log_end_offset = end

    def untimed(self) -> None:
        """From now on this log keeps no append instants, and drops those it kept: a follower's, in a run where
        nothing can read them (no fault can crash or cut its broker, no operation or fault can make it lead, no
        consumer reads it, no retention acts: ``follower_append_times_read``). Its rows' times are 4 bytes a batch a follower; a read of
        one fails (the array is empty), and making it lead raises (``LeaderRole.become_leader``)."""
        self.timed = False
        del self.append_at[:]

    def forget_times_below(self, row: int) -> None:
        """Drop the append instants of the rows below `row`, which no reader will ask for (a leader's rows below
        every follower's fetch position, in a run where nothing else reads them: ``ReplicaManager.checkpoint_hw``),
        once they are ``FORGET_AT_LEAST`` rows (each drop moves the rest)."""
        k = row - self.forgotten
        if k >= FORGET_AT_LEAST and self.timed:
            del self.append_at[:k]
            self.forgotten = row

    def _widen_append_at(self) -> array:
        """The append instants' indexes as int64 from now on (the run has appended at 2^31 instants)."""
        self.append_at = array("q", self.append_at)
        return self.append_at

    def _add_runs(self, r: int, runs: tuple[array, array]) -> None:
        """The epochs of rows appended from row `r` on (the table's last row), as runs (``runs``)."""
        starts, epochs = runs
        own, rows = self.leader_epochs, self.epoch_rows
        for k, e in enumerate(epochs):
            if not own or own[-1] != e:
                own.append(e)
                rows.append(r + starts[k])

    def _cut_table(self, r: int) -> None:
        """The table's rows from `r` on go, and the epochs' runs that start there."""
        table = self.table
        k = bisect_left(table.epoch_rows, r)
        del table.bases[r:], table.batch_ids[r:], table.leader_epochs[k:], table.epoch_rows[k:]

    def _overwrite(self, r: int) -> None:
        """This log writes at row `r`, which its table holds with other contents: the logs that hold it take their
        own copy of their rows, and the table's rows from `r` on go."""
        for log in [log for log in self.table.logs if log is not self and log.rows > r]:
            log.detach()
        self._cut_table(r)

    def detach(self) -> None:
        """Take a copy of this log's rows as its own table (another holder of its table is about to change them)."""
        old, n = self.table, self.rows
        if len(old.logs) == 1:
            return
        old.logs.remove(self)
        k = bisect_left(old.epoch_rows, n)
        table = self.table = AppendTable(old.bases[:n], old.batch_ids[:n], old.leader_epochs[:k], old.epoch_rows[:k],
                                         old.clock)
        table.logs.append(self)
        self.bases, self.batch_ids = table.bases, table.batch_ids
        self.leader_epochs, self.epoch_rows = table.leader_epochs, table.epoch_rows

    def _drop_rows_from(self, i: int) -> None:
        """Drop this log's rows from `i` on (the table's too, when no other log holds them)."""
        self.rows = i
        if i < self.forgotten:
            self.forgotten = i
        del self.append_at[i - self.forgotten:]
        if all(log.rows <= i for log in self.table.logs):
            self._cut_table(i)

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
        leo = self.bases[i] if i else self.log_start_offset  # (i < len: entry i holds `offset`, below the LEO)
        self._drop_rows_from(i)
        self.producers = None  # the idempotence state is rebuilt from what remains
        self.segments = None
        old = self.log_end_offset
        self.log_end_offset = leo
        if self.flushed_offset > leo:
            self.flushed_offset = leo
        if self.flush_target > leo:
            self.flush_target = leo
        return old - leo

    def retire(self, k: int) -> None:
        """The first `k` entries leave the log without being lost (retention, or a restart at the leader's log
        start): their base offsets and batches are kept in ``retired`` (the caller removes them)."""
        if not k:
            return
        if self.retired is None:
            self.retired = (array("q"), array("i"))
        bases, ids = self.retired
        bases.extend(self.bases[:k].tolist())  # (int64; this log's may be int32)
        ids += self.batch_ids[:k]

    # ---- segments and retention ------------------------------------------------------------------------------

    def segment_append(self, base: int, b: int, now: float) -> None:
        """Account an appended entry (its base offset, its batch) to the active segment (rolling a new one past
        segment.bytes)."""
        if self.segments is None:
            self._rebuild_segments()
            return
        size = self.batch_bytes[b] if b >= 0 else 0
        segs = self.segments
        if not segs or segs[-1][1] + size > self.segment_bytes:
            segs.append([base, 0, now])  # roll a new segment
        segs[-1][1] += size
        segs[-1][2] = now

    def _rebuild_segments(self) -> None:
        self.segments = []
        n = self.rows
        for base, b, at in zip(self.bases[:n], self.batch_ids[:n], self.append_times()):
            self.segment_append(base, b, at)

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
            self.retire(k)
            self.detach()  # its rows from now on start at another row than the other holders'
            gone = min(k, self.forgotten)  # (rows without a kept instant go first)
            self.forgotten -= gone
            del self.bases[:k], self.batch_ids[:k], self.append_at[:k - gone], segs[:cut]
            rows = self.epoch_rows
            m = bisect_right(rows, k) - 1  # the run holding the new first row: it now starts at row 0
            del self.leader_epochs[:m], rows[:m]
            for x in range(len(rows)):
                rows[x] = rows[x] - k if x else 0
            self.rows -= k
            self.log_start_offset = start
        return cut
