"""Durability specs: a base scenario, the configurations compared on it, and the failure rates.

::

    scenario: three-zones              # a shipped scenario name or a YAML path (relative to the spec, too)
    configurations:                    # name -> overrides of the scenario (paths as in study specs)
      rf3_min2: {}
      rf3_min1: {broker.min.insync.replicas: 1}
    failures:                          # rates per broker or per zone and year; every key optional (defaults below)
      broker.crash.per.year: 1         #   process crashes (the log survives: the page cache outlives a process)
      machine.crash.per.year: 2        #   machine crashes or reboots: the page cache is lost (unflushed data gone),
                                       #   the disk kept; back after broker.restart.ms (a power loss of one broker)
      broker.restart.ms: 60000         #   the process's start; back after this plus its log recovery (docs/restarts.md)
      machine.failure.per.year: 0.04   #   the machine is replaced: the broker returns with an EMPTY disk
      machine.replace.hours: 24        #   ... this long after (its catch-up from the leaders follows)
      zone.power.loss.per.year: 0.2    #   every broker of the zone at once; unflushed data gone; back after broker.restart.ms
      zone.outage.per.year: {a: 0.5, b: 0.1}   # a number (each zone) or {zone: rate} (zones are the scenario's racks)
      zone.outage.hours: 6             #   every broker of the zone unreachable this long; nothing lost
      broker.pause.per.year: 0         #   stop-the-world pauses (GC, noisy neighbour): log and page cache kept
      broker.pause.ms: 30000           #   each this long (default rate 0: no sourced fleet rate, docs/durability.md)
      broker.slow.per.year: 0          #   fail-slow spells (a degraded disk or NIC): replication fetches slowed
      broker.slow.ms: 600000           #   each this long
      broker.slow.factor: 10           #   fetches to and from it take this many times longer (the slow fault)
      zone.partition.per.year: 0       #   a number (each zone) or {zone: rate}: the zone cut from the other zones
      zone.partition.minutes: 10       #   and from the controller quorum this long; clients reach both sides
    seed: 0                            # root of the failure process's draws (numpy SeedSequence)
    windows: 4000                      # failure windows drawn per configuration (more: narrower intervals)

Zones are the scenario's ``racks`` (broker i in ``racks[i % len(racks)]``);
a scenario without racks is one zone, named ``cluster``. Every problem is
reported as ``<file>: <field.path>: <rule>`` (the CLI shows the first, exit
status 2), and every configuration is built as a scenario before anything
runs. Where the defaults come from: ``docs/durability.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ..campaign.spec import base_scenario, campaign_path
from ..config.scenario import Scenario, ScenarioError, did_you_mean, load_scenario
from ..kit import SpecError, load_spec_file, named
from ..kit.fields import Field, count, is_number, read
from ..paths import SHIPPED
from .markov import MINUTES_PER_YEAR

DURABILITY = SHIPPED / "data" / "durability"  # shipped durability specs
MS_PER_YEAR = 365.25 * 24 * 3600 * 1000.0
HOURS_PER_YEAR = 365.25 * 24
ONE_ZONE = "cluster"  # the zone of a scenario without racks

# key -> (default, unit, per zone?); the sources of the defaults are in docs/durability.md
FAILURES: dict[str, tuple[float, str, bool]] = {
    "broker.crash.per.year": (1.0, "per broker and year", False),
    "machine.crash.per.year": (2.0, "per broker and year", False),
    "broker.restart.ms": (60000.0, "ms", False),
    "machine.failure.per.year": (0.04, "per broker and year", False),
    "machine.replace.hours": (24.0, "hours", False),
    "zone.power.loss.per.year": (0.2, "per zone and year", True),
    "zone.outage.per.year": (0.5, "per zone and year", True),
    "zone.outage.hours": (6.0, "hours", False),
    "broker.pause.per.year": (0.0, "per broker and year", False),
    "broker.pause.ms": (30000.0, "ms", False),
    "broker.slow.per.year": (0.0, "per broker and year", False),
    "broker.slow.ms": (600000.0, "ms", False),
    "broker.slow.factor": (10.0, "times longer fetches", False),
    "zone.partition.per.year": (0.0, "per zone and year", True),
    "zone.partition.minutes": (10.0, "minutes", False),
}
PAUSE_KEYS = ("broker.pause.per.year", "broker.pause.ms")  # off by default: a study need not source them
SLOW_KEYS = ("broker.slow.per.year", "broker.slow.ms", "broker.slow.factor")
PARTITION_KEYS = ("zone.partition.per.year", "zone.partition.minutes")
OFF_BY_DEFAULT = (PAUSE_KEYS, SLOW_KEYS, PARTITION_KEYS)  # each: its rate first, 0 unless the spec sets it
FACTORS = ("broker.slow.factor",)  # neither a rate nor a duration: a factor >= 1
DEFAULT_WINDOWS = 4000
# a durability spec's keys (docs/durability.md): the scenario (base_scenario), its configurations and the failures
# are read by _configurations and parse_failures
SPEC = {
    "scenario": Field(),
    "configurations": Field(),
    "failures": Field(),
    "seed": Field(count(0, "the root of the failure process's draws"), 0),
    "windows": Field(count(1, "failure windows drawn per configuration"), DEFAULT_WINDOWS),
}


@dataclass(frozen=True)
class Failures:
    """The failure process in rates (per year) and durations (in years), zone rates resolved per zone name."""

    crash_per_year: float
    restart_years: float
    machine_per_year: float
    replace_years: float
    power_loss_per_year: Mapping[str, float]  # zone -> rate
    outage_per_year: Mapping[str, float]  # zone -> rate
    outage_years: float
    given: Mapping[str, Any]  # as written (for the output's record)
    pause_per_year: float = 0.0  # stop-the-world pauses per broker
    pause_years: float = 30000.0 / MS_PER_YEAR
    slow_per_year: float = 0.0  # fail-slow spells per broker
    slow_years: float = 600000.0 / MS_PER_YEAR
    slow_factor: float = 10.0  # the slow fault's factor in the detailed run
    partition_per_year: Mapping[str, float] = field(default_factory=dict)  # zone -> rate of being cut off
    partition_years: float = 10.0 / MINUTES_PER_YEAR
    machine_crash_per_year: float = 0.0  # machine crashes per broker: its page cache lost, its disk kept


@dataclass(frozen=True)
class Configuration:
    name: str
    overrides: dict
    scenario: Scenario


@dataclass(frozen=True)
class DurabilitySpec:
    source: str
    base: str  # as written
    base_path: str
    configurations: tuple  # of Configuration
    failures: Failures
    seed: int
    windows: int


def zones_of(scenario: Mapping) -> list[str]:
    """Each broker's zone: its rack (``racks[i % len(racks)]``), or ``cluster`` without racks."""
    racks = list(scenario.get("racks") or [])
    return [racks[i % len(racks)] if racks else ONE_ZONE for i in range(scenario["brokers"])]


def load_durability(spec: "str | Path") -> DurabilitySpec:
    """A validated DurabilitySpec from a name (data/durability/NAME.yaml) or a path; SpecError lists every problem."""
    return load_spec_file(spec, campaign_path(spec, DURABILITY), DURABILITY, "durability", SPEC, _build)


def _build(data: Mapping, path: Path, problems: list[str]) -> DurabilitySpec | None:
    """The spec from its keys as ``fields.read`` gives them (SPEC)."""
    seed, windows = data["seed"], data["windows"]
    base_path = base_scenario(data.get("scenario"), path, problems, "scenario")
    configurations = _configurations(data.get("configurations"), base_path, problems)
    zones = sorted({z for c in configurations for z in zones_of(c.scenario)})
    failures = parse_failures(data.get("failures"), zones, problems)
    if problems or base_path is None or failures is None:
        return None
    return DurabilitySpec(str(path), data["scenario"], str(base_path.resolve()), tuple(configurations), failures,
                          seed, windows)


def _configurations(raw: Any, base_path: Path | None, problems: list[str]) -> list[Configuration]:
    if not isinstance(raw, Mapping) or not raw:
        problems.append("configurations: must be a non-empty mapping of name -> overrides of the scenario")
        return []
    base = None
    if base_path is not None:
        try:
            base = load_scenario(base_path)
        except ScenarioError as exc:
            problems.extend(f"scenario: {p}" for p in exc.problems)
    out = []
    for name, overrides, where in named(raw, "configurations", "configuration", problems):
        if overrides is None:
            overrides = {}
        if not isinstance(overrides, Mapping):
            problems.append(f"{where}: must be a mapping of scenario overrides, got {type(overrides).__name__}")
            continue
        if base is None:
            continue
        overrides = {str(k): v for k, v in overrides.items()}
        if "faults" in overrides:
            problems.append(f"{where}.faults: not allowed (the failure process places the faults)")
            continue
        try:
            out.append(Configuration(name, overrides, base.with_overrides(overrides)))
        except ScenarioError as exc:
            problems.extend(f"{where}: {p}" for p in exc.problems)
    return out


def _failure_check(key: str, unit: str, per_zone: bool, zones: list[str]):
    """The rule of one failure key: a rate >= 0, a factor >= 1 or a duration > 0 (in `unit`); a per-zone rate also
    {zone: rate}, each zone one of `zones`."""
    rate = key.endswith(".per.year")
    says = "a rate >= 0" if rate else "a factor >= 1" if key in FACTORS else "a duration > 0"

    def check(v: Any, path: str) -> list[str]:
        if per_zone and isinstance(v, Mapping):
            found = []
            for zone, r in v.items():
                if str(zone) not in zones:
                    found.append(f"{path}.{zone}: no zone {zone!r} (zones are the scenario's racks: "
                                 f"{', '.join(zones)})" + did_you_mean(str(zone), zones))
                elif not is_number(r) or r < 0:
                    found.append(f"{path}.{zone}: must be a rate >= 0 ({unit}), got {r!r}")
            return found
        if not is_number(v) or (v < 0 if rate else v < 1 if key in FACTORS else v <= 0):
            return [f"{path}: must be {says} ({unit}){' or {zone: rate}' if per_zone else ''}, got {v!r}"]
        return []

    return check


def parse_failures(raw: Any, zones: list[str], problems: list[str]) -> Failures | None:
    """The `failures` mapping checked against its rules: known keys, rates >= 0, durations > 0, zone rates naming
    zones of the scenario, and no broker or zone failing again (on average) before it is back."""
    before = len(problems)
    table = {key: Field(_failure_check(key, unit, per_zone, zones), default)
             for key, (default, unit, per_zone) in FAILURES.items()}
    given = read({} if raw is None else raw, table, "failures", problems, what=f" of {', '.join(FAILURES)}")
    if not given:
        return None
    values: dict[str, Any] = {}
    for key, (_, _, per_zone) in FAILURES.items():
        v = given[key]
        if per_zone and isinstance(v, Mapping):
            values[key] = {str(zone): float(r) for zone, r in v.items()}
        else:
            values[key] = {z: float(v) for z in zones} if per_zone else float(v)
    if len(problems) > before:
        return None
    restart_years = values["broker.restart.ms"] / MS_PER_YEAR
    replace_years = values["machine.replace.hours"] / HOURS_PER_YEAR
    outage_years = values["zone.outage.hours"] / HOURS_PER_YEAR
    down = (("broker.crash.per.year", values["broker.crash.per.year"], restart_years, "broker.restart.ms",
             "a broker would crash again before it restarts"),
            ("machine.crash.per.year", values["machine.crash.per.year"], restart_years, "broker.restart.ms",
             "a machine would crash again before its broker restarts"),
            ("machine.failure.per.year", values["machine.failure.per.year"], replace_years, "machine.replace.hours",
             "a machine would fail again before it is replaced"),
            ("broker.pause.per.year", values["broker.pause.per.year"], values["broker.pause.ms"] / MS_PER_YEAR,
             "broker.pause.ms", "a broker would pause again before it resumes"),
            ("broker.slow.per.year", values["broker.slow.per.year"], values["broker.slow.ms"] / MS_PER_YEAR,
             "broker.slow.ms", "a broker would slow down again before its slow spell ends"))
    for key, rate, years, duration_key, what in down:
        if rate * years >= 1:
            problems.append(f"failures.{key}: {rate:g} per year with {duration_key} {given[duration_key]:g}: "
                            f"{what} (rate x duration must stay below one year)")
    partition_years = values["zone.partition.minutes"] / MINUTES_PER_YEAR
    for key, years, length in (("zone.outage.per.year", outage_years, f"{values['zone.outage.hours']:g} hours"),
                               ("zone.partition.per.year", partition_years,
                                f"{values['zone.partition.minutes']:g} minutes"),
                               ("zone.power.loss.per.year", restart_years, f"{values['broker.restart.ms']:g} ms")):
        for zone, rate in values[key].items():
            if rate * years >= 1:
                problems.append(f"failures.{key}: zone {zone}: {rate:g} per year, each {length} long: the zone would "
                                "fail again before it is back (rate x duration must stay below one year)")
    if len(problems) > before:
        return None
    return Failures(values["broker.crash.per.year"], restart_years, values["machine.failure.per.year"], replace_years,
                    values["zone.power.loss.per.year"], values["zone.outage.per.year"], outage_years,
                    {k: given[k] for k in FAILURES}, values["broker.pause.per.year"],
                    values["broker.pause.ms"] / MS_PER_YEAR, values["broker.slow.per.year"],
                    values["broker.slow.ms"] / MS_PER_YEAR, values["broker.slow.factor"],
                    values["zone.partition.per.year"], partition_years, values["machine.crash.per.year"])
