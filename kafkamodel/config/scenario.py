"""Load, validate and derive scenarios.

``load_scenario(path_or_dict)`` reads YAML written with Kafka's property
names, fills Kafka's current defaults, and checks every key: each problem is
reported as ``field.path: rule``. A ``Scenario`` is immutable;
``with_overrides`` derives a new one, which is how sweeps vary parameters.
"""

from __future__ import annotations

import copy
import difflib
import re
from pathlib import Path
from types import MappingProxyType
from typing import Any, Iterable, Iterator, Mapping

import yaml

from . import versions
from .schema import CLOSED_LOOP, CONSUMER_FAULTS, LISTS, MOVED, REQUIRED, SECTIONS, TOP, Key
from .settings import authored, delivery_timeout_floor, derive, idempotence_conflicts, leader_target, resolved_machines
from .version_checks import idempotence_defaults, resolve_version, version_checks


class ScenarioError(ValueError):
    """A scenario broke one or more rules; ``problems`` lists them all."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        first = self.problems[0] if self.problems else "invalid scenario"
        more = len(self.problems) - 1
        super().__init__(first + (f" (and {more} more problem{'s' * (more > 1)})" if more else ""))


def _freeze(value: Any) -> Any:
    if isinstance(value, Mapping):
        return MappingProxyType({k: _freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """A plain dict/list copy of a frozen scenario value."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [thaw(v) for v in value]
    return value


def did_you_mean(name: Any, choices: Iterable[str], otherwise: str = "") -> str:
    """"; did you mean 'x'?" for the nearest choice, else `otherwise` (a listing, or nothing)."""
    near = difflib.get_close_matches(str(name), list(choices), n=1)
    return f"; did you mean '{near[0]}'?" if near else otherwise


def unknown_key(key: Any, valid: Iterable[str], path: str) -> str:
    """`path: unknown key` with the nearest valid key, or all of them (a key that moved: where it went)."""
    if path in MOVED:
        return f"{path}: {MOVED[path]}"
    valid = list(valid)
    return f"{path}: unknown key" + did_you_mean(key, valid, f"; valid keys: {', '.join(valid)}")


def _unknown_topic(name: Any, topics: Mapping, where: str) -> str:
    return f"{where}.topic: no topic named {name!r}" + did_you_mean(name, topics, f"; topics are {', '.join(topics) or 'none'}")


def _fill(given: Any, keys: Mapping[str, Key], path: str, problems: list[str], defaults: Mapping | None = None) -> dict:
    """Defaults filled in (`defaults`: the Kafka version's, where they differ from the schema's) and each key
    checked; nested sections recurse."""
    defaults = defaults or {}
    if not isinstance(given, Mapping):
        problems.append(f"{path or 'scenario'}: must be a mapping, got {type(given).__name__}")
        return {k: (None if spec.default is REQUIRED else copy.deepcopy(defaults.get(k, spec.default)))
                for k, spec in keys.items()}
    out: dict[str, Any] = {}
    prefix = f"{path}." if path else ""
    for key in given:
        if not isinstance(key, str) or key not in keys:
            problems.append(unknown_key(str(key), keys, prefix + str(key)))
    for key, spec in keys.items():
        where = prefix + key
        if key in given:
            value = given[key]
            found = spec.check(value, where)
            problems.extend(found)
            nested = getattr(spec.check, "keys", None)
            if nested is not None and isinstance(value, Mapping) and not found:
                value = _fill(value, nested, where, problems)
            out[key] = value
        elif spec.default is REQUIRED:
            problems.append(f"{where}: required")
            out[key] = None
        else:
            out[key] = copy.deepcopy(defaults.get(key, spec.default))
    return out


def _cross_checks(s: dict, given: Mapping, kafka: versions.Mechanisms, problems: list[str]) -> None:
    """Rules that relate fields to each other."""
    brokers = s["brokers"] if isinstance(s["brokers"], int) else 0
    duration = s["duration.ms"]
    topics: dict[str, dict] = {}
    for i, t in enumerate(s["topics"]):
        name, rf = t["name"], t["replication.factor"]
        if name in topics:
            problems.append(f"topics[{i}].name: duplicate topic {name!r}")
        topics[name] = t
        if isinstance(rf, int) and brokers and rf > brokers:
            problems.append(f"topics[{i}].replication.factor: {rf} exceeds brokers ({brokers})")
        own = t["min.insync.replicas"]
        # the broker-wide value is a default (capped at RF from 3.7: settings.TopicSettings, docs/versions.md);
        # a topic's own value above its RF is a mistake: no acks=all write could ever succeed
        if isinstance(own, int) and isinstance(rf, int) and own > rf:
            problems.append(
                f"topics[{i}].min.insync.replicas: {own} exceeds topics[{i}].replication.factor ({rf}); "
                "no acks=all write could succeed"
            )
        problems.extend(_check_assignment(t["replicas"], f"topics[{i}].replicas", t["partitions"], rf, brokers))
    if not s["topics"] and (s["producers"] or s["faults"]):
        problems.append("topics: at least one topic is needed")
    _check_racks_and_links(s, brokers, problems)
    _check_machines_and_os(s, given, problems)
    for i, (p, mine) in enumerate(zip(s["producers"], authored(given, "producers", len(s["producers"])))):
        where = f"producers[{i}]"
        if p["topic"] is not None and p["topic"] not in topics:
            problems.append(_unknown_topic(p["topic"], topics, where))
        if p["rate.per.s"] == 0 and p["burst"] is None:
            problems.append(f"{where}.rate.per.s: must be > 0 unless a burst is given (the producer would send nothing)")
        if p["rate.per.s"] == CLOSED_LOOP and p["burst"] is not None:
            problems.append(f"{where}.burst: not used with rate.per.s: max (a closed-loop producer sends as fast as it can)")
        if p["rate.per.s"] == CLOSED_LOOP and _unbounded_sender(s, given, p):
            problems.append(f"{where}.rate.per.s: max needs costs.producer.record.us > 0, a compression.type or a "
                            "hardware.client.nic.gbps (nothing else bounds how fast the application sends)")
        if mine.get("delivery.timeout.ms") is not None and p["delivery.timeout.ms"] < delivery_timeout_floor(p):
            problems.append(  # a value the author set (an unset one is raised to the floor: settings.derive)
                f"{where}.delivery.timeout.ms: must be >= linger.ms + request.timeout.ms "
                f"({delivery_timeout_floor(p):g}), got {p['delivery.timeout.ms']:g}"
            )
        if p["stop.ms"] is not None and isinstance(p["start.ms"], (int, float)) and p["stop.ms"] <= p["start.ms"]:
            problems.append(f"{where}.stop.ms: must be after start.ms ({p['start.ms']:g}), got {p['stop.ms']:g}")
        if mine.get("enable.idempotence") is True:
            problems.extend(f"{where}.{conflict}" for conflict in idempotence_conflicts(p, kafka))
        mapping = p["partitioner"].get("mapping") if isinstance(p["partitioner"], Mapping) else None
        count = topics[p["topic"]]["partitions"] if p["topic"] in topics else None
        for key, part in (mapping or {}).items():
            if count is not None and part >= count:
                problems.append(f"{where}.partitioner.mapping.{key}: topic {p['topic']!r} has partitions 0..{count - 1}, not {part}")
    groups: dict[str, dict] = {}
    for i, c in enumerate(s["consumers"]):
        where = f"consumers[{i}]"
        if c["group"] in groups:
            problems.append(f"{where}.group: duplicate group {c['group']!r} (one subscription per group)")
        groups[c["group"]] = c
        if c["topic"] not in topics:
            problems.append(_unknown_topic(c["topic"], topics, where))
        if c["heartbeat.interval.ms"] >= c["session.timeout.ms"]:
            problems.append(f"{where}.heartbeat.interval.ms: must be lower than session.timeout.ms ({c['session.timeout.ms']:g})")
        problems.extend(_check_group_membership(c, where))
    for i, f in enumerate(s["faults"]):
        where = f"faults[{i}]"
        at = f["at.ms"]
        if isinstance(at, (int, float)) and isinstance(duration, (int, float)) and at >= duration:
            problems.append(f"{where}.at.ms: {at:g} is outside the run (duration.ms {duration:g})")
        if f["kind"] in CONSUMER_FAULTS:
            problems.extend(_check_consumer_fault(f, where, groups))
            continue
        for key in ("group", "member"):
            if f[key] is not None:
                problems.append(f"{where}.{key}: only used by consumer faults")
        target = f["broker"]
        if target is None:
            problems.append(f"{where}.broker: required for kind {f['kind']}")
            continue
        targets = target if isinstance(target, list) and target else [target]
        for k, t in enumerate(targets):
            here = f"{where}.broker" + (f"[{k}]" if isinstance(target, list) else "")
            problems.extend(_check_target(t, here, f["kind"], brokers, topics, s["racks"] or []))
        if isinstance(target, list) and len(set(map(str, target))) != len(target):
            problems.append(f"{where}.broker: lists a target twice")
        if f["from"] is not None:
            if f["kind"] != "isolate":
                problems.append(f"{where}.from: only used by kind isolate")
            elif not isinstance(f["from"], list) or not f["from"]:
                problems.append(f"{where}.from: must be a non-empty list of broker ids, 'controller' or 'clients'")
            else:
                for k, peer in enumerate(f["from"]):
                    ok = peer in ("controller", "clients") or (
                        isinstance(peer, int) and not isinstance(peer, bool) and 0 <= peer < brokers)
                    if not ok:
                        problems.append(
                            f"{where}.from[{k}]: must be a broker id 0..{brokers - 1}, 'controller' or 'clients', got {peer!r}")
        if f["kind"] in ("isolate", "pause", "slow") and f["duration.ms"] is None:
            problems.append(f"{where}.duration.ms: required for kind {f['kind']}")
        if f["kind"] == "restart" and f["duration.ms"] is not None:
            problems.append(f"{where}.duration.ms: not used by kind restart")
    for i, op in enumerate(s["operations"]):
        problems.extend(_check_operation(op, f"operations[{i}]", brokers, duration, topics, s["replication"]))
    added = {op["broker"] for op in s["operations"] if op["kind"] == "add_broker"}
    for i, t in enumerate(s["topics"]):
        if added and isinstance(t["replication.factor"], int) and t["replication.factor"] > brokers - len(added):
            problems.append(f"topics[{i}].replication.factor: {t['replication.factor']} exceeds the brokers running at "
                            f"the start ({brokers - len(added)}: operations add {sorted(added)} later)")


def _check_assignment(v: Any, where: str, partitions: Any, rf: Any, brokers: int) -> list[str]:
    """A topic's explicit replica assignment: one list of distinct broker ids per partition, each RF long."""
    if v is None:
        return []
    if not isinstance(v, list) or len(v) != partitions:
        return [f"{where}: must be a list of {partitions} broker lists (one per partition), got {v!r}"]
    for p, replicas in enumerate(v):
        if (not isinstance(replicas, list) or len(replicas) != rf
                or any(isinstance(b, bool) or not isinstance(b, int) for b in replicas)):
            return [f"{where}[{p}]: must be a list of {rf} broker ids (replication.factor), got {replicas!r}"]
        if len(set(replicas)) < len(replicas):
            return [f"{where}[{p}]: a broker is listed twice in {replicas!r}"]
        if any(not 0 <= b < brokers for b in replicas):
            return [f"{where}[{p}]: broker ids must be 0..{brokers - 1}, got {replicas!r}"]
    return []


def _broker_id(v: Any, where: str, brokers: int) -> list[str]:
    if isinstance(v, bool) or not isinstance(v, int):
        return [f"{where}: must be a broker id, got {v!r}"]
    return [] if 0 <= v < brokers else [f"{where}: no broker {v}; ids are 0..{brokers - 1}"]


def _broker_list(v: Any, where: str, brokers: int, what: str = "broker ids") -> list[str]:
    if not isinstance(v, list) or not v:
        return [f"{where}: must be a non-empty list of {what}, got {v!r}"]
    problems = [p for k, b in enumerate(v) for p in _broker_id(b, f"{where}[{k}]", brokers)]
    if not problems and len(set(v)) != len(v):
        problems.append(f"{where}: lists a broker twice ({v})")
    return problems


# which fields each operation kind uses (at.ms and kind: all; downtime.ms has a default)
OPERATION_FIELDS = {"controlled_shutdown": ("broker",), "restart": ("broker",), "add_broker": ("broker",),
                    "remove_broker": ("broker",), "rolling_restart": ("brokers", "gate", "downtime.ms"),
                    "preferred_leader_election": ("topic", "partitions"),
                    "reassign": ("topic", "partitions", "replicas", "throttle")}
OPTIONAL_FIELDS = {"rolling_restart": ("brokers", "gate"), "preferred_leader_election": ("topic", "partitions"),
                   "reassign": ("throttle",)}


def _check_operation(op: dict, where: str, brokers: int, duration: Any, topics: dict,
                     replication: str = "isr") -> list[str]:
    """One operation: the fields its kind uses, each broker existing, a reassignment's replica lists whole (any
    length: the replication factor follows, as kafka-reassign-partitions raises or lowers it; in quorum mode the
    majority is fixed per partition, so the length stays the topic's replication.factor)."""
    kind = op["kind"]
    used = OPERATION_FIELDS[kind]
    problems = []
    at = op["at.ms"]
    if isinstance(at, (int, float)) and isinstance(duration, (int, float)) and at >= duration:
        problems.append(f"{where}.at.ms: {at:g} is outside the run (duration.ms {duration:g})")
    for key in ("broker", "brokers", "gate", "topic", "partitions", "replicas", "throttle"):
        if key not in used and op[key] is not None:
            problems.append(f"{where}.{key}: not used by kind {kind}")
        elif key in used and op[key] is None and key not in OPTIONAL_FIELDS.get(kind, ()):
            problems.append(f"{where}.{key}: required for kind {kind}")
    if problems:
        return problems
    if op["broker"] is not None:
        problems.extend(_broker_id(op["broker"], f"{where}.broker", brokers))
    if op["brokers"] is not None:
        problems.extend(_broker_list(op["brokers"], f"{where}.brokers", brokers))
    gate = op["gate"]
    if gate is not None and gate != "no_under_replicated":
        keys = list(gate) if isinstance(gate, Mapping) else []
        if len(keys) != 1 or keys[0] not in ("wait.ms", "full_isr_for.ms"):
            problems.append(f"{where}.gate: must be {{wait.ms: N}}, no_under_replicated or {{full_isr_for.ms: N}}, "
                            f"got {gate!r}")
        else:
            v = gate[keys[0]]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
                problems.append(f"{where}.gate.{keys[0]}: must be a number of ms >= 0, got {v!r}")
    if op["topic"] is None:
        return problems
    if op["topic"] not in topics:
        return problems + [_unknown_topic(op["topic"], topics, where)]
    t = topics[op["topic"]]
    count, rf = t["partitions"], t["replication.factor"]
    parts = op["partitions"]
    if parts is not None:
        if not isinstance(parts, list) or not parts:
            return problems + [f"{where}.partitions: must be a non-empty list of partition numbers, got {parts!r}"]
        for k, p in enumerate(parts):
            if isinstance(p, bool) or not isinstance(p, int) or not 0 <= p < count:
                problems.append(f"{where}.partitions[{k}]: topic {op['topic']!r} has partitions 0..{count - 1}, "
                                f"got {p!r}")
        if len(set(map(str, parts))) != len(parts):
            problems.append(f"{where}.partitions: lists a partition twice ({parts})")
    if kind != "reassign":
        return problems
    lists = op["replicas"]
    if not isinstance(lists, list) or len(lists) != len(parts):
        return problems + [f"{where}.replicas: must be one broker list per partition ({len(parts)}), got {lists!r}"]
    for k, replicas in enumerate(lists):
        here = f"{where}.replicas[{k}]"
        problems.extend(_broker_list(replicas, here, brokers))
        if replication == "quorum" and isinstance(replicas, list) and len(replicas) != rf:
            problems.append(f"{here}: {len(replicas)} replicas; topic {op['topic']!r} has replication.factor {rf} "
                            "(replication quorum: a reassignment keeps the replication factor, its majority is fixed)")
    return problems


def _check_machines_and_os(s: dict, given: Mapping, problems: list[str]) -> None:
    """The JVM heap fits in the machine's memory; vm.dirty_background_ratio below vm.dirty_ratio (Linux halves a
    background ratio at or above dirty_ratio, domain_dirty_limits(); a scenario says what it means instead)."""
    for role, machine in resolved_machines(s, given).items():
        heap, memory = machine["jvm.heap.gib"], machine["memory.gib"]
        if heap >= memory:
            problems.append(f"hardware.{role}.jvm.heap.gib: must be below memory.gib ({memory:g}), got {heap:g}")
    ratio, background = s["os"]["vm.dirty_ratio"], s["os"]["vm.dirty_background_ratio"]
    if background >= ratio:
        problems.append(f"os.vm.dirty_background_ratio: must be below vm.dirty_ratio ({ratio}), got {background}")


def _check_racks_and_links(s: dict, brokers: int, problems: list[str]) -> None:
    """racks no longer than brokers; every link end a broker that exists, a rack someone is in, clients or *."""
    racks = s["racks"] or []
    if racks and brokers and len(racks) > brokers:
        problems.append(f"racks: {len(racks)} racks for {brokers} brokers; a rack needs a broker (at most {brokers})")
    known = list(dict.fromkeys([*racks, *(c["client.rack"] for c in s["producers"] + s["consumers"] if c["client.rack"])]))
    for i, link in enumerate(s["network"]["links"]):
        for k, end in enumerate(link["between"]):
            where = f"network.links[{i}].between[{k}]"
            if isinstance(end, int) and brokers and end >= brokers:
                problems.append(f"{where}: no broker {end}; ids are 0..{brokers - 1}")
            elif isinstance(end, str) and end.startswith("rack:") and end[5:] not in known:
                listing = f"; racks are {', '.join(known)}" if known else "; no racks are defined (racks, client.rack)"
                problems.append(f"{where}: no rack named {end[5:]!r}" + did_you_mean(end[5:], known, listing))


def _check_group_membership(c: dict, where: str) -> list[str]:
    """group.instance.id: one distinct id per member (KIP-345: the coordinator fences a second member with an id in
    use); group.remote.assignor only with group.protocol consumer."""
    problems = []
    ids = c.get("group.instance.id")
    if isinstance(ids, list):
        if len(ids) != c["members"]:
            problems.append(f"{where}.group.instance.id: {len(ids)} ids for {c['members']} members (one per member)")
        twice = sorted({i for i in ids if ids.count(i) > 1})
        if twice:
            problems.append(f"{where}.group.instance.id: {twice[0]!r} is given twice in group {c['group']!r} "
                            "(each static member needs its own; Kafka fences the second with FENCED_INSTANCE_ID)")
    if c.get("group.remote.assignor") is not None and c.get("group.protocol") != "consumer":
        problems.append(f"{where}.group.remote.assignor: only used with group.protocol: consumer (KIP-848)")
    return problems


def _check_consumer_fault(f: dict, where: str, groups: dict) -> list[str]:
    problems = [f"{where}.{key}: not used by consumer faults" for key in ("broker", "from") if f[key] is not None]
    if f["group"] is None:
        return problems + [f"{where}.group: required for kind {f['kind']}"]
    if f["group"] not in groups:
        return problems + [f"{where}.group: no consumer group {f['group']!r}; groups are {', '.join(groups) or 'none'}"]
    if f["kind"] == "consumer_join":
        if f["member"] is not None:
            problems.append(f"{where}.member: consumer_join adds a new member; do not name one")
    elif f["member"] is None:
        problems.append(f"{where}.member: required for kind {f['kind']} (a member index)")
    if f["kind"] == "consumer_leave" and f["duration.ms"] is not None:
        problems.append(f"{where}.duration.ms: not used by kind consumer_leave")
    if f["kind"] == "consumer_restart" and f["duration.ms"] is None:
        problems.append(f"{where}.duration.ms: required for kind consumer_restart (how long until it starts again)")
    return problems


def _check_target(t: Any, where: str, kind: str, brokers: int, topics: dict, racks: list) -> list[str]:
    """Problems with one fault target: a broker id, leader:TOPIC-P, rack:NAME (its brokers), * (every broker) or
    controller (whoever holds the controller role)."""
    kinds = "a broker id, leader:TOPIC-P, rack:NAME, * or controller"
    if isinstance(t, bool) or t is None:
        return [f"{where}: must be {kinds}, got {t!r}"]
    if t == "controller":
        return [] if kind == "crash" else [f"{where}: controller can only crash, not {kind}"]
    if isinstance(t, int):
        return [] if 0 <= t < brokers else [f"{where}: no broker {t}; ids are 0..{brokers - 1}"]
    if not isinstance(t, str):
        return [f"{where}: must be {kinds}, got {t!r}"]
    if t == "*":
        return []
    if t.startswith("rack:"):
        named = list(dict.fromkeys(racks[: max(brokers, 0)]))
        if t[5:] in named:
            return []
        listing = f"; broker racks are {', '.join(named)}" if named else "; no racks are defined (racks)"
        return [f"{where}: no broker in rack {t[5:]!r}" + did_you_mean(t[5:], named, listing)]
    leader = leader_target(t)
    if leader is None:
        return [f"{where}: must be {kinds}, got {t!r}"]
    if leader.topic not in topics:
        return [f"{where}: no topic named {leader.topic!r}"]
    count = topics[leader.topic]["partitions"]
    if leader.partition >= count:
        return [f"{where}: topic {leader.topic!r} has partitions 0..{count - 1}, not {leader.partition}"]
    if kind == "restart":
        return [f"{where}: restart needs a broker id (a crashed broker leads nothing)"]
    return []


def _unbounded_sender(s: Mapping, given: Mapping, p: Mapping) -> bool:
    """A closed-loop producer whose send() costs nothing and whose client NIC is unlimited."""
    try:
        nic = resolved_machines(s, given)["client"]["nic.gbps"]
    except (KeyError, TypeError, ValueError):  # a hardware section already reported
        return False
    return not s["costs"].get("producer.record.us") and p.get("compression.type", "none") == "none" and nic is None


def validate(given: Any) -> dict:
    """The scenario with defaults filled (``settings.derive`` included), or ScenarioError with every problem.

    The checks only read; the defaults that depend on other settings are filled by ``derive``."""
    problems: list[str] = []
    if not isinstance(given, Mapping):
        raise ScenarioError([f"scenario: must be a mapping of keys, got {type(given).__name__}"])
    allowed = {**TOP, **{k: None for k in SECTIONS}, **{k: None for k in LISTS}}
    for key in given:
        if key not in allowed:
            problems.append(unknown_key(str(key), allowed, str(key)))
    s = _fill({k: v for k, v in given.items() if k in TOP}, TOP, "", problems)
    kafka = resolve_version(s, problems)  # the version's mechanisms, once
    version, metadata = kafka.version, kafka.metadata
    for name, keys in SECTIONS.items():
        s[name] = _fill(given.get(name) or {}, keys, name, problems,
                        versions.section_defaults(name, keys, version, metadata))
    for name, keys in LISTS.items():
        items = given.get(name)
        if items is None:
            items = []
        if not isinstance(items, list):
            problems.append(f"{name}: must be a list, got {type(items).__name__}")
            items = []
        defaults = versions.section_defaults(name, keys, version, metadata)
        s[name] = [_fill(item, keys, f"{name}[{i}]", problems, defaults) for i, item in enumerate(items)]
    version_checks(given, kafka, problems)
    idempotence_defaults(s, given, kafka)
    if not problems:
        _cross_checks(s, given, kafka, problems)
    if problems:
        raise ScenarioError(problems)
    return derive(s, given, kafka)


class Scenario(Mapping):
    """An immutable, validated scenario; read it like a dict."""

    def __init__(self, given: Mapping):
        self._given = _freeze(given)  # what the user wrote (overrides apply to it)
        self._resolved = _freeze(validate(thaw(self._given)))  # with Kafka's defaults filled

    def __getitem__(self, key: str) -> Any:
        return self._resolved[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._resolved)

    def __len__(self) -> int:
        return len(self._resolved)

    def __repr__(self) -> str:
        return f"Scenario({self['name']!r}, seed={self['seed']})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Scenario) and thaw(self._resolved) == thaw(other._resolved)

    def __hash__(self) -> int:
        return hash(yaml.safe_dump(self.to_dict(), sort_keys=True))

    @property
    def given(self) -> dict:
        """A copy of what the scenario's author wrote, before defaults."""
        return thaw(self._given)

    def to_dict(self) -> dict:
        """A plain copy of the resolved scenario."""
        return thaw(self._resolved)

    def with_overrides(self, overrides: Mapping[str, Any]) -> "Scenario":
        """A new scenario with some values replaced; this one is unchanged.

        Keys are paths: ``seed``, ``duration.ms``, ``broker.min.insync.replicas``,
        ``topics[0].replication.factor``, ``producers[*].acks`` (every item),
        ``network.latency.ms``. A value that is a mapping replaces the old
        value whole.
        """
        given = thaw(self._given)
        for path, value in overrides.items():
            _set_path(given, path, copy.deepcopy(value))
        return Scenario(given)


_ITEM = re.compile(r"^(?P<list>[a-z]+)\[(?P<index>\d+|\*)\]\.(?P<key>.+)$")


def _set_path(given: dict, path: str, value: Any) -> None:
    m = _ITEM.match(path)
    if m:
        name, index, key = m["list"], m["index"], m["key"]
        if name not in LISTS:
            raise ScenarioError([f"{path}: no list named {name!r}; lists are {', '.join(LISTS)}"])
        items = given.get(name) or []
        chosen = range(len(items)) if index == "*" else [int(index)]
        for i in chosen:
            if i >= len(items):
                raise ScenarioError([f"{path}: {name} has {len(items)} item(s)"])
            _set_nested(items[i], key, value, LISTS[name], f"{name}[{i}]")
        return
    head, _, rest = path.partition(".")
    if head in SECTIONS and rest:
        section = given.setdefault(head, {}) or {}
        given[head] = section
        if rest in SECTIONS[head]:
            section[rest] = value
        else:  # hardware.broker.nic.gbps reaches into a nested section (or names the unknown key)
            _set_nested(section, rest, value, SECTIONS[head], head)
        return
    if path in TOP or path in SECTIONS or path in LISTS:
        given[path] = value
        return
    raise ScenarioError([unknown_key(path, {**TOP, **SECTIONS, **LISTS}, path)])


def _set_nested(item: dict, key: str, value: Any, keys: Mapping[str, Key], where: str) -> None:
    """Set key in a list item; ``burst.records`` reaches into a nested section."""
    if key in keys:
        item[key] = value
        return
    head, _, rest = key.partition(".")
    nested = getattr(keys.get(head, Key(None, lambda v, p: [])).check, "keys", None)
    if nested is not None and rest:
        sub = item.get(head) or {}
        sub[rest] = value
        item[head] = sub
        return
    raise ScenarioError([unknown_key(key, keys, f"{where}.{key}")])


class StrictLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a key given twice in one mapping (the second would silently win).

    Merge keys (``<<: *anchor``) are allowed: the keys written beside one override the merged ones.
    """

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def load_scenario(source: "str | Path | Mapping | Scenario") -> Scenario:
    """A Scenario from a YAML path, a YAML string, a dict, or a Scenario."""
    if isinstance(source, Scenario):
        return source
    if isinstance(source, Mapping):
        return Scenario(source)
    text_or_path = str(source)
    path = Path(text_or_path)
    if isinstance(source, Path) or ("\n" not in text_or_path and (path.suffix in (".yaml", ".yml") or path.exists())):
        if not path.is_file():
            raise ScenarioError([f"{path}: no such scenario file"])
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ScenarioError([f"{path}: cannot read scenario file ({exc})"]) from None
        origin = str(path)
    else:
        text, origin = text_or_path, "scenario"
    try:
        data = yaml.load(text, Loader=StrictLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else (f" position {exc.position}" if hasattr(exc, "position") else "")
        reason = " ".join(str(getattr(exc, "problem", None) or getattr(exc, "reason", None) or exc).split())
        raise ScenarioError([f"{origin}:{where} not valid YAML ({reason})"]) from None
    if data is None:
        raise ScenarioError([f"{origin}: empty scenario"])
    return Scenario(data)
