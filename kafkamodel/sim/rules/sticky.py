"""Kafka's sticky assignors (``sticky``, ``cooperative-sticky``) as ``AbstractStickyAssignor`` decides when every
member subscribes to the same topics (its ``ConstrainedAssignmentBuilder``; the model's groups subscribe to one topic
each, so the general builder for unequal subscriptions is not modelled, nor the rack-aware pass of KIP-881).

A member's subscription carries the partitions it owned and the generation it owned them in (``MemberData``):
``sticky`` sends its last assignment and generation in its user data even though an eager member has revoked
everything; ``cooperative-sticky`` sends what it still owns (``ownedPartitions``) and its generation.

1. Ownership claims are read in the order the leader iterates its ``HashMap`` of members (``java_hashmap_order``):
   a partition claimed by two members of the same generation is taken from both (and counts as changing owner);
   claimed in different generations, the higher generation keeps it.
2. With P partitions and C members, ``minQuota = P // C``, ``maxQuota = ceil(P / C)``, and ``P % C`` members may
   hold ``maxQuota``. Each member, in that iteration order, keeps its owned partitions (lowest partition number
   first): all of them below ``minQuota``; ``maxQuota`` if it owns that many and members over ``minQuota`` are
   still wanted; else ``minQuota``, the rest given up.
3. The partitions no one kept, sorted by topic and number, are dealt round robin to the members still under
   ``minQuota`` (sorted by member id), then one each to members at ``minQuota`` while more ``maxQuota`` members are
   wanted.

``cooperative-sticky`` then drops from the new assignment every partition whose owner changes
(``partitionsTransferringOwnership``): its old owner revokes it first, and a second rebalance assigns it.
"""

from __future__ import annotations

from math import ceil
from typing import NamedTuple

DEFAULT_GENERATION = -1  # AbstractStickyAssignor.DEFAULT_GENERATION: no generation known


class MemberData(NamedTuple):
    """What a member's Subscription tells the leader: the partitions it owned (topic, partition) and when."""
    topics: tuple
    owned: tuple = ()
    generation: int = DEFAULT_GENERATION


def java_string_hash(s: str) -> int:
    """java.lang.String.hashCode (UTF-16 code units), as a signed 32-bit int."""
    data = s.encode("utf-16-be")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i:i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def java_hashmap_order(keys: list[str]) -> list[str]:
    """The order a java.util.HashMap filled with ``keys`` (in this order, default capacity 16, load factor 0.75)
    iterates them: by bucket (spread hash & (capacity - 1)), then insertion order within a bucket."""
    capacity = 16
    while len(keys) > capacity * 3 // 4:
        capacity *= 2

    def bucket(k: str) -> int:
        h = java_string_hash(k) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    return [k for _, _, k in sorted((bucket(k), i, k) for i, k in enumerate(keys))]


def _owned_claims(partitions_per_topic: dict[str, int], subscriptions: dict[str, MemberData]):
    """allSubscriptionsEqual's bookkeeping: each member's valid owned partitions, and those claimed twice in one
    generation."""
    owned: dict[str, list] = {}
    owner: dict[tuple, str] = {}
    doubly: set[tuple] = set()
    for member in java_hashmap_order(list(subscriptions)):
        data = subscriptions[member]
        mine: list = []
        owned[member] = mine
        for tp in data.owned:
            if tp[0] not in partitions_per_topic:
                continue
            other = owner.get(tp)
            if other is None:
                mine.append(tp)
                owner[tp] = member
                continue
            other_generation = subscriptions[other].generation
            if data.generation == other_generation:  # both claim it in the same generation: neither keeps it
                doubly.add(tp)
                if tp in owned[other]:
                    owned[other].remove(tp)
                owner[tp] = member
            elif data.generation > other_generation:  # the newer generation's claim wins
                mine.append(tp)
                if tp in owned[other]:
                    owned[other].remove(tp)
                owner[tp] = member
    return owned, doubly


def sticky_assignment(partitions_per_topic: dict[str, int], subscriptions: dict[str, MemberData],
                      cooperative: bool = False) -> tuple[dict[str, list], dict[tuple, str]]:
    """AbstractStickyAssignor.assignPartitions for equal subscriptions: ({member: [(topic, partition)]} in the
    order Kafka lists them, partitionsTransferringOwnership {(topic, partition): new owner}). Cooperative:
    the partitions changing owner are left out of the assignment."""
    owned, doubly = _owned_claims(partitions_per_topic, subscriptions)
    total = sum(partitions_per_topic.values())
    members = len(owned)
    min_quota, max_quota = total // members, ceil(total / members)
    expected_over_min = total % members
    over_min = 0
    assignment: dict[str, list] = {m: [] for m in owned}
    assigned: set[tuple] = set()
    maybe_revoked: dict[tuple, str] = {}
    under_min: list[str] = []
    exactly_min: list[str] = []

    for member, claims in owned.items():  # assignOwnedPartitions, in the HashMap's order
        mine = sorted((tp for tp in claims if tp not in doubly),
                      key=lambda tp: (tp[1], tp[0]))
        if len(mine) < min_quota:
            assignment[member].extend(mine)
            under_min.append(member)
            keep = len(mine)
        elif len(mine) >= max_quota and over_min < expected_over_min:
            over_min += 1
            if over_min == expected_over_min:
                exactly_min.clear()
            keep = max_quota
        else:
            keep = min_quota
            if over_min < expected_over_min:
                exactly_min.append(member)
        if len(mine) >= min_quota:
            assignment[member].extend(mine[:keep])
        for tp in mine[keep:]:
            maybe_revoked[tp] = member
        assigned.update(mine[:keep])

    unassigned = [(t, p) for t in sorted(partitions_per_topic) for p in range(partitions_per_topic[t])
                  if (t, p) not in assigned]
    under_min.sort()
    exactly_min.sort()
    transferring: dict[tuple, str] = {}

    def give(tp: tuple, member: str) -> int:
        assignment[member].append(tp)
        if (tp in maybe_revoked and maybe_revoked[tp] != member) or tp in doubly:
            transferring[tp] = member
        return len(assignment[member])

    # assignRoundRobin: an iterator over the members under minQuota, restarted while some remain
    cursor = 0
    for tp in unassigned:
        if cursor < len(under_min):
            member = under_min[cursor]
            cursor += 1
        elif not under_min and not exactly_min:
            raise AssertionError("No more unfilled consumers to be assigned.")  # Kafka's IllegalStateException
        elif not under_min:
            member = exactly_min.pop(0)
        else:
            cursor = 1
            member = under_min[0]
        count = give(tp, member)
        if count == min_quota:
            cursor -= 1
            under_min.pop(cursor)
            exactly_min.append(member)
        elif count == max_quota:
            over_min += 1
    if cooperative:
        for tp, member in transferring.items():
            assignment[member].remove(tp)
    return assignment, transferring
