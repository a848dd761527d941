"""One offline HTML page answering the operator's questions from ``answers.json`` (``answers.answers``).

Every sentence is written from the same numbers as the table beside it (``_say`` reads them from the answers);
the figure is an inline PNG; nothing is fetched from the network. Styles and number formats are the study
kit's (``kit``)."""

from __future__ import annotations

import base64
import html
import io
import json

from . import kit
from .answers import LATENCIES


def _n(x, digits: int = 3) -> str:
    return kit.number(x, digits) if x is not None else "n/a"


def _iv(d: dict, scale: float = 1.0, digits: int = 3) -> str:
    """'value (low – high)' of a {value, low, high}."""
    if d.get("value") is None:
        return "n/a"
    v, lo, hi = (d[k] * scale for k in ("value", "low", "high"))
    spread = kit.interval(lo, hi, digits)
    return f"{_n(v, digits)}" + (f" ({spread})" if spread and spread != _n(v, digits) else "")


def _table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _figure(a: dict) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    loads = [r["load"] for r in a["load"]]
    fig, ax = plt.subplots(figsize=(6.4, 3.2), dpi=100)
    for key, label in (("produce_latency_ms_p99", "produce p99"), ("e2e_latency_ms_p99", "end-to-end p99"),
                       ("produce_latency_ms_p50", "produce p50")):
        v = [r[key]["value"] for r in a["load"]]
        lo = [r[key]["low"] for r in a["load"]]
        hi = [r[key]["high"] for r in a["load"]]
        if None in v:
            continue
        ax.plot(loads, v, marker="o", label=label)
        ax.fill_between(loads, lo, hi, alpha=0.2)
    ax.set_xlabel("load (x today's)")
    ax.set_ylabel("ms")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    alt = ("Produce and end-to-end latency against load: " + "; ".join(
        f"{r['load']:g}x: produce p99 {_n(r['produce_latency_ms_p99']['value'])} ms" for r in a["load"]))
    return (f"<figure><img alt='{html.escape(alt)}' src='data:image/png;base64,"
            f"{base64.b64encode(buf.getvalue()).decode()}'/><figcaption>{html.escape(alt)} (bands: the seeds' "
            "range)</figcaption></figure>")


def _value(w: dict) -> str:
    """A setting's new value as the operator would write it."""
    return _n(w["value"]) if isinstance(w["value"], (int, float)) else str(w["value"])


def _load_section(a: dict) -> str:
    rows = [[f"{r['load']:g}x", _iv(r["records_acked_per_s"])] + [_iv(r[k]) for k in LATENCIES] for r in a["load"]]
    w = a.get("load_with_setting")
    if w:
        rows.append([html.escape(f"1x with {w['setting']} = {_value(w)}"), ""] + [_iv(w[k]) for k in LATENCIES])
    today = next(r for r in a["load"] if r["load"] == 1.0)
    top = a["load"][-1]
    seeds = a["shortening"]["seeds"]
    say = (f"At today's load the producers' p99 is {_iv(today['produce_latency_ms_p99'])} ms and the end-to-end "
           f"p99 {_iv(today['e2e_latency_ms_p99'])} ms; at {top['load']:g}x they are "
           f"{_iv(top['produce_latency_ms_p99'])} ms and {_iv(top['e2e_latency_ms_p99'])} ms (medians of {seeds} "
           "seeds, their range in brackets).")
    if w:
        say += (f" The setting that moves today's latency most is {w['setting']}: {w['why']}. With {w['setting']} at "
                f"{_value(w)} the producers' p50 would be {_iv(w['produce_latency_ms_p50'])} ms (today "
                f"{_iv(today['produce_latency_ms_p50'])}) and their p99 {_iv(w['produce_latency_ms_p99'])} ms.")
    return ("<h2 id='load'>Latency at today's load, 1.5x and 2x</h2>"
            f"<p class='answer'>{html.escape(say)}</p>"
            + _table(["load", "acknowledged records/s", "produce p50 ms", "produce p99 ms", "produce p99.9 ms",
                      "end-to-end p50 ms", "end-to-end p99 ms", "end-to-end p99.9 ms"], rows)
            + "<p><small>Produce: send() to acknowledgement. End-to-end: send() to below the leader's high watermark "
              "(what consumers may read).</small></p>" + _figure(a))


def _saturation_section(a: dict) -> str:
    s = a["saturation"]
    rows = []
    for r in s["resources"]:
        if not r["measured"]:
            rows.append([html.escape(r["what"]), "not measured", "", ""])
            continue
        at = r["saturates_at_load"]
        rows.append([html.escape(r["what"]), _iv(r["today"], 100, 2) + " %",
                     " / ".join(_iv(v, 100, 2) for v in r["per_load"].values()) + " %",
                     f"{_n(at)}x" if at else "never (flat)"])
    if s["first"]:
        say = (f"The first to saturate is {s['first_what']}, at about {_n(s['first_at_load'])}x today's load "
               f"({s['method']}).")
    else:
        say = "No resource's utilisation grew with load in these runs."
    w = s.get("with_setting")
    if w:
        at = w["saturates_at_load"]
        say += (f" {w['why'][0].upper()}{w['why'][1:]}: with {w['setting']} at {_value(w)} it is "
                f"{_iv(w['today_busy'], 100, 2)} % busy at today's load and reaches 100 % at about "
                + (f"{_n(at)}x." if at else "no load (flat)."))
        rows.append([html.escape(f"{s['first_what']} with {w['setting']} = {_value(w)}"),
                     _iv(w["today_busy"], 100, 2) + " %",
                     "(1x only)", f"{_n(at)}x" if at else "never (flat)"])
    elif s["first"]:
        say += (f" No Kafka property adds to {s['first_what']}: more brokers or bigger machines do (a scenario with "
                "them, run through this report, says how much).")
    return ("<h2 id='saturation'>What saturates first</h2>"
            f"<p class='answer'>{html.escape(say)}</p>"
            + _table(["resource", "today (% busy)", "at each load run (%)", "100 % at"], rows))


def _death_section(d: dict) -> str:
    say = (f"Broker {d['broker']} (it leads {d['leads_partitions']} partitions) crashes at "
           f"{_n(d['crash_at_ms'] / 1000)} s and stays down. Its partitions cannot take acks=all writes for "
           f"{_iv(d['partition_unavailable_ms_max'], 1 / 1000)} s at the longest "
           f"({_iv(d['unavailable_partition_ms'], 1 / 1000)} partition-seconds in all; the controller notices a "
           f"dead broker after {_n(d['detection_ms'] / 1000)} s, and a partition whose ISR stays below "
           "min.insync.replicas refuses them until the broker returns); partitions are under-replicated for "
           f"{_iv(d['under_replicated_partition_ms'], 1 / 1000)} partition-seconds within the "
           f"{_n(d['run_ms'] / 1000)} s run; the producers' p99 over records sent after the crash is "
           f"{_iv(d['produce_p99_after_crash_ms'])} ms; send() "
           + ("blocked (buffer.memory ran out)." if d["send_blocked"] else "never blocked (buffer.memory sufficed)."))
    w = d.get("with_setting")
    if w:
        say += (f" With {w['setting']} at {_n(w['value'])} ms (half of today's) the longest unavailability would be "
                f"{_iv(w['partition_unavailable_ms_max'], 1 / 1000)} s and the producers' p99 after the crash "
                f"{_iv(w['produce_p99_after_crash_ms'])} ms.")
    rows = [[k.replace("_", " "), _iv(d[k])] for k in ("unavailable_partition_ms", "partition_unavailable_ms_max",
                                                        "under_replicated_partition_ms", "produce_p99_after_crash_ms",
                                                        "producer_buffer_wait_ms", "not_enough_replicas_errors")]
    header = ["measure (ms, partition-ms or count)", "median (range)"]
    if w:
        header.append(f"with {w['setting']} = {_n(w['value'])}")
        rows = [r + [_iv(w[k]) if k in w else ""] for r, k in zip(rows, (
            "unavailable_partition_ms", "partition_unavailable_ms_max", "under_replicated_partition_ms",
            "produce_p99_after_crash_ms", "producer_buffer_wait_ms", "not_enough_replicas_errors"))]
    return ("<h2 id='death'>A broker's death</h2>" f"<p class='answer'>{html.escape(say)}</p>"
            + _table(header, rows))


def _restart_section(r: dict) -> str:
    gate = r["gate"] if isinstance(r["gate"], str) else json.dumps(r["gate"])
    if r["operation_ms"]["value"] is None:
        say = (f"The rolling restart (gate {gate}, each broker down {_n(r['downtime_ms'] / 1000)} s) did not finish "
               f"within the {_n(r['run_ms'] / 1000)} s run in any seed.")
    else:
        say = (f"A rolling restart gated by {gate}, each broker down {_n(r['downtime_ms'] / 1000)} s, takes "
               f"{_iv(r['operation_ms'], 1 / 1000)} s; partitions spend {_iv(r['under_min_isr_partition_ms'], 1 / 1000)}"
               f" partition-seconds under min.insync.replicas and {_iv(r['under_replicated_partition_ms'], 1 / 1000)}"
               f" under-replicated; the producers' p99 meanwhile is {_iv(r['operation_produce_p99_ms'])} ms with "
               f"{_iv(r['operation_produce_errors'])} batches answered with an error"
               + (f" ({r['unfinished_seeds']} seed(s) did not finish within the run)." if r["unfinished_seeds"] else "."))
    keys = ("operation_ms", "under_min_isr_partition_ms", "under_replicated_partition_ms", "operation_produce_p99_ms",
            "operation_produce_errors")
    rows = [[k.replace("_", " "), _iv(r[k])] for k in keys]
    header = ["measure (ms, partition-ms or count)", "median (range)"]
    w = r.get("with_setting")
    if w:
        say += (f" The setting that moves it most is {w['setting']}: {w['why']}. With {w['setting']} at {_value(w)} "
                + (f"the roll would take {_iv(w['operation_ms'], 1 / 1000)} s, partitions spend "
                   f"{_iv(w['under_min_isr_partition_ms'], 1 / 1000)} partition-seconds under min.insync.replicas, "
                   f"the producers' p99 meanwhile be {_iv(w['operation_produce_p99_ms'])} ms with "
                   f"{_iv(w['operation_produce_errors'])} batches answered with an error."
                   if w["operation_ms"]["value"] is not None else
                   "the roll did not finish within the run."))
        header.append(f"with {w['setting']} = {_value(w)}")
        rows = [row + [_iv(w[k])] for row, k in zip(rows, keys)]
    elif r.get("no_setting"):
        say += f" No setting moves it much: {r['no_setting']}."
    return ("<h2 id='restart'>A rolling restart</h2>" f"<p class='answer'>{html.escape(say)}</p>"
            + _table(header, rows))


def _nines(n: dict, windows: int) -> str:
    if n["value"] is None:
        return f"at least {_n(n['low'], 2)} nines (no loss in {windows} failure windows per replica layout)"
    if n["high"] is None:
        return f"{_n(n['value'], 2)} nines (95 %: {_n(n['low'], 2)} or more)"
    return f"{_n(n['value'], 2)} nines (95 %: {_n(n['low'], 2)} to {_n(n['high'], 2)})"


def _durability_section(d: dict) -> str:
    n, p = d["nines"], d["loss_probability_per_partition_year"]
    nines = _nines(n, d["windows"])
    say = (f"Each partition keeps its acknowledged records through a year with {nines}: a loss probability of "
           f"{_n(p['value'])} per partition-year; {_n(d['acked_records_lost_per_year'])} acknowledged records lost "
           f"and {_n(d['unavailable_minutes_per_year'])} unavailable minutes per year, at the failure rates below "
           "(docs/durability.md: their sources; change them with --failures).")
    rows = [[html.escape(k), _n(v)] for k, v in d["failures"].items()]
    w = d.get("with_setting")
    compare = ""
    if w:
        say += (f" The setting that moves it most is the {w['setting']}: {w['why']}. With it at {_value(w)} "
                f"(today {w['today']}) a partition would keep its records with {_nines(w['nines'], d['windows'])}; "
                f"{_n(w['acked_records_lost_per_year'])} acknowledged records lost and "
                f"{_n(w['unavailable_minutes_per_year'])} unavailable minutes per year.")
        keys = ("nines", "loss_probability_per_partition_year", "acked_records_lost_per_year",
                "unavailable_minutes_per_year")
        compare = _table(["", "nines per partition-year", "loss probability per partition-year",
                          "acknowledged records lost per year", "unavailable minutes per year"],
                         [[html.escape(label)] + [_iv(x[k]) if isinstance(x[k], dict) else _n(x[k]) for k in keys]
                          for label, x in (("today", d), (f"with {w['setting']} = {_value(w)}", w))])
    return ("<h2 id='durability'>Durability</h2>" f"<p class='answer'>{html.escape(say)}</p>" + compare
            + _table(["failure rate or duration", "value"], rows))


def _shortening_section(a: dict) -> str:
    s = a["shortening"]
    words = (f"The load runs simulated {_n(s['load_run_ms'] / 1000)} s each"
             + (f", shortened from the scenario's {_n(s['scenario_duration_ms'] / 1000)} s" if s["shortened"] else "")
             + f", {s['seeds']} seeds per load; all {s['partitions_simulated']} partitions were simulated (none "
             f"sampled). A run at today's load sent {_n(s['records_per_run_today'])} records, so its p99.9 rests on "
             f"about {_n(s['records_above_p999_per_run'])} records above it: the p99.9 intervals are wide, and rarer "
             "events are not in the runs")
    if s["segment_roll_every_s"]:
        words += (f" (the busiest partition rolls a log segment every {_n(s['segment_roll_every_s'])} s"
                  + (", inside the runs)" if s["segment_roll_every_s"] < s["load_run_ms"] / 1000 else
                     ", never within a run)"))
    cost = s.get("cpu_seconds") or {}
    if cost:
        words += ". The runs took " + ", ".join(f"{_n(v)} CPU-s for the {k.replace('_', ' ')}" for k, v in cost.items())
    words += (". Disks write back dirty pages after vm.dirty_expire_centisecs (30 s by default): runs shorter than "
              "that show no disk writes, so the disks' load is computed from the bytes appended.")
    return f"<h2 id='shortened'>How the runs were shortened</h2><p class='shortening'>{html.escape(words)}</p>"


def render(a: dict) -> str:
    inputs = "".join(f"<li><code>{html.escape(k)}</code>: {html.escape(str(v))}</li>" for k, v in a["inputs"].items())
    made = a.get("made", {})
    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>Your cluster: {html.escape(a['scenario'])}"
             f" (kafkamodel)</title><style>{kit.STYLE} .answer{{font-size:1.05rem}} figure img{{max-width:100%}}"
             "</style></head><body>",
             f"<h1>Your cluster: {html.escape(a['scenario'])}</h1>",
             f"<p class='meta'>{a['brokers']} brokers, Kafka {html.escape(a['kafka.version'])}, broker machines "
             f"{html.escape(str(a['profile']))}. Written by kafkamodel cluster report "
             f"({html.escape(str(made.get('generated_at', '')))}).</p>",
             f"<h2 id='inputs'>Inputs</h2><ul>{inputs}</ul>",
             _shortening_section(a), _load_section(a), _saturation_section(a)]
    if "broker_death" in a:
        parts.append(_death_section(a["broker_death"]))
    if "rolling_restart" in a:
        parts.append(_restart_section(a["rolling_restart"]))
    if "durability" in a:
        parts.append(_durability_section(a["durability"]))
    parts.append("<p><small>The numbers behind every sentence are in answers.json beside this page.</small></p>"
                 "</body></html>")
    return "\n".join(parts)
