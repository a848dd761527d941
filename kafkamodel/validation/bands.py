"""The bands a figure must fall in (issue 20), by kind of figure.

* ``throughput``: model / published within ±25 %;
* ``latency``: a latency percentile up to p99, model / published within 1.5× either way;
* ``latency_p999``: a p99.9, within 2× either way;
* ``ratio``: a ratio of two model figures, whose band the case gives as absolute bounds on the value (the issue:
  Kreps' acks=all / acks=1 throughput between 0.45 and 0.65).

Bounds are inclusive. A figure the model did not produce (a key it does not report, no samples) is outside.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Band:
    low: float
    high: float
    on: str  # "ratio": bounds on model / published; "value": bounds on the model's value itself
    text: str  # how a reader says it

    def to_dict(self) -> dict:
        return {"low": self.low, "high": self.high, "on": self.on, "text": self.text}


BANDS = {
    "throughput": Band(0.75, 1.25, "ratio", "within ±25%"),
    "latency": Band(1 / 1.5, 1.5, "ratio", "within 1.5× either way"),
    "latency_p999": Band(0.5, 2.0, "ratio", "within 2× either way"),
}
KINDS = (*BANDS, "ratio")  # "ratio" takes its band from the case


def band_for(kind: str, given: dict | None = None) -> Band:
    """The band of a figure of this kind; a ``ratio`` figure's comes from its case (``{low, high}``)."""
    if kind == "ratio":
        low, high = float(given["low"]), float(given["high"])
        return Band(low, high, "value", f"between {low:g} and {high:g}")
    return BANDS[kind]


def inside(band: Band, model: float | None, published: float) -> bool:
    """Whether the model's value is inside `band` around the published one."""
    if model is None or not math.isfinite(model):
        return False
    x = model / published if band.on == "ratio" else model
    return band.low <= x <= band.high
