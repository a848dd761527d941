"""Campaign specs: ``data/campaigns/<name>.yaml`` (or any path), read and checked before anything runs.

::

    campaign: safety                   # [a-z][a-z0-9_]*: names its runs, reports and counterexample folder
    title: Safety under random faults
    question: one line the campaign answers
    base: steady-state                 # a shipped scenario name or a YAML path (relative to the spec, too)
    overrides: {brokers: 4, ...}       # applied to every run (paths as in study specs)
    seed: 15                           # root of every schedule (numpy SeedSequence)
    schedules: 250                     # schedules per setting (--schedules overrides it)
    faults: {...}                      # the fault vocabulary (kafkamodel.campaign.vocabulary)
    settings:                          # what is held; every schedule runs under each
      isr_safe:                        # [a-z][a-z0-9_]*
        promise: safe                  # safe: no property may break; unsafe: count how often and how much
        about: acks=all, min.insync.replicas 2, ...   # one line for reports
        overrides: {...}               # applied after the campaign's
        faults: {power_loss.brokers: [1, 4]}   # vocabulary keys this setting draws differently
    shrink:
      budget: 150                      # simulations one counterexample's shrinking may spend
      per_property: 1                  # counterexamples kept per (safe setting, broken property)
      examples: 1                      # shrunk examples of loss per unsafe setting (0: none)

Every problem is reported as ``<file>: <field.path>: <rule>`` (the CLI shows
the first, exit status 2), and every setting's scenario and the first
schedules are built before anything runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ..config.scenario import Scenario, ScenarioError, did_you_mean, load_scenario
from ..kit import DEFAULT_POINT_NOTEBOOK, NAME, Part, Point, Spec, SpecError, load_spec_file, point_of
from ..kit.fields import REQUIRED, Field, count, mapping, name_like, one_of, read, string, text
from ..paths import CAMPAIGNS, scenario_path, shipped_scenarios
from . import vocabulary
from .properties import PROMISES

# a campaign spec's keys (docs/campaigns.md); base is read by base_scenario, faults by vocabulary
CAMPAIGN = {
    "campaign": Field(name_like("safety"), REQUIRED, "a name like safety ([a-z][a-z0-9_]*)"),
    "title": Field(text()),
    "question": Field(text()),
    "base": Field(),
    "overrides": Field(mapping(), {}),
    "seed": Field(count(0, "the root of every schedule"), REQUIRED, "an integer >= 0, the root of every schedule"),
    "schedules": Field(count(1, "schedules per setting"), REQUIRED, "an integer >= 1, schedules per setting"),
    "faults": Field(mapping(), {}),
    "settings": Field(),
    "shrink": Field(default={}),
}
SETTING = {
    "promise": Field(one_of(PROMISES, "safe: no property may break; unsafe: count how often and how much"), REQUIRED,
                     "safe or unsafe"),
    "about": Field(string(), ""),
    "overrides": Field(mapping(), {}),
    "faults": Field(mapping(), {}),
}
SHRINK = {  # simulations per counterexample, counterexamples per (safe setting, property), shrunk examples per unsafe one
    "budget": Field(count(1), 150),
    "per_property": Field(count(0), 1),
    "examples": Field(count(0), 1),
}
CHECKED_SCHEDULES = 8  # schedules per setting built as scenarios while loading (the rest are drawn alike)
_PROBE_PROBLEM = re.compile(r"^faults\[(\d+)\]\.broker: (.*)$")


@dataclass(frozen=True)
class Setting:
    name: str  # names its runs (the part of every run row)
    promise: str  # safe | unsafe
    about: str  # one line for reports
    overrides: dict  # path -> value: the campaign's, then the setting's
    faults: vocabulary.Vocabulary  # what its schedules are drawn from


@dataclass(frozen=True)
class Campaign:
    name: str
    title: str
    question: str
    base: str  # as written
    base_path: str  # the base scenario's file, absolute
    seed: int  # root of every schedule
    schedules: int  # per setting
    settings: tuple  # of Setting
    shrink_budget: int  # simulations per counterexample
    per_property: int  # counterexamples per (safe setting, property)
    examples: int  # shrunk examples per unsafe setting
    source: str  # the spec file
    folder: str  # where counterexamples are written: <spec folder>/<campaign>/

    def setting(self, name: str) -> Setting:
        return next(s for s in self.settings if s.name == name)

    def point(self, setting: Setting, index: int, faults: list | None = None) -> Point:
        """The run of schedule `index` under `setting` (or of other `faults` on its seed: a shrinking step)."""
        faults = setting.faults.schedule(self.seed, index) if faults is None else faults
        seed = vocabulary.run_seed(self.seed, index)
        overrides = {"name": f"{self.name}-{setting.name}", **setting.overrides, "faults": faults}
        return point_of(self.name, setting.name, self.base, self.base_path, overrides,
                        {"schedule": index, "promise": setting.promise}, seed,
                        records=False)  # verdicts read summaries only

    def sweep(self, schedules: int | None = None) -> "CampaignSweep":
        """The campaign as a study kit sweep: a part per setting, a point per schedule."""
        n = self.schedules if schedules is None else schedules
        parts = tuple(Part(s.name, self.base, 1, s.overrides, ()) for s in self.settings)
        return CampaignSweep(self.name, self.title, self.question, None, DEFAULT_POINT_NOTEBOOK, {},
                             {"schedule": "int", "promise": "str"}, parts, "active", "", 100, self.source,
                             campaign=self, schedules=n)


@dataclass(frozen=True)
class CampaignSweep(Spec):
    """A Spec whose parts are the settings and whose points carry the generated faults (one seed each)."""

    campaign: Campaign | None = None  # what it runs
    schedules: int = 0  # per setting

    def _points(self, scale) -> list[Point]:
        """Every setting's schedules, setting-major (``--scale`` does not apply: schedules are the size)."""
        c = self.campaign
        return [c.point(s, i) for s in c.settings for i in range(self.schedules)]


def campaign_path(spec: "str | Path", folder: Path = CAMPAIGNS) -> Path:
    """A campaign's spec file (or another kind's, shipped in `folder`): a name (``safety``) or a path."""
    p = Path(spec)
    if p.suffix in (".yaml", ".yml") or p.exists():
        return p
    return folder / f"{spec}.yaml"


def load_campaign(spec: "str | Path") -> Campaign:
    """A validated Campaign from a name or a YAML path; SpecError lists every problem."""
    return load_spec_file(spec, campaign_path(spec), CAMPAIGNS, "campaign", CAMPAIGN, _build)


def _build(data: Mapping, path: Path, problems: list[str]) -> Campaign | None:
    name_, seed, schedules = data.get("campaign"), data.get("seed"), data.get("schedules")
    shrink = read(data["shrink"] or {}, SHRINK, "shrink", problems, what=f" of {', '.join(SHRINK)}")
    base_path = base_scenario(data.get("base"), path, problems)
    overrides = _mapping(data["overrides"])
    base = None
    if base_path is not None:
        try:
            base = load_scenario(base_path).with_overrides(overrides)
        except ScenarioError as exc:
            problems.extend(f"overrides: {p}" for p in exc.problems)
    faults = _mapping(data["faults"])
    before = len(problems)
    if base is not None:  # the campaign's own vocabulary, checked once (a setting's changes are checked with it)
        vocab = vocabulary.parse(faults, "faults", base["brokers"], problems)
        if vocab is not None:
            _check_targets(base, vocab.targets, "faults", problems)
    if len(problems) > before:
        return None
    raw_settings = data.get("settings")
    if not isinstance(raw_settings, Mapping) or not raw_settings:
        problems.append("settings: must be a non-empty mapping of setting name -> {promise, about, overrides, faults}")
        raw_settings = {}
    settings = []
    for sname, raw in raw_settings.items():
        setting = _setting(str(sname), raw, base, overrides, faults, problems)
        if setting is not None:
            settings.append(setting)
    if problems or base is None:
        return None
    campaign = Campaign(name_, " ".join(str(data.get("title") or name_).split()),
                        " ".join(str(data.get("question") or "").split()), data["base"], str(base_path.resolve()),
                        seed, schedules, tuple(settings), shrink["budget"], shrink["per_property"], shrink["examples"],
                        str(path), str(path.parent / name_))
    for setting in settings:  # the schedules as drawn make valid scenarios (targets, kinds, times)
        for i in range(min(CHECKED_SCHEDULES, schedules)):
            try:
                base.with_overrides({**setting.overrides, "faults": setting.faults.schedule(seed, i)})
            except ScenarioError as exc:
                problems.append(f"settings.{setting.name}: schedule {i}: {exc.problems[0]}")
                break
    return campaign


def _mapping(raw: Mapping | None) -> dict:
    """A mapping read (``fields.mapping``: a mapping or nothing) with its keys as strings."""
    return {str(k): v for k, v in (raw or {}).items()}


def base_scenario(raw: Any, path: Path, problems: list[str], key: str = "base") -> Path | None:
    """The scenario file a spec at `path` names under `key`: a shipped scenario's name or a path (relative to the
    spec, too); None and a problem when there is none."""
    if not isinstance(raw, str) or not raw:
        problems.append(f"{key}: required (a shipped scenario name or a scenario YAML path)")
        return None
    for candidate in (scenario_path(raw), path.parent / raw):
        if candidate.is_file():
            return candidate
    problems.append(f"{key}: no scenario {raw!r} in data/scenarios/ or beside the spec"
                    + did_you_mean(raw, shipped_scenarios()))
    return None


def _setting(name: str, raw: Any, base: Scenario | None, overrides: dict, faults: dict,
             problems: list[str]) -> Setting | None:
    where = f"settings.{name}"
    if not NAME.match(name):
        problems.append(f"{where}: a setting name must match [a-z][a-z0-9_]*")
        return None
    raw = read(raw, SETTING, where, problems, what=" with promise, about, overrides, faults")
    if not raw:
        return None
    promise, about = raw.get("promise"), raw["about"]
    mine = {**overrides, **_mapping(raw["overrides"])}
    if base is None:
        return None
    try:
        scenario = base.with_overrides(mine)
    except ScenarioError as exc:
        problems.extend(f"{where}.overrides: {p}" for p in exc.problems)
        return None
    raw_faults = _mapping(raw["faults"])
    here = f"{where}.faults" if raw_faults else "faults"
    vocab = vocabulary.parse(vocabulary.merged(faults, raw_faults), here, scenario["brokers"], problems)
    if vocab is None:
        return None
    if "targets" in raw_faults and not _check_targets(scenario, vocab.targets, here, problems):
        return None
    return Setting(name, promise, " ".join(about.split()), mine, vocab)


def _check_targets(scenario: Scenario, targets: tuple, here: str, problems: list[str]) -> bool:
    """Each target names a broker or a partition's leader of this scenario (a crash of each, tried as a scenario)."""
    probe = [{"at.ms": 0, "kind": "crash", "broker": t, "duration.ms": 1} for t in targets]
    try:
        scenario.with_overrides({"faults": probe})
    except ScenarioError as exc:
        for p in exc.problems:
            m = _PROBE_PROBLEM.match(p)
            problems.append(f"{here}.targets[{m[1]}]: {m[2]}" if m else f"{here}.targets: {p}")
        return False
    return True
