"""The sticky assignors' general builder (``AbstractStickyAssignor.GeneralAssignmentBuilder``), used when members
subscribe to different topics:

1. each member keeps the partitions it owned that it still subscribes to (rack-aware: on its rack);
2. the other partitions, topics with the fewest potential members first, each go to the member with the fewest
   partitions that subscribes to its topic (rack-aware: a member on a replica's rack first, then any);
3. while some member could take a partition from one holding two or more more, partitions move one at a time to the
   least loaded member that can take them (back to its previous owner of an older generation first), a move that
   undoes an earlier one between the same two members being swapped for that one (``PartitionMovements``);
4. if that did not lower the balance score (the sum of size differences over all pairs of members), the moves are
   undone.

Members are kept sorted by (partitions held, member id), as Kafka's ``TreeSet`` keeps them.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from typing import NamedTuple

from .sticky_common import JavaHashSet, MemberData, RackInfo


class ConsumerGenerationPair(NamedTuple):
    consumer: str
    generation: int


class PartitionMovements:
    """Where partitions moved during one assignment, per topic and (source, destination) pair: a partition moving
    back the way another one came is swapped for that one, so a topic's partitions never flow both ways between two
    members (``is_sticky``)."""

    def __init__(self):
        self.by_topic: dict[str, dict[tuple, JavaHashSet]] = {}
        self.movements: dict[tuple, tuple] = {}

    def _remove(self, tp: tuple) -> tuple:
        pair = self.movements.pop(tp)
        pairs = self.by_topic[tp[0]]
        pairs[pair].remove(tp)
        if not len(pairs[pair]):
            del pairs[pair]
        if not pairs:
            del self.by_topic[tp[0]]
        return pair

    def _add(self, tp: tuple, pair: tuple) -> None:
        self.movements[tp] = pair
        self.by_topic.setdefault(tp[0], {}).setdefault(pair, JavaHashSet()).add(tp)

    def move_partition(self, tp: tuple, old: str, new: str) -> None:
        if tp in self.movements:
            source, _ = self._remove(tp)
            if source != new:  # not moving back to where it came from
                self._add(tp, (source, new))
        else:
            self._add(tp, (old, new))

    def partition_to_move(self, tp: tuple, old: str, new: str) -> tuple:
        """getTheActualPartitionToBeMoved: a partition of the same topic that moved from ``new`` to ``old`` goes back
        instead of ``tp`` going forward."""
        pairs = self.by_topic.get(tp[0])
        if pairs is None:
            return tp
        if tp in self.movements:
            old = self.movements[tp][0]
        reverse = pairs.get((new, old))
        return tp if reverse is None else reverse.first()

    def is_sticky(self) -> bool:
        """No topic's partitions moved both ways between two members (Kafka's check for cycles of length 2)."""
        return not any((dst, src) in pairs for pairs in self.by_topic.values() for src, dst in pairs)


class GeneralAssignmentBuilder:
    """Balance partitions over members subscribed to different topics, keeping what each owned where possible."""

    def __init__(self, partitions_per_topic: dict[str, int], racks: RackInfo, owned: dict[str, list],
                 subscriptions: dict[str, MemberData], order: list[str], max_generation: int):
        self.partitions_per_topic, self.racks, self.subscriptions, self.order = (partitions_per_topic, racks,
                                                                                 subscriptions, order)
        self.max_generation = max_generation  # the highest generation the assignor has seen
        self.total = sum(partitions_per_topic.values())
        self.current = owned  # the assignment being built, {member: [partitions]} in the leader's order
        self.topic_consumers: dict[str, list[str]] = {t: [] for t in partitions_per_topic}
        self.consumer_topics: dict[str, list[str]] = {}
        for member in order:
            mine = [t for t in subscriptions[member].topics if t in partitions_per_topic]
            self.consumer_topics[member] = mine
            for t in mine:
                self.topic_consumers[t].append(member)
            self.current.setdefault(member, [])
        self.partition_consumer = {tp: m for m, parts in self.current.items() for tp in parts}
        topics = sorted(self.topic_consumers, key=lambda t: (len(self.topic_consumers[t]), t))
        self.sorted_partitions = [(t, p) for t in topics for p in range(partitions_per_topic[t])]
        self.sorted_members: list[tuple] = []  # (partitions held, member id): Kafka's sortedCurrentSubscriptions
        self.revocation_required = False
        self.movements = PartitionMovements()

    # ---- the sorted set of members ---------------------------------------------------------------------------

    def _key(self, member: str) -> tuple:
        return len(self.current[member]), member

    def _unlist(self, member: str) -> None:
        key = self._key(member)
        i = bisect_left(self.sorted_members, key)
        if i < len(self.sorted_members) and self.sorted_members[i] == key:
            del self.sorted_members[i]

    def _list(self, member: str) -> None:
        insort(self.sorted_members, self._key(member))

    # ---- build ---------------------------------------------------------------------------------------------------

    def build(self) -> dict[str, list]:
        previous = self.previous_assignment()
        assigned = set(self.assign_owned_partitions())
        unassigned = [tp for tp in self.sorted_partitions if tp not in assigned]
        for member in self.current:
            self._list(member)
        self.balance(previous, unassigned)
        return self.current

    def previous_assignment(self) -> dict[tuple, ConsumerGenerationPair]:
        """prepopulateCurrentAssignments: for each partition, its owner in the newest generation older than the
        newest one the assignor has seen (members without a generation count as DEFAULT_GENERATION)."""
        previous: dict[tuple, ConsumerGenerationPair] = {}
        for member in self.order:
            data = self.subscriptions[member]
            if data.generation < self.max_generation:
                for tp in data.owned:
                    if tp not in previous or data.generation > previous[tp].generation:
                        previous[tp] = ConsumerGenerationPair(member, data.generation)
        return previous

    def assign_owned_partitions(self) -> list[tuple]:
        """Each member keeps what it owned of the topics it still subscribes to (rack-aware: on its rack)."""
        assigned = []
        for member, parts in self.current.items():
            topics = self.subscriptions[member].topics
            kept = []
            for tp in parts:
                if tp[0] not in topics or self.racks.racks_mismatch(member, tp):
                    self.revocation_required = True
                else:
                    kept.append(tp)
                    assigned.append(tp)
            parts[:] = kept
        return assigned

    def max_assignment_size(self, member: str) -> int:
        topics = self.consumer_topics[member]
        if len(topics) == len(self.partitions_per_topic):
            return self.total
        return sum(self.partitions_per_topic[t] for t in topics)

    def is_balanced(self) -> bool:
        """No member could take a partition of its topics from a member holding two or more more."""
        low, high = self.sorted_members[0][0], self.sorted_members[-1][0]
        if low >= high - 1:
            return True
        owner = {tp: m for m, parts in self.current.items() for tp in parts}
        for size, member in self.sorted_members:
            if size == self.max_assignment_size(member):
                continue
            mine = set(self.current[member])
            for topic in self.consumer_topics[member]:
                for p in range(self.partitions_per_topic[topic]):
                    tp = (topic, p)
                    if tp not in mine and size + 1 < len(self.current[owner[tp]]):
                        return False
        return True

    @staticmethod
    def balance_score(assignment: dict[str, list]) -> int:
        sizes = [len(parts) for parts in assignment.values()]
        return sum(abs(a - b) for i, a in enumerate(sizes) for b in sizes[i + 1:])

    def assign_partition(self, tp: tuple, racks: RackInfo | None) -> bool:
        """maybeAssignPartition: to the least loaded member subscribed to its topic (on a replica's rack)."""
        for _, member in self.sorted_members:
            if tp[0] in self.consumer_topics[member] and (racks is None or not racks.racks_mismatch(member, tp)):
                self._unlist(member)
                self.current[member].append(tp)
                self.partition_consumer[tp] = member
                self._list(member)
                return True
        return False

    def assign_all(self, partitions: list[tuple], racks: RackInfo | None) -> list[tuple]:
        """maybeAssign: the partitions that found no member (topics no one subscribes to are skipped)."""
        return [tp for tp in partitions if not self.topic_consumers[tp[0]] or not self.assign_partition(tp, racks)]

    def can_consumer_participate(self, member: str) -> bool:
        if len(self.current[member]) < self.max_assignment_size(member):
            return True
        return any(len(self.topic_consumers[tp[0]]) >= 2 for tp in self.current[member])

    def balance(self, previous: dict, unassigned: list[tuple]) -> None:
        initializing = not self.current[self.sorted_members[-1][1]]
        left = unassigned
        if self.racks.consumer_racks:  # first on a replica's rack, then anywhere
            left = self.assign_all(unassigned, self.racks)
        self.assign_all(left, None)

        fixed_topics = {t for t, members in self.topic_consumers.items() if len(members) < 2}
        self.sorted_partitions = [tp for tp in self.sorted_partitions if tp[0] not in fixed_topics]
        unassigned = [tp for tp in unassigned if tp[0] not in fixed_topics]
        fixed: dict[str, list] = {}
        for member in self.consumer_topics:
            if not self.can_consumer_participate(member):
                self._unlist(member)
                fixed[member] = self.current.pop(member)

        before = {m: list(parts) for m, parts in self.current.items()}
        owners_before = dict(self.partition_consumer)
        if not self.revocation_required:  # first try moving only the partitions just handed out
            self.perform_reassignments(unassigned, previous)
        moved = self.perform_reassignments(self.sorted_partitions, previous)
        if not initializing and moved and self.balance_score(self.current) >= self.balance_score(before):
            self.current.clear()
            self.current.update(before)
            self.partition_consumer = owners_before
        for member, parts in fixed.items():
            self.current[member] = parts

    def perform_reassignments(self, partitions: list[tuple], previous: dict) -> bool:
        """Move partitions, one pass after another, until balanced or a pass moves nothing."""
        performed = False
        modified = True
        while modified:
            modified = False
            for tp in partitions:
                if self.is_balanced():
                    break
                member = self.partition_consumer[tp]
                held = len(self.current[member])
                before = previous.get(tp)
                if before is not None and held > len(self.current[before.consumer]) + 1:
                    self.reassign_partition(tp, before.consumer)
                    performed = modified = True
                    continue
                # Kafka looks first among members on a replica's rack, then among all; either way the partition
                # goes to the least loaded member subscribed to its topic (reassignPartition), so one test serves
                candidates = self.topic_consumers[tp[0]]
                if any(held > len(self.current[other]) + 1 for other in candidates):
                    self.reassign_partition(tp)
                    performed = modified = True
        return performed

    def reassign_partition(self, tp: tuple, new: str | None = None) -> None:
        if new is None:
            new = next(m for _, m in self.sorted_members if tp[0] in self.consumer_topics[m])
        old = self.partition_consumer[tp]
        tp = self.movements.partition_to_move(tp, old, new)
        old = self.partition_consumer[tp]
        self._unlist(old)
        self._unlist(new)
        self.movements.move_partition(tp, old, new)
        self.current[old].remove(tp)
        self.current[new].append(tp)
        self.partition_consumer[tp] = new
        self._list(new)
        self._list(old)
