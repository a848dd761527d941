"""A campaign's report, for its notebook (``notebooks/70_campaign.ipynb``): the finding, figures and tables.

Reads what ``run`` published in ``data/processed/campaigns/<campaign>/``.
Rates come with a 95% Wilson score interval (right for proportions near 0 or
1 and small counts, where the normal approximation fails).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..kit import StudyError, Table, fit, number, percent, percent_interval, plots
from ..paths import PROCESSED
from .properties import PROPERTIES, quantity

Z95 = 1.959963984540054  # the normal quantile of a two-sided 95% interval
WILSON_NOTE = "Rates: share of schedules, with a 95% Wilson score interval."
SHOWN_EVENTS = ("fault_", "leader_election", "partition_offline", "broker_failure_detected", "truncation",
                "isr_shrink", "isr_expand", "controller_failover", "invariant_violation")  # a timeline's kinds


@dataclass
class CampaignData:
    meta: dict  # the campaign, its settings and vocabularies, how the sweep ran
    runs: pd.DataFrame  # one row per run (verdicts.collect)
    tally: pd.DataFrame  # per setting and property (verdicts.tally)
    examples: list  # the shrunk counterexamples (command._publish)
    events: dict  # counterexample name -> its run's events

    @property
    def settings(self) -> list[dict]:
        return self.meta["settings"]


def load(campaign: str, processed: "str | Path | None" = None) -> CampaignData:
    folder = Path(processed) if processed else PROCESSED / "campaigns" / campaign
    if not (folder / "meta.json").is_file():
        raise StudyError([f"{campaign}: no campaign results in {folder}; run `python -m kafkamodel campaign {campaign}`"])
    examples = json.loads((folder / "counterexamples.json").read_text())
    events = {e["name"]: pd.read_parquet(folder / "events" / f"{e['name']}.parquet") for e in examples}
    return CampaignData(json.loads((folder / "meta.json").read_text()), pd.read_parquet(folder / "runs.parquet"),
                        pd.read_parquet(folder / "tally.parquet"), examples, events)


def wilson(k: int, n: int) -> tuple[float, float]:
    """95% Wilson score interval of a proportion k/n (NaNs for n = 0)."""
    if n == 0:
        return math.nan, math.nan
    p = k / n
    centre = (p + Z95 ** 2 / (2 * n)) / (1 + Z95 ** 2 / n)
    half = Z95 * math.sqrt(p * (1 - p) / n + Z95 ** 2 / (4 * n * n)) / (1 + Z95 ** 2 / n)
    # at k = 0 (k = n) the lower (upper) end is exactly 0 (1); floating point leaves 1e-17 instead
    return (0.0 if k == 0 else max(0.0, centre - half)), (1.0 if k == n else min(1.0, centre + half))


def _percent(k: int, n: int) -> str:
    """'9.2% (6.1 – 13%)' or '0% (0 – 1.5%)'."""
    lo, hi = wilson(k, n)
    return f"{percent(100 * k / n)}% ({percent_interval(100 * lo, 100 * hi)}%)" if n else ""


def losses(data: CampaignData) -> pd.DataFrame:
    """Per setting: runs, how many lost acknowledged records, the rate, and how much."""
    rows = []
    for s in data.settings:
        mine = data.runs[data.runs.setting == s["name"]]
        lost = mine.loc[mine.acked_records_lost > 0, "acked_records_lost"]
        lo, hi = wilson(len(lost), len(mine))
        rows.append({"setting": s["name"], "promise": s["promise"], "runs": len(mine), "losing": len(lost),
                     "rate": len(lost) / len(mine) if len(mine) else math.nan, "rate_lo": lo, "rate_hi": hi,
                     "acked": int(mine.records_acked.sum()), "lost": int(lost.sum()),
                     "median": float(lost.median()) if len(lost) else math.nan,
                     "worst": int(lost.max()) if len(lost) else 0})
    return pd.DataFrame(rows)


def headline(data: CampaignData) -> tuple[dict, str]:
    """The numbers the index and the tests read back, and the finding sentence."""
    meta, t, loss = data.meta, data.tally, losses(data)
    safe = [s["name"] for s in data.settings if s["promise"] == "safe"]
    unsafe = [s["name"] for s in data.settings if s["promise"] == "unsafe"]
    broken = t[(t.promise == "safe") & (t.broken > 0)]
    numbers = {"schedules": meta["schedules"], "runs": int(len(data.runs)),
               "records_acked": int(data.runs.records_acked.sum()),
               "safe_violations": int(broken.broken.sum()), "counterexamples": len(data.examples)}
    for _, r in loss.iterrows():
        numbers[f"{r.setting}.loss_rate"] = None if math.isnan(r.rate) else round(float(r.rate), 4)
        numbers[f"{r.setting}.acked_lost"] = int(r.lost)
    acked = f"{numbers['records_acked'] / 1e6:.2g} million" if numbers["records_acked"] >= 1e6 else \
        f"{numbers['records_acked']:,}"
    opening = f"Over {meta['schedules']:,} random fault schedules per setting ({len(data.runs):,} runs, {acked} records acknowledged), "
    if not safe:
        said = "no setting promised safety; "
    elif broken.empty:
        runs = int(data.runs.setting.isin(safe).sum() / len(safe))
        said = (f"the safe settings ({', '.join(safe)}) broke no property: nothing acknowledged or committed was lost "
                f"and committed prefixes agreed (so each property breaks in under {percent(100 * wilson(0, runs)[1])}% "
                f"of such schedules, 95% bound); ")
    else:
        parts = [f"{r.setting} broke {r.property} in {r.broken} of {r.runs} runs" for _, r in broken.iterrows()]
        said = "a safe setting broke its promise: " + "; ".join(parts) + " (shrunk counterexamples below); "
    rates = [f"{r.setting} lost acknowledged records in {percent(100 * r.rate)}% of the schedules "
             f"({percent(100 * r.lost / r.acked if r.acked else 0)}% of what it acknowledged, at most {r.worst:,} in one run)."
             for _, r in loss[loss.setting.isin(unsafe)].iterrows()]
    first = opening + said.rstrip("; ") + "."
    return numbers, fit([first[0].upper() + first[1:], *rates] if rates else [first[0].upper() + first[1:]])


def figure(data: CampaignData):
    """Left: share of schedules that broke each property that broke anywhere, per setting (95% Wilson
    whiskers; a safe setting that held shows its bound). Right: how much the losing schedules lost."""
    fig, (left, right) = plots.figure(2, 1, width=5.9, height=3.7)
    t = data.tally.copy()
    hit = [p.name for p in PROPERTIES if (t.loc[t.property == p.name, "broken"] > 0).any()]
    shown = t[t.property.isin(hit or [PROPERTIES[0].name])].copy()
    shown["percent"] = 100 * shown.broken / shown.runs.where(shown.runs > 0)
    bounds = [wilson(b, n) for b, n in zip(shown.broken, shown.runs)]
    shown["percent_lo"] = [100 * lo for lo, _ in bounds]
    shown["percent_hi"] = [100 * hi for _, hi in bounds]
    order = [s["name"] for s in data.settings]
    plots.grouped_bars(left, shown, "setting", "property", "percent", group_order=order,
                       series_order=hit or [PROPERTIES[0].name])
    left.set_xticks(range(len(order)), [f"{s['name']}\n({s['promise']})" for s in data.settings], fontsize=8)
    never = [p.name for p in PROPERTIES if p.name not in hit]
    plots.finish(left, "Schedules that broke a property" + (f"\n(never broken: {', '.join(never)})" if never else ""),
                 "", "% of schedules")
    for i, s in enumerate(data.settings):
        mine = data.runs[data.runs.setting == s["name"]]
        lost = np.sort(mine.loc[mine.acked_records_lost > 0, "acked_records_lost"].to_numpy())
        if len(lost):
            share = 100 * (len(lost) - np.arange(len(lost))) / len(mine)  # % of schedules losing at least x
            right.plot(lost, share, drawstyle="steps-post", marker="o" if len(lost) <= 30 else None, markersize=3,
                       color=plots.color(s["name"], i), label=s["name"])
    if right.get_lines():
        worst = max(max(line.get_xdata()) for line in right.get_lines())
        highest = max(max(line.get_ydata()) for line in right.get_lines())
        right.set_xlim(0.8, worst * 2)  # from one record: the axis spans whole decades however little was lost
        right.set_ylim(0, highest * 1.15)
        plots.finish(right, "Acknowledged records lost per schedule", "records lost in one schedule (at least)",
                     "% of schedules", logx=True)
    else:
        right.text(0.5, 0.5, "no schedule lost an acknowledged record", ha="center", va="center",
                   transform=right.transAxes)
        plots.finish(right, "Acknowledged records lost per schedule", "records lost in one schedule (at least)",
                     "% of schedules")
    return fig


def settings_table(data: CampaignData) -> Table:
    rows = []
    for s in data.settings:
        mine = data.tally[data.tally.setting == s["name"]]
        runs = int(mine.runs.iloc[0]) if len(mine) else 0
        hit = mine[mine.broken > 0]
        held = "every property held" if hit.empty else ", ".join(f"{r.property} broken in {r.broken}" for _, r in hit.iterrows())
        rows.append({"setting": s["name"], "promise": s["promise"], "what it is": s["about"], "runs": runs,
                     "records acknowledged": int(data.runs.loc[data.runs.setting == s["name"], "records_acked"].sum()),
                     "verdict": held})
    return Table(pd.DataFrame(rows), ["safe: no acknowledged or committed record lost, committed prefixes agree, "
                                      "the leader in the ISR, in every run; unsafe: expected to break them sometimes."])


def violations_table(data: CampaignData) -> Table:
    """Runs that broke each property, a row per setting."""
    rows = []
    for s in data.settings:
        mine = data.tally[data.tally.setting == s["name"]]
        row = {"setting": s["name"], "promise": s["promise"], "runs": int(mine.runs.iloc[0]) if len(mine) else 0}
        row.update({p.name: int(mine.loc[mine.property == p.name, "broken"].sum()) for p in PROPERTIES})
        rows.append(row)
    df = pd.DataFrame(rows)
    bound = ", ".join(f"{r.setting}: {percent(100 * wilson(0, r.runs)[1])}%" for r in df.itertuples() if r.runs)
    meaning = "; ".join(f"{p.name}: {p.meaning}" for p in PROPERTIES)
    return Table(df, [f"Runs in which the property broke. {meaning}.",
                      f"Never broken in n runs: the rate is below the 95% Wilson bound ({bound})."])


def breaks_table(data: CampaignData) -> Table:
    """Each (property, setting) that broke: how often, how much in all and in the worst run."""
    t = data.tally[data.tally.broken > 0]
    shown = pd.DataFrame({
        "property": t.property, "setting": t.setting, "promise": t.promise, "broken in": t.broken, "runs": t.runs,
        "share of schedules": [_percent(b, n) for b, n in zip(t.broken, t.runs)],
        "in all": [quantity(a, u) for a, u in zip(t.amount, t.unit)],
        "worst run": [quantity(w, u) for w, u in zip(t.worst, t.unit)]})
    return Table(shown, [WILSON_NOTE] if len(shown) else ["No property broke in any run."])


def loss_table(data: CampaignData) -> Table:
    loss = losses(data)
    loss = loss[loss.promise == "unsafe"]
    shown = pd.DataFrame({
        "setting": loss.setting, "runs": loss.runs, "lost acknowledged records": loss.losing,
        "loss rate": [_percent(k, n) for k, n in zip(loss.losing, loss.runs)],
        "records lost": loss.lost, "of acknowledged": [f"{percent(100 * l / a if a else 0)}%" for l, a in zip(loss.lost, loss.acked)],
        "median per losing run": loss["median"], "worst run": loss.worst})
    return Table(shown, [WILSON_NOTE, "Median and worst: acknowledged records lost in the runs that lost some."])


def examples_table(data: CampaignData) -> Table:
    rows = [{"counterexample": e["file"], "setting": e["setting"], "promise": e["promise"], "breaks": e["property"],
             "amount": quantity(e["amount"], e["unit"]), "faults as drawn": len(e["original"]),
             "faults shrunk": len(e["faults"]), "simulations": e["simulations"]} for e in data.examples]
    columns = ["counterexample", "setting", "promise", "breaks", "amount", "faults as drawn", "faults shrunk", "simulations"]
    return Table(pd.DataFrame(rows, columns=columns),
                 ["Each file is a scenario: `python -m kafkamodel run FILE` reproduces it."])


def example_title(example: dict) -> str:
    """Markdown: a counterexample's file, where it came from and what it breaks."""
    return (f"### `{example['file']}`\n\n{example['setting']} ({example['promise']}), schedule {example['schedule']}: "
            f"breaks **{example['property']}** ({quantity(example['amount'], example['unit'])}). The shrunk schedule:")


def faults_table(faults: list) -> Table:
    rows = [{"at (ms)": f["at.ms"], "kind": f["kind"], "target": ", ".join(map(str, f["broker"])) if isinstance(f["broker"], list) else str(f["broker"]),
             "for (ms)": f["duration.ms"], "detail": _fault_detail(f)} for f in faults]
    return Table(pd.DataFrame(rows, columns=["at (ms)", "kind", "target", "for (ms)", "detail"]))


def _fault_detail(f: dict) -> str:
    if f["kind"] == "isolate":
        return f"from {', '.join(map(str, f['from']))}" if f.get("from") else "from everything"
    if f["kind"] == "slow":
        return f"x{number(f['factor'])}"
    return ""


def events_table(data: CampaignData, name: str) -> Table:
    ev = data.events[name]
    ev = ev[ev.kind.str.startswith(SHOWN_EVENTS)]
    shown = pd.DataFrame({"time (ms)": ev.time_ms.round(1), "event": ev.kind,
                          "partition": [f"{t}-{p}" if p >= 0 else "" for t, p in zip(ev.topic, ev.partition)],
                          "broker": [b if b >= 0 else None for b in ev.broker], "detail": ev.detail})
    return Table(shown.astype({"broker": "Int64"}), ["Faults, elections, truncations, ISR changes and controller moves "
                                                     "(fetches and requests left out)."])


def timeline(data: CampaignData, example: dict):
    """The counterexample's faults as bars per broker, its elections as markers, over simulated seconds."""
    fig, (ax,) = plots.figure(1, 1, width=11.8, height=2.4)
    ev = data.events[example["name"]]
    colours: dict[str, str] = {}  # fault kind -> its colour (the first bar of a kind carries the label)
    for _, e in ev[ev.kind.isin(["fault_crash", "fault_power_loss", "fault_isolate", "fault_pause", "fault_slow"])].iterrows():
        kind = e.kind.removeprefix("fault_")
        fault = next((f for f in example["faults"] if f["kind"] == kind and abs(f["at.ms"] - e.time_ms) < 1e-6), None)
        new = kind not in colours
        colour = colours.setdefault(kind, plots.CYCLE[len(colours) % len(plots.CYCLE)])
        ax.barh(e.broker, (fault["duration.ms"] if fault else 0.0) / 1000, left=e.time_ms / 1000, height=0.5,
                color=colour, label=kind if new else None)
    elections = ev[ev.kind == "leader_election"]
    ax.scatter(elections.time_ms / 1000, elections.broker, marker="v", color="black", zorder=3, label="elected leader")
    brokers = example["brokers"]
    ax.set_yticks(range(brokers), [f"broker {b}" for b in range(brokers)])
    ax.set_xlim(0, (example.get("duration_ms") or max(ev.time_ms.max(), 1)) / 1000)
    plots.finish(ax, f"{example['name']}: faults and elections", "simulated time (s)", "")
    return fig


def vocabulary_table(data: CampaignData) -> Table:
    keys = [k for k in data.settings[0]["faults"]]
    rows = []
    for k in keys:
        row = {"vocabulary": k.replace("_", " ")}
        for s in data.settings:
            v = s["faults"][k]
            row[s["name"]] = ", ".join(map(number, v)) if isinstance(v, (list, tuple)) else number(v)
        rows.append(row)
    return Table(pd.DataFrame(rows), ["The fault vocabulary each setting's schedules are drawn from "
                                      "(kafkamodel.campaign.vocabulary; weights are probabilities)."])


def overview(data: CampaignData) -> str:
    """Markdown: what the campaign asks and how it ran."""
    m, sw = data.meta, data.meta["sweep"]
    rate = f", {sw['ran'] / sw['wall_s']:.2f} runs/s" if sw["ran"] and sw["wall_s"] else ""
    slots = f" ({sw['slots']} slots)" if sw["slots"] else ""
    return (f"**{m['title']}.** {m['question']}\n\n"
            f"`{m['source']}`: base scenario `{m['base']}`, campaign seed {m['seed']}, {m['schedules']:,} schedules per "
            f"setting, {m['runs']:,} runs judged. The last sweep ran {sw['ran']:,} of them on {sw['engine']}"
            f"{slots} in {sw['wall_s']:.0f} s{rate}; {sw['skipped']:,} "
            f"were already done; {sw['failed']} failed. Results published {m['generated_at']}.")
