"""The widget panel, driven from Python: it builds, and changing a control re-runs the model."""

from __future__ import annotations

import pytest

from kafkamodel import load_scenario
from kafkamodel.paths import SCENARIOS
from kafkamodel.study.widgets import FAULTS, explorer_panel, initial_values, panel_overrides

SMALL = {"duration.ms": 6000}


@pytest.fixture
def panel():
    drawn = []
    p = explorer_panel("slow-follower-isr", SMALL, draw=drawn.append)
    p.drawn = drawn
    return p


def test_panel_builds_from_the_scenario_and_runs_once(panel):
    assert panel.runs == 1 and len(panel.drawn) == 1
    v = panel.values()
    assert v["replication"] == "isr" and v["rf"] == 3 and v["acks"] == "all" and v["lag_time_ms"] == 1000
    assert panel.result.summary["records_sent"] > 0
    assert set(panel.controls) >= {"replication", "rf", "acks", "min_insync_replicas", "unclean", "lag_rule",
                                   "lag_time_ms", "lag_max_messages", "latency_median_ms", "latency_sigma",
                                   "faults", "fault_at_ms", "fault_duration_ms"}
    bundle = panel._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle


def test_changing_a_control_reruns_the_model_and_redraws(panel):
    panel.controls["replication"].value = "quorum"
    assert panel.runs == 2 and len(panel.drawn) == 2
    assert panel.result.summary["replication"] == "quorum"
    panel.controls["rf"].value = 5
    assert panel.runs == 3
    assert panel.result.scenario["brokers"] == 5  # brokers grow to fit the replication factor
    assert panel.result.scenario["topics"][0]["replication.factor"] == 5
    panel.controls["faults"].value = "leader crash"
    assert panel.result.summary["leader_elections"] >= 1
    panel.controls["acks"].value = "1"
    assert panel.result.scenario["producers"][0]["acks"] == 1
    assert panel.runs == 5 and panel.error is None


def test_a_bad_combination_is_shown_not_raised(panel):
    panel.controls["fault_at_ms"].value = 5990
    panel.controls["faults"].value = "stuck follower (pause)"
    runs = panel.runs
    panel.controls["rf"].value = 1  # the follower to pause does not exist any more ... broker 0 is paused instead
    panel.controls["min_insync_replicas"].value = 3
    assert panel.runs >= runs  # still running: min.insync.replicas is capped by RF as Kafka does
    panel.controls["latency_sigma"].value = 0.0
    assert panel.error is None


def test_panel_overrides_is_a_pure_mapping_of_the_controls():
    scenario = load_scenario(SCENARIOS / "lag-count-rule-bursts.yaml")
    values = initial_values(scenario)
    assert values["lag_rule"] == "count (0.8)" and values["lag_max_messages"] == 4000
    ov = panel_overrides({**values, "lag_rule": "time", "rf": 2, "faults": "all followers crash"}, scenario)
    assert ov["broker.replica.lag.max.messages"] is None
    assert ov["topics[*].replication.factor"] == 2
    assert ov["faults"][0]["broker"] == [1] and ov["faults"][0]["kind"] == "crash"
    assert "faults" not in panel_overrides(values, scenario)  # "as in the scenario"
    assert FAULTS["none"] == () and panel_overrides({**values, "faults": "none"}, scenario)["faults"] == []
    scenario.with_overrides(ov)  # a valid scenario
