"""kafkamodel/durability/estimate.py: the estimator end to end (the failure process with the detailed model inside
its windows, Kafka's rules where they decide): against the Markov chain, zone power loss, machine crashes, slow
spells and zones cut off, pauses, quorum with fsync, reruns reusing every detailed run, the worker count."""

from __future__ import annotations

import json
import math

import pytest

from kafkamodel import simulate
from kafkamodel.cli import main
from kafkamodel.durability import markov, windows as W
from kafkamodel.durability.estimate import estimate
from kafkamodel.durability.spec import load_durability
from kafkamodel.kit.spec import stable_hash
from durability_specs import CRASH_RATE, EVERY_CLASS, LOW, MS_YEAR, NO_FAILURES, NO_NIC, ONE_ZONE, RESTART_MS, \
    RF2_MIN1, SLOW_MS, SLOW_RATE
from durability_specs import failures_spec as _spec, json_files as _files, run_verb as _run, \
    slow_then_crash_rate as _slow_then_crash_rate, steady as _steady
from kafkamodel import load_scenario
from kafkamodel.paths import scenario_path


@pytest.mark.parametrize("rate, down, length", [("broker.crash.per.year", "broker.restart.ms", 600000),
                                                ("broker.pause.per.year", "broker.pause.ms", 600000),
                                                ("broker.slow.per.year", "broker.slow.ms", 600000),
                                                ("zone.partition.per.year", "zone.partition.minutes", 10)])
def test_crashes_alone_lose_nothing_and_say_so_with_an_upper_bound(tmp_path, rate, down, length):
    """acks=all, min.insync.replicas 2, unclean election off: process crashes keep the log, and so do
    stop-the-world pauses (log and page cache kept), slow spells and zones cut off from the others (a leader cut
    from the controller cannot shrink its ISR), so no such pattern loses an acknowledged record (Kafka's rules
    decide, no simulation); the answer is 0 with a bound, not a bare 0. Each is 10 minutes long, past the session
    timeout and replica.lag.time.max.ms: the broker is out of the ISR. Three zones, a replica in each: a zone's
    cut hits one replica of a partition, so per replica it is the crash's law."""
    rows = _run(tmp_path, {"rf3_min2": LOW}, {rate: 50, down: length})
    r = rows["rf3_min2"]
    assert r["loss_probability_per_partition_year"] == 0 and r["acked_records_lost_per_year"] == 0
    assert 0 < r["loss_probability_per_partition_year_high"] < 1
    # time below min.insync.replicas: the failure process's own figure, with the chain's binomial law
    lam, rr = 50, 600000 / (365.25 * 24 * 3600 * 1000)
    exact = markov.unavailable_minutes_per_year(3, 2, lam, rr)
    if rate == "broker.slow.per.year":  # a slow leader's ISR is itself alone: below 2 whenever the leader is slow,
        p = lam * rr / (1 + lam * rr)  # or both followers are (each broker slow a share p of the time, independently)
        exact = (p + (1 - p) * p ** 2) * markov.MINUTES_PER_YEAR
    assert r["unavailable_minutes_per_year"] == pytest.approx(exact, rel=0.25)


def test_zone_power_loss_loses_without_fsync_in_one_zone_only(tmp_path):
    """Zone power loss only: every replica in one zone loses its unflushed tail at once (acknowledged records
    lost); an fsync per message (log.flush.interval.messages 1) keeps them; three zones make it rarer by orders
    of magnitude (three power losses inside one restart)."""
    rows = _run(tmp_path, {"one_zone": ONE_ZONE,
                           "one_zone_fsync": {**ONE_ZONE, "broker.log.flush.interval.messages": 1},
                           "three_zones": LOW},
                {"zone.power.loss.per.year": 2.0})
    one, fsync, three = rows["one_zone"], rows["one_zone_fsync"], rows["three_zones"]
    # one zone: every zone power loss is a loss, so P = 1 - exp(-2) per partition-year
    assert one["loss_probability_per_partition_year_low"] <= -math.expm1(-2.0) <= one["loss_probability_per_partition_year_high"]
    assert one["acked_records_lost_per_year"] > 0
    assert fsync["loss_probability_per_partition_year"] == 0 and fsync["acked_records_lost_per_year"] == 0
    assert fsync["loss_probability_per_partition_year_high"] > 0
    assert three["loss_probability_per_partition_year"] < 1e-6 * one["loss_probability_per_partition_year"]


def test_a_machine_crash_is_a_power_loss_of_its_broker_alone(tmp_path):
    """machine.crash.per.year only: each crash takes one broker's page cache (its unflushed tail), not its disk,
    and no other broker's. RF 1: every crash loses acknowledged records, so P = 1 - exp(-rate) per partition-year,
    and an fsync per message keeps them all (0, with a bound); RF 3 in one zone, at the rate where a zone's power
    loss loses every time (the test above), loses only when crashes of all three brokers overlap (Kafka's rules:
    the others in sync hold every acknowledged record), orders of magnitude more rarely."""
    rate = 2.0
    rf1 = {**LOW, "topics[0].replication.factor": 1, "broker.min.insync.replicas": 1}
    rows = _run(tmp_path, {"rf1": rf1, "rf1_fsync": {**rf1, "broker.log.flush.interval.messages": 1},
                           "one_zone": ONE_ZONE}, {"machine.crash.per.year": rate})
    one, fsync, zone = rows["rf1"], rows["rf1_fsync"], rows["one_zone"]
    assert one["loss_probability_per_partition_year_low"] <= -math.expm1(-rate) <= one["loss_probability_per_partition_year_high"]
    assert one["acked_records_lost_per_year"] > 0
    assert fsync["loss_probability_per_partition_year"] == 0 and fsync["acked_records_lost_per_year"] == 0
    assert fsync["loss_probability_per_partition_year_high"] > 0
    assert zone["loss_probability_per_partition_year"] < 1e-6 * one["loss_probability_per_partition_year"]


def test_a_second_estimate_reuses_every_detailed_run(tmp_path):
    """Each detailed run's answer is kept as it finishes: a rerun (or a killed run resumed) runs none again."""
    from kafkamodel.durability.estimate import estimate

    spec = load_durability(_spec(tmp_path, {**NO_FAILURES, "zone.power.loss.per.year": 2.0},
                                 configurations={"one_zone": ONE_ZONE}, windows=50))
    calls = []

    def fake(scenario, topic, partition, replicas, pattern, returns, slow_factor=None):
        calls.append(pattern)
        return 7

    first = estimate(spec, progress=False, measure=fake, cache=tmp_path / "runs")
    ran = len(calls)
    again = estimate(spec, progress=False, measure=fake, cache=tmp_path / "runs")
    assert ran > 0 and len(calls) == ran
    assert [e.row() for e in first] == [e.row() for e in again]


def test_the_whole_estimator_agrees_with_the_markov_chain_across_three_orders_of_magnitude(tmp_path, monkeypatch):
    """Machine failures only, RF 3 in three zones, acks=all: the verb's loss probability per partition-year (failure
    process + the detailed model's run of "three disks lost") holds the chain's value within its 95% interval for
    rates from 0.05 to 5 per broker-year. The chain's rebuilds are exponential, the estimator's fixed: to first
    order in lam r both give 3 lam^3 r^2 (first failure 3 lam, second within r: 2 lam r, third while both are
    down: lam r / 2), and lam r <= 0.014 here."""
    from kafkamodel.durability import estimate as E

    raw = []  # the cluster sampler's own estimate, before within_partition_bounds keeps it inside the partitions'
    bounds = E.within_partition_bounds
    monkeypatch.setattr(E, "within_partition_bounds", lambda cluster, parts: raw.append(cluster) or bounds(cluster, parts))
    r = 24 / (365.25 * 24)
    for lam in (0.05, 0.5, 5.0):
        spec = _spec(tmp_path, {**NO_FAILURES, "machine.failure.per.year": lam, "machine.replace.hours": 24},
                     configurations={"rf3": LOW}, windows=1500, seed=5)
        assert main(["durability", str(spec), "--out", str(tmp_path / "out")]) == 0  # one detailed run, then reused
        row = json.loads((tmp_path / "out" / "durability.json").read_text())[0]
        exact = markov.loss_probability_per_year(3, lam, r)
        assert row["loss_probability_per_partition_year_low"] <= exact <= row["loss_probability_per_partition_year_high"], (lam, row, exact)
        # the whole cluster: a first loss at (distinct replica sets) x the chain's rate, to first order in lam r
        details = json.loads((tmp_path / "out" / "durability-details.json").read_text())["configurations"][0]
        cluster = details["loss_probability_per_cluster_year"]
        expected = -math.expm1(-_replica_sets(load_durability(spec)) * markov.loss_rate_per_year(3, lam, r))
        assert cluster["low"] <= expected <= cluster["high"], (lam, cluster, expected)
        # the cluster sampler's own rate, as drawn (the row's point is kept inside the partitions' bounds, so it
        # cannot show it): within the partition estimate's relative half-width of the chain's rate
        rate = _replica_sets(load_durability(spec)) * markov.loss_rate_per_year(3, lam, r)
        half = (row["loss_probability_per_partition_year_high"] - row["loss_probability_per_partition_year_low"]) / 2
        assert raw[-1].rate == pytest.approx(rate, rel=half / row["loss_probability_per_partition_year"]), (
            lam, raw[-1], rate)


def _replica_sets(spec) -> int:
    """Distinct sets of brokers holding a partition's replicas in the spec's first configuration."""
    from kafkamodel.sim.controller.placement import assign

    s = spec.configurations[0].scenario
    racks = tuple(s["racks"][i % len(s["racks"])] for i in range(s["brokers"])) if s.get("racks") else ()
    return len({frozenset(replicas) for t in s["topics"]
                for replicas in assign(t["partitions"], t["replication.factor"], s["brokers"], racks)})


@pytest.mark.slow  # about 35 s: a dozen detailed runs
def test_quorum_with_fsync_under_crashes_and_power_loss_reports_zero_with_a_bound(tmp_path):
    """Quorum replication with fsync before a replica counts (quorum.fsync): Kafka's ISR rules do not apply, so
    every critical class (the leader crashing or losing power, alone or after the others) goes to the detailed
    model; none loses an acknowledged record, and the answer is 0 with an upper bound."""
    rows = _run(tmp_path, {"quorum_fsync": {**ONE_ZONE, "replication": "quorum", "quorum.fsync": True}},
                {"broker.crash.per.year": 20, "zone.power.loss.per.year": 1.0}, windows=200)
    q = rows["quorum_fsync"]
    assert q["loss_probability_per_partition_year"] == 0 and q["acked_records_lost_per_year"] == 0
    assert 0 < q["loss_probability_per_partition_year_high"] < 1
    details = json.loads((tmp_path / "out" / "durability-details.json").read_text())
    classes = details["configurations"][0]["classes_records_lost"]
    assert any("power_loss x3" in c for c in classes) and any(c.endswith("crash x1") for c in classes)


@pytest.mark.parametrize("version, min_isr", [("4.1", 1), ("2.8", 1), ("4.1", 2)])
def test_pauses_of_every_replica_leader_last_lose_nothing_in_the_detailed_model(version, min_isr):
    """What ``kafka_rules_apply`` assumes of a pause, checked on the detailed model: the class "each replica paused
    in turn, the leader last" (the one that leaves no replica in sync) loses no acknowledged record, on KRaft and
    ZooKeeper, with min.insync.replicas 1 (where a paused leader that shrank its ISR to itself could acknowledge
    alone) and 2. Each paused follower leaves the ISR (its session expires, or the leader's
    replica.lag.time.max.ms) and the paused leader's log is kept."""
    from kafkamodel.durability.estimate import gaps_ms, groups_of, schedule

    scenario = _steady().with_overrides({"kafka.version": version, "broker.min.insync.replicas": min_isr,
                                         "producers[0].rate.per.s": 500})
    topic, partition, replicas = groups_of(scenario)[0].partitions[0]
    pattern = ((W.PAUSE, (1,)), (W.PAUSE, (2,)), (W.PAUSE, (0,)))
    faults, duration = schedule(pattern, (1, 2, 0), replicas, gaps_ms(scenario))
    r = simulate(scenario.with_overrides({"faults": faults, "duration.ms": duration}))
    ev = r.events
    shrinks = ev[(ev.partition == partition) & (ev.kind == "isr_shrink")].detail.tolist()
    for follower in replicas[1:]:  # each paused follower left the ISR
        assert any(f"removed dead broker {follower};" in d or f"removed {follower}" in d for d in shrinks), shrinks
    rows = r.partitions
    assert int(rows[(rows.topic == topic) & (rows.partition == partition)].acked_records_lost.iloc[0]) == 0
    assert r.summary["acked_records_lost"] == 0 and r.summary["records_acked"] > 0


def _fake_measure(scenario, topic, partition, replicas, pattern, returns, slow_factor=None):
    """Instead of the detailed model (module-level: the pool's processes import it): a number that depends on
    everything the run is given."""
    return int(stable_hash([scenario.to_dict(), topic, partition, list(replicas), pattern, list(returns)])[:6], 16) % 97


def test_the_answers_do_not_depend_on_the_worker_count(tmp_path):
    """acks=1 sends every critical class to the detailed model; one process or three, the estimates, the classes
    and the kept runs are the same (answers are gathered in the jobs' order, not as they finish)."""
    spec = load_durability(_spec(tmp_path, {**NO_FAILURES, "zone.power.loss.per.year": 2.0,
                                            "broker.crash.per.year": 5, "broker.pause.per.year": 3},
                                 configurations=EVERY_CLASS, windows=60))
    one = estimate(spec, progress=False, measure=_fake_measure, cache=tmp_path / "one", workers=1)
    three = estimate(spec, progress=False, measure=_fake_measure, cache=tmp_path / "three", workers=3)
    assert len(_files(tmp_path / "one")) >= 4  # enough runs for the pool to finish them out of order
    assert any("pause" in c for e in one for c in e.classes)
    assert [(e.row(), e.classes, e.cluster) for e in one] == [(e.row(), e.classes, e.cluster) for e in three]
    assert _files(tmp_path / "one") == _files(tmp_path / "three")


def test_a_slow_spell_then_the_leaders_crash_loses_with_unclean_election(tmp_path):
    """RF 2, acks=all, min.insync.replicas 1, fetches 100,000 times slower (past replica.lag.time.max.ms): a slow
    follower leaves the ISR, the leader acknowledges alone, then crashes; or the leader is slow, its follower
    leaves the ISR, and it crashes itself. With unclean election the follower is elected and what only the leader
    had is lost. The verb's loss per partition-year holds the formula's rate (plus both replicas crashing inside
    one restart, c^2 r terms, 2.5% of it) within its 99.9% interval (the row's 95% half-width x 3.29 / 1.96: a
    95% interval misses one seed in twenty by design; measured, the sampler alone over 12 seeds x 6,000 windows
    gives the formula -0.3% +- 0.6%, and this seed's draws sit 2% above it). Unclean election off: Kafka's rules,
    nothing lost, 0 with a bound."""
    rows = _run(tmp_path, {"unclean": {**RF2_MIN1, **NO_NIC, "broker.unclean.leader.election.enable": True},
                           "clean": {**RF2_MIN1, **NO_NIC}},
                {"broker.slow.per.year": SLOW_RATE, "broker.slow.ms": SLOW_MS, "broker.slow.factor": 100000,
                 "broker.crash.per.year": CRASH_RATE, "broker.restart.ms": RESTART_MS}, windows=4000)
    details = json.loads((tmp_path / "out" / "durability-details.json").read_text())["configurations"]
    classes = next(d for d in details if d["configuration"] == "unclean")["classes_records_lost"]
    assert classes["RF 2: slow x1 then crash x1"] > 0 and classes["RF 2: slow_leader x1 then crash x1"] > 0, classes
    assert classes["RF 2: crash x1 then crash x1"] > 0, classes  # the follower down, then the leader: unclean too
    c, r = CRASH_RATE, RESTART_MS / MS_YEAR
    both_crash = 2 * c * c / (c + SLOW_RATE) * -math.expm1(-(c + SLOW_RATE) * r)
    expected = -math.expm1(-(_slow_then_crash_rate() + both_crash))
    u = rows["unclean"]
    p = u["loss_probability_per_partition_year"]
    half = u["loss_probability_per_partition_year_high"] - p
    assert abs(expected - p) <= half * 3.2905 / 1.96, (u, expected)
    assert u["acked_records_lost_per_year"] > 0
    k = rows["clean"]
    assert k["loss_probability_per_partition_year"] == 0 and 0 < k["loss_probability_per_partition_year_high"] < 1


@pytest.mark.parametrize("nic", [{}, NO_NIC], ids=["over the profile's NIC", "without the NIC model"])
def test_a_slow_leader_acknowledges_alone_then_its_crash_loses_with_unclean_election(nic):
    """Kafka's slow leader: its follower's fetches crawl, the leader shrinks the ISR to itself after
    replica.lag.time.max.ms (at its next check: between lag and 1.5 x lag after the spell starts) and, under
    min.insync.replicas 1, acknowledges alone; its crash then elects the follower uncleanly and those records are
    lost. What the detailed run reports lost (from the replicas' logs) is counted again from the producer's side:
    the partition's records acknowledged after the spell started and before the crash, every one of them
    acknowledged from the shrink on (acks=all held them until then). Over the profile's NIC too: a slowed fetch is
    late after the wire, so it does not hold the slow broker's NIC queue, and the producer's requests still reach
    the leader."""
    from kafkamodel.durability.estimate import detailed_overrides, groups_of
    from kafkamodel.durability.sweep import records_lost

    scenario = load_scenario(scenario_path("three-zones")).with_overrides(
        {**RF2_MIN1, "broker.unclean.leader.election.enable": True, **nic})
    topic, partition, replicas = groups_of(scenario)[0].partitions[0]
    overrides = detailed_overrides(scenario, replicas, ((W.SLOW_LEADER, (0,)), (W.CRASH, (0,))), (0,), 100000.0)
    slow, crash = overrides["faults"]
    assert (slow["kind"], slow["broker"], crash["kind"], crash["broker"]) == ("slow", replicas[0], "crash", replicas[0])
    result = simulate(scenario.with_overrides(overrides))
    lost = records_lost(result.partitions, topic, partition)

    ev = result.events
    shrink = ev[(ev.partition == partition) & (ev.kind == "isr_shrink")]
    lag = scenario["broker"]["replica.lag.time.max.ms"]
    assert len(shrink) == 1 and f"isr now [{replicas[0]}]" in shrink.detail.iloc[0], shrink
    alone_from = shrink.time_ms.iloc[0]
    assert slow["at.ms"] + lag <= alone_from <= slow["at.ms"] + 1.5 * lag + 100
    election = ev[(ev.partition == partition) & (ev.kind == "leader_election")]
    assert len(election) == 1 and election.detail.iloc[0].startswith("unclean") and \
        election.time_ms.iloc[0] > crash["at.ms"], election

    rec = result.records
    mine = rec[(rec.topic == topic) & (rec.partition == partition) & rec.acked]
    in_spell = mine[(mine.send_ms >= slow["at.ms"]) & (mine.ack_ms < crash["at.ms"])]
    assert lost > 0 and lost == len(in_spell), (lost, len(in_spell))
    assert (in_spell.ack_ms >= alone_from).all()  # none acknowledged while the follower was still in the ISR


@pytest.mark.parametrize("version", ["4.1", "2.8"])  # KRaft: the cut broker is fenced; ZooKeeper: its session expires
@pytest.mark.parametrize("acks, loses", [("all", False), (1, True)])
def test_a_leaders_zone_cut_off_loses_only_with_acks_1(acks, loses, version):
    """The leader's zone cut from the other zones and the controller, its producer still reaching it: with acks=1
    it acknowledges what its followers never get while a new leader is elected on the other side, and those
    records are lost when it rejoins and truncates; with acks=all (min.insync.replicas 1, unclean election on)
    it cannot shrink its ISR without the controller, so it acknowledges nothing the new leader lacks."""
    from kafkamodel.durability.estimate import groups_of, measure

    scenario = load_scenario(scenario_path("three-zones")).with_overrides(
        {**RF2_MIN1, "broker.unclean.leader.election.enable": True, "producers[0].acks": acks,
         "kafka.version": version})
    topic, partition, replicas = groups_of(scenario)[0].partitions[0]
    lost = measure(scenario, topic, partition, replicas, ((W.ZONE_PARTITION, (0,)),), (0,))
    assert (lost > 0) == loses, lost


def test_a_zone_partition_is_the_isolate_fault_from_the_other_zones_and_the_controller():
    from kafkamodel.durability.estimate import schedule, step_fault

    scenario = load_scenario(scenario_path("three-zones"))  # brokers 0..5 in zones a, b, c, a, b, c
    gaps = {W.SLOW: 10, W.ZONE_PARTITION: 10, "return": 10}
    pattern = ((W.SLOW, (1,)), (W.ZONE_PARTITION, (0,)))
    faults, _ = schedule(pattern, (0, 1), (0, 1, 2), gaps, step_fault(scenario, 250.0))
    assert [(f["kind"], f["broker"], f.get("factor"), f.get("from")) for f in faults] == [
        ("slow", 1, 250.0, None), ("isolate", 0, None, [1, 2, 4, 5, "controller"])]


def test_one_zone_has_no_zone_partition(tmp_path):
    from kafkamodel.durability.estimate import rates_of

    f = load_durability(_spec(tmp_path, {"zone.partition.per.year": 3})).failures
    assert rates_of(f, ["a", "b", "c"]).partition == {"a": 3, "b": 3, "c": 3}
    assert rates_of(f, ["a", "a"]).partition == {}
