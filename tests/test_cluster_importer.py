"""cluster import: the scenario of a cluster from its files, each value's origin beside it; what it cannot read
named by file and line; what it reads but does not model, listed."""

from __future__ import annotations

import pytest

from kafkamodel import load_scenario
from kafkamodel.cluster.errors import InputError
from kafkamodel.cluster.importer import build

# a cluster whose brokers are numbered 1..3 (as many are), partition 1's leader moved, one ISR shrunk
DESCRIBE = ("Topic: payments\tTopicId: AAAAAAAAAAAAAAAAAAAAAA\tPartitionCount: 3\tReplicationFactor: 3\t"
            "Configs: min.insync.replicas=2,cleanup.policy=delete\n"
            "\tTopic: payments\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2,3\n"
            "\tTopic: payments\tPartition: 1\tLeader: 3\tReplicas: 2,3,1\tIsr: 3,1\n"
            "\tTopic: payments\tPartition: 2\tLeader: 3\tReplicas: 3,1,2\tIsr: 3,1,2\n"
            "Topic: __consumer_offsets\tPartitionCount: 1\tReplicationFactor: 3\tConfigs: cleanup.policy=compact\n"
            "\tTopic: __consumer_offsets\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2,3\n")


def props(broker: int, rack: str, extra: str = "") -> tuple[str, str]:
    return (f"broker.id={broker}\nbroker.rack={rack}\ninter.broker.protocol.version=3.5-IV2\nzookeeper.connect=zk:2181\n"
            f"log.dirs=/var/kafka\nnum.io.threads=16\nlog.retention.hours=72\n{extra}", f"server-{broker}.properties")


TRAFFIC = ("topic,mb.per.s,record.size.bytes,consumer.groups,linger.ms\npayments,3,1000,2,20\n", "traffic.csv")


def test_values_carry_their_origin_and_the_unmodelled_are_listed():
    imp = build((DESCRIBE, "describe.txt"), [props(1, "az1"), props(2, "az2"), props(3, "az3")], traffic=TRAFFIC,
                hardware="i3en.xlarge", name="payments")
    s = load_scenario(imp.yaml()).to_dict()
    assert (s["brokers"], s["racks"], s["kafka.version"], s["kafka.metadata"]) == (3, ["az1", "az2", "az3"], "3.5",
                                                                                   "zookeeper")
    assert s["broker"]["num.io.threads"] == 16 and s["broker"]["log.retention.ms"] == 72 * 3_600_000
    (t,) = s["topics"]  # __consumer_offsets left out
    assert (t["name"], t["min.insync.replicas"]) == ("payments", 2)
    # ids 1,2,3 are the model's 0,1,2: [[0,1,2],[1,2,0],[2,0,1]] is Kafka's placement there, so none is written
    assert t["replicas"] is None
    (p,) = s["producers"]
    assert p["rate.per.s"] == 3e6 / 1000 and p["linger.ms"] == 20
    assert [c["group"] for c in s["consumers"]] == ["payments-group-0", "payments-group-1"]
    text = imp.yaml()
    assert "min.insync.replicas: 2  # describe.txt:1 Configs" in text
    assert "num.io.threads: 16  # server-1.properties:6" in text
    assert "log.retention.ms: 259200000  # server-1.properties:7 log.retention.hours" in text
    assert "profile: i3en.xlarge  # --hardware" in text
    listed = "\n".join(imp.unmodelled)
    for expected in ("broker ids 1,2,3 are the model's brokers 0..2",
                     "describe.txt:1: payments cleanup.policy=delete: not modelled",
                     "internal topic __consumer_offsets",
                     "1 partition(s) of payments led by another replica than the preferred leader (lines 3)",
                     "1 partition(s) of payments with an ISR smaller than its replicas (lines 3)",
                     "server-1.properties, server-2.properties, server-3.properties: 1 settings not modelled: log.dirs"):
        assert expected in listed


def test_brokers_that_disagree_keep_the_first_and_say_so():
    imp = build((DESCRIBE, "describe.txt"), [props(1, "a"), props(2, "b", "min.insync.replicas=2\n"),
                                             props(3, "c", "min.insync.replicas=1\n")])
    assert imp.given["broker"]["min.insync.replicas"] == 2
    assert any(u.startswith("server-3.properties:8: min.insync.replicas=1 differs from server-2.properties:8")
               for u in imp.unmodelled)


@pytest.mark.parametrize("describe, files, expected", [
    (DESCRIBE, [props(1, "a"), props(2, "b"), ("broker.id=2\n", "server-x.properties")],
     "server-x.properties:1: broker.id: expected one file per broker; 2 is also server-2.properties's"),
    (DESCRIBE, [props(1, "a", "num.io.threads=0\n")[0].replace("num.io.threads=16\n", ""), "s1"],
     "s1:7: expected num.io.threads: must be >= 1, got 0"),
    (DESCRIBE, [props(1, "a", "replica.lag.time.max.ms=soon\n")],
     "server-1.properties:8: expected replica.lag.time.max.ms: must be a finite number, got 'soon'"),
    (DESCRIBE, [(props(1, "a")[0].replace("3.5-IV2", "7.0"), "s.properties")],
     "s.properties:3: inter.broker.protocol.version: expected a Kafka release the model has"),
    # a value each check passes alone but the model refuses beside the others: reported where it was written
    (DESCRIBE.replace("min.insync.replicas=2", "min.insync.replicas=4"), [],
     "describe.txt:1: the model refuses the value: topics[0].min.insync.replicas: 4 exceeds"),
])
def test_what_it_cannot_read_names_the_file_and_line(describe, files, expected):
    if isinstance(files, list) and len(files) == 2 and isinstance(files[1], str):
        files = [tuple(files)]
    with pytest.raises(InputError) as info:
        build((describe, "describe.txt"), files)
    assert str(info.value).startswith(expected)


def test_traffic_for_a_topic_the_cluster_lacks_is_refused_at_its_row():
    with pytest.raises(InputError, match=r"^traffic.csv:2: topic: expected a topic of describe.txt \(payments\)"):
        build((DESCRIBE, "describe.txt"), traffic=("topic,mb.per.s,record.size.bytes,consumer.groups\nother,1,1,0\n",
                                                   "traffic.csv"))
