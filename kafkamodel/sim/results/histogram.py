"""A streamed latency histogram: log-linear buckets (HdrHistogram's layout), bounded error, the top values exact.

``LatencyHistogram`` takes latencies (ms, >= 0) in NumPy chunks and answers
percentiles as ``numpy.percentile`` does (linear interpolation between the two
order statistics around the rank), with each order statistic replaced by the
midpoint of its bucket, so that its memory is a few thousand counters however
many values it takes.

Buckets: in units of ``UNIT_MS`` (1 µs), values below ``SUB`` (128) units have
a bucket per unit; above, each power of two [2^e, 2^(e+1)) is cut into ``SUB``
equal buckets (width 2^e / SUB). A bucket's midpoint is therefore within half a
unit or 1/(2 SUB) of the value, and an interpolated percentile within

    |p̂ - p| <= p / 256 + 0.0005 ms   (RELATIVE_ERROR, ABSOLUTE_ERROR_MS)

of the exact one (the two order statistics' errors, weighted by the
interpolation, add up to at most that). The largest ``top`` values are kept
exactly (a partial sort per chunk), so the maximum, and the 99.9th percentile
when ``top >= exact_top(n)`` (= ceil(0.001 n) + 1, the order statistics it
interpolates between lie among them), are exact.

Why our own: the ``hdrhistogram`` package on PyPI records one integer value per
Python call (seconds for a production run's millions of records) and reports a
bucket's value, not NumPy's interpolated percentile; this one adds a chunk in a
few NumPy calls.
"""

from __future__ import annotations

import math

import numpy as np

UNIT_MS = 0.001  # the smallest bucket: 1 µs
SUB_BITS = 7
SUB = 1 << SUB_BITS  # buckets per power of two
RELATIVE_ERROR = 1.0 / (2 * SUB)  # 1/256: half a bucket's width over its lower bound
ABSOLUTE_ERROR_MS = UNIT_MS / 2  # below SUB units: half a unit


def exact_top(n: int, q: float = 99.9) -> int:
    """How many of the largest of n values hold the order statistics NumPy's q-th percentile interpolates between."""
    return int(math.ceil((100.0 - q) / 100.0 * n)) + 1 if n else 0


def bucket_of(values: np.ndarray) -> np.ndarray:
    """Each value's bucket index (values in ms, >= 0)."""
    units = np.asarray(values, dtype=np.float64) / UNIT_MS
    mantissa, exponent = np.frexp(units)  # units = mantissa * 2^exponent, mantissa in [0.5, 1)
    # in [2^(exponent-1), 2^exponent), exponent > SUB_BITS: SUB buckets from index (exponent - SUB_BITS) * SUB
    log = (exponent.astype(np.int64) - SUB_BITS - 1) * SUB + (mantissa * (2 * SUB)).astype(np.int64)
    return np.where(units < SUB, units.astype(np.int64), log)


def bucket_bounds(index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each bucket's [low, high) in ms."""
    index = np.asarray(index, dtype=np.int64)
    linear = index < SUB
    power = np.maximum(index // SUB - 1, 0)  # the power of two above SUB units: 2^(SUB_BITS + power) units
    width = np.where(linear, 1.0, np.ldexp(1.0, power))
    low = np.where(linear, index, np.ldexp(1.0, SUB_BITS + power) + (index % SUB) * width)
    return low * UNIT_MS, (low + width) * UNIT_MS


class LatencyHistogram:
    """Counts per log-linear bucket, the count and sum, and the `top` largest values exactly."""

    __slots__ = ("counts", "n", "total", "top", "keep")

    def __init__(self, top: int = 1):
        self.counts = np.zeros(64 * SUB, dtype=np.int64)
        self.n = 0
        self.total = 0.0
        self.keep = max(int(top), 1)
        self.top = np.empty(0, dtype=np.float64)  # the `keep` largest so far, unsorted

    def add(self, values: np.ndarray) -> None:
        values = np.asarray(values, dtype=np.float64)
        if not len(values):
            return
        if not np.all(values >= 0):  # (NaN fails too)
            raise ValueError("latency histogram: values must be >= 0 ms and not NaN")
        index = bucket_of(values)
        hi = int(index.max()) + 1
        if hi > len(self.counts):
            self.counts = np.concatenate([self.counts, np.zeros(hi - len(self.counts), dtype=np.int64)])
        self.counts[:hi] += np.bincount(index, minlength=hi)
        self.n += len(values)
        self.total += float(values.sum())
        pool = np.concatenate([self.top, values])
        if len(pool) > self.keep:
            pool = np.partition(pool, len(pool) - self.keep)[len(pool) - self.keep:]
        self.top = pool

    def merge(self, other: "LatencyHistogram") -> None:
        if len(other.counts) > len(self.counts):
            self.counts = np.concatenate([self.counts, np.zeros(len(other.counts) - len(self.counts), dtype=np.int64)])
        self.counts[:len(other.counts)] += other.counts
        self.n += other.n
        self.total += other.total
        self.keep = max(self.keep, other.keep)
        pool = np.concatenate([self.top, other.top])
        if len(pool) > self.keep:
            pool = np.partition(pool, len(pool) - self.keep)[len(pool) - self.keep:]
        self.top = pool

    def trim(self, top: int) -> None:
        """Keep only the `top` largest values (a histogram made with a larger bound, ``latency.Fold``, trimmed to
        what its count needs: then as one made with `top`, the same values kept)."""
        self.keep = max(int(top), 1)
        if len(self.top) > self.keep:
            self.top = np.partition(self.top, len(self.top) - self.keep)[len(self.top) - self.keep:]

    @property
    def mean(self) -> float | None:
        return self.total / self.n if self.n else None

    @property
    def max(self) -> float | None:
        return float(self.top.max()) if self.n else None

    def _order_statistics(self, ranks: np.ndarray) -> np.ndarray:
        """The values of the given 0-based ranks (ascending order): exact among the kept top values, else the
        midpoint of the bucket holding them."""
        ranks = np.asarray(ranks, dtype=np.int64)
        out = np.empty(len(ranks), dtype=np.float64)
        kept = np.sort(self.top)
        first_kept = self.n - len(kept)  # the rank of the smallest kept value
        exact = ranks >= first_kept
        out[exact] = kept[ranks[exact] - first_kept]
        if (~exact).any():
            cumulative = np.cumsum(self.counts)
            index = np.searchsorted(cumulative, ranks[~exact], side="right")  # the bucket holding each rank
            low, high = bucket_bounds(index)
            out[~exact] = (low + high) / 2
        return out

    def percentile(self, q: float) -> float | None:
        """NumPy's linear-interpolation q-th percentile, within RELATIVE_ERROR * p + ABSOLUTE_ERROR_MS (exact where
        both order statistics are among the kept top values)."""
        if not self.n:
            return None
        n, qf = self.n, q / 100.0
        rank = (n - 1) * qf  # (NumPy's virtual index for 'linear', operation for operation)
        below = min(max(int(math.floor(rank)), 0), n - 1)
        above = min(below + 1, n - 1) if 0 <= rank < n - 1 else below
        t = rank - math.floor(rank)
        a, b = self._order_statistics(np.array([below, above]))
        diff = b - a  # (NumPy's _lerp: from the nearer end)
        return float(b - diff * (1.0 - t) if t >= 0.5 else a + diff * t)
