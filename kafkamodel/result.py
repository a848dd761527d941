"""What a run produces: summary, records, events, timeline, partitions.

Loss and duplication are judged against the final log of each partition's
last elected leader, by construction:
``acked_records_lost`` = the producer got success, the record is absent;
``committed_records_lost`` = some leader's HW covered it, it is absent;
``records_duplicated`` = records present more than once.
"""

from __future__ import annotations

import json
import math
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from .invariants import check_all, diverging_offsets
from .producer import ACKED, ERRORS, FAILED, PENDING, INFLIGHT

TABLES = ("records", "events", "timeline", "partitions", "groups")


@dataclass
class Result:
    summary: dict  # scalars, the contract's keys and more
    records: pd.DataFrame  # one row per record a producer attempted
    events: pd.DataFrame  # ISR changes, elections, faults, truncations, violations
    timeline: pd.DataFrame  # per partition: leader, LEO, HW, ISR size over time
    partitions: pd.DataFrame  # per partition at the end: losses, divergence, availability
    groups: pd.DataFrame  # per consumer group: processed, lost, duplicated, latency, rebalances
    scenario: dict = field(default_factory=dict)  # the resolved scenario that ran

    def tables(self) -> dict[str, pd.DataFrame]:
        return {name: getattr(self, name) for name in TABLES}

    def write(self, out: "str | Path", columns: dict | None = None) -> Path:
        """Write the run folder atomically: Parquet tables, summary.json, scenario.yaml.

        `columns` (e.g. run_id, swept parameters) are added to every table row
        and to the summary. An existing folder is replaced only once the new
        one is complete.
        """
        out = Path(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.parent / f".{out.name}.tmp-{uuid.uuid4().hex[:8]}"
        tmp.mkdir()
        try:
            extra = dict(columns or {})
            extra.setdefault("seed", self.summary["seed"])
            for name, table in self.tables().items():
                table = table.copy(deep=False)
                for key, value in extra.items():
                    table[key] = value
                table.to_parquet(tmp / f"{name}.parquet", index=False)
            summary = {**self.summary, **extra}
            (tmp / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
            (tmp / "scenario.yaml").write_text(yaml.safe_dump(self.scenario, sort_keys=False))
            if out.exists():
                trash = out.parent / f".{out.name}.old-{uuid.uuid4().hex[:8]}"
                out.rename(trash)
                tmp.rename(out)
                shutil.rmtree(trash)
            else:
                tmp.rename(out)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return out


def _percentile(values: np.ndarray, q: float):
    return float(np.percentile(values, q)) if len(values) else None


def _clean(value):
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        return None if math.isnan(value) else float(value)
    return value


def build_result(sim) -> Result:
    w = sim.workload
    nb = w.batches
    state = np.asarray(sim.b_state, dtype=np.int8) if nb else np.empty(0, np.int8)
    ack_ms = np.asarray(sim.b_ack_ms, dtype=np.float64) if nb else np.empty(0)
    visible = np.asarray(sim.b_visible_ms, dtype=np.float64) if nb else np.empty(0)
    committed = np.asarray(sim.b_committed, dtype=bool) if nb else np.empty(0, bool)
    error = np.asarray(sim.b_error, dtype=np.int8) if nb else np.empty(0, np.int8)

    # the final log of each partition's last leader
    presence = np.zeros(nb, dtype=np.int64)
    first_base = np.full(nb, -1, dtype=np.int64)
    last_base = np.full(nb, -1, dtype=np.int64)
    part_rows = []
    divergence_total = 0
    for part in sim.partitions:
        final = sim.replicas[part.index][part.last_leader]
        log = final.retired + final.log  # what retention deleted was there, not lost
        ids = np.fromiter((e[3] for e in log), dtype=np.int64, count=len(log))
        bases = np.fromiter((e[0] for e in log), dtype=np.int64, count=len(log))
        data = ids >= 0
        ids, bases = ids[data], bases[data]
        np.add.at(presence, ids, 1)
        first_base[ids[::-1]] = bases[::-1]  # written in reverse: the first copy's base is written last
        last_base[ids] = bases
        diverged = 0
        for b in part.replicas:
            if b != part.last_leader:
                rep = sim.replicas[part.index][b]
                diverged += diverging_offsets(rep.log, final.log, min(rep.log_end_offset, final.log_end_offset))
        divergence_total += diverged
        leader_rep = final
        part_rows.append({
            "topic": part.topic, "partition": part.number, "leader": part.leader,
            "last_leader": part.last_leader, "leader_epoch": part.leader_epoch,
            "isr": ",".join(map(str, part.isr)), "log_end_offset": leader_rep.log_end_offset,
            "high_watermark": leader_rep.high_watermark, "unavailable_ms": part.unavailable_ms,
            "replica_divergence": diverged,
        })

    rb = w.batch
    rec_state = state[rb]
    rec_presence = presence[rb]
    acked = rec_state == ACKED
    rec_committed = committed[rb]
    position = np.arange(w.records, dtype=np.int64) - w.batch_lo[rb]
    offset = np.where(rec_presence > 0, first_base[rb] + position, -1)
    last_offset = np.where(rec_presence > 0, last_base[rb] + position, -1)
    rec_ack = np.where(acked, ack_ms[rb], np.nan)
    rec_visible = visible[rb]

    acked_lost = acked & (rec_presence == 0)
    committed_lost = rec_committed & (rec_presence == 0)
    duplicated = rec_presence > 1
    # per-partition loss counts
    P = len(sim.partitions)
    for name, mask in (("acked_records_lost", acked_lost), ("committed_records_lost", committed_lost),
                       ("records_duplicated", duplicated)):
        counts = np.bincount(w.partition[mask], minlength=P)
        for row, c in zip(part_rows, counts.tolist()):
            row[name] = c

    produce_latency = (rec_ack - w.send_ms)[acked]
    e2e = (rec_visible - w.send_ms)[~np.isnan(rec_visible)]
    counts = np.bincount(w.partition, minlength=len(sim.partitions)) if w.records else np.zeros(len(sim.partitions), int)
    skews = []
    for t in sim.scenario["topics"]:
        first = sim.topic_first[t["name"]]
        per = counts[first:first + t["partitions"]]
        if per.sum():
            skews.append(float(per.max() / per.mean()))
    for row, c in zip(part_rows, counts.tolist()):
        row["records"] = c
    group_rows = [_group_row(sim, g, offset, rec_presence) for g in sim.groups]

    violations = check_all(sim)
    for name, problems in violations.items():
        for problem in problems:
            sim.event("invariant_violation", -1, -1, f"{name}: {problem}")

    scenario = sim.scenario
    summary = {
        "scenario": scenario["name"],
        "seed": scenario["seed"],
        "replication": scenario["replication"],
        "duration_ms": float(scenario["duration.ms"]),
        "records_sent": int(w.records),
        "records_acked": int(acked.sum()),
        "records_failed": int((rec_state == FAILED).sum()),
        "records_pending": int(((rec_state == PENDING) | (rec_state == INFLIGHT)).sum()),
        "records_committed": int(rec_committed.sum()),
        "acked_records_lost": int(acked_lost.sum()),
        "committed_records_lost": int(committed_lost.sum()),
        "records_duplicated": int(duplicated.sum()),
        "not_enough_replicas_errors": sim.stats["not_enough_replicas_errors"],
        "produce_latency_ms_p50": _percentile(produce_latency, 50),
        "produce_latency_ms_p99": _percentile(produce_latency, 99),
        "produce_latency_ms_mean": float(produce_latency.mean()) if len(produce_latency) else None,
        "e2e_latency_ms_p50": _percentile(e2e, 50),
        "e2e_latency_ms_p99": _percentile(e2e, 99),
        "isr_shrinks": sim.stats["isr_shrinks"],
        "isr_expands": sim.stats["isr_expands"],
        "leader_elections": sim.stats["leader_elections"],
        "unclean_leader_elections": sim.stats["unclean_leader_elections"],
        "unavailable_ms": float(sum(part.unavailable_ms for part in sim.partitions)),
        "replica_divergence": int(divergence_total),
        "truncated_offsets": sim.stats["truncated_offsets"],
        "produce_requests": sim.stats["produce_requests"],
        "fetch_requests": sim.stats["fetch_requests"],
        "batches": int(nb),
    }
    for name, problems in violations.items():
        summary[f"{name}_violations"] = len(problems)
    summary["partition_skew"] = max(skews) if skews else None
    summary["consumed_lost"] = sum(r["consumed_lost"] for r in group_rows)
    summary["consumed_duplicates"] = sum(r["consumed_duplicates"] for r in group_rows)
    for r in group_rows:
        for key in ("records_processed", "consumed_lost", "consumed_duplicates", "consume_e2e_latency_ms_p50",
                    "consume_e2e_latency_ms_p99", "rebalances"):
            summary[f"{r['group']}.{key}"] = r[key]
    summary = {k: _clean(v) for k, v in summary.items()}

    topics = [t["name"] for t in scenario["topics"]]
    topic_of = np.array([topics.index(part.topic) for part in sim.partitions], dtype=np.int32)
    number_of = np.array([part.number for part in sim.partitions], dtype=np.int32)
    key_codes, key_names = _key_categories(w.key)
    error_codes = np.where(rec_state == FAILED, error[rb], -1) if len(rb) else np.empty(0, np.int8)
    records = pd.DataFrame({
        "topic": pd.Categorical.from_codes(topic_of[w.partition] if len(rb) else np.empty(0, np.int32), categories=topics),
        "partition": number_of[w.partition] if len(rb) else np.empty(0, np.int32),
        "key": pd.Categorical.from_codes(key_codes, categories=key_names),
        "producer": w.producer,
        "send_ms": w.send_ms,
        "acked": acked,
        "ack_ms": rec_ack,
        "error": pd.Categorical.from_codes(error_codes.astype(np.int8), categories=list(ERRORS)),
        "offset": offset,
        "last_offset": last_offset,
        "visible_ms": rec_visible,
        "copies": rec_presence.astype(np.int16),
    })
    events = pd.DataFrame(sim.events, columns=["time_ms", "kind", "topic", "partition", "broker", "detail"])
    timeline = pd.DataFrame(sim.timeline, columns=["time_ms", "topic", "partition", "leader", "leader_epoch",
                                                  "log_end_offset", "high_watermark", "isr_size"])
    partitions = pd.DataFrame(part_rows)
    groups = pd.DataFrame(group_rows, columns=["group", "topic", "members", "commit", "records_processed", "consumed_lost",
                                               "consumed_duplicates", "consume_e2e_latency_ms_p50",
                                               "consume_e2e_latency_ms_p99", "rebalances"])
    return Result(summary, records, events, timeline, partitions, groups, scenario.to_dict())


def _group_row(sim, g, offset: np.ndarray, presence: np.ndarray) -> dict:
    """A group's delivery: lost = in the final log below the group's committed offset (and above where it
    started), never processed, and not in a poll a live member is still working on."""
    w = sim.workload
    reached = np.zeros(len(sim.partitions), dtype=np.int64)
    in_progress = np.zeros(w.records, dtype=bool)  # polls live members are still working on at the end
    for p in g.partitions:  # the group resumes from its committed offsets: below them, what was not processed never will be
        reached[p] = g.committed.get(p, 0)
    for m in g.members:
        if m.alive and m.processing is not None:
            for b, first, last, _ in m.processing[1]:
                start = int(w.batch_lo[b]) + first
                in_progress[start:start + last - first] = True
    origin = np.zeros(len(sim.partitions), dtype=np.int64)
    for p, start in g.origin.items():
        origin[p] = start
    in_scope = (presence > 0) & (offset >= origin[w.partition]) & (offset < reached[w.partition])
    lost = in_scope & (g.processed == 0) & ~in_progress
    latency = (g.first_processed_ms - w.send_ms)[~np.isnan(g.first_processed_ms)]
    return {
        "group": g.name, "topic": g.cfg["topic"], "members": len(g.members), "commit": g.cfg["commit"],
        "records_processed": int((g.processed > 0).sum()),
        "consumed_lost": int(lost.sum()),
        "consumed_duplicates": int((g.processed > 1).sum()),
        "consume_e2e_latency_ms_p50": _percentile(latency, 50),
        "consume_e2e_latency_ms_p99": _percentile(latency, 99),
        "rebalances": g.rebalances,
    }


def _key_categories(key: np.ndarray):
    if not len(key) or key.max() < 0:
        return np.full(len(key), -1, dtype=np.int32), []
    unique, inverse = np.unique(key, return_inverse=True)
    names = [f"key-{k}" for k in unique.tolist() if k >= 0]
    codes = inverse.astype(np.int32)
    if unique[0] < 0:
        codes = codes - 1  # the null key becomes -1 (missing)
    return codes, names
