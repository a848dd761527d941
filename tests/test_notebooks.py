"""Every notebook runs under papermill with tiny parameters; the numbers it records are read back and checked.

The study notebooks run through ``report`` (the ``study_reports`` fixture:
tiny studies, two seeds), which records each notebook's headline numbers in
``reports/<study>.json``; the recovery-protocols numbers are also checked by
the end-to-end test in test_kit_command.py.
"""

from __future__ import annotations

import json
import math
import re

import nbformat
import papermill as pm
import pyarrow.parquet as pq
import pytest
import yaml

from kafkamodel import load_scenario, simulate
from kafkamodel.paths import NOTEBOOKS, ROOT, SCENARIOS, STUDIES
from kafkamodel.kit.engines.papermill import KERNEL_ARGS
from kafkamodel.kit.headline import read_headline


def execute(notebook: str, executed, **parameters) -> dict:
    pm.execute_notebook(str(NOTEBOOKS / notebook), str(executed), parameters=parameters, execution_timeout=300,
                        progress_bar=False, kernel_name="python3", cwd=str(ROOT), extra_arguments=KERNEL_ARGS)
    headline = read_headline(executed)
    assert headline is not None, f"{notebook} recorded no headline"
    assert headline["finding"]
    return headline["numbers"]


def test_explorer_records_the_numbers_of_the_run_it_shows(tmp_path):
    overrides = {"duration.ms": 16000, "producers[0].rate.per.s": 500}
    numbers = execute("00_explore.ipynb", tmp_path / "explore.ipynb", scenario="unclean-election",
                      overrides=overrides, seed=7, out=str(tmp_path / "run"))
    expected = simulate(load_scenario(SCENARIOS / "unclean-election.yaml").with_overrides({**overrides, "seed": 7})).summary
    for key in ("records_sent", "records_acked", "acked_records_lost", "unavailable_ms", "isr_shrinks"):
        assert numbers[key] == expected[key], key
    assert numbers["acked_records_lost"] > 0  # the unclean election of this scenario
    assert (tmp_path / "run" / "summary.json").is_file()  # `out` writes the run folder


def numbers_of(reports, study: str) -> dict:
    record = json.loads((reports / f"{study}.json").read_text())
    assert record["finding"] and record["status"] == "done"
    return record["numbers"]


def _error_output(executed) -> dict:
    nb = nbformat.read(str(executed), as_version=4)
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert len(errors) == 1
    return errors[0]


@pytest.mark.parametrize("parameters, message", [
    pytest.param({"seed": "seven"}, "parameter seed: must be an integer >= 0 or None, got 'seven'", id="seed"),
    pytest.param({"scenario": "steady_state"}, "parameter scenario 'steady_state': no shipped scenario of that name; "
                 "did you mean 'steady-state'? (shipped: acks1-leader-crash, ", id="scenario-typo"),
    pytest.param({"overrides": {"topics[0].replication.factor": 0}},
                 "parameter overrides: topics[0].replication.factor: must be >= 1, got 0", id="override"),
])
def test_explorer_names_a_bad_parameter_in_one_line(tmp_path, parameters, message):
    executed = tmp_path / "bad.ipynb"
    with pytest.raises(pm.PapermillExecutionError, match=re.escape(message)):
        execute("00_explore.ipynb", executed, plots=False, **parameters)
    error = _error_output(executed)
    assert error["ename"] == "StudyError" and error["evalue"].startswith(message)
    assert len(error["traceback"]) == 1  # what the reader sees: one line, no frames from the package
    assert error["traceback"][0].endswith(error["evalue"])


def test_the_parameters_example_runs(tmp_path):
    """The example in the parameters cell's comment: brokers grow to fit RF 5, as in the panel."""
    example = {"producers[*].acks": 1, "topics[0].replication.factor": 5, "duration.ms": 3000}
    numbers = execute("00_explore.ipynb", tmp_path / "example.ipynb", overrides=example, plots=False,
                      out=str(tmp_path / "run"))
    assert numbers["records_acked"] > 0
    ran = yaml.safe_load((tmp_path / "run" / "scenario.yaml").read_text())  # the scenario that ran, resolved
    shipped = yaml.safe_load((SCENARIOS / "steady-state.yaml").read_text())
    assert shipped["brokers"] < 5  # so the brokers had to grow: RF 5 needs five (Kafka refuses more replicas)
    assert ran["brokers"] == 5 and ran["topics"][0]["replication.factor"] == 5
    # ... and the run used them: every partition has five replicas on five distinct brokers, all in its ISR
    partitions = pq.read_table(tmp_path / "run" / "partitions.parquet").to_pandas()
    assert len(partitions) > 0
    assert all(sorted(r.split(",")) == list("01234") for r in partitions.replicas)
    assert all(len(i.split(",")) == 5 for i in partitions.isr)


def test_quorum_vs_isr_notebook(study_reports):
    numbers = numbers_of(study_reports, "quorum_vs_isr")
    # the majority does not wait for the slowest follower: faster at RF 5, and close to the order statistic
    assert numbers["rf5_quorum_p99_ms"] < numbers["rf5_isr_p99_ms"]
    for mode in ("isr", "quorum"):
        assert numbers[f"rf5_{mode}_p99_ms"] == pytest.approx(numbers[f"rf5_{mode}_p99_predicted_ms"], rel=0.2)
    assert numbers["tail_sigma1_isr_p99_ms"] > numbers["tail_sigma1_quorum_p99_ms"]
    # f+1 replicas survive f failures under ISR, 2f+1 under a quorum
    assert numbers["replicas_to_survive_2_isr"] == 3
    assert numbers["replicas_to_survive_2_quorum"] == 5
    assert numbers["acked_records_lost_in_failure_runs"] == 0
    # a slow follower stalls ISR writes until it is evicted (~replica.lag.time.max.ms); the quorum never waits
    assert numbers["slow_follower_lag1000_isr_max_ms"] > 500
    assert numbers["slow_follower_lag1000_quorum_max_ms"] < 100


def test_zones_notebook(study_reports):
    n = numbers_of(study_reports, "zones")
    # ISR waits for every follower: with zone c 5-10 ms away one way, a commit takes at least its 10 ms round trip
    # (and the producer's requests queue behind it); a quorum of 3 commits with the leader and zone b, as before
    assert n["far_zone_c_rf3_isr_fsync_off_p99_ms"] > 10.0 > n["three_zones_rf3_isr_fsync_off_p99_ms"]
    for fsync in ("off", "on"):
        near, far = n[f"three_zones_rf3_quorum_fsync_{fsync}_p99_ms"], n[f"far_zone_c_rf3_quorum_fsync_{fsync}_p99_ms"]
        assert far < n["far_zone_c_rf3_isr_fsync_off_p99_ms"] / 3 and far == pytest.approx(near, rel=0.5)
    # an fsync before a replica counts costs the quorum at least the leader's and a follower's fsync (0.9 ms median)
    assert n["three_zones_rf3_quorum_fsync_on_p99_ms"] > n["three_zones_rf3_quorum_fsync_off_p99_ms"] + 0.9
    # a zone's power loss leaves a replica with every acknowledged record; the whole cluster's leaves only the disks:
    # whoever acknowledged from memory loses, whoever fsynced first loses nothing
    assert n["zone_loss_acked_lost_max"] == 0
    # from memory: nothing was fsynced and the OS keeps dirty pages 30 s, so everything acknowledged before the loss
    # (8 s at 2,000 records/s, as the spec says) is gone
    spec = yaml.safe_load((STUDIES / "zones.yaml").read_text())
    at_s = spec["params"]["power_loss"]["cluster"]["faults"][0]["at.ms"] / 1000.0
    rate = spec["parts"]["power_loss"]["overrides"]["producers"][0]["rate.per.s"]
    for mode in ("isr", "quorum"):
        assert n[f"cluster_loss_rf3_{mode}_fsync_off_acked_lost"] == pytest.approx(rate * at_s, rel=0.03)
    assert n["cluster_loss_rf3_isr_fsync_on_acked_lost"] == n["cluster_loss_rf3_quorum_fsync_on_acked_lost"] == 0


def test_fetch_from_follower_notebook(study_reports):
    n = numbers_of(study_reports, "fetch_from_follower")
    for rate in ("r200", "r10000"):
        # a group in each zone reading every partition from its leader: two thirds of its bytes cross, as many as
        # replication sends to the two followers in the other zones (RF 3)
        assert n[f"{rate}_leader_only_consume_gb_month"] == pytest.approx(
            n[f"{rate}_leader_only_replication_gb_month"], rel=0.02)
        assert n[f"{rate}_rack_aware_consume_gb_month"] == 0  # each reads the replica in its own zone
        assert n[f"{rate}_rack_aware_replication_gb_month"] == n[f"{rate}_leader_only_replication_gb_month"]
        # what it saves is the consumers' share, and the price is the same per GB
        saved = n[f"{rate}_leader_only_consume_gb_month"] / n[f"{rate}_leader_only_gb_month"]
        assert n[f"{rate}_saved_share"] == pytest.approx(saved, abs=0.002)
        assert n[f"{rate}_rack_aware_cost_month"] == pytest.approx(
            n[f"{rate}_leader_only_cost_month"] * (1 - saved), rel=0.01)
        # the producer does not notice; the consumers wait for their follower's HW
        assert n[f"{rate}_rack_aware_produce_latency_ms_p99"] == pytest.approx(
            n[f"{rate}_leader_only_produce_latency_ms_p99"], rel=0.1)
        assert n[f"{rate}_rack_aware_consume_e2e_latency_ms_p50"] > n[f"{rate}_leader_only_consume_e2e_latency_ms_p50"]
    # at 200 records/s before 3.4 a fetch parked on a follower waits out fetch.max.wait.ms (500 ms): the p99 near it
    assert n["v3_3_rack_aware_consume_e2e_latency_ms_p99"] > 400 > n["v4_1_rack_aware_consume_e2e_latency_ms_p99"]


def test_requests_notebook(study_reports):
    """Each part against the formula of the Kafka rule behind it, computed here from the settings the study ran."""
    from kafka_format import v2_capacity
    from helpers import fetcher_of

    from kafkamodel.config.schema import COSTS

    numbers = numbers_of(study_reports, "requests")
    parts = {name: part["overrides"] for name, part in yaml.safe_load((STUDIES / "requests.yaml").read_text())["parts"].items()}
    producer = parts["load_one_partition"]["producers"][0]
    assert not {"batch.size", "record.size.bytes", "buffer.memory"} & set(producer)  # defaults: 16384, 100, 32 MiB
    batch = v2_capacity(16384, 100)  # records in a full batch: what batch.size holds in the v2 format
    # one partition: acks=all commits a full batch per 2L (the connection is muted while a request waits for its
    # commit); acks=1 does not wait, five requests in flight each carry a batch per round trip (2L)
    load = parts["load_one_partition"]
    L, seconds = load["network"]["latency.ms"], load["duration.ms"] / 1000
    capacity = {"all": batch / (2 * L) * 1000, "1": 5 * batch / (2 * L) * 1000}
    # the producer holds at most buffer.memory (default 32 MiB): each batch takes batch.size of it until answered,
    # and send() blocks once it is used up (Kafka's BufferPool)
    held_max = 33554432 // 16384 * batch
    for acks, cap in capacity.items():
        for mode in ("isr", "quorum"):
            assert numbers[f"capacity_acks_{acks}_{mode}_measured_per_s"] == pytest.approx(cap, rel=0.1), (acks, mode)
        # beyond it the backlog grows at offered - capacity, until buffer.memory is full
        top = numbers[f"acks_{acks}_top_load_per_s"]
        assert top > cap and numbers[f"acks_{acks}_top_load_backlog"] == pytest.approx(
            min((top - cap) * seconds, held_max), rel=0.05)
        # below it nothing piles up: at most the five requests in flight and the open batch
        assert numbers[f"acks_{acks}_below_capacity_backlog"] < 6 * batch
    # below the knee acks=all is flat at five queued cycles and half a cycle: (5 + 0.5) x 2L, p99 within one more
    assert numbers["acks_all_below_capacity_p50_ms"] == pytest.approx(5.5 * 2 * L, rel=0.1)
    assert numbers["acks_all_below_capacity_p99_ms"] < 6 * 2 * L + 2 * L
    # acks=1 answers after one round trip and at most linger.ms (5) in the batch
    assert numbers["acks_1_below_capacity_p99_ms"] < 2 * L + 5 + 1
    # every message takes exactly L: the majority's follower and the slowest are equally fast
    assert numbers["isr_vs_quorum_max_p99_difference_ms"] == 0

    # partitions per broker (2 brokers, RF 2, broker 0 leads the even partitions): the leader validates a batch per
    # partition it leads, the busiest fetcher (Kafka's getFetcherId) reads and appends each of its partitions
    unit, fetcher_unit = COSTS["partition.us"].default, COSTS["fetcher.partition.us"].default  # the study's costs

    def predicted_ms(n, fetchers):
        led = [p for p in range(n) if p % 2 == 0]
        busiest = max(sum(1 for p in led if fetcher_of("t", p, fetchers) == k) for k in range(fetchers))
        return (len(led) * unit + busiest * (unit + fetcher_unit)) / 1000

    for fetchers in (1, 4):
        added = numbers[f"partitions1000_fetchers{fetchers}_added_ms"]
        assert added == pytest.approx(predicted_ms(1000, fetchers) - predicted_ms(10, fetchers), rel=0.1)
    # (Jun Rao's 2015 figure, about 20 ms for 1,000, is the validation set's rao-2015 case: Kafka 0.8's fetches)
    assert numbers["partitions1000_fetchers4_added_ms"] < numbers["partitions1000_fetchers1_added_ms"]
    # a leader's 500 partitions share one parity, so getFetcherId puts them on 2 of the 4 fetchers, 250 each
    assert len({fetcher_of("t", p, 4) for p in range(0, 1000, 2)}) == 2
    assert numbers["partitions1000_fetchers4_partitions_per_fetch"] == pytest.approx(250, rel=0.1)

    # a slow follower (round trip: factor x 2L): the regime each run is in, by Kafka's rules
    slow = parts["slow_follower"]
    L, rate, lag = slow["network"]["latency.ms"], slow["producers"][0]["rate.per.s"], slow["broker.replica.lag.time.max.ms"]
    seconds, fetch_max_bytes, linger = slow["duration.ms"] / 1000, 1048576, 5
    regimes = {k: v for k, v in numbers.items() if k.startswith("slow_acks_") and k.endswith("_regime")}
    assert len(regimes) == 8  # the tiny study: acks all and 1 x factors 1, 10, 100, 6000
    for key, regime in regimes.items():
        acks, factor = re.fullmatch(r"slow_acks_(all|1)_factor(\d+)_regime", key).groups()
        rtt = 2 * L * int(factor)
        if acks == "all":  # the LEO waits for the slow follower: it is caught up at every fetch of it
            expected = ("leaves the ISR" if rtt > lag else "backlog grows" if rate > batch / rtt * 1000
                        else "sets the pace" if rtt > linger + 1000 / rate else "unaffected")
        else:  # caught up only to its previous fetch's LEO, and only if a fetch per round trip carries what came
            behind = fetch_max_bytes / rtt < rate * 100 / 1000
            expected = "leaves the ISR" if behind or 2 * rtt > lag else "unaffected"
        assert regime == expected, (key, rtt)
        stem = key[: -len("_regime")]
        if expected == "sets the pace":  # five requests queue behind it, and half a cycle: (5 + 0.5) round trips
            assert numbers[f"{stem}_p50_ms"] == pytest.approx(5.5 * rtt, rel=0.1)
        if expected == "backlog grows":  # a batch per round trip, the rest piles up
            assert numbers[f"{stem}_backlog"] == pytest.approx((rate - batch / rtt * 1000) * seconds, rel=0.1)
        if expected == "leaves the ISR":  # at the first check (every lag/2) after lag without catching up
            assert lag / 1000 <= numbers[f"{stem}_left_isr_s"] <= 1.5 * lag / 1000 + rtt / 1000
    assert regimes["slow_acks_all_factor10_regime"] == "sets the pace"  # the tiny grid covers each regime
    assert regimes["slow_acks_all_factor100_regime"] == "backlog grows"
    assert regimes["slow_acks_1_factor100_regime"] == "unaffected"
    assert regimes["slow_acks_1_factor6000_regime"] == "leaves the ISR"
    # under acks=1 the producer never waits for the follower: its latency does not move with the slowdown
    assert numbers["slow_acks_1_p99_ms_max"] == pytest.approx(numbers["slow_acks_1_p99_ms_min"], rel=0.05)


def test_lag_policies_notebook(study_reports):
    numbers = numbers_of(study_reports, "lag_policies")
    # the 0.8 count rule makes healthy followers shuttle under bursts; the time rule does not
    assert numbers["burst8000_count_rule_isr_shrinks"] >= 1
    assert numbers["burst8000_time_rule_isr_shrinks"] == 0
    # the count rule evicts a dead follower sooner when traffic is heavy; the time rule takes the same time
    assert numbers["evict_ms_count_rule_10000_per_s"] < numbers["evict_ms_count_rule_100_per_s"]
    assert numbers["evict_ms_time_rule_100_per_s"] == pytest.approx(numbers["evict_ms_time_rule_10000_per_s"], abs=1)
    # acks=all stalls for about replica.lag.time.max.ms while a follower is stuck
    assert 1000 <= numbers["stuck_follower_lag1000_max_latency_ms"] <= 2000
    assert 5000 <= numbers["stuck_follower_lag5000_max_latency_ms"] <= 8000


def test_acks_durability_notebook(study_reports):
    numbers = numbers_of(study_reports, "acks_durability")
    assert numbers["p99_ms_acks_1"] < numbers["p99_ms_acks_all"]
    assert numbers["p99_ms_acks_0"] is None  # not in the tiny grid: recorded as missing, not invented
    assert numbers["leader_crash_acks_1_lost"] > 0
    assert numbers["leader_crash_acks_all_lost"] == 0
    assert numbers["isr_collapse_all_mi1_unclean_lost"] > 0
    assert numbers["isr_collapse_all_mi2_clean_lost"] == 0
    assert numbers["isr_collapse_all_mi2_clean_unavailable_s"] > numbers["isr_collapse_all_mi1_unclean_unavailable_s"]
    assert not math.isnan(numbers["isr_collapse_all_mi2_clean_refused"])


def test_delivery_semantics_notebook(study_reports):
    numbers = numbers_of(study_reports, "delivery_semantics")
    # each policy keeps what Kafka documents, in every run (every schedule, and the idempotent producer's resends)
    assert numbers["worst_duplicates_before_processing"] == 0  # at most once
    assert numbers["worst_lost_after_processing"] == 0  # at least once
    assert numbers["worst_lost_auto"] == 0  # auto commit with processing inside the poll loop: at least once
    assert numbers["worst_lost_atomic"] == numbers["worst_duplicates_atomic"] == 0  # exactly once
    # a crash mid-poll: commit-then-process never gets to the rest of the poll, process-then-commit redoes its start
    assert numbers["crash_rejoin_lost_before_processing"] > 0
    assert numbers["crash_rejoin_duplicates_after_processing"] > 0
    assert numbers["repeated_lost_before_processing"] > 0 and numbers["repeated_duplicates_auto"] > 0
    # members leaving and joining (no crash) commit before they let go: nothing lost or redone under any policy
    assert numbers["no_crash_worst_lost"] == numbers["no_crash_worst_duplicates"] == 0
    # the numbers are the model's: before_processing under crash + rejoin is the shipped delivery-at-most-once
    # (the mean over the tiny study's seeds 1 and 2)
    shipped = load_scenario(SCENARIOS / "delivery-at-most-once.yaml")
    lost = [simulate(shipped.with_overrides({"seed": seed})).summary["consumed_lost"] for seed in (1, 2)]
    assert numbers["crash_rejoin_lost_before_processing"] == pytest.approx(sum(lost) / 2, abs=0.05)
    # latency: without faults a burst (2000 records, 2 members, 1.5 ms each) drains in 1.5 s whatever the policy;
    # after a crash the member's partitions wait for its session to expire (6 s, heartbeats every 2 s: at least 4 s)
    assert numbers["none_p99_s_after_processing"] == pytest.approx(2000 / 2 * 1.5 / 1000, rel=0.15)
    p50s = [numbers[f"no_fault_p50_s_{p}"] for p in ("auto", "before_processing", "after_processing", "atomic")]
    assert max(p50s) <= 1.05 * min(p50s)
    assert numbers["crash_rejoin_p99_s_after_processing"] > 4
    # the idempotent producer leaves nothing twice in the log; without it, resends after the leader crash do
    assert numbers["log_duplicates_idempotent"] == 0
    assert numbers["log_duplicates_not_idempotent"] > 0
    # no consumer policy undoes them: atomic, which redoes nothing, processes exactly the log's duplicates twice;
    # before_processing may lose one copy of some to the consumer crash (at most once), never more than that
    log_dups = numbers["retries_not_idempotent_log_duplicates_atomic"]
    assert numbers["retries_not_idempotent_duplicates_atomic"] == log_dups > 0
    assert 0 < numbers["retries_not_idempotent_duplicates_before_processing"] <= log_dups
    assert numbers["retries_idempotent_duplicates_atomic"] == 0


def test_recovery_protocols_notebook(study_reports):
    numbers = numbers_of(study_reports, "recovery_protocols")
    assert numbers["kip101_truncation_anomaly_committed_lost"] > 0 == numbers["kip101_truncation_fix_committed_lost"]
    assert numbers["kip101_power_loss_anomaly_divergence"] > 0 == numbers["kip101_power_loss_fix_divergence"]
    assert numbers["jepsen_2013_anomaly_acked_lost"] > 0 == numbers["jepsen_2013_fix_acked_lost"]
    assert numbers["jepsen_2013_fix_unavailable_s"] > numbers["jepsen_2013_anomaly_unavailable_s"]


def test_operations_notebook(study_reports):
    """Against the study's own settings: each broker down 3 s and, behind full_isr_for.ms 5 s, at least 5 s more;
    a throttle of 50,000 B/s is below the moving partition's ingress (4,000 records/s over 4 partitions, each at
    least 106 bytes), so that move never finishes while the faster ones do, each in about the bytes it moved over
    its throttle; unthrottled, the move takes the leader's 100 Mbps NIC and the produce p99 during it exceeds the
    run's; at 500,000 B/s it stays at it. (At 2,000,000 B/s it need not: the leader counts the in-sync followers'
    bytes against its rate as Kafka does, so the new replica is left out of responses, waits, and then takes a
    burst of up to replica.fetch.max.bytes that holds the NIC: docs/restarts.md.)"""
    numbers = numbers_of(study_reports, "operations")
    assert numbers["roll_full_isr_5s_controlled_s"] >= 3 * (3 + 5)
    assert numbers["roll_no_under_replicated_controlled_under_min_isr_s"] == 0
    assert numbers["roll_no_under_replicated_uncontrolled_under_min_isr_s"] == 0
    assert numbers["roll_wait_0s_controlled_under_min_isr_s"] > 0
    assert numbers["roll_wait_0s_controlled_errors"] > numbers["roll_no_under_replicated_controlled_errors"]
    assert 4000 / 4 * 106 > 50000
    assert numbers["reassign_50000_finished"] is False
    assert numbers["reassign_500000_finished"] is True and numbers["reassign_2000000_finished"] is True
    assert numbers["reassign_none_finished"] is True
    assert numbers["reassign_none_s"] < numbers["reassign_2000000_s"] < numbers["reassign_500000_s"]
    # 30 s of 1,000 records/s of at least 106 bytes (3.2 MB) at 12.5 MB/s: at least 0.25 s, unthrottled
    assert numbers["reassign_none_s"] >= 30 * 1000 * 106 / 12.5e6
    assert numbers["reassign_none_p99_during_ms"] > 5 * numbers["reassign_none_p99_ms"]
    assert numbers["reassign_500000_p99_during_ms"] < 2 * numbers["reassign_500000_p99_ms"]
    # broker 0's fetches 20x slower from 6 s to 20 s (70% of the run): every acks=all write then waits for a fetch
    # leg of at least 20 x network.latency.ms (1 ms); the calm run has the same shutdown and its leader moves (whose
    # metadata round trips and backoffs now set its p99: issue 35), so the slow run's p99 is above it too
    assert numbers["preferred_lag_20_none_p99_ms"] >= 20 * 1
    assert numbers["preferred_lag_20_none_p99_ms"] > numbers["preferred_lag_1_none_p99_ms"]
    assert numbers["preferred_lag_20_preferred_p999_ms"] > numbers["preferred_lag_20_none_p999_ms"]
    # the roll per version (issue 35): on 3.6 a batch sent to a moved leader waits retry.backoff.ms (100 ms) and a
    # metadata round trip; on 3.7 the answer names the new leader and the resend goes at once (KIP-951's hints), so
    # the roll's p99 falls below the shortest backoff KIP-580 draws (0.8 x 100 ms)
    assert numbers["roll_versions_3_6_hints"] == 0 < numbers["roll_versions_3_7_hints"]
    assert numbers["roll_versions_3_6_p99_ms"] >= 100
    assert numbers["roll_versions_3_7_p99_ms"] < 0.8 * 100


def test_control_plane_notebook(study_reports):
    """Against the settings each version runs with (docs/controller.md): a dead broker's partitions are elected one
    ZooKeeper write (or KRaft record) each, so the time to the last new leader grows by that much per partition it
    led; a new ZooKeeper controller first reads every partition of the cluster (3 per partition the dead broker
    led: 3 brokers each lead a third) and then writes the elections; from 1.1 a controlled shutdown moves the
    leaderships in one batch, before 1.1 one at a time."""
    from kafkamodel.config.settings import Settings

    numbers = numbers_of(study_reports, "control_plane")
    spec = yaml.safe_load((STUDIES / "control_plane.yaml").read_text())
    text = json.dumps(spec)
    assert "\"controller." not in text and "\"controller\":" not in text  # every version's default controller costs
    c = {v: Settings.of(load_scenario({"name": "c", "kafka.version": v})).controller for v in ("0.10", "1.1", "4.1")}
    assert numbers["broker_failure_0_10_ms_per_partition"] == pytest.approx(c["0.10"].zookeeper_write_ms, rel=1e-3)
    assert numbers["broker_failure_1_1_ms_per_partition"] == pytest.approx(c["1.1"].zookeeper_write_ms, rel=1e-3)
    assert numbers["broker_failure_4_1_ms_per_partition"] == pytest.approx(c["4.1"].kraft_record_ms, rel=1e-2)
    for v, key in (("0.10", "0_10"), ("1.1", "1_1")):
        expected = 3 * c[v].zookeeper_read_ms + c[v].zookeeper_write_ms
        assert numbers[f"controller_failover_{key}_ms_per_partition"] == pytest.approx(expected, rel=1e-3)
    assert numbers["controller_failover_4_1_ms_per_partition"] < 0.01  # the quorum keeps the role: no reload
    # one batch of 1,000 leaderships from 1.1 (the longest wait: the batch, then the LeaderAndIsr's 1 ms trip)
    assert numbers["controlled_shutdown_1_1_1000_s"] == pytest.approx(1000 * c["1.1"].zookeeper_write_ms / 1000 + 0.001,
                                                                     abs=1e-3)
    # before 1.1 one partition at a time: the last of 100 waits for 100 writes
    assert numbers["controlled_shutdown_0_10_100_s"] >= 100 * c["0.10"].zookeeper_write_ms / 1000


def test_versions_notebook(study_reports):
    numbers = numbers_of(study_reports, "versions")
    # KIP-101's first scenario as told loses committed records on 0.10, none on 4.1; the analysis puts the
    # disappearance at 4.1, the first version it ran after the one that brought the fix (0.11)
    assert numbers["follower_restart_0_10_committed_lost"] > 0 == numbers["follower_restart_4_1_committed_lost"]
    assert numbers["follower_restart_gone_from"] == "4.1"
    assert numbers["double_power_loss_0_10_divergence"] > 0 == numbers["double_power_loss_0_11_divergence"]
    assert numbers["double_power_loss_gone_from"] == "0.11"
    assert numbers["jepsen_partition_0_10_acked_lost"] > 0 == numbers["jepsen_partition_2_8_acked_lost"]
    assert numbers["last_replica_standing_3_9_committed_lost"] > 0 == numbers["last_replica_standing_4_1_committed_lost"]
    # the bounce with the producer's defaults: 3.0's acks=all (KIP-679) loses nothing acknowledged
    assert numbers["leader_bounce_2_8_acked_lost"] > 0 == numbers["leader_bounce_4_1_acked_lost"]  # 2.8: acks=1
    # unwritable for the era's session timeout: ZooKeeper's 18 s (2.5+), counted from the crash; KRaft's 9 s after
    # the last heartbeat, which came at most one interval (2 s) before the crash (each broker heartbeats on its own
    # phase, drawn from the seed), so between 7 and 9 s
    assert numbers["leader_bounce_2_8_unavailable_s"] == pytest.approx(18.0, abs=0.2)
    assert 9.0 - 2.0 - 0.2 <= numbers["leader_bounce_4_1_unavailable_s"] <= 9.0 + 0.2
    # leader epochs end the double power loss's divergence, not its loss of what no replica fsynced: the committed
    # loss is there on both sides of the fix, and the finding says so before it lists the fixes
    assert numbers["double_power_loss_0_11_committed_lost"] > 0 < numbers["double_power_loss_0_10_committed_lost"]
    assert numbers["double_power_loss_committed_records_lost_gone_from"] is None
    finding = json.loads((study_reports / "versions.json").read_text())["finding"]
    assert finding.startswith("The double power loss loses ") and "committed records in every version" in finding
    assert "follower restart 4.1" in finding and "double power loss's divergence 0.11" in finding


def test_study_notebook_names_missing_aggregates(tmp_path):
    with pytest.raises(pm.PapermillExecutionError, match="no aggregates for 'lag_policies'"):
        execute("20_lag_policies.ipynb", tmp_path / "x.ipynb", study="lag_policies", processed=str(tmp_path / "none"))
