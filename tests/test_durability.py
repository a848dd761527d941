"""Issue 25: durability in nines -- the disk_loss fault, the failure-rate spec, the Markov cross-check, the estimator."""

from __future__ import annotations

import pytest

from kafkamodel import load_scenario, simulate
from kafkamodel.paths import scenario_path

BASE = {"duration.ms": 16000, "producers[0].rate.per.s": 2000}


def _steady(**faults):
    return load_scenario(scenario_path("steady-state")).with_overrides({**BASE, **faults})


def test_disk_loss_follower_comes_back_empty_and_catches_up():
    """A follower whose machine is replaced returns with no log, fetches everything from its leader and
    rejoins the ISR; nothing acknowledged is lost (the leader and the other follower hold it)."""
    r = simulate(_steady(faults=[{"at.ms": 3000, "kind": "disk_loss", "broker": 1, "duration.ms": 3000}]))
    ev = r.events
    lost = ev[ev.kind == "fault_disk_loss"].detail.iloc[0]
    on_broker_1 = int(lost.split()[0])
    assert on_broker_1 > 0  # every offset it held went
    assert r.summary["acked_records_lost"] == 0
    assert all(sorted(p.isr.split(",")) == sorted(p.replicas.split(",")) for p in r.partitions.itertuples())
    back = ev[(ev.kind == "isr_expand") & ev.detail.str.startswith("added 1")]
    assert len(back) == 6  # every partition took broker 1 back once caught up


def test_disk_loss_of_every_replica_loses_everything_acknowledged_before():
    """All three machines replaced: what was acknowledged before is on no disk any more (Kafka keeps no other
    copy); what is acknowledged after they return is kept."""
    r = simulate(_steady(faults=[{"at.ms": 3000, "kind": "disk_loss", "broker": [0, 1, 2], "duration.ms": 3000}]))
    rec = r.records
    before = int((rec.acked & (rec.ack_ms < 3000)).sum())
    assert before > 0
    assert r.summary["acked_records_lost"] == before
