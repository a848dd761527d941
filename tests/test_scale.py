"""Issue 23's speed work keeps the model's numbers: the shortcuts taken for speed give what the plain path gives.

* a keyed batch's bytes, counted in Python for small batches and with NumPy for large ones, are Kafka's
  (``DefaultRecord.sizeInBytes`` / ``LegacyRecord``, recomputed by ``kafka_format``) on both sides of the
  switch (its test: test_sim_batches.py);
* a broker's periodic tasks walk its replicas through ``ReplicasOf``, a list that must follow a reassignment: the
  replica a move adds gets its HW checkpointed like any other;
* a run keeps Python's cyclic collector off, event loop included, because the loop makes no reference cycles: a
  full collection right after it finds nothing, in every shipped scenario (faults, elections, consumers,
  quorums), so nothing a run makes waits for the collector.
"""

from __future__ import annotations

import pytest

from kafkamodel.config.scenario import load_scenario
from kafkamodel.sim.engine.kernel import Kernel
from kafkamodel.sim.simulation import Simulation, simulate
from shipped import SCENARIOS


def test_the_replica_a_reassignment_adds_has_its_high_watermark_checkpointed():
    # 4 brokers; partition 0 moves from 0,1,2 to 3,1,2 at 6 s, after each broker's first HW checkpoint (every 5 s:
    # 5, 10, 15 s) walked its replicas; the producer stops at 5.5 s, so from the move's end on every replica's HW
    # is the partition's last offset
    sim = Simulation(load_scenario({
        "name": "checkpoint-after-move", "brokers": 4, "duration.ms": 16000, "kafka.version": "4.1",
        "topics": [{"name": "t", "partitions": 4, "replication.factor": 3}],
        "producers": [{"topic": "t", "rate.per.s": 2000, "acks": "all", "stop.ms": 5500}],
        "operations": [{"at.ms": 6000, "kind": "reassign", "topic": "t", "partitions": [0], "replicas": [[3, 1, 2]]}],
    }))
    r = sim.run()
    assert r.partitions.set_index("partition").loc[0, "replicas"] == "3,1,2"
    added = sim.replicas[0][3]
    assert added.high_watermark == added.log.log_end_offset > 0
    assert added.hw_checkpoint == added.high_watermark  # the checkpoint at 15 s covered it
    for b in range(4):
        assert sim.replicas_of(b) == [sim.replicas[p][b] for p in sim.partitions_of[b]]


def test_the_collector_is_paused_while_the_model_builds_and_left_as_it_was():
    import gc

    from kafkamodel.sim.engine.collector import collector_paused

    seen = []
    for was in (True, False):
        (gc.enable if was else gc.disable)()
        try:
            with collector_paused():
                seen.append(gc.isenabled())
            assert gc.isenabled() is was
        finally:
            gc.enable()
    assert seen == [False, False]


@pytest.mark.slow  # every shipped scenario whole: about 40 s
@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.yaml")), ids=lambda p: p.stem)
def test_the_event_loop_makes_no_cyclic_garbage(path, monkeypatch):
    import gc

    found, loop = [], Kernel.run

    def run(self, until):
        gc.collect()  # (a collection asked for runs while the collector is paused)
        loop(self, until)
        assert not gc.isenabled()  # the run pauses it
        found.append(gc.collect())  # unreachable objects: what a collection during the loop could have freed

    monkeypatch.setattr(Kernel, "run", run)
    simulate(load_scenario(path))
    assert found == [0]
    assert gc.isenabled()


def test_the_production_bench_case_is_the_cluster_issue_39_measured():
    """``bench --case production``: 12 brokers in three racks, 3,000 partitions of RF 3, six producers of 300k keyed
    1 KiB records/s (linger.ms 5, batch.size 64 KiB, acks=all) on Kafka 3.7, keeping no per-record table; a few
    simulated milliseconds of it send the records that rate gives (Poisson: within five standard deviations)."""
    from kafkamodel.bench import production
    from kafkamodel.config.settings import Settings

    scenario = production(20.0)
    s = Settings.of(scenario)
    assert (s.brokers, s.racks, s.kafka.version) == (12, ("a", "b", "c") * 4, "3.7")  # broker i in racks[i % 3]
    (topic,) = s.topics
    assert (topic.partitions, topic.replication_factor) == (3000, 3)
    assert len(s.producers) == 6
    for p in s.producers:
        assert (p.rate_per_s, p.linger_ms, p.batch_size, p.record_size_bytes, p.acks) == (300_000, 5, 65536, 1024, -1)
        assert p.key_cardinality == 1_000_000
    result = simulate(scenario)
    assert len(result.records) == 0  # results.records: none
    summary = result.summary
    expected = 6 * 300_000 * 0.020
    assert abs(summary["records_sent"] - expected) <= 5 * expected ** 0.5
    assert summary["produce_requests"] > 0 and summary["fetch_requests"] > 0
