"""Every place the kit reads or writes, from one module.

Two kinds of places:

* **shipped** (read): the named scenarios, the study and campaign specs (with the campaigns' committed
  counterexamples) and the notebooks. In a source checkout they are the repository's ``data/`` and
  ``notebooks/``; in an installed package (a wheel, ``pip install .``) the copies the build put in the package
  (``kafkamodel/shipped/``, see setup.py).
* **outputs** (written): run folders, aggregates, reports, counterexamples of a campaign run from a shipped spec,
  the Spark executors' zip. They go under ``HOME``: ``$KAFKAMODEL_HOME`` if set, else the repository in a source
  checkout, else the current folder; never into the installed package. docs/install.md says so.
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
HOME_VARIABLE = "KAFKAMODEL_HOME"


def _checkout() -> Path | None:
    """The repository this package is imported from (a source checkout or an editable install), else None."""
    root = PACKAGE.parent
    if (root / "pyproject.toml").is_file() and (root / "data" / "scenarios").is_dir():
        return root
    return None


CHECKOUT = _checkout()
SHIPPED = CHECKOUT if CHECKOUT is not None else PACKAGE / "shipped"  # data/ and notebooks/ are read from here
HOME = Path(os.path.abspath(os.path.expanduser(os.environ.get(HOME_VARIABLE) or CHECKOUT or os.getcwd())))
ROOT = CHECKOUT if CHECKOUT is not None else HOME  # where commands run (notebook kernels' folder)

SCENARIOS = SHIPPED / "data" / "scenarios"  # shipped named scenarios (YAML)
STUDIES = SHIPPED / "data" / "studies"  # sweep specs, one per study (YAML)
CAMPAIGNS = SHIPPED / "data" / "campaigns"  # fault-campaign specs (YAML), each with a folder of its counterexamples
NOTEBOOKS = SHIPPED / "notebooks"
VALIDATION = SHIPPED / "data" / "validation"  # the validation set: published measurements as cases (YAML)

DATA = HOME / "data"
RUNS = DATA / "runs"  # raw run folders, one per run (ignored by git)
PROCESSED = DATA / "processed"  # aggregates (ignored by git)
REPORTS = HOME / "reports"  # exported HTML
DIST = HOME / "dist"  # the package zip for Spark executors (and `make dist`'s wheel)


def counterexamples(spec: str | Path, campaign: str) -> Path:
    """Where a campaign's counterexamples go: beside its spec (``<spec folder>/<campaign>/``), or for a spec
    shipped inside the installed package, ``HOME/data/campaigns/<campaign>/``."""
    spec = Path(spec).resolve()
    if CHECKOUT is None and PACKAGE in spec.parents:
        return DATA / "campaigns" / campaign
    return spec.parent / campaign


def child_environment() -> None:
    """Pin HOME for the processes the kit starts (notebook kernels, Spark workers), whatever their folder."""
    os.environ.setdefault(HOME_VARIABLE, str(HOME))


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
