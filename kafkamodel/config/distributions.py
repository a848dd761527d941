"""Latency distributions as scenarios write them, and fast samplers for them.

A distribution is a number (a constant, in ms) or a mapping
``{dist: constant, value}``, ``{dist: exponential, mean}``,
``{dist: lognormal, median, sigma}`` or ``{dist: uniform, low, high}``.
"""

from __future__ import annotations

import math
from itertools import chain
from typing import Any, Mapping

import numpy as np

# parameters each distribution takes, in the order the sampler wants them
DIST_PARAMS: dict[str, tuple[str, ...]] = {
    "constant": ("value",),
    "exponential": ("mean",),
    "lognormal": ("median", "sigma"),
    "uniform": ("low", "high"),
}


def check_distribution(value: Any, path: str) -> list[str]:
    """Problems with a distribution spec, each as 'path: rule'."""
    if isinstance(value, bool):
        return [f"{path}: must be a number of ms or a mapping with 'dist', got {value!r}"]
    if isinstance(value, (int, float)):
        if not math.isfinite(value) or value < 0:
            return [f"{path}: must be a finite number >= 0 (ms), got {value!r}"]
        return []
    if not isinstance(value, Mapping):
        return [f"{path}: must be a number of ms or a mapping with 'dist', got {type(value).__name__}"]
    kind = value.get("dist")
    if kind not in DIST_PARAMS:
        return [f"{path}.dist: must be one of {', '.join(DIST_PARAMS)}, got {kind!r}"]
    problems = []
    wanted = DIST_PARAMS[kind]
    for key in value:
        if key != "dist" and key not in wanted:
            problems.append(f"{path}.{key}: unknown parameter for dist {kind}; it takes {', '.join(wanted)}")
    for key in wanted:
        if key not in value:
            problems.append(f"{path}.{key}: required for dist {kind}")
            continue
        v = value[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            problems.append(f"{path}.{key}: must be a finite number, got {v!r}")
        elif v < 0 or (key in ("mean", "median") and v == 0):
            rule = "> 0" if key in ("mean", "median") else ">= 0"
            problems.append(f"{path}.{key}: must be {rule}, got {v!r}")
    if not problems and kind == "uniform" and value["low"] > value["high"]:
        problems.append(f"{path}.low: must not exceed high ({value['high']}), got {value['low']}")
    return problems


def normalise(value: Any) -> dict:
    """The mapping form of a (valid) distribution spec."""
    if isinstance(value, Mapping):
        return dict(value)
    return {"dist": "constant", "value": float(value)}


class Sampler:
    """Draws from one distribution with one generator, a block at a time.

    Drawing values one by one from NumPy costs a microsecond each; a block
    of 4096 drawn at once and handed out from a list costs a tenth of that.
    ``sampler()`` gives the next draw; ``sampler.stream`` is the same sequence
    as an iterator, for hot loops (``next(stream)`` runs in C).
    """

    __slots__ = ("_draw", "stream")

    BLOCK = 4096

    def __init__(self, spec: Any, rng: np.random.Generator):
        d = normalise(spec)
        kind = d["dist"]
        if kind == "exponential":
            mean = float(d["mean"])
            self._draw = lambda n: rng.exponential(mean, n)
        elif kind == "lognormal":
            mu, sigma = math.log(d["median"]), float(d["sigma"])
            self._draw = lambda n: rng.lognormal(mu, sigma, n)
        elif kind == "uniform":
            low, high = float(d["low"]), float(d["high"])
            self._draw = lambda n: rng.uniform(low, high, n)
        else:
            c = float(d["value"])
            self._draw = lambda n: np.full(n, c)
        self.stream = chain.from_iterable(iter(self._next_block, None))  # block after block, in order

    def _next_block(self) -> list:
        return self._draw(self.BLOCK).tolist()

    def __call__(self) -> float:
        return next(self.stream)
