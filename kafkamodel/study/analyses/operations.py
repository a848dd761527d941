"""Study 8: operations, the maintenance planner. A rolling restart by gate and shutdown, a reassignment by throttle,
a preferred-leader election onto a lagging replica: how long each takes and what it costs while it runs."""

from __future__ import annotations

import math

import pandas as pd

from .. import plots
from ..present import Table
from ..tables import Aggregates
from .common import choice, fmt, interval_method, mean_and_interval, num, part_settings, seconds, value

P99 = "produce_latency_ms_p99"
ROLLING = ["operation_ms", "under_min_isr_partition_ms", "offline_partition_ms", P99, "acked_records_lost",
           "not_enough_replicas_errors"]
REASSIGN = ["operation_ms", "reassignment_bytes", "under_replicated_partition_ms", P99]
PREFERRED = [P99, "produce_latency_ms_p50", "leader_elections"]
GATES = {"no_under_replicated": "no under-replicated partitions", "full_isr_5s": "full ISR for 5 s",
         "wait_0s": "no wait"}
SHUTDOWNS = {"controlled": "controlled shutdown", "uncontrolled": "controlled.shutdown.enable=false"}
LABELS = {"operation_ms": "duration (s)", "under_min_isr_partition_ms": "partition-s under min ISR",
          "offline_partition_ms": "partition-s offline", P99: "produce p99 (ms)", "acked_records_lost": "acked lost",
          "not_enough_replicas_errors": "NOT_ENOUGH_REPLICAS", "reassignment_bytes": "bytes moved",
          "under_replicated_partition_ms": "partition-s under-replicated", "produce_latency_ms_p50": "produce p50 (ms)",
          "leader_elections": "leader elections"}
SECONDS = ("operation_ms", "under_min_isr_partition_ms", "offline_partition_ms", "under_replicated_partition_ms")


def _scaled(df: pd.DataFrame, measures: list[str]) -> pd.DataFrame:
    df = df.copy()
    for m in measures:
        if m in SECONDS:
            for c in (m, f"{m}_lo", f"{m}_hi"):
                df[c] = df[c] / 1000.0
    return df


def rolling(agg: Aggregates) -> pd.DataFrame:
    """Per gate and shutdown: duration (s), partition-seconds under min ISR and offline, p99, losses, refusals."""
    return _scaled(agg.wide(ROLLING, "rolling_restart"), ROLLING)


def reassign(agg: Aggregates) -> pd.DataFrame:
    """Per throttle: duration (s), bytes moved, partition-seconds under-replicated, p99; `finished`: the move ended
    before the run did (else its duration is the rest of the run)."""
    df = _scaled(agg.wide(REASSIGN, "reassign"), REASSIGN)
    run_s = part_settings(agg, "reassign").duration_ms / 1000.0
    at_s = _reassign_at_ms(agg) / 1000.0
    df["finished"] = df["operation_ms"] < run_s - at_s - 1e-6
    df["throttle_bps"] = [_throttle(agg, t) for t in df["throttle"]]
    return df


def _reassign_at_ms(agg: Aggregates) -> float:
    ops = choice(agg, "throttle", "none").get("operations") or [{"at.ms": 0}]
    return float(ops[0]["at.ms"])


def _throttle(agg: Aggregates, name) -> float:
    ops = choice(agg, "throttle", name).get("operations") or [{}]
    t = ops[0].get("throttle")
    return math.inf if t is None else float(t)


def ingress_bps(agg: Aggregates) -> float:
    """Bytes/s into one partition of the reassign part: records/s per partition x a v2 record of record.size.bytes
    (at least 6 bytes of framing each) -- a lower bound, the batches' headers aside."""
    s = part_settings(agg, "reassign")
    p = s.producers[0]
    partitions = s.topics[0].partitions
    return p.rate_per_s / partitions * (p.record_size_bytes + 6)


def preferred(agg: Aggregates) -> pd.DataFrame:
    return agg.wide(PREFERRED, "preferred_leader")


def _table(df: pd.DataFrame, keys: list[str], measures: list[str], note: str) -> Table:
    shown = df[keys].copy()
    for m in measures:
        shown[LABELS[m]] = [mean_and_interval(v, lo, hi) for v, lo, hi in zip(df[m], df[f"{m}_lo"], df[f"{m}_hi"])]
    return Table(shown, [note])


def rolling_table(agg: Aggregates) -> Table:
    df = rolling(agg)
    return _table(df.sort_values(["gate", "shutdown"]), ["gate", "shutdown"], ROLLING,
                  f"Means over seeds, their interval in brackets. {interval_method(agg)}")


def reassign_table(agg: Aggregates) -> Table:
    df = reassign(agg).sort_values("throttle_bps")
    t = _table(df, ["throttle", "finished"], REASSIGN,
               f"Unfinished moves count to the run's end. Means over seeds. {interval_method(agg)}")
    return t


def preferred_table(agg: Aggregates) -> Table:
    return _table(preferred(agg), ["lag"], PREFERRED, f"Means over seeds. {interval_method(agg)}")


def rolling_figure(agg: Aggregates):
    """Duration and partition-seconds under min ISR per gate, controlled vs not."""
    df = rolling(agg)
    fig, axes = plots.figure(2, 1, width=5.6, height=3.4)
    gates = [g for g in GATES if g in set(df["gate"])]
    for ax, m in zip(axes, ("operation_ms", "under_min_isr_partition_ms")):
        plots.grouped_bars(ax, df, "gate", "shutdown", m, series_order=list(SHUTDOWNS), group_order=gates,
                           values=True)
        ax.set_xticks(range(len(gates)), [GATES[g] for g in gates], fontsize=8)
        ax.set_ylim(0, max(ax.get_ylim()[1], 1e-3) * 1.15)
        plots.finish(ax, f"rolling restart: {LABELS[m]}", "gate before the next broker", LABELS[m])
    return fig


def reassign_figure(agg: Aggregates):
    """Duration and p99 per throttle."""
    df = reassign(agg).sort_values("throttle_bps").assign(series="reassign")
    order = list(df["throttle"])
    fig, axes = plots.figure(2, 1, width=5.6, height=3.4)
    for ax, m in zip(axes, ("operation_ms", P99)):
        plots.grouped_bars(ax, df, "throttle", "series", m, group_order=order, values=True)
        ax.set_xticks(range(len(order)), [("unthrottled" if t == "none" else f"{fmt(float(t))} B/s") for t in order],
                      fontsize=8)
        ax.set_ylim(0, max(ax.get_ylim()[1], 1e-3) * 1.15)
        plots.finish(ax, f"reassignment: {LABELS[m]}", "--throttle", LABELS[m], legend=False)
    return fig


def headline(agg: Aggregates) -> tuple[dict, str]:
    r, m, p = rolling(agg), reassign(agg), preferred(agg)
    numbers = {}
    for g in GATES:
        for s in SHUTDOWNS:
            numbers[f"roll_{g}_{s}_s"] = num(value(r, "operation_ms", gate=g, shutdown=s), 1)
            numbers[f"roll_{g}_{s}_under_min_isr_s"] = num(value(r, "under_min_isr_partition_ms", gate=g, shutdown=s), 2)
    for t in m["throttle"]:
        numbers[f"reassign_{t}_s"] = num(value(m, "operation_ms", throttle=t), 1)
        numbers[f"reassign_{t}_finished"] = bool(value(m, "finished", throttle=t))
    for lag in p["lag"]:
        numbers[f"preferred_lag_{lag}_p99_ms"] = num(value(p, P99, lag=lag), 1)
    return numbers, answers(agg).splitlines()[0].lstrip("- ")


def answers(agg: Aggregates) -> str:
    """One line per question, each number read from the aggregates."""
    r, m, p = rolling(agg), reassign(agg), preferred(agg)
    safe = value(r, "operation_ms", gate="no_under_replicated", shutdown="controlled")
    held = value(r, "operation_ms", gate="full_isr_5s", shutdown="controlled")
    rushed_exposure = value(r, "under_min_isr_partition_ms", gate="wait_0s", shutdown="controlled")
    safe_exposure = value(r, "under_min_isr_partition_ms", gate="no_under_replicated", shutdown="controlled")
    p99_c = value(r, P99, gate="no_under_replicated", shutdown="controlled")
    p99_u = value(r, P99, gate="no_under_replicated", shutdown="uncontrolled")
    brokers = part_settings(agg, "rolling_restart").brokers
    lines = [f"- A rolling restart of {brokers} brokers gated on no under-replicated partitions takes {fmt(safe)} s with "
             f"{fmt(safe_exposure)} partition-s under min ISR; with no wait it is as fast but leaves "
             f"{fmt(rushed_exposure)} partition-s under min ISR; full ISR for 5 s takes {fmt(held)} s."]
    lines.append(f"- Controlled shutdown vs not (same gate): produce p99 {fmt(p99_c)} ms vs {fmt(p99_u)} ms, "
                 f"{fmt(value(r, 'offline_partition_ms', gate='no_under_replicated', shutdown='uncontrolled'))} "
                 f"partition-s offline without it.")
    ingress = ingress_bps(agg)
    done = m[m["finished"]].sort_values("throttle_bps")
    never = m[~m["finished"]].sort_values("throttle_bps")
    moves = "; ".join(f"{'unthrottled' if t == 'none' else fmt(float(t)) + ' B/s'}: {fmt(s)} s"
                      for t, s in zip(done["throttle"], done["operation_ms"]))
    line = f"- Reassigning one partition: {moves}"
    if len(never):
        slowest = never.iloc[0]
        line += (f"; at {fmt(float(slowest['throttle']))} B/s, below the partition's ingress (at least "
                 f"{fmt(ingress)} B/s), the new replica never catches up and the move never finishes")
    low, high = fmt(m[P99].min()), fmt(m[P99].max())
    lines.append(line + (f" (produce p99 {low} ms whatever the throttle)." if low == high else
                         f" (produce p99 {low}–{high} ms)."))
    lines.append(f"- A preferred-leader election onto a replica whose fetches are 20x slower takes produce p99 from "
                 f"{fmt(value(p, P99, lag='1'))} ms to {fmt(value(p, P99, lag='20'))} ms.")
    return "\n".join(lines)


def setup_text(agg: Aggregates) -> str:
    s = part_settings(agg, "rolling_restart")
    return (f"{s.brokers} brokers, RF 3, min.insync.replicas 2, acks=all at {fmt(s.producers[0].rate_per_s)} records/s; "
            f"each broker down {seconds(3000)} in the roll.")
