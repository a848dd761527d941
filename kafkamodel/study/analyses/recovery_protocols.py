"""Study 5: recovery protocols. Each published anomaly against its fix, over seeds."""

from __future__ import annotations

import pandas as pd

from .. import plots
from ..present import Table, interval, number
from ..tables import Aggregates
from .common import interval_method, fmt, num, value

# part -> (column, anomaly value, fix value, what the pair is)
PAIRS = {
    "kip101_truncation": ("version", "0.10", "0.11",
                          "KIP-101 #1: truncate to the local HW, then the leader fails"),
    "kip101_power_loss": ("version", "0.10", "0.11",
                          "KIP-101 #2: both replicas lose power; logs diverge"),
    "last_replica_standing": ("version", "3.9", "4.1", "KIP-966: the last ISR member returns with a shortened log"),
    "jepsen_2013": ("config", "kafka_0_8", "min_isr_2_clean", "Jepsen 2013: a leader cut off from its followers"),
}
MEASURES = ["acked_records_lost", "committed_records_lost", "replica_divergence", "unavailable_wall_ms"]
LABELS = {"acked_records_lost": "acknowledged records lost", "committed_records_lost": "committed records lost",
          "replica_divergence": "offsets on which replicas diverge", "unavailable_wall_ms": "time unwritable (s)"}


def table(agg: Aggregates) -> pd.DataFrame:
    """One row per pair and variant: the four measures' means with 95% CIs over seeds."""
    rows = []
    for part, (column, anomaly, fix, what) in PAIRS.items():
        if part not in set(agg.configs["part"]):
            continue
        df = agg.wide(MEASURES, part)
        for variant, val in (("anomaly", anomaly), ("fix", fix)):
            r = df[df[column] == val]
            if r.empty:
                continue
            r = r.iloc[0]
            row = {"pair": part, "what": what, "variant": variant, "setting": f"{column}={val}", "seeds": int(r["runs"])}
            for m in MEASURES:
                scale = 1000.0 if m == "unavailable_wall_ms" else 1.0
                row[m] = r[m] / scale
                row[f"{m}_lo"], row[f"{m}_hi"] = r[f"{m}_lo"] / scale, r[f"{m}_hi"] / scale
            rows.append(row)
    return pd.DataFrame(rows)


def display_table(agg: Aggregates) -> Table:
    t = table(agg)
    shown = t[["pair", "variant", "setting", "seeds"]].copy()
    for m in MEASURES:  # the mean, and its interval beside it in brackets
        shown[LABELS[m]] = [number(v) + (f" ({interval(lo, hi)})" if " – " in interval(lo, hi) else "")
                            for v, lo, hi in zip(t[m], t[f"{m}_lo"], t[f"{m}_hi"])]
    return Table(shown, [f"Means over seeds, their 95% interval in brackets. {interval_method(agg)}"])


def pairs(agg: Aggregates):
    """Four panels (one per measure): anomaly vs fix for each pair, 95% CI whiskers."""
    t = table(agg)
    fig, axes = plots.figure(2, 2, width=5.6, height=3.4)
    for ax, m in zip(axes, MEASURES):
        plots.grouped_bars(ax, t, "pair", "variant", m, series_order=["anomaly", "fix"], group_order=list(PAIRS))
        ax.tick_params(axis="x", labelsize=7, rotation=15)
        if m != "unavailable_wall_ms":  # counts from a hundred to tens of thousands, and zeros
            ax.set_yscale("symlog", linthresh=1)
            plots.plain_log_labels(ax.yaxis)
            ax.set_ylim(bottom=0)
        plots.finish(ax, LABELS[m], "", LABELS[m])
    return fig


def headline(agg: Aggregates) -> tuple[dict, str]:
    t = table(agg)
    numbers = {}
    for part in PAIRS:
        for variant in ("anomaly", "fix"):
            for m, short in (("acked_records_lost", "acked_lost"), ("committed_records_lost", "committed_lost"),
                             ("replica_divergence", "divergence"), ("unavailable_wall_ms", "unavailable_s")):
                numbers[f"{part}_{variant}_{short}"] = num(value(t, m, pair=part, variant=variant), 1)

    def n(key):
        return numbers.get(key)

    finding = (f"Truncating to the local HW lost {fmt(n('kip101_truncation_anomaly_committed_lost'))} committed records "
               f"(leader epoch: {fmt(n('kip101_truncation_fix_committed_lost'))}) and after a double power loss left logs diverging "
               f"on {fmt(n('kip101_power_loss_anomaly_divergence'))} offsets (leader epoch: {fmt(n('kip101_power_loss_fix_divergence'))}); "
               f"re-electing the last replica standing lost {fmt(n('last_replica_standing_anomaly_committed_lost'))} committed "
               f"records (ELR: {fmt(n('last_replica_standing_fix_committed_lost'))}); Kafka 0.8's defaults lost "
               f"{fmt(n('jepsen_2013_anomaly_acked_lost'))} acknowledged writes in Jepsen's partition, min.insync.replicas=2 with "
               f"clean elections {fmt(n('jepsen_2013_fix_acked_lost'))}, at the price of "
               f"{fmt(n('jepsen_2013_fix_unavailable_s'))} s unwritable.")
    return numbers, finding
