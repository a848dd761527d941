"""The interactive panel: change a setting, the model re-runs and the plots redraw in place.

``explorer_panel(scenario)`` builds it from a scenario (its current values
become the controls' starting values). Notebooks show it only when their
``interactive`` parameter is true (papermill runs keep it off: widgets can
stall a batch client). ``panel_overrides`` is the pure mapping from control
values to scenario overrides, so it can be tested without a browser.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from ..scenario import Scenario, ScenarioError
from .explore import explore_scenario, run_figure, summary_table

FAULTS = {  # named fault schedules: (kind, target, extra)
    "as in the scenario": None,
    "none": (),
    "leader crash": ("crash", "leader", {}),
    "follower crash": ("crash", "follower", {}),
    "all followers crash": ("crash", "followers", {}),
    "slow follower (x100)": ("slow", "follower", {"factor": 100}),
    "stuck follower (pause)": ("pause", "follower", {}),
    "leader isolated": ("isolate", "leader", {}),
}
LAG_TIMES = [100, 250, 500, 1000, 2000, 5000, 10000, 30000]
LAG_MESSAGES = [500, 1000, 2000, 4000, 8000, 16000, 64000]


def initial_values(scenario: Scenario) -> dict:
    """The controls' starting values, read from the scenario."""
    topic = scenario["topics"][0] if scenario["topics"] else {"replication.factor": 1, "name": "t"}
    producer = scenario["producers"][0] if scenario["producers"] else {"acks": "all"}
    broker = scenario["broker"]
    latency = scenario["network"]["latency.ms"]
    median, sigma = 0.5, 0.5
    if isinstance(latency, Mapping) and latency.get("dist") == "lognormal":
        median, sigma = float(latency["median"]), float(latency["sigma"])
    elif isinstance(latency, Mapping) and latency.get("dist") == "exponential":
        median, sigma = float(latency["mean"]) * 0.693, 0.8
    elif isinstance(latency, (int, float)):
        median, sigma = float(latency), 0.0
    count = broker["replica.lag.max.messages"]
    duration = float(scenario["duration.ms"])
    return {
        "replication": scenario["replication"],
        "rf": int(topic["replication.factor"]),
        "acks": str(producer["acks"]),
        "min_insync_replicas": int(broker["min.insync.replicas"]),
        "unclean": bool(broker["unclean.leader.election.enable"]),
        "lag_rule": "count (0.8)" if count else "time",
        "lag_time_ms": _nearest(LAG_TIMES, broker["replica.lag.time.max.ms"]),
        "lag_max_messages": _nearest(LAG_MESSAGES, count or 4000),
        "latency_median_ms": round(min(max(median, 0.05), 20.0), 2),
        "latency_sigma": round(min(max(sigma, 0.0), 2.0), 2),
        "faults": "as in the scenario",
        "fault_at_ms": int(duration * 0.25),
        "fault_duration_ms": int(duration * 0.4),
    }


def _nearest(options: list, value: float) -> Any:
    return min(options, key=lambda o: abs(o - float(value)))


def panel_overrides(values: Mapping[str, Any], scenario: Scenario) -> dict:
    """Scenario overrides for the control values (brokers grow to fit the replication factor)."""
    rf = int(values["rf"])
    acks = values["acks"] if values["acks"] == "all" else int(values["acks"])
    ov: dict[str, Any] = {
        "replication": values["replication"],
        "brokers": max(int(scenario["brokers"]), rf),
        "broker.min.insync.replicas": int(values["min_insync_replicas"]),
        "broker.unclean.leader.election.enable": bool(values["unclean"]),
        "broker.replica.lag.time.max.ms": values["lag_time_ms"],
        "broker.replica.lag.max.messages": values["lag_max_messages"] if values["lag_rule"] != "time" else None,
    }
    if scenario["topics"]:
        ov["topics[*].replication.factor"] = rf
    if scenario["producers"]:
        ov["producers[*].acks"] = acks
    sigma = float(values["latency_sigma"])
    median = float(values["latency_median_ms"])
    ov["network.latency.ms"] = {"dist": "lognormal", "median": median, "sigma": sigma} if sigma > 0 else median
    schedule = FAULTS[values["faults"]]
    if schedule is not None:
        ov["faults"] = _faults(schedule, values, scenario, rf)
    return ov


def _faults(schedule, values, scenario: Scenario, rf: int) -> list:
    if not schedule:
        return []
    kind, target, extra = schedule
    topic = scenario["topics"][0]["name"] if scenario["topics"] else "t"
    fault = {"at.ms": values["fault_at_ms"], "kind": kind, "duration.ms": values["fault_duration_ms"], **extra}
    if target == "leader":
        fault["broker"] = f"leader:{topic}-0"
    elif target == "follower":
        fault["broker"] = 1 % max(rf, 1)  # partition 0's replicas are brokers 0..rf-1; 0 is the preferred leader
    else:
        fault["broker"] = list(range(1, rf)) or [0]
    return [fault]


class ExplorerPanel:
    """Controls, a status line and an output area; every change re-runs the model and redraws."""

    def __init__(self, scenario: "str | Scenario" = "steady-state", overrides: Mapping | None = None,
                 draw: Callable | None = None):
        import ipywidgets as w

        self.scenario = scenario if isinstance(scenario, Scenario) else explore_scenario(scenario, overrides)
        self.draw = draw or _draw_run
        self.runs = 0  # model runs so far (one per change)
        self.result = None  # the latest Result
        self.error: str | None = None  # the latest problem with the settings, if any
        v = initial_values(self.scenario)
        duration = int(self.scenario["duration.ms"])
        style = {"description_width": "150px"}
        layout = w.Layout(width="420px")

        def slider(cls, desc, **kw):
            return cls(description=desc, continuous_update=False, style=style, layout=layout, **kw)

        self.controls = {
            "replication": w.Dropdown(options=["isr", "quorum"], value=v["replication"], description="replication",
                                      style=style, layout=layout),
            "rf": slider(w.IntSlider, "replication factor", min=1, max=7, value=min(v["rf"], 7)),
            "acks": w.Dropdown(options=["0", "1", "all"], value=v["acks"], description="acks", style=style, layout=layout),
            "min_insync_replicas": slider(w.IntSlider, "min.insync.replicas", min=1, max=7, value=min(v["min_insync_replicas"], 7)),
            "unclean": w.Checkbox(value=v["unclean"], description="unclean.leader.election.enable", style=style, layout=layout),
            "lag_rule": w.Dropdown(options=["time", "count (0.8)"], value=v["lag_rule"], description="lag rule",
                                   style=style, layout=layout),
            "lag_time_ms": slider(w.SelectionSlider, "replica.lag.time.max.ms", options=LAG_TIMES, value=v["lag_time_ms"]),
            "lag_max_messages": slider(w.SelectionSlider, "replica.lag.max.messages", options=LAG_MESSAGES,
                                       value=v["lag_max_messages"]),
            "latency_median_ms": slider(w.FloatSlider, "latency median (ms)", min=0.05, max=20.0, step=0.05,
                                        value=v["latency_median_ms"]),
            "latency_sigma": slider(w.FloatSlider, "latency tail (σ)", min=0.0, max=2.0, step=0.05, value=v["latency_sigma"]),
            "faults": w.Dropdown(options=list(FAULTS), value=v["faults"], description="fault schedule", style=style, layout=layout),
            "fault_at_ms": slider(w.IntSlider, "fault at (ms)", min=0, max=max(duration - 1, 1), step=max(duration // 100, 1),
                                  value=v["fault_at_ms"]),
            "fault_duration_ms": slider(w.IntSlider, "fault lasts (ms)", min=1, max=duration, step=max(duration // 100, 1),
                                        value=max(v["fault_duration_ms"], 1)),
        }
        self.status = w.HTML()
        self.output = w.Output()
        for control in self.controls.values():
            control.observe(self._changed, names="value")
        left = list(self.controls.values())[:7]
        right = list(self.controls.values())[7:]
        self.widget = w.VBox([w.HBox([w.VBox(left), w.VBox(right)]), self.status, self.output])
        self.rerun()

    def values(self) -> dict:
        return {name: control.value for name, control in self.controls.items()}

    def _changed(self, change) -> None:
        self.rerun()

    def rerun(self) -> None:
        """Simulate with the current settings and redraw (a bad combination is shown, not raised)."""
        from ..simulation import simulate

        try:
            scenario = self.scenario.with_overrides(panel_overrides(self.values(), self.scenario))
        except ScenarioError as exc:
            self.error = str(exc)
            self.status.value = f"<b style='color:#b00'>not run:</b> {self.error}"
            return
        self.error = None
        self.result = simulate(scenario)
        self.runs += 1
        s = self.result.summary
        self.status.value = (f"run {self.runs}: {s['records_acked']:,}/{s['records_sent']:,} acked, "
                             f"{s['acked_records_lost']:,} acked lost, unavailable {s['unavailable_ms'] / 1000:.1f} s")
        self.output.clear_output(wait=True)
        with self.output:
            self.draw(self.result)

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)


def _draw_run(result) -> None:
    from IPython.display import display

    from .plots import show

    show(run_figure(result))
    display(summary_table(result).T)


def explorer_panel(scenario: "str | Scenario" = "steady-state", overrides: Mapping | None = None,
                   draw: Callable | None = None) -> ExplorerPanel:
    """Build the panel (it runs the model once straight away)."""
    return ExplorerPanel(scenario, overrides, draw)
