"""Kafka's own test cases, reproduced against the model's election and truncation code.

* ``PartitionChangeBuilderTest`` (apache/kafka, metadata/src/test/.../controller): the controller's elections
  (preferred, online, unclean), the Eligible Leader Replicas (KIP-966) as the ISR shrinks and grows, a replica
  back from an unclean shutdown leaving the ELR, a leader elected from the ELR when the ISR is empty, and the
  last known leader. The expected values are the test's own. (The model always runs KIP-966's balanced recovery,
  Kafka's default; where a test switches it off, only what does not depend on it is compared: leader, ISR, ELR.)
* ``LeaderEpochFileCacheTest.endOffsetFor`` (core/src/test/.../server/epoch): where an epoch ends in a log.
* The divergence cases of the KIP-966 TLA+ write-up (Vanlightly/kafka-tlaplus,
  kafka_data_replication/kraft/kip-966/description/3_log_divergence.md, cases A-G): the follower truncates to the
  smaller of where the leader says the diverging epoch ends and where that epoch ends in its own log.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from kafkamodel.sim.controller.elections import CLEAN, ELR, LAST_KNOWN, OFFLINE, PREFERRED, UNCLEAN, partition_change
from kafkamodel.sim.rules.truncation import LeaderEpochTruncation
from kafkamodel.sim.state import LeaderState, Replica
from kafkamodel.sim.storage.log import Log

NO_LEADER = -1


def partition(replicas, isr, leader, elr=(), last_known_elr=()):
    return SimpleNamespace(replicas=tuple(replicas), isr=tuple(isr), leader=leader, elr=tuple(elr),
                           last_known_elr=tuple(last_known_elr))


def change(part, acceptable, *, target_isr=None, min_isr=2, elr=False, election="online", unclean_shutdown=()):
    """PartitionChangeBuilder(part, isAcceptableLeader, minISR).setElection(election)...build()"""
    return partition_change(part, part.isr if target_isr is None else tuple(target_isr), acceptable,
                            unclean=election == "unclean", elr_enabled=elr, min_isr=min_isr,
                            preferred=election == "preferred", unclean_shutdown=tuple(unclean_shutdown))


# ---- PartitionChangeBuilderTest -------------------------------------------------------------------------------------

FOO = partition(replicas=[2, 1, 3], isr=[2, 1, 3], leader=1)
BAZ = partition(replicas=[2, 1, 3], isr=[1, 3], leader=3)


def not_3(r):
    return r != 3


@pytest.mark.parametrize("elr", [False, True])  # the test's partition change record versions 0-1 (no ELR) and 2
def test_elect_leader(elr):  # testElectLeader
    def leader(part, acceptable, **kw):
        c = change(part, acceptable, elr=elr, **kw)
        return c.leader, c.kind in (UNCLEAN, LAST_KNOWN)

    assert leader(FOO, not_3, election="preferred") == (2, False)
    assert leader(FOO, not_3) == (1, False)
    assert leader(FOO, not_3, election="unclean") == (1, False)
    assert leader(FOO, not_3, target_isr=[1, 3]) == (1, False)
    assert leader(FOO, not_3, election="unclean", target_isr=[1, 3]) == (1, False)
    assert leader(FOO, not_3, target_isr=[3]) == (NO_LEADER, False)
    assert leader(FOO, not_3, election="unclean", target_isr=[3]) == (2, True)
    foo4 = partition(replicas=[2, 1, 3, 4], isr=FOO.isr, leader=FOO.leader)  # setTargetReplicas([2, 1, 3, 4])
    assert leader(foo4, not_3, election="unclean", target_isr=[4]) == (4, False)
    everyone = lambda r: True  # noqa: E731
    assert leader(BAZ, everyone, election="preferred") == (3, False)
    assert leader(BAZ, everyone) == (3, False)
    assert leader(BAZ, everyone, election="unclean") == (3, False)


@pytest.mark.parametrize("elr", [False, True])
def test_unclean_leader_election(elr):  # testUncleanLeaderElection
    c = change(FOO, not_3, elr=elr, election="unclean", target_isr=[3])
    assert (c.leader, c.isr, c.kind) == (2, (2,), UNCLEAN)  # the new leader alone in the ISR (RECOVERING)
    offline = (partition([2, 1, 3], isr=[], leader=NO_LEADER, elr=[3], last_known_elr=[2]) if elr
               else partition([2, 1, 3], isr=[3], leader=NO_LEADER))  # OFFLINE_WITH_ELR / OFFLINE_WITHOUT_ELR
    only_1 = lambda r: r == 1  # noqa: E731
    for target in (None, [2]):
        c = change(offline, only_1, elr=elr, election="unclean", target_isr=target)
        assert (c.leader, c.isr, c.kind) == (1, (1,), UNCLEAN)
        assert c.elr == () and c.last_known_elr == ()  # an unclean election clears the ELR fields


def test_elr_isr_shrink_below_min_isr():  # testEligibleLeaderReplicas_IsrShrinkBelowMinISR
    part = partition([1, 2, 3, 4], isr=[1, 2, 3, 4], leader=1)
    c = change(part, not_3, target_isr=[1, 2], min_isr=3, elr=True, election="preferred")
    assert (c.leader, c.isr, sorted(c.elr), c.kind) == (1, (1, 2), [3, 4], "")
    c = change(part, not_3, target_isr=[1, 2], min_isr=3, elr=False, election="preferred")
    assert (c.isr, c.elr) == ((1, 2), ())


@pytest.mark.parametrize("elr", [False, True])
def test_elr_isr_expand_above_min_isr(elr):  # testEligibleLeaderReplicas_IsrExpandAboveMinISR
    part = partition([1, 2, 3, 4], isr=[1, 2], leader=1, elr=[3], last_known_elr=[4])
    c = change(part, not_3, target_isr=[1, 2, 3], min_isr=3, elr=elr, election="preferred")
    assert (c.leader, c.isr, c.elr) == (1, (1, 2, 3), ())
    if elr:  # (without ELR the test's cleared last known ELR comes from balanced recovery switched off)
        assert c.last_known_elr == ()


def test_elr_isr_add_new_member_not_in_elr():  # testEligibleLeaderReplicas_IsrAddNewMemberNotInELR
    part = partition([1, 2, 3, 4], isr=[1], leader=1, elr=[3], last_known_elr=[2])
    c = change(part, not_3, target_isr=[1, 4], min_isr=3, elr=True, election="preferred")
    assert (c.leader, c.isr, c.elr) == (1, (1, 4), (3,))
    c = change(part, not_3, target_isr=[1, 4], min_isr=3, elr=False, election="preferred")
    assert (c.isr, c.elr) == ((1, 4), ())


def test_elr_remove_unclean_shutdown_replicas():  # testEligibleLeaderReplicas_RemoveUncleanShutdownReplicasFromElr
    part = partition([1, 2, 3, 4], isr=[1], leader=1, elr=[2, 3])
    c = change(part, not_3, min_isr=3, elr=True, election="preferred", unclean_shutdown=[3])
    assert (c.leader, c.isr, c.elr) == (1, (1,), (2,))


def test_elr_can_be_elected():  # testEligibleLeaderReplicas_ElrCanBeElected (last known leader on)
    part = partition([1, 2, 3, 4], isr=[1], leader=1, elr=[3])
    c = change(part, lambda r: r != 1, target_isr=[], min_isr=3, elr=True, election="preferred")  # replica 1 offline
    assert (c.leader, c.isr, c.elr, c.last_known_elr, c.kind) == (3, (3,), (1,), (), ELR)


def test_elr_isr_can_shrink_to_zero():  # testEligibleLeaderReplicas_IsrCanShrinkToZero (last known leader on)
    part = partition([1, 2, 3, 4], isr=[1, 2, 3, 4], leader=1)
    nobody = lambda r: False  # noqa: E731 (every replica offline)
    c = change(part, nobody, target_isr=[], min_isr=3, elr=True, election="preferred")
    assert (c.leader, c.isr, sorted(c.elr), c.last_known_elr, c.kind) == (NO_LEADER, (), [1, 2, 3, 4], (1,), OFFLINE)
    merged = partition([1, 2, 3, 4], isr=c.isr, leader=c.leader, elr=c.elr, last_known_elr=c.last_known_elr)
    again = change(merged, nobody, target_isr=[], min_isr=3, elr=True, election="preferred", unclean_shutdown=[2])
    assert again.last_known_elr == (1,)  # unchanged: the record carries no new last known ELR
    assert 2 not in again.elr


def test_elr_elect_last_known_leader():  # testEligibleLeaderReplicas_ElectLastKnownLeader
    part = partition([1, 2, 3, 4], isr=[], leader=NO_LEADER, last_known_elr=[1])
    c = change(part, lambda r: True, target_isr=[], min_isr=3, elr=True, election="preferred")
    assert (c.leader, c.isr, c.elr, c.last_known_elr, c.kind) == (1, (1,), (), (), LAST_KNOWN)  # RECOVERING


def test_elr_elect_last_known_leader_should_fail():  # testEligibleLeaderReplicas_ElectLastKnownLeaderShouldFail
    part = partition([1, 2, 3, 4], isr=[], leader=NO_LEADER, elr=[3], last_known_elr=[1])
    c = change(part, not_3, target_isr=[], min_isr=3, elr=True, election="preferred")
    assert (c.leader, c.isr, c.elr, c.last_known_elr, c.kind) == (NO_LEADER, (), (3,), (1,), "")  # no change


def test_an_elected_replica_is_named_for_how_it_was_chosen():
    assert change(FOO, lambda r: r != 1).kind == CLEAN  # the leader fenced: the first live ISR member, 2
    assert change(BAZ, lambda r: True, election="preferred").kind == ""  # 2 is not in the ISR: 3 stays
    moved = change(partition([2, 1, 3], isr=[2, 1, 3], leader=1), lambda r: True, election="preferred")
    assert (moved.leader, moved.kind) == (2, PREFERRED)


# ---- LeaderEpochFileCacheTest.endOffsetFor ------------------------------------------------------------------------

def log_with(epoch_starts: dict[int, int], log_end: int) -> Log:
    """A log whose epochs start at the given offsets (cache.assign(epoch, offset)), one entry per offset."""
    log = Log(1 << 30, [100])
    starts = sorted(epoch_starts.items(), key=lambda kv: kv[1])
    log.log_start_offset = log.log_end_offset = log.flushed_offset = starts[0][1] if starts else 0
    for i, (epoch, start) in enumerate(starts):
        end = starts[i + 1][1] if i + 1 < len(starts) else log_end
        for offset in range(start, end):
            log.append(offset, offset + 1, epoch, 0, 0.0)
    return log


def test_next_available_epoch_if_there_is_no_exact_epoch_for_the_one_requested():
    log = log_with({0: 10, 2: 13, 4: 17}, 20)  # shouldReturnNextAvailableEpochIfThereIsNoExactEpochForTheOneRequested
    assert log.end_offset_for_epoch(1, log.log_end_offset) == (0, 13)
    assert log.end_offset_for_epoch(2, log.log_end_offset) == (2, 17)
    assert log.end_offset_for_epoch(3, log.log_end_offset) == (2, 17)


def test_first_offset_of_subsequent_epoch_when_offset_requested_for_previous_epoch():
    log = log_with({1: 11, 2: 13, 3: 15}, 17)
    assert log.end_offset_for_epoch(2, 17) == (2, 15)


def test_log_end_offset_if_latest_epoch_requested():
    log = log_with({2: 11}, 20)
    assert log.end_offset_for_epoch(2, 20) == (2, 20)


def test_undefined_cases():
    assert log_with({2: 11, 3: 12}, 20).end_offset_for_epoch(-1, 0) == (-1, -1)  # an undefined epoch requested
    assert Log(1 << 30, [100]).end_offset_for_epoch(0, 0) == (-1, -1)  # no epoch recorded
    assert log_with({2: 100}, 101).end_offset_for_epoch(3, 100) == (-1, -1)  # an epoch newer than any tracked


def test_first_epoch_if_requested_epoch_less_than_first_epoch():
    assert log_with({5: 11, 6: 12, 7: 13}, 14).end_offset_for_epoch(4, 14) == (4, 11)


def test_epochs_as_a_follower_receives_many_messages():  # shouldIncreaseAndTrackEpochsAsFollowerReceivesManyMessages
    log = log_with({0: 0, 1: 3, 2: 6}, 9)
    assert log.end_offset_for_epoch(2, 9) == (2, 9)
    assert log.end_offset_for_epoch(0, 9) == (0, 3)
    assert log.end_offset_for_epoch(1, 9) == (1, 6)


def leader_replica(log: Log, epoch: int, epoch_start: int) -> Replica:
    rep = Replica(0, 0, log)
    rep.is_leader, rep.leader_epoch = True, epoch
    rep.lead = LeaderState()
    rep.lead.epoch_start_offset = epoch_start  # Kafka assigns the leader's epoch at its LEO when it becomes leader
    return rep


def test_epochs_as_leaders_change_many_times():  # shouldIncreaseAndTrackEpochsAsLeadersChangeManyTimes
    log = Log(1 << 30, [100])
    rep = leader_replica(log, 1, 0)  # assign(0, 0), then assign(1, 0): epoch 0 wrote nothing
    assert rep.end_offset_for_epoch(1) == (1, 0)
    assert rep.end_offset_for_epoch(0) == (0, 0)
    for offset in range(5):
        log.append(offset, offset + 1, 1, 0, 0.0)
    assert rep.end_offset_for_epoch(1) == (1, 5)
    assert rep.end_offset_for_epoch(0) == (0, 0)
    rep.leader_epoch, rep.lead.epoch_start_offset = 2, 5  # assign(2, 5)
    for offset in range(5, 10):
        log.append(offset, offset + 1, 2, 0, 0.0)
    assert rep.end_offset_for_epoch(2) == (2, 10)
    assert rep.end_offset_for_epoch(1) == (1, 5)
    assert rep.end_offset_for_epoch(0) == (0, 0)


# ---- the divergence cases of the KIP-966 TLA+ write-up --------------------------------------------------------------

def log_of(epochs: list[int]) -> Log:
    """A log with one record per offset, written in these leader epochs."""
    log = Log(1 << 30, [100])
    for offset, epoch in enumerate(epochs):
        log.append(offset, offset + 1, epoch, 0, 0.0)
    return log


# case: (leader's log, the leader's current epoch, follower's log, where the follower truncates)
CASES = {
    "A behind, same epoch": ([1, 1, 1, 1], 2, [1, 1], 2),
    "B behind, higher epoch": ([1, 1, 2, 2], 3, [1, 1], 2),
    "C ahead, same epoch": ([1, 1], 2, [1, 1, 1, 1], 2),
    "D ahead, higher epoch": ([1, 1], 3, [1, 1, 2, 2], 2),
    "E forked, each its own epoch": ([1, 1, 3, 3], 4, [1, 1, 2, 2], 2),
    "F forked, the leader's fork in epoch 1": ([1, 1], 3, [1, 2, 2], 1),
    "G forked, no common epoch": ([1, 3], 4, [2], 0),
}


@pytest.mark.parametrize("case", list(CASES))
def test_follower_truncates_to_the_smaller_end_of_the_diverging_epoch(case):
    leader_log, epoch, follower_log, expected = CASES[case]
    leader = leader_replica(log_of(leader_log), epoch, len(leader_log))
    follower = Replica(0, 1, log_of(follower_log))
    rule = LeaderEpochTruncation(kip279=True)
    asked = follower.log.last_epoch()
    found, end = rule.answer(leader, asked)
    cut = min(rule.target(follower, found, end), follower.log.log_end_offset)
    assert cut == expected
    follower.truncate_to(cut)
    assert not rule.ask_again(follower, asked, found)  # one answer settles each case
    # the logs now agree up to the follower's end: fetching from there cannot diverge
    assert list(follower.log.row_epochs()) == leader_log[:cut]


def test_without_kip279_case_f_leaves_the_logs_diverged():
    # Kafka 0.11's leader answers the offset where its first later epoch starts; the follower cuts there (2) and
    # keeps offset 1 of epoch 2 where the leader has epoch 1: the fast-failover divergence KIP-279 fixed in 2.0
    leader_log, epoch, follower_log, _ = CASES["F forked, the leader's fork in epoch 1"]
    leader = leader_replica(log_of(leader_log), epoch, len(leader_log))
    follower = Replica(0, 1, log_of(follower_log))
    rule = LeaderEpochTruncation(kip279=False)
    found, end = rule.answer(leader, follower.log.last_epoch())
    follower.truncate_to(rule.target(follower, found, end))
    assert list(follower.log.row_epochs()) == [1, 2] != leader_log
