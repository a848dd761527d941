"""Replication throttles (KIP-73), as Kafka's ReplicationQuotaManager applies them.

``kafka-reassign-partitions --throttle`` sets ``leader.replication.throttled.rate`` and
``follower.replication.throttled.rate`` on the brokers the move involves, ``leader.replication.throttled.replicas`` to
each moving partition's current replicas and ``follower.replication.throttled.replicas`` to its added ones
(``ReassignPartitionsCommand.calculateLeaderThrottles`` / ``calculateFollowerThrottles``). Each side is a byte
allowance per broker that fills at its rate (up to one second's worth). What Kafka's code does with them:

* every byte of a throttled partition counts against the allowances, in-sync followers' too ("Traffic from both
  in-sync and out of sync replicas are accounted for in replication quota": ``KafkaApis.sizeOfThrottledPartitions``
  on the leader, ``ReplicaFetcherThread.processPartitionData`` on a follower whose replica is throttled);
* only a follower out of the ISR is held back: on the leader's side *any* follower of a throttled partition that is
  out of the ISR (``ReplicaManager.shouldLeaderThrottle``), so an old replica that fell out during the move (a
  bounce) shares the leader's allowance with the added ones (KIP-542 names this); on the follower's side only the
  added replicas (``shouldFollowerThrottle``: the partition must be in that broker's throttled list).

A held partition gets no more than the allowances hold in one fetch response, and nothing while either is spent
(Kafka leaves it out of the response). Rates and the throttled replicas change during the run (``operations``).
"""

from __future__ import annotations

WINDOW_S = 1.0  # the most an allowance holds: one second at its rate
INF = float("inf")
# the most an allowance owes: Kafka measures the rate over replication.quota.window.num (11) samples of
# replication.quota.window.size.seconds (1), so traffic older than about ten windows no longer holds anything back
DEBT_S = 10.0


class Allowance:
    __slots__ = ("rate", "credit", "at")

    def __init__(self, rate: float | None):
        self.rate = rate  # bytes/s; None: unthrottled
        self.credit = 0.0
        self.at = 0.0

    def left(self, now: float) -> float:
        if self.rate is None:
            return float("inf")
        self.credit = min(self.rate * WINDOW_S, self.credit + self.rate * (now - self.at) / 1000.0)
        self.at = now
        return self.credit

    def spend(self, nbytes: int) -> None:
        self.credit -= nbytes
        if self.rate is not None and self.credit < -self.rate * DEBT_S:
            self.credit = -self.rate * DEBT_S


class ReplicationQuotas:
    """Per broker, its leader-side and follower-side allowances; per partition, its throttled followers."""

    __slots__ = ("kernel", "leader", "follower", "throttled", "moved_bytes", "throttled_bytes")

    def __init__(self, kernel, brokers: int, leader_rate: float | None, follower_rate: float | None):
        self.kernel = kernel
        self.leader = [Allowance(leader_rate) for _ in range(brokers)]
        self.follower = [Allowance(follower_rate) for _ in range(brokers)]
        self.throttled: dict[int, set] = {}  # partition -> follower brokers whose replica of it is throttled
        self.moved_bytes = 0  # bytes given to throttled (moving) replicas: the summary's reassignment_bytes
        self.throttled_bytes = 0  # those of them given under a rate (leader or follower side): throttled_bytes

    def set_rates(self, rate: float | None) -> None:
        """kafka-reassign-partitions --throttle: both rates, on every broker (None: keep the brokers' own). With
        nothing throttled yet, the allowances start empty now (no burst saved up before the move)."""
        now = self.kernel.now
        fresh = not self.throttled
        for a in (*self.leader, *self.follower):
            a.left(now)
            if rate is not None:
                a.rate = rate
            if fresh:
                a.credit, a.at = 0.0, now

    def allowance(self, p: int, leader: int, follower: int, isr) -> float | None:
        """Bytes the leader may give `follower` of partition p in this response: None if p is not throttled, inf
        for an in-sync follower (never held, but its bytes count: ``took``)."""
        moving = self.throttled.get(p)
        if moving is None:
            return None
        if follower in isr:
            return INF
        now = self.kernel.now
        left = self.leader[leader].left(now)
        if follower in moving:
            left = min(left, self.follower[follower].left(now))
        return left

    def took(self, p: int, leader: int, follower: int, nbytes: int, isr) -> None:
        """`follower` got `nbytes` of throttled partition p: counted on the leader's allowance, and on the
        follower's if its replica is one of the added (throttled) ones, in sync or not."""
        moving = self.throttled[p]
        added = follower in moving
        if follower not in isr:
            if added:
                self.moved_bytes += nbytes
            if self.leader[leader].rate is not None or (added and self.follower[follower].rate is not None):
                self.throttled_bytes += nbytes
        self.leader[leader].spend(nbytes)
        if added:
            self.follower[follower].spend(nbytes)
