"""The cluster report's answers move the way the inputs say they must: more brokers, lower utilisation; RF 2,
fewer nines; and the computed NIC load is the bytes the placement sends, by hand."""

from __future__ import annotations

import pytest

from kafkamodel import load_scenario
from kafkamodel.cluster.answers import Plan, durability_answer, nic_utilization, run_loads, saturation_answer
from kafkamodel.config.hardware import goodput


def cluster(brokers: int, rf: int = 3, racks=None, min_isr: int = 2, rate: float = 4000) -> dict:
    s = {"name": f"b{brokers}-rf{rf}", "brokers": brokers, "broker": {"min.insync.replicas": min_isr},
         "topics": [{"name": "t", "partitions": 12, "replication.factor": rf}],
         "producers": [{"topic": "t", "rate.per.s": rate, "record.size.bytes": 1000, "acks": "all"}],
         "consumers": [{"group": "g", "topic": "t"}]}
    if racks:
        s["racks"] = racks
    return s


def test_the_nic_load_is_the_bytes_the_placement_sends():
    # 3 brokers, 3 partitions of RF 3, 1 group: each broker leads one partition (R/3 in from producers, R/3 x (2
    # followers + 1 group) out) and follows two (2R/3 in): in R, out 2R/3 x 1.5 = R as well; R = 30 MB/s
    s = load_scenario({**cluster(3), "topics": [{"name": "t", "partitions": 3, "replication.factor": 3}],
                       "producers": [{"topic": "t", "rate.per.s": 30000, "record.size.bytes": 1000}]})
    m = s["hardware"]["broker"]
    expected = 30e6 * 8 / (m["nic.gbps"] * 1e9 * goodput(m["nic.mtu"]))
    assert nic_utilization(s) == pytest.approx(expected, rel=1e-9)


def test_more_brokers_lower_the_busiest_broker_s_utilisation():
    plan = Plan(seeds=(1,), loads=(1.0, 2.0), duration_ms=1000, durability=False)
    today = {}
    for brokers in (3, 6):
        s = load_scenario(cluster(brokers))
        answer = saturation_answer(run_loads(s, plan, __import__("kafkamodel").simulate), plan)
        today[brokers] = {r["resource"]: r["today"]["value"] for r in answer["resources"] if r["measured"]}
    for resource in ("nic_utilization_max", "disk_write_rate_utilization_max", "request_handler_busy_max"):
        assert today[6][resource] < today[3][resource], resource


@pytest.mark.slow
def test_rf_2_gives_fewer_nines_than_rf_3():
    plan = Plan(windows=100)
    three = durability_answer(load_scenario(cluster(6, 3, ["a", "b", "c"], 2, rate=500)), plan)
    two = durability_answer(load_scenario(cluster(6, 2, ["a", "b", "c"], 1, rate=500)), plan)
    assert two["loss_probability_per_partition_year"]["value"] > three["loss_probability_per_partition_year"]["value"]
