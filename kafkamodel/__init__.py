"""kafkamodel: a deterministic discrete-event model of Kafka replication.

``from kafkamodel import load_scenario, simulate``. The simulation (and
pandas with it) is imported on first use, so scenario checks stay fast.
"""

from .config.scenario import Scenario, ScenarioError, load_scenario

__all__ = ["Result", "Scenario", "ScenarioError", "load_scenario", "simulate"]
__version__ = "0.1.0"


def __getattr__(name: str):
    if name == "simulate":
        from .sim.simulation import simulate

        return simulate
    if name == "Result":
        from .sim.results.result import Result

        return Result
    raise AttributeError(f"module 'kafkamodel' has no attribute {name!r}")
