"""Election policies: whom the controller elects when a partition needs a leader.

A policy looks at the partition as the controller holds it and the live
brokers, and either names a leader (with the ISR that goes with it and the
kind of election) or passes. An ``ElectionChain`` asks its policies in turn;
its last one always answers (possibly: no leader). The chains in use:

* ISR mode: ``CleanElection`` (the first live ISR member, in assignment
  order), then ``EligibleLeaderReplicaElection`` when
  ``eligible.leader.replicas.enable`` (KIP-966: the first live ELR member),
  then ``UncleanElection`` when the partition's
  ``unclean.leader.election.enable`` (the first live replica at all), then
  ``Offline`` (no leader; the ISR keeps the last one).
* quorum mode: ``QuorumElection`` (the most up-to-date live replica, by last
  epoch then LEO, while a majority is live, as a Raft vote would).
"""

from __future__ import annotations

from typing import NamedTuple

from .state import Partition


class Choice(NamedTuple):
    leader: int  # -1: none
    isr: tuple  # the ISR the controller stores with it
    kind: str  # clean, eligible leader replica, unclean, quorum, offline


class CleanElection:
    def choose(self, part: Partition, live: set, replicas: dict):
        candidates = [r for r in part.replicas if r in part.isr and r in live]
        if candidates:
            return Choice(candidates[0], tuple(r for r in part.isr if r in live), "clean")
        return None


class EligibleLeaderReplicaElection:
    def choose(self, part: Partition, live: set, replicas: dict):
        eligible = [r for r in part.replicas if r in part.elr and r in live]
        if eligible:
            return Choice(eligible[0], (eligible[0],), "eligible leader replica")
        return None


class UncleanElection:
    def choose(self, part: Partition, live: set, replicas: dict):
        if part.unclean and any(r in live for r in part.replicas):
            leader = next(r for r in part.replicas if r in live)
            return Choice(leader, (leader,), "unclean")
        return None


class Offline:
    def choose(self, part: Partition, live: set, replicas: dict):
        return Choice(-1, part.isr, "offline")


class QuorumElection:
    def __init__(self, majority: list[int]):
        self.majority = majority  # per partition: replicas that make a majority

    def choose(self, part: Partition, live: set, replicas: dict):
        voters = [r for r in part.replicas if r in live]
        leader = -1
        if len(voters) >= self.majority[part.index]:
            leader = max(voters, key=lambda r: (replicas[r].log.last_epoch(), replicas[r].log.log_end_offset,
                                                -part.replicas.index(r)))
        return Choice(leader, part.replicas, "quorum")


class ElectionChain:
    def __init__(self, policies: list):
        self.policies = policies

    def choose(self, part: Partition, live: set, replicas: dict) -> Choice:
        """`replicas`: broker -> its Replica of the partition."""
        for policy in self.policies:
            choice = policy.choose(part, live, replicas)
            if choice is not None:
                return choice
        raise AssertionError("an election chain ends with a policy that always answers")


def isr_elections(elr_enabled: bool) -> ElectionChain:
    """Kafka's order: clean, then ELR (if enabled), then unclean (if the partition allows it), else offline."""
    return ElectionChain([CleanElection(), *([EligibleLeaderReplicaElection()] if elr_enabled else []),
                          UncleanElection(), Offline()])
