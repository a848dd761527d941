"""Study 2: lag policies. The 0.8 count rule's shuttle, eviction of a dead replica, a stuck follower."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .. import plots
from ..present import Table, interval
from ..tables import Aggregates
from .common import INTERVAL_NOTE, fmt, num, value

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
        "shrinks 95% interval": [interval(lo, hi) for lo, hi in zip(burst["isr_shrinks_lo"], burst["isr_shrinks_hi"])],
        "ISR expands per run": burst["isr_expands"],
        "produce p99 (ms)": burst["produce_latency_ms_p99"],
        "p99 95% interval (ms)": [interval(lo, hi) for lo, hi in
                                  zip(burst["produce_latency_ms_p99_lo"], burst["produce_latency_ms_p99_hi"])],
    })
    return Table(view, [EXPANDS_NOTE, INTERVAL_NOTE])


def eviction(agg: Aggregates):
    """Time from a follower's crash to its removal from the ISR, vs traffic rate."""
    df = agg.wide(["time_to_shrink_ms"], "evict_dead")
    fig, axes = plots.figure(1, width=6.0)
    plots.lines_with_ci(axes[0], df, "rate", "time_to_shrink_ms", "rule", order=RULES, label="{} rule")
    plots.finish(axes[0], "time to evict a dead follower vs traffic", "records per second", "crash → ISR shrink (ms)",
                 logx=True)
    return fig


def stuck_follower(agg: Aggregates):
    """acks=all latency while a follower is stuck, vs replica.lag.time.max.ms."""
    part = agg.part("stuck_follower")
    df = part.wide(["produce_latency_ms_max", "produce_latency_ms_p99", "time_to_shrink_ms"])
    fig, axes = plots.figure(2)
    tl = part.timeline.assign(series=lambda d: "lag=" + d["lag_time_ms"].astype(int).astype(str))
    plots.timeline(axes[0], tl, "latency_ms_max", "series",
                   order=[f"lag={int(l)}" for l in sorted(part.configs["lag_time_ms"].unique())])
    plots.finish(axes[0], "worst produce latency per time bin (follower stuck 3–15 s)", "simulated time (s)",
                 "max latency (ms)", logy=True)
    plots.lines_with_ci(axes[1], df, "lag_time_ms", "produce_latency_ms_max", label="max produce latency")
    plots.lines_with_ci(axes[1], df, "lag_time_ms", "time_to_shrink_ms", label="stuck → ISR shrink", marker="s",
                        linestyle=":", fixed_color=plots.CYCLE[3])
    lags = np.array(sorted(df["lag_time_ms"].unique()), dtype=float)
    axes[1].fill_between(lags, lags, 1.5 * lags, color="#999999", alpha=0.25, label="lag.time .. 1.5 × lag.time")
    plots.finish(axes[1], "acks=all stall vs replica.lag.time.max.ms", "replica.lag.time.max.ms", "ms", logx=True, logy=True)
    return fig


def headline(agg: Aggregates) -> tuple[dict, str]:
    burst = agg.wide(["isr_shrinks", "isr_expands"], "burst_size")
    top = float(burst["burst"].max())
    evict = agg.wide(["time_to_shrink_ms"], "evict_dead")
    slow, fast = float(evict["rate"].min()), float(evict["rate"].max())
    stuck = agg.wide(["produce_latency_ms_max"], "stuck_follower")
    numbers = {
        f"burst{top:g}_count_rule_isr_shrinks": num(value(burst, "isr_shrinks", rule="count", burst=top), 1),
        f"burst{top:g}_time_rule_isr_shrinks": num(value(burst, "isr_shrinks", rule="time", burst=top), 1),
        f"evict_ms_count_rule_{slow:g}_per_s": num(value(evict, "time_to_shrink_ms", rule="count", rate=slow), 0),
        f"evict_ms_count_rule_{fast:g}_per_s": num(value(evict, "time_to_shrink_ms", rule="count", rate=fast), 0),
        f"evict_ms_time_rule_{slow:g}_per_s": num(value(evict, "time_to_shrink_ms", rule="time", rate=slow), 0),
        f"evict_ms_time_rule_{fast:g}_per_s": num(value(evict, "time_to_shrink_ms", rule="time", rate=fast), 0),
    }
    for lag in sorted(stuck["lag_time_ms"].unique()):
        numbers[f"stuck_follower_lag{lag:g}_max_latency_ms"] = num(value(stuck, "produce_latency_ms_max", lag_time_ms=lag), 0)
    lo, hi = float(stuck["lag_time_ms"].min()), float(stuck["lag_time_ms"].max())
    finding = (f"With bursts of {top:g} records per client the 0.8 count rule shrank the ISR of healthy followers "
               f"{fmt(numbers[f'burst{top:g}_count_rule_isr_shrinks'])} times a run, the time rule "
               f"{fmt(numbers[f'burst{top:g}_time_rule_isr_shrinks'])}; the count rule evicts a dead follower in "
               f"{fmt(numbers[f'evict_ms_count_rule_{fast:g}_per_s'])} ms at {fast:g} records/s but "
               f"{fmt(numbers[f'evict_ms_count_rule_{slow:g}_per_s'])} ms at {slow:g}/s (time rule: "
               f"{fmt(numbers[f'evict_ms_time_rule_{fast:g}_per_s'])} ms at any rate); a stuck follower stalls acks=all for "
               f"{fmt(numbers[f'stuck_follower_lag{lo:g}_max_latency_ms'])} ms at replica.lag.time.max.ms={lo:g} and "
               f"{fmt(numbers[f'stuck_follower_lag{hi:g}_max_latency_ms'])} ms at {hi:g}.")
    return numbers, finding
