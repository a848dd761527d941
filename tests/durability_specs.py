"""Durability spec files for the tests of the durability verb (its estimates and its engines), and what the tests of
kafkamodel/durability/ (and of the faults it schedules) share: the scenarios, the verb's run, the slow-spell rates."""

from __future__ import annotations

import json
import math
from pathlib import Path

import yaml

from kafkamodel import load_scenario
from kafkamodel.cli import main
from kafkamodel.paths import scenario_path

# every failure rate off: a test turns on the ones it is about
NO_FAILURES = {"broker.crash.per.year": 0, "machine.crash.per.year": 0, "machine.failure.per.year": 0,
               "zone.power.loss.per.year": 0, "zone.outage.per.year": 0}


def write_spec(folder: Path, **data) -> Path:
    """A durability spec (the three-zones scenario unless `data` names another) written to folder/d.yaml."""
    path = folder / "d.yaml"
    path.write_text(yaml.safe_dump({"scenario": "three-zones", **data}))
    return path


def failures_spec(tmp_path, failures, **top):
    """A spec of one configuration (rf3_min2 unless `top` names others) with these failures."""
    return write_spec(tmp_path, **{"configurations": {"rf3_min2": {}}, "failures": failures, **top})


BASE = {"duration.ms": 16000, "producers[0].rate.per.s": 2000}


def steady(**faults):
    """The steady-state scenario, 16 s at 2,000 records/s, with these overrides (its faults)."""
    return load_scenario(scenario_path("steady-state")).with_overrides({**BASE, **faults})


LOW = {"producers[0].rate.per.s": 200}
ONE_ZONE = {**LOW, "racks": ["a"], "network.links": []}
RF2_MIN1 = {**LOW, "topics[0].replication.factor": 2, "broker.min.insync.replicas": 1}
NO_NIC = {"hardware.broker.nic.gbps": None}  # the NIC model off
EVERY_CLASS = {"one_zone": {**ONE_ZONE, "producers[0].acks": 1}, "three_zones": {**LOW, "producers[0].acks": 1}}

CONTRACT = ("configuration", "loss_probability_per_partition_year", "loss_probability_per_partition_year_low",
            "loss_probability_per_partition_year_high", "acked_records_lost_per_year", "unavailable_minutes_per_year")


def run_verb(tmp_path, configurations, failures, windows=300):
    """The durability verb on these configurations and failures (seed 3): its rows by configuration, each with the
    contract's fields."""
    spec = failures_spec(tmp_path, {**NO_FAILURES, **failures}, configurations=configurations, windows=windows, seed=3)
    out = tmp_path / "out"
    assert main(["durability", str(spec), "--out", str(out)]) == 0
    rows = json.loads((out / "durability.json").read_text())
    assert [sorted(r) for r in rows] == [sorted(CONTRACT)] * len(rows)
    return {r["configuration"]: r for r in rows}


def json_files(folder):
    return {p.name: p.read_text() for p in sorted(folder.glob("*.json"))}  # not the kit's list of what it wrote


# ---- slow brokers and zones cut off from the others ---------------------------------------------------------------

SLOW_RATE, SLOW_MS, CRASH_RATE, RESTART_MS = 20.0, 600000.0, 5.0, 60000.0
MS_YEAR = 365.25 * 24 * 3600 * 1000


def slow_then_crash_rate(followers: int = 1) -> float:
    """Per partition-year, to first order in rate x duration (the paths left out are ~1e-3 of it): a slow spell
    opens the window on one of the partition's replicas, then the leader crashes first among the events that can
    come next (the leader's crash c, the slow broker's own crash c, the other replicas' slow spells s), before
    the spell ends: P = c / (2c + (n - 1) s) (1 - exp(-(2c + (n - 1) s) d)). On RF 2 either replica's spell
    counts (the follower's, then the leader's crash; or the leader's, its followers out of the ISR, then its own
    crash): 2 s P; on RF 3 only the leader's (one follower out is not enough): s P."""
    s, c, d = SLOW_RATE, CRASH_RATE, SLOW_MS / MS_YEAR
    others = 2 * c + followers * s
    return (1 + (followers == 1)) * s * c / others * -math.expm1(-others * d)
