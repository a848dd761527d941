"""Plot helpers shared by the explorer, the studies and the widget panel.

Figures are built with ``matplotlib.figure.Figure`` (never pyplot's global
state) and shown as PNG, so the same code draws in a notebook, in a widget's
output area and in an exported report.
"""

from __future__ import annotations

import io
from typing import Iterable

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

COLORS = {"isr": "#1f77b4", "quorum": "#ff7f0e", "time": "#2ca02c", "count": "#d62728"}
CYCLE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]
DPI = 96


def figure(ncols: int = 1, nrows: int = 1, width: float = 5.2, height: float = 3.6, **kw):
    """A Figure and its axes (a flat array), sized per panel."""
    fig = Figure(figsize=(width * ncols, height * nrows), dpi=DPI, layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False, **kw)
    return fig, axes.ravel()


def png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    return buf.getvalue()


def show(fig: Figure) -> None:
    """Display a figure as an embedded PNG (notebook, widget output or report alike), its titles as alt text."""
    from IPython.display import Image, display

    titles = [t for t in [fig.get_suptitle(), *(ax.get_title() for ax in fig.axes)] if t]
    display(Image(data=png(fig), format="png", alt="; ".join(titles) or "figure"))


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
                 label: str = "{}") -> None:
    """Bars of `y` per `group`, one bar per `series` value side by side, with CI whiskers."""
    lo, hi = lo or f"{y}_lo", hi or f"{y}_hi"
    groups = list(group_order or sorted(df[group].unique(), key=str))
    keys = list(series_order or sorted(df[series].unique(), key=str))
    width = 0.8 / max(len(keys), 1)
    for i, key in enumerate(keys):
        g = df[df[series] == key].set_index(group).reindex(groups)
        xs = np.arange(len(groups)) + (i - (len(keys) - 1) / 2) * width
        ax.bar(xs, g[y].fillna(0), width, color=color(key, i), label=label.format(key),
               yerr=_yerr(g, y, lo, hi) if lo in g and hi in g else None, capsize=3)
    ax.set_xticks(np.arange(len(groups)), [str(g) for g in groups])


def finish(ax, title: str, xlabel: str, ylabel: str, *, logx: bool = False, logy: bool = False, legend: bool = True) -> None:
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.grid(True, alpha=0.3)
    if legend and ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)


def timeline(ax, df: pd.DataFrame, y: str, series: str, *, label: str = "{}", order=None) -> None:
    """A per-bin time series (seconds on x), one line per value of `series`."""
    for i, key in enumerate(order or sorted(df[series].unique(), key=str)):
        g = df[df[series] == key].sort_values("time_ms")
        ax.plot(g["time_ms"] / 1000.0, g[y], color=color(key, i), label=label.format(key), linewidth=1.2)
