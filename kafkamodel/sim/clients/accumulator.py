"""The producer's RecordAccumulator, live: records join their partition's open batch as they are sent.

Per partition a producer keeps its records in send order; the open batch is
the run of records not drained yet, from ``next``. It is *ready* when full
(``batch.size`` worth of records has arrived) or ``linger.ms`` after its
first record; the sender drains a broker's partitions into one request once
one of them is ready and the connection has an in-flight slot (Kafka drains
every partition with data on a ready broker, one batch each). Until then
records keep joining it, so batches grow while the slots are taken. The
batch is cut when drained: its end is a search over the arrival times.

Batches that failed wait in ``retry`` (sequence order) ahead of new records,
``retry.backoff.ms`` after the last error. An idempotent producer resends
the oldest alone (``probing``) until it goes through, then the rest follow
(Kafka sends a retried batch only as the first sequence in flight); a plain
producer sends them as any batch, so a resend can land behind a batch sent
after it.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right

INF = float("inf")


class PartitionQueue:
    """One producer's records and unfinished batches for one partition."""

    __slots__ = ("p", "next", "end", "made", "retry", "probing", "probe", "backoff_until", "stamp", "node", "inflight")

    def __init__(self, p: int, lo: int, hi: int):
        self.p = p  # global partition index
        self.next = lo  # first record not in a batch yet
        self.end = hi  # one past its last record
        self.made = hi  # one past its last record made (read only below it: workload.RecordMaker makes the rest)
        self.retry: list[int] = []  # failed batches to send again, in sequence order
        self.probing = False  # idempotent, after an error: only retry[0] goes, alone, until it succeeds
        self.probe = -1  # the batch in flight as that probe (-1: none)
        self.backoff_until = 0.0  # no resend before this (retry.backoff.ms after the last error)
        self.stamp = 0  # version of its entry in the sender's heaps and of its ready event
        self.node = -1  # the broker whose heap holds its entry (-1: none, or no leader known)
        self.inflight = 0  # its batches sent and not yet answered


class Accumulator:
    """One producer's partition queues, and how batches are cut from them."""

    __slots__ = ("times", "cap", "linger", "queues", "batches", "producer", "maker")

    def __init__(self, producer: int, config, times: array | memoryview, lo: list, hi: list, batches, maker=None):
        self.producer = producer
        self.times = times  # every record's send time (all producers; this one's ranges index into it)
        self.maker = maker  # its records made as they are read (workload.RecordMaker), or None: made before the run
        self.cap = batches.formats[producer].records_per_batch  # records that fit in batch.size
        self.linger = config.linger_ms
        self.batches = batches
        self.queues = [PartitionQueue(p, lo[p], hi[p]) for p in range(len(lo))]
        if maker is not None:
            maker.attach(self.queues)

    def make(self, q: PartitionQueue, upto: int) -> None:
        """The queue's records below `upto` made (a record is read only once made: every read below asks first for
        the records up to its next batch's end, the furthest it reads)."""
        self.maker.make(q, upto)

    def due(self, q: PartitionQueue) -> tuple[float, float]:
        """When the queue first has something a drain may take, and when its head becomes ready (INF: never): a
        resend after its backoff (both); new records from the first one's arrival, ready when full or linger.ms
        after it."""
        if q.retry:
            at = INF if q.probing and q.probe >= 0 else q.backoff_until
            return at, at
        lo = q.next
        end = q.end
        if lo >= end:
            return INF, INF
        last = lo + self.cap - 1
        if q.made < end and q.made <= last:
            self.make(q, last + 1 if last < end else end)
        times = self.times
        first = times[lo]
        linger = first + self.linger
        if last < end and times[last] < linger:
            return first, times[last]  # full before linger.ms runs out
        return first, linger

    def take(self, q: PartitionQueue, now: float) -> int:
        """The batch a drain takes from the queue now (-1: none): its oldest resend, else a new batch of
        every record arrived so far, up to batch.size. (A drain cuts its new batches after the request's first
        itself, by the same rule, and makes them at once: ``ProducerClient._drain``.)"""
        if q.retry:
            if now < q.backoff_until or (q.probing and q.probe >= 0):
                return -1
            b = q.retry.pop(0)
            if q.probing:
                q.probe = b
            return b
        lo = q.next
        if lo >= q.end:
            return -1
        top = lo + self.cap
        if top > q.end:
            top = q.end
        if q.made < top:
            self.make(q, top)
        times = self.times
        if times[lo] > now:
            return -1
        hi = q.next = bisect_right(times, now, lo, top)
        return self.batches.new(lo, hi - lo, q.p, self.producer)

    def cut_expired(self, q: PartitionQueue, now: float, timeout: float) -> list[int]:
        """Batches of records that waited delivery.timeout.ms without being sent (they fail)."""
        out = []
        times = self.times
        while q.next < q.end:
            lo = q.next
            top = min(lo + self.cap, q.end)
            if q.made < top:
                self.make(q, top)
            if now - times[lo] < timeout:
                break
            hi = bisect_right(times, now - timeout, lo, top)  # (times in order: as if bisected to q.end, then top)
            q.next = hi
            out.append(self.batches.new(lo, hi - lo, q.p, self.producer))
        return out
