"""Issue 25: the durability verb's detailed runs on the campaign's engines (papermill, Spark): the same answers."""

from __future__ import annotations

import json

import pytest

from kafkamodel.durability import sweep as sweep_module
from kafkamodel.durability import windows as W
from kafkamodel.durability.estimate import detailed_overrides, groups_of, representative
from kafkamodel.durability.command import run_durability
from kafkamodel.durability.spec import load_durability
from kafkamodel.durability.sweep import STUDY, detailed_point
from kafkamodel.cli import main
from kafkamodel.kit.point import scenario_for
from durability_specs import NO_FAILURES, write_spec

# one zone, acks=1: every critical class goes to the detailed model (Kafka's rules decide none of them); power
# losses and crashes only, 2 windows: three classes, a few seconds each
ONE_ZONE_ACKS1 = {"producers[0].rate.per.s": 200, "racks": ["a"], "network.links": [], "producers[0].acks": 1}
FAILURES = {**NO_FAILURES, "broker.crash.per.year": 2, "zone.power.loss.per.year": 2.0}


def _spec(tmp_path, configurations=None, **top):
    return write_spec(tmp_path, **{"configurations": configurations or {"one_zone": ONE_ZONE_ACKS1},
                                   "failures": FAILURES, "windows": 2, "seed": 7, **top})


def _kept(folder):
    return {p.name: p.read_text() for p in sorted(folder.glob("*.json"))}


def test_a_detailed_runs_sweep_point_is_the_scenario_the_local_engine_simulates(tmp_path):
    """The point handed to papermill or Spark builds (base + overrides + seed, as every sweep point) exactly the
    scenario ``measure`` simulates in-process: the configuration's scenario with the class's faults and length."""
    spec = load_durability(_spec(tmp_path, {"one_zone": ONE_ZONE_ACKS1, "rf5": {"topics[0].replication.factor": 5,
                                                                               "broker.min.insync.replicas": 3,
                                                                               "seed": 11}}))
    for config in spec.configurations:
        g = groups_of(config.scenario)[0]
        _, _, replicas = g.partitions[0]
        steps = ((W.CRASH, 1), (W.POWER_LOSS, len(replicas) - 1))
        pattern, returns = representative(steps, len(replicas), spec.failures)
        extra = detailed_overrides(config.scenario, replicas, pattern, returns)
        point = detailed_point(spec.base, spec.base_path, config.name, config.overrides, extra,
                               config.scenario["seed"])
        assert scenario_for(point) == config.scenario.with_overrides(extra)
        assert len(scenario_for(point)["faults"]) == len(replicas) and point.study == STUDY
        # a class with a slow spell carries its factor to the engine's point as to measure
        pattern, returns = representative(((W.SLOW, 1), (W.CRASH, 1)), len(replicas), spec.failures)
        extra = detailed_overrides(config.scenario, replicas, pattern, returns, 30000.0)
        point = detailed_point(spec.base, spec.base_path, config.name, config.overrides, extra,
                               config.scenario["seed"])
        assert scenario_for(point) == config.scenario.with_overrides(extra)
        assert [f["factor"] for f in scenario_for(point)["faults"] if f["kind"] == "slow"] == [30000.0]


def test_local_spark_and_papermill_write_the_same_durability_json(tmp_path, spark, monkeypatch):
    """The real detailed model on a tiny spec: in-process, as Spark tasks (the test session's one Spark session)
    and as papermill notebooks, the same durability.json, the same measured classes and the same kept answers;
    the engines leave one run folder per detailed run; a rerun on Spark runs nothing again."""
    spec = _spec(tmp_path)
    out = {}
    for engine in ("local", "spark", "papermill"):
        folder = tmp_path / engine
        _, path = run_durability(str(spec), folder, progress=False, say=lambda line: None, workers=1 if engine ==
                                 "local" else 2, engine=engine, spark=spark if engine == "spark" else None)
        details = json.loads((folder / "durability-details.json").read_text())
        assert details["engine"] == engine
        out[engine] = (path.read_text(), details["configurations"], _kept(folder / "runs"))
    classes = out["local"][1][0]["classes_records_lost"]
    assert len(classes) >= 2 and classes["RF 3: power_loss x3"] > 0  # power loss in one zone loses, acks=1
    assert out["spark"] == out["local"] and out["papermill"] == out["local"]
    for engine in ("spark", "papermill"):
        runs = [p for p in (tmp_path / engine / "runs" / "sweep" / STUDY).iterdir() if not p.name.startswith(("_", "."))]
        assert len(runs) == len(out["local"][2]) == len(classes)
        assert all((r / "partitions.parquet").is_file() for r in runs)
    # resumable: every answer kept, so a rerun runs nothing on the engine and gives the same file
    def rerun(*args, **kwargs):
        raise AssertionError("a rerun with every answer kept ran detailed runs again")

    monkeypatch.setattr(sweep_module, "run_detailed", rerun)
    run_durability(str(spec), tmp_path / "spark", progress=False, say=lambda line: None, engine="spark", spark=spark)
    assert (tmp_path / "spark" / "durability.json").read_text() == out["local"][0]


@pytest.mark.parametrize("args, line", [
    (["--engine", "dask"], "--engine: must be one of local, papermill, spark, got 'dask'"),
    (["--engine", "papermill", "--master", "local[2]"], "--master: only with --engine spark"),
    (["--engine", "spark", "--master", "locale[2]"], "--master: must be a Spark master URL"),
])
def test_a_bad_engine_option_is_one_line_exit_2_and_writes_nothing(tmp_path, capsys, args, line):
    out = tmp_path / "out"
    assert main(["durability", str(_spec(tmp_path)), "--out", str(out), *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and line in err[0], err
    assert not out.exists()
