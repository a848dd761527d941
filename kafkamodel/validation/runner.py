"""Running validation cases: each run simulated once, each figure measured and placed against its band.

``run_cases(cases)`` returns one JSON-ready document (``validation.json``): per case its source, setup and runs
(with the scenario in one line and the measures that say what bound it), per figure the published value, the
model's, their ratio, the band and whether the model is inside. Nothing here is written by hand: the report and
the README's table are made from this document.
"""

from __future__ import annotations

import math
import time

from .. import __version__
from ..config.scenario import load_scenario
from ..kit import provenance
from ..sim.simulation import Simulation
from .bands import band_for, inside
from .cases import Case
from .measure import describe, measure

# summary keys shown beside each run, when the model reports them: what bound it (names from the contract)
CONTEXT = ("records_acked_per_s", "acked_mib_per_s", "broker_cpu_utilization_max", "disk_write_utilization_max",
           "disk_read_utilization_max", "dirty_mib_max", "writeback_stall_ms", "page_cache_hit_ratio",
           "gc_pause_ms_per_s", "producer_buffer_wait_ms", "buffer_exhausted_records", "request_handler_busy_max",
           "network_thread_busy_max", "replica_fetcher_busy_max", "backlog_records")


def run_cases(cases: list[Case], progress=None, command: str = "") -> dict:
    """Simulate every run of every case (``progress``: a tqdm-like bar, advanced once per run) and measure the
    figures."""
    out = []
    for case in cases:
        results, processed, runs = {}, {}, []
        wanted = {(r, q["group"]) for f in case.figures for r, q in f.terms if "group" in q}  # consume_latency's
        for name, run in case.runs.items():
            if progress is not None:
                progress.set_postfix_str(f"{case.case}/{name}", refresh=False)
            started = time.process_time()
            sim = Simulation(load_scenario(run.scenario))
            result = sim.run()
            seconds = time.process_time() - started
            results[name] = result
            processed[name] = {g.name: g.first_processed_ms for g in sim.groups if (name, g.name) in wanted}
            del sim
            runs.append({"name": name, "what": run.what, "scenario": scenario_line(run.scenario),
                         "duration_ms": float(run.scenario["duration.ms"]), "window_ms": list(run.window_ms),
                         "cpu_seconds": round(seconds, 2),
                         "context": {k: result.summary[k] for k in CONTEXT if k in result.summary}})
            if progress is not None:
                progress.update(1)
        out.append({"case": case.case, "file": case.path, "source": case.source, "setup": case.setup,
                    "scenario": scenario_line(case.scenario), "runs": runs,
                    "figures": [{"case": case.case, **_figure(case, f, results, processed)} for f in case.figures]})
    figures = [f for c in out for f in c["figures"]]
    how = provenance()
    return {"generated_by": f"kafkamodel {__version__}", "generated_at": how["generated_at"],
            "git_commit": how["git_commit"], "command": command, "cases": out,
        "totals": {"figures": len(figures), "inside": sum(f["inside"] for f in figures)}}


def _figure(case: Case, figure, results: dict, processed: dict) -> dict:
    values, notes = [], []
    for run_name, quantity in figure.terms:
        run = case.runs[run_name]
        value, note = measure(results[run_name], quantity, run.window_ms, run.scenario, processed[run_name])
        values.append(value)
        if note:
            notes.append(f"{run_name}: {note}")
    model = _combine(figure.combine, values)
    if model is not None and not math.isfinite(model):
        notes.append("records sent in the window were not answered by the end of the run (infinitely late)")
        model = None
    values = [v if v is None or math.isfinite(v) else None for v in values]  # JSON has no infinity
    published = float(figure.published["value"])
    band = band_for(figure.kind, figure.band)
    ratio = model / published if model is not None else None
    return {
        "name": figure.name, "title": figure.title, "kind": figure.kind, "published": figure.published,
        "model": model, "unit": figure.published["unit"], "ratio": ratio,
        "band": {**band.to_dict(), **({"source": figure.band["source"]} if figure.band else {})},
        "inside": inside(band, model, published),
        "quantity": _quantity_text(figure), "match": figure.match,
        "terms": [{"run": r, "value": v} for (r, _), v in zip(figure.terms, values)],
        "note": "; ".join(notes),
    }


def _combine(combine: str | None, values: list) -> float | None:
    if any(v is None for v in values):
        return None
    if combine is None:
        return values[0]
    a, b = values
    if combine == "difference":
        return a - b
    return a / b if b else None


def _quantity_text(figure) -> str:
    parts = [f"{describe(q)} on run {r}" for r, q in figure.terms]
    if figure.combine == "ratio":
        return f"({parts[0]}) / ({parts[1]})"
    if figure.combine == "difference":
        return f"({parts[0]}) - ({parts[1]})"
    return parts[0]


def scenario_line(s) -> str:
    """A scenario's setup in one line, read from the resolved scenario (so it cannot disagree with what ran)."""
    hw = s.get("hardware") or {}
    broker_hw = (hw.get("broker") or {}).get("profile")
    client_hw = (hw.get("client") or {}).get("profile")
    parts = [f"Kafka {s['kafka.version']}", f"{s['brokers']} brokers" + (f" ({broker_hw})" if broker_hw else "")]
    for t in s["topics"]:
        parts.append(f"topic {t['name']}: {t['partitions']} partitions, RF {t['replication.factor']}")
    for p in s["producers"]:
        n = p.get("instances", 1)
        rate = p["rate.per.s"]
        if p.get("burst"):
            b = p["burst"]
            load = f"{b['records']} record(s) every {b['every.ms']:g} ms"
        elif rate == "max" or p.get("closed_loop"):
            load = "closed loop (rate.per.s max)"
        else:
            load = f"{rate:,g} records/s"
        parts.append(f"{n} producer{'s' * (n > 1)}" + (f" ({client_hw})" if client_hw else "")
                     + f": {load}, acks={p['acks']}, batch.size {p['batch.size']}, linger.ms {p['linger.ms']:g}, "
                       f"{p['record.size.bytes']} B records")
    for c in s["consumers"]:
        parts.append(f"group {c['group']}: {c['members']} consumer{'s' * (c['members'] > 1)}")
    parts.append(f"{s['duration.ms'] / 1000:g} s simulated")
    return "; ".join(parts)
