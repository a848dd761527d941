"""sim/broker/sessions.py: the leader's side of follower fetches. A fetch is answered at once or parks until it finds
replica.fetch.min.bytes (``_has_bytes`` counts them); ``wake`` skips the count where its answer is known, and these
tests run whole scenarios checking every decision against the count."""

from __future__ import annotations

import pytest

from kafkamodel import load_scenario, simulate
from kafkamodel.paths import scenario_path
from kafkamodel.sim.broker.sessions import SessionManager
from shipped import ZERO_COSTS


def _move(throttle: float) -> dict:
    """4 brokers, partition 0 moved to a new replica under a replication throttle while the producer writes."""
    return {"name": "move", "brokers": 4, "duration.ms": 9000, "kafka.version": "4.1",
            "topics": [{"name": "t", "partitions": 4, "replication.factor": 3}],
            "producers": [{"topic": "t", "rate.per.s": 5000, "acks": "all", "stop.ms": 6000}],
            "operations": [{"at.ms": 2000, "kind": "reassign", "topic": "t", "partitions": [0],
                            "replicas": [[3, 1, 2]], "throttle": throttle}]}


CASES = {
    # no service times: an answer to a produce request lets the connection's next one be handled at once, inside the
    # fetch whose HW advance completed the first (its appends reach the partitions the fetch is reading)
    "zero-costs": lambda: load_scenario({
        "name": "one-partition", "seed": 3, "duration.ms": 4000, "brokers": 3, "costs": ZERO_COSTS,
        "network": {"latency.ms": 10.0}, "hardware": {"broker": {"nic.gbps": None}},
        "topics": [{"name": "t", "partitions": 1, "replication.factor": 3}],
        "producers": [{"topic": "t", "rate.per.s": 16000, "acks": "all"}]}),
    "steady-state": lambda: load_scenario(scenario_path("steady-state")).with_overrides({"duration.ms": 4000}),
    "min-bytes": lambda: load_scenario(scenario_path("steady-state")).with_overrides(
        {"duration.ms": 4000, "broker.replica.fetch.min.bytes": 3000}),
    # each append fsynced (a produce request's parked fetches wake after it) while fetches wait 2 ms at most: a fetch
    # answered by its wait's end meanwhile parks again before the wake, with nothing new to give
    "fsync": lambda: load_scenario(scenario_path("steady-state")).with_overrides(
        {"duration.ms": 4000, "producers[0].rate.per.s": 20000, "broker.log.flush.interval.messages": 1,
         "disk.fsync.ms": {"dist": "exponential", "mean": 3}, "broker.replica.fetch.wait.max.ms": 2}),
    "crash": lambda: load_scenario(scenario_path("acks1-leader-crash")),
    "power-loss": lambda: load_scenario(scenario_path("kip101-double-power-loss-divergence")),
    "slow-follower": lambda: load_scenario(scenario_path("slow-follower-isr")),
    "kafka-2.4": lambda: load_scenario(scenario_path("steady-state")).with_overrides(
        {"duration.ms": 4000, "kafka.version": "2.4"}),
    "throttled": lambda: load_scenario(_move(300_000.0)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_fetch_parks_or_wakes_exactly_when_the_count_says(case, monkeypatch):
    """A fetch that parks has fewer than replica.fetch.min.bytes to give; the parked fetches an append wakes are
    answered exactly when the count finds enough (``wake`` skips it for a fetch still parked as it was at the append,
    which has a byte beyond its offset there)."""
    handle, wake = SessionManager.handle_fetch, SessionManager.wake
    seen = {"parked": 0, "answered": 0, "left": 0}

    def handle_fetch(self, key, req, entries, forgotten, full):
        handle(self, key, req, entries, forgotten, full)
        s = self.sessions[key]
        if s.parked == req:
            assert not (s.dirty and self._has_bytes(s))
            seen["parked"] += 1

    def checked_wake(self, woken):
        answer = self._answer

        def counted_answer(s, req, now):  # each answer, at its turn (an answer may spend a throttle's allowance)
            assert self._has_bytes(s)
            seen["answered"] += 1
            answer(s, req, now)

        self._answer = counted_answer
        try:
            wake(self, woken)
        finally:
            del self._answer
        for s in woken:  # the ones left parked have too few bytes (answering others cannot give them any)
            if s.parked and self.sessions.get(s.key) is s:
                assert not self._has_bytes(s)
                seen["left"] += 1

    monkeypatch.setattr(SessionManager, "handle_fetch", handle_fetch)
    monkeypatch.setattr(SessionManager, "wake", checked_wake)
    simulate(CASES[case]())
    assert seen["parked"] > 10
    if case != "kafka-2.4":  # (2.4-2.5 answer a fetch whose HW is stale at once: few park for records)
        assert seen["answered"] > 10
    if case in ("min-bytes", "fsync"):
        assert seen["left"] > 10  # parked fetches an append woke that lacked the bytes by the wake
