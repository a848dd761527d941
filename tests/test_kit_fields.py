"""kafkamodel.kit.fields: the one declarative checker of every spec kind's keys (one line per problem: the field's
path and the rule), and each spec kind reading its keys through it."""

from __future__ import annotations

import pytest

from kafkamodel.kit import fields as F

TABLE = {
    "name": F.Field(F.name_like("safety"), F.REQUIRED, "a name like safety"),
    "seeds": F.Field(F.count(1, "seeds per configuration"), 3),
    "status": F.Field(F.one_of(("active", "pending"))),
    "about": F.Field(F.text()),
    "overrides": F.Field(F.mapping(" of override path -> value"), {}),
    "grid": F.Field(),
}


def test_a_good_mapping_gives_its_values_and_the_defaults():
    problems = []
    got = F.read({"name": "demo", "grid": {"acks": [1]}}, TABLE, "", problems)
    assert problems == []
    # a default fills a key left out; a key without one (ABSENT) stays out, as if never declared
    assert got == {"name": "demo", "seeds": 3, "overrides": {}, "grid": {"acks": [1]}}


@pytest.mark.parametrize("raw, line", [
    ({"name": "demo", "seed": 2}, "parts.x.seed: unknown key; did you mean 'seeds'?"),
    ({}, "parts.x.name: required (a name like safety)"),
    ({"name": "Demo"}, "parts.x.name: must be a name like safety ([a-z][a-z0-9_]*), got 'Demo'"),
    ({"name": "demo", "seeds": 0}, "parts.x.seeds: must be an integer >= 1 (seeds per configuration), got 0"),
    ({"name": "demo", "seeds": True}, "parts.x.seeds: must be an integer >= 1 (seeds per configuration), got True"),
    ({"name": "demo", "status": "paused"}, "parts.x.status: must be one of active, pending, got 'paused'"),
    ({"name": "demo", "status": ["active"]}, "parts.x.status: must be one of active, pending, got ['active']"),
    ({"name": "demo", "about": "  "}, "parts.x.about: must be a non-empty string, got '  '"),
    ({"name": "demo", "overrides": [1]}, "parts.x.overrides: must be a mapping of override path -> value, got list"),
])
def test_each_problem_is_one_line_naming_the_field_and_the_rule(raw, line):
    problems = []
    F.read(raw, TABLE, "parts.x", problems)
    assert problems == [line]


def test_a_value_against_its_rule_gives_way_to_its_default():
    problems = []
    got = F.read({"name": "demo", "seeds": -1, "status": "x"}, TABLE, "", problems)
    assert got["seeds"] == 3 and "status" not in got and len(problems) == 2


def test_not_a_mapping_is_one_line():
    problems = []
    assert F.read([1, 2], TABLE, "settings.safe", problems, what=" with promise, about") == {}
    assert problems == ["settings.safe: must be a mapping with promise, about, got list"]


def test_a_rule_written_by_its_kind():
    check = F.rule(lambda v: F.is_integer(v) and 1990 <= v <= 2100, "must be a year (an integer)")
    assert check(2014, "source.year") == []
    assert check("2014", "source.year") == ["source.year: must be a year (an integer), got '2014'"]


def test_every_spec_kind_declares_its_keys_as_fields():
    """The sweep spec, the campaign spec, the durability spec and study, and the validation case: each reads its
    keys through one table of Fields (no hand-written key list left)."""
    from kafkamodel.campaign import spec as campaign
    from kafkamodel.durability import spec as durability, study as durability_study
    from kafkamodel.kit import specfile
    from kafkamodel.validation import cases

    tables = [specfile.SWEEP, specfile.PART, campaign.CAMPAIGN, campaign.SETTING, campaign.SHRINK, durability.SPEC,
              durability_study.STUDY, durability_study.PROFILE, cases.TOP, cases.SOURCE, cases.RUN, cases.FIGURE,
              cases.PUBLISHED, cases.QUANTITY]
    for table in tables:
        assert table and all(isinstance(f, F.Field) for f in table.values())
