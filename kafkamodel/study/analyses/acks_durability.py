"""Study 3: acks 0/1/all × min.insync.replicas × unclean election: latency, acknowledged loss, unavailability."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .. import plots
from ..present import Table
from ..tables import Aggregates
from .common import fmt, num, value

ACKS = ["0", "1", "all"]
FAULT_PARTS = {"leader_crash": "slow followers, then the leader crashes",
               "isr_collapse": "followers die, then the leader; a stale follower returns first"}
MEASURES = ["acked_records_lost", "committed_records_lost", "unavailable_wall_ms", "not_enough_replicas_errors",
            "records_acked"]


def latency(agg: Aggregates) -> pd.DataFrame:
    """Produce latency without faults, per acks."""
    df = agg.wide(["produce_latency_ms_p50", "produce_latency_ms_p99"], "no_faults")
    return df[["acks", "produce_latency_ms_p50", "produce_latency_ms_p99"]].set_index("acks").reindex(ACKS).reset_index()


def table(agg: Aggregates) -> pd.DataFrame:
    """One row per (acks, min.insync.replicas, unclean): latency without faults, loss and downtime under each schedule."""
    lat = latency(agg)
    frames = []
    for part in FAULT_PARTS:
        df = agg.wide(MEASURES, part)[["acks", "min_isr", "unclean", *MEASURES]].copy()
        df["part"] = part
        frames.append(df)
    out = pd.concat(frames).merge(lat, on="acks", how="left")
    out["unavailable_s"] = out["unavailable_wall_ms"] / 1000.0
    cols = ["part", "acks", "min_isr", "unclean", "produce_latency_ms_p99", "acked_records_lost", "committed_records_lost",
            "unavailable_s", "not_enough_replicas_errors", "records_acked"]
    out["acks"] = pd.Categorical(out["acks"], ACKS, ordered=True)
    return out[cols].sort_values(["part", "acks", "min_isr", "unclean"]).reset_index(drop=True)


def table_view(agg: Aggregates) -> Table:
    """`table` for readers: named columns, one fault schedule after the other."""
    t = table(agg)
    view = pd.DataFrame({
        "fault schedule": t["part"].map(lambda p: p.replace("_", " ")), "acks": t["acks"].astype(str),
        "min.insync.replicas": t["min_isr"].astype(int), "unclean election": t["unclean"].astype(bool),
        "p99 without faults (ms)": t["produce_latency_ms_p99"],
        "acknowledged lost": t["acked_records_lost"], "committed lost": t["committed_records_lost"],
        "time unwritable (s)": t["unavailable_s"], "NOT_ENOUGH_REPLICAS errors": t["not_enough_replicas_errors"],
        "records acknowledged": t["records_acked"],
    })
    notes = [f"{k.replace('_', ' ')}: {v}." for k, v in FAULT_PARTS.items()]
    notes.append("Counts are means over seeds. p99 without faults comes from the no-faults part ('not run': that acks "
                 "setting was not run there).")
    return Table(view, notes, na="not run")


def tradeoff(agg: Aggregates):
    """Latency (no faults) vs acknowledged records lost; marker area = time unwritable."""
    t = table(agg)
    fig, axes = plots.figure(2, width=5.6, height=4.2)
    offsets = {(1, False): -0.06, (1, True): -0.02, (2, False): 0.02, (2, True): 0.06}
    for ax, (part, title) in zip(axes, FAULT_PARTS.items()):
        g = t[t["part"] == part]
        for i, acks in enumerate(ACKS):
            for (mi, unclean), dx in offsets.items():
                r = g[(g["acks"] == acks) & (g["min_isr"] == mi) & (g["unclean"] == unclean)]
                if r.empty:
                    continue
                x = float(r["produce_latency_ms_p99"].iloc[0]) * (1 + dx)
                y = float(r["acked_records_lost"].iloc[0])
                size = 20 + 12 * float(r["unavailable_s"].iloc[0])
                ax.scatter([x], [max(y, 0.5)], s=size, marker="o" if mi == 1 else "s", alpha=0.75,
                           facecolors=plots.color(acks, i) if unclean else "none", edgecolors=plots.color(acks, i),
                           label=f"acks={acks}" if (mi, unclean) == (1, False) else None)
                ax.annotate(f"mi{mi}{' U' if unclean else ''}", (x, max(y, 0.5)), fontsize=6, xytext=(4, 3),
                            textcoords="offset points")
        ax.set_yscale("log")
        plots.plain_log_labels(ax.yaxis)
        ax.set_ylim(0.3, max(float(t["acked_records_lost"].max()) * 3, 10))
        plots.finish(ax, f"{part}: {title}", "produce p99 without faults (ms)",
                     "acknowledged records lost (0 drawn at 0.5)")
    axes[0].text(0.01, 0.01, "circle: min.insync 1, square: 2; filled: unclean elections; area: seconds unwritable",
                 transform=axes[0].transAxes, fontsize=6)
    return fig


def downtime(agg: Aggregates):
    """Seconds unwritable (no leader, or acks=all writes refused), per setting, under each schedule."""
    t = table(agg)
    t = t.assign(setting=lambda d: "min.insync " + d["min_isr"].astype(int).astype(str)
                 + np.where(d["unclean"].astype(bool), "\nunclean", "\nclean"))
    fig, axes = plots.figure(2, width=5.6)
    for ax, part in zip(axes, FAULT_PARTS):
        g = t[t["part"] == part]
        plots.grouped_bars(ax, g, "setting", "acks", "unavailable_s", series_order=ACKS, label="acks={}")
        plots.finish(ax, f"{part}: time unwritable (no leader, or ISR below min.insync)", "", "seconds")
        ax.tick_params(axis="x", labelsize=8)
    return fig


def headline(agg: Aggregates) -> tuple[dict, str]:
    t = table(agg)
    lat = latency(agg)
    lc, ic = t[t["part"] == "leader_crash"], t[t["part"] == "isr_collapse"]
    numbers = {f"p99_ms_acks_{a}": num(value(lat, "produce_latency_ms_p99", acks=a), 2) for a in ACKS}
    numbers.update({
        "leader_crash_acks_1_lost": num(value(lc, "acked_records_lost", acks="1", min_isr=1, unclean=False), 1),
        "leader_crash_acks_all_lost": num(value(lc, "acked_records_lost", acks="all", min_isr=1, unclean=False), 1),
        "isr_collapse_all_mi1_unclean_lost": num(value(ic, "acked_records_lost", acks="all", min_isr=1, unclean=True), 1),
        "isr_collapse_all_mi1_unclean_unavailable_s": num(value(ic, "unavailable_s", acks="all", min_isr=1, unclean=True), 1),
        "isr_collapse_all_mi2_clean_lost": num(value(ic, "acked_records_lost", acks="all", min_isr=2, unclean=False), 1),
        "isr_collapse_all_mi2_clean_unavailable_s": num(value(ic, "unavailable_s", acks="all", min_isr=2, unclean=False), 1),
        "isr_collapse_all_mi2_clean_refused": num(value(ic, "not_enough_replicas_errors", acks="all", min_isr=2, unclean=False), 1),
    })
    finding = (f"acks=1 answers in {fmt(numbers['p99_ms_acks_1'])} ms at p99 against {fmt(numbers['p99_ms_acks_all'])} ms for acks=all, "
               f"and lost {fmt(numbers['leader_crash_acks_1_lost'])} acknowledged records when the leader crashed ahead of slow "
               f"followers (acks=all: {fmt(numbers['leader_crash_acks_all_lost'])}); once the ISR collapsed, an unclean election "
               f"lost {fmt(numbers['isr_collapse_all_mi1_unclean_lost'])} acks=all records after "
               f"{fmt(numbers['isr_collapse_all_mi1_unclean_unavailable_s'])} s unwritable, while min.insync.replicas=2 with clean "
               f"elections lost {fmt(numbers['isr_collapse_all_mi2_clean_lost'])} and was unwritable "
               f"{fmt(numbers['isr_collapse_all_mi2_clean_unavailable_s'])} s.")
    return numbers, finding
