"""The detailed runs on the campaign's engines: papermill (a notebook per batch of runs) or Spark (a task per run).

``estimate.run_all`` gives the detailed runs not kept yet to ``run_detailed``
when the engine is not ``local``. Each becomes a sweep point
(``detailed_point``: the durability spec's base scenario, the configuration's
overrides, the class's compressed faults and its duration, the scenario's own
seed), the points a ``DetailedSweep`` (a study kit Spec whose points are given,
as the campaign's ``CampaignSweep``), and ``kit.sweep.run_sweeps`` runs them
as it runs a campaign's schedules: run folders under ``<root>/durability/``,
finished ones skipped on a rerun, a failed point recorded and retried next
time. Each run's answer is the ``acked_records_lost`` of the measured
partition in its ``partitions.parquet`` (``records_lost``): the number ``estimate.measure``
reads from the same simulation in-process, so every engine writes the same
durability.json.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..kit import ENGINES as KIT_ENGINES
from ..kit import DEFAULT_POINT_NOTEBOOK, Point, Spec, StudyError, point_of, run_sweeps

STUDY = "durability"  # the sweep's study name: its run folders go to <root>/durability/
ENGINES = ("local", *KIT_ENGINES)  # local: in-process, or a process pool (--workers)


def check_durability_engine(engine) -> str:
    """`engine`, one of ENGINES (a StudyError naming --engine otherwise: one line, exit 2)."""
    if engine not in ENGINES:
        raise StudyError([f"--engine: must be one of {', '.join(ENGINES)}, got {engine!r}"])
    return engine


@dataclass(frozen=True)
class DetailedSweep(Spec):
    """A Spec whose points are the detailed runs given (one part per configuration)."""

    given: tuple = ()  # of Point

    def _points(self, scale) -> list[Point]:
        return list(self.given)


def detailed_point(base: str, base_path: str, configuration: str, overrides: dict, extra: dict,
                   seed: int) -> Point:
    """The sweep point of one detailed run: `base` (as written, its file `base_path`) with the configuration's
    `overrides`, then `extra` (the class's faults and duration.ms), on the scenario's `seed`: the scenario
    ``estimate.measure`` simulates (``configuration.scenario.with_overrides(extra)``)."""
    return point_of(STUDY, configuration, base, base_path, {**overrides, **extra}, {}, seed,
                    records=False)  # the partitions table is enough


def records_lost(partitions, topic: str, partition: int) -> int:
    """`topic`-`partition`'s acked_records_lost in a run's partitions table (in-process or read back)."""
    row = partitions[(partitions.topic == topic) & (partitions.partition == partition)]
    return int(row.acked_records_lost.iloc[0])


def run_detailed(todo: list, *, engine: str, root: Path, workers: int | None, progress: bool, master=None,
                 spark=None, timeout: float = 3600.0) -> tuple[dict, dict]:
    """Run `todo` ((key, point, topic, partition)) on `engine` into `root`/durability/; returns ({key: records
    lost} for the runs that finished, {key: Exception} for those that failed)."""
    import pyarrow.parquet as pq

    points = tuple(p for _, p, _, _ in todo)  # (no parts: DetailedSweep's points are given)
    sweep = DetailedSweep(STUDY, "durability detailed runs", "acknowledged records lost per class of critical "
                          "events", None, DEFAULT_POINT_NOTEBOOK, {}, {}, (), "active", "", 100, "", given=points)
    (outcome,) = run_sweeps([sweep], workers=workers, timeout=timeout, runs=root, progress=progress, engine=engine,
                            master=master, spark=spark)
    failed = dict(outcome.failed)
    got, failures = {}, {}
    for key, point, topic, partition in todo:
        if point.run_id in failed:
            failures[key] = RuntimeError(failed[point.run_id])
            continue
        table = pq.read_table(Path(root) / STUDY / point.run_id / "partitions.parquet",
                              columns=["topic", "partition", "acked_records_lost"]).to_pandas()
        got[key] = records_lost(table, topic, partition)
    return got, failures
