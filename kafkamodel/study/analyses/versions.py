"""Study 6: Kafka through the versions. The same fault schedules on each release line, and where each anomaly goes."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ...config.versions import at_least, order
from .. import plots
from ..present import Table, interval, number
from ..tables import Aggregates
from .common import interval_method, fmt, num, value

# part -> (what the schedule is, the anomaly's measure, the fix: the KIP and the release that brought it)
SCHEDULES = {
    "follower_restart": ("a follower restarts, then the leader crashes (KIP-101 #1)", "committed_records_lost",
                         "KIP-101's leader epochs and KIP-106's clean elections", "0.11"),
    "double_power_loss": ("both replicas lose power (KIP-101 #2)", "replica_divergence", "KIP-101's leader epochs",
                          "0.11"),
    "jepsen_partition": ("the leader cut off from its followers (Jepsen 2013)", "acked_records_lost",
                         "KIP-106's clean elections by default", "0.11"),
    "last_replica_standing": ("the last ISR member loses power (KIP-966)", "committed_records_lost",
                              "KIP-966's Eligible Leader Replicas, on by default", "4.1"),
    "slow_follower": ("a follower 2000x slower for 10 s", None, "", ""),
    "leader_bounce": ("the leader bounces under load", "acked_records_lost", "KIP-679's acks=all by default", "3.0"),
}
MEASURES = ["acked_records_lost", "committed_records_lost", "replica_divergence", "records_duplicated",
            "unavailable_wall_ms", "produce_latency_ms_p99"]
LABELS = {"acked_records_lost": "acknowledged records lost", "committed_records_lost": "committed records lost",
          "replica_divergence": "offsets on which replicas diverge", "records_duplicated": "records written twice",
          "unavailable_wall_ms": "time unwritable (s)", "produce_latency_ms_p99": "produce p99 (s)"}
SECONDS = ("unavailable_wall_ms", "produce_latency_ms_p99")  # shown in seconds


def versions_of(agg: Aggregates) -> list[str]:
    """The release lines the study ran, oldest first."""
    return sorted({str(v) for v in agg.configs["version"]}, key=order)


def table(agg: Aggregates) -> pd.DataFrame:
    """One row per schedule and version: each measure's mean over seeds and its 95% interval."""
    rows = []
    parts = set(agg.configs["part"])
    for part, (what, *_rest) in SCHEDULES.items():
        if part not in parts:
            continue
        df = agg.wide(MEASURES, part)
        df["version"] = df["version"].astype(str)
        for version in sorted(df["version"], key=order):
            r = df[df["version"] == version].iloc[0]
            row = {"schedule": part, "what": what, "version": version, "seeds": int(r["runs"])}
            for m in MEASURES:
                scale = 1000.0 if m in SECONDS else 1.0
                row[m] = r[m] / scale
                row[f"{m}_lo"], row[f"{m}_hi"] = r[f"{m}_lo"] / scale, r[f"{m}_hi"] / scale
            rows.append(row)
    return pd.DataFrame(rows)


def gone_from(t: pd.DataFrame, part: str, measure: str) -> str | None:
    """The first version from which the anomaly is gone for good (zero there and in every later version ran),
    when some earlier version had it; None if it never appears, or never goes."""
    rows = t[t["schedule"] == part].sort_values("version", key=lambda s: s.map(order))
    values = list(zip(rows["version"], rows[measure]))
    for i, (version, _) in enumerate(values):
        if all(v == 0 for _, v in values[i:]) and any(v > 0 for _, v in values[:i]):
            return version
    return None


def disappearances(t: pd.DataFrame) -> dict:
    """part -> (version it is gone from, the fix named if that version is where the fix arrived, else '')."""
    out = {}
    for part, (_what, measure, fix, since) in SCHEDULES.items():
        if measure is None or part not in set(t["schedule"]):
            continue
        ran = sorted(set(t.loc[t["schedule"] == part, "version"]), key=order)  # the versions this schedule ran
        gone = gone_from(t, part, measure)
        if gone is None:
            out[part] = (None, "")
            continue
        before = ran[ran.index(gone) - 1]
        arrived = at_least(since, before) and since != before and at_least(gone, since)  # between the two runs
        out[part] = (gone, f"{fix}, {since}" if arrived else "")
    return out


def losses(agg: Aggregates):
    """Each schedule's anomaly across the versions (a cell per version: its mean; red where it is there), boxed from
    the version it is gone from, with the KIP that made it go."""
    t = table(agg)
    ran = versions_of(agg)
    gone = disappearances(t)
    parts = [p for p in SCHEDULES if p in set(t["schedule"])]
    fig, axes = plots.figure(1, 1, width=10.4, height=3.6)
    ax = axes[0]
    grid = np.full((len(parts), len(ran)), np.nan)
    for i, part in enumerate(parts):
        for j, version in enumerate(ran):
            grid[i, j] = value(t, _anomaly(part), schedule=part, version=version)
    ax.imshow(np.where(np.isnan(grid), np.nan, np.where(grid > 0, 1.0, 0.0)), cmap="RdYlGn_r", vmin=-0.6, vmax=1.6,
              aspect="auto")  # red: the anomaly is there; green: it is not; blank: not run
    for i, part in enumerate(parts):
        mark, kip = gone.get(part, (None, ""))
        for j, version in enumerate(ran):
            v = grid[i, j]
            text = "–" if math.isnan(v) else number(v, 3)
            if version == mark:
                ax.add_patch(_box(j, i))
                text += "  (" + (kip.split("'")[0] if kip else "gone") + ")"
            ax.text(j, i, text, ha="center", va="center", fontsize=8)
    ax.set_xticks(range(len(ran)), ran)
    ax.set_yticks(range(len(parts)), [f"{p}: {LABELS[_anomaly(p)]}" for p in parts], fontsize=8)
    plots.finish(ax, "each schedule's anomaly per version (boxed: gone from here on, and the KIP that did it)",
                 "kafka.version", "", legend=False)
    ax.grid(False)
    return fig


def costs(agg: Aggregates):
    """What each version costs on each schedule: time unwritable (mostly its session timeout) and produce p99."""
    t = table(agg)
    ran = versions_of(agg)
    parts = [p for p in SCHEDULES if p in set(t["schedule"])]
    fig, axes = plots.figure(2, 1, width=5.6, height=3.6)
    x = np.arange(len(ran))
    for ax, m, title in ((axes[0], "unavailable_wall_ms", "time unwritable"), (axes[1], "produce_latency_ms_p99", "produce p99")):
        for i, part in enumerate(parts):
            rows = t[t["schedule"] == part].set_index("version").reindex(ran)
            ax.plot(x, rows[m], marker="o", color=plots.CYCLE[i % len(plots.CYCLE)], label=part)
        ax.set_xticks(x, ran)
        plots.finish(ax, f"{title} per version", "kafka.version", "seconds", legend=ax is axes[0])
        ax.set_ylim(bottom=0)
    return fig


def _anomaly(part: str) -> str:
    """The measure a schedule's anomaly shows in (acknowledged records lost where it has none of its own)."""
    return SCHEDULES[part][1] or "acked_records_lost"


def _box(j: int, i: int):
    from matplotlib.patches import Rectangle

    return Rectangle((j - 0.48, i - 0.45), 0.96, 0.9, fill=False, edgecolor="black", linewidth=2)


def display_table(agg: Aggregates) -> Table:
    t = table(agg)
    shown = t[["schedule", "version", "seeds"]].copy()
    for m in MEASURES:  # the mean, and its interval beside it in brackets when there is one
        shown[LABELS[m]] = [number(v) + (f" ({interval(lo, hi)})" if " – " in interval(lo, hi) else "")
                            for v, lo, hi in zip(t[m], t[f"{m}_lo"], t[f"{m}_hi"])]
    gone = disappearances(t)
    notes = [f"{p}: gone from {v}" + (f", with {kip}" if kip else "") for p, (v, kip) in gone.items() if v]
    return Table(shown, [f"Means over seeds, their 95% interval in brackets. {interval_method(agg)}",
                         "Where each anomaly is gone for good: " + "; ".join(notes) + "." if notes else ""])


def headline(agg: Aggregates) -> tuple[dict, str]:
    t = table(agg)
    ran = versions_of(agg)
    numbers: dict = {"versions": ", ".join(ran)}
    for part in SCHEDULES:
        for version in ran:
            stem = f"{part}_{version.replace('.', '_')}"
            for m, short in (("acked_records_lost", "acked_lost"), ("committed_records_lost", "committed_lost"),
                             ("replica_divergence", "divergence"), ("records_duplicated", "duplicated"),
                             ("unavailable_wall_ms", "unavailable_s"), ("produce_latency_ms_p99", "p99_s")):
                numbers[f"{stem}_{short}"] = num(value(t, m, schedule=part, version=version), 2 if m in SECONDS else 1)
    gone = disappearances(t)
    for part, (version, _kip) in gone.items():
        numbers[f"{part}_gone_from"] = version
    sentences = []
    for part, (version, kip) in gone.items():
        what, measure, _fix, _since = SCHEDULES[part]
        what = what[0].upper() + what[1:]
        worst = t[(t["schedule"] == part)][measure].max()
        label = LABELS[measure].replace("records", "record").replace("offsets", "offset") if worst == 1 else LABELS[measure]
        had = [v for v in ran if value(t, measure, schedule=part, version=v) > 0]
        if not had:
            sentences.append(f"{what}: no {LABELS[measure]} in any version run.")
        elif version is None:
            sentences.append(f"{what}: up to {fmt(num(worst, 0))} {label}, in {', '.join(had)}.")
        else:
            ran_here = sorted(set(t.loc[t["schedule"] == part, "version"]), key=order)
            before = ran_here[ran_here.index(version) - 1]
            u0, u1 = (value(t, "unavailable_wall_ms", schedule=part, version=v) for v in (before, version))
            price = f", at the price of {fmt(num(u1, 1))} s unwritable instead of {fmt(num(u0, 1))} s" if u1 > u0 + 1 else ""
            sentences.append(f"{what}: up to {fmt(num(worst, 0))} {label} in {', '.join(had)}, none from "
                             f"{version} on" + (f" ({kip})" if kip else "") + price + ".")
    bounce = [v for v in ran if value(t, "records_duplicated", schedule="leader_bounce", version=v) > 0]
    if bounce:
        sentences.append(f"The bounce writes records twice in {', '.join(bounce)} (retries without idempotence).")
    unavailable = [(v, value(t, "unavailable_wall_ms", schedule="leader_bounce", version=v)) for v in ran]
    if all(not math.isnan(u) for _, u in unavailable):
        sentences.append("The bounce leaves its partitions unwritable for "
                         + ", ".join(f"{fmt(num(u, 1))} s ({v})" for v, u in unavailable)
                         + ": the session timeout of each era.")
    return numbers, " ".join(sentences)
