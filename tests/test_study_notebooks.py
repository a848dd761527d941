"""Every notebook runs under papermill with tiny parameters; the numbers it records are read back and checked.

The recovery-protocols notebook is executed (and checked) by the end-to-end
test in test_study_pipeline.py, through ``report``.
"""

from __future__ import annotations

import math

import papermill as pm
import pytest

from kafkamodel import load_scenario, simulate
from kafkamodel.paths import NOTEBOOKS, ROOT, SCENARIOS
from kafkamodel.study.headline import read_headline
from kafkamodel.study.sweep import KERNEL_ARGS


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


def test_explorer_names_a_bad_parameter(tmp_path):
    with pytest.raises(pm.PapermillExecutionError, match="parameter seed: must be an integer"):
        execute("00_explore.ipynb", tmp_path / "bad.ipynb", seed="seven", plots=False)


def test_quorum_vs_isr_notebook(aggregated, tmp_path):
    numbers = execute("10_quorum_vs_isr.ipynb", tmp_path / "q.ipynb", study="quorum_vs_isr",
                      processed=str(aggregated("quorum_vs_isr")))
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


def test_lag_policies_notebook(aggregated, tmp_path):
    numbers = execute("20_lag_policies.ipynb", tmp_path / "l.ipynb", study="lag_policies",
                      processed=str(aggregated("lag_policies")))
    # the 0.8 count rule makes healthy followers shuttle under bursts; the time rule does not
    assert numbers["burst8000_count_rule_isr_shrinks"] >= 1
    assert numbers["burst8000_time_rule_isr_shrinks"] == 0
    # the count rule evicts a dead follower sooner when traffic is heavy; the time rule takes the same time
    assert numbers["evict_ms_count_rule_10000_per_s"] < numbers["evict_ms_count_rule_100_per_s"]
    assert numbers["evict_ms_time_rule_100_per_s"] == pytest.approx(numbers["evict_ms_time_rule_10000_per_s"], abs=1)
    # acks=all stalls for about replica.lag.time.max.ms while a follower is stuck
    assert 1000 <= numbers["stuck_follower_lag1000_max_latency_ms"] <= 2000
    assert 5000 <= numbers["stuck_follower_lag5000_max_latency_ms"] <= 8000


def test_acks_durability_notebook(aggregated, tmp_path):
    numbers = execute("30_acks_durability.ipynb", tmp_path / "a.ipynb", study="acks_durability",
                      processed=str(aggregated("acks_durability")))
    assert numbers["p99_ms_acks_1"] < numbers["p99_ms_acks_all"]
    assert numbers["p99_ms_acks_0"] is None  # not in the tiny grid: recorded as missing, not invented
    assert numbers["leader_crash_acks_1_lost"] > 0
    assert numbers["leader_crash_acks_all_lost"] == 0
    assert numbers["isr_collapse_all_mi1_unclean_lost"] > 0
    assert numbers["isr_collapse_all_mi2_clean_lost"] == 0
    assert numbers["isr_collapse_all_mi2_clean_unavailable_s"] > numbers["isr_collapse_all_mi1_unclean_unavailable_s"]
    assert not math.isnan(numbers["isr_collapse_all_mi2_clean_refused"])


def test_delivery_semantics_notebook(aggregated, tmp_path):
    numbers = execute("40_delivery_semantics.ipynb", tmp_path / "d.ipynb", study="delivery_semantics",
                      processed=str(aggregated("delivery_semantics")))
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
    at_most_once = simulate(load_scenario(SCENARIOS / "delivery-at-most-once.yaml").with_overrides({"seed": 1})).summary
    assert numbers["crash_rejoin_lost_before_processing"] == at_most_once["consumed_lost"]
    # latency: without faults a burst (2000 records, 2 members, 1.5 ms each) drains in 1.5 s whatever the policy;
    # after a crash the member's partitions wait for its session to expire (6 s, heartbeats every 2 s: at least 4 s)
    assert numbers["none_p99_s_after_processing"] == pytest.approx(2000 / 2 * 1.5 / 1000, rel=0.15)
    p50s = [numbers[f"no_fault_p50_s_{p}"] for p in ("auto", "before_processing", "after_processing", "atomic")]
    assert max(p50s) <= 1.05 * min(p50s)
    assert numbers["crash_rejoin_p99_s_after_processing"] > 4
    # the idempotent producer leaves nothing twice in the log; without it, resends after the leader crash do
    assert numbers["log_duplicates_idempotent"] == 0
    assert numbers["log_duplicates_not_idempotent"] > 0
    # no consumer policy undoes them: policies that redo nothing process exactly the log's duplicates twice
    for policy in ("before_processing", "atomic"):
        dups = numbers[f"retries_not_idempotent_duplicates_{policy}"]
        assert dups == numbers[f"retries_not_idempotent_log_duplicates_{policy}"] > 0
    assert numbers["retries_idempotent_duplicates_atomic"] == 0


def test_study_notebook_names_missing_aggregates(tmp_path):
    with pytest.raises(pm.PapermillExecutionError, match="no aggregates for 'lag_policies'"):
        execute("20_lag_policies.ipynb", tmp_path / "x.ipynb", study="lag_policies", processed=str(tmp_path / "none"))
