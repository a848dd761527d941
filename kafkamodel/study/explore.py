"""The single-scenario explorer (``notebooks/00_explore.ipynb``), and the sweep's point notebook.

``explore_run`` runs either a sweep point (``point`` + ``out``: the papermill
engine) or a scenario by name with overrides; ``run_figure`` draws one run
(latency over time, the ISR and high watermark of partition 0, events);
``run_headline`` is what the notebook records.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from ..paths import scenario_path
from ..scenario import load_scenario
from .spec import StudyError

HEADLINE_KEYS = ("records_sent", "records_acked", "acked_records_lost", "committed_records_lost",
                 "produce_latency_ms_p50", "produce_latency_ms_p99", "isr_shrinks", "isr_expands",
                 "leader_elections", "unavailable_ms", "replica_divergence")


def check_parameters(scenario: Any, overrides: Any, seed: Any, point: Any, out: Any) -> None:
    """One clear error per bad notebook parameter, naming it."""
    if point is not None:
        if not isinstance(point, Mapping):
            raise StudyError([f"parameter point: must be a sweep point (a mapping) or None, got {type(point).__name__}"])
        if not isinstance(out, str) or not out:
            raise StudyError([f"parameter out: a sweep point needs the run folder to write, got {out!r}"])
        return
    if not isinstance(scenario, (str, Path)) or not str(scenario):
        raise StudyError([f"parameter scenario: must be a scenario name or YAML path, got {scenario!r}"])
    if not isinstance(overrides, Mapping):
        raise StudyError([f"parameter overrides: must be a mapping of override path -> value, got {type(overrides).__name__}"])
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise StudyError([f"parameter seed: must be an integer >= 0 or None, got {seed!r}"])
    if out is not None and (not isinstance(out, (str, Path)) or not str(out)):
        raise StudyError([f"parameter out: must be a folder path or None, got {out!r}"])


def explore_scenario(scenario: "str | Path", overrides: Mapping | None = None, seed: int | None = None):
    """The scenario (name or path) with overrides and seed applied."""
    path = scenario_path(str(scenario))
    if not path.is_file():
        raise StudyError([f"parameter scenario: no scenario {str(scenario)!r} (a name in data/scenarios/ or a YAML path)"])
    changes = dict(overrides or {})
    if seed is not None:
        changes["seed"] = seed
    return load_scenario(path).with_overrides(changes)


def explore_run(scenario: "str | Path" = "steady-state", overrides: Mapping | None = None, seed: int | None = None,
                point: Mapping | None = None, out: "str | Path | None" = None):
    """Run the point (writing its run folder) or the scenario; returns the Result."""
    check_parameters(scenario, overrides if overrides is not None else {}, seed, point, out)
    if point is not None:
        from .point import execute_point

        return execute_point(point, out)
    from ..simulation import simulate

    result = simulate(explore_scenario(scenario, overrides, seed))
    if out is not None:
        result.write(out)
    return result


def run_headline(result) -> dict:
    return {k: result.summary.get(k) for k in HEADLINE_KEYS}


def run_finding(result) -> str:
    s = result.summary
    p99 = s.get("produce_latency_ms_p99")
    shown = f"{p99:.1f} ms" if p99 is not None else "n/a"
    return (f"{s['scenario']} (seed {s['seed']}): {s['records_acked']:,} of {s['records_sent']:,} records acknowledged, "
            f"{s['acked_records_lost']:,} of them lost; produce p99 {shown}; "
            f"unavailable {s['unavailable_ms'] / 1000:.1f} s.")


def summary_table(result) -> pd.DataFrame:
    """The run's summary as a two-column table."""
    rows = [(k, v) for k, v in result.summary.items()]
    return pd.DataFrame(rows, columns=["measure", "value"]).set_index("measure")


def run_figure(result, title: str | None = None):
    """Latency over time, ISR size and high watermark of the first partitions, and the events, for one run."""
    from . import plots  # matplotlib: only when drawing (sweep points do not)

    fig, axes = plots.figure(1, 3, width=10.0, height=2.4, sharex=True)
    records = result.records
    acked = records[records["acked"]]
    lat_ax, isr_ax, ev_ax = axes
    if len(acked):
        duration = float(result.summary.get("duration_ms") or acked["send_ms"].max() or 1.0)
        edges = np.linspace(0.0, duration, 201)
        which = np.clip(np.searchsorted(edges, acked["send_ms"].to_numpy(), side="right") - 1, 0, 199)
        latency = (acked["ack_ms"] - acked["send_ms"]).to_numpy()
        frame = pd.DataFrame({"bin": which, "latency": latency}).groupby("bin")["latency"]
        centres = (edges[:-1] + edges[1:]) / 2 / 1000.0
        for q, style in ((0.5, "-"), (0.99, "--")):
            series = frame.quantile(q)
            lat_ax.plot(centres[series.index], series.to_numpy(), style, color=plots.CYCLE[0], label=f"p{int(q * 100)}")
        maxes = frame.max()
        lat_ax.plot(centres[maxes.index], maxes.to_numpy(), ":", color=plots.CYCLE[3], label="max")
        lat_ax.set_yscale("log")
    lat_ax.set_ylabel("produce latency (ms)")
    lat_ax.legend(fontsize=7, loc="upper right")
    lat_ax.grid(True, alpha=0.3)
    tl = result.timeline
    parts = sorted(set(zip(tl["topic"], tl["partition"])))[:3] if len(tl) else []
    hw_ax = isr_ax.twinx()
    for i, (topic, number) in enumerate(parts):
        g = tl[(tl["topic"] == topic) & (tl["partition"] == number)]
        isr_ax.step(g["time_ms"] / 1000.0, g["isr_size"], where="post", color=plots.CYCLE[i], label=f"ISR {topic}-{number}")
        hw_ax.plot(g["time_ms"] / 1000.0, g["high_watermark"], ":", color=plots.CYCLE[i], alpha=0.6)
    isr_ax.set_ylabel("ISR size (HW dotted)")
    hw_ax.set_ylabel("high watermark")
    isr_ax.grid(True, alpha=0.3)
    if parts:
        isr_ax.legend(fontsize=7, loc="lower left")
    events = result.events
    kinds = [k for k in sorted(events["kind"].unique()) if k != "invariant_violation"] if len(events) else []
    for i, kind in enumerate(kinds):
        t = events[events["kind"] == kind]["time_ms"] / 1000.0
        ev_ax.plot(t, np.full(len(t), i), "|", markersize=12, color=plots.CYCLE[i % len(plots.CYCLE)])
    ev_ax.set_yticks(range(len(kinds)), kinds, fontsize=7)
    ev_ax.set_xlabel("simulated time (s)")
    ev_ax.grid(True, axis="x", alpha=0.3)
    fig.suptitle(title or f"{result.summary['scenario']} (seed {result.summary['seed']}, {result.summary['replication']})",
                 fontsize=10)
    return fig
