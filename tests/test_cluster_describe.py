"""kafka-topics --describe: read in the forms Kafka's releases print (TopicCommand), written back from a scenario."""

from __future__ import annotations

import pytest

from kafkamodel import load_scenario
from kafkamodel.cluster.describe import export, parse, topic_id
from kafkamodel.cluster.errors import InputError

# as TopicCommand prints them: the header and the partition lines, tab-separated
KAFKA_3_7 = ("Topic: orders\tTopicId: 9QS-sCTDTvKeJ2wkHhuHqA\tPartitionCount: 2\tReplicationFactor: 3\t"
             "Configs: min.insync.replicas=2,cleanup.policy=delete\n"
             "\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1,2,0\tIsr: 1,2,0\tElr: N/A\tLastKnownElr: N/A\n"
             "\tTopic: orders\tPartition: 1\tLeader: none\tReplicas: 2,0,1\tIsr: \tElr: 0\tLastKnownElr: \n")
KAFKA_1_1 = ("Topic:orders\tPartitionCount:2\tReplicationFactor:2\tConfigs:\n"
             "\tTopic: orders\tPartition: 0\tLeader: -1\tReplicas: 0,1\tIsr: 0\n"
             "\tTopic: orders\tPartition: 1\tLeader: 1\tReplicas: 1,0\tIsr: 1,0\n")
REASSIGNING = ("Topic: t\tPartitionCount: 1\tReplicationFactor: 2\tConfigs: \n"
               "\tTopic: t\tPartition: 0\tLeader: 0\tReplicas: 0,1,2\tIsr: 0,1,2\tAdding Replicas: 2\t"
               "Removing Replicas: 1\n")


def test_the_forms_of_each_release_are_read():
    (t,) = parse(KAFKA_3_7, "d.txt")
    assert (t.name, t.topic_id, t.partition_count, t.replication_factor) == ("orders", "9QS-sCTDTvKeJ2wkHhuHqA", 2, 3)
    assert t.configs == {"min.insync.replicas": ("2", 1), "cleanup.policy": ("delete", 1)}
    assert [(p.leader, p.replicas, p.isr, p.elr) for p in t.partitions] == [
        (1, (1, 2, 0), (1, 2, 0), ()), (None, (2, 0, 1), (), (0,))]
    (old,) = parse(KAFKA_1_1, "d.txt")
    assert (old.partition_count, old.replication_factor, old.topic_id) == (2, 2, None)
    assert old.partitions[0].leader is None and old.partitions[0].isr == (0,)
    (moving,) = parse(REASSIGNING, "d.txt")
    assert (moving.partitions[0].adding, moving.partitions[0].removing) == ((2,), (1,))


@pytest.mark.parametrize("text, line, expected", [
    ("Topic: t\tPartitionCount: 2\tReplicationFactor: 1\tConfigs: \n\tTopic: t\tPartition: 0\tLeader: 0\t"
     "Replicas: 0\tIsr: 0\n", 1, "expected partitions 0..1 of topic 't' (PartitionCount: 2), found 1 partition "
     "lines (missing 1)"),
    ("\tTopic: t\tPartition: 0\tLeader: 0\tReplicas: 0\tIsr: 0\n", 1, "expected the header line of topic 't'"),
    ("Topic: t\tPartitionCount: 1\tReplicationFactor: 2\tConfigs: \n\tTopic: t\tPartition: 0\tLeader: 0\t"
     "Replicas: 0\tIsr: 0\n", 2, "expected 2 replicas (ReplicationFactor), got 0"),
    ("Topic: t\tPartitionCount: x\tReplicationFactor: 1\tConfigs: \n", 1, "expected PartitionCount: an integer"),
    ("Topic: t\tPartitionCount: 1\tReplicationFactor: 1\tConfigs: \n\tTopic: t\tPartition: 0\tLeader: 0\t"
     "Replicas: 0;1\tIsr: 0\n", 2, "expected Replicas: broker ids separated by commas"),
    ("Error while executing topic command : Timed out waiting for a node assignment.\n", 1,
     "expected a kafka-topics --describe line"),
])
def test_what_it_cannot_read_names_the_line_and_what_was_expected(text, line, expected):
    with pytest.raises(InputError) as info:
        parse(text, "d.txt")
    assert str(info.value).startswith(f"d.txt:{line}: {expected}")


def test_export_prints_each_release_s_form_and_reads_back():
    base = {"brokers": 3, "topics": [{"name": "a", "partitions": 3, "replication.factor": 2,
                                      "min.insync.replicas": 2}]}
    new = export(load_scenario({**base, "kafka.version": "4.1"}))
    assert new.splitlines()[0] == (f"Topic: a\tTopicId: {topic_id('a')}\tPartitionCount: 3\tReplicationFactor: 2\t"
                                   "Configs: min.insync.replicas=2")
    assert new.splitlines()[1] == "\tTopic: a\tPartition: 0\tLeader: 0\tReplicas: 0,1\tIsr: 0,1\tElr: \tLastKnownElr: "
    old = export(load_scenario({**base, "kafka.version": "1.1"}))
    assert old.splitlines()[0] == "Topic:a\tPartitionCount:3\tReplicationFactor:2\tConfigs:min.insync.replicas=2"
    for text in (new, old):
        (t,) = parse(text, "x")
        assert [p.replicas for p in t.partitions] == [(0, 1), (1, 2), (2, 0)]
    assert len(topic_id("a")) == 22  # a Uuid as Kafka prints it: 16 bytes, URL-safe base64 without padding
