"""``kafka-topics --describe`` output: read as Kafka prints it, and written from a scenario (the round trip).

Kafka's TopicCommand prints, per topic, a header line and one line per partition, fields separated by tabs
(``TopicCommand.TopicDescription`` / ``PartitionDescription.printDescription``):

    Topic: orders\tTopicId: 3v0o...\tPartitionCount: 6\tReplicationFactor: 3\tConfigs: min.insync.replicas=2
    \tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1,2,0\tIsr: 1,2,0\tElr: \tLastKnownElr: 

The forms of the supported versions differ in details, all read here: before 2.2 (the ZooKeeper-based command)
the header has no space after the colons (``Topic:orders\tPartitionCount:6``); ``TopicId`` appears from 2.8
(omitted while the id is zero); ``Adding Replicas`` / ``Removing Replicas`` while a reassignment runs (2.5+);
``Elr`` and ``LastKnownElr`` from KIP-966 (3.7+, ``N/A`` when the controller has none); ``Leader: none`` (or -1
in old releases) for a partition without a leader; ``MarkedForDeletion: true`` for a topic being deleted.
"""

from __future__ import annotations

import base64
import re
import uuid
from dataclasses import dataclass, field

from ..config import versions
from ..sim.controller.placement import assign
from .errors import InputError

FIELDS = ("TopicId", "Topic", "PartitionCount", "ReplicationFactor", "Configs", "Partition", "Leader", "Replicas",
          "Isr", "Adding Replicas", "Removing Replicas", "Elr", "LastKnownElr", "Offline", "MarkedForDeletion")
_FIELD = re.compile(r"(?:^|(?<=\s))(" + "|".join(re.escape(f) for f in FIELDS) + r"):")

# topic configs the model has, as Kafka names them (topic keys of the scenario)
TOPIC_CONFIGS = ("min.insync.replicas", "unclean.leader.election.enable", "segment.bytes", "retention.ms",
                 "retention.bytes")


@dataclass(frozen=True)
class PartitionLine:
    partition: int
    leader: int | None  # None: "none" or -1
    replicas: tuple[int, ...]  # the preferred leader first
    isr: tuple[int, ...]
    line: int
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()


@dataclass
class TopicDescription:
    name: str
    partition_count: int
    replication_factor: int
    configs: dict[str, tuple[str, int]]  # name -> (value as printed, line)
    line: int
    topic_id: str | None = None
    partitions: list[PartitionLine] = field(default_factory=list)
    marked_for_deletion: bool = False


def fields(text: str) -> dict[str, str]:
    """A describe line's fields: {name: value} in the order printed (values stripped)."""
    marks = list(_FIELD.finditer(text))
    return {m.group(1): text[m.end():marks[i + 1].start() if i + 1 < len(marks) else len(text)].strip()
            for i, m in enumerate(marks)}


def _int(value: str, source: str, line: int, name: str) -> int:
    if not re.fullmatch(r"-?\d+", value):
        raise InputError(source, line, f"expected {name}: an integer, got {value!r}")
    return int(value)


def _ids(value: str, source: str, line: int, name: str) -> tuple[int, ...]:
    if value in ("", "N/A"):
        return ()
    parts = [p.strip() for p in value.split(",")]
    if not all(re.fullmatch(r"\d+", p) for p in parts):
        raise InputError(source, line, f"expected {name}: broker ids separated by commas, got {value!r}")
    return tuple(int(p) for p in parts)


def _configs(value: str, source: str, line: int) -> dict[str, tuple[str, int]]:
    out: dict[str, tuple[str, int]] = {}
    for item in filter(None, (v.strip() for v in value.split(","))):
        name, eq, v = item.partition("=")
        if not eq or not name:
            raise InputError(source, line, f"expected Configs: name=value pairs separated by commas, got {item!r}")
        out[name.strip()] = (v.strip(), line)
    return out


def parse(text: str, source: str) -> list[TopicDescription]:
    """Every topic of a ``kafka-topics --describe`` output, or InputError naming the line and what it expected."""
    topics: dict[str, TopicDescription] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        f = fields(raw)
        if "PartitionCount" in f:
            if "Topic" not in f or "ReplicationFactor" not in f:
                raise InputError(source, number, "expected a topic line: Topic: NAME, PartitionCount: N, "
                                                 "ReplicationFactor: N, Configs: ...")
            name = f["Topic"]
            if name in topics:
                raise InputError(source, number, f"expected each topic once; {name!r} was described at line "
                                                 f"{topics[name].line}")
            topics[name] = TopicDescription(
                name=name, partition_count=_int(f["PartitionCount"], source, number, "PartitionCount"),
                replication_factor=_int(f["ReplicationFactor"], source, number, "ReplicationFactor"),
                configs=_configs(f.get("Configs", ""), source, number), line=number,
                topic_id=f.get("TopicId"), marked_for_deletion=f.get("MarkedForDeletion") == "true")
        elif "Partition" in f:
            missing = [k for k in ("Topic", "Leader", "Replicas", "Isr") if k not in f]
            if missing:
                raise InputError(source, number, f"expected a partition line with Topic, Partition, Leader, "
                                                 f"Replicas and Isr; {', '.join(missing)} missing")
            topic = topics.get(f["Topic"])
            if topic is None:
                raise InputError(source, number, f"expected the header line of topic {f['Topic']!r} (Topic: ... "
                                                 "PartitionCount: ...) before its partitions (run kafka-topics "
                                                 "--describe without --under-replicated-partitions and the like)")
            leader = f["Leader"].strip()
            topic.partitions.append(PartitionLine(
                partition=_int(f["Partition"], source, number, "Partition"),
                leader=None if leader in ("none", "-1") else _int(leader, source, number, "Leader"),
                replicas=_ids(f["Replicas"], source, number, "Replicas"), isr=_ids(f["Isr"], source, number, "Isr"),
                line=number, adding=_ids(f.get("Adding Replicas", ""), source, number, "Adding Replicas"),
                removing=_ids(f.get("Removing Replicas", ""), source, number, "Removing Replicas"),
                elr=_ids(f.get("Elr", ""), source, number, "Elr"),
                last_known_elr=_ids(f.get("LastKnownElr", ""), source, number, "LastKnownElr")))
        else:
            raise InputError(source, number, f"expected a kafka-topics --describe line (Topic: ... PartitionCount: "
                                             f"... or Topic: ... Partition: ...), got {raw.strip()[:60]!r}")
    if not topics:
        raise InputError(source, None, "expected kafka-topics --describe output; found no topic")
    for t in topics.values():
        seen = sorted(p.partition for p in t.partitions)
        if seen != list(range(t.partition_count)):
            raise InputError(source, t.line, f"expected partitions 0..{t.partition_count - 1} of topic {t.name!r} "
                                             f"(PartitionCount: {t.partition_count}), found {len(seen)} partition "
                                             f"lines{' (' + _gaps(seen, t.partition_count) + ')' if seen else ''}")
        t.partitions.sort(key=lambda p: p.partition)
        for p in t.partitions:
            target = target_replicas(p)
            if len(target) != t.replication_factor:
                raise InputError(source, p.line, f"expected {t.replication_factor} replicas (ReplicationFactor), "
                                                 f"got {','.join(map(str, target))}")
            if len(set(p.replicas)) != len(p.replicas):
                raise InputError(source, p.line, f"expected distinct broker ids in Replicas, got "
                                                 f"{','.join(map(str, p.replicas))}")
    return list(topics.values())


def _gaps(seen: list[int], count: int) -> str:
    missing = sorted(set(range(count)) - set(seen))
    twice = sorted({p for p in seen if seen.count(p) > 1})
    out = []
    if missing:
        out.append("missing " + ", ".join(map(str, missing[:5])) + (" ..." if len(missing) > 5 else ""))
    if twice:
        out.append("twice " + ", ".join(map(str, twice[:5])))
    extra = sorted(p for p in set(seen) if not 0 <= p < count)
    if extra:
        out.append("beyond the count " + ", ".join(map(str, extra[:5])))
    return "; ".join(out)


def target_replicas(p: PartitionLine) -> tuple[int, ...]:
    """The replicas once a running reassignment finishes (Replicas without Removing Replicas)."""
    return tuple(b for b in p.replicas if b not in p.removing)


# ---- writing: a scenario as kafka-topics --describe would print it at the start of a run -------------------------


def topic_id(name: str) -> str:
    """A stable stand-in for the topic's id, printed as Kafka prints a Uuid (URL-safe base64, no padding)."""
    return base64.urlsafe_b64encode(uuid.uuid5(uuid.NAMESPACE_URL, f"kafkamodel:{name}").bytes).decode().rstrip("=")


def placed(scenario, t) -> list[tuple[int, ...]]:
    """A scenario topic's replicas: its own list, else where the model places them (Kafka's new-topic placement)."""
    if t["replicas"] is not None:
        return [tuple(r) for r in t["replicas"]]
    racks = scenario["racks"]
    if racks:
        racks = tuple(racks[b % len(racks)] for b in range(scenario["brokers"]))
    return assign(t["partitions"], t["replication.factor"], scenario["brokers"], tuple(racks or ()))


def _at_least(version: str, line: str) -> bool:
    return versions.VERSIONS.index(version) >= versions.VERSIONS.index(line)


def export(scenario) -> str:
    """The scenario's topics as ``kafka-topics --describe`` of its Kafka version prints them at the run's start:
    every leader the preferred one, every ISR full."""
    version = scenario["kafka.version"]
    sep = ": " if _at_least(version, "2.2") else ":"
    out = []
    for t in scenario["topics"]:
        configs = ",".join(f"{k}={_config_value(t[k])}" for k in TOPIC_CONFIGS if t[k] is not None)
        head = [f"Topic{sep}{t['name']}"]
        if _at_least(version, "2.8"):
            head.append(f"TopicId: {topic_id(t['name'])}")
        head += [f"PartitionCount{sep}{t['partitions']}", f"ReplicationFactor{sep}{t['replication.factor']}",
                 f"Configs{sep}{configs}"]
        out.append("\t".join(head))
        for p, replicas in enumerate(placed(scenario, t)):
            ids = ",".join(map(str, replicas))
            line = f"\tTopic: {t['name']}\tPartition: {p}\tLeader: {replicas[0]}\tReplicas: {ids}\tIsr: {ids}"
            if _at_least(version, "4.0"):
                line += "\tElr: \tLastKnownElr: "
            out.append(line)
    return "\n".join(out) + "\n"


def _config_value(v) -> str:
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)
