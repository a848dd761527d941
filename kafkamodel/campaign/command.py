"""``python -m kafkamodel campaign SPEC``: sweep the schedules, judge every run, shrink what broke, report (its
parser: ``add_parser``; pandas and the verdicts are imported when it runs).

1. The spec is loaded and checked whole (``spec``); nothing runs on bad input.
2. Its sweep (a part per setting, a point per schedule) runs on the study
   kit's engines (``kit.sweep.run_sweeps``: papermill or Spark; run folders
   under ``<runs>/campaigns/<campaign>/``, finished runs skipped, failed points
   recorded and retried next time).
3. Every finished run is judged (``verdicts``).
4. For each property a safe setting broke, its first ``per_property``
   schedules are shrunk; for each unsafe setting, its first ``examples`` loss
   (``shrink``); each is written as a scenario file (``counterexample``).
5. The runs, the tally, the counterexamples (with their events) and the
   campaign's description go to ``data/processed/campaigns/<campaign>/`` (one
   rename), and the report to ``reports/campaign_<campaign>.html``.
"""

from __future__ import annotations

import json
import sys
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from ..command import REPORTING, UsageError, engine_modules, needs, positive_int, sweep_options
from ..folders import FolderError, check_replaceable, staged
from ..kit import (SweepOutcome, check_engine, check_folder, check_runs, check_timeout, check_workers, in_order,
                   progress_bar, run_sweeps)
from ..paths import PROCESSED, REPORTS, counterexamples
from . import counterexample
from .properties import BY_NAME, PROPERTIES, quantity
from .shrink import shrink
from .spec import Campaign, SpecError, load_campaign

if TYPE_CHECKING:
    import pandas as pd


def add_parser(verbs) -> None:
    campaign = verbs.add_parser("campaign", help="random fault schedules against settings, checked for what each "
                                                 "promises; counterexamples shrunk to scenario files; a report")
    campaign.add_argument("spec", help="a campaign name (data/campaigns/NAME.yaml) or a campaign spec file")
    sweep_options(campaign, with_scale=False)
    campaign.add_argument("--schedules", type=positive_int("--schedules"),
                          help="schedules per setting (default: the spec's `schedules`)")
    campaign.add_argument("--runs", help="where run folders go (default: data/runs; they go in campaigns/NAME/); "
                                         "with --engine spark, or a URI Spark writes to (file:///..., hdfs://..., "
                                         "s3a://...)")
    campaign.add_argument("--no-resume", action="store_true", help="run every schedule again, replacing finished runs")
    campaign.add_argument("--no-report", action="store_true", help="skip the HTML report")
    campaign.set_defaults(func=cmd_campaign)


def cmd_campaign(args) -> int:
    needs("campaign", *engine_modules(args.engine), *(() if args.no_report else REPORTING))
    if args.master is not None and args.engine != "spark":
        raise UsageError("--master: only with --engine spark (papermill runs on this machine)")
    outcome = run_campaign(args.spec, schedules=args.schedules, engine=args.engine, master=args.master,
                           workers=args.workers, timeout=args.timeout, runs=args.runs, resume=not args.no_resume,
                           report=not args.no_report)
    for line in outcome.lines():
        print(line)
    if outcome.sweep.failed:
        print(f"error: {len(outcome.sweep.failed)} of {outcome.sweep.total} runs failed; re-run to retry them",
              file=sys.stderr)
        return 1
    if outcome.broken:
        print("error: a safe setting broke a property it promises: "
              + ", ".join(f"{s} in {n} runs" for s, n in outcome.broken.items())
              + "; see the counterexamples above", file=sys.stderr)
        return 1
    return 0


@dataclass
class CampaignOutcome:
    campaign: Campaign
    sweep: SweepOutcome  # what the engine ran
    runs: pd.DataFrame  # one row per finished run, judged
    tally: pd.DataFrame  # per setting and property
    examples: list = field(default_factory=list)  # (Shrunk, path of its scenario file)
    processed: Path | None = None  # data/processed/campaigns/<campaign>/
    report: Path | None = None  # reports/campaign_<campaign>.html
    seconds: float = 0.0  # the whole command

    @property
    def broken(self) -> dict[str, int]:
        """Safe setting -> runs that broke a property it promised."""
        from . import verdicts

        return verdicts.broken_safe(self.runs, self.campaign.settings)

    @property
    def schedules(self) -> int:
        """Schedules per setting (every setting runs the same ones)."""
        return self.sweep.total // max(len(self.campaign.settings), 1)

    @property
    def ok(self) -> bool:
        return not self.sweep.failed and not self.broken

    def lines(self) -> list[str]:
        c, s = self.campaign, self.sweep
        per_s = f"; {len(s.ran) / s.wall_s:.2f} runs/s" if s.ran and s.wall_s > 0 else ""
        out = [f"{c.name}: {self.schedules} schedules x {len(c.settings)} settings = {s.total} "
               f"runs: {len(s.ran)} ran, {s.skipped} already done, {len(s.failed)} failed "
               f"({s.wall_s:.0f} s on {s.engine}{per_s})"]
        for setting in c.settings:
            t = self.tally[self.tally.setting == setting.name]
            runs = int(t.runs.iloc[0]) if len(t) else 0
            acked = int(self.runs.loc[self.runs.setting == setting.name, "records_acked"].sum())
            hit = t[t.broken > 0]
            if hit.empty:
                out.append(f"  {setting.name} ({setting.promise}): every property held over {runs} runs "
                           f"({acked:,} records acknowledged)")
            for _, row in hit.iterrows():
                word = "BROKEN: " if setting.promise == "safe" else ""
                out.append(f"  {setting.name} ({setting.promise}): {word}{row.property} in {row.broken} of {runs} "
                           f"runs ({100 * row.broken / runs:.1f}%): {quantity(row.amount, row.unit)} in all, at most "
                           f"{row.worst:,} in one run")
        for shrunk, path in self.examples:
            amount = quantity(shrunk.amount, BY_NAME[shrunk.prop].unit)
            out.append(f"  counterexample: {counterexample.shown(path)} ({shrunk.prop}: {amount}; "
                       f"{len(shrunk.original)} faults -> {len(shrunk.faults)} in {shrunk.simulations} simulations)")
        for run_id, error in s.failed:
            out.append(f"  FAILED {run_id}: {error}")
        if self.report:
            out.append(f"report: {self.report} (the whole command: {self.seconds:.0f} s)")
        return out


RESULT_NAMES = ("runs.parquet", "tally.parquet", "events", "counterexamples.json", "meta.json")  # a results folder

def run_campaign(spec, *, schedules: int | None = None, engine: str = "papermill", master: str | None = None,
                 workers: int | None = None, timeout: float = 600.0, runs: Path | None = None, resume: bool = True,
                 spark=None, progress: bool = True, processed: Path | None = None, reports: Path | None = None,
                 report: bool = True, say=None) -> CampaignOutcome:
    """Run a campaign end to end (see the module's docstring); `spark`: a session to use (left running)."""
    from . import verdicts

    t0 = time.perf_counter()
    say = say or (lambda line: print(line, file=sys.stderr, flush=True))
    campaign = load_campaign(spec)
    if schedules is not None and (isinstance(schedules, bool) or not isinstance(schedules, int) or schedules < 1):
        raise SpecError([f"--schedules: must be an integer >= 1 (schedules per setting), got {schedules!r}"])
    check_engine(engine)
    check_workers(workers)
    check_timeout(timeout)
    runs = check_runs(runs, engine)  # every folder it writes, checked before any run
    root = f"{runs}/campaigns" if isinstance(runs, str) else runs / "campaigns"  # a URI: the runs dataset
    processed = check_folder(processed or PROCESSED, "aggregates folder")
    try:  # the campaign's results folder: one the kit may not replace is refused now, not after the sweep
        check_replaceable(processed / "campaigns" / campaign.name, "aggregates folder", RESULT_NAMES)
    except FolderError as exc:
        raise SpecError([str(exc)]) from None
    if report:
        reports = check_folder(reports or REPORTS, "reports folder")
    folder = check_folder(counterexamples(campaign.source, campaign.name), "counterexamples folder")
    sweep = campaign.sweep(schedules)
    points = sweep.points()
    say(f"campaign {campaign.name}: {sweep.schedules} schedules x {len(campaign.settings)} settings = "
        f"{len(points)} runs on {engine}")
    with ExitStack() as stack:
        if isinstance(root, str) and spark is None:  # the dataset is read back after the sweep: one session for both
            from ..kit import spark_session

            spark = stack.enter_context(spark_session(master, app_name=f"kafkamodel campaign {campaign.name}"))
        (outcome,) = run_sweeps([sweep], workers=workers, timeout=timeout, resume=resume, runs=root,
                                progress=progress, engine=engine, master=master, spark=spark)
        judged = verdicts.collect(points, f"{root}/{campaign.name}" if isinstance(root, str) else root / campaign.name,
                                  spark)
    result = CampaignOutcome(campaign, outcome, judged, verdicts.tally(judged, campaign.settings))
    result.examples = _shrink_all(campaign, judged, progress, folder, check_workers(workers))
    result.processed = _publish(result, processed / "campaigns" / campaign.name)
    if report:
        from .report import report as write_report

        result.report = write_report(campaign, result.processed, reports=reports, timeout=timeout)
    result.seconds = time.perf_counter() - t0
    return result


def targets(campaign: Campaign, runs: pd.DataFrame) -> list[tuple]:
    """(setting, schedule, property) to shrink: per property a safe setting broke, its first `per_property`
    schedules; per unsafe setting, its first `examples` breaking the first property broken (acked loss first)."""
    out = []
    for s in campaign.settings:
        mine = runs[runs.setting == s.name]
        for p in PROPERTIES:
            hit = mine.loc[mine[p.name] > 0, "schedule"].tolist()
            if s.promise == "safe":
                out += [(s, int(i), p.name) for i in hit[:campaign.per_property]]
            elif hit and campaign.examples:
                out += [(s, int(i), p.name) for i in hit[:campaign.examples]]
                break
    return out


def _shrink_all(campaign: Campaign, runs: pd.DataFrame, progress: bool, folder: Path, workers: int = 1) -> list:
    """Shrink every target (``targets``), in `workers` processes when there are several targets (each shrink is
    a chain of simulations, one after another, the targets independent: the same counterexamples either way)."""
    todo = targets(campaign, runs)
    if not todo:
        return []
    budget = campaign.shrink_budget
    bar = progress_bar(len(todo) * budget, "shrink", unit="simulation", disable=not progress)
    done = []
    try:
        if min(workers, len(todo)) > 1:
            for shrunk in in_order(_shrink_one, [(campaign, setting.name, index, prop, budget)
                                                 for setting, index, prop in todo], workers):
                bar.update(budget)
                done.append((shrunk, counterexample.write(campaign, shrunk, folder)))
            return done
        for setting, index, prop in todo:
            shrunk = shrink(campaign, setting, index, prop, budget, bar)
            bar.update(budget - shrunk.simulations)  # what this one did not need
            done.append((shrunk, counterexample.write(campaign, shrunk, folder)))
    finally:
        bar.close()
    return done


def _shrink_one(campaign: Campaign, setting: str, index: int, prop: str, budget: int):
    """Worker: one target's shrink."""
    return shrink(campaign, campaign.setting(setting), index, prop, budget)


def _publish(result: CampaignOutcome, final: Path) -> Path:
    """data/processed/campaigns/<campaign>/: runs, tally, counterexamples (+ their events), meta; one rename."""
    c, s = result.campaign, result.sweep
    with staged(final) as tmp:
        result.runs.to_parquet(tmp / "runs.parquet", index=False)
        result.tally.to_parquet(tmp / "tally.parquet", index=False)
        (tmp / "events").mkdir()
        examples = []
        for shrunk, path in result.examples:
            setting = c.setting(shrunk.setting)
            shrunk.result.events.to_parquet(tmp / "events" / f"{path.stem}.parquet", index=False)
            examples.append({"file": counterexample.shown(path), "name": path.stem, "setting": shrunk.setting,
                             "promise": setting.promise, "property": shrunk.prop, "unit": BY_NAME[shrunk.prop].unit,
                             "schedule": shrunk.index, "amount": shrunk.amount,
                             "original_amount": shrunk.original_amount, "original": shrunk.original,
                             "faults": shrunk.faults, "simulations": shrunk.simulations,
                             "records_acked": shrunk.result.summary["records_acked"],
                             "brokers": shrunk.result.scenario["brokers"],
                             "duration_ms": shrunk.result.summary["duration_ms"]})
        (tmp / "counterexamples.json").write_text(json.dumps(examples, indent=1) + "\n")
        meta = {
            "campaign": c.name, "title": c.title, "question": c.question, "source": counterexample.shown(Path(c.source)),
            "base": c.base, "seed": c.seed, "schedules": result.schedules, "runs": int(len(result.runs)),
            "settings": [{"name": x.name, "promise": x.promise, "about": x.about,
                          "overrides": {k: v for k, v in x.overrides.items() if k != "faults"},
                          "faults": {k: v for k, v in vars(x.faults).items()}} for x in c.settings],
            "sweep": {"engine": s.engine, "slots": s.slots, "wall_s": s.wall_s, "ran": len(s.ran),
                      "skipped": s.skipped, "failed": len(s.failed),
                      "model_s_mean": sum(s.model_s) / len(s.model_s) if s.model_s else None},
            "generated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        (tmp / "meta.json").write_text(json.dumps(meta, indent=1, default=list) + "\n")
    return final
