"""rules.replica_selector: the rack-aware replica selector (KIP-392), pinned by Kafka's own test case, and which
replica a leader names to a consumer (fetch from follower in whole runs: test_zones.py)."""

from __future__ import annotations

from kafkamodel.sim.rules.replica_selector import RackAwareReplicaSelector, ReplicaView, preferred_read_replica


def test_same_rack_selector():
    """ReplicaSelectorTest.testSameRackSelector (clients/src/test/.../replica/ReplicaSelectorTest.java)."""
    replicas = [ReplicaView(0, "rack-a", 4, 0), ReplicaView(1, "rack-a", 2, 5), ReplicaView(2, "rack-b", 3, 3),
                ReplicaView(3, "rack-b", 4, 2)]
    leader = replicas[0]
    select = RackAwareReplicaSelector.select
    chosen = select("rack-b", replicas, leader)
    assert chosen.rack == "rack-b" and chosen.broker == 3  # "Expected replica 3 since it is more caught-up"
    assert select("not-a-rack", replicas, leader) == leader  # "Expect leader when we can't find any nodes in ..."
    assert select("rack-a", replicas, leader) == leader  # "Expect the leader since it's in rack-a"
    assert select(None, replicas, leader) == leader  # no client.rack: the leader


def test_from_3_4_the_leader_names_only_an_isr_member():
    """KAFKA-14372 (3.4): findPreferredReadReplica keeps only ISR members; before, any replica whose LEO has the
    fetch offset, so a lagging follower out of the ISR is named again and again."""
    leader = ReplicaView(0, "a", 1000, 0.0)
    lagging = ReplicaView(1, "b", 600, 40000.0)  # out of the ISR: 40 s since it was caught up
    for in_isr_only, named in ((False, 1), (True, -1)):
        got = preferred_read_replica(RackAwareReplicaSelector, "b", leader, [(lagging, 0)], 500, in_isr_only, {0})
        assert got == named
    # ... and neither names a replica without the offset (LEO below it) or past its log start
    assert preferred_read_replica(RackAwareReplicaSelector, "b", leader, [(lagging, 0)], 700, False, {0, 1}) == -1
    assert preferred_read_replica(RackAwareReplicaSelector, "b", leader, [(lagging, 550)], 500, False, {0, 1}) == -1
