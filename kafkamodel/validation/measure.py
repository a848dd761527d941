"""A figure's model quantity, read from a run's Result.

* ``{summary: KEY}``: the run's summary value (whole run), e.g. a consumer group's ``GROUP.consume_e2e_latency_ms_p50``;
* ``{records: ...}`` over the run's window ``[from, to)`` (warm-up and the end left out):
  ``acked_per_s`` / ``acked_mib_per_s``: records acknowledged in the window per second (MiB: × record.size.bytes /
  2^20, payload as Kreps and Confluent count it); ``produce_latency`` (send -> acknowledged), ``e2e_latency``
  (send -> visible below the HW) and ``consume_latency`` (send -> first processed by the consumer group ``group``)
  of the records sent in the window, at a percentile. ``create_time_ms: true`` takes the send time as the record's
  CreateTime, whole milliseconds (``KafkaProducer.doSend`` stamps ``time.milliseconds()``), the end exact: what a
  benchmark measures when it subtracts ``record.timestamp()`` from its own clock (the OpenMessaging Benchmark's
  end-to-end latency).

A percentile is the order statistic at index ⌊n·p/100⌋ of the sorted samples, as kafka.tools.TestEndToEndLatency
reads its array. A record sent in the window and not acknowledged (or visible) by the run's end counts as
infinitely late, so a backlog shows as latency instead of dropping out. ``floor_ms`` truncates to whole
milliseconds, as that tool did; the floor of the order statistic is the order statistic of the floored samples.
"""

from __future__ import annotations

import math

import numpy as np

from ..sim.results.measures import GROUP_SUMMARY, SUMMARY

MIB = 1 << 20
# the quantities read from the records table: name -> (throughput or latency, how a reader says it, unit)
RECORDS = {"acked_per_s": ("throughput", "records acknowledged per second", "records/s"),
           "acked_mib_per_s": ("throughput", "MiB of payload acknowledged per second", "MiB/s"),
           "produce_latency": ("latency", "produce latency (send -> acknowledged)", "ms"),
           "e2e_latency": ("latency", "end-to-end latency (send -> visible below the HW)", "ms"),
           "consume_latency": ("latency", "delivery latency (send -> first processed by the group)", "ms")}
SUMMARY_UNITS = {m.name: m.unit for m in SUMMARY}
GROUP_UNITS = {m.name: m.unit for m in GROUP_SUMMARY}


def unit_of(quantity: dict, groups: list[str]) -> str | None:
    """The unit of a quantity on a run whose consumer groups are `groups`; None for a key no run reports."""
    if "records" in quantity:
        return RECORDS[quantity["records"]][2]
    key = quantity["summary"]
    group, _, name = key.rpartition(".")
    if group:
        return GROUP_UNITS.get(name) if group in groups else None
    return SUMMARY_UNITS.get(key)


def describe(quantity: dict) -> str:
    """The quantity as a reader says it."""
    if "summary" in quantity:
        text = f"summary {quantity['summary']}"
    else:
        text = RECORDS[quantity["records"]][1]
        if "group" in quantity:
            text = text.replace("the group", f"group {quantity['group']}")
        if "percentile" in quantity:
            text += f", p{quantity['percentile']:g}"
        text += " (records in the run's window)"
        if quantity.get("create_time_ms"):
            text += ", sent at the record's CreateTime (whole ms)"
    return text + (", truncated to whole ms" if quantity.get("floor_ms") else "")


def measure(result, quantity: dict, window: tuple, scenario, processed: dict | None = None) -> tuple:
    """(value or None, note): the quantity on this run; a note says why there is no value. `processed`: per consumer
    group, when each record was first processed (NaN: never), in the records table's order."""
    if "summary" in quantity:
        value = result.summary.get(quantity["summary"])
        if value is None:
            return None, f"the model does not report {quantity['summary']}"
        value = float(value)
    else:
        value, note = _from_records(result.records, quantity, window, scenario, processed or {})
        if value is None:
            return None, note
    if quantity.get("floor_ms") and math.isfinite(value):
        value = float(math.floor(value))
    return value, ""


def _from_records(records, quantity: dict, window: tuple, scenario, processed: dict) -> tuple:
    start, end = window
    what = quantity["records"]
    if what in ("acked_per_s", "acked_mib_per_s"):
        ack = records["ack_ms"].to_numpy(dtype=np.float64)
        acked = records["acked"].to_numpy(dtype=bool) & (ack >= start) & (ack < end)
        per_s = float(acked.sum()) / ((end - start) / 1000.0)
        if what == "acked_mib_per_s":
            per_s *= scenario["producers"][0]["record.size.bytes"] / MIB
        return per_s, ""
    send = records["send_ms"].to_numpy(dtype=np.float64)
    if what == "consume_latency":
        if quantity["group"] not in processed:
            return None, f"the run has no consumer group {quantity['group']}"
        done = processed[quantity["group"]]
    else:
        done = records["ack_ms" if what == "produce_latency" else "visible_ms"].to_numpy(dtype=np.float64)
    if what == "produce_latency":
        done = np.where(records["acked"].to_numpy(dtype=bool), done, np.nan)
    sent = (send >= start) & (send < end)
    stamp = np.floor(send[sent]) if quantity.get("create_time_ms") else send[sent]
    latency = np.where(np.isnan(done[sent]), np.inf, done[sent] - stamp)
    if not len(latency):
        return None, f"no records sent in the window {start:g}-{end:g} ms"
    return order_statistic(latency, quantity["percentile"]), ""


def order_statistic(samples: np.ndarray, percentile: float) -> float:
    """The sorted samples' element at index ⌊n·p/100⌋ (the last one at most)."""
    n = len(samples)
    k = min(n - 1, int(n * percentile / 100.0))
    return float(np.partition(samples, k)[k])
