"""storage.disk: the broker machine's page cache and disk on their own (the cores and GC: test_sim_broker_cpu.py).

Each expectation is computed here from the part's numbers and Linux's or the JVM's documented rule."""

from itertools import repeat

import pytest

from kafkamodel.sim.storage.disk import GIB, MIB, PageCache


def cache(write=100.0, read=200.0, memory_gib=1.0, background=10, ratio=20, expire=30000.0, latency=0.0):
    return PageCache(write, read, memory_gib * GIB, background, ratio, expire, repeat(latency))


def test_nothing_is_throttled_below_the_freerun_ceiling_and_the_flusher_starts_past_the_background_limit():
    c = cache()
    freerun = (0.10 + 0.20) / 2 * GIB  # dirty_freerun_ceiling: midway between the two limits
    assert c.append(0.0, freerun - 1) == 0.0
    # 1 s later the flusher has written back down to the background limit (and no further): 0.15 GiB -> 0.1 GiB
    # takes 0.05 GiB / 100 MiB/s = 0.512 s
    c.advance(1000.0)
    assert c.dirty == pytest.approx(0.10 * GIB, rel=1e-6)
    assert c.writeback_ms == pytest.approx((freerun - 1 - 0.10 * GIB) / (100 * MIB) * 1000, rel=1e-6)


def test_a_writer_past_dirty_ratio_waits_until_writeback_brings_the_dirty_pages_under_it():
    c = cache()
    limit = 0.20 * GIB
    over = 64 * MIB
    pause = c.append(0.0, limit + over)  # one write that dirties 64 MiB past vm.dirty_ratio at once
    assert pause == pytest.approx(over / (100 * MIB) * 1000)  # (dirty - limit) / bandwidth: 640 ms
    assert c.stall_ms == pytest.approx(pause)


def test_writers_faster_than_the_disk_are_paced_at_the_disks_bandwidth():
    c = cache(write=50.0)
    now, n, written = 0.0, 1 * MIB, 0.0
    while now < 60000.0:  # one writer, 1 MiB writes back to back, throttled as Linux throttles it
        now += c.append(now, n)
        written += n
        now += 0.05  # the write itself: 20 GiB/s of memory copy, far faster than the disk
    # in the long run the writer gets the disk's bandwidth, plus what the cache holds at the setpoint (midway
    # between the freerun ceiling, 15%, and vm.dirty_ratio, 20%), where Linux's pos_ratio is 1
    setpoint = 0.175 * GIB
    assert written == pytest.approx(50 * MIB * now / 1000 + setpoint, rel=0.01)


def test_pages_older_than_dirty_expire_are_written_back_and_survive_a_power_loss():
    c = cache(expire=30000.0)
    c.append(0.0, 1 * MIB)
    c.append(20000.0, 1 * MIB)
    assert c.durable_before(29000.0) == 0.0  # nothing is old enough yet: everything since t=0 is still dirty
    assert c.durable_before(31000.0) == 20000.0  # the first write expired and went out; the second did not
    assert c.durable_before(51000.0) == 51000.0  # both


def test_reads_of_data_the_cache_no_longer_holds_go_to_the_disk_at_its_read_bandwidth():
    c = cache(read=200.0, memory_gib=1.0, latency=0.1)
    c.append(0.0, 0.5 * GIB)
    c.append(100.0, 0.75 * GIB)  # 1.25 GiB written: the first 0.25 GiB have left a 1 GiB cache
    assert c.evicted_before() == 0.0  # what was written at t=0 (and before the next mark) is gone
    done = c.read(200.0, 16 * MIB)
    assert done == pytest.approx(200.0 + 0.1 + 16 / 200 * 1000)  # one access + 16 MiB at 200 MiB/s
    second = c.read(200.0, 16 * MIB)  # the disk reads one thing at a time
    assert second == pytest.approx(done + 0.1 + 80.0)
