"""kafkamodel/sim/broker/follower.py: where a follower cuts its log when the leader changes, against KIP-101.

The leader of t-0 (broker 0) is cut off from the other brokers and the controller at 3.3 s and goes on taking
acks=1 writes; its session expires and broker 1 is elected; when the cut ends broker 0 follows broker 1.

* With leader epochs (0.11+, here 4.1: BecomeFollowerAndTruncateTo, then OffsetsForLeaderEpoch): broker 0 asks
  where its last epoch (0) ends in the new leader's log; the answer is where epoch 1 starts, the new leader's log
  end offset when it became leader (Partition.makeLeader), and broker 0 truncates exactly there: every record it
  took alone is gone, nothing before.
* Before (0.10): at the leader change every follower truncates to its own high watermark (the KIP-101 problem):
  broker 2, which held what the new leader held, cuts below it and fetches it again.

Where an epoch ends in a log, and the KIP-279 divergence cases, are the truncation rule's own tests (ported from
Kafka's, in ``test_kafka_cases.py``).
"""

from __future__ import annotations

import re

from kafkamodel import simulate

CUT = 3300.0


def run(version: str):
    return simulate({"name": "follower", "seed": 3, "duration.ms": 25000, "brokers": 3, "kafka.version": version,
                     "broker": {"min.insync.replicas": 1, "replica.lag.time.max.ms": 2000},
                     "network": {"latency.ms": 1.0},
                     "topics": [{"name": "t", "partitions": 1, "replication.factor": 3}],
                     "producers": [{"topic": "t", "acks": 1, "rate.per.s": 2000}],
                     "faults": [{"at.ms": CUT, "kind": "isolate", "broker": 0, "from": [1, 2, "controller"],
                                 "duration.ms": 12000}]})


def _new_leader(r):
    became = r.events[r.events.kind == "become_leader"].iloc[0]
    return became, int(re.search(r"LEO (\d+)", became.detail)[1])


def _truncations(r, broker):
    ev = r.events
    cuts = ev[(ev.kind == "truncation") & (ev.broker == broker)]
    found = [(t, re.search(r"removed (\d+) offsets, LEO now (\d+)", t.detail)) for t in cuts.itertuples()]
    return [(t.time_ms, t.detail, int(m[1]), int(m[2])) for t, m in found]


def test_the_old_leader_truncates_to_where_its_epoch_ends_in_the_new_leaders_log():
    r = run("4.1")
    became, start = _new_leader(r)
    assert became.broker == 1 and became.detail.startswith("epoch 1,")
    cuts = _truncations(r, 0)
    assert len(cuts) == 1
    at, detail, removed, leo = cuts[0]
    assert at > CUT + 12000 and detail.startswith("to end of leader epoch 0:") and leo == start
    # what it removed is what it took alone (the followers fetch every few ms): the acknowledged records lost
    rec = r.records
    lost = rec[rec.acked & (rec.offset < 0)]
    assert removed == r.summary["acked_records_lost"] == len(lost) > 0 and lost.send_ms.min() > CUT - 10
    # broker 2 cuts nothing below where the new leader's epoch starts (here it held a prefix of its log: nothing)
    assert all(d.startswith("to end of leader epoch 0:") and leo == start for _, d, _, leo in _truncations(r, 2))


def test_before_leader_epochs_every_follower_truncates_to_its_own_high_watermark():
    r = run("0.10")
    became, start = _new_leader(r)
    cuts = _truncations(r, 2)
    assert len(cuts) == 1
    at, detail, removed, leo = cuts[0]
    assert at == became.time_ms and detail.startswith("to local high watermark:") and 0 < leo < start
    old = _truncations(r, 0)
    assert len(old) == 1 and old[0][1].startswith("to local high watermark:") and old[0][3] <= start
