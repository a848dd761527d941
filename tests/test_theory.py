"""Theory: acks=all produce latency against the order-statistics prediction.

With every one-way message an independent Exp(mean) draw and records far
enough apart that nothing queues, an acks=all write costs

    request (1 hop) + commit delay + response (1 hop)

where the commit delay is an order statistic of the followers' round trips
(fetch response to the follower + its next fetch back to the leader, each a
sum of two exponentials, i.e. Gamma(2, mean)):

* ISR: the slowest of the RF-1 followers (the maximum);
* quorum: the ceil((RF-1)/2)-th smallest, so that with the leader a majority has it.

The prediction (``kafkamodel.theory``, which the quorum-vs-ISR study also draws)
is computed from those distributions by numerical integration and
convolution, independently of the simulation.
"""

from __future__ import annotations

import pytest

from kafkamodel import simulate
from kafkamodel.theory import predicted_latency

from shipped import UNLIMITED_MACHINE, ZERO_COSTS

MEAN = 1.0  # ms, one-way latency mean (kafkamodel.theory.EXPONENTIAL_1MS)


def test_prediction_is_right_for_a_case_with_a_closed_form():
    # RF=2 ISR: commit delay is one Gamma(2) round trip, so the latency is Gamma(4, MEAN): mean 4
    mean, p99 = predicted_latency(2, "isr")
    assert mean == pytest.approx(4 * MEAN, rel=1e-3)
    # Gamma(4, 1) 99th percentile is 10.0451
    assert p99 == pytest.approx(10.0451 * MEAN, rel=2e-3)


def scenario(rf: int, mode: str, records: int) -> dict:
    every = 100.0  # ms between records: >> the few-ms round trips, so nothing queues
    return {
        "name": f"theory-{mode}-rf{rf}",
        "seed": 11 + rf,
        "duration.ms": records * every,
        "replication": mode,
        "brokers": rf,
        "broker": {"replica.fetch.wait.max.ms": 10**9},  # a parked fetch never expires mid-test
        "network": {"latency.ms": {"dist": "exponential", "mean": MEAN}},
        "hardware": {"broker": {"nic.gbps": None}},  # no NIC limit: messages take no transfer time
        # brokers spend no time on requests (the prediction is about the network alone)
        "costs": ZERO_COSTS,
        "hardware": UNLIMITED_MACHINE, "disk": {"fsync.ms": 0},  # a quorum fsyncs before it counts (quorum.fsync): here in no time
        "topics": [{"name": "t", "partitions": 1, "replication.factor": rf}],
        "producers": [{"topic": "t", "acks": "all", "linger.ms": 0, "burst": {"records": 1, "every.ms": every}}],
    }


@pytest.mark.parametrize("mode", ["isr", "quorum"])
@pytest.mark.parametrize("rf", [3, 5])
def test_acks_all_latency_matches_order_statistics(rf, mode):
    result = simulate(scenario(rf, mode, records=30_000))
    s = result.summary
    assert s["records_acked"] == s["records_sent"] == 30_000
    mean, p99 = predicted_latency(rf, mode)
    assert s["produce_latency_ms_mean"] == pytest.approx(mean, rel=0.03)
    assert s["produce_latency_ms_p99"] == pytest.approx(p99, rel=0.05)


def test_quorum_is_faster_than_isr_and_the_gap_grows_with_rf():
    gaps = []
    for rf in (3, 5):
        isr, quorum = predicted_latency(rf, "isr")[0], predicted_latency(rf, "quorum")[0]
        sim_isr = simulate(scenario(rf, "isr", 5_000)).summary["produce_latency_ms_mean"]
        sim_quorum = simulate(scenario(rf, "quorum", 5_000)).summary["produce_latency_ms_mean"]
        assert sim_quorum < sim_isr
        # the gap itself is the order statistics' (5,000 records: standard error of the gap ~0.04 ms)
        assert sim_isr - sim_quorum == pytest.approx(isr - quorum, rel=0.1)
        gaps.append(sim_isr - sim_quorum)
    assert gaps[1] > gaps[0]
