"""Study 4: delivery semantics. Offset commit policies under consumer crash schedules; the idempotent producer.

A consumer group's records are *lost* when they sit below its committed
offset and were never processed, *duplicated* when processed more than once
(``kafkamodel.sim.results.result``); *log duplicates* are records the producer's resends
left twice in a partition's log. Latency here is a record's end to end:
from the producer's send to the first time the group finished processing it.
"""

from __future__ import annotations

import pandas as pd

from ..config.settings import LeaderTarget
from ..kit import Aggregates, Table, plots
from .common import choice, fmt, num, part_settings, seconds, value

POLICIES = ["auto", "before_processing", "after_processing", "atomic"]
POLICY_LABELS = {"auto": "auto commit", "before_processing": "commit → process",
                 "after_processing": "process → commit", "atomic": "atomic output + offset"}
# what Kafka documents for each policy (a synchronous poll loop: auto commit only commits what earlier polls returned)
PROMISES = {"auto": "at least once", "before_processing": "at most once", "after_processing": "at least once",
            "atomic": "exactly once"}
SCHEDULES = ["none", "leave_join", "crash", "crash_rejoin", "repeated"]
SCHEDULE_LABELS = {"none": "no fault", "leave_join": "leave + join", "crash": "crash",
                   "crash_rejoin": "crash + rejoin", "repeated": "3 crashes"}
CRASHES, RETRIES = "consumer_crashes", "producer_retries"
LEGEND = {p: f"{POLICY_LABELS[p]} ({PROMISES[p]})" for p in POLICIES}
LOST, DUPS, LOG_DUPS = "consumed_lost", "consumed_duplicates", "records_duplicated"


def _group_measure(agg: Aggregates, key: str) -> str:
    """The per-group summary measure `GROUP.key` (the delivery-* scenarios have one group)."""
    names = sorted(m for m in set(agg.stats["measure"]) if m.endswith(f".{key}"))
    return names[0] if names else key


def _latency_measures(agg: Aggregates) -> tuple[str, str]:
    return _group_measure(agg, "consume_e2e_latency_ms_p50"), _group_measure(agg, "consume_e2e_latency_ms_p99")


def _parts(agg: Aggregates) -> set:
    return set(agg.configs["part"])


def _fault(f: dict) -> str:
    """One consumer fault in words: 'member 0 crashes at 10.6 s, restarting 1 s later'."""
    at = seconds(f["at.ms"])
    if f["kind"] == "consumer_crash":
        back = f", restarting {seconds(f['duration.ms'])} later" if f.get("duration.ms") else ", for good"
        return f"member {f['member']} crashes at {at}{back}"
    if f["kind"] == "consumer_leave":
        return f"member {f['member']} closes (LeaveGroup) at {at}"
    if f["kind"] == "consumer_join":
        return f"a new member joins at {at}"
    return f"{f['kind']} at {at}"


def _last_burst(burst, at_ms: float) -> float:
    """When the last of a producer's periodic bursts before `at_ms` went out."""
    return burst.start_ms + ((at_ms - burst.start_ms) // burst.every_ms) * burst.every_ms


def setup_text(agg: Aggregates) -> str:
    """Markdown: the group, its topic and its load, and where the crash falls, read from the crash part's settings."""
    s = part_settings(agg, CRASHES)
    c, p = s.consumers[0], s.producers[0]
    partitions = next(x.partitions for x in s.topics if x.name == c.topic)
    load = f"{fmt(p.rate_per_s)} records/s"
    if p.burst is not None:
        load += f" plus a burst of {fmt(p.burst.records)} every {seconds(p.burst.every_ms)}"
    crash = next(f for f in choice(agg, "schedule", "crash").get("faults") or [] if f["kind"] == "consumer_crash")
    after = (f"{seconds(crash['at.ms'] - _last_burst(p.burst, crash['at.ms']))} after a burst" if p.burst is not None
             else f"at {seconds(crash['at.ms'])}")
    return (f"Above: group `{c.group}` ({c.members} members, {fmt(c.processing_ms)} ms per record, polls of up to "
            f"{fmt(c.max_poll_records)}) reads a topic of {partitions} partitions fed {load}. *Lost*: in the log below "
            f"the group's committed offset and never processed (the group will not come back for it). *Processed "
            f"twice*: processed more than once, counted per record. A crash {after} finds member {crash['member']} in "
            f"the middle of a poll: what it processed of that poll is done, the rest is not. The producer is "
            f"{'idempotent' if p.enable_idempotence else 'not idempotent'} and no broker fails here.")


def policies_text(agg: Aggregates) -> str:
    """Markdown: what each commit policy does, with the group's auto.commit.interval.ms from its settings."""
    interval = part_settings(agg, CRASHES).consumers[0].auto_commit_interval_ms
    return ("The commit policies: `auto` commits, at a poll every `auto.commit.interval.ms` "
            f"({seconds(interval)}), what earlier polls returned; `before_processing` commits a poll's offsets "
            "(synchronously) before processing it; `after_processing` processes, then commits; `atomic` stores the "
            "output and the offsets in one transaction. With processing done inside the poll loop, Kafka documents "
            "auto commit as at least once. The worst run is over every consumer fault schedule and the "
            "producer-retry runs with an idempotent producer.")


def schedules_text(agg: Aggregates) -> str:
    """Markdown: each consumer fault schedule as the study's spec has it, and the group's session timeout."""
    session = part_settings(agg, CRASHES).consumers[0].session_timeout_ms
    said = []
    for name in SCHEDULES:
        faults = choice(agg, "schedule", name).get("faults") or []
        what = "; ".join(_fault(f) for f in faults) or "no consumer fault"
        said.append(f"* `{SCHEDULE_LABELS[name]}`: {what}.")
    return (f"A crashed member's partitions go to the others once its session (`session.timeout.ms`, "
            f"{seconds(session)}) expires, from the committed offset; a restarted member joins as a new one. "
            "The schedules:\n\n" + "\n".join(said))


def retries_text(agg: Aggregates) -> str:
    """Markdown: the producer-retry part's schedule, read from its settings."""
    s = part_settings(agg, RETRIES)
    crash = next(f for f in s.faults if f.kind == "crash")
    member = [f for f in s.faults if f.kind == "consumer_crash"]
    bursts = [p.burst for p in s.producers if p.burst is not None]
    when = f"at {seconds(crash.at_ms)}"
    if bursts:
        last = _last_burst(bursts[0], crash.at_ms)
        when = f"{fmt(crash.at_ms - last)} ms after the {seconds(last)} burst"
    target = crash.targets[0]  # a LeaderTarget (leader:TOPIC-P, resolved when the fault fires) or a broker id
    who = (f"The leader of `{target.topic}-{target.partition}`" if isinstance(target, LeaderTarget)
           else f"Broker {target}")
    text = (f"{who} crashes {when}, while "
            f"its followers hold batches it has not yet acknowledged; the producer resends them to the new leader. "
            f"Without `enable.idempotence` the new leader appends them again: records twice in the log, which the group "
            f"reads twice whatever its commit policy. With it, the broker recognises the sequence numbers and answers "
            f"with the original offsets.")
    return text + "".join(f" Member {f.member} also crashes mid-poll at {seconds(f.at_ms)}"
                          + (f" and rejoins {seconds(f.duration_ms)} later." if f.duration_ms else ".") for f in member)


def table(agg: Aggregates) -> pd.DataFrame:
    """Consumer crashes: one row per commit policy and schedule, means over seeds (and the worst seed)."""
    if CRASHES not in _parts(agg):
        return pd.DataFrame()
    p50, p99 = _latency_measures(agg)
    processed, rebalances = _group_measure(agg, "records_processed"), _group_measure(agg, "rebalances")
    df = agg.wide([LOST, DUPS, processed, rebalances, p50, p99], CRASHES)
    worst = {m: agg.measure(m, CRASHES).set_index("config_id")["max"] for m in (LOST, DUPS)}
    out = pd.DataFrame({
        "policy": df["policy"], "schedule": df["schedule"],
        "records lost": df[LOST], "lost (worst seed)": df["config_id"].map(worst[LOST]),
        "records processed twice": df[DUPS], "twice (worst seed)": df["config_id"].map(worst[DUPS]),
        "records processed": df[processed], "rebalances": df[rebalances],
        "send→processed p50 (s)": df[p50] / 1000.0, "send→processed p99 (s)": df[p99] / 1000.0,
    })
    return _ordered(out)


def _ordered(df: pd.DataFrame) -> pd.DataFrame:
    df = df.copy()
    df["policy"] = pd.Categorical(df["policy"], POLICIES, ordered=True)
    sort = ["policy"]
    if "schedule" in df:
        df["schedule"] = pd.Categorical(df["schedule"], [s for s in SCHEDULES if s in set(df["schedule"])], ordered=True)
        sort.append("schedule")
    if "idempotence" in df:
        sort.insert(0, "idempotence")
    return df.sort_values(sort).reset_index(drop=True)


def guarantees(agg: Aggregates) -> pd.DataFrame:
    """Per policy, what Kafka promises and the worst run: every consumer schedule, and the producer-retry part's
    runs with an idempotent producer (without one, duplicates in the log reach every policy; see `retries_table`)."""
    frames = []
    for part, keep in ((CRASHES, None), (RETRIES, True)):
        if part not in _parts(agg):
            continue
        for m in (LOST, DUPS, LOG_DUPS):
            s = agg.measure(m, part)
            if keep is not None:
                s = s[s["idempotence"] == keep]
            frames.append(s.assign(measure=m)[["policy", "measure", "n", "max"]])
    if not frames:
        return pd.DataFrame()
    s = pd.concat(frames)
    worst = s.groupby(["policy", "measure"])["max"].max().unstack()
    runs = s[s["measure"] == LOST].groupby("policy")["n"].sum()
    out = pd.DataFrame({"policy": worst.index, "Kafka's promise": [PROMISES[p] for p in worst.index],
                        "runs": runs.reindex(worst.index).astype(int).to_numpy(),
                        "most records lost in a run": worst[LOST].astype(int).to_numpy(),
                        "most processed twice in a run": worst[DUPS].astype(int).to_numpy(),
                        "most log duplicates in a run": worst[LOG_DUPS].astype(int).to_numpy()})
    lost_ok = out["most records lost in a run"] == 0
    twice_ok = out["most processed twice in a run"] == 0
    promise = out["Kafka's promise"]
    out["kept"] = ((promise == "at most once") & twice_ok) | ((promise == "at least once") & lost_ok) | (
        (promise == "exactly once") & lost_ok & twice_ok)
    return _ordered(out)


def guarantees_view(agg: Aggregates) -> Table:
    return Table(guarantees(agg), ["Worst run: the most over every seed of every consumer fault schedule, and of the "
                                   "producer-retry runs with an idempotent producer."])


def table_view(agg: Aggregates) -> Table:
    t = table(agg)
    if len(t):
        t["schedule"] = t["schedule"].astype(str).map(SCHEDULE_LABELS)
    return Table(t, ["Means over seeds; '(worst seed)': the most in any one seed. Latency: from the "
                              "producer's send to the first time the group finished processing the record."])


def retries_view(agg: Aggregates) -> Table:
    return Table(retries_table(agg), ["Means over seeds. Log duplicates: records the producer's resends left twice in "
                                      "a partition's log."])


def delivery(agg: Aggregates):
    """Records lost and records processed twice per consumer schedule, one bar per commit policy."""
    per_run = "records per run (mean over seeds)"
    return _schedule_panels(agg, [(LOST, "records lost (below the committed offset, never processed)", per_run),
                                  (DUPS, "records processed twice or more", per_run)],
                            values=True)  # zeros, and hundreds to thousands: each bar says its value


def latency(agg: Aggregates):
    """Send → processed latency (p50, p99) per consumer schedule, one bar per commit policy."""
    p50, p99 = _latency_measures(agg)
    return _schedule_panels(agg, [(p50, "send → processed latency, p50", "p50 (s)"),
                                  (p99, "send → processed latency, p99", "p99 (s)")], scale=1 / 1000.0)


def _schedule_panels(agg: Aggregates, panels: list, scale: float = 1.0, values: bool = False):
    """One panel per (measure, title, y label): bars per consumer schedule, one per commit policy, one legend."""
    df = agg.wide([m for m, _, _ in panels], CRASHES)
    order = [s for s in SCHEDULES if s in set(df["schedule"])]
    df = df.assign(schedule=df["schedule"].map(SCHEDULE_LABELS), policy=df["policy"].map(LEGEND))
    for m, _, _ in panels:
        for suffix in ("", "_lo", "_hi"):
            df[m + suffix] = df[m + suffix] * scale
    # with values written on the bars, one panel per row (full width) so that they do not collide
    fig, axes = plots.figure(1, len(panels), width=11.6, height=3.0) if values else plots.figure(len(panels), width=5.8)
    for ax, (m, title, ylabel) in zip(axes, panels):
        plots.grouped_bars(ax, df, "schedule", "policy", m, series_order=list(LEGEND.values()),
                           group_order=[SCHEDULE_LABELS[s] for s in order], values=values)
        ax.set_ylim(0, ax.get_ylim()[1] * (1.1 if values else 1.0))
        plots.finish(ax, title, "consumer faults of the group", ylabel, legend=False)
        ax.tick_params(axis="x", labelsize=8)
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=4, fontsize=8)
    return fig


def retries_table(agg: Aggregates) -> pd.DataFrame:
    """Producer retries: per idempotence and policy, log duplicates and what the group lost and processed twice."""
    if RETRIES not in _parts(agg):
        return pd.DataFrame()
    p50, p99 = _latency_measures(agg)
    df = agg.wide([LOG_DUPS, LOST, DUPS, p99], RETRIES)
    out = pd.DataFrame({"idempotence": df["idempotence"], "policy": df["policy"],
                        "log duplicates": df[LOG_DUPS], "records lost": df[LOST],
                        "records processed twice": df[DUPS],
                        "send→processed p99 (s)": df[p99] / 1000.0})
    return _ordered(out)


def idempotence(agg: Aggregates):
    """Records twice in the log with and without enable.idempotence (every run), and what each policy's group
    processed twice (bars) against the log duplicates of the same runs (markers)."""
    df = agg.wide([LOG_DUPS, DUPS], RETRIES)
    runs = agg.runs[agg.runs["part"] == RETRIES]
    fig, axes = plots.figure(2, width=5.8)
    ax = axes[0]
    for x, idem in enumerate((False, True)):
        r = runs[runs["idempotence"] == idem]
        ax.bar([x], [r[LOG_DUPS].mean() if len(r) else 0.0], 0.6, color=plots.CYCLE[x], alpha=0.6,
               label=f"enable.idempotence={str(idem).lower()}: mean")
        for i, p in enumerate(POLICIES):
            vals = r[r["policy"] == p][LOG_DUPS]
            ax.scatter([x - 0.21 + 0.14 * i] * len(vals), vals, s=18, color=plots.CYCLE[x], edgecolors="black",
                       linewidths=0.5, zorder=3)
    ax.set_xticks([0, 1], ["enable.idempotence=false", "enable.idempotence=true"])
    ax.set_ylim(bottom=0)
    plots.finish(ax, "records twice in the log (the producer's resends)", "", "records per run (dots: each run)",
                 legend=False)
    ax = axes[1]
    series = {False: "enable.idempotence=false", True: "enable.idempotence=true"}
    df = df.assign(producer=df["idempotence"].map(series))
    plots.grouped_bars(ax, df, "policy", "producer", DUPS, series_order=list(series.values()), group_order=POLICIES,
                       lo="-", hi="-")  # no whiskers: the markers are the comparison here
    width = 0.8 / len(series)
    for i, idem in enumerate(series):
        g = df[df["idempotence"] == idem].set_index("policy").reindex(POLICIES)
        xs = [j + (i - 0.5) * width for j in range(len(POLICIES))]
        ax.scatter(xs, g[LOG_DUPS].fillna(0), marker="D", s=22, color="black", zorder=3,
                   label="records twice in the log (same runs)" if i == 0 else None)
    ax.set_xticks(range(len(POLICIES)), [POLICY_LABELS[p].replace(" → ", " →\n").replace(" + ", " +\n")
                                         for p in POLICIES])
    ax.set_ylim(bottom=0)
    plots.finish(ax, "records the group processed twice", "commit policy", "records per run (mean over seeds)")
    ax.tick_params(axis="x", labelsize=8)
    return fig


def headline(agg: Aggregates) -> tuple[dict, str]:
    numbers: dict = {}
    parts = _parts(agg)
    if CRASHES in parts:
        p50, p99 = _latency_measures(agg)
        crashes = agg.wide([LOST, DUPS, p50, p99], CRASHES)
        g = guarantees(agg)  # every consumer schedule, and the idempotent producer's retries
        for p in POLICIES:
            numbers[f"worst_lost_{p}"] = num(value(g, "most records lost in a run", policy=p), 0)
            numbers[f"worst_duplicates_{p}"] = num(value(g, "most processed twice in a run", policy=p), 0)
        for p in POLICIES:
            numbers[f"crash_rejoin_lost_{p}"] = num(value(crashes, LOST, policy=p, schedule="crash_rejoin"), 1)
            numbers[f"crash_rejoin_duplicates_{p}"] = num(value(crashes, DUPS, policy=p, schedule="crash_rejoin"), 1)
        numbers["repeated_lost_before_processing"] = num(value(crashes, LOST, policy="before_processing", schedule="repeated"), 1)
        numbers["repeated_duplicates_auto"] = num(value(crashes, DUPS, policy="auto", schedule="repeated"), 1)
        numbers["repeated_duplicates_after_processing"] = num(value(crashes, DUPS, policy="after_processing", schedule="repeated"), 1)
        # without a crash (no fault, or a member leaving and one joining): the worst run over every policy
        for m, short in ((LOST, "lost"), (DUPS, "duplicates")):
            s = agg.measure(m, CRASHES)
            s = s[s["schedule"].isin(["none", "leave_join"])]
            numbers[f"no_crash_worst_{short}"] = num(s["max"].max(), 0) if len(s) else None
        for p in POLICIES:
            numbers[f"no_fault_p50_s_{p}"] = num(value(crashes, p50, policy=p, schedule="none") / 1000.0, 2)
        for s in ("none", "crash_rejoin", "repeated"):
            numbers[f"{s}_p99_s_after_processing"] = num(value(crashes, p99, policy="after_processing", schedule=s) / 1000.0, 2)
    if RETRIES in parts:
        retries = agg.wide([LOG_DUPS, DUPS], RETRIES)
        for idem, tag in ((False, "not_idempotent"), (True, "idempotent")):
            rows = retries[retries["idempotence"] == idem]
            numbers[f"log_duplicates_{tag}"] = num(rows[LOG_DUPS].mean(), 1) if len(rows) else None
            for p in POLICIES:
                numbers[f"retries_{tag}_duplicates_{p}"] = num(value(retries, DUPS, policy=p, idempotence=idem), 1)
        for p in ("before_processing", "atomic"):  # policies that redo nothing: what they process twice is in the log twice
            numbers[f"retries_not_idempotent_log_duplicates_{p}"] = num(
                value(retries, LOG_DUPS, policy=p, idempotence=False), 1)

    def n(key):
        return fmt(numbers.get(key))

    finding = (f"A consumer crash mid-poll lost {n('crash_rejoin_lost_before_processing')} records under "
               f"commit-then-process and had process-then-commit process {n('crash_rejoin_duplicates_after_processing')} "
               f"twice (auto commit: {n('crash_rejoin_duplicates_auto')}); atomic output + offset lost "
               f"{n('worst_lost_atomic')} and repeated {n('worst_duplicates_atomic')} in its worst run. Without idempotence a "
               f"leader crash left {n('log_duplicates_not_idempotent')} records twice in the log (idempotent: "
               f"{n('log_duplicates_idempotent')}).")
    return numbers, finding
