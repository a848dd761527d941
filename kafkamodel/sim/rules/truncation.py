"""Follower truncation on a leader change: where a follower cuts its log before it fetches.

* ``HighWatermarkTruncation`` (before 0.11): to its own HW, at once. A
  committed record beyond a stale HW can go (KIP-101 scenario 1), and after a
  double failure logs can diverge (scenario 2).
* ``LeaderEpochTruncation`` (0.11+, KIP-101): ask the leader
  (OffsetsForLeaderEpoch) where the epoch of its last entry ends. In 0.11 and
  1.x the leader answers an offset alone (where its first later epoch starts;
  undefined for an epoch older than its log) and the follower truncates
  there, or to its HW if undefined. From 2.0 (KIP-279) the answer carries the
  leader's largest epoch <= the one asked: the follower truncates to the
  smaller of the leader's end and where that epoch ends in its own log, and
  if the leader answered an older epoch, asks again with its new last epoch,
  until both agree. (Since 2.7 the question rides on the fetch itself,
  KIP-595's diverging epoch: the same cut, a round trip sooner; not
  modelled.)
"""

from __future__ import annotations

from ..state import Replica


class HighWatermarkTruncation:
    name = "high_watermark"

    def begin(self, follower, rep: Replica) -> None:
        follower.truncate(rep, rep.high_watermark, "to local high watermark")
        follower.start_fetching(rep)


class LeaderEpochTruncation:
    name = "leader_epoch"

    def __init__(self, kip279: bool = True):
        self.kip279 = kip279  # 2.0+: answers carry the epoch; the follower compares and asks again

    def begin(self, follower, rep: Replica) -> None:
        if not rep.log.rows:
            follower.start_fetching(rep)
            return
        follower.start_truncating(rep)

    def answer(self, leader: Replica, epoch: int) -> tuple[int, int]:
        """The leader's answer to OffsetsForLeaderEpoch(epoch): (epoch found, end offset); (-1, -1) undefined."""
        found, end = leader.end_offset_for_epoch(epoch)
        if self.kip279 or found < 0:
            return found, end
        log = leader.log
        oldest = log.epoch_at(0) if log.rows else leader.leader_epoch
        return (-1, -1) if epoch < oldest else (found, end)  # 0.11: older than its log: undefined

    def target(self, rep: Replica, epoch: int, end: int) -> int:
        """Where to cut, given the leader's answer (its largest epoch <= the one asked, and where it ends)."""
        if epoch < 0:  # UNDEFINED: the leader has no epoch this old; fall back to the HW
            return rep.high_watermark
        if not self.kip279:  # 0.11: the leader's end offset, whatever epoch our log has there
            return end
        return min(end, rep.log.first_offset_after_epoch(epoch))  # KIP-279: our first later epoch starts there

    def ask_again(self, rep: Replica, asked: int, epoch: int) -> bool:
        """KIP-279: the leader answered an older epoch and our log still ends in a later one."""
        return self.kip279 and 0 <= epoch != asked and rep.log.rows > 0 and rep.log.last_epoch() > epoch


def make_truncation(name: str, kip279: bool = True):
    return LeaderEpochTruncation(kip279) if name == "leader_epoch" else HighWatermarkTruncation()
