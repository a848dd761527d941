"""Intervals over seeds: the range below five seeds, from five a 95% Student t interval in the measure's domain
(a latency never below zero nor beyond the run)."""

from __future__ import annotations

import math

import pytest

from kafkamodel.kit.aggregate import MIN_T_SEEDS, RANGE, T, T95, T_CLIPPED, T_LOG, seed_stats


def _stats(spark, values: dict[str, list[float]], run_ms: float | None = None) -> dict:
    rows = [("c", m, float(v)) for m, vs in values.items() for v in vs]
    df = spark.createDataFrame(rows, "config_id string, measure string, value double")
    if run_ms is not None:
        from pyspark.sql import functions as F

        df = df.withColumn("duration_ms", F.lit(float(run_ms)))
    return {r["measure"]: r.asDict() for r in seed_stats(df, ["config_id"]).collect()}


def test_below_five_seeds_the_interval_is_the_range_over_seeds(spark):
    s = _stats(spark, {
        "produce_latency_ms_p99": [2.0, 120.0],  # two seeds far apart: t with 1 df would reach 10^5 ms
        "acked_records_lost": [0.0, 10.0, 4.0],
        "skew_delta": [-1.0, 1.0, 0.5, 0.0],
        "isr_shrinks": [4.0],  # one seed: no interval
    })
    for measure, values in (("produce_latency_ms_p99", [2.0, 120.0]), ("acked_records_lost", [0.0, 10.0, 4.0]),
                            ("skew_delta", [-1.0, 1.0, 0.5, 0.0])):
        row = s[measure]
        assert row["interval"] == RANGE and (row["lo"], row["hi"]) == (min(values), max(values)), measure
    assert MIN_T_SEEDS == 5
    one = s["isr_shrinks"]
    assert one["n"] == 1 and one["lo"] is None and one["hi"] is None and one["interval"] is None


def test_from_five_seeds_intervals_respect_the_measures_domain(spark):
    latencies = [2.0, 120.0, 3.0, 5.0, 8.0]
    s = _stats(spark, {
        "produce_latency_ms_p99": latencies,  # far apart: a symmetric t interval reaches below zero
        "acked_records_lost": [0.0, 10.0, 0.0, 0.0, 0.0],  # a count, mostly zero
        "records_sent": [1000.0, 1010.0, 990.0, 1000.0, 1000.0],
        "skew_delta": [-1.0, 1.0, -1.0, 1.0, 0.0],  # negative values seen: no floor
    })
    n = len(latencies)
    lat = s["produce_latency_ms_p99"]
    logs = [math.log(v) for v in latencies]
    mean = sum(logs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1))
    half = T95[n - 2] * sd / math.sqrt(n)
    assert lat["interval"] == T_LOG
    assert lat["lo"] == pytest.approx(math.exp(mean - half)) and lat["lo"] > 0
    assert lat["hi"] == pytest.approx(math.exp(mean + half))
    assert lat["mean"] - T95[n - 2] * lat["sd"] / math.sqrt(n) < 0  # what the plain t interval would have said

    lost = s["acked_records_lost"]
    assert lost["interval"] == T_CLIPPED and lost["lo"] == 0.0
    assert lost["hi"] == pytest.approx(2.0 + T95[n - 2] * lost["sd"] / math.sqrt(n))

    sent = s["records_sent"]  # far from zero: the symmetric t interval, untouched by the floor
    assert sent["lo"] == pytest.approx(1000.0 - T95[n - 2] * sent["sd"] / math.sqrt(n))

    skew = s["skew_delta"]
    assert skew["interval"] == T and skew["lo"] == pytest.approx(-T95[n - 2] * skew["sd"] / math.sqrt(n))


def test_a_latency_interval_never_ends_beyond_the_run(spark):
    """A latency cannot outlast the run it was measured in: the t interval's upper end is cut at the run's length
    (a 30 s run whose p99 was 1 s in three seeds and 29 s in two)."""
    values = [1000.0, 1000.0, 1000.0, 29000.0, 29000.0]
    s = _stats(spark, {"consume_e2e_latency_ms_p99": values, "unavailable_wall_ms": values,
                       "records_acked": values}, run_ms=30000.0)
    for measure in ("consume_e2e_latency_ms_p99", "unavailable_wall_ms"):
        assert s[measure]["hi"] == 30000.0, measure
    assert s["records_acked"]["hi"] > 30000.0  # a count is not bounded by the run's length


def test_runs_without_events_aggregate_beside_runs_with_them(spark, tmp_path):
    """A run with no event writes an events table of untyped columns; Spark must not read the others through it
    (here the quiet part's runs come first in the folder)."""
    from kafkamodel.kit.aggregate import aggregate
    from kafkamodel.kit.point import execute_point
    from kafkamodel.kit.specfile import load_spec
    from kafkamodel.kit.tables import load_aggregates

    spec_file = tmp_path / "quiet_and_fault.yaml"
    spec_file.write_text(
        "study: quiet_and_fault\nnotebook: 00_explore.ipynb\nbase: steady-state\nseeds: 1\n"
        "overrides:\n  duration.ms: 3000\n  broker.replica.lag.time.max.ms: 1000\n  producers[0].rate.per.s: 1000\n"
        "parts:\n"
        "  a_quiet:\n"
        "    grid:\n"
        "      producers[0].acks: [1, all]\n"
        "  b_fault:\n"
        "    overrides: {faults: [{at.ms: 500, kind: crash, broker: 2}]}\n"
        "    grid:\n"
        "      producers[0].acks: [1]\n")
    spec = load_spec(spec_file)
    runs = tmp_path / "runs" / spec.study
    for point in spec.points(1):
        result = execute_point(point, runs / point.run_id)
        assert (len(result.events) == 0) == (point.part == "a_quiet")
    out = aggregate(spec, spark=spark, runs=tmp_path / "runs", processed=tmp_path / "processed").out
    agg = load_aggregates(spec.study, out)
    assert len(agg.configs) == 3
    shrink = agg.measure("time_to_shrink_ms", "b_fault")
    # the crashed follower leaves the ISR within one to one and a half replica.lag.time.max.ms
    assert 1000 <= float(shrink["mean"].iloc[0]) <= 1500
