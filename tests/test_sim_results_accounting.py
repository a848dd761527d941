"""results.accounting: loss, duplicates, order and group delivery counted per batch give, on every shipped
scenario and on several seeds of the scenarios with faults, truncations, idempotent retries and consumer groups,
exactly what a walk over the records gives.

The reference here is the per-record path, written out record by record from the run's own state: each record
takes its batch's fate (acknowledged, committed, visible), its copies are counted by walking every entry of the
final log of its partition's last leader over the entry's records, its order by walking those records in log
order, a group's loss by the records' offsets against the group's committed offsets.
"""

from __future__ import annotations

import mmap

import numpy as np
import pytest

from kafkamodel import load_scenario
from kafkamodel.sim.protocol import ACKED, FAILED
from kafkamodel.sim.simulation import Simulation

from helpers import column_span, held_pages
from shipped import SCENARIOS

SHIPPED = sorted(p.stem for p in SCENARIOS.glob("*.yaml"))
# faults and truncations, idempotent and plain retries, consumer groups (crashes, rebalances, commit policies)
MIXED = ("kip101-hw-truncation-loss", "kip101-double-power-loss-divergence", "unclean-election", "acks1-leader-crash",
         "jepsen-2013", "producer-retry-duplicates", "producer-retry-idempotent", "producer-refusal-reordering",
         "producer-timeout-duplicates", "delivery-at-least-once", "delivery-at-most-once", "delivery-exactly-once",
         "last-replica-standing-elr")
SEEDS = (3, 4, 5)


def _run(name: str, seed: int | None = None):
    scenario = load_scenario(SCENARIOS / f"{name}.yaml")
    if seed is not None:
        scenario = scenario.with_overrides({"seed": seed})
    sim = Simulation(scenario)
    return sim, sim.run()


def per_record(sim) -> dict:
    """The run's counts, record by record."""
    w, b = sim.workload, sim.batches
    n = w.records
    state = np.full(n, -1, dtype=np.int64)  # -1: never drained into a batch (pending)
    committed = np.zeros(n, dtype=bool)
    visible = np.full(n, np.nan)
    for i in range(len(b)):
        lo, hi = b.lo[i], b.lo[i] + b.count[i]
        state[lo:hi] = b.state[i]
        committed[lo:hi] = b.committed(i)
        visible[lo:hi] = b.visible_ms(i)
    copies = np.zeros(n, dtype=np.int64)
    offset = np.full(n, -1, dtype=np.int64)  # the first copy's
    out_of_order = 0
    for part in sim.partitions:
        log = sim.replicas[part.index][part.last_leader].log
        walk = []  # record indexes of every copy, in log order
        retired = list(zip(*log.retired)) if log.retired is not None else []
        for base, batch in retired + list(zip(log.bases[:log.rows], log.batch_ids[:log.rows])):
            if batch < 0:
                continue
            records = np.arange(b.lo[batch], b.lo[batch] + b.count[batch])
            copies[records] += 1
            if copies[records[0]] == 1:
                offset[records] = base + np.arange(len(records))
            walk.extend(records.tolist())
        walk = np.asarray(walk, dtype=np.int64)
        for p in np.unique(w.producer[walk]) if len(walk) else ():
            mine = walk[w.producer[walk] == p]
            later_before = np.maximum.accumulate(mine)[:-1]  # the latest-sent record before each one
            out_of_order += int((mine[1:] < later_before).sum())
    acked = state == ACKED
    groups = {}
    for g in sim.groups:
        reached = np.zeros(len(sim.partitions), dtype=np.int64)
        origin = np.zeros(len(sim.partitions), dtype=np.int64)
        for p in g.partitions:
            reached[p] = g.committed.get(p, 0)
        for p, start in g.origin.items():
            origin[p] = start
        working = np.zeros(n, dtype=bool)
        for m in g.members:
            if m.alive and m.processing is not None:
                for batch, first, last, _ in m.processing[1]:
                    working[b.lo[batch] + first:b.lo[batch] + last] = True
        in_scope = (copies > 0) & (offset >= origin[w.partition]) & (offset < reached[w.partition])
        mine = np.isin(w.partition, g.partitions) & ~np.isnan(visible)
        lag, worst = 0, 0
        events = sorted([(t, 1) for t in visible[mine]] + [(t, -1) for t in g.first_processed_ms[mine] if t == t],
                        key=lambda e: (e[0], e[1]))
        for _, step in events:
            lag += step
            worst = max(worst, lag)
        groups[g.name] = {"records_processed": int((g.processed > 0).sum()),
                          "consumed_lost": int((in_scope & (g.processed == 0) & ~working).sum()),
                          "consumed_duplicates": int((g.processed > 1).sum()),
                          "lag_records_max": worst, "lag_records_end": lag}
    return {"records_sent": n, "records_acked": int(acked.sum()), "records_failed": int((state == FAILED).sum()),
            "records_committed": int(committed.sum()),
            "acked_records_lost": int((acked & (copies == 0)).sum()),
            "committed_records_lost": int((committed & (copies == 0)).sum()),
            "records_duplicated": int((copies > 1).sum()), "out_of_order": out_of_order,
            "copies": copies, "offset": offset, "acked": acked, "groups": groups,
            "lost_per_partition": np.bincount(w.partition[acked & (copies == 0)], minlength=len(sim.partitions))}


def check_agree(sim, result) -> dict:
    ref = per_record(sim)
    s = result.summary
    for key in ("records_sent", "records_acked", "records_failed", "records_committed", "acked_records_lost",
                "committed_records_lost", "records_duplicated"):
        assert s[key] == ref[key], (key, s[key], ref[key])
    assert s["records_pending"] == s["backlog_records"] == ref["records_sent"] - ref["records_acked"] - ref["records_failed"]
    assert s["records_out_of_order"] == ref["out_of_order"]
    assert result.partitions["acked_records_lost"].tolist() == ref["lost_per_partition"].tolist()
    assert result.partitions["backlog"].sum() == s["backlog_records"]
    assert s["consumed_lost"] == sum(g["consumed_lost"] for g in ref["groups"].values())
    assert s["consumed_duplicates"] == sum(g["consumed_duplicates"] for g in ref["groups"].values())
    for name, expected in ref["groups"].items():
        for key, value in expected.items():
            assert s[f"{name}.{key}"] == value, (name, key, s[f"{name}.{key}"], value)
    if len(result.records):  # the table, when kept, says the same record by record
        assert np.array_equal(result.records["copies"].to_numpy(), ref["copies"])
        assert np.array_equal(result.records["offset"].to_numpy(), ref["offset"])
        assert np.array_equal(result.records["acked"].to_numpy(), ref["acked"])
    return ref


@pytest.mark.parametrize("name", SHIPPED)
def test_batch_accounting_is_the_record_walk_on_every_shipped_scenario(name):
    check_agree(*_run(name))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", MIXED)
def test_batch_accounting_is_the_record_walk_with_faults_retries_and_groups(name, seed):
    check_agree(*_run(name, seed))


def test_the_scenarios_exercise_what_the_accounting_must_get_right():
    """Not vacuous: across the checked runs, records are lost, duplicated, reordered, and lost to a group."""
    seen = {"acked_records_lost": 0, "records_duplicated": 0, "out_of_order": 0, "committed_records_lost": 0,
            "consumed_lost": 0}
    for name in ("kip101-hw-truncation-loss", "producer-retry-duplicates", "producer-refusal-reordering",
                 "unclean-election", "delivery-at-most-once"):
        for seed in (None, *SEEDS):
            ref = per_record(_run(name, seed)[0])
            for key in seen:
                seen[key] += ref[key] if key in ref else sum(g[key] for g in ref["groups"].values())
    assert all(v > 0 for v in seen.values()), seen


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_only_a_producer_without_idempotence_logs_records_out_of_order(seed):
    """Kafka keeps one producer's order per partition only with idempotence (KIP-98: the broker refuses a batch
    whose sequence number is not the next): the refused request resent behind an accepted one lands out of order
    without it, never with it."""
    plain = _run("producer-refusal-reordering", seed)[1].summary
    idem = _run("producer-refusal-idempotent", seed)[1].summary
    assert plain["records_out_of_order"] > 0
    assert idem["records_out_of_order"] == 0


@pytest.mark.parametrize("name", ["delivery-at-least-once", "delivery-at-most-once", "key-ordering"])
def test_a_groups_counts_do_not_depend_on_how_its_records_are_chunked(name, monkeypatch):
    """The group's arrays are read CHUNK records at a time; with chunks of 997 records (batches and polls cut
    across chunk boundaries) the counts are still the record walk's."""
    from kafkamodel.sim.results import accounting

    monkeypatch.setattr(accounting, "CHUNK", 997)
    check_agree(*_run(name))


def test_records_per_partition_are_summed_a_chunk_of_batches_at_a_time(monkeypatch):
    """The per-partition and per-producer record counts, summed BLOCK batches at a time (bounded temporaries), are
    each partition's records counted one batch at a time, with a mask or without, across chunk boundaries; so is
    the records' total over a mask (``BatchAccount.records``: the mask asked a block at a time)."""
    from types import SimpleNamespace

    from kafkamodel.sim.results import accounting

    rng = np.random.default_rng(4)
    part = rng.integers(0, 9, 1000).astype(np.int16)
    count = rng.integers(1, 2000, 1000).astype(np.int16)
    mask = rng.random(1000) < 0.5
    monkeypatch.setattr(accounting, "BLOCK", 7)
    for m in (None, mask):
        expected = [0] * 9
        for p, c, keep in zip(part.tolist(), count.tolist(), mask.tolist() if m is not None else [True] * 1000):
            expected[p] += c if keep else 0
        got = accounting._sums(part, count, None if m is None else m.__getitem__, 9)
        assert got.dtype == np.int64 and got.tolist() == expected
    total = accounting.BatchAccount.records(SimpleNamespace(count=count, fold=None, base=0), mask.__getitem__)
    assert total == sum(c for c, keep in zip(count.tolist(), mask.tolist()) if keep)


# ---- the account folded as the run goes (AccountFold) ------------------------------------------------------------

def _record_walk_behind(logs: list, lo: np.ndarray, count: np.ndarray, producer: np.ndarray) -> int:
    """Records out of their producer's order, walked record by record: in each log, each producer's records in log
    order, a record counted when a record of the producer before it was sent later (``per_record``'s walk)."""
    total = 0
    for ids in logs:
        for p in set(producer[ids].tolist()):
            walk = [r for b in ids if producer[b] == p for r in range(lo[b], lo[b] + count[b])]
            latest = -1
            for r in walk:
                total += r < latest
                latest = max(latest, r)
    return total


@pytest.mark.parametrize("seed", range(6))
def test_order_read_in_pieces_with_each_producers_latest_carried_is_the_record_walk(seed):
    """``order_behind`` over the logs read a random number of rows at a time (as the fold's sweeps read them, each
    producer's latest record per log carried in `reach`) counts what one pass over each whole log counts, and
    what the record walk counts, on logs with batches resent out of order and duplicated."""
    from kafkamodel.sim.results.accounting import order_behind

    rng = np.random.default_rng(seed)
    producers, nlogs = 3, 4
    lo, count, producer, log_of = [], [], [], []
    for p in range(producers):  # each producer's records by partition, then send order (the workload's layout)
        for g in range(nlogs):
            for _ in range(int(rng.integers(1, 25))):
                lo.append(sum(count) if count else 0)
                n = int(rng.integers(1, 6))
                count.append(n)
                producer.append(p)
                log_of.append(g)
    lo, count = np.array(lo, dtype=np.int32), np.array(count, dtype=np.int8)
    producer, log_of = np.array(producer, dtype=np.int64), np.array(log_of)
    order = np.argsort(rng.random(len(lo)), kind="stable")  # the producers' batches interleaved in the logs
    logs = []
    for g in range(nlogs):
        ids = [int(b) for b in order if log_of[b] == g]
        ids.sort(key=lambda b: (lo[b] + rng.integers(0, 12)) if rng.random() < 0.3 else lo[b])  # some resent late
        for _ in range(int(rng.integers(0, 4))):  # some duplicated, the copy later in the log
            k = int(rng.integers(0, len(ids)))
            ids.insert(int(rng.integers(k, len(ids) + 1)), ids[k])
        logs.append(np.array(ids, dtype=np.int64))
    want = _record_walk_behind(logs, lo, count, producer)
    assert want > 0  # (not vacuous)
    whole = sum(order_behind(ids, producer[ids], lo, count, np.full(producers, -1, dtype=np.int64)) for ids in logs)
    reach = np.full((nlogs, producers), -1, dtype=np.int64)
    read, pieces = [0] * nlogs, 0
    while any(r < len(ids) for r, ids in zip(read, logs)):
        taken, keys = [], []
        for g, ids in enumerate(logs):
            k = read[g] + int(rng.integers(0, 6))
            taken.append(ids[read[g]:k])
            keys.append(g * producers + producer[ids[read[g]:k]])
            read[g] = min(k, len(ids))
        pieces += order_behind(np.concatenate(taken), np.concatenate(keys), lo, count, reach.reshape(-1))
    assert whole == pieces == want


def _no_faults(name: str, **changes) -> dict:
    """A shipped scenario without a records table, so that its account folds as it goes; `changes`: what its last
    two producers (``producers``), its topics (``topics``) or the scenario take beside."""
    import yaml

    scenario = yaml.safe_load((SCENARIOS / f"{name}.yaml").read_text())
    scenario["results.records"] = "none"
    scenario["producers"] = [dict(p) for p in scenario["producers"]]  # (YAML anchors: one mapping each)
    for p in scenario["producers"][-2:]:
        p.update(changes.get("producers", {}))
    for t in scenario["topics"]:
        t.update(changes.get("topics", {}))
    scenario.update(changes.get("scenario", {}))
    return scenario


def _folded_run(scenario: dict, fold: bool, monkeypatch):
    from kafkamodel.sim.batches import Batches
    from kafkamodel.sim.clients import workload

    monkeypatch.setattr(workload, "FOLD", fold)
    monkeypatch.setattr(Batches, "POISON", fold)  # (a row given back holds each column's largest value: a read shows)
    sim = Simulation(load_scenario(scenario))
    return sim, sim.run()


# no fault, no operation, no consumer group, no retention: the account folds. The count rule's bursts at 0.8.2,
# with two of the eight producers at acks=all and min.insync.replicas 3: the others' bursts shrink the ISR, so the
# two's appended batches are answered NOT_ENOUGH_REPLICAS_AFTER_APPEND and resent (duplicates); with their
# request.timeout.ms at 40 ms a request's connection closes, and the fold stops there. And "taken-over": the
# production-shaped producer with a 2 MB buffer.memory, whose pool fills, so its application thread takes over and
# its records are laid out again (``_relayout``) after rows were given back
ACCOUNT_FOLDED = {
    "steady-state": {},
    "three-zones": {},
    "lag-time-rule-bursts": {},
    "lag-count-rule-bursts": {},
    "duplicates": {"name": "lag-count-rule-bursts", "scenario": {"kafka.version": "0.8.2", "duration.ms": 10000},
                   "topics": {"min.insync.replicas": 3}, "producers": {"acks": "all", "retries": 10}},
    "closed": {"name": "lag-count-rule-bursts", "scenario": {"kafka.version": "0.8.2", "duration.ms": 3000},
               "topics": {"min.insync.replicas": 2},
               "producers": {"acks": "all", "retries": 10, "request.timeout.ms": 40}},
}


def _production_shaped(**producer) -> dict:
    """The production case's producer (300k keyed 1 KiB records/s, linger.ms 5, batch.size 64 KiB, acks=all) on
    1,000 partitions of 3 brokers for half a simulated second: a batch of one or two records a partition
    (`producer`: what it takes beside)."""
    return {"name": "production-shaped", "seed": 7, "kafka.version": "3.7", "duration.ms": 500.0,
            "results.records": "none", "brokers": 3, "racks": ["a", "b", "c"],
            "topics": [{"name": "events", "partitions": 1000, "replication.factor": 3}],
            "producers": [{"topic": "events", "rate.per.s": 300_000, "acks": "all", "linger.ms": 5,
                           "batch.size": 65536, "record.size.bytes": 1024, "keys": {"cardinality": 1_000_000},
                           **producer}]}


@pytest.mark.parametrize("case", sorted(ACCOUNT_FOLDED) + ["taken-over"])
def test_an_account_folded_as_the_run_goes_is_the_ends_and_reads_no_row_given_back(case, monkeypatch):
    """Swept every 5 simulated ms in small chunks, so that batches fold all through the run, and every row given back
    poisoned (``Batches.POISON``): every summary key and the partitions' table equal the run that folds nothing
    (whose account is the record walk's: the tests above)."""
    from kafkamodel.sim.results import latency

    monkeypatch.setattr(latency, "CHUNK", 64)
    monkeypatch.setattr(latency, "FOLD_MS", 5.0)
    if case == "taken-over":
        scenario = _production_shaped(**{"buffer.memory": 2_000_000})
    else:
        changes = dict(ACCOUNT_FOLDED[case])
        scenario = _no_faults(changes.pop("name", case), **changes)
    _, want = _folded_run(scenario, False, monkeypatch)
    sim, got = _folded_run(scenario, True, monkeypatch)
    account = sim.workload.fold.account
    assert account is not None
    if case == "closed":
        assert account.stopped and got.summary["records_duplicated"] > 0
    else:
        assert not account.stopped and 0.5 * len(sim.batches) < account.base  # (most rows folded, and given back)
        assert sim.batches.state[0] == 127 and sim.batches.lo[account.base // 2] == 2**31 - 1
    if case == "taken-over":  # (its slots grew after rows were given back, and were laid out again at the end)
        assert sim.producer.states[0].app is not None
    if case == "duplicates":
        assert got.summary["records_duplicated"] > 0 and got.summary["not_enough_replicas_errors"] > 0
    assert list(got.summary) == list(want.summary)
    for k, v in want.summary.items():
        assert got.summary[k] == v or (v != v and got.summary[k] != got.summary[k]), k
    assert got.partitions.equals(want.partitions)


def test_a_production_shaped_run_gives_its_folded_rows_pages_back(monkeypatch):
    """The production-shaped run (``_production_shaped``: about 77,000 batches): by the end most of the batch
    table's pages, in the columns given back, are no longer held (the kernel's page table says so). (Chunks of
    4,096 records: a row is given back once its latencies are in the histograms, a chunk at a time, and the run has
    fewer records than one chunk of ``latency.CHUNK``.)"""
    from kafkamodel.sim.batches import Batches, _madvise
    from kafkamodel.sim.results import latency

    monkeypatch.setattr(latency, "CHUNK", 4096)
    if _madvise is None:
        pytest.skip("no madvise here")
    scenario = _production_shaped()
    sim = Simulation(load_scenario(scenario))
    sim.run()
    b = sim.batches
    assert sim.workload.fold.account.base > 0.5 * len(b) > 30_000
    for name in Batches.GIVEN_BACK:
        address, size = column_span(getattr(b, name))
        assert size > 8 * mmap.PAGESIZE and held_pages(address, size) < 0.5 * size / mmap.PAGESIZE, name
