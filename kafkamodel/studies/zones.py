"""Study 1c: quorum vs ISR across three zones, with and without fsync, a far zone, correlated power loss."""

from __future__ import annotations

import pandas as pd

from ..kit import Aggregates, Table, interval, plots
from .common import choice, fmt, interval_method, num, part_settings, seconds, spread, value

P50, P99 = "produce_latency_ms_p50", "produce_latency_ms_p99"
# (mode, fsync) -> what a reader calls that setting
SETTINGS = {("isr", "off"): "ISR (Kafka)", ("isr", "on"): "ISR + fsync per append",
            ("quorum", "off"): "quorum, from memory", ("quorum", "on"): "quorum + fsync (Raft)"}
ORDER = list(SETTINGS.values())
TICKS = ["ISR\n(Kafka)", "ISR + fsync\nper append", "quorum\nfrom memory", "quorum + fsync\n(Raft)"]  # ORDER, on an axis
LAYOUTS = {"three_zones": "zones {} apart", "far_zone_c": "zone c {} away"}  # {}: zone a to c's one-way latency
LOSSES = {"zone_a": "the leader's zone", "cluster": "every broker"}
LOSS_MEASURES = ["acked_records_lost", "committed_records_lost", "unavailable_wall_ms", P99]


def layout_label(agg: Aggregates, layout: str) -> str:
    """'zone c 5–10 ms away': a layout named with its one-way latency from zone a to zone c, read from the
    layout's network.links (or the base scenario's)."""
    links = [((tuple(l["between"])), l["latency.ms"]) for l in choice(agg, "layout", layout).get("network.links", [])]
    links = links or list(part_settings(agg, "latency").links)
    return LAYOUTS[layout].format(spread(next(dist for ends, dist in links if set(ends) == {"rack:a", "rack:c"})))


def setup_text(agg: Aggregates) -> str:
    """Markdown: the three-zone cluster the latency part ran, read from its settings."""
    s = part_settings(agg, "latency")
    p = s.producers[0]
    between = next(dist for ends, dist in s.links if set(ends) == {"rack:a", "rack:b"})
    return (f"{s.brokers} brokers in zones {', '.join(sorted(set(s.racks)))} (`racks`, Kafka's `broker.rack`), one "
            f"partition placed rack-aware as Kafka places a new topic, so it has a replica in every zone; its leader "
            f"(broker 0) and the clients are in zone a. One way takes {spread(s.latency_ms)} inside a zone and "
            f"{spread(between)} between zones (`network.links`); the second panel has "
            f"{layout_label(agg, 'far_zone_c')}. {fmt(p.rate_per_s)} records/s, `linger.ms` {fmt(p.linger_ms)}.")


def _with_setting(df: pd.DataFrame) -> pd.DataFrame:
    return df.assign(setting=[SETTINGS[(m, f)] for m, f in zip(df["mode"], df["fsync"])])


def latency(agg: Aggregates) -> pd.DataFrame:
    """Per setting, RF and layout: p50 and p99 (means over seeds with their intervals)."""
    return _with_setting(agg.wide([P50, P99], "latency"))


def power_loss(agg: Aggregates) -> pd.DataFrame:
    """Per setting, RF and power loss: what was lost, how long nothing could be written, p99."""
    return _with_setting(agg.wide(LOSS_MEASURES, "power_loss"))


def latency_figure(agg: Aggregates):
    """p50 and p99 per setting (bars: RF 3 and RF 5, each p50 and p99, values written above), one row per layout;
    linear axes."""
    df = latency(agg)
    layouts = [lay for lay in LAYOUTS if lay in set(df["layout"])]
    rfs = sorted(int(r) for r in df["rf"].unique())
    fig, axes = plots.figure(1, len(layouts), width=11.0, height=3.6)
    for ax, lay in zip(axes, layouts):
        frames = [df[(df["layout"] == lay) & (df["rf"] == rf)].assign(
                      series=f"RF {rf} {q}", y=lambda d, c=col: d[c], y_lo=lambda d, c=col: d[c + "_lo"],
                      y_hi=lambda d, c=col: d[c + "_hi"])
                  for rf in rfs for q, col in (("p50", P50), ("p99", P99))]
        plots.grouped_bars(ax, pd.concat(frames), "setting", "series", "y", group_order=ORDER,
                           series_order=[f"RF {rf} {q}" for rf in rfs for q in ("p50", "p99")], values=True)
        ax.set_xticks(range(len(ORDER)), ORDER, fontsize=9)
        ax.set_ylim(0, ax.get_ylim()[1] * 1.1)
        plots.finish(ax, f"acks=all produce latency, {layout_label(agg, lay)} (leader and clients in zone a)", "",
                     "latency (ms)")
    return fig


def power_loss_story(agg: Aggregates) -> dict:
    """The power-loss part's settings: when and for how long power goes, the session timeout, the producer's request
    timeout and rate, the OS write-back delay; and whether RF 5 did exactly what RF 3 did."""
    s = part_settings(agg, "power_loss")
    faults = {where: choice(agg, "power_loss", where)["faults"][0] for where in LOSSES}
    first = next(iter(faults.values()))
    df = power_loss(agg)
    rfs = sorted(int(r) for r in df["rf"].unique())
    same = None
    if len(rfs) > 1:
        keys = ["mode", "fsync", "power_loss"]
        a, b = (df[df["rf"] == rf].set_index(keys).sort_index() for rf in rfs[:2])
        same = {"lost": float((a["acked_records_lost"] - b["acked_records_lost"]).abs().max()),
                "unavailable_ms": float((a["unavailable_wall_ms"] - b["unavailable_wall_ms"]).abs().max()),
                "rfs": rfs[:2]}
    return {"at_ms": float(first["at.ms"]), "for_ms": float(first["duration.ms"]), "session_ms": s.broker.session_timeout_ms,
            "request_timeout_ms": s.producers[0].request_timeout_ms, "rate": s.producers[0].rate_per_s,
            "dirty_expire_ms": s.os.dirty_expire_ms, "rfs": rfs, "same": same}


def power_loss_text(agg: Aggregates) -> str:
    """Markdown: what the power-loss part did, its times read from the study's settings."""
    k = power_loss_story(agg)
    text = (f"At {seconds(k['at_ms'])} either the leader's zone or every broker loses power for {seconds(k['for_ms'])}. "
            f"What survives is what was fsynced, or written back by the operating system (pages older than "
            f"`os.vm.dirty_expire_centisecs`, {seconds(k['dirty_expire_ms'])}: none yet at {seconds(k['at_ms'])}). RF 3 spans three "
            f"zones and RF 5 puts two replicas in zones a and b, so losing one zone leaves a majority and an in-sync "
            f"replica with every acknowledged record; losing every broker leaves only what reached a disk: at "
            f"{fmt(k['rate'])} records/s, up to {fmt(k['rate'] * k['at_ms'] / 1000.0)} records acknowledged before the "
            f"power went.")
    same = k["same"]
    if same is not None and same["lost"] == 0:
        text += (f"\n\nRF {same['rfs'][1]} lost exactly what RF {same['rfs'][0]} lost in every setting, and was without a "
                 f"leader as long (to within {fmt(same['unavailable_ms'])} ms): a zone's loss costs the session timeout "
                 f"({seconds(k['session_ms'])}) and a cluster's the power-off time, whatever the RF. The figure shows "
                 f"RF {same['rfs'][0]}; the table both.")
    return text


def power_loss_figure(agg: Aggregates):
    """Acknowledged records lost and time without a leader per setting, the two losses side by side; one row per RF,
    or RF 3 alone when the other RF did exactly the same (power_loss_text says so)."""
    k = power_loss_story(agg)
    df = power_loss(agg).assign(loss=lambda d: d["power_loss"].map(LOSSES))
    rfs = k["rfs"][:1] if k["same"] is not None and k["same"]["lost"] == 0 else k["rfs"]
    fig, axes = plots.figure(2, len(rfs), width=5.5, height=3.4)
    for i, rf in enumerate(rfs):
        part = df[df["rf"] == rf].assign(unavailable_s=lambda d: d["unavailable_wall_ms"] / 1000.0,
                                         unavailable_s_lo=lambda d: d["unavailable_wall_ms_lo"] / 1000.0,
                                         unavailable_s_hi=lambda d: d["unavailable_wall_ms_hi"] / 1000.0)
        for j, (m, title, unit) in enumerate((("acked_records_lost", "acknowledged records lost", "records"),
                                              ("unavailable_s", "time without a leader", "seconds"))):
            ax = axes[i * 2 + j]
            plots.grouped_bars(ax, part, "setting", "loss", m, group_order=ORDER, series_order=list(LOSSES.values()),
                               label="power lost: {}", values=True)
            ax.set_xticks(range(len(ORDER)), TICKS, fontsize=8)
            ax.set_ylim(0, ax.get_ylim()[1] * 1.6)  # room for the values and the legend above the bars
            plots.finish(ax, f"RF {rf}: {title} (power off {seconds(k['for_ms'])})", "", unit)
            ax.legend(fontsize=8, loc="upper left")
    return fig


def latency_table(agg: Aggregates) -> Table:
    df = latency(agg).assign(order=lambda d: d["setting"].map(ORDER.index), where=lambda d: d["layout"].map(list(LAYOUTS).index))
    rows = []
    for _, r in df.sort_values(["where", "rf", "order"]).iterrows():
        rows.append({"layout": layout_label(agg, r["layout"]), "RF": int(r["rf"]), "setting": r["setting"],
                     "p50 (ms)": r[P50], "p99 (ms)": r[P99], "p99 interval (ms)": interval(r[P99 + "_lo"], r[P99 + "_hi"])})
    seeds = int(agg.configs[agg.configs["part"] == "latency"]["runs"].min())
    return Table(pd.DataFrame(rows), [f"Means over {seeds} seed(s) of each run's percentile. {interval_method(agg)}"])


def power_loss_table(agg: Aggregates) -> Table:
    k = power_loss_story(agg)
    df = power_loss(agg).assign(order=lambda d: d["setting"].map(ORDER.index), where=lambda d: d["power_loss"].map(list(LOSSES).index))
    rows = []
    for _, r in df.sort_values(["where", "rf", "order"]).iterrows():
        rows.append({"power lost": LOSSES[r["power_loss"]], "RF": int(r["rf"]), "setting": r["setting"],
                     "acknowledged records lost": r["acked_records_lost"],
                     "committed records lost": r["committed_records_lost"],
                     "time without a leader (s)": r["unavailable_wall_ms"] / 1000.0,
                     "p99 (ms)": r[P99]})
    return Table(pd.DataFrame(rows), [
        f"Power is lost at {seconds(k['at_ms'])} for {seconds(k['for_ms'])}. The controller fences a broker after its "
        f"session timeout ({seconds(k['session_ms'])} here); the producer gives up on a request to a powered-off leader "
        f"after request.timeout.ms ({seconds(k['request_timeout_ms'])} here), so p99 holds the wait for the new leader. "
        + interval_method(agg)])


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
    memory = [n[f"cluster_loss_rf3_{m}_fsync_off_acked_lost"] for m in ("isr", "quorum")]
    synced = [n[f"cluster_loss_rf3_{m}_fsync_on_acked_lost"] for m in ("isr", "quorum")]
    zone_part = ("no acknowledged record" if n["zone_loss_acked_lost_max"] == 0
                 else f"up to {fmt(n['zone_loss_acked_lost_max'])} acknowledged records")
    cluster = (f"a whole-cluster power loss {fmt(min(memory))}" + (f"–{fmt(max(memory))}" if max(memory) != min(memory) else "")
               + (" unless every write is fsynced" if max(synced) == 0 else f" ({fmt(max(synced))} with fsync)"))
    finding = (f"At RF 3 across three zones, acks=all p99 is {fmt(n['three_zones_rf3_isr_fsync_off_p99_ms'])} ms under "
               f"ISR, {fmt(n['three_zones_rf3_quorum_fsync_on_p99_ms'])} ms under a Raft quorum, "
               f"{fmt(n['three_zones_rf3_isr_fsync_on_p99_ms'])} ms for ISR fsyncing each append; "
               f"{layout_label(agg, 'far_zone_c')}: {fmt(n['far_zone_c_rf3_isr_fsync_off_p99_ms'])} vs "
               f"{fmt(n['far_zone_c_rf3_quorum_fsync_on_p99_ms'])} ms. A zone's power loss loses {zone_part}, {cluster}.")
    return numbers, finding
