"""Study 3: acks 0/1/all × min.insync.replicas × unclean election: latency, acknowledged loss, unavailability."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..kit import Aggregates, Table, plots
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


def _with_setting(t: pd.DataFrame) -> pd.DataFrame:
    """`setting`: min.insync.replicas and the election, as an axis label."""
    return t.assign(setting=lambda d: "min.insync.replicas " + d["min_isr"].astype(int).astype(str)
                    + np.where(d["unclean"].astype(bool), "\nunclean elections", "\nclean elections"))


def _settings(g: pd.DataFrame) -> list[str]:
    return list(g.sort_values(["min_isr", "unclean"])["setting"].drop_duplicates())


def tradeoff(agg: Aggregates):
    """Acknowledged records lost per setting under each schedule, a bar per acks (its p99 without faults in the
    legend); linear axes, each bar's value written above it."""
    t = _with_setting(table(agg))
    p99 = latency(agg).set_index("acks")["produce_latency_ms_p99"]
    fig, axes = plots.figure(1, len(FAULT_PARTS), width=11.0, height=3.4)
    for ax, (part, title) in zip(axes, FAULT_PARTS.items()):
        g = t[t["part"] == part].assign(acks=lambda d: d["acks"].astype(str))
        labels = {a: f"acks={a} (p99 {fmt(p99.get(a))} ms without faults)" for a in ACKS}
        g = g.assign(series=g["acks"].map(labels))
        plots.grouped_bars(ax, g, "setting", "series", "acked_records_lost", group_order=_settings(g),
                           series_order=[labels[a] for a in ACKS], values=True)
        ax.tick_params(axis="x", labelsize=9)
        ax.set_ylim(0, ax.get_ylim()[1] * 1.5)
        plots.finish(ax, f"{part.replace('_', ' ')}: {title}", "", "acknowledged records lost")
        ax.legend(fontsize=8, loc="upper left")
    return fig


def downtime(agg: Aggregates):
    """Seconds unwritable (no leader, or acks=all writes refused), per setting, under each schedule: one bar per
    setting when every acks setting was unwritable as long (the partition's, not the producer's), else a bar per acks."""
    t = _with_setting(table(agg))
    fig, axes = plots.figure(1, len(FAULT_PARTS), width=11.0, height=3.0)
    for ax, part in zip(axes, FAULT_PARTS):
        g = t[t["part"] == part].assign(acks=lambda d: d["acks"].astype(str))
        spread = g.groupby("setting")["unavailable_s"].agg(lambda v: v.max() - v.min()).max()
        if spread < 0.01:  # the same to 10 ms for every acks
            one = g.groupby("setting", as_index=False)["unavailable_s"].mean().assign(series="every acks setting")
            plots.grouped_bars(ax, one, "setting", "series", "unavailable_s", group_order=_settings(g), values=True)
        else:
            plots.grouped_bars(ax, g, "setting", "acks", "unavailable_s", group_order=_settings(g), series_order=ACKS,
                               label="acks={}", values=True)
        ax.tick_params(axis="x", labelsize=9)
        ax.set_ylim(0, ax.get_ylim()[1] * 1.3)
        plots.finish(ax, f"{part.replace('_', ' ')}: time unwritable", "", "seconds")
    return fig


def downtime_text(agg: Aggregates) -> str:
    """Markdown: whether the time unwritable depended on acks (it is the partition's: no leader, or an ISR below
    min.insync.replicas), from the runs."""
    t = table(agg)
    spread = t.groupby(["part", "min_isr", "unclean"], observed=True)["unavailable_s"].agg(lambda v: v.max() - v.min())
    if spread.max() < 0.01:
        return (f"Every acks setting was unwritable as long, to within {fmt(spread.max() * 1000)} ms, in each setting "
                "and schedule: the time without a leader, or with the ISR below `min.insync.replicas`, is the "
                "partition's, not the producer's, so each setting has one bar.")
    return "The time unwritable per setting, a bar per acks setting."


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
    n = {k: fmt(v) for k, v in numbers.items()}
    finding = (f"acks=1 (p99 {n['p99_ms_acks_1']} ms; acks=all {n['p99_ms_acks_all']} ms) lost "
               f"{n['leader_crash_acks_1_lost']} acknowledged records when the leader crashed ahead of slow followers, "
               f"acks=all {n['leader_crash_acks_all_lost']}; after an ISR collapse an unclean election lost "
               f"{n['isr_collapse_all_mi1_unclean_lost']} acks=all records ({n['isr_collapse_all_mi1_unclean_unavailable_s']} s "
               f"unwritable), min.insync.replicas=2 with clean elections {n['isr_collapse_all_mi2_clean_lost']} "
               f"({n['isr_collapse_all_mi2_clean_unavailable_s']} s).")
    return numbers, finding
