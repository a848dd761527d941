"""What the sticky assignors' two builders share: a member's ``MemberData``, the order Java's hash maps iterate in
(the leader's ``HashMap`` of members decides who keeps ``maxQuota``; a ``HashSet`` of partitions decides which moved
partition moves back), and ``RackInfo`` (KIP-881: ``client.rack`` matched against the racks of a partition's
replicas), which the range assignor's rack-aware path reads too.

A partition is a (topic, partition) pair throughout.
"""

from __future__ import annotations

from typing import NamedTuple

DEFAULT_GENERATION = -1  # AbstractStickyAssignor.DEFAULT_GENERATION: no generation known


class MemberData(NamedTuple):
    """What a member's Subscription tells the leader: its topics, the partitions it owned (topic, partition), the
    generation it owned them in (-1: none known) and its ``client.rack`` (None: none)."""
    topics: tuple
    owned: tuple = ()
    generation: int = DEFAULT_GENERATION
    rack: str | None = None


def java_string_hash(s: str) -> int:
    """java.lang.String.hashCode (UTF-16 code units), as a signed 32-bit int."""
    data = s.encode("utf-16-be")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i:i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def topic_partition_hash(tp: tuple) -> int:
    """org.apache.kafka.common.TopicPartition.hashCode: 31 * (31 + partition) + topic.hashCode(), 32-bit."""
    h = (31 * (31 + tp[1]) + java_string_hash(tp[0])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def _bucket(h: int, capacity: int) -> int:
    """java.util.HashMap's bucket: the hash spread (h ^ h >>> 16), masked by the table's size."""
    h &= 0xFFFFFFFF
    return (h ^ (h >> 16)) & (capacity - 1)


def _capacity(size: int) -> int:
    """A HashMap's table size once ``size`` entries went in (default 16, doubled past a load of 0.75)."""
    capacity = 16
    while size > capacity * 3 // 4:
        capacity *= 2
    return capacity


def java_hashmap_order(keys: list[str]) -> list[str]:
    """The order a java.util.HashMap filled with ``keys`` (in this order, default capacity 16, load factor 0.75)
    iterates them: by bucket (spread hash & (capacity - 1)), then insertion order within a bucket."""
    capacity = _capacity(len(keys))
    return [k for _, _, k in sorted((_bucket(java_string_hash(k), capacity), i, k) for i, k in enumerate(keys))]


class JavaHashSet:
    """A java.util.HashSet of partitions, for the one thing read from it: the element its iterator gives first
    (lowest bucket, then earliest inserted in it; the table only grows, as Java's does)."""

    def __init__(self):
        self._seq: dict[tuple, int] = {}
        self._next = 0
        self._capacity = 16

    def add(self, tp: tuple) -> None:
        if tp not in self._seq:
            self._seq[tp] = self._next
            self._next += 1
            self._capacity = max(self._capacity, _capacity(len(self._seq)))

    def remove(self, tp: tuple) -> None:
        self._seq.pop(tp, None)

    def __len__(self) -> int:
        return len(self._seq)

    def first(self) -> tuple:
        return min(self._seq, key=lambda tp: (_bucket(topic_partition_hash(tp), self._capacity), self._seq[tp]))


def use_rack_aware_assignment(consumer_racks: set, partition_racks: set, racks_per_partition: dict,
                              prefer_rack_aware: bool = False) -> bool:
    """AbstractPartitionAssignor.useRackAwareAssignment: some consumer rack holds replicas, and not every partition
    has replicas on every rack (``prefer_rack_aware``: Kafka's test-only switch that drops the second condition)."""
    if not consumer_racks or not consumer_racks & partition_racks:
        return False
    if prefer_rack_aware:
        return True
    return not all(racks == partition_racks for racks in racks_per_partition.values())


class RackInfo:
    """AbstractStickyAssignor.RackInfo: each member's rack and each partition's replica racks, both empty unless the
    assignment is rack-aware; and how many members share a rack with each partition's replicas (counted whenever
    some member has a rack)."""

    def __init__(self, partitions: list[tuple], replica_racks: dict, subscriptions: dict[str, MemberData],
                 order: list[str], prefer_rack_aware: bool = False):
        by_rack: dict[str, list[str]] = {}
        for member in order:
            rack = subscriptions[member].rack
            if rack:
                by_rack.setdefault(rack, []).append(member)
        racks_of: dict[tuple, frozenset] = {}
        if by_rack:
            racks_of = {tp: frozenset(replica_racks.get(tp, ())) for tp in partitions}
        all_racks = set().union(*racks_of.values()) if racks_of else set()
        if use_rack_aware_assignment(set(by_rack), all_racks, racks_of, prefer_rack_aware):
            self.consumer_racks = {m: rack for rack, members in by_rack.items() for m in members}
            self.partition_racks = racks_of
        else:
            self.consumer_racks, self.partition_racks = {}, {}
        self.consumers_by_partition = {tp: sum(len(by_rack.get(r, ())) for r in racks)
                                       for tp, racks in racks_of.items()}

    def racks_mismatch(self, member: str, tp: tuple) -> bool:
        rack = self.consumer_racks.get(member)
        return rack is not None and rack not in self.partition_racks.get(tp, ())

    def sort_partitions_by_rack_consumers(self, partitions: list[tuple]) -> list[tuple]:
        """Partitions with the fewest members on their replicas' racks first (a stable sort)."""
        if not self.consumers_by_partition:
            return partitions
        return sorted(partitions, key=lambda tp: self.consumers_by_partition.get(tp, 0))

    def next_rack_consumer(self, tp: tuple, members: list[str], first: int) -> int:
        """The index of the first member from ``first`` on (wrapping) whose rack holds a replica of ``tp``; -1."""
        racks = self.partition_racks.get(tp)
        if not racks:
            return -1
        for i in range(len(members)):
            index = (first + i) % len(members)
            if self.consumer_racks.get(members[index]) in racks:
                return index
        return -1
