"""Study 1c: quorum vs ISR across three zones, with and without fsync, a far zone, correlated power loss."""

from __future__ import annotations

import pandas as pd

from .. import plots
from ..present import Table, interval
from ..tables import Aggregates
from .common import interval_method, fmt, num, value

P50, P99 = "produce_latency_ms_p50", "produce_latency_ms_p99"
# (mode, fsync) -> what a reader calls that setting
SETTINGS = {("isr", "off"): "ISR (Kafka)", ("isr", "on"): "ISR + fsync per append",
            ("quorum", "off"): "quorum, from memory", ("quorum", "on"): "quorum + fsync (Raft)"}
ORDER = list(SETTINGS.values())
TICKS = ["ISR\n(Kafka)", "ISR + fsync\nper append", "quorum\nfrom memory", "quorum + fsync\n(Raft)"]  # ORDER, on an axis
LAYOUTS = {"three_zones": "zones 1–2 ms apart", "far_zone_c": "zone c 5–10 ms away"}
LOSSES = {"zone_a": "the leader's zone", "cluster": "every broker"}
LOSS_MEASURES = ["acked_records_lost", "committed_records_lost", "unavailable_wall_ms", P99]


def _with_setting(df: pd.DataFrame) -> pd.DataFrame:
    return df.assign(setting=[SETTINGS[(m, f)] for m, f in zip(df["mode"], df["fsync"])])


def latency(agg: Aggregates) -> pd.DataFrame:
    """Per setting, RF and layout: p50 and p99 (means over seeds with 95% intervals)."""
    return _with_setting(agg.wide([P50, P99], "latency"))


def power_loss(agg: Aggregates) -> pd.DataFrame:
    """Per setting, RF and power loss: what was lost, how long nothing could be written, p99."""
    return _with_setting(agg.wide(LOSS_MEASURES, "power_loss"))


def latency_figure(agg: Aggregates):
    """p50 and p99 per setting, RF as bars side by side; one column per layout."""
    df = latency(agg)
    layouts = [lay for lay in LAYOUTS if lay in set(df["layout"])]
    fig, axes = plots.figure(len(layouts), 2, width=5.6, height=3.4)
    for row, (q, col) in enumerate((("p50", P50), ("p99", P99))):
        for j, lay in enumerate(layouts):
            ax = axes[row * len(layouts) + j]
            plots.grouped_bars(ax, df[df["layout"] == lay], "setting", "rf", col, group_order=ORDER,
                               label="RF {}")
            ax.set_xticks(range(len(ORDER)), TICKS, fontsize=8)
            plots.finish(ax, f"acks=all {q}, {LAYOUTS[lay]} (leader, clients in zone a)", "", f"{q} latency (ms)",
                         logy=True)
    return fig


def power_loss_figure(agg: Aggregates):
    """Acknowledged records lost and time unwritable per setting, the two losses side by side (each RF)."""
    df = power_loss(agg).assign(loss=lambda d: d["power_loss"].map(LOSSES))
    rfs = sorted(int(r) for r in df["rf"].unique())
    fig, axes = plots.figure(2, len(rfs), width=5.6, height=3.4)
    for i, rf in enumerate(rfs):
        part = df[df["rf"] == rf].assign(unavailable_s=lambda d: d["unavailable_wall_ms"] / 1000.0,
                                         unavailable_s_lo=lambda d: d["unavailable_wall_ms_lo"] / 1000.0,
                                         unavailable_s_hi=lambda d: d["unavailable_wall_ms_hi"] / 1000.0)
        for j, (m, title, unit) in enumerate((("acked_records_lost", "acknowledged records lost", "records"),
                                              ("unavailable_s", "time without a leader", "seconds"))):
            ax = axes[i * 2 + j]
            plots.grouped_bars(ax, part, "setting", "loss", m, group_order=ORDER, series_order=list(LOSSES.values()),
                               label="power lost: {}")
            ax.set_xticks(range(len(ORDER)), TICKS, fontsize=8)
            plots.finish(ax, f"RF {rf}: {title} (power off 10 s)", "", unit)
    return fig


def latency_table(agg: Aggregates) -> Table:
    df = latency(agg).assign(order=lambda d: d["setting"].map(ORDER.index), where=lambda d: d["layout"].map(list(LAYOUTS).index))
    rows = []
    for _, r in df.sort_values(["where", "rf", "order"]).iterrows():
        rows.append({"layout": LAYOUTS[r["layout"]], "RF": int(r["rf"]), "setting": r["setting"],
                     "p50 (ms)": r[P50], "p99 (ms)": r[P99], "p99 interval (ms)": interval(r[P99 + "_lo"], r[P99 + "_hi"])})
    seeds = int(agg.configs[agg.configs["part"] == "latency"]["runs"].min())
    return Table(pd.DataFrame(rows), [f"Means over {seeds} seed(s) of each run's percentile. {interval_method(agg)}"])


def power_loss_table(agg: Aggregates) -> Table:
    df = power_loss(agg).assign(order=lambda d: d["setting"].map(ORDER.index), where=lambda d: d["power_loss"].map(list(LOSSES).index))
    rows = []
    for _, r in df.sort_values(["where", "rf", "order"]).iterrows():
        rows.append({"power lost": LOSSES[r["power_loss"]], "RF": int(r["rf"]), "setting": r["setting"],
                     "acknowledged records lost": r["acked_records_lost"],
                     "committed records lost": r["committed_records_lost"],
                     "time without a leader (s)": r["unavailable_wall_ms"] / 1000.0,
                     "p99 (ms)": r[P99]})
    return Table(pd.DataFrame(rows), [
        "Power is lost at 8 s for 10 s. What survives a power loss is what was fsynced or written back by the OS "
        "(older than os.dirty.expire.ms, 30 s: nothing, in these runs). The controller declares a broker dead after "
        "its session timeout (6 s here); the producer gives up on a request to a powered-off leader after "
        "request.timeout.ms (3 s here), so p99 holds the wait for the new leader. " + interval_method(agg)])


def headline(agg: Aggregates) -> tuple[dict, str]:
    lat = latency(agg)
    loss = power_loss(agg)
    numbers = {}
    for (mode, fsync), _ in SETTINGS.items():
        key = f"{mode}_fsync_{fsync}"
        for lay in LAYOUTS:
            numbers[f"{lay}_rf3_{key}_p99_ms"] = num(value(lat, P99, mode=mode, fsync=fsync, rf=3, layout=lay), 2)
        for where in LOSSES:
            numbers[f"{where}_loss_rf3_{key}_acked_lost"] = num(
                value(loss, "acked_records_lost", mode=mode, fsync=fsync, rf=3, power_loss=where), 0)
    zone = loss[loss["power_loss"] == "zone_a"]["acked_records_lost"]
    numbers["zone_loss_acked_lost_max"] = num(float(zone.max()) if len(zone) else float("nan"), 0)
    n = numbers
    zone_sentence = ("Losing the leader's zone loses no acknowledged record in any setting" if n["zone_loss_acked_lost_max"] == 0
                     else f"Losing the leader's zone loses up to {fmt(n['zone_loss_acked_lost_max'])} acknowledged records")
    finding = (f"Across three zones at RF 3, acks=all p99 is {fmt(n['three_zones_rf3_isr_fsync_off_p99_ms'])} ms under "
               f"Kafka's ISR and {fmt(n['three_zones_rf3_quorum_fsync_on_p99_ms'])} ms under a quorum that fsyncs as Raft "
               f"does ({fmt(n['three_zones_rf3_isr_fsync_on_p99_ms'])} ms for ISR with an fsync per append); with zone c "
               f"5–10 ms away, ISR waits for it ({fmt(n['far_zone_c_rf3_isr_fsync_off_p99_ms'])} ms) and the quorum does not "
               f"({fmt(n['far_zone_c_rf3_quorum_fsync_on_p99_ms'])} ms). {zone_sentence}; when every broker loses power, ISR and a quorum that acknowledge from memory lose "
               f"{fmt(n['cluster_loss_rf3_isr_fsync_off_acked_lost'])} and "
               f"{fmt(n['cluster_loss_rf3_quorum_fsync_off_acked_lost'])} acknowledged records, with fsync "
               f"{fmt(n['cluster_loss_rf3_isr_fsync_on_acked_lost'])} and {fmt(n['cluster_loss_rf3_quorum_fsync_on_acked_lost'])}.")
    return numbers, finding

