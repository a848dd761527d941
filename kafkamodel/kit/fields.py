"""One declarative checker for every spec kind's keys (the scenario schema's ``Key`` table, for specs).

Each kind (a sweep spec, a campaign, a durability spec, a validation case) declares its keys once, as a table
``{key: Field(check, default)}``; ``read(raw, table, where, problems)`` gives back the values (the defaults
filled in) and adds one line per problem, each naming the field's path and the rule:

* a key the table does not declare: ``<path>: unknown key ...`` (with a did-you-mean);
* a required key left out: ``<path>: required`` (and what it is for);
* a value against its rule: ``<path>: must be ..., got <value>``.

What relates several keys (a grid's values to its params, a run's window to its duration) stays with its kind.
The checks below are the rules specs share; a kind writes its own as ``rule(test, "must be ...")``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ..config.scenario import did_you_mean, unknown_key

Check = Callable[[Any, str], "list[str]"]  # (value, path) -> problems, each 'path: rule'
REQUIRED = object()  # the default of a key that must be given
ABSENT = object()  # the default of a key left out of the values when it is not given
NAME = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True)
class Field:
    check: Check | None = None  # None: any value (its kind checks it)
    default: Any = ABSENT  # the value when the key is left out, REQUIRED, or ABSENT (then not in the values)
    required: str = ""  # what a missing required key is for, said after "required"


def read(raw: Any, fields: Mapping[str, Field], where: str, problems: list[str], *, what: str = "") -> dict:
    """`raw` as a mapping of `fields`' keys: {key: value}, the defaults filled in for the keys left out (a value
    that breaks its rule is replaced by its default, or left out), {} when `raw` is not a mapping; each problem
    added to `problems`."""
    prefix = f"{where}." if where else ""
    if not isinstance(raw, Mapping):
        problems.append(f"{where or 'spec'}: must be a mapping{what}, got {type(raw).__name__}")
        return {}
    problems.extend(unknown_key(key, fields, f"{prefix}{key}") for key in raw if key not in fields)
    values = {}
    for key, field in fields.items():
        path = f"{prefix}{key}"
        if key not in raw:
            if field.default is REQUIRED:
                problems.append(f"{path}: required" + (f" ({field.required})" if field.required else ""))
            elif field.default is not ABSENT:
                values[key] = field.default
            continue
        found = field.check(raw[key], path) if field.check is not None else []
        problems.extend(found)
        if not found:
            values[key] = raw[key]
        elif field.default is not REQUIRED and field.default is not ABSENT:
            values[key] = field.default
    return values


def rule(test: Callable[[Any], bool], says: str) -> Check:
    """A check from a test and what it asks in words: ``path: <says>, got <value>`` when the test fails."""
    def check(value: Any, path: str) -> list[str]:
        return [] if test(value) else [f"{path}: {says}, got {value!r}"]

    return check


def is_integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def count(low: int, why: str = "") -> Check:
    """An integer >= `low` (`why`: what it counts, said in parentheses)."""
    return rule(lambda v: is_integer(v) and v >= low, f"must be an integer >= {low}" + (f" ({why})" if why else ""))


def integer() -> Check:
    return rule(is_integer, "must be an integer")


def text() -> Check:
    return rule(lambda v: isinstance(v, str) and bool(v.strip()), "must be a non-empty string")


def string() -> Check:
    return rule(lambda v: isinstance(v, str), "must be a string")


def flag() -> Check:
    return rule(lambda v: isinstance(v, bool), "must be true or false")


def name_like(example: str) -> Check:
    return rule(lambda v: isinstance(v, str) and bool(NAME.match(v)), f"must be a name like {example} ([a-z][a-z0-9_]*)")


def one_of(options, why: str = "", hint: bool = False) -> Check:
    """One of `options` (`why`: what they mean, in parentheses; `hint`: a did-you-mean after the value)."""
    says = f"must be one of {', '.join(map(str, options))}" + (f" ({why})" if why else "")

    def check(value: Any, path: str) -> list[str]:
        if not isinstance(value, bool) and _hashable(value) and value in options:
            return []
        return [f"{path}: {says}, got {value!r}" + (did_you_mean(value, options) if hint else "")]

    return check


def mapping(of: str = "") -> Check:
    """A mapping (`of`: of what, said after it); given as its type's name when it is not one."""
    def check(value: Any, path: str) -> list[str]:
        if value is None or isinstance(value, Mapping):
            return []
        return [f"{path}: must be a mapping{of}, got {type(value).__name__}"]

    return check


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True
