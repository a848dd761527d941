"""Study 9: the control plane's time (issue 21). A broker leading N partitions dies, shuts down cleanly, or held
the controller role (ZooKeeper) when it died; Kafka 0.10 to 4.1. How long the partitions wait for a leader, and
how that grows with N: the controller's per-partition work (docs/controller.md).

N is the partitions the broker led: the cluster's partitions (the swept ``partitions``) divided among its
brokers as the model places them (``sim.controller.placement``).
"""

from __future__ import annotations

import math

import pandas as pd

from ..config.scenario import load_scenario
from ..config.settings import Settings
from ..kit import Aggregates, Table, plots
from ..paths import scenario_path
from ..sim.controller.placement import assign
from .common import choice, fmt, interval_method, mean_and_interval, num, part_overrides, part_settings, seconds, value

VERSIONS = ["0.10", "1.1", "2.8", "3.9", "4.1"]
BROKER = 1  # the broker that dies or shuts down in broker_failure and controlled_shutdown
CONTROLLER = 0  # ZooKeeper's controller at the start (the lowest id)
# part -> (the broker that goes, the measure that answers, its label)
PARTS = {
    "broker_failure": (BROKER, "leader_election_time_ms_max", "death -> the last partition's new leader (s)"),
    "controlled_shutdown": (BROKER, "partition_unavailable_ms_max", "longest wait for a new leader (s)"),
    "controller_failover": (CONTROLLER, "partition_unavailable_ms_max", "longest unavailability (s)"),
}
TITLES = {"broker_failure": "a broker dies", "controlled_shutdown": "controlled shutdown",
          "controller_failover": "the controller's broker dies"}
EXTRA = {"controlled_shutdown": ["operation_ms"]}
STYLES = [("o", "-"), ("s", "-"), ("^", "--"), ("v", ":"), ("D", "-")]  # per version: marker, line  # the shutdown's own duration (request -> its answer)


def led(partitions: int, brokers: int, rf: int, broker: int) -> int:
    """Partitions the broker leads at the start: those whose first (preferred) replica it is."""
    return sum(1 for replicas in assign(int(partitions), rf, brokers) if replicas[0] == broker)


def table(agg: Aggregates, part: str) -> pd.DataFrame:
    """One row per version and N: the part's measure (and extras) in seconds, `led` the partitions the broker
    led, `version` as the spec names it."""
    broker, measure, _ = PARTS[part]
    measures = [measure, "controller_busy_ms", *EXTRA.get(part, [])]
    df = agg.wide(measures, part).copy()
    s = part_settings(agg, part)
    rf = s.topics[0].replication_factor
    df["led"] = [led(n, s.brokers, rf, broker) for n in df["partitions"]]
    df["version"] = df["version"].astype(str)
    for m in measures:
        for c in (m, f"{m}_lo", f"{m}_hi"):
            df[c] = df[c] / 1000.0
    return df.sort_values(["version", "led"], key=lambda c: c.map(_order) if c.name == "version" else c)


def _order(version: str) -> int:
    return VERSIONS.index(version) if version in VERSIONS else len(VERSIONS)


def slopes(agg: Aggregates, part: str) -> dict:
    """Per version: the part's measure's growth per partition led (ms), between the smallest and the largest N
    the grid ran."""
    df = table(agg, part)
    measure = PARTS[part][1]
    out = {}
    for v, g in df.groupby("version"):
        g = g.sort_values("led")
        if len(g) >= 2 and g["led"].iloc[-1] > g["led"].iloc[0]:
            out[v] = (g[measure].iloc[-1] - g[measure].iloc[0]) * 1000.0 / (g["led"].iloc[-1] - g["led"].iloc[0])
    return out


def figure(agg: Aggregates):
    """Per part: the answering measure against the partitions led, one line per version (log-log)."""
    fig, axes = plots.figure(3, 1, width=4.2, height=3.6)
    for ax, part in zip(axes, PARTS):
        df = table(agg, part)
        measure, label = PARTS[part][1], PARTS[part][2]
        for i, v in enumerate(VERSIONS):  # 1.1, 2.8 and 3.9 coincide: each its own marker and dash, to show it
            if v in set(df["version"]):
                marker, dash = STYLES[i % len(STYLES)]
                plots.lines_with_ci(ax, df, "led", measure, "version", order=[v], marker=marker, linestyle=dash,
                                    fixed_color=plots.color(v, i))
        plots.finish(ax, TITLES[part], "partitions the broker led", label, logx=True, logy=True)
    return fig


def part_table(agg: Aggregates, part: str) -> Table:
    df = table(agg, part)
    measure, label = PARTS[part][1], PARTS[part][2]
    shown = df[["version", "led"]].rename(columns={"led": "partitions led"}).copy()
    for m, name in [(measure, label), *[(e, "shutdown (s)") for e in EXTRA.get(part, [])],
                    ("controller_busy_ms", "controller busy (s)")]:
        shown[name] = [mean_and_interval(v, lo, hi) for v, lo, hi in zip(df[m], df[f"{m}_lo"], df[f"{m}_hi"])]
    return Table(shown, [f"Seconds. {interval_method(agg)}"])


def _per_version(df: pd.DataFrame, measure: str, n: int) -> str:
    """'11 s on 0.10, 6.3 s on 1.1, 2.8 and 3.9, 5.3 s on 4.1': versions that give the same number share it."""
    shown = [(fmt(value(df, measure, version=v, led=n)), v) for v in VERSIONS
             if not math.isnan(value(df, measure, version=v, led=n))]
    return _grouped(shown, "s")


def _grouped(shown: list, unit: str) -> str:
    runs: list[tuple[str, list]] = []
    for text, v in shown:
        if runs and runs[-1][0] == text:
            runs[-1][1].append(v)
        else:
            runs.append((text, [v]))
    return ", ".join(f"{text} {unit} on " + (vs[0] if len(vs) == 1 else ", ".join(vs[:-1]) + " and " + vs[-1])
                     for text, vs in runs)


def _common_led(df: pd.DataFrame) -> int:
    """The largest N every version ran."""
    counts = df.groupby("led")["version"].nunique()
    return int(max(counts[counts == counts.max()].index))


def _slopes_text(s: dict) -> str:
    return _grouped([(fmt(s[v]), v) for v in VERSIONS if v in s], "ms")


def settings(agg: Aggregates, part: str, version: str) -> Settings:
    """The settings of a part's runs on one version (its choice's overrides applied)."""
    base = next(p["base"] for p in agg.spec["parts"] if p["name"] == part)
    overrides = {**part_overrides(agg, part), **choice(agg, "version", version)}
    return Settings.of(load_scenario(scenario_path(base)).with_overrides(overrides).to_dict())


def _detection(agg: Aggregates) -> str:
    """The versions' session timeouts (the study sets them alike): '6 s', or each."""
    times = {v: settings(agg, "broker_failure", v).broker.session_timeout_ms for v in VERSIONS}
    if len(set(times.values())) == 1:
        return seconds(next(iter(times.values())))
    return ", ".join(f"{seconds(t)} on {v}" for v, t in times.items())


def answers(agg: Aggregates) -> str:
    """One line per question, each number read from the aggregates."""
    detect = _detection(agg)
    lines = []
    df = table(agg, "broker_failure")
    n = _common_led(df)
    lines.append(f"- A broker leading {fmt(n)} partitions dies (detected after {detect} at most): the last of them "
                 f"has a new leader {_per_version(df, PARTS['broker_failure'][1], n)}; each partition more adds "
                 f"{_slopes_text(slopes(agg, 'broker_failure'))}.")
    df = table(agg, "controlled_shutdown")
    n = _common_led(df)
    lines.append(f"- Its controlled shutdown (leading {fmt(n)}): partitions wait up to "
                 f"{_per_version(df, PARTS['controlled_shutdown'][1], n)} for their new leader; the shutdown takes "
                 f"{_per_version(df, 'operation_ms', n)}.")
    df = table(agg, "controller_failover")
    n = _common_led(df)
    lines.append(f"- The broker holding ZooKeeper's controller role dies (leading {fmt(n)}; KRaft: a broker, the "
                 f"quorum keeps the role): partitions are unavailable up to "
                 f"{_per_version(df, PARTS['controller_failover'][1], n)}; each partition more it led adds "
                 f"{_slopes_text(slopes(agg, 'controller_failover'))} (ZooKeeper: the new controller reads every "
                 f"partition first).")
    return "\n".join(lines)


def headline(agg: Aggregates) -> tuple[dict, str]:
    numbers = {}
    for part, (_, measure, _) in PARTS.items():
        df = table(agg, part)
        for v, n, x in zip(df["version"], df["led"], df[measure]):
            numbers[f"{part}_{v.replace('.', '_')}_{n}_s"] = num(x, 3)
        for v, s in slopes(agg, part).items():
            numbers[f"{part}_{v.replace('.', '_')}_ms_per_partition"] = num(s, 4)
    return numbers, answers(agg).splitlines()[0].lstrip("- ")


def setup_text(agg: Aggregates) -> str:
    s = part_settings(agg, "broker_failure")
    return (f"{s.brokers} brokers, RF {s.topics[0].replication_factor}, {fmt(s.producers[0].rate_per_s)} records/s "
            f"in all (nearly idle partitions); a silent broker is detected after {_detection(agg)}.")
