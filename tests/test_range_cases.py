"""Kafka's RangeAssignorTest and RoundRobinAssignorTest cases, by name, with Kafka's expected assignments (Kafka
trunk 1eb7644): static members sorted by group.instance.id (KIP-345) and the range assignor's rack-aware path
(KIP-881). Cases parametrized by RackConfig run with initializeRacks(rackConfig, maxConsumers): replication factor
and broker racks = maxConsumers (3, or 5), so every partition has a replica on every consumer's rack and the
rack-aware path must give the rack-blind ranges.
"""

from __future__ import annotations

import pytest

from kafkamodel.sim.rules.range_assignor import RangeMember, member_order, range_assignment
from kafkamodel.sim.rules.roundrobin_assignor import roundrobin_assignment
from kafkamodel.sim.rules.sticky_common import use_rack_aware_assignment

from sticky_kafka import (ALL_RACKS, NO_BROKER_RACK, NO_CONSUMER_RACK, RACK_CONFIGS, check_rack_assignment, racks,
                          replica_racks_of)

TOPIC1, TOPIC2 = "topic1", "topic2"
C1, C2, C3 = "consumer1", "consumer2", "consumer3"
STATIC = [(C1, "instance1"), (C2, "instance2"), (C3, "instance3")]


def tp(topic, p):
    return (topic, p)


class Range:
    """RangeAssignorTest's setup: partitions on brokers with racks, subscriptions with a rack per consumer index."""

    def __init__(self, rack_config=NO_CONSUMER_RACK, max_consumers=3):
        self.rf = max_consumers
        self.broker_racks = 0 if rack_config == NO_BROKER_RACK else max_consumers
        self.has_consumer_rack = rack_config != NO_CONSUMER_RACK
        self.replica_racks = {}

    def partitions(self, topic, n):  # partitionInfos(topic, n): node index 0 for every topic
        brokers = self.rf if self.broker_racks <= 0 else self.broker_racks * self.rf
        brokers = [None if self.broker_racks <= 0 else ALL_RACKS[i % self.broker_racks] for i in range(brokers)]
        self.replica_racks.update(replica_racks_of(topic, n, self.rf, brokers, 0))
        return n

    def sub(self, topics, index, instance=None):
        number = self.broker_racks if self.broker_racks > 0 else len(ALL_RACKS)
        return RangeMember(tuple(topics), instance, ALL_RACKS[index % number] if self.has_consumer_rack else None)

    def assign(self, ppt, subs):
        out = range_assignment(ppt, subs, self.replica_racks, prefer_rack_aware=True)
        return {m: set(v) for m, v in out.items()}  # assertAssignment: order does not matter


def by_instance(subs, out):  # checkStaticAssignment
    return {subs[m].group_instance_id: out[m] for m in subs if subs[m].group_instance_id}


# ---- AbstractPartitionAssignorTest: MemberInfo sorting ------------------------------------------------------------


def test_member_info_sorting():
    # testMemberInfoSortingWithoutGroupInstanceId / testMemberInfoSortingWithAllGroupInstanceId /
    # testMemberInfoSortingSomeGroupInstanceId
    assert member_order({"a": RangeMember(()), "b": RangeMember(()), "c": RangeMember(())}) == ["a", "b", "c"]
    assert member_order({"a": RangeMember((), "y"), "b": RangeMember((), "z"), "c": RangeMember((), "x")}) == \
        ["c", "a", "b"]
    assert member_order({"a": RangeMember(()), "b": RangeMember((), "y"), "c": RangeMember((), "x")}) == \
        ["c", "b", "a"]


def test_use_rack_aware_assignment():  # testUseRackAwareAssignment
    every, two = {"a", "b", "c"}, {"a", "b"}
    on_all = {("topic", i): frozenset(every) for i in range(10)}
    on_one = {("topic", i): frozenset({"abc"[i % 3]}) for i in range(10)}
    for prefer in (False, True):
        assert not use_rack_aware_assignment(set(), set(), on_all, prefer)
        assert not use_rack_aware_assignment(set(), every, on_all, prefer)
        assert not use_rack_aware_assignment(every, set(), {}, prefer)
        assert not use_rack_aware_assignment({"d"}, every, on_all, prefer)
        assert use_rack_aware_assignment(every, every, on_one, prefer)
        assert use_rack_aware_assignment(two, every, on_one, prefer)
        # every partition on every rack: rack-aware only under Kafka's test-only preference
        assert use_rack_aware_assignment(every, every, on_all, prefer) == prefer
        assert use_rack_aware_assignment(two, every, on_all, prefer) == prefer
    assert not use_rack_aware_assignment({"a", "d"}, every, on_all)
    assert use_rack_aware_assignment({"a", "d"}, every, on_one)


def test_merge_sort_many_member_info():  # testMergeSortManyMemberInfo (3-digit ids, about half static)
    members = {str(i + 100): RangeMember((), str(i + 100) if (i * 7919) % 2 else None) for i in range(100)}
    static = sorted(m for m, d in members.items() if d.group_instance_id)
    dynamic = sorted(m for m, d in members.items() if not d.group_instance_id)
    assert member_order(dict(reversed(list(members.items())))) == static + dynamic


# ---- RangeAssignorTest ----------------------------------------------------------------------------------------


@pytest.fixture(params=RACK_CONFIGS)
def r(request):
    return Range(request.param)


def test_one_consumer_no_topic(r):  # testOneConsumerNoTopic
    assert r.assign({}, {C1: r.sub([], 0)}) == {C1: set()}


def test_one_consumer_nonexistent_topic(r):  # testOneConsumerNonexistentTopic
    assert r.assign({}, {C1: r.sub([TOPIC1], 0)}) == {C1: set()}


def test_one_consumer_one_topic(r):  # testOneConsumerOneTopic
    assert r.assign({TOPIC1: r.partitions(TOPIC1, 3)}, {C1: r.sub([TOPIC1], 0)}) == \
        {C1: {tp(TOPIC1, 0), tp(TOPIC1, 1), tp(TOPIC1, 2)}}


def test_only_assigns_partitions_from_subscribed_topics(r):  # testOnlyAssignsPartitionsFromSubscribedTopics
    ppt = {TOPIC1: r.partitions(TOPIC1, 3), "other": r.partitions("other", 3)}
    assert r.assign(ppt, {C1: r.sub([TOPIC1], 0)}) == {C1: {tp(TOPIC1, 0), tp(TOPIC1, 1), tp(TOPIC1, 2)}}


def test_one_consumer_multiple_topics(r):  # testOneConsumerMultipleTopics
    ppt = {TOPIC1: r.partitions(TOPIC1, 1), TOPIC2: r.partitions(TOPIC2, 2)}
    assert r.assign(ppt, {C1: r.sub([TOPIC1, TOPIC2], 0)}) == {C1: {tp(TOPIC1, 0), tp(TOPIC2, 0), tp(TOPIC2, 1)}}


def test_two_consumers_one_topic_one_partition(r):  # testTwoConsumersOneTopicOnePartition
    out = r.assign({TOPIC1: r.partitions(TOPIC1, 1)}, {C1: r.sub([TOPIC1], 0), C2: r.sub([TOPIC1], 1)})
    assert out == {C1: {tp(TOPIC1, 0)}, C2: set()}


def test_two_consumers_one_topic_two_partitions(r):  # testTwoConsumersOneTopicTwoPartitions
    out = r.assign({TOPIC1: r.partitions(TOPIC1, 2)}, {C1: r.sub([TOPIC1], 0), C2: r.sub([TOPIC1], 1)})
    assert out == {C1: {tp(TOPIC1, 0)}, C2: {tp(TOPIC1, 1)}}


def test_multiple_consumers_mixed_topics(r):  # testMultipleConsumersMixedTopics
    ppt = {TOPIC1: r.partitions(TOPIC1, 3), TOPIC2: r.partitions(TOPIC2, 2)}
    out = r.assign(ppt, {C1: r.sub([TOPIC1], 0), C2: r.sub([TOPIC1, TOPIC2], 1), C3: r.sub([TOPIC1], 2)})
    assert out == {C1: {tp(TOPIC1, 0)}, C2: {tp(TOPIC1, 1), tp(TOPIC2, 0), tp(TOPIC2, 1)}, C3: {tp(TOPIC1, 2)}}


def test_two_consumers_two_topics_six_partitions(r):  # testTwoConsumersTwoTopicsSixPartitions
    ppt = {TOPIC1: r.partitions(TOPIC1, 3), TOPIC2: r.partitions(TOPIC2, 3)}
    out = r.assign(ppt, {C1: r.sub([TOPIC1, TOPIC2], 0), C2: r.sub([TOPIC1, TOPIC2], 1)})
    assert out == {C1: {tp(TOPIC1, 0), tp(TOPIC1, 1), tp(TOPIC2, 0), tp(TOPIC2, 1)}, C2: {tp(TOPIC1, 2), tp(TOPIC2, 2)}}


@pytest.mark.parametrize("high_static", [True, False])
def test_static_consumers_two_topics_six_partitions(r, high_static):
    # testTwoStaticConsumersTwoTopicsSixPartitions / testOneStaticConsumerAndOneDynamicConsumerTwoTopicsSixPartitions:
    # consumer-a sorts before consumer-b by member id, but instance1 (or being static at all) puts consumer-b first
    ppt = {TOPIC1: r.partitions(TOPIC1, 3), TOPIC2: r.partitions(TOPIC2, 3)}
    subs = {"consumer-b": r.sub([TOPIC1, TOPIC2], 0, "instance1"),
            "consumer-a": r.sub([TOPIC1, TOPIC2], 1, "instance2" if high_static else None)}
    out = r.assign(ppt, subs)
    assert out == {"consumer-b": {tp(TOPIC1, 0), tp(TOPIC1, 1), tp(TOPIC2, 0), tp(TOPIC2, 1)},
                   "consumer-a": {tp(TOPIC1, 2), tp(TOPIC2, 2)}}


@pytest.mark.parametrize("rack_config", RACK_CONFIGS)
def test_static_member_range_assignment_persistent(rack_config):  # testStaticMemberRangeAssignmentPersistent
    r = Range(rack_config, 5)
    ppt = {TOPIC1: r.partitions(TOPIC1, 5), TOPIC2: r.partitions(TOPIC2, 4)}
    subs = {m: r.sub([TOPIC1, TOPIC2], i, instance) for i, (m, instance) in enumerate(STATIC)}
    subs["consumer4"] = r.sub([TOPIC1, TOPIC2], 3)  # a dynamic member
    expected = {C1: {tp(TOPIC1, 0), tp(TOPIC1, 1), tp(TOPIC2, 0)}, C2: {tp(TOPIC1, 2), tp(TOPIC2, 1)},
                C3: {tp(TOPIC1, 3), tp(TOPIC2, 2)}, "consumer4": {tp(TOPIC1, 4), tp(TOPIC2, 3)}}
    assert r.assign(ppt, subs) == expected
    del subs["consumer4"]
    subs["consumer5"] = r.sub([TOPIC1, TOPIC2], 4)  # replaced by a new dynamic member
    expected["consumer5"] = expected.pop("consumer4")
    assert r.assign(ppt, subs) == expected


def static_member_ids_change(r):
    """Three static members, then consumer3 and consumer2 rejoin under new member ids: by instance, the same."""
    ppt = {TOPIC1: r.partitions(TOPIC1, 5), TOPIC2: r.partitions(TOPIC2, 5)}
    subs = {m: r.sub([TOPIC1, TOPIC2], i, instance) for i, (m, instance) in enumerate(STATIC)}
    first = by_instance(subs, r.assign(ppt, subs))
    subs["consumer4"] = subs.pop(C3)
    subs["consumer5"] = subs.pop(C2)
    assert by_instance(subs, r.assign(ppt, subs)) == first
    return first


def test_static_member_range_assignment_persistent_after_member_id_changes(r):
    # testStaticMemberRangeAssignmentPersistentAfterMemberIdChanges
    assert static_member_ids_change(r) == {
        "instance1": {tp(TOPIC1, 0), tp(TOPIC1, 1), tp(TOPIC2, 0), tp(TOPIC2, 1)},
        "instance2": {tp(TOPIC1, 2), tp(TOPIC1, 3), tp(TOPIC2, 2), tp(TOPIC2, 3)},
        "instance3": {tp(TOPIC1, 4), tp(TOPIC2, 4)}}


def test_rack_aware_static_member_range_assignment_persistent_after_member_id_changes():
    # testRackAwareStaticMemberRangeAssignmentPersistentAfterMemberIdChanges: replication factor 2 on 3 racks
    # (partition p on racks p % 3 and (p + 1) % 3), members on racks a, b, c
    r = Range("BROKER_AND_CONSUMER_RACK")
    r.rf = 2
    assert static_member_ids_change(r) == {
        "instance1": {tp(TOPIC1, 0), tp(TOPIC1, 2), tp(TOPIC2, 0), tp(TOPIC2, 2)},
        "instance2": {tp(TOPIC1, 1), tp(TOPIC1, 3), tp(TOPIC2, 1), tp(TOPIC2, 3)},
        "instance3": {tp(TOPIC1, 4), tp(TOPIC2, 4)}}


# ---- the rack-aware cases (verifyRackAssignment) -----------------------------------------------------------------


class RackRange:
    """A RangeAssignor instance with Kafka's test-only preferRackAwareLogic switch."""

    def __init__(self):
        self.prefer = False

    def check(self, topics, rf, broker_racks, consumer_racks, consumer_topics, expected, mismatched):
        check_rack_assignment(lambda t, s, rr: range_assignment(t, s, rr, self.prefer),
                              lambda i, rack: RangeMember(tuple(consumer_topics[i]), None, rack),
                              topics, rf, broker_racks, consumer_racks, expected, mismatched)

    def non_rack_aware(self, topics, consumer_topics, expected):  # verifyNonRackAwareAssignment
        for rf, brokers, consumers, mismatched in ((3, NULL3, racks(3), -1), (3, racks(3), NULL3, -1),
                                                   (3, racks(3), racks(3), 0), (4, racks(4), racks(3), 0),
                                                   (3, racks(3), ["d", "e", "f"], -1),
                                                   (3, racks(3), [None, "e", "f"], -1)):
            self.check(topics, rf, brokers, consumers, consumer_topics, expected, mismatched)
        self.prefer = True
        self.check(topics, 3, racks(3), racks(3), consumer_topics, expected, 0)
        self.prefer = False


NULL3 = [None, None, None]
SIZES = {"t1": 6, "t2": 7, "t3": 2}
UNIFORM = {"t1": 5, "t2": 5, "t3": 5}
EVERY = ["t1", "t2", "t3"]


ALL3, FIRST_TWO = [EVERY] * 3, [EVERY, EVERY, ["t1", "t3"]]


@pytest.mark.parametrize("topics, subs, plain, checks", [
    pytest.param(SIZES, ALL3,  # testRackAwareAssignmentWithUniformSubscription
                 ["t1-0, t1-1, t2-0, t2-1, t2-2, t3-0", "t1-2, t1-3, t2-3, t2-4, t3-1", "t1-4, t1-5, t2-5, t2-6"],
                 [(1, 3, ["t1-0, t1-3, t2-0, t2-3, t2-6", "t1-1, t1-4, t2-1, t2-4, t3-0",
                          "t1-2, t1-5, t2-2, t2-5, t3-1"], 0),
                  (2, 3, ["t1-0, t1-2, t2-0, t2-2, t2-3, t3-1", "t1-1, t1-3, t2-1, t2-4, t3-0",
                          "t1-4, t1-5, t2-5, t2-6"], 1),
                  (3, 2, None, 4)], id="testRackAwareAssignmentWithUniformSubscription"),
    pytest.param(SIZES, FIRST_TWO,
                 ["t1-0, t1-1, t2-0, t2-1, t2-2, t2-3, t3-0", "t1-2, t1-3, t2-4, t2-5, t2-6, t3-1", "t1-4, t1-5"],
                 [(1, 3, ["t1-0, t1-3, t2-0, t2-2, t2-3, t2-6", "t1-1, t1-4, t2-1, t2-4, t2-5, t3-0",
                          "t1-2, t1-5, t3-1"], 2),
                  (2, 3, ["t1-0, t1-2, t2-0, t2-2, t2-3, t2-5, t3-1", "t1-1, t1-3, t2-1, t2-4, t2-6, t3-0",
                          "t1-4, t1-5"], 0),
                  (3, 2, None, 2)], id="testRackAwareAssignmentWithNonEqualSubscription"),
    pytest.param(UNIFORM, ALL3,  # co-partitioning before rack alignment
                 ["t1-0, t1-1, t2-0, t2-1, t3-0, t3-1", "t1-2, t1-3, t2-2, t2-3, t3-2, t3-3", "t1-4, t2-4, t3-4"],
                 [(1, 3, None, 10), (2, 3, None, 5), (3, 2, None, 3)],
                 id="testRackAwareAssignmentWithUniformPartitions"),
    pytest.param(UNIFORM, FIRST_TWO,
                 ["t1-0, t1-1, t2-0, t2-1, t2-2, t3-0, t3-1", "t1-2, t1-3, t2-3, t2-4, t3-2, t3-3", "t1-4, t3-4"],
                 [(1, 3, ["t1-0, t1-1, t2-0, t2-1, t2-4, t3-0, t3-1", "t1-2, t1-3, t2-2, t2-3, t3-2, t3-3",
                          "t1-4, t3-4"], 9),
                  (2, 3, ["t1-2, t2-0, t2-1, t2-3, t3-2", "t1-0, t1-3, t2-2, t2-4, t3-0, t3-3",
                          "t1-1, t1-4, t3-1, t3-4"], 0),
                  (3, 2, None, 2)], id="testRackAwareAssignmentWithUniformPartitionsNonEqualSubscription")])
def test_rack_aware_range(topics, subs, plain, checks):
    # the rack-blind ranges wherever racks are not used or all match; then replication factor rf over N broker
    # racks with members on racks a, b, c: Kafka's assignment (None: the rack-blind one) and misaligned count
    a = RackRange()
    a.non_rack_aware(topics, subs, plain)
    for rf, broker_racks, expected, mismatched in checks:
        a.check(topics, rf, racks(broker_racks), racks(3), subs, expected or plain, mismatched)


def test_rack_aware_assignment_with_co_partitioning():  # testRackAwareAssignmentWithCoPartitioning
    a = RackRange()
    topics = {"t1": 6, "t2": 6, "t3": 2, "t4": 2}
    subs = [["t1", "t2"], ["t1", "t2"], ["t3", "t4"], ["t3", "t4"]]
    consumers = ["a", "b", "b", "a"]
    plain = ["t1-0, t1-1, t1-2, t2-0, t2-1, t2-2", "t1-3, t1-4, t1-5, t2-3, t2-4, t2-5", "t3-0, t4-0", "t3-1, t4-1"]
    a.check(topics, 3, racks(2), consumers, subs, plain, -1)
    a.check(topics, 2, racks(2), consumers, subs, plain, 0)
    a.check(topics, 1, racks(2), consumers, subs,
            ["t1-0, t1-2, t1-4, t2-0, t2-2, t2-4", "t1-1, t1-3, t1-5, t2-1, t2-3, t2-5", "t3-1, t4-1", "t3-0, t4-0"], 0)
    subs = [list(topics)] * 4
    plain = ["t1-0, t1-1, t2-0, t2-1, t3-0, t4-0", "t1-2, t1-3, t2-2, t2-3, t3-1, t4-1", "t1-4, t2-4", "t1-5, t2-5"]
    a.check(topics, 3, racks(2), consumers, subs, plain, -1)
    a.check(topics, 2, racks(2), consumers, subs, plain, 0)
    a.check(topics, 1, racks(2), consumers, subs,
            ["t1-0, t1-2, t2-0, t2-2, t3-0, t4-0", "t1-1, t1-3, t2-1, t2-3, t3-1, t4-1", "t1-5, t2-5", "t1-4, t2-4"], 0)
    a.check(topics, 1, racks(3), consumers, subs,
            ["t1-0, t1-3, t2-0, t2-3, t3-0, t4-0", "t1-1, t1-4, t2-1, t2-4, t3-1, t4-1", "t1-2, t2-2", "t1-5, t2-5"], 6)


def test_co_partitioned_assignment_with_same_subscription():  # testCoPartitionedAssignmentWithSameSubscription
    a = RackRange()
    topics = {"t1": 6, "t2": 6, "t3": 2, "t4": 2, "t5": 4, "t6": 4}
    subs = [[f"t{i}" for i in range(1, 10)]] * 3  # t7..t9 do not exist
    plain = ["t1-0, t1-1, t2-0, t2-1, t3-0, t4-0, t5-0, t5-1, t6-0, t6-1",
             "t1-2, t1-3, t2-2, t2-3, t3-1, t4-1, t5-2, t6-2", "t1-4, t1-5, t2-4, t2-5, t5-3, t6-3"]
    a.check(topics, 3, NULL3, racks(3), subs, plain, -1)
    a.prefer = True
    a.check(topics, 3, racks(3), racks(3), subs, plain, 0)
    a.check(topics, 2, racks(3), racks(3), subs,
            ["t1-0, t1-2, t2-0, t2-2, t3-0, t4-0, t5-1, t6-1", "t1-1, t1-3, t2-1, t2-3, t3-1, t4-1, t5-2, t6-2",
             "t1-4, t1-5, t2-4, t2-5, t5-0, t5-3, t6-0, t6-3"], 0)


# ---- RoundRobinAssignorTest --------------------------------------------------------------------------------------


def rr(ppt, subs):
    return roundrobin_assignment(ppt, {m: RangeMember(tuple(t), i) for m, (t, i) in subs.items()})


def test_roundrobin_one_consumer_cases():
    # testOneConsumerNoTopic / testOneConsumerNonexistentTopic / testOneConsumerOneTopic /
    # testOnlyAssignsPartitionsFromSubscribedTopics / testOneConsumerMultipleTopics
    assert rr({}, {C1: ([], None)}) == {C1: []}
    assert rr({}, {C1: ([TOPIC1], None)}) == {C1: []}
    assert rr({TOPIC1: 3}, {C1: ([TOPIC1], None)}) == {C1: [tp(TOPIC1, 0), tp(TOPIC1, 1), tp(TOPIC1, 2)]}
    assert rr({TOPIC1: 3, "other": 3}, {C1: ([TOPIC1], None)}) == {C1: [tp(TOPIC1, 0), tp(TOPIC1, 1), tp(TOPIC1, 2)]}
    assert rr({TOPIC1: 1, TOPIC2: 2}, {C1: ([TOPIC1, TOPIC2], None)}) == \
        {C1: [tp(TOPIC1, 0), tp(TOPIC2, 0), tp(TOPIC2, 1)]}


def test_roundrobin_two_consumers_one_topic():
    # testTwoConsumersOneTopicOnePartition / testTwoConsumersOneTopicTwoPartitions
    assert rr({TOPIC1: 1}, {C1: ([TOPIC1], None), C2: ([TOPIC1], None)}) == {C1: [tp(TOPIC1, 0)], C2: []}
    assert rr({TOPIC1: 2}, {C1: ([TOPIC1], None), C2: ([TOPIC1], None)}) == {C1: [tp(TOPIC1, 0)], C2: [tp(TOPIC1, 1)]}


def test_roundrobin_multiple_consumers_mixed_topics():  # testMultipleConsumersMixedTopics
    out = rr({TOPIC1: 3, TOPIC2: 2}, {C1: ([TOPIC1], None), C2: ([TOPIC1, TOPIC2], None), C3: ([TOPIC1], None)})
    assert out == {C1: [tp(TOPIC1, 0)], C2: [tp(TOPIC1, 1), tp(TOPIC2, 0), tp(TOPIC2, 1)], C3: [tp(TOPIC1, 2)]}


@pytest.mark.parametrize("first, second", [
    (("consumer1", None), ("consumer2", None)),  # testTwoDynamicConsumersTwoTopicsSixPartitions
    (("consumer-b", "instance1"), ("consumer-a", "instance2")),  # testTwoStaticConsumersTwoTopicsSixPartitions
    (("consumer-b", "instance1"), ("consumer-a", None))])  # testOneStaticConsumerAndOneDynamicConsumer...
def test_roundrobin_two_consumers_two_topics_six_partitions(first, second):
    both = [TOPIC1, TOPIC2]
    out = rr({TOPIC1: 3, TOPIC2: 3}, {first[0]: (both, first[1]), second[0]: (both, second[1])})
    assert out == {first[0]: [tp(TOPIC1, 0), tp(TOPIC1, 2), tp(TOPIC2, 1)],
                   second[0]: [tp(TOPIC1, 1), tp(TOPIC2, 0), tp(TOPIC2, 2)]}


def test_static_member_round_robin_assignment_persistent():  # testStaticMemberRoundRobinAssignmentPersistent
    both = [TOPIC1, TOPIC2]
    subs = {m: (both, instance) for m, instance in STATIC}
    subs["consumer4"] = (both, None)
    expected = {C1: [tp(TOPIC1, 0), tp(TOPIC2, 1)], C2: [tp(TOPIC1, 1), tp(TOPIC2, 2)], C3: [tp(TOPIC1, 2)],
                "consumer4": [tp(TOPIC2, 0)]}
    assert rr({TOPIC1: 3, TOPIC2: 3}, subs) == expected
    del subs["consumer4"]
    subs["consumer5"] = (both, None)
    expected["consumer5"] = expected.pop("consumer4")
    assert rr({TOPIC1: 3, TOPIC2: 3}, subs) == expected


def test_static_member_round_robin_assignment_persistent_after_member_id_changes():
    # testStaticMemberRoundRobinAssignmentPersistentAfterMemberIdChanges
    both = [TOPIC1, TOPIC2]
    subs = {m: (both, instance) for m, instance in STATIC}
    expected = {"instance1": [tp(TOPIC1, 0), tp(TOPIC1, 3), tp(TOPIC2, 1), tp(TOPIC2, 4)],
                "instance2": [tp(TOPIC1, 1), tp(TOPIC1, 4), tp(TOPIC2, 2)],
                "instance3": [tp(TOPIC1, 2), tp(TOPIC2, 0), tp(TOPIC2, 3)]}
    out = rr({TOPIC1: 5, TOPIC2: 5}, subs)
    assert {subs[m][1]: v for m, v in out.items()} == expected
    subs["consumer4"], subs["consumer5"] = subs.pop(C3), subs.pop(C2)
    out = rr({TOPIC1: 5, TOPIC2: 5}, subs)
    assert {subs[m][1]: v for m, v in out.items()} == expected
