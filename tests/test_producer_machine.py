"""The producer's side of the hardware: Kafka's record format, compression, the client machine, closed-loop load.

Each expected number is computed here: batch sizes from Kafka's DefaultRecord / LegacyRecord definitions
(``kafka_format``), rates from producer.record.us and the client NIC's Gbps, compression from the lzbench row the
codec table cites.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from kafkamodel import load_scenario, simulate
from kafkamodel.sim.simulation import Simulation

from kafka_format import legacy_record, v2_batch, v2_capacity, v2_record
from shipped import ZERO_COSTS

UNLIMITED = {"nic.gbps": None}


def scenario(producers, duration=2000.0, version=None, latency=0.1, **extra):
    s = {"name": "producer-machine", "seed": 3, "duration.ms": duration, "brokers": 1, "costs": dict(ZERO_COSTS),
         "network": {"latency.ms": latency, "bandwidth.mbps": None},
         "hardware": {"client": dict(UNLIMITED), "broker": {"nic.gbps": None}},
         "topics": [{"name": "t", "partitions": 1, "replication.factor": 1}],
         "producers": producers, **extra}
    if version:
        s["kafka.version"] = version
    return s


def batches_of(s):
    sim = Simulation(load_scenario(s))
    sim.run()
    return sim.batches


def burst(records, size=100, **producer):
    """One send of `records` records at t=0, all in one batch (linger.ms long enough, batch.size large)."""
    return {"topic": "t", "acks": 1, "linger.ms": 50, "batch.size": 1048576, "record.size.bytes": size,
            "burst": {"records": records, "every.ms": 100000}, **producer}


@pytest.mark.parametrize("records,size", [(1, 100), (10, 100), (100, 1000), (200, 20), (70, 10000), (100, 8185)])
def test_a_v2_batch_of_null_key_records_is_kafkas_size(records, size):
    b = batches_of(scenario([burst(records, size)]))
    assert b.count[0] == records
    assert b.bytes[0] == v2_batch(records, size)
    # by hand for one case: 100-byte values, offset deltas below 64: body 1+1+1+1+2+100+1 = 107, its varint 1 more
    if (records, size) == (10, 100):
        assert b.bytes[0] == 61 + 10 * (107 + 2)


@pytest.mark.parametrize("version,magic", [("0.8", 0), ("0.10", 1)])
def test_legacy_message_sets(version, magic):
    b = batches_of(scenario([burst(30, 100)], version=version))
    assert b.bytes[0] == 30 * legacy_record(magic, None, 100)
    assert legacy_record(magic, None, 100) == (126 if magic == 0 else 134)


@pytest.mark.parametrize("codec,compressed,original", [("lz4", 100880800, 211947520), ("gzip", 68228431, 211947520)])
def test_compression_shrinks_the_records_by_the_codecs_ratio(codec, compressed, original):
    """lzbench 1.7.1 on silesia.tar: lz4 1.7.5 and zlib -6 (Kafka's gzip: Deflater's default level)."""
    plain = batches_of(scenario([burst(100, 1000)])).bytes[0]
    packed = batches_of(scenario([burst(100, 1000, **{"compression.type": codec})])).bytes[0]
    assert packed - 61 == math.ceil((plain - 61) * compressed / original)
    # v1: the inner set wrapped in one message
    legacy = batches_of(scenario([burst(100, 1000, **{"compression.type": codec})], version="0.10")).bytes[0]
    assert legacy == legacy_record(1, None, 0) + math.ceil(100 * legacy_record(1, None, 1000) * compressed / original)


def closed(**producer):
    return {"topic": "t", "acks": 1, "rate.per.s": "max", "linger.ms": 0, **producer}


def test_a_closed_loop_producer_alone_sends_one_record_per_record_us():
    record_us, duration = 10.0, 2000.0
    s = simulate(scenario([closed()], duration, costs={**ZERO_COSTS, "producer.record.us": record_us})).summary
    rate = 1e6 / record_us
    assert s["records_sent"] == pytest.approx(rate * duration / 1000.0, rel=0.001)
    assert s["records_acked_per_s"] == pytest.approx(rate, rel=0.01)
    assert s["producer_buffer_wait_ms"] == 0.0 and s["buffer_exhausted_records"] == 0


def nic_bound(gbps: float, batch: int = 16384, size: int = 100) -> float:
    """Records/s a client NIC of `gbps` carries in full batches of Kafka's format."""
    cap = v2_capacity(batch, size)
    return gbps * 1e9 / 8 / v2_batch(cap, size) * cap


def test_a_closed_loop_producer_is_bound_by_its_nic_and_each_producer_has_its_own():
    gbps = 0.1
    costs = {**ZERO_COSTS, "producer.record.us": 0.5}
    one = simulate(scenario([closed()], costs=costs, hardware={"client": {"nic.gbps": gbps}})).summary
    assert one["records_acked_per_s"] == pytest.approx(nic_bound(gbps), rel=0.02)
    two = simulate(scenario([closed(instances=2)], costs=costs, hardware={"client": {"nic.gbps": gbps}})).summary
    assert two["records_acked_per_s"] == pytest.approx(2 * nic_bound(gbps), rel=0.02)


def test_a_full_buffer_blocks_send_and_max_block_ms_fails_records():
    """A slow broker (100 ms each way) and a 1 MiB buffer.memory: the pool holds 1 MiB / 16384 batches' records; the
    application waits for the pool most of the run; with max.block.ms 5 each wait of 5 ms fails one record."""
    costs = {**ZERO_COSTS, "producer.record.us": 1.0}
    base = scenario([closed(**{"buffer.memory": 1 << 20})], 3000.0, latency=100.0, costs=costs)
    s = simulate(base).summary
    cap = v2_capacity(16384, 100)
    in_pool = (1 << 20) // 16384 * cap  # records the pool holds: 64 batches
    assert s["backlog_records"] <= in_pool
    assert s["backlog_records"] >= in_pool - cap
    assert s["producer_buffer_wait_ms"] > 0.5 * 3000.0
    assert s["buffer_exhausted_records"] == 0
    failing = simulate(scenario([closed(**{"buffer.memory": 1 << 20, "max.block.ms": 5})], 3000.0, latency=100.0,
                                costs=costs)).summary
    assert failing["buffer_exhausted_records"] > 0
    # each failed send() blocked max.block.ms; the rest of the wait is the part of a block a release ended
    assert failing["buffer_exhausted_records"] * 5.0 <= failing["producer_buffer_wait_ms"] + 1e-6
    assert failing["buffer_exhausted_records"] * 5.0 >= 0.9 * failing["producer_buffer_wait_ms"] - 5.0 * 30


@pytest.mark.parametrize("record_us", [1.0, 0.0])
def test_an_open_loop_producer_blocks_only_once_its_pool_is_full(record_us):
    """Open loop at 2,000 records/s under the broker's capacity: the send times stand, nothing blocks. At 20,000/s
    over it: the 1 MiB pool fills (64 batches of records), send() blocks, and the records the run could not take
    are never sent. (With send() free, the record that finds the pool full is appended the instant it is sent.)"""
    costs = {**ZERO_COSTS, "producer.record.us": record_us}
    cap = v2_capacity(16384, 100)
    in_pool = (1 << 20) // 16384 * cap

    def run(rate):
        return simulate(scenario([{"topic": "t", "acks": 1, "rate.per.s": rate, "linger.ms": 0,
                                   "buffer.memory": 1 << 20}], 3000.0, latency=100.0, costs=costs)).summary

    under = run(2000)
    assert under["producer_buffer_wait_ms"] == 0.0
    assert under["records_sent"] == pytest.approx(2000 * 3.0, rel=0.05)  # Poisson arrivals: all of them
    over = run(20000)
    assert over["producer_buffer_wait_ms"] > 0.5 * 3000.0
    assert in_pool - cap <= over["backlog_records"] <= in_pool
    assert over["records_sent"] < 0.5 * 20000 * 3.0


@pytest.mark.parametrize("max_block_ms", [60000.0, 5.0])
def test_keyed_records_an_application_thread_takes_over_keep_their_keys(max_block_ms, monkeypatch):
    """An open-loop keyed producer over its pool: from the take-over each record gets its slot again as send() lets
    it go. With max.block.ms past the run's end each keeps the slot (and key) it had: the run is the same as one
    that gives every record's key again. With 5 ms send()s fail and the records after one move a slot down, so
    their keys must go with them: left in place, the records table differs. Either way each record sent is in the
    partition Kafka's murmur2 gives its key."""
    from kafkamodel.sim.clients.partitioner import murmur2
    from kafkamodel.sim.clients.producer import ProducerClient
    from snapshot import capture

    costs = {**ZERO_COSTS, "producer.record.us": 1.0}
    s = scenario([{"topic": "t", "acks": 1, "rate.per.s": 20000, "linger.ms": 0, "buffer.memory": 1 << 20,
                   "max.block.ms": max_block_ms, "keys": {"cardinality": 500}}], 3000.0, latency=100.0,
                 costs=costs, topics=[{"name": "t", "partitions": 5, "replication.factor": 1}])
    r = simulate(s)
    # the keys given again, or not: the same run when no send() fails; a wrong one when some do
    monkeypatch.setattr(ProducerClient, "_may_fail", lambda self, ps: max_block_ms < 3000.0)
    assert capture(simulate(s)) == capture(r)
    monkeypatch.setattr(ProducerClient, "_may_fail", lambda self, ps: max_block_ms > 3000.0)
    assert (capture(simulate(s)) == capture(r)) == (max_block_ms > 3000.0)
    s = r.summary
    assert s["producer_buffer_wait_ms"] > 300.0  # the application thread took over: send() blocked
    assert (s["buffer_exhausted_records"] > 0) == (max_block_ms < 3000.0)
    sent = r.records[~np.isnan(r.records.send_ms)]
    assert len(sent) > 10000
    keys = sent.key.astype(str)
    assert (sent.partition.to_numpy() == [(murmur2(k.encode()) & 0x7FFFFFFF) % 5 for k in keys]).all()


@pytest.mark.parametrize("max_block_ms", [60000.0, 5.0])
def test_a_run_without_a_records_table_keeps_the_keys_digits_and_makes_the_same_batches(max_block_ms):
    """results.records: none keeps each key's digits (1 byte a record; all a record format reads of a key) instead of
    its index: a keyed open-loop producer an application thread takes over (its keys moved with its records when a
    send() can fail) and a keyed closed-loop one make the same batches, byte for byte, as with the indexes kept."""
    from kafkamodel.sim.batches import Batches

    costs = {**ZERO_COSTS, "producer.record.us": 1.0}
    s = scenario([{"topic": "t", "acks": 1, "rate.per.s": 20000, "linger.ms": 0, "buffer.memory": 1 << 20,
                   "max.block.ms": max_block_ms, "keys": {"cardinality": 5000}},
                  closed(keys={"cardinality": 300_000}, **{"buffer.memory": 1 << 20})], 1500.0, latency=100.0,
                 costs=costs, topics=[{"name": "t", "partitions": 5, "replication.factor": 1}])
    tables = {}
    for records in ("all", "none"):
        sim = Simulation(load_scenario({**s, "results.records": records}))
        tables[records] = sim.workload.key.dtype
        assert sim.run().summary["producer_buffer_wait_ms"] > 300.0  # the application threads took over
        # every column (``Batches.COLUMNS``); the errors by batch: a dict
        columns = [getattr(sim.batches, c) for c in Batches.COLUMNS]
        tables[records] = (tables[records], [c if isinstance(c, dict) else c.tobytes() for c in columns])
    assert tables["none"][0] == np.int8 and tables["all"][0] == np.int32
    assert tables["none"][1] == tables["all"][1]


@pytest.mark.parametrize("max_block_ms", [60000.0, 5.0])
def test_an_application_thread_drops_the_records_it_sent_and_the_run_is_the_same(max_block_ms, monkeypatch):
    """A taken-over producer's send order and arrivals (12-20 bytes a record it has left to send when it takes
    over) drop the records it sent (application._forget): dropping at every send gives every number and table
    of a run that never drops them, keyed records whose keys go with them (max.block.ms 5) included, and the
    thread's arrays hold only what it has not sent (the production case's take-over keeps 12 bytes a record)."""
    import kafkamodel.sim.clients.application as application
    from kafkamodel.sim.clients.slots import SendOrder
    from snapshot import capture

    held = []  # after each forget: records the order's arrays still hold, records the order has left to send
    forget = SendOrder.forget

    def spy(order, k):
        forget(order, k)
        held.append((len(order.parts), len(order) - k))

    costs = {**ZERO_COSTS, "producer.record.us": 1.0}
    s = scenario([{"topic": "t", "acks": 1, "rate.per.s": 20000, "linger.ms": 0, "buffer.memory": 1 << 20,
                   "max.block.ms": max_block_ms, "keys": {"cardinality": 500}}], 3000.0, latency=100.0,
                 costs=costs, topics=[{"name": "t", "partitions": 5, "replication.factor": 1}])
    monkeypatch.setattr(application, "FORGET", 1 << 62)
    kept = capture(simulate(s))
    monkeypatch.setattr(application, "FORGET", 1)
    monkeypatch.setattr(SendOrder, "forget", spy)
    assert capture(simulate(s)) == kept
    assert len(held) >= 2  # (each time once it had sent half of what its arrays held)
    assert all(h == left for h, left in held)
    assert kept["summary"]["producer_buffer_wait_ms"] > 300.0  # the application thread took over


@pytest.mark.parametrize("max_block_ms", [60000.0, 5.0])
def test_an_application_thread_sends_a_few_records_in_python_as_numpy_would(max_block_ms, monkeypatch):
    """A call of the application thread that sends at most application.FEW records goes record by record in Python
    (the usual call once the pool is full), a larger one in NumPy: a keyed open-loop producer taken over (its keys
    moving with its records when send()s fail) and a closed-loop one give every number and table alike with every
    call in Python and with every call in NumPy."""
    import kafkamodel.sim.clients.application as application
    from snapshot import capture

    calls = {"few": 0, "many": 0}
    place, place_few = application._place, application._place_few

    def count(name, f):
        def spy(*args):
            calls[name] += 1
            return f(*args)
        return spy

    costs = {**ZERO_COSTS, "producer.record.us": 1.0}
    s = scenario([{"topic": "t", "acks": 1, "rate.per.s": 20000, "linger.ms": 0, "buffer.memory": 1 << 18,
                   "max.block.ms": max_block_ms, "keys": {"cardinality": 500}},
                  closed(**{"buffer.memory": 1 << 20, "max.block.ms": max_block_ms})], 1500.0, latency=100.0,
                 costs=costs, topics=[{"name": "t", "partitions": 100, "replication.factor": 1}])
    monkeypatch.setattr(application, "_place", count("many", place))
    monkeypatch.setattr(application, "_place_few", count("few", place_few))
    both = capture(simulate(s))
    assert calls["few"] > 20 and calls["many"] > 20  # (the default mixes them: a wake-up sends what a response freed)
    monkeypatch.setattr(application, "FEW", 0)
    numpy = capture(simulate(s))
    monkeypatch.setattr(application, "FEW", 1 << 62)
    python = capture(simulate(s))
    assert numpy == both and python == both
    assert both["summary"]["producer_buffer_wait_ms"] > 300.0  # the application threads took over
    assert (both["summary"]["buffer_exhausted_records"] > 0) == (max_block_ms < 1500.0)


@pytest.mark.parametrize("few", [True, False])
def test_an_application_threads_send_calls_return_one_cost_after_the_later_of_the_last_return_and_the_arrival(few):
    """application._returns, in either form: send() k returns at max(a_k, e_k-1) + cost (back to back from the
    thread's free time for a closed-loop producer), the recurrence computed here record by record."""
    from kafkamodel.sim.clients.application import FEW, ApplicationThread, _returns
    from kafkamodel.sim.clients.slots import SendOrder

    rng = np.random.default_rng(3)
    m = FEW if few else 5 * FEW
    arrivals = np.sort(rng.uniform(10.0, 10.0 + 0.8 * m, 3 * m))
    for arr in (arrivals, None):
        app = ApplicationThread(SendOrder.of_cycle(3 * m, 4, 0), 3 * m, np.zeros(4, dtype=np.int64), 1.0, 100.0,
                                1 << 20, 60000.0, 0.0, 1e9, arr)
        for lo, start in ((0, 0.0), (m, 20.0), (2 * m, 1e3)):
            got = _returns(app, lo, m, start)
            assert isinstance(got, list) == few
            e, want = start, []
            for k in range(lo, lo + m):
                e = (max(arr[k], e) if arr is not None else e) + 1.0
                want.append(e)
            assert np.allclose(got, want, rtol=0, atol=1e-9)


def test_a_send_order_that_forgot_its_first_records_gives_the_rest_as_before():
    """SendOrder.forget(k): the partitions and keys of records from k on are the ones it gave before; counting
    from the first record is refused (those are gone)."""
    from kafkamodel.sim.clients.slots import SendOrder

    rng = np.random.default_rng(11)
    parts, keys = rng.integers(0, 7, 1000).astype(np.int32), rng.integers(0, 50, 1000)
    order, whole = SendOrder.of_arrays(parts, keys), SendOrder.of_arrays(parts.copy(), keys.copy())
    for k in (0, 1, 400, 999):
        order.forget(k)
        for lo, hi in ((k, k + 1), (k, 1000), (999, 1000)):
            assert np.array_equal(order.partitions(lo, hi), whole.partitions(lo, hi))
            assert np.array_equal(order.keys(lo, hi), whole.keys(lo, hi))
        assert len(order.parts) == 1000 - k
    with pytest.raises(ValueError, match="forgotten"):
        order.counts(1000, 7)


@pytest.mark.parametrize("version,partitioner", [("2.6", None), ("4.1", None), ("2.0", None), ("3.0", "round_robin")])
def test_a_closed_loop_send_order_is_the_partitioners_choice_record_by_record(version, partitioner):
    """The send order made as runs or a cycle (slots.SendOrder) gives each record the partition Kafka's partitioner
    gives it record by record (workload.assign_partitions over the records' times), and counts them alike."""
    from kafkamodel.config.settings import Settings
    from kafkamodel.sim.clients.workload import assign_partitions, closed_loop_order

    p = Settings.of(load_scenario(scenario([closed(**({"partitioner": partitioner} if partitioner else {}),
                                                   **{"linger.ms": 0.3})], version=version,
                                           costs={**ZERO_COSTS, "producer.record.us": 1.1}))).producers[0]
    n, gap, partitions, cap = 20_000, 0.0011, 7, 148
    order = closed_loop_order(p, n, gap, partitions, 3, np.random.default_rng(5), cap=cap)
    times = p.start_ms + gap * np.arange(1, n + 1, dtype=np.float64)
    expected = assign_partitions(p, np.full(n, -1, dtype=np.int64), times, partitions, np.random.default_rng(5),
                                 cap=cap) + 3
    assert len(order) == n
    assert np.array_equal(order.partitions(0, n), expected)
    for lo, hi in ((0, 1), (5, 400), (147, 149), (1234, 19_999), (19_999, 20_000)):
        assert np.array_equal(order.partitions(lo, hi), expected[lo:hi])
    for k in (0, 1, 148, 5000, n):
        assert np.array_equal(order.counts(k, 12), np.bincount(expected[:k], minlength=12))


def test_slots_that_grow_as_producers_send_give_the_run_slots_for_every_record_would(monkeypatch):
    """Closed-loop producers' slots made for a few records at first and grown as they send (slots.resize) leave
    every number and table as slots made at once for every record they could send."""
    import kafkamodel.sim.clients.workload as workload
    from snapshot import capture

    s = scenario([closed(**{"linger.ms": 1}), closed(keys={"cardinality": 30}, acks=-1)], 300.0,
                 version="2.6", costs={**ZERO_COSTS, "producer.record.us": 2.0},
                 topics=[{"name": "t", "partitions": 5, "replication.factor": 1}],
                 consumers=[{"group": "g", "topic": "t", "members": 2}])
    whole = capture(simulate(s))
    monkeypatch.setattr(workload, "FIRST_SLOTS", 64)
    grown = capture(simulate(s))
    assert grown == whole
    assert whole["summary"]["records_sent"] > 64 * 100


def test_a_take_over_that_writes_the_slots_not_sent_as_they_are_read_gives_what_writing_them_all_at_once_gives(
        monkeypatch):
    """A taken-over producer's slots past its application thread's (nothing sent there: +inf to its accumulator) are
    written a page at a time as the accumulator reads them (``application.Unsent``), not all at the take-over: every
    number and table is the one of a run that writes them all at once (a page as large as the rest of the run), with
    a closed-loop producer starting after the take-over whose slots grow (a relayout moves every slot: the unsent
    ones are written first)."""
    import kafkamodel.sim.clients.application as application
    import kafkamodel.sim.clients.workload as workload
    from snapshot import capture

    finished = []
    finish = application.Unsent.finish

    def spy(unsent):
        finished.append(unsent)
        finish(unsent)

    costs = {**ZERO_COSTS, "producer.record.us": 1.0}
    s = scenario([{"topic": "t", "acks": 1, "rate.per.s": 20000, "linger.ms": 0, "buffer.memory": 1 << 20,
                   "keys": {"cardinality": 500}},
                  closed(**{"linger.ms": 1, "start.ms": 1500.0})], 3000.0, latency=100.0,
                 costs=costs, topics=[{"name": "t", "partitions": 5, "replication.factor": 1}])
    monkeypatch.setattr(workload, "FIRST_SLOTS", 64)
    monkeypatch.setattr(application.Unsent, "finish", spy)
    monkeypatch.setattr(application.Unsent, "PER", 1 << 62)  # (the rest of each range at the first read)
    whole = capture(simulate(s))
    monkeypatch.setattr(application.Unsent, "PER", 1)  # (only the slots read)
    assert capture(simulate(s)) == whole
    assert finished  # (a relayout after the take-over)
    assert whole["summary"]["producer_buffer_wait_ms"] > 300.0  # the application thread took over


def test_slots_closed_up_in_place_at_the_runs_end_hold_what_a_new_array_would():
    """At the run's end the slots never filled go (slots.resize with in_place: no range grows): each range moves down
    inside the array itself, in layout order, and the array's first slots equal the copy a new array would be
    (ranges that keep every slot, lose some, lose all, and move over their own old place); a range that grows is
    refused, since in place it would overwrite the next one."""
    from kafkamodel.sim.clients.slots import resize

    rng = np.random.default_rng(11)
    counts = rng.integers(0, 40, (3, 7))
    counts[0, 0] = 0
    hi = np.cumsum(counts.ravel()).reshape(counts.shape)
    lo = hi - counts
    sizes = np.minimum(counts, rng.integers(0, 40, counts.shape))
    sizes[1] = counts[1]  # a producer that keeps every slot
    sizes[2, 3] = 0
    records = rng.random(int(hi.ravel()[-1]))
    new_lo, new_hi, copy = resize(lo, hi, sizes)
    expected = copy(records, np.nan)
    kept = records.copy()
    lo_in_place, hi_in_place, close_up = resize(lo, hi, sizes, in_place=True)
    closed = close_up(kept, np.nan)
    assert np.array_equal(lo_in_place, new_lo) and np.array_equal(hi_in_place, new_hi)
    assert np.array_equal(closed, expected)
    assert np.shares_memory(closed, kept)  # no second array
    for p, q in zip(lo.ravel().tolist(), new_lo.ravel().tolist()):
        assert q <= p
    grown = sizes.copy()
    grown[0, 1] = counts[0, 1] + 1
    with pytest.raises(ValueError, match="no range may grow"):
        resize(lo, hi, grown, in_place=True)


def test_a_brokers_decompression_of_a_batch_is_its_uncompressed_bytes_at_the_codecs_speed():
    """lzbench 1.7.1: lz4 1.7.5 decompresses 2,244 MB/s (10^6 bytes/s); none costs nothing."""
    b = batches_of(scenario([burst(100, 1000, **{"compression.type": "lz4"})]))
    plain = v2_batch(100, 1000) - 61
    assert b.decompress_ms(0) == pytest.approx(plain / 2244e6 * 1000.0, rel=0.001)
    assert batches_of(scenario([burst(100, 1000)])).decompress_ms(0) == 0.0


def test_compression_costs_the_application_thread_per_uncompressed_byte():
    """gzip (zlib -6 in lzbench 1.7.1: 20 MB/s of input) on 1,000-byte records and nothing else: one record per
    (record bytes / 20 MB/s)."""
    s = simulate(scenario([closed(**{"compression.type": "gzip", "record.size.bytes": 1000})], 1000.0,
                          costs={**ZERO_COSTS, "producer.record.us": 0})).summary
    per_record_s = v2_record(0, 0, None, 1000) / 20e6
    assert s["records_sent"] == pytest.approx(1.0 / per_record_s, rel=0.001)


def test_a_closed_loop_producer_nothing_bounds_is_refused():
    from kafkamodel.config.scenario import ScenarioError

    with pytest.raises(ScenarioError, match=r"producers\[0\]\.rate\.per\.s: max needs costs\.producer\.record\.us > 0"):
        load_scenario(scenario([closed()], costs={**ZERO_COSTS, "producer.record.us": 0}))
    load_scenario(scenario([closed(**{"compression.type": "lz4"})], costs={**ZERO_COSTS, "producer.record.us": 0}))


def test_a_pool_full_for_good_leaves_no_max_block_ms_timer_past_the_runs_end_on_the_heap():
    """A closed-loop producer behind a slow broker with a 1 MiB pool blocks again each time a batch completes; with
    Kafka's max.block.ms (60 s) past the run's 3 s, none of those blocks' timers can fire, so none is kept on the
    event heap (each used to be: a heap growing with the run). With max.block.ms 5 they fire, and fail records."""
    costs = {**ZERO_COSTS, "producer.record.us": 1.0}
    for block_ms, expect_timers in ((60000.0, False), (5.0, True)):
        sim = Simulation(load_scenario(scenario([closed(**{"buffer.memory": 1 << 20, "max.block.ms": block_ms})],
                                                3000.0, latency=100.0, costs=costs)))
        pending = []
        sim.kernel.after_event = lambda: pending.append(sum(
            1 for _, _, action, args in sim.kernel.events()[0] if action == sim.producer._block_timeout))
        s = sim.run().summary
        app = sim.producer.states[0].app
        assert app.stamp > 100  # send() blocked that often: each block asked for a timer
        if expect_timers:
            assert s["buffer_exhausted_records"] > 0 and max(pending) >= 1
        else:
            assert s["producer_buffer_wait_ms"] > 0.5 * 3000.0 and max(pending) == 0


def test_a_send_that_blocked_was_called_when_the_thread_got_to_it(monkeypatch):
    """The run keeps a record's time in the accumulator (when its send() returned) and makes its send time from it
    at the end (less the send() cost), but for a send() that blocked on a full pool: that one was called when the
    application thread got to it, the previous send()'s return, and returned once a batch's completion freed room
    (its wait is in its latency). A closed-loop thread calls each send() as the one before returns, so in send order
    every gap between two send times is the cost but those after a blocked record, whose next record is called the
    cost after a batch's acknowledgement; the gaps' excess is the thread's whole wait. Four partitions and slots
    that grow many times (from 500 records) move the records kept aside with their ranges. Without a records table
    the same send times give the same exact figures (p99.9: the blocked records' latencies are the top ones)."""
    from kafkamodel.sim.clients import workload

    monkeypatch.setattr(workload, "FIRST_SLOTS", 500)
    cost = 0.001  # producer.record.us 1.0
    s = scenario([closed(**{"buffer.memory": 1 << 18})], 1500.0, latency=20.0,
                 costs={**ZERO_COSTS, "producer.record.us": 1.0})
    s["topics"][0]["partitions"] = 4
    r = simulate(s)
    summary = r.summary
    rec = r.records.sort_values("send_ms", kind="stable")
    send = rec.send_ms.to_numpy()
    assert len(send) == summary["records_sent"] > 20_000 and rec.partition.nunique() == 4
    gaps = np.diff(send)
    normal = np.isclose(gaps, cost, rtol=0, atol=1e-9)
    after_block = np.flatnonzero(~normal)
    assert len(after_block) > 30  # the pool (4 batches) fills at about every round trip (40 ms)
    assert (gaps[after_block] > cost).all()
    acks = np.unique(r.records.ack_ms.dropna().to_numpy())
    woken = send[after_block + 1] - cost  # when the blocked send() returned less its cost: a completion
    at = np.searchsorted(acks, woken)
    below, above = acks[np.clip(at - 1, 0, len(acks) - 1)], acks[np.clip(at, 0, len(acks) - 1)]
    assert (np.minimum(np.abs(woken - below), np.abs(above - woken)) < 1e-9).all()
    # each blocked record was called the cost after the one before it (its previous send() returned)
    assert np.allclose(gaps[after_block[after_block > 0] - 1], cost, rtol=0, atol=1e-9)
    assert (gaps[after_block] - cost).sum() == pytest.approx(summary["producer_buffer_wait_ms"], rel=1e-9)
    streamed = simulate({**s, "results.records": "none"}).summary
    for key in ("produce_latency_ms_p999", "e2e_latency_ms_p999", "producer_buffer_wait_ms", "records_sent"):
        assert streamed[key] == summary[key]
    assert streamed["produce_latency_ms_mean"] == pytest.approx(summary["produce_latency_ms_mean"], rel=1e-12)


def test_a_blocked_send_wakes_once_per_response_and_sends_what_its_batches_freed(monkeypatch):
    """Kafka's Sender completes a produce response's batches in one loop on its own thread (completeBatch, each
    BufferPool.deallocate signalling the thread blocked in allocate), so the application thread, blocked on a full
    pool, runs once per response and finds the memory of all its batches free: one send_records call at each
    response's time, sending as many records as the response's acked batches held (computed here from the answer
    and the batch table). Eight partitions: a response carries several batches."""
    import kafkamodel.sim.clients.producer as producer
    from kafkamodel.sim.clients.producer import ProducerClient

    responses, calls = [], []  # (time, records its acked batches freed); (time, records sent)
    handle, send = ProducerClient.handle_response, producer.send_records

    def on_response(self, pi, node, epoch, req, results):
        b = self.batches
        app = self.states[pi].app
        assert app.limit - app.used < app.unit  # the pool is full: the thread is blocked (or about to block)
        freed = sum(b.count[x] for x, attempt, error, _ in results
                    if error == 0 and b.attempt[x] == attempt and b.state[x] == producer.INFLIGHT)
        responses.append((self.kernel.now, freed))
        return handle(self, pi, node, epoch, req, results)

    def on_send(app, now, *args):
        k = app.k
        out = send(app, now, *args)
        calls.append((now, app.k - k))
        return out

    monkeypatch.setattr(ProducerClient, "handle_response", on_response)
    monkeypatch.setattr(producer, "send_records", on_send)
    duration = 1500.0
    s = scenario([closed(**{"buffer.memory": 1 << 18})], duration, latency=20.0,
                 costs={**ZERO_COSTS, "producer.record.us": 1.0})
    s["topics"][0]["partitions"] = 8
    sim = Simulation(load_scenario(s))
    responses.clear()
    sim.run()
    assert calls[0][0] == 0.0  # the thread's start, before any response
    calls = calls[1:]
    late = duration - 10.0  # (near the run's end the thread stops sending: no send() after it)
    freed_at = {}
    for t, freed in responses:
        freed_at[t] = freed_at.get(t, 0) + freed
    assert len(freed_at) > 30 and np.mean([f for t, f in responses]) > 2 * sim.batches.count[0]  # several a response
    assert [t for t, _ in calls] == sorted(freed_at)  # one wake-up per response, none besides
    for t, sent in calls:
        if t < late:
            assert sent == freed_at[t]


def test_the_queues_an_application_thread_gave_records_are_filed_in_one_pass_as_one_by_one(monkeypatch):
    """After an application thread's call, the queues that got records are filed again in one pass
    (ProducerClient._arm_grown): a queue filed already keeps its entry, its ready time filed only when its first
    batch.size of records just came within linger.ms. The run is the same, every number and table, as with each
    queue filed again by ProducerClient._arm, as before: a closed-loop producer and a keyed open-loop one taken over,
    over two leaders' crashes (resends waiting in their queues while records join them), with queues that fill
    before linger.ms."""
    from kafkamodel.sim.clients.producer import ProducerClient
    from snapshot import capture

    costs = {**ZERO_COSTS, "producer.record.us": 1.0}
    s = scenario([{"topic": "t", "acks": "all", "rate.per.s": 20000, "linger.ms": 20, "batch.size": 2048,
                   "buffer.memory": 1 << 17, "keys": {"cardinality": 500}},
                  closed(**{"acks": "all", "linger.ms": 5, "batch.size": 4096, "buffer.memory": 1 << 17})],
                 3000.0, latency=2.0, costs=costs, brokers=3,
                 topics=[{"name": "t", "partitions": 24, "replication.factor": 3}],
                 broker={"broker.session.timeout.ms": 300, "broker.heartbeat.interval.ms": 100},
                 faults=[{"at.ms": 1000, "kind": "crash", "broker": 0, "duration.ms": 500},
                         {"at.ms": 2000, "kind": "crash", "broker": 1, "duration.ms": 500}])
    seen = {"kept": 0, "filed": 0, "full": 0, "resend": 0}
    grown, arm = ProducerClient._arm_grown, ProducerClient._arm

    def spy(self, ps, touched, firsts):
        queues = ps.acc.queues
        for p, first in zip(touched, firsts):
            q = queues[p]
            seen["kept" if q.node >= 0 else "filed"] += 1
            if q.node >= 0 and q.retry:
                seen["resend"] += 1
            elif q.node >= 0 and first <= q.next + ps.acc.cap - 1 < q.end:
                seen["full"] += ps.acc.times[q.next + ps.acc.cap - 1] < ps.acc.times[q.next] + ps.acc.linger
        return grown(self, ps, touched, firsts)

    monkeypatch.setattr(ProducerClient, "_arm_grown", spy)
    r = simulate(s)
    one_pass = capture(r)
    assert min(seen.values()) > 20, seen  # every branch taken
    assert r.summary["producer_buffer_wait_ms"] > 300.0  # the application threads took over

    def one_by_one(self, ps, touched, firsts):
        for p in touched:
            arm(self, ps, ps.acc.queues[p])

    monkeypatch.setattr(ProducerClient, "_arm_grown", one_by_one)
    assert capture(simulate(s)) == one_pass


@pytest.mark.parametrize("piece", [1, 7, 1 << 16])
def test_a_pool_watchs_send_returns_made_in_pieces_are_the_setups_floats(piece, monkeypatch):
    """An open-loop producer's send() returns, made a piece of draws at a time as a pool watch reads them
    (``workload.SendReturns``), are the floats the setup's whole arrays give (``_arrivals``, ``_after_sends``): from
    its start, with a stop, with a send() cost or none, in one chunk of draws or several."""
    from kafkamodel.config.settings import Settings
    from kafkamodel.sim.clients import workload

    monkeypatch.setattr(workload, "PIECE", piece)
    for rate, extra, duration, cost in [(300000, {}, 300.0, 0.003), (100, {}, 1000.0, 0.0), (2000, {}, 400.0, 0.4),
                                        (5000, {"start.ms": 100, "stop.ms": 700}, 1000.0, 0.5)]:
        p = Settings.of(load_scenario(scenario([{"topic": "t", "rate.per.s": rate, **extra}], duration))).producers[0]
        rng = np.random.default_rng(11)
        state = rng.bit_generator.state
        whole = workload._after_sends(workload._arrivals(p, duration, rng), cost)
        made = workload.SendReturns(p, duration, state, cost, len(whole))
        assert len(made) == len(whole) > 10
        assert np.array_equal([made[k] for k in range(len(whole))], whole)
    # several chunks of draws (a chunk falls short of the stop): the same floats too
    monkeypatch.setattr(workload.np, "sqrt", lambda x: -x / 12.0)  # (the chunk's size: expected / 2 + 16)
    rng = np.random.default_rng(5)
    state = rng.bit_generator.state
    whole = workload._after_sends(workload._arrivals(p, 1000.0, rng), 0.4)
    made = workload.SendReturns(p, 1000.0, state, 0.4, len(whole))
    assert np.array_equal([made[k] for k in range(len(whole))], whole)


def test_a_run_whose_pool_watches_read_send_returns_made_as_read_is_the_same(monkeypatch):
    """Open-loop producers over their pools (keyed and not, one with a send() cost): a run whose pool watches read
    their send() returns made a few draws at a time gives every number and table a run with the whole arrays gives."""
    from kafkamodel.sim.clients import workload
    from snapshot import capture

    costs = {**ZERO_COSTS, "producer.record.us": 1.0}
    s = scenario([{"topic": "t", "acks": 1, "rate.per.s": 20000, "linger.ms": 0, "buffer.memory": 1 << 20,
                   "keys": {"cardinality": 500}},
                  {"topic": "t", "acks": 1, "rate.per.s": 15000, "linger.ms": 2, "buffer.memory": 1 << 19}],
                 1500.0, latency=100.0, costs=costs, topics=[{"name": "t", "partitions": 5, "replication.factor": 1}])
    monkeypatch.setattr(workload, "PIECE", 7)
    pieces = simulate(s)
    assert pieces.summary["producer_buffer_wait_ms"] > 300.0  # the application threads took over

    def whole(p, duration, state, cost, n):
        rng = np.random.Generator(np.random.PCG64())
        rng.bit_generator.state = state
        return workload._after_sends(workload._arrivals(p, duration, rng), cost)

    monkeypatch.setattr(workload, "SendReturns", whole)
    assert capture(simulate(s)) == capture(pieces)


@pytest.mark.parametrize("records", ["all", "none"])
def test_records_made_in_pieces_are_the_records_made_whole(records, monkeypatch):
    """A keyed open-loop producer's records made a piece of draws at a time (``workload.RecordMaker``: keys,
    partitions through a table of the keys present or hashed a piece at a time, a partitioner's mapping, send()
    returns drawn again) give the arrays, every number and table a run made whole gives, beside producers made
    whole (bursts, the sticky partitioner's null keys, a closed-loop producer) and with a pool that fills."""
    from kafkamodel.sim.clients import workload
    from snapshot import capture

    costs = {**ZERO_COSTS, "producer.record.us": 1.0}
    s = scenario([{"topic": "t", "acks": 1, "rate.per.s": 20000, "linger.ms": 0, "buffer.memory": 1 << 20,
                   "keys": {"cardinality": 500}, "partitioner": {"mapping": {"key-3": 0}}},
                  {"topic": "t", "acks": 1, "rate.per.s": 9000, "linger.ms": 2, "keys": {"cardinality": 900_000},
                   "start.ms": 100, "stop.ms": 900},
                  {"topic": "t", "acks": 1, "rate.per.s": 2000, "keys": {"cardinality": 50},
                   "burst": {"records": 200, "every.ms": 250}},
                  {"topic": "t", "acks": 1, "rate.per.s": 3000, "linger.ms": 5, "partitioner": "sticky"},
                  closed(keys={"cardinality": 300}, **{"buffer.memory": 1 << 19})],
                 1200.0, latency=100.0, costs=costs, topics=[{"name": "t", "partitions": 5, "replication.factor": 1}],
                 **{"results.records": records})

    def arrays():
        sim = Simulation(load_scenario(s))
        w = sim.workload
        w.make_all()  # (the records a RecordMaker makes as the run reads them: all of them at once)
        return [np.asarray(w.key).tobytes(), bytes(sim.producer.times), w.lo.tobytes(), w.hi.tobytes()]

    monkeypatch.setattr(workload, "PIECE", 1000)
    sim = Simulation(load_scenario(s))
    assert [workload._in_pieces(p, None) for p in sim.settings.producers] == [True, True, False, False, False]
    assert sorted(sim.workload.makers) == [0, 1]  # (the second's keys hashed a piece at a time, the first's a table)
    assert sim.workload.makers[0].table is not None and sim.workload.makers[1].table is None
    made = arrays()
    pieces = simulate(s)
    assert pieces.summary["producer_buffer_wait_ms"] > 300.0  # the application threads took over
    monkeypatch.setattr(workload, "_in_pieces", lambda p, partitioner: False)
    assert arrays() == made
    whole = simulate(s)
    assert capture(whole) == capture(pieces)


def test_records_made_as_the_run_reads_them_give_the_run_made_before_it(monkeypatch):
    """Keyed open-loop producers whose records a RecordMaker makes as the run reads them (pieces of 7 draws: many
    pieces per batch) and that never take over from their pools, one with batches that expire before they are sent:
    every number and table is the run's with the records made whole before it."""
    from kafkamodel.sim.clients import workload
    from snapshot import capture

    s = scenario([{"topic": "t", "acks": 1, "rate.per.s": 20000, "linger.ms": 5, "keys": {"cardinality": 40}},
                  {"topic": "t", "acks": 1, "rate.per.s": 4000, "linger.ms": 0, "keys": {"cardinality": 7},
                   "start.ms": 200, "stop.ms": 700, "delivery.timeout.ms": 120, "request.timeout.ms": 100}],
                 1000.0, latency=60.0, topics=[{"name": "t", "partitions": 5, "replication.factor": 1}],
                 **{"results.records": "none"})
    monkeypatch.setattr(workload, "PIECE", 7)
    sim = Simulation(load_scenario(s))
    assert sorted(sim.workload.makers) == [0, 1]
    made = simulate(s)
    assert made.summary["records_failed"] > 1000  # (delivery.timeout.ms)
    monkeypatch.setattr(workload, "_in_pieces", lambda p, partitioner: False)
    assert capture(simulate(s)) == capture(made)


def _take_over_whole(self, ps, k, cost):
    """The take-over as it was made at once (the reference): every record of the producer made, then sorted by its
    send() return (then slot), the k first dropped, the rest's slots, partitions, keys and arrivals in arrays."""
    from kafkamodel.sim.clients.application import ApplicationThread
    from kafkamodel.sim.clients.slots import SendOrder

    w = self.workload
    i = ps.index
    w.make_all(i)
    ps.acc.maker = None
    first, last = int(w.lo[i][0]), int(w.hi[i][-1])
    times = np.frombuffer(self.times, dtype=np.float64)
    rest = np.argsort(times[first:last], kind="stable")[k:] + first
    taken = np.array([q.next for q in ps.acc.queues], dtype=np.int64)
    parts = w.partition_of(i, rest)
    waiting = rest >= taken[parts]
    drained = len(rest) - int(waiting.sum())
    rest, parts = rest[waiting], parts[waiting]
    arrivals = np.sort(times[rest]) - cost
    keys = w.key[rest] if ps.config.key_cardinality is not None and self._may_fail(ps) else None
    filled = w.hi[i] - np.bincount(parts, minlength=len(self.partitions))
    times[rest] = np.inf
    del times
    fmt = self.batches.formats[i]
    app = ps.app = ApplicationThread(SendOrder.of_arrays(parts, keys), len(parts), filled, cost, fmt.record_bytes,
                                     ps.config.buffer_memory, ps.config.max_block_ms, self.kernel.now,
                                     self._stop(ps.config), arrivals)
    app.used = (k + drained - ps.watch.released) * fmt.record_bytes
    ps.watch = None
    for q in ps.acc.queues:
        if q.next < q.end:
            self._arm(ps, q)
    self._application(ps)


@pytest.mark.parametrize("max_block_ms,record_us", [(60000.0, 1.0), (5.0, 1.0), (5.0, 0.0)])
def test_a_take_over_in_pieces_is_the_take_over_made_whole(max_block_ms, record_us, monkeypatch):
    """A producer taken over sorts only the records made so far (with a RecordMaker: those up to the first that does
    not fit) and gets the rest from its maker a piece at a time as its application thread reaches them: every number
    and table (the batch table's columns, the summary, the records) is the run's whose take-over makes every record
    and sorts them all at once. Keys through a table and hashed, a partitioner's mapping, pools that fill, send()s
    that fail (max.block.ms 5: keys go with their records), bursts (equal returns, with a free send(): ties broken by
    partition), a closed-loop producer whose slots grow (the taken-over makers' slots move with them)."""
    from kafkamodel.sim.batches import Batches
    from kafkamodel.sim.clients import workload
    from kafkamodel.sim.clients.producer import ProducerClient
    from snapshot import capture

    costs = {**ZERO_COSTS, "producer.record.us": record_us}
    pool = {"buffer.memory": 1 << 18, "max.block.ms": max_block_ms}
    s = scenario([closed(keys={"cardinality": 300}, **{"buffer.memory": 1 << 19, "compression.type": "lz4",
                                                       "start.ms": 400}),
                  {"topic": "t", "acks": 1, "rate.per.s": 20000, "linger.ms": 0, "keys": {"cardinality": 500},
                   "partitioner": {"mapping": {"key-3": 0}}, **pool},
                  {"topic": "t", "acks": 1, "rate.per.s": 15000, "linger.ms": 2, "keys": {"cardinality": 900_000},
                   "start.ms": 100, **pool},
                  {"topic": "t", "acks": 1, "rate.per.s": 2000, "keys": {"cardinality": 50},
                   "burst": {"records": 3000, "every.ms": 250}, **pool}],
                 1500.0, latency=100.0, costs=costs, topics=[{"name": "t", "partitions": 7, "replication.factor": 1}])
    monkeypatch.setattr(workload, "PIECE", 1000)
    monkeypatch.setattr(workload, "FIRST_SLOTS", 9000)  # (the closed-loop producer's slots grow after the take-overs)
    taken, moved = [], []
    take_over, relayout = ProducerClient._take_over, ProducerClient._relayout

    def spy(self, ps, k, cost):
        taken.append(ps.index)
        take_over(self, ps, k, cost)

    def spy_relayout(self, sizes, times=True):
        moved.append(sorted(self.tails))
        relayout(self, sizes, times)

    def run():
        sim = Simulation(load_scenario(s))
        result = sim.run()
        return capture(result), [c if isinstance(c, dict) else c.tobytes()
                                 for c in (getattr(sim.batches, c) for c in Batches.COLUMNS)]

    monkeypatch.setattr(ProducerClient, "_take_over", spy)
    monkeypatch.setattr(ProducerClient, "_relayout", spy_relayout)
    pieces = run()
    assert sorted(taken) == [1, 2, 3]
    assert [1, 2] in moved  # (slots moved while the two makers had records left to make: the closed-loop
    #                          producer's come first, so theirs move)
    assert (pieces[0]["summary"]["buffer_exhausted_records"] > 0) == (max_block_ms < 1500.0)
    monkeypatch.setattr(ProducerClient, "_take_over", _take_over_whole)
    assert run() == pieces


def test_in_time_order_breaks_equal_returns_by_partition_across_pieces():
    """``application.in_time_order``: pieces in draw order whose returns repeat within and across pieces come out in
    the order a stable sort of the slots (partition after partition) by return gives."""
    from kafkamodel.sim.clients.application import in_time_order

    rng = np.random.default_rng(5)
    t = np.sort(rng.integers(0, 40, 500)).astype(np.float64)  # many equal returns
    parts = rng.integers(0, 6, 500).astype(np.int32)
    keys = rng.integers(0, 1000, 500)
    cuts = [0, 1, 2, 50, 51, 180, 181, 181, 300, 499, 500]
    pieces = [(t[a:b], parts[a:b], keys[a:b]) for a, b in zip(cuts, cuts[1:])]
    out = list(in_time_order(iter(pieces), 0.5))
    slots = np.lexsort((np.arange(500), parts))  # slot order: partition after partition, each in draw order
    by = slots[np.argsort(t[slots], kind="stable")]
    assert np.array_equal(np.concatenate([p for p, _, _ in out]), parts[by])
    assert np.array_equal(np.concatenate([k for _, k, _ in out]), keys[by])
    assert np.array_equal(np.concatenate([a for _, _, a in out]), t[by] - 0.5)
