"""The divergence measures on hand-built logs: entries are (base, end, leader epoch, batch id)."""

from __future__ import annotations

from types import SimpleNamespace

from kafkamodel.sim.results.invariants import diverging_ranges
from kafkamodel.sim.results.outcome import _divergence


def _replica(broker, hw, entries):
    log = SimpleNamespace(entries=entries, log_end_offset=entries[-1][1] if entries else 0)
    return SimpleNamespace(broker=broker, high_watermark=hw, log=log)


SHARED = [(0, 10, 0, 1), (10, 20, 0, 2)]


def test_ranges_start_where_the_logs_part_and_stop_at_the_bound():
    a = SHARED + [(20, 25, 0, 3), (25, 30, 0, 4)]
    b = SHARED + [(20, 21, 1, -1), (21, 26, 1, 3), (26, 40, 1, 5)]
    assert diverging_ranges(a, b, 100) == [(20, 30)]  # the same batch 3 one offset later still differs
    assert diverging_ranges(a, b, 23) == [(20, 23)]
    assert diverging_ranges(a, a, 100) == []


def test_a_tail_above_the_high_watermarks_is_uncommitted_divergence_only():
    leader = _replica(1, 40, SHARED + [(20, 21, 1, -1), (21, 40, 1, 5)])
    old_leader = _replica(0, 20, SHARED + [(20, 23, 0, 3)])  # an uncommitted epoch-0 tail of 3 offsets
    follower = _replica(2, 40, list(leader.log.entries))
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
