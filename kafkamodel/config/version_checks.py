"""What a scenario's ``kafka.version`` decides while it is validated (the table itself is ``versions``).

* ``resolve_version``: the release line and metadata mode in force;
* ``version_checks``: a property the version lacks, a value naming a
  mechanism it lacks, a ``broker.truncation`` that disagrees with it, each
  one line;
* ``idempotence_defaults``: what ``enable.idempotence: true`` brought with it
  before 3.0.
"""

from __future__ import annotations

from typing import Mapping

from . import versions
from .schema import LISTS, SECTIONS


def resolve_version(s: dict, problems: list[str]) -> tuple[str, str]:
    """The release line and metadata mode in force (written back resolved); the newest if kafka.version is bad."""
    version = versions.canonical(s["kafka.version"]) or versions.NEWEST
    metadata = s["kafka.metadata"]
    if metadata in (versions.ZOOKEEPER, versions.KRAFT):
        problems.extend(versions.check_metadata(version, metadata))
    else:
        metadata = versions.default_metadata(version)
    s["kafka.version"], s["kafka.metadata"] = version, metadata
    return version, metadata


def idempotence_defaults(s: dict, given: Mapping, version: str, metadata: str) -> None:
    """From 0.11 to 2.8 a producer with enable.idempotence: true takes acks all, retries 2147483647 and (0.11)
    one request in flight unless it sets them (KafkaProducer overrides those defaults; from 3.0 they are Kafka's)."""
    items = given.get("producers")
    in_flight = versions.mechanisms(version, metadata).idempotence_max_in_flight
    for p, mine in zip(s["producers"], items if isinstance(items, list) else []):
        if not isinstance(mine, Mapping) or mine.get("enable.idempotence") is not True:
            continue
        for key, value in (("acks", "all"), ("retries", versions.MAX_INT),
                           ("max.in.flight.requests.per.connection", in_flight)):
            if mine.get(key) is None:
                p[key] = value


def version_checks(s: dict, given: Mapping, version: str, metadata: str, problems: list[str]) -> None:
    """Properties the version lacks, values naming a mechanism it lacks, and a broker.truncation that disagrees."""
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
                problem = (versions.name_problem(name, key, version, metadata, f"{where}.{key}")
                           or versions.value_problem(name, key, value, version, f"{where}.{key}"))
                if problem:
                    problems.append(problem)
    truncation = (given.get("broker") or {}).get("truncation") if isinstance(given.get("broker"), Mapping) else None
    rule = versions.mechanisms(version, metadata).truncation
    if truncation is not None and truncation != rule and truncation in ("high_watermark", "leader_epoch"):
        since = 'kafka.version "0.10" or older' if truncation == "high_watermark" else 'kafka.version "0.11" or later'
        problems.append(f"broker.truncation: Kafka {version} truncates by {rule.replace('_', ' ')}, not "
                        f"{truncation.replace('_', ' ')} (KIP-101, 0.11); leave it out, or set {since}")
