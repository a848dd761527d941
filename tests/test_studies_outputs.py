"""What a sweep leaves on disk: the per-record table only where an analysis pools record latency (or when asked
to keep everything), compact typed Parquet, and a per-run size that keeps `make study` under its disk budget."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from conftest import tiny_spec_text
from kafkamodel.kit.point import execute_point
from kafkamodel.kit.specfile import all_specs, load_spec
from kafkamodel.kit.spec import StudyError
from kafkamodel.kit.sweep import check_keep

STUDY_BUDGET = 150e6  # bytes `make study` may leave under data/runs at its default scale (issue 23)
TIMES = ("send_ms", "ack_ms", "visible_ms")  # a record's only values that are neither constant nor sequential


def folder_bytes(folder) -> int:
    return sum(f.stat().st_size for f in folder.iterdir() if f.is_file())


@pytest.fixture(scope="module")
def lag_runs(tmp_path_factory):
    """Every point of the tiny lag_policies study (its stuck_follower part pools record latency, the others do
    not), one seed, written as a sweep writes them."""
    root = tmp_path_factory.mktemp("outputs")
    (root / "lag_policies.yaml").write_text(tiny_spec_text("lag_policies", 1))
    spec = load_spec(root / "lag_policies.yaml")
    points = spec.points(1)
    for p in points:
        execute_point(p, root / "runs" / p.run_id)
    return root, points


def test_records_only_where_an_analysis_pools_them(lag_runs):
    root, points = lag_runs
    for p in points:
        names = {f.name for f in (root / "runs" / p.run_id).iterdir()}
        assert {"summary.json", "summary.parquet", "events.parquet", "timeline.parquet"} <= names
        assert ("records.parquet" in names) == (p.part == "stuck_follower"), p.run_id
    assert {p.part for p in points if p.records} == {"stuck_follower"}


def test_keep_all_writes_every_table_and_reads_back_exactly(lag_runs, tmp_path):
    from kafkamodel.sim.results.result import TABLES

    root, points = lag_runs
    point = next(p for p in points if p.part == "evict_dead")
    result = execute_point(dataclasses.replace(point, records=True), tmp_path / "run")
    assert {f"{t}.parquet" for t in TABLES} <= {f.name for f in (tmp_path / "run").iterdir()}
    back = pd.read_parquet(tmp_path / "run" / "records.parquet")
    assert len(back) == len(result.records) > 0
    # lossless: the compact encodings give back the values written, numbers with their types (an all-empty
    # categorical such as `key` comes back as objects, as it did with pandas' default writer)
    numbers = list(result.records.select_dtypes(["number", "bool"]).columns)
    assert {"send_ms", "ack_ms", "offset", "acked"} <= set(numbers)
    pd.testing.assert_frame_equal(back[numbers], result.records[numbers])
    for column in set(result.records.columns) - set(numbers):
        assert back[column].astype(object).fillna("-").tolist() == \
            result.records[column].astype(object).fillna("-").tolist(), column


def test_keep_is_checked():
    assert check_keep("all") == "all"
    with pytest.raises(StudyError, match="--keep: must be one of needed, all"):
        check_keep("everything")


def test_bytes_per_run_fit_the_study_budget(lag_runs):
    root, points = lag_runs
    sizes = {p.run_id: folder_bytes(root / "runs" / p.run_id) for p in points}
    # a run without its per-record table (all but a few parts' runs) fits an equal share of the budget among
    # every shipped study's runs at the default scale
    runs_at_default = sum(len(s.points(1)) for s in all_specs() if not s.is_pending)
    assert max(size for run_id, size in sizes.items() if not run_id.startswith("stuck_follower")) < \
        STUDY_BUDGET / runs_at_default
    # a per-record table costs at most its three times, raw: send, acknowledgement and visibility are the only
    # per-record values that are not constant or sequential within a run (offsets, flags, ids code to ~nothing)
    for p in points:
        if p.records:
            path = root / "runs" / p.run_id / "records.parquet"
            rows = len(pd.read_parquet(path, columns=["offset"]))
            assert rows > 10_000 and path.stat().st_size < rows * 8 * len(TIMES)
