"""Kafka's ``RoundRobinAssignor``: every subscribed topic's partitions, sorted by topic then number, dealt one at a
time round the members (static members first in ``group.instance.id`` order, KIP-345, then the others by member
id), each going to the next member in turn that subscribes to its topic."""

from __future__ import annotations

from .range_assignor import RangeMember, member_order


def roundrobin_assignment(partitions_per_topic: dict[str, int],
                          subscriptions: dict[str, RangeMember]) -> dict[str, list]:
    """RoundRobinAssignor.assign: {member: [(topic, partition)]}."""
    order = member_order(subscriptions)
    out: dict[str, list] = {m: [] for m in subscriptions}
    topics = sorted({t for d in subscriptions.values() for t in d.topics if t in partitions_per_topic})
    turn = 0  # the CircularIterator's position
    for topic in topics:
        for p in range(partitions_per_topic[topic]):
            while topic not in subscriptions[order[turn % len(order)]].topics:
                turn += 1
            out[order[turn % len(order)]].append((topic, p))
            turn += 1
    return out
