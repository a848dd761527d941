"""The widget panel, driven from Python: it starts from the scenario it is given, and every control does what it says."""

from __future__ import annotations

import pytest

from kafkamodel import load_scenario, simulate
from kafkamodel.paths import SCENARIOS, shipped_scenarios
from kafkamodel.studies.explorer import panel_model as pm
from kafkamodel.studies.explorer.explore import explore_scenario
from kafkamodel.kit.spec import StudyError
from kafkamodel.studies.explorer.widgets import explorer_panel, study_panel

SMALL = {"duration.ms": 6000}


@pytest.fixture
def panel():
    drawn = []
    p = explorer_panel("slow-follower-isr", SMALL, draw=drawn.append)
    p.drawn = drawn
    return p


def test_an_untouched_panel_runs_exactly_the_notebooks_scenario(panel):
    assert panel.runs == 1 and len(panel.drawn) == 1
    expected = simulate(load_scenario(SCENARIOS / "slow-follower-isr.yaml").with_overrides(SMALL)).summary
    assert panel.result.summary == expected  # no control overrides anything until it is moved
    v = panel.values()
    assert v["replication"] == "isr" and v["rf"] == 3 and v["acks"] == "all" and v["lag_time_ms"] == 1000
    assert v["kafka_version"] == "4.1" and v["session_timeout_ms"] == 9000  # KRaft's broker.session.timeout.ms
    assert "application/vnd.jupyter.widget-view+json" in panel._repr_mimebundle_()
    # the status line: the setting, p50 and p99, loss, wall-clock and partition-seconds unavailability
    status = panel.status.value
    for text in ("run 1", "isr, RF 3, acks=all", "p50 ", "<b>p99 ", "acknowledged", "lost: 0 acknowledged",
                 "unwritable ", "partition-s", "ISR −", "NOT_ENOUGH_REPLICAS"):
        assert text in status, text
    # every shipped scenario can be opened from the selector
    assert set(panel.source.options) == {"slow-follower-isr with the notebook's overrides", *shipped_scenarios()}


def test_changing_a_control_reruns_the_model_and_redraws(panel):
    panel.controls["replication"].value = "quorum"
    assert panel.runs == 2 and len(panel.drawn) == 2
    assert panel.result.summary["replication"] == "quorum" and "quorum, RF 3" in panel.status.value
    panel.controls["rf"].value = 5
    assert panel.runs == 3
    assert panel.result.scenario["brokers"] == 5  # brokers grow to fit the replication factor
    assert panel.result.scenario["topics"][0]["replication.factor"] == 5
    panel.controls["acks"].value = "1"
    assert panel.result.scenario["producers"][0]["acks"] == 1 and "acks=1" in panel.status.value
    assert panel.runs == 4 and panel.error is None


def test_the_default_leader_crash_shows_a_failover():
    panel = explorer_panel("steady-state", draw=lambda r: None)
    assert panel.result.summary["leader_elections"] == 0  # steady state: no faults
    panel.controls["faults"].value = "leader crash"
    at, lasts = panel.controls["fault_at_ms"].value, panel.controls["fault_duration_ms"].value
    assert lasts > 9000 and at + 9000 < 30000  # the crash outlasts the session timeout in force, within the run
    assert panel.note.value == ""

    def first_election_s() -> float:
        events = panel.result.events
        return float(events[events["kind"] == "leader_election"]["time_ms"].min()) / 1000.0

    # KRaft (4.1): fenced broker.session.timeout.ms (9 s) after the leader's last heartbeat (every 2 s from 0)
    fenced = at - at % 2000 + 9000
    assert first_election_s() == pytest.approx(fenced / 1000.0, abs=0.5)  # failover when the session expires
    assert panel.result.summary["unavailable_wall_ms"] == pytest.approx(fenced - at, abs=500)
    # a restart within the session: the new process cannot register before the old session expires, so the
    # failover comes at the same time, and the panel says why
    panel.controls["fault_duration_ms"].value = 6000
    assert first_election_s() == pytest.approx(fenced / 1000.0, abs=0.5)
    assert panel.result.summary["unavailable_wall_ms"] == pytest.approx(fenced - at, abs=500)
    assert "before its session (9 s) expires: a new process cannot register" in panel.note.value
    panel.controls["session_timeout_ms"].value = 3000  # the new control: now the controller gives up sooner
    assert first_election_s() == pytest.approx((at - at % 2000 + 3000) / 1000.0, abs=0.5)
    assert panel.result.scenario["broker"]["broker.session.timeout.ms"] == 3000 and panel.note.value == ""
    # the version control: the same crash on ZooKeeper (2.8: zookeeper.session.timeout.ms 18 s, counted from the crash)
    panel.controls["kafka_version"].value = "2.8"
    at = panel.controls["fault_at_ms"].value
    assert panel.values()["faults"] == "leader crash" and panel.values()["session_timeout_ms"] == 18000
    assert panel.result.scenario["kafka.metadata"] == "zookeeper" and panel.result.scenario["producers"][0]["linger.ms"] == 0
    assert first_election_s() == pytest.approx((at + 18000) / 1000.0, abs=0.5)


def test_controls_without_effect_are_greyed_out(panel):
    c = panel.controls
    assert c["fault_at_ms"].disabled and c["fault_duration_ms"].disabled  # "as in the scenario"
    assert c["lag_max_messages"].disabled and not c["lag_time_ms"].disabled  # the time rule
    assert not c["min_insync_replicas"].disabled and not c["unclean"].disabled
    c["faults"].value = "follower crash"
    assert not c["fault_at_ms"].disabled and not c["fault_duration_ms"].disabled
    c["kafka_version"].value = "0.8"  # 0.8's count rule
    assert not c["lag_max_messages"].disabled and c["faults"].value == "follower crash"
    c["acks"].value = "1"
    assert c["min_insync_replicas"].disabled  # only acks=all writes need min.insync.replicas
    c["replication"].value = "quorum"
    for name in ("unclean", "lag_time_ms", "lag_max_messages", "min_insync_replicas"):
        assert c[name].disabled, name
    assert not c["rf"].disabled and not c["session_timeout_ms"].disabled


def test_min_insync_above_rf_is_named_in_one_line_and_not_run_before_3_7(panel):
    panel.controls["kafka_version"].value = "3.6"
    panel.controls["rf"].value = 5
    runs = panel.runs
    panel.controls["min_insync_replicas"].value = 6
    assert panel.runs == runs  # not run
    assert panel.error == ("min.insync.replicas: 6 exceeds the replication factor (5); Kafka 3.6 refuses every acks=all "
                           "write (NOT_ENOUGH_REPLICAS; from 3.7 it is capped at the replication factor). "
                           "Lower it to 5 or less, or raise the replication factor.")
    assert "not run:" in panel.status.value and "\n" not in panel.error
    panel.controls["acks"].value = "1"  # min.insync.replicas no longer matters: runs again
    assert panel.runs == runs + 1 and panel.error is None
    panel.controls["acks"].value = "all"
    panel.controls["min_insync_replicas"].value = 2
    assert panel.error is None and panel.runs == runs + 2
    panel.controls["kafka_version"].value = "3.7"  # Partition.effectiveMinIsr caps it (KAFKA-15583): it runs
    runs = panel.runs
    panel.controls["min_insync_replicas"].value = 6
    assert panel.error is None and panel.runs == runs + 1


def test_switching_scenario_resets_the_controls_to_it():
    panel = explorer_panel("steady-state", draw=lambda r: None)
    panel.controls["acks"].value = "0"
    runs = panel.runs
    panel.source.value = "lag-count-rule-bursts"
    assert panel.runs == runs + 1  # one run for the switch, not one per control reset
    v = panel.values()
    assert v["kafka_version"] == "0.8" and v["acks"] == "1" and panel.label == "lag-count-rule-bursts"
    expected = simulate(load_scenario(SCENARIOS / "lag-count-rule-bursts.yaml")).summary
    assert panel.result.summary == expected
    assert "count rule" in panel.about.value or "replica.lag.max.messages" in panel.about.value


def test_study_panel_starts_from_the_part_the_charts_ran(aggregated):
    from kafkamodel.kit.tables import load_aggregates

    agg = load_aggregates("quorum_vs_isr", aggregated("quorum_vs_isr"))
    panel = study_panel(agg, draw=lambda r: None, part="failures")
    assert panel.source.description == "study part" and panel.label == "failures"
    assert set(panel.source.options) == {p["name"] for p in agg.spec["parts"]}
    sc = panel.result.scenario
    # the part's overrides, not the plain base: 3 s session timeout, 1000 records/s, one partition of RF 3
    assert sc["broker"]["broker.session.timeout.ms"] == 3000 and panel.values()["session_timeout_ms"] == 3000
    assert sc["producers"][0]["rate.per.s"] == 1000 and sc["topics"][0]["partitions"] == 1
    panel.source.value = "latency_rf"
    latency_rf = next(p for p in agg.spec["parts"] if p["name"] == "latency_rf")["overrides"]
    assert panel.result.scenario["duration.ms"] == latency_rf["duration.ms"]
    assert panel.result.scenario["network"]["latency.ms"]["dist"] == "exponential"  # the part's Exp(1 ms)
    with pytest.raises(StudyError, match="parameter part: quorum_vs_isr has no part 'latency'; parts are latency_rf"):
        study_panel(agg, part="latency")


def test_the_panel_schedules_an_operation_against_the_run():
    scenario = load_scenario(SCENARIOS / "steady-state.yaml").with_overrides({"duration.ms": 4000})
    values = pm.initial_values(scenario)
    assert values["operation"] == "as in the scenario"
    ov = pm.panel_overrides({**values, "operation": "rolling restart (uncontrolled, no wait)"}, scenario)
    # from a quarter of the run, each broker down a tenth of it, without controlled shutdown
    assert ov["operations"] == [{"at.ms": 1000, "kind": "rolling_restart", "gate": {"wait.ms": 0}, "downtime.ms": 400}]
    assert ov["broker.controlled.shutdown.enable"] is False
    assert pm.panel_overrides({**values, "operation": "none"}, scenario) == {"operations": []}
    r = simulate(scenario.with_overrides(ov))
    assert events_of(r, "broker_shutdown") == [0, 1, 2]  # every broker, in id order


def events_of(result, kind):
    ev = result.events
    return ev[ev["kind"] == kind]["broker"].tolist()


def test_panel_overrides_only_what_moved():
    scenario = load_scenario(SCENARIOS / "lag-count-rule-bursts.yaml")
    values = pm.initial_values(scenario)
    assert values["kafka_version"] == "0.8" and values["lag_max_messages"] == 4000
    assert pm.panel_overrides(values, scenario) == {}
    ov = pm.panel_overrides({**values, "kafka_version": "0.9", "rf": 2, "faults": "all followers crash"}, scenario)
    assert ov["kafka.version"] == "0.9" and ov["broker.replica.lag.max.messages"] is None  # 0.9's time rule
    assert ov["topics[*].replication.factor"] == 2
    assert ov["faults"][0]["broker"] == [1] and ov["faults"][0]["kind"] == "crash"
    assert "network.latency.ms" not in ov  # the scenario's latency distribution stays until a latency control moves
    assert pm.panel_overrides({**values, "faults": "none"}, scenario) == {"faults": []}
    assert pm.panel_overrides({**values, "rf": 5}, scenario) == {"topics[*].replication.factor": 5, "brokers": 5}
    scenario.with_overrides(ov)  # a valid scenario


def test_overrides_in_the_notebook_grow_brokers_as_the_panel_does():
    example = {"producers[*].acks": 1, "topics[0].replication.factor": 5}  # the parameters cell's example
    sc = explore_scenario("steady-state", example)
    assert sc["brokers"] == 5 and sc["topics"][0]["replication.factor"] == 5 and sc["producers"][0]["acks"] == 1
    assert explore_scenario("steady-state", {**example, "brokers": 7})["brokers"] == 7  # an explicit count wins
    with pytest.raises(StudyError, match=r"^parameter overrides: topics\[0\]\.replication\.factor: must be >= 1, got 0$"):
        explore_scenario("steady-state", {"topics[0].replication.factor": 0})
    with pytest.raises(StudyError, match="^parameter scenario 'steady_state': no shipped scenario of that name; "
                                         "did you mean 'steady-state'\\? \\(shipped: acks1-leader-crash, "):
        explore_scenario("steady_state")


def test_a_setting_moved_back_shows_its_run_again_without_running_the_model(panel):
    first = panel.result
    assert panel.simulations == 1
    panel.controls["acks"].value = "1"
    assert panel.simulations == 2 and panel.result.scenario["producers"][0]["acks"] == 1
    panel.controls["acks"].value = "all"  # back: the run kept for that scenario, shown again
    assert panel.runs == 3 and panel.simulations == 2 and len(panel.drawn) == 3
    assert panel.result is first and "run 3" in panel.status.value
    for rf in (2, 3, 4, 5, 1):  # more scenarios than it keeps (RESULTS_KEPT: 4): the oldest are dropped
        panel.controls["rf"].value = rf
    assert panel.simulations == 6  # RF 3 is the first run, kept
    panel.controls["rf"].value = 4
    assert panel.simulations == 6  # kept
    panel.controls["rf"].value = 2
    assert panel.simulations == 7  # kept, then dropped: run again


def test_the_panel_on_the_notebooks_run_shows_it_without_running_the_model():
    from kafkamodel.studies.explorer.explore import explore_run

    result = explore_run("slow-follower-isr", SMALL, seed=3)
    panel = explorer_panel("slow-follower-isr", SMALL, draw=lambda r: None, seed=3, result=result)
    assert panel.simulations == 0 and panel.result is result and panel.result.summary["seed"] == 3
    assert panel.runs == 1 and panel.label == "slow-follower-isr with the notebook's overrides (seed 3)"
    # a run of another scenario is not taken for it: without the seed, the panel runs the scenario's own
    other = explorer_panel("slow-follower-isr", SMALL, draw=lambda r: None, result=result)
    assert other.simulations == 1 and other.result.summary["seed"] == 6
    with pytest.raises(StudyError, match=r"^parameter seed: must be an integer >= 0 or None, got -1$"):
        explorer_panel("slow-follower-isr", SMALL, seed=-1)


def test_the_controls_fit_a_notebook_cell_at_1280_px(panel):
    from kafkamodel.studies.explorer import widgets

    def px(text: str) -> int:
        assert text.endswith("px"), text
        return int(text[:-2])

    columns = panel.widget.children[2]
    assert list(columns.children) == panel.columns and columns.layout.flex_flow == "row wrap"  # narrower: one below
    least = [px(column.layout.flex.split()[2]) for column in panel.columns]
    margins = 2 * 2 * len(least)  # ipywidgets' 2 px margin on either side of each control
    assert sum(least) + margins <= widgets.CELL_WIDTH  # side by side in a cell at 1280 px, the file browser open
    shown = [control for column in panel.columns for control in column.children]
    assert sorted(map(id, shown)) == sorted(map(id, panel.controls.values()))  # every control, once
    assert all(control.layout.width == "auto" for control in shown)  # each as wide as its column, never wider
    assert px(panel.source.layout.max_width) <= widgets.CELL_WIDTH
    for column, label in zip(panel.columns, (widgets.LABEL_WIDTH, widgets.SECOND_LABEL_WIDTH)):  # labels aligned
        labelled = {c.style.description_width for c in column.children if c is not panel.controls["unclean"]}
        assert labelled == {label}


def test_the_panels_own_drawing_is_the_runs_figure_and_summary_kept_with_the_run():
    import base64

    from kafkamodel.kit.plots import png
    from kafkamodel.studies.explorer.runfigure import run_figure
    from kafkamodel.studies.explorer.summary import setting

    panel = explorer_panel("slow-follower-isr", SMALL)  # the panel's own drawing, headless
    figure, table = panel.output.outputs
    r = panel.result
    expected = png(run_figure(r, f"slow-follower-isr: {setting(r)}"))  # the same figure, drawn here
    assert base64.b64decode(figure["data"]["image/png"]) == expected
    assert figure["metadata"]["image/png"]["alt"] == "slow-follower-isr: isr, RF 3, acks=all, min.insync.replicas 1"
    assert f"all {len(r.summary)} summary values" in table["data"]["text/html"]
    first = panel.output.outputs
    panel.controls["acks"].value = "1"
    assert panel.output.outputs != first and panel.simulations == 2
    panel.controls["acks"].value = "all"  # back: the run and its drawing as they were kept, nothing drawn again
    assert panel.output.outputs == first and panel.simulations == 2  # a new drawing's table has a new random id
    panel.controls["kafka_version"].value = "3.6"
    panel.controls["min_insync_replicas"].value = 6  # above RF: 3.6 refuses every acks=all write
    assert panel.error and panel.output.outputs == ()  # not run: nothing shown
