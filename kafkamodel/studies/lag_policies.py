"""Study 2: lag policies. The 0.8 count rule's shuttle, eviction of a dead replica, a stuck follower."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..kit import Aggregates, Table, interval, plots
from .common import fmt, interval_method, num, part_settings, seconds, value

RULES = ["time", "count"]
EXPANDS_NOTE = ("Expands outnumber shrinks (up to twice, with RF 3): one shrink removes every follower that is out of "
                "sync at that check, in one ISR change, while each follower rejoins on its own next fetch, one expand "
                "each.")


def shuttle(agg: Aggregates):
    """ISR shrinks of healthy followers vs burst size (both rules) and vs replica.lag.max.messages."""
    fig, axes = plots.figure(2)
    burst = agg.wide(["isr_shrinks", "isr_expands"], "burst_size")
    plots.lines_with_ci(axes[0], burst, "burst", "isr_shrinks", "rule", order=RULES, label="{} rule: shrinks")
    plots.lines_with_ci(axes[0], burst, "burst", "isr_expands", "rule", order=RULES, label="{} rule: expands",
                        linestyle=":", marker="s")
    plots.finish(axes[0], "ISR shrinks/expands of healthy followers vs burst size", "records per client per burst",
                 "ISR changes per run", logx=True)
    mm = agg.wide(["isr_shrinks", "isr_expands"], "max_messages")
    plots.lines_with_ci(axes[1], mm, "max_messages", "isr_shrinks", label="count rule: shrinks")
    plots.lines_with_ci(axes[1], mm, "max_messages", "isr_expands", label="count rule: expands", linestyle=":", marker="s",
                        fixed_color=plots.CYCLE[1])
    plots.finish(axes[1], "the count rule vs its threshold", "replica.lag.max.messages", "ISR changes per run", logx=True)
    for ax in axes:
        ax.set_ylim(bottom=0)  # counts
    return fig


def shuttle_table(agg: Aggregates) -> Table:
    burst = agg.wide(["isr_shrinks", "isr_expands", "produce_latency_ms_p99"], "burst_size").sort_values(["rule", "burst"])
    view = pd.DataFrame({
        "lag rule": burst["rule"], "burst (records per client)": burst["burst"].astype(int),
        "ISR shrinks per run": burst["isr_shrinks"],
        "shrinks interval": [interval(lo, hi) for lo, hi in zip(burst["isr_shrinks_lo"], burst["isr_shrinks_hi"])],
        "ISR expands per run": burst["isr_expands"],
        "produce p99 (ms)": burst["produce_latency_ms_p99"],
        "p99 interval (ms)": [interval(lo, hi) for lo, hi in
                                  zip(burst["produce_latency_ms_p99_lo"], burst["produce_latency_ms_p99_hi"])],
    })
    return Table(view, [EXPANDS_NOTE, interval_method(agg)])


def eviction_text(agg: Aggregates) -> str:
    """Markdown: the dead-follower part's schedule and settings, read from the spec."""
    s = part_settings(agg, "evict_dead")
    crash = next(f for f in s.faults if f.kind == "crash")
    acks = {-1: "all"}.get(s.producers[0].acks, s.producers[0].acks)
    return (f"A follower crashes at {seconds(crash.at_ms)} (`replica.lag.time.max.ms` = "
            f"{seconds(s.broker.replica_lag_time_max_ms)}; producers with acks={acks}, as in 0.8). The count rule "
            f"evicts it once enough messages pile up (at the next periodic check), so the time depends on the traffic; "
            f"the time rule takes the same time at any rate. (With acks=all and at most "
            f"{s.producers[0].max_in_flight} batches in flight, the producer blocks behind the dead follower, the log "
            f"stops growing, and the count rule never fires.)")


def eviction(agg: Aggregates):
    """Time from a follower's crash to its removal from the ISR, vs traffic rate."""
    df = agg.wide(["time_to_shrink_ms"], "evict_dead")
    fig, axes = plots.figure(1, width=6.0)
    plots.lines_with_ci(axes[0], df, "rate", "time_to_shrink_ms", "rule", order=RULES, label="{} rule")
    plots.finish(axes[0], "time to evict a dead follower vs traffic", "records per second", "crash → ISR shrink (ms)",
                 logx=True)
    return fig


def stuck(agg: Aggregates) -> dict:
    """The stuck-follower part's settings and what its runs did: the pause, the KRaft session, and per lag time the
    stall (max produce latency) and the time to the ISR shrink; `fenced`: the lag times whose follower left the ISR
    before its lag time ran out (the controller fenced the silent broker first)."""
    s = part_settings(agg, "stuck_follower")
    pause = next(f for f in s.faults if f.kind == "pause")
    df = agg.wide(["produce_latency_ms_max", "produce_latency_ms_p99", "time_to_shrink_ms"], "stuck_follower")
    df = df.sort_values("lag_time_ms").reset_index(drop=True)
    fenced = df[df["time_to_shrink_ms"] < df["lag_time_ms"]]
    return {"settings": s, "pause_ms": pause.at_ms, "paused_ms": pause.duration_ms,
            "session_ms": s.broker.session_timeout_ms, "heartbeat_ms": s.broker.heartbeat_interval_ms,
            "table": df, "fenced": fenced}


def stuck_text(agg: Aggregates) -> str:
    """Markdown: the stuck follower's story, every number from the part's settings and its runs."""
    k = stuck(agg)
    df, fenced = k["table"], k["fenced"]
    stalls = ", ".join(f"{fmt(r['produce_latency_ms_max'])} ms at {fmt(r['lag_time_ms'])} ms" for _, r in df.iterrows())
    text = (f"A follower process is paused from {seconds(k['pause_ms'])} to {seconds(k['pause_ms'] + k['paused_ms'])}. "
            f"acks=all waits for it until the leader drops it from the ISR, between 1 and 1.5 × "
            f"`replica.lag.time.max.ms` (the leader checks every half of it: the grey band), so the stall "
            f"(the worst produce latency) grows with the lag time: {stalls}.")
    if k["heartbeat_ms"] is not None:  # KRaft: the controller fences a broker whose heartbeats stop
        text += (f"\n\nThe controller has a deadline of its own: KRaft fences a broker that sent no heartbeat for "
                 f"`broker.session.timeout.ms` ({seconds(k['session_ms'])}; heartbeats every "
                 f"{seconds(k['heartbeat_ms'])}), and a fenced broker leaves every ISR (dashed line).")
        if len(fenced):
            r = fenced.iloc[0]
            text += (f" From `replica.lag.time.max.ms` {fmt(r['lag_time_ms'])} ms on, the session expired first: the "
                     f"paused broker was fenced and dropped from the ISR {fmt(r['time_to_shrink_ms'])} ms after it "
                     f"stopped, and the stall is {fmt(r['produce_latency_ms_max'])} ms, not 1–1.5 × the lag time. "
                     f"With these settings a lag time above the session buys no longer stall.")
    return text


def stuck_follower(agg: Aggregates):
    """acks=all latency while a follower is stuck, vs replica.lag.time.max.ms."""
    part = agg.part("stuck_follower")
    k = stuck(agg)
    df = k["table"]
    fig, axes = plots.figure(2)
    tl = part.timeline.assign(series=lambda d: "lag=" + d["lag_time_ms"].astype(int).astype(str))
    plots.timeline(axes[0], tl, "latency_ms_max", "series",
                   order=[f"lag={int(l)}" for l in sorted(part.configs["lag_time_ms"].unique())])
    start, end = k["pause_ms"] / 1000.0, (k["pause_ms"] + k["paused_ms"]) / 1000.0
    plots.finish(axes[0], f"worst produce latency per time bin (follower paused {fmt(start)}–{fmt(end)} s)",
                 "simulated time (s)", "max latency (ms)", logy=True)
    plots.lines_with_ci(axes[1], df, "lag_time_ms", "produce_latency_ms_max", label="max produce latency")
    plots.lines_with_ci(axes[1], df, "lag_time_ms", "time_to_shrink_ms", label="stuck → ISR shrink", marker="s",
                        linestyle=":", fixed_color=plots.CYCLE[3])
    lags = np.array(sorted(df["lag_time_ms"].unique()), dtype=float)
    axes[1].fill_between(lags, lags, 1.5 * lags, color="#999999", alpha=0.25, label="lag.time .. 1.5 × lag.time")
    if k["heartbeat_ms"] is not None:
        axes[1].axhline(k["session_ms"], color="black", linestyle="--", linewidth=1,
                        label=f"broker.session.timeout.ms ({seconds(k['session_ms'])}): fenced")
    plots.finish(axes[1], "acks=all stall vs replica.lag.time.max.ms", "replica.lag.time.max.ms", "ms", logx=True, logy=True)
    return fig


def headline(agg: Aggregates) -> tuple[dict, str]:
    burst = agg.wide(["isr_shrinks", "isr_expands"], "burst_size")
    top = float(burst["burst"].max())
    evict = agg.wide(["time_to_shrink_ms"], "evict_dead")
    slow, fast = float(evict["rate"].min()), float(evict["rate"].max())
    k = stuck(agg)
    stuck_df = k["table"]
    numbers = {
        f"burst{top:g}_count_rule_isr_shrinks": num(value(burst, "isr_shrinks", rule="count", burst=top), 1),
        f"burst{top:g}_time_rule_isr_shrinks": num(value(burst, "isr_shrinks", rule="time", burst=top), 1),
        f"evict_ms_count_rule_{slow:g}_per_s": num(value(evict, "time_to_shrink_ms", rule="count", rate=slow), 0),
        f"evict_ms_count_rule_{fast:g}_per_s": num(value(evict, "time_to_shrink_ms", rule="count", rate=fast), 0),
        f"evict_ms_time_rule_{slow:g}_per_s": num(value(evict, "time_to_shrink_ms", rule="time", rate=slow), 0),
        f"evict_ms_time_rule_{fast:g}_per_s": num(value(evict, "time_to_shrink_ms", rule="time", rate=fast), 0),
        "broker_session_timeout_ms": k["session_ms"],
    }
    for lag in stuck_df["lag_time_ms"]:
        numbers[f"stuck_follower_lag{lag:g}_max_latency_ms"] = num(value(stuck_df, "produce_latency_ms_max", lag_time_ms=lag), 0)
        numbers[f"stuck_follower_lag{lag:g}_time_to_shrink_ms"] = num(value(stuck_df, "time_to_shrink_ms", lag_time_ms=lag), 0)
    lo, hi = float(stuck_df["lag_time_ms"].min()), float(stuck_df["lag_time_ms"].max())
    fenced = set(k["fenced"]["lag_time_ms"])
    why = (f", where KRaft's {seconds(k['session_ms'])} broker session fenced the paused broker first" if hi in fenced
           else "")
    finding = (f"With bursts of {fmt(top)} records per client the 0.8 count rule shrank healthy followers' ISR "
               f"{fmt(numbers[f'burst{top:g}_count_rule_isr_shrinks'])} times a run (time rule: "
               f"{fmt(numbers[f'burst{top:g}_time_rule_isr_shrinks'])}). A stuck follower stalls acks=all "
               f"{fmt(numbers[f'stuck_follower_lag{lo:g}_max_latency_ms'])} ms at replica.lag.time.max.ms "
               f"{fmt(lo)} ms and {fmt(numbers[f'stuck_follower_lag{hi:g}_max_latency_ms'])} ms at {fmt(hi)} ms{why}.")
    return numbers, finding
