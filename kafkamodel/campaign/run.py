"""``python -m kafkamodel campaign SPEC``: sweep the schedules, judge every run, publish the verdicts.

1. The spec is loaded and checked whole (``spec``); nothing runs on bad input.
2. Its sweep (a part per setting, a point per schedule) runs on the study
   kit's engines (``study.sweep.run_sweeps``: papermill or Spark; run folders
   under ``<runs>/campaigns/<campaign>/``, finished runs skipped, failed points
   recorded and retried next time).
3. Every finished run is judged (``verdicts``).
4. The runs, the tally and the campaign's description go to
   ``data/processed/campaigns/<campaign>/`` (one rename).
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from ..folders import staged
from ..paths import PROCESSED
from ..study.sweep import SweepOutcome, check_engine, check_runs, check_timeout, check_workers, run_sweeps
from . import verdicts
from .spec import Campaign, SpecError, load_campaign


@dataclass
class CampaignOutcome:
    campaign: Campaign
    sweep: SweepOutcome  # what the engine ran
    runs: pd.DataFrame  # one row per finished run, judged
    tally: pd.DataFrame  # per setting and property
    processed: Path | None = None  # data/processed/campaigns/<campaign>/
    seconds: float = 0.0  # the whole command

    @property
    def broken(self) -> dict[str, int]:
        """Safe setting -> runs that broke a property it promised."""
        return verdicts.broken_safe(self.runs, self.campaign.settings)

    @property
    def ok(self) -> bool:
        return not self.sweep.failed and not self.broken

    def lines(self) -> list[str]:
        c, s = self.campaign, self.sweep
        per_s = f"; {len(s.ran) / s.wall_s:.2f} runs/s" if s.ran and s.wall_s > 0 else ""
        out = [f"{c.name}: {s.total // max(len(c.settings), 1)} schedules x {len(c.settings)} settings = {s.total} "
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
                           f"runs ({100 * row.broken / runs:.1f}%): {row.amount:,} {row.unit} in all, at most "
                           f"{row.worst:,} in one run")
        for run_id, error in s.failed:
            out.append(f"  FAILED {run_id}: {error}")
        return out


def run_campaign(spec, *, schedules: int | None = None, engine: str = "papermill", master: str | None = None,
                 workers: int | None = None, timeout: float = 600.0, runs: Path | None = None, resume: bool = True,
                 spark=None, progress: bool = True, processed: Path | None = None, say=None) -> CampaignOutcome:
    """Run a campaign end to end (see the module's docstring); `spark`: a session to use (left running)."""
    t0 = time.perf_counter()
    say = say or (lambda line: print(line, file=sys.stderr, flush=True))
    campaign = load_campaign(spec)
    if schedules is not None and (isinstance(schedules, bool) or not isinstance(schedules, int) or schedules < 1):
        raise SpecError([f"--schedules: must be an integer >= 1 (schedules per setting), got {schedules!r}"])
    check_engine(engine)
    check_workers(workers)
    check_timeout(timeout)
    root = check_runs(runs) / "campaigns"
    sweep = campaign.sweep(schedules)
    points = sweep.points()
    say(f"campaign {campaign.name}: {sweep.schedules} schedules x {len(campaign.settings)} settings = "
        f"{len(points)} runs on {engine}")
    (outcome,) = run_sweeps([sweep], workers=workers, timeout=timeout, resume=resume, runs=root, progress=progress,
                            engine=engine, master=master, spark=spark)
    judged = verdicts.collect(points, root / campaign.name)
    result = CampaignOutcome(campaign, outcome, judged, verdicts.tally(judged, campaign.settings))
    result.processed = _publish(result, Path(processed or PROCESSED) / "campaigns" / campaign.name)
    result.seconds = time.perf_counter() - t0
    return result


def _publish(result: CampaignOutcome, final: Path) -> Path:
    """data/processed/campaigns/<campaign>/: runs, tally, meta; one rename."""
    c, s = result.campaign, result.sweep
    with staged(final) as tmp:
        result.runs.to_parquet(tmp / "runs.parquet", index=False)
        result.tally.to_parquet(tmp / "tally.parquet", index=False)
        meta = {
            "campaign": c.name, "title": c.title, "question": c.question, "source": str(c.source),
            "base": c.base, "seed": c.seed, "schedules": s.total // max(len(c.settings), 1), "runs": int(len(result.runs)),
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
