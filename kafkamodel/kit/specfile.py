"""Reading and validating sweep spec files (the format is described in ``kafkamodel.kit.spec``).

``load_spec(name_or_path)`` returns a validated ``Spec``; every problem is
reported as ``<file>: <field.path>: <rule>``, and every configuration is
checked as a scenario before anything runs.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any, Mapping

import yaml

from ..config.scenario import ScenarioError, StrictLoader, did_you_mean, load_scenario
from ..paths import NOTEBOOKS, STUDIES, scenario_path
from .fields import NAME, REQUIRED, Field, count, flag, integer, mapping, name_like, one_of, read, text
from .spec import DEFAULT_POINT_NOTEBOOK, RESERVED, Param, Part, Spec, SpecError, _kind, column_for_path, named

OVERRIDES = Field(mapping(" of override path -> value"))
# a sweep spec's keys (docs/studies.md); notebook, base and seeds are required of an active study (_build)
SWEEP = {
    "study": Field(name_like("quorum_vs_isr"), REQUIRED, "a name like quorum_vs_isr ([a-z][a-z0-9_]*)"),
    "title": Field(text()),
    "question": Field(text()),
    "notebook": Field(),
    "point_notebook": Field(default=DEFAULT_POINT_NOTEBOOK),
    "base": Field(),
    "seeds": Field(count(1, "seeds per configuration at scale 1")),
    "overrides": OVERRIDES,
    "params": Field(),
    "grid": Field(),
    "points": Field(),
    "parts": Field(),
    "status": Field(one_of(("active", "pending")), "active"),
    "pending": Field(text()),
    "order": Field(integer(), 100),
}
PART = {
    "base": Field(),
    "seeds": Field(count(1)),
    "overrides": OVERRIDES,
    "grid": Field(),
    "points": Field(),
    "record_latency": Field(flag(), True),
}


def spec_path(study: "str | Path") -> Path:
    """A study's spec file: a name (``quorum_vs_isr``) or a path."""
    p = Path(study)
    if p.suffix in (".yaml", ".yml") or p.exists():
        return p
    return STUDIES / f"{study}.yaml"


def all_specs(studies: Path | None = None) -> list[Spec]:
    """Every spec in data/studies/, in index order."""
    folder = studies or STUDIES
    specs = [load_spec(f) for f in sorted(folder.glob("*.yaml"))]
    return sorted(specs, key=lambda s: (s.order, s.study))


def load_spec(study: "str | Path") -> Spec:
    """A validated spec from a study name or a YAML path; SpecError lists every problem."""
    return load_spec_file(study, spec_path(study), STUDIES, "study", SWEEP, _build)


def load_spec_file(name: "str | Path", path: Path, folder: Path, what: str, fields: Mapping, build) -> Any:
    """Read a spec file (`name`, found at `path`; the shipped ones are in `folder`): a mapping of `fields`' keys
    (``fields.read``), built by ``build(values, path, problems)``; SpecError lists every problem (each once) as
    ``<file>: <field.path>: <rule>``."""
    if not path.is_file():
        known = sorted(f.stem for f in folder.glob("*.yaml"))
        plural = "studies" if what == "study" else f"{what}s"
        hint = did_you_mean(name, known, f"; {plural} are {', '.join(known)}" if known else "")
        raise SpecError([f"{name}: no such {what} or spec file{hint}"])
    data = _read_yaml(path)
    if not isinstance(data, Mapping):
        raise SpecError([f"{path}: spec: must be a mapping, got {type(data).__name__}"])
    problems: list[str] = []
    built = build(read(data, fields, "", problems), path, problems)
    if problems:
        raise SpecError([f"{path}: {p}" for p in dict.fromkeys(problems)])
    return built


def _read_yaml(path: Path) -> Any:
    """A spec file's YAML (a key given twice is refused); a syntax error is one line with where it is."""
    try:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=StrictLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        reason = " ".join(str(getattr(exc, "problem", None) or exc).split())
        raise SpecError([f"{path}:{where} not valid YAML ({reason})"]) from None


def _build(data: Mapping, path: Path, problems: list[str]) -> Spec | None:
    study, status, order = data.get("study"), data["status"], data["order"]
    title = data.get("title") or str(study)
    question = " ".join(str(data.get("question") or "").split())
    pending_reason = " ".join(str(data.get("pending") or "").split())
    if status == "pending":
        if not pending_reason:
            problems.append("pending: required when status is pending (say what the study waits for)")
        extra = [k for k in ("grid", "points", "parts") if k in data]
        if extra:
            problems.append(f"{extra[0]}: a pending study has no runs; remove it or set status: active")
        notebook = data.get("notebook")
        if notebook is not None:
            _check_notebook(notebook, "notebook", problems)
        return Spec(str(study), title, question, notebook, DEFAULT_POINT_NOTEBOOK, {}, {}, (), "pending",
                    pending_reason, order, str(path))

    notebook = data.get("notebook")
    if notebook is None:
        problems.append("notebook: required (the analysis notebook in notebooks/)")
    else:
        _check_notebook(notebook, "notebook", problems)
    point_notebook = data["point_notebook"]
    _check_notebook(point_notebook, "point_notebook", problems, relative_to=path.parent)
    seeds = data.get("seeds")
    if seeds is None:
        if not any(p.startswith("seeds:") for p in problems):
            problems.append("seeds: required (seeds per configuration at scale 1, an integer >= 1)")
        seeds = 1
    base = data.get("base")
    overrides = _overrides(data.get("overrides"), "overrides", problems)
    params = _params(data.get("params", {}), problems)

    raw_parts = data.get("parts")
    if raw_parts is None:
        raw_parts = {"main": {k: data[k] for k in ("grid", "points") if k in data}}
        if not raw_parts["main"]:
            problems.append("grid: required (or points, or parts)")
    else:
        for k in ("grid", "points"):
            if k in data:
                problems.append(f"{k}: goes inside each part when parts are given")
        if not isinstance(raw_parts, Mapping) or not raw_parts:
            problems.append("parts: must be a non-empty mapping of part name -> {base, seeds, overrides, grid, points}")
            raw_parts = {}
    values: dict[str, list] = {}
    parts = []
    for name_, raw in raw_parts.items():
        where = f"parts.{name_}" if data.get("parts") is not None else ""
        part = _part(str(name_), raw, where, base, seeds, overrides, params, values, problems)
        if part is not None:
            parts.append(part)
    kinds = {name_: _kind(vals) for name_, vals in values.items()}
    spec = Spec(str(study), title, question, notebook, point_notebook, params, kinds, tuple(parts), "active",
                "", order, str(path))
    if not problems:
        _check_configs(spec, problems)
    return spec


def _check_notebook(name: Any, where: str, problems: list[str], relative_to: Path | None = None) -> None:
    if not isinstance(name, str) or not name.endswith(".ipynb"):
        problems.append(f"{where}: must be a notebook file name ending in .ipynb, got {name!r}")
        return
    if notebook_path(name, relative_to) is None:
        problems.append(f"{where}: no notebook {name!r} in {NOTEBOOKS}")


def notebook_path(name: str, relative_to: Path | None = None) -> Path | None:
    """A notebook by file name in notebooks/, or a path (absolute, or relative to the spec)."""
    for candidate in (NOTEBOOKS / name, Path(name), (relative_to / name) if relative_to else None):
        if candidate is not None and candidate.is_file():
            return candidate.resolve()
    return None


def _overrides(raw: Any, where: str, problems: list[str]) -> dict:
    """Overrides (already checked as a mapping, or left out): their keys override paths."""
    if raw is None:
        return {}
    for key in raw:
        if not isinstance(key, str):
            problems.append(f"{where}: keys must be override paths, got {key!r}")
    return {str(k): v for k, v in raw.items()}


def _params(raw: Any, problems: list[str]) -> dict[str, Param]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        problems.append(f"params: must be a mapping of column name -> path, [paths] or named override sets, got {type(raw).__name__}")
        return {}
    params = {}
    for name, how, where in named(raw, "params", "column", problems):
        if name in RESERVED:
            problems.append(f"{where}: {name!r} is a column every run row already has; choose another name")
            continue
        if isinstance(how, str):
            params[name] = Param(name, (how,))
        elif isinstance(how, list) and how and all(isinstance(p, str) for p in how):
            params[name] = Param(name, tuple(how))
        elif isinstance(how, Mapping) and how:
            choices = {}
            for label, sets in how.items():
                if isinstance(label, (Mapping, list)) or label is None:
                    problems.append(f"{where}: a choice's name must be a string or a number, got {label!r}")
                elif not isinstance(sets, Mapping):
                    problems.append(f"{where}.{label}: must be a mapping of override path -> value")
                else:
                    choices[label] = {str(k): v for k, v in sets.items()}
            params[name] = Param(name, (), choices)
        else:
            problems.append(f"{where}: must be an override path, a list of paths, or named override sets, got {how!r}")
    return params


def _part(name, raw, where, base, seeds, overrides, params, values, problems) -> Part | None:
    at = f"{where}." if where else ""
    if not NAME.match(name):
        problems.append(f"{where or 'parts'}: a part name must match [a-z][a-z0-9_]*, got {name!r}")
        return None
    if where:
        raw = read(raw, PART, where, problems, what=" with grid and/or points")
        if not raw:
            return None
    part_base = raw.get("base", base)
    if not isinstance(part_base, str) or not part_base:
        problems.append(f"{at}base: required (a scenario name in data/scenarios/ or a YAML path)")
        part_base = None
    elif not scenario_path(part_base).is_file():
        problems.append(f"{at}base: no scenario {part_base!r} in data/scenarios/")
        part_base = None
    part_seeds = raw.get("seeds", seeds)
    part_overrides = {**overrides, **_overrides(raw.get("overrides"), f"{at}overrides", problems)}

    grid = raw.get("grid") or {}
    if not isinstance(grid, Mapping):
        problems.append(f"{at}grid: must be a mapping of param or override path -> list of values")
        grid = {}
    axes = []
    for key, vals in grid.items():
        here = f"{at}grid.{key}"
        param = _param_for(str(key), params, here, problems)
        if param is None:
            continue
        if not isinstance(vals, list) or not vals:
            problems.append(f"{here}: must be a non-empty list of values")
            continue
        if len({json.dumps(v, sort_keys=True, default=str) for v in vals}) != len(vals):
            problems.append(f"{here}: lists a value twice")
        for i, v in enumerate(vals):
            _check_value(param, v, f"{here}[{i}]", problems)
        axes.append((param.name, vals))
    points = raw.get("points")
    if points is None:
        points = [{}]
    elif not isinstance(points, list) or not points or not all(isinstance(p, Mapping) for p in points):
        problems.append(f"{at}points: must be a non-empty list of mappings param -> value")
        points = [{}]
    if not axes and points == [{}]:
        problems.append(f"{where or 'grid'}: needs a grid or points")
    combos = []
    grid_names = {n for n, _ in axes}
    for i, point in enumerate(points):
        resolved = {}
        for key, v in point.items():
            here = f"{at}points[{i}].{key}"
            param = _param_for(str(key), params, here, problems)
            if param is None:
                continue
            if param.name in grid_names:
                problems.append(f"{here}: also in the grid; a value comes from one or the other")
                continue
            _check_value(param, v, here, problems)
            resolved[param.name] = v
        for values_ in itertools.product(*(vals for _, vals in axes)):
            combos.append({**dict(zip([n for n, _ in axes], values_)), **resolved})
    for combo in combos:
        for k, v in combo.items():
            values.setdefault(k, []).append(v)
    if part_base is None:
        return None
    return Part(name, part_base, part_seeds, part_overrides, tuple(combos), raw.get("record_latency", True))


def _param_for(key: str, params: dict, where: str, problems: list[str]) -> Param | None:
    if key in params:
        return params[key]
    if "." in key or "[" in key or key in ("replication", "brokers"):
        column = column_for_path(key)
        if column in RESERVED:
            problems.append(f"{where}: its column {column!r} clashes with a column every run has; declare it under params with another name")
            return None
        existing = params.get(column)
        if existing is not None and existing.paths != (key,):
            problems.append(f"{where}: its column {column!r} is already a param; declare it under params with another name")
            return None
        params[column] = Param(column, (key,))
        return params[column]
    problems.append(f"{where}: not a declared param nor an override path" + did_you_mean(key, params))
    return None


def _check_value(param: Param, value: Any, where: str, problems: list[str]) -> None:
    if param.choices is not None and value not in param.choices:
        problems.append(f"{where}: {value!r} is not one of {', '.join(map(str, param.choices))} (params.{param.name})")


def _check_configs(spec: Spec, problems: list[str]) -> None:
    """Every configuration must make a valid scenario: found now, before anything runs."""
    bases: dict[str, Any] = {}
    seen: dict[str, str] = {}
    for point in spec.configs():
        label = f"parts.{point.part}" if len(spec.parts) > 1 or point.part != "main" else "grid"
        shown = ", ".join(f"{k}={v}" for k, v in point.columns.items())
        try:
            base = bases.get(point.base_path) or bases.setdefault(point.base_path, load_scenario(Path(point.base_path)))
            base.with_overrides(point.overrides)
        except ScenarioError as exc:
            problems.extend(f"{label}: point ({shown}): {problem}" for problem in exc.problems)
            if len(problems) > 5:
                return
        if point.config_id in seen:
            problems.append(f"{label}: point ({shown}) repeats the configuration of ({seen[point.config_id]})")
        seen[point.config_id] = shown
