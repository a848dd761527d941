"""Kafka's partition assignors, as the consumer group leader runs them.

Members are sorted by member id (a string, as Kafka sorts them); partitions
are (topic, partition) pairs sorted by topic then number. Each function
returns {member: [partitions]} covering every partition exactly once.
"""

from __future__ import annotations

from math import ceil


def range_assign(members: list[str], partitions: list[int]) -> dict[str, list[int]]:
    """RangeAssignor, per topic: P // C each, and the first P % C members one more."""
    members = sorted(members)
    parts = sorted(partitions)
    per, extra = divmod(len(parts), len(members))
    out, start = {}, 0
    for i, m in enumerate(members):
        n = per + (1 if i < extra else 0)
        out[m] = parts[start:start + n]
        start += n
    return out


def range_ceil_assign(members: list[str], partitions: list[int]) -> dict[str, list[int]]:
    """Seed 002's variant: ceil(P / C) each in member order (the last members may get fewer, or none)."""
    members = sorted(members)
    parts = sorted(partitions)
    per = ceil(len(parts) / len(members)) if members else 0
    return {m: parts[i * per:(i + 1) * per] for i, m in enumerate(members)}


def roundrobin_assign(members: list[str], partitions: list[int]) -> dict[str, list[int]]:
    """RoundRobinAssignor: partitions dealt one by one to the members in order."""
    members = sorted(members)
    out = {m: [] for m in members}
    for i, p in enumerate(sorted(partitions)):
        out[members[i % len(members)]].append(p)
    return out


def sticky_assign(members: list[str], partitions: list[int], previous: dict[str, list[int]]) -> dict[str, list[int]]:
    """StickyAssignor: as balanced as round robin, moving as few partitions as possible.

    Each member keeps what it had, up to its fair share (the larger shares go to
    the members that held the most); the rest go, in partition order, to the
    member with the fewest.
    """
    members = sorted(members)
    parts = sorted(partitions)
    per, extra = divmod(len(parts), len(members))
    by_held = sorted(members, key=lambda m: (-len([p for p in previous.get(m, []) if p in parts]), m))
    quota = {m: per + (1 if i < extra else 0) for i, m in enumerate(by_held)}
    out: dict[str, list[int]] = {m: [] for m in members}
    taken: set[int] = set()
    for m in by_held:
        for p in sorted(previous.get(m, [])):
            if p in parts and p not in taken and len(out[m]) < quota[m]:
                out[m].append(p)
                taken.add(p)
    for p in parts:
        if p not in taken:
            m = min(members, key=lambda m: (len(out[m]) >= quota[m], len(out[m]), m))
            out[m].append(p)
            taken.add(p)
    return {m: sorted(ps) for m, ps in out.items()}


def assign(strategy: str, members: list[str], partitions: list[int], previous: dict[str, list[int]]) -> dict[str, list[int]]:
    if not members:
        return {}
    if strategy == "range":
        return range_assign(members, partitions)
    if strategy == "range_ceil":
        return range_ceil_assign(members, partitions)
    if strategy == "roundrobin":
        return roundrobin_assign(members, partitions)
    return sticky_assign(members, partitions, previous)
