"""Every place the kit reads or writes, from one module."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # the repository
DATA = ROOT / "data"
SCENARIOS = DATA / "scenarios"  # shipped named scenarios (YAML)
STUDIES = DATA / "studies"  # sweep specs, one per study (YAML)
CAMPAIGNS = DATA / "campaigns"  # fault-campaign specs (YAML), each with a folder of its counterexamples
RUNS = DATA / "runs"  # raw run folders, one per run (ignored by git)
PROCESSED = DATA / "processed"  # aggregates (ignored by git)
REPORTS = ROOT / "reports"  # exported HTML
NOTEBOOKS = ROOT / "notebooks"


def scenario_path(name: str) -> Path:
    """A shipped scenario by name (with or without .yaml), or a path as given."""
    p = Path(name)
    if p.suffix in (".yaml", ".yml") or p.exists() or len(p.parts) > 1:
        return p
    return SCENARIOS / f"{name}.yaml"


def shipped_scenarios() -> list[str]:
    """The names of the scenarios in data/scenarios/."""
    return sorted(p.stem for p in SCENARIOS.glob("*.yaml"))


def unknown_scenario(name: str) -> str | None:
    """For a bare name that names no shipped scenario: one line with the nearest name and the list; else None."""
    from .config.scenario import did_you_mean

    p = scenario_path(name)
    if p.parent != SCENARIOS or p.is_file():
        return None  # a path (its own errors say what is wrong with it), or a shipped name
    names = shipped_scenarios()
    return (f"scenario {name!r}: no shipped scenario of that name" + did_you_mean(name, names, "")
            + f" (shipped: {', '.join(names)}; or give a YAML path)")
