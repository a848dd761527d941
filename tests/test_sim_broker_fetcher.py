"""broker.fetcher: a follower's fetcher threads, partitions spread over them as Kafka's
AbstractFetcherManager.getFetcherId does (Java's String.hashCode, recomputed in tests/helpers.py)."""

from __future__ import annotations

from helpers import fetcher_of, java_hash


def test_fetcher_ids_follow_kafka():
    from kafkamodel.sim.broker.fetcher import fetcher_id, java_string_hash

    assert java_hash("hello") == 99162322 and java_hash("Aa") == java_hash("BB") == 2112  # Java's documented values
    for topic in ("t", "orders", "a-much-longer-topic-name-with-unicode-é"):
        assert java_string_hash(topic) == java_hash(topic)
        assert [fetcher_id(topic, p, 4) for p in range(50)] == [fetcher_of(topic, p, 4) for p in range(50)]
