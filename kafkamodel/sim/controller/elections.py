"""Elections: whom the controller elects, and the ISR and ELR that go with it.

* ISR mode: ``partition_change``, one change of a partition's leader, ISR
  and Eligible Leader Replicas, in the order Kafka's KRaft controller makes
  it (PartitionChangeBuilder): the ELR first, then the election, then what
  the election implies. A valid leader is a live (acceptable) replica in the
  target ISR, or in the ELR when the ISR is empty; the current leader stays
  if valid; else the first valid replica in assignment order (the preferred
  one first for a preferred election); else, with ELR, the last known leader
  once it is back; else, with ``unclean.leader.election.enable``, the first
  live replica at all (its ISR is itself alone); else no leader. Without ELR
  (every ZooKeeper version, and KRaft before 4.1 unless switched on) the ISR
  never becomes empty: it keeps its last member, who is elected when it
  returns. ZooKeeper's controller elects the same way (the first live ISR
  member in assignment order, else unclean if allowed).
* quorum mode: ``QuorumElection`` (the most up-to-date live replica, by last
  epoch then LEO, while a majority is live, as a Raft vote would).
"""

from __future__ import annotations

from typing import Callable, NamedTuple

CLEAN, PREFERRED, ELR, LAST_KNOWN, UNCLEAN, OFFLINE = (
    "clean", "preferred", "eligible leader replica", "last known leader", "unclean", "offline")
UNCLEAN_KINDS = (UNCLEAN, LAST_KNOWN)  # elections Kafka marks unclean: the new leader's ISR is itself alone.
# Both count in unclean_leader_elections, as in the KRaft controller's UncleanLeaderElectionsPerSec (a leader
# outside the previous ISR, which is empty when the last known leader comes back). A version without ELR keeps
# the last member in the ISR and re-elects it cleanly; LAST_KNOWN happens only with ELR.


class Change(NamedTuple):
    leader: int  # -1: none
    isr: tuple  # the ISR the controller stores
    elr: tuple  # eligible leader replicas (KIP-966)
    last_known_elr: tuple  # with ELR: the last leader, kept while the partition has none
    kind: str  # how the leader was chosen (CLEAN, ...), "" when the leader did not change


def partition_change(part, target_isr: tuple, acceptable: Callable[[int], bool], *, unclean: bool,
                     elr_enabled: bool, min_isr: int, preferred: bool = False, unclean_shutdown: tuple = ()) -> Change:
    """The partition after the controller applies `target_isr` (and elects if it must), in the steps of Kafka's
    PartitionChangeBuilder.build. `part` has replicas (assignment order), leader, isr, elr, last_known_elr.
    `acceptable(r)`: r is live (registered, unfenced) and may lead. `unclean_shutdown`: brokers back from an
    unclean shutdown (KIP-966: they leave the ELR)."""
    replicas = part.replicas
    isr, elr = tuple(target_isr), part.elr
    if elr_enabled:  # the ELR: while the ISR is below min.insync.replicas, who was in it (or in the ELR) and left
        if len(isr) >= min_isr:
            elr = ()
        else:
            was = set(elr) | set(part.isr)
            elr = tuple(r for r in replicas if r in was and r not in isr and r not in unclean_shutdown)

    def valid(r: int) -> bool:
        return (r in isr or (not isr and r in elr)) and acceptable(r)

    kind = ""
    if preferred and valid(replicas[0]):
        leader = replicas[0]
    elif part.leader >= 0 and valid(part.leader):
        leader = part.leader  # the current leader meets every constraint: no election
    else:
        leader = next((r for r in replicas if valid(r)), -1)
    known = part.last_known_elr
    if leader < 0 and elr_enabled and not isr and not elr and len(known) == 1 and acceptable(known[0]):
        leader, kind = known[0], LAST_KNOWN  # KIP-966's balanced recovery: the last leader, once it is back
    if leader < 0 and unclean and not preferred:
        leader = next((r for r in replicas if acceptable(r)), -1)
        kind = UNCLEAN if leader >= 0 else ""
    isr_set = None  # an ISR the election itself sets
    if leader == part.leader:
        kind = ""
    elif leader < 0:
        kind = OFFLINE
    elif kind in UNCLEAN_KINDS:
        isr_set = (leader,)  # forcibly the new leader alone: records beyond its log are lost
    elif not isr and leader in elr:
        kind = ELR
        isr, elr = (leader,), tuple(r for r in elr if r != leader)
    else:
        kind = PREFERRED if preferred else CLEAN
    if kind in UNCLEAN_KINDS or not elr_enabled:
        elr = ()
    if isr_set is None:
        isr_set = isr if (isr or elr_enabled) else part.isr  # without ELR the ISR keeps its last member
    last_known = part.last_known_elr
    if elr_enabled:  # remember the last leader when the partition first loses its whole ISR; forget it once led
        if not isr_set and part.isr and known != (part.leader,) and part.leader >= 0:
            last_known = (part.leader,)
        elif leader >= 0 and known:
            last_known = ()
    return Change(leader, isr_set, elr, last_known, kind)


class QuorumElection:
    def __init__(self, majority: list[int]):
        self.majority = majority  # per partition: replicas that make a majority

    def choose(self, part, live: set, replicas: dict) -> Change:
        voters = [r for r in part.replicas if r in live]
        leader = -1
        if len(voters) >= self.majority[part.index]:
            leader = max(voters, key=lambda r: (replicas[r].log.last_epoch(), replicas[r].log.log_end_offset,
                                                -part.replicas.index(r)))
        return Change(leader, part.replicas, (), (), "quorum" if leader >= 0 else OFFLINE)
