"""The broker machine in whole runs: a saturated broker plateaus at the bound its machine implies, writeback
stalls, catch-up reads from the disk, GC pauses that follow the allocation rate.

Every bound is computed here from the machine's parts (and Linux's or the JVM's documented rule), never read back
from the model."""

from __future__ import annotations

import pytest

from kafkamodel import simulate
from kafkamodel.sim.storage.disk import GIB, MIB

RECORD = 10_000  # bytes: large records, so a batch's header and per-record overhead are under 1% of its bytes


def one_broker(rate: float, duration: float, machine: dict, **extra) -> dict:
    scenario = {
        "name": "machine", "seed": 3, "duration.ms": duration, "brokers": 1,
        "hardware": {"broker": machine},
        "topics": [{"name": "t", "partitions": 4, "replication.factor": 1}],
        "producers": [{"topic": "t", "rate.per.s": rate, "acks": 1, "record.size.bytes": RECORD,
                       "batch.size": 262144, "linger.ms": 5}],
    }
    scenario.update(extra)
    return simulate(scenario).summary


def payload_mib_per_s(bytes_per_s: float) -> float:
    """Payload MiB/s that `bytes_per_s` on the wire or disk carries (batch overhead bounded by 1%)."""
    return bytes_per_s / MIB


@pytest.mark.parametrize("bound", ["disk", "nic"])
def test_a_saturated_broker_plateaus_at_its_machines_bound_and_latency_grows_beyond_it(bound):
    duration = 20000.0
    if bound == "disk":  # the disk writes 40 MiB/s; the page cache may hold vm.dirty_ratio (20%) of 1 GiB dirty
        machine = {"disk.write.mib.per.s": 40, "memory.gib": 2, "jvm.heap.gib": 1, "nic.gbps": 25}
        # bytes/s: written back + what stays dirty at the end (the setpoint midway between the freerun ceiling,
        # 15%, and vm.dirty_ratio, 20%: Linux's balance_dirty_pages settles the writers there)
        capacity = 40 * MIB + 0.175 * GIB / (duration / 1000)
    else:  # the NIC carries 0.25 Gbps each way with standard 1500-byte frames; the disk is not a limit
        machine = {"nic.gbps": 0.25, "nic.mtu": 1500, "disk.write.mib.per.s": None}
        # a full TCP segment carries 1500 - 20 (IPv4) - 20 (TCP) - 12 (timestamps) bytes in 1500 + 14 + 4 (Ethernet
        # header, FCS) + 8 (preamble) + 12 (inter-frame gap) on the wire
        capacity = 0.25e9 / 8 * (1500 - 52) / (1500 + 38)
    bound_mib = payload_mib_per_s(capacity)
    over = one_broker(2 * bound_mib * MIB / RECORD, duration, machine)
    under = one_broker(0.5 * bound_mib * MIB / RECORD, duration, machine)
    # beyond the bound the broker takes what the bound lets through, and no more
    assert over["acked_mib_per_s"] == pytest.approx(bound_mib, rel=0.06)
    assert under["acked_mib_per_s"] == pytest.approx(0.5 * bound_mib, rel=0.06)
    # ... and latency grows with the backlog, which fills buffer.memory (32 MiB by default) and then blocks the
    # application's send() (KafkaProducer's BufferPool); below the bound nothing waits
    assert over["backlog_records"] == pytest.approx(33554432 / RECORD, rel=0.02)
    assert over["producer_buffer_wait_ms"] > 0.5 * duration and under["producer_buffer_wait_ms"] == 0
    assert over["produce_latency_ms_p99"] > 100 * under["produce_latency_ms_p99"]
    if bound == "disk":
        # the disk idles until the dirty pages first pass vm.dirty_background_ratio (10% of 1 GiB), then never
        idle_s = 0.10 * GIB / (2 * capacity)
        assert over["disk_write_utilization_max"] == pytest.approx(1 - idle_s / (duration / 1000), abs=0.02)
        assert over["writeback_stall_ms"] > 0.5 * duration
        assert under["writeback_stall_ms"] == 0


def test_a_saturated_broker_plateaus_at_its_cores():
    # one core; a handler spends 40 µs per KiB of records: the core is the limit long before NIC or disk
    costs = {"kib.us": 40.0}
    per_kib_ms = (40.0 + 0.1) / 1000  # handler + the network thread reading the request (network.kib.us 0.1)
    bound_mib = 1000.0 / per_kib_ms / 1024  # KiB/s the core can take -> MiB/s (per-request costs aside)
    machine = {"cores": 1, "disk.write.mib.per.s": None, "nic.gbps": 25}
    over = one_broker(2 * bound_mib * MIB / RECORD, 10000.0, machine, costs=costs)
    assert over["broker_cpu_utilization_max"] > 0.97
    # per-request costs take a little more of the core: the plateau is just under the per-byte bound
    assert 0.9 * bound_mib < over["acked_mib_per_s"] <= bound_mib


def test_a_writeback_stall_lasts_until_the_disk_has_written_the_excess():
    # 1 GiB sent at once into a page cache of 0.5 GiB (vm.dirty_ratio 20%: 102.4 MiB; the freerun ceiling 15%):
    # past the ceiling every append waits for the disk, so the writer is held for the bytes beyond what may
    # stay dirty, at the disk's bandwidth
    write = 100.0
    burst = 1 * GIB
    records = int(burst / RECORD)
    s = simulate({
        "name": "stall", "seed": 1, "duration.ms": 30000, "brokers": 1,
        "hardware": {"broker": {"disk.write.mib.per.s": write, "memory.gib": 1.5, "jvm.heap.gib": 1,
                                "nic.gbps": 100}},
        "topics": [{"name": "t", "partitions": 1, "replication.factor": 1}],
        "producers": [{"topic": "t", "acks": 1, "record.size.bytes": RECORD, "batch.size": 1048576,
                       "burst": {"records": records, "every.ms": 1e9}}],
    }).summary
    cache = 0.5 * GIB
    # the handler's own work on each request (costs' defaults, µs: request + network read + one partition, and
    # per KiB handler + network) is time the disk writes back while the writer is not held
    work = s["produce_requests"] * (20 + 5 + 10 + 1048576 / 1024 * (0.25 + 0.1)) / 1000
    lo = (burst - 0.20 * cache) / (write * MIB) * 1000 - work  # ms: the writer ends with the dirty limit full ...
    hi = (burst - 0.15 * cache) / (write * MIB) * 1000  # ... or at least past the freerun ceiling (it settles
    # at the setpoint between them)
    assert lo * 0.98 <= s["writeback_stall_ms"] <= hi * 1.02
    assert s["records_acked"] == records


def test_a_follower_catching_up_on_data_out_of_the_cache_reads_at_the_disks_bandwidth():
    # the leader takes 10 MiB/s; its page cache holds 100 MiB; follower 1 is down 30 s (300 MiB behind, the
    # oldest 200 of them out of the cache). It catches up on those at the disk's read bandwidth (20 MiB/s) while
    # new data pushes the cache's edge forward at 10 MiB/s: it reaches cached data after gap / (20 - 10) MiB/s
    rate_mib, read_mib, down = 10.0, 20.0, 30000.0
    cache_gib = 100 / 1024

    def run(cache: float) -> tuple:
        s = simulate({
            "name": "catch-up", "seed": 2, "duration.ms": 90000, "brokers": 2, "kafka.version": "3.9",
            "broker": {"zookeeper.session.timeout.ms": 3000},
            "hardware": {"broker": {"memory.gib": 1 + cache, "jvm.heap.gib": 1, "disk.read.mib.per.s": read_mib,
                                    "disk.write.mib.per.s": 1000, "nic.gbps": 10,
                                    "disk.latency.ms": 0}},
            "topics": [{"name": "t", "partitions": 1, "replication.factor": 2}],
            "producers": [{"topic": "t", "rate.per.s": rate_mib * MIB / RECORD, "acks": 1,
                           "record.size.bytes": RECORD, "batch.size": 262144}],
            "faults": [{"at.ms": 10000, "kind": "crash", "broker": 1, "duration.ms": down}],
        })
        e = s.events
        back = e[(e.kind == "isr_expand")].time_ms
        restarted = e[e.kind == "restart"].time_ms.iloc[0] if (e.kind == "restart").any() else 10000 + down
        return float(back.iloc[-1] - restarted), s.summary

    slow, summary = run(cache_gib)
    gap = (rate_mib * down / 1000 - 100) / (read_mib - rate_mib)  # s: the uncached part, closing at 10 MiB/s
    assert slow / 1000 == pytest.approx(gap, rel=0.15)
    assert summary["page_cache_hit_ratio"] < 0.7
    fast, cached = run(2.0)  # the same with a page cache large enough: the NIC's pace, far faster
    assert fast < slow / 10 and cached["page_cache_hit_ratio"] == 1.0


def test_gc_pause_time_per_second_follows_the_allocation_rate():
    # G1: a young collection each time gc.young.mib has been allocated; the broker allocates the bytes it reads
    # into its heap plus gc.request.kib per request. 20 MiB/s into a 64 MiB young generation, 10 ms pauses
    young, pause, rate_mib = 16, 10.0, 20.0
    s = one_broker(rate_mib * MIB / RECORD, 30000.0, {"disk.write.mib.per.s": None},
                   costs={"gc.young.mib": young, "gc.pause.ms": pause, "gc.request.kib": 4})
    allocated = s["records_acked"] * RECORD + s["produce_requests"] * 4 * 1024  # record bytes (+ < 0.5% overhead)
    expected = allocated / (young * MIB) * pause / 30  # ms of pause per second
    assert s["gc_pause_ms_per_s"] == pytest.approx(expected, rel=0.04)
    # twice the load, twice the pause time
    s2 = one_broker(2 * rate_mib * MIB / RECORD, 30000.0, {"disk.write.mib.per.s": None},
                    costs={"gc.young.mib": young, "gc.pause.ms": pause, "gc.request.kib": 4})
    assert s2["gc_pause_ms_per_s"] == pytest.approx(2 * s["gc_pause_ms_per_s"], rel=0.1)


def test_a_broker_decompresses_each_compressed_batch_it_validates():
    # LogValidator decompresses a compressed batch to check its records: with every other cost zero, the broker's
    # CPU time is the records' uncompressed bytes at the codec's decompression speed (lzbench 1.7.1: lz4 1.7.5
    # decompresses 2,244 MB/s, 10^6 bytes per second)
    from shipped import ZERO_COSTS

    scenario_costs = dict(ZERO_COSTS, **{"gc.young.mib": 1e6})
    plain = one_broker(2000, 10000.0, {"cores": 4, "disk.write.mib.per.s": None}, costs=scenario_costs)
    assert plain["broker_cpu_utilization_max"] == 0.0  # uncompressed: nothing to decompress, no other cost
    c = simulate({
        "name": "lz4", "seed": 3, "duration.ms": 10000.0, "brokers": 1,
        "hardware": {"broker": {"cores": 4, "disk.write.mib.per.s": None}}, "costs": scenario_costs,
        "topics": [{"name": "t", "partitions": 4, "replication.factor": 1}],
        "producers": [{"topic": "t", "rate.per.s": 2000, "acks": 1, "record.size.bytes": RECORD,
                       "batch.size": 262144, "linger.ms": 5, "compression.type": "lz4"}],
    }).summary
    # a v2 record of a 10,000-byte value and a null key: 10,000 + attributes 1, timestamp and offset deltas (1-2
    # each), key length 1, value length 3 (zigzag varint of 10,000), headers 1, and its own length varint 2
    per_record = (RECORD + 11, RECORD + 13)
    cpu_ms = c["broker_cpu_utilization_max"] * 4 * 10000.0
    lo, hi = (c["records_acked"] * n / 2244e6 * 1000 for n in per_record)
    assert lo * 0.99 <= cpu_ms <= hi * 1.01


@pytest.mark.parametrize("version, crc_gb_per_s, brokers", [("0.10", 2.2, 1), ("0.11", None, 1), ("0.10", 2.2, 2)])
def test_before_0_11_a_broker_checks_a_pure_java_crc32_of_every_message_it_appends(version, crc_gb_per_s, brokers):
    # message formats v0/v1: Log.append checks each message's CRC32 with a pure-Java slicing-by-8 CRC32
    # (kafka.utils.Crc32, then common.utils.Crc32), about 2.2 GB/s (Hadoop's PureJavaCrc32 benchmark, apache/hadoop
    # PR 8349); v2 (0.11, KIP-98) checks one CRC32C per batch instead. With every other cost zero, the broker's CPU
    # time is the appended bytes at that speed, and nothing from 0.11. Two brokers, RF 2: each leads two partitions
    # and follows the other two, so its leader's and its fetcher's checks together cover every byte once
    from shipped import ZERO_COSTS

    scenario_costs = {k: v for k, v in ZERO_COSTS.items() if k != "crc32.kib.us"}  # the version's default
    scenario_costs["gc.young.mib"] = 1e6
    topics = [{"name": "t", "partitions": 4, "replication.factor": brokers}]
    s = one_broker(2000, 10000.0, {"cores": 4, "disk.write.mib.per.s": None}, costs=scenario_costs,
                   **{"kafka.version": version, "brokers": brokers, "topics": topics})
    cpu_ms = s["broker_cpu_utilization_max"] * 4 * 10000.0
    if crc_gb_per_s is None:
        assert cpu_ms == 0.0
        return
    # 0.10 writes v1 messages: 12 bytes of offset and size, then CRC 4, magic 1, attributes 1, timestamp 8, key and
    # value lengths 4 + 4, the value (a null key); the default rounds 1 KiB / 2.2 GB/s = 0.4655 µs up to 0.47 (+1%)
    v1 = s["records_acked"] * (RECORD + 12 + 22) / (crc_gb_per_s * 1e9) * 1000
    assert cpu_ms == pytest.approx(v1 * 0.47 / (1024 / 2.2e3), rel=1e-3)
