"""Replication throttles (KIP-73), as Kafka's ReplicationQuotaManager applies them.

A throttled replica (``follower.replication.throttled.replicas`` / ``leader.replication.throttled.replicas``;
``kafka-reassign-partitions --throttle`` lists the moving ones: the new replicas of each moving partition, fetching
from its leader) that is not in the ISR is served at most ``leader.replication.throttled.rate`` bytes/s by each
leader broker and fetches at most ``follower.replication.throttled.rate`` bytes/s on each follower broker, over
all its throttled partitions; in-sync replicas are never throttled. Each side is a byte allowance per broker that
fills at its rate (up to one second's worth); a throttled partition gets no more than both allowances hold in one
fetch response, and nothing while either is spent (Kafka leaves it out of the response). Rates and the throttled
replicas change during the run (``operations``).
"""

from __future__ import annotations

WINDOW_S = 1.0  # the most an allowance holds: one second at its rate


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
        """Bytes the leader may give `follower` of partition p in this response (None: not throttled)."""
        moving = self.throttled.get(p)
        if not moving or follower not in moving or follower in isr:
            return None
        now = self.kernel.now
        return min(self.leader[leader].left(now), self.follower[follower].left(now))

    def took(self, p: int, leader: int, follower: int, nbytes: int) -> None:
        self.moved_bytes += nbytes
        if self.leader[leader].rate is not None or self.follower[follower].rate is not None:
            self.throttled_bytes += nbytes
        self.leader[leader].credit -= nbytes
        self.follower[follower].credit -= nbytes
