"""What one run did, in the words a reader looks for first.

``key_numbers(result)``: the dozen numbers that answer "what happened"
(latency, loss, duplicates, unavailability in wall-clock and partition
seconds, elections, ISR churn, refused writes), each with its unit;
``summary_view(result)`` shows them, then every summary value on request
(an HTML ``<details>``); ``status_line`` is the same in one line for the
widget panel.
"""

from __future__ import annotations

import html

import pandas as pd

from ...kit import Table, number

VIOLATIONS = ("leader_in_isr_violations", "committed_prefixes_agree_violations", "no_committed_record_lost_violations")


def _ms(x) -> str:
    return "–" if x is None else f"{number(x)} ms"


def _s(ms) -> str:
    return f"{number(float(ms) / 1000.0)} s"


def _has_consumers(result) -> bool:
    return bool(result.scenario["consumers"])


def key_numbers(result) -> Table:
    """The numbers a reader looks for first, with units (rows: measure, value, what it counts)."""
    s = result.summary
    partitions = max(len(result.partitions), 1)
    rows = [
        ("records acknowledged", f"{number(s['records_acked'])} of {number(s['records_sent'])} sent",
         f"{number(s['records_failed'])} failed, {number(s['records_pending'])} still in flight at the end"),
        ("produce latency p50", _ms(s.get("produce_latency_ms_p50")), "send to acknowledgement"),
        ("produce latency p99", _ms(s.get("produce_latency_ms_p99")), "send to acknowledgement"),
        ("acknowledged records lost", number(s["acked_records_lost"]), "acknowledged to the producer, then gone"),
        ("committed records lost", number(s["committed_records_lost"]), "below the high watermark, then gone"),
        ("records twice in the log", number(s["records_duplicated"]), "the producer's resends appended again"),
    ]
    if _has_consumers(result):
        rows += [("records consumers lost", number(s["consumed_lost"]), "below a committed offset, never processed"),
                 ("records processed twice", number(s["consumed_duplicates"]), "by a consumer group")]
    rows += [
        ("unwritable, wall clock", f"{_s(s['unavailable_wall_ms'])} of {_s(s['duration_ms'])}",
         "time some partition could not take an acks=all write"),
        ("unwritable, partition-seconds", f"{number(s['unavailable_ms'] / 1000.0)} partition-s",
         f"the same summed over the {partitions} partition{'s' if partitions != 1 else ''}"),
        ("leader elections", number(s["leader_elections"]), f"{number(s['unclean_leader_elections'])} of them unclean"),
        ("ISR shrinks / expands", f"{number(s['isr_shrinks'])} / {number(s['isr_expands'])}",
         "followers dropped from / added back to the in-sync set"),
        ("NOT_ENOUGH_REPLICAS errors", number(s["not_enough_replicas_errors"]),
         "acks=all writes refused: ISR below min.insync.replicas"),
    ]
    if s.get("operation_ms") is not None:
        rows += [("operations", _s(s["operation_ms"]), "the first operation's start to the last one's end"),
                 ("produce latency p99 during them", _ms(s.get("operation_produce_p99_ms")),
                  f"p50 {_ms(s.get('operation_produce_p50_ms'))}, max {_ms(s.get('operation_produce_max_ms'))}; "
                  f"{number(s['operation_produce_errors'])} produce errors"),
                 ("under min ISR / offline", f"{number(s['under_min_isr_partition_ms'] / 1000.0)} / "
                  f"{number(s['offline_partition_ms'] / 1000.0)} partition-s",
                  f"under-replicated {number(s['under_replicated_partition_ms'] / 1000.0)} partition-s")]
    broken = sum(int(s.get(k, 0) or 0) for k in VIOLATIONS)
    if broken:
        rows.append(("safety violations", number(broken), ", ".join(k for k in VIOLATIONS if s.get(k))))
    return Table(pd.DataFrame(rows, columns=["what happened", "value", "meaning"]))


def full_summary(result) -> Table:
    """Every summary value, one per row."""
    return Table(pd.DataFrame([(k, v) for k, v in result.summary.items()], columns=["summary key", "value"]))


class SummaryView:
    """The key numbers, then every summary value behind a click (plain text: the key numbers)."""

    def __init__(self, result):
        self.key, self.full = key_numbers(result), full_summary(result)

    def _repr_html_(self) -> str:
        return (self.key._repr_html_()
                + f"<details><summary>all {len(self.full.df)} summary values</summary>{self.full._repr_html_()}</details>")

    def __repr__(self) -> str:
        return repr(self.key)


def summary_view(result) -> SummaryView:
    return SummaryView(result)


def setting(result) -> str:
    """'isr, RF 3, acks=all, min.insync.replicas 2': what the run was."""
    sc = result.scenario
    topic = sc["topics"][0] if sc["topics"] else None
    producer = sc["producers"][0] if sc["producers"] else None
    parts = [sc["replication"]]
    if topic:
        parts.append(f"RF {topic['replication.factor']}")
    if producer:
        parts.append(f"acks={producer['acks']}")
    if sc["replication"] == "isr":
        parts.append(f"min.insync.replicas {sc['broker']['min.insync.replicas']}")
    return ", ".join(parts)


def status_line(result, run: int) -> str:
    """The panel's status (HTML): what ran and the key numbers, in one line that wraps."""
    s = result.summary
    bits = [f"<b>run {run}</b>: {html.escape(setting(result))}",
            f"p50 {_ms(s.get('produce_latency_ms_p50'))}, <b>p99 {_ms(s.get('produce_latency_ms_p99'))}</b>",
            f"{number(s['records_acked'])}/{number(s['records_sent'])} acknowledged",
            f"lost: {number(s['acked_records_lost'])} acknowledged, {number(s['committed_records_lost'])} committed",
            f"unwritable {_s(s['unavailable_wall_ms'])} ({number(s['unavailable_ms'] / 1000.0)} partition-s)",
            f"{number(s['leader_elections'])} election{'s' if s['leader_elections'] != 1 else ''}",
            f"ISR −{number(s['isr_shrinks'])}/+{number(s['isr_expands'])}",
            f"NOT_ENOUGH_REPLICAS {number(s['not_enough_replicas_errors'])}"]
    if s.get("operation_ms") is not None:
        bits.append(f"operations {_s(s['operation_ms'])}: p99 {_ms(s.get('operation_produce_p99_ms'))}, "
                    f"{number(s['operation_produce_errors'])} errors, "
                    f"{number(s['under_min_isr_partition_ms'] / 1000.0)} partition-s under min ISR")
    if _has_consumers(result):
        bits.append(f"consumers: {number(s['consumed_lost'])} lost, {number(s['consumed_duplicates'])} twice, "
                    f"p99 {_ms(s.get('consume_e2e_latency_ms_p99'))}"
                    + (f", {number(s['consumer_fetches_from_followers'])} fetches from followers"
                       if s.get("consumer_fetches_from_followers") else ""))
    if result.scenario.get("racks"):
        bits.append(f"across zones: {number(s['cross_zone_bytes'] / 2 ** 20)} MiB "
                    f"({number(s['cross_zone_bytes_consume'] / 2 ** 20)} to consumers), "
                    f"${number(s['cross_zone_cost_per_month'])} a month")
    return " · ".join(bits)
