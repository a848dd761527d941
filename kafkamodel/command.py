"""What every verb's command module shares: the one-line usage error (exit status 2) and a scenario named on the
command line (a shipped name or a file). ``cli`` builds the parser and reports; each package's ``command`` module
(``cluster.command``, ``validation.command``) raises these."""

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
