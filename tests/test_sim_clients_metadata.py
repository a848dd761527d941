"""The clients' metadata refresh backoff (kafkamodel/sim/clients/metadata.py): Metadata.timeToAllowUpdate as Kafka
3.6 and 3.7 compute it (clients/src/main/java/org/apache/kafka/clients/Metadata.java), each expected wait computed
here from ExponentialBackoff's definition (retry.backoff.ms x 2^min(n, log2(max / retry.backoff.ms)) x a factor in
[0.8, 1.2], in whole ms, at most retry.backoff.max.ms)."""

from __future__ import annotations

import math

import pytest

from kafkamodel import load_scenario
from kafkamodel.sim.clients.metadata import exponential_backoff
from kafkamodel.sim.simulation import Simulation

BACKOFF, BACKOFF_MAX = 100.0, 1000.0  # retry.backoff.ms, retry.backoff.max.ms: Kafka's defaults


def clients(version: str) -> Simulation:
    return Simulation(load_scenario({
        "name": "md", "seed": 5, "duration.ms": 1000, "brokers": 3, "kafka.version": version,
        "topics": [{"name": "t", "partitions": 3, "replication.factor": 3}],
        "producers": [{"topic": "t", "rate.per.s": 100}],
        "consumers": [{"group": "g", "topic": "t"}]}))


def bounds(n: int) -> tuple[float, float]:
    """ExponentialBackoff.backoff(n)'s range."""
    term = BACKOFF * 2 ** min(n, math.log2(BACKOFF_MAX / BACKOFF))
    return math.floor(0.8 * term), min(math.floor(1.2 * term), BACKOFF_MAX)


def test_exponential_backoff_is_kafkas():
    assert exponential_backoff(100, 1000, 0, 1.0) == 100
    assert exponential_backoff(100, 1000, 3, 1.2) == 960  # 800 x 1.2
    assert exponential_backoff(100, 1000, 4, 1.2) == 1000  # capped
    assert exponential_backoff(100, 1000, 9, 0.8) == 800  # the exponent stops at log2(10): 1000 x 0.8
    assert exponential_backoff(100, 1000, 0, 0.8333) == 83  # whole milliseconds ((long) in Java)
    assert exponential_backoff(500, 200, 3, 1.1) == 200  # max below the initial: the max, no jitter


@pytest.mark.parametrize("kind", ["producer", "consumer"])
def test_before_3_7_every_refresh_waits_retry_backoff_ms(kind):
    sim = clients("3.6")
    sim.run()  # (the consumer's members register their metadata when they first fetch)
    up = sim.producer.metadata_updater if kind == "producer" else sim.fetcher.metadata_updater
    st = up.states[0]
    for failed, equivalent in ((0, 0), (3, 0), (0, 5)):
        up.failed[0], up.equivalent[0] = failed, equivalent
        assert up.backoff_ms(st, 0) == BACKOFF


@pytest.mark.parametrize("kind", ["producer", "consumer"])
def test_from_3_7_failed_requests_and_unchanged_answers_double_the_refresh_backoff(kind):
    """timeToAllowUpdate: max(backoff(failed - 1) (backoff(0) when none failed), backoff(equivalent - 1) (0 when
    none)); the consumer's Metadata is the same class (ConsumerMetadata), with its own retry.backoff.max.ms."""
    sim = clients("3.7")
    sim.run()  # (the consumer's members register their metadata when they first fetch)
    up = sim.producer.metadata_updater if kind == "producer" else sim.fetcher.metadata_updater
    st = up.states[0]
    assert st.config.retry_backoff_max_ms == BACKOFF_MAX
    for failed, equivalent, n in ((0, 0, 0), (1, 0, 0), (2, 0, 1), (4, 0, 3), (0, 1, 0), (0, 3, 2), (1, 6, 5),
                                  (9, 0, 8)):
        up.failed[0], up.equivalent[0] = failed, equivalent
        draws = [up.backoff_ms(st, 0) for _ in range(40)]
        lo, hi = bounds(n)
        assert all(lo <= d <= hi for d in draws), (failed, equivalent, min(draws), max(draws))
        assert len(set(draws)) > 1 or lo == hi  # jittered


def test_an_answer_that_moves_no_leader_counts_as_equivalent_and_one_that_does_resets():
    """Metadata.update: equivalentResponseCount + 1, reset to 0 by a newer leader epoch (updateLatestMetadata);
    Metadata.failedUpdate: failed + 1 and equivalent 0; an answer: failed 0."""
    sim = clients("3.7")
    up = sim.producer.metadata_updater
    st = up.states[0]
    same = tuple(sim.producer.states[0].metadata)
    moved = tuple((b + 1) % 3 for b in same)
    for leaders, failed, equivalent in ((same, 0, 1), (same, 0, 2), (None, 1, 0), (None, 2, 0), (same, 0, 1),
                                        (moved, 0, 0), (moved, 0, 1)):
        up._done(st, 0, leaders)
        assert (up.failed[0], up.equivalent[0]) == (failed, equivalent)


LATENCY = 5.0  # one way, every link (network.latency.ms, a constant)


def queued_refresh(acks) -> tuple[float, float, int]:
    """A metadata request sent right after a produce request on the producer's one usable connection (broker 1's
    is backing off, so NetworkClient.leastLoadedNode can only pick broker 0, the leader). Returns (when the
    metadata request went, when its answer came, the requests in flight on that connection as it came, itself
    included)."""
    sim = Simulation(load_scenario({
        "name": "queued", "seed": 1, "duration.ms": 1000, "brokers": 2, "kafka.version": "3.6",
        "network": {"latency.ms": LATENCY},
        "topics": [{"name": "t", "partitions": 1, "replication.factor": 2}],
        "producers": [{"topic": "t", "rate.per.s": 20, "acks": acks, "linger.ms": 0}]}))
    assert sim.partitions[0].leader == 0
    ps, network, up = sim.producer.states[0], sim.producer_network, sim.producer.metadata_updater
    ps.conns[1].backoff_until = float("inf")
    sent, seen = network.sent, {}

    def sent_then_refresh(ps_, conn, now):  # the first produce request after 200 ms: ask for metadata at once
        sent(ps_, conn, now)
        if now >= 200.0 and "at" not in seen:
            seen["at"] = now
            up.request_update(ps_, 0)

    answer = network.handle_metadata_response

    def answered(pi, node, epoch, req, payload, leaders):
        seen.setdefault("inflight", len(ps.conns[node].inflight))
        answer(pi, node, epoch, req, payload, leaders)
        seen.setdefault("answer", sim.kernel.now)

    network.sent, network.handle_metadata_response = sent_then_refresh, answered
    sim.run()
    return seen["at"], seen["answer"], seen["inflight"]


def test_a_metadata_request_behind_a_produce_request_in_purgatory_is_answered_after_it():
    """Kafka's producer sends its metadata request on the least loaded broker's connection (NetworkClient.
    leastLoadedNode, DefaultMetadataUpdater.maybeUpdate), and the broker reads one request per connection at a time
    (SocketServer's Processor mutes the channel until the response is sent). With acks=all the produce request
    ahead of it waits in purgatory for the follower: its trip (L), the follower's parked fetch returning with the
    records (L), the follower's next fetch moving the high watermark (L), its answer (L); the metadata request is
    handled after that answer left, so its answer comes 4 L after it was sent instead of one round trip (2 L),
    which is what acks=1 (no purgatory) gives."""
    at, answer, inflight = queued_refresh("all")
    assert 4 * LATENCY <= answer - at < 4 * LATENCY + 1.0  # + the handlers' costs, microseconds each
    assert inflight == 1  # the produce request ahead of it was answered first (the connection keeps its order)
    at, answer, _ = queued_refresh(1)
    assert 2 * LATENCY <= answer - at < 2 * LATENCY + 1.0
