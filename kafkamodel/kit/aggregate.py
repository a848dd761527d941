"""Aggregation on Spark: every finished run of a study -> per-configuration statistics.

Reads ``data/runs/<study>/*/`` (summary, events, and records Parquet where
a part pools record latency),
keeps the runs whose configuration is in the current spec (runs of an
edited spec's old configurations are counted and left out), and writes
``data/processed/<study>/`` atomically:

* ``runs/``: one row per run, the summary plus per-run measures derived from
  the events and records (``time_to_shrink_ms``, ``produce_latency_ms_max``);
* ``stats/``: one row per configuration and numeric measure (every summary
  number and the derived ones): ``n``, ``mean``, ``sd``, ``lo`` / ``hi`` (an
  interval over seeds within the measure's physical range: below 5 seeds the
  range over seeds, from 5 a 95% Student t interval, on the log for
  latencies, clipped at 0 for measures never negative and at the run's
  length for latencies and wall-clock times; ``interval`` names the method,
  see ``_intervals``), ``p50`` / ``min`` / ``max`` over seeds;
* ``configs/``: one row per configuration: runs, seeds, and
  ``pooled_latency_ms_p50/p90/p99/p999/max/mean``, percentiles of every
  acknowledged record's produce latency with all seeds pooled;
* ``timeline/``: per configuration and time bin (1/100 of the run), the
  mean and max produce latency of the records sent in that bin, seeds pooled;
* ``spec.json`` (the study's parts and columns) and ``meta.json``.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from ..folders import FolderError, check_replaceable, staged
from ..paths import PROCESSED, RUNS
from ..sim.results.measures import FAULT_STARTS
from .dataset import check_uri, is_uri
from .point import SUMMARY_TABLE
from .spec import Spec, StudyError
from .specfile import load_spec

BINS = 100  # timeline bins per run
QUANTILES = (0.5, 0.9, 0.99, 0.999)
AGGREGATE_NAMES = ("runs", "configs", "stats", "timeline", "spec.json", "meta.json")  # what an aggregate holds
ACCURACY = 5000  # percentile_approx: rank error at most 1/ACCURACY of the records (p99 of 100k: ±20)
# two-sided 95% Student t quantiles for 1..30 degrees of freedom
T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
       2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)
NOT_MEASURES = {"seed", "duration_ms"}


@dataclass
class AggregateOutcome:
    study: str
    runs: int  # runs aggregated
    stale: int  # finished runs whose configuration is no longer in the spec
    configs: int
    out: Path
    seconds: float

    def line(self) -> str:
        stale = f", {self.stale} runs of old configurations left out" if self.stale else ""
        return f"{self.study}: {self.runs} runs -> {self.configs} configurations in {self.out} ({self.seconds:.1f} s){stale}"


def finished_runs(study_dir: Path) -> list[Path]:
    if not study_dir.is_dir():
        return []
    return sorted(d for d in study_dir.iterdir()
                  if d.is_dir() and not d.name.startswith((".", "_")) and (d / "summary.json").is_file())


def aggregate(study: "str | Spec", *, spark=None, master: str | None = None, runs: "Path | str | None" = None,
              processed: Path | None = None) -> AggregateOutcome:
    """Aggregate a study's runs with Spark (a session given, or a local one started and stopped here); `runs`: the
    folder of run folders, or the URI of a runs dataset (``kafkamodel.kit.dataset``)."""
    spec = study if isinstance(study, Spec) else load_spec(study)
    if spark is None:
        from .spark import check_master

        check_master(master)  # a bad flag is reported before anything else
    if spec.is_pending:
        raise StudyError([f"{spec.study}: pending ({spec.pending}); it has no runs to aggregate"])
    if is_uri(runs):
        source = RunsDataset(f"{check_uri(runs)}/{spec.study}")
    else:
        source = RunFolders(Path(runs or RUNS) / spec.study)
        if not source.dirs:
            raise StudyError([f"{spec.study}: no finished runs in {source.where}; "
                              f"run `python -m kafkamodel sweep {spec.study}` first"])
    out = Path(processed or PROCESSED) / spec.study
    try:  # a folder the kit may not replace is refused now, before any Spark work
        check_replaceable(out, "aggregates folder", AGGREGATE_NAMES)
    except FolderError as exc:
        raise StudyError([str(exc)]) from None
    if spark is None:
        from .spark import spark_session

        with spark_session(master, app_name=f"kafkamodel aggregate {spec.study}") as session:
            return _aggregate(session, spec, source, out, master)
    return _aggregate(spark, spec, source, out, master)


class RunFolders:
    """A study's finished run folders (``data/runs/<study>/<run_id>/``) as Spark reads them."""

    def __init__(self, study_dir: Path):
        self.where, self.dirs = study_dir, finished_runs(study_dir)

    def summaries(self, spark):
        return spark.read.option("mergeSchema", "true").parquet(*[str(d / SUMMARY_TABLE) for d in self.dirs])

    def events(self, spark):
        # a run without events wrote a table of untyped (null) columns: Spark reads every file through one file's
        # schema, and that one must not be such a table (its time_ms cannot hold a time)
        with_events = [d for d in self.dirs if _rows(d / "events.parquet")]
        return spark.read.parquet(*[str(d / "events.parquet") for d in with_events]) if with_events else None

    def records(self, spark, parts: list[str]):
        pooling = tuple(f"{p}-" for p in parts)
        with_records = [d for d in self.dirs if d.name.startswith(pooling) and (d / "records.parquet").is_file()]
        return spark.read.parquet(*[str(d / "records.parquet") for d in with_records]) if with_records else None


class RunsDataset:
    """A study's runs in a runs dataset at a URI (``<runs>/<study>/<table>/run_id=.../``) as Spark reads them."""

    def __init__(self, study_uri: str):
        self.where = study_uri

    def _table(self, spark, table: str):
        from .dataset import Storage

        uri = f"{self.where}/{table}"
        if not Storage(spark, self.where).exists(uri):
            return None
        return spark.read.option("mergeSchema", "true").parquet(uri)

    def summaries(self, spark):
        frame = self._table(spark, "summary")
        if frame is None:
            raise StudyError([f"{self.where.rsplit('/', 1)[1]}: no finished runs in {self.where}; run `python -m "
                              f"kafkamodel sweep {self.where.rsplit('/', 1)[1]} --engine spark --runs URI` first"])
        return frame

    def events(self, spark):
        return self._table(spark, "events")

    def records(self, spark, parts: list[str]):
        return self._table(spark, "records") if parts else None


def _rows(path: Path) -> int:
    """Rows of a Parquet file, from its footer."""
    import pyarrow.parquet as pq

    return pq.read_metadata(path).num_rows


def _t95(df):
    from pyspark.sql import functions as F

    z = 1.959964  # Cornish-Fisher expansion beyond the table
    tail = z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df * df)
    table = F.element_at(F.array(*[F.lit(v) for v in T95]), df.cast("int"))
    return F.when(df < 1, F.lit(None)).when(df <= len(T95), table).otherwise(tail)


def _aggregate(spark, spec: Spec, source, out: Path, master: str | None) -> AggregateOutcome:
    from pyspark.sql import functions as F
    from pyspark.sql.types import NumericType

    t0 = time.perf_counter()
    wanted = sorted({p.config_id for p in spec.configs()})
    mine = F.col("config_id").isin(wanted)
    summaries = source.summaries(spark)
    if "config_id" not in summaries.columns:
        raise StudyError([f"{spec.study}: the runs in {source.where} carry no config_id; were they written by a sweep?"])
    keys = ["part", "config_id"] + [c for c in spec.columns if c in summaries.columns]
    total = summaries.count() if isinstance(source, RunsDataset) else len(source.dirs)
    summaries = summaries.where(mine).cache()
    kept = summaries.count()
    if not kept:
        raise StudyError([f"{spec.study}: none of the {total} runs in {source.where} belongs to the current spec; "
                          f"re-run `python -m kafkamodel sweep {spec.study}`"])

    # per-run measures from the events: first fault, and how long until the ISR shrank after it
    events = source.events(spark)
    if events is None:
        events = spark.createDataFrame([], "run_id string, config_id string, time_ms double, kind string")
    events = events.where(mine).select("run_id", "time_ms", "kind")
    first_fault = (events.where(F.col("kind").isin(sorted(FAULT_STARTS)))
                   .groupBy("run_id").agg(F.min("time_ms").alias("first_fault_ms")))
    first_shrink = (events.where(F.col("kind") == "isr_shrink").join(first_fault, "run_id")
                    .where(F.col("time_ms") >= F.col("first_fault_ms"))
                    .groupBy("run_id").agg(F.min("time_ms").alias("first_shrink_ms")))
    # produce latency of every acknowledged record (parts that pool it)
    pooling = [p.name for p in spec.parts if p.record_latency]
    records = source.records(spark, pooling)
    latency = (records.where(mine & F.col("acked") & F.col("part").isin(pooling))
               .select("run_id", "config_id", "send_ms", (F.col("ack_ms") - F.col("send_ms")).alias("latency_ms"))
               if records is not None else
               spark.createDataFrame([], "run_id string, config_id string, send_ms double, latency_ms double"))
    # one pass over the records for everything but the percentiles: per run and time bin
    bins = summaries.select("run_id", (F.col("duration_ms") / BINS).alias("bin_ms"))
    binned = (latency.join(F.broadcast(bins), "run_id")
              .withColumn("bin", F.least(F.floor(F.col("send_ms") / F.col("bin_ms")), F.lit(BINS - 1)).cast("int"))
              .groupBy("config_id", "run_id", "bin").agg(
                  F.first("bin_ms").alias("bin_ms"), F.count(F.lit(1)).alias("records"),
                  F.sum("latency_ms").alias("latency_ms_sum"), F.max("latency_ms").alias("latency_ms_max"))
              .cache())
    per_run_latency = binned.groupBy("run_id").agg(F.max("latency_ms_max").alias("produce_latency_ms_max"))

    runs = (summaries.join(first_fault, "run_id", "left").join(first_shrink, "run_id", "left")
            .join(per_run_latency, "run_id", "left")
            .withColumn("time_to_shrink_ms", F.col("first_shrink_ms") - F.col("first_fault_ms"))
            .drop("first_shrink_ms"))
    measures = [f.name for f in runs.schema.fields
                if isinstance(f.dataType, NumericType) and f.name not in keys and f.name not in NOT_MEASURES]
    rest = [c for c in runs.columns if c not in keys + measures + ["run_id", "seed", "duration_ms"]]
    runs = runs.select(*keys, "run_id", "seed", "duration_ms",
                       *[_col(m).cast("double").alias(m) for m in measures], *[_col(c) for c in rest]).cache()

    # statistics over seeds, one row per configuration and measure
    stats = seed_stats(runs.unpivot([*keys, "seed", "duration_ms"], [_col(m) for m in measures], "measure", "value"),
                       keys)

    pooled = latency.groupBy("config_id").agg(
        F.count(F.lit(1)).alias("pooled_latency_records"),
        F.percentile_approx("latency_ms", list(QUANTILES), ACCURACY).alias("q"),
        F.max("latency_ms").alias("pooled_latency_ms_max"),
        F.avg("latency_ms").alias("pooled_latency_ms_mean"))
    pooled = pooled.select("config_id", "pooled_latency_records", "pooled_latency_ms_max", "pooled_latency_ms_mean",
                           *[F.col("q")[i].alias(f"pooled_latency_ms_{_qname(q)}") for i, q in enumerate(QUANTILES)])
    configs = (runs.groupBy(*keys).agg(F.count(F.lit(1)).alias("runs"), F.min("seed").alias("seed_min"),
                                       F.max("seed").alias("seed_max"))
               .join(pooled, "config_id", "left"))

    timeline = (binned.groupBy("config_id", "bin").agg(
                    F.first("bin_ms").alias("bin_ms"), F.sum("records").alias("records"),
                    (F.sum("latency_ms_sum") / F.sum("records")).alias("latency_ms_mean"),
                    F.max("latency_ms_max").alias("latency_ms_max"))
                .select("config_id", "bin", "records", "latency_ms_mean", "latency_ms_max",
                        ((F.col("bin") + 0.5) * F.col("bin_ms")).alias("time_ms"))
                .join(F.broadcast(runs.select(*keys).distinct()), "config_id"))

    order = keys[:1] + keys[2:]
    try:
        with staged(out) as tmp:
            # small tables: one file each, sorted within it (no range-partitioning job)
            runs.coalesce(1).sortWithinPartitions(*order, "seed").write.parquet(str(tmp / "runs"))
            configs.coalesce(1).sortWithinPartitions(*order).write.parquet(str(tmp / "configs"))
            stats.coalesce(1).sortWithinPartitions("measure", *order).write.parquet(str(tmp / "stats"))
            timeline.coalesce(1).sortWithinPartitions(*order, "bin").write.parquet(str(tmp / "timeline"))
            n_configs = len(set(_read_column(tmp / "configs", "config_id")))
            seconds = time.perf_counter() - t0
            (tmp / "spec.json").write_text(json.dumps(spec_summary(spec), indent=2, default=str) + "\n")
            meta = {"study": spec.study, "generated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                    "runs": kept, "stale_runs": total - kept, "configs": n_configs,
                    "expected_configs": len(wanted), "measures": measures, "spark_master": spark.sparkContext.master,
                    "spark_version": spark.version, "seconds": round(seconds, 2)}
            (tmp / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    finally:
        for frame in (summaries, binned, runs):
            frame.unpersist()
    return AggregateOutcome(spec.study, kept, total - kept, n_configs, out, seconds)


def seed_stats(long, keys: list[str]):
    """Per `keys` and measure, over the seeds' ``value``: n, mean, sd, p50, min, max and the 95% interval.

    `long` may carry ``duration_ms`` (each run's length): a latency's or a wall-clock time's interval then ends
    at the longest run's length, as the measure does."""
    from pyspark.sql import functions as F

    positive_log = F.when(F.col("value") > 0, F.log("value"))
    run_ms = [F.max("duration_ms").alias("run_ms")] if "duration_ms" in long.columns else [F.lit(None).alias("run_ms")]
    stats = long.groupBy(*keys, "measure").agg(
        F.count("value").alias("n"), F.avg("value").alias("mean"), F.stddev_samp("value").alias("sd"),
        F.percentile_approx("value", 0.5, ACCURACY).alias("p50"),
        F.min("value").alias("min"), F.max("value").alias("max"),
        F.avg(positive_log).alias("log_mean"), F.stddev_samp(positive_log).alias("log_sd"), *run_ms)
    return _intervals(stats).drop("log_mean", "log_sd", "run_ms")


MIN_T_SEEDS = 5  # below this many seeds a Student t interval is too wide to read (t95 with 1 df: 12.7)
BOUNDED_BY_RUN = ("latency", "_wall_ms", "time_to_")  # measures no longer than the run: capped at its length
RANGE = "range over seeds"
T_LOG = "t on log"
T_CLIPPED = "t, clipped at 0"
T = "t"


def _intervals(stats):
    """``lo``/``hi``: an interval over seeds in the measure's physical range, and ``interval``: which one.

    * ``range over seeds`` (2 to MIN_T_SEEDS - 1 seeds): the lowest and highest seed's value; with so few seeds a
      95% Student t interval (12.7 standard errors either side with two) says nothing the seeds themselves do not;
    * ``t on log`` (a latency, every seed's value > 0): Student t on the log of the values, exponentiated: an
      interval for the geometric mean, never below zero;
    * ``t, clipped at 0``: a measure no seed saw below zero (counts, durations): Student t on the mean, its
      lower end raised to 0 where the symmetric interval would reach below;
    * ``t``: anything else (a measure that was negative in some seed).
    A latency or a wall-clock time (``BOUNDED_BY_RUN``) never ends above the run's length (``run_ms``).
    With one seed there is no interval (``lo``/``hi`` null).
    """
    from pyspark.sql import functions as F

    n = F.col("n")
    latency = F.col("measure").contains("latency") & (F.col("min") > 0)
    half = _t95(n - 1) * F.col("sd") / F.sqrt(n)
    log_half = _t95(n - 1) * F.col("log_sd") / F.sqrt(n)
    floor = F.when(F.col("min") >= 0, F.lit(0.0))
    few = n < MIN_T_SEEDS
    lo = (F.when(n < 2, F.lit(None)).when(few, F.col("min")).when(latency, F.exp(F.col("log_mean") - log_half))
          .when(floor.isNotNull(), F.greatest(F.col("mean") - half, floor)).otherwise(F.col("mean") - half))
    hi = (F.when(n < 2, F.lit(None)).when(few, F.col("max")).when(latency, F.exp(F.col("log_mean") + log_half))
          .otherwise(F.col("mean") + half))
    bounded = F.lit(False)
    for fragment in BOUNDED_BY_RUN:
        bounded = bounded | F.col("measure").contains(fragment)
    hi = F.when(bounded & F.col("run_ms").isNotNull(), F.least(hi, F.col("run_ms"))).otherwise(hi)
    method = (F.when(n < 2, F.lit(None)).when(few, F.lit(RANGE)).when(latency, F.lit(T_LOG))
              .when(F.col("min") >= 0, F.lit(T_CLIPPED)).otherwise(F.lit(T)))
    return stats.withColumn("lo", lo).withColumn("hi", hi).withColumn("interval", method)


def _col(name: str):
    """A column by its exact name: per-group summary keys carry a dot (``billing.consumed_lost``),
    which Spark would otherwise read as a struct field."""
    from pyspark.sql import functions as F

    return F.col("`" + name.replace("`", "``") + "`")


def _read_column(folder: Path, column: str) -> list:
    import pyarrow.parquet as pq

    return pq.read_table(folder, columns=[column]).column(column).to_pylist()


def _qname(q: float) -> str:
    return "p" + f"{q * 100:g}".replace(".", "")


def spec_summary(spec: Spec) -> dict:
    """What a notebook needs to know about the study behind the aggregates."""
    return {"study": spec.study, "title": spec.title, "question": spec.question, "notebook": spec.notebook,
            "columns": spec.kinds,
            "params": {n: {"paths": list(p.paths), "choices": p.choices} for n, p in spec.params.items()},
            "parts": [{"name": p.name, "base": p.base, "seeds": p.seeds, "overrides": p.overrides,
                       "configs": len(p.combos), "record_latency": p.record_latency} for p in spec.parts]}
