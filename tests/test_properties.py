"""Properties: hypothesis-generated fault schedules on safe settings.

Safe = acks=all, min.insync.replicas >= 2, clean elections, leader-epoch
truncation. Kafka's guarantee: no acknowledged (or committed) record is lost
while no more than RF - min.insync.replicas replicas lose data; crashes,
isolation, pauses and slowness lose none.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkamodel import load_scenario, simulate

BROKERS = 4
DURATION = 12_000.0

fault = st.fixed_dictionaries({
    "at.ms": st.floats(0, DURATION - 1, allow_nan=False).map(lambda x: round(x, 1)),
    "kind": st.sampled_from(["crash", "isolate", "pause", "slow"]),
    "broker": st.one_of(st.integers(0, BROKERS - 1), st.sampled_from(["leader:t-0", "leader:t-1"])),
    "duration.ms": st.floats(50, 6000, allow_nan=False).map(lambda x: round(x, 1)),
    "factor": st.sampled_from([5, 50, 500]),
})


def safe_scenario(faults, seed, rf, min_isr, replication="isr", acks="all"):
    return load_scenario({
        "name": "property",
        "seed": seed,
        "duration.ms": DURATION,
        "replication": replication,
        "brokers": BROKERS,
        "broker": {
            "min.insync.replicas": min_isr,
            "unclean.leader.election.enable": False,
            "replica.lag.time.max.ms": 1500,
            "zookeeper.session.timeout.ms": 2000,
            "replica.socket.timeout.ms": 3000,
        },
        "topics": [{"name": "t", "partitions": 2, "replication.factor": rf}],
        "producers": [{"topic": "t", "rate.per.s": 400, "acks": acks, "request.timeout.ms": 2000,
                       "delivery.timeout.ms": 6000, "keys": {"cardinality": 50}}],
        "faults": faults,
    })


def check_safe(result):
    s = result.summary
    assert s["acked_records_lost"] == 0, result.events.to_string()
    assert s["committed_records_lost"] == 0
    assert s["leader_in_isr_violations"] == 0
    assert s["committed_prefixes_agree_violations"] == 0
    assert s["no_committed_record_lost_violations"] == 0


schedules = st.lists(fault, min_size=1, max_size=6)
rf_and_min_isr = st.sampled_from([(3, 2), (4, 2), (4, 3)])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(faults=schedules, seed=st.integers(0, 2**32), shape=rf_and_min_isr)
def test_safe_settings_never_lose_an_acknowledged_record(faults, seed, shape):
    rf, min_isr = shape
    check_safe(simulate(safe_scenario(faults, seed, rf, min_isr)))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(faults=schedules, seed=st.integers(0, 2**32))
def test_quorum_never_loses_an_acknowledged_record(faults, seed):
    check_safe(simulate(safe_scenario(faults, seed, 3, 2, replication="quorum")))


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(faults=schedules, seed=st.integers(0, 2**32))
def test_same_scenario_and_seed_give_identical_tables(faults, seed):
    scenario = safe_scenario(faults, seed, 3, 2, acks=1)
    a, b = simulate(scenario), simulate(scenario)
    assert a.summary == b.summary
    for name, table in a.tables().items():
        assert table.equals(b.tables()[name]), name


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(faults=schedules, seed=st.integers(0, 2**32), shape=rf_and_min_isr,
       replication=st.sampled_from(["isr", "quorum"]))
def test_safe_settings_many_schedules(faults, seed, shape, replication):
    rf, min_isr = shape
    check_safe(simulate(safe_scenario(faults, seed, rf, min_isr, replication=replication)))
