"""Shrinking: reduce a schedule that breaks a property to a smaller one that still breaks it, in-process.

Greedy, to a fixed point, as Hypothesis and QuickCheck shrink: try the
reductions below in order on the current schedule and keep the first that
still breaks the same property on the same run seed; start again from the
first reduction; stop when none does or the budget of simulations is spent.
The reductions stay inside the setting's vocabulary (durations no shorter than
its least, every fault over by ``end.ms``), so the result is a schedule the
campaign could have drawn:

1. drop a fault (the last first);
2. fewer brokers in a power loss;
3. fewer links in a partial isolation;
4. a smaller slow factor;
5. a shorter fault (half as long);
6. an earlier fault (at half the time);
7. rounder times (whole seconds, tenths, hundredths, milliseconds).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Iterator

from ..kit import run_point
from .properties import BY_NAME
from .spec import Campaign, Setting


@dataclass
class Shrunk:
    setting: str  # the setting the schedule ran under
    index: int  # the schedule's index in the campaign
    prop: str  # the property it breaks
    original: list  # the faults as drawn
    faults: list  # the faults it was reduced to
    original_amount: int  # how much the drawn schedule broke the property
    amount: int  # how much the reduced one does
    simulations: int  # runs spent (the first confirms the drawn schedule)
    result: object = field(repr=False, default=None)  # the reduced schedule's Result


def shrink(campaign: Campaign, setting: Setting, index: int, prop: str, budget: int, bar=None) -> Shrunk:
    """Reduce schedule `index` of `setting` while it still breaks `prop` (at most `budget` simulations)."""
    measure = BY_NAME[prop]
    spent = 0

    def breaks(faults: list):
        nonlocal spent
        spent += 1
        if bar is not None:
            bar.update(1)
        result = run_point(campaign.point(setting, index, faults))
        return measure.amount(result.summary), result

    original = setting.faults.schedule(campaign.seed, index)
    amount, result = breaks(original)
    if not amount:
        raise AssertionError(f"{setting.name} schedule {index} does not break {prop} when run again in-process")
    first_amount, current = amount, original
    progress = True
    while progress and spent < budget:
        progress = False
        for candidate in reductions(current, setting.faults):
            if spent >= budget:
                break
            n, r = breaks(candidate)
            if n:
                current, amount, result, progress = candidate, n, r, True
                break
    return Shrunk(setting.name, index, prop, original, current, first_amount, amount, spent, result)


def reductions(faults: list, vocab) -> Iterator[list]:
    """Smaller schedules than `faults`, the simplest change first (each a new list, in time order)."""
    def changed(i: int, values: dict) -> list:
        out = copy.deepcopy(faults)
        out[i].update({k: int(v) if isinstance(v, float) and v.is_integer() else v for k, v in values.items()})
        return sorted(out, key=lambda f: f["at.ms"])

    for i in reversed(range(len(faults))):
        yield faults[:i] + faults[i + 1:]
    for i, f in enumerate(faults):
        if isinstance(f["broker"], list) and len(f["broker"]) > 1:
            for b in reversed(f["broker"]):
                rest = [x for x in f["broker"] if x != b]
                yield changed(i, {"broker": rest if len(rest) > 1 else rest[0]})
        if len(f.get("from") or []) > 1:
            for peer in reversed(f["from"]):
                yield changed(i, {"from": [x for x in f["from"] if x != peer]})
        if f["kind"] == "slow":
            smaller = [x for x in vocab.slow_factor if x < f["factor"]]
            if smaller:
                yield changed(i, {"factor": min(smaller)})
    least = vocab.duration_ms[0]
    for i, f in enumerate(faults):
        if f["duration.ms"] > least:
            yield changed(i, {"duration.ms": max(least, _tenths(f["duration.ms"] / 2))})
    for i, f in enumerate(faults):
        if f["at.ms"] > 0:
            yield changed(i, {"at.ms": _tenths(f["at.ms"] / 2)})
    for grain in (1000, 100, 10, 1):
        for i, f in enumerate(faults):
            at, duration = _round(f["at.ms"], grain), _round(f["duration.ms"], grain)
            if duration < least:
                duration = f["duration.ms"]
            if (at, duration) != (f["at.ms"], f["duration.ms"]) and at + duration <= vocab.end_ms:
                yield changed(i, {"at.ms": at, "duration.ms": duration})


def _tenths(x: float) -> float:
    return math.floor(x * 10) / 10


def _round(x: float, grain: int) -> float:
    """`x` to a multiple of `grain` ms, as an int when it is whole."""
    r = round(x / grain) * grain
    return int(r) if float(r).is_integer() else r
