"""What a run produces: ``Result`` (summary, records, events, timeline, partitions, groups) and its run folder.

The tables are built by ``outcome.build_result``; their columns and the
summary's keys are declared in ``measures``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import yaml

from ...folders import staged
from .measures import TABLES as COLUMNS

TABLES = tuple(COLUMNS)  # records, events, timeline, partitions, groups


@dataclass
class Result:
    summary: dict  # scalars, the contract's keys and more (measures.SUMMARY)
    records: pd.DataFrame  # one row per record a producer attempted
    events: pd.DataFrame  # ISR changes, elections, faults, truncations, violations
    timeline: pd.DataFrame  # per partition: leader, LEO, HW, ISR size over time
    partitions: pd.DataFrame  # per partition at the end: losses, divergence, availability
    groups: pd.DataFrame  # per consumer group: processed, lost, duplicated, latency, rebalances
    scenario: dict = field(default_factory=dict)  # the resolved scenario that ran

    def tables(self) -> dict[str, pd.DataFrame]:
        return {name: getattr(self, name) for name in TABLES}

    def write(self, out: "str | Path", columns: dict | None = None) -> Path:
        """Write the run folder atomically: Parquet tables, summary.json, scenario.yaml.

        `columns` (e.g. run_id, swept parameters) are added to every table row
        and to the summary. An existing folder is replaced only once the new
        one is complete.
        """
        out = Path(out)
        with staged(out) as tmp:
            extra = dict(columns or {})
            extra.setdefault("seed", self.summary["seed"])
            for name, table in self.tables().items():
                table = table.copy(deep=False)
                for key, value in extra.items():
                    table[key] = value
                table.to_parquet(tmp / f"{name}.parquet", index=False)
            summary = {**self.summary, **extra}
            (tmp / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
            (tmp / "scenario.yaml").write_text(yaml.safe_dump(self.scenario, sort_keys=False))
        return out
