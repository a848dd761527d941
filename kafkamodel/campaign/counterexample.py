"""A shrunk schedule written as a shipped-format scenario file that ``python -m kafkamodel run`` reproduces.

``<spec folder>/<campaign>/<setting>-<property>-<schedule>.yaml``: the
scenario as its author would write it (the base scenario's keys, the
campaign's and the setting's overrides, the run's seed and the shrunk
faults), under a header comment that says which property it breaks and by
how much, where it came from (setting, schedule index, campaign seed, run
seed, the schedule as drawn) and the command that reproduces it.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from ..folders import write_atomic
from ..kit import scenario_for
from ..paths import ROOT
from .properties import BY_NAME, quantity
from .shrink import Shrunk
from .spec import Campaign


def file_name(shrunk: Shrunk) -> str:
    return f"{shrunk.setting}-{shrunk.prop}-{shrunk.index}.yaml"


def shown(path: Path) -> str:
    """A path as a reader types it: relative to the repository when inside it."""
    path = Path(path).resolve()
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def render(campaign: Campaign, shrunk: Shrunk, path: Path) -> str:
    """The scenario file's text: header comment, then the scenario."""
    setting = campaign.setting(shrunk.setting)
    point = campaign.point(setting, shrunk.index, shrunk.faults)
    given = scenario_for(point).given
    given["name"] = Path(path).stem
    prop = BY_NAME[shrunk.prop]
    kinds = ", ".join(f["kind"] for f in shrunk.original)
    header = [
        f"Counterexample from the fault campaign {campaign.name!r} ({shown(Path(campaign.source))}), shrunk.",
        f"Breaks {prop.name} ({prop.meaning}): {quantity(shrunk.amount, prop.unit)} here.",
        f"As drawn: {len(shrunk.original)} faults ({kinds}), {quantity(shrunk.original_amount, prop.unit)}; shrunk to "
        f"{len(shrunk.faults)} in {shrunk.simulations} simulations.",
        f"Origin: setting {setting.name} (promise: {setting.promise}"
        + (f"; {setting.about}" if setting.about else "") + f"), schedule {shrunk.index}, campaign seed "
        f"{campaign.seed}, run seed {point.seed}.",
        f"Reproduce: python -m kafkamodel run {shown(path)}",
    ]
    return "".join(f"# {line}\n" for line in header) + as_yaml(given)


def as_yaml(given: dict) -> str:
    """A scenario in the shipped files' style: sections as blocks, each list item (a topic, a fault) on one line."""
    def flow(value) -> str:
        return yaml.safe_dump(value, default_flow_style=True, width=10**6, sort_keys=False).strip().removesuffix("...").strip()

    lines = []
    for key, value in given.items():
        if isinstance(value, dict) and value:
            lines.append(f"{key}:")
            lines += [f"  {flow({k: v})[1:-1]}" for k, v in value.items()]
        elif isinstance(value, list) and value:
            lines.append(f"{key}:")
            lines += [f"  - {flow(item)}" for item in value]
        else:
            lines.append(flow({key: value})[1:-1])
    return "\n".join(lines) + "\n"


def write(campaign: Campaign, shrunk: Shrunk, folder: Path) -> Path:
    """Write the counterexample under `folder` (atomically); returns its path."""
    path = Path(folder) / file_name(shrunk)
    write_atomic(path, render(campaign, shrunk, path))
    return path
