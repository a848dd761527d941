"""kafkamodel/sim/broker/replica_manager.py: the replicas' start, and the followers' append instants.

At t=0 every preferred replica leads with a full ISR and the others start fetching (``ReplicaManager.start``). A
follower's append instants (``Log.append_at``: when each row reached its broker's page cache) are read only by a
read of its log (a consumer's, fetching from a follower), by its recovery or a power loss (faults), or once it leads
(only a fault or an operation moves a leader after t=0), and by retention (its segments' times). So a run without
consumer groups, faults, operations or retention within its duration keeps none for its followers
(``follower_append_times_read``, ``Log.untimed``): the same run keeping them gives the same summary, key by key.
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
# zones, and eight bursty producers whose followers leave and rejoin the ISR (the lag rules), shortened; and the
# last on brokers with a 10 MiB page cache (a follower's fetch then asks when what it reads was appended)
SMALL_CACHE = "lag-count-rule-bursts, 10 MiB page cache"
UNTIMED = ("steady-state", "three-zones", "lag-time-rule-bursts", "lag-count-rule-bursts", SMALL_CACHE)


def _run(name: str, keep_times: bool, monkeypatch) -> tuple[Simulation, dict]:
    scenario = yaml.safe_load((SCENARIOS / f"{name.split(',')[0]}.yaml").read_text())
    scenario["duration.ms"] = 10000 if name.startswith("lag-count-rule-bursts") else 6000
    if name == SMALL_CACHE:
        scenario["hardware"] = {"broker": {"memory.gib": 4.01, "jvm.heap.gib": 4.0}}
    if keep_times:
        monkeypatch.setattr(replica_manager, "follower_append_times_read", lambda settings, retention_on: True)
    sim = Simulation(load_scenario(scenario))
    return sim, sim.run().summary


@pytest.mark.parametrize("name", UNTIMED)
def test_followers_without_append_times_give_the_same_summary(name, monkeypatch):
    sim, untimed = _run(name, False, monkeypatch)
    logs = [(rep.is_leader, rep.log) for reps in sim.replicas for rep in reps.values()]
    for part in sim.partitions:  # a leader keeps the instants of its rows from below its slowest follower's on
        lead = sim.replicas[part.index][part.leader]
        slowest = min(fs.log_end_offset for fs in lead.lead.followers.values())
        assert lead.log.timed and lead.log.forgotten <= lead.log.entry_index(slowest)
        assert len(lead.log.append_at) == lead.log.rows - lead.log.forgotten
    if name.startswith("lag-"):
        assert any(log.forgotten for leads, log in logs if leads)
    if name == SMALL_CACHE:
        assert all(cache.written > cache.capacity for cache in sim.caches)
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


def test_follower_append_times_are_kept_with_a_consumer_group_a_fault_an_operation_or_retention():
    none = dict(consumers=(), faults=(), operations=())
    read = replica_manager.follower_append_times_read
    assert not read(SimpleNamespace(**none), False) and read(SimpleNamespace(**none), True)
    for name in none:
        assert read(SimpleNamespace(**{**none, name: (object(),)}), False)


def test_a_run_whose_retention_acts_keeps_its_followers_append_times():
    scenario = yaml.safe_load((SCENARIOS / "steady-state.yaml").read_text())
    scenario["duration.ms"] = 3000
    scenario["broker"] = {**scenario.get("broker", {}), "log.segment.bytes": 1 << 16, "log.retention.bytes": 1 << 18,
                          "log.retention.check.interval.ms": 500}
    sim = Simulation(load_scenario(scenario))
    sim.run()
    assert sim.retention_on and all(rep.log.timed for reps in sim.replicas for rep in reps.values())
    assert any(rep.log.log_start_offset > 0 for reps in sim.replicas for rep in reps.values() if not rep.is_leader)


def test_electing_a_follower_that_kept_no_append_times_fails_loudly(monkeypatch):
    sim, _ = _run("steady-state", False, monkeypatch)
    part = sim.partitions[0]
    rep = next(r for b, r in sim.replicas[part.index].items() if b != part.leader)
    with pytest.raises(RuntimeError, match="keeps no append times"):
        sim.leader.become_leader(rep, part.leader_epoch + 1, tuple(part.isr))
