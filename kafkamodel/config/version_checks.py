"""What a scenario's ``kafka.version`` decides while it is validated (the table itself is ``versions``).

* ``resolve_version``: the release line and metadata mode in force, and the
  mechanisms they run (``versions.Mechanisms``, resolved once per scenario);
* ``version_checks``: a property the version lacks, a value naming a
  mechanism it lacks or disagreeing with one it decides (``broker.truncation``),
  each one line;
* ``idempotence_defaults``: what ``enable.idempotence: true`` brought with it
  before 3.0.
"""

from __future__ import annotations

from typing import Mapping

from . import versions
from .schema import LISTS, SECTIONS
from .settings import authored


def resolve_version(s: dict, problems: list[str]) -> versions.Mechanisms:
    """The mechanisms of the release line and metadata mode in force (both written back resolved); the newest
    version's if kafka.version is bad."""
    version = versions.canonical(s["kafka.version"]) or versions.NEWEST
    metadata = s["kafka.metadata"]
    if metadata in (versions.ZOOKEEPER, versions.KRAFT):
        problems.extend(versions.check_metadata(version, metadata))
    else:
        metadata = versions.default_metadata(version)
    s["kafka.version"], s["kafka.metadata"] = version, metadata
    return versions.mechanisms(version, metadata)


def idempotence_defaults(s: dict, given: Mapping, kafka: versions.Mechanisms) -> None:
    """From 0.11 to 2.8 a producer with enable.idempotence: true takes acks all, retries 2147483647 and (0.11)
    one request in flight unless it sets them (KafkaProducer overrides those defaults; from 3.0 they are Kafka's)."""
    for p, mine in zip(s["producers"], authored(given, "producers", len(s["producers"]))):
        if mine.get("enable.idempotence") is not True:
            continue
        for key, value in (("acks", "all"), ("retries", versions.MAX_INT),
                           ("max.in.flight.requests.per.connection", kafka.idempotence_max_in_flight)):
            if mine.get(key) is None:
                p[key] = value


def version_checks(given: Mapping, kafka: versions.Mechanisms, problems: list[str]) -> None:
    """Properties the version lacks, and values naming a mechanism it lacks or disagreeing with one it decides."""
    def given_items(name: str):
        items = given.get(name)
        if name in SECTIONS:
            return [(name, items)] if isinstance(items, Mapping) else []
        return [(f"{name}[{i}]", item) for i, item in enumerate(items or []) if isinstance(item, Mapping)]

    for name in (*SECTIONS, *LISTS):
        for where, item in given_items(name):
            for key, value in item.items():
                if value is None:
                    continue  # null says nothing: what the version does anyway
                problem = (versions.name_problem(name, key, kafka.version, kafka.metadata, f"{where}.{key}")
                           or versions.value_problem(name, key, value, kafka.version, f"{where}.{key}"))
                if problem:
                    problems.append(problem)
