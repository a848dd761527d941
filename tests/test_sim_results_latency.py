"""latency: the streamed latencies take the batches a chunk at a time, read a block of the batch table at a time;
the chunks are the ones one pass over every selected row's running record count gives (each chunk as many rows
as fit in its records, a row past them alone), whatever the block size, so the histograms' sums come out alike."""

from __future__ import annotations

import mmap

import numpy as np
import pytest

from kafkamodel.sim.results import accounting, latency

from helpers import held_pages


def _whole_pass(counts: np.ndarray, size: int) -> list[slice]:
    """The chunks over all selected rows at once: from each chunk's start, the rows whose running count stays
    within `size` of the records before it, at least one."""
    reach = np.cumsum(counts)
    out, start = [], 0
    while start < len(counts):
        base = int(reach[start - 1]) if start else 0
        stop = start + 1
        while stop < len(counts) and reach[stop] - base <= size:
            stop += 1
        if reach[start] - base > size:
            stop = start + 1
        out.append(slice(start, stop))
        start = stop
    return out


@pytest.mark.parametrize("seed", range(40))
def test_chunks_read_a_block_at_a_time_are_the_whole_passes(seed, monkeypatch):
    rng = np.random.default_rng(seed)
    monkeypatch.setattr(accounting, "BLOCK", int(rng.choice([1, 3, 64, 1 << 20])))
    nb = int(rng.integers(0, 2000))
    count = rng.integers(1, int(rng.choice([2, 10, 300])), nb).astype(np.int16)
    mask = rng.random(nb) < rng.random()
    size = int(rng.choice([1, 5, 50, 500]))
    rows = np.flatnonzero(mask)
    want = [(rows[s].tolist(), count[rows][s].tolist()) for s in _whole_pass(count[rows], size)]
    got = [(r.tolist(), n.tolist()) for r, n in latency._chunks(lambda a, b: mask[a:b], count, size)]
    assert got == want
    assert sum(len(r) for r, _ in want) == len(rows)


@pytest.mark.parametrize("seed", range(20))
def test_chunks_fed_in_pieces_are_the_whole_passes(seed):
    """A run's folding feeds the packer the settled rows a sweep at a time, the end the rest: the same chunks."""
    rng = np.random.default_rng(seed)
    nb = int(rng.integers(0, 2000))
    count = rng.integers(1, int(rng.choice([2, 10, 300])), nb).astype(np.int16)
    size = int(rng.choice([1, 5, 50, 500]))
    want = [(list(range(nb))[s], count[s].tolist()) for s in _whole_pass(count, size)]
    packer = latency._Packer(size)
    cuts = np.sort(rng.integers(0, nb + 1, int(rng.integers(0, 6))))
    got, at = [], 0
    for cut in cuts.tolist():
        rows = np.arange(at, cut, dtype=np.int64)
        got += [(r.tolist(), n.tolist()) for r, n in packer.feed(rows, count[rows])]
        at = cut
    got += [(r.tolist(), n.tolist()) for r, n in latency._chunks(lambda a, b: np.ones(b - a, bool), count, size,
                                                                   packer, at)]
    assert got == want


# shipped scenarios that fold (no consumer group, no operations, open-loop producers): leader crashes with acks=1
# and acks=all, unclean elections, retries with duplicates, delivery timeouts, refusals below min.insync.replicas
FOLDED = ("acks1-leader-crash", "acksall-leader-crash", "unclean-election", "unclean-election-empty-leader",
          "producer-retry-duplicates", "producer-timeout-duplicates", "producer-timeout-idempotent",
          "min-isr-refusal", "producer-refusal-reordering", "jepsen-2013")


def _run(scenario: dict, fold: bool, monkeypatch):
    from kafkamodel.config.scenario import load_scenario
    from kafkamodel.sim.clients import workload
    from kafkamodel.sim.simulation import Simulation

    monkeypatch.setattr(workload, "FOLD", fold)
    monkeypatch.setattr(workload, "POISON", fold)  # (a record given back is poisoned: a read of one shows)
    sim = Simulation(load_scenario(scenario))
    return sim, sim.run().summary


def _shipped(name: str) -> dict:
    import yaml

    from shipped import SCENARIOS

    scenario = yaml.safe_load((SCENARIOS / f"{name}.yaml").read_text())
    scenario["results.records"] = "none"
    return scenario


def _same(a: dict, b: dict) -> None:
    assert list(a) == list(b)
    for k in a:
        assert a[k] == b[k] or (a[k] != a[k] and b[k] != b[k]), k  # (NaN equals NaN here)


@pytest.mark.parametrize("name", FOLDED)
def test_folding_as_the_run_goes_gives_the_same_summary_and_reads_no_record_given_back(name, monkeypatch):
    """Small chunks and a sweep every 5 simulated ms, so batches fold all through the run; every record given back
    is poisoned (NaN times, keys of 127 digits), so a read of one after changes a batch's bytes, a latency or a
    timeout. Every key of the summary equals the one of the run that folds nothing."""
    monkeypatch.setattr(latency, "CHUNK", 64)
    monkeypatch.setattr(latency, "FOLD_MS", 5.0)
    scenario = _shipped(name)
    _, want = _run(scenario, False, monkeypatch)
    sim, got = _run(scenario, True, monkeypatch)
    assert sim.workload.fold is not None and sim.workload.fold.done > 0  # (it folded some during the run)
    assert (sim.workload.pages.released > sim.workload.lo).any()  # (and gave records back)
    _same(want, got)


def test_a_producer_taken_over_after_records_were_given_back(monkeypatch):
    """An open-loop producer whose pool fills (a small buffer.memory while the leader is slow, then lost) is taken
    over by its application thread after some of its records were given back: its search of its times starts past
    them, and folding goes on, with the send() calls of the records whose send() blocked (``keep_called``): the same
    summary."""
    monkeypatch.setattr(latency, "CHUNK", 64)
    monkeypatch.setattr(latency, "FOLD_MS", 5.0)
    scenario = _shipped("acksall-leader-crash")
    scenario["producers"][0].update({"buffer.memory": 2_000_000, "keys": {"cardinality": 1000}})
    scenario["topics"][0]["partitions"] = 4
    _, want = _run(scenario, False, monkeypatch)
    sim, got = _run(scenario, True, monkeypatch)
    assert sim.producer.states[0].app is not None  # (taken over)
    assert len(sim.workload.blocked[0]) and sim.workload.fold.done > 0  # (some of its send() calls blocked; folded)
    _same(want, got)


def test_a_production_shaped_run_gives_most_of_its_records_bytes_back(monkeypatch):
    """The production case's producers (300k keyed 1 KiB records/s, linger.ms 5, batch.size 64 KiB, acks=all) on
    12 partitions for a simulated second: by the last sweep most of the records' pages (times and keys, 9 bytes a
    record) are given back, as the model counts them (``RecordPages.released_bytes``), and the results are those of
    a run that folds nothing."""
    scenario = {  # (bench.production's, on 12 partitions of 3 brokers, one producer)
        "name": "production-shaped", "seed": 7, "kafka.version": "3.7", "duration.ms": 1000.0,
        "results.records": "none", "brokers": 3, "racks": ["a", "b", "c"],
        "topics": [{"name": "events", "partitions": 12, "replication.factor": 3}],
        "producers": [{"topic": "events", "rate.per.s": 300_000, "acks": "all", "linger.ms": 5,
                       "batch.size": 65536, "record.size.bytes": 1024, "keys": {"cardinality": 1_000_000}}],
    }
    from kafkamodel.config.scenario import load_scenario
    from kafkamodel.sim.simulation import Simulation

    sim = Simulation(load_scenario(scenario))
    got = sim.run().summary
    w = sim.workload
    assert w.pages is not None
    assert w.pages.released_bytes > 0.6 * w.records * 9
    _, want = _run(scenario, False, monkeypatch)
    _same(want, got)


def _present_pages(a: np.ndarray) -> int:
    """Pages of the array's memory the process holds (``helpers.held_pages``)."""
    return held_pages(a.__array_interface__["data"][0], a.nbytes)


def test_a_take_over_writes_the_slots_not_sent_only_as_its_application_thread_gets_near(monkeypatch):
    """The production-shaped run with a small buffer.memory: its pool fills early and its application thread takes
    over. The slots of its records not made yet read +inf to the accumulator (nothing sent there), but they are
    written only as the thread gets near them (``application.Unsent``), not all at the take-over: 0.3 simulated s
    in (of 1), the accumulator's times hold the pages of the records the thread sent and about a page or two a
    partition ahead (each partition's range also shares a page with the next one's), not every page of the run's
    records. The results are those of a run that folds nothing."""
    scenario = {  # (test_a_production_shaped_run_gives_most_of_its_records_bytes_back's, with a 2 MB pool)
        "name": "production-shaped", "seed": 7, "kafka.version": "3.7", "duration.ms": 1000.0,
        "results.records": "none", "brokers": 3, "racks": ["a", "b", "c"],
        "topics": [{"name": "events", "partitions": 12, "replication.factor": 3}],
        "producers": [{"topic": "events", "rate.per.s": 300_000, "acks": "all", "linger.ms": 5,
                       "batch.size": 65536, "record.size.bytes": 1024, "keys": {"cardinality": 1_000_000},
                       "buffer.memory": 2_000_000}],
    }
    from kafkamodel.config.scenario import load_scenario
    from kafkamodel.sim.simulation import Simulation

    sim = Simulation(load_scenario(scenario))
    seen = {}

    def look() -> None:
        w, app = sim.workload, sim.producer.states[0].app
        assert app is not None and w.pages is not None  # (taken over, and the times in a map of their own)
        seen["sent"] = int((app.filled - w.lo[0]).sum())
        seen["present"] = _present_pages(w.pages.times)
        seen["pages"] = -(-w.pages.times.nbytes // mmap.PAGESIZE)

    sim.kernel.schedule(300.0, look)
    got = sim.run().summary
    per = mmap.PAGESIZE // 8
    assert seen["pages"] > 500  # (a map of about 300,000 records' times: main wrote every page at the take-over)
    assert seen["present"] <= seen["sent"] // per + 4 * 12 + 2
    assert seen["present"] < seen["pages"] // 2
    _, want = _run(scenario, False, monkeypatch)
    _same(want, got)


def test_the_times_kept_at_the_end_skip_only_the_pages_given_back():
    """``Workload.send_calls`` at the end writes only the records outside the pages given back (writing one would
    take it again); every other record of the span is written."""
    from kafkamodel.sim.clients.workload import RecordPages

    pages = RecordPages(10_000)
    per = pages.PAGE // 8
    pages.given[0][[1, 2, 5, 19]] = True
    assert pages.kept(0, 10_000) == [(0, per), (3 * per, 5 * per), (6 * per, 19 * per)]
    assert pages.kept(per + 88, 6 * per - 8) == [(3 * per, 5 * per)]
    assert pages.kept(per + 1, 2 * per) == []
    assert pages.kept(7, 99) == [(7, 99)]
