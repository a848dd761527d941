"""Consumer groups as Kafka runs them today: cooperative rebalancing (KIP-429), static membership (KIP-345), the
consumer group protocol (KIP-848), and the bad input each rejects. The expectations come from Kafka's documented
behaviour and from the assignment arithmetic, computed here."""

from __future__ import annotations

import pytest
import yaml

from kafkamodel import simulate

PARTITIONS = 6


def scenario(faults=(), members=3, version="4.1", **consumer):
    group = {"group": "g", "topic": "t", "members": members, "commit": "after_processing", "processing.ms": 0.2,
             "session.timeout.ms": 10000, "heartbeat.interval.ms": 3000, "auto.offset.reset": "earliest", **consumer}
    return {"name": "groups", "kafka.version": version, "seed": 1, "duration.ms": 30000, "brokers": 3,
            "topics": [{"name": "t", "partitions": PARTITIONS, "replication.factor": 3}],
            "producers": [{"topic": "t", "rate.per.s": 1000, "acks": "all"}],
            "consumers": [group], "faults": list(faults)}


JOIN = [{"at.ms": 10000, "kind": "consumer_join", "group": "g"}]


def assignments(result):
    """{generation: {member: [partition numbers]}} from the consumer_assign events."""
    out: dict[int, dict[str, list[int]]] = {}
    for detail in result.events[result.events.kind == "consumer_assign"].detail:
        head, parts = detail.split(" gets ")
        generation, member = int(head.split("generation ")[1].split(":")[0]), head.split(": ")[1]
        out.setdefault(generation, {})[member] = [int(p.split("-")[-1]) for p in parts.strip("[]").split(", ") if p]
    return out


def test_a_join_under_eager_pauses_every_partition():
    g = simulate(scenario(JOIN, **{"partition.assignment.strategy": "range"})).groups.iloc[0]
    assert g.rebalances == 2 and g.partitions_paused == PARTITIONS


def test_members_learn_of_a_rebalance_at_their_next_heartbeat():
    # AbstractCoordinator: the coordinator answers a member's heartbeat with REBALANCE_IN_PROGRESS and only then does
    # it rejoin. The members started at 0 and heartbeat every 3 s, so a join at 10 s is learnt of at their 12 s
    # heartbeat, not at 10 s (the joiner rejoins at once); a member busy then rejoins at its next poll, after at
    # most a fetch's long poll (fetch.max.wait.ms 500) or one poll's processing (500 records x 0.2 ms), and the
    # JoinGroup and SyncGroup round trips follow
    r = simulate(scenario(JOIN, **{"partition.assignment.strategy": "range"}))
    ev = r.events
    start = ev[(ev.kind == "rebalance_start") & ev.detail.str.contains("joined")].time_ms.iloc[0]
    assigned = ev[(ev.kind == "consumer_assign") & ev.detail.str.contains("generation 2:")].time_ms.min()
    assert start == 10000 and 12000 < assigned < 12000 + max(500, 500 * 0.2) + 100


def test_a_join_under_cooperative_sticky_pauses_only_the_partition_that_moves():
    r = simulate(scenario(JOIN, **{"partition.assignment.strategy": "cooperative-sticky"}))
    g = r.groups.iloc[0]
    gens = assignments(r)
    first, last = gens[1], gens[max(gens)]
    # 6 partitions over 4 members: quotas 2, 2, 1, 1; the three old members own 2 each, so exactly one moves
    moved = [p for member, parts in first.items() for p in parts if p not in last.get(member, [])]
    assert len(moved) == 1
    assert g.partitions_paused == 1 and g.rebalances == 3  # join, then the second rebalance after the revocation
    # the moved partition waited from its revocation (end of the first rebalance) to the end of the second
    ev = r.events
    revoked_at = ev[ev.kind == "consumer_revoke"].time_ms.iloc[0]
    assigned_at = ev[(ev.kind == "consumer_assign") & ev.detail.str.contains(f"generation {max(gens)}:")].time_ms.iloc[0]
    assert g.paused_partition_ms == pytest.approx(assigned_at - revoked_at)
    # and the members that kept theirs never stopped: the only paused partition-time is the moved one's
    assert g.paused_partition_ms == pytest.approx(g.paused_partition_ms_max)


def test_a_list_with_an_eager_assignor_rebalances_eagerly():
    # KIP-429's upgrade path, first rolling bounce: [cooperative-sticky, range] picks cooperative-sticky, eagerly
    listed = simulate(scenario(JOIN, **{"partition.assignment.strategy": ["cooperative-sticky", "range"]})).groups.iloc[0]
    assert listed.rebalances == 2 and listed.partitions_paused == PARTITIONS
    assert simulate(scenario(JOIN, **{"partition.assignment.strategy": "cooperative-sticky,range"})
                    ).groups.iloc[0].rebalances == 2


ROLL_AUTO = [{"at.ms": 10000 + 5000 * i, "kind": "consumer_restart", "group": "g", "member": i, "duration.ms": 3000}
             for i in range(3)]


@pytest.mark.parametrize("consumer, twice", [
    ({"partition.assignment.strategy": "cooperative-sticky"}, True),
    ({"partition.assignment.strategy": "cooperative-sticky", "commit": "after_processing"}, False),
    ({"partition.assignment.strategy": "range"}, False),
    ({"group.protocol": "consumer"}, False)])
def test_a_rolling_restart_processes_records_twice_only_under_cooperative_auto_commit(consumer, twice):
    # ConsumerCoordinator: onJoinPrepare auto-commits, a cooperative member goes on consuming until the SyncGroup
    # answer, and onJoinComplete revokes without committing; so the new owner repeats what the old one processed
    # after its rejoin. Eager revokes right after the commit; KIP-848's member commits before revoking;
    # after_processing commits every record; a restart's close() commits: none of those repeats anything.
    sc = scenario(ROLL_AUTO, members=6, **{"commit": "auto", **consumer})
    sc["topics"][0]["partitions"], sc["duration.ms"] = 12, 30000
    r = simulate(sc)
    g = r.groups.iloc[0]
    if not twice:
        assert g.consumed_duplicates == 0
        return
    # what is repeated of a revoked partition was produced (1000/s over 12 partitions) after the rebalance that
    # revoked it started (the revoking member rejoined, and committed, no earlier) less the fetch's long poll
    # (fetch.max.wait.ms, 500 ms: what the owner had not yet fetched at that commit), up to the revocation
    ev = r.events
    starts = ev[ev.kind == "rebalance_start"].time_ms.tolist()
    revokes = ev[ev.kind == "consumer_revoke"]
    assert len(revokes) > 0
    bound = sum(d.count("t-") * 1000 / 12 * (t - max(s for s in starts if s <= t) + 500) / 1000
                for t, d in zip(revokes.time_ms, revokes.detail))
    assert 0 < g.consumed_duplicates <= bound


ROLL = [{"at.ms": 8000 + 4000 * i, "kind": "consumer_restart", "group": "g", "member": i, "duration.ms": 2000}
        for i in range(3)]


def test_a_static_member_restarted_within_the_session_timeout_causes_no_rebalance():
    r = simulate(scenario(ROLL, **{"group.instance.id": "app"}))
    g = r.groups.iloc[0]
    assert g.rebalances == 1 and g.consumed_duplicates == 0  # the initial join only
    # its own partitions wait for it: 2 per member, each for the 2 s the process is down
    assert g.paused_partition_ms == pytest.approx(PARTITIONS * 2000)
    dynamic = simulate(scenario(ROLL)).groups.iloc[0]
    # without group.instance.id each restart's LeaveGroup rebalances (its JoinGroup 2 s later may join that
    # rebalance while the others have not yet heard of it at their 3 s heartbeats)
    assert dynamic.rebalances > 1


@pytest.mark.parametrize("version, strategy, expected", [
    ("4.1", "range", {"consumer-g-2": [0, 1], "consumer-g-1": [2, 3], "consumer-g-0": [4, 5]}),
    ("4.1", "roundrobin", {"consumer-g-2": [0, 3], "consumer-g-1": [1, 4], "consumer-g-0": [2, 5]}),
    ("2.3", "range", {"consumer-g-0": [0, 1], "consumer-g-1": [2, 3], "consumer-g-2": [4, 5]})])
def test_range_and_roundrobin_order_static_members_by_group_instance_id(version, strategy, expected):
    # KIP-345 in the assignors (2.4: KAFKA-8355 range, KAFKA-8356 roundrobin): static members sort by
    # group.instance.id, not member.id; the members consumer-g-0..2 have instance ids c, b, a, so consumer-g-2 (a)
    # comes first: P // C = 2 partitions each in ranges, or dealt in turn. Kafka 2.3 has group.instance.id but its
    # assignors still sort by member id
    r = simulate(scenario(version=version, **{"partition.assignment.strategy": strategy,
                                              "group.instance.id": ["c", "b", "a"]}))
    assert assignments(r)[min(assignments(r))] == expected


def test_a_static_member_back_after_its_session_expired_rebalances():
    late = [{"at.ms": 8000, "kind": "consumer_restart", "group": "g", "member": 0, "duration.ms": 12000}]
    r = simulate(scenario(late, **{"group.instance.id": ["a", "b", "c"]}))
    ev = r.events
    starts = ev[ev.kind == "rebalance_start"]
    closed = ev[ev.kind == "consumer_leave"].time_ms.iloc[0]  # at its next poll after 8 s
    # session.timeout.ms (10 s) after it closed, the coordinator removes it and a rebalance starts; the others hear
    # of it at their next heartbeat (every 3 s from 0), so if that comes after its return 12 s after closing, the
    # returning member's JoinGroup joins that rebalance; else the return is a rebalance of its own
    expired, back = closed + 10000, closed + 12000
    heard = 3000 * (int(expired // 3000) + 1)
    expected = [expired] if heard > back else [expired, back]
    assert starts.time_ms.tolist()[1:] == pytest.approx(expected)
    assert r.groups.iloc[0].rebalances == 1 + len(expected)


@pytest.mark.parametrize("edit, field, rule", [
    ({"kafka.version": "2.3", "partition.assignment.strategy": "cooperative-sticky"},
     "consumers[0].partition.assignment.strategy", "cooperative-sticky is not in Kafka 2.3"),
    ({"kafka.version": "2.3", "partition.assignment.strategy": ["range", "cooperative-sticky"]},
     "consumers[0].partition.assignment.strategy", "cooperative-sticky is not in Kafka 2.3"),
    ({"group.instance.id": ["a", "b", "a"]}, "consumers[0].group.instance.id", "'a' is given twice in group 'g'"),
    ({"kafka.version": "3.9", "group.protocol": "consumer"}, "consumers[0].group.protocol",
     "consumer is not in Kafka 3.9"),
    ({"kafka.version": "2.2", "group.instance.id": "app"}, "consumers[0].group.instance.id", "not a property of Kafka 2.2"),
    ({"partition.assignment.strategy": "sticky-cooperative"}, "consumers[0].partition.assignment.strategy",
     "unknown assignor 'sticky-cooperative'"),
])
def test_bad_group_input_is_one_line_and_exit_2(tmp_path, capsys, edit, field, rule):
    from kafkamodel.cli import main

    version = edit.pop("kafka.version", "4.1")
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(scenario(version=version, **edit), sort_keys=False))
    out = tmp_path / "out"
    code = main(["run", str(path), "--out", str(out)])
    err = capsys.readouterr().err.splitlines()
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith(f"error: {field}: ") and rule in err[0], err[0]
    assert not out.exists()


@pytest.mark.parametrize("assignor", ["uniform", "range"])
def test_kip848_a_join_moves_only_the_partitions_the_new_member_takes(assignor):
    r = simulate(scenario(JOIN, **{"group.protocol": "consumer", "group.remote.assignor": assignor}))
    g = r.groups.iloc[0]
    ev = r.events
    after = ev[(ev.time_ms >= 10000) & ev.kind.isin(["consumer_assign", "consumer_revoke"])]
    newcomer = after[after.detail.str.contains("consumer-g-3 gets")]
    taken = [int(p.split("-")[-1]) for p in newcomer.detail.iloc[-1].split(" gets ")[1].strip("[]").split(", ")]
    # 6 partitions over 4 members: the newcomer's share is 6 // 4 = 1 (uniform) or range's last member's 1
    assert len(taken) == PARTITIONS // 4
    assert g.partitions_paused == len(taken) and g.rebalances == 2  # the initial target, then one more
    # no barrier: only the member giving a partition up and the newcomer see any change
    touched = {d.split(": ")[1].split(" ")[0] for d in after.detail}
    assert len(touched) == 2
    # the partition waited from its old owner's revocation to the newcomer's next heartbeat
    revoked_at = after[after.kind == "consumer_revoke"].time_ms.iloc[0]
    assert g.paused_partition_ms == pytest.approx(newcomer.time_ms.iloc[-1] - revoked_at)
    assert newcomer.time_ms.iloc[-1] - revoked_at <= 5000 + 10  # group.consumer.heartbeat.interval.ms, plus a round trip


def test_kip848_static_member_restart_needs_no_new_target():
    r = simulate(scenario(ROLL, **{"group.protocol": "consumer", "group.instance.id": "app"}))
    g = r.groups.iloc[0]
    assert g.rebalances == 1 and g.consumed_duplicates == 0
