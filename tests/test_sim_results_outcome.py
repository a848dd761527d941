"""results.outcome with results.records: all | sample | none. Without the per-record table the summary is the
same: every count equal (loss, duplicates, order and delivery are counted per batch either way), the percentiles
from the streamed histogram within its stated error of the exact ones, p99.9 and the maxima equal; sample keeps
every k-th record of the full table, as it is."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from kafkamodel.sim.results.histogram import ABSOLUTE_ERROR_MS, RELATIVE_ERROR
from kafkamodel.sim.results.measures import TABLES
from kafkamodel.sim.results.outcome import SAMPLE_RECORDS, _divergence, _key_categories, sample_indices
from kafkamodel.sim.storage.log import Log

from shipped import SCENARIOS, run

SHIPPED = sorted(p.stem for p in SCENARIOS.glob("*.yaml"))
# faults and truncations, retries with and without idempotence, consumer groups, operations
MIXED = ("kip101-hw-truncation-loss", "unclean-election", "producer-retry-duplicates", "producer-retry-idempotent",
         "producer-refusal-reordering", "delivery-at-least-once", "delivery-at-most-once", "delivery-exactly-once")
APPROXIMATE = ("produce_latency_ms_p50", "produce_latency_ms_p99", "e2e_latency_ms_p50", "e2e_latency_ms_p99",
               "consume_e2e_latency_ms_p50", "consume_e2e_latency_ms_p99", "operation_produce_p50_ms",
               "operation_produce_p99_ms")
GROUP_APPROXIMATE = ("consume_e2e_latency_ms_p50", "consume_e2e_latency_ms_p99")


def assert_same_summary(full: dict, streamed: dict) -> None:
    assert full.keys() == streamed.keys()
    groups = {k.split(".")[0] for k in full if "." in k}
    approximate = set(APPROXIMATE) | {f"{g}.{k}" for g in groups for k in GROUP_APPROXIMATE}
    for key, exact in full.items():
        value = streamed[key]
        if key in approximate and exact is not None:
            assert abs(value - exact) <= RELATIVE_ERROR * abs(exact) + ABSOLUTE_ERROR_MS + 1e-12 * abs(exact), key
        elif key == "produce_latency_ms_mean" and exact is not None:
            assert value == pytest.approx(exact, rel=1e-12)  # (a sum in chunks: float rounding only)
        else:
            assert value == exact, (key, exact, value)  # counts, p99.9s, maxima: exactly


def check_modes(name: str, seed: int | None = None) -> None:
    seed = {} if seed is None else {"seed": seed}
    full = run(name, **seed)
    none = run(name, **seed, **{"results.records": "none"})
    assert_same_summary(full.summary, none.summary)
    assert len(none.records) == 0 and list(none.records.columns) == list(TABLES["records"])
    assert none.records.dtypes.astype(str).to_dict() == full.records.dtypes.astype(str).to_dict()
    for table in ("events", "timeline", "partitions", "groups", "zones"):  # the other tables: as they were
        a, b = getattr(full, table), getattr(none, table)
        approximate = [c for c in b.columns if c in GROUP_APPROXIMATE]
        pd.testing.assert_frame_equal(a.drop(columns=approximate), b.drop(columns=approximate))


@pytest.mark.parametrize("name", SHIPPED)
def test_without_the_table_the_summary_is_the_same_within_the_histograms_error(name):
    check_modes(name)


@pytest.mark.parametrize("seed", [3, 4])
@pytest.mark.parametrize("name", MIXED)
def test_without_the_table_faults_retries_and_groups_count_the_same(name, seed):
    check_modes(name, seed)


@pytest.mark.parametrize("name", ["delivery-at-least-once", "steady-state"])
def test_without_the_table_an_operations_window_counts_the_same(name):
    """The produce latency of the records sent during the operations (a rolling restart): streamed the same."""
    ops = [{"at.ms": 1000, "kind": "rolling_restart", "gate": "no_under_replicated"}]
    full = run(name, operations=ops).summary
    assert full["operation_produce_max_ms"] is not None and full["operation_produce_errors"] > 0
    assert_same_summary(full, run(name, operations=ops, **{"results.records": "none"}).summary)


def test_without_the_table_no_column_of_every_batchs_times_is_made(monkeypatch):
    """A run without the table reads its batches' ack and visible times a chunk at a time (the streamed latencies):
    no float64 column of every batch (527 MB at the end of the 60-second production case) is made for it."""
    from kafkamodel.sim.results.accounting import BatchAccount

    def refuse(self):
        raise AssertionError("a column of every batch's times made for a run without the table")

    base = run("steady-state", **{"duration.ms": 2000, "results.records": "none"}).summary
    monkeypatch.setattr(BatchAccount, "visible_ms", property(refuse))
    monkeypatch.setattr(BatchAccount, "ack_ms", property(refuse))
    assert run("steady-state", **{"duration.ms": 2000, "results.records": "none"}).summary == base


def test_the_comparison_covers_the_keys_that_differ():
    """Not vacuous: the runs above lose, duplicate and reorder records, and their streamed percentiles do differ
    from the exact ones (the bound is what lets them pass, not equality)."""
    full = run("producer-refusal-reordering")
    none = run("producer-refusal-reordering", **{"results.records": "none"})
    assert full.summary["records_duplicated"] > 0 and full.summary["records_out_of_order"] > 0
    assert none.summary["produce_latency_ms_p50"] != full.summary["produce_latency_ms_p50"]
    lost = run("kip101-hw-truncation-loss", **{"results.records": "none"}).summary
    assert lost["acked_records_lost"] > 0


@pytest.mark.parametrize("name", ["steady-state", "delivery-at-least-once"])
def test_sample_keeps_every_kth_row_of_the_full_table(name):
    full = run(name)
    sample = run(name, **{"results.records": "sample"})
    n = len(full.records)
    idx = sample_indices(n)
    k = -(-n // SAMPLE_RECORDS)
    assert len(sample.records) == len(idx) <= SAMPLE_RECORDS and np.array_equal(idx, np.arange(0, n, k))
    expected = full.records.iloc[idx].reset_index(drop=True)
    expected["key"] = expected["key"].cat.remove_unused_categories()  # (the sample's own keys)
    pd.testing.assert_frame_equal(sample.records, expected)
    assert_same_summary(full.summary, sample.summary)


def test_the_default_keeps_the_table():
    """The default is all: the studies that pool record latencies (record_latency: true) and result.records
    (DESIGN's contract) see every record."""
    r = run("key-ordering")
    assert len(r.records) == r.summary["records_sent"] > 0
    assert r.scenario["results.records"] == "all"


@pytest.mark.parametrize("name", ["delivery-at-most-once", "steady-state"])
def test_streamed_latencies_do_not_depend_on_the_chunk_size(name, monkeypatch):
    """Batches are streamed CHUNK records at a time; chunks of 997 records (a batch alone when larger) give the
    same summary."""
    from kafkamodel.sim.results import latency

    big = run(name, **{"results.records": "none"}).summary
    monkeypatch.setattr(latency, "CHUNK", 997)
    small = run(name, **{"results.records": "none"}).summary
    assert small.keys() == big.keys()
    for key, value in big.items():
        if key.endswith("_mean") and value is not None:
            assert small[key] == pytest.approx(value, rel=1e-12)  # (sums in other chunks: float rounding)
        else:
            assert small[key] == value, key


# ---- the divergence measures on hand-built logs: entries are (base, end, leader epoch, batch id) ----------------

def _replica(broker, hw, entries):
    log = Log(1 << 30, [100] * 10)
    for base, end, epoch, batch in entries:
        log.append(base, end, epoch, batch, 0.0)
    return SimpleNamespace(broker=broker, high_watermark=hw, log=log)


SHARED = [(0, 10, 0, 1), (10, 20, 0, 2)]


def test_a_tail_above_the_high_watermarks_is_uncommitted_divergence_only():
    leader = _replica(1, 40, SHARED + [(20, 21, 1, -1), (21, 40, 1, 5)])
    old_leader = _replica(0, 20, SHARED + [(20, 23, 0, 3)])  # an uncommitted epoch-0 tail of 3 offsets
    follower = _replica(2, 40, leader.log.entry_list())
    end = SimpleNamespace(replicas=[{0: old_leader, 1: leader, 2: follower}])
    part = SimpleNamespace(index=0, replicas=(0, 1, 2), last_leader=1)
    assert _divergence(end, part) == (0, 3)


def test_disagreeing_committed_prefixes_count_each_offset_once():
    # an unclean election: the new leader (1) never had offsets 10-20 that broker 0 committed; broker 2 has
    # yet another history; every pair disagrees on 10-20 below both HWs, counted once
    leader = _replica(1, 30, [(0, 10, 0, 1), (10, 30, 1, 7)])
    other = _replica(0, 20, SHARED)
    third = _replica(2, 30, [(0, 10, 0, 1), (10, 30, 2, 8)])
    end = SimpleNamespace(replicas=[{0: other, 1: leader, 2: third}])
    part = SimpleNamespace(index=0, replicas=(0, 1, 2), last_leader=1)
    committed, uncommitted = _divergence(end, part)
    assert committed == 20  # 10-20 (all three pairs) and 20-30 (leader vs third)
    assert uncommitted == 0  # nothing above both HWs with the leader that is not already committed


@pytest.mark.parametrize("cardinality", [1, 10, 10_000, 10**9, 2**40])
@pytest.mark.parametrize("null_share", [0.0, 0.3, 1.0])
def test_key_categories_are_np_uniques_with_the_null_key_missing(cardinality, null_share):
    """The records table's key column: the codes and names np.unique gives (sorted keys present; the null key -1
    coded -1, not named), whether the keys present are marked in an array (a cardinality within a few times the
    records) or sorted (a wide one)."""
    rng = np.random.default_rng(cardinality)
    key = rng.integers(0, cardinality, 5000, dtype=np.int64)
    key[rng.random(5000) < null_share] = -1
    for held in (key, key.astype(np.int32)) if cardinality < 2**31 else (key,):
        codes, names = _key_categories(held)
        unique, inverse = np.unique(held, return_inverse=True)
        expected = inverse.astype(np.int32) - (1 if unique[0] < 0 else 0)
        if unique[-1] < 0:
            expected = np.full(len(held), -1, dtype=np.int32)
        assert codes.dtype == np.int32 and np.array_equal(codes, expected)
        assert names == [f"key-{k}" for k in unique.tolist() if k >= 0]
    codes, names = _key_categories(np.empty(0, dtype=np.int32))
    assert len(codes) == 0 and names == []
