"""What a run produces: ``Result`` (summary, records, events, timeline, partitions, groups, zones) and its run folder.

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

TABLES = tuple(COLUMNS)  # records, events, timeline, partitions, groups, zones


def arrow_table(table: pd.DataFrame, columns: dict | None = None):
    """A table as an Arrow table, with `columns` (name -> one value) added to every row, typed as the Parquet
    file ``write_parquet`` writes holds them (what the Spark engine returns as rows)."""
    import pyarrow as pa

    arrow = pa.Table.from_pandas(table, preserve_index=False)
    for key, value in (columns or {}).items():  # appended in Arrow: a pandas column insert per key costs more
        column = pa.array([value] * arrow.num_rows, type=pa.array([value]).type)  # typed in an empty table too
        at = arrow.schema.get_field_index(key)
        arrow = arrow.set_column(at, key, column) if at >= 0 else arrow.append_column(key, column)
    return arrow


def write_parquet(table: pd.DataFrame, path: Path, columns: dict | None = None) -> None:
    """A table as compact, typed Parquet, with `columns` (name -> one value) added to every row: zstd; floats
    byte-stream-split and integers delta-coded (a log's offsets and times are long runs of close values),
    dictionaries for everything else. Lossless: the values read back are the values written."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrow = arrow_table(table, columns)
    encoding = {}
    for f in arrow.schema:
        if pa.types.is_floating(f.type):
            encoding[f.name] = "BYTE_STREAM_SPLIT"
        elif pa.types.is_integer(f.type):
            encoding[f.name] = "DELTA_BINARY_PACKED"
    pq.write_table(arrow, path, compression="zstd", column_encoding=encoding,
                   use_dictionary=[n for n in arrow.column_names if n not in encoding])


YAML_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml's emitter when PyYAML has it: the same text


@dataclass
class Result:
    summary: dict  # scalars, the contract's keys and more (measures.SUMMARY)
    records: pd.DataFrame  # one row per record a producer attempted
    events: pd.DataFrame  # ISR changes, elections, faults, truncations, violations
    timeline: pd.DataFrame  # per partition: leader, LEO, HW, ISR size over time
    partitions: pd.DataFrame  # per partition at the end: losses, divergence, availability
    groups: pd.DataFrame  # per consumer group: processed, lost, duplicated, latency, rebalances
    scenario: dict = field(default_factory=dict)  # the resolved scenario that ran
    zones: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=list(COLUMNS["zones"])))  # record bytes
    # from zone to zone per second and kind (results.zones)

    def tables(self) -> dict[str, pd.DataFrame]:
        return {name: getattr(self, name) for name in TABLES}

    def write(self, out: "str | Path", columns: dict | None = None, tables: "tuple[str, ...] | None" = None) -> Path:
        """Write the run folder atomically: Parquet tables (``write_parquet``), summary.json, scenario.yaml.

        `columns` (e.g. run_id, swept parameters) are added to every table row
        and to the summary; `tables`: which tables to write (default: all). An
        existing folder is replaced only once the new one is complete.
        """
        out = Path(out)
        with staged(out) as tmp:
            extra = self.row_columns(columns)
            for name, table in self.tables().items():
                if tables is not None and name not in tables:
                    continue
                write_parquet(table, tmp / f"{name}.parquet", extra)
            (tmp / "summary.json").write_text(self.summary_json(extra))
            (tmp / "scenario.yaml").write_text(self.scenario_yaml())
        return out

    def row_columns(self, columns: dict | None = None) -> dict:
        """What every row of the run's tables carries: `columns`, and the seed."""
        extra = dict(columns or {})
        extra.setdefault("seed", self.summary["seed"])
        return extra

    def summary_json(self, columns: dict) -> str:
        """summary.json's text: the summary with `columns` (``row_columns``)."""
        return json.dumps({**self.summary, **columns}, indent=2, sort_keys=True) + "\n"

    def scenario_yaml(self) -> str:
        """scenario.yaml's text: the resolved scenario that ran."""
        return yaml.dump(self.scenario, Dumper=YAML_DUMPER, sort_keys=False)
