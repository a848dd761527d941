"""Where a producer's records live while the run decides how many it sends: its send order, and slots that grow.

A closed-loop producer (``rate.per.s: max``) sends as many records as the run
lets it; what bounds them up front (its client NIC over the run) can be many
times what it sends. So neither its send order nor its slots are made for
that bound at once:

* ``SendOrder``: each record's partition (and key), in the order the
  application sends them, made as asked for: the sticky partitioners' runs
  (a partition and a length per batch-sized run), round robin as a cycle, or,
  for keyed records and a callable partitioner, the arrays themselves. Each
  is what ``workload.assign_partitions`` gives for the whole bound, so the
  records are the same however far the run gets.
* ``resize``: the workload's slots are one array per field, a contiguous
  range per producer and partition (``Workload.lo`` / ``hi``); a producer whose
  records outgrow its ranges gets larger ones (the counts of its partitions
  among more of its send order), every range moves to its new place, and
  whoever holds a record index shifts it by its range's move. At the run's end
  the slots never filled go the same way (sizes shrink to what was filled).
"""

from __future__ import annotations

import numpy as np


class SendOrder:
    """A producer's records in the order its application thread sends them: each one's partition (global index)
    and key (None: null keys), for its first ``len`` records."""

    __slots__ = ("n", "ends", "choice", "cycle", "first", "parts", "key", "base")

    def __init__(self, n: int, ends=None, choice=None, cycle: int = 0, first: int = 0, parts=None, key=None):
        self.n = n  # records it can give
        self.ends = ends  # runs: one past each run's last record (int64, increasing)
        self.choice = choice  # runs: each run's partition (int32, global)
        self.cycle = cycle  # round robin over this many partitions from `first` (0: not a cycle)
        self.first = first  # the topic's first global partition
        self.parts = parts  # every record's partition (int32, global), when not runs nor a cycle
        self.key = key  # every record's key index (int64), None for null keys
        self.base = 0  # the arrays hold records from this one on (``forget``: the ones before it were sent)

    @classmethod
    def of_runs(cls, lengths: np.ndarray, choice: np.ndarray) -> SendOrder:
        """Runs of `lengths` records, each to its partition in `choice`."""
        return cls(int(lengths.sum()), ends=np.cumsum(lengths, dtype=np.int64), choice=choice.astype(np.int32))

    @classmethod
    def of_cycle(cls, n: int, partitions: int, first: int) -> SendOrder:
        """n records, the i-th to partition first + i % partitions."""
        return cls(n, cycle=partitions, first=first)

    @classmethod
    def of_arrays(cls, parts: np.ndarray, key: np.ndarray | None) -> SendOrder:
        return cls(len(parts), parts=parts.astype(np.int32, copy=False), key=key)

    def __len__(self) -> int:
        return self.n

    def partitions(self, lo: int, hi: int) -> np.ndarray:
        """Partitions of records [lo, hi) (int32)."""
        if self.parts is not None:
            return self.parts[lo - self.base:hi - self.base]
        if self.cycle:
            return (np.arange(lo, hi, dtype=np.int64) % self.cycle + self.first).astype(np.int32)
        ends = self.ends
        r0 = int(np.searchsorted(ends, lo, side="right"))
        r1 = int(np.searchsorted(ends, hi - 1, side="right")) + 1 if hi > lo else r0
        stops = np.minimum(ends[r0:r1], hi)
        starts = np.empty_like(stops)
        starts[0:1] = lo
        starts[1:] = stops[:-1]
        return np.repeat(self.choice[r0:r1], stops - starts)

    def keys(self, lo: int, hi: int) -> np.ndarray | None:
        return None if self.key is None else self.key[lo - self.base:hi - self.base]

    def forget(self, k: int) -> None:
        """Records before the k-th are sent and never read again: the arrays drop them (runs and a cycle hold no
        per-record array). ``counts`` then no longer answers (it reads from the first record)."""
        if self.parts is None or k <= self.base:
            return
        drop = k - self.base
        self.parts = self.parts[drop:].copy()
        if self.key is not None:
            self.key = self.key[drop:].copy()
        self.base = k

    def counts(self, k: int, partitions: int) -> np.ndarray:
        """Records of each partition (global index, `partitions` of them) among the first k (int64)."""
        if self.parts is not None:
            if self.base:
                raise ValueError("SendOrder.counts: the records before the order's base were forgotten")
            return np.bincount(self.parts[:k], minlength=partitions).astype(np.int64)
        out = np.zeros(partitions, dtype=np.int64)
        if self.cycle:
            out[self.first:self.first + self.cycle] = k // self.cycle
            out[self.first:self.first + k % self.cycle] += 1
            return out
        ends = self.ends
        whole = int(np.searchsorted(ends, k, side="right"))  # runs that end by k
        lengths = np.diff(ends[:whole], prepend=0)
        np.add.at(out, self.choice[:whole], lengths)
        if whole < len(ends):
            out[self.choice[whole]] += k - (int(ends[whole - 1]) if whole else 0)
        return out


def resize(lo: np.ndarray, hi: np.ndarray, sizes: np.ndarray, in_place: bool = False):
    """New ranges of `sizes` slots per (producer, partition), laid out as before (producer after producer, partition
    after partition). Returns the new lo and hi, and `move(array, fill)`: a new array of the new layout, each range's
    first min(old, new size) slots as they were, the rest `fill`. `in_place` (no range grows: the run's end drops
    the slots never filled): `move` closes the ranges up inside `array` itself, each range to an index at or below
    its old one, in layout order (so no range is overwritten before it has moved), and returns its first slots, a
    view: no second array of the records is made."""
    sizes = np.asarray(sizes, dtype=np.int64)
    new_hi = np.cumsum(sizes.ravel()).reshape(sizes.shape)
    new_lo = new_hi - sizes
    total = int(new_hi.ravel()[-1]) if sizes.size else 0
    old = np.minimum(hi - lo, sizes).ravel()
    cells = [(a, b, n, m) for a, b, n, m in zip(lo.ravel().tolist(), new_lo.ravel().tolist(), old.tolist(),
                                                  sizes.ravel().tolist()) if m]
    if in_place and any(n < m for _, _, n, m in cells):
        raise ValueError("slots.resize: in place, no range may grow")

    def move(array: np.ndarray, fill) -> np.ndarray:
        if in_place:
            for a, b, n, _ in cells:
                if a != b:
                    array[b:b + n] = array[a:a + n]  # (b < a: NumPy copies an overlapping slice as if buffered)
            return array[:total]
        out = np.empty(total, dtype=array.dtype)  # (each slot written once: kept, or filled)
        for a, b, n, m in cells:
            out[b:b + n] = array[a:a + n]
            out[b + n:b + m] = fill
        return out

    return new_lo, new_hi, move
