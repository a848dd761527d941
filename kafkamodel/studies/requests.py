"""Study 1b: latency under load. Requests as Kafka sends them: one partition's capacity, partitions per broker with
1 and 4 replica fetchers, a slow follower; each against the formulas of ``requests_theory``."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..config.settings import Settings
from ..kit import Aggregates, Table, fit, plots
from ..sim.broker.fetcher import fetcher_id
from ..sim.controller.placement import assign
from .common import fmt, num, part_settings, seconds
from .requests_theory import (
    BACKLOG_GROWS,
    EVICTED,
    KEEPS_UP,
    PACE,
    acks1_capacity_per_s,
    acks_all_capacity_per_s,
    backlog_after,
    busiest_fetcher,
    held_records_max,
    queued_latency_ms,
    records_per_batch,
    replication_extra_ms,
    slow_factor,
    slow_regime,
    slow_round_trip_ms,
)

P50, P99, BACKLOG = "produce_latency_ms_p50", "produce_latency_ms_p99", "backlog_records"
ACKS = ["all", "1"]
MODES = ["isr", "quorum"]
ACKS_COLOR = {"all": plots.CYCLE[0], "1": plots.CYCLE[1]}


# ---- the settings each part ran with -----------------------------------------------------------------------------

def _one_way(s: Settings) -> float:
    if not isinstance(s.latency_ms, (int, float)):
        raise ValueError(f"the requests study needs a constant one-way latency, got {s.latency_ms!r}")
    return float(s.latency_ms)


def load_theory(agg: Aggregates) -> dict:
    """One partition: records per batch, L, in flight, and the acks=all and acks=1 capacities (records/s)."""
    s = part_settings(agg, "load_one_partition")
    p = s.producers[0]
    rpb, L = records_per_batch(p.batch_size, p.record_size_bytes), _one_way(s)
    return {"batch_records": rpb, "one_way_ms": L, "in_flight": p.max_in_flight, "seconds": s.duration_ms / 1000.0,
            "held_max": held_records_max(p.buffer_memory, p.batch_size, rpb),
            "capacity": {"all": acks_all_capacity_per_s(rpb, L, p.max_in_flight),
                         "1": acks1_capacity_per_s(rpb, L, p.max_in_flight)}}


def _acks_first(column: pd.Series) -> pd.Series:
    """Sort key: acks in ACKS order, other columns as they are."""
    return column.map(ACKS.index) if column.name == "acks" else column


def _seeds(agg: Aggregates, df: pd.DataFrame) -> int:
    return int(agg.configs[agg.configs["config_id"].isin(df["config_id"])]["runs"].min())


def _label_line(ax, x: float, text: str, side: str, color: str) -> None:
    """A label at the top of a vertical line: right of it (`side` left-aligned), or left of it one line lower."""
    ax.annotate(text, (x, 1.0), xycoords=("data", "axes fraction"), xytext=(3, -4) if side == "left" else (-3, -16),
                textcoords="offset points", ha=side, va="top", fontsize=8, color=color)


# ---- one partition under load ------------------------------------------------------------------------------------

def load_table_df(agg: Aggregates) -> pd.DataFrame:
    th = load_theory(agg)
    df = agg.wide([P50, P99, BACKLOG, "records_acked", "records_per_batch_mean"], "load_one_partition")
    df = df.assign(acks=df["acks"].astype(str))
    df["capacity"] = df["acks"].map(th["capacity"])
    df["acked_per_s"] = df["records_acked"] / th["seconds"]
    df["backlog_predicted"] = [backlog_after(r, c, th["seconds"], th["held_max"])
                               for r, c in zip(df["rate"], df["capacity"])]
    return df.sort_values(["acks", "mode", "rate"], key=_acks_first)


def measured_capacity(df: pd.DataFrame, acks: str, mode: str = "isr") -> float:
    """Acknowledged records per second at the loads above the formula's capacity (NaN if none ran)."""
    over = df[(df["acks"] == acks) & (df["mode"] == mode) & (df["rate"] > df["capacity"])]
    return float(over["acked_per_s"].max()) if len(over) else math.nan


def load_figure(agg: Aggregates):
    th = load_theory(agg)
    df = load_table_df(agg)
    fig, axes = plots.figure(2, width=6.2, height=4.2)
    for acks in ACKS:
        g = df[(df["acks"] == acks) & (df["mode"] == "isr")]
        c = ACKS_COLOR[acks]
        axes[0].plot(g["rate"], g[P50], "o-", color=c, label=f"acks={acks} p50")
        axes[0].plot(g["rate"], g[P99], "s--", color=c, mfc="none", label=f"acks={acks} p99")
        axes[1].plot(g["rate"], g[BACKLOG].clip(lower=1), "o-", color=c, label=f"acks={acks}")
        cap = th["capacity"][acks]
        over = np.geomspace(cap, g["rate"].max(), 100)[1:] if g["rate"].max() > cap else []
        axes[1].plot(over, [backlog_after(x, th["capacity"][acks], th["seconds"], th["held_max"]) for x in over], ":",
                     color=c,
                     linewidth=2, label="predicted" if acks == "all" else None)
    q = df[df["mode"] == "quorum"]
    if len(q):
        axes[0].plot(np.r_[q["rate"], q["rate"]], np.r_[q[P50], q[P99]], "+", color="black", markersize=9,
                     label="quorum (p50, p99)")
        axes[1].plot(q["rate"], q[BACKLOG].clip(lower=1), "+", color="black", markersize=9, label="quorum")
    plots.finish(axes[0], f"one partition, RF 3, {fmt(th['one_way_ms'])} ms one-way: produce latency",
                 "offered load (records/s)", "produce latency (ms)", logx=True, logy=True)
    plots.finish(axes[1], f"backlog at the end of a {fmt(th['seconds'])} s run; predicted: (offered − capacity) × "
                 f"{fmt(th['seconds'])} s, at most buffer.memory's {fmt(th['held_max'])}", "offered load (records/s)", "records waiting", logx=True, logy=True)
    for ax, top in zip(axes, (df[P99].max(), df[BACKLOG].max())):
        ax.set_ylim(top=top * 30)  # room above the data for the legend and the capacity labels
        for acks, side in zip(ACKS, ("left", "right")):
            ax.axvline(th["capacity"][acks], color=ACKS_COLOR[acks], linestyle="-.", linewidth=1)
            _label_line(ax, th["capacity"][acks], f"acks={acks}: {fmt(round(th['capacity'][acks]))}/s", side,
                        ACKS_COLOR[acks])
    return fig


def load_table(agg: Aggregates) -> Table:
    th = load_theory(agg)
    df = load_table_df(agg)
    isr = df[df["mode"] == "isr"]
    quorum = df[df["mode"] == "quorum"].set_index(["acks", "rate"])[P99]
    view = pd.DataFrame({
        "acks": isr["acks"], "offered (records/s)": isr["rate"].astype(int),
        "offered / capacity": isr["rate"] / isr["capacity"],
        "acknowledged (records/s)": isr["acked_per_s"],
        "records per batch": isr["records_per_batch_mean"],
        "p50 (ms)": isr[P50], "p99 (ms)": isr[P99],
        "quorum p99 (ms)": [quorum.get((a, r), np.nan) for a, r in zip(isr["acks"], isr["rate"])],
        "backlog at end (records)": isr[BACKLOG], "backlog predicted (records)": isr["backlog_predicted"].round(),
    })
    L, rpb, n = fmt(th["one_way_ms"]), th["batch_records"], th["in_flight"]
    return Table(view, [
        f"Capacity (the formula): acks=all {rpb} records per batch / 2L = {fmt(round(th['capacity']['all']))} records/s; "
        f"acks=1 {n} in flight × {rpb} / 2L = {fmt(round(th['capacity']['1']))} records/s (L = {L} ms, constant).",
        "Backlog predicted: (offered − capacity) × the run's length, 0 below capacity, at most what `buffer.memory` "
        f"holds ({fmt(th['held_max'])} records: a batch takes `batch.size` of it; beyond, send() blocks); the "
        "simulated backlog below capacity is what is in flight and in the open batch when the run ends.",
        "ISR rows; quorum p99: the same configuration under a majority quorum.",
        f"Brokers spend no time here (costs 0, no NIC limit), so the cycle is the network's alone. {_seeds(agg, df)} "
        f"seed(s) per configuration: the arrivals are Poisson, every message takes exactly L; values are means over "
        f"seeds."])


def capacity_table(agg: Aggregates) -> Table:
    th = load_theory(agg)
    df = load_table_df(agg)
    rows = []
    for acks in ACKS:
        for mode in MODES:
            measured = measured_capacity(df, acks, mode)
            if math.isnan(measured):
                continue
            rows.append({"acks": acks, "mode": mode, "capacity by the formula (records/s)": round(th["capacity"][acks]),
                         "acknowledged above it (records/s)": measured,
                         "measured / formula": measured / th["capacity"][acks]})
    return Table(pd.DataFrame(rows), ["Acknowledged above it: records acknowledged per second in the busiest run "
                                      "offered more than the formula's capacity."])


# ---- partitions per broker -----------------------------------------------------------------------------------------

def partitions_df(agg: Aggregates) -> pd.DataFrame:
    df = agg.wide([P50, "partitions_per_fetch_mean"], "partitions_per_broker")
    s = part_settings(agg, "partitions_per_broker")
    topic, brokers, c = s.producers[0].topic, s.brokers, s.costs
    df = df.sort_values(["fetchers", "partitions"]).reset_index(drop=True)
    df["predicted_ms"] = [replication_extra_ms(int(n), int(f), brokers, c.partition_us, c.fetcher_partition_us, topic)
                          for n, f in zip(df["partitions"], df["fetchers"])]
    df["led"] = [len(range(0, int(n), brokers)) for n in df["partitions"]]
    fetcher_counts = [busiest_fetcher(topic, list(range(0, int(n), brokers)), int(f))
                      for n, f in zip(df["partitions"], df["fetchers"])]
    df["per_fetcher"] = [a for a, _ in fetcher_counts]
    df["fetchers_used"] = [b for _, b in fetcher_counts]
    smallest = df.groupby("fetchers")["partitions"].transform("min")
    base = df[df["partitions"] == smallest].set_index("fetchers")
    df["extra_ms"] = df[P50] - df["fetchers"].map(base[P50])
    df["extra_predicted_ms"] = df["predicted_ms"] - df["fetchers"].map(base["predicted_ms"])
    return df


def partitions_figure(agg: Aggregates):
    df = partitions_df(agg)
    fig, axes = plots.figure(2)
    for i, f in enumerate(sorted(df["fetchers"].unique())):
        g = df[df["fetchers"] == f]
        c = plots.CYCLE[i]
        axes[0].plot(g["partitions"], g["extra_ms"], "o", color=c, markersize=7,
                     label=f"{int(f)} fetcher(s): simulated")
        axes[0].plot(g["partitions"], g["extra_predicted_ms"], "--", color=c, label=f"{int(f)} fetcher(s): predicted")
        axes[1].plot(g["partitions"], g["partitions_per_fetch_mean"], "o", color=c, markersize=7,
                     label=f"{int(f)} fetcher(s): simulated (mean)")
        axes[1].plot(g["partitions"], g["per_fetcher"], "--", color=c, label=f"{int(f)} fetcher(s): getFetcherId")
        if f > 1:
            axes[1].plot(g["partitions"], g["led"] / f, ":", color="grey", label=f"if spread over all {int(f)}")
    s = part_settings(agg, "partitions_per_broker")
    plots.finish(axes[0], f"commit latency added by partitions ({s.brokers} brokers, RF 2, default costs)",
                 "partitions per broker", f"p50 − p50 at {int(df['partitions'].min())} partitions (ms)")
    plots.finish(axes[1], "partitions per fetch response (each leader's half)", "partitions per broker",
                 "partitions in a fetch")
    return fig


def partitions_table(agg: Aggregates) -> Table:
    df = partitions_df(agg)
    s = part_settings(agg, "partitions_per_broker")
    view = pd.DataFrame({
        "fetchers": df["fetchers"].astype(int), "partitions per broker": df["partitions"].astype(int),
        "led by each broker": df["led"].astype(int), "fetchers with partitions": df["fetchers_used"].astype(int),
        "busiest fetcher's partitions": df["per_fetcher"].astype(int),
        "p50 (ms)": df[P50], "added (ms)": df["extra_ms"], "added, predicted (ms)": df["extra_predicted_ms"],
        "partitions per fetch": df["partitions_per_fetch_mean"],
    })
    c = s.costs
    return Table(view, [
        f"Predicted: (partitions led × partition.us) + (busiest fetcher's partitions × (partition.us + "
        f"fetcher.partition.us)), with partition.us = {fmt(c.partition_us)} µs and fetcher.partition.us = "
        f"{fmt(c.fetcher_partition_us)} µs; added: over the smallest partition count. Fetchers by Kafka's getFetcherId "
        f"(abs(31 × hash(topic) + partition) % fetchers): with two brokers each leads every other partition, and "
        f"those land on only half of an even number of fetchers.",
        f"One burst every {fmt(s.producers[0].burst.every_ms)} ms puts a record in every partition; every record of a "
        f"burst is acknowledged at once (p50 = p99). One-way latency {fmt(_one_way(s))} ms, constant."])


# ---- a slow follower -----------------------------------------------------------------------------------------------

def slow_df(agg: Aggregates) -> pd.DataFrame:
    df = agg.wide([P50, P99, BACKLOG, "isr_shrinks", "records_acked", "time_to_shrink_ms"], "slow_follower")
    df = df.assign(acks=df["acks"].astype(str)).sort_values(["acks", "factor"], key=_acks_first).reset_index(drop=True)
    s = part_settings(agg, "slow_follower")
    p, b = s.producers[0], s.broker
    rpb, L, seconds = records_per_batch(p.batch_size, p.record_size_bytes), _one_way(s), s.duration_ms / 1000.0
    rtt = [slow_round_trip_ms(L, f) for f in df["factor"]]
    df["round_trip_ms"] = rtt
    df["predicted"] = [slow_regime(a, t, p.rate_per_s, rpb, p.record_size_bytes, p.max_in_flight, p.linger_ms,
                                   b.replica_lag_time_max_ms, b.replica_fetch_max_bytes)
                       for a, t in zip(df["acks"], rtt)]
    df["pace_ms"] = [queued_latency_ms(p.max_in_flight, t) for t in rtt]
    held = held_records_max(p.buffer_memory, p.batch_size, rpb)
    df["backlog_predicted"] = [backlog_after(p.rate_per_s, rpb / t * 1000.0, seconds, held) if a == "all" else 0.0
                               for a, t in zip(df["acks"], rtt)]
    base = df[df["factor"] == df["factor"].min()].set_index("acks")[P50]
    df["measured"] = [_measured_regime(r, base.get(r["acks"], math.nan), p.rate_per_s) for _, r in df.iterrows()]
    return df


def _measured_regime(r, unslowed_p50: float, rate_per_s: float) -> str:
    """What the run shows: it left the ISR; more than a second of traffic waiting at the end; a p50 more than twice
    that of the run without a slowdown; or none of these."""
    if r["isr_shrinks"] >= 0.5:
        return EVICTED
    if r[BACKLOG] > rate_per_s:
        return BACKLOG_GROWS
    if r[P50] > 2 * unslowed_p50:
        return PACE
    return KEEPS_UP


def slow_thresholds(s: Settings) -> dict:
    """The slowdown factors where the regimes change (the round trips of `slow_regime`, over 2 × one way)."""
    p, b, L = s.producers[0], s.broker, _one_way(s)
    rpb = records_per_batch(p.batch_size, p.record_size_bytes)
    behind_rtt = b.replica_fetch_max_bytes / (p.rate_per_s * p.record_size_bytes / 1000.0)
    return {"all_backlog": slow_factor(L, rpb / p.rate_per_s * 1000.0),
            "all_pace": slow_factor(L, p.linger_ms + 1000.0 / p.rate_per_s),
            "1_evicted": slow_factor(L, min(behind_rtt, b.replica_lag_time_max_ms / 2))}


def slow_figure(agg: Aggregates):
    df = slow_df(agg)
    s = part_settings(agg, "slow_follower")
    n, L, th = s.producers[0].max_in_flight, _one_way(s), slow_thresholds(s)
    fig, axes = plots.figure(2, width=6.2, height=4.2)
    for acks in ACKS:
        g = df[df["acks"] == acks]
        c = ACKS_COLOR[acks]
        axes[0].plot(g["factor"], g[P50], "o-", color=c, label=f"acks={acks} p50")
        axes[0].plot(g["factor"], g[P99], "s--", color=c, mfc="none", label=f"acks={acks} p99")
        axes[1].plot(g["factor"], g[BACKLOG].clip(lower=1), "o-", color=c, label=f"acks={acks}")
    fs = np.geomspace(max(th["all_pace"], df["factor"].min()), th["all_backlog"], 50)
    axes[0].plot(fs, [queued_latency_ms(n, slow_round_trip_ms(L, f)) for f in fs], ":", color="black", linewidth=2,
                 label=f"({n} + 0.5) × its round trip")
    grow = df[(df["acks"] == "all") & (df["backlog_predicted"] > 0)]
    axes[1].plot(grow["factor"], grow["backlog_predicted"], ":", color="black", linewidth=2,
                 label="predicted (acks=all)")
    out = df[df["measured"] == EVICTED]
    axes[1].plot(out["factor"], out[BACKLOG].clip(lower=1), "X", color="#d62728", markersize=11, label="left the ISR")
    for _, r in out.iterrows():
        if not pd.isna(r["time_to_shrink_ms"]):
            axes[1].annotate(f"at {fmt(r['time_to_shrink_ms'] / 1000)} s", (r["factor"], max(r[BACKLOG], 1)),
                             textcoords="offset points", xytext=(-8, 10), ha="right", fontsize=8, color="#d62728")
    plots.finish(axes[0], f"one follower slowed: its round trip is factor × {fmt(2 * L)} ms", "slowdown factor",
                 "produce latency (ms)", logx=True, logy=True)
    plots.finish(axes[1], f"backlog at the end of a {fmt(s.duration_ms / 1000)} s run", "slowdown factor",
                 "records waiting", logx=True, logy=True)
    for ax, top in zip(axes, (df[P99].max(), df[BACKLOG].max())):
        ax.set_ylim(top=top * 30)  # room above the data for the legend and the labels
        for key, text, side in (("all_backlog", "acks=all backlog from", "left"),
                                ("1_evicted", "acks=1 leaves the ISR from", "right")):
            color = ACKS_COLOR[key.split("_")[0]]
            ax.axvline(th[key], color=color, linestyle="-.", linewidth=1)
            _label_line(ax, th[key], f"{text} ×{fmt(round(th[key]))}", side, color)
    return fig


def slow_table(agg: Aggregates) -> Table:
    df = slow_df(agg)
    s = part_settings(agg, "slow_follower")
    p, b = s.producers[0], s.broker
    view = pd.DataFrame({
        "acks": df["acks"], "slowdown": df["factor"].astype(int), "its round trip (ms)": df["round_trip_ms"],
        "predicted": df["predicted"], "simulated": df["measured"],
        "p50 (ms)": df[P50], "p99 (ms)": df[P99],
        "p50 if it sets the pace (ms)": np.where(df["predicted"] == PACE, df["pace_ms"], np.nan),
        "acknowledged": df["records_acked"], "backlog at end": df[BACKLOG],
        "backlog predicted": np.where(df["acks"] == "all", df["backlog_predicted"].round(), np.nan),
        "ISR shrinks": df["isr_shrinks"], "left the ISR at (s)": df["time_to_shrink_ms"] / 1000.0,
    })
    rpb = records_per_batch(p.batch_size, p.record_size_bytes)
    return Table(view, [
        f"Predicted, acks=all: the slow follower is caught up at every fetch (the leader's LEO waits for it), so it "
        f"leaves the ISR only if one round trip exceeds replica.lag.time.max.ms ({fmt(b.replica_lag_time_max_ms)} ms); "
        f"the backlog grows once a batch ({rpb} records) per round trip is less than the {fmt(p.rate_per_s)} records/s "
        f"offered; it sets the pace, ({p.max_in_flight} + 0.5) round trips, once its round trip outlasts the "
        f"{fmt(p.linger_ms)} ms linger.",
        f"Predicted, acks=1: it leaves the ISR when replica.fetch.max.bytes ({fmt(b.replica_fetch_max_bytes)}) per round "
        f"trip is less than is produced ({fmt(p.rate_per_s * p.record_size_bytes)} B/s), or when two round trips exceed "
        f"replica.lag.time.max.ms (it is caught up only to the LEO of its previous fetch); otherwise nothing shows.",
        f"Simulated: left the ISR (a shrink); backlog grows (more than a second of traffic waiting at the end); sets "
        f"the pace (p50 over twice the unslowed run's); else unaffected. One-way latency {fmt(_one_way(s))} ms, "
        f"constant; default costs. p50/p99 are over acknowledged records only."])


# ---- the headline ----------------------------------------------------------------------------------------------------

def headline(agg: Aggregates) -> tuple[dict, str]:
    th = load_theory(agg)
    load = load_table_df(agg)
    numbers: dict = {}
    for acks in ACKS:
        numbers[f"capacity_acks_{acks}_predicted_per_s"] = num(th["capacity"][acks], 0)
        for mode in MODES:
            numbers[f"capacity_acks_{acks}_{mode}_measured_per_s"] = num(measured_capacity(load, acks, mode), 0)
        top = load[(load["acks"] == acks) & (load["mode"] == "isr")]
        below = top[top["rate"] < top["capacity"]]
        if len(below):
            r = below.iloc[-1]
            numbers[f"acks_{acks}_below_capacity_load_per_s"] = num(r["rate"], 0)
            numbers[f"acks_{acks}_below_capacity_p50_ms"] = num(r[P50], 2)
            numbers[f"acks_{acks}_below_capacity_p99_ms"] = num(r[P99], 2)
            numbers[f"acks_{acks}_below_capacity_backlog"] = num(r[BACKLOG], 0)
        if len(top):
            r = top.iloc[-1]
            numbers[f"acks_{acks}_top_load_per_s"] = num(r["rate"], 0)
            numbers[f"acks_{acks}_top_load_backlog"] = num(r[BACKLOG], 0)
            numbers[f"acks_{acks}_top_load_backlog_predicted"] = num(r["backlog_predicted"], 0)
    both = load.pivot_table(index=["acks", "rate"], columns="mode", values=P99)
    if set(MODES) <= set(both.columns):
        numbers["isr_vs_quorum_max_p99_difference_ms"] = num(float((both["isr"] - both["quorum"]).abs().max()), 3)

    parts = partitions_df(agg)
    for _, r in parts.iterrows():
        key = f"partitions{int(r['partitions'])}_fetchers{int(r['fetchers'])}"
        numbers[f"{key}_added_ms"] = num(r["extra_ms"], 2)
        if r["partitions"] == 1000:
            numbers[f"{key}_added_predicted_ms"] = num(r["extra_predicted_ms"], 2)
            numbers[f"{key}_partitions_per_fetch"] = num(r["partitions_per_fetch_mean"], 1)

    slow = slow_df(agg)
    for _, r in slow.iterrows():
        key = f"slow_acks_{r['acks']}_factor{int(r['factor'])}"
        numbers[f"{key}_regime"] = r["measured"]
        if r["acks"] == "all" and r["measured"] in (PACE, KEEPS_UP):
            numbers[f"{key}_p50_ms"] = num(r[P50], 1)
        if r["measured"] == BACKLOG_GROWS:
            numbers[f"{key}_backlog"] = num(r[BACKLOG], 0)
        if r["measured"] == EVICTED:
            numbers[f"{key}_left_isr_s"] = num(r["time_to_shrink_ms"] / 1000.0, 1)
    quiet = slow[slow["acks"] == "1"]
    if len(quiet):
        numbers["slow_acks_1_p99_ms_max"] = num(float(quiet[P99].max()), 2)
        numbers["slow_acks_1_p99_ms_min"] = num(float(quiet[P99].min()), 2)
    return numbers, _finding(numbers, th, parts, slow)


def _finding(n: dict, th: dict, parts: pd.DataFrame, slow: pd.DataFrame) -> str:
    """The capacity sentence, then the fetchers' and the slow follower's while the finding stays within MAX_FINDING."""
    sentences = [(f"One partition {fmt(th['one_way_ms'])} ms from its followers acknowledges at most "
                  f"{fmt(n.get('capacity_acks_all_isr_measured_per_s'))} records/s with acks=all (a "
                  f"{th['batch_records']}-record batch per 2L: {fmt(n.get('capacity_acks_all_predicted_per_s'))}) and "
                  f"{fmt(n.get('capacity_acks_1_isr_measured_per_s'))} with acks=1; beyond that the backlog grows.")]
    if len(parts):
        m = 1000 if (parts["partitions"] == 1000).any() else int(parts["partitions"].max())
        at = parts[parts["partitions"] == m]
        one, many = at[at["fetchers"] == 1], at[at["fetchers"] == at["fetchers"].max()]
        if len(one) and len(many) and int(many["fetchers"].iloc[0]) > 1:
            r = many.iloc[0]
            sentences.append(f"{m:,} partitions per broker add {fmt(num(one['extra_ms'].iloc[0], 1))} ms to commit "
                             f"latency with one fetcher, {fmt(num(r['extra_ms'], 1))} ms with {int(r['fetchers'])}.")
    acks_all = slow[slow["acks"] == "all"]
    grows = acks_all[acks_all["measured"] == BACKLOG_GROWS]
    if len(grows):
        sentences.append(f"A follower slowed {fmt(grows['factor'].min())}× builds an acks=all backlog.")
    return fit(sentences)


def partitions_text(agg: Aggregates) -> str:
    """Markdown: the partitions-per-broker part's cluster, load and fetchers, read from its settings and grid, the
    fetchers a broker's partitions land on computed with Kafka's getFetcherId."""
    s = part_settings(agg, "partitions_per_broker")
    t, p = s.topics[0], s.producers[0]
    rows = agg.configs[agg.configs["part"] == "partitions_per_broker"]
    counts, fetchers = sorted(int(x) for x in set(rows["partitions"])), int(max(rows["fetchers"]))
    leads = [i for i, replicas in enumerate(assign(counts[-1], t.replication_factor, s.brokers, s.racks))
             if replicas[0] == 0]  # what broker 0 leads, and so broker 1 fetches from it
    used = len({fetcher_id(t.name, i, fetchers) for i in leads})
    big = [c for c in counts if c >= 1000][:2] or counts[-1:]
    each_way = "; ".join(f"{fmt(c)} partitions per broker means {fmt(c // s.brokers)} each way" for c in big)
    return (f"{s.brokers} brokers, RF {t.replication_factor}: each leads every other partition and follows the rest. "
            f"Every {seconds(p.burst.every_ms)} a burst puts one record in each partition; the producer sends each "
            "broker one request with a batch per partition it leads. The leader's handler validates the whole request "
            "before its appends take effect (`partition.us` each); the follower's replica fetcher threads "
            "(`num.replica.fetchers`) each read their partitions at the leader (`partition.us`) and append them "
            "(`fetcher.partition.us`), and the batch is committed when the busiest fetcher's next fetch arrives. Kafka "
            "assigns a partition to fetcher `abs(31 × hash(topic) + partition) % fetchers` (`getFetcherId`); the "
            f"partitions a broker leads land on only {used} of {fetchers} fetchers (right: the grey line is what an "
            "even spread would give). Jun Rao (Confluent, 2015) reported about 20 ms for replicating 1,000 partitions "
            "from one broker to another with one fetcher, on Kafka 0.8, whose fetches named every partition (the "
            f"validation set's rao-2015 case reproduces it); here, on Kafka {s.kafka.version}, {each_way}.")


def knee_text(agg: Aggregates) -> str:
    """Markdown: one partition's capacity, every number from the part's settings and the formulas."""
    th = load_theory(agg)
    s = part_settings(agg, "load_one_partition")
    p = s.producers[0]
    L, rpb, n = th["one_way_ms"], th["batch_records"], th["in_flight"]
    all_, one = th["capacity"]["all"], th["capacity"]["1"]
    return (f"So one partition commits at most one full batch (what `batch.size` = {p.batch_size:,} bytes holds of "
            f"{fmt(p.record_size_bytes)}-byte records in the v2 format, its 61-byte header and each record's varints: "
            f"{rpb} records) every 2L: with L = {fmt(L)} ms, {fmt(all_)} records/s. Below "
            f"that, the {n} in-flight requests queue at the leader and batches grow to what arrives in a cycle, so "
            f"latency is flat at ({n} + 0.5) × 2L = {fmt(queued_latency_ms(n, 2 * L))} ms; above it the producer's "
            f"accumulator keeps the difference, and the backlog grows at offered − capacity (dotted, right). acks=1 "
            f"does not wait for the commit: {n} requests in flight each carry a batch per round trip, {fmt(one / all_)} "
            f"times the capacity ({fmt(one)} records/s); what limits it is `max.in.flight.requests.per.connection` × "
            f"`batch.size` per round trip, not the broker. The offered loads of the sweep are fractions of these "
            f"capacities (the table gives each as offered / capacity).")


def slow_text(agg: Aggregates) -> str:
    """Markdown: the slow follower's regimes, thresholds from the part's settings, the eviction from its runs."""
    s = part_settings(agg, "slow_follower")
    p, b, L, th = s.producers[0], s.broker, _one_way(s), slow_thresholds(s)
    df = slow_df(agg)
    gone = df[(df["acks"] == "1") & (df["measured"] == EVICTED)]
    kept = df[(df["acks"] == "1") & (df["measured"] != EVICTED)]
    produced = p.rate_per_s * p.record_size_bytes
    text = (f"Broker 2's fetches take `factor` times longer for the whole run (one-way latency {fmt(L)} ms: its round "
            f"trip is `factor` × {fmt(2 * L)} ms), {fmt(p.rate_per_s)} records/s, `replica.lag.time.max.ms` "
            f"{seconds(b.replica_lag_time_max_ms)}. Under acks=all every commit waits for it. It is never evicted: Kafka "
            f"counts a follower caught up when its fetch reaches the leader's LEO (or the LEO the leader had at its "
            f"previous fetch), and under acks=all the leader's LEO waits for the slow follower, so each of its fetches "
            f"catches up. It sets the pace instead: once its round trip outlasts the linger (from about "
            f"{fmt(th['all_pace'])}×), the {p.max_in_flight} in-flight slots fill and a record waits "
            f"({p.max_in_flight} + 0.5) of its round trips; once a batch per round trip carries less than is offered "
            f"(from about {fmt(th['all_backlog'])}×), the backlog grows at the difference, and the latency of what does "
            f"get acknowledged is mostly the wait.\n\n"
            f"Under acks=1 the producer does not wait, so nothing shows in latency. The follower stays in the ISR as "
            f"long as it fetches what is produced each round trip (`replica.fetch.max.bytes`, "
            f"{fmt(b.replica_fetch_max_bytes)} bytes, per round trip against {fmt(produced)} bytes/s) and two of its "
            f"round trips fit in `replica.lag.time.max.ms` (it is caught up only to the LEO of its previous fetch): "
            f"with these settings it should leave from about {fmt(th['1_evicted'])}×.")
    if len(gone):
        text += (f" In the runs it left the ISR at {fmt(gone['factor'].min())}×"
                 + (f" and not at {fmt(kept['factor'].max())}×." if len(kept) else "."))
    return text


def _range(values: pd.Series) -> str:
    lo, hi = float(values.min()), float(values.max())
    return fmt(lo) if lo == hi else f"{fmt(lo)}–{fmt(hi)}"
