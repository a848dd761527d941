"""Every place the kit reads or writes, from one module."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # the repository
DATA = ROOT / "data"
SCENARIOS = DATA / "scenarios"  # shipped named scenarios (YAML)
STUDIES = DATA / "studies"  # sweep specs, one per study (YAML)
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
