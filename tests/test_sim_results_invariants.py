"""results.invariants: the diverging ranges of two replicas' logs, on hand-built logs: entries are (base, end,
leader epoch, batch id)."""

from __future__ import annotations

from kafkamodel.sim.results.invariants import diverging_ranges


SHARED = [(0, 10, 0, 1), (10, 20, 0, 2)]


def test_ranges_start_where_the_logs_part_and_stop_at_the_bound():
    a = SHARED + [(20, 25, 0, 3), (25, 30, 0, 4)]
    b = SHARED + [(20, 21, 1, -1), (21, 26, 1, 3), (26, 40, 1, 5)]
    assert diverging_ranges(a, b, 100) == [(20, 30)]  # the same batch 3 one offset later still differs
    assert diverging_ranges(a, b, 23) == [(20, 23)]
    assert diverging_ranges(a, a, 100) == []
