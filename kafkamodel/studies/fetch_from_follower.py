"""Study 1d: zones and their bill. Leader-only reading against fetch from follower (KIP-392) in three zones, at a
low and a high rate: the bytes that cross zones and what they cost a month, beside the consumers' end-to-end latency
and the producer's p99; and at the low rate, the consumers' latency through Kafka's releases (docs/zones.md).

Every number a sentence states is read from the aggregates it sits beside: GB/month and $/month from the runs'
``cross_zone_bytes*`` and ``cross_zone_cost_per_month``, latencies from ``consume_e2e_latency_ms_*`` (every
group's records pooled) and ``produce_latency_ms_p99``.
"""

from __future__ import annotations

import pandas as pd

from ..kit import Aggregates, Table, interval, plots
from ..sim.results.zones import GIB, MONTH_MS
from .common import choice, fmt, interval_method, num, part_settings, seconds, spread, value

SELECTORS = {"leader_only": "leader only", "rack_aware": "fetch from follower"}
KINDS = {"produce": "produce", "replication": "replication", "consume": "consume"}
BYTES = ["cross_zone_bytes", *(f"cross_zone_bytes_{k}" for k in KINDS)]
COST = "cross_zone_cost_per_month"
LATENCY = {"consume_e2e_latency_ms_p50": "consumers' p50", "consume_e2e_latency_ms_p99": "consumers' p99",
           "produce_latency_ms_p99": "producer's p99"}
MEASURES = [*BYTES, COST, *LATENCY, "consumer_fetches_from_followers"]


def producing_ms(agg: Aggregates) -> tuple[float, float]:
    """The traffic part's run length and how long its producer sent (from its start.ms to the end)."""
    st = part_settings(agg, "traffic")
    return st.duration_ms, st.duration_ms - st.producers[0].start_ms


def _per_month(df: pd.DataFrame, duration_ms: float, sending_ms: float) -> pd.DataFrame:
    """Each bytes measure (mean and interval ends) as GB (2^30 bytes) a month, and the cost a month, at the rate
    while the producer sends: the summary's cost is at the run's average rate, which counts the quiet first
    second; both are scaled by the run's length over the sending time."""
    scale = MONTH_MS / sending_ms / GIB
    out = df.copy()
    for m in BYTES:
        gb = m.replace("cross_zone_bytes", "cross_zone_gb_month")
        for suffix in ("", "_lo", "_hi"):
            out[gb + suffix] = df[m + suffix] * scale
    for suffix in ("", "_lo", "_hi"):
        out[COST + suffix] = df[COST + suffix] * duration_ms / sending_ms
    return out


def traffic(agg: Aggregates) -> pd.DataFrame:
    """Per selector and rate: cross-zone GB/month by kind and in all, $/month, latencies (means, intervals)."""
    df = agg.wide(MEASURES, "traffic")
    return _per_month(df, *producing_ms(agg)).assign(selector_label=lambda d: d["selector"].map(SELECTORS))


def eras(agg: Aggregates) -> pd.DataFrame:
    """Per selector and Kafka version, at the low rate: the consumers' p50 and p99."""
    df = agg.wide(list(LATENCY), "eras")
    return df.assign(selector_label=df["selector"].map(SELECTORS))


def setup(agg: Aggregates) -> dict:
    """The cluster and load the parts ran, read from their settings."""
    s = part_settings(agg, "traffic")
    p = s.producers[0]
    cross = next(dist for ends, dist in s.links if set(ends) == {"rack:a", "rack:b"})
    rates = sorted(float(r) for r in traffic(agg)["rate"].unique())
    return {"brokers": s.brokers, "zones": sorted(set(s.racks)), "partitions": s.topics[0].partitions,
            "rf": s.topics[0].replication_factor, "record_bytes": p.record_size_bytes, "rates": rates,
            "start_ms": p.start_ms, "duration_ms": s.duration_ms, "groups": len(s.consumers),
            "price": s.cross_zone_price_per_gb, "local": s.latency_ms, "cross": cross, "version": s.kafka.version,
            "max_age_ms": s.consumers[0].metadata_max_age_ms, "fetch_wait_ms": s.consumers[0].fetch_max_wait_ms,
            "replica_wait_ms": s.broker.replica_fetch_wait_max_ms}


def setup_text(agg: Aggregates) -> str:
    """Markdown: the cluster, the load and the price, read from the study's settings."""
    k = setup(agg)
    selector = choice(agg, "selector", "rack_aware").get("broker.replica.selector.class", "")
    return (f"{k['brokers']} brokers in zones {', '.join(k['zones'])} (`broker.rack`), {k['partitions']} partitions at RF "
            f"{k['rf']} placed rack-aware, so every zone holds a replica of every partition and leads a third of them; "
            f"a producer in zone a sending {int(k['record_bytes']):,}-byte records at "
            f"{' or '.join(f'{int(r):,}' for r in k['rates'])} records/s from {fmt(k['start_ms'] / 1000)} s to "
            f"{fmt(k['duration_ms'] / 1000)} s; one consumer group in each zone (`client.rack`), each reading every "
            f"partition. One way takes {spread(k['local'])} inside a zone and {spread(k['cross'])} between zones. "
            f"*Leader only*: `replica.selector.class` unset; *fetch from follower*: `{selector.rsplit('.', 1)[-1]}`. "
            f"Kafka {k['version']}. A GB (2^30 bytes) crossing zones costs ${fmt(k['price'])} "
            f"(`network.cross.zone.price.per.gb`: AWS's $0.01 per GB in each direction, both ends counted); a month "
            f"is 730 hours at the rate while the producer sends (docs/zones.md).")


def _row(df: pd.DataFrame, **where) -> pd.Series:
    rows = df
    for key, v in where.items():
        rows = rows[rows[key] == v]
    return rows.iloc[0]


def traffic_figure(agg: Aggregates):
    """Per rate, cross-zone GB/month by kind for each selector (linear); then the consumers' p50 and p99 and the
    producer's p99 (log; whiskers: the interval over seeds). The values are in the table below it."""
    df = traffic(agg)
    rates = sorted(df["rate"].unique())
    fig, axes = plots.figure(len(rates) + 1, 1, width=11.5 / (len(rates) + 1), height=3.8)
    for ax, r in zip(axes, rates):
        part = df[df["rate"] == r]
        kinds = pd.concat([part.assign(kind=label, y=part[f"cross_zone_gb_month_{k}"],
                                       y_lo=part[f"cross_zone_gb_month_{k}_lo"], y_hi=part[f"cross_zone_gb_month_{k}_hi"])
                           for k, label in KINDS.items()])
        plots.grouped_bars(ax, kinds, "selector_label", "kind", "y", group_order=list(SELECTORS.values()),
                           series_order=list(KINDS.values()))
        ax.set_ylim(0, ax.get_ylim()[1] * 1.3)  # room for the legend
        plots.finish(ax, f"GB a month crossing zones, {fmt(r)} records/s", "", "GB / month")
    short = {"leader_only": "leader", "rack_aware": "follower"}
    groups = [f"{fmt(r)}/s\n{short[s]}" for r in rates for s in SELECTORS]
    df = df.assign(group=[f"{fmt(r)}/s\n{short[s]}" for r, s in zip(df["rate"], df["selector"])])
    lat = pd.concat([df.assign(series=label, y=df[m], y_lo=df[m + "_lo"], y_hi=df[m + "_hi"])
                     for m, label in LATENCY.items()])
    ax = axes[-1]
    plots.grouped_bars(ax, lat, "group", "series", "y", group_order=groups, series_order=list(LATENCY.values()))
    ax.set_yscale("log")
    ax.set_ylim(top=ax.get_ylim()[1] * 3)
    plots.finish(ax, "consumers' and producer's latency", "", "ms (log)")
    return fig


def traffic_table(agg: Aggregates) -> Table:
    df = traffic(agg).sort_values(["rate", "selector"])
    rows = []
    for _, r in df.iterrows():
        rows.append({"records/s": r["rate"], "consumers read from": r["selector_label"],
                     "produce (GB/month)": r["cross_zone_gb_month_produce"],
                     "replication (GB/month)": r["cross_zone_gb_month_replication"],
                     "consume (GB/month)": r["cross_zone_gb_month_consume"],
                     "crossing zones (GB/month)": r["cross_zone_gb_month"],
                     "$/month": r[COST], "$/month interval": interval(r[COST + "_lo"], r[COST + "_hi"]),
                     "consumers' p50 (ms)": r["consume_e2e_latency_ms_p50"],
                     "consumers' p99 (ms)": r["consume_e2e_latency_ms_p99"],
                     "p99 interval (ms)": interval(r["consume_e2e_latency_ms_p99_lo"],
                                                   r["consume_e2e_latency_ms_p99_hi"]),
                     "producer's p99 (ms)": r["produce_latency_ms_p99"]})
    seeds = int(agg.configs[agg.configs["part"] == "traffic"]["runs"].min())
    duration, sending = producing_ms(agg)
    return Table(pd.DataFrame(rows), [
        f"Means over {seeds} seed(s). GB/month: the run's record bytes crossing zones (produce: the producer to "
        f"leaders in other zones; replication: leaders to followers; consume: brokers to consumers in other zones), "
        f"per 2^30 bytes, for 730 hours at the rate while the producer sends ({seconds(sending)} of the "
        f"{seconds(duration)} run; the summary's cross_zone_cost_per_month averages over the whole run, so it is "
        f"{fmt(sending / duration)} of the $/month shown). The consumers' latencies pool every group's records "
        f"(send to first processed). " + interval_method(agg)])


def eras_figure(agg: Aggregates):
    """The consumers' p50 and p99 at the low rate per Kafka version, leader only and fetch from follower."""
    df = eras(agg)
    versions = _versions(df)
    fig, axes = plots.figure(2, 1, width=5.5, height=3.4)
    for ax, (m, label) in zip(axes, list(LATENCY.items())[:2]):
        plots.grouped_bars(ax, df.assign(y=df[m], y_lo=df[m + "_lo"], y_hi=df[m + "_hi"]), "version",
                           "selector_label", "y", group_order=versions, series_order=list(SELECTORS.values()),
                           values=True)
        ax.set_yscale("log")
        plots.finish(ax, f"{label} at {fmt(_low_rate(agg))} records/s", "kafka.version", "ms (log)")
    return fig


def _versions(df: pd.DataFrame) -> list:
    """The eras part's kafka.version values, oldest first."""
    return sorted(df["version"].unique(), key=lambda v: tuple(int(x) for x in str(v).split(".")))


def _low_rate(agg: Aggregates) -> float:
    return float(part_settings(agg, "eras").producers[0].rate_per_s)


def eras_table(agg: Aggregates) -> Table:
    df = eras(agg)
    order = _versions(df)
    rows = []
    for v in order:
        for s, label in SELECTORS.items():
            r = _row(df, version=v, selector=s)
            rows.append({"kafka.version": str(v), "consumers read from": label,
                         "consumers' p50 (ms)": r["consume_e2e_latency_ms_p50"],
                         "consumers' p99 (ms)": r["consume_e2e_latency_ms_p99"],
                         "p99 interval (ms)": interval(r["consume_e2e_latency_ms_p99_lo"],
                                                       r["consume_e2e_latency_ms_p99_hi"]),
                         "producer's p99 (ms)": r["produce_latency_ms_p99"]})
    return Table(pd.DataFrame(rows), [f"{fmt(_low_rate(agg))} records/s, as the traffic part's low rate. "
                                      + interval_method(agg)])


def numbers(agg: Aggregates) -> dict:
    """Every number the prose states, from the aggregates."""
    t, e = traffic(agg), eras(agg)
    n = {}
    for r in sorted(t["rate"].unique()):
        key = f"r{int(r)}"
        for s in SELECTORS:
            row = _row(t, rate=r, selector=s)
            n[f"{key}_{s}_gb_month"] = num(row["cross_zone_gb_month"], 1)
            n[f"{key}_{s}_consume_gb_month"] = num(row["cross_zone_gb_month_consume"], 1)
            n[f"{key}_{s}_replication_gb_month"] = num(row["cross_zone_gb_month_replication"], 1)
            n[f"{key}_{s}_cost_month"] = num(row[COST], 2)
            for m in LATENCY:
                n[f"{key}_{s}_{m}"] = num(row[m], 2)
        lo, ff = n[f"{key}_leader_only_gb_month"], n[f"{key}_rack_aware_gb_month"]
        n[f"{key}_saved_share"] = num(1 - ff / lo if lo else float("nan"), 3)
    for v in _versions(e):
        for s in SELECTORS:
            for m in ("consume_e2e_latency_ms_p50", "consume_e2e_latency_ms_p99"):
                n[f"v{str(v).replace('.', '_')}_{s}_{m}"] = num(value(e, m, version=v, selector=s), 2)
    return n


def answers_text(agg: Aggregates) -> str:
    """Markdown: what each rate saved and cost, every number from the table below it."""
    t = traffic(agg)
    n = numbers(agg)
    lines = []
    for r in sorted(t["rate"].unique()):
        key = f"r{int(r)}"
        lines.append(
            f"- **{fmt(r)} records/s**: reading from the leader, {fmt(n[f'{key}_leader_only_gb_month'])} GB a month "
            f"cross zones (${fmt(n[f'{key}_leader_only_cost_month'])}), "
            f"{fmt(n[f'{key}_leader_only_consume_gb_month'])} GB of it to consumers; fetching from the follower in "
            f"each consumer's zone, {fmt(n[f'{key}_rack_aware_gb_month'])} GB "
            f"(${fmt(n[f'{key}_rack_aware_cost_month'])}, {fmt(100 * n[f'{key}_saved_share'])}% less): the "
            f"consumers' {fmt(n[f'{key}_rack_aware_consume_gb_month'])} GB, replication's "
            f"{fmt(n[f'{key}_rack_aware_replication_gb_month'])} GB unchanged. The consumers' p50 goes from "
            f"{fmt(n[f'{key}_leader_only_consume_e2e_latency_ms_p50'])} to "
            f"{fmt(n[f'{key}_rack_aware_consume_e2e_latency_ms_p50'])} ms and their p99 from "
            f"{fmt(n[f'{key}_leader_only_consume_e2e_latency_ms_p99'])} to "
            f"{fmt(n[f'{key}_rack_aware_consume_e2e_latency_ms_p99'])} ms; the producer's p99 stays at "
            f"{fmt(n[f'{key}_rack_aware_produce_latency_ms_p99'])} ms "
            f"({fmt(n[f'{key}_leader_only_produce_latency_ms_p99'])} leader only).")
    return "\n".join(lines)


def why_text(agg: Aggregates) -> str:
    """Markdown: why a follower's consumer waits longer at a low rate, with the settings read from the study."""
    k = setup(agg)
    rate = k["rates"][0]
    per_partition = rate / k["partitions"]
    return (f"A follower serves only what is below the HW it knows, and it learns the leader's HW from its own fetch "
            f"answers. Since Kafka 2.6 a fetch waiting at the leader is answered when new records arrive (or after "
            f"`replica.fetch.wait.max.ms`, {fmt(k['replica_wait_ms'])} ms), not when the HW moves, so at "
            f"{fmt(rate)} records/s ({fmt(per_partition)} a second per partition, one every "
            f"{fmt(1000 / per_partition)} ms on average) a record reaches a follower's consumer with the partition's "
            f"next record. At the high rate the next record is never far. Reading from the leader costs a cross-zone "
            f"trip for two thirds of each group's partitions instead.")


def eras_text(agg: Aggregates) -> str:
    """Markdown: what each release changed, with the low rate's numbers."""
    n = numbers(agg)
    k = setup(agg)
    e = eras(agg)
    versions = _versions(e)

    def p(v, s, q):
        return n[f"v{str(v).replace('.', '_')}_{s}_consume_e2e_latency_ms_{q}"]
    parts = [f"{v}: {fmt(p(v, 'rack_aware', 'p50'))} / {fmt(p(v, 'rack_aware', 'p99'))} ms" for v in versions]
    return (f"At {fmt(_low_rate(agg))} records/s, the consumers' p50 / p99 fetching from followers, by version: "
            f"{'; '.join(parts)} (leader only: {fmt(p(versions[-1], 'leader_only', 'p50'))} / "
            f"{fmt(p(versions[-1], 'leader_only', 'p99'))} ms on {versions[-1]}). In 2.4 and 2.5 a follower whose HW "
            f"is stale is answered at once (removed in 2.6, KAFKA-9952); before 3.4 a consumer fetch parked on a "
            f"follower waits out `fetch.max.wait.ms` ({fmt(k['fetch_wait_ms'])} ms) unless a partition that broker "
            f"leads brings data (KAFKA-14334), and before 3.3 the leader's answer naming the follower waits in "
            f"purgatory too (KAFKA-13767). docs/zones.md has the code behind each.")


def headline(agg: Aggregates) -> tuple[dict, str]:
    n = numbers(agg)
    t = traffic(agg)
    hi, lo = (f"r{int(r)}" for r in (max(t["rate"]), min(t["rate"])))
    high, low = max(t["rate"]), min(t["rate"])
    finding = (f"Across three zones at {fmt(high)} records/s, fetching from the follower in each consumer's zone cuts "
               f"the cross-zone bill from ${fmt(n[f'{hi}_leader_only_cost_month'])} to "
               f"${fmt(n[f'{hi}_rack_aware_cost_month'])} a month ({fmt(100 * n[f'{hi}_saved_share'])}% less) for a "
               f"consumer p99 of {fmt(n[f'{hi}_rack_aware_consume_e2e_latency_ms_p99'])} ms instead of "
               f"{fmt(n[f'{hi}_leader_only_consume_e2e_latency_ms_p99'])}; at {fmt(low)} records/s the p99 goes from "
               f"{fmt(n[f'{lo}_leader_only_consume_e2e_latency_ms_p99'])} to "
               f"{fmt(n[f'{lo}_rack_aware_consume_e2e_latency_ms_p99'])} ms.")
    return n, finding
