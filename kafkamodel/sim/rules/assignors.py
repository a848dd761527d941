"""Kafka's partition assignors, as the consumer group leader runs them.

Members are sorted by member id (a string, as Kafka sorts them); partitions
are (topic, partition) pairs sorted by topic then number. Each function
returns {member: [partitions]} covering every partition exactly once.
"""

from __future__ import annotations

from math import ceil

from .range_assignor import RangeMember, range_assignment
from .roundrobin_assignor import roundrobin_assignment
from .sticky import DEFAULT_GENERATION, MemberData, sticky_assignment


def range_assign(members: list[str], partitions: list[int],
                 instance_ids: dict[str, str | None] | None = None) -> dict[str, list[int]]:
    """RangeAssignor on one topic (``range_assignor.range_assignment``): P // C each, and the first P % C members one
    more, static members first in group.instance.id order (KIP-345), then the others by member id."""
    parts = sorted(partitions)
    instance_ids = instance_ids or {}
    plan = range_assignment({"": len(parts)}, {m: RangeMember(("",), instance_ids.get(m)) for m in members})
    return {m: [parts[i] for _, i in plan[m]] for m in sorted(members)}


def range_ceil_assign(members: list[str], partitions: list[int]) -> dict[str, list[int]]:
    """Seed 002's variant: ceil(P / C) each in member order (the last members may get fewer, or none)."""
    members = sorted(members)
    parts = sorted(partitions)
    per = ceil(len(parts) / len(members)) if members else 0
    return {m: parts[i * per:(i + 1) * per] for i, m in enumerate(members)}


def roundrobin_assign(members: list[str], partitions: list[int],
                      instance_ids: dict[str, str | None] | None = None) -> dict[str, list[int]]:
    """RoundRobinAssignor on one topic (``roundrobin_assignor.roundrobin_assignment``): partitions dealt one by one
    to the members, static members first in group.instance.id order (KIP-345), then the others by member id."""
    parts = sorted(partitions)
    instance_ids = instance_ids or {}
    plan = roundrobin_assignment({"": len(parts)}, {m: RangeMember(("",), instance_ids.get(m)) for m in members})
    return {m: [parts[i] for _, i in plan[m]] for m in sorted(members)}


def sticky_assign(members: list[str], partitions: list[int], owned: dict[str, list[int]],
                  generations: dict[str, int] | None = None, cooperative: bool = False) -> dict[str, list[int]]:
    """StickyAssignor / CooperativeStickyAssignor on one topic (``sticky.sticky_assignment``): each member's owned
    partitions and the generation it owned them in (-1 when unknown, 0 when not given). Cooperative: partitions
    changing owner are left out (assigned by the next rebalance, once revoked)."""
    parts = sorted(partitions)
    number = {p: i for i, p in enumerate(parts)}
    generations = generations or {}
    subscriptions = {m: MemberData(("",), tuple(("", number[p]) for p in owned.get(m, []) if p in number),
                                   generations.get(m, 0 if m in owned else DEFAULT_GENERATION)) for m in members}
    plan, _ = sticky_assignment({"": len(parts)}, subscriptions, cooperative)
    return {m: [parts[i] for _, i in plan[m]] for m in members}


def assign(strategy: str, members: list[str], partitions: list[int], previous: dict[str, list[int]],
           generations: dict[str, int] | None = None,
           instance_ids: dict[str, str | None] | None = None) -> dict[str, list[int]]:
    """The named assignor's plan; ``previous``/``generations``: what each member owned and since which generation
    (the sticky assignors' MemberData); ``instance_ids``: each member's group.instance.id (the order of the range
    and roundrobin assignors)."""
    if not members:
        return {}
    if strategy == "range":
        return range_assign(members, partitions, instance_ids)
    if strategy == "range_ceil":
        return range_ceil_assign(members, partitions)
    if strategy == "roundrobin":
        return roundrobin_assign(members, partitions, instance_ids)
    return sticky_assign(members, partitions, previous, generations, cooperative=strategy == "cooperative-sticky")
