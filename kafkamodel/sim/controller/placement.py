"""Where a topic's replicas go, as Kafka assigns a new topic's partitions.

Without racks the model puts partition p's replicas on brokers p, p+1, ...
(mod the broker count): Kafka's rack-unaware assignment from start index 0
with no replica shift. With racks (``broker.rack``), Kafka's rack-aware
assignment (``AdminUtils.assignReplicasToBrokersRackAware``), which Kafka
starts at a random broker and shift; the model starts at 0 with shift 0
(``fixedStartIndex = 0``), so a run is reproducible:

* the brokers are listed rack by rack in turn (racks in name order, brokers
  by id within a rack): rack1: 0, 1 and rack2: 2, 3 give 0, 2, 1, 3;
* partition p's first replica (its preferred leader) is that list's
  (p mod n)-th broker; the shift grows by one every n partitions;
* each further replica is the next broker of the list (from the shift)
  whose rack has no replica yet, unless every rack has one, and which has no
  replica yet, unless every broker has one.

So every partition's replicas span min(RF, racks) racks, and leaders and
replicas spread evenly over the brokers.
"""

from __future__ import annotations


def rack_alternated(racks: dict[int, str]) -> list[int]:
    """getRackAlternatedBrokerList: one broker of each rack in turn (racks sorted, brokers by id)."""
    by_rack: dict[str, list[int]] = {}
    for broker, rack in sorted(racks.items()):
        by_rack.setdefault(rack, []).append(broker)
    queues = [by_rack[r] for r in sorted(by_rack)]
    out: list[int] = []
    i = 0
    while len(out) < len(racks):
        queue = queues[i % len(queues)]
        if queue:
            out.append(queue.pop(0))
        i += 1
    return out


def _replica_index(first: int, second_shift: int, k: int, n: int) -> int:
    return (first + 1 + (second_shift + k) % (n - 1)) % n


def rack_aware(partitions: int, rf: int, racks: dict[int, str], start: int = 0) -> list[tuple[int, ...]]:
    """assignReplicasToBrokersRackAware(partitions, rf, brokers with racks, fixedStartIndex=start)."""
    arranged = rack_alternated(racks)
    n = len(arranged)
    n_racks = len(set(racks.values()))
    shift = start
    out = []
    for p in range(partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        leader = arranged[first]
        replicas = [leader]
        racks_in, brokers_in = {racks[leader]}, {leader}
        k = 0
        for _ in range(rf - 1):
            while True:
                broker = arranged[_replica_index(first, shift * n_racks, k, n)]
                rack = racks[broker]
                k += 1
                if (rack not in racks_in or len(racks_in) == n_racks) and (broker not in brokers_in or len(brokers_in) == n):
                    replicas.append(broker)
                    racks_in.add(rack)
                    brokers_in.add(broker)
                    break
        out.append(tuple(replicas))
    return out


def assign(partitions: int, rf: int, brokers: int, racks: tuple = ()) -> list[tuple[int, ...]]:
    """Each partition's replicas, the preferred leader first."""
    if racks:
        return rack_aware(partitions, rf, dict(enumerate(racks)))
    return [tuple((p + i) % brokers for i in range(rf)) for p in range(partitions)]


def assign_to(partitions: int, rf: int, present: list, racks: tuple = ()) -> list[tuple[int, ...]]:
    """As ``assign``, over the brokers `present` at the start only (the others are added later: operations)."""
    if racks:
        return rack_aware(partitions, rf, {b: racks[b] for b in present})
    return [tuple(present[(p + i) % len(present)] for i in range(rf)) for p in range(partitions)]
