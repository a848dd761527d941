"""The single-scenario explorer (``notebooks/00_explore.ipynb``), and the sweep's point notebook.

``explore_run`` runs either a sweep point (``point`` + ``out``: the papermill
engine) or a scenario by name with overrides (brokers grow to fit a larger
replication factor, as in the widget panel); ``run_figure`` draws one run
(``runfigure``); ``summary_view`` (``summary``) shows its key numbers first;
``run_headline`` is what the notebook records; ``scenarios_table`` lists the
shipped scenarios to choose from.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from ...config.scenario import ScenarioError, load_scenario
from ...kit import StudyError, Table
from ...paths import SCENARIOS, scenario_path, shipped_scenarios, unknown_scenario
from .summary import summary_view  # noqa: F401  (the notebook's import)

HEADLINE_KEYS = ("records_sent", "records_acked", "acked_records_lost", "committed_records_lost",
                 "produce_latency_ms_p50", "produce_latency_ms_p99", "isr_shrinks", "isr_expands",
                 "leader_elections", "unavailable_ms", "unavailable_wall_ms", "replica_divergence")


def scenario_description(name: str) -> str:
    """A shipped scenario's own description: the comment at the top of its YAML file."""
    lines = []
    for line in (SCENARIOS / f"{name}.yaml").read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("#").strip())
    return " ".join(x for x in lines if x) or name


def scenarios_table() -> Table:
    """Every shipped scenario with its description (what ``scenario`` can name)."""
    rows = [(name, scenario_description(name)) for name in shipped_scenarios()]
    return Table(pd.DataFrame(rows, columns=["scenario", "what it shows"]))


def run_figure(result, title: str | None = None):
    """The run's figure (``runfigure``; matplotlib is imported only when drawing: sweep points do not draw)."""
    from .runfigure import run_figure as draw

    return draw(result, title)


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
    """The scenario (name or path) with overrides and seed applied; brokers grow to fit a larger replication factor."""
    from .panel_model import fit_brokers

    problem = unknown_scenario(str(scenario))
    if problem:
        raise StudyError([f"parameter {problem}"])
    path = scenario_path(str(scenario))
    if not path.is_file():
        raise StudyError([f"parameter scenario: no scenario file {str(scenario)!r} (a name in data/scenarios/ or a YAML path)"])
    try:
        base = load_scenario(path)
    except ScenarioError as exc:
        raise StudyError([f"parameter scenario: {exc}"]) from None
    changes = fit_brokers(base, dict(overrides or {}))
    if seed is not None:
        changes["seed"] = seed
    try:
        return base.with_overrides(changes)
    except ScenarioError as exc:
        raise StudyError([f"parameter overrides: {exc}"]) from None


def explore_run(scenario: "str | Path" = "steady-state", overrides: Mapping | None = None, seed: int | None = None,
                point: Mapping | None = None, out: "str | Path | None" = None):
    """Run the point (writing its run folder) or the scenario; returns the Result."""
    check_parameters(scenario, overrides if overrides is not None else {}, seed, point, out)
    if point is not None:
        from ...kit import execute_point

        return execute_point(point, out)
    from ...sim.simulation import simulate

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
            f"{s['acked_records_lost']:,} of them lost; produce p99 {shown}; some partition unwritable for "
            f"{s['unavailable_wall_ms'] / 1000:.1f} s of {s['duration_ms'] / 1000:g} s "
            f"({s['unavailable_ms'] / 1000:.1f} partition-seconds).")
