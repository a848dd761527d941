"""Kafka through the versions: each version's defaults, and the anomalies each fix removed.

* the defaults table of docs/versions.md, version by version, against the scenarios the model resolves (a
  property the table says a version lacks must be refused by that version);
* KIP-101's two scenarios and Jepsen 2013, under the version that had the anomaly and the one that fixed it;
* the restart that must wait for its old session, in each metadata mode.

Kafka's own test cases for the election and truncation code are in tests/test_kafka_cases.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kafkamodel import ScenarioError, load_scenario, simulate

from shipped import run

DOCS = Path(__file__).resolve().parents[1] / "docs" / "versions.md"
SCENARIO = {"name": "defaults", "topics": [{"name": "t"}], "producers": [{"topic": "t", "rate.per.s": 10}],
            "consumers": [{"group": "g", "topic": "t"}]}
GIVE = {  # a value to give a property the table says the version lacks (it must be refused)
    "broker.replica.lag.max.messages": 4000, "broker.zookeeper.session.timeout.ms": 6000,
    "broker.broker.session.timeout.ms": 9000, "broker.broker.heartbeat.interval.ms": 2000,
    "broker.eligible.leader.replicas.enable": False, "broker.replica.fetch.response.max.bytes": 1000,
    "producers[].enable.idempotence": False, "producers[].delivery.timeout.ms": 120000,
    "consumers[].max.poll.records": 500, "consumers[].group.protocol": "classic",
    "producers[].retry.backoff.max.ms": 1000,
    "consumers[].retry.backoff.max.ms": 1000,
}


def defaults_table() -> tuple[list[str], dict[str, list[str]]]:
    """(versions, {property: cells}) of the 'Defaults by version' table in docs/versions.md."""
    text = DOCS.read_text()
    section = text.split("## Defaults by version", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    header = [c.strip() for c in rows[0].strip("|").split("|")]
    table = {}
    for line in rows[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        table[cells[0]] = cells[1:]
    return header[1:], table


def resolved(scenario, prop: str):
    if prop.startswith("broker."):
        return scenario["broker"][prop[len("broker."):]]
    if prop.startswith("producers[]."):
        return scenario["producers"][0][prop[len("producers[]."):]]
    if prop.startswith("consumers[]."):
        return scenario["consumers"][0][prop[len("consumers[]."):]]
    return scenario[prop]


def given(version: str, prop: str, value) -> dict:
    """SCENARIO under `version` with `prop` set to `value`."""
    s = {**SCENARIO, "kafka.version": version, "producers": [dict(SCENARIO["producers"][0])],
         "consumers": [dict(SCENARIO["consumers"][0])]}
    if prop.startswith("broker."):
        s["broker"] = {prop[len("broker."):]: value}
    else:
        section, key = prop.split("[].")
        s[section][0][key] = value
    return s


def cell_value(cell: str):
    if cell in ("true", "false"):
        return cell == "true"
    return int(cell) if re.fullmatch(r"\d+", cell) else cell


VERSIONS, TABLE = defaults_table()


def test_the_documented_table_covers_the_versions_and_keys_that_change():
    assert VERSIONS[0] == "0.8" and VERSIONS[-1] == "4.1" and len(VERSIONS) >= 12
    assert len(TABLE) >= 15 and all(len(cells) == len(VERSIONS) for cells in TABLE.values())


@pytest.mark.parametrize("version", VERSIONS)
def test_defaults_resolve_per_version_as_documented(version):
    scenario = load_scenario({**SCENARIO, "kafka.version": version})
    column = VERSIONS.index(version)
    for prop, cells in TABLE.items():
        cell = cells[column]
        if cell == "—":  # not a property of this version: giving it is refused, naming the version
            with pytest.raises(ScenarioError, match=f"not a property of Kafka {re.escape(version)}"):
                load_scenario(given(version, prop, GIVE[prop]))
        else:
            assert resolved(scenario, prop) == cell_value(cell), (version, prop)


@pytest.mark.parametrize("version, in_flight", [("0.11", 1), ("2.0", 5)])
def test_idempotence_switched_on_brings_its_own_defaults_before_3_0(version, in_flight):
    # KafkaProducer (0.11-2.8) with enable.idempotence=true and nothing else set: acks all, retries MAX, and in 0.11
    # one request in flight; what the producer sets itself stays
    p = load_scenario(given(version, "producers[].enable.idempotence", True))["producers"][0]
    assert (p["acks"], p["retries"], p["max.in.flight.requests.per.connection"]) == ("all", 2147483647, in_flight)
    mine = given(version, "producers[].enable.idempotence", True)
    mine["producers"][0]["retries"] = 3
    assert load_scenario(mine)["producers"][0]["retries"] == 3
    with pytest.raises(ScenarioError, match="enable.idempotence: true needs acks=all, got acks=1"):
        mine["producers"][0]["acks"] = 1
        load_scenario(mine)


def test_explicit_settings_override_the_version_defaults():
    s = load_scenario(given("0.10", "producers[].acks", "all"))
    assert s["producers"][0]["acks"] == "all" and s["broker"]["unclean.leader.election.enable"] is True
    s = load_scenario(given("4.1", "broker.unclean.leader.election.enable", True))
    assert s["broker"]["unclean.leader.election.enable"] is True and s["producers"][0]["linger.ms"] == 5


# ---- the anomalies and the versions that removed them -----------------------------------------------------------

SEEDS = [1, 2, 3]


@pytest.mark.parametrize("seed", SEEDS)
def test_kip101_scenario_1_as_told_loses_committed_records_under_0_10_and_none_under_the_newest(seed):
    # the follower restarts, truncates to its (checkpointed) HW, then the leader dies before it fetched back
    old = run("kip101-follower-restart", seed=seed)
    assert old.summary["committed_records_lost"] > 0 and old.summary["acked_records_lost"] > 0
    cut = old.events[(old.events.kind == "truncation") & (old.events.broker == 2)]
    assert "to local high watermark" in cut.detail.iloc[0] and "committed" in cut.detail.iloc[0]
    assert old.summary["unclean_leader_elections"] == 1  # 0.10: the truncated follower is elected anyway
    for version in ("0.11", "4.1"):  # KIP-101's leader epochs (and KIP-106's clean elections)
        new = run("kip101-follower-restart", seed=seed, **{"kafka.version": version})
        assert new.summary["committed_records_lost"] == new.summary["acked_records_lost"] == 0, version
        assert new.summary["no_committed_record_lost_violations"] == 0


def test_kip101_scenario_2_diverges_under_0_10_on_some_seeds_and_never_with_leader_epochs():
    diverged = []
    for seed in range(1, 7):
        old = run("kip101-double-power-loss-divergence", seed=seed)
        diverged.append(old.summary["replica_divergence"] > 0)
        assert (old.summary["replica_divergence"] > 0) == (old.summary["committed_prefixes_agree_violations"] > 0)
        for version in ("0.11", "2.0", "4.1"):
            new = run("kip101-double-power-loss-divergence", seed=seed, **{"kafka.version": version})
            assert new.summary["replica_divergence"] == 0, (seed, version)
            assert new.summary["committed_prefixes_agree_violations"] == 0, (seed, version)
    assert any(diverged)


@pytest.mark.parametrize("seed", SEEDS)
def test_jepsen_2013_loses_acknowledged_writes_under_0_10_and_none_under_2_8(seed):
    # no explicit unclean.leader.election.enable: 0.10's default (true) elects an out-of-sync follower; 2.8's
    # (false, KIP-106) waits for the leader, who has every acknowledged write
    old = run("jepsen-2013", seed=seed, **{"kafka.version": "0.10"})
    assert old.scenario["broker"]["unclean.leader.election.enable"] is True
    assert old.summary["unclean_leader_elections"] == 1 and old.summary["acked_records_lost"] > 0
    new = run("jepsen-2013", seed=seed, **{"kafka.version": "2.8"})
    assert new.summary["unclean_leader_elections"] == 0
    assert new.summary["acked_records_lost"] == new.summary["committed_records_lost"] == 0
    assert new.summary["unavailable_ms"] > old.summary["unavailable_ms"]  # the price: the partition waits


def test_before_3_7_the_hw_passes_a_shrunken_isr_and_the_waiting_requests_fail_after_the_append():
    # min.insync.replicas 2, both followers crash: 3.7+ holds the HW (KAFKA-15583) and the requests in purgatory wait;
    # before, the HW moves to the leader's LEO and they are answered NOT_ENOUGH_REPLICAS_AFTER_APPEND: committed
    # on the leader, not acknowledged
    def committed_not_acknowledged(version):
        r = run("min-isr-refusal", **{"kafka.version": version})
        rec = r.records
        stuck = rec[rec.visible_ms.notna() & ~rec.acked]  # below the HW (consumers see them), never acknowledged
        alone = r.events[(r.events.kind == "isr_shrink") & r.events.detail.str.endswith("isr now [0]")].time_ms.min()
        return stuck, alone

    stuck, alone = committed_not_acknowledged("3.6")
    # the request in purgatory when the ISR shrank to the leader alone: its batch committed at that instant
    assert len(stuck) > 0 and (stuck.visible_ms == alone).all()
    assert len(committed_not_acknowledged("3.7")[0]) == 0


@pytest.mark.parametrize("version, refused", [("2.8", True), ("3.6", True), ("3.7", False), ("4.1", False)])
def test_a_broker_min_insync_replicas_above_the_replication_factor_refuses_acks_all_until_3_7(version, refused):
    # broker min.insync.replicas 4, RF 3: before 3.7 the leader compares the ISR (at most 3) with 4 and refuses every
    # acks=all write with NOT_ENOUGH_REPLICAS (the classic trap); from 3.7 Partition.effectiveMinIsr caps it at the
    # replica count (KAFKA-15583), so a full ISR of 3 takes them
    from kafkamodel import simulate
    r = simulate(load_scenario({
        "name": "min-isr-above-rf", "duration.ms": 3000, "kafka.version": version, "brokers": 3,
        "broker": {"min.insync.replicas": 4}, "topics": [{"name": "t", "replication.factor": 3}],
        "producers": [{"topic": "t", "rate.per.s": 200, "acks": "all", "retries": 0}]}))
    rec = r.records[r.records.send_ms < 2500]  # answered within the run
    assert len(rec) > 300
    if refused:
        assert not rec.acked.any() and (rec.error == "NOT_ENOUGH_REPLICAS").all()
        assert r.summary["not_enough_replicas_errors"] > 0
    else:
        assert rec.acked.all() and r.summary["not_enough_replicas_errors"] == 0


def test_a_topic_min_insync_replicas_above_its_replication_factor_is_refused_in_every_version():
    for version in ("2.8", "4.1"):
        with pytest.raises(ScenarioError, match=r"topics\[0\]\.min\.insync\.replicas: 4 exceeds"):
            load_scenario({**SCENARIO, "kafka.version": version,
                           "topics": [{"name": "t", "replication.factor": 3, "min.insync.replicas": 4}]})


# ---- a restart waits for its old session --------------------------------------------------------------------------

def _kraft_expiry(seed: int, broker: int, silent_at: float, interval: float = 2000, session: float = 9000) -> float:
    """KRaft: a broker heartbeats at its phase (a uniform draw in [0, interval) of the run's "heartbeat" stream, one
    per broker in id order) and every interval after; its session ends `session` after the last one."""
    from kafkamodel.sim.engine.transport import Streams

    phase = Streams(seed, 1)("heartbeat").uniform(0.0, interval, size=broker + 1)[broker]
    last = 0.0 if silent_at < phase else phase + (silent_at - phase) // interval * interval
    return last + session


@pytest.mark.parametrize("version, session, crash_at, registers_at", [
    ("3.9", {"zookeeper.session.timeout.ms": 6000}, 5000, 11000),  # ZooKeeper: 6 s after it went silent
    ("4.1", {"broker.session.timeout.ms": 9000}, 5000, _kraft_expiry(1, 1, 5000)),  # KRaft: 9 s after its last heartbeat
])
def test_a_restart_within_the_session_registers_when_the_old_session_expires(version, session, crash_at, registers_at):
    result = run("steady-state", **{"kafka.version": version, "duration.ms": 20000, "broker": session,
                                    "faults": [{"at.ms": crash_at, "kind": "crash", "broker": 1, "duration.ms": 1000}]})
    e = result.events
    assert e[e.kind == "broker_failure_detected"].time_ms.tolist() == [registers_at]
    restart = e[e.kind == "fault_restart"]
    loaded = crash_at + 1000 + result.summary["broker_recovery_ms_max"]  # it registers once its logs are recovered
    assert restart.time_ms.tolist() == [registers_at] and f"held from {loaded:g}" in restart.detail.iloc[0]


# ---- python -m kafkamodel keys --version ----------------------------------------------------------------------------

def test_keys_shows_a_versions_resolved_defaults(capsys):
    from kafkamodel.cli import main

    assert main(["keys", "--version", "0.10"]) == 0
    lines = {line.split()[0]: line.split()[1] for line in capsys.readouterr().out.splitlines()[1:]}
    assert lines["broker.unclean.leader.election.enable"] == "true"  # as the table above says for 0.10
    assert lines["broker.zookeeper.session.timeout.ms"] == "6000" and lines["producers[].acks"] == "1"
    assert lines["broker.eligible.leader.replicas.enable"] == "(not" and lines["producers[].enable.idempotence"] == "(not"
    assert main(["keys", "--version", "3.9", "--metadata", "kraft"]) == 0
    lines = {line.split()[0]: line.split()[1] for line in capsys.readouterr().out.splitlines()[1:]}
    assert lines["broker.broker.session.timeout.ms"] == "9000" and lines["broker.zookeeper.session.timeout.ms"] == "(not"
    assert main(["keys", "--version", "0.8.1"]) == 0  # 0.8 less what 0.8.2 brought (versions.PATCHES)
    lines = {line.split()[0]: line.split()[1] for line in capsys.readouterr().out.splitlines()[1:]}
    assert lines["broker.min.insync.replicas"] == "(not" and lines["topics[].min.insync.replicas"] == "(not"
    assert lines["broker.replica.lag.max.messages"] == "4000" and lines["producers[].acks"] == "1"


@pytest.mark.parametrize("args, message", [
    (["keys", "--version", "3.10"], "error: --version: unknown version '3.10'; known: 0.8, 0.9, 0.10, "),
    (["keys", "--version", "2.8", "--metadata", "kraft"], "error: --metadata: kraft needs kafka.version 3.3 or later"),
])
def test_keys_refuses_an_unknown_version_in_one_line(capsys, args, message):
    from kafkamodel.cli import main

    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1


# ---- 0.8.1's consumer fetch purgatory (KAFKA-1430 changed it in 0.8.2) ---------------------------------------------

ONE_WAY_MS, WAIT_MS, FOLLOWER_MS = 1.0, 100, 0.5


def _delivery_p50(version: str, acks) -> float:
    """One record every 200 ms to a partition with 3 replicas, read by a consumer whose fetch waits WAIT_MS; every
    network trip ONE_WAY_MS; the follower spends FOLLOWER_MS per fetch answer, every other cost 0."""
    zero = {k: 0 for k in ("request.us", "partition.us", "kib.us", "network.request.us", "network.kib.us",
                           "fetcher.partition.us", "fetcher.kib.us", "producer.record.us", "producer.batch.us",
                           "producer.request.us")}
    s = {"name": "purgatory", "kafka.version": version, "duration.ms": 4100, "brokers": 3,
         "network": {"latency.ms": ONE_WAY_MS},
         "costs": {**zero, "fetcher.response.us": FOLLOWER_MS * 1000, "gc.request.kib": 0},
         "topics": [{"name": "t", "partitions": 1, "replication.factor": 3}],
         "producers": [{"topic": "t", "burst": {"records": 1, "every.ms": 200, "start.ms": 1000}, "stop.ms": 4000,
                        "acks": acks, "linger.ms": 0}],
         "consumers": [{"group": "g", "topic": "t", "fetch.max.wait.ms": WAIT_MS, "processing.ms": 0}]}
    return simulate(s).summary["g.consume_e2e_latency_ms_p50"]


def test_before_0_8_2_a_moving_hw_answers_no_parked_consumer_fetch():
    """0.8.1 (KafkaApis.handleProducerRequest -> maybeUnblockDelayedFetchRequests): the produce answers the parked
    fetch with what is below the HW (nothing yet, at RF 3 and acks=1); the fetch sent again waits its whole
    fetch.wait.max.ms, as the HW moves without it: send -> leader (1 trip), empty answer and the fetch again (2),
    the wait, the answer (1). From 0.8.2 the moving HW answers it: the leader, the follower's fetch answer, its next
    fetch (3 trips and the follower's cost), then the answer (1)."""
    hw_answers = 4 * ONE_WAY_MS + FOLLOWER_MS
    assert _delivery_p50("0.8", 1) == pytest.approx(hw_answers, abs=0.05)
    assert _delivery_p50("0.8.1", 1) == pytest.approx(4 * ONE_WAY_MS + WAIT_MS, abs=0.05)
    # at acks=-1 the acknowledgement (DelayedProduce.isSatisfied -> maybeUnblockDelayedFetchRequests) answers it
    # when the HW moves, as 0.8.2's HW does
    assert _delivery_p50("0.8.1", -1) == pytest.approx(hw_answers, abs=0.05)


def test_0_8_1_is_0_8_without_min_insync_replicas():
    assert load_scenario({**SCENARIO, "kafka.version": "0.8.1"})["kafka.version"] == "0.8.1"
    for where, given in (("broker.min.insync.replicas", {"broker": {"min.insync.replicas": 2}}),
                         ("topics[0].min.insync.replicas", {"topics": [{"name": "t", "min.insync.replicas": 1}]})):
        with pytest.raises(ScenarioError) as e:
            load_scenario({**SCENARIO, "kafka.version": "0.8.1", **given})
        assert f"{where}: not a property of Kafka 0.8.1 (it came in KAFKA-1555, 0.8.2)" in str(e.value)
        load_scenario({**SCENARIO, "kafka.version": "0.8", **given})  # 0.8 is 0.8.2: it has it
