"""The shipped scenarios, run by name with overrides (shared by the test modules)."""

from __future__ import annotations

from pathlib import Path

from kafkamodel import load_scenario, simulate
from kafkamodel.config.schema import COSTS

# brokers (and clients) that spend no time on requests; GC pauses of no length (a young collection still needs a
# positive allocation between two)
ZERO_COSTS = {key: 0 for key in COSTS if key != "gc.young.mib"}
# a broker machine with no limits: every core, NIC and disk bandwidth unbounded (an fsync then costs only fsync.ms)
UNLIMITED_MACHINE = {"broker": {"cores": None, "nic.gbps": None, "disk.write.mib.per.s": None,
                                "disk.read.mib.per.s": None}}

SCENARIOS = Path(__file__).resolve().parents[1] / "data" / "scenarios"


def run(name: str, **overrides):
    """Simulate data/scenarios/NAME.yaml with `overrides` (paths as Scenario.with_overrides takes them)."""
    scenario = load_scenario(SCENARIOS / f"{name}.yaml")
    return simulate(scenario.with_overrides(overrides) if overrides else scenario)
