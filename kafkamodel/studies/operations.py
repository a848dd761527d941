"""Study 8: operations, the maintenance planner. A rolling restart by gate and shutdown, a reassignment by throttle
over a finite NIC, a preferred-leader election (or none) onto a lagging replica: how long each takes and what it
costs while it runs (the produce latency of the records sent during the operations: operation_produce_*)."""

from __future__ import annotations

import math

import pandas as pd

from ..config.settings import Settings
from ..kit import Aggregates, Table, number, plots
from ..sim.controller.placement import assign
from .common import choice, fmt, interval_method, mean_and_interval, num, part_scenario, part_settings, seconds, value

P99 = "produce_latency_ms_p99"
P999 = "produce_latency_ms_p999"
DURING = "operation_produce_p99_ms"  # the records sent from the first operation's start to the last one's end
ROLLING = ["operation_ms", "under_min_isr_partition_ms", "offline_partition_ms", DURING, "acked_records_lost",
           "not_enough_replicas_errors", "operation_produce_errors"]
REASSIGN = ["operation_ms", "reassignment_bytes", "throttled_bytes", "under_replicated_partition_ms", DURING, P99]
PREFERRED = [P99, P999, "produce_latency_ms_p50", "leader_elections"]
DURING_P999, DURING_MAX = "operation_produce_p999_ms", "operation_produce_max_ms"
# a rolling restart by Kafka version (3.7: KIP-951's leader hints, KIP-580's backoff), and a larger one
VERSIONS = [DURING, DURING_P999, DURING_MAX, "producer_metadata_refreshes", "producer_leader_hints", "operation_ms"]
LARGE = ["operation_ms", "broker_catch_up_ms_max", "broker_recovery_ms_max", "under_min_isr_partition_ms", DURING,
         DURING_P999, DURING_MAX]
ELECTIONS = {"preferred": "preferred-leader election", "none": "no election"}
GATES = {"no_under_replicated": "no under-replicated partitions", "full_isr_5s": "full ISR for 5 s",
         "wait_0s": "no wait"}
SHUTDOWNS = {"controlled": "controlled shutdown", "uncontrolled": "controlled.shutdown.enable=false"}
LABELS = {"operation_ms": "duration (s)", "under_min_isr_partition_ms": "partition-s under min ISR",
          "offline_partition_ms": "partition-s offline", P99: "produce p99 (ms)", "acked_records_lost": "acked lost",
          "not_enough_replicas_errors": "NOT_ENOUGH_REPLICAS", "reassignment_bytes": "bytes moved",
          "under_replicated_partition_ms": "partition-s under-replicated", "produce_latency_ms_p50": "produce p50 (ms)",
          "leader_elections": "leader elections", DURING: "produce p99 during (ms)", P999: "produce p99.9 (ms)",
          "operation_produce_errors": "produce errors during", "throttled_bytes": "bytes throttled",
          DURING_P999: "produce p99.9 during (ms)", DURING_MAX: "produce max during (ms)",
          "producer_metadata_refreshes": "metadata refreshes", "producer_leader_hints": "leader hints (KIP-951)",
          "broker_catch_up_ms_max": "slowest catch-up (ms)", "broker_recovery_ms_max": "longest log recovery (ms)"}
SECONDS = ("operation_ms", "under_min_isr_partition_ms", "offline_partition_ms", "under_replicated_partition_ms")


def _scaled(df: pd.DataFrame, measures: list[str]) -> pd.DataFrame:
    df = df.copy()
    for m in measures:
        if m in SECONDS:
            for c in (m, f"{m}_lo", f"{m}_hi"):
                df[c] = pd.to_numeric(df[c], errors="coerce") / 1000.0  # null: unfinished (operation_ms)
    return df


def rolling(agg: Aggregates) -> pd.DataFrame:
    """Per gate and shutdown: duration (s), partition-seconds under min ISR and offline, p99, losses, refusals."""
    return _scaled(agg.wide(ROLLING, "rolling_restart"), ROLLING)


def reassign(agg: Aggregates) -> pd.DataFrame:
    """Per throttle: duration (s), bytes moved, partition-seconds under-replicated, p99; `finished`: the move ended
    before the run did (else operation_ms is null: no duration)."""
    df = _scaled(agg.wide(REASSIGN, "reassign"), REASSIGN)
    df["finished"] = df["operation_ms"].notna()
    df["throttle_bps"] = [_throttle(agg, t) for t in df["throttle"]]
    return df


def _reassign_at_ms(agg: Aggregates) -> float:
    ops = choice(agg, "throttle", "none").get("operations") or [{"at.ms": 0}]
    return float(ops[0]["at.ms"])


def _throttle(agg: Aggregates, name) -> float:
    ops = choice(agg, "throttle", name).get("operations") or [{}]
    t = ops[0].get("throttle")
    return math.inf if t is None else float(t)


def ingress_bps(agg: Aggregates) -> float:
    """Bytes/s into one partition of the reassign part: records/s per partition x a v2 record of record.size.bytes
    (at least 6 bytes of framing each) -- a lower bound, the batches' headers aside."""
    s = part_settings(agg, "reassign")
    p = s.producers[0]
    partitions = s.topics[0].partitions
    return p.rate_per_s / partitions * (p.record_size_bytes + 6)


def preferred(agg: Aggregates) -> pd.DataFrame:
    """Per lag and election: the run's produce p99, p99.9 and p50 (the election is instantaneous, so its cost is read
    over the run against the same run without it), leader elections."""
    return agg.wide(PREFERRED, "preferred_leader")


def _table(df: pd.DataFrame, keys: list[str], measures: list[str], note: str) -> Table:
    shown = df[keys].copy()
    for m in measures:
        shown[LABELS[m]] = [mean_and_interval(v, lo, hi) for v, lo, hi in zip(df[m], df[f"{m}_lo"], df[f"{m}_hi"])]
    return Table(shown, [note])


def rolling_table(agg: Aggregates) -> Table:
    df = rolling(agg)
    return _table(df.sort_values(["gate", "shutdown"]), ["gate", "shutdown"], ROLLING,
                  f"Means over seeds, their interval in brackets. {interval_method(agg)}")


def reassign_table(agg: Aggregates) -> Table:
    df = reassign(agg).sort_values("throttle_bps")
    t = _table(df, ["throttle", "finished"], REASSIGN,
               f"An unfinished move has no duration (operation_ms is null). Means over seeds. {interval_method(agg)}")
    return t


def preferred_table(agg: Aggregates) -> Table:
    df = preferred(agg).sort_values(["lag", "election"])
    return _table(df, ["lag", "election"], PREFERRED, f"Over the whole run (20 s). Means over seeds. {interval_method(agg)}")


def rolling_figure(agg: Aggregates):
    """Duration and partition-seconds under min ISR per gate, controlled vs not."""
    df = rolling(agg)
    fig, axes = plots.figure(2, 1, width=5.6, height=3.4)
    gates = [g for g in GATES if g in set(df["gate"])]
    for ax, m in zip(axes, ("operation_ms", "under_min_isr_partition_ms")):
        plots.grouped_bars(ax, df, "gate", "shutdown", m, series_order=list(SHUTDOWNS), group_order=gates,
                           values=True)
        ax.set_xticks(range(len(gates)), [GATES[g] for g in gates], fontsize=8)
        ax.set_ylim(0, max(ax.get_ylim()[1], 1e-3) * 1.15)
        plots.finish(ax, f"rolling restart: {LABELS[m]}", "gate before the next broker", LABELS[m])
    return fig


def reassign_figure(agg: Aggregates):
    """Duration and the produce p99 during the move, per throttle."""
    df = reassign(agg).sort_values("throttle_bps").assign(series="reassign")
    run_s = part_settings(agg, "reassign").duration_ms / 1000.0
    for c in ("operation_ms", "operation_ms_lo", "operation_ms_hi"):  # an unfinished move: drawn to the run's end
        df[c] = df[c].fillna(run_s - _reassign_at_ms(agg) / 1000.0)
    order = list(df["throttle"])
    fig, axes = plots.figure(2, 1, width=5.6, height=3.4)
    for ax, m in zip(axes, ("operation_ms", DURING)):
        plots.grouped_bars(ax, df, "throttle", "series", m, group_order=order, values=True)
        finished = dict(zip(df["throttle"], df["finished"]))
        ax.set_xticks(range(len(order)), [("unthrottled" if t == "none" else f"{fmt(float(t))} B/s")
                                          + ("" if finished[t] else "\n(never finishes)") for t in order], fontsize=8)
        ax.set_ylim(0, max(ax.get_ylim()[1], 1e-3) * 1.15)
        plots.finish(ax, f"reassignment: {LABELS[m]}", "--throttle", LABELS[m], legend=False)
    return fig


def headline(agg: Aggregates) -> tuple[dict, str]:
    r, m, p = rolling(agg), reassign(agg), preferred(agg)
    numbers = {}
    for g in GATES:
        for s in SHUTDOWNS:
            numbers[f"roll_{g}_{s}_s"] = num(value(r, "operation_ms", gate=g, shutdown=s), 1)
            numbers[f"roll_{g}_{s}_under_min_isr_s"] = num(value(r, "under_min_isr_partition_ms", gate=g, shutdown=s), 2)
            numbers[f"roll_{g}_{s}_errors"] = num(value(r, "operation_produce_errors", gate=g, shutdown=s), 1)
    for t in m["throttle"]:
        numbers[f"reassign_{t}_s"] = num(value(m, "operation_ms", throttle=t), 1)
        numbers[f"reassign_{t}_finished"] = bool(value(m, "finished", throttle=t))
        numbers[f"reassign_{t}_p99_during_ms"] = num(value(m, DURING, throttle=t), 1)
        numbers[f"reassign_{t}_p99_ms"] = num(value(m, P99, throttle=t), 1)
    for lag in sorted(set(p["lag"])):
        for e in ELECTIONS:
            numbers[f"preferred_lag_{lag}_{e}_p99_ms"] = num(value(p, P99, lag=lag, election=e), 1)
            numbers[f"preferred_lag_{lag}_{e}_p999_ms"] = num(value(p, P999, lag=lag, election=e), 1)
    v = _scaled(agg.wide(VERSIONS, "roll_versions"), VERSIONS)
    big = _scaled(agg.wide(LARGE, "roll_large"), LARGE)
    for x in _choices(agg, "version"):
        key = x.replace(".", "_")
        for m, name in ((DURING, "p99"), (DURING_P999, "p999"), (DURING_MAX, "max")):
            numbers[f"roll_versions_{key}_{name}_ms"] = num(value(v, m, version=x), 1)
            numbers[f"roll_large_{key}_{name}_ms"] = num(value(big, m, version=x), 1)
        numbers[f"roll_versions_{key}_refreshes"] = num(value(v, "producer_metadata_refreshes", version=x), 1)
        numbers[f"roll_versions_{key}_hints"] = num(value(v, "producer_leader_hints", version=x), 1)
        numbers[f"roll_large_{key}_s"] = num(value(big, "operation_ms", version=x), 1)
        numbers[f"roll_large_{key}_catch_up_ms"] = num(value(big, "broker_catch_up_ms_max", version=x), 1)
        numbers[f"roll_large_{key}_under_min_isr_s"] = num(value(big, "under_min_isr_partition_ms", version=x), 2)
    return numbers, answers(agg).splitlines()[0].lstrip("- ")


def answers(agg: Aggregates) -> str:
    """One line per question, each number read from the aggregates."""
    r, m, p = rolling(agg), reassign(agg), preferred(agg)
    safe = value(r, "operation_ms", gate="no_under_replicated", shutdown="controlled")
    held = value(r, "operation_ms", gate="full_isr_5s", shutdown="controlled")
    rushed = value(r, "operation_ms", gate="wait_0s", shutdown="controlled")
    rushed_exposure = value(r, "under_min_isr_partition_ms", gate="wait_0s", shutdown="controlled")
    safe_exposure = value(r, "under_min_isr_partition_ms", gate="no_under_replicated", shutdown="controlled")
    p99_c = value(r, DURING, gate="no_under_replicated", shutdown="controlled")
    p99_u = value(r, DURING, gate="no_under_replicated", shutdown="uncontrolled")
    brokers = part_settings(agg, "rolling_restart").brokers
    rushed_uncontrolled = value(r, "under_min_isr_partition_ms", gate="wait_0s", shutdown="uncontrolled")
    refused = value(r, "not_enough_replicas_errors", gate="wait_0s", shutdown="uncontrolled")
    lines = [f"- Rolling {brokers} brokers gated on no under-replicated partitions: {fmt(safe)} s, "
             f"{fmt(safe_exposure)} partition-s under min ISR; no wait: {fmt(rushed)} s, "
             f"{fmt(rushed_exposure)} partition-s under min ISR with controlled shutdown, {fmt(rushed_uncontrolled)} "
             f"without ({fmt(refused)} NOT_ENOUGH_REPLICAS refusals per roll); full ISR for 5 s: {fmt(held)} s."]
    lines.append(f"- Controlled shutdown vs not (same gate): produce p99 during the roll {fmt(p99_c)} ms vs {fmt(p99_u)} ms, "
                 f"{fmt(value(r, 'offline_partition_ms', gate='no_under_replicated', shutdown='uncontrolled'))} "
                 f"partition-s offline without it.")
    ingress = ingress_bps(agg)
    mbps = part_settings(agg, "reassign").bandwidth_mbps
    done = m[m["finished"]].sort_values("throttle_bps", ascending=False)
    never = m[~m["finished"]].sort_values("throttle_bps")
    steady = m[P99].min()
    moves = "; ".join(f"{'unthrottled' if t == 'none' else fmt(float(t)) + ' B/s'}: {fmt(s)} s, p99 {fmt(q)} ms"
                      for t, s, q in zip(done["throttle"], done["operation_ms"], done[DURING]))
    line = (f"- Reassigning one partition ({fmt(done['reassignment_bytes'].min() / 1e6)}–"
            f"{fmt(done['reassignment_bytes'].max() / 1e6)} MB moved) over a "
            f"{fmt(mbps)} Mbps NIC, produce p99 during the move: {moves} (the whole run's p99: {fmt(steady)} ms "
            f"or more)")
    if len(never):
        slowest = never.iloc[0]
        line += (f"; at {fmt(float(slowest['throttle']))} B/s, below the partition's ingress (at least "
                 f"{fmt(ingress)} B/s), the new replica never catches up and the move never finishes")
    lines.append(line + ".")
    slow, calm = _lags(agg)
    factor = number(_slowest(agg)[1]["factor"])
    lines.append(
        f"- A preferred-leader election onto a replica whose fetches are {factor}x slower: produce p99 over the run "
        f"{fmt(value(p, P99, lag=slow, election='preferred'))} ms with it, "
        f"{fmt(value(p, P99, lag=slow, election='none'))} ms "
        f"without (the slow replica, in the ISR, holds every acks=all write back as a follower too; "
        f"{fmt(value(p, P99, lag=calm, election='none'))} ms when it is not slow); the election adds a transient: p99.9 "
        f"{fmt(value(p, P999, lag=slow, election='preferred'))} ms vs "
        f"{fmt(value(p, P999, lag=slow, election='none'))} ms "
        f"({fmt(value(p, P999, lag=calm, election='preferred'))} vs {fmt(value(p, P999, lag=calm, election='none'))} ms "
        f"onto a replica that is not slow).")
    lines.extend(_roll_lines(agg))
    return "\n".join(lines)


def _roll_lines(agg: Aggregates) -> list[str]:
    """The version comparison's and the larger roll's lines (issue 35)."""
    v = _scaled(agg.wide(VERSIONS, "roll_versions"), VERSIONS)
    versions = sorted(_choices(agg, "version"), key=lambda x: [int(n) for n in x.split(".")])
    tails = "; ".join(f"{x}: p99 {fmt(value(v, DURING, version=x))} ms, p99.9 {fmt(value(v, DURING_P999, version=x))} "
                      f"ms, max {fmt(value(v, DURING_MAX, version=x))} ms, {fmt(value(v, 'producer_metadata_refreshes', version=x))} "
                      f"metadata refreshes, {fmt(value(v, 'producer_leader_hints', version=x))} leader hints"
                      for x in versions)
    big = _scaled(agg.wide(LARGE, "roll_large"), LARGE)
    s = part_scenario(agg, "roll_large", version=versions[-1])
    rolls = "; ".join(f"{x}: {fmt(value(big, 'operation_ms', version=x))} s, slowest catch-up "
                      f"{fmt(value(big, 'broker_catch_up_ms_max', version=x))} ms, log recovery "
                      f"{fmt(value(big, 'broker_recovery_ms_max', version=x))} ms, "
                      f"{fmt(value(big, 'under_min_isr_partition_ms', version=x) / 60.0)} partition-minutes under min "
                      f"ISR, produce p99 / p99.9 / max during {fmt(value(big, DURING, version=x))} / "
                      f"{fmt(value(big, DURING_P999, version=x))} / {fmt(value(big, DURING_MAX, version=x))} ms"
                      for x in versions)
    return [f"- The same rolling restart by version (leaders handed back after each restart), produce tail during the "
            f"roll: {tails}.",
            f"- Rolling {s['brokers']} brokers with {number(s['topics'][0]['partitions'])} partitions gated on no "
            f"under-replicated partitions: {rolls}."]


def _choices(agg: Aggregates, param: str) -> dict:
    """The named choices of a swept `param`, in the spec's order."""
    return agg.spec["params"][param]["choices"]


def _lags(agg: Aggregates) -> tuple[str, str]:
    """The preferred-leader part's slowest lag choice and its calmest (the one where the replica is not slow)."""
    lags = _choices(agg, "lag")
    return max(lags, key=float), min(lags, key=float)


def _slowest(agg: Aggregates) -> tuple[dict, dict]:
    """The preferred-leader part's scenario at its slowest lag, with the election, and its `slow` fault."""
    s = part_scenario(agg, "preferred_leader", election="preferred", lag=_lags(agg)[0])
    return s, next(f for f in s["faults"] if f["kind"] == "slow")


def rolling_intro(agg: Aggregates) -> str:
    """The rolling-restart section's text, from the part's settings."""
    s = part_scenario(agg, "rolling_restart", gate=next(iter(_choices(agg, "gate"))))  # (each gate: one downtime)
    op = s["operations"][0]
    return (f"{s['brokers']} brokers restarted one after another (each down for {seconds(op['downtime.ms'])}, "
            "`downtime.ms`), behind each gate, with and without `controlled.shutdown.enable`. Bars: mean over seeds; "
            "whiskers: the interval over seeds. In the table the produce p99 and errors are those of the records and "
            "batches sent during the roll.")


def reassign_intro(agg: Aggregates) -> str:
    """The reassignment section's text: which partition moves from where to where, over what NIC."""
    s = part_scenario(agg, "reassign", throttle="none")
    op = s["operations"][0]
    topic = next(t for t in s["topics"] if t["name"] == op["topic"])
    settings = Settings.of(s)
    before = assign(topic["partitions"], topic["replication.factor"], settings.brokers, settings.racks)
    moves = "; ".join(f"partition {p} moves from brokers {','.join(map(str, before[p]))} to {','.join(map(str, r))}"
                      for p, r in zip(op["partitions"], op["replicas"]))
    mbps = s["network"].get("bandwidth.mbps")
    nic = (f"Each broker's NIC is {number(mbps)} Mbps (`network.bandwidth.mbps`): unthrottled, the new replica fetches "
           "the partition as fast as the leader's NIC sends it, and the other followers' fetches (hence every acks=all "
           "write to that leader) wait behind it. " if mbps else "The NIC is unlimited (`network.bandwidth.mbps`). ")
    return (f"{moves[0].upper()}{moves[1:]} at {seconds(op['at.ms'])} while the producer keeps writing; `--throttle` "
            "sets `leader.replication.throttled.rate` and `follower.replication.throttled.rate`. " + nic +
            "The p99 is over the records sent during the move (`operation_produce_p99_ms`). A throttle below the "
            "partition's ingress never lets the new replica catch up: its duration is the rest of the run.")


def preferred_intro(agg: Aggregates) -> str:
    """The preferred-leader section's text: which broker bounces, when it is slowed and by how much."""
    s, slow = _slowest(agg)
    ops = {o["kind"]: o for o in s["operations"]}
    return (f"Broker {ops['controlled_shutdown']['broker']} is shut down (controlled) at "
            f"{seconds(ops['controlled_shutdown']['at.ms'])} and restarted at {seconds(ops['restart']['at.ms'])}; at "
            f"{seconds(ops['preferred_leader_election']['at.ms'])} `kafka-leader-election --election-type PREFERRED` "
            "hands its partitions back to it, or no election runs, while its fetches are "
            f"{number(slow['factor'])}x slower (the `slow` fault, from {seconds(slow['at.ms'])}) or not. The election "
            "itself takes milliseconds, so its cost is read over the whole run against the same run without it.")


# ---- a rolling restart by version, and a larger one (issue 35) ---------------------------------------------------------

def versions_table(agg: Aggregates) -> Table:
    """The same rolling restart (leaders handed back to each restarted broker by the automatic preferred-leader
    election) per Kafka version: the produce tail during the roll and how the producers found the moved leaders."""
    df = agg.wide(VERSIONS, "roll_versions").sort_values("version")
    df = _scaled(df, VERSIONS)
    return _table(df, ["version"], VERSIONS, f"Means over seeds, their interval in brackets. {interval_method(agg)}")


def large_table(agg: Aggregates) -> Table:
    """The larger rolling restart per version: the roll's duration, the slowest broker's catch-up, its log recovery
    (none: controlled shutdowns are clean), the exposure and the produce tail during the roll."""
    df = _scaled(agg.wide(LARGE, "roll_large").sort_values("version"), LARGE)
    return _table(df, ["version"], LARGE, f"Means over seeds, their interval in brackets. {interval_method(agg)}")


def roll_versions_intro(agg: Aggregates) -> str:
    s = part_scenario(agg, "roll_versions", version=next(iter(_choices(agg, "version"))))
    op = s["operations"][0]
    every = s["broker"]["leader.imbalance.check.interval.seconds"]
    return (f"{s['brokers']} brokers rolled (controlled shutdown, each down {seconds(op['downtime.ms'])}, gated on no "
            f"under-replicated partitions) with `leader.imbalance.check.interval.seconds` {number(every)}, so the "
            "automatic preferred-leader election hands each restarted broker its leaderships back while the old "
            "leaders stay up. Before 3.7 a producer told NOT_LEADER_OR_FOLLOWER waits `retry.backoff.ms` and asks a "
            "broker for metadata; from 3.7 the answer names the new leader (KIP-951) and resends back off "
            "exponentially (KIP-580, up to `retry.backoff.max.ms`). The batches in flight to a broker that stops fail "
            f"with its closed connections in every version. The load comes from {len(s['producers'])} producers: a "
            "single one stalls itself for `replica.fetch.wait.max.ms` when its resend to a new leader holds its "
            "connection before the other follower fetches the partition. docs/restarts.md.")


def roll_large_intro(agg: Aggregates) -> str:
    s = part_scenario(agg, "roll_large", version=next(iter(_choices(agg, "version"))))
    op, t = s["operations"][0], s["topics"][0]
    clients = sum(p.get("instances", 1) for p in s["producers"])
    rate = sum(p["rate.per.s"] * p.get("instances", 1) for p in s["producers"])
    return (f"A production-sized roll: {s['brokers']} brokers, {number(t['partitions'])} partitions of RF "
            f"{t['replication.factor']}, {number(rate)} records/s from {clients} producers, each broker down "
            f"{seconds(op['downtime.ms'])} and gated on no under-replicated partitions. The load is light for a "
            "cluster this size, so that a point runs in seconds: the model's cost grows with the batches, and a "
            "production rate (1.8 million records/s over as many partitions) takes about 25 CPU-seconds per "
            "simulated second here (docs/performance.md), too long for the study's sweep; run it as a scenario.")
