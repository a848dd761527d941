"""Issue 25: the durability study (configurations x failure-rate profiles -> reports/durability.html and .json)."""

from __future__ import annotations

import functools
import json
import math
import re

import pytest
import yaml

from kafkamodel.durability import command as run_module
from kafkamodel.durability import windows as W
from kafkamodel.durability.estimate import estimate
from kafkamodel.durability.study import main, run_study

RATES = {"broker.crash.per.year": 1, "machine.crash.per.year": 0, "broker.restart.ms": 60000, "machine.failure.per.year": 0.04,
         "machine.replace.hours": 24, "zone.outage.per.year": 0.5, "zone.outage.hours": 6}
SOURCES = {k: "assumption: test" for k in [*RATES, "zone.power.loss.per.year"]}


def _spec(tmp_path, **change):
    spec = {"scenario": "three-zones", "seed": 3, "windows": 300,
            "configurations": {"three_zones": {}, "one_zone": {"racks": ["a"], "network.links": []}},
            "fsync_debate": [["one_zone", "three_zones"]],
            "profiles": {"calm": {"about": "calm", "failures": {**RATES, "zone.power.loss.per.year": 0.2},
                                  "sources": SOURCES},
                         "stormy": {"about": "stormy", "failures": {**RATES, "zone.power.loss.per.year": 2},
                                    "sources": SOURCES}}}
    spec.update(change)
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def _power_loss_loses(scenario, topic, partition, replicas, pattern, returns, slow_factor=None):
    """Instead of the detailed model: a critical event ending in a power loss loses 7 records, any other none."""
    return 7 if pattern[-1][0] == W.POWER_LOSS else 0


def test_report_states_the_numbers_it_computed(tmp_path, monkeypatch):
    """The first line is computed from the rows: each profile's nines (-log10 P) of both configurations, and in
    how many profiles the 95% intervals separate; the one-zone loss rate is the zone's power-loss rate (every
    power loss takes all three replicas' unflushed records), within its interval."""
    monkeypatch.setattr(run_module, "estimate", functools.partial(estimate, measure=_power_loss_loses))
    html = run_study(_spec(tmp_path), runs=tmp_path / "runs", reports=tmp_path / "reports", progress=False,
                     say=lambda line: None)
    record = json.loads((tmp_path / "reports" / "durability.json").read_text())
    at = {(r["profile"], r["configuration"]): r for r in record["rows"]}
    P = "loss_probability_per_partition_year"
    calm = at[("calm", "one_zone")]  # every power loss loses: the loss rate is the power-loss rate
    assert calm[P + "_low"] <= -math.expm1(-0.2) <= calm[P + "_high"]
    m = re.search(r"one_zone -> three_zones: (\S+) -> (\S+) / (\S+) -> (\S+) nines over calm, stormy; "
                  r"the 95% intervals separate in (\d) of 2(?: \(fsync (\S+)(?: to (\S+))? nines there\))?",
                  record["answer"])
    assert m, record["answer"]

    def nines(r):
        return -math.log10(r[P]) if r[P] > 0 else -math.log10(r[P + "_high"])

    said = [float(m.group(i).lstrip(">=")) for i in (1, 2, 3, 4)]
    want = [nines(at[(p, c)]) for p in ("calm", "stormy") for c in ("one_zone", "three_zones")]
    assert said == pytest.approx(want, abs=0.051)
    separate = [p for p in ("calm", "stormy") if at[(p, "three_zones")][P + "_high"] < at[(p, "one_zone")][P + "_low"]]
    assert int(m.group(5)) == len(separate) == 2  # three zones lose far less than one (power loss takes one zone)
    gains = [want[1] - want[0], want[3] - want[2]]
    assert float(m.group(6)) == pytest.approx(min(gains), abs=0.051)
    assert float(m.group(7) or m.group(6)) == pytest.approx(max(gains), abs=0.051)
    # per cluster-year: in one zone a power loss takes every partition at once and counts once, so the cluster
    # loses at the zone's power-loss rate too (not at partitions x that rate)
    cluster = {(r["profile"], r["configuration"]): r for r in record["cluster"]}
    one = cluster[("calm", "one_zone")]
    assert one["low"] <= -math.expm1(-0.2) <= one["high"] and one["p"] < 1.5 * -math.expm1(-0.2)
    page = html.read_text()
    assert f"{one['p']:.3g} <small>[{one['low']:.3g}, {one['high']:.3g}]</small>" in page
    assert record["answer"].replace(">", "&gt;") in page
    assert all(s in page for s in SOURCES.values()) and "data:image/png;base64," in page


def test_a_rate_without_its_source_is_one_line_exit_2(tmp_path, capsys):
    spec = _spec(tmp_path)
    data = yaml.safe_load(spec.read_text())
    del data["profiles"]["calm"]["sources"]["machine.failure.per.year"]
    spec.write_text(yaml.safe_dump(data))
    assert main([str(spec), "--runs", str(tmp_path / "runs"), "--reports", str(tmp_path / "reports")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "profiles.calm.sources.machine.failure.per.year: missing" in err[0]
    assert not (tmp_path / "reports").exists() and not (tmp_path / "runs").exists()


@pytest.mark.parametrize("flag", ["--windows", "--workers"])
def test_a_count_below_one_is_one_line_exit_2(tmp_path, capsys, flag):
    spec = _spec(tmp_path)
    assert main([str(spec), flag, "0", "--runs", str(tmp_path / "runs"), "--reports", str(tmp_path / "reports")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"{flag}: must be an integer >= 1, got '0'"]
    assert not (tmp_path / "reports").exists() and not (tmp_path / "runs").exists()


@pytest.mark.parametrize("failures, missing", [
    ({"broker.slow.per.year": 2}, "profiles.calm.sources.broker.slow.per.year: missing"),
    ({"zone.partition.per.year": {"b": 1}}, "profiles.calm.sources.zone.partition.per.year: missing"),
])
def test_a_slow_or_partition_rate_turned_on_needs_its_source(tmp_path, capsys, failures, missing):
    """Slow spells and zone partitions are off by default, so a profile need not source their keys; a profile that
    turns one on must (one line, exit 2)."""
    spec = _spec(tmp_path)
    data = yaml.safe_load(spec.read_text())
    data["profiles"]["calm"]["failures"].update(failures)
    spec.write_text(yaml.safe_dump(data))
    assert main([str(spec), "--runs", str(tmp_path / "runs"), "--reports", str(tmp_path / "reports")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and missing in err[0], err
    assert not (tmp_path / "reports").exists() and not (tmp_path / "runs").exists()


def test_the_other_questions_are_lines_from_the_same_intervals(tmp_path, monkeypatch):
    """`compare` pairs: one line each, the nines of both under every profile; where the intervals overlap no order
    is claimed, where they separate the second's change in nines (three zones -> one zone: fewer nines)."""
    monkeypatch.setattr(run_module, "estimate", functools.partial(estimate, measure=_power_loss_loses))
    html = run_study(_spec(tmp_path, compare=[["three_zones", "one_zone"], ["one_zone", "one_zone"]]),
                     runs=tmp_path / "runs", reports=tmp_path / "reports", progress=False, say=lambda line: None)
    record = json.loads((tmp_path / "reports" / "durability.json").read_text())
    at = {(r["profile"], r["configuration"]): r for r in record["rows"]}
    P = "loss_probability_per_partition_year"
    zones, same = record["comparisons"]
    m = re.fullmatch(r"three_zones -> one_zone: (\S+) -> (\S+) / (\S+) -> (\S+) nines over calm, stormy; the 95% "
                     r"intervals separate in (\d) of 2 \(one_zone (-\S+)(?: to (-\S+))? nines there\)\.", zones)
    assert m, zones
    nines = [-math.log10(at[(p, c)][P]) for p in ("calm", "stormy") for c in ("three_zones", "one_zone")]
    assert [float(m.group(i)) for i in (1, 2, 3, 4)] == pytest.approx(nines, abs=0.051)
    apart = [p for p in ("calm", "stormy") if at[(p, "one_zone")][P + "_high"] < at[(p, "three_zones")][P + "_low"]
             or at[(p, "three_zones")][P + "_high"] < at[(p, "one_zone")][P + "_low"]]  # counted from the rows
    assert int(m.group(5)) == len(apart) > 0
    gains = sorted(nines[2 * i + 1] - nines[2 * i] for i, p in enumerate(("calm", "stormy")) if p in apart)
    assert float(m.group(6)) == pytest.approx(gains[0], abs=0.051)
    assert float(m.group(7) or m.group(6)) == pytest.approx(gains[-1], abs=0.051)
    assert same.endswith("the 95% intervals separate in 0 of 2 (these windows cannot tell them apart).")
    page = html.read_text()
    assert all(f"<li>{line.replace('>', '&gt;')}</li>" in page for line in record["comparisons"])


def test_a_compare_pair_naming_no_configuration_is_one_line_exit_2(tmp_path, capsys):
    spec = _spec(tmp_path, compare=[["three_zones", "one_zon"]])
    assert main([str(spec), "--runs", str(tmp_path / "runs"), "--reports", str(tmp_path / "reports")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "compare[0]: no configuration 'one_zon'" in err[0] and "one_zone" in err[0]
    assert not (tmp_path / "reports").exists()


def test_on_spark_every_profile_runs_on_the_one_session(tmp_path, monkeypatch, spark):
    """`--engine spark`: the study hands one session to every profile's estimate (none started per profile)."""
    from kafkamodel.durability import study as study_module

    monkeypatch.setattr(run_module, "estimate", functools.partial(estimate, measure=_power_loss_loses))
    seen = []

    def recording(*args, engine, spark, **kwargs):  # then the local engine (the fake measure): no simulation
        seen.append((engine, spark))
        return run_module.run_durability(*args, **kwargs)

    monkeypatch.setattr(study_module, "run_durability", recording)
    run_study(_spec(tmp_path), runs=tmp_path / "runs", reports=tmp_path / "reports", progress=False,
              say=lambda line: None, engine="spark", spark=spark)
    assert seen == [("spark", spark), ("spark", spark)]
