"""A campaign's runs read back and judged: one row per run, and per setting what broke, how often, how much.

``collect`` reads the summary of every planned run that finished (its
``summary.parquet``, one pyarrow dataset over all of them) and adds, per
property, how much of it the run broke (``properties``). ``tally`` counts
per setting and property; a safe setting holds when no run broke anything.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..kit import SUMMARY_TABLE
from .properties import PROPERTIES

MEASURES = ("records_acked", "acked_records_lost", "committed_records_lost", "replica_divergence",
            "replica_uncommitted_divergence", "leader_elections", "unclean_leader_elections", "unavailable_wall_ms",
            *sorted({p.violations for p in PROPERTIES if p.violations} | {"leader_in_isr_violations"}))
COUNTS = [m for m in MEASURES if m != "unavailable_wall_ms"]  # integers in the summary (stored as float64)


def collect(points: list, study_dir: "Path | str", spark=None) -> pd.DataFrame:
    """One row per finished run of `points`: setting, promise, schedule, seed, the fault schedule's shape, the
    measures, and ``<property>`` = how much of it the run broke (0: held). `study_dir`: the campaign's run
    folders, or (a URI) its runs dataset, read with `spark` (``kafkamodel.kit.dataset``)."""
    import pyarrow.dataset as ds

    plan = pd.DataFrame([{"run_id": p.run_id, "setting": p.part, "promise": p.columns["promise"],
                          "schedule": p.columns["schedule"], "seed": p.seed, "faults": len(p.overrides["faults"]),
                          "power_lost_brokers": _power_lost(p.overrides["faults"])} for p in points])
    if isinstance(study_dir, str):
        from ..kit import Storage

        uri = f"{study_dir}/summary"
        table = (spark.read.parquet(uri).select("run_id", *MEASURES).toPandas()
                 if Storage(spark, study_dir).exists(uri) else None)
    else:
        files = [study_dir / r / SUMMARY_TABLE for r in plan["run_id"]]
        files = [str(f) for f in files if f.is_file()]
        table = ds.dataset(files, format="parquet").to_table(columns=["run_id", *MEASURES]).to_pandas() if files else None
    if table is None:
        return _judged(plan.iloc[0:0].assign(**{m: pd.Series(dtype="int64") for m in MEASURES}))
    runs = plan.merge(table, on="run_id", how="inner")
    runs[COUNTS] = runs[COUNTS].fillna(0).astype("int64")
    return _judged(runs)


def _power_lost(faults: list) -> int:
    """Brokers that lose power at one instant in this schedule (0: none)."""
    sizes = [len(f["broker"]) if isinstance(f["broker"], list) else 1 for f in faults if f["kind"] == "power_loss"]
    return max(sizes, default=0)


def _judged(runs: pd.DataFrame) -> pd.DataFrame:
    for p in PROPERTIES:
        runs[p.name] = [p.amount(row) for row in runs[[p.measure, *([p.violations] if p.violations else [])]]
                        .to_dict("records")]
    return runs.reset_index(drop=True)


def tally(runs: pd.DataFrame, settings) -> pd.DataFrame:
    """Per setting and property: runs, runs that broke it, how much in all and at most; setting order kept."""
    rows = []
    for s in settings:
        mine = runs[runs.setting == s.name]
        for p in PROPERTIES:
            amounts = mine[p.name] if len(mine) else pd.Series(dtype="int64")
            rows.append({"setting": s.name, "promise": s.promise, "property": p.name, "unit": p.unit,
                         "runs": len(mine), "broken": int((amounts > 0).sum()), "amount": int(amounts.sum()),
                         "worst": int(amounts.max()) if len(mine) else 0})
    return pd.DataFrame(rows)


def broken_safe(runs: pd.DataFrame, settings) -> dict[str, int]:
    """setting -> runs that broke a property it promised (safe settings only; empty when all held)."""
    safe = [s.name for s in settings if s.promise == "safe"]
    mine = runs[runs.setting.isin(safe)]
    bad = mine[(mine[[p.name for p in PROPERTIES]] > 0).any(axis=1)]
    return {k: int(v) for k, v in bad.groupby("setting").size().items()}
