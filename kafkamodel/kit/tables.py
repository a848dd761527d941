"""Reading a study's aggregates back (what the analysis notebooks do first).

The aggregates are computed by Spark (``kafkamodel.kit.aggregate``); this
module only reads them and reshapes them for plotting.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..paths import PROCESSED
from .spec import StudyError

TABLES = ("runs", "configs", "stats", "timeline")


@dataclass
class Aggregates:
    study: str
    folder: Path
    spec: dict  # study, title, question, columns, parts
    meta: dict  # generated_at, runs, configs, spark version, ...
    runs: pd.DataFrame  # one row per run
    configs: pd.DataFrame  # one row per configuration: runs, seeds, pooled latency percentiles
    stats: pd.DataFrame  # one row per configuration and measure: n, mean, sd, lo, hi, p50, min, max
    timeline: pd.DataFrame  # per configuration and time bin: latency p50/p99/max

    @property
    def columns(self) -> list[str]:
        """The swept parameters."""
        return list(self.spec.get("columns", {}))

    def part(self, name: str) -> "Aggregates":
        """The same aggregates, restricted to one part of the study."""
        if name not in set(self.configs["part"]):
            raise StudyError([f"part: {self.study} has no aggregated part {name!r}; parts are "
                              f"{', '.join(sorted(set(self.configs['part'])))}"])
        pick = {t: getattr(self, t) for t in TABLES}
        pick = {t: df[df["part"] == name].reset_index(drop=True) for t, df in pick.items()}
        return Aggregates(self.study, self.folder, self.spec, self.meta, **pick)

    def measure(self, measure: str, part: str | None = None) -> pd.DataFrame:
        """Statistics of one measure per configuration: the swept columns, n, mean, lo, hi, p50, min, max."""
        df = self.stats[self.stats["measure"] == measure]
        if part is not None:
            df = df[df["part"] == part]
        if df.empty and measure not in set(self.stats["measure"]):
            raise StudyError([f"measure: no measure {measure!r} in the aggregates of {self.study}"])
        keep = [c for c in ["part", "config_id", *self.columns] if c in df.columns]
        return df[keep + ["n", "mean", "sd", "lo", "hi", "p50", "min", "max"]].reset_index(drop=True)

    def wide(self, measures: list[str], part: str | None = None) -> pd.DataFrame:
        """One row per configuration, columns ``m`` (mean), ``m_lo``, ``m_hi`` for each measure, plus pooled latency."""
        out = None
        for m in measures:
            df = self.measure(m, part).rename(columns={"mean": m, "lo": f"{m}_lo", "hi": f"{m}_hi", "n": f"{m}_n"})
            df = df.drop(columns=["sd", "p50", "min", "max"])
            out = df if out is None else out.merge(df[["config_id", m, f"{m}_lo", f"{m}_hi", f"{m}_n"]], on="config_id")
        pooled = self.configs[[c for c in self.configs.columns if c.startswith("pooled_") or c in ("config_id", "runs")]]
        return out.merge(pooled, on="config_id", how="left")


def load_aggregates(study: str, processed: "str | Path | None" = None) -> Aggregates:
    """A study's aggregates from ``data/processed/<study>/`` (or the folder `processed`)."""
    if not isinstance(study, str) or not study:
        raise StudyError([f"parameter study: must be a study name, got {study!r}"])
    if processed is not None and not isinstance(processed, (str, Path)):
        raise StudyError([f"parameter processed: must be a folder path or None, got {processed!r}"])
    folder = Path(processed) if processed is not None else PROCESSED / study
    if not (folder / "meta.json").is_file():
        raise StudyError([f"parameter study: no aggregates for {study!r} in {folder}; "
                          f"run `python -m kafkamodel aggregate {study}` first"])
    spec = json.loads((folder / "spec.json").read_text())
    if spec.get("study") != study:
        raise StudyError([f"parameter processed: {folder} holds the aggregates of {spec.get('study')!r}, not {study!r}"])
    meta = json.loads((folder / "meta.json").read_text())
    frames = {t: pd.read_parquet(folder / t) for t in TABLES}
    return Aggregates(study, folder, spec, meta, **frames)
