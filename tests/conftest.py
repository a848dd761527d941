"""Shared fixtures: one Spark session for the whole run, and tiny versions of every study.

Under pytest-xdist (``make test`` runs ``-n auto --dist loadgroup``) each worker is a pytest session of its own:
``pytest_collection_modifyitems`` below puts every test that starts Spark (the ``spark`` fixture, or marked
``spark``: its own Spark in a subprocess) on one worker, so one Spark session serves the run and no two JVMs
compete, and keeps the tests that share a module-scoped fixture on one worker, so it is built once.

A tiny study is the shipped spec with shorter runs and fewer grid values
(``TINY`` below), written to a temporary folder: the same study name, the
same analysis notebook, seconds instead of minutes.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path

import pytest
import yaml

from kafkamodel.paths import STUDIES

# per study: part -> changes (overrides merged in; grid values replaced; points kept by index)
TINY = {
    "quorum_vs_isr": {
        "latency_rf": {"overrides": {"duration.ms": 80000}},
        "latency_tail": {"overrides": {"duration.ms": 40000}, "grid": {"sigma": [0.25, 1.0]}},
        "failures": {"overrides": {"duration.ms": 12000}, "points": [0, 1, 2, 3, 4]},  # RF 3 (f 1-2), RF 5 (f 1-3)
        "slow_follower": {"grid": {"lag_time_ms": [1000, 2000]}},
    },
    "zones": {  # RF 3 only; the power-loss runs keep their length (the loss is at 8 s for 10 s)
        "latency": {"overrides": {"duration.ms": 4000}, "grid": {"rf": [3]}},
        "power_loss": {"grid": {"rf": [3]}},
    },
    "requests": {  # runs keep their length: the backlog and the eviction are measured against it
        "load_one_partition": {"points": [3, 4, 6, 7, 12, 13, 14]},  # acks=all 0.9, 1.1, 2x; acks=1 0.05, 0.9, 1.1, 1.5x
        "partitions_per_broker": {"grid": {"partitions": [10, 1000]}},
        "slow_follower": {"grid": {"factor": [1, 10, 100, 6000]}},
    },
    "lag_policies": {
        "burst_size": {"overrides": {"duration.ms": 4000}, "grid": {"burst": [1000, 8000]}},
        "max_messages": {"overrides": {"duration.ms": 4000}, "grid": {"max_messages": [1000, 64000]}},
        "evict_dead": {"grid": {"rate": [100, 10000]}},
        "stuck_follower": {"grid": {"lag_time_ms": [1000, 5000]}},
    },
    "acks_durability": {
        "no_faults": {"overrides": {"duration.ms": 5000}, "grid": {"acks": [1, "all"]}},
        "leader_crash": {"grid": {"acks": [1, "all"], "min_isr": [1]}},
        "isr_collapse": {"grid": {"acks": [1, "all"]}},
    },
    "delivery_semantics": {  # runs stay 30 s long: the crashes are timed against the bursts
        "consumer_crashes": {"grid": {"schedule": ["none", "leave_join", "crash_rejoin", "repeated"]}},
    },
    "fetch_from_follower": {  # 4 s runs (3 s of records), the eras before and after the 3.4 fixes
        "traffic": {"overrides": {"duration.ms": 4000}},
        "eras": {"overrides": {"duration.ms": 4000}, "grid": {"version": ["3.3", "4.1"]}},
    },
    "recovery_protocols": {},
    "operations": {},  # already small: 14 configurations of 20-50 s
    "control_plane": {  # 0.10, 1.1 and 4.1 at 100 and 1,000 partitions led (0.10's controlled shutdown at 100 only)
        "broker_failure": {"points": [0, 1, 4, 5, 6, 9]},
        "controlled_shutdown": {"points": [0, 1, 4, 6, 9]},
        "controller_failover": {"points": [0, 1, 4, 5, 6, 9]},
    },
    "versions": {  # the release before and after each fix, short runs where the schedule allows
        "follower_restart": {"grid": {"version": ["0.10", "4.1"]}},
        "double_power_loss": {"grid": {"version": ["0.10", "0.11"]}},
        "jepsen_partition": {"overrides": {"duration.ms": 30000}, "grid": {"version": ["0.10", "2.8"]}},
        "last_replica_standing": {"grid": {"version": ["3.9", "4.1"]}},
        "slow_follower": {"grid": {"version": ["2.8", "4.1"]}},
        "leader_bounce": {"overrides": {"duration.ms": 25000}, "grid": {"version": ["2.8", "4.1"]}},
    },
}


def tiny_spec_text(study: str, seeds: int = 1) -> str:
    """The shipped spec of `study`, shrunk (YAML text)."""
    data = yaml.safe_load((STUDIES / f"{study}.yaml").read_text())
    data["seeds"] = seeds
    for name, part in data["parts"].items():
        part.pop("seeds", None)
        change = TINY[study].get(name, {})
        part["overrides"] = {**(part.get("overrides") or {}), **copy.deepcopy(change.get("overrides", {}))}
        for key, values in change.get("grid", {}).items():
            part["grid"][key] = values
        if "points" in change:
            part["points"] = [part["points"][i] for i in change["points"]]
    return yaml.safe_dump(data, sort_keys=False)


def _spark_test(item) -> bool:
    return "spark" in item.fixturenames or item.get_closest_marker("spark") is not None


def _module_fixture_test(item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    return info is not None and any(defs and defs[-1].scope == "module" for defs in info.name2fixturedefs.values())


@pytest.hookimpl(wrapper=True)  # the groups are set before xdist's own hook reads them
def pytest_collection_modifyitems(config, items):
    """xdist groups (used by ``--dist loadgroup``, ignored without -n): "spark" for every test that starts Spark,
    the module's name for tests sharing a module fixture (a module with a Spark test keeps them in "spark" too).
    The browser tests run last: the reports they open are built (``study_reports``) by tests without their
    600-s bound."""
    items[:] = sorted(items, key=lambda item: item.get_closest_marker("browser") is not None)  # stable
    grouping = config.pluginmanager.hasplugin("xdist")
    if grouping:
        spark_modules = {item.module.__name__ for item in items if _spark_test(item)}
        for item in items:
            module = item.module.__name__
            if _spark_test(item):
                group = "spark"
            elif _module_fixture_test(item):
                group = "spark" if module in spark_modules else module
            else:
                continue
            item.add_marker(pytest.mark.xdist_group(group))
    result = yield
    if grouping and getattr(config.option, "loadgroup", False):  # an xdist worker under --dist loadgroup
        # xdist (3.8) passes a test's group to the scheduler as a suffix of its node id, set through the
        # attribute pytest < 9.2 kept it in; pytest 9.2 keeps it in `_id` (pytest-xdist issue #1386): set there
        try:
            from _pytest.nodeid import coerce_node_id
        except ImportError:  # a pytest before 9.2: xdist's own suffix reaches the scheduler
            return result
        for item in items:
            mark = item.get_closest_marker("xdist_group")
            if mark is not None and "@" not in item.nodeid and hasattr(item, "_id"):
                item._id = coerce_node_id(f"{item.nodeid}@{mark.args[0]}")
    return result


def _one_spark_worker(tmp_path_factory) -> None:
    """Under xdist, fail if another worker of this run started Spark (the groups above did not reach the
    scheduler, or -n ran without --dist loadgroup): two sessions would compete for the cores and the memory."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is None:
        return
    run = tmp_path_factory.getbasetemp().parent  # the run's folder, shared by its workers
    (run / f"spark-{worker}").touch()
    others = sorted(p.name for p in run.glob("spark-*") if p.name != f"spark-{worker}")
    if others:
        pytest.fail(f"Spark started on two xdist workers ({worker} and {', '.join(others)}): run with "
                    "--dist loadgroup (make test does), which puts every Spark test on one worker")


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    """The one Spark session of the test run (each new one costs about 10 s)."""
    from kafkamodel.kit.spark import build_spark

    _one_spark_worker(tmp_path_factory)
    session = build_spark("local[2]", app_name="kafkamodel tests")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def study_root(tmp_path_factory) -> Path:
    """runs/, processed/, reports/ and specs/ for the test run (never the repository's data/)."""
    root = tmp_path_factory.mktemp("study")
    for sub in ("runs", "processed", "reports", "specs"):
        (root / sub).mkdir()
    return root


@pytest.fixture(scope="session")
def tiny_spec(study_root):
    """tiny_spec(study) -> the loaded tiny Spec (its file in study_root/specs/)."""
    from kafkamodel.kit.specfile import load_spec

    def make(study: str, seeds: int = 1):
        path = study_root / "specs" / f"{study}.yaml"
        path.write_text(tiny_spec_text(study, seeds))
        return load_spec(path)

    return make


TINY_SEEDS = 2  # the aggregated tiny studies: enough for a 95% interval in every table


@pytest.fixture(scope="session")
def aggregated(spark, tmp_path_factory):
    """aggregated(study) -> its processed folder: tiny points (2 seeds) run in-process, aggregated on Spark
    (once per study; in a folder of their own, apart from the pipeline tests' sweeps)."""
    from helpers import run_point_into
    from kafkamodel.kit.aggregate import aggregate
    from kafkamodel.kit import check_workers, in_order
    from kafkamodel.kit.point import execute_point
    from kafkamodel.kit.specfile import load_spec

    root = tmp_path_factory.mktemp("tiny")
    done: dict[str, Path] = {}

    def make(study: str) -> Path:
        if study not in done:
            path = root / "specs" / f"{study}.yaml"
            path.parent.mkdir(exist_ok=True)
            path.write_text(tiny_spec_text(study, TINY_SEEDS))
            spec = load_spec(path)
            jobs = [(point, root / "runs" / study / point.run_id) for point in spec.points(1)]
            workers = min(len(jobs), check_workers(None))
            if workers > 1:  # each point alone and deterministic: the run folders are the same in any process
                for _ in in_order(run_point_into, jobs, workers):
                    pass
            else:
                for point, out in jobs:
                    execute_point(point, out)
            done[study] = aggregate(spec, spark=spark, runs=root / "runs", processed=root / "processed").out
        return done[study]

    return make


STUDY_NAMES = ("quorum_vs_isr", "zones", "fetch_from_follower", "requests", "lag_policies", "acks_durability", "delivery_semantics",
               "recovery_protocols", "versions", "operations", "control_plane")


@pytest.fixture(scope="session")
def study_reports(aggregated, tmp_path_factory) -> Path:
    """Every study's report (HTML and its JSON record) from the tiny aggregates, and the index: the folder."""
    from kafkamodel.kit.report import report, write_index
    from kafkamodel.kit.specfile import load_spec

    out = tmp_path_factory.mktemp("reports")
    for study in STUDY_NAMES:
        processed = aggregated(study)
        spec = load_spec(processed.parent.parent / "specs" / f"{study}.yaml")
        report(spec, processed=processed.parent, reports=out, timeout=300, index=False)
    write_index(out)
    return out


@pytest.fixture
def task_counts(monkeypatch) -> list:
    """The Spark engine's task counts, one per job, as it cuts them (kit.engines.spark.task_count, spied)."""
    from kafkamodel.kit.engines import spark as spark_engine

    counted, count = [], spark_engine.task_count

    def spy(points, slots):
        counted.append(count(points, slots))
        return counted[-1]

    monkeypatch.setattr(spark_engine, "task_count", spy)
    return counted
