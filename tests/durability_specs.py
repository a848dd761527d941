"""Durability spec files for the tests of the durability verb (its estimates and its engines)."""

from __future__ import annotations

from pathlib import Path

import yaml

# every failure rate off: a test turns on the ones it is about
NO_FAILURES = {"broker.crash.per.year": 0, "machine.crash.per.year": 0, "machine.failure.per.year": 0,
               "zone.power.loss.per.year": 0, "zone.outage.per.year": 0}


def write_spec(folder: Path, **data) -> Path:
    """A durability spec (the three-zones scenario unless `data` names another) written to folder/d.yaml."""
    path = folder / "d.yaml"
    path.write_text(yaml.safe_dump({"scenario": "three-zones", **data}))
    return path
