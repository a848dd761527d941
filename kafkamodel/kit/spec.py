"""Sweep specs: a study as grid × seeds over a named base scenario.

``data/studies/<study>.yaml``::

    study: quorum_vs_isr                # [a-z][a-z0-9_]*
    title: Quorum vs ISR
    question: one line the study answers
    notebook: 10_quorum_vs_isr.ipynb    # the analysis notebook (``report``)
    point_notebook: 00_explore.ipynb    # run once per point by the papermill engine (default)
    base: steady-state                  # a shipped scenario name or a YAML path
    seeds: 3                            # seeds 1..N per configuration at scale 1
    overrides: {duration.ms: 20000}     # applied to every point
    params:                             # column name -> what a value sets
      mode: replication                 #   one override path
      rf: [brokers, "topics[0].replication.factor"]   # several paths, same value (quote [ in a list)
      rule:                             #   named override sets (the column holds the name)
        time: {kafka.version: "0.9"}
        count: {kafka.version: "0.8"}
    parts:                              # sub-experiments; without `parts`, top-level grid/points
      latency:                          # form one part called `main`
        base: ...                       # optional, else the top-level base
        seeds: 2                        # optional, else the top-level seeds
        overrides: {...}
        grid: {mode: [isr, quorum], rf: [3, 5, 7]}   # the cartesian product ...
        points: [{rf: 3, failures: 1}]  # ... crossed with these combinations (if given)
        record_latency: false           # no per-record table: the part's analysis needs no record's latency

A grid or point key is a declared param or an override path
(``broker.min.insync.replicas``); a path's column is its last part with
dots as underscores (``min_insync_replicas``). Seeds are shared across
configurations (common random numbers). ``--scale`` multiplies the seeds.

Run folders always hold the summary and the small tables (events,
timeline, partitions, groups); the per-record table (``records.parquet``,
the largest by far) only for parts with ``record_latency: true`` (the
default), whose aggregates pool every acknowledged record's produce latency
(per-run maximum, latency timeline, pooled percentiles). ``sweep``/``study``
``--keep all`` writes it for every point.

A pending study (``status: pending``, ``pending: why``) has no grid; the
pipeline publishes a placeholder report for it.

Loading and validation: ``kafkamodel.kit.specfile``.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ..config.scenario import ScenarioError
from ..paths import scenario_path
from ..sim.results.measures import TABLE_COLUMNS
from .fields import NAME


class StudyError(ScenarioError):
    """Bad study input (a spec, a flag, a notebook parameter, a missing prerequisite): one line, exit 2."""

    def _render_traceback_(self) -> list[str]:
        """IPython's hook: a notebook shows the one line, not a traceback into the package."""
        return [f"\x1b[0;31m{type(self).__name__}\x1b[0m: {self}"]


class SpecError(StudyError):
    """A sweep spec broke one or more rules; ``problems`` lists them all."""


# a param may not take the name of a column every run row carries (the run's identity) or of a result
# table's column (kafkamodel.sim.results.measures declares them)
RESERVED = {"study", "part", "run_id", "config_id", "seed", "base", "scenario"} | TABLE_COLUMNS
DEFAULT_POINT_NOTEBOOK = "00_explore.ipynb"


def named(raw: Mapping, section: str, what: str, problems: list[str]):
    """The (name, value, where) of a mapping's entries whose name matches NAME; the others are a problem each
    (``<section>.<name>: a <what> name must match ...``)."""
    for name, value in raw.items():
        where = f"{section}.{name}"
        if not isinstance(name, str) or not NAME.match(name):
            problems.append(f"{where}: a {what} name must match [a-z][a-z0-9_]*")
            continue
        yield name, value, where


@dataclass(frozen=True)
class Param:
    name: str  # the column in every run row
    paths: tuple = ()  # override paths the value is written to
    choices: Mapping | None = None  # named override sets: label -> {path: value}

    def overrides(self, value: Any) -> dict:
        if self.choices is not None:
            return dict(self.choices[value])
        return {p: value for p in self.paths}


@dataclass(frozen=True)
class Part:
    name: str
    base: str  # scenario name or path, as written
    seeds: int  # at scale 1
    overrides: dict  # path -> value, after the study's
    combos: tuple  # each a dict param -> value
    record_latency: bool = True  # pool every record's latency in the aggregates (off for parts with millions of records)


@dataclass(frozen=True)
class Point:
    """One run: everything needed to reproduce it, nothing else (engines pass it around as a dict)."""

    study: str
    part: str
    base: str  # scenario name or path, as written in the spec
    base_path: str  # that scenario's file, absolute
    overrides: dict  # path -> value, in application order (study, part, params)
    columns: dict  # param column -> value, as recorded in every row
    seed: int
    config_id: str  # stable hash of study, part, base and overrides: the configuration
    run_id: str  # <part>-<config_id>-s<seed>
    records: bool = True  # write the per-record table (the part pools record latency, or the sweep keeps everything)

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    @classmethod
    def from_dict(cls, d: Mapping) -> "Point":
        fields = cls.__dataclass_fields__
        missing = [k for k, f in fields.items() if k not in d and f.default is dataclasses.MISSING]
        if missing:
            raise StudyError([f"point: missing {', '.join(missing)}"])
        return cls(**{k: d[k] for k in fields if k in d})


def points_of(study: str, part: str, base: str, base_path: str, overrides: dict, columns: dict, seeds,
              records: bool = True) -> list[Point]:
    """The Points of one configuration's runs, a seed each: its configuration id hashes study, part, base and
    overrides (in order), a run id is ``<part>-<config_id>-s<seed>`` (the study kit's sweeps, the campaign's
    schedules, durability's detailed runs)."""
    config_id = stable_hash({"study": study, "part": part, "base": base, "overrides": list(overrides.items())})
    return [Point(study, part, base, base_path, overrides, columns, seed, config_id, f"{part}-{config_id}-s{seed}",
                  records) for seed in seeds]


def point_of(study: str, part: str, base: str, base_path: str, overrides: dict, columns: dict, seed: int,
             records: bool = True) -> Point:
    """The Point of one run (``points_of`` with one seed)."""
    return points_of(study, part, base, base_path, overrides, columns, (seed,), records)[0]


@dataclass(frozen=True)
class Spec:
    study: str
    title: str
    question: str
    notebook: str | None  # analysis notebook file name in notebooks/
    point_notebook: str
    params: dict  # name -> Param
    kinds: dict  # column -> "int" | "float" | "bool" | "str"
    parts: tuple  # of Part
    status: str  # "active" | "pending"
    pending: str  # why, for a pending study
    order: int  # position in the index
    source: str  # the spec file

    @property
    def is_pending(self) -> bool:
        return self.status == "pending"

    @property
    def columns(self) -> list[str]:
        return list(self.kinds)

    def seeds(self, part: Part, scale: float = 1.0) -> list[int]:
        return list(range(1, max(1, round(part.seeds * scale)) + 1))

    def configs(self) -> list[Point]:
        """One point per configuration (seed 0 placeholder), in spec order."""
        return [p for p in self._points(None)]

    def points(self, scale: float = 1.0) -> list[Point]:
        """Every run of the study at this scale: configurations × seeds, configuration-major."""
        check_scale(scale)
        return self._points(scale)

    def _points(self, scale: float | None) -> list[Point]:
        out = []
        for part in self.parts:
            base_path = str(_resolve_base(part.base))
            seeds = self.seeds(part, scale) if scale is not None else [0]
            for combo in part.combos:
                overrides = dict(part.overrides)
                for name, value in combo.items():
                    overrides.update(self.params[name].overrides(value))
                columns = {name: _column_value(value, self.kinds[name]) for name, value in combo.items()}
                out.extend(points_of(self.study, part.name, part.base, base_path, overrides, columns, seeds,
                                     part.record_latency))
        return out


def check_scale(scale: Any) -> float:
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not math.isfinite(scale) or scale <= 0:
        raise StudyError([f"scale: must be a number > 0, got {scale!r}"])
    return float(scale)


def stable_hash(obj: Any) -> str:
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def _resolve_base(base: str) -> Path:
    return scenario_path(base).resolve()


def _column_value(value: Any, kind: str) -> Any:
    if kind == "str":
        if isinstance(value, (Mapping, list, tuple)):
            return json.dumps(value, sort_keys=True, separators=(",", ":"))
        return str(value)
    if kind == "float":
        return float(value)
    return value


def _kind(values: list) -> str:
    if all(isinstance(v, bool) for v in values):
        return "bool"
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return "int"
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return "float"
    return "str"


def column_for_path(path: str) -> str:
    """The column an override path is recorded as: ``topics[0].replication.factor`` -> ``replication_factor``."""
    tail = re.sub(r"^[a-z]+\[(\d+|\*)\]\.", "", path)
    head, _, rest = tail.partition(".")
    if head in ("broker", "network") and rest:
        tail = rest
    return re.sub(r"[^a-z0-9_]", "_", tail.lower())
