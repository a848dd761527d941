"""The traffic table: topic, mb.per.s, record.size.bytes, consumer.groups, and Kafka's producer properties."""

from __future__ import annotations

import pytest

from kafkamodel.cluster.errors import InputError
from kafkamodel.cluster.traffic import read_traffic


def test_rows_give_each_producer_instance_its_share_of_the_records():
    (row,) = read_traffic("topic,mb.per.s,record.size.bytes,consumer.groups,acks,linger.ms,producers,keys\n"
                          "orders,12.5,1000,3,1,10,5,1000\n", "t.csv")
    assert row.rate_per_s == 12.5e6 / 1000 / 5  # 12.5 MB/s of 1000-byte records over five instances
    assert row.producer == {"acks": 1, "linger.ms": 10}
    assert (row.consumer_groups, row.keys, row.producers, row.line) == (3, 1000, 5, 2)


@pytest.mark.parametrize("text, expected", [
    ("topic,mb.per.s\n", "t.csv:1: expected the columns topic,mb.per.s,record.size.bytes,consumer.groups"),
    ("topic,mb.per.s,record.size.bytes,consumer.groups,lingr.ms\n", "t.csv:1: expected only the columns"),
    ("topic,mb.per.s,record.size.bytes,consumer.groups\na,-1,100,1\n", "t.csv:2: mb.per.s: expected MB/s"),
    ("topic,mb.per.s,record.size.bytes,consumer.groups\na,1,100\n", "t.csv:2: expected 4 cells"),
    ("topic,mb.per.s,record.size.bytes,consumer.groups,acks\na,1,100,1,2\n",
     "t.csv:2: expected acks: must be 0, 1, all or -1, got 2"),
    ("topic,mb.per.s,record.size.bytes,consumer.groups\n", "t.csv: expected at least one row"),
])
def test_what_it_cannot_read_names_the_line(text, expected):
    with pytest.raises(InputError) as info:
        read_traffic(text, "t.csv")
    assert str(info.value).startswith(expected)
