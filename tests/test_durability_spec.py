"""kafkamodel/durability/spec.py: the failure-rate spec (its defaults, and a table of bad failures each refused
in one line naming its field)."""

from __future__ import annotations

import pytest

from kafkamodel.durability.spec import load_durability
from kafkamodel.kit.spec import SpecError
from durability_specs import failures_spec as _spec


@pytest.mark.parametrize("failures, field, rule", [
    ({"broker.crash.per.year": -1}, "failures.broker.crash.per.year", "must be a rate >= 0"),
    ({"zone.outage.per.year": {"a": -0.5}}, "failures.zone.outage.per.year.a", "must be a rate >= 0"),
    ({"broker.crash.per.year": 1000, "broker.restart.ms": 86400000},
     "failures.broker.crash.per.year", "a broker would crash again before it restarts"),
    ({"machine.failure.per.year": 400, "machine.replace.hours": 24},
     "failures.machine.failure.per.year", "a machine would fail again before it is replaced"),
    ({"machine.crash.per.year": -0.1}, "failures.machine.crash.per.year", "must be a rate >= 0"),
    ({"machine.crash.per.year": 400, "broker.restart.ms": 86400000},
     "failures.machine.crash.per.year", "a machine would crash again before its broker restarts"),
    ({"zone.power.loss.per.year": {"d": 1}}, "failures.zone.power.loss.per.year.d", "no zone 'd'"),
    ({"broker.crash.per.yaer": 1}, "failures.broker.crash.per.yaer", "broker.crash.per.year"),
    ({"zone.outage.hours": 0}, "failures.zone.outage.hours", "must be a duration > 0"),
    ({"broker.pause.per.year": -2}, "failures.broker.pause.per.year", "must be a rate >= 0"),
    ({"broker.pause.ms": 0}, "failures.broker.pause.ms", "must be a duration > 0"),
    ({"broker.pause.per.year": 1100, "broker.pause.ms": 30 * 86400000},
     "failures.broker.pause.per.year", "a broker would pause again before it resumes"),
    ({"broker.slow.per.year": -1}, "failures.broker.slow.per.year", "must be a rate >= 0"),
    ({"broker.slow.ms": -5}, "failures.broker.slow.ms", "must be a duration > 0"),
    ({"broker.slow.factor": 0.5}, "failures.broker.slow.factor", "must be a factor >= 1"),
    ({"broker.slow.factor": "fast"}, "failures.broker.slow.factor", "must be a factor >= 1"),
    ({"broker.slow.per.year": 400, "broker.slow.ms": 86400000},
     "failures.broker.slow.per.year", "a broker would slow down again before its slow spell ends"),
    ({"zone.partition.per.year": -0.1}, "failures.zone.partition.per.year", "must be a rate >= 0"),
    ({"zone.partition.per.year": {"e": 1}}, "failures.zone.partition.per.year.e", "no zone 'e'"),
    ({"zone.partition.minutes": 0}, "failures.zone.partition.minutes", "must be a duration > 0"),
    ({"zone.partition.per.year": {"b": 60000}, "zone.partition.minutes": 10},
     "failures.zone.partition.per.year", "zone b: 60000 per year, each 10 minutes long: the zone would fail again"),
])
def test_bad_failures_are_one_line_naming_the_field(tmp_path, failures, field, rule):
    with pytest.raises(SpecError) as info:
        load_durability(_spec(tmp_path, failures))
    first = info.value.problems[0]
    assert f": {field}: " in first and rule in first, first


def test_spec_defaults_and_zone_rates(tmp_path):
    spec = load_durability(_spec(tmp_path, {"zone.outage.per.year": {"b": 0.3}}))
    f = spec.failures
    assert f.outage_per_year == {"b": 0.3}  # zones not named: no outage
    assert f.power_loss_per_year == {"a": 0.2, "b": 0.2, "c": 0.2}  # a number: every zone
    assert f.replace_years == pytest.approx(24 / (365.25 * 24))
