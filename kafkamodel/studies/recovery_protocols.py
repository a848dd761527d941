"""Study 5: recovery protocols. Each published anomaly against its fix, over seeds."""

from __future__ import annotations

import math

import pandas as pd

from ..kit import Aggregates, Table, plots
from .common import fmt, interval_method, mean_and_interval, num, scaled_means, value

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
    """One row per pair and variant: the four measures' means and intervals over seeds."""
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
            rows.append({"pair": part, "what": what, "variant": variant, "setting": f"{column}={val}",
                         "seeds": int(r["runs"]), **scaled_means(r, MEASURES, ("unavailable_wall_ms",))})
    return pd.DataFrame(rows)


def display_table(agg: Aggregates) -> Table:
    t = table(agg)
    shown = t[["pair", "variant", "setting", "seeds"]].copy()
    for m in MEASURES:  # the mean, and its interval beside it in brackets
        shown[LABELS[m]] = [mean_and_interval(v, lo, hi) for v, lo, hi in zip(t[m], t[f"{m}_lo"], t[f"{m}_hi"])]
    return Table(shown, [f"Means over seeds, their interval in brackets. {interval_method(agg)}"])


def pairs(agg: Aggregates):
    """Four panels (one per measure): anomaly vs fix for each pair, whiskers: the interval over seeds."""
    t = table(agg)
    fig, axes = plots.figure(2, 2, width=5.6, height=3.4)
    for ax, m in zip(axes, MEASURES):
        plots.grouped_bars(ax, t, "pair", "variant", m, series_order=["anomaly", "fix"], group_order=list(PAIRS),
                           values=True)  # counts from a few to tens of thousands: each bar says its value
        ax.set_xticks(range(len(PAIRS)), [p.replace("_", "\n", 1) for p in PAIRS], fontsize=8)
        ax.set_ylim(0, ax.get_ylim()[1] * 1.12)  # room for the values
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
        return fmt(numbers.get(key))

    def ran(part, variant):
        return PAIRS[part][1 if variant == "anomaly" else 2]

    power = "kip101_power_loss"
    kept = (numbers.get(f"{power}_fix_committed_lost") or 0) > 0  # leader epochs end the divergence, not the loss
    a, b = (value(t, "committed_records_lost", pair=power, variant=v) for v in ("anomaly", "fix"))
    lo, hi = (value(t, f"committed_records_lost_{e}", pair=power, variant="anomaly") for e in ("lo", "hi"))
    alike = lo <= b <= hi if not (math.isnan(lo) or math.isnan(hi)) else a == b  # the fix within the anomaly's seeds
    finding = (f"Leader epochs ({ran(power, 'fix')}) end the truncation loss ({n('kip101_truncation_anomaly_committed_lost')} "
               f"records) and the double power loss's divergence ({n(f'{power}_anomaly_divergence')} offsets)"
               + (f", not its {n(f'{power}_fix_committed_lost')} committed records lost"
                  + (" as without them" if alike else f" ({n(f'{power}_anomaly_committed_lost')} without)")
                  + " (never fsynced)" if kept else "")
               + f". ELR ({ran('last_replica_standing', 'fix')}) saves {n('last_replica_standing_anomaly_committed_lost')} "
               f"records; min.insync.replicas=2 saves Jepsen's {n('jepsen_2013_anomaly_acked_lost')} records at "
               f"{n('jepsen_2013_fix_unavailable_s')} s unwritable.")
    return numbers, finding
