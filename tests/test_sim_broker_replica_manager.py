"""kafkamodel/sim/broker/replica_manager.py: the replicas' start, and the followers' append instants.

At t=0 every preferred replica leads with a full ISR and the others start fetching (``ReplicaManager.start``). A
follower's append instants (``Log.append_at``: when each row reached its broker's page cache) are read only by a
read of its log (a consumer's, fetching from a follower), by its recovery or a power loss (faults), or once it leads
(only a fault or an operation moves a leader after t=0). So a run without consumer groups, faults or operations keeps
none for its followers (``follower_append_times_read``, ``Log.untimed``): the same run keeping them gives the same
summary, key by key.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import yaml

from kafkamodel.config.scenario import load_scenario
from kafkamodel.sim.broker import replica_manager
from kafkamodel.sim.simulation import Simulation
from shipped import SCENARIOS

# the shipped scenarios without consumer groups, faults or operations: one producer on 3 and on 6 brokers in three
# zones, and eight bursty producers whose followers leave and rejoin the ISR (the lag rules), shortened
UNTIMED = ("steady-state", "three-zones", "lag-time-rule-bursts", "lag-count-rule-bursts")


def _run(name: str, keep_times: bool, monkeypatch) -> tuple[Simulation, dict]:
    scenario = yaml.safe_load((SCENARIOS / f"{name}.yaml").read_text())
    scenario["duration.ms"] = 10000 if name == "lag-count-rule-bursts" else 6000
    if keep_times:
        monkeypatch.setattr(replica_manager, "follower_append_times_read", lambda settings: True)
    sim = Simulation(load_scenario(scenario))
    return sim, sim.run().summary


@pytest.mark.parametrize("name", UNTIMED)
def test_followers_without_append_times_give_the_same_summary(name, monkeypatch):
    sim, untimed = _run(name, False, monkeypatch)
    logs = [(rep.is_leader, rep.log) for reps in sim.replicas for rep in reps.values()]
    assert all(log.timed and len(log.append_at) == log.rows for leads, log in logs if leads)
    followers = [log for leads, log in logs if not leads]
    assert followers and all(not log.timed and len(log.append_at) == 0 for log in followers)
    assert sum(log.rows for log in followers) > 0
    timed_sim, timed = _run(name, True, monkeypatch)
    assert all(rep.log.timed for reps in timed_sim.replicas for rep in reps.values())
    assert list(untimed) == list(timed)
    for k in untimed:
        assert untimed[k] == timed[k] or (untimed[k] != untimed[k] and timed[k] != timed[k]), k  # (NaN: NaN)
    if name == "lag-count-rule-bursts":  # (followers left the ISR and fetched their way back in: no time read)
        assert timed["isr_shrinks"] > 0 and timed["isr_expands"] > 0


def test_follower_append_times_are_kept_with_a_consumer_group_a_fault_or_an_operation():
    none = dict(consumers=(), faults=(), operations=())
    assert not replica_manager.follower_append_times_read(SimpleNamespace(**none))
    for name in none:
        assert replica_manager.follower_append_times_read(SimpleNamespace(**{**none, name: (object(),)}))


def test_electing_a_follower_that_kept_no_append_times_fails_loudly(monkeypatch):
    sim, _ = _run("steady-state", False, monkeypatch)
    part = sim.partitions[0]
    rep = next(r for b, r in sim.replicas[part.index].items() if b != part.leader)
    with pytest.raises(RuntimeError, match="keeps no append times"):
        sim.leader.become_leader(rep, part.leader_epoch + 1, tuple(part.isr))
