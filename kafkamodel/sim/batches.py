"""The producers' batches: one table, a column per field (struct of arrays), owned here.

A batch is a contiguous range ``[lo, lo + count)`` of one producer's records
for one partition, made by the producer's accumulator when the sender drains
it (``accumulator``). Its identity and size never change; the producer
(``state``, ``attempt``, ``ack_ms``, ``error``, ``base``, ``epoch``, ``seq``)
and the leaders (``committed``, ``visible_ms``) fill in the rest. Columns are
Python lists: the event loop touches one cell at a time, which lists do
faster than NumPy arrays.
"""

from __future__ import annotations

import numpy as np

from .protocol import NONE, PENDING


class Batches:
    __slots__ = ("lo", "partition", "producer", "count", "bytes", "create_ms", "state", "attempt", "ack_ms", "error",
                 "base", "visible_ms", "committed", "epoch", "seq", "record_bytes")

    def __init__(self, record_bytes: list[int]):
        self.record_bytes = record_bytes  # producer -> bytes of one record
        self.lo: list[int] = []  # its first record
        self.partition: list[int] = []  # global partition index
        self.producer: list[int] = []  # producer index
        self.count: list[int] = []  # records
        self.bytes: list[int] = []  # bytes on the wire and on disk
        self.create_ms: list[float] = []  # its first record's send time (delivery.timeout.ms counts from here)
        self.state: list[int] = []  # PENDING, INFLIGHT, ACKED or FAILED
        self.attempt: list[int] = []  # sends so far
        self.ack_ms: list[float] = []  # when the producer learned of success
        self.error: list[int] = []  # the error a failed batch ended with
        self.base: list[int] = []  # offset the leader reported
        self.visible_ms: list[float] = []  # first time a leader's HW covered it
        self.committed: list[bool] = []  # some leader's HW covered it
        self.epoch: list[int] = []  # producer epoch its sequence number belongs to
        self.seq: list[int] = []  # sequence number, given at its first send in an epoch (batches go out in order)

    def new(self, lo: int, count: int, partition: int, producer: int, create_ms: float) -> int:
        """A batch of records [lo, lo + count); returns its id."""
        self.lo.append(lo)
        self.partition.append(partition)
        self.producer.append(producer)
        self.count.append(count)
        self.bytes.append(count * self.record_bytes[producer])
        self.create_ms.append(create_ms)
        self.state.append(PENDING)
        self.attempt.append(0)
        self.ack_ms.append(np.nan)
        self.error.append(NONE)
        self.base.append(-1)
        self.visible_ms.append(np.nan)
        self.committed.append(False)
        self.epoch.append(-1)
        self.seq.append(-1)
        return len(self.lo) - 1

    def __len__(self) -> int:
        return len(self.lo)

    def of_records(self, records: int) -> np.ndarray:
        """Per record, the batch holding it (-1: still in the accumulator at the end)."""
        if not self.lo:
            return np.full(records, -1, dtype=np.int64)
        # batch b + 1 from lo[b] on, back to 0 at its end (batches never overlap): a running sum, then -1
        lo = np.asarray(self.lo, dtype=np.int64)
        ids = np.arange(1, len(lo) + 1, dtype=np.int64)
        steps = np.zeros(records + 1, dtype=np.int64)
        np.add.at(steps, lo, ids)
        np.add.at(steps, lo + np.asarray(self.count, dtype=np.int64), -ids)
        out = np.cumsum(steps[:-1])
        out -= 1
        return out
