"""controller.placement: Kafka's rack-aware replica placement, its own test cases (AdminRackAwareTest), then its
invariants, and a run placing replicas by it (or keeping the replicas a topic gives)."""

from __future__ import annotations

from collections import Counter

import pytest

from kafkamodel import simulate
from kafkamodel.sim.controller.placement import rack_alternated, rack_aware


def test_rack_alternated_list_and_assignment_are_kafkas():
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    assert rack_alternated(racks) == [0, 3, 1, 5, 4, 2]
    assert rack_alternated({k: v for k, v in racks.items() if k != 5}) == [0, 3, 1, 4, 2]
    # assignReplicasToBrokers(brokers, 7 partitions, RF 3, fixedStartIndex 0, startPartitionId 0)
    assert rack_aware(7, 3, racks) == [(0, 3, 1), (3, 1, 5), (1, 5, 4), (5, 4, 2), (4, 2, 0), (2, 0, 3), (0, 4, 2)]


@pytest.mark.parametrize("brokers,racks,partitions,rf", [
    (6, ["rack1", "rack2", "rack2", "rack3", "rack3", "rack1"], 6, 3),
    (6, ["rack1", "rack2", "rack2", "rack3", "rack3", "rack1"], 12, 2),
    (6, ["a", "b", "c"], 12, 3),
    (9, ["a", "b", "c"], 18, 5),
    (4, ["a", "b"], 8, 3),
])
def test_replicas_span_min_rf_racks_and_leaders_and_replicas_spread_evenly(brokers, racks, partitions, rf):
    rack_of = {b: racks[b % len(racks)] if len(racks) < brokers else racks[b] for b in range(brokers)}
    assignment = rack_aware(partitions, rf, rack_of)
    n_racks = len(set(rack_of.values()))
    for replicas in assignment:
        assert len(set(replicas)) == rf
        assert len({rack_of[b] for b in replicas}) == min(rf, n_racks)
    leaders = Counter(r[0] for r in assignment)
    assert set(leaders.values()) == {partitions // brokers}
    counts = Counter(b for r in assignment for b in r)
    assert set(counts.values()) == {partitions * rf // brokers}


def test_a_run_places_replicas_rack_aware_and_reports_them():
    r = simulate({"name": "racks", "duration.ms": 500, "brokers": 6, "racks": ["a", "b", "c"],
                  "topics": [{"name": "t", "partitions": 6, "replication.factor": 3}],
                  "producers": [{"topic": "t", "rate.per.s": 100}]})
    racks = {b: "abc"[b % 3] for b in range(6)}
    expected = [",".join(map(str, replicas)) for replicas in rack_aware(6, 3, racks)]
    assert list(r.partitions.replicas) == expected
    assert all(len({racks[int(b)] for b in row.split(",")}) == 3 for row in r.partitions.replicas)
    assert list(r.partitions.leader) == [int(row.split(",")[0]) for row in expected]


def test_a_topic_given_its_replicas_keeps_them_and_leads_from_the_first():
    # as kafka-topics --describe printed them for an operator's cluster (cluster import reads them): not the placement
    given = [[2, 0, 1], [2, 1, 0], [0, 2, 1], [1, 2, 0]]
    r = simulate({"name": "given", "duration.ms": 500, "brokers": 3,
                  "topics": [{"name": "t", "partitions": 4, "replication.factor": 3, "replicas": given}],
                  "producers": [{"topic": "t", "rate.per.s": 100}]})
    assert list(r.partitions.replicas) == [",".join(map(str, g)) for g in given]
    assert list(r.partitions.leader) == [g[0] for g in given]
    assert r.summary["records_acked"] > 0
