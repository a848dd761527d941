"""Zones and their bill: the record bytes that crossed zones, by whom, per pair of zones and per second, and what
they cost (docs/zones.md).

Every connection counts the record bytes sent on it as they are sent
(``engine.transport.Link.sent``, one add per message), so the accounting costs
nothing per record. A zone is a rack: a broker's ``broker.rack`` (``racks``), a
client's ``client.rack``; a client without one is in no zone and its bytes cross
none. What each message carries is the record batches' bytes (message format
overhead included, after compression); request headers and TCP/IP are not
counted. Kinds, from the two ends of the connection:

* ``produce``: a producer to a leader (produce requests, resends included);
* ``replication``: a leader to a follower (fetch answers; a reassignment's too);
* ``consume``: a broker to a consumer (fetch answers, from a leader or a follower).

``ZoneTraffic`` samples the counts every second while the run goes (only when
brokers have racks: without zones nothing crosses one), which gives the
``zones`` table: per second and kind, the bytes from each zone to each zone
(from == to: bytes that stayed in a zone). ``zone_summary`` gives the run's
totals and their monthly cost: ``network.cross.zone.price.per.gb`` per GB of
2^30 bytes crossing (both ends counted in the price: AWS's $0.01/GB in each
direction makes its default $0.02), at the run's average rate over a month of
730 hours (8,760 / 12, as AWS's calculator counts a month).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..protocol import CONSUMER_CONN, DATA_CONN
from .measures import TABLES

GIB = float(2 ** 30)  # a billed GB
MONTH_MS = 730 * 3600 * 1000.0  # a month of 730 hours
KINDS = ("produce", "replication", "consume")


def kind_of(conn: int, src: int, dst: int) -> str | None:
    """What traffic a connection's record bytes are: produce, replication, consume (None: none carry records)."""
    if conn == CONSUMER_CONN:
        return "consume" if src >= 0 > dst else None
    if conn == DATA_CONN:
        if src < 0 <= dst:
            return "produce"
        if src >= 0 and dst >= 0:
            return "replication"
    return None


class ZoneTraffic:
    """The connections' byte counts by kind and pair of zones, sampled every second (the ``zones`` table)."""

    TIMERS = ("sample",)
    INTERVAL_MS = 1000.0

    def __init__(self, sim):
        self.kernel = sim.kernel
        self.duration_ms = sim.settings.duration_ms
        self.price_per_gb = sim.settings.cross_zone_price_per_gb
        layout, links = sim.layout, sim.transport.links
        zone = {node: layout.rack_of(node) for node in layout.nodes}
        self.zones_exist = bool(sim.settings.racks)  # brokers in racks: zones to cross
        # every connection that can carry records: (kind, from zone, to zone, its Link); "" for no zone
        self.links = [(kind, zone[a] or "", zone[b] or "", links[conn][a][b])
                      for conn in (DATA_CONN, CONSUMER_CONN) for a in layout.nodes for b in layout.nodes
                      if (kind := kind_of(conn, a, b)) is not None]
        self.rows: list[tuple] = []  # (time_ms, kind, from zone, to zone, bytes in the interval ending then)
        self._seen: dict[tuple, int] = {}  # (kind, from, to) -> bytes up to the last sample

    def start(self) -> None:
        if self.zones_exist:
            self.kernel.schedule(min(self.INTERVAL_MS, self.duration_ms), self.sample)

    def totals(self) -> dict[tuple, int]:
        """(kind, from zone, to zone) -> record bytes sent so far."""
        out: dict[tuple, int] = {}
        for kind, a, b, link in self.links:
            if link.sent:
                key = (kind, a, b)
                out[key] = out.get(key, 0) + link.sent
        return out

    def sample(self) -> None:
        """Each pair's bytes since the last sample, as rows at now; the next sample a second on (the last one is the
        run's end, ``close``)."""
        now = self.kernel.now
        self._rows_until(now)
        if now + self.INTERVAL_MS < self.duration_ms:
            self.kernel.schedule(now + self.INTERVAL_MS, self.sample)

    def close(self, end_ms: float) -> None:
        """The run ended: the last interval's rows."""
        if self.zones_exist:
            self._rows_until(end_ms)

    def _rows_until(self, now: float) -> None:
        totals = self.totals()
        for key in sorted(totals):
            delta = totals[key] - self._seen.get(key, 0)
            if delta:
                self.rows.append((now, *key, delta))
        self._seen = totals

    def table(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=list(TABLES["zones"])).astype({"bytes": np.int64, "time_ms": float})

    def summary(self, duration_ms: float) -> dict:
        """The cross-zone keys of the summary (measures.SUMMARY: cross_zone_*), and consume_bytes."""
        crossing = dict.fromkeys(KINDS, 0)
        consumed = 0
        for kind, a, b, link in self.links:
            if kind == "consume":
                consumed += link.sent
            if a and b and a != b and self.zones_exist:
                crossing[kind] += link.sent
        total = sum(crossing.values())
        return {"cross_zone_bytes": total, **{f"cross_zone_bytes_{k}": v for k, v in crossing.items()},
                "cross_zone_cost_per_month": cost_per_month(total, duration_ms, self.price_per_gb),
                "consume_bytes": consumed}


def cost_per_month(nbytes: float, duration_ms: float, price_per_gb: float) -> float:
    """`nbytes` sent in `duration_ms`, kept up for a month of 730 hours, at `price_per_gb` per 2^30 bytes."""
    return nbytes / duration_ms * MONTH_MS / GIB * price_per_gb if duration_ms > 0 else 0.0


def consume_latency(groups: list, send_ms: np.ndarray) -> tuple:
    """send -> first processed, pooled over every group's records: its p50 and p99 (Nones without any)."""
    pooled = [(g.first_processed_ms - send_ms)[~np.isnan(g.first_processed_ms)] for g in groups]
    latency = np.concatenate(pooled) if pooled else np.empty(0)
    if not len(latency):
        return None, None
    p50, p99 = np.percentile(latency, [50, 99], overwrite_input=True)
    return float(p50), float(p99)


def zone_summary(end, consume: tuple) -> dict:
    """The summary's zone keys, in measures.SUMMARY's order, from a RunEnd; `consume`: the pooled consume latency's
    p50 and p99 (``consume_latency``, or its histogram's)."""
    s = end.zones.summary(end.settings.duration_ms)
    p50, p99 = consume
    return {k: s[k] for k in ("cross_zone_bytes", "cross_zone_bytes_produce", "cross_zone_bytes_replication",
                              "cross_zone_bytes_consume", "cross_zone_cost_per_month")} | {
        "consumer_fetches_from_followers": end.counters.consumer_fetches_from_followers,
        "consume_bytes": s["consume_bytes"], "consume_e2e_latency_ms_p50": p50, "consume_e2e_latency_ms_p99": p99}
