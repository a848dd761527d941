"""Kafka's ``RangeAssignor`` over several topics, with static members (KIP-345) and racks (KIP-881).

Per topic, its members are sorted as ``AbstractPartitionAssignor.MemberInfo`` sorts them: static members first, by
``group.instance.id``, then dynamic ones by member id, so a static member that restarts under a new member id keeps
its range. Each gets ``P // C`` partitions and the first ``P % C`` one more, in partition order.

Rack-aware (some member's ``client.rack`` holds replicas, and not every partition is on every rack): first, topics
with the same members and the same partition count are assigned together, partition p of all of them to the first
member whose rack holds a replica of each (co-partitioning before rack alignment); any other topic that needs it
gets ranges of the partitions on each member's rack; then plain ranges fill the quotas. Each member's list is then
sorted by topic and partition.
"""

from __future__ import annotations

from typing import NamedTuple

from .sticky_common import java_hashmap_order, use_rack_aware_assignment


class RangeMember(NamedTuple):
    """A member's Subscription as the range assignor reads it."""
    topics: tuple
    group_instance_id: str | None = None
    rack: str | None = None


def member_order(members: dict[str, RangeMember]) -> list[str]:
    """MemberInfo.compareTo: static members by group.instance.id first, then dynamic ones by member id."""
    return sorted(members, key=lambda m: (members[m].group_instance_id is None,
                                          members[m].group_instance_id or m))


class _TopicState:
    """RangeAssignor.TopicAssignmentState: one topic's members, quotas and unassigned partitions."""

    def __init__(self, topic: str, partitions: int, members: dict[str, RangeMember], replica_racks: dict,
                 prefer_rack_aware: bool):
        self.topic = topic
        self.consumers = {m: members[m].rack or None for m in member_order(members)}
        self.unassigned = [(topic, p) for p in range(partitions)]
        self.assigned = {m: 0 for m in self.consumers}
        self.per_consumer = partitions // len(self.consumers) if self.consumers else 0
        self.with_extra = partitions % len(self.consumers) if self.consumers else 0
        consumer_racks = {r for r in self.consumers.values() if r}
        self.partition_racks = {tp: frozenset(replica_racks.get(tp, ())) for tp in self.unassigned} \
            if consumer_racks else {}
        all_racks = set().union(*self.partition_racks.values()) if self.partition_racks else set()
        self.needs_rack_aware = use_rack_aware_assignment(consumer_racks, all_racks, self.partition_racks,
                                                          prefer_rack_aware)

    def racks_match(self, member: str, tp: tuple) -> bool:
        rack = self.consumers[member]
        return rack is None or rack in self.partition_racks.get(tp, ())

    def max_assignable(self, member: str) -> int:
        return max(0, self.per_consumer + (1 if self.with_extra > 0 else 0) - self.assigned[member])

    def give(self, member: str, partitions: list[tuple], assignment: dict[str, list]) -> None:
        assignment[member].extend(partitions)
        self.assigned[member] += len(partitions)
        if self.assigned[member] > self.per_consumer:
            self.with_extra -= 1
        gone = set(partitions)
        self.unassigned = [tp for tp in self.unassigned if tp not in gone]

    def assign_ranges(self, may_assign, assignment: dict[str, list]) -> None:
        for member in self.consumers:
            if not self.unassigned:
                break
            chosen = [tp for tp in self.unassigned if may_assign(member, tp)][:self.max_assignable(member)]
            if chosen:
                self.give(member, chosen, assignment)


def _assign_co_partitioned(consumers: dict, partitions: int, states: list[_TopicState],
                           assignment: dict[str, list]) -> None:
    """Partition p of every topic in ``states`` to the first member on a rack holding a replica of each."""
    remaining = list(consumers)
    for p in range(partitions):
        member = next((m for m in remaining if all(s.racks_match(m, (s.topic, p)) and s.max_assignable(m) > 0
                                                   for s in states)), None)
        if member is None:
            continue
        for s in states:
            s.give(member, [(s.topic, p)], assignment)
        if not any(s.max_assignable(member) > 0 for s in states):
            remaining.remove(member)
            if not remaining:
                break


def range_assignment(partitions_per_topic: dict[str, int], subscriptions: dict[str, RangeMember],
                     replica_racks: dict | None = None, prefer_rack_aware: bool = False) -> dict[str, list]:
    """RangeAssignor.assignPartitions: {member: [(topic, partition)]}. ``replica_racks``: {(topic, partition): racks
    of its replicas}; ``prefer_rack_aware``: Kafka's test-only switch."""
    order = java_hashmap_order(list(subscriptions))
    states = []
    for topic, count in partitions_per_topic.items():
        if count:
            members = {m: subscriptions[m] for m in order if topic in subscriptions[m].topics}
            states.append(_TopicState(topic, count, members, replica_racks or {}, prefer_rack_aware))
    assignment: dict[str, list] = {m: [] for m in order}
    rack_aware = any(s.needs_rack_aware for s in states)
    if rack_aware:
        groups: dict[tuple, list[_TopicState]] = {}
        for s in states:  # same members (and racks), same partition count: co-partitioned
            groups.setdefault((tuple(sorted(s.consumers.items(), key=lambda kv: kv[0])), len(s.partition_racks)),
                              []).append(s)
        for (_, partitions), together in groups.items():
            if len(together) > 1:
                _assign_co_partitioned(together[0].consumers, partitions, together, assignment)
            elif together[0].needs_rack_aware:
                together[0].assign_ranges(together[0].racks_match, assignment)
    for s in states:
        s.assign_ranges(lambda m, tp: True, assignment)
    if rack_aware:
        for parts in assignment.values():
            parts.sort()
    return assignment
