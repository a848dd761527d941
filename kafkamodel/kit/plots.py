"""Plot helpers shared by the explorer, the studies and the widget panel.

Figures are built with ``matplotlib.figure.Figure`` (never pyplot's global
state) and shown as PNG, so the same code draws in a notebook, in a widget's
output area and in an exported report. Before a figure is rendered,
``place_legends`` moves each legend to a corner of its axes where it covers
no data (lines, markers, bars, labels), or outside the axes when no corner
is free.
"""

from __future__ import annotations

import io
from typing import Iterable

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PathCollection
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, ScalarFormatter
from matplotlib.transforms import Bbox

from .present import number

COLORS = {"isr": "#1f77b4", "quorum": "#ff7f0e", "time": "#2ca02c", "count": "#d62728"}
CYCLE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]
DPI = 96


def figure(ncols: int = 1, nrows: int = 1, width: float = 5.2, height: float = 3.6, **kw):
    """A Figure and its axes (a flat array), sized per panel."""
    fig = Figure(figsize=(width * ncols, height * nrows), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)  # a renderer to measure legends with
    axes = fig.subplots(nrows, ncols, squeeze=False, **kw)
    return fig, axes.ravel()


CORNERS = ("upper right", "upper left", "lower right", "lower left", "center right", "center left", "upper center",
           "lower center")
STEP_PX = 3.0  # data lines are checked every this many pixels


def _densify(xy: np.ndarray) -> np.ndarray:
    """Points along a polyline (display coordinates), at most STEP_PX apart."""
    xy = xy[np.isfinite(xy).all(axis=1)]
    if len(xy) < 2:
        return xy
    out = [xy[:1]]
    for a, b in zip(xy[:-1], xy[1:]):
        n = int(min(np.hypot(*(b - a)) // STEP_PX, 2000)) + 1
        out.append(a + (b - a) * np.linspace(0.0, 1.0, n + 1)[1:, None])
    return np.vstack(out)


def _with_radius(xy: np.ndarray, radius: float) -> np.ndarray:
    return np.column_stack([xy, np.full(len(xy), radius)]) if len(xy) else np.empty((0, 3))


def data_marks(ax, renderer) -> tuple[np.ndarray, list]:
    """What a legend must not cover, in display coordinates: points along lines and markers (x, y, and the
    mark's radius in pixels), and the boxes of bars, filled areas and text labels."""
    px = ax.figure.dpi / 72.0  # pixels per point
    points, boxes = [np.empty((0, 3))], []
    for line in ax.get_lines():
        xy = line.get_transform().transform(np.asarray(line.get_xydata(), dtype=float))
        xy = xy[np.isfinite(xy).all(axis=1)]
        if line.get_linestyle() not in ("None", "", " ", "none"):
            points.append(_with_radius(_densify(xy), line.get_linewidth() * px / 2))
        if line.get_marker() not in (None, "None", "", " ", "none"):
            points.append(_with_radius(xy, line.get_markersize() * px / 2))
    for coll in ax.collections:
        if isinstance(coll, PathCollection):  # scatter markers: one per offset, their size as the radius
            offsets = np.asarray(coll.get_offsets(), dtype=float)
            sizes = coll.get_sizes() if len(coll.get_sizes()) else [0.0]
            points.append(_with_radius(coll.get_offset_transform().transform(offsets), np.sqrt(max(sizes)) * px / 2))
            continue
        for path in coll.get_paths():  # error bars, filled bands: their outlines
            if len(path.vertices):
                points.append(_with_radius(_densify(coll.get_transform().transform(path.vertices)), px))
    for patch in ax.patches:
        if patch.get_visible():
            boxes.append(patch.get_window_extent(renderer))
    for text in ax.texts:
        if text.get_visible() and text.get_text():
            boxes.append(text.get_window_extent(renderer))
    return np.vstack(points), boxes


def covers(box: Bbox, points: np.ndarray, boxes: list) -> bool:
    """Whether `box` (a legend, display coordinates) covers any of the data marks (points with their radius)."""
    if len(points):
        x, y, r = points[:, 0], points[:, 1], points[:, 2]
        inside = (x + r >= box.x0) & (x - r <= box.x1) & (y + r >= box.y0) & (y - r <= box.y1)
        if inside.any():
            return True
    return any(box.overlaps(b) and b.width > 0 and b.height > 0 for b in boxes)


def place_legends(fig: Figure) -> None:
    """Move each axes' legend off the data: where matplotlib's "best" put it if that covers nothing, else the
    first free corner, else just outside the axes (right). Repeated while moving one outside reshapes the rest."""
    legends = [(ax, ax.get_legend()) for ax in fig.axes if ax.get_legend() is not None]
    if not legends:
        return
    if not isinstance(fig.canvas, FigureCanvasAgg):
        FigureCanvasAgg(fig)
    for _ in range(3):
        fig.draw_without_rendering()  # the layout, as it will be drawn
        renderer = fig.canvas.get_renderer()
        moved_out = False
        for ax, legend in legends:
            if getattr(legend, "_outside", False):
                continue
            points, boxes = data_marks(ax, renderer)
            if not covers(legend.get_window_extent(renderer), points, boxes):
                continue
            for loc in CORNERS:
                legend.set_loc(loc)
                if not covers(legend.get_window_extent(renderer), points, boxes):
                    break
            else:
                legend.set_loc("upper left")
                legend.set_bbox_to_anchor((1.02, 1.0), transform=ax.transAxes)
                legend._outside = moved_out = True
        if not moved_out:
            return


def png(fig: Figure) -> bytes:
    place_legends(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    return buf.getvalue()


def image(fig: Figure):
    """The figure as an embedded PNG (IPython's Image), its titles as alt text."""
    from IPython.display import Image

    titles = [t for t in [fig.get_suptitle(), *(ax.get_title() for ax in fig.axes)] if t]
    return Image(data=png(fig), format="png", alt="; ".join(titles) or "figure")


def show(fig: Figure) -> None:
    """Display a figure as an embedded PNG (notebook, widget output or report alike), its titles as alt text."""
    from IPython.display import display

    display(image(fig))


def color(label, i: int = 0) -> str:
    return COLORS.get(str(label), CYCLE[i % len(CYCLE)])


def _yerr(df: pd.DataFrame, y: str, lo: str, hi: str) -> np.ndarray:
    lower = (df[y] - df[lo]).to_numpy(dtype=float)
    upper = (df[hi] - df[y]).to_numpy(dtype=float)
    return np.nan_to_num(np.vstack([lower, upper]), nan=0.0).clip(min=0.0)


def lines_with_ci(ax, df: pd.DataFrame, x: str, y: str, series: str | None = None, *, lo: str | None = None,
                  hi: str | None = None, label: str = "{}", marker: str = "o", linestyle: str = "-", order=None,
                  fixed_color: str | None = None) -> None:
    """Means joined by lines with 95% CI error bars, one line per value of `series`."""
    lo, hi = lo or f"{y}_lo", hi or f"{y}_hi"
    groups = [(None, df)] if series is None else [(k, df[df[series] == k]) for k in (order or sorted(df[series].dropna().unique(), key=str))]
    for i, (key, g) in enumerate(groups):
        g = g.sort_values(x)
        if g.empty:
            continue
        ax.errorbar(g[x], g[y], yerr=_yerr(g, y, lo, hi) if lo in g and hi in g else None, marker=marker,
                    linestyle=linestyle, capsize=3, color=fixed_color or color(key, i), label=label.format(key))


def grouped_bars(ax, df: pd.DataFrame, group: str, series: str, y: str, *, lo: str | None = None,
                 hi: str | None = None, series_order: Iterable | None = None, group_order: Iterable | None = None,
                 label: str = "{}", values: bool = False) -> None:
    """Bars of `y` per `group`, one bar per `series` value side by side, with whiskers (the interval over seeds);
    `values`: each bar's value written above it (what a linear axis cannot show of a small bar beside a tall one)."""
    lo, hi = lo or f"{y}_lo", hi or f"{y}_hi"
    groups = list(group_order or sorted(df[group].unique(), key=str))
    keys = list(series_order or sorted(df[series].unique(), key=str))
    width = 0.8 / max(len(keys), 1)
    for i, key in enumerate(keys):
        g = df[df[series] == key].set_index(group).reindex(groups)
        xs = np.arange(len(groups)) + (i - (len(keys) - 1) / 2) * width
        ax.bar(xs, g[y].fillna(0), width, color=color(key, i), label=label.format(key),
               yerr=_yerr(g, y, lo, hi) if lo in g and hi in g else None, capsize=3)
        if values:
            tops = g[hi] if hi in g else g[y]
            for x, v, top in zip(xs, g[y], tops.fillna(g[y])):
                if pd.notna(v):
                    ax.annotate(number(v), (x, top), xytext=(0, 2), textcoords="offset points", ha="center",
                                va="bottom", fontsize=8)
    ax.set_xticks(np.arange(len(groups)), [str(g) for g in groups])


def finish(ax, title: str, xlabel: str, ylabel: str, *, logx: bool = False, logy: bool = False, legend: bool = True) -> None:
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if logx:
        ax.set_xscale("log")
        plain_log_labels(ax.xaxis)
    if logy:
        ax.set_yscale("log")
        plain_log_labels(ax.yaxis)
    for axis in (ax.xaxis, ax.yaxis):  # linear axes: numbers as in the tables (25,000, not 25000)
        if axis.get_scale() == "linear" and isinstance(axis.get_major_formatter(), ScalarFormatter):
            axis.set_major_formatter(FuncFormatter(lambda v, _pos: number(v, 3)))
    ax.grid(True, alpha=0.3)
    if legend and ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)  # place_legends moves it off the data when the figure is drawn


def plain_log_labels(axis) -> None:
    """Log-axis labels as plain numbers (1,000 not 10³; 5 not 5×10⁰); minor ticks 2 and 5 labelled within about a
    decade."""
    def minor(v, _pos):  # within about a decade, label 2 and 5 times a power of ten (more would collide)
        lo, hi = sorted(axis.get_view_interval())
        lead = round(v / 10 ** np.floor(np.log10(v))) if v > 0 else 0
        return number(v, 2) if lo > 0 and np.log10(hi / lo) <= 1.2 and lead in (2, 5) else ""

    axis.set_major_formatter(FuncFormatter(lambda v, _pos: number(v, 2)))
    axis.set_minor_formatter(FuncFormatter(minor))


def timeline(ax, df: pd.DataFrame, y: str, series: str, *, label: str = "{}", order=None) -> None:
    """A per-bin time series (seconds on x), one line per value of `series`."""
    for i, key in enumerate(order or sorted(df[series].unique(), key=str)):
        g = df[df[series] == key].sort_values("time_ms")
        ax.plot(g["time_ms"] / 1000.0, g[y], color=color(key, i), label=label.format(key), linewidth=1.2)
