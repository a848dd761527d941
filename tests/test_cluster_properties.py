"""server.properties and kafka-configs --describe, as Kafka writes and prints them (ConfigCommand)."""

from __future__ import annotations

import pytest

from kafkamodel.cluster.errors import InputError
from kafkamodel.cluster.properties import read_configs, read_properties


def test_java_properties_comments_separators_and_continuations():
    p = read_properties("# Licensed to the ASF\n! old comment\nbroker.id=2\nlog.dirs = /a,\\\n   /b\n"
                        "num.io.threads: 16\nbroker.rack us-east-1a\n", "s.properties")
    assert p.values == {"broker.id": ("2", 3), "log.dirs": ("/a,/b", 4), "num.io.threads": ("16", 6),
                        "broker.rack": ("us-east-1a", 7)}


def test_a_key_set_twice_is_refused_at_its_second_line():
    with pytest.raises(InputError, match=r"^s:3: expected each key once; a was set at line 1$"):
        read_properties("a=1\nb=2\na=3\n", "s")


CONFIGS = """Dynamic configs for topic orders are:
  min.insync.replicas=2 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:min.insync.replicas=2, STATIC_BROKER_CONFIG:min.insync.replicas=1, DEFAULT_CONFIG:min.insync.replicas=1}
  retention.ms=86400000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=86400000}
Default configs for brokers in the cluster are:
  num.replica.fetchers=4 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:num.replica.fetchers=4, DEFAULT_CONFIG:num.replica.fetchers=1}
All configs for broker 1 are:
  num.io.threads=8 sensitive=false synonyms={DEFAULT_CONFIG:num.io.threads=8}
  replica.lag.time.max.ms=10000 sensitive=false synonyms={STATIC_BROKER_CONFIG:replica.lag.time.max.ms=10000, DEFAULT_CONFIG:replica.lag.time.max.ms=30000}
Configs for topic 'clicks' are retention.ms=3600000,cleanup.policy=compact
"""


def test_kafka_configs_describe_gives_each_entity_s_overrides_not_kafka_s_defaults():
    c = read_configs(CONFIGS, "c.txt")
    assert c.topics == {"orders": {"min.insync.replicas": ("2", 2), "retention.ms": ("86400000", 3)},
                        "clicks": {"retention.ms": ("3600000", 9), "cleanup.policy": ("compact", 9)}}
    assert c.brokers == {"": {"num.replica.fetchers": ("4", 5)}, "1": {"replica.lag.time.max.ms": ("10000", 8)}}


def test_an_entry_outside_a_block_is_refused():
    with pytest.raises(InputError, match=r"^c:1: expected kafka-configs --describe output"):
        read_configs("  a=1 sensitive=false synonyms={}\n", "c")
