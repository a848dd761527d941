"""Kafka's sticky assignors (``sticky``, ``cooperative-sticky``) as ``AbstractStickyAssignor`` decides.

A member's subscription carries its topics, the partitions it owned and the generation it owned them in, and its
``client.rack`` (``MemberData``): ``sticky`` sends its last assignment and generation in its user data even though an
eager member has revoked everything; ``cooperative-sticky`` sends what it still owns (``ownedPartitions``) and its
generation.

1. Ownership claims are read in the order the leader iterates its ``HashMap`` of members (``java_hashmap_order``):
   a partition claimed by two members of the same generation is taken from both (and counts as changing owner);
   claimed in different generations, the higher generation keeps it.
2. When every member subscribes to the same topics, the constrained builder (here): with P partitions and C
   members, ``minQuota = P // C``, ``maxQuota = ceil(P / C)``, and ``P % C`` members may hold ``maxQuota``. Each
   member, in that iteration order, keeps its owned partitions (lowest partition number first; rack-aware, only
   those with a replica on its rack): all of them below ``minQuota``; ``maxQuota`` if it owns that many and members
   over ``minQuota`` are still wanted; else ``minQuota``, the rest given up. The partitions no one kept, sorted by
   topic and number (rack-aware: those with the fewest members on their replicas' racks first), go first to members
   on a replica's rack (rack-aware only), then round robin to the members still under ``minQuota`` (sorted by member
   id), then one each to members at ``minQuota`` while more ``maxQuota`` members are wanted.
3. Otherwise the general builder (``sticky_general``): balance by moving partitions one at a time.

``cooperative-sticky`` then drops from the new assignment every partition whose owner changes
(``partitionsTransferringOwnership``): its old owner revokes it first, and a second rebalance assigns it.
"""

from __future__ import annotations

from math import ceil

from .sticky_common import DEFAULT_GENERATION, MemberData, RackInfo, java_hashmap_order, java_string_hash
from .sticky_general import GeneralAssignmentBuilder

__all__ = ["DEFAULT_GENERATION", "MemberData", "java_hashmap_order", "java_string_hash", "StickyAssignor",
           "sticky_assignment", "transferring_ownership"]


def _owned_claims(partitions_per_topic: dict[str, int], subscriptions: dict[str, MemberData], order: list[str]):
    """allSubscriptionsEqual: whether every member subscribes to the same topics, each member's valid owned
    partitions, and those claimed twice in one generation."""
    owned: dict[str, list] = {}
    owner: dict[tuple, str] = {}
    doubly: set[tuple] = set()
    subscribed: set[str] = set()
    equal = True
    for member in order:
        data = subscriptions[member]
        if not subscribed:
            subscribed.update(data.topics)
        elif equal and not (len(data.topics) == len(subscribed) and subscribed.issuperset(data.topics)):
            equal = False
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
    return equal, owned, doubly


def transferring_ownership(subscriptions: dict[str, MemberData], assignment: dict[str, list]) -> dict[tuple, str]:
    """CooperativeStickyAssignor.computePartitionsTransferringOwnership (after the general builder): the partitions
    some member gains that another member owned and loses."""
    added: dict[tuple, str] = {}
    revoked: set[tuple] = set()
    for member, parts in assignment.items():
        owned, kept = set(subscriptions[member].owned), set(parts)
        added.update((tp, member) for tp in parts if tp not in owned)
        revoked.update(owned - kept)
    return {tp: member for tp, member in added.items() if tp in revoked}


class StickyAssignor:
    """One assignor instance (``StickyAssignor`` or, cooperative, ``CooperativeStickyAssignor``): like Kafka's it
    remembers the highest generation it has seen (``maxGeneration``), the last ``partitionsTransferringOwnership``
    (None after the general builder) and the last general build's partition movements (``is_sticky``).
    ``prefer_rack_aware``: Kafka's test-only switch (rack-aware whenever some member's rack holds replicas)."""

    def __init__(self, cooperative: bool = False, prefer_rack_aware: bool = False):
        self.cooperative, self.prefer_rack_aware = cooperative, prefer_rack_aware
        self.max_generation = DEFAULT_GENERATION
        self.partitions_transferring_ownership: dict[tuple, str] | None = {}
        self.movements = None

    def assign(self, partitions_per_topic: dict[str, int], subscriptions: dict[str, MemberData],
               replica_racks: dict | None = None) -> dict[str, list]:
        """assignPartitions: {member: [(topic, partition)]} in the order Kafka lists them. ``replica_racks``:
        {(topic, partition): racks of its replicas}. Cooperative: the partitions changing owner are left out."""
        order = java_hashmap_order(list(subscriptions))
        partitions = [(t, p) for t in partitions_per_topic for p in range(partitions_per_topic[t])]
        racks = RackInfo(partitions, replica_racks or {}, subscriptions, order, self.prefer_rack_aware)
        self.max_generation = max([self.max_generation] + [subscriptions[m].generation for m in order])
        equal, owned, doubly = _owned_claims(partitions_per_topic, subscriptions, order)
        if equal:
            assignment, transferring = _ConstrainedBuilder(partitions_per_topic, racks, owned, doubly).build()
            self.partitions_transferring_ownership = transferring
        else:
            builder = GeneralAssignmentBuilder(partitions_per_topic, racks, owned, subscriptions, order,
                                               self.max_generation)
            assignment, self.movements = builder.build(), builder.movements
            self.partitions_transferring_ownership = None
            transferring = transferring_ownership(subscriptions, assignment) if self.cooperative else {}
        if self.cooperative:
            for tp, member in transferring.items():
                assignment[member].remove(tp)
        return assignment

    def is_sticky(self) -> bool:
        """After a general build: no topic's partitions moved both ways between two members."""
        return self.movements is None or self.movements.is_sticky()


def sticky_assignment(partitions_per_topic: dict[str, int], subscriptions: dict[str, MemberData],
                      cooperative: bool = False,
                      replica_racks: dict | None = None) -> tuple[dict[str, list], dict | None]:
    """A fresh assignor's assignment and its partitionsTransferringOwnership."""
    assignor = StickyAssignor(cooperative)
    return assignor.assign(partitions_per_topic, subscriptions, replica_racks), \
        assignor.partitions_transferring_ownership


class _ConstrainedBuilder:
    """ConstrainedAssignmentBuilder: every member subscribes to the same topics."""

    def __init__(self, partitions_per_topic: dict[str, int], racks: RackInfo, owned: dict[str, list], doubly: set):
        self.partitions_per_topic, self.racks, self.owned, self.doubly = partitions_per_topic, racks, owned, doubly
        total = sum(partitions_per_topic.values())
        self.min_quota, self.max_quota = total // len(owned), ceil(total / len(owned))
        self.expected_over_min = total % len(owned)
        self.over_min = 0
        self.assignment: dict[str, list] = {m: [] for m in owned}
        self.maybe_revoked: dict[tuple, str] = {}
        self.under_min: list[str] = []
        self.exactly_min: list[str] = []
        self.transferring: dict[tuple, str] = {}

    def build(self) -> tuple[dict[str, list], dict[tuple, str]]:
        assigned = self.assign_owned_partitions()
        unassigned = [(t, p) for t in sorted(self.partitions_per_topic) for p in range(self.partitions_per_topic[t])
                      if (t, p) not in assigned]
        self.under_min.sort()
        self.exactly_min.sort()
        unassigned = self.racks.sort_partitions_by_rack_consumers(unassigned)
        unassigned = self.assign_rack_aware_round_robin(unassigned)
        self.assign_round_robin(unassigned)
        return self.assignment, self.transferring

    def assign_owned_partitions(self) -> set:
        """Each member keeps its owned partitions up to its quota, in the leader's iteration order."""
        assigned: set[tuple] = set()
        for member, claims in self.owned.items():
            mine = []
            for tp in claims:
                if self.racks.racks_mismatch(member, tp):
                    self.maybe_revoked[tp] = member
                elif tp not in self.doubly:
                    mine.append(tp)
            mine.sort(key=lambda tp: (tp[1], tp[0]))
            if len(mine) < self.min_quota:
                self.under_min.append(member)
                keep = len(mine)
            elif len(mine) >= self.max_quota and self.over_min < self.expected_over_min:
                self.over_min += 1
                if self.over_min == self.expected_over_min:
                    self.exactly_min.clear()
                keep = self.max_quota
            else:
                keep = self.min_quota
                if self.over_min < self.expected_over_min:
                    self.exactly_min.append(member)
            self.assignment[member].extend(mine[:keep])
            for tp in mine[keep:]:
                self.maybe_revoked[tp] = member
            assigned.update(mine[:keep])
        return assigned

    def give(self, tp: tuple, member: str) -> int:
        """assignNewPartition: a partition another member gave up, or one claimed twice, changes owner."""
        self.assignment[member].append(tp)
        if self.maybe_revoked.get(tp, member) != member or tp in self.doubly:
            self.transferring[tp] = member
        return len(self.assignment[member])

    def assign_rack_aware_round_robin(self, unassigned: list[tuple]) -> list[tuple]:
        """Round robin within racks up to the quotas; what cannot be placed on a replica's rack is returned."""
        if not self.racks.consumer_racks:
            return unassigned
        left, cursor = [], 0
        for tp in unassigned:
            member = None
            index = self.racks.next_rack_consumer(tp, self.under_min, cursor)
            if index >= 0:
                member = self.under_min[index]
                count = len(self.assignment[member]) + 1
                if count >= self.min_quota:
                    self.under_min.remove(member)
                    if count < self.max_quota and self.over_min < self.expected_over_min:
                        self.exactly_min.append(member)
                else:
                    index += 1
                cursor = index % len(self.under_min) if self.under_min else 0
            elif self.exactly_min:
                first = self.racks.next_rack_consumer(tp, self.exactly_min, 0)
                if first >= 0:
                    member = self.exactly_min[first]
                    if len(self.assignment[member]) + 1 == self.max_quota:
                        self.exactly_min.pop(first)
                        self.over_min += 1
                        if self.over_min == self.expected_over_min:
                            self.exactly_min.clear()
            if member is None:
                left.append(tp)
            else:
                self.give(tp, member)
        return left

    def assign_round_robin(self, unassigned: list[tuple]) -> None:
        """assignRoundRobin: an iterator over the members under minQuota, restarted while some remain."""
        under_min, exactly_min = self.under_min, self.exactly_min
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
            count = self.give(tp, member)
            if count == self.min_quota:
                cursor -= 1
                under_min.pop(cursor)
                exactly_min.append(member)
            elif count == self.max_quota:
                self.over_min += 1
