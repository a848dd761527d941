"""A producer's application thread once ``buffer.memory`` matters: send() blocks while the pool is full.

``rate.per.s: max`` (what ``kafka-producer-perf-test --throughput -1`` does):
the application calls send() as fast as it can, one record every
``producer.record.us`` (plus its compression, per uncompressed byte), while
the producer's BufferPool has room. Each record takes its share of a batch's
``batch.size`` from the pool (``RecordFormat.record_bytes``) until its batch
completes (acked or failed). With the pool full, send() blocks until a batch
completes; after ``max.block.ms`` it fails that record (Kafka's
TimeoutException: the record is never sent) and the application goes on with
the next one. The thread wakes once for all the batches the Sender completes
at one instant (a produce response's, freed in one loop on the Sender's
thread), and sends what their memory lets it.

The records are decided before the run (``slots.SendOrder``: their partitions
and keys, in the order the application sends them) and each producer
partition has a range of slots; a record sent takes the next free slot of its
partition, so every partition's records stay in time order and batches stay
contiguous ranges. The ranges hold the first ``covered`` records of the send
order; a send that needs more grows them first (``slots``). Slots never filled
are dropped when the run ends (``producer.ProducerClient.finish``).

An open-loop producer (``rate.per.s`` a number) keeps the send times decided
before the run while its pool never fills (``PoolWatch``: the first record
that would not fit, given the bytes released so far, and when its send()
is called); if that time comes, its records from there on are handed to an
application thread like a closed-loop producer's, each sent no earlier than
its own arrival (one application thread: a blocked send() delays the later
ones too).
"""

from __future__ import annotations

import mmap
from bisect import bisect_left

import numpy as np

from .slots import SendOrder


class ApplicationThread:
    """One producer's application thread and its BufferPool, from when the pool matters."""

    __slots__ = ("order", "covered", "arrivals", "base", "k", "filled", "free_at", "used", "unit", "limit", "cost",
                 "max_block", "start_ms", "blocked_at", "stamp", "end_ms", "wait_ms", "exhausted", "signalled", "more")

    def __init__(self, order: SendOrder, covered: int, lo: np.ndarray, cost_ms: float, unit: float,
                 limit: int, max_block_ms: float, start_ms: float, end_ms: float, arrivals: np.ndarray | None = None,
                 more=None):
        self.order = order  # partition (global index) and key of each record, in the order the application sends them
        self.covered = covered  # records of the order its partitions' slots are for (a send beyond grows them)
        self.arrivals = arrivals  # an open-loop producer's: when the application calls each send() at the earliest
        self.base = 0  # arrivals[0] is its base-th record's (``_forget``: the ones before were sent)
        self.k = 0  # next record the application sends
        self.filled = lo.copy()  # partition -> its next free slot (global record index)
        self.free_at = start_ms  # when the thread can call send() again
        self.used = 0.0  # bytes the pool has given out
        self.unit = unit  # pool bytes per record
        self.limit = limit  # buffer.memory
        self.cost = cost_ms  # the thread's time per send()
        self.max_block = max_block_ms
        self.start_ms = start_ms
        self.blocked_at = -1.0  # when the send() now blocked began (-1: not blocked)
        self.stamp = 0  # version of its max.block.ms timer
        self.end_ms = end_ms  # no send() after this (stop.ms or the run's end)
        self.wait_ms = 0.0  # time send() spent blocked on the pool
        self.exhausted = 0  # records whose send() failed after max.block.ms
        self.signalled = False  # completed batches freed pool bytes and the thread's wake-up is scheduled
        self.more = more  # a taken-over producer's: the rest of its order and arrivals, pieces (partitions, keys or
        #                   None, arrivals) its arrays take as the thread reaches them (``_reach``); None: all held


def _reach(app: ApplicationThread, hi: int) -> None:
    """The order's arrays and the arrivals hold the records up to `hi` (at most the order's end): the next pieces
    of ``more`` are appended, the records sent dropped (``_forget``'s drop, as the arrays are copied anyway)."""
    order = app.order
    while app.base + len(app.arrivals) < hi:
        parts, keys, arrivals = next(app.more)
        gone = app.k - app.base
        order.parts = np.concatenate((order.parts[gone:], parts))
        if order.key is not None:
            order.key = np.concatenate((order.key[gone:], keys))
        app.arrivals = np.concatenate((app.arrivals[gone:], arrivals))
        app.base = order.base = app.k


def send_records(app: ApplicationThread, now: float, times, workload, grow):
    """Run the application thread from `now`: records send() may take from the pool now get their slots and times
    (the accumulator's `times`: when send() returned; the workload's `key`, and the send() call of a record that
    blocked, ``Workload.keep_called``; `grow(app, k)` first if the slots hold fewer than k of its records: it returns
    the accumulator's times then, which a relayout may have replaced);
    returns the partitions that got records and each one's first slot filled now (two lists, in increasing
    partition order; None: no record sent), and the time its send() blocks until (None: not blocked, or nothing
    left to send)."""
    more = app.more
    if app.blocked_at >= 0:
        while now >= app.blocked_at + app.max_block and app.limit - app.used < app.unit and app.k < len(app.order):
            app.wait_ms += app.max_block  # the send() fails: TimeoutException after max.block.ms; the next one begins
            app.exhausted += 1
            app.k += 1
            app.blocked_at += app.max_block
            app.free_at = app.blocked_at
            if more is not None and app.k < len(app.order):
                _reach(app, app.k + 1)
            if app.arrivals is not None and app.k < len(app.order) and app.arrivals[app.k - app.base] > app.blocked_at:
                app.blocked_at = float(app.arrivals[app.k - app.base])  # the next send() is called later
        if app.blocked_at >= app.end_ms:
            app.blocked_at = -1.0
            return None, None
    arrivals = app.arrivals
    start = app.free_at if app.free_at > now else now
    room = int((app.limit - app.used) // app.unit)
    lo = app.k
    n = len(app.order)
    left = n - lo
    if arrivals is None and app.cost > 0:
        left = min(left, max(0, int((app.end_ms - start) / app.cost)))
    elif start >= app.end_ms:
        left = 0
    m = room if room < left else left
    if more is not None:  # (the records it sends now and the next one, whose arrival a full pool reads)
        _reach(app, min(n, lo + (m if m > 0 else 0) + 1))
        arrivals = app.arrivals
    few = m <= FEW  # (``_returns`` gives lists)
    if m > 0:
        done = _returns(app, lo, m, start)  # each send() returns: the record is in a batch
        if arrivals is not None and done[-1] - app.cost >= app.end_ms:  # none called after the end
            if few:
                m = bisect_left([t - app.cost for t in done], app.end_ms)
                del done[m:]
            else:
                m = int(np.searchsorted(done - app.cost, app.end_ms))
                done = done[:m]
            left = m if m < room else left
    if m <= 0:
        if room <= 0 and left > 0:
            if app.blocked_at < 0:
                app.blocked_at = max(start, float(arrivals[lo - app.base])) if arrivals is not None else start
            return None, app.blocked_at + app.max_block
        return None, None
    k = lo + m
    if k > app.covered:
        times = grow(app, k)  # (the accumulator's times may be a new array after the slots move)
    early = -1.0  # when the first one called send(), if before its return less the cost
    blocked_at = app.blocked_at
    if blocked_at >= 0:  # the first one called send() when it blocked (if that time has come)
        if now > blocked_at:
            app.wait_ms += now - blocked_at
            if blocked_at != float(done[0]) - app.cost:  # (Workload.send_calls computes the others alike)
                early = blocked_at
        app.blocked_at = -1.0
        app.stamp += 1  # its max.block.ms timer is void
    order = app.order
    if few:
        placed = _place_few(app, order.partitions(lo, k).tolist(), done, early, order.keys(lo, k), times, workload)
    else:
        placed = _place(app, order.partitions(lo, k), done, early, order.keys(lo, k), times, workload)
    app.k = k
    app.used += m * app.unit
    free_at = app.free_at = float(done[-1])
    if k - app.base >= FORGET:
        _forget(app)
    if m == room and m < left:  # the pool is full: the next send() blocks from when the thread gets to it
        if arrivals is not None:
            arrivals = app.arrivals  # (``_forget`` may have dropped the records sent)
            if arrivals[k - app.base] > free_at:
                free_at = float(arrivals[k - app.base])
        app.blocked_at = free_at
        return placed, free_at + app.max_block
    return placed, None


# A call that sends at most FEW records (a response that completed a few small batches) goes record by record in
# Python: NumPy's cost per call is most of the work for a few records. The two forms take the same steps, in the
# same floating-point operations (tests/test_producer_machine.py runs a taken-over producer both ways and compares
# every number and table).
FEW = 16


def _place(app: ApplicationThread, parts: np.ndarray, done, early: float, keys, times,
           workload) -> tuple[list[int], list[int]]:
    """The records sent, of `parts` in send order, take their slots: the j-th record of partition p in this call
    takes p's next free slot + j; each slot gets the record's return time (the accumulator's `times`; its send()
    was called its cost before, but the first's at `early` if that is not -1) and its key. Returns the partitions
    that got records, in increasing order, and each one's first slot filled."""
    m = len(parts)
    by_part = np.argsort(parts, kind="stable")
    sorted_parts = parts[by_part]
    touched, first, counts = np.unique(sorted_parts, return_index=True, return_counts=True)
    rank = np.arange(m, dtype=np.int64) - np.repeat(first, counts)
    slots = np.empty(m, dtype=np.int64)
    slots[by_part] = app.filled[sorted_parts] + rank
    firsts = app.filled[touched]
    app.filled[touched] = firsts + counts
    np.frombuffer(times, dtype=np.float64)[slots] = done
    if early >= 0:
        workload.keep_called(int(slots[0]), early)
    if keys is not None:
        workload.key[slots] = keys
    return touched.tolist(), firsts.tolist()


def _place_few(app: ApplicationThread, parts: list, done: list, early: float, keys, times,
               workload) -> tuple[list[int], list[int]]:
    """``_place`` record by record (a few records)."""
    filled = app.filled
    key = workload.key if keys is not None else None
    nxt: dict = {}  # partition -> its next free slot
    first: dict = {}  # partition -> its first slot filled in this call
    for j, p in enumerate(parts):
        slot = nxt.get(p)
        if slot is None:
            slot = first[p] = int(filled[p])
        nxt[p] = slot + 1
        times[slot] = done[j]
        if key is not None:
            key[slot] = keys[j]
    if early >= 0:
        workload.keep_called(int(filled[parts[0]]), early)
    for p, slot in nxt.items():
        filled[p] = slot
    touched = sorted(nxt)
    return touched, [first[p] for p in touched]


FORGET = 1 << 16  # records sent before the thread's per-record arrays drop them (at least)


def _forget(app: ApplicationThread) -> None:
    """The records the thread has sent are read no more: once they are at least FORGET and half of what its
    arrays hold (so each record is copied about once), the send order's arrays and the arrivals drop them. Only
    when its slots cover its whole order (a taken-over open-loop producer's; a closed-loop one's at its bound):
    growing the slots counts the order from its first record."""
    gone = app.k - app.base
    if gone < FORGET or 2 * gone < len(app.order) - app.base or app.covered < len(app.order):
        return
    app.order.forget(app.k)
    if app.arrivals is not None:
        app.arrivals = app.arrivals[gone:].copy()
    app.base = app.k


def _returns(app: ApplicationThread, lo: int, m: int, start: float):
    """When the next m send() calls return, the thread free from `start`: back to back (closed loop), or each no
    earlier than its arrival (e_k = max(a_k, e_k-1) + cost, as e_k = max over i <= k of (a_i - i cost) + k cost +
    cost). A list for at most FEW records (record by record, the same operations), else an array."""
    cost = app.cost
    if m <= FEW:
        if app.arrivals is None:
            return [start + cost * j for j in range(1, m + 1)]
        out = []
        top = -np.inf
        for j, a in enumerate(app.arrivals[lo - app.base:lo - app.base + m].tolist()):
            if j == 0 and a < start:
                a = start
            step = cost * j
            a -= step
            if a > top:
                top = a
            out.append(top + step + cost)
        return out
    if app.arrivals is None:
        return start + cost * np.arange(1, m + 1, dtype=np.float64)
    a = app.arrivals[lo - app.base:lo - app.base + m].copy()
    if a[0] < start:
        a[0] = start
    steps = cost * np.arange(m, dtype=np.float64)
    return np.maximum.accumulate(a - steps) + steps + cost


def in_time_order(pieces, cost: float):
    """Pieces (send() returns, partitions, keys or None) whose returns do not decrease, within and across pieces,
    given again in (return, partition, as given) order, the order a stable sort of a producer's slots (partition
    after partition, each in time order) by return gives, each piece as (partitions, keys, arrivals: returns less
    `cost`). A run of equal returns at a piece's end waits for the next piece, which may have more of them."""
    prev = None
    for t, parts, keys in pieces:
        if not len(t):
            continue
        if prev is not None:
            pt, pp, pk = prev
            if t[0] > pt[-1]:
                yield pp, pk, pt - cost
            else:  # (equal returns across the two: they go together, partition first)
                cut = int(np.searchsorted(pt, pt[-1], side="left"))
                if cut:
                    yield pp[:cut], pk[:cut] if pk is not None else None, pt[:cut] - cost
                t, parts = np.concatenate((pt[cut:], t)), np.concatenate((pp[cut:], parts))
                if keys is not None:
                    keys = np.concatenate((pk[cut:], keys))
        if len(t) > 1 and bool((t[1:] == t[:-1]).any()):  # equal returns: partition order (stable)
            by = np.lexsort((parts, t))
            t, parts = t[by], parts[by]
            if keys is not None:
                keys = keys[by]
        prev = (t, parts, keys)
    if prev is not None:
        pt, pp, pk = prev
        yield pp, pk, pt - cost


class PoolWatch:
    """An open-loop producer's pool while its send times are the ones decided before the run: when does the first
    record that does not fit call send()?"""

    __slots__ = ("returns", "fit", "released", "stamp")

    def __init__(self, returns, unit: float, limit: int):
        self.returns = returns  # when each send() returns, in send order (sorted): an array or a
        #                         ``workload.SendReturns`` (read at increasing indexes)
        self.fit = int(limit // unit)  # records the pool holds
        self.released = 0  # records whose batch completed
        self.stamp = 0  # version of its timer

    def full_at(self, cost: float) -> tuple[int, float]:
        """The first record that does not fit with what was released so far, and when its send() is called
        (-1, inf: none)."""
        k = self.fit + self.released
        if k >= len(self.returns):
            return -1, float("inf")
        return k, float(self.returns[k]) - cost


class Unsent:
    """A taken-over producer's slots from its application thread's next free one (``ApplicationThread.filled``): no
    record there yet, read by its accumulator as never arriving (+inf). Written as the accumulator reads them
    (``Accumulator.make``, as a ``workload.RecordMaker`` makes records), to the end of the page of the last slot it
    asks for, not the whole rest of the run's slots at the take-over: those pages are written only as the thread gets
    to them (each by the thread, or here a page ahead of it). A slot the thread filled is never written here: a queue's
    slots are made from its thread's next free one at the time."""

    __slots__ = ("acc", "filled")

    PER = mmap.PAGESIZE // 8  # slots a page of the times (float64; they start on a page: workload.RecordPages)

    def __init__(self, acc, app: ApplicationThread):
        self.acc = acc  # the producer's accumulator: its times (the run's, which a relayout may replace) and queues
        self.filled = app.filled  # partition -> the thread's next free slot (the thread's own array: kept current)

    def make(self, q, upto: int) -> None:
        """The queue's slots below `upto` (at most its end) made: +inf in the ones from the thread's next free one,
        to the end of `upto`'s page (at most the queue's end)."""
        a = int(self.filled[q.p])
        if a < q.made:
            a = q.made
        per = self.PER
        b = -(-upto // per) * per
        if b > q.end:
            b = q.end
        if b > a:
            np.frombuffer(self.acc.times, dtype=np.float64)[a:b] = np.inf  # (a view for this write only)
            a = b
        q.made = a

    def finish(self) -> None:
        """Every queue's slots made (a relayout moves them all)."""
        for q in self.acc.queues:
            if q.made < q.end:
                self.make(q, q.end)


def release(app: ApplicationThread, records: int) -> None:
    """A batch of `records` completed (acked or failed): its pool bytes go back."""
    app.used -= records * app.unit
    if app.used < 1e-6:
        app.used = 0.0

