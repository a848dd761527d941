"""Requests as Kafka sends them, against formulas computed here.

The formulas come from how Kafka handles requests, not from the model's code:

* a broker reads a connection's next request only once it has answered the
  one before (``SocketServer`` mutes the channel), so an acks=all produce
  request holds the connection until it is committed;
* a follower parked in a long poll gets an append at once, and its next fetch
  (sent as soon as it has appended) tells the leader it has it: with constant
  one-way latency L, a request is committed 2L after the leader appends it;
* a request carries at most one batch (``batch.size``) per partition.

So one partition's connection commits one batch per cycle, and with at least
two requests in flight the next one is waiting when a cycle ends: the cycle
is 2L. With one in flight the answer must travel back and the next request
come in: 4L.
"""

from __future__ import annotations

import numpy as np
import pytest

from kafkamodel import simulate

from kafka_format import v2_capacity
from helpers import fetcher_of
from shipped import UNLIMITED_MACHINE, ZERO_COSTS

RECORD, BATCH = 100, 16384
CAP = v2_capacity(BATCH, RECORD)  # records in a full batch (Kafka's record format: 148 of 100 bytes)


def one_partition(rate: float, latency: float = 10.0, duration: float = 20000.0, seed: int = 3, **producer) -> dict:
    return {"name": "one-partition", "seed": seed, "duration.ms": duration, "brokers": 3, "costs": ZERO_COSTS,
            "network": {"latency.ms": latency}, "hardware": {"broker": {"nic.gbps": None}},
            "topics": [{"name": "t", "partitions": 1, "replication.factor": 3}],
            "producers": [{"topic": "t", "rate.per.s": rate, "acks": "all", **producer}]}


def test_one_partition_commits_a_full_batch_per_cycle_and_beyond_that_the_backlog_grows():
    latency, duration = 10.0, 20000.0
    capacity = CAP / (2 * latency) * 1000.0  # records/s: one full batch per 2L
    over = simulate(one_partition(16000, latency, duration)).summary
    sent_rate = over["records_sent"] / duration * 1000.0
    assert over["records_acked"] == pytest.approx(capacity * duration / 1000.0, rel=0.02)
    # the backlog grows at (offered - capacity)
    assert over["backlog_records"] == pytest.approx((sent_rate - capacity) * duration / 1000.0, rel=0.03)
    assert over["records_per_batch_mean"] == pytest.approx(CAP, rel=0.01)
    # below capacity the latency stays bounded: five requests in flight, each a cycle, and no backlog to speak of
    under = simulate(one_partition(0.5 * capacity, latency, duration)).summary
    bound = (5 + 1) * 2 * latency + 2 * latency + 5.0  # in-flight cycles, one more, request and answer, linger.ms
    assert under["produce_latency_ms_p99"] < bound
    assert under["backlog_records"] < 6 * CAP


def test_with_one_request_in_flight_a_cycle_is_four_one_way_trips():
    latency, duration = 10.0, 20000.0
    over = simulate(one_partition(16000, latency, duration, **{"max.in.flight.requests.per.connection": 1})).summary
    assert over["records_acked"] == pytest.approx(CAP / (4 * latency) * duration, rel=0.02)


@pytest.mark.parametrize("rate", [2000, 4000, 7000])
def test_batches_grow_with_the_wait_for_an_in_flight_slot_up_to_batch_size(rate):
    # with the slots full, a batch is drained once per cycle (2L) and holds what arrived meanwhile
    s = simulate(one_partition(rate, 10.0)).summary
    assert s["records_per_batch_mean"] == pytest.approx(min(CAP, rate * 2 * 10.0 / 1000.0), rel=0.05)
    # with room in flight, a batch is what arrives within linger.ms (5)
    light = simulate(one_partition(rate, 0.1, duration=5000.0)).summary
    assert light["records_per_batch_mean"] < rate * 8.0 / 1000.0 + 1


@pytest.mark.parametrize("in_flight", [1, 2, 5])
def test_a_slow_follower_that_keeps_up_costs_whole_round_trips_of_its_own_and_leaves_no_backlog(in_flight):
    latency, factor = 0.5, 100  # the slow follower's fetches take 50 ms each way: a 100 ms round trip
    rtt = 2 * latency * factor
    r = simulate({
        "name": "slow-follower", "seed": 3, "duration.ms": 30000, "brokers": 3, "costs": ZERO_COSTS,
        "network": {"latency.ms": latency}, "hardware": {"broker": {"nic.gbps": None}},
        "topics": [{"name": "t", "partitions": 1, "replication.factor": 3}],
        "producers": [{"topic": "t", "rate.per.s": 200, "acks": "all", "max.in.flight.requests.per.connection": in_flight}],
        "faults": [{"at.ms": 0, "kind": "slow", "broker": 2, "factor": factor, "duration.ms": 30000}],
    })
    s = r.summary
    assert s["isr_shrinks"] == 0  # it keeps up: it never leaves the ISR
    # a cycle is the follower's round trip (one request in flight: plus the answer's and the next request's trips);
    # the in-flight requests queue at the leader, so a record waits for its own and those ahead of it, and on
    # average half a cycle for its batch to be drained
    cycle = rtt + (2 * latency if in_flight == 1 else 0.0)
    steady = r.records[(r.records.send_ms > 2000) & r.records.acked]
    latency_ms = (steady.ack_ms - steady.send_ms).to_numpy()
    assert np.mean(latency_ms) == pytest.approx((in_flight + 0.5) * cycle, rel=0.03)
    assert np.percentile(latency_ms, 99) < (in_flight + 1) * cycle + 5.0
    assert s["backlog_records"] < (in_flight + 1) * 200 * cycle / 1000.0 + CAP


@pytest.mark.parametrize("partitions,fetchers", [(1000, 1), (1000, 4), (2000, 1)])
def test_commit_latency_grows_with_partitions_per_fetcher_and_shrinks_with_more_fetchers(partitions, fetchers):
    """Every 100 ms a burst puts one record in each of the partitions (two brokers, RF 2). A burst's request to
    a leader carries a batch per partition it leads; its handler thread validates them all before it appends
    (partition.us each); the follower's fetchers each read their partitions at the leader (partition.us each,
    in parallel threads) and append them (fetcher.partition.us each); the batch is committed when the slowest
    fetcher's next request arrives. (Jun Rao's "about 20 ms" for 1,000 partitions is the validation case
    rao-2015.)"""
    # (the producer's own machine costs nothing here: this is the brokers' side)
    costs = {"partition.us": 10, "fetcher.partition.us": 10, "producer.record.us": 0, "producer.batch.us": 0,
             "producer.request.us": 0}

    def run(n, f):
        return simulate({
            "name": "fetchers", "seed": 5, "duration.ms": 3000, "brokers": 2, "costs": costs,
            "broker": {"num.replica.fetchers": f}, "network": {"latency.ms": 0.5},
            "topics": [{"name": "t", "partitions": n, "replication.factor": 2}],
            "producers": [{"topic": "t", "acks": "all", "partitioner": "round_robin", "linger.ms": 0,
                           "burst": {"records": n, "every.ms": 100}}],
        }).summary["produce_latency_ms_p50"]

    led = [p for p in range(partitions) if p % 2 == 0]  # broker 0 leads the even partitions
    per_fetcher = max(sum(1 for p in led if fetcher_of("t", p, fetchers) == k) for k in range(fetchers))
    predicted = (len(led) * costs["partition.us"] + per_fetcher * (costs["partition.us"] + costs["fetcher.partition.us"])) / 1000
    extra = run(partitions, fetchers) - run(10, 1)
    assert extra == pytest.approx(predicted, rel=0.1)


@pytest.mark.parametrize("mode", ["isr", "quorum"])
def test_service_times_of_zero_reduce_to_pure_network_latency(mode):
    """With no service time and no NIC limit, an isolated record costs exactly request + commit + answer hops."""
    latency = 2.0
    s = simulate({
        "name": "hops", "seed": 1, "duration.ms": 20000, "brokers": 3, "replication": mode, "costs": ZERO_COSTS,
        "hardware": UNLIMITED_MACHINE, "disk": {"fsync.ms": 0},  # a quorum fsyncs before it counts (quorum.fsync): here in no time
        "network": {"latency.ms": latency},
        "topics": [{"name": "t", "partitions": 1, "replication.factor": 3}],
        "producers": [{"topic": "t", "acks": "all", "linger.ms": 0, "burst": {"records": 1, "every.ms": 100}}],
    }).summary
    # request (L), the parked followers get it (L), their next fetch reports it (L), the answer (L)
    assert s["produce_latency_ms_p50"] == pytest.approx(4 * latency, abs=1e-6)
    assert s["produce_latency_ms_p99"] == pytest.approx(4 * latency, abs=1e-6)


@pytest.mark.parametrize("version,sessions", [("1.0", False), ("1.1", True)])
def test_idle_followed_partitions_cost_every_fetch_round_before_fetch_sessions(version, sessions):
    """Before 1.1 (no KIP-227 fetch sessions) every fetch names and reads every partition it follows, so 1,000
    idle partitions (two brokers, RF 2) add, to the commit of a record in a busy partition, the leader's read
    (partition.us) and the follower's handling (fetcher.partition.us) of each idle partition the busy partition's
    leader also leads; from 1.1 an incremental fetch carries only partitions with news: they add nothing."""
    from kafkamodel.sim.controller.placement import assign

    costs = {"partition.us": 10, "fetcher.partition.us": 10, "producer.record.us": 0, "producer.batch.us": 0,
             "producer.request.us": 0}

    def run(idle):
        topics = [{"name": "busy", "partitions": 1, "replication.factor": 2}]
        topics += [{"name": "idle", "partitions": idle, "replication.factor": 2}] if idle else []
        return simulate({
            "name": "idle", "seed": 5, "duration.ms": 3000, "brokers": 2, "costs": costs, "kafka.version": version,
            "network": {"latency.ms": 0.5}, "topics": topics,
            "producers": [{"topic": "busy", "acks": "all", "linger.ms": 0, "burst": {"records": 1, "every.ms": 100}}],
        }).summary["produce_latency_ms_p50"]

    busy_leader = assign(1, 2, 2)[0][0]
    same_pair = sum(1 for replicas in assign(1000, 2, 2) if replicas[0] == busy_leader)  # one fetcher thread
    predicted = 0.0 if sessions else same_pair * (costs["partition.us"] + costs["fetcher.partition.us"]) / 1000
    assert run(1000) - run(0) == pytest.approx(predicted, abs=1e-6)
