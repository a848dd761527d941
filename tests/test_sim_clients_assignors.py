"""clients.assignors: the consumer assignors against Kafka's documented examples (their javadoc; Kafka's own test
cases, by name: test_range_cases.py, test_sticky_cases.py, test_sticky_general.py)."""

from __future__ import annotations

from kafkamodel.sim.clients.assignors import range_assign, range_ceil_assign, roundrobin_assign, sticky_assign


def test_range_assignor_matches_kafka():
    # Kafka's javadoc: 3 partitions, 2 consumers -> C0 [p0, p1], C1 [p2]
    assert range_assign(["C0", "C1"], [0, 1, 2]) == {"C0": [0, 1], "C1": [2]}
    # docs/kafka-facts.md: 4 partitions, 3 consumers -> P//C = 1 each, the first P%C = 1 one more
    assert range_assign(["C0", "C1", "C2"], [0, 1, 2, 3]) == {"C0": [0, 1], "C1": [2], "C2": [3]}
    # seed 002's ceil(P/C) variant differs there
    assert range_ceil_assign(["C0", "C1", "C2"], [0, 1, 2, 3]) == {"C0": [0, 1], "C1": [2, 3], "C2": []}


def test_roundrobin_assignor_matches_kafka():
    # javadoc: t0, t1 with 3 partitions each (0-2, 3-5): C0 [t0p0, t0p2, t1p1], C1 [t0p1, t1p0, t1p2]
    assert roundrobin_assign(["C0", "C1"], list(range(6))) == {"C0": [0, 2, 4], "C1": [1, 3, 5]}


def test_sticky_assignor_matches_kafkas_example():
    # javadoc: t0..t3 with 2 partitions each (t_i p_j = 2i + j), consumers C0, C1, C2
    first = sticky_assign(["C0", "C1", "C2"], list(range(8)), {})
    assert first == {"C0": [0, 3, 6], "C1": [1, 4, 7], "C2": [2, 5]}
    # C1 leaves: C0 and C2 keep everything they had (the javadoc's listing); AbstractStickyAssignor's constrained
    # builder deals C1's partitions in order to the members under quota, sorted: t0p1 -> C0, t2p0, t3p1 -> C2
    after = sticky_assign(["C0", "C2"], list(range(8)), first)
    assert after == {"C0": [0, 3, 6, 1], "C2": [2, 5, 4, 7]}
