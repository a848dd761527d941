"""Sweep specs: validation names the field, expansion is deterministic, the CLI refuses bad flags in one line."""

from __future__ import annotations

import textwrap

import pytest

from kafkamodel import cli
from kafkamodel.kit.spec import SpecError, column_for_path
from kafkamodel.kit.specfile import all_specs, load_spec
from kafkamodel.theory import predict, replicas_needed


def write(tmp_path, text: str):
    path = tmp_path / "spec.yaml"
    path.write_text(textwrap.dedent(text))
    return path


GOOD = """
    study: demo
    notebook: 00_explore.ipynb
    base: jepsen-2013           # Kafka 0.8: replica.lag.max.messages is a property
    seeds: 2
    params:
      rule:
        time: {broker.replica.lag.max.messages: null}
        count: {broker.replica.lag.max.messages: 4000}
    grid:
      producers[*].acks: [1, all]
      rule: [time, count]
"""


def test_shipped_specs_load():
    specs = {s.study: s for s in all_specs()}
    assert {"quorum_vs_isr", "lag_policies", "acks_durability", "delivery_semantics", "recovery_protocols",
            "versions"} <= set(specs)
    assert {p.name for p in specs["delivery_semantics"].parts} == {"consumer_crashes", "producer_retries"}
    assert all(len(s.points(1)) > 0 for s in specs.values() if not s.is_pending)


def test_expansion_is_deterministic_and_scaled(tmp_path):
    spec = load_spec(write(tmp_path, GOOD))
    points = spec.points(1)
    assert len(points) == 2 * 2 * 2
    assert [p.run_id for p in points] == [p.run_id for p in load_spec(write(tmp_path, GOOD)).points(1)]
    assert len({p.run_id for p in points}) == 8 and len({p.config_id for p in points}) == 4
    assert points[0].columns == {"acks": "1", "rule": "time"}  # acks 1 and all: one string column
    assert points[0].overrides == {"producers[*].acks": 1, "broker.replica.lag.max.messages": None}
    assert len(spec.points(2.5)) == 4 * 5  # seeds 1..5
    assert {p.seed for p in spec.points(0.1)} == {1}
    # another override value is another configuration, with a new id
    other = load_spec(write(tmp_path, GOOD.replace("4000", "5000")))
    assert {p.config_id for p in other.points(1)} != {p.config_id for p in points}


def test_column_names_of_override_paths():
    assert column_for_path("topics[0].replication.factor") == "replication_factor"
    assert column_for_path("producers[*].acks") == "acks"
    assert column_for_path("broker.min.insync.replicas") == "min_insync_replicas"
    assert column_for_path("replication") == "replication"


@pytest.mark.parametrize("changes, message", [
    ([("seeds: 2", "seeds: 0")], "seeds: must be an integer >= 1"),
    ([("grid:", "gird:")], "gird: unknown key; did you mean 'grid'?"),
    ([("rule: [time, count]", "rule: [time, cnt]")], "grid.rule[1]: 'cnt' is not one of time, count"),
    ([("producers[*].acks: [1, all]", "producers[*].acks: [1, 2]")], "producers[0].acks: must be 0, 1, all or -1, got 2"),
    ([("base: jepsen-2013", "base: jepsen-2031")], "base: no scenario 'jepsen-2031'"),
    ([("notebook: 00_explore.ipynb", "notebook: 99_nothing.ipynb")], "notebook: no notebook '99_nothing.ipynb'"),
    ([("study: demo", "study: Demo Study")], "study: must be a name like quorum_vs_isr"),
    ([("  rule:\n", "  partition:\n"), ("rule: [time", "partition: [time")],
     "params.partition: 'partition' is a column every run row already has"),
])
def test_bad_specs_name_the_field(tmp_path, changes, message):
    text = GOOD
    for old, new in changes:
        text = text.replace(old, new)
    with pytest.raises(SpecError) as err:
        load_spec(write(tmp_path, text))
    assert message in str(err.value)
    assert str(tmp_path / "spec.yaml") in str(err.value)


def test_unknown_study_suggests_the_nearest():
    with pytest.raises(SpecError, match="did you mean 'lag_policies'"):
        load_spec("lag_policy")


@pytest.mark.parametrize("argv, message", [
    (["sweep", "quorum_vs_isr", "--workers", "0"], "--workers: must be an integer >= 1, got '0'"),
    (["sweep", "quorum_vs_isr", "--timeout", "soon"], "--timeout: must be a number of seconds > 0"),
    (["sweep", "quorum_vs_isr", "--scale", "-1"], "scale: must be a number > 0, got -1.0"),
    (["aggregate", "quorum_vs_isr", "--master", "local[two]"], "--master: must be a Spark master URL"),
    (["report", "nope"], "nope: no such study or spec file"),
    (["study", "--workers", "many"], "--workers: must be an integer >= 1"),
])
def test_cli_refuses_bad_flags_in_one_line(argv, message, capsys, monkeypatch):
    monkeypatch.setenv("SCALE", "1")
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and message in err[0]


def test_a_pending_study_has_no_points_to_sweep(tmp_path, capsys, monkeypatch):
    path = write(tmp_path, """
        study: later
        title: Later
        question: Something the model cannot do yet.
        status: pending
        pending: Waiting for the model.
    """)
    assert load_spec(path).is_pending
    monkeypatch.setenv("SCALE", "1")
    assert cli.main(["sweep", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "later: pending (Waiting for the model.)" in err[0]


def test_scale_from_the_environment_is_checked(capsys, monkeypatch):
    monkeypatch.setenv("SCALE", "big")
    assert cli.main(["sweep", "quorum_vs_isr"]) == 2
    assert "SCALE: must be a number > 0, got 'big'" in capsys.readouterr().err


def test_theory_for_other_distributions():
    # constant one-way latency: every write takes exactly four hops, whatever the mode
    for mode in ("isr", "quorum"):
        assert predict(3, mode, 0.5).p99 == pytest.approx(2.0, abs=0.01)
    # heavier tails hurt the maximum (ISR) more than the median (quorum)
    light = {"dist": "lognormal", "median": 1.0, "sigma": 0.25}
    heavy = {"dist": "lognormal", "median": 1.0, "sigma": 1.0}
    gap = lambda d: predict(5, "isr", d).p99 - predict(5, "quorum", d).p99  # noqa: E731
    assert gap(heavy) > 3 * gap(light) > 0
    assert [replicas_needed(f, "isr") for f in (1, 2, 3)] == [2, 3, 4]
    assert [replicas_needed(f, "quorum") for f in (1, 2, 3)] == [3, 5, 7]
