"""The fault vocabulary of a campaign, and the schedules drawn from it.

A campaign spec's ``faults:`` section (a setting may replace any key of it)::

    count: [1, 5]                 # faults per schedule (inclusive; a number: exactly that many)
    kinds: [crash, isolate, pause, slow]   # or {crash: 2, pause: 1}: relative weights
    targets: [0, 1, 2, 3, "leader:t-0"]    # broker ids and leader:TOPIC-P, drawn uniformly
    gap.ms: [0, 4000]             # from one fault's start to the next (the first: from time 0)
    duration.ms: [50, 8000]       # how long each fault lasts (a crash: until it restarts)
    end.ms: 14000                 # every fault is over by then; the rest of the run lets the cluster heal
    isolate.partial: 0.5          # chance an isolation cuts only some links ...
    isolate.from: [0, 1, 2, 3, controller, clients]   # ... to some of these (default: every broker, both)
    isolate.peers: [1, 3]         # ... how many of them
    slow.factor: [5, 50, 500]     # a slow broker's factor, drawn from these
    power_loss.chance: 0.5        # chance a schedule adds one power loss (0: off)
    power_loss.brokers: [1, 1]    # how many brokers lose power at that instant
    power_loss.targets: [0, 1, 2, 3]   # which brokers may (default: every broker)

A range is ``[low, high]`` or one number. Schedule ``i`` of a campaign seeded
``seed`` is drawn from ``numpy.random.SeedSequence(seed, spawn_key=(i, 0))``
and its run's seed from ``spawn_key=(i, 1)``: the same seed, index and
vocabulary give the same schedule on any machine, so settings that share a
vocabulary run the same schedules on the same draws (common random numbers),
and a schedule is reproduced from its index alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from ..config.scenario import unknown_key

KINDS = ("crash", "isolate", "pause", "slow")  # power_loss has its own keys: at most one per schedule
PEER_NAMES = ("controller", "clients")  # isolate.from may name these besides broker ids
DEFAULTS: dict[str, Any] = {
    "count": [1, 5], "kinds": list(KINDS), "targets": None, "gap.ms": [0, 4000], "duration.ms": [50, 8000],
    "end.ms": None, "isolate.partial": 0.5, "isolate.from": None, "isolate.peers": [1, 3], "slow.factor": [5, 50, 500],
    "power_loss.chance": 0.0, "power_loss.brokers": [1, 1], "power_loss.targets": None,
}
KEYS = tuple(DEFAULTS)


@dataclass(frozen=True)
class Vocabulary:
    count: tuple  # (low, high): faults per schedule, inclusive
    kinds: tuple  # the kinds drawn
    weights: tuple  # their probabilities (summing to 1)
    targets: tuple  # broker ids and leader:TOPIC-P
    gap_ms: tuple  # (low, high): one fault's start to the next
    duration_ms: tuple  # (low, high)
    end_ms: float  # every fault over by then
    isolate_partial: float  # chance an isolation is partial
    isolate_from: tuple  # the peers a partial isolation may cut
    isolate_peers: tuple  # (low, high): how many peers it cuts
    slow_factor: tuple  # factors drawn for a slow broker
    power_loss_chance: float  # chance a schedule adds a power loss
    power_loss_brokers: tuple  # (low, high): brokers losing power at once
    power_loss_targets: tuple  # broker ids a power loss may hit

    def schedule(self, seed: int, index: int) -> list[dict]:
        """Schedule `index` of a campaign seeded `seed`: a scenario's ``faults`` list, in time order."""
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(index, 0)))
        faults, at = [], 0.0
        lo_d, hi_d = self.duration_ms
        for _ in range(int(rng.integers(self.count[0], self.count[1] + 1))):
            at += rng.uniform(*self.gap_ms)
            if at + lo_d > self.end_ms:
                break
            kind = str(rng.choice(self.kinds, p=self.weights))
            target = self.targets[int(rng.integers(len(self.targets)))]
            fault = self._timed(at, rng.uniform(lo_d, hi_d), kind, target)
            if kind == "isolate" and rng.random() < self.isolate_partial:
                k = int(rng.integers(self.isolate_peers[0], min(self.isolate_peers[1], len(self.isolate_from)) + 1))
                picked = sorted(rng.choice(len(self.isolate_from), size=k, replace=False).tolist())
                fault["from"] = [self.isolate_from[i] for i in picked]
            if kind == "slow":
                fault["factor"] = self.slow_factor[int(rng.integers(len(self.slow_factor)))]
            faults.append(fault)
        if self.power_loss_chance > 0 and rng.random() < self.power_loss_chance:
            start = rng.uniform(0.0, self.end_ms - lo_d)
            k = int(rng.integers(self.power_loss_brokers[0], self.power_loss_brokers[1] + 1))
            hit = sorted(self.power_loss_targets[i] for i in rng.choice(len(self.power_loss_targets), size=k, replace=False))
            faults.append(self._timed(start, rng.uniform(lo_d, hi_d), "power_loss", hit[0] if k == 1 else hit))
        return sorted(faults, key=lambda f: f["at.ms"])

    def _timed(self, at: float, duration: float, kind: str, target) -> dict:
        """A fault at `at` for `duration`, in tenths of a millisecond, over by end.ms."""
        at = math.floor(at * 10) / 10
        duration = max(math.floor(min(duration, self.end_ms - at) * 10) / 10, 0.1)
        return {"at.ms": at, "kind": kind, "broker": target, "duration.ms": duration}


def run_seed(seed: int, index: int) -> int:
    """The simulation seed of schedule `index` (the same for every setting)."""
    return int(np.random.SeedSequence(seed, spawn_key=(index, 1)).generate_state(1)[0])


def merged(base: Mapping, changes: Mapping | None) -> dict:
    """A setting's vocabulary: the campaign's keys, with the setting's replacing them one by one."""
    return {**base, **(changes or {})}


def parse(raw: Mapping, where: str, brokers: int, problems: list[str]) -> Vocabulary | None:
    """A Vocabulary from a ``faults:`` mapping (defaults filled); each problem appended as ``where.key: rule``."""
    problems.extend(unknown_key(k, KEYS, f"{where}.{k}") for k in raw if k not in KEYS)
    v = {**DEFAULTS, **{k: raw[k] for k in raw if k in KEYS}}
    start = len(problems)
    ids = list(range(brokers))
    count = _range(v["count"], f"{where}.count", problems, integer=True, low=0)
    kinds, weights = _kinds(v["kinds"], f"{where}.kinds", problems)
    targets = v["targets"] if v["targets"] is not None else ids
    if not isinstance(targets, list) or not targets:
        problems.append(f"{where}.targets: must be a non-empty list of broker ids and leader:TOPIC-P")
        targets = ids
    gap = _range(v["gap.ms"], f"{where}.gap.ms", problems, low=0)
    duration = _range(v["duration.ms"], f"{where}.duration.ms", problems, low=0, strict=True)
    end = v["end.ms"]
    if end is None:
        problems.append(f"{where}.end.ms: required (every fault is over by then; leave the cluster time to heal "
                        "before duration.ms)")
    elif not _number(end) or end <= 0:
        problems.append(f"{where}.end.ms: must be a number of ms > 0, got {end!r}")
    elif duration and end < duration[0]:
        problems.append(f"{where}.end.ms: {end} leaves no room for a fault of duration.ms {duration[0]}")
    partial = _chance(v["isolate.partial"], f"{where}.isolate.partial", problems)
    peers_from = v["isolate.from"] if v["isolate.from"] is not None else [*ids, *PEER_NAMES]
    if not isinstance(peers_from, list) or not peers_from:
        problems.append(f"{where}.isolate.from: must be a non-empty list of broker ids, controller, clients")
        peers_from = ids
    for i, peer in enumerate(peers_from):
        if not (peer in PEER_NAMES or (isinstance(peer, int) and not isinstance(peer, bool) and 0 <= peer < brokers)):
            problems.append(f"{where}.isolate.from[{i}]: must be a broker id 0..{brokers - 1}, controller or clients, "
                            f"got {peer!r}")
    peers = _range(v["isolate.peers"], f"{where}.isolate.peers", problems, integer=True, low=1)
    factors = v["slow.factor"]
    if not isinstance(factors, list) or not factors or not all(_number(f) and f >= 1 for f in factors):
        problems.append(f"{where}.slow.factor: must be a non-empty list of numbers >= 1, got {factors!r}")
    chance = _chance(v["power_loss.chance"], f"{where}.power_loss.chance", problems)
    lost = _range(v["power_loss.brokers"], f"{where}.power_loss.brokers", problems, integer=True, low=1)
    pl_targets = v["power_loss.targets"] if v["power_loss.targets"] is not None else ids
    if not isinstance(pl_targets, list) or not pl_targets or len(set(map(str, pl_targets))) != len(pl_targets) or not all(
            isinstance(b, int) and not isinstance(b, bool) and 0 <= b < brokers for b in pl_targets):
        problems.append(f"{where}.power_loss.targets: must be a list of distinct broker ids 0..{brokers - 1}, "
                        f"got {pl_targets!r}")
        pl_targets = ids
    if lost and lost[1] > len(pl_targets):
        problems.append(f"{where}.power_loss.brokers: at most {len(pl_targets)} (the brokers in power_loss.targets), "
                        f"got {lost[1]}")
    if len(problems) > start:
        return None
    return Vocabulary(count, kinds, weights, tuple(targets), gap, duration, float(end), partial, tuple(peers_from),
                      peers, tuple(factors), chance, lost, tuple(pl_targets))


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _range(raw: Any, where: str, problems: list[str], integer: bool = False, low: float = 0,
           strict: bool = False) -> tuple | None:
    """[low, high] or one number, each >= `low` (> with `strict`), low <= high."""
    values = raw if isinstance(raw, list) else [raw, raw]
    ok = len(values) == 2 and all(
        (isinstance(x, int) and not isinstance(x, bool)) if integer else _number(x) for x in values)
    what = "integers" if integer else "numbers"
    bound = f"> {low}" if strict else f">= {low}"
    if not ok or any(x < low or (strict and x == low) for x in values) or values[0] > values[1]:
        problems.append(f"{where}: must be [low, high] (or one value), {what} {bound}, low <= high, got {raw!r}")
        return None
    return (values[0], values[1])


def _chance(raw: Any, where: str, problems: list[str]) -> float:
    if not _number(raw) or not 0 <= raw <= 1:
        problems.append(f"{where}: must be a probability from 0 to 1, got {raw!r}")
        return 0.0
    return float(raw)


def _kinds(raw: Any, where: str, problems: list[str]) -> tuple[tuple, tuple]:
    weights = raw if isinstance(raw, Mapping) else {k: 1 for k in raw} if isinstance(raw, list) else None
    if not weights:
        problems.append(f"{where}: must be a non-empty list of kinds ({', '.join(KINDS)}) or kind -> weight")
        return (), ()
    for kind, w in weights.items():
        if kind == "power_loss":
            problems.append(f"{where}.power_loss: power loss has its own keys (power_loss.chance, power_loss.brokers)")
        elif kind not in KINDS:
            problems.append(f"{where}.{kind}: not a fault kind; kinds are {', '.join(KINDS)}")
        elif not _number(w) or w <= 0:
            problems.append(f"{where}.{kind}: a weight must be a number > 0, got {w!r}")
    if isinstance(raw, list) and len(set(raw)) != len(raw):
        problems.append(f"{where}: lists a kind twice")
    good = {k: w for k, w in weights.items() if k in KINDS and _number(w) and w > 0}
    total = sum(good.values()) or 1
    return tuple(good), tuple(w / total for w in good.values())
