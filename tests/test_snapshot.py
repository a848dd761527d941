"""The model gives exactly the numbers recorded in tests/snapshots/ (a regression harness).

A change that moves numbers on purpose regenerates the snapshot in its own
commit (``make snapshot``) and says which numbers moved and why; see
``tests/snapshot.py``.
"""

from __future__ import annotations

import json

import pytest

import snapshot


def _check(path, cases):
    recorded = json.loads(path.read_text())
    now = snapshot.compute(cases)
    moved = snapshot.differences({k: recorded[k] for k in now if k in recorded}, now)
    missing = sorted(set(now) - set(recorded))
    assert not missing, f"cases without a snapshot (run make snapshot): {missing[:5]}"
    assert not moved, "numbers moved:\n" + "\n".join(moved[:20])
    return recorded, now


def test_shipped_scenarios_give_the_recorded_numbers():
    cases = [(case, s) for case, s in snapshot.scenario_cases() if int(case.rsplit("@", 1)[1]) not in snapshot.EXTRA_SEEDS]
    recorded, now = _check(snapshot.SCENARIOS_FILE, cases)
    assert len(now) == len(list(snapshot.ROOT.joinpath("data", "scenarios").glob("*.yaml")))


@pytest.mark.slow
def test_shipped_scenarios_at_other_seeds_give_the_recorded_numbers():
    cases = [(case, s) for case, s in snapshot.scenario_cases() if int(case.rsplit("@", 1)[1]) in snapshot.EXTRA_SEEDS]
    _check(snapshot.SCENARIOS_FILE, cases)


@pytest.mark.slow
def test_every_study_point_gives_the_recorded_numbers():
    recorded, now = _check(snapshot.STUDIES_FILE, list(snapshot.study_cases()))
    assert set(now) == set(recorded)


def test_the_comparison_names_what_moved():
    old = {"a@1": {"summary": {"x": 1, "y": 2.5}, "tables": {"records": "aa", "events": "bb"}}}
    new = {"a@1": {"summary": {"x": 1, "y": 2.75}, "tables": {"records": "aa", "events": "cc"}},
           "b@1": {"summary": {}, "tables": {}}}
    assert snapshot.differences(old, new) == ["a@1: y 2.5 -> 2.75; table events", "b@1: new case"]
    assert snapshot.differences(old, old) == []
