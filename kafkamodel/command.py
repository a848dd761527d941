"""What every verb's command module shares: the one-line usage error (exit status 2), a scenario named on the
command line (a shipped name or a file), the option types (``positive_int``, ``seconds``, ``scale``), the sweep
options and the study extra's check (``needs``).

One shape per verb: its package's ``command`` module, named alike in each, adds the verb's parser
(``add_parser(verbs)``: its options, help texts and handler) and does the verb's work; ``cli`` only builds the
top-level parser from them, dispatches, and reports (one line and exit status 2 for bad input). The modules:
``sim.command`` (``run``, ``validate``, ``keys``, ``hardware``, ``measures``), ``kit.command`` (``study``, ``sweep``, ``aggregate``, ``report``), ``campaign.command``, ``durability.command``,
``validation.command``, ``cluster.command`` (``cluster import | export | calibrate | report``) and ``bench``.
Each checks its input before it writes anything, and raises ``UsageError`` (or its package's error, a
``ScenarioError``) for what the command line got wrong. A command module imports its heavy dependencies in its
handler, so that building the parser (every verb's) stays light."""

from __future__ import annotations

import importlib.util
import os

from .config.scenario import load_scenario
from .paths import scenario_path, unknown_scenario

ENGINES = "papermill, spark"  # the study kit's sweep engines (kafkamodel.kit.engines checks the name)
# what the study extra's verbs import: papermill runs notebooks (sweep points, reports), Spark aggregates
PAPERMILL = ("papermill", "nbformat", "nbclient", "ipykernel")
REPORTING = ("papermill", "nbconvert", "matplotlib", "ipykernel")
STUDY_EXTRA = {"pyspark", "papermill", "nbconvert", "nbclient", "nbformat", "ipykernel", "ipywidgets", "matplotlib",
               "jupyterlab", "py4j"}


class UsageError(Exception):
    """A bad command line: reported in one line, exit status 2."""


def load_named(name: str):
    """The scenario `name` (a shipped scenario's name or a file's path), or a UsageError naming what is missing."""
    problem = unknown_scenario(name)
    if problem:
        raise UsageError(problem)
    return load_scenario(scenario_path(name))


def needs(verb: str, *modules: str) -> None:
    """The study extra's verbs: one line naming the extra when a module they import is not installed."""
    missing = [m for m in dict.fromkeys(modules) if importlib.util.find_spec(m) is None]
    if missing:
        raise UsageError(extra_hint(verb, missing))


def extra_hint(verb: str, missing) -> str:
    return (f"{verb} needs the study extra ({', '.join(missing)} not installed): "
            "pip install 'kafkamodel[study]' (Spark also needs Java 17+)")


def engine_modules(engine: str) -> tuple:
    return ("pyspark",) if engine == "spark" else PAPERMILL


def scale(value: str, flag: str = "--scale") -> float:
    try:
        return float(value)
    except ValueError:
        raise UsageError(f"{flag}: must be a number > 0, got {value!r}") from None


def default_scale() -> float:
    raw = os.environ.get("SCALE", "").strip()
    return scale(raw, "SCALE") if raw else 1.0


def positive_int(flag: str):
    def parse(value: str) -> int:
        try:
            n = int(value)
        except ValueError:
            n = 0
        if n < 1:
            raise UsageError(f"{flag}: must be an integer >= 1, got {value!r}")
        return n

    return parse


def seconds(flag: str):
    def parse(value: str) -> float:
        try:
            x = float(value)
        except ValueError:
            x = -1.0
        if not x > 0:
            raise UsageError(f"{flag}: must be a number of seconds > 0, got {value!r}")
        return x

    return parse


def sweep_options(p, with_scale: bool = True) -> None:
    """A sweep's options (study, sweep, campaign): the engine, its master, workers, the timeout and the scale."""
    p.add_argument("--engine", default="papermill",
                   help=f"{ENGINES}: papermill runs a notebook per batch of points, on one kernel per worker "
                        "process; spark a Spark task per batch of points")
    p.add_argument("--master", help="Spark master URL for the Spark work (default: local[*])")
    p.add_argument("--workers", type=positive_int("--workers"), help="papermill worker processes (default: cores)")
    p.add_argument("--timeout", type=seconds("--timeout"), default=600.0,
                   help="execution timeout per notebook cell, or per point on Spark (s)")
    if with_scale:
        p.add_argument("--scale", type=scale, help="multiply the seeds per configuration (default: $SCALE or 1)")
