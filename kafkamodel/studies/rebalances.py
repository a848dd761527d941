"""Study 4b: consumer rebalances. A rolling restart, a crash and a scale-out under eager rebalances,
cooperative-sticky (KIP-429), static membership (KIP-345) and the consumer group protocol (KIP-848).

Per group (``kafkamodel.sim.results.measures.GROUP_SUMMARY``): *paused* partition-time (no live member
consuming the partition after the first assignment), rebalances (KIP-848: target assignments), records
processed twice, and lag (records visible below the HW not yet processed).
"""

from __future__ import annotations

import pandas as pd

from ..kit import Aggregates, Table, plots
from .common import fmt, num, part_settings, seconds, value

PART = "events"
PROTOCOLS = ["eager", "cooperative", "static", "kip848"]
PROTOCOL_LABELS = {"eager": "eager (range)", "cooperative": "cooperative-sticky", "static": "static members (range)",
                   "kip848": "KIP-848 (uniform)"}
EVENTS = ["rolling_restart", "crash", "scale_out"]
EVENT_LABELS = {"rolling_restart": "rolling restart", "crash": "a consumer crash", "scale_out": "scale out by one"}
KEYS = ["paused_partition_ms", "rebalances", "consumed_duplicates", "lag_records_max"]


def _measure(agg: Aggregates, key: str) -> str:
    """The per-group summary measure `GROUP.key` (the study has one group)."""
    names = sorted(m for m in set(agg.stats["measure"]) if m.endswith(f".{key}"))
    return names[0] if names else key


def _events_per_schedule(agg: Aggregates) -> dict:
    """How many membership events each schedule holds (restarts, crashes, joins), read from its faults."""
    out = {}
    for event in EVENTS:
        faults = (agg.spec.get("params", {}).get("event", {}).get("choices", {}).get(event) or {}).get("faults") or []
        out[event] = max(len(faults), 1)
    return out


def table(agg: Aggregates) -> pd.DataFrame:
    """One row per protocol and event: paused partition-seconds, rebalances per event, processed twice, lag."""
    names = {k: _measure(agg, k) for k in KEYS}
    df = agg.wide(list(names.values()), PART)
    df = df.rename(columns={c: k + c[len(v):] for k, v in names.items() for c in df.columns if c.startswith(v)})
    per = _events_per_schedule(agg)
    df["paused_partition_s"] = df["paused_partition_ms"] / 1000.0
    df["rebalances_per_event"] = (df["rebalances"] - 1) / df["event"].map(per)
    return df


def answers_text(agg: Aggregates) -> str:
    """The study's answers, one line per question (the first lines of the report)."""
    df = table(agg)
    lines = []
    for event in EVENTS:
        parts = []
        for p in PROTOCOLS:
            paused = value(df, "paused_partition_s", protocol=p, event=event)
            per = value(df, "rebalances_per_event", protocol=p, event=event)
            twice = value(df, "consumed_duplicates", protocol=p, event=event)
            parts.append(f"{PROTOCOL_LABELS[p]} {fmt(paused)} partition-s, {fmt(per)} rebalances/event, "
                         f"{fmt(twice)} twice")
        lines.append(f"- **{EVENT_LABELS[event].capitalize()}**: " + "; ".join(parts) + ".")
    return "\n".join(lines)


def setup_text(agg: Aggregates) -> str:
    """Markdown: the group and the schedules, read from the part's settings."""
    s = part_settings(agg, PART)
    c, p = s.consumers[0], s.producers[0]
    partitions = next(x.partitions for x in s.topics if x.name == c.topic)
    restarts = (agg.spec.get("params", {}).get("event", {}).get("choices", {}).get("rolling_restart") or {}).get("faults") or []
    down = seconds(restarts[0]["duration.ms"]) if restarts else "n/a"
    return (f"Group `{c.group}`: {c.members} members reading {partitions} partitions fed {fmt(p.rate_per_s)} records/s, "
            f"{fmt(c.processing_ms)} ms per record, auto commit every {seconds(c.auto_commit_interval_ms)}, "
            f"`session.timeout.ms` {seconds(c.session_timeout_ms)}; runs of {seconds(s.duration_ms)}. The rolling "
            f"restart closes one member at a time ({len(restarts)} in all, one every 5 s), each down {down}; the "
            f"crash kills member 0 and restarts it; the scale-out adds a member. Eager and static use the range "
            f"assignor; static members carry `group.instance.id`; KIP-848 uses `group.protocol: consumer` with the "
            f"uniform assignor and heartbeats every {seconds(5000)}.")


def paused(agg: Aggregates):
    """Bars: paused partition-seconds per event, one bar per protocol (log scale: they span orders of magnitude)."""
    df = table(agg).assign(protocol_label=lambda d: d["protocol"].map(PROTOCOL_LABELS),
                           event_label=lambda d: d["event"].map(EVENT_LABELS))
    df["paused_partition_s_lo"] = df["paused_partition_ms_lo"] / 1000.0
    df["paused_partition_s_hi"] = df["paused_partition_ms_hi"] / 1000.0
    fig, (ax,) = plots.figure(width=7.0)
    plots.grouped_bars(ax, df, "event_label", "protocol_label", "paused_partition_s",
                       lo="paused_partition_s_lo", hi="paused_partition_s_hi")
    plots.finish(ax, "Time the group's partitions were not consumed", "", "partition-seconds (log)", logy=True)
    return fig


def table_view(agg: Aggregates) -> Table:
    df = table(agg)
    rows = []
    for event in EVENTS:
        for p in PROTOCOLS:
            rows.append({"event": EVENT_LABELS[event], "protocol": PROTOCOL_LABELS[p],
                         "paused (partition-s)": num(value(df, "paused_partition_s", protocol=p, event=event), 1),
                         "rebalances per event": num(value(df, "rebalances_per_event", protocol=p, event=event), 2),
                         "processed twice": num(value(df, "consumed_duplicates", protocol=p, event=event), 0),
                         "lag max (records)": num(value(df, "lag_records_max", protocol=p, event=event), 0)})
    return Table(pd.DataFrame(rows))


def headline(agg: Aggregates) -> tuple[dict, str]:
    df = table(agg)
    numbers = {}
    for event in EVENTS:
        for p in PROTOCOLS:
            numbers[f"{event}_{p}_paused_partition_s"] = num(value(df, "paused_partition_s", protocol=p, event=event), 1)
            numbers[f"{event}_{p}_rebalances_per_event"] = num(value(df, "rebalances_per_event", protocol=p, event=event), 2)
            numbers[f"{event}_{p}_processed_twice"] = num(value(df, "consumed_duplicates", protocol=p, event=event), 0)
    n = numbers
    finding = (f"A rolling restart of the group stops its partitions for {fmt(n['rolling_restart_eager_paused_partition_s'])} "
               f"partition-s under eager rebalances, {fmt(n['rolling_restart_cooperative_paused_partition_s'])} under "
               f"cooperative-sticky, {fmt(n['rolling_restart_static_paused_partition_s'])} with static members and "
               f"{fmt(n['rolling_restart_kip848_paused_partition_s'])} under KIP-848; a crash stops it for "
               f"{fmt(n['crash_eager_paused_partition_s'])} partition-s under eager (until the session expires) and "
               f"{fmt(n['crash_static_paused_partition_s'])} with static members.")
    return numbers, finding
