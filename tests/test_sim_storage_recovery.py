"""Log recovery at an unclean start (storage.recovery, issue 35). Each expected time is computed here from the
settings (disk read rate, fsync, recovery threads) and the bytes and segments the run reports, and the bytes are
bounded from the producer's settings and Kafka's checkpoint schedule (first write 30 s after the start, then every
log.flush.offset.checkpoint.interval.ms; recovery re-reads from the segment holding the checkpointed point)."""

from __future__ import annotations

import math
import re

import pytest

from kafkamodel import load_scenario, simulate
from kafkamodel.sim.storage.recovery import recovery_ms

MIB = 1048576
RECORD = 1000  # bytes per record
RATE = 1000  # records per second
SEGMENT = 4 * MIB


def scenario(fault="power_loss", at=100_000, partitions=1, threads=1, interval=60_000, read=100, fsync=0.0,
             kib_us=0.0, version="3.7", segment=SEGMENT, duration=None, **extra):
    return {"name": "recovery", "brokers": 3, "duration.ms": duration or at + 20_000, "kafka.version": version,
            "network": {"latency.ms": 0.5},
            "broker": {"log.segment.bytes": segment, "num.recovery.threads.per.data.dir": threads,
                       "log.flush.offset.checkpoint.interval.ms": interval},
            "hardware": {"broker": {"disk.read.mib.per.s": read, "fsync.ms": fsync}},
            "costs": {"fetcher.kib.us": kib_us},
            "topics": [{"name": "t", "partitions": partitions, "replication.factor": 3}],
            "producers": [{"topic": "t", "rate.per.s": RATE * partitions, "acks": "all",
                           "record.size.bytes": RECORD, "linger.ms": 5}],
            "faults": [{"at.ms": at, "kind": fault, "broker": 2, "duration.ms": 5000}], **extra}


def recoveries(result):
    """(bytes, segments, ms) of each log_recovery event."""
    ev = result.events
    out = []
    for detail in ev[ev["kind"] == "log_recovery"]["detail"]:
        m = re.fullmatch(r"(\d+) bytes in (\d+) segments recovered in ([0-9.e+-]+) ms", detail)
        out.append((int(m[1]), int(m[2]), float(m[3])))
    return out


def run(**kw):
    return simulate(load_scenario(scenario(**kw)))


def last_checkpoint(at, interval):
    return 30_000 + ((at - 30_000) // interval) * interval


def test_pool_schedule_and_disk_bound():
    # four logs of 3, 1, 2, 4 ms on two threads: 3 | 1+2 | then 4 after the 1+2 -> 3 + 4 = 7 (the first free thread)
    assert recovery_ms([3.0, 1.0, 2.0, 4.0], 2, 0, None) == 7.0
    assert recovery_ms([3.0, 1.0, 2.0, 4.0], 1, 0, None) == 10.0
    assert recovery_ms([3.0, 1.0, 2.0, 4.0], 8, 0, None) == 4.0
    assert recovery_ms([3.0, 1.0], 8, 50, 10.0) == 5.0  # the shared disk needs 50 / 10 ms for every uncached byte


def test_rereads_what_was_written_since_the_checkpoint():
    """A process crash: the bytes re-read are at least what was written since the last checkpoint and at most that
    plus one segment (the segment holding the recovery point is read whole); the page cache holds them, so the time
    is the append path's CPU per KiB (no disk read, no fsync here)."""
    at, interval = 100_000, 60_000
    r = run(fault="crash", at=at, interval=interval, read=1, kib_us=0.5)
    [(nbytes, segments, ms)] = recoveries(r)
    since = (at - last_checkpoint(at, interval)) / 1000 * RATE * RECORD  # payload written since the checkpoint
    assert since <= nbytes <= since * 1.1 + SEGMENT
    assert segments >= math.ceil(since / SEGMENT)
    assert ms == pytest.approx(nbytes / 1024 * 0.5 / 1000, rel=1e-5)
    assert r.summary["broker_recovery_ms_max"] == pytest.approx(ms)


def test_power_loss_reads_the_disk():
    """After a power loss the page cache is cold: every byte recovered is read at the disk's rate. What survived is
    what the OS had written back (older than vm.dirty_expire_centisecs, 30 s): the tail since then is gone."""
    r = run(at=100_000, read=100)
    [(nbytes, segments, ms)] = recoveries(r)
    assert 0 < nbytes <= SEGMENT and segments == 1
    assert ms == pytest.approx(nbytes / (100 * MIB / 1000.0), rel=1e-5)


def test_segments_cost_one_fsync_each_from_2_8():
    """KAFKA-9892 (2.8): each recovered segment's producer snapshot is forced to disk; before, it is not."""
    r = run(fault="crash", read=None, fsync=7.0)
    [(nbytes, segments, ms)] = recoveries(r)
    assert ms == pytest.approx(7.0 * segments)
    [(_, segments27, ms27)] = recoveries(run(fault="crash", read=None, fsync=7.0, version="2.7"))
    assert segments27 > 0 and ms27 == 0.0


def test_grows_with_the_bytes_since_the_checkpoint_and_shrinks_with_a_recent_one():
    early = recoveries(run(fault="crash", at=95_000, kib_us=1.0))[0]  # 5 s after the checkpoint at 90 s
    late = recoveries(run(fault="crash", at=145_000, kib_us=1.0))[0]  # 55 s after it
    assert late[0] > early[0] + 40 * RATE * RECORD and late[2] > early[2]
    frequent = recoveries(run(fault="crash", at=145_000, interval=10_000, kib_us=1.0))[0]  # the last checkpoint at 140 s: 5 s ago
    assert frequent[0] < late[0] - 40 * RATE * RECORD and frequent[2] < late[2]


def test_more_threads_recover_faster_up_to_the_disk():
    """Eight logs on T threads, the CPU cost only: no faster than a perfect split (total / T) and, each log to the
    first free thread, no slower than Graham's bound for list scheduling (total / T + the longest log, which is what
    eight threads take). With a disk bound too, all bytes / the read rate."""
    ms = {t: recoveries(run(fault="crash", at=40_000, partitions=8, threads=t, read=None, kib_us=2.0))[0][2]
          for t in (1, 2, 8)}
    total, longest = ms[1], ms[8]
    assert total / 2 <= ms[2] * (1 + 1e-5) and ms[2] <= total / 2 + longest
    assert total / 8 <= longest < ms[2] < total
    nbytes, _, disk = recoveries(run(at=40_000, partitions=8, threads=8, read=50, kib_us=2.0))[0]
    assert disk == pytest.approx(nbytes / (50 * MIB / 1000.0), rel=1e-5)  # the disk, not the threads, bounds it


def test_num_recovery_threads_default_follows_the_version():
    """KIP-1030: num.recovery.threads.per.data.dir 1, 2 from 4.0."""
    for version, threads in (("3.9", 1), ("4.0", 2)):
        s = scenario(version=version)
        del s["broker"]["num.recovery.threads.per.data.dir"]
        assert load_scenario(s)["broker"]["num.recovery.threads.per.data.dir"] == threads


def test_a_clean_restart_recovers_nothing():
    s = scenario(fault="crash")
    s["faults"] = []
    s["operations"] = [{"at.ms": 100_000, "kind": "rolling_restart", "brokers": [2], "gate": "no_under_replicated"}]
    r = simulate(load_scenario(s))
    assert recoveries(r) == [] and r.summary["broker_recovery_ms_max"] == 0.0
    assert len(r.events[r.events["kind"] == "broker_shutdown"]) == 1


def test_the_broker_registers_only_after_recovery():
    """The restarted broker rejoins no ISR before its recovery ends (a slow disk makes it seconds)."""
    r = run(fault="crash", at=100_000, read=None, kib_us=500.0, duration=140_000)
    [(nbytes, _, ms)] = recoveries(r)
    assert ms > 5000
    ev = r.events
    back = ev[(ev["kind"] == "isr_expand") & (ev["time_ms"] > 100_000)]["time_ms"]
    assert back.min() >= 105_000 + ms


def test_mean_recovery_for_the_durability_windows():
    """Two logs written at 1 and 3 bytes/ms, 1 MiB segments (full long before log.roll.ms), checkpoints every
    60 s: each re-reads on average half a segment plus half an interval's bytes; one fsync per segment (the one
    re-read plus the rolls since the checkpoint); two threads share them; a warm cache reads nothing from disk."""
    from kafkamodel.sim.storage.recovery import mean_recovery_ms
    seg, every, byte_ms, fsync = float(MIB), 60_000.0, 1e-6, 2.0
    nbytes = [seg / 2 + w * every / 2 for w in (1.0, 3.0)]
    segments = [1 + w * every / 2 / seg for w in (1.0, 3.0)]
    expect = (sum(nbytes) * byte_ms + sum(segments) * fsync) / 2
    got = mean_recovery_ms([1.0, 3.0], 2, every, seg, byte_ms, fsync, 100.0, 1e12, False, 30_000.0)
    assert got == pytest.approx(expect, rel=1e-12)
    # a power loss: the last 30 s are gone and every byte surviving comes from the disk (100 bytes/ms)
    cold = [b - w * 30_000 for b, w in zip(nbytes, (1.0, 3.0))]
    expect_cold = max((sum(cold) * byte_ms + sum(cold) / 100.0 + sum(segments) * fsync) / 2, sum(cold) / 100.0)
    got = mean_recovery_ms([1.0, 3.0], 2, every, seg, byte_ms, fsync, 100.0, 1e12, True, 30_000.0)
    assert got == pytest.approx(expect_cold, rel=1e-12)
