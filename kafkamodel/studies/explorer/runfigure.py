"""One run in one figure, sized for a laptop screen: latency over time, partitions by ISR size, events.

Readable with any number of partitions: the middle panel counts partitions
per ISR size (and without a leader) instead of drawing one line per
partition on top of each other. A run with operations (``operations:``)
shows Kafka's gauges there instead, summed over the cluster
(``UnderReplicatedPartitions``, ``UnderMinIsrPartitionCount``,
``OfflinePartitionsCount``), and shades the operations' window (the first
one's start to the last one's end) on every panel. Legends sit above their
panel, never on the data; a panel with nothing to show says so.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...kit import plots

WIDTH, HEIGHT = 8.4, 2.75  # inches at plots.DPI: about 810 x 265 px, a notebook cell's width at 1280 px
BINS = 200  # latency bins over the run
ISR_COLORS = ["#2ca02c", "#bcbd22", "#ff7f0e", "#d62728", "#8c564b", "#e377c2", "#7f7f7f"]  # full ISR first
OFFLINE = "#222222"
SPINE_OFFSET_PT = 5  # the events panel's left spine stands this far (points) left of its time axis


def _legend_above(ax, ncols: int) -> None:
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        ax.legend(handles, labels, loc="lower left", bbox_to_anchor=(0.0, 1.01), ncols=ncols, fontsize=7, frameon=False,
                  borderaxespad=0.0, handlelength=1.5, columnspacing=1.0)


def _empty(ax, text: str) -> None:
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", fontsize=9, color="#666666")
    ax.set_yticks([])


def _latency(ax, result, duration: float) -> None:
    records = result.records
    acked = records["acked"].to_numpy()  # the two columns drawn, not the whole table filtered: a redraw's cost
    send = records["send_ms"].to_numpy()[acked]
    if not len(send):
        _empty(ax, "no acknowledged records")
        ax.set_ylabel("produce latency (ms)")
        return
    edges = np.linspace(0.0, duration, BINS + 1)
    which = np.clip(np.searchsorted(edges, send, side="right") - 1, 0, BINS - 1)
    latency = records["ack_ms"].to_numpy()[acked] - send
    frame = pd.DataFrame({"bin": which, "latency": latency}).groupby("bin")["latency"]
    centres = (edges[:-1] + edges[1:]) / 2 / 1000.0
    for q, style, colour in ((0.5, "-", plots.CYCLE[0]), (0.99, "--", plots.CYCLE[0])):
        series = frame.quantile(q)
        ax.plot(centres[series.index], series.to_numpy(), style, color=colour, linewidth=1.2, label=f"p{int(q * 100)}")
    maxes = frame.max()
    ax.plot(centres[maxes.index], maxes.to_numpy(), ":", color=plots.CYCLE[3], linewidth=1.0, label="max")
    ax.set_yscale("log")
    plots.plain_log_labels(ax.yaxis)
    ax.set_ylabel("produce latency (ms)")
    _legend_above(ax, 3)


def isr_counts(timeline: pd.DataFrame) -> pd.DataFrame:
    """Per sample time: how many partitions have each ISR size, and how many have no leader (column -1)."""
    if not len(timeline):
        return pd.DataFrame()
    state = np.where(timeline["leader"].to_numpy() < 0, -1, timeline["isr_size"].to_numpy())
    counts = pd.crosstab(timeline["time_ms"].to_numpy(), state)
    return counts.reindex(sorted(counts.columns, reverse=True), axis=1)  # full ISR first, no leader last


def _isr(ax, result) -> None:
    counts = isr_counts(result.timeline)
    total = int(counts.iloc[0].sum()) if len(counts) else 0
    if not total:
        _empty(ax, "no partitions")
        return
    t = counts.index.to_numpy() / 1000.0
    rf = int(result.timeline["isr_size"].max())
    bottom = np.zeros(len(t))
    for i, size in enumerate(counts.columns):
        n = counts[size].to_numpy(dtype=float)
        colour = OFFLINE if size < 0 else ISR_COLORS[min(max(rf - size, 0), len(ISR_COLORS) - 1)]
        label = "no leader" if size < 0 else f"ISR {size}" + (" (all)" if size == rf else "")
        ax.fill_between(t, bottom, bottom + n, step="post", color=colour, alpha=0.85, linewidth=0, label=label)
        bottom += n
    ax.set_ylim(0, total)
    ax.set_ylabel(f"partitions (of {total})")
    ax.yaxis.get_major_locator().set_params(integer=True)
    _legend_above(ax, len(counts.columns) if len(counts.columns) <= 2 else 2)


GAUGES = (("UnderReplicatedPartitions", "under-replicated", "#ff7f0e", "-"),
          ("UnderMinIsrPartitionCount", "under min ISR", "#d62728", "-"),
          ("OfflinePartitionsCount", "offline", OFFLINE, "--"))
GAUGE_TOTALS = ("under_replicated_partition_ms", "under_min_isr_partition_ms", "offline_partition_ms")
WINDOW = "#1f77b4"  # the operations' window, shaded


def cluster_gauges(result) -> pd.DataFrame:
    """Per timeline sample, Kafka's partition gauges over the cluster: UnderReplicatedPartitions and
    UnderMinIsrPartitionCount summed over the leaders that report them, and the controller's
    OfflinePartitionsCount (``results.health.broker_gauges``, with each topic's min.insync.replicas in force)."""
    from ...config.scenario import load_scenario
    from ...config.settings import Settings
    from ...sim.results.health import broker_gauges

    settings = Settings.of(load_scenario(result.scenario))
    min_isr = {t.name: t.min_insync_replicas for t in settings.topics}
    per = broker_gauges(result.timeline, result.partitions, min_isr, settings.brokers)
    summed = per.groupby("time_ms")[["UnderReplicatedPartitions", "UnderMinIsrPartitionCount"]].sum()
    summed["OfflinePartitionsCount"] = per.groupby("time_ms")["OfflinePartitionsCount"].first()
    return summed


def operation_window(result) -> tuple[float, float] | None:
    """The operations' window in ms (the summary's operation_ms, from the first operation's start), or None."""
    ms = result.summary.get("operation_ms")
    starts = result.events[result.events["kind"] == "operation_start"]["time_ms"]
    if ms is None or not len(starts):
        return None
    return float(starts.min()), float(starts.min()) + float(ms)


def _gauges(ax, result) -> None:
    if not len(result.timeline):
        _empty(ax, "no partitions")
        return
    g = cluster_gauges(result)
    t = g.index.to_numpy() / 1000.0
    s = result.summary  # in the legend: each state's partition-seconds in all, exact where the samples may miss a dip
    for (column, label, colour, style), key in zip(GAUGES, GAUGE_TOTALS):
        total_s = s[key] / 1000.0
        ax.step(t, g[column].to_numpy(), style, where="post", color=colour, linewidth=1.3,
                label=f"{label} ({total_s:.3g} partition-s)")
    total = int(result.timeline.groupby("time_ms").size().max())
    ax.set_ylim(-0.05 * total, total * 1.05)
    ax.set_ylabel(f"partitions (of {total})")
    ax.yaxis.get_major_locator().set_params(integer=True)
    _legend_above(ax, 1)


def _shade(axes, window, result) -> None:
    start, end = window
    for i, ax in enumerate(axes):
        ax.axvspan(start / 1000.0, end / 1000.0, color=WINDOW, alpha=0.08, linewidth=0,
                   label="operation" if i == 0 else None)
    p99 = result.summary.get("operation_produce_p99_ms")
    if p99 is not None:
        axes[0].hlines(p99, start / 1000.0, end / 1000.0, color=WINDOW, linewidth=1.0, alpha=0.8)
        axes[0].annotate(f"p99 during: {p99:.3g} ms", (start / 1000.0, p99), xytext=(2, 2),
                         textcoords="offset points", fontsize=7, color=WINDOW)


def _events(ax, result) -> None:
    events = result.events
    kinds = list(dict.fromkeys(events.sort_values("time_ms")["kind"])) if len(events) else []
    if not kinds:
        _empty(ax, "no events")
        ax.set_ylabel("events")
        return
    for i, kind in enumerate(kinds):
        t = events[events["kind"] == kind]["time_ms"].to_numpy() / 1000.0
        colour = "#d62728" if kind == "invariant_violation" else plots.CYCLE[i % len(plots.CYCLE)]
        ax.plot(t, np.full(len(t), i), "|", markersize=9, markeredgewidth=1.5, color=colour, clip_on=False)
    ax.set_yticks(range(len(kinds)), [k.replace("fault_", "").replace("broker_", "").replace("_", " ") for k in kinds],
                  fontsize=7)
    ax.set_ylim(len(kinds) - 0.5, -0.5)  # first event at the top
    ax.grid(True, axis="x", alpha=0.3)
    # the left spine off the time axis' start, so an event at 0 s is not under it; its row labels stay where they
    # were (no tick marks, the pad less the offset), so the figure's layout does not move
    ax.spines["left"].set_position(("outward", SPINE_OFFSET_PT))
    tick = ax.yaxis.get_major_ticks()[0]
    ax.tick_params(axis="y", length=0, pad=tick.get_tick_padding() + tick.get_pad() - SPINE_OFFSET_PT)


def run_figure(result, title: str | None = None):
    """Latency over time, partitions by ISR size (and without a leader), and the events of one run."""
    fig, axes = plots.figure(3, width=WIDTH / 3, height=HEIGHT, sharex=True)
    duration = float(result.summary.get("duration_ms") or 1.0)
    lat_ax, isr_ax, ev_ax = axes
    window = operation_window(result)
    _latency(lat_ax, result, duration)
    if window is None:
        _isr(isr_ax, result)
    else:
        _gauges(isr_ax, result)
        _shade(axes, window, result)
        _legend_above(lat_ax, 4)
    _events(ev_ax, result)
    for ax in axes:
        ax.set_xlim(0, duration / 1000.0)
        ax.set_xlabel("simulated time (s)")
        ax.tick_params(labelsize=7)
    lat_ax.grid(True, alpha=0.3)
    s = result.summary
    fig.suptitle(title or f"{s['scenario']} (seed {s['seed']}, {s['replication']})", fontsize=10)
    return fig
