"""batches: a batch's bytes as Kafka's record format counts them (DefaultRecord / LegacyRecord, recomputed by
``kafka_format``), keyed records and timestamp deltas, on both sides of the Python / NumPy switch."""

from __future__ import annotations

import math
import mmap
from array import array

import numpy as np
import pytest

from kafkamodel.sim.batches import _FEW_KEYS, _FEW_LOOKED_UP, Batches, RecordFormat, _keys_bytes, key_digits
from helpers import column_span, held_pages
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


@pytest.mark.parametrize("digits", [False, True])
@pytest.mark.parametrize("n", [1, 2, _FEW_KEYS, _FEW_KEYS + 1, 40])
def test_keyed_batches_on_both_sides_of_the_python_numpy_switch_are_kafkas_size(n, digits):
    """(`digits`: the format holds each key's digits, as a run without a records table keeps them, not its index.)"""
    rng = np.random.default_rng(n)
    keys = rng.integers(0, 10 ** rng.integers(1, 8, n), dtype=np.int64)
    keys[0] = 0  # key-0: one digit
    held = key_digits(keys) if digits else keys
    times = array("d", sorted(rng.uniform(0.0, 200.0, n).tolist()))
    v2 = RecordFormat(2, 100, 10 ** 8, "none", 1 << 20)
    v2.attach(times, held)
    base = math.floor(times[0])
    assert v2.batch_bytes(0, n) == 61 + sum(v2_record(i, math.floor(t) - base, f"key-{k}".encode(), 100)
                                            for i, (t, k) in enumerate(zip(times, keys.tolist())))
    for magic in (0, 1):
        legacy = RecordFormat(magic, 100, 10 ** 8, "none", 1 << 20)
        legacy.attach(times, held)
        assert legacy.batch_bytes(0, n) == sum(legacy_record(magic, f"key-{k}".encode(), 100) for k in keys.tolist())


@pytest.mark.parametrize("digits", [False, True])
@pytest.mark.parametrize("sizes", [[1, 2], [1] * _FEW_KEYS, [2, 1, 3] * 20, [40, 1, 7]])
def test_a_drains_batches_made_at_once_are_each_kafkas_size_and_rows_as_made_one_by_one(sizes, digits):
    """A drain's batches (ranges of several partitions' records, apart in the records' layout) sized at once, on
    both sides of the Python / NumPy switch (a few keys in all, or more), are each Kafka's size; made at once, their
    rows are those the same batches made one by one get. (`digits`: the keys held as their digits.)"""
    rng = np.random.default_rng(len(sizes))
    records = 4 * sum(sizes)
    keys = rng.integers(-1, 10 ** rng.integers(1, 8, records), dtype=np.int64)
    keys[keys < 0] = 0
    times = array("d", sorted(rng.uniform(0.0, 300.0, records).tolist()))
    los = [4 * sum(sizes[:i]) + i % 3 for i in range(len(sizes))]  # gaps between the ranges
    for magic in (0, 2):
        f = RecordFormat(magic, 100, 10 ** 8, "none", 1 << 20)
        f.attach(times, key_digits(keys) if digits else keys)
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
        one.new(lo, n, p, 0)
    first = many.new_many(los, sizes, parts, 0, f.batches_bytes(los, sizes))
    assert first == 0 and len(many) == len(sizes)
    for column in Batches.COLUMNS:
        made, alone = getattr(many, column), getattr(one, column)
        assert (made.tobytes() == alone.tobytes()) if isinstance(made, array) else made == alone, column


@pytest.mark.parametrize("codec", ["none", "lz4"])
@pytest.mark.parametrize("keyed,digits", [(False, False), (True, False), (True, True)])
@pytest.mark.parametrize("sizes", [[1] * 40, [1, 2] * 20, [2, 1, 3] * 20, [40, 1, 7] * 11, [70, 1] * 16, [9000, 1] * 2])
def test_a_drains_batches_sized_in_numpy_are_the_sizes_batch_bytes_gives(sizes, keyed, digits, codec):
    """``batches_bytes_array`` (a drain of many batches, in NumPy at once) gives each batch ``batch_bytes``'s size: one
    record each or more, timestamps spanning 64 ms and more (some batches) or not, more than 64 and 8,192 records,
    keys or none (indexes or digits), every magic, compressed or not."""
    rng = np.random.default_rng(len(sizes) + sum(sizes))
    records = 2 * sum(sizes) + 10
    keys = rng.integers(0, 10 ** rng.integers(1, 6, records), dtype=np.int64) if keyed else None
    steps = rng.choice([0.01, 0.5, 40.0], records, p=[0.6, 0.3, 0.1])
    times = array("d", np.cumsum(steps).tolist())
    los = [2 * sum(sizes[:i]) + i % 3 for i in range(len(sizes))]
    for magic in (0, 1, 2):
        f = RecordFormat(magic, 100, 10 ** 5 if keyed else None, codec, 1 << 20)
        f.attach(times, key_digits(keys) if digits else keys)
        got = f.batches_bytes_array(los, sizes)
        assert got.dtype == np.int64
        assert got.tolist() == [f.batch_bytes(lo, n) for lo, n in zip(los, sizes)], magic
    many = Batches([f])
    many.new_many(los, sizes, list(range(len(sizes))), 0, got)
    assert many.bytes.tolist() == got.tolist()


@pytest.mark.parametrize("digits", [False, True])
@pytest.mark.parametrize("sizes", [[17, 17], [1] * 3, [_FEW_LOOKED_UP // 2, _FEW_LOOKED_UP // 2], [_FEW_LOOKED_UP, 1], [5, 300]])
def test_keys_looked_up_in_python_count_what_numpy_counts(sizes, digits):
    """A format whose keys' digits are a lookup (held as digits, or indexes of a cardinality small enough for its
    ``digits_of`` list) counts a drain's key bytes in Python up to _FEW_LOOKED_UP keys in all: the same counts as
    NumPy's, null keys (-1) included."""
    rng = np.random.default_rng(sum(sizes))
    keys = rng.integers(-1, 12_345, 4 * sum(sizes) + 10, dtype=np.int64)
    keys[:3] = (-1, 0, 12_344)
    held = key_digits(keys) if digits else keys.astype(np.int32)
    times = array("d", sorted(rng.uniform(0.0, 300.0, len(keys)).tolist()))
    f = RecordFormat(1, 100, 12_345, "none", 1 << 20)
    f.attach(times, held)
    assert (f.digits_of is None) == digits
    los = [3 * sum(sizes[:i]) for i in range(len(sizes))]
    expected = _keys_bytes(held, los, sizes, digits) if sum(sizes) > _FEW_KEYS else None
    got = f.keys_bytes(los, sizes)
    if expected is not None:
        assert got == expected
    assert got == [4 * n + sum(len(str(k)) - (k < 0) if k >= -1 else 0 for k in keys[lo:lo + n].tolist())
                   if not digits else 4 * n + int(held[lo:lo + n].astype(np.int64).sum()) for lo, n in zip(los, sizes)]
    assert [f.key_bytes(lo, n) for lo, n in zip(los, sizes)] == got
    assert [f.batch_bytes(lo, n) for lo, n in zip(los, sizes)] == f.batches_bytes(los, sizes)


@pytest.mark.parametrize("magic,value,cardinality,batch_size", [
    (2, 100, None, 16384), (2, 1024, 10 ** 7, 65536), (2, 1, 10 ** 7, 1 << 20), (2, 300_000, 10, 16384),
    (1, 100, 10 ** 6, 16384), (0, 10, None, 1 << 20)])
def test_no_batch_is_larger_than_its_formats_bound_for_the_batch_tables_int32_sizes(magic, value, cardinality,
                                                                                   batch_size):
    """``max_batch_bytes`` bounds every batch (the batch table keeps sizes in int32 below it): a full batch of the
    format's longest keys and a timestamp delta of ten days, counted by Kafka's record format (``kafka_format``)."""
    f = RecordFormat(magic, value, cardinality, "none", batch_size)
    n = f.records_per_batch
    key = None if cardinality is None else f"key-{cardinality - 1}".encode()
    if magic >= 2:
        worst = 61 + sum(v2_record(i, 10 * 86_400_000, key, value) for i in range(n))
    else:
        worst = n * legacy_record(magic, key, value)
    assert worst <= f.max_batch_bytes
    assert Batches([f]).bytes.typecode == "H"  # (widened to int32 at need: ``widen``)


def test_the_batch_table_widens_where_int32_could_overflow():
    """A format whose batches could pass 2^31 - 1 bytes keeps sizes in int64; first records (``lo``) are int32 below
    2^31 records, and widen, keeping their values, when the workload grows past it; partitions and records per
    batch int8 or int16 where they fit it."""
    huge = RecordFormat(2, 100, None, "none", 2**31 - 1)
    assert huge.max_batch_bytes > 2**31 - 1
    assert Batches([huge]).bytes.typecode == "q"
    small = RecordFormat(2, 100, None, "none", 16384)
    assert Batches([small], 2**31).lo.typecode == "q"
    batches = Batches([small], 2**31 - 1)
    assert batches.lo.typecode == "i" and batches.seq.typecode == "h"
    batches.new(2**31 - 2, 1, 0, 0, 200)
    batches.fit_records(2**31 - 1)
    assert batches.lo.typecode == "i"
    batches.fit_records(2**31)
    assert batches.lo.typecode == "q" and batches.lo.tolist() == [2**31 - 2]
    batches.new(2**31, 1, 0, 0, 200)
    assert batches.lo.tolist() == [2**31 - 2, 2**31]
    # partitions int16 up to 32,767 of them; a batch's records int16 while no format's batch takes more
    assert Batches([small], 0, 2**15 - 1).partition.typecode == "h"
    assert Batches([small], 0, 2**15).partition.typecode == "i"
    many = RecordFormat(2, 1, None, "none", 1 << 20)  # 1-byte values: about 130,000 records a batch
    assert many.records_per_batch > 2**15 - 1
    assert Batches([small]).count.typecode == "h" and Batches([small, many]).count.typecode == "i"
    few = RecordFormat(2, 1024, 10 ** 6, "none", 65536)  # the production case's: about 60 records a batch
    assert few.records_per_batch <= 2**7 - 1 < small.records_per_batch
    assert Batches([few]).count.typecode == "b" and Batches([few, small]).count.typecode == "h"
    full = Batches([few])
    full.new(0, few.records_per_batch, 0, 0, 65000)
    assert full.count.tolist() == [few.records_per_batch]
    wide = Batches([many])
    wide.new(0, many.records_per_batch, 0, 0, 1 << 20)
    assert wide.count.tolist() == [many.records_per_batch]


def test_a_batchs_sends_are_int8_and_widen_at_the_128th(monkeypatch):
    """``attempt`` is int8; a batch sent a 128th time (retries at their default, Integer.MAX_VALUE, and a short
    backoff can get there) widens it to int32 in the producer's send loop, every other batch's count kept, and the run
    goes on as it would have: batches made with 127 sends already take the widened path at their first send here."""
    import kafkamodel.sim.batches as batches_module
    from kafkamodel import load_scenario
    from kafkamodel.sim.simulation import Simulation

    s = {"name": "attempts", "seed": 3, "duration.ms": 200.0, "brokers": 1,
         "topics": [{"name": "t", "partitions": 2, "replication.factor": 1}],
         "producers": [{"topic": "t", "rate.per.s": 2000, "acks": 1, "linger.ms": 1}]}

    def run():
        sim = Simulation(load_scenario(s))
        return sim, sim.run().summary

    batches = Batches([RecordFormat(2, 100, None, "none", 16384)])
    batches.new(0, 1, 0, 0, 200)
    column = batches.widen("attempt")
    assert column is batches.attempt and column.typecode == "i" and column.tolist() == [0]
    batches.new_many([1, 2], [1, 1], [0, 1], 0, [200, 200])
    assert batches.attempt.tolist() == [0, 0, 0]
    plain, expected = run()
    assert plain.batches.attempt.typecode == "b" and set(plain.batches.attempt.tolist()) == {1}
    row = list(batches_module._NEW_ROW)
    row[1] = 2**7 - 1  # (state, attempt, ...): every new batch as if already sent 127 times
    monkeypatch.setattr(batches_module, "_NEW_ROW", tuple(row))
    wide, summary = run()
    assert wide.batches.attempt.typecode == "i"
    assert set(wide.batches.attempt.tolist()) == {2**7}
    assert wide.batches.attempt is wide.batches._filled[1]  # new batches extend the widened column
    assert summary == expected


def test_widen_keeps_each_columns_values_and_new_batches_extend_the_wide_column():
    """``Batches.widen`` makes ``attempt`` int32, ``epoch`` int16 and ``seq`` int32 (Kafka's types), each value kept,
    and the batches made after it (one at a time or a drain's) get the same new rows as a table made wide from the
    start (a plain reference: lists of each field)."""
    f = RecordFormat(2, 100, None, "none", 16384)
    batches = Batches([f], records=100, partitions=4)
    assert (batches.attempt.typecode, batches.epoch.typecode, batches.seq.typecode) == ("b", "b", "h")
    plain = {"attempt": [], "epoch": [], "seq": []}

    def made(k):
        for name, value in zip(("attempt", "epoch", "seq"), (0, -1, -1)):
            plain[name].extend([value] * k)

    batches.new(0, 1, 0, 0, 200)
    made(1)
    batches.attempt[0], batches.epoch[0], batches.seq[0] = 127, 127, 2**15 - 1
    plain["attempt"][0], plain["epoch"][0], plain["seq"][0] = 127, 127, 2**15 - 1
    for name, wide, value in (("attempt", "i", 2**31 - 1), ("epoch", "h", 2**15 - 1), ("seq", "i", 2**31 - 1)):
        with pytest.raises(OverflowError):
            getattr(batches, name)[0] = value
        column = batches.widen(name)
        assert column is getattr(batches, name) and column.typecode == wide and column.tolist() == plain[name]
        column[0] = plain[name][0] = value
        batches.new(1, 1, 1, 0, 200)
        batches.new_many([2, 3], [1, 1], [2, 3], 0, [200, 200])
        made(3)
        for other in plain:
            assert getattr(batches, other).tolist() == plain[other], other
    assert batches._filled == (batches.state, batches.attempt, batches.visible_at, batches.epoch, batches.seq)
    with pytest.raises(ValueError):
        batches.widen("lo")


@pytest.mark.parametrize("partitions, rate, epoch, seq", [(3, 3000, 2**7 - 1, 2**15 - 1), (200, 30000, 2**7, 2**15)])
def test_epochs_and_sequences_past_int8_and_int16_widen_in_the_send_loop_and_the_run_is_the_same(
        monkeypatch, partitions, rate, epoch, seq):
    """A producer whose epochs and sequence numbers start at the narrow columns' largest values (127 and 32,767), or
    past them, widens ``epoch`` (int16) and ``seq`` (int32) as its send loop writes past them (a batch sent alone, a
    drain's new batches written together when it makes several: the 200-partition case, and resends after the
    broker's OUT_OF_ORDER_SEQUENCE_NUMBER, whose KIP-360 bump passes epoch 127): the run, its summary and every
    column's values, equals one whose table had those types from the start."""
    import kafkamodel.sim.clients.producer as producer_module
    from kafkamodel import load_scenario
    from kafkamodel.sim.simulation import Simulation

    s = {"name": "sequences", "seed": 5, "duration.ms": 300.0, "brokers": 1,
         "topics": [{"name": "t", "partitions": partitions, "replication.factor": 1}],
         "producers": [{"topic": "t", "rate.per.s": rate, "acks": "all", "linger.ms": 1, "enable.idempotence": True}]}
    if partitions > 10:  # keyed records to every partition, lingering: drains that make many batches at once
        s["producers"][0].update({"linger.ms": 5, "keys": {"cardinality": 100000}})
    state_init = producer_module.ProducerState.__init__

    def near_the_limits(self, *args, **kwargs):
        state_init(self, *args, **kwargs)
        self.epoch = [epoch] * len(self.epoch)
        self.next_seq = [seq] * len(self.next_seq)

    monkeypatch.setattr(producer_module.ProducerState, "__init__", near_the_limits)
    drains = []  # how many new batches each request's drain wrote together (ProducerClient._send_new)
    send_new = producer_module.ProducerClient._send_new
    monkeypatch.setattr(producer_module.ProducerClient, "_send_new",
                        lambda self, ps, first, k, answered: drains.append(k) or send_new(self, ps, first, k, answered))

    def run(wide):
        sim = Simulation(load_scenario(s))
        if wide:
            b = sim.batches
            b.epoch, b.seq = array("h", b.epoch), array("i", b.seq)
            b._filled = (b.state, b.attempt, b.visible_at, b.epoch, b.seq)
            b._new_rows = tuple(array(c.typecode, row) for c, row in zip(b._filled, b._new_rows))
        summary = sim.run().summary
        return sim.batches, summary

    narrow, summary = run(False)
    reference, expected = run(True)
    assert narrow.epoch.typecode == "h" and narrow.seq.typecode == "i"
    assert max(narrow.epoch) > 127
    if partitions > 10:  # its first sequences (2^15) are refused and rewritten from 0 after the epoch bump
        assert max(drains) > 1  # (several new batches written at once, through the widening)
    else:
        assert max(narrow.seq) > 2**15 - 1
    assert summary == expected
    for name in ("lo", "count", "bytes", "state", "attempt", "visible_at", "epoch", "seq"):
        assert getattr(narrow, name).tolist() == getattr(reference, name).tolist(), name


def test_sizes_are_uint16_and_widen_to_int32_at_the_first_batch_past_it_in_every_log():
    """``bytes`` is uint16; the first batch past 65,535 bytes, made alone (``new``) or in a drain (``new_many``: its
    sizes a list, whose extend stops at it, or an int64 array), widens it to int32, every size kept (a plain
    reference: a list), and every log made by ``Batches.log`` reads the widened column."""
    from kafkamodel.sim.storage.log import AppendTable

    f = RecordFormat(2, 30_000, None, "none", 1 << 20)
    assert f.max_batch_bytes > 2**16 - 1
    for how in ("new", "list", "array"):
        batches = Batches([f], records=100, partitions=4)
        logs = [batches.log(1 << 30, AppendTable()) for _ in range(3)]
        plain: list[int] = []
        batches.new(0, 1, 0, 0, 30_100)
        batches.new_many([1, 2], [1, 1], [1, 2], 0, np.array([2**16 - 1, 60_000], dtype=np.int64))
        plain += [30_100, 2**16 - 1, 60_000]
        assert batches.bytes.typecode == "H" and all(log.batch_bytes is batches.bytes for log in logs)
        sizes = [40_000, 2**16, 2**16 + 7, 90]
        if how == "new":
            for lo, size in enumerate(sizes, start=3):
                batches.new(lo, 2, 0, 0, size)
        else:
            batches.new_many([3, 5, 7, 9], [2] * 4, [0, 1, 2, 3], 0,
                             sizes if how == "list" else np.array(sizes, dtype=np.int64))
        plain += sizes
        assert batches.bytes.typecode == "i" and batches.bytes.tolist() == plain, how
        assert all(log.batch_bytes is batches.bytes for log in logs)
        assert len(batches.lo) == len(batches.bytes) == len(batches.state) == len(plain)
        logs.append(batches.log(1 << 30, AppendTable()))  # a log made after: the wide column
        batches.new(11, 1, 0, 0, 2**20)
        assert all(log.batch_bytes is batches.bytes for log in logs) and batches.bytes[-1] == 2**20


def test_a_run_whose_batches_pass_64_kib_widens_its_sizes_and_is_the_same():
    """A run of 30 KB records in 1 MiB batches (one record a batch at first, several as the load builds): its sizes
    widen mid-run, and the run, its summary and every batch's size, equals one whose sizes were int32 from the
    start."""
    import kafkamodel.sim.batches as batches_module
    from kafkamodel import load_scenario
    from kafkamodel.sim.simulation import Simulation

    s = {"name": "large", "seed": 4, "duration.ms": 300.0, "brokers": 3,
         "topics": [{"name": "t", "partitions": 2, "replication.factor": 3}],
         "producers": [{"topic": "t", "rate.per.s": 3000, "acks": "all", "linger.ms": 2, "batch.size": 1 << 20,
                        "record.size.bytes": 30_000}]}

    def run():
        sim = Simulation(load_scenario(s))
        summary = sim.run().summary
        return sim, summary

    narrow, summary = run()
    init = batches_module.Batches.__init__

    def wide(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self.bytes = array("i")

    batches_module.Batches.__init__ = wide
    try:
        reference, expected = run()
    finally:
        batches_module.Batches.__init__ = init
    assert narrow.batches.bytes.typecode == "i" and max(narrow.batches.bytes) > 2**16 - 1
    assert min(narrow.batches.bytes) < 2**16 - 1
    assert summary == expected
    assert narrow.batches.bytes.tolist() == reference.batches.bytes.tolist()
    assert all(rep.log.batch_bytes is narrow.batches.bytes for reps in narrow.replicas for rep in reps.values())


def _one_record_batches(n: int) -> Batches:
    """A batch table of `n` batches of one record each (100 bytes), over four partitions of one producer."""
    b = Batches([RecordFormat(2, 100, None, "none", 1 << 20)], records=1000, partitions=4)
    for k in range(n):
        b.new(k, 1, k % 4, 0, 100)
    return b


def test_acknowledgement_times_kept_as_runs_read_back_as_each_batchs_time():
    """``Batches.acked`` keeps runs of consecutive ids acknowledged at one time; ``BatchAccount.ack_ms_of`` gives
    each batch's time back, NaN for a batch not acknowledged: compared with a dict of every acknowledgement, for
    responses whose batches are a range, out of order, with gaps (a retried batch answered later) and empty."""
    from types import SimpleNamespace

    from kafkamodel.sim.protocol import ACKED, PENDING
    from kafkamodel.sim.results.accounting import BatchAccount, _ack_runs

    b = _one_record_batches(40)
    rng = np.random.default_rng(3)
    expected: dict[int, float] = {}
    responses = [[0, 1, 2], [3, 4], [7, 5, 6], [], [9, 12, 10], [8], [11, 13], [20, 14, 15], [16, 17]]
    responses += [list(rng.permutation(np.arange(21, 37)).tolist())]  # one response of 16 batches, any order
    now = 1.0
    for ids in responses:
        now += 0.5 if len(expected) % 3 else 0.0  # (some responses at the same instant as the one before)
        b.acked(ids, now)
        expected.update((i, now) for i in ids)
    assert len(b.acks_first) < len(expected)  # runs, not a cell a batch
    state = np.full(len(b), PENDING, dtype=np.int8)
    state[list(expected)] = ACKED
    account = SimpleNamespace(acks=_ack_runs(b), state=state)
    rows = np.arange(len(b))
    got = BatchAccount.ack_ms_of(account, rows)
    want = np.array([expected.get(i, np.nan) for i in rows.tolist()])
    assert np.array_equal(got, want, equal_nan=True)
    assert np.flatnonzero(np.isnan(got)).tolist() == [18, 19, 37, 38, 39]  # never acknowledged
    # a batch acknowledged but since marked otherwise reads NaN, as the column read through the state did
    state[5] = PENDING
    assert np.isnan(BatchAccount.ack_ms_of(account, np.array([5])))[0]


def test_visible_times_kept_as_instants_read_back_as_each_batchs_time():
    """A leader's HW advance marks the batches it newly covers with the index of its instant (``visible_at``, the
    instants kept once each in ``visible_instants``); ``Batches.visible_ms``, ``committed`` and the account's
    ``visible_ms_of``, ``visible_ms`` and ``committed`` give each batch's time back, NaN (not committed) for a batch
    no HW covered: compared with a dict of every batch's first covering time, for advances of several partitions
    at one instant, a batch covered again later (it keeps its first time) and batches never covered."""
    from types import SimpleNamespace

    from kafkamodel.sim.results.accounting import BatchAccount, _view

    b = _one_record_batches(60)
    rng = np.random.default_rng(5)
    expected: dict[int, float] = {}
    now = 0.0
    for step in range(40):
        if step % 3:
            now += float(rng.choice([0.25, 1.0, 3.5]))  # (some advances at the instant of the one before)
        covered = rng.choice(55, size=int(rng.integers(0, 5)), replace=False).tolist()  # 55..59: never covered
        at = 0  # as LeaderRole's advance: the instant's index taken once, when a batch first needs it
        for x in covered:
            if not b.visible_at[x]:
                if not at:
                    at = b.visible_index(now)
                b.visible_at[x] = at
            expected.setdefault(x, now)
    assert len(b.visible_instants) - 1 < len(expected)  # an instant for several batches
    assert [b.visible_ms(x) if b.committed(x) else None for x in range(len(b))] == [
        expected.get(x) for x in range(len(b))]
    account = SimpleNamespace(visible_at=_view(b.visible_at), visible_instants=_view(b.visible_instants))
    want = np.array([expected.get(x, np.nan) for x in range(len(b))])
    assert np.array_equal(BatchAccount.visible_ms.fget(account), want, equal_nan=True)
    rows = rng.permutation(len(b))[:30]
    assert np.array_equal(BatchAccount.visible_ms_of(account, rows), want[rows], equal_nan=True)
    assert np.array_equal(BatchAccount.visible_ms_of(account, slice(10, 50)), want[10:50], equal_nan=True)
    assert np.array_equal(BatchAccount.committed(account), ~np.isnan(want))
    assert np.array_equal(BatchAccount.committed(account, slice(10, 50)), ~np.isnan(want[10:50]))


def test_producers_kept_as_runs_read_back_as_each_batchs_producer():
    """The batch table keeps each batch's producer as runs of consecutive batches of one producer (a drain makes
    one producer's batches in a row); ``producer_of`` and ``producer_column`` (slices, index arrays, masks) give
    each batch's producer back: compared with a list of every batch's, made one by one and by drains, producers
    interleaved and repeated."""
    from kafkamodel.sim.batches import RunColumn

    formats = [RecordFormat(2, 100, None, "none", 1 << 20) for _ in range(3)]
    b = Batches(formats, records=10_000, partitions=8)
    assert len(b.producer_column()) == 0 and len(b.producer_column()[0:5]) == 0
    rng = np.random.default_rng(7)
    expected: list[int] = []
    lo = 0
    for step in range(60):
        producer = int(rng.choice([0, 0, 1, 2]))
        k = int(rng.choice([1, 1, 3, 40]))
        if k == 1 and step % 2:
            b.new(lo, 2, step % 8, producer, 100)
        else:
            b.new_many([lo + 2 * i for i in range(k)], [2] * k, [i % 8 for i in range(k)], producer, [100] * k)
        expected += [producer] * k
        lo += 2 * k
    b.new_many([], [], [], 1, [])  # an empty drain: no run
    assert len(b) == len(expected) and len(b.producer_runs) < len(expected)
    assert [b.producer_of(x) for x in range(len(b))] == expected
    column = b.producer_column()
    want = np.array(expected, dtype=np.int16)
    assert isinstance(column, RunColumn) and len(column) == len(want)
    assert column[:].dtype == np.int16 and column[:].tolist() == expected
    for a, z in ((0, 7), (5, 300), (len(want) - 3, len(want) + 10), (9, 9)):
        assert column[a:z].tolist() == want[a:z].tolist()
    rows = rng.permutation(len(want))[:50]
    assert column[rows].tolist() == want[rows].tolist()
    mask = rng.random(len(want)) < 0.3
    assert column[mask].tolist() == want[mask].tolist()
    # the broker reads a batch's compression cost through its producer's format
    assert b.decompress_ms(len(b) - 1) == 0.0
    lz4 = Batches([RecordFormat(2, 100, None, c, 1 << 20) for c in ("none", "lz4")], records=100, partitions=1)
    lz4.new_many([0, 2], [2, 2], [0, 0], 1, [150, 150])
    lz4.new(4, 2, 0, 0, 150)
    assert lz4.decompress_ms(0) == lz4.decompress_ms(0, 1) > 0.0 == lz4.decompress_ms(2) == lz4.decompress_ms(2, 0)


def _table(n: int) -> Batches:
    b = Batches([RecordFormat(2, 100, None, "none", 1 << 14)], records=10 * n, partitions=8)
    ids = list(range(n))
    b.new_many([10 * i for i in ids], [3] * n, [i % 8 for i in ids], 0, [200] * n)
    return b


def test_giving_back_a_prefix_frees_its_pages_and_keeps_the_rest_and_the_ids():
    """``give_back``: the whole pages of the rows below the bound, in every column it names, are no longer held
    (the kernel's page table says so), and read as zeros; the rows above it and the sizes (which a follower's
    fetch reads) keep their values, a batch id is still its row, and the columns still grow."""
    from kafkamodel.sim.batches import _madvise

    if _madvise is None:
        pytest.skip("no madvise here")
    n = 1 << 20
    b = _table(n)
    lo_before = np.frombuffer(b.lo, dtype=b.lo.typecode).copy()
    held = {name: held_pages(*column_span(getattr(b, name))) for name in Batches.GIVEN_BACK}
    upto = 3 * n // 4
    b.give_back(upto)
    for name in Batches.GIVEN_BACK:
        column = getattr(b, name)
        page_rows = mmap.PAGESIZE // column.itemsize
        # the pages wholly below the bound are gone; what is left is the rows above it, and a page either side
        assert held_pages(*column_span(column)) <= held[name] - (upto // page_rows) + 2, name
        cells = np.frombuffer(column, dtype=column.typecode)
        assert not cells[page_rows:upto - page_rows].any(), name  # (read as zeros)
        del cells
    assert np.array_equal(np.frombuffer(b.lo, dtype=b.lo.typecode)[upto:], lo_before[upto:])
    assert b.bytes[0] == 200 and b.bytes[upto - 1] == 200  # (the sizes are kept)
    assert b.partition[n - 1] == (n - 1) % 8
    b.give_back(upto)  # (again: nothing more)
    assert b.new(10 * n, 2, 5, 0, 150) == n and b.lo[n] == 10 * n and b.count[n] == 2
    b.give_back(n + 1)
    assert b.lo[n] == 10 * n  # (its page is the last one: not wholly below the bound)


def test_poisoned_rows_take_each_columns_largest_value_from_where_the_last_left_off(monkeypatch):
    """``Batches.POISON`` (for the tests that check no step reads a row given back): each column's largest value
    instead, from the last bound to the new one; a widened column is poisoned again from its start."""
    monkeypatch.setattr(Batches, "POISON", True)
    b = _table(100)
    b.give_back(40)
    largest = {code: 2 ** (8 * array(code).itemsize - 1) - 1 for code in "bhiq"}  # (signed: 127, 32767, ...)
    for name in Batches.GIVEN_BACK:
        column = getattr(b, name)
        assert set(column[:40]) == {largest[column.typecode]}, name
    assert b.lo[40] == 400 and b.count[40] == 3 and b.partition[40] == 0
    b.attempt[50] = 5
    b.give_back(60)
    assert b.attempt[50] == 127 and b.attempt[60] == 0 and set(b.seq[:60]) == {2**15 - 1}
    b.widen("seq")
    b.seq[10] = 3
    b.give_back(60)
    assert b.seq[10] == 2**31 - 1 and b.seq.typecode == "i"


def test_the_columns_named_are_every_attribute_but_the_formats_logs_and_bookkeeping():
    """``Batches.COLUMNS`` (what the tests that compare two runs' batch tables compare) is every slot of the table
    but the record formats, the logs and the table's own bookkeeping: a column added to the table is compared."""
    others = {"formats", "logs", "visible_index", "_filled", "_new_rows", "given", "_poisoned"}
    assert set(Batches.COLUMNS) == set(Batches.__slots__) - others and len(Batches.COLUMNS) == len(set(Batches.COLUMNS))
