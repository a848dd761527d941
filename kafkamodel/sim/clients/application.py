"""A closed-loop producer's application thread: send() back to back while ``buffer.memory`` has room.

``rate.per.s: max`` (what ``kafka-producer-perf-test --throughput -1`` does):
the application calls send() as fast as it can, one record every
``producer.record.us`` (plus its compression, per uncompressed byte), while
the producer's BufferPool has room. Each record takes its share of a batch's
``batch.size`` from the pool (``RecordFormat.record_bytes``) until its batch
completes (acked or failed). With the pool full, send() blocks until a batch
completes; after ``max.block.ms`` it fails that record (Kafka's
TimeoutException: the record is never sent) and the application goes on with
the next one.

The records are decided before the run (``workload``: their partitions and
keys, in the order the application sends them) and each producer partition
has a range of slots; a record sent takes the next free slot of its partition,
so every partition's records stay in time order and batches stay contiguous
ranges. Slots never filled are dropped from the results (``results.outcome``).
"""

from __future__ import annotations

import numpy as np


class ApplicationThread:
    """One closed-loop producer's application thread and its BufferPool."""

    __slots__ = ("order", "keys", "k", "filled", "free_at", "used", "unit", "limit", "cost", "max_block", "blocked_at",
                 "stamp", "end_ms", "wait_ms", "exhausted")

    def __init__(self, order: np.ndarray, keys: np.ndarray | None, lo: np.ndarray, cost_ms: float, unit: float,
                 limit: int, max_block_ms: float, start_ms: float, end_ms: float):
        self.order = order  # partition (global index) of each record, in the order the application sends them
        self.keys = keys  # key index of each, in that order (None: null keys)
        self.k = 0  # next record the application sends
        self.filled = lo.copy()  # partition -> its next free slot (global record index)
        self.free_at = start_ms  # when the thread can call send() again
        self.used = 0.0  # bytes the pool has given out
        self.unit = unit  # pool bytes per record
        self.limit = limit  # buffer.memory
        self.cost = cost_ms  # the thread's time per send()
        self.max_block = max_block_ms
        self.blocked_at = -1.0  # when the send() now blocked began (-1: not blocked)
        self.stamp = 0  # version of its max.block.ms timer
        self.end_ms = end_ms  # no send() after this (stop.ms or the run's end)
        self.wait_ms = 0.0  # time send() spent blocked on the pool
        self.exhausted = 0  # records whose send() failed after max.block.ms


def send_records(app: ApplicationThread, now: float, times, send_ms: np.ndarray, keys: np.ndarray):
    """Run the application thread from `now`: records send() may take from the pool now get their slots and times
    (the accumulator's `times`, the workload's `send_ms` and `keys`); returns the partitions that got records (a
    NumPy array), and the time its send() blocks until (None: not blocked, or nothing left to send)."""
    if app.blocked_at >= 0:
        while now >= app.blocked_at + app.max_block and app.limit - app.used < app.unit and app.k < len(app.order):
            app.wait_ms += app.max_block  # the send() fails: TimeoutException after max.block.ms; the next one begins
            app.exhausted += 1
            app.k += 1
            app.blocked_at += app.max_block
            app.free_at = app.blocked_at
        if app.blocked_at >= app.end_ms:
            app.blocked_at = -1.0
            return None, None
    start = app.free_at if app.free_at > now else now
    room = int((app.limit - app.used) // app.unit)
    left = len(app.order) - app.k
    if app.cost > 0:
        left = min(left, max(0, int((app.end_ms - start) / app.cost)))
    elif start >= app.end_ms:
        left = 0
    m = min(room, left)
    if m <= 0:
        if room <= 0 and left > 0:
            if app.blocked_at < 0:
                app.blocked_at = start
            return None, app.blocked_at + app.max_block
        return None, None
    lo = app.k
    parts = app.order[lo:lo + m]
    done = start + app.cost * np.arange(1, m + 1, dtype=np.float64)  # each send() returns: the record is in a batch
    called = done - app.cost
    if app.blocked_at >= 0:  # the first one called send() when it blocked (if that time has come)
        if now > app.blocked_at:
            app.wait_ms += now - app.blocked_at
            called[0] = app.blocked_at
        app.blocked_at = -1.0
        app.stamp += 1  # its max.block.ms timer is void
    # slots: the j-th record of partition p in this run takes p's next free slot + j
    by_part = np.argsort(parts, kind="stable")
    sorted_parts = parts[by_part]
    touched, first, counts = np.unique(sorted_parts, return_index=True, return_counts=True)
    rank = np.arange(m, dtype=np.int64) - np.repeat(first, counts)
    slots = np.empty(m, dtype=np.int64)
    slots[by_part] = app.filled[sorted_parts] + rank
    app.filled[touched] += counts
    np.frombuffer(times, dtype=np.float64)[slots] = done
    send_ms[slots] = called
    if app.keys is not None:
        keys[slots] = app.keys[lo:lo + m]
    app.k = lo + m
    app.used += m * app.unit
    app.free_at = float(done[-1])
    if m == room and m < left:  # the pool is full: the next send() blocks from when the thread gets to it
        app.blocked_at = app.free_at
        return touched, app.blocked_at + app.max_block
    return touched, None


def release(app: ApplicationThread, records: int) -> None:
    """A batch of `records` completed (acked or failed): its pool bytes go back."""
    app.used -= records * app.unit
    if app.used < 1e-6:
        app.used = 0.0

