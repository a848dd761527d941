"""kafkamodel/sim/rules/modes.py: the ISR mode's HW rule and the test that lets a follower's fetch skip it.

Kafka's Partition.maybeIncrementLeaderHW sets the HW to the smallest log end offset of the ISR (the leader's own
included). ``IsrMode.may_move_high_watermark`` says a fetch of an ISR follower whose LEO was above the HW cannot move
it (that follower was not the smallest), so the rule is not asked. Checked here on runs with ISR shrinks and
expansions, elections and a HW held below min.insync.replicas (3.7+) or not (3.6): whenever it says no, the ISR's
smallest LEO, computed here from the leader's state, is at or below the HW; and the runs are the same with the rule
asked at every fetch.
"""

from __future__ import annotations

import pandas as pd
import pytest

from kafkamodel import simulate
from kafkamodel.sim.rules.modes import IsrMode

FAULTS = [
    [{"at.ms": 1500, "kind": "crash", "broker": 2, "duration.ms": 2500}],  # shrink, then expand when it is back
    [{"at.ms": 1500, "kind": "crash", "broker": 1, "duration.ms": 3000},  # the ISR below min.insync.replicas
     {"at.ms": 1700, "kind": "crash", "broker": 2, "duration.ms": 1500}],
    [{"at.ms": 1500, "kind": "isolate", "broker": 0, "duration.ms": 3000}],  # a new leader
]


def run(faults, version):
    return simulate({"name": "modes", "seed": 5, "duration.ms": 7000, "brokers": 3, "kafka.version": version,
                     "broker": {"min.insync.replicas": 2, "replica.lag.time.max.ms": 1000,
                                "broker.session.timeout.ms": 2000}, "kafka.metadata": "kraft",
                     "network": {"latency.ms": 1.0},
                     "topics": [{"name": "t", "partitions": 4, "replication.factor": 3}],
                     # three producers: one's appends do not wait for another's HW (a connection's next request does)
                     "producers": [{"topic": "t", "acks": "all", "rate.per.s": 7000}] * 3,
                     # broker 2's fetches take three times longer: the other follower fetches again before it
                     "faults": [{"at.ms": 0, "kind": "slow", "broker": 2, "factor": 3.0, "duration.ms": 7000}] + faults})


def smallest_isr_leo(rep) -> int:
    """Kafka's HW candidate: the smallest LEO over the ISR, the leader's own included (-1: a member not heard from)."""
    lead = rep.lead
    leos = [rep.log.log_end_offset]
    for f in lead.isr:
        if f != rep.broker:
            fs = lead.followers.get(f)
            leos.append(fs.log_end_offset if fs is not None else -1)
    return min(leos)


@pytest.mark.parametrize("version", ["3.6", "4.1"])
@pytest.mark.parametrize("faults", FAULTS, ids=["follower-crash", "below-min-isr", "new-leader"])
def test_a_fetch_the_rule_skips_cannot_move_the_hw(monkeypatch, faults, version):
    answers = {True: 0, False: 0}
    skip = IsrMode.may_move_high_watermark

    def checked(self, rep, prev):
        may = skip(self, rep, prev)
        answers[may] += 1
        if not may:
            assert smallest_isr_leo(rep) <= rep.high_watermark, (rep.partition, prev, rep.high_watermark)
        return may

    monkeypatch.setattr(IsrMode, "may_move_high_watermark", checked)
    checked_run = run(faults, version)
    assert answers[True] > 0 and answers[False] > 0  # both answers were given (and each "no" checked)
    monkeypatch.setattr(IsrMode, "may_move_high_watermark", lambda self, rep, prev: True)
    asked_every_fetch = run(faults, version)
    pd.testing.assert_frame_equal(checked_run.records, asked_every_fetch.records)
    pd.testing.assert_frame_equal(checked_run.events, asked_every_fetch.events)
