"""The cluster report's answers move the way the inputs say they must: more brokers, lower utilisation; RF 2,
fewer nines; and the computed NIC load is the bytes the placement sends, by hand. Each answer's alternative
setting moves it the way Kafka's documentation says it must, by the amount a formula in the test predicts."""

from __future__ import annotations

import pytest

from kafkamodel import load_scenario
from kafkamodel import simulate
from kafkamodel.cluster.answers import (Plan, durability_answer, durability_setting, latency_setting, nic_utilization,
                                        restart_answer, run_loads, run_today, saturation_alternative, saturation_answer,
                                        saturation_setting)
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


def test_at_low_load_halving_linger_ms_lowers_the_produce_p50_by_half_of_it():
    # 5 records/s over 12 partitions: a batch rarely holds a second record, so each record waits the whole linger.ms
    # (the producer's documented batch wait) before it is sent; halving 20 ms takes 10 ms off the median
    s = load_scenario({**cluster(3, rate=5), "duration.ms": 10000,
                       "producers": [{"topic": "t", "rate.per.s": 5, "record.size.bytes": 1000, "acks": "all",
                                      "linger.ms": 20}]})
    plan = Plan(seeds=(1,), loads=(1.0, 2.0), duration_ms=10000, durability=False)
    rows = run_loads(s, plan, simulate)
    alt = latency_setting(s, saturation_answer(rows, plan))
    assert (alt["setting"], alt["value"]) == ("linger.ms", 10)  # nothing busy: the batch wait is latency's setting
    today = [r for r in rows if r["load"] == 1.0][0]["produce_latency_ms_p50"]
    halved = run_today(s, plan, simulate, "linger.ms", 10)[0]["produce_latency_ms_p50"]
    assert today - halved == pytest.approx(10, abs=1.5)


def test_a_busy_first_resource_is_latency_s_setting_and_doubling_num_io_threads_halves_its_utilisation():
    s = load_scenario({**cluster(3, rate=20000), "broker": {"min.insync.replicas": 2, "num.io.threads": 2}})
    plan = Plan(seeds=(1,), loads=(1.0,), duration_ms=1000, durability=False)
    rows = run_loads(s, plan, simulate)
    busy = rows[0]["request_handler_busy_max"]
    sat = {"first": "request_handler_busy_max", "first_what": "request handler threads",
           "resources": [{"resource": "request_handler_busy_max", "today": {"value": 0.6}}]}
    assert latency_setting(s, sat)["setting"] == "num.io.threads"  # busy today: its queue is in the latency
    fix = saturation_setting(s, sat)
    assert (fix["setting"], fix["value"]) == ("num.io.threads", 4)
    alt = saturation_alternative(fix, sat["first"], run_today(s, plan, simulate, fix["setting"], fix["value"]))
    # time busy / (threads x run): the same requests' work over twice the threads, half the fraction
    assert alt["today_busy"]["value"] == pytest.approx(busy / 2, rel=0.1)
    assert alt["saturates_at_load"] == pytest.approx(2 / busy, rel=0.1)


def test_a_waiting_gate_halved_shortens_the_roll_by_half_its_wait_per_broker():
    s = load_scenario(cluster(3, rate=500))
    plan = Plan(seeds=(1,), gate={"wait.ms": 8000}, downtime_ms=2000, warmup_ms=1000, durability=False)
    r = restart_answer(s, plan, simulate)
    w = r["with_setting"]
    assert (w["setting"], w["value"]) == ("the gate's wait.ms", 4000)  # 8 s of waiting beats a catch-up of ms
    # each broker but (perhaps) the last waits at the gate after it returns: 4 s less for 2 or 3 of the 3 brokers
    saved = r["operation_ms"]["value"] - w["operation_ms"]["value"]
    assert 2 * 4000 - 500 <= saved <= 3 * 4000 + 500


def test_a_topic_with_no_replica_above_min_insync_replicas_gets_one_more_and_the_roll_keeps_acks_all_writing():
    # RF 2 with min.insync.replicas 2: while either replica's broker is down the partition is under min ISR (Kafka:
    # NotEnoughReplicas); RF 3 leaves 2 in the ISR with one broker down, enough
    s = load_scenario(cluster(3, rf=2, rate=500))
    plan = Plan(seeds=(1,), downtime_ms=2000, warmup_ms=1000, durability=False)
    r = restart_answer(s, plan, simulate)
    w = r["with_setting"]
    assert (w["setting"], w["value"], w["today"]) == ("replication.factor of t", 3, 2)
    assert r["under_min_isr_partition_ms"]["value"] > 0 and w["under_min_isr_partition_ms"]["value"] == 0


def test_durability_s_setting_is_the_weakest_topic_s_replication_factor():
    s = load_scenario({**cluster(6, racks=["a", "b", "c"]),
                       "topics": [{"name": "t", "partitions": 12, "replication.factor": 3},
                                  {"name": "weak", "partitions": 6, "replication.factor": 2}],
                       "producers": [{"topic": "t", "rate.per.s": 100, "record.size.bytes": 1000}]})
    alt = durability_setting(s)
    assert (alt["setting"], alt["value"], alt["today"]) == ("replication.factor of weak", 3, 2)
    full = load_scenario({**cluster(3), "broker": {"min.insync.replicas": 1}})  # RF 3 on 3 brokers: no room
    assert (durability_setting(full)["key"], durability_setting(full)["value"]) == ("min.insync.replicas", 2)


@pytest.mark.slow
def test_one_replica_more_for_the_weakest_topic_gives_more_nines():
    answer = durability_answer(load_scenario(cluster(6, 2, ["a", "b", "c"], 1, rate=500)), Plan(windows=50))
    w = answer["with_setting"]
    assert w["setting"] == "replication.factor of t" and w["value"] == 3
    assert w["loss_probability_per_partition_year"]["value"] < answer["loss_probability_per_partition_year"]["value"]


def test_one_replica_more_for_an_assigned_topic_goes_to_a_rack_the_partition_does_not_use():
    from kafkamodel.cluster.answers import grow
    from kafkamodel.config.scenario import thaw

    s = load_scenario({**cluster(6, 2, ["a", "b", "c"], 1),
                       "topics": [{"name": "t", "partitions": 3, "replication.factor": 2,
                                   "replicas": [[0, 1], [1, 2], [2, 0]]}]})
    given = thaw(s.given)
    grow(s, given["topics"][0], 3)
    for replicas in given["topics"][0]["replicas"]:  # broker i is in rack i % 3: three racks, three replicas
        assert len(replicas) == 3 and len({b % 3 for b in replicas}) == 3, replicas
    assert load_scenario(given)["topics"][0]["replication.factor"] == 3  # a valid assignment
