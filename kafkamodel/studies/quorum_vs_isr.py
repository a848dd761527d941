"""Study 1: quorum vs ISR. Latency against the order-statistics prediction, survival, a slow follower."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .. import theory
from ..kit import Aggregates, Table, interval, plots
from .common import choice, fmt, interval_method, num, part_overrides, part_settings, seconds, value

MODES = ["isr", "quorum"]
P50, P99 = "produce_latency_ms_p50", "produce_latency_ms_p99"


def _latency_dist(agg: Aggregates, part: str, sigma: float | None = None):
    if sigma is not None:
        chosen = choice(agg, "sigma", sigma).get("network.latency.ms")
        return chosen or {"dist": "lognormal", "median": 1.0, "sigma": float(sigma)}
    return part_overrides(agg, part).get("network.latency.ms", theory.EXPONENTIAL_1MS)


def _fsync(agg: Aggregates, part: str, mode: str):
    """The fsync a replica adds to each append in this part, or None: a quorum fsyncs before it counts
    (quorum.fsync, on by default, as Raft); Kafka's ISR only with log.flush.interval.messages 1. The fsync is the
    part's effective one (disk.fsync.ms, else the broker machine's fsync.ms)."""
    s = part_settings(agg, part)
    on = s.quorum_fsync if mode == "quorum" else s.broker.log_flush_interval_messages == 1
    return s.fsync_ms if on and s.fsync_ms != 0 else None


def _predict(agg: Aggregates, part: str, rf: int, mode: str, sigma: float | None = None) -> theory.Prediction:
    return theory.predict(rf, mode, _latency_dist(agg, part, sigma), _fsync(agg, part, mode))


def predictions(agg: Aggregates) -> pd.DataFrame:
    """The order-statistics prediction for every latency configuration of the study."""
    rows = []
    for rf in (3, 5, 7):
        for mode in MODES:
            p = _predict(agg, "latency_rf", rf, mode)
            rows.append({"part": "latency_rf", "mode": mode, "rf": rf, "sigma": math.nan, "p50": p.p50, "p99": p.p99})
    if "latency_tail" in set(agg.configs["part"]):
        rf = int(part_overrides(agg, "latency_tail").get("brokers", 5))
        for sigma in sorted(agg.part("latency_tail").configs["sigma"].unique()):
            for mode in MODES:
                p = _predict(agg, "latency_tail", rf, mode, sigma)
                rows.append({"part": "latency_tail", "mode": mode, "rf": rf, "sigma": sigma, "p50": p.p50, "p99": p.p99})
    return pd.DataFrame(rows)


def _dist_label(dist) -> str:
    if isinstance(dist, dict) and dist.get("dist") == "exponential":
        return f"Exp({fmt(dist.get('mean'))} ms)"
    if isinstance(dist, dict) and dist.get("dist") == "lognormal":
        return f"lognormal, median {fmt(dist.get('median'))} ms, σ {fmt(dist.get('sigma'))}"
    return str(dist)


def latency_table(agg: Aggregates) -> Table:
    """Simulated (mean over seeds, interval over seeds) against predicted p50/p99, per configuration."""
    pred = predictions(agg)
    out = []
    for part, x in (("latency_rf", "rf"), ("latency_tail", "sigma")):
        if part not in set(agg.configs["part"]):
            continue
        df = agg.wide([P50, P99], part)
        rf_fixed = int(part_overrides(agg, part).get("brokers", 0)) or None
        for _, r in df.sort_values(["mode", x]).iterrows():
            p = pred[(pred.part == part) & (pred["mode"] == r["mode"]) & (pred[x] == r[x])]
            dist = _latency_dist(agg, part, r["sigma"] if x == "sigma" else None)
            out.append({"mode": r["mode"], "RF": int(r["rf"]) if x == "rf" else rf_fixed,
                        "one-way latency": _dist_label(dist),
                        "p50 simulated (ms)": r[P50], "p50 predicted (ms)": float(p["p50"].iloc[0]),
                        "p99 simulated (ms)": r[P99],
                        "p99 interval (ms)": interval(r[P99 + "_lo"], r[P99 + "_hi"]),
                        "p99 predicted (ms)": float(p["p99"].iloc[0])})
    seeds = int(agg.configs[agg.configs["part"].isin(["latency_rf", "latency_tail"])]["runs"].min())
    notes = [f"Simulated: the mean over {seeds} seed(s) of each run's percentile. " + interval_method(agg),
             "Predicted: the order statistics of the one-way latency (kafkamodel.theory), no queueing; where replicas "
             "fsync each append before they count (a quorum, quorum.fsync) it adds one fsync on the leader and one "
             "on each awaited follower's round trip (disk.fsync.ms)."]
    return Table(pd.DataFrame(out), notes)


def latency_vs_rf(agg: Aggregates):
    df = agg.wide([P50, P99], "latency_rf")
    fig, axes = plots.figure(2)
    rfs = np.arange(2, 8)
    for ax, (q, col) in zip(axes, (("p50", P50), ("p99", P99))):
        plots.lines_with_ci(ax, df, "rf", col, "mode", linestyle="none", label="{} simulated", order=MODES)
        for mode in MODES:
            ax.plot(rfs, [getattr(_predict(agg, "latency_rf", int(rf), mode), q) for rf in rfs], "--", color=plots.color(mode),
                    label=f"{mode} predicted")
        plots.finish(ax, f"acks=all produce latency {q} vs replication factor", "replication factor", f"{q} latency (ms)")
    return fig


def latency_vs_tail(agg: Aggregates):
    df = agg.wide([P50, P99], "latency_tail")
    rf = int(part_overrides(agg, "latency_tail").get("brokers", 5))
    sigmas = sorted(df["sigma"].unique())
    fig, axes = plots.figure(2)
    for ax, (q, col) in zip(axes, (("p50", P50), ("p99", P99))):
        plots.lines_with_ci(ax, df, "sigma", col, "mode", linestyle="none", label="{} simulated", order=MODES)
        for mode in MODES:
            ax.plot(sigmas, [getattr(_predict(agg, "latency_tail", rf, mode, s), q) for s in sigmas],
                    "--", color=plots.color(mode), label=f"{mode} predicted")
        plots.finish(ax, f"{q} at RF={rf} vs the latency tail (lognormal σ, median 1 ms)", "σ of one-way latency",
                     f"{q} latency (ms)", logy=True)
    return fig


def _crash(agg: Aggregates) -> tuple[float, float]:
    """When the brokers of the failures part crash, and for how long."""
    faults = choice(agg, "failures", 1).get("faults") or [{}]
    return float(faults[0].get("at.ms") or 0.0), float(faults[0].get("duration.ms") or math.inf)


def failures_text(agg: Aggregates) -> str:
    """Markdown: the failures part's schedule, read from the study's spec."""
    at, lasting = _crash(agg)
    return (f"f of RF brokers crash together (the leader among them) at {seconds(at)}"
            + (f" for {seconds(lasting)}" if math.isfinite(lasting) else "")
            + ". ISR elects any surviving in-sync replica after the session timeout; a quorum needs a live majority. "
              "Dashed: f+1 (ISR) and 2f+1 (quorum). Labels: seconds unwritable (no leader, or no live majority).")


def failure_table(agg: Aggregates) -> pd.DataFrame:
    """Per mode, RF and number of brokers crashed: time unwritable, records lost, and whether it survived.

    Survived: a leader was elected while the crashed brokers were still down,
    i.e. the partition was offline for less than half of that window.
    """
    df = agg.wide(["unavailable_wall_ms", "acked_records_lost", "committed_records_lost"], "failures")
    at, lasts = _crash(agg)
    runs = agg.runs.groupby("config_id")["duration_ms"].first()  # the run's length (not an aggregate)
    window = (df["config_id"].map(runs).clip(upper=at + lasts) - at).astype(float)
    df = df.assign(survived=df["unavailable_wall_ms"] < window / 2,
                   needed=[theory.replicas_needed(int(f), m) for f, m in zip(df["failures"], df["mode"])])
    return (df[["mode", "rf", "failures", "unavailable_wall_ms", "acked_records_lost", "committed_records_lost", "survived", "needed"]]
            .sort_values(["mode", "rf", "failures"]).reset_index(drop=True))


def replicas_needed(agg: Aggregates) -> pd.DataFrame:
    """Smallest simulated RF that survived f failures, against f+1 (ISR) and 2f+1 (quorum)."""
    t = failure_table(agg)
    rows = []
    for f in sorted(t["failures"].unique()):
        row = {"failures": int(f)}
        for mode in MODES:
            ok = t[(t["mode"] == mode) & (t["failures"] == f) & t["survived"]]
            row[f"{mode} simulated (smallest RF run that survived)"] = int(ok["rf"].min()) if len(ok) else None
            row[f"{mode} theory"] = theory.replicas_needed(int(f), mode)
        rows.append(row)
    return pd.DataFrame(rows)


def replicas_needed_table(agg: Aggregates) -> Table:
    """`replicas_needed` for readers: a footnote wherever theory's RF was never run, so the two cannot agree."""
    needed = replicas_needed(agg)
    t = failure_table(agg)
    swept = {mode: sorted(int(r) for r in t[t["mode"] == mode]["rf"].unique()) for mode in MODES}
    rows, unswept = [], set()
    for _, r in needed.iterrows():
        f = int(r["failures"])
        row = {"brokers crashed (f)": f}
        for mode in MODES:
            sim, want = r[f"{mode} simulated (smallest RF run that survived)"], int(r[f"{mode} theory"])
            runs_f = sorted(int(x) for x in t[(t["mode"] == mode) & (t["failures"] == f)]["rf"])
            if pd.isna(sim):
                cell = f"none of RF {', '.join(map(str, runs_f))}" if runs_f else "not run"
            else:
                cell = str(int(sim))
            if want not in swept[mode]:
                cell += " *"
                unswept.add(want)
            row[f"{mode}: smallest RF that survived"] = cell
            row[f"{mode}: theory ({'f+1' if mode == 'isr' else '2f+1'})"] = want
        rows.append(row)
    notes = []
    if unswept:
        ran = sorted(set(swept["isr"]) | set(swept["quorum"]))
        notes.append(f"* Theory's RF ({', '.join(map(str, sorted(unswept)))}) was not simulated: the study runs RF "
                     f"{', '.join(map(str, ran))}, so the smallest RF it can show is the smallest of those that "
                     f"survived. The rows agree wherever theory's RF was run.")
    return Table(pd.DataFrame(rows), notes)


def failure_table_view(agg: Aggregates) -> Table:
    """`failure_table` for readers: seconds, not milliseconds; survived as yes/no."""
    t = failure_table(agg)
    view = pd.DataFrame({"mode": t["mode"], "RF": t["rf"].astype(int), "brokers crashed (f)": t["failures"].astype(int),
                         "time unwritable (s)": t["unavailable_wall_ms"] / 1000.0,
                         "acknowledged records lost": t["acked_records_lost"],
                         "committed records lost": t["committed_records_lost"],
                         "available again while they were down": t["survived"],
                         "theory: replicas needed": t["needed"].astype(int)})
    at, lasts = _crash(agg)
    return Table(view, [f"The f brokers crash at {fmt(at / 1000)} s for {fmt(lasts / 1000)} s; 'available again' means a "
                        f"leader was elected within the first half of that window."])


def survival(agg: Aggregates):
    t = failure_table(agg)
    fig, axes = plots.figure(2, width=4.8)
    fs = np.arange(1, int(t["failures"].max()) + 1)
    for ax, mode in zip(axes, MODES):
        g = t[t["mode"] == mode]
        ok, bad = g[g["survived"]], g[~g["survived"]]
        ax.scatter(ok["failures"], ok["rf"], marker="o", s=70, color="#2ca02c", label="available within a session timeout")
        ax.scatter(bad["failures"], bad["rf"], marker="x", s=70, color="#d62728", label="offline until brokers return")
        ax.plot(fs, [theory.replicas_needed(int(f), mode) for f in fs], "--", color=plots.color(mode),
                label="theory: f+1" if mode == "isr" else "theory: 2f+1")
        for _, r in g.iterrows():
            ax.annotate(f"{r['unavailable_wall_ms'] / 1000:.0f}s", (r["failures"], r["rf"]), textcoords="offset points",
                        xytext=(6, 4), fontsize=7)
        ax.set_ylim(1.5, 8.5)
        ax.set_xlim(0.5, float(fs.max()) + 0.7)  # room for the labels of the last column
        plots.finish(ax, f"{mode}: f of RF brokers crash (labels: time unwritable)", "brokers crashed together (f)",
                     "replication factor")
    return fig


def _slow(agg: Aggregates):
    """The slow-follower part's slowdown: its fault settings."""
    return next(f for f in part_settings(agg, "slow_follower").faults if f.kind == "slow")


def slow_text(agg: Aggregates) -> str:
    """Markdown: the slow follower's schedule, read from the part's settings."""
    f = _slow(agg)
    return (f"One follower fetches {fmt(f.factor)}× slower from {seconds(f.at_ms)} to {seconds(f.at_ms + f.duration_ms)}. "
            f"ISR acks=all waits for it until it is evicted (`replica.lag.time.max.ms`, checked every half of it); the "
            f"quorum never waits for it. A slow follower that still completes fetches now and then can refresh its "
            f"\"caught up\" time, so it may stay in the ISR longer than a dead one would (the grey band is the dead "
            f"follower's eviction window).")


def slow_follower(agg: Aggregates):
    part = agg.part("slow_follower")
    slow = _slow(agg)
    df = part.wide(["produce_latency_ms_max", P99])
    fig, axes = plots.figure(2)
    tl = part.timeline.assign(series=lambda d: d["mode"] + " lag=" + d["lag_time_ms"].astype(int).astype(str))
    order = [f"{m} lag={int(l)}" for m in MODES for l in sorted(part.configs["lag_time_ms"].unique())]
    plots.timeline(axes[0], tl, "latency_ms_max", "series", order=order)
    plots.finish(axes[0], f"worst produce latency per time bin (follower slow {fmt(slow.at_ms / 1000)}–"
                 f"{fmt((slow.at_ms + slow.duration_ms) / 1000)} s)", "simulated time (s)",
                 "max latency (ms)", logy=True)
    plots.lines_with_ci(axes[1], df, "lag_time_ms", "produce_latency_ms_max", "mode", order=MODES, label="{}: max latency")
    lags = np.array(sorted(df["lag_time_ms"].unique()), dtype=float)
    axes[1].fill_between(lags, lags, 1.5 * lags, color="#999999", alpha=0.25, label="eviction: lag.time .. 1.5 × lag.time")
    plots.finish(axes[1], "acks=all stall vs replica.lag.time.max.ms", "replica.lag.time.max.ms", "max produce latency (ms)",
                 logy=True)
    return fig


def headline(agg: Aggregates) -> tuple[dict, str]:
    rf_df = agg.wide([P50, P99], "latency_rf")
    pred = predictions(agg)
    numbers = {}
    for mode in MODES:
        numbers[f"rf5_{mode}_p99_ms"] = num(value(rf_df, P99, mode=mode, rf=5), 2)
        numbers[f"rf5_{mode}_p99_predicted_ms"] = num(value(pred[pred.part == "latency_rf"], "p99", mode=mode, rf=5), 2)
    tail = agg.wide([P99], "latency_tail")
    top = float(tail["sigma"].max())
    for mode in MODES:
        numbers[f"tail_sigma{top:g}_{mode}_p99_ms"] = num(value(tail, P99, mode=mode, sigma=top), 1)
    needed = replicas_needed(agg)
    two = needed[needed["failures"] == 2]
    numbers["replicas_to_survive_2_isr"] = _first(two, "isr simulated (smallest RF run that survived)")
    numbers["replicas_to_survive_2_quorum"] = _first(two, "quorum simulated (smallest RF run that survived)")
    failures = failure_table(agg)
    numbers["acked_records_lost_in_failure_runs"] = int(failures["acked_records_lost"].fillna(0).sum())
    slow = agg.wide(["produce_latency_ms_max"], "slow_follower")
    lag = float(slow["lag_time_ms"].min())
    for mode in MODES:
        numbers[f"slow_follower_lag{lag:g}_{mode}_max_ms"] = num(value(slow, "produce_latency_ms_max", mode=mode, lag_time_ms=lag), 1)
    finding = (f"Quorum commits at the median follower: at RF=5 its acks=all p99 is {fmt(numbers['rf5_quorum_p99_ms'])} ms "
               f"against {fmt(numbers['rf5_isr_p99_ms'])} ms for ISR (order statistics: {fmt(numbers['rf5_quorum_p99_predicted_ms'])} "
               f"and {fmt(numbers['rf5_isr_p99_predicted_ms'])} ms); surviving 2 failures took RF "
               f"{fmt(numbers['replicas_to_survive_2_isr'])} under ISR and {fmt(numbers['replicas_to_survive_2_quorum'])} under quorum; "
               f"a slow follower stalled ISR writes for up to {fmt(numbers[f'slow_follower_lag{lag:g}_isr_max_ms'])} ms "
               f"(quorum: {fmt(numbers[f'slow_follower_lag{lag:g}_quorum_max_ms'])} ms).")
    return numbers, finding


def _first(df: pd.DataFrame, column: str):
    if not len(df) or column not in df or pd.isna(df[column].iloc[0]):
        return None
    return int(df[column].iloc[0])
