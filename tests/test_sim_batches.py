"""batches: a batch's bytes as Kafka's record format counts them (DefaultRecord / LegacyRecord, recomputed by
``kafka_format``), keyed records and timestamp deltas, on both sides of the Python / NumPy switch."""

from __future__ import annotations

import math
from array import array

import numpy as np
import pytest

from kafkamodel.sim.batches import _FEW_KEYS, Batches, RecordFormat
from kafka_format import legacy_record, v2_batch, v2_record


def test_keys_and_timestamp_deltas_count_as_kafka_counts_them():
    times = array("d", [0.0, 10.5, 63.9, 64.0, 64.2, 9000.0, 9000.5])
    keys = np.array([0, 7, 12, 123, 99999, 5, 1_000_000], dtype=np.int64)
    f = RecordFormat(2, 100, 1_000_001, "none", 1 << 20)
    f.attach(times, keys)
    base = math.floor(times[0])
    expected = 61 + sum(v2_record(i, math.floor(t) - base, f"key-{k}".encode(), 100)
                        for i, (t, k) in enumerate(zip(times, keys.tolist())))
    assert f.batch_bytes(0, len(times)) == expected
    # null keys, the same times: the deltas alone
    g = RecordFormat(2, 100, None, "none", 1 << 20)
    g.attach(times, None)
    assert g.batch_bytes(0, 7) == v2_batch(7, 100, timestamp_deltas=[math.floor(t) - base for t in times])


@pytest.mark.parametrize("n", [1, 2, _FEW_KEYS, _FEW_KEYS + 1, 40])
def test_keyed_batches_on_both_sides_of_the_python_numpy_switch_are_kafkas_size(n):
    rng = np.random.default_rng(n)
    keys = rng.integers(0, 10 ** rng.integers(1, 8, n), dtype=np.int64)
    keys[0] = 0  # key-0: one digit
    times = array("d", sorted(rng.uniform(0.0, 200.0, n).tolist()))
    v2 = RecordFormat(2, 100, 10 ** 8, "none", 1 << 20)
    v2.attach(times, keys)
    base = math.floor(times[0])
    assert v2.batch_bytes(0, n) == 61 + sum(v2_record(i, math.floor(t) - base, f"key-{k}".encode(), 100)
                                            for i, (t, k) in enumerate(zip(times, keys.tolist())))
    for magic in (0, 1):
        legacy = RecordFormat(magic, 100, 10 ** 8, "none", 1 << 20)
        legacy.attach(times, keys)
        assert legacy.batch_bytes(0, n) == sum(legacy_record(magic, f"key-{k}".encode(), 100) for k in keys.tolist())


@pytest.mark.parametrize("sizes", [[1, 2], [1] * _FEW_KEYS, [2, 1, 3] * 20, [40, 1, 7]])
def test_a_drains_batches_made_at_once_are_each_kafkas_size_and_rows_as_made_one_by_one(sizes):
    """A drain's batches (ranges of several partitions' records, apart in the records' layout) sized at once, on
    both sides of the Python / NumPy switch (a few keys in all, or more), are each Kafka's size; made at once, their
    rows are those the same batches made one by one get."""
    rng = np.random.default_rng(len(sizes))
    records = 4 * sum(sizes)
    keys = rng.integers(-1, 10 ** rng.integers(1, 8, records), dtype=np.int64)
    keys[keys < 0] = 0
    times = array("d", sorted(rng.uniform(0.0, 300.0, records).tolist()))
    los = [4 * sum(sizes[:i]) + i % 3 for i in range(len(sizes))]  # gaps between the ranges
    for magic in (0, 2):
        f = RecordFormat(magic, 100, 10 ** 8, "none", 1 << 20)
        f.attach(times, keys)
        got = f.batches_bytes(los, sizes)
        for lo, n, nbytes in zip(los, sizes, got):
            ks, ts = keys[lo:lo + n].tolist(), times[lo:lo + n]
            if magic == 2:
                base = math.floor(ts[0])
                assert nbytes == 61 + sum(v2_record(i, math.floor(t) - base, f"key-{k}".encode(), 100)
                                          for i, (t, k) in enumerate(zip(ts, ks)))
            else:
                assert nbytes == sum(legacy_record(0, f"key-{k}".encode(), 100) for k in ks)
    parts = list(range(len(sizes)))
    one, many = Batches([f]), Batches([f])
    for lo, n, p in zip(los, sizes, parts):
        one.new(lo, n, p, 0, times[lo])
    first = many.new_many(los, sizes, parts, 0, [times[lo] for lo in los], f.batches_bytes(los, sizes))
    assert first == 0 and len(many) == len(sizes)
    for column in Batches.__slots__[:-3]:
        assert getattr(many, column).tobytes() == getattr(one, column).tobytes(), column
