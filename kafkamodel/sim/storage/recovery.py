"""Log recovery at a broker's start: what an unclean shutdown costs before the broker can register.

Read from Kafka's code (docs/restarts.md cites each):

* ``LogManager.loadLogs``: each data directory gets a pool of ``num.recovery.threads.per.data.dir`` threads and
  one job per log; a directory holding ``.kafka_cleanshutdown`` (written by a clean shutdown, deleted at start)
  skips recovery. The broker registers (ZooKeeper) or is unfenced (KRaft) only once every log is loaded.
* ``LogLoader.recoverLog`` (``Log.recoverLog`` before 3.0, the same since 0.8): without the marker, every
  segment from the one holding the checkpointed recovery point to the end (``segments.values(recoveryPoint,
  Long.MAX_VALUE)``: the segment holding that offset, whole) is read again batch by batch, validated and
  indexed (``LogSegment.recover``); from 0.11 (KIP-98) each recovered segment ends with a producer-state
  snapshot (``recoverSegment``), forced to disk from 2.8 (KAFKA-9892): one fsync per segment.
* The recovery point is how far the log is flushed: a roll flushes everything before the new segment
  (``UnifiedLog.roll``), and ``log.flush.interval.*`` more. ``LogManager`` writes every log's recovery point to
  ``recovery-point-offset-checkpoint`` every ``log.flush.offset.checkpoint.interval.ms``, first 30 s after the
  start (``InitialTaskDelayMs``), and at a clean shutdown (after flushing every log). After an unclean recovery
  the recovery point stays where the checkpoint had it (``min(recoveryPointCheckpoint, logEndOffset)``).

The model: a log's recovery re-reads its bytes from the segment holding the checkpointed recovery point on, at
the CPU cost per KiB of a replica's append (``costs.fetcher.kib.us`` + ``costs.crc32.kib.us``: the same
validation and indexing), plus the disk's read time for the bytes the page cache no longer holds (all of them
after a power loss), plus one fsync per segment from 2.8. The jobs run in partition order on the recovery
threads, each taken by the first free thread; the disk's read bandwidth is shared, so recovery lasts at least
all uncached bytes / ``disk.read.mib.per.s``. Not modelled: several data directories (one per broker),
the clean start's own log loading (lazy indexes since 2.1, KAFKA-7283), transaction indexes.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, bisect_right

from ...config.distributions import Sampler, normalise
from .log import Log

INITIAL_TASK_DELAY_MS = 30000.0  # LogManager's InitialTaskDelayMs: its periodic tasks first run 30 s after the start


def segment_starts(log: Log) -> list[int]:
    """The entry index of each segment's first batch, rolled as ``Log.segment_append`` rolls them (a batch that
    does not fit in segment.bytes starts the next segment)."""
    starts: list[int] = []
    sizes, limit = log.batch_bytes, log.segment_bytes
    fill = 0
    for i, b in enumerate(log.batch_ids[:log.rows]):
        size = sizes[b] if b >= 0 else 0
        if not starts or fill + size > limit:
            starts.append(i)
            fill = 0
        fill += size
    return starts


def recovery_point_at(log: Log, t: float) -> int:
    """The recovery point a checkpoint written at `t` held: the base of the segment then active (a roll flushes
    what lies before it), or the flushed offset if it was further (approximated by what is flushed now, bounded by
    the log end at `t`)."""
    # entries appended by t: those whose instant is at most t (the instants increase, a log's indexes never fall)
    i = bisect_left(log.append_at, bisect_right(log.instants, t), 0, log.rows)
    if i == 0:
        return log.log_start_offset
    starts = segment_starts(log)
    active = starts[bisect_right(starts, i - 1) - 1]
    return max(log.bases[active], min(log.flushed_offset, log.end_of(i - 1)))


def unrecovered(log: Log, checkpoint: int, evicted_before: float) -> tuple[int, int, int]:
    """What recovery re-reads of this log: (bytes, of them not in the page cache, segments), from the segment
    holding `checkpoint` (clamped to the log end, as LogLoader does) to the end."""
    if not log.rows:
        return 0, 0, 0
    starts = segment_starts(log)
    offset = min(checkpoint, log.log_end_offset)
    bases = [log.bases[s] for s in starts]
    k = max(bisect_right(bases, offset) - 1, 0)  # segments.floorKey(recoveryPoint)
    first = starts[k]
    if offset == log.log_end_offset and bases[k] == offset:
        return 0, 0, 0  # the checkpoint is a segment's base with nothing in it
    sizes = log.batch_bytes
    total = uncached = 0
    instants, at = log.instants, log.append_at
    ids = log.batch_ids
    for i in range(first, log.rows):
        b = ids[i]
        if b >= 0:
            total += sizes[b]
            if instants[at[i]] < evicted_before:
                uncached += sizes[b]
    return total, uncached, len(starts) - k


def recovery_ms(jobs: list[float], threads: int, uncached_bytes: float, read_per_ms: float | None) -> float:
    """The recovery's length: `jobs` (each log's time, alone on a thread, in submission order) on a fixed pool of
    `threads`, each job to the first free thread (Executors.newFixedThreadPool's queue); at least the time the
    shared disk needs for every uncached byte."""
    free = [0.0] * min(threads, max(len(jobs), 1))
    for ms in jobs:
        heapq.heapreplace(free, free[0] + ms)
    span = max(free)
    disk = uncached_bytes / read_per_ms if read_per_ms else 0.0
    return max(span, disk)


class LogRecovery:
    """Each broker's recovery-point checkpoint and its process start, and the recovery an unclean start costs."""

    def __init__(self, sim):
        cfg, costs = sim.settings.broker, sim.settings.costs
        self.threads = cfg.num_recovery_threads_per_data_dir
        self.checkpoint_every = cfg.log_flush_offset_checkpoint_interval_ms
        self.byte_ms = (costs.fetcher_kib_us + costs.crc32_kib_us) / 1024.0 / 1000.0
        self.snapshot_fsync = sim.settings.kafka.producer_snapshot_fsync  # 2.8+: one fsync per recovered segment
        self.fsync = Sampler(sim.settings.fsync_ms, sim.streams("log_recovery")).stream  # its own stream
        self.replicas = sim.replicas
        self.partitions_of = sim.partitions_of
        self.caches = sim.caches
        n = len(sim.brokers)
        self.started = [0.0] * n  # when each broker's process (its LogManager) last started
        self.died = [0.0] * n  # when it last stopped
        self.checkpoint: list[dict[int, int]] = [{} for _ in range(n)]  # partition -> its checkpoint at the start

    def stopped(self, b: int, now: float, clean: bool) -> None:
        """The process stops: a clean shutdown flushes every log and writes their recovery points (the log ends);
        an unclean stop leaves the checkpoint file as its last periodic write had it."""
        self.died[b] = now
        if clean:
            self.checkpoint[b] = {p: self.replicas[p][b].log.log_end_offset for p in self.partitions_of[b]}

    def last_checkpoint_ms(self, b: int) -> float | None:
        """When the stopped process last wrote recovery-point-offset-checkpoint (None: not since it started)."""
        first = self.started[b] + INITIAL_TASK_DELAY_MS
        died = self.died[b]
        if died < first:
            return None
        return first + ((died - first) // self.checkpoint_every) * self.checkpoint_every

    def recover(self, b: int, now: float) -> tuple[float, int, int]:
        """An unclean start of broker b at `now`: (ms, bytes re-read, segments recovered). Its recovery points
        stay those of the checkpoint (LogLoader advances them only by a later flush)."""
        at = self.last_checkpoint_ms(b)
        saved = self.checkpoint[b]
        evicted = self.caches[b].evicted_before()
        jobs, total_bytes, total_uncached, total_segments = [], 0, 0, 0
        points = {}
        for p in self.partitions_of[b]:
            log = self.replicas[p][b].log
            point = recovery_point_at(log, at) if at is not None else saved.get(p, log.log_start_offset)
            points[p] = point
            nbytes, uncached, segments = unrecovered(log, point, evicted)
            if not segments:
                continue
            ms = nbytes * self.byte_ms + (uncached / self.caches[b].read_per_ms if self.caches[b].read_per_ms else 0.0)
            if self.snapshot_fsync:
                ms += sum(next(self.fsync) for _ in range(segments))
            jobs.append(ms)
            total_bytes += nbytes
            total_uncached += uncached
            total_segments += segments
        self.checkpoint[b] = points
        return recovery_ms(jobs, self.threads, total_uncached, self.caches[b].read_per_ms), total_bytes, total_segments

    def started_at(self, b: int, now: float) -> None:
        """The process's LogManager started (its logs loaded): its periodic checkpoint counts from here."""
        self.started[b] = now



LOG_ROLL_MS = 604800000.0  # log.roll.ms's default (7 days): a segment also rolls this old


def mean_recovery_ms(write_bytes_per_ms: list[float], threads: int, checkpoint_every_ms: float, segment_bytes: float,
                     byte_ms: float, segment_fsync_ms: float, read_per_ms: float | None, cache_bytes: float,
                     cold: bool, dirty_expire_ms: float) -> float:
    """The mean recovery of a broker stopped uncleanly at a random moment of a long steady run (for the durability
    campaign's windows, which do not run the logs): each log (one per partition replica it holds, written at
    `write_bytes_per_ms`) re-reads its active segment as the last checkpoint found it, on average half full (half
    of segment.bytes, or of what log.roll.ms lets in), plus what came since, on average half an interval; a power
    loss (`cold`) keeps only what the OS had written back (not the last vm.dirty_expire_centisecs) and reads every
    byte from the disk; a process crash reads from the disk what the page cache no longer holds (it keeps the
    newest `cache_bytes` of all the logs). Segments: the one re-read plus the rolls since the checkpoint, each with
    `segment_fsync_ms` (2.8+). The logs spread evenly over the threads (many logs: a list schedule is close to the
    even split); the shared disk bounds it below."""
    cpu_ms, total, segments = 0.0, 0.0, 0.0
    for w in write_bytes_per_ms:
        if w <= 0:
            continue
        fill = min(segment_bytes, w * LOG_ROLL_MS) / 2.0
        since = w * checkpoint_every_ms / 2.0
        nbytes = fill + since - (min(w * dirty_expire_ms, fill + since) if cold else 0.0)
        total += nbytes
        segments += 1.0 + since / segment_bytes
        cpu_ms += nbytes * byte_ms
    uncached = total if cold else max(total - cache_bytes, 0.0)
    disk_ms = uncached / read_per_ms if read_per_ms else 0.0
    return max((cpu_ms + disk_ms + segments * segment_fsync_ms) / threads, disk_ms)


def mean_of(spec) -> float:
    """A distribution's mean (config.distributions' forms)."""
    d = normalise(spec)
    kind = d["dist"]
    if kind == "exponential":
        return float(d["mean"])
    if kind == "lognormal":
        return float(d["median"]) * math.exp(float(d["sigma"]) ** 2 / 2.0)
    if kind == "uniform":
        return (float(d["low"]) + float(d["high"])) / 2.0
    return float(d["value"])


def scenario_mean_recovery_ms(settings, cold: bool) -> float:
    """``mean_recovery_ms`` for a scenario's brokers (``config.settings.Settings``), averaged over them: each
    partition written at its producers' mean rate (rate.per.s or bursts, x record.size.bytes; a closed-loop
    producer's rate is not known before a run: 0 here), its replicas spread evenly over the brokers."""
    rate: dict[str, float] = {}
    for p in settings.producers:
        per_ms = p.burst.records / p.burst.every_ms if p.burst is not None else p.rate_per_s / 1000.0
        rate[p.topic] = rate.get(p.topic, 0.0) + per_ms * p.record_size_bytes
    brokers = settings.brokers
    logs: list[list[float]] = [[] for _ in range(brokers)]
    k = 0
    for t in settings.topics:
        w = rate.get(t.name, 0.0) / t.partitions
        for _ in range(t.partitions * t.replication_factor):
            logs[k % brokers].append(w)
            k += 1
    machine, costs, cfg = settings.broker_machine, settings.costs, settings.broker
    read = machine.disk_read_mib_per_s * 1048576.0 / 1000.0 if machine.disk_read_mib_per_s else None
    cache = max(machine.memory_gib - machine.jvm_heap_gib, 0.0) * 1073741824.0
    fsync = mean_of(settings.fsync_ms) if settings.kafka.producer_snapshot_fsync else 0.0
    segment = settings.topics[0].segment_bytes if settings.topics else 1 << 30
    byte_ms = (costs.fetcher_kib_us + costs.crc32_kib_us) / 1024.0 / 1000.0
    each = [mean_recovery_ms(w, cfg.num_recovery_threads_per_data_dir, cfg.log_flush_offset_checkpoint_interval_ms,
                             segment, byte_ms, fsync, read, cache, cold, settings.os.dirty_expire_ms) for w in logs]
    return sum(each) / len(each) if each else 0.0
