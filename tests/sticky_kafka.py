"""Kafka's sticky-assignor test harness, rebuilt for the model's assignor (AbstractStickyAssignorTest,
AbstractPartitionAssignorTest, CooperativeStickyAssignorTest): rack configurations, partitions with replica racks,
and the verification Kafka's tests run after each assignment."""

from __future__ import annotations

from kafkamodel.sim.rules.sticky import DEFAULT_GENERATION, MemberData, StickyAssignor

ALL_RACKS = ("a", "b", "c", "d", "e", "f")
NO_BROKER_RACK, NO_CONSUMER_RACK, BROKER_AND_CONSUMER_RACK = "NO_BROKER_RACK", "NO_CONSUMER_RACK", \
    "BROKER_AND_CONSUMER_RACK"
RACK_CONFIGS = [NO_BROKER_RACK, NO_CONSUMER_RACK, BROKER_AND_CONSUMER_RACK]
GENERATION = 1  # AbstractStickyAssignorTest.generationId


def racks(n):
    return [ALL_RACKS[i % len(ALL_RACKS)] for i in range(n)]


def replica_racks_of(topic, partitions, rf, broker_racks, next_node):
    """AbstractPartitionAssignorTest.partitionInfos: partition i's replicas are brokers (i + j + next_node) % N."""
    return {(topic, i): frozenset(r for r in (broker_racks[(i + j + next_node) % len(broker_racks)] for j in range(rf))
                                  if r is not None) for i in range(partitions)}


class Assignor:
    """An assignor under test plus the rack setup of AbstractStickyAssignorTest.initializeRacks."""

    def __init__(self, name, rack_config=None):
        """rack_config None: no racks at all; else initializeRacks(rackConfig): replication factor 3, 3 broker
        racks unless NO_BROKER_RACK, a rack per consumer unless NO_CONSUMER_RACK, preferRackAwareLogic on."""
        self.name = name
        self.cooperative = name == "cooperative-sticky"
        self.rf = 2 if rack_config is None else 3
        self.broker_racks = 0 if rack_config in (None, NO_BROKER_RACK) else 3
        self.has_consumer_rack = rack_config not in (None, NO_CONSUMER_RACK)
        self.rack_config = rack_config
        self.impl = StickyAssignor(self.cooperative, prefer_rack_aware=rack_config is not None)
        self.replica_racks = {}
        self.next_partition_index = 0

    def partitions(self, topic, n):
        """partitionInfos(topic, n): the next node index per topic created."""
        index = self.next_partition_index
        self.next_partition_index += 1
        brokers = self.rf if self.broker_racks <= 0 else self.broker_racks * self.rf
        broker_racks = [None if self.broker_racks <= 0 else ALL_RACKS[i % self.broker_racks] for i in range(brokers)]
        self.replica_racks.update(replica_racks_of(topic, n, self.rf, broker_racks, index))
        return n

    def rack(self, index):
        number = self.broker_racks if self.broker_racks > 0 else len(ALL_RACKS)
        return ALL_RACKS[index % number] if self.has_consumer_rack else None

    def sub(self, topics, index, owned=(), generation=DEFAULT_GENERATION):
        """subscription(topics, i) / buildSubscriptionV2Above(topics, owned, generation, i)."""
        return MemberData(tuple(topics), tuple(owned), generation, self.rack(index))

    @property
    def transferring(self):
        return self.impl.partitions_transferring_ownership

    def assign(self, ppt, subs):
        """assignPartitions; topics given by count only get their replicas now (partitionInfos), and members
        subscribed without a rack get the rack of their place in ``subs`` (subscription(topics, i))."""
        for topic, n in ppt.items():
            if (topic, 0) not in self.replica_racks:
                self.partitions(topic, n)
        if self.has_consumer_rack:
            subs.update({m: d._replace(rack=self.rack(i)) for i, (m, d) in enumerate(subs.items()) if d.rack is None})
        return self.impl.assign(ppt, subs, self.replica_racks)

    def is_sticky(self):
        return self.impl.is_sticky()

    def verify(self, subs, assignment, ppt):
        """verifyValidityAndBalance (CooperativeStickyAssignorTest's first: no partition revoked and assigned in one
        rebalance; while some are revoked, follow-up rebalances with members owning what they were given, at most
        4); returns the final assignment, as Kafka's verify replaces the map's contents."""
        rebalances = 0
        while self.cooperative:
            added, revoked = set(), set()
            for member, parts in assignment.items():
                owned = set(subs[member].owned)
                added |= set(parts) - owned
                revoked |= owned - set(parts)
            assert not added & revoked, f"assigned while being revoked: {added & revoked}"
            if not revoked:
                break
            for member, parts in assignment.items():
                d = subs[member]
                subs[member] = MemberData(d.topics, tuple(parts), GENERATION, d.rack)
            assignment = self.assign(ppt, subs)
            rebalances += 1
            assert rebalances <= 4
        verify_validity_and_balance(subs, assignment)
        return assignment


def verify_validity_and_balance(subs, assignment):
    """AbstractStickyAssignorTest.verifyValidityAndBalance: each member holds only partitions of its topics, no
    partition twice, and two members differing by 2+ partitions share no topic among their partitions."""
    assert set(subs) == set(assignment)
    members = sorted(assignment)
    for i, member in enumerate(members):
        parts = assignment[member]
        assert all(tp[0] in subs[member].topics for tp in parts), (member, parts)
        for other in members[i + 1:]:
            theirs = assignment[other]
            assert not set(parts) & set(theirs), (member, other)
            if abs(len(parts) - len(theirs)) > 1:
                assert not {tp[0] for tp in parts} & {tp[0] for tp in theirs}, (member, other, assignment)


def fully_balanced(assignment):
    sizes = [len(v) for v in assignment.values()]
    return max(sizes) - min(sizes) <= 1


def parse(text):
    """"t1-0, t2-3" as (topic, partition) pairs."""
    return [(p.rsplit("-", 1)[0], int(p.rsplit("-", 1)[1])) for p in text.split(", ")] if text else []


def check_rack_assignment(assign, member, topics, rf, broker_racks, consumer_racks, expected, mismatched):
    """AbstractPartitionAssignorTest.verifyRackAssignment: members consumer0.. (``member(i, rack)`` builds each
    one's subscription); partition i of a topic has replicas on brokers (i + j + first) % N, ``first`` counting the
    partitions of the topics before it; the assignment, as sorted strings, is ``expected`` and, unless
    ``mismatched`` < 0, that many assigned partitions have no replica on their member's rack."""
    replica_racks, first = {}, 0
    for t, n in topics.items():
        replica_racks.update(replica_racks_of(t, n, rf, broker_racks, first))
        first += n
    subs = {f"consumer{i}": member(i, rack) for i, rack in enumerate(consumer_racks)}
    out = assign(topics, subs, replica_racks)
    assert {m: ", ".join(sorted(f"{t}-{p}" for t, p in v)) for m, v in out.items()} == \
        {f"consumer{i}": e for i, e in enumerate(expected)}
    if mismatched >= 0:
        assert sum(1 for i, rack in enumerate(consumer_racks) if rack is not None
                   for p in out[f"consumer{i}"] if rack not in replica_racks[p]) == mismatched
