"""sim/broker/quotas.py: replication throttles (KIP-73) as Kafka's code applies them. Each expectation is computed
here from the rate and the bytes given, and each rule is the one named in Kafka's code:

* KafkaApis.sizeOfThrottledPartitions / ReplicaFetcherThread.processPartitionData: every byte of a throttled
  partition counts against the quota, in-sync followers' too;
* ReplicaManager.shouldLeaderThrottle: the leader holds back any follower of a throttled partition out of the ISR;
* shouldFollowerThrottle: a follower holds back only its own throttled (added) replicas;
* replication.quota.window.num 11 x replication.quota.window.size.seconds 1: old traffic stops counting."""

from __future__ import annotations

import math

import pytest

from kafkamodel.sim.broker.quotas import DEBT_S, WINDOW_S, ReplicationQuotas

RATE = 1_000_000.0  # bytes/s, both sides
P, LEADER, OLD_FOLLOWER, ADDED = 0, 0, 1, 3  # partition 0 on 0, 1 moving to 0, 1, 3


class Clock:
    now = 0.0


def quotas(now: float = 0.0) -> tuple[ReplicationQuotas, Clock]:
    clock = Clock()
    q = ReplicationQuotas(clock, 4, None, None)
    q.throttled[P] = {ADDED}  # as Operations.reassign sets it: the added replicas
    q.set_rates(RATE)  # the allowances start empty now
    clock.now = now
    return q, clock


def test_an_unthrottled_partition_has_no_allowance():
    q, _ = quotas(500.0)
    assert q.allowance(1, LEADER, OLD_FOLLOWER, isr=(LEADER,)) is None


def test_an_in_sync_follower_is_never_held_but_its_bytes_spend_the_leaders_allowance():
    q, clock = quotas(500.0)  # half a second: RATE / 2 in each allowance
    isr = (LEADER, OLD_FOLLOWER)
    assert math.isinf(q.allowance(P, LEADER, OLD_FOLLOWER, isr))
    q.took(P, LEADER, OLD_FOLLOWER, 300_000, isr)
    # the added replica, out of the ISR, now gets what is left of the leader's half second
    assert q.allowance(P, LEADER, ADDED, isr) == pytest.approx(RATE / 2 - 300_000)
    assert q.follower[OLD_FOLLOWER].left(clock.now) == pytest.approx(RATE / 2)  # not a throttled replica there
    assert q.moved_bytes == 0 and q.throttled_bytes == 0  # in-sync replication moves nothing


def test_the_leader_holds_back_an_old_replica_out_of_the_isr_and_only_the_added_one_on_its_follower():
    q, clock = quotas(1000.0)  # a full allowance: RATE x WINDOW_S
    isr = (LEADER,)  # the old follower fell out (a bounce during the move)
    assert q.allowance(P, LEADER, OLD_FOLLOWER, isr) == pytest.approx(RATE * WINDOW_S)
    q.took(P, LEADER, OLD_FOLLOWER, 400_000, isr)
    assert q.follower[OLD_FOLLOWER].left(clock.now) == pytest.approx(RATE * WINDOW_S)  # its own side not spent
    q.took(P, LEADER, ADDED, 100_000, isr)
    assert q.follower[ADDED].left(clock.now) == pytest.approx(RATE * WINDOW_S - 100_000)
    assert q.allowance(P, LEADER, ADDED, isr) == pytest.approx(RATE * WINDOW_S - 500_000)
    assert q.moved_bytes == 100_000  # only the added replica's bytes are the move's
    assert q.throttled_bytes == 500_000  # both were given under the leader's rate


def test_what_an_allowance_owes_is_bounded_by_kafkas_quota_window():
    q, clock = quotas(0.0)
    isr = (LEADER, OLD_FOLLOWER)
    q.took(P, LEADER, OLD_FOLLOWER, int(100 * RATE), isr)  # 100 s of the rate at once
    assert q.allowance(P, LEADER, ADDED, isr) == pytest.approx(-RATE * DEBT_S)
    clock.now = DEBT_S * 1000 + 250.0  # the debt repaid, then a quarter second's worth
    assert q.allowance(P, LEADER, ADDED, isr) == pytest.approx(RATE * 0.25)
