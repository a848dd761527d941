"""Helpers every study's analysis uses."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from ..config.scenario import load_scenario
from ..config.settings import Settings
from ..kit import MIN_T_SEEDS, RANGE, T, T_CLIPPED, T_LOG, Aggregates, interval, number
from ..paths import scenario_path

METHODS = {RANGE: "the range over seeds (lowest to highest seed's value; with fewer than "
                  f"{MIN_T_SEEDS} seeds a 95% Student t interval would be too wide to read)",
           T_LOG: "95% Student t intervals on the log of the per-seed values for latencies (never below zero)",
           T_CLIPPED: "95% Student t intervals clipped at zero for counts and durations",
           T: "95% Student t intervals for measures that can be negative"}


def interval_method(agg: Aggregates) -> str:
    """What the intervals of these aggregates are, read from the methods the aggregation used (a sentence)."""
    used = [m for m in METHODS if m in set(agg.stats["interval"].dropna())] if "interval" in agg.stats else []
    seeds = sorted({int(n) for n in agg.configs["runs"]}) if "runs" in agg.configs else []
    many = f"{seeds[0]}" if len(seeds) == 1 else f"{seeds[0]}–{seeds[-1]}" if seeds else "no"
    if not used:
        return f"{many} seed(s) per configuration: no interval (one seed)."
    capped = " Latencies and wall-clock times never reach beyond the run's length." if RANGE not in used or len(used) > 1 else ""
    return (f"{many} seeds per configuration; intervals and whiskers show " + "; ".join(METHODS[m] for m in used)
            + "." + capped + " Blank with a single seed.")


def mean_and_interval(mean, lo, hi) -> str:
    """'4,846' or '4,846 (4,780 – 4,912)': a mean with its interval in brackets when the seeds differ."""
    span = interval(lo, hi)
    return number(mean) + (f" ({span})" if " – " in span else "")


def scaled_means(r, measures: list[str], seconds: tuple = ()) -> dict:
    """A row of `Aggregates.wide`: each measure's mean and interval ends, in seconds for those in `seconds`."""
    row = {}
    for m in measures:
        scale = 1000.0 if m in seconds else 1.0
        row[m], row[f"{m}_lo"], row[f"{m}_hi"] = r[m] / scale, r[f"{m}_lo"] / scale, r[f"{m}_hi"] / scale
    return row


def overview(agg: Aggregates) -> str:
    """Markdown: what the study asks and what the aggregates hold."""
    meta, spec = agg.meta, agg.spec
    parts = ", ".join(f"`{p['name']}` ({p['configs']} configurations over `{p['base']}`)" for p in spec["parts"])
    return (f"**{spec['title']}.** {spec.get('question', '')}\n\n"
            f"{meta['runs']} runs, {meta['configs']} configurations; parts: {parts}. "
            f"Aggregated on Spark {meta.get('spark_version', '')} ({meta.get('spark_master', '')}) at "
            f"{meta['generated_at']}. {interval_method(agg)}")


def part_overrides(agg: Aggregates, part: str) -> dict:
    for p in agg.spec["parts"]:
        if p["name"] == part:
            return p["overrides"]
    return {}


def part_scenario(agg: Aggregates, part: str, **choices) -> dict:
    """A part's scenario: its base with the part's overrides, and the named choices' overrides (param=value)."""
    base = next(p["base"] for p in agg.spec["parts"] if p["name"] == part)
    overrides = dict(part_overrides(agg, part))
    for param, v in choices.items():
        overrides.update(choice(agg, param, v))
    return load_scenario(scenario_path(base)).with_overrides(overrides).to_dict()


def part_settings(agg: Aggregates, part: str) -> Settings:
    """The settings a part's runs had: its base scenario with the part's overrides (the swept values aside)."""
    return Settings.of(part_scenario(agg, part))


def spread(d) -> str:
    """A latency distribution in words: '1–2 ms' (uniform), '0.5 ms' (constant), else its spec."""
    if isinstance(d, dict) and "low" in d:
        return f"{fmt(d['low'])}–{fmt(d['high'])} ms"
    return f"{fmt(d)} ms" if isinstance(d, (int, float)) else str(d)


def seconds(ms: float) -> str:
    """A time for a sentence, in seconds: '8 s', '0.5 s', '12.5 s'."""
    return f"{number(float(ms) / 1000.0)} s"


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
    """A number for a sentence: thousands separated, three significant digits (6,960; 16,300; 3.7; 11.5; 0.0123),
    or n/a."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    x = float(x)
    if abs(x) >= 1000:  # 16,264 -> 16,300: three significant digits, as every other number in a sentence
        x = float(round(x, 2 - math.floor(math.log10(abs(x)))))
    return number(x)
