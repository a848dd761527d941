"""From the state at the end of a run to a ``Result``: pure builders, one per table, and the summary.

Loss and duplication are judged against the final log of each partition's
last elected leader, by construction:
``acked_records_lost`` = the producer got success, the record is absent;
``committed_records_lost`` = some leader's HW covered it, it is absent;
``records_duplicated`` = records present more than once;
``records_out_of_order`` = copies after a record their producer sent later.
Each is counted per batch (``accounting``: a batch's records share its fate),
whatever ``results.records`` keeps of the per-record table; without the whole
table the latency percentiles come from streamed histograms (``latency``).

Nothing here changes the run's state: ``build_result(end)`` reads a ``RunEnd``
(what the run left) and returns new tables.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..engine.collector import collector_paused
from ..protocol import ACKED, ERRORS, FAILED, NONE, PENDING
from .accounting import BatchAccount, group_delivery, group_lag, undrained_per_partition
from .invariants import log_diverging_ranges
from .measures import GROUP_SUMMARY, INVARIANT_VIOLATION, SUMMARY_KEYS, TABLES, Counters
from .result import Result
from .histogram import LatencyHistogram
from .latency import stream_batches, stream_group
from .zones import consume_latency, zone_summary


@dataclass(frozen=True)
class RunEnd:
    """What a finished run leaves for its result."""

    settings: object  # Settings
    scenario: dict  # the resolved scenario, as it ran
    workload: object  # Workload: the records
    batches: object  # Batches: what became of them
    partitions: list  # Partition: the controller's view, with availability
    replicas: list  # per partition: broker -> Replica
    topic_first: dict  # topic -> its first global partition index
    groups: list  # consumer Group objects
    counters: Counters
    events: list  # (time_ms, kind, topic, partition, broker, detail)
    timeline: list  # (time_ms, topic, partition, leader, leader_epoch, LEO, HW, ISR size)
    violations: dict  # safety property -> its violations at the end
    unavailable_wall_ms: float
    end_ms: float
    threads: dict  # "request_handler" / "network": (busy ms per broker, threads per broker); "replica_fetcher": busiest ms
    cpu: object  # broker.cpu.Cpu: cores and GC pauses
    caches: list  # broker -> storage.disk.PageCache
    recorder: object  # measures.Recorder: the control plane's times
    operations: dict  # the operations' window, partition-ms per state, reassignment and throttled bytes, the
    # producers' error times (operation_summary turns them into the summary's operation keys)
    zones: object = None  # results.zones.ZoneTraffic: bytes by kind and pair of zones


def control_summary(end: "RunEnd") -> dict:
    """The control plane's time (measures: leader_election_time_ms_*, partition_unavailable_ms_*, controller_*,
    metadata_propagation_ms_*)."""
    rec = end.recorder
    elections = np.asarray(rec.election_ms, dtype=float)
    down = np.asarray([part.unavailable_ms for part in end.partitions if part.unavailable_ms > 0], dtype=float)
    propagation = np.asarray(rec.metadata_propagation_ms, dtype=float)
    return {
        "leader_election_time_ms_max": float(elections.max()) if len(elections) else None,
        "leader_election_time_ms_p50": _percentile(elections, 50),
        "partition_unavailable_ms_p50": _percentile(down, 50),
        "partition_unavailable_ms_p99": _percentile(down, 99),
        "partition_unavailable_ms_max": float(down.max()) if len(down) else None,
        "controller_busy_ms": float(rec.controller_busy_ms),
        "broker_recovery_ms_max": float(max(rec.recovery_ms, default=0.0)),
        "controller_queue_max": int(rec.controller_queue_max),
        "metadata_propagation_ms_p50": _percentile(propagation, 50),
        "metadata_propagation_ms_max": float(propagation.max()) if len(propagation) else None,
    }


def operation_summary(ops: dict, during: tuple | None) -> dict:
    """The operations' summary keys: operation_ms (the window from the first operation's start to the last one's
    end), partition-ms per state, reassignment_bytes; produce latency over the acknowledged records sent in the
    window, `during` (its p50, p99, p99.9 and maximum; None without any), and the producers' errors in it (None without
    operations); throttled_bytes."""
    window = ops["window"]
    keys = {"operation_produce_p50_ms": None, "operation_produce_p99_ms": None, "operation_produce_p999_ms": None,
            "operation_produce_max_ms": None, "operation_produce_errors": None}
    if window is not None:
        start, end, _ = window
        if during is not None:
            keys.update(operation_produce_p50_ms=during[0], operation_produce_p99_ms=during[1],
                        operation_produce_p999_ms=during[2], operation_produce_max_ms=during[3])
        errors = np.asarray(ops["produce_error_ms"], dtype=float)
        keys["operation_produce_errors"] = int(((errors >= start) & (errors <= end)).sum())
    return {"operation_ms": None if window is None or not window[2] else window[1] - window[0],
            **{k: ops[k] for k in ("under_replicated_partition_ms", "under_min_isr_partition_ms",
                                   "offline_partition_ms", "reassignment_bytes")},
            **keys, "throttled_bytes": ops["throttled_bytes"]}


def exact_latencies(end: RunEnd, table: dict) -> dict:
    """The summary's latencies from the per-record columns, exact: produce (p50, p99, p999, mean), e2e (p50, p99,
    p999), during the operations (p50, p99, p999, max or None), per group and pooled over groups."""
    w = end.workload
    produce_latency = (table["ack_ms"] - w.send_ms)[table["acked"]]
    mean = float(produce_latency.mean()) if len(produce_latency) else None  # before the percentiles reorder it
    produce = (*_percentiles(produce_latency), mean)
    del produce_latency
    e2e = (table["visible_ms"] - w.send_ms)[~np.isnan(table["visible_ms"])]
    e2e_p = _percentiles(e2e)
    del e2e
    during = None
    window = end.operations["window"]
    if window is not None:
        sent = (w.send_ms >= window[0]) & (w.send_ms <= window[1])
        latency = (table["ack_ms"] - w.send_ms)[sent & ~np.isnan(table["ack_ms"])]
        if len(latency):
            during = tuple(float(v) for v in np.percentile(latency, [50, 99, 99.9, 100], overwrite_input=True))
    groups = {}
    for g in end.groups:
        latency = (g.first_processed_ms - w.send_ms)[~np.isnan(g.first_processed_ms)]
        groups[g.name] = (_percentile(latency, 50), _percentile(latency, 99), _percentile(latency, 99.9))
    return {"produce": produce, "e2e": e2e_p, "during": during, "groups": groups,
            "consume": consume_latency(end.groups, w.send_ms)}


def streamed_latencies(end: RunEnd, account: BatchAccount) -> dict:
    """``exact_latencies``' numbers from histograms (``latency``): the percentiles within p/256 + 0.5 µs, p999
    and the maxima exact, the mean up to float rounding."""
    h = stream_batches(end, account)
    produce, e2e, during = h["produce"], h["e2e"], h["during"]
    groups, pooled = {}, None
    for g in end.groups:
        gh = stream_group(g, end.workload.send_ms)
        groups[g.name] = tuple(gh.percentile(q) for q in (50, 99, 99.9))
        if pooled is None:
            pooled = LatencyHistogram(gh.keep)
        pooled.merge(gh)
    return {"produce": (*(produce.percentile(q) for q in (50, 99, 99.9)), produce.mean),
            "e2e": tuple(e2e.percentile(q) for q in (50, 99, 99.9)),
            "during": (during.percentile(50), during.percentile(99), during.percentile(99.9), during.max)
            if during is not None and during.n
            else None,
            "groups": groups,
            "consume": (pooled.percentile(50), pooled.percentile(99)) if pooled is not None else (None, None)}


SAMPLE_RECORDS = 100_000  # results.records: sample keeps every k-th record, at most this many rows


def sample_indices(records: int) -> np.ndarray:
    """The records ``results.records: sample`` keeps: every k-th one in the workload's order (by producer,
    partition and send time: each partition's share), k = ceil(records / SAMPLE_RECORDS)."""
    return np.arange(0, records, max(1, -(-records // SAMPLE_RECORDS)), dtype=np.int64)


def _percentile(values: np.ndarray, q: float):
    return float(np.percentile(values, q)) if len(values) else None


def _percentiles(values: np.ndarray) -> tuple:
    """The 50th, 99th and 99.9th percentiles (one partial sort, in place: `values` comes back reordered), or
    Nones."""
    if not len(values):
        return None, None, None
    p50, p99, p999 = np.percentile(values, [50, 99, 99.9], overwrite_input=True)
    return float(p50), float(p99), float(p999)


def _clean(value):
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        return None if math.isnan(value) else float(value)
    return value


MIB = 1048576.0


def record_columns(end: RunEnd, account: BatchAccount, idx: np.ndarray | None = None) -> dict:
    """The per-record table's computed columns (acked, ack_ms, error codes, offset, last_offset, visible_ms,
    copies) of every record, or of the records `idx` (workload indexes, ascending), each record taking its
    batch's fate (the records never drained: pending, absent)."""
    w = end.workload
    logs = account.logs
    if idx is None:
        rb = end.batches.of_records(w.records)
        position = np.arange(w.records, dtype=np.int64)
    else:
        rb = _batches_holding(account, idx)
        position = idx.copy()
    none = rb < 0  # records no batch took: pending, absent
    rec_state = _per_record(account.state, rb, none, PENDING)
    # (the batches' errors and acknowledgement times are made as columns only for a table that has rows)
    errors = account.error if len(rb) else np.empty(0, dtype=np.int16)
    error_codes = np.where(rec_state == FAILED, _per_record(errors, rb, none, NONE), -1).astype(np.int8)
    del errors
    acked = rec_state == ACKED
    rec_presence = _per_record(logs.presence, rb, none, 0)  # (int16, the copies column's type)
    # (in place where a fresh array allows: each temporary of this size costs page faults as well as time)
    position -= _per_record(account.lo, rb, none, 0)  # the record's place in its batch
    # (the copies' base offsets, 16 bytes a batch, are made only for a table that has rows)
    first_base, last_base = (logs.first_base, logs.last_base) if len(rb) else (np.empty(0, np.int64),) * 2
    offset = _per_record(first_base, rb, none, -1)
    offset += position
    offset[rec_presence == 0] = -1
    last_offset = _per_record(last_base, rb, none, -1)
    last_offset += position
    last_offset[rec_presence == 0] = -1
    del position  # (each per-record temporary goes once used: the peak is their sum)
    rec_ack = _per_record(account.ack_ms if len(rb) else np.empty(0), rb, none, np.nan)
    rec_ack[rec_state != ACKED] = np.nan  # NaN where not acknowledged
    del rec_state
    # (and their visible times: a float64 a batch, 527 MB at the end of the 60-second production case, made only
    # for a table that has rows)
    rec_visible = _per_record(account.visible_ms if len(rb) else np.empty(0), rb, none, np.nan)
    return {"acked": acked, "ack_ms": rec_ack, "error": error_codes, "offset": offset, "last_offset": last_offset,
            "visible_ms": rec_visible, "copies": rec_presence}


def _per_record(column: np.ndarray, rb: np.ndarray, none: np.ndarray, default) -> np.ndarray:
    """Each record's batch's value of a per-batch `column` (`rb`: the records' batches), `default` for the records
    no batch took (`none`); a new array."""
    out = column[rb] if len(column) else np.empty(len(rb), dtype=column.dtype)
    out[none] = default
    return out


def _batches_holding(account: BatchAccount, idx: np.ndarray) -> np.ndarray:
    """The batch (account row) holding each record of `idx`; -1 for a record no batch took."""
    nb = len(account.count)
    rb = np.full(len(idx), -1, dtype=np.int64)
    if nb and len(idx):
        order = np.argsort(account.lo, kind="stable")
        starts = account.lo[order]
        at = np.searchsorted(starts, idx, side="right") - 1
        candidate = order[np.maximum(at, 0)]
        inside = (at >= 0) & (idx < account.lo[candidate] + account.count[candidate])
        rb[inside] = candidate[inside]
    return rb


def _clipped(ranges: list, lo: int, hi: int) -> list:
    """The parts of offset ranges [a, b) that lie within [lo, hi)."""
    return [(max(a, lo), min(b, hi)) for a, b in ranges if min(b, hi) > max(a, lo)]


def _covered(ranges: list) -> int:
    """Distinct offsets the ranges cover (they may overlap)."""
    total, reach = 0, None
    for a, b in sorted(ranges):
        if reach is not None and a < reach:
            a = reach
        if b > a:
            total += b - a
        reach = b if reach is None else max(reach, b)
    return total


def _divergence(end: RunEnd, part) -> tuple[int, int]:
    """(committed, uncommitted) divergence of a partition's replicas at the end of the run.

    committed: distinct offsets below both their HWs on which some two replicas disagree (the committed
    prefixes, as ``committed_prefixes_agree``); uncommitted: per replica, the offsets from that committed
    prefix up to the smaller LEO where its log still differs from the last leader's (a tail it has not
    truncated yet), summed over replicas.
    """
    reps = [end.replicas[part.index][b] for b in part.replicas]
    if not any(rep.log.rows for rep in reps):
        return 0, 0  # no entries: nothing to differ on (diverging_ranges of an empty log is empty)
    committed, uncommitted = [], 0
    for x in range(len(reps)):
        for y in range(x + 1, len(reps)):
            a, b = reps[x], reps[y]
            prefix = min(a.high_watermark, b.high_watermark)
            with_leader = part.last_leader in (a.broker, b.broker)
            upto = min(a.log.log_end_offset, b.log.log_end_offset) if with_leader else prefix
            ranges = log_diverging_ranges(a.log, b.log, upto)
            committed += _clipped(ranges, 0, prefix)
            if with_leader:
                uncommitted += sum(hi - lo for lo, hi in _clipped(ranges, prefix, upto))
    return _covered(committed), uncommitted


@collector_paused()  # a row per partition and per-record columns (results.records: all): all kept
def build_result(end: RunEnd) -> Result:
    w, batches = end.workload, end.batches
    nb = len(batches)
    account = BatchAccount.of(end)  # loss, duplicates, order: per batch (accounting)

    part_rows = []
    for part in end.partitions:
        leader = end.replicas[part.index][part.last_leader]
        part_rows.append({
            "topic": part.topic, "partition": part.number, "leader": part.leader,
            "last_leader": part.last_leader, "leader_epoch": part.leader_epoch,
            "replicas": ",".join(map(str, part.replicas)), "isr": ",".join(map(str, part.isr)),
            "log_end_offset": leader.log.log_end_offset,
            "high_watermark": leader.high_watermark, "unavailable_ms": part.unavailable_ms,
        })
        part_rows[-1]["replica_divergence"], part_rows[-1]["replica_uncommitted_divergence"] = _divergence(end, part)

    P = len(end.partitions)
    for name, mask in (("acked_records_lost", account.acked_lost), ("committed_records_lost", account.committed_lost),
                       ("records_duplicated", account.duplicated)):
        for row, c in zip(part_rows, account.per_partition(mask, P).tolist()):
            row[name] = c

    mode = end.settings.results_records  # results.records: the per-record table kept, and exact percentiles
    if mode == "all":
        table = record_columns(end, account)
        latency = exact_latencies(end, table)
    else:
        latency = streamed_latencies(end, account)
        idx = sample_indices(w.records) if mode == "sample" else np.empty(0, dtype=np.int64)
        table = record_columns(end, account, idx)
    produce_p50, produce_p99, produce_p999, produce_mean = latency["produce"]
    e2e_p50, e2e_p99, e2e_p999 = latency["e2e"]
    counts = w.per_partition()
    skews = []
    for t in end.settings.topics:
        first = end.topic_first[t.name]
        per = counts[first:first + t.partitions]
        if per.sum():
            skews.append(float(per.max() / per.mean()))
    for row, c in zip(part_rows, counts.tolist()):
        row["records"] = c
    # (the application's records not answered yet: sent, or still in the accumulator)
    backlog = account.per_partition(account.waiting, P) + undrained_per_partition(counts, account, P)
    for row, c in zip(part_rows, backlog.tolist()):
        row["backlog"] = c
    for row, part in zip(part_rows, end.partitions):  # Kafka's UnderMinIsrPartitionCount, per partition over time
        row["under_min_isr_ms"] = float(end.operations["under_min_isr_ms"][part.index])
    group_rows = [group_row(end, g, account, latency["groups"][g.name]) for g in end.groups]
    acked = account.acked
    records_acked = account.records(acked)

    s, c = end.settings, end.counters
    summary = {
        "scenario": s.name,
        "seed": s.seed,
        "replication": s.replication,
        "duration_ms": s.duration_ms,
        "records_sent": int(w.records),
        "records_acked": records_acked,
        "records_failed": account.records(account.failed),
        "records_acked_per_s": float(records_acked) / (s.duration_ms / 1000.0),
        "acked_mib_per_s": float(np.dot(account.per_producer(acked, len(s.producers)),
                                        [p.record_size_bytes for p in s.producers])) / 2**20 / (s.duration_ms / 1000.0)
        if len(s.producers) else 0.0,
        "records_pending": int(backlog.sum()),
        "records_committed": account.records(account.committed),
        "acked_records_lost": account.records(account.acked_lost),
        "committed_records_lost": account.records(account.committed_lost),
        "records_duplicated": account.records(account.duplicated),
        "records_out_of_order": account.out_of_order(),
        "not_enough_replicas_errors": c.not_enough_replicas_errors,
        "produce_latency_ms_p50": produce_p50,
        "produce_latency_ms_p99": produce_p99,
        "produce_latency_ms_mean": produce_mean,
        "produce_latency_ms_p999": produce_p999,
        "e2e_latency_ms_p50": e2e_p50,
        "e2e_latency_ms_p99": e2e_p99,
        "e2e_latency_ms_p999": e2e_p999,
        "isr_shrinks": c.isr_shrinks,
        "isr_expands": c.isr_expands,
        "leader_elections": c.leader_elections,
        "unclean_leader_elections": c.unclean_leader_elections,
        "unavailable_ms": float(sum(part.unavailable_ms for part in end.partitions)),
        "unavailable_wall_ms": float(end.unavailable_wall_ms),
        "replica_divergence": int(sum(row["replica_divergence"] for row in part_rows)),
        "replica_uncommitted_divergence": int(sum(row["replica_uncommitted_divergence"] for row in part_rows)),
        "truncated_offsets": c.truncated_offsets,
        "produce_requests": c.produce_requests,
        "fetch_requests": c.fetch_requests,
        "batches": int(nb),
        "consumer_fetch_requests": c.consumer_fetch_requests,
        "records_per_batch_mean": account.records(None) / nb if nb else None,
        "batches_per_request_mean": c.produce_batches / c.produce_requests if c.produce_requests else None,
        "partitions_per_fetch_mean": c.fetch_partitions / c.fetch_requests if c.fetch_requests else None,
        "request_handler_busy_max": _busiest(end.threads["request_handler"], s.duration_ms),
        "network_thread_busy_max": _busiest(end.threads["network"], s.duration_ms),
        "replica_fetcher_busy_max": end.threads["replica_fetcher"] / s.duration_ms,
        "backlog_records": int(backlog.sum()),
        "producer_buffer_wait_ms": float(c.producer_buffer_wait_ms),
        "buffer_exhausted_records": c.buffer_exhausted_records,
        **machine_summary(end),
    }
    for name, problems in end.violations.items():
        summary[f"{name}_violations"] = len(problems)
    summary["partition_skew"] = max(skews) if skews else None
    summary["consumed_lost"] = sum(r["consumed_lost"] for r in group_rows)
    summary["consumed_duplicates"] = sum(r["consumed_duplicates"] for r in group_rows)
    summary.update(control_summary(end))
    summary.update(operation_summary(end.operations, latency["during"]))
    caught = end.operations["catch_up_ms"]
    summary["broker_catch_up_ms_max"] = float(max(caught)) if caught else None
    summary["producer_metadata_refreshes"] = c.producer_metadata_refreshes
    summary["producer_leader_hints"] = c.producer_leader_hints
    summary["consumer_metadata_refreshes"] = c.consumer_metadata_refreshes
    summary["consumer_leader_hints"] = c.consumer_leader_hints
    summary.update(zone_summary(end, latency["consume"]))
    assert tuple(summary) == SUMMARY_KEYS, "the summary must be the one measures.SUMMARY declares"
    for r in group_rows:
        for m in GROUP_SUMMARY:
            summary[f"{r['group']}.{m.name}"] = r[m.name]
    summary = {k: _clean(v) for k, v in summary.items()}

    topics = [t.name for t in end.settings.topics]
    topic_of = np.array([topics.index(part.topic) for part in end.partitions], dtype=np.int32)
    number_of = np.array([part.number for part in end.partitions], dtype=np.int32)
    kept = slice(None) if mode == "all" else idx
    key_codes, key_names = _key_categories(w.key[kept] if w.key is not None else np.empty(0, dtype=np.int32))
    partition = w.partition_at(kept)
    records = pd.DataFrame({
        "topic": pd.Categorical.from_codes(topic_of[partition], categories=topics),
        "partition": number_of[partition],
        "key": pd.Categorical.from_codes(key_codes, categories=key_names),
        "producer": w.producer_at(kept),
        "send_ms": w.send_ms[kept],
        **{name: table[name] for name in ("acked", "ack_ms")},
        "error": pd.Categorical.from_codes(table["error"], categories=list(ERRORS)),
        **{name: table[name] for name in ("offset", "last_offset", "visible_ms", "copies")},
    }, copy=False)  # fresh arrays: no need to copy them again
    del table
    events = pd.DataFrame(events_rows(end), columns=list(TABLES["events"]))
    timeline = pd.DataFrame(end.timeline, columns=list(TABLES["timeline"]))
    partitions = pd.DataFrame(part_rows)
    groups = pd.DataFrame(group_rows, columns=list(TABLES["groups"]))
    return Result(summary, records, events, timeline, partitions, groups, end.scenario, end.zones.table())


def machine_summary(end: RunEnd) -> dict:
    """The broker machines: cores, GC pauses, disks and page caches (``broker.cpu``, ``storage.disk``)."""
    s, cpu, caches = end.settings, end.cpu, end.caches
    duration = s.duration_ms
    for cache in caches:
        cache.advance(end.end_ms)
    cores = s.broker_machine.cores
    read = sum(c.read_bytes for c in caches)
    return {
        "broker_cpu_utilization_max": max(cpu.busy_ms) / (cores * duration) if cores and caches else None,
        "gc_pause_ms_per_s": sum(cpu.pause_ms) / len(caches) / (duration / 1000.0) if caches else 0.0,
        "disk_write_utilization_max": max(c.writeback_ms for c in caches) / duration if caches else 0.0,
        "disk_read_utilization_max": max(c.read_ms for c in caches) / duration if caches else 0.0,
        "writeback_stall_ms": float(sum(c.stall_ms for c in caches)),
        "dirty_mib_max": max(c.dirty_max for c in caches) / MIB if caches else 0.0,
        "page_cache_hit_ratio": 1.0 - sum(c.read_uncached_bytes for c in caches) / read if read else None,
    }


def _busiest(load: tuple, duration: float) -> float:
    busy, threads = load
    return max(busy) / (threads * duration) if busy else 0.0


def events_rows(end: RunEnd) -> list:
    """The run's events, then one per safety-property violation found at the end."""
    return end.events + [(end.end_ms, INVARIANT_VIOLATION, "", -1, -1, f"{name}: {problem}")
                         for name, problems in end.violations.items() for problem in problems]


def group_row(end: RunEnd, g, account: BatchAccount, latency: tuple) -> dict:
    """A group's delivery (``accounting.group_delivery``: lost = in the final log below the group's committed
    offset and above where it started, never processed, and not in a poll a live member is still working on),
    latency (send -> first processed: p50, p99, p999) and lag."""
    return {
        "group": g.name, "topic": g.config.topic, "members": len(g.members), "commit": g.config.commit,
        **group_delivery(end, g, account),
        "consume_e2e_latency_ms_p50": latency[0],
        "consume_e2e_latency_ms_p99": latency[1],
        "consume_e2e_latency_ms_p999": latency[2],
        "rebalances": g.rebalances,
        **group_lag(end.end_ms, g, account),
    }


def _key_categories(key: np.ndarray):
    """The records' keys as categories: each record's code (-1: the null key) and the names of the keys present, in
    the order of their indexes."""
    if not len(key):
        return np.full(0, -1, dtype=np.int32), []
    top = int(key.max())
    if top < 0:
        return np.full(len(key), -1, dtype=np.int32), []
    if top < 4 * len(key) + 65536:  # the indexes present marked in an array (no sort): np.unique's, in O(n + top)
        shifted = key.astype(np.int64) + 1  # (the null key -1 at 0)
        present = np.zeros(top + 2, dtype=bool)
        present[shifted] = True
        code_of = np.cumsum(present, dtype=np.int64) - 1  # a present index's place among those present
        if present[0]:
            code_of -= 1  # the null key becomes -1 (missing)
        unique = np.flatnonzero(present[1:])
        return code_of[shifted].astype(np.int32), [f"key-{k}" for k in unique.tolist()]
    unique, inverse = np.unique(key, return_inverse=True)
    names = [f"key-{k}" for k in unique.tolist() if k >= 0]
    codes = inverse.astype(np.int32)
    if unique[0] < 0:
        codes = codes - 1  # the null key becomes -1 (missing)
    return codes, names
