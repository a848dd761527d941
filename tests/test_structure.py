"""The model's declared structure holds: each actor's handler table (its MESSAGES and TIMERS) is the
set of actions that actually arrive as messages and timers, random streams are found by name, and the
summary and tables are the ones ``measures`` declares."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kafkamodel import load_scenario, simulate
from kafkamodel.config.settings import RACK_AWARE_SELECTOR
from kafkamodel.sim.engine.transport import Streams
from kafkamodel.sim.results.measures import EVENT_KINDS, SUMMARY_KEYS, TABLES
from kafkamodel.sim.simulation import Simulation, declared_handlers

SCENARIOS = Path(__file__).resolve().parents[1] / "data" / "scenarios"
# between them these reach every handler: consumers, epoch queries, isolation, power loss, timeouts, flushes
COVERING = ("delivery-exactly-once", "kip101-leader-epoch", "kip101-double-power-loss-leader-epoch",
            "jepsen-2013", "last-replica-standing-elr", "producer-timeout-idempotent", "producer-retry-idempotent",
            "min-isr-refusal", "clean-election", "quorum-paused-leader-resumes")
# ... and these the rest: a follower back after retention deleted what it needs (and a crashed leader's
# parked fetches), and a restarted old leader ahead of an uncleanly elected one (HW truncation, no new writes)
CRASH_0_THEN_1 = [{"at.ms": 1000, "kind": "crash", "broker": 1}, {"at.ms": 1000, "kind": "crash", "broker": 2},
                  {"at.ms": 8000, "kind": "crash", "broker": 0}, {"at.ms": 9000, "kind": "restart", "broker": 1},
                  {"at.ms": 15000, "kind": "restart", "broker": 0}]
COVERING_OVERRIDES = (
    # a consumer's metadata refresh after its leader crashed, with its own request.timeout.ms timer (a producer's
    # goes on its connection and fails with it: NetworkClient's timeout, not this timer)
    ("delivery-at-least-once", {"duration.ms": 8000, "consumers[*].request.timeout.ms": 1000,
                                "faults": [{"at.ms": 2000, "kind": "crash", "broker": 0}]}),
    # a consumer fetch given up (request.timeout.ms), at most once
    ("delivery-at-most-once", {"consumers[*].request.timeout.ms": 1000}),
    # ... and the preferred leader taking its partitions back
    ("steady-state", {"duration.ms": 8000, "broker.log.segment.bytes": 100000, "broker.log.retention.bytes": 200000,
                      "broker.log.retention.check.interval.ms": 500, "broker.leader.imbalance.check.interval.seconds": 1,
                      "faults": [{"at.ms": 1000, "kind": "crash", "broker": 1, "duration.ms": 3000}]}),
    ("unclean-election", {"producers[*].stop.ms": 7000, "kafka.version": "0.10", "broker.broker.session.timeout.ms": None,
                          "broker.zookeeper.session.timeout.ms": 6000, "faults": CRASH_0_THEN_1}),
    # one handler thread, slow: requests queue for it; every append fsynced (log.flush.interval.messages: 1)
    ("steady-state", {"duration.ms": 2000, "broker.num.io.threads": 1, "costs.request.us": 300}),
    ("steady-state", {"duration.ms": 1000, "broker.log.flush.interval.messages": 1}),
    # no records table: the producer's timer folds the settled batches into the latency histograms as the run goes
    ("steady-state", {"duration.ms": 1000, "results.records": "none"}),
    # buffer.memory of two batches and 20 ms one way at 20,000 records/s: send() blocks on the full pool (an
    # open-loop producer's application thread takes over) and fails after max.block.ms
    ("steady-state", {"duration.ms": 2000, "producers[*].buffer.memory": 32768, "producers[*].max.block.ms": 10,
                      "producers[*].rate.per.s": 20000, "network.latency.ms": 20}),
    # the consumer group protocol (KIP-848): a join makes a member revoke, acknowledge, and the newcomer reconcile
    ("delivery-at-least-once", {"duration.ms": 12000, "consumers[*].group.protocol": "consumer",
                                "faults": [{"at.ms": 5000, "kind": "consumer_join", "group": "billing"}]}),
    # a closed-loop acks=0 producer: its batches give their pool bytes back once the client's NIC has sent them
    ("steady-state", {"duration.ms": 200, "producers[*].acks": 0, "producers[*].rate.per.s": "max"}),
    # KRaft's active quorum controller dies: the quorum elects another after controller.quorum.fetch.timeout.ms
    ("steady-state", {"duration.ms": 4000, "faults": [{"at.ms": 500, "kind": "crash", "broker": "controller",
                                                       "duration.ms": 1000}]}),
    # operations: a rolling restart behind each gate kind (controlled shutdowns, restarts), an on-demand
    # preferred-leader election
    ("steady-state", {"duration.ms": 6000, "operations": [
        {"at.ms": 500, "kind": "rolling_restart", "brokers": [0], "gate": {"wait.ms": 10}, "downtime.ms": 200},
        {"at.ms": 1500, "kind": "rolling_restart", "brokers": [1], "gate": {"full_isr_for.ms": 10}, "downtime.ms": 200},
        {"at.ms": 3000, "kind": "preferred_leader_election"}]}),
    # a throttled reassignment that moves the leader (StopReplica to the old one), a broker's removal
    ("steady-state", {"duration.ms": 4000, "brokers": 5, "operations": [
        {"at.ms": 500, "kind": "reassign", "topic": "orders", "partitions": [0], "replicas": [[3, 4, 1]],
         "throttle": 10000000},
        {"at.ms": 500, "kind": "remove_broker", "broker": 2}]}),
    # fetch from follower (KIP-392) across three zones, a consumer group in each, a follower crashing: the zones'
    # traffic sampled, consumer fetches parked on followers
    ("three-zones", {"duration.ms": 3000, "broker.replica.selector.class": RACK_AWARE_SELECTOR,
                     "consumers": [{"group": f"in-{z}", "topic": "orders", "client.rack": z} for z in "abc"],
                     "faults": [{"at.ms": 1500, "kind": "crash", "broker": 1}]}),
    # a ZooKeeper-era controlled shutdown: StopReplica (no delete) for what the broker follows, as the controller
    # gets to each partition
    ("steady-state", {"duration.ms": 3000, "kafka.version": "1.0", "operations": [
        {"at.ms": 500, "kind": "rolling_restart", "brokers": [0], "gate": {"wait.ms": 10}, "downtime.ms": 200}]}),
)


def test_every_declared_handler_is_a_method_of_its_actor():
    sim = Simulation(load_scenario(SCENARIOS / "steady-state.yaml"))
    for actor in sim.actors:
        for name in (*getattr(actor, "MESSAGES", ()), *getattr(actor, "TIMERS", ())):
            assert callable(getattr(actor, name, None)), f"{type(actor).__name__}.{name}"


def test_what_arrives_as_a_message_or_timer_is_exactly_what_the_actors_declare():
    arrived = set()
    for name, overrides in [(name, {}) for name in COVERING] + list(COVERING_OVERRIDES):
        sim = Simulation(load_scenario(SCENARIOS / f"{name}.yaml").with_overrides(overrides))
        check = declared_handlers(sim.actors)

        def spy(action, check=check):
            check(action)  # raises for an action no actor declares
            arrived.add((type(action.__self__).__name__, action.__name__))

        sim.check_handlers(spy)
        sim.run()
    sim = Simulation(load_scenario(SCENARIOS / "steady-state.yaml"))
    declared = {(type(a).__name__, n) for a in sim.actors for n in (*getattr(a, "MESSAGES", ()), *getattr(a, "TIMERS", ()))}
    assert declared == arrived, f"declared, never arrived: {declared - arrived}"


def test_the_check_refuses_an_undeclared_handler():
    sim = Simulation(load_scenario(SCENARIOS / "steady-state.yaml"))
    check = declared_handlers(sim.actors)
    check(sim.produce.handle_produce)
    with pytest.raises(AssertionError, match="ProduceHandler._append .*not in its MESSAGES or TIMERS"):
        check(sim.produce._append)


def test_an_event_scheduled_on_the_kernel_for_an_undeclared_handler_fails_the_run():
    """Not only messages and broker timers: anything put on the kernel's heap is checked."""
    sim = Simulation(load_scenario(SCENARIOS / "steady-state.yaml").with_overrides({"duration.ms": 100}))
    sim.check_handlers(declared_handlers(sim.actors))
    sim.kernel.schedule(50.0, sim.controller.resync)
    with pytest.raises(AssertionError, match="Controller.resync .*not in its MESSAGES or TIMERS"):
        sim.run()


def test_streams_are_found_by_name_and_a_new_one_moves_no_other():
    one, two = Streams(7, producers=2), Streams(7, producers=2)
    first = one("network").random(3)
    two("brand-new-source").random(1000)  # another source, drawn from first
    assert (two("network").random(3) == first).all()
    assert one("network") is one("network")
    # the streams that existed before names keep their positions among the run's SeedSequence children
    children = np.random.SeedSequence(7).spawn(6)
    for name, position in (("network", 0), ("producers[1].keys", 4), ("consumers", 5)):
        assert (Streams(7, 2)(name).random(4) == np.random.default_rng(children[position]).random(4)).all()
    assert Streams(7, 2).key("brand-new-source") >= 2**32


def test_summary_events_and_tables_are_the_declared_ones():
    result = simulate(load_scenario(SCENARIOS / "delivery-at-least-once.yaml"))
    groups = set(result.groups.group)
    plain = [k for k in result.summary if k.split(".", 1)[0] not in groups]
    assert tuple(plain) == SUMMARY_KEYS
    assert set(result.events.kind) <= set(EVENT_KINDS)
    for name, table in result.tables().items():
        assert tuple(table.columns) == TABLES[name]
