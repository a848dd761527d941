"""clients.fetcher (and clients.metadata, the metadata refresh it shares with the producer): a consumer finding a
moved leader, before 3.7 by a metadata refresh, from 3.7 by KIP-951's CurrentLeader in the fetch answer."""

from __future__ import annotations

import numpy as np

from kafkamodel import load_scenario
from kafkamodel.sim.simulation import Simulation


# ---- the consumer finding a moved leader (issue 35): its metadata refresh before 3.7, KIP-951's hint from 3.7 ------

CONSUMER_BACKOFF = 3000.0  # the consumer's retry.backoff.ms: long, so a refresh it may not send yet shows
SHUTDOWN, ELECTION = 2000.0, 3500.0


def consumer_after_moves(version: str):
    """Broker 0 shut down (controlled: its leaders move and the consumer refreshes its metadata) and back; at
    3.5 s, less than the consumer's retry.backoff.ms later, kafka-leader-election hands the leaders back. The
    producer backs off 1 ms, so it finds the new leaders at once on both versions and the consumer's side shows."""
    sim = Simulation(load_scenario({
        "name": "consumer-moved", "brokers": 3, "duration.ms": 8000, "kafka.version": version,
        "kafka.metadata": "kraft", "broker": {"min.insync.replicas": 2}, "network": {"latency.ms": 1},
        "topics": [{"name": "t", "partitions": 6, "replication.factor": 3}],
        "producers": [{"topic": "t", "rate.per.s": 5000, "acks": "all", "enable.idempotence": False,
                       "retry.backoff.ms": 1}],
        "consumers": [{"group": "g", "topic": "t", "retry.backoff.ms": CONSUMER_BACKOFF}],
        "operations": [{"at.ms": SHUTDOWN, "kind": "controlled_shutdown", "broker": 0},
                       {"at.ms": 2200, "kind": "restart", "broker": 0},
                       {"at.ms": ELECTION, "kind": "preferred_leader_election", "topic": "t"}]}))
    r = sim.run()
    rec = r.records
    sent = (rec["send_ms"] >= ELECTION) & (rec["send_ms"] < ELECTION + 2000)
    e2e = sim.groups[0].first_processed_ms[sent.to_numpy()] - rec["send_ms"][sent].to_numpy()
    assert not np.isnan(e2e).any()  # every record sent then was consumed
    return r.summary, float(e2e.max())


def test_a_consumer_before_3_7_waits_for_its_metadata_refresh_and_3_7_fetches_where_the_answer_points():
    """Before 3.7 the FENCED_LEADER_EPOCH answer (the old leader, now a follower, serves consumers: KIP-392)
    names no leader: the consumer asks for metadata, which it may send only retry.backoff.ms after its last
    refresh (Metadata.timeToAllowUpdate: the one after the shutdown), so records sent after the election wait
    until then. From 3.7 (KIP-951) the answer's CurrentLeader sends the next fetch to the new leader at once."""
    (old, slow), (new, fast) = consumer_after_moves("3.6"), consumer_after_moves("3.7")
    assert old["consumer_leader_hints"] == 0 and new["consumer_leader_hints"] > 0
    assert old["consumer_metadata_refreshes"] > 0 and new["consumer_metadata_refreshes"] > 0  # 3.7 still refreshes
    held = SHUTDOWN + CONSUMER_BACKOFF - ELECTION  # the refresh came no earlier than the shutdown: held this long
    round_trips = 4 * 2 * 1.0  # a few 1 ms round trips (the fenced fetch, the metadata request, the next fetch)
    assert fast < CONSUMER_BACKOFF / 100  # no wait for a refresh: the steady tail
    assert held <= slow - fast <= CONSUMER_BACKOFF + round_trips  # at most the backoff since the last refresh
    assert old["acked_records_lost"] == new["acked_records_lost"] == 0
