"""Follower truncation on a leader change: where a follower cuts its log before it fetches.

* ``HighWatermarkTruncation`` (before 0.11): to its own HW, at once. A
  committed record beyond a stale HW can go (KIP-101 scenario 1), and after a
  double failure logs can diverge (scenario 2).
* ``LeaderEpochTruncation`` (0.11+, KIP-101 refined by KIP-279): ask the
  leader (OffsetsForLeaderEpoch) where the epoch of its last entry ends, and
  truncate to the smaller of that and where that epoch ends in its own log;
  if the leader answered an older epoch, ask again with the follower's new
  last epoch, until both agree.
"""

from __future__ import annotations

from .state import Replica


class HighWatermarkTruncation:
    name = "high_watermark"

    def begin(self, follower, rep: Replica) -> None:
        follower.truncate(rep, rep.high_watermark, "to local high watermark")
        follower.start_fetching(rep)


class LeaderEpochTruncation:
    name = "leader_epoch"

    def begin(self, follower, rep: Replica) -> None:
        if not rep.log.entries:
            follower.start_fetching(rep)
            return
        follower.start_truncating(rep)

    @staticmethod
    def target(rep: Replica, epoch: int, end: int) -> int:
        """Where to cut, given the leader's answer (its largest epoch <= the one asked, and where it ends)."""
        if epoch < 0:  # UNDEFINED: the leader has no epoch this old; fall back to the HW
            return rep.high_watermark
        return min(end, rep.log.first_offset_after_epoch(epoch))  # KIP-279: our first later epoch starts there

    @staticmethod
    def ask_again(rep: Replica, asked: int, epoch: int) -> bool:
        """KIP-279: the leader answered an older epoch and our log still ends in a later one."""
        return 0 <= epoch != asked and bool(rep.log.entries) and rep.log.last_epoch() > epoch


TRUNCATIONS = {"high_watermark": HighWatermarkTruncation, "leader_epoch": LeaderEpochTruncation}


def make_truncation(name: str):
    return TRUNCATIONS[name]()
