"""Kafka's own sticky-assignor test cases, by name, with Kafka's expected assignments (the equal-subscription
cases of AbstractStickyAssignorTest, StickyAssignorTest and CooperativeStickyAssignorTest, Kafka trunk 1eb7644; the
unequal ones and the rack-aware ones are in test_sticky_general.py). Each abstract case runs for both assignors, as
Kafka's subclasses do, without racks and under each RackConfig (every partition on every member's rack, so the
rack-aware passes must give the same answer): the cooperative one checks its assignment as
CooperativeStickyAssignorTest.verifyValidityAndBalance does (no partition revoked and assigned in one rebalance;
while some are revoked, follow-up rebalances with the members owning what they were given, at most 4), and the
assertions after that check the final assignment, as Kafka's do (its verify replaces the map's contents).
"""

from __future__ import annotations

import pytest

from kafkamodel.sim.rules.sticky import DEFAULT_GENERATION, MemberData, java_hashmap_order, java_string_hash
from kafkamodel.sim.rules.sticky import sticky_assignment

from sticky_kafka import GENERATION, RACK_CONFIGS, Assignor, fully_balanced

TOPIC, TOPIC1, TOPIC2, TOPIC3 = "topic", "topic1", "topic2", "topic3"
C1, C2, C3, C4 = "consumer1", "consumer2", "consumer3", "consumer4"

ASSIGNORS = ["sticky", "cooperative-sticky"]


def tp(topic, p):
    return (topic, p)


def sub(topics, owned=(), generation=DEFAULT_GENERATION):
    """subscription(topics, i) without owned partitions, or buildSubscriptionV2Above(topics, owned, generation, i)."""
    return MemberData(tuple(topics), tuple(owned), generation)


@pytest.fixture(params=[(a, r) for a in ASSIGNORS for r in (None, *RACK_CONFIGS)],
                ids=lambda p: f"{p[0]}-{p[1] or 'no-racks'}")
def assignor(request):
    return Assignor(*request.param)


# ---- the leader's HashMap order decides who keeps maxQuota --------------------------------------------------


def test_java_string_hash_and_hashmap_order():
    # "consumer1".hashCode() = 31^8*'c' + ... computed here from the definition s[0]*31^(n-1) + ... + s[n-1]
    def definition(s):
        return sum(ord(ch) * 31 ** (len(s) - 1 - i) for i, ch in enumerate(s))
    for s in ("consumer1", "c0", "consumer-g-12", ""):
        h = definition(s) % (1 << 32)
        assert java_string_hash(s) == (h - (1 << 32) if h >= 1 << 31 else h)
    # bucket = (h ^ h >>> 16) & 15 for 3 keys: consumer3 (bucket 2), consumer2 (bucket 5), consumer1 (bucket 8)
    buckets = {}
    for k in (C1, C2, C3):
        h = java_string_hash(k) & 0xFFFFFFFF
        buckets[k] = (h ^ (h >> 16)) & 15
    assert java_hashmap_order([C1, C2, C3]) == sorted([C1, C2, C3], key=buckets.get)


# ---- AbstractStickyAssignorTest --------------------------------------------------------------------------------


def test_one_consumer_one_topic(assignor):  # testOneConsumerOneTopic
    ppt = {TOPIC: 3}
    subs = {"consumer": sub([TOPIC])}
    a = assignor.assign(ppt, subs)
    assert a["consumer"] == [tp(TOPIC, 0), tp(TOPIC, 1), tp(TOPIC, 2)]
    assert assignor.transferring == {}
    assert fully_balanced(assignor.verify(subs, a, ppt))


def test_only_assigns_partitions_from_subscribed_topics(assignor):  # testOnlyAssignsPartitionsFromSubscribedTopics
    ppt = {TOPIC: 2}
    subs = {"consumer": sub([TOPIC], [tp(TOPIC, 0), tp(TOPIC, 1), tp("other", 0), tp("other", 1)], GENERATION)}
    a = assignor.assign(ppt, subs)
    assert a["consumer"] == [tp(TOPIC, 0), tp(TOPIC, 1)]
    assert assignor.transferring == {}
    assignor.verify(subs, a, ppt)


def test_one_consumer_multiple_topics(assignor):  # testOneConsumerMultipleTopics
    ppt = {TOPIC1: 1, TOPIC2: 2}
    subs = {"consumer": sub([TOPIC1, TOPIC2])}
    a = assignor.assign(ppt, subs)
    assert a["consumer"] == [tp(TOPIC1, 0), tp(TOPIC2, 0), tp(TOPIC2, 1)]
    assert assignor.transferring == {}


def test_two_consumers_one_topic_one_partition(assignor):  # testTwoConsumersOneTopicOnePartition
    ppt = {TOPIC: 1}
    subs = {C1: sub([TOPIC]), C2: sub([TOPIC])}
    a = assignor.assign(ppt, subs)
    assert assignor.transferring == {}
    assert fully_balanced(assignor.verify(subs, a, ppt))


def test_two_consumers_one_topic_two_partitions(assignor):  # testTwoConsumersOneTopicTwoPartitions
    ppt = {TOPIC: 2}
    subs = {C1: sub([TOPIC]), C2: sub([TOPIC])}
    a = assignor.assign(ppt, subs)
    assert a[C1] == [tp(TOPIC, 0)] and a[C2] == [tp(TOPIC, 1)]
    assert assignor.transferring == {}


def test_two_consumers_two_topics_six_partitions(assignor):  # testTwoConsumersTwoTopicsSixPartitions
    ppt = {TOPIC1: 3, TOPIC2: 3}
    subs = {C1: sub([TOPIC1, TOPIC2]), C2: sub([TOPIC1, TOPIC2])}
    a = assignor.assign(ppt, subs)
    assert a[C1] == [tp(TOPIC1, 0), tp(TOPIC1, 2), tp(TOPIC2, 1)]
    assert a[C2] == [tp(TOPIC1, 1), tp(TOPIC2, 0), tp(TOPIC2, 2)]
    assert assignor.transferring == {}


def test_consumer_owning_min_quota_expected_max_quota(assignor):  # testConsumerOwningMinQuotaExpectedMaxQuota
    ppt = {TOPIC1: 2, TOPIC2: 3}
    both = [TOPIC1, TOPIC2]
    subs = {C1: sub(both, [tp(TOPIC1, 0), tp(TOPIC2, 1)], GENERATION),
            C2: sub(both, [tp(TOPIC1, 1), tp(TOPIC2, 2)], GENERATION)}
    a = assignor.assign(ppt, subs)
    assert a[C1] == [tp(TOPIC1, 0), tp(TOPIC2, 1), tp(TOPIC2, 0)]
    assert a[C2] == [tp(TOPIC1, 1), tp(TOPIC2, 2)]
    assert assignor.transferring == {}


def test_max_quota_consumer_more_than_num_expected_max_capacity_members(assignor):
    # testMaxQuotaConsumerMoreThanNumExpectedMaxCapacityMembers: consumer2 comes first in the leader's HashMap
    ppt = {TOPIC1: 2, TOPIC2: 2}
    both = [TOPIC1, TOPIC2]
    subs = {C1: sub(both, [tp(TOPIC1, 0), tp(TOPIC2, 0)], GENERATION),
            C2: sub(both, [tp(TOPIC1, 1), tp(TOPIC2, 1)], GENERATION),
            C3: sub(both, [], GENERATION)}
    a = assignor.assign(ppt, subs)
    assert assignor.transferring == {tp(TOPIC2, 0): C3}
    a = assignor.verify(subs, a, ppt)
    assert a[C1] == [tp(TOPIC1, 0)]
    assert a[C2] == [tp(TOPIC1, 1), tp(TOPIC2, 1)]
    assert a[C3] == [tp(TOPIC2, 0)]


def test_all_consumers_are_under_min_quota(assignor):  # testAllConsumersAreUnderMinQuota
    ppt = {TOPIC1: 2, TOPIC2: 3}
    both = [TOPIC1, TOPIC2]
    subs = {C1: sub(both, [tp(TOPIC1, 0)], GENERATION), C2: sub(both, [tp(TOPIC1, 1)], GENERATION),
            C3: sub(both, [], GENERATION)}
    a = assignor.assign(ppt, subs)
    assert assignor.transferring == {}
    a = assignor.verify(subs, a, ppt)
    assert a[C1] == [tp(TOPIC1, 0), tp(TOPIC2, 1)]
    assert a[C2] == [tp(TOPIC1, 1), tp(TOPIC2, 2)]
    assert a[C3] == [tp(TOPIC2, 0)]


def test_add_remove_consumer_one_topic(assignor):  # testAddRemoveConsumerOneTopic
    ppt = {TOPIC: 3}
    subs = {C1: sub([TOPIC])}
    a = assignor.assign(ppt, subs)
    assert a[C1] == [tp(TOPIC, 0), tp(TOPIC, 1), tp(TOPIC, 2)]
    subs = {C1: sub([TOPIC], a[C1], GENERATION), C2: sub([TOPIC], [], GENERATION)}
    a = assignor.assign(ppt, subs)
    assert assignor.transferring == {tp(TOPIC, 2): C2}
    a = assignor.verify(subs, a, ppt)
    assert a[C1] == [tp(TOPIC, 0), tp(TOPIC, 1)] and a[C2] == [tp(TOPIC, 2)]
    subs = {C2: sub([TOPIC], a[C2], GENERATION)}
    a = assignor.assign(ppt, subs)
    assert set(a[C2]) == {tp(TOPIC, 0), tp(TOPIC, 1), tp(TOPIC, 2)}
    assert assignor.transferring == {}


def test_reassignment_after_one_consumer_added(assignor):  # testReassignmentAfterOneConsumerAdded
    ppt = {"topic": 20}
    subs = {f"c{i:02d}": sub(["topic"]) for i in range(1, 10)}
    a = assignor.assign(ppt, subs)
    assert assignor.transferring == {}
    assignor.verify(subs, a, ppt)
    subs["c10"] = sub(["topic"])
    a = assignor.assign(ppt, subs)
    assert assignor.transferring == {}
    assert fully_balanced(assignor.verify(subs, a, ppt))


def test_same_subscriptions(assignor):  # testSameSubscriptions
    ppt = {f"t{i:02d}": i for i in range(1, 15)}
    subs = {f"c{i}": sub(list(ppt)) for i in range(1, 9)}
    a = assignor.assign(ppt, subs)
    assert assignor.transferring == {}
    a = assignor.verify(subs, a, ppt)
    subs = {c: sub(list(ppt), a[c], GENERATION) for c in subs if c != "c5"}
    a = assignor.assign(ppt, subs)
    assert assignor.transferring == {}
    assert fully_balanced(assignor.verify(subs, a, ppt))


def test_stickiness(assignor):  # testStickiness
    ppt = {TOPIC1: 3}
    subs = {c: sub([TOPIC1]) for c in (C1, C2, C3, C4)}
    a = assignor.assign(ppt, subs)
    assert assignor.transferring == {}
    a = assignor.verify(subs, a, ppt)
    assert all(len(v) <= 1 for v in a.values())
    had = {c: v[0] for c, v in a.items() if v}
    subs = {c: sub([TOPIC1], a[c], GENERATION) for c in (C2, C3, C4)}  # the potential group leader leaves
    a = assignor.assign(ppt, subs)
    assert assignor.transferring == {}
    a = assignor.verify(subs, a, ppt)
    assert all(len(v) == 1 and (c not in had or had[c] in v) for c, v in a.items())


def test_all_consumers_reach_expected_quota_and_are_considered_filled(assignor):
    # testAllConsumersReachExpectedQuotaAndAreConsideredFilled
    ppt = {TOPIC: 4}
    subs = {C1: sub([TOPIC], [tp(TOPIC, 0), tp(TOPIC, 1)], GENERATION), C2: sub([TOPIC], [tp(TOPIC, 2)], GENERATION),
            C3: sub([TOPIC], [], GENERATION)}
    a = assignor.assign(ppt, subs)
    assert a[C1] == [tp(TOPIC, 0), tp(TOPIC, 1)] and a[C2] == [tp(TOPIC, 2)] and a[C3] == [tp(TOPIC, 3)]
    assert assignor.transferring == {}


@pytest.mark.parametrize("older", [10 - 1, DEFAULT_GENERATION])
def test_owned_partitions_are_invalidated_for_consumer_with_stale_or_no_generation(assignor, older):
    # testOwnedPartitionsAreInvalidatedForConsumerWithStaleGeneration /
    # testOwnedPartitionsAreInvalidatedForConsumerWithNoGeneration
    ppt = {TOPIC: 3, TOPIC2: 3}
    claimed = [tp(TOPIC, 0), tp(TOPIC, 2), tp(TOPIC2, 1)]
    subs = {C1: sub([TOPIC, TOPIC2], claimed, 10), C2: sub([TOPIC, TOPIC2], claimed, older)}
    a = assignor.assign(ppt, subs)
    assert set(a[C1]) == set(claimed)
    assert set(a[C2]) == {tp(TOPIC, 1), tp(TOPIC2, 0), tp(TOPIC2, 2)}
    assert assignor.transferring == {}


def test_partitions_transferring_ownership_include_the_partition_claimed_by_multiple_consumers_in_same_generation(
        assignor):  # testPartitionsTransferringOwnershipIncludeThePartitionClaimedByMultipleConsumersInSameGeneration
    ppt = {TOPIC: 3}
    subs = {C1: sub([TOPIC], [tp(TOPIC, 0), tp(TOPIC, 1)], GENERATION),
            C2: sub([TOPIC], [tp(TOPIC, 0), tp(TOPIC, 2)], GENERATION), C3: sub([TOPIC], [], GENERATION)}
    a = assignor.assign(ppt, subs)
    assert assignor.transferring == {tp(TOPIC, 0): C3}
    a = assignor.verify(subs, a, ppt)
    assert a[C1] == [tp(TOPIC, 1)] and a[C2] == [tp(TOPIC, 2)] and a[C3] == [tp(TOPIC, 0)]


def test_ensure_partitions_assigned_to_highest_generation(assignor):  # testEnsurePartitionsAssignedToHighestGeneration
    ppt = {TOPIC: 3, TOPIC2: 3, TOPIC3: 3}
    every = [TOPIC, TOPIC2, TOPIC3]
    subs = {C1: sub(every, [tp(TOPIC, 0), tp(TOPIC2, 0), tp(TOPIC3, 0)], 10),
            C2: sub(every, [tp(TOPIC, 1), tp(TOPIC2, 1), tp(TOPIC3, 1)], 9),
            C3: sub(every, [tp(TOPIC2, 1), tp(TOPIC3, 0), tp(TOPIC3, 2)], 8)}
    a = assignor.assign(ppt, subs)
    assert set(a[C1]) == {tp(TOPIC, 0), tp(TOPIC2, 0), tp(TOPIC3, 0)}
    assert set(a[C2]) == {tp(TOPIC, 1), tp(TOPIC2, 1), tp(TOPIC3, 1)}
    assert set(a[C3]) == {tp(TOPIC, 2), tp(TOPIC2, 2), tp(TOPIC3, 2)}
    assert assignor.transferring == {}


def test_no_reassignment_on_current_members(assignor):  # testNoReassignmentOnCurrentMembers
    ppt = {TOPIC: 3, TOPIC1: 3, TOPIC2: 3, TOPIC3: 3}
    every = [TOPIC, TOPIC2, TOPIC3, TOPIC1]
    subs = {C1: sub(every, [], DEFAULT_GENERATION),
            C2: sub(every, [tp(TOPIC, 0), tp(TOPIC2, 0), tp(TOPIC1, 0)], 9),
            C3: sub(every, [tp(TOPIC3, 2), tp(TOPIC2, 2), tp(TOPIC1, 1)], 8),
            C4: sub(every, [tp(TOPIC3, 1), tp(TOPIC, 1), tp(TOPIC, 2)], 7)}
    a = assignor.assign(ppt, subs)
    assert set(a[C1]) == {tp(TOPIC1, 2), tp(TOPIC2, 1), tp(TOPIC3, 0)}
    assert assignor.transferring == {}
    assert fully_balanced(assignor.verify(subs, a, ppt))


def test_owned_partitions_are_invalidated_for_consumer_with_multiple_generation(assignor):
    # testOwnedPartitionsAreInvalidatedForConsumerWithMultipleGeneration
    ppt = {TOPIC: 3, TOPIC2: 3}
    subs = {C1: sub([TOPIC, TOPIC2], [tp(TOPIC, 0), tp(TOPIC2, 1), tp(TOPIC, 1)], 10),
            C2: sub([TOPIC, TOPIC2], [tp(TOPIC, 0), tp(TOPIC2, 1), tp(TOPIC2, 2)], 8)}
    a = assignor.assign(ppt, subs)
    assert set(a[C1]) == {tp(TOPIC, 0), tp(TOPIC2, 1), tp(TOPIC, 1)}
    assert set(a[C2]) == {tp(TOPIC, 2), tp(TOPIC2, 2), tp(TOPIC2, 0)}
    assert assignor.transferring == {}


# ---- StickyAssignorTest / CooperativeStickyAssignorTest ---------------------------------------------------------


@pytest.mark.parametrize("name", ASSIGNORS)
@pytest.mark.parametrize("rack_config", (None, *RACK_CONFIGS))
@pytest.mark.parametrize("partitions, c1_gets", [(3, [tp(TOPIC, 1)]), (4, [tp(TOPIC, 1), tp(TOPIC, 3)])])
def test_all_consumers_have_owned_partition_invalidated_when_claimed_by_multiple_consumers_in_same_generation(
        name, rack_config, partitions, c1_gets):
    # testAllConsumersHaveOwnedPartitionInvalidatedWhenClaimedByMultipleConsumersInSameGeneration + WithEqual-
    # PartitionsPerConsumer (3 partitions) / WithUnequalPartitionsPerConsumer (4), in StickyAssignorTest and
    # CooperativeStickyAssignorTest
    assignor = Assignor(name, rack_config)
    ppt = {TOPIC: partitions}
    subs = {C1: sub([TOPIC], [tp(TOPIC, 0), tp(TOPIC, 1)], GENERATION),
            C2: sub([TOPIC], [tp(TOPIC, 0), tp(TOPIC, 2)], GENERATION), C3: sub([TOPIC], [], GENERATION)}
    a = assignor.assign(ppt, subs)
    assert a[C1] == c1_gets and a[C2] == [tp(TOPIC, 2)]
    # cooperative: topic-0 is still owned, so no one gets it until both have revoked it
    assert a[C3] == ([] if name == "cooperative-sticky" else [tp(TOPIC, 0)])
    assert fully_balanced(assignor.verify(subs, a, ppt))


def test_assignment_with_multiple_generations1():  # StickyAssignorTest only
    assignor = Assignor("sticky")  # testAssignmentWithMultipleGenerations1 (equal subscriptions)
    ppt = {TOPIC: 6, TOPIC2: 6}
    every = [TOPIC, TOPIC2]
    subs = {C1: sub(every), C2: sub(every), C3: sub(every)}
    r1 = assignor.verify(subs, assignor.assign(ppt, subs), ppt)
    assert all(len(v) == 4 for v in r1.values())
    subs = {C1: sub(every, r1[C1], GENERATION), C2: sub(every, r1[C2], GENERATION)}
    r2 = assignor.assign(ppt, subs)
    r2 = assignor.verify(subs, r2, ppt)
    assert len(r2[C1]) == 6 and len(r2[C2]) == 6
    assert set(r1[C1]) <= set(r2[C1]) and set(r1[C2]) <= set(r2[C2])
    assert set(r2[C2]) & set(r1[C3])
    subs = {C2: sub(every, r2[C2], 2), C3: sub(every, r1[C3], 1)}
    r3 = assignor.verify(subs, assignor.assign(ppt, subs), ppt)
    assert len(r3[C2]) == 6 and len(r3[C3]) == 6 and not set(r3[C2]) & set(r3[C3])


def test_assignment_with_multiple_generations2():  # StickyAssignorTest only
    assignor = Assignor("sticky")  # testAssignmentWithMultipleGenerations2 (equal subscriptions)
    ppt = {TOPIC: 4, TOPIC2: 4, TOPIC3: 4}
    every = [TOPIC, TOPIC2, TOPIC3]
    subs = {C1: sub(every), C2: sub(every), C3: sub(every)}
    r1 = assignor.verify(subs, assignor.assign(ppt, subs), ppt)
    assert all(len(v) == 4 for v in r1.values())
    subs = {C2: sub(every, r1[C2], 1)}
    r2 = assignor.verify(subs, assignor.assign(ppt, subs), ppt)
    assert len(r2[C2]) == 12 and set(r1[C2]) <= set(r2[C2])
    subs = {C1: sub(every, r1[C1], 1), C2: sub(every, r2[C2], 2), C3: sub(every, r1[C3], 1)}
    r3 = assignor.verify(subs, assignor.assign(ppt, subs), ppt)
    assert all(len(v) == 4 for v in r3.values())


def test_assignment_with_conflicting_previous_generations():  # StickyAssignorTest only
    assignor = Assignor("sticky")  # testAssignmentWithConflictingPreviousGenerations (equal subscriptions)
    ppt = {TOPIC: 4, TOPIC2: 4, TOPIC3: 4}
    every = [TOPIC, TOPIC2, TOPIC3]
    c1 = [tp(TOPIC, 0), tp(TOPIC, 1), tp(TOPIC, 2), tp(TOPIC2, 2), tp(TOPIC2, 3), tp(TOPIC3, 0)]
    c2 = [tp(TOPIC, 0), tp(TOPIC, 1), tp(TOPIC2, 0), tp(TOPIC2, 1), tp(TOPIC2, 2), tp(TOPIC2, 3)]
    c3 = [tp(TOPIC, 2), tp(TOPIC, 3), tp(TOPIC3, 0), tp(TOPIC3, 1), tp(TOPIC3, 2), tp(TOPIC3, 3)]
    subs = {C1: sub(every, c1, 1), C2: sub(every, c2, 2), C3: sub(every, c3, 2)}
    a = assignor.assign(ppt, subs)
    assert all(len(v) == 4 for v in a.values())
    assert set(a[C2]) <= set(c2) and set(a[C3]) <= set(c3)
    assert fully_balanced(assignor.verify(subs, a, ppt))


@pytest.mark.parametrize("name", ASSIGNORS)
def test_assignor_with_old_version_subscriptions(name):
    # StickyAssignorTest / CooperativeStickyAssignorTest.testAssignorWithOldVersionSubscriptions: the subscription
    # versions differ only in where the owned partitions and generation travel, which the model does not encode
    assignor = Assignor(name)
    ppt = {TOPIC1: 3}
    subs = {C1: sub([TOPIC1], [tp(TOPIC1, 0)], GENERATION), C2: sub([TOPIC1], [tp(TOPIC1, 1)], GENERATION),
            C3: sub([TOPIC1], [], GENERATION)}
    a = assignor.assign(ppt, subs)
    assert a == {C1: [tp(TOPIC1, 0)], C2: [tp(TOPIC1, 1)], C3: [tp(TOPIC1, 2)]}


def test_javadoc_example_with_the_constrained_builder():
    # StickyAssignor's javadoc: t0..t3 with 2 partitions each, C0, C1, C2: round robin over the sorted partitions
    a, _ = sticky_assignment({f"t{i}": 2 for i in range(4)}, {c: sub([]) for c in ("C0", "C1", "C2")})
    assert a == {"C0": [("t0", 0), ("t1", 1), ("t3", 0)], "C1": [("t0", 1), ("t2", 0), ("t3", 1)],
                 "C2": [("t1", 0), ("t2", 1)]}
    # C1 leaves: C0 and C2 keep all they had (4 each now); C1's three go round robin to C0, C2, C2
    b, _ = sticky_assignment({f"t{i}": 2 for i in range(4)}, {c: sub([], a[c], 1) for c in ("C0", "C2")})
    assert set(a["C0"]) < set(b["C0"]) and set(a["C2"]) < set(b["C2"])
    assert b["C0"][3:] == [("t0", 1)] and b["C2"][2:] == [("t2", 0), ("t3", 1)]
