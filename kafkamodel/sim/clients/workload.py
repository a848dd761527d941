"""What the producers send: the records, decided before the run in NumPy.

Record arrival times (Poisson and bursts), keys and partitions (Kafka's
partitioners). Records are ordered by producer, partition and send time, so
one producer's records for one partition are a contiguous range, and every
batch the accumulator makes of them during the run (``accumulator``) is a
contiguous range ``[lo, hi)`` of it.
"""

from __future__ import annotations

import mmap
from array import array
from bisect import bisect_right
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from ...config.settings import ProducerSettings, Settings, nic_ms_per_byte
from ..batches import DIGITS, compress_ms_per_byte, key_digits, record_format
from .partitioner import partition_for_keys
from .slots import SendOrder, resize

FIRST_SLOTS = 1 << 20  # a closed-loop producer's slots at first: for this many of its records (they grow as needed)


@dataclass
class Workload:
    # per record, in (producer, partition, send time) order; a record's producer and partition follow from its index
    # and the ranges below (``producer`` and ``partition``, made when asked for)
    key: np.ndarray | None  # int32 (int64 if a key cardinality needs it): key index (key-<i>), -1 for a null key;
    #                         without a records table (results.records: none) only its digits (batches.DIGITS,
    #                         int8: all the record format reads of it), and None once the run is over
    # per producer and partition: its records are [lo, hi)
    lo: np.ndarray  # int64 (producers, partitions)
    hi: np.ndarray  # int64 (producers, partitions)
    cost_ms: list = field(default_factory=list)  # per producer: its application thread's time per send() (ms)
    send_ms: np.ndarray | None = None  # float64 per record: when the application called send(); made when the run
    #                                    ends (``send_calls``) from the accumulator's times, not held during it
    blocked: tuple = field(default_factory=lambda: (array("q"), array("d")))  # the records whose send() blocked
    #   and was called before its return less the cost (``keep_called``): each one's (producer, partition) range
    #   and rank in it (range << 32 | rank, which a relayout does not move) and when it was called
    kept: tuple = field(default_factory=lambda: (np.empty(0, dtype=np.int64), np.empty(0), 0))  # ``called``'s:
    #   the blocked records by global index, their calls, and how many of ``blocked`` they hold
    ready_ms: array | memoryview | None = None  # float64 (the accumulator's own: an array.array, or with makers a
    #   memoryview of a buffer written as its records are made): when send() returned (the record is in the
    #   accumulator); the producer takes it over (None after)
    closed: dict | None = None  # closed-loop producer -> (its SendOrder, the records of it its slots are for so
    #                             far): its slots are filled as its application thread sends them (application)
    returns: dict | None = None  # open-loop producer whose records could fill buffer.memory -> when each send()
    #                              returns, in send order (application.PoolWatch): a SendReturns (made as read), or
    #                              with bursts an array
    tracked: list = field(default_factory=list)  # (holder, attribute, fill): other per-record arrays (a consumer
    #                                              group's), moved with the slots
    makers: dict | None = None  # producer -> its RecordMaker: its records' times and keys made as the run reads them
    #                             (their slots in ready_ms and key are left unwritten until then)
    fold: object = None  # results.latency.Fold: the run's latencies folded as its batches settle (``fold_possible``)
    pages: object = None  # RecordPages: the accumulator's times and the keys in maps whose pages are given back once
    #                       their records are folded (with ``fold``; None once the slots moved)

    def make_all(self, producer: int | None = None) -> None:
        """Every record of the producer (None: of every producer) made: its RecordMaker's pieces left, at once."""
        if not self.makers:
            return
        for i in ([producer] if producer is not None else list(self.makers)):
            maker = self.makers.pop(i, None)
            if maker is not None:
                maker.finish()

    @property
    def records(self) -> int:
        return int(self.hi.ravel()[-1]) if self.hi.size else 0

    def keep_called(self, record: int, called: float) -> None:
        """The record's send() was called at `called`, not at its time in the accumulator less its producer's
        send() cost (it blocked on a full pool first): kept aside for ``send_calls``."""
        cell = int(np.searchsorted(self.hi.ravel(), record, side="right"))  # (an empty range's hi is the next lo)
        self.blocked[0].append(cell << 32 | (record - int(self.lo.ravel()[cell])))
        self.blocked[1].append(called)

    def send_calls(self, times: np.ndarray, records: np.ndarray | None = None, producers: np.ndarray | None = None,
                   sent: np.ndarray | None = None) -> np.ndarray:
        """Records' send() calls from their times in the accumulator (`times`, float64): a record's time less its
        producer's send() cost, computed as the run computed it, but for the records kept aside (``keep_called``).
        `records` (global indexes; `producers`, each one's producer): theirs, a new array (a sweep's,
        ``results.latency.Fold``). None: every record's, `times` turned into them in place and returned (the run's
        end); left as they are: the pages given back (``RecordPages``: their records are folded, and a page written
        again would be taken again) and the slots from `sent` on (per producer and partition, where an application
        thread's next record would go; default its range's end: nothing was sent there, and the slots go at the
        run's end, so what they hold is never read, and their pages are not written)."""
        costs = np.array(self.cost_ms, dtype=np.float64)
        if records is not None:
            send = times[records]
            send -= costs[producers]
            kept, kept_ms = self.called()
            if len(kept):
                at = np.searchsorted(kept, records)
                hit = at < len(kept)
                hit[hit] = kept[at[hit]] == records[hit]
                send[hit] = kept_ms[at[hit]]
            return send
        ends = (self.hi - self.lo).sum(axis=1).cumsum().tolist()
        start = 0
        pages = self.pages
        for i, (end, cost) in enumerate(zip(ends, costs.tolist())):
            if cost > 0:  # (as build_workload and application.send_records compute it)
                if sent is None or (sent[i] == self.hi[i]).all():
                    spans = [(start, end)]
                else:  # (its ranges up to where its application thread's next record would go)
                    spans = [(a, b) for a, b in zip(self.lo[i].tolist(), sent[i].tolist()) if a < b]
                for a0, b0 in spans:
                    for a, b in ([(a0, b0)] if pages is None else pages.kept(a0, b0)):
                        times[a:b] -= cost
            start = end
        kept, kept_ms = self.called()
        times[kept] = kept_ms
        return times

    def called(self) -> tuple[np.ndarray, np.ndarray]:
        """The records kept aside (``keep_called``) by global index, ascending, each once (its last call: a record
        kept twice takes its last), and their send() calls; the ones kept since the last call are read in."""
        cells, calls = self.blocked
        n = len(cells)
        kept, kept_ms, read = self.kept
        if n > read:
            keys = np.frombuffer(cells, dtype=np.int64)[read:n]
            records = np.concatenate((kept, self.lo.ravel()[keys >> 32] + (keys & 0xFFFFFFFF)))
            ms = np.concatenate((kept_ms, np.frombuffer(calls, dtype=np.float64)[read:n]))
            del keys  # (no view of the arrays outlives its use: they grow)
            order = np.argsort(records, kind="stable")
            records, ms = records[order], ms[order]
            last = np.ones(len(records), dtype=bool)
            last[:-1] = records[1:] != records[:-1]
            kept, kept_ms = records[last], ms[last]
            self.kept = (kept, kept_ms, n)
        return kept, kept_ms

    @property
    def producer(self) -> np.ndarray:
        """Every record's producer index (int16), from the ranges."""
        producers, partitions = self.lo.shape
        return np.repeat(np.arange(producers, dtype=np.int16), (self.hi - self.lo).sum(axis=1))

    @property
    def partition(self) -> np.ndarray:
        """Every record's global partition index (int32), from the ranges."""
        cells = self.hi - self.lo
        producers, partitions = cells.shape
        return np.repeat(np.tile(np.arange(partitions, dtype=np.int32), producers), cells.ravel())

    def producer_at(self, records) -> np.ndarray:
        """The producer index (int16) of each of `records` (global indexes, or a slice: ``producer``'s), without
        every record's."""
        if isinstance(records, slice):
            return self.producer[records]
        ends = (self.hi - self.lo).sum(axis=1).cumsum()
        return np.searchsorted(ends, records, side="right").astype(np.int16)

    def partition_at(self, records) -> np.ndarray:
        """The global partition (int32) of each of `records` (global indexes, or a slice: ``partition``'s), without
        every record's."""
        if isinstance(records, slice):
            return self.partition[records]
        cell = np.searchsorted(self.hi.ravel(), records, side="right")  # (an empty range's hi is the next one's lo)
        return (cell % self.hi.shape[1]).astype(np.int32)

    def partition_of(self, producer: int, records: np.ndarray) -> np.ndarray:
        """The global partition (int32) of each of `records`, indexes of the producer's records."""
        return np.searchsorted(self.hi[producer], records, side="right").astype(np.int32)

    def per_partition(self) -> np.ndarray:
        """Records per global partition (int64)."""
        return (self.hi - self.lo).sum(axis=0)

    def track(self, holder, name: str, fill) -> None:
        """`holder.name` is a per-record array: it moves with the slots, new slots get `fill`."""
        self.tracked.append((holder, name, fill))

    def resize(self, sizes: np.ndarray, in_place: bool = False):
        """Every (producer, partition) range gets `sizes` slots (its records so far kept, new slots empty); returns
        the move of each range (new lo - old lo) and `move(array, fill)` for other arrays in the old layout.
        `in_place` (no range grows): the per-record arrays are closed up in themselves (``slots.resize``)."""
        old_lo = self.lo
        self.pages = None  # (the records move: none is given back from now on)
        self.lo, self.hi, move = resize(self.lo, self.hi, sizes, in_place)
        self.kept = (np.empty(0, dtype=np.int64), np.empty(0), 0)  # (by global index: read again, ``called``)
        if self.send_ms is not None:
            self.send_ms = move(self.send_ms, np.nan)
        if self.key is not None:
            self.key = move(self.key, -1)
        for holder, name, fill in self.tracked:
            setattr(holder, name, move(getattr(holder, name), fill))
        return self.lo - old_lo, move


FOLD = True  # runs that can fold do (``fold_possible``); tests switch it off to compare
POISON = False  # tests: a record given back has its slots poisoned (NaN times, keys of 127 digits) instead, so a read
#                of one after shows in the results


def fold_possible(settings: Settings) -> bool:
    """Whether a run folds its latencies as its batches settle (``results.latency.Fold``) and gives its records'
    pages back: no records table (results.records: none), and nothing that reads every record's send() call at the
    end (a consumer group's latencies and lag), moves the slots (a closed-loop producer's) or reads send() calls
    against a window known at the end (operations)."""
    return (FOLD and settings.results_records == "none" and not settings.consumers and not settings.operations
            and not any(p.closed_loop for p in settings.producers))


class RecordPages:
    """The accumulator's times (float64) and the keys' digits (int8) of a run that folds, each in an anonymous
    private map of its own (no transparent huge pages: a huge page would keep 2 MiB for one record), so the pages of
    the records folded can be given back (``release``: madvise MADV_DONTNEED; a page read after that reads zeros,
    one written is allocated again). Where the platform has no madvise, nothing is given back (the same results)."""

    PAGE = mmap.PAGESIZE

    def __init__(self, total: int):
        self.can = all(hasattr(mmap, name) for name in ("MAP_PRIVATE", "MAP_ANONYMOUS", "MADV_DONTNEED")) \
            and hasattr(mmap.mmap, "madvise")
        self.maps: list = []
        self.arrays: list = []
        for dtype in (np.float64, DIGITS):
            if not self.can:
                self.arrays.append(np.empty(total, dtype=dtype))
                continue
            m = mmap.mmap(-1, max(total * np.dtype(dtype).itemsize, 1), flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
            if hasattr(mmap, "MADV_NOHUGEPAGE"):
                m.madvise(mmap.MADV_NOHUGEPAGE)
            self.maps.append(m)
            self.arrays.append(np.frombuffer(m, dtype=dtype, count=total))
        self.times, self.key = self.arrays
        self.released = np.zeros(0, dtype=np.int64)  # per (producer, partition): its records below this are given
        #                                              back (its ranges' starts once laid out: build_workload)
        self.folded = self.released  # per (producer, partition): its records below this are folded (``latency.Fold``)
        self.given = [np.zeros(-(-len(a) * a.itemsize // self.PAGE), dtype=bool) for a in self.arrays]  # per page
        self.released_bytes = 0  # of the pages given back

    def kept(self, start: int, end: int) -> list[tuple[int, int]]:
        """The spans of the times' records [start, end) outside the pages given back, in order."""
        per = self.PAGE // self.times.itemsize  # records a page (a page holds whole records: 8 bytes each)
        given = self.given[0][start // per:-(-end // per)]
        pages = np.flatnonzero(given)
        if not len(pages):
            return [(start, end)]
        cuts = np.flatnonzero(np.diff(pages) != 1) + 1
        out, at = [], start
        base = start // per
        for run in np.split(pages, cuts):
            a, b = (base + int(run[0])) * per, (base + int(run[-1]) + 1) * per
            if a > at:
                out.append((at, a))
            at = max(at, b)
        if end > at:
            out.append((at, end))
        return out

    def release(self, upto: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> None:
        """Each (producer, partition)'s records below `upto` are folded and never read again: the pages that hold
        only such records (of any range) are given back."""
        upto = np.maximum(upto, self.released)
        old = self.released.ravel()
        self.released = upto
        rel, lo, hi = upto.ravel(), lo.ravel(), hi.ravel()
        if POISON:
            grew = np.flatnonzero(rel > old)
            n = rel[grew] - old[grew]
            each = np.repeat(old[grew] - (np.cumsum(n) - n), n) + np.arange(int(n.sum()))
            self.times[each] = np.nan
            self.key[each] = 127
            return
        if not self.can or not len(rel):
            return
        # the spans given back: [lo, released) of a range, joined with the next ones while a range is given back whole
        full = rel >= hi
        starts = np.flatnonzero(np.concatenate(([True], ~full[:-1])))
        partial = np.flatnonzero(~full)
        at = np.searchsorted(partial, starts)
        ends = np.where(at < len(partial), partial[np.minimum(at, len(partial) - 1)], len(rel) - 1)
        first, last = lo[starts], rel[ends]
        page = self.PAGE
        for m, a, given in zip(self.maps, self.arrays, self.given):
            size = a.itemsize
            p0 = -(-(first * size) // page)
            p1 = (last * size) // page
            keep = p1 > p0
            steps = np.zeros(len(given) + 1, dtype=np.int64)
            np.add.at(steps, p0[keep], 1)
            np.add.at(steps, p1[keep], -1)
            new = (np.cumsum(steps[:-1]) > 0) & ~given
            pages = np.flatnonzero(new)
            if not len(pages):
                continue
            given |= new
            self.released_bytes += len(pages) * page
            cuts = np.flatnonzero(np.diff(pages) != 1) + 1  # runs of consecutive pages: one call each
            for run in np.split(pages, cuts):
                m.madvise(mmap.MADV_DONTNEED, int(run[0]) * page, len(run) * page)


def _poisson_chunks(p: ProducerSettings, duration: float, rng: np.random.Generator, piece: int = 0):
    """A producer's Poisson arrival times (rate.per.s from start.ms to its stop), a chunk of draws at a time: the
    exponential gaps drawn in chunks of a size fixed by the expected count, each chunk's times its running sum
    from the last one's end (the times before the stop, in order; a chunk may be empty at the end). `piece`: each
    chunk given in pieces of that many draws, the same floats (a generator's draws split give the same sequence,
    and a running sum goes on from the last piece's, one addition at a time as NumPy's cumsum adds)."""
    start = p.start_ms
    stop = min(p.stop_ms if p.stop_ms is not None else duration, duration)
    rate = p.rate_per_s
    if not (rate > 0 and stop > start):
        return
    mean_gap = 1000.0 / rate
    expected = (stop - start) / mean_gap
    n = int(expected + 6 * np.sqrt(expected) + 16)
    t = start
    while t < stop:
        if piece <= 0 or piece >= n:
            times = t + np.cumsum(rng.exponential(mean_gap, n))
            last = times[-1]
            yield times if last < stop else times[times < stop]
            t = last
            continue
        total, left = 0.0, n
        while left:
            m = piece if piece < left else left
            left -= m
            sums = np.cumsum(np.concatenate(([total], rng.exponential(mean_gap, m))))[1:]
            total = sums[-1]
            times = t + sums
            del sums
            yield times if times[-1] < stop else times[times < stop]
        t = times[-1]


def _arrivals(p: ProducerSettings, duration: float, rng: np.random.Generator) -> np.ndarray:
    start = p.start_ms
    stop = p.stop_ms if p.stop_ms is not None else duration
    stop = min(stop, duration)
    parts = []
    chunks = list(_poisson_chunks(p, duration, rng))
    if chunks:
        parts.append(chunks[0] if len(chunks) == 1 else np.concatenate(chunks))
    del chunks
    burst = p.burst
    if burst is not None:
        first = max(burst.start_ms, start)
        at = np.arange(first, stop, burst.every_ms)
        parts.append(np.repeat(at, burst.records))
    if not parts:
        return np.empty(0)
    if len(parts) == 1:  # one source alone is in order already (Poisson: running sums of draws >= 0)
        return parts[0]
    return np.sort(np.concatenate(parts), kind="stable")


PIECE = 1 << 16  # draws made at a time when a producer's records are made in pieces (SendReturns, build_workload)


def _rng_at(state: dict) -> np.random.Generator:
    """A generator in the state `state` (a stream's, copied before it drew)."""
    rng = np.random.Generator(getattr(np.random, state["bit_generator"])())
    rng.bit_generator.state = state
    return rng


def _return_pieces(p: ProducerSettings, duration: float, state: dict, cost: float):
    """``_after_sends`` of ``_arrivals`` for an open-loop producer without bursts, a piece of draws at a time (from
    its arrivals stream as it was in `state`): the same floats (the running max goes on from the last piece's;
    steps from each record's own index)."""
    offset, top = 0, -np.inf
    for a in _poisson_chunks(p, duration, _rng_at(state), PIECE):
        if cost > 0 and len(a):
            steps = cost * np.arange(offset, offset + len(a), dtype=np.float64)
            run = np.maximum.accumulate(a - steps)
            np.maximum(run, top, out=run)
            top = run[-1]
            run += steps  # (run + steps + cost, in place: the same additions in the same order)
            run += cost
            a = run
            del steps, run  # (a generator made as read holds only the piece it gave between reads)
        offset += len(a)
        yield a


class SendReturns:
    """When each send() of an open-loop producer without bursts returns, in send order (``_after_sends`` of
    ``_arrivals``), made a piece of draws at a time as it is read (``_return_pieces``), not an array of every
    record's (8 bytes a record). Read in increasing order (a pool watch's first record that does not fit only moves
    on)."""

    __slots__ = ("n", "pieces", "offset", "times")

    def __init__(self, p: ProducerSettings, duration: float, state: dict, cost: float, n: int):
        self.n = n  # records in all
        self.pieces = _return_pieces(p, duration, state, cost)
        self.offset = 0  # the record times[0] is
        self.times = np.empty(0)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, k: int) -> float:
        while k >= self.offset + len(self.times):
            self.offset += len(self.times)
            self.times = next(self.pieces)
        return self.times[k - self.offset]


def send_cost_ms(settings: Settings, p: ProducerSettings, fmt=None) -> float:
    """The application thread's time per send(): producer.record.us, and compressing the record."""
    fmt = fmt or record_format(settings, p)
    return settings.costs.producer_record_us / 1000.0 + fmt.record_size * compress_ms_per_byte(p.compression_type)


def _after_sends(arrivals: np.ndarray, cost: float) -> np.ndarray:
    """When each send() returns, one application thread calling it at `arrivals` (in order) and `cost` ms each:
    e_k = max(a_k, e_(k-1)) + cost, that is cost * (k + 1) + the running max of a_j - cost * j."""
    if cost <= 0 or not len(arrivals):
        return arrivals
    steps = cost * np.arange(len(arrivals), dtype=np.float64)
    return np.maximum.accumulate(arrivals - steps) + steps + cost


def closed_loop_records(settings: Settings, p: ProducerSettings, index: int) -> tuple[int, float]:
    """How many records a closed-loop producer can send at most (its slots), and the gap between two of them the
    application thread's speed gives: its window over the time one send() takes, or over its client NIC's time per
    record, plus what buffer.memory holds."""
    fmt = record_format(settings, p)
    cost = send_cost_ms(settings, p, fmt)
    stop = min(p.stop_ms if p.stop_ms is not None else settings.duration_ms, settings.duration_ms)
    window = max(0.0, stop - p.start_ms)
    machine = settings.client_machine
    gaps = [g for g in (cost, (fmt.record_size / fmt.ratio) * nic_ms_per_byte(machine.nic_gbps, machine.nic_mtu))
            if g > 0]
    if not gaps:
        raise ValueError(f"producers[{index}]: rate.per.s: max needs costs producer.record.us > 0 or a client nic.gbps "
                         "(nothing else bounds how fast the application sends)")
    gap = max(gaps)
    bound = int(window / gap) + 1
    if cost <= 0:
        bound += int(p.buffer_memory / fmt.record_bytes) + 1
    return bound, gap


def _sticky_runs(times: np.ndarray, cap: int, linger: float | None) -> np.ndarray:
    """Lengths of the runs of records a sticky partitioner sends to one partition.

    KIP-480 (linger given): a run lasts as long as one batch would (cap records
    or linger.ms). KIP-794 (linger None): a run is batch.size bytes (cap records).
    """
    n = len(times)
    if linger is None:
        lengths = np.full(n // cap, cap, dtype=np.int64)
        return np.append(lengths, n % cap) if n % cap else lengths
    t = times.tolist() if isinstance(times, np.ndarray) else times
    runs, i = [], 0
    while i < n:
        top = min(i + cap, n)
        end = t[i] + linger
        j = top if t[top - 1] <= end else bisect_right(t, end, i, top)
        runs.append(j - i)
        i = j
    return np.asarray(runs, dtype=np.int64)


class _Evenly:
    """start + gap * k for k = 1..n, each as NumPy computes it, without the array."""

    __slots__ = ("start", "gap", "n")

    def __init__(self, start: float, gap: float, n: int):
        self.start, self.gap, self.n = start, gap, n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, k: int) -> float:
        return self.start + self.gap * (k + 1)


def _sticky_choices(lengths: np.ndarray, partitions: int, rng: np.random.Generator) -> np.ndarray:
    """The partition of each sticky run: a new one, other than the last, for each (int32)."""
    choice, last = [0] * len(lengths), -1
    draws = rng.integers(0, max(partitions - 1, 1), len(lengths)).tolist()
    for r, d in enumerate(draws):
        last = d if last < 0 or partitions == 1 else (d if d < last else d + 1)
        choice[r] = last
    return np.asarray(choice, dtype=np.int32)


def assign_partitions(p: ProducerSettings, key: np.ndarray, times: np.ndarray, partitions: int,
                      rng: np.random.Generator, custom=None, cap: int | None = None) -> np.ndarray:
    """Kafka's partitioners, for one producer's records in send order."""
    n = len(key)
    if custom is not None:  # a Python callable through the API: (key or None, partitions) -> partition
        names = [None if k < 0 else f"key-{k}" for k in key.tolist()]
        out = np.fromiter((custom(k, partitions) for k in names), dtype=np.int64, count=n)
        bad = (out < 0) | (out >= partitions)
        if bad.any():
            raise ValueError(f"partitioner: the callable returned {int(out[bad][0])} for key {names[int(np.argmax(bad))]!r}; "
                             f"partitions are 0..{partitions - 1}")
        return out.astype(np.int32)
    name = p.partitioner if isinstance(p.partitioner, str) else "default"
    if name == "round_robin":  # RoundRobinPartitioner: every record to the next partition, keys ignored
        return (np.arange(n) % partitions).astype(np.int32)
    out = np.empty(n, dtype=np.int32)
    keyed = key >= 0
    some_keyed = keyed.any()
    if some_keyed:
        out[keyed] = partition_for_keys(key[keyed], partitions)
        mapping = p.partitioner.get("mapping") if isinstance(p.partitioner, Mapping) else None
        if mapping:
            table = {int(k.split("-", 1)[1]): v for k, v in mapping.items() if k.startswith("key-") and k[4:].isdigit()}
            for k, part in table.items():
                out[key == k] = part
    nulls = np.flatnonzero(~keyed) if some_keyed else slice(None)  # the null-key records (all: the whole arrays)
    null_count = len(nulls) if some_keyed else n
    if null_count:
        if name == "legacy":  # before 2.4: round robin over null-key records
            out[nulls] = np.arange(null_count) % partitions
        else:
            cap = cap or p.records_per_batch  # records a batch holds (the record format's, from build_workload)
            linger = p.linger_ms if name == "sticky" else None
            lengths = _sticky_runs(times[nulls], cap, linger)
            out[nulls] = np.repeat(_sticky_choices(lengths, partitions, rng), lengths)
    return out


def closed_loop_order(p: ProducerSettings, n: int, gap: float, partitions: int, first: int, rng: np.random.Generator,
                      custom=None, cap: int | None = None, digits: bool = False) -> SendOrder:
    """A closed-loop producer's n records in send order, as ``assign_partitions`` places them were they sent
    `gap` apart from start.ms: null keys as runs or a cycle, without a per-record array (`digits`: keys kept as
    their digits, ``batches.key_digits``)."""
    name = p.partitioner if isinstance(p.partitioner, str) else "default"
    if p.key_cardinality is not None or custom is not None:
        key = rng.integers(0, p.key_cardinality, n).astype(np.int64) if p.key_cardinality is not None else None
        local = assign_partitions(p, key if key is not None else np.full(n, -1, dtype=np.int64), None, partitions,
                                  rng, custom, cap)
        return SendOrder.of_arrays(local + first, key_digits(key) if digits and key is not None else key)
    if name in ("legacy", "round_robin"):  # every record to the next partition
        return SendOrder.of_cycle(n, partitions, first)
    lengths = _sticky_runs(_Evenly(p.start_ms, gap, n), cap or p.records_per_batch,
                           p.linger_ms if name == "sticky" else None)
    return SendOrder.of_runs(lengths, _sticky_choices(lengths, partitions, rng) + first)


def build_workload(settings: Settings, topic_first: dict[str, int], streams, partitioner=None) -> Workload:
    """The records of every producer of the scenario.

    `topic_first` maps a topic to its first global partition index; `streams`
    gives producer i its ``producers[i].arrivals`` and ``producers[i].keys``
    generators (the keys generator also makes the sticky partitioners'
    choices). `partitioner` is an optional callable (key or None, partitions)
    -> partition for every producer.

    Each producer's records are made in turn and copied into the run's arrays
    at once (a production second has nearly two million records: the arrays
    are made once, at their final size, and each producer's temporaries go
    before the next producer's are made). A keyed open-loop producer without
    bursts (``_in_pieces``) is only counted here (its arrivals, then its
    records per partition): its RecordMaker makes its records a piece of
    draws at a time as the run reads them, into their slots (the pages of its
    slots are written only then); the same records as made whole.
    """
    duration = settings.duration_ms
    n_partitions = sum(t.partitions for t in settings.topics)
    producers = len(settings.producers)
    wide = any(p.key_cardinality is not None and p.key_cardinality > np.iinfo(np.int32).max
               for p in settings.producers)
    digits = settings.results_records == "none"  # (no records table: a key's digits are all the run reads of it)
    key_type = DIGITS if digits else np.int64 if wide else np.int32
    # first each open-loop producer's arrival times (what decides how many records there are), then, producer after
    # producer, its records' keys, partitions and times, straight into their places
    arrivals, closed, returns, states = [], {}, {}, {}
    counts = np.zeros((producers, n_partitions), dtype=np.int64)
    for i, p in enumerate(settings.producers):
        if p.closed_loop:  # its partitions as if sent back to back; its times come as the application sends them
            partitions, first = settings.topic(p.topic).partitions, topic_first[p.topic]
            cap = record_format(settings, p).records_per_batch
            n, gap = closed_loop_records(settings, p, i)
            order = closed_loop_order(p, n, gap, partitions, first, streams(f"producers[{i}].keys"), partitioner, cap,
                                      digits)
            covered = min(n, FIRST_SLOTS)
            closed[i] = (order, covered)
            counts[i] = order.counts(covered, n_partitions)
            arrivals.append(None)
        else:
            rng = streams(f"producers[{i}].arrivals")
            states[i] = rng.bit_generator.state  # (made again in pieces: SendReturns, _in_pieces)
            if _in_pieces(p, partitioner):  # only counted now
                arrivals.append(sum(len(t) for t in _poisson_chunks(p, duration, rng, PIECE)))
            else:
                arrivals.append(_arrivals(p, duration, rng))
    sizes = [int(counts[i].sum()) if a is None else a if isinstance(a, int) else len(a)
             for i, a in enumerate(arrivals)]
    total = sum(sizes)
    pages = None
    if total and digits and fold_possible(settings):  # (folded as the run goes: pages given back, RecordPages)
        pages = RecordPages(total)
    key = np.empty(total, dtype=key_type) if pages is None else pages.key
    if pages is not None or any(isinstance(a, int) for a in arrivals):  # (a buffer whose pages are written, so
        #                                                                   held, only as the records are made)
        buffer = np.empty(total, dtype=np.float64) if pages is None else pages.times
        ready = memoryview(buffer)
        ready_ms = buffer
    else:
        ready = array("d", [0.0]) * total if total else array("d")
        ready_ms = np.frombuffer(ready, dtype=np.float64) if total else np.empty(0)
    makers = {}
    costs = [send_cost_ms(settings, p) for p in settings.producers]
    at = 0
    for i, p in enumerate(settings.producers):
        size = sizes[i]
        end = at + size
        if p.closed_loop:
            ready_ms[at:end] = np.inf
            key[at:end] = -1
            at = end
            continue
        times = arrivals[i]
        arrivals[i] = None
        keys_rng = streams(f"producers[{i}].keys")
        partitions, first = settings.topic(p.topic).partitions, topic_first[p.topic]
        fmt = record_format(settings, p)
        if isinstance(times, int):
            makers[i] = RecordMaker(settings, p, times, states[i], costs[i], keys_rng, partitions, first, at, key,
                                    ready_ms, fmt.records_per_batch)
            counts[i, first:first + partitions] = makers[i].counts
            if times * fmt.record_bytes > p.buffer_memory:
                returns[i] = SendReturns(p, duration, states[i], costs[i], times)
            at = end
            continue
        n = len(times)
        if p.key_cardinality is not None:
            k = keys_rng.integers(0, p.key_cardinality, n).astype(np.int64, copy=False)
        else:
            k = np.full(n, -1, dtype=np.int64)
        local = assign_partitions(p, k, times, partitions, keys_rng, partitioner, fmt.records_per_batch)
        done = _after_sends(times, costs[i])
        if n * fmt.record_bytes > p.buffer_memory:  # (with bursts, the array: their merge is not made in chunks)
            returns[i] = done if p.burst is not None else SendReturns(p, duration, states[i], costs[i], n)
        del times  # (done is times without a send() cost)
        by = None
        if n and np.any(local[1:] < local[:-1]):  # (the partition order is its global order: one topic each)
            by = np.argsort(local, kind="stable")
            local = local[by]
        counts[i] = np.bincount(local + first, minlength=n_partitions)
        del local
        if p.key_cardinality is not None:  # (null keys read the same in any order)
            if digits:
                k = key_digits(k)
            key[at:end] = k if by is None else k[by]
        else:
            key[at:end] = -1
        del k
        sent = done if by is None else done[by]  # when each send() returned (the accumulator's times)
        del done, by
        ready_ms[at:end] = sent  # (each send() was called its cost before: ``Workload.send_calls``)
        del sent
        at = end
    del ready_ms
    hi = np.cumsum(counts.ravel()).reshape(counts.shape)
    w = Workload(key=key, lo=hi - counts, hi=hi, cost_ms=costs, ready_ms=ready, closed=closed or None,
                 returns=returns or None, makers=makers or None)
    if pages is not None:
        from ..results.latency import Fold  # (the results' histograms: imported only by a run that folds)

        pages.released, pages.folded = w.lo.copy(), w.lo.copy()
        w.pages, w.fold = pages, Fold(total)
    return w


class RecordMaker:
    """A keyed open-loop producer's records (``_in_pieces``) made a piece of draws at a time as the run reads them,
    into their slots of the run's arrays (the accumulator's times and the keys), laid out by partition and time as
    the whole arrays' stable sort lays them. At the setup its records per partition (the layout) are counted from a
    copy of its keys stream: with few keys for its records (partition_for_keys's bound) per key, then each key
    present hashed once into a table (as a whole array's are); with many, each piece of keys hashed. Then each
    piece of send() returns (``_return_pieces``) takes that many keys from the stream, and its records take the next
    slots of their partitions. A partition's records are made in time order, so its queue learns how far they are
    made (``PartitionQueue.made``), and a read past that asks for more (``make``)."""

    def __init__(self, settings: Settings, p: ProducerSettings, n: int, state: dict, cost: float,
                 keys_rng: np.random.Generator, partitions: int, first: int, at: int, key: np.ndarray,
                 ready_ms: np.ndarray, cap: int):
        card = p.key_cardinality
        again = _rng_at(keys_rng.bit_generator.state)  # (keyed records only: the partitioners draw nothing)
        self.p, self.cap = p, cap
        self.table = None  # key -> its partition (of the topic), with few keys for the records
        if card < 4 * n + 65536:
            per_key = np.zeros(card, dtype=np.int64)
            for s in range(0, n, 1 << 20):  # (a generator's draws split give the same sequence)
                per_key += np.bincount(again.integers(0, card, min(1 << 20, n - s)), minlength=card)
            unique = np.flatnonzero(per_key)
            table = np.zeros(card, dtype=np.int16 if partitions <= np.iinfo(np.int16).max else np.int32)
            for s in range(0, len(unique), PIECE):  # (hashing a key makes its text: a piece of keys at a time)
                some = unique[s:s + PIECE]
                table[some] = assign_partitions(p, some.astype(np.int64), None, partitions, keys_rng, None, cap)
            self.counts = np.bincount(table[unique], weights=per_key[unique], minlength=partitions).astype(np.int64)
            del unique, per_key
            self.table = table
        else:
            self.counts = np.zeros(partitions, dtype=np.int64)
            for s in range(0, n, PIECE):
                k = again.integers(0, card, min(PIECE, n - s)).astype(np.int64, copy=False)
                self.counts += np.bincount(assign_partitions(p, k, None, partitions, again, None, cap),
                                           minlength=partitions)
        del again
        self.card = card
        self.rng = keys_rng  # the keys stream, at the records' first key
        self.pieces = _return_pieces(p, settings.duration_ms, state, cost)
        self.partitions, self.first = partitions, first
        self.filled = at + np.cumsum(self.counts) - self.counts  # each partition's next slot to make (global index)
        self.key, self.ready_ms = key, ready_ms  # the run's arrays
        self.digits = key.dtype == DIGITS
        self.queues: list = []  # the producer's accumulator's queues (global partition index), told what is made
        self.last = -np.inf  # the last record made's send() return (the greatest so far)

    def attach(self, queues: list) -> None:
        """The producer's queues: nothing of theirs is made yet."""
        self.queues = queues
        first = self.first
        for p, lo in enumerate(self.filled.tolist()):
            queues[first + p].made = lo

    def make(self, q, upto: int) -> None:
        """The pieces up to the one that makes the queue's records below `upto` (at most its end)."""
        while q.made < upto:
            if self._step() is None:
                raise RuntimeError(f"records of partition {q.p} below {upto} asked for past the producer's last")

    def finish(self) -> None:
        """Every record left made."""
        while self._step() is not None:
            pass

    def _step(self, times: bool = True, keys: bool = True):
        """The next piece's records made (None: none left): their keys (unless `keys` is False) and times (unless
        `times` is False: a producer taken over, whose application thread gives them, ``rest``) written into their
        slots; returns the piece's send() returns, partitions (of the topic) and keys (the key array's type), in
        draw order."""
        done = next(self.pieces, None)
        if done is None:
            return None
        m = len(done)
        if not m:
            return done, np.empty(0, dtype=np.int64), self.key[:0]
        k = self.rng.integers(0, self.card, m).astype(np.int64, copy=False)
        table = self.table
        piece = table[k] if table is not None else assign_partitions(self.p, k, None, self.partitions, self.rng,
                                                                     None, self.cap)
        by = np.argsort(piece, kind="stable")
        ordered = piece[by]
        here = np.bincount(piece, minlength=self.partitions)
        slots = np.empty(m, dtype=np.int64)
        filled = self.filled
        slots[by] = filled[ordered] + (np.arange(m, dtype=np.int64) - (np.cumsum(here) - here)[ordered])
        filled += here
        k = key_digits(k) if self.digits else k.astype(self.key.dtype, copy=False)
        if times:
            self.ready_ms[slots] = done
        if keys:
            self.key[slots] = k
        self.last = float(done[-1])
        queues, first = self.queues, self.first
        if queues:
            ends = filled.tolist()
            for p in np.flatnonzero(here).tolist():
                queues[first + p].made = ends[p]
        return done, piece, k

    def upto(self, at: float) -> None:
        """Every record whose send() returns by `at` made (the pieces are in time order)."""
        while self.last <= at and self._step() is not None:
            pass

    def rest(self, keys: bool):
        """A producer taken over (``ProducerClient._take_over``): the records not made yet, a piece at a time in
        draw order (so in time order): (their send() returns, partitions (global), keys or None), read as its
        application thread reaches them; their times are not written (the thread gives them), their keys are
        written into their slots unless `keys` (then they go with the records)."""
        self.queues = []  # (its queues read every slot as made from now on)
        first = self.first
        while True:
            made = self._step(times=False, keys=not keys)
            if made is None:
                return
            done, piece, k = made
            yield done, (piece + first).astype(np.int32), k if keys else None


def _in_pieces(p: ProducerSettings, partitioner) -> bool:
    """Whether build_workload makes the producer's records a piece of draws at a time: open loop without bursts (its
    arrivals drawn again in pieces), every record keyed and its partition its key's alone (no callable partitioner,
    not round robin: a record's partition is not its index)."""
    name = p.partitioner if isinstance(p.partitioner, str) else "default"
    return (not p.closed_loop and p.burst is None and p.key_cardinality is not None and partitioner is None
            and name != "round_robin")
