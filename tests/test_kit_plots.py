"""Figures a reader can read: one run with many partitions, an empty events panel that says so, legends off the data."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.collections import LineCollection, PathCollection

from kafkamodel import load_scenario, simulate
from kafkamodel.paths import SCENARIOS
from kafkamodel.kit import plots
from kafkamodel.studies import (
    acks_durability,
    control_plane,
    delivery_semantics,
    lag_policies,
    operations,
    quorum_vs_isr,
    recovery_protocols,
    requests,
    versions,
    zones,
)
from kafkamodel.studies.explorer.runfigure import isr_counts, run_figure
from kafkamodel.kit.tables import load_aggregates

FIGURES = {
    "quorum_vs_isr": (quorum_vs_isr, ["latency_vs_rf", "latency_vs_tail", "survival", "slow_follower"]),
    "zones": (zones, ["latency_figure", "power_loss_figure"]),
    "requests": (requests, ["load_figure", "partitions_figure", "slow_figure"]),
    "lag_policies": (lag_policies, ["shuttle", "eviction", "stuck_follower"]),
    "acks_durability": (acks_durability, ["tradeoff", "downtime"]),
    "delivery_semantics": (delivery_semantics, ["delivery", "latency", "idempotence"]),
    "recovery_protocols": (recovery_protocols, ["pairs"]),
    "operations": (operations, ["rolling_figure", "reassign_figure"]),
    "versions": (versions, ["losses", "costs"]),
    "control_plane": (control_plane, ["figure"]),
}


def _points_under_legends(fig) -> list[str]:
    """Data points (line vertices, markers with their size, bar tops) that a legend covers, once the figure is drawn
    as shown."""
    plots.png(fig)  # what notebooks and reports do: place the legends, lay out, render
    renderer = fig.canvas.get_renderer()
    hits = []
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is None:
            continue
        box = legend.get_window_extent(renderer)
        px = fig.dpi / 72.0
        marks = []  # (points in pixels, the mark's radius in pixels)
        for line in ax.get_lines():
            marker = line.get_marker() not in (None, "None", "", " ", "none")
            marks.append((line.get_transform().transform(np.asarray(line.get_xydata(), float)),
                          line.get_markersize() * px / 2 if marker else 0.0))
        for c in ax.collections:
            if isinstance(c, PathCollection):  # scatter markers
                size = max(c.get_sizes()) if len(c.get_sizes()) else 0.0
                marks.append((c.get_offset_transform().transform(np.asarray(c.get_offsets(), float)),
                              np.sqrt(size) * px / 2))
            elif isinstance(c, LineCollection):  # error bars: their ends
                for seg in c.get_segments():
                    marks.append((c.get_transform().transform(np.asarray(seg, float)), 0.0))
        for patch in ax.patches:
            b = patch.get_window_extent(renderer)
            if b.width > 0 and b.height > 0:
                marks.append((np.array([[b.x0, b.y1], [b.x1, b.y1], [(b.x0 + b.x1) / 2, b.y1]]), 0.0))
        for xy, r in marks:
            xy = xy[np.isfinite(xy).all(axis=1)]
            inside = ((xy[:, 0] + r > box.x0) & (xy[:, 0] - r < box.x1) & (xy[:, 1] + r > box.y0)
                      & (xy[:, 1] - r < box.y1))
            hits += [f"{ax.get_title()!r}: ({x:.0f}, {y:.0f}) px" for x, y in xy[inside]]
    return hits


@pytest.mark.parametrize("study", list(FIGURES))
def test_no_legend_covers_data(aggregated, study):
    module, names = FIGURES[study]
    agg = load_aggregates(study, aggregated(study))
    for name in names:
        fig = getattr(module, name)(agg)
        assert not _points_under_legends(fig), f"{study}.{name}: {_points_under_legends(fig)[:5]}"


def test_a_run_with_six_partitions_and_no_faults():
    result = simulate(load_scenario(SCENARIOS / "steady-state.yaml").with_overrides({"duration.ms": 3000}))
    counts = isr_counts(result.timeline)
    assert (counts.sum(axis=1) == 6).all()  # every partition counted once at every sample, not drawn on top of another
    assert list(counts.columns) == [3]  # all in sync throughout
    fig = run_figure(result)
    lat, isr, events = fig.axes[:3]
    assert [t.get_text() for t in events.texts] == ["no events"]
    assert isr.get_ylabel() == "partitions (of 6)" and lat.get_ylabel() == "produce latency (ms)"
    assert not _points_under_legends(fig)


def test_a_run_with_an_election_shows_its_events_and_the_leaderless_stretch():
    result = simulate(load_scenario(SCENARIOS / "clean-election.yaml"))
    counts = isr_counts(result.timeline)
    assert -1 in counts.columns and counts[-1].max() == 1  # the partition without a leader, as its own band
    fig = run_figure(result)
    events = fig.axes[2]
    labels = [t.get_text() for t in events.get_yticklabels()]
    assert "crash" in labels and "leader election" in labels and not events.texts
    legend = [t.get_text() for t in fig.axes[1].get_legend().get_texts()]
    assert legend[0] == "ISR 3 (all)" and legend[-1] == "no leader"
    assert not _points_under_legends(fig)


def test_events_at_the_start_of_the_run_are_drawn_clear_of_the_axes_edge():
    # a consumer group joins at 0 s: its rebalance starts at the run's first instant, on the time axis' left end
    result = simulate(load_scenario(SCENARIOS / "three-zones.yaml").with_overrides({
        "duration.ms": 2000, "consumers": [{"group": "g", "topic": "orders", "members": 1, "client.rack": "a"}]}))
    ev = result.events
    assert ev[ev["kind"] == "rebalance_start"]["time_ms"].min() == 0.0
    fig = run_figure(result)
    events = fig.axes[2]
    renderer = fig.canvas.get_renderer()
    frame = events.get_window_extent(renderer)
    spines = [s.get_window_extent(renderer) for side, s in events.spines.items()
              if side in ("left", "right") and s.get_visible()]
    lines = events.get_lines()
    assert len(lines) == len(set(ev["kind"]))  # one row of marks per kind
    left, right = events.get_xlim()
    for line in lines:
        half = line.get_markeredgewidth() * fig.dpi / 72.0 / 2  # a "|" mark's half width in pixels
        for x, y in line.get_transform().transform(line.get_xydata()):
            assert left <= events.transData.inverted().transform((x, y))[0] <= right  # inside the time axis
            if line.get_clip_on():  # clipped: the whole mark must lie inside the axes
                assert frame.x0 <= x - half and x + half <= frame.x1, (line.get_label(), x, frame)
            for spine in spines:  # and no spine drawn over it
                assert x + half <= spine.x0 or spine.x1 <= x - half, (line.get_label(), x, spine)


def test_a_legend_moves_to_the_free_corner_or_outside():
    fig, (ax,) = plots.figure(1)
    xs = np.linspace(0, 10, 41)
    ax.plot(xs, 10 - xs, label="falling")  # a diagonal through the upper-left and lower-right corners ...
    ax.plot([8, 9, 10], [9, 9.5, 10], "o", label="high")  # ... and points in the upper right
    ax.legend(loc="upper right")  # as drawn: on the points
    assert _corner(fig, ax) == "lower left"  # the one free corner
    fig, (ax,) = plots.figure(1)
    gx, gy = np.meshgrid(np.linspace(0, 10, 30), np.linspace(0, 10, 30))
    ax.scatter(gx.ravel(), gy.ravel(), s=4, label="everywhere")
    ax.legend(loc="upper right")
    assert _corner(fig, ax) == "outside"  # no free corner: beside the axes


def _corner(fig, ax) -> str:
    assert not _points_under_legends(fig)
    renderer = fig.canvas.get_renderer()
    box, frame = ax.get_legend().get_window_extent(renderer), ax.get_window_extent(renderer)
    if box.x0 >= frame.x1:
        return "outside"
    vertical = "lower" if box.y0 - frame.y0 < frame.y1 - box.y1 else "upper"
    horizontal = "left" if box.x0 - frame.x0 < frame.x1 - box.x1 else "right"
    return f"{vertical} {horizontal}"


def test_a_run_with_operations_shows_kafkas_gauges_and_the_operations_window():
    # a rolling restart with no wait on RF 3 / min.insync.replicas 2: two brokers out at once, so partitions go under
    # min ISR for a while
    result = simulate(load_scenario(SCENARIOS / "steady-state.yaml").with_overrides({
        "duration.ms": 8000, "broker.min.insync.replicas": 2, "timeline.interval.ms": 20,
        "operations": [{"at.ms": 1000, "kind": "rolling_restart", "gate": {"wait.ms": 0}, "downtime.ms": 1500}]}))
    s = result.summary
    fig = run_figure(result)
    lat, gauges, events = fig.axes[:3]
    # the gauges, counted here from the timeline as Kafka defines them
    tl = result.timeline
    led = tl["leader"] >= 0
    expected = {"under-replicated": (led & (tl["isr_size"] < 3)), "under min ISR": (led & (tl["isr_size"] < 2)),
                "offline": ~led}
    lines = {line.get_label().split(" (")[0]: line for line in gauges.get_lines()}
    assert set(lines) == set(expected)
    for name, mask in expected.items():
        counted = mask.groupby(tl["time_ms"]).sum()
        assert list(lines[name].get_xdata()) == list(counted.index / 1000.0)
        assert list(lines[name].get_ydata()) == counted.tolist(), name
    assert max(lines["under min ISR"].get_ydata()) == 6 and s["under_min_isr_partition_ms"] > 0
    legend = [t.get_text() for t in gauges.get_legend().get_texts()]
    assert legend[1] == f"under min ISR ({s['under_min_isr_partition_ms'] / 1000.0:.3g} partition-s)"
    # the operations' window, shaded on every panel: the first start to the last end, as the events have them
    ev = result.events
    start = ev[ev["kind"] == "operation_start"]["time_ms"].min() / 1000.0
    end = ev[ev["kind"] == "operation_end"]["time_ms"].max() / 1000.0
    assert end - start == pytest.approx(s["operation_ms"] / 1000.0)
    for ax in (lat, gauges, events):
        (span,) = [p for p in ax.patches if p.get_alpha() == 0.08]
        assert span.get_x() == pytest.approx(start) and span.get_x() + span.get_width() == pytest.approx(end)
    (during,) = lat.collections[-1:]  # the p99 during the operations, drawn across their window
    (segment,) = during.get_segments()
    assert segment[0][1] == pytest.approx(s["operation_produce_p99_ms"])
    assert not _points_under_legends(fig)
