"""Helpers every study's analysis uses."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from ..tables import Aggregates

INTERVAL_METHOD = ("Student t on the log of the per-seed values for latencies (an interval for the geometric mean, "
                   "never below zero, fit for 2-5 seeds); Student t, clipped at zero, for counts and durations")
INTERVAL_NOTE = f"95% intervals over seeds: {INTERVAL_METHOD}. Blank with a single seed."


def overview(agg: Aggregates) -> str:
    """Markdown: what the study asks and what the aggregates hold."""
    meta, spec = agg.meta, agg.spec
    parts = ", ".join(f"`{p['name']}` ({p['configs']} configurations over `{p['base']}`)" for p in spec["parts"])
    return (f"**{spec['title']}.** {spec.get('question', '')}\n\n"
            f"{meta['runs']} runs, {meta['configs']} configurations; parts: {parts}. "
            f"Aggregated on Spark {meta.get('spark_version', '')} ({meta.get('spark_master', '')}) at "
            f"{meta['generated_at']}. Error bars and intervals are 95% over seeds: {INTERVAL_METHOD}.")


def part_overrides(agg: Aggregates, part: str) -> dict:
    for p in agg.spec["parts"]:
        if p["name"] == part:
            return p["overrides"]
    return {}


def choice(agg: Aggregates, param: str, value: Any) -> dict:
    """The override set a named choice of `param` stands for (JSON turned its names into strings)."""
    choices = (agg.spec.get("params", {}).get(param) or {}).get("choices") or {}
    for key in (str(value), repr(value), str(int(value)) if isinstance(value, float) and value.is_integer() else None):
        if key in choices:
            return choices[key]
    return {}


def value(df: pd.DataFrame, column: str, **where) -> float:
    """The one value of `column` in the row matching `where` (NaN if none)."""
    rows = df
    for k, v in where.items():
        rows = rows[rows[k] == v]
    return float(rows[column].iloc[0]) if len(rows) else math.nan


def num(x: float, digits: int = 1) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else round(float(x), digits)


def fmt(x) -> str:
    """A number for a sentence: 6956, 3.7, 11.5, 8.31 (no trailing .0), or n/a."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    x = float(x)
    if x.is_integer():
        return f"{int(x):,}"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{x:.3g}"
