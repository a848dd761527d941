"""Study 6: Kafka through the versions. The same fault schedules on each release line, and where each anomaly goes."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..config.versions import DEFAULTS, at_least, order
from ..kit import Aggregates, Table, fit, number, plots
from .common import fmt, interval_method, mean_and_interval, num, scaled_means, value

# the defaults a fix changed (config/versions.py DEFAULTS): the release a fix came in is read from there
EPOCHS = (("broker", "truncation"), "leader_epoch")  # KIP-101
CLEAN = (("broker", "unclean.leader.election.enable"), False)  # KIP-106
ELR = (("broker", "eligible.leader.replicas.enable"), True)  # KIP-966
ACKS_ALL = (("producers", "acks"), "all")  # KIP-679


@dataclass(frozen=True)
class Schedule:
    what: str  # what the schedule does
    anomalies: tuple = ()  # the measures its anomaly shows in: the first is what the fix removes
    fix: str = ""  # the KIPs that removed it
    defaults: tuple = ()  # the defaults those KIPs changed
    kept: str = ""  # why an anomaly measure after the first stays in every version

    @property
    def since(self) -> str:
        """The release the fix arrived in: the latest of its defaults' changes."""
        return max((since(*d) for d in self.defaults), key=order) if self.defaults else ""


def since(key: tuple, value) -> str:
    """The first release whose default of `key` (section, name) is `value` (config/versions.py DEFAULTS)."""
    return next(v for v, default in DEFAULTS[key] if default == value)


SCHEDULES = {
    "follower_restart": Schedule("a follower restarts, then the leader crashes (KIP-101 #1)", ("committed_records_lost",),
                                 "KIP-101's leader epochs and KIP-106's clean elections", (EPOCHS, CLEAN)),
    # leader epochs end the divergence; the records neither replica had fsynced are lost on every release
    "double_power_loss": Schedule("both replicas lose power (KIP-101 #2)",
                                  ("replica_divergence", "committed_records_lost"), "KIP-101's leader epochs", (EPOCHS,),
                                  "leader epochs end the divergence, not the loss of unfsynced records"),
    "jepsen_partition": Schedule("the leader cut off from its followers (Jepsen 2013)", ("acked_records_lost",),
                                 "KIP-106's clean elections by default", (CLEAN,)),
    "last_replica_standing": Schedule("the last ISR member loses power (KIP-966)", ("committed_records_lost",),
                                      "KIP-966's Eligible Leader Replicas, on by default", (ELR,)),
    "slow_follower": Schedule("a follower 2000x slower for 10 s"),
    "leader_bounce": Schedule("the leader bounces under load", ("acked_records_lost",), "KIP-679's acks=all by default",
                              (ACKS_ALL,)),
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
    """One row per schedule and version: each measure's mean over seeds and its interval."""
    rows = []
    parts = set(agg.configs["part"])
    for part, schedule in SCHEDULES.items():
        if part not in parts:
            continue
        df = agg.wide(MEASURES, part)
        df["version"] = df["version"].astype(str)
        for version in sorted(df["version"], key=order):
            r = df[df["version"] == version].iloc[0]
            rows.append({"schedule": part, "what": schedule.what, "version": version, "seeds": int(r["runs"]),
                         **scaled_means(r, MEASURES, SECONDS)})
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
    """(part, measure) -> (version it is gone from, the fix named if that version is where the fix arrived, else '');
    a schedule's first anomaly is the one its fix removes, the others are shown as they are."""
    out = {}
    for part, schedule in SCHEDULES.items():
        if part not in set(t["schedule"]):
            continue
        ran = sorted(set(t.loc[t["schedule"] == part, "version"]), key=order)  # the versions this schedule ran
        for k, measure in enumerate(schedule.anomalies):
            gone = gone_from(t, part, measure)
            if gone is None:
                out[part, measure] = (None, "")
                continue
            before, fixed = ran[ran.index(gone) - 1], schedule.since
            arrived = k == 0 and at_least(fixed, before) and fixed != before and at_least(gone, fixed)
            out[part, measure] = (gone, f"{schedule.fix}, {fixed}" if arrived else "")
    return out


def rows(t: pd.DataFrame) -> list[tuple[str, str]]:
    """The heatmap's rows: (schedule, measure) for each anomaly of each schedule run (acknowledged records lost for a
    schedule with no anomaly of its own)."""
    return [(p, m) for p, s in SCHEDULES.items() if p in set(t["schedule"]) for m in (s.anomalies or ("acked_records_lost",))]


COLOURED = "red: above 0; green: 0"


def losses(agg: Aggregates):
    """Each schedule's anomaly measures across the versions (a cell per version: its mean over seeds; red above 0,
    green at 0), boxed from the version it is gone from, with the KIP that made it go."""
    t = table(agg)
    ran = versions_of(agg)
    gone = disappearances(t)
    shown = rows(t)
    fig, axes = plots.figure(1, 1, width=10.4, height=0.5 * len(shown) + 1.4)
    ax = axes[0]
    grid = np.full((len(shown), len(ran)), np.nan)
    for i, (part, measure) in enumerate(shown):
        for j, version in enumerate(ran):
            grid[i, j] = value(t, measure, schedule=part, version=version)
    ax.imshow(np.where(np.isnan(grid), np.nan, np.where(grid > 0, 1.0, 0.0)), cmap="RdYlGn_r", vmin=-0.6, vmax=1.6,
              aspect="auto")  # red: the measure is above 0; green: it is 0; blank: not run
    for i, key in enumerate(shown):
        mark, kip = gone.get(key, (None, ""))
        for j, version in enumerate(ran):
            v = grid[i, j]
            text = "–" if math.isnan(v) else number(v, 3)
            if version == mark:
                ax.add_patch(_box(j, i))
                text += "  (" + (kip.split("'")[0] if kip else "gone") + ")"
            ax.text(j, i, text, ha="center", va="center", fontsize=9)
    ax.set_xticks(range(len(ran)), ran)
    ax.set_yticks(range(len(shown)), [f"{p}: {LABELS[m]}" for p, m in shown], fontsize=9)
    plots.finish(ax, f"each schedule's anomaly per version, mean over seeds\n{COLOURED}; boxed: 0 from here on, "
                 "with the KIP that did it", "kafka.version", "", legend=False)
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


def _box(j: int, i: int):
    from matplotlib.patches import Rectangle

    return Rectangle((j - 0.48, i - 0.45), 0.96, 0.9, fill=False, edgecolor="black", linewidth=2)


def seeds_text(agg: Aggregates) -> str:
    """Markdown: how many seeds each schedule ran (the aggregates' own count)."""
    seeds = agg.configs.groupby("part")["runs"].min()
    counts = {}
    for part in SCHEDULES:
        if part in seeds:
            counts.setdefault(int(seeds[part]), []).append(part.replace("_", " "))
    said = "; ".join(f"{n} for {', '.join(parts)}" for n, parts in sorted(counts.items(), reverse=True))
    return (f"Every measure per schedule and version, means over seeds ({said}: the double power loss's divergence "
            f"depends on where the last fsync falls, the other schedules are nearly deterministic).")


def display_table(agg: Aggregates) -> Table:
    t = table(agg)
    shown = t[["schedule", "version", "seeds"]].copy()
    for m in MEASURES:  # the mean, and its interval beside it in brackets when there is one
        shown[LABELS[m]] = [mean_and_interval(v, lo, hi) for v, lo, hi in zip(t[m], t[f"{m}_lo"], t[f"{m}_hi"])]
    gone = disappearances(t)
    notes = [f"{p}'s {LABELS[m]}: gone from {v}" + (f", with {kip}" if kip else "") for (p, m), (v, kip) in gone.items() if v]
    kept = [f"{p}'s {LABELS[m]}" for (p, m), (v, _) in gone.items() if v is None and t.loc[t["schedule"] == p, m].max() > 0]
    return Table(shown, [f"Means over seeds, their interval in brackets. {interval_method(agg)}",
                         ("Where each anomaly is gone for good: " + "; ".join(notes) + "." if notes else "")
                         + (" In every version run: " + "; ".join(kept) + "." if kept else "")])


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
    for (part, measure), (version, _kip) in gone.items():  # a schedule's own anomaly: PART_gone_from
        first = measure == SCHEDULES[part].anomalies[0]
        numbers[f"{part}_gone_from" if first else f"{part}_{measure}_gone_from"] = version
    fixed = [f"{part.replace('_', ' ')}" + ("'s divergence" if measure == "replica_divergence" else "") + f" {version}"
             for (part, measure), (version, _) in gone.items()
             if version and measure == SCHEDULES[part].anomalies[0]]  # the KIPs: in the heatmap and the table
    kept = [(part, measure) for (part, measure), (version, _) in gone.items()
            if version is None and t.loc[t["schedule"] == part, measure].max() > 0]
    sentences = []
    for part, measure in kept:  # what no release fixes: said first
        rows_ = t[t["schedule"] == part]
        lo, hi = fmt(rows_[measure].min()), fmt(rows_[measure].max())
        sentences.append(f"The {part.replace('_', ' ')} loses {lo if lo == hi else f'{lo}–{hi}'} "
                         f"{LABELS[measure].removesuffix(' lost')} in every version"
                         + (f": {SCHEDULES[part].kept}." if SCHEDULES[part].kept else "."))
    if fixed:
        sentences.append(f"Each anomaly gone from: {', '.join(fixed)}.")
    return numbers, fit(sentences or ["No anomaly went away."])
