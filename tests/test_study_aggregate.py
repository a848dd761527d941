"""The 95% intervals over seeds stay in each measure's domain (2-5 seeds: a latency interval never below zero)."""

from __future__ import annotations

import math

import pytest

from kafkamodel.study.aggregate import T95, seed_stats


def _stats(spark, values: dict[str, list[float]]) -> dict:
    rows = [("c", m, float(v)) for m, vs in values.items() for v in vs]
    df = spark.createDataFrame(rows, "config_id string, measure string, value double")
    return {r["measure"]: r.asDict() for r in seed_stats(df, ["config_id"]).collect()}


def test_intervals_respect_the_measures_domain(spark):
    s = _stats(spark, {
        "produce_latency_ms_p99": [2.0, 120.0],  # two seeds far apart: a symmetric t interval reaches -700 ms
        "acked_records_lost": [0.0, 10.0],  # a count, once zero
        "records_sent": [1000.0, 1010.0, 990.0],
        "skew_delta": [-1.0, 1.0],  # negative values seen: no floor
        "isr_shrinks": [4.0],  # one seed: no interval
    })
    lat = s["produce_latency_ms_p99"]
    logs = [math.log(2.0), math.log(120.0)]
    half = T95[0] * abs(logs[0] - logs[1]) / math.sqrt(2) / math.sqrt(2)
    assert lat["interval"] == "t on log"
    assert lat["lo"] == pytest.approx(math.exp(sum(logs) / 2 - half)) and lat["lo"] > 0
    assert lat["hi"] == pytest.approx(math.exp(sum(logs) / 2 + half))
    assert lat["lo"] < 2.0 and lat["hi"] > 120.0  # two seeds: the interval is wide, as it should be
    assert lat["mean"] - T95[0] * lat["sd"] / math.sqrt(2) < 0  # what the plain t interval would have said

    lost = s["acked_records_lost"]
    assert lost["interval"] == "t, clipped at 0" and lost["lo"] == 0.0
    assert lost["hi"] == pytest.approx(5.0 + T95[0] * lost["sd"] / math.sqrt(2))

    sent = s["records_sent"]  # far from zero: the symmetric t interval, untouched by the floor
    assert sent["lo"] == pytest.approx(1000.0 - T95[1] * 10.0 / math.sqrt(3))
    assert sent["hi"] == pytest.approx(1000.0 + T95[1] * 10.0 / math.sqrt(3))

    skew = s["skew_delta"]
    assert skew["interval"] == "t" and skew["lo"] == pytest.approx(-T95[0] * math.sqrt(2) / math.sqrt(2))

    one = s["isr_shrinks"]
    assert one["n"] == 1 and one["lo"] is None and one["hi"] is None and one["interval"] is None


def test_runs_without_events_aggregate_beside_runs_with_them(spark, tmp_path):
    """A run with no event writes an events table of untyped columns; Spark must not read the others through it
    (here the quiet part's runs come first in the folder)."""
    from kafkamodel.study.aggregate import aggregate
    from kafkamodel.study.point import execute_point
    from kafkamodel.study.specfile import load_spec
    from kafkamodel.study.tables import load_aggregates

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
