"""What every verb's command module shares: the one-line usage error (exit status 2) and a scenario named on the
command line (a shipped name or a file).

One shape per verb: ``cli`` parses the command line and reports (one line and exit status 2 for bad input); the
verb's work is its package's ``command`` module, named alike in each: ``kit.command`` (``study``:
``run_study``), ``campaign.command`` (``run_campaign``), ``durability.command`` (``run_durability``),
``validation.command`` (``run_validation``), ``cluster.command`` (``cluster import | export | calibrate |
report``, which adds its own parser). Each checks its input before it writes anything, and raises
``UsageError`` (or its package's error, a ``ScenarioError``) for what the command line got wrong."""

from __future__ import annotations

from .config.scenario import load_scenario
from .paths import scenario_path, unknown_scenario


class UsageError(Exception):
    """A bad command line: reported in one line, exit status 2."""


def load_named(name: str):
    """The scenario `name` (a shipped scenario's name or a file's path), or a UsageError naming what is missing."""
    problem = unknown_scenario(name)
    if problem:
        raise UsageError(problem)
    return load_scenario(scenario_path(name))
