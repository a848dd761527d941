"""results.invariants: the diverging ranges of two replicas' logs, on hand-built logs: entries are (base, end,
leader epoch, batch id); and no_committed_record_lost on runs checked after every event, against Kafka's meaning
of a lost committed record (lost from every replica that can still lead the partition)."""

from __future__ import annotations

import re

from kafkamodel import load_scenario, simulate
from kafkamodel.sim.results.invariants import diverging_ranges


SHARED = [(0, 10, 0, 1), (10, 20, 0, 2)]


def test_ranges_start_where_the_logs_part_and_stop_at_the_bound():
    a = SHARED + [(20, 25, 0, 3), (25, 30, 0, 4)]
    b = SHARED + [(20, 21, 1, -1), (21, 26, 1, 3), (26, 40, 1, 5)]
    assert diverging_ranges(a, b, 100) == [(20, 30)]  # the same batch 3 one offset later still differs
    assert diverging_ranges(a, b, 23) == [(20, 23)]
    assert diverging_ranges(a, a, 100) == []


def _run(faults, *, seed, brokers, rf, min_isr, unclean, acks, duration_ms, **broker):
    """A run with every property checked after every event (``debug.invariants``)."""
    return simulate(load_scenario({
        "name": "invariants", "kafka.version": "4.1", "seed": seed, "duration.ms": duration_ms, "brokers": brokers,
        "debug.invariants": True,
        "broker": {"min.insync.replicas": min_isr, "unclean.leader.election.enable": unclean, **broker},
        "topics": [{"name": "t", "partitions": 1, "replication.factor": rf}],
        "producers": [{"topic": "t", "rate.per.s": 400, "acks": acks}],
        "faults": faults,
    }))


def _violations(result, name: str):
    events = result.events
    return events[(events.kind == "invariant_violation") & events.detail.str.startswith(f"{name}: ")]


FAST_SESSIONS = {"replica.lag.time.max.ms": 500, "broker.session.timeout.ms": 1000, "broker.heartbeat.interval.ms": 250}


def test_a_leader_that_lost_power_loses_nothing_while_the_isr_holds_the_records():
    # Found by the property tests (seed 28, RF 4): t-0's leader loses power at 50 ms; its unflushed tail, committed
    # records among it, is gone from its log, and it stays the controller's leader until its session expires (2 s).
    # Nothing is lost: the other ISR members hold those records, and the controller elects one of them (Kafka's
    # clean election). The invariant, checked after every event, must not break.
    result = _run([{"at.ms": 50.0, "kind": "power_loss", "broker": "leader:t-0", "duration.ms": 500.0}], seed=28,
                  brokers=4, rf=4, min_isr=2, unclean=False, acks="all", duration_ms=6_000.0,
                  **{"broker.session.timeout.ms": 2000, "broker.heartbeat.interval.ms": 500})
    events = result.events
    tail = events[(events.kind == "truncation") & events.detail.str.startswith("power loss")]
    assert len(tail) == 1 and tail.broker.iloc[0] == 0 and tail.time_ms.iloc[0] == 50.0
    assert re.search(r"; ([1-9]\d*) of them committed", tail.detail.iloc[0])  # the leader's log lacks committed records
    election = events[events.kind == "leader_election"].iloc[0]
    assert election.time_ms >= 2000.0 and election.detail.startswith("clean:")  # at the session's expiry, from the ISR
    records = result.records
    assert records[records.send_ms < 50].copies.min() >= 1 and result.summary["committed_records_lost"] == 0
    assert _violations(result, "no_committed_record_lost").empty
    assert result.summary["no_committed_record_lost_violations"] == 0


def test_an_unclean_election_loses_what_the_new_leader_never_fetched_and_the_invariant_sees_it():
    # Kafka's documented trade-off (unclean.leader.election.enable): a replica out of the ISR may be elected, and
    # what it lacks is lost. RF 2, min.insync.replicas 1: the follower (broker 1) crashes at 1 s and leaves the ISR;
    # the leader (broker 0) commits alone until it crashes at 4 s; broker 1 comes back at 6 s and is elected
    # uncleanly. Every record sent after broker 1 crashed and committed before broker 0 did is lost, none sent well before; the invariant breaks
    # at the unclean election and not before (while broker 0 is down it is still the ISR's last member, and holds
    # the records).
    crash_1, crash_0 = 1000.0, 4000.0
    result = _run([{"at.ms": crash_1, "kind": "crash", "broker": 1, "duration.ms": 5000.0},
                   {"at.ms": crash_0, "kind": "crash", "broker": 0, "duration.ms": 8000.0}], seed=1, brokers=2, rf=2,
                  min_isr=1, unclean=True, acks=1, duration_ms=10_000.0, **FAST_SESSIONS,
                  **{"eligible.leader.replicas.enable": False})
    events, records = result.events, result.records
    unclean = events[(events.kind == "leader_election") & events.detail.str.startswith("unclean:")]
    assert len(unclean) == 1 and unclean.broker.iloc[0] == 1
    committed = records[records.visible_ms.notna()]
    after = committed[(committed.send_ms > crash_1) & (committed.visible_ms < crash_0)]  # committed by broker 0 alone
    assert len(after) > 0 and (after.copies == 0).all()
    assert (committed[committed.send_ms < crash_1 - 100].copies > 0).all()
    broke = _violations(result, "no_committed_record_lost")
    assert broke.time_ms.min() == unclean.time_ms.iloc[0]
    lost = int(re.search(r"t-0: (\d+) committed records missing from leader 1", broke.detail.iloc[0])[1])
    assert lost == (committed.copies == 0).sum() >= len(after)
    assert result.summary["no_committed_record_lost_violations"] == 1
