"""Reading and checking validation cases (``data/validation/<case>.yaml``).

A case file::

    case: kreps-2014                     # the file's name
    source: {title, authors: [..], year, url, publisher?, config_url?,
             verified: {tag, meaning, how}}      # the P/R/S/I tag of docs/validation-sources.md
    setup:
      published: [{item, value, tag}]    # the setup as published, quoted
      unknown: [{item, assumed}]         # what the source does not say, and what the scenario assumes
    scenario: {...}                      # a scenario (Kafka's names; the contract's hardware:, os:, producers' keys)
    runs:                                # named runs of that scenario
      NAME: {what, overrides: {path: value}, window.ms: [from, to]}   # window: where records count (default: all)
    figures:
      - name: ...
        title: ...
        run: NAME                        # a quantity on a run ...
        quantity: {summary: KEY} | {records: acked_per_s | acked_mib_per_s | produce_latency | e2e_latency |
                                     consume_latency (with group: NAME), percentile: P (latencies),
                                     create_time_ms: true (sent at the record's whole-ms CreateTime)},
                  floor_ms: true (truncate to whole ms, as a tool did)
        ratio: [A, B] | difference: [A, B]   # ... or of two terms: a figure's name or {run, quantity}
        published: {value, unit, tag, quote}
        kind: throughput | latency | latency_p999 | ratio
        band: {low, high, source}        # a ratio's band (the other kinds' are the issue's, ``bands``)
        match: ...                       # optional: what the source measured, and why this quantity matches it

``load_case`` reports every problem as ``<file>: <field.path>: <rule>`` (ValidationError, one line each), and
checks every run's scenario before anything runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import yaml

from ..config.scenario import Scenario, ScenarioError, StrictLoader, did_you_mean, load_scenario
from ..kit.fields import REQUIRED, Field, is_integer, is_number, one_of, read, rule, text
from .bands import KINDS
from .measure import RECORDS, unit_of

# a validation case's keys (docs/validation.md), each table declared once; what relates keys is checked below
_REQUIRED_TEXT = Field(text(), REQUIRED)
TOP = {k: Field(default=REQUIRED) for k in ("case", "source", "setup", "scenario", "runs", "figures")}
SOURCE = {
    "title": _REQUIRED_TEXT,
    "authors": Field(rule(lambda v: isinstance(v, list) and bool(v) and all(isinstance(a, str) for a in v),
                          "must be a non-empty list of names"), REQUIRED),
    "year": Field(rule(lambda v: is_integer(v) and 1990 <= v <= 2100, "must be a year (an integer)"), REQUIRED),
    "url": _REQUIRED_TEXT,
    "publisher": Field(text()),
    "config_url": Field(text()),
    "verified": Field(default=REQUIRED),
}
VERIFIED = {k: _REQUIRED_TEXT for k in ("tag", "meaning", "how")}
SETUP = {"published": Field(default=REQUIRED), "unknown": Field(default=REQUIRED)}
SETUP_ROWS = {"published": {k: _REQUIRED_TEXT for k in ("item", "value", "tag")},
              "unknown": {k: _REQUIRED_TEXT for k in ("item", "assumed")}}
RUN = {"what": _REQUIRED_TEXT, "overrides": Field(), "window.ms": Field()}
FIGURE = {"name": _REQUIRED_TEXT, "title": _REQUIRED_TEXT, "run": Field(), "quantity": Field(), "ratio": Field(),
          "difference": Field(), "published": Field(default=REQUIRED), "kind": Field(one_of(KINDS, hint=True), REQUIRED),
          "band": Field(), "match": Field(text())}
QUANTITY = {k: Field() for k in ("summary", "records", "percentile", "floor_ms", "group", "create_time_ms")}
PUBLISHED = {"value": Field(rule(lambda v: is_number(v) and v > 0, "must be a number > 0"), REQUIRED),
             "unit": _REQUIRED_TEXT, "tag": _REQUIRED_TEXT, "quote": Field(text())}
BAND = {"low": Field(default=REQUIRED), "high": Field(default=REQUIRED), "source": _REQUIRED_TEXT}
TERM = {"run": Field(default=REQUIRED), "quantity": Field(default=REQUIRED)}


class ValidationError(ScenarioError):
    """A validation case broke one or more rules: one line each, exit status 2."""


@dataclass(frozen=True)
class Run:
    name: str
    what: str
    scenario: Scenario  # the case's scenario with this run's overrides
    window_ms: tuple  # (from, to): records sent (latency) or acknowledged (throughput) in [from, to)


@dataclass(frozen=True)
class Figure:
    name: str
    title: str
    kind: str
    published: dict  # value, unit, tag, quote
    band: dict | None  # a ratio's {low, high, source}
    match: str  # what the benchmark measured and why this model quantity is the closest match ("" if obvious)
    terms: tuple  # one term (run, quantity), or two with `combine`
    combine: str | None  # None, "ratio" or "difference"


@dataclass(frozen=True)
class Case:
    case: str
    path: str
    source: dict
    setup: dict
    scenario: Scenario
    runs: dict  # name -> Run, in file order
    figures: tuple  # of Figure


def load_cases(folder: Path) -> list[Case]:
    """Every case in `folder` (``*.yaml``), oldest source first; ValidationError lists every problem in every file."""
    cases, problems = [], []
    for path in sorted(Path(folder).glob("*.yaml")):
        try:
            cases.append(load_case(path))
        except ValidationError as exc:
            problems.extend(exc.problems)
    if problems:
        raise ValidationError(problems)
    if not cases:
        raise ValidationError([f"{folder}: no validation cases (*.yaml)"])
    return sorted(cases, key=lambda c: (c.source["year"], c.case))


def load_case(path: "str | Path") -> Case:
    path = Path(path)
    if not path.is_file():
        raise ValidationError([f"{path}: no such validation case file"])
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=StrictLoader)
    except (OSError, UnicodeDecodeError) as exc:
        raise ValidationError([f"{path}: cannot read ({exc})"]) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        reason = " ".join(str(getattr(exc, "problem", None) or exc).split())
        raise ValidationError([f"{path}:{where} not valid YAML ({reason})"]) from None
    problems: list[str] = []
    case = _case(data, path, problems)
    if problems:
        raise ValidationError([f"{path}: {p}" for p in dict.fromkeys(problems)])
    return case


def _keys(raw: Any, fields: Mapping, where: str, problems: list[str]) -> dict:
    """`raw` checked against `fields` (``fields.read``), as written (its keys in the file's order: the report shows
    them so); {} if it is not a mapping."""
    read(raw, fields, where, problems)
    return dict(raw) if isinstance(raw, Mapping) else {}


def _text(raw: Mapping, key: str) -> str:
    """A text key's value (checked by its field), or "" when it is not one."""
    value = raw.get(key)
    return value if isinstance(value, str) else ""


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _case(data: Any, path: Path, problems: list[str]) -> Case | None:
    if not isinstance(data, Mapping):
        problems.append(f"case: must be a mapping, got {type(data).__name__}")
        return None
    top = _keys(data, TOP, "", problems)
    if top.get("case") != path.stem:
        problems.append(f"case: must be the file's name {path.stem!r}, got {top.get('case')!r}")
    source = _keys(top.get("source", {}), SOURCE, "source", problems)
    if "verified" in source:
        _keys(source["verified"], VERIFIED, "source.verified", problems)
    setup = _setup(top.get("setup", {}), problems)
    scenario = _scenario(top.get("scenario"), problems)
    runs = _runs(top.get("runs"), scenario, problems)
    figures = _figures(top.get("figures"), runs, problems)
    if scenario is None:
        return None
    return Case(str(top.get("case")), str(path), source, setup, scenario, runs, figures)


def _setup(raw: Any, problems: list[str]) -> dict:
    setup = _keys(raw, SETUP, "setup", problems)
    for part, fields in SETUP_ROWS.items():
        rows = setup.get(part, [])
        if not isinstance(rows, list):
            problems.append(f"setup.{part}: must be a list of {{{', '.join(fields)}}}")
            continue
        for i, row in enumerate(rows):
            _keys(row, fields, f"setup.{part}[{i}]", problems)
    return setup


def _scenario(raw: Any, problems: list[str]) -> Scenario | None:
    if not isinstance(raw, Mapping):
        problems.append(f"scenario: must be a mapping (a scenario with Kafka's names), got {type(raw).__name__}")
        return None
    try:
        return load_scenario(raw)
    except ScenarioError as exc:
        problems.extend(f"scenario.{p}" for p in exc.problems)
        return None


def _runs(raw: Any, scenario: Scenario | None, problems: list[str]) -> dict:
    if not isinstance(raw, Mapping) or not raw:
        problems.append("runs: must be a non-empty mapping of run name -> {what, overrides, window.ms}")
        return {}
    runs = {}
    for name, spec in raw.items():
        where = f"runs.{name}"
        spec = _keys(spec, RUN, where, problems)
        what = _text(spec, "what")
        overrides = spec.get("overrides") or {}
        if not isinstance(overrides, Mapping):
            problems.append(f"{where}.overrides: must be a mapping of override path -> value")
            continue
        if scenario is None:
            continue
        try:
            run_scenario = scenario.with_overrides(overrides)
        except ScenarioError as exc:
            problems.extend(f"{where}.overrides: {p}" for p in exc.problems)
            continue
        duration = float(run_scenario["duration.ms"])
        window = spec.get("window.ms", [0, duration])
        if not (isinstance(window, list) and len(window) == 2 and all(_number(w) for w in window)
                and 0 <= window[0] < window[1] <= duration):
            problems.append(f"{where}.window.ms: must be [from, to] with 0 <= from < to <= duration.ms "
                            f"({duration:g}), got {window!r}")
            continue
        runs[str(name)] = Run(str(name), what, run_scenario, (float(window[0]), float(window[1])))
    return runs


def _figures(raw: Any, runs: dict, problems: list[str]) -> tuple:
    if not isinstance(raw, list) or not raw:
        problems.append("figures: must be a non-empty list")
        return ()
    figures: dict[str, Figure] = {}
    for i, spec in enumerate(raw):
        where = f"figures[{i}]"
        before = len(problems)
        spec = _keys(spec, FIGURE, where, problems)
        name = spec.get("name")
        if any(p.startswith(f"{where}.name: must be") for p in problems[before:]):
            continue
        if name in figures:
            problems.append(f"{where}.name: {name!r} is already a figure's name")
            continue
        match = _text(spec, "match")
        kind = spec.get("kind")
        published = _keys(spec.get("published", {}), PUBLISHED, f"{where}.published", problems)
        band = _band(spec, kind, where, problems)
        terms, combine = _terms(spec, where, runs, figures, problems)
        if terms and isinstance(published.get("unit"), str):
            _check_unit(terms, combine, published["unit"], runs, where, problems)
        if isinstance(name, str) and terms:
            figures[name] = Figure(name, str(spec.get("title", name)), str(kind), published, band, match, terms,
                                   combine)
    return tuple(figures.values())


def _check_unit(terms: tuple, combine: str | None, published: str, runs: dict, where: str,
                problems: list[str]) -> None:
    """The model quantity must exist and be in the published value's unit (MB/s is not MiB/s)."""
    units = []
    for run, quantity in terms:
        groups = [c["group"] for c in runs[run].scenario["consumers"]]
        unit = unit_of(quantity, groups)
        if unit is None:
            problems.append(f"{where}: run {run} reports no {quantity['summary']!r} (python -m kafkamodel measures; "
                            f"a group's keys are GROUP.key, groups: {', '.join(groups) or 'none'})")
            return
        units.append(unit)
    if len(set(units)) > 1:
        problems.append(f"{where}.{combine}: its terms are in {units[0]} and {units[1]}")
        return
    unit = "ratio" if combine == "ratio" else units[0]
    if unit != published:
        problems.append(f"{where}.published.unit: the model quantity is in {unit}, the published value in {published}")


def _band(spec: Mapping, kind: Any, where: str, problems: list[str]) -> dict | None:
    if kind != "ratio":
        if "band" in spec:
            problems.append(f"{where}.band: only a ratio gives its band; a {kind}'s is the issue's (bands.BANDS)")
        return None
    band = _keys(spec.get("band"), BAND, f"{where}.band", problems)
    low, high = band.get("low"), band.get("high")
    if band and not (_number(low) and _number(high) and 0 <= low < high):
        problems.append(f"{where}.band: low and high must be numbers with 0 <= low < high, got {low!r}, {high!r}")
    return band


def _terms(spec: Mapping, where: str, runs: dict, figures: dict, problems: list[str]) -> tuple:
    combines = [k for k in ("ratio", "difference") if k in spec]
    if len(combines) > 1 or (combines and ("run" in spec or "quantity" in spec)):
        problems.append(f"{where}: give run + quantity, or ratio, or difference (one of them)")
        return (), None
    if not combines:
        if "run" not in spec or "quantity" not in spec:
            problems.append(f"{where}: needs run + quantity, or ratio: [A, B], or difference: [A, B]")
            return (), None
        term = _term({"run": spec["run"], "quantity": spec["quantity"]}, where, runs, figures, problems)
        return ((term,), None) if term else ((), None)
    combine = combines[0]
    pair = spec[combine]
    if not (isinstance(pair, list) and len(pair) == 2):
        problems.append(f"{where}.{combine}: must be two terms [A, B] (a figure's name or {{run, quantity}})")
        return (), None
    terms = tuple(_term(t, f"{where}.{combine}[{j}]", runs, figures, problems) for j, t in enumerate(pair))
    return (terms, combine) if all(terms) else ((), None)


def _term(raw: Any, where: str, runs: dict, figures: dict, problems: list[str]) -> tuple | None:
    """(run name, quantity) for a term: an earlier figure's name (with one term) or {run, quantity}."""
    if isinstance(raw, str):
        figure = figures.get(raw)
        if figure is None or figure.combine is not None:
            problems.append(f"{where}: {raw!r} is not an earlier figure with run + quantity"
                            + did_you_mean(raw, [n for n, f in figures.items() if f.combine is None]))
            return None
        return figure.terms[0]
    term = _keys(raw, TERM, where, problems)
    run = term.get("run")
    if "run" in term and not (isinstance(run, str) and run in runs):
        problems.append(f"{where}.run: no run named {run!r}" + did_you_mean(run, runs, f"; runs are {', '.join(runs)}"))
        return None
    quantity = _quantity(term.get("quantity"), f"{where}.quantity", runs.get(run) if isinstance(run, str) else None,
                         problems)
    return (run, quantity) if quantity and isinstance(run, str) and run in runs else None


def _quantity(raw: Any, where: str, run: Run | None, problems: list[str]) -> dict | None:
    q = _keys(raw, QUANTITY, where, problems)
    if not q:
        return None
    if ("summary" in q) == ("records" in q):
        problems.append(f"{where}: give summary: KEY or records: one of {', '.join(RECORDS)}")
        return None
    if "summary" in q and not (isinstance(q["summary"], str) and q["summary"]):
        problems.append(f"{where}.summary: must be a summary key (python -m kafkamodel measures), got {q['summary']!r}")
        return None
    if "records" in q:
        kind = RECORDS.get(q["records"], (None,))[0] if isinstance(q["records"], str) else None
        if kind is None:
            problems.append(f"{where}.records: must be one of {', '.join(RECORDS)}, got {q['records']!r}"
                            + did_you_mean(q["records"], RECORDS))
            return None
        p = q.get("percentile")
        if kind == "latency" and not (_number(p) and 0 < p < 100):
            problems.append(f"{where}.percentile: a latency needs a percentile in (0, 100), got {p!r}")
            return None
        if kind == "throughput" and ("percentile" in q or "floor_ms" in q):
            problems.append(f"{where}: a throughput takes no percentile or floor_ms")
            return None
        if "create_time_ms" in q and (kind != "latency" or not isinstance(q["create_time_ms"], bool)):
            problems.append(f"{where}.create_time_ms: true or false, for a latency, got {q['create_time_ms']!r}")
            return None
        if (q["records"] == "consume_latency") != ("group" in q):
            problems.append(f"{where}.group: consume_latency names its consumer group (and only it takes one)")
            return None
        if "group" in q and run is not None and q["group"] not in [c["group"] for c in run.scenario["consumers"]]:
            problems.append(f"{where}.group: no consumer group {q['group']!r} in run {run.name}")
            return None
        if q["records"] == "acked_mib_per_s" and run is not None:
            sizes = {p["record.size.bytes"] for p in run.scenario["producers"]}
            if len(sizes) != 1:
                problems.append(f"{where}.records: acked_mib_per_s needs one record.size.bytes across the run's "
                                f"producers, got {sorted(sizes)}")
                return None
    if "floor_ms" in q and not isinstance(q["floor_ms"], bool):
        problems.append(f"{where}.floor_ms: must be true or false, got {q['floor_ms']!r}")
        return None
    return q
