"""The interactive panel: change a setting, the model re-runs and the plots redraw in place.

``explorer_panel(scenario, overrides)`` (``00_explore``) starts from the
notebook's scenario and can switch to any shipped scenario;
``study_panel(agg)`` (the study notebooks) starts from one part of the study,
its base scenario with that part's overrides, and switches between parts.
An untouched panel runs exactly that scenario; each control then overrides
one setting (``panel_model``). Controls with no effect are greyed out, a
combination the panel refuses is named in one line, the status line says
"running…" while the model runs and then the key numbers. Notebooks show
the panel only when their ``interactive`` parameter is true (papermill runs
keep it off: widgets can stall a batch client).

The model is deterministic per scenario and seed, so the panel keeps the
results of the last few scenarios it ran (``RESULTS_KEPT``), with what it
drew for them, and shows one again without running or drawing it: a
control moved back, a change that leaves the scenario as it was, or the
notebook's own run given as ``result``.
"""

from __future__ import annotations

import html
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ...config.scenario import Scenario, ScenarioError, load_scenario
from ...paths import scenario_path, shipped_scenarios
from . import panel_model as pm
from .explore import check_parameters, explore_scenario, scenario_description

# Two columns of controls that fit a notebook cell's output area at 1280 px (CELL_WIDTH), every label and every
# value readable; a narrower cell puts the second column below the first instead of cutting it off.
CELL_WIDTH = 848  # px: JupyterLab 4's output area at 1280 px with its file browser open (measured in Chromium)
LABEL_WIDTH = "190px"  # the first column's labels: fits the longest Kafka property name shown ("replica.lag.max.messages")
SECOND_LABEL_WIDTH = "160px"  # the second column's: fits "consumers' client.rack" (146 px)
COLUMN_WIDTHS = (360, 474)  # px, each column's least width: a slider's label, track and readout; the second column's
# label and a dropdown wide enough for its longest value, "rolling restart (gate: no under-replicated)" (270 px)
OUTPUT_HEIGHT = "290px"  # the figure's height: the panel does not jump while it redraws
RESULTS_KEPT = 4  # results kept to show again without a run (steady-state's: about 31 MiB each, its record table)


@dataclass
class Source:
    """Where the panel starts from: a label, the scenario, and one line about it."""

    label: str
    load: Callable[[], Scenario]
    about: str


def _shipped(name: str) -> Source:
    return Source(name, lambda: load_scenario(scenario_path(name)), scenario_description(name))


def _overrides_text(overrides: Mapping) -> str:
    text = ", ".join(f"{k}={v}" for k, v in overrides.items())
    return text if len(text) < 160 else text[:157] + "…"


class ExplorerPanel:
    """A scenario selector, controls, a status line and an output area; every change re-runs the model."""

    def __init__(self, sources: list[Source], draw: Callable | None = None, source_label: str = "scenario",
                 given=None):
        import ipywidgets as w

        self.sources = {s.label: s for s in sources}
        self.draw = draw  # None: the panel's own drawing (_run_outputs), kept with each result
        self.runs = 0  # results shown so far (one per change; the status line's "run N")
        self.simulations = 0  # of them, the model's runs (the others were kept from an earlier run)
        self._kept: OrderedDict[Scenario, Kept] = OrderedDict()  # the latest last
        self.result = None  # the latest Result
        self.timings: dict[str, float] = {}  # the latest redraw's CPU seconds: simulate, status, draw (bench --case explorer)
        self.error: str | None = None  # the latest problem with the settings, if any
        self._quiet = False  # setting controls programmatically: no re-run per control
        style = {"description_width": LABEL_WIDTH}

        def slider(cls, desc, **kw):
            return cls(description=desc, continuous_update=False, style=style, layout=w.Layout(width="auto"), **kw)

        def dropdown(desc, options, **kw):
            return w.Dropdown(options=options, description=desc, style=style, layout=w.Layout(width="auto"), **kw)

        self.source = w.Dropdown(options=list(self.sources), value=sources[0].label, description=source_label,
                                 style=style, layout=w.Layout(width="auto", max_width=f"{sum(COLUMN_WIDTHS)}px"))
        self.about = w.HTML(layout=w.Layout(margin="0 0 4px 0"))
        self.controls = {
            "kafka_version": dropdown("kafka.version", pm.VERSIONS),
            "replication": dropdown("replication", ["isr", "quorum"]),
            "rf": slider(w.IntSlider, "replication factor", min=1, max=7),
            "acks": dropdown("acks", ["0", "1", "all"]),
            "min_insync_replicas": slider(w.IntSlider, "min.insync.replicas", min=1, max=7),
            "unclean": w.Checkbox(description="unclean.leader.election.enable", indent=False,
                                  layout=w.Layout(width="auto", margin="2px 0 2px 64px")),
            "session_timeout_ms": slider(w.SelectionSlider, "session.timeout.ms", options=pm.SESSION_TIMEOUTS),
            "lag_time_ms": slider(w.SelectionSlider, "replica.lag.time.max.ms", options=pm.LAG_TIMES),
            "lag_max_messages": slider(w.SelectionSlider, "replica.lag.max.messages", options=pm.LAG_MESSAGES),
            "latency_median_ms": slider(w.FloatSlider, "latency median (ms)", min=0.05, max=20.0, step=0.05),
            "latency_sigma": slider(w.FloatSlider, "latency tail (σ)", min=0.0, max=2.0, step=0.05),
            "faults": dropdown("fault schedule", list(pm.FAULTS)),
            "fault_at_ms": slider(w.IntSlider, "fault at (ms)", min=0, max=1),
            "fault_duration_ms": slider(w.IntSlider, "fault lasts (ms)", min=1, max=2),
            "operation": dropdown("operation", list(pm.OPERATIONS)),
            "replica_selector": dropdown("replica.selector.class", list(pm.SELECTORS)),
            "consumer_racks": dropdown("consumers' client.rack", [pm.AS_GIVEN]),
        }
        tips = {"kafka_version": "the Kafka release whose mechanisms and defaults apply (docs/versions.md); moving it "
                                 "reloads the scenario under that version, the controls at its defaults",
                "session_timeout_ms": "zookeeper.session.timeout.ms (ZooKeeper) or broker.session.timeout.ms (KRaft): "
                                      "how long the controller waits before it declares a silent broker dead",
                "lag_max_messages": "Kafka 0.8's count rule: out of sync when more than this many messages behind",
                "latency_sigma": "σ of a lognormal one-way network latency (0: a constant)",
                "operation": "an operator's maintenance (operations:), from a quarter of the run: watch the partitions "
                             "by ISR size (under-replicated, under min ISR) and the latency while it runs",
                "replica_selector": "KIP-392 (2.4+): RackAwareReplicaSelector lets each consumer read from the replica "
                                    "in its client.rack (docs/zones.md); the status line gives the cross-zone bill",
                "consumer_racks": "the zones the consumer groups run in (client.rack): a group in every zone reads "
                                  "the first topic once per zone"}
        for name, tip in tips.items():
            self.controls[name].tooltip = tip
        self.status = w.HTML(layout=w.Layout(min_height="2.6em"))
        self.note = w.HTML()
        self.output = w.Output(layout=w.Layout(min_height=OUTPUT_HEIGHT))
        self.source.observe(self._source_changed, names="value")
        for name, control in self.controls.items():
            control.observe(self._version_changed if name == "kafka_version" else self._changed, names="value")
        names = list(self.controls)
        half = (len(names) + 1) // 2
        for name in names[half:]:
            self.controls[name].style.description_width = SECOND_LABEL_WIDTH
        self.columns = [w.VBox([self.controls[n] for n in part], layout=w.Layout(flex=f"1 1 {width}px"))
                        for part, width in zip((names[:half], names[half:]), COLUMN_WIDTHS)]
        columns = w.HBox(self.columns, layout=w.Layout(flex_flow="row wrap"))
        self.widget = w.VBox([self.source, self.about, columns, self.note, self.status, self.output])
        if given is not None:  # a run already made (the notebook's): kept if it is the first source's scenario
            first = sources[0].load()
            if given.scenario == first.to_dict():
                self.keep(first, given)
        self.load(sources[0].label)

    # -- state ---------------------------------------------------------------------------------------------
    def values(self) -> dict:
        return {name: control.value for name, control in self.controls.items()}

    def load(self, label: str) -> None:
        """Start from `label`'s scenario: the controls take its values, then one run."""
        source = self.sources[label]
        self.base = self.scenario = source.load()  # as given; under the version control's kafka.version
        self.label = label
        self.about.value = f"<small>{html.escape(source.about)}</small>"
        self._reset()

    def _reset(self, keep: Mapping | None = None) -> None:
        """The controls take the values of the scenario in force (but those in `keep`), then one run."""
        v = {**pm.initial_values(self.scenario), **(keep or {})}
        duration = int(self.scenario["duration.ms"])
        step = max(duration // 100, 1)
        self._quiet = True
        try:
            self.controls["consumer_racks"].options = pm.consumer_rack_choices(self.scenario)
            at, lasts = self.controls["fault_at_ms"], self.controls["fault_duration_ms"]
            at.max, lasts.max = max(duration - 1, 1), duration  # widen before narrowing: min <= value <= max holds
            at.min, lasts.min, at.step, lasts.step = 0, 1, step, step
            for name, value in v.items():
                control = self.controls[name]
                if hasattr(control, "max") and isinstance(value, (int, float)) and value > control.max:
                    value = control.max
                control.value = value
        finally:
            self._quiet = False
        self.rerun()

    def _source_changed(self, change) -> None:
        self.load(change["new"])

    def _version_changed(self, change) -> None:
        """Another kafka.version: the scenario under it (what the version lacks left out), controls at its values."""
        if self._quiet:
            return
        try:
            self.scenario = pm.at_version(self.base, change["new"])
        except ScenarioError as exc:
            self.error = str(exc)
            self.status.value = f"<b style='color:#b00'>not run:</b> {html.escape(self.error)}"
            return
        self._reset(keep={"faults": self.controls["faults"].value})  # its timing follows the new session timeout

    def _changed(self, change) -> None:
        if not self._quiet:
            self.rerun()

    def _grey_out(self, values: dict) -> None:
        for name, on in pm.active(values).items():
            self.controls[name].disabled = not on

    # -- running -------------------------------------------------------------------------------------------
    def rerun(self) -> None:
        """Simulate with the current settings and redraw (a bad combination is shown in one line, not raised)."""
        from ...sim.simulation import simulate

        values = self.values()
        self._grey_out(values)
        hint = pm.hint(values, self.scenario)
        self.note.value = f"<span style='color:#8a6d00'>{html.escape(hint)}</span>" if hint else ""
        problem = pm.problem(values)
        if problem is None:
            try:
                scenario = self.scenario.with_overrides(pm.panel_overrides(values, self.scenario))
            except ScenarioError as exc:
                problem = str(exc)
        if problem is not None:
            self.error = problem
            self.status.value = f"<b style='color:#b00'>not run:</b> {html.escape(problem)}"
            if self.draw is None:
                self.output.outputs = ()  # the output area's contents are the panel's to set (see below)
            else:
                self.output.clear_output()
            return
        self.error = None
        previous = self.status.value
        self.status.value = ("<b style='color:#1f77b4'>running…</b> "
                             f"<span style='color:#999'>{previous}</span>")
        t0 = time.process_time()
        kept = self._kept.pop(scenario, None)
        if kept is None:
            kept = Kept(simulate(scenario))
            self.simulations += 1
        self.result = kept.result
        self._kept[scenario] = kept
        self.runs += 1
        from .summary import status_line

        t1 = time.process_time()
        self.status.value = status_line(self.result, self.runs)
        t2 = time.process_time()
        if self.draw is None:  # the panel's own drawing: the output area's contents, kept with the result
            if kept.outputs is None:
                kept.outputs = _run_outputs(self.result)
            self.output.outputs = kept.outputs
        else:
            self.output.clear_output(wait=True)
            with self.output:
                self.draw(self.result)
        self._trim()
        self.timings = {"simulate": t1 - t0, "status": t2 - t1, "draw": time.process_time() - t2}

    def keep(self, scenario: Scenario, result) -> None:
        """Keep `result` as `scenario`'s (it must be that scenario's run), dropping the oldest beyond RESULTS_KEPT."""
        self._kept[scenario] = Kept(result)
        self._trim()

    def _trim(self) -> None:
        while len(self._kept) > RESULTS_KEPT:
            self._kept.popitem(last=False)

    def forget(self) -> None:
        """Drop the kept results: the next redraw runs the model (``bench --case explorer`` times both)."""
        self._kept.clear()

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)


@dataclass
class Kept:
    """A scenario's run, and what the panel's own drawing made of it (the output area's contents), once drawn."""

    result: Any
    outputs: tuple | None = None


def _run_outputs(result) -> tuple:
    """The panel's own drawing of a run (the figure, then every summary value on request) as the output area's
    contents: display_data messages, as ipywidgets' Output ``append_display_data`` makes them, so the panel sets
    them at once (no flicker) and can keep them and show them again."""
    from IPython.core.formatters import DisplayFormatter
    from IPython.display import HTML

    from ...kit.plots import image
    from .runfigure import run_figure
    from .summary import full_summary, setting

    table = full_summary(result)
    shown = [image(run_figure(result, f"{result.summary['scenario']}: {setting(result)}")),
             HTML(f"<details><summary>all {len(table.df)} summary values</summary>{table._repr_html_()}</details>")]
    formatted = (DisplayFormatter().format(x) for x in shown)  # a kernel's formatter gives the same for these
    return tuple({"output_type": "display_data", "data": data, "metadata": metadata} for data, metadata in formatted)


def explorer_panel(scenario: "str | Scenario" = "steady-state", overrides: Mapping | None = None,
                   draw: Callable | None = None, seed: int | None = None, result=None) -> ExplorerPanel:
    """The panel on `scenario` (a shipped name or YAML path, with the notebook's overrides and seed), and every
    shipped scenario in its selector. It shows that scenario's run straight away: `result` if it is that run (the
    notebook's, so opening the panel runs nothing), else a run of its own."""
    if isinstance(scenario, Scenario):
        scenario = scenario if seed is None else scenario.with_overrides({"seed": seed})
        first = Source(str(scenario["name"]), lambda: scenario, "the scenario given")
    else:
        name = str(scenario)
        check_parameters(scenario, overrides or {}, seed, None, None)  # a bad seed is reported here, in one line
        explore_scenario(name, overrides, seed)  # and a bad name or override
        about = scenario_description(name) if name in shipped_scenarios() else name
        label = name if not overrides else f"{name} with the notebook's overrides"
        if overrides:
            about = f"{about} Overrides: {_overrides_text(overrides)}."
        if seed is not None:
            label, about = f"{label} (seed {seed})", f"{about} Seed {seed}."
        first = Source(label, lambda: explore_scenario(name, overrides, seed), about)
    others = [_shipped(n) for n in shipped_scenarios() if n != first.label]
    return ExplorerPanel([first, *others], draw, given=result)


def study_panel(agg, draw: Callable | None = None, part: str | None = None) -> ExplorerPanel:
    """The panel on a study's parts: each part's base scenario with the part's overrides, as its charts ran it."""
    parts = agg.spec["parts"]
    if part is not None and part not in {p["name"] for p in parts}:
        from ...kit import StudyError

        raise StudyError([f"parameter part: {agg.study} has no part {part!r}; parts are "
                          f"{', '.join(p['name'] for p in parts)}"])
    sources = []
    for p in sorted(parts, key=lambda p: p["name"] != part):  # the requested part first
        base, overrides = p["base"], dict(p["overrides"])
        about = (f"Part {p['name']} of {agg.study}: {base} with the part's overrides"
                 + (f" ({_overrides_text(overrides)})" if overrides else "")
                 + "; the swept settings take the controls' values.")
        sources.append(Source(p["name"], _part_loader(base, overrides), about))
    return ExplorerPanel(sources, draw, source_label="study part")


def _part_loader(base: str, overrides: Mapping[str, Any]) -> Callable[[], Scenario]:
    return lambda: load_scenario(scenario_path(base)).with_overrides(overrides)
