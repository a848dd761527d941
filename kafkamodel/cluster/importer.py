"""A scenario from the files an operator already has, each value's origin written beside it.

``build`` reads kafka-topics --describe output (topics, partitions, replicas; leaders and ISRs are read and, where
they are not the run's starting state, listed), server.properties (broker settings, ``broker.rack``, the Kafka
version from ``inter.broker.protocol.version``, ZooKeeper or KRaft), kafka-configs --describe output (topic and
broker overrides), the traffic table and the hardware profile. It returns the scenario as YAML text with a comment
beside every value, and what it read but the model does not represent (``Imported.unmodelled``). A file it cannot
read raises ``InputError`` naming the file, the line and what was expected; the scenario is validated before
anything is written, and a value the model refuses is reported at the line it came from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ..config import schema, versions
from ..config.scenario import ScenarioError, Scenario
from ..sim.controller.placement import assign
from . import describe as describe_format
from . import traffic as traffic_format
from .errors import InputError, Origin, at
from .properties import ConfigsDescription, Properties, read_configs, read_properties

IMPORT_DURATION_MS = 10000  # what import writes: a run of a real cluster's size is slow (docs/your-cluster.md)
NOT_BROKER_SETTINGS = ("broker.id", "node.id", "broker.rack", "inter.broker.protocol.version", "process.roles",
                       "zookeeper.connect", "log.retention.hours", "log.retention.minutes")


@dataclass
class Imported:
    given: dict  # the scenario as written (before defaults)
    origins: dict[str, Origin]  # scenario path -> where its value came from
    unmodelled: list[str] = field(default_factory=list)  # one line each: what was read but is not modelled
    broker_ids: dict[int, int] = field(default_factory=dict)  # the cluster's broker id -> the model's 0..n-1

    def yaml(self) -> str:
        return render(self)


def _typed(value: str):
    low = value.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    if re.fullmatch(r"-?\d+", low):
        return int(low)
    try:
        return float(low)
    except ValueError:
        return value.strip()


def _version(value: str) -> str | None:
    """The modelled release of an inter.broker.protocol.version such as 3.6-IV2, 2.8, 0.10.2 or 0.8.2."""
    m = re.match(r"\d+\.\d+(\.\d+)?", value.strip())
    return versions.canonical(m.group(0)) if m else None


def build(describe: tuple[str, str], properties: list[tuple[str, str]] = (), configs: tuple[str, str] | None = None,
          traffic: tuple[str, str] | None = None, hardware: str | None = None, name: str = "my-cluster",
          hardware_flag: str = "--hardware", kafka_version: str | None = None) -> Imported:
    """The scenario of the cluster; each input is (text, the name to cite it by)."""
    text, source = describe
    topics = describe_format.parse(text, source)
    props = [read_properties(t, s) for t, s in properties]
    overrides = read_configs(*configs) if configs else ConfigsDescription("")
    rows = traffic_format.read_traffic(*traffic) if traffic else []
    out = Imported(given={"name": name}, origins={"name": Origin("--out's file name")})
    note = out.unmodelled.append

    # ---- brokers: their ids (Replicas, broker.id / node.id), mapped onto the model's 0..n-1 -------------------
    ids: dict[int, Origin] = {}
    for t in topics:
        for p in t.partitions:
            for b in p.replicas:
                ids.setdefault(b, at(source, p.line, "Replicas"))
    props_of: dict[int, Properties] = {}
    for pr in props:
        key = "node.id" if "node.id" in pr.values else "broker.id"
        if key in pr.values:
            value, line = pr.values[key]
            if not re.fullmatch(r"\d+", value):
                raise InputError(pr.source, line, f"{key}: expected a broker id (an integer >= 0), got {value!r}")
            b = int(value)
            if b in props_of:
                raise InputError(pr.source, line, f"{key}: expected one file per broker; {b} is also "
                                                  f"{props_of[b].source}'s")
            props_of[b] = pr
            ids.setdefault(b, at(pr.source, line, key))
        elif len(props) > 1:
            raise InputError(pr.source, None, "expected broker.id or node.id (one file per broker: each names its "
                                              "broker)")
    order = sorted(ids)
    out.broker_ids = {b: i for i, b in enumerate(order)}
    remap = order != list(range(len(order)))
    out.given["brokers"] = len(order)
    out.origins["brokers"] = Origin(f"{source}: broker ids {_ids(order)}" + (" in Replicas" if not props_of else
                                                                               " in Replicas and broker.id/node.id")
                                    + (f", numbered 0..{len(order) - 1} in that order" if remap else ""))
    if remap:
        note(f"{source}: broker ids {_ids(order)} are the model's brokers 0..{len(order) - 1} in that order "
             "(the model numbers its brokers from 0)")

    # ---- server.properties: Kafka version, metadata mode, racks, broker settings ------------------------------
    first = props_of[order[0]] if order and order[0] in props_of else (props[0] if props else None)
    if first is not None:
        for key in ("inter.broker.protocol.version",):
            if key in first.values:
                value, line = first.values[key]
                line_ = _version(value)
                if line_ is None:
                    raise InputError(first.source, line, f"{key}: expected a Kafka release the model has "
                                                         f"({versions.VERSIONS[0]} .. {versions.NEWEST}), got {value!r}")
                out.given["kafka.version"] = line_
                out.origins["kafka.version"] = at(first.source, line, f"{key}={value}")
        if "process.roles" in first.values:
            out.given["kafka.metadata"] = versions.KRAFT
            out.origins["kafka.metadata"] = at(first.source, first.values["process.roles"][1], "process.roles")
        elif "zookeeper.connect" in first.values:
            out.given["kafka.metadata"] = versions.ZOOKEEPER
            out.origins["kafka.metadata"] = at(first.source, first.values["zookeeper.connect"][1], "zookeeper.connect")
    if kafka_version is not None:
        if versions.canonical(kafka_version) is None:
            raise InputError("--kafka-version", None, f"expected a release line the model has ({versions.VERSIONS[0]}"
                                                      f" .. {versions.NEWEST}), got {kafka_version!r}")
        if out.given.get("kafka.version", versions.canonical(kafka_version)) != versions.canonical(kafka_version):
            note(f"--kafka-version {kafka_version} differs from {out.origins['kafka.version']}: --kafka-version kept")
        out.given["kafka.version"] = versions.canonical(kafka_version)
        out.origins["kafka.version"] = Origin("--kafka-version")
    if "kafka.version" not in out.given:
        note(f"no inter.broker.protocol.version in {', '.join(p.source for p in props) or 'any server.properties'}: "
             f"the scenario models Kafka {versions.NEWEST} (the newest modelled); set kafka.version to yours")
    _racks(out, order, props_of, note)
    broker: dict = {}
    unknown: dict[tuple, list[str]] = {}  # the settings a file has that the model lacks -> the files with them
    for b, pr in ([(b, props_of[b]) for b in order if b in props_of] or [(None, p) for p in props]):
        keys = _broker_settings(out, broker, pr, note)
        if keys:
            unknown.setdefault(tuple(keys), []).append(pr.source)
    for keys, sources in unknown.items():
        note(f"{', '.join(sources)}: {len(keys)} settings not modelled: {', '.join(keys)}")
    for entity, entries in overrides.brokers.items():
        where = "every broker (cluster default)" if entity == "" else f"broker {entity}"
        for key, (value, line) in entries.items():
            _broker_setting(out, broker, key, value, overrides.source, line, note, f"kafka-configs {where}")
    if broker:
        out.given["broker"] = broker

    # ---- hardware -----------------------------------------------------------------------------------------------
    if hardware:
        problems = schema.profile_name(hardware, hardware_flag)
        if problems:
            raise InputError(hardware_flag, None, problems[0].split(": ", 1)[1])
        out.given["hardware"] = {"broker": {"profile": hardware}}
        out.origins["hardware.broker.profile"] = Origin(hardware_flag)
    else:
        note(f"no {hardware_flag}: the brokers are the default profile's machines (python -m kafkamodel hardware)")

    # ---- topics -------------------------------------------------------------------------------------------------
    racks = out.given.get("racks")
    rack_of = tuple(racks[b % len(racks)] for b in range(len(order))) if racks else ()
    out.given["topics"] = []
    for t in topics:
        if t.name.startswith("__"):
            note(f"{source}:{t.line}: internal topic {t.name} ({t.partition_count} partitions) left out: the model "
                 "has no internal topics (consumer offsets and transactions are modelled without them)")
            continue
        i = len(out.given["topics"])
        here = f"topics[{i}]"
        topic = {"name": t.name, "partitions": t.partition_count, "replication.factor": t.replication_factor}
        out.origins[f"{here}.name"] = at(source, t.line)
        out.origins[f"{here}.partitions"] = at(source, t.line, "PartitionCount")
        out.origins[f"{here}.replication.factor"] = at(source, t.line, "ReplicationFactor")
        configs = dict(t.configs)
        configs.update({k: v for k, v in overrides.topics.get(t.name, {}).items()})
        for key, (value, line) in configs.items():
            src = source if (key, (value, line)) in t.configs.items() else overrides.source
            if key in describe_format.TOPIC_CONFIGS:
                v = _typed(value)
                if key in ("retention.ms", "retention.bytes") and v == -1:
                    note(f"{src}:{line}: {t.name} {key}=-1 (no limit) is the broker's limit in the model (a topic "
                         "cannot lift it there); retention does not act within a short run")
                    continue
                problems = schema.TOPIC[key].check(v, key)
                if problems:
                    raise InputError(src, line, f"expected {problems[0]}")
                topic[key] = v
                out.origins[f"{here}.{key}"] = at(src, line, "Configs" if src == source else "kafka-configs")
            else:
                note(f"{src}:{line}: {t.name} {key}={value}: not modelled")
        replicas = [tuple(out.broker_ids[b] for b in describe_format.target_replicas(p)) for p in t.partitions]
        if replicas != assign(t.partition_count, t.replication_factor, len(order), rack_of):
            topic["replicas"] = [list(r) for r in replicas]
            out.origins[f"{here}.replicas"] = at(source, t.partitions[0].line,
                                                 f"Replicas (lines {t.partitions[0].line}-{t.partitions[-1].line})")
        _partition_states(t, source, out, note)
        out.given["topics"].append(topic)

    # ---- traffic ------------------------------------------------------------------------------------------------
    if rows:
        names = {t["name"] for t in out.given["topics"]}
        producers, consumers = [], []
        for r in rows:
            if r.topic not in names:
                raise InputError(traffic[1], r.line, f"topic: expected a topic of {source} "
                                                     f"({', '.join(sorted(names))}), got {r.topic!r}")
            k = len(producers)
            p = {"topic": r.topic, "rate.per.s": r.rate_per_s, "record.size.bytes": r.record_size_bytes, **r.producer}
            if r.producers != 1:
                p["instances"] = r.producers
            if r.keys:
                p["keys"] = {"cardinality": r.keys}
            for key in p:
                out.origins[f"producers[{k}].{key}"] = at(traffic[1], r.line, key)
            out.origins[f"producers[{k}].rate.per.s"] = at(
                traffic[1], r.line, f"mb.per.s {r.mb_per_s:g} x 10^6 / record.size.bytes {r.record_size_bytes}"
                + (f" / producers {r.producers}" if r.producers != 1 else ""))
            producers.append(p)
            for g in range(r.consumer_groups):
                c = {"group": f"{r.topic}-group-{g}", "topic": r.topic}
                if r.consumer_members != 1:
                    c["members"] = r.consumer_members
                for key in c:
                    out.origins[f"consumers[{len(consumers)}].{key}"] = at(traffic[1], r.line, "consumer.groups"
                                                                           if key != "members" else "consumer.members")
                consumers.append(c)
        out.given["producers"] = producers
        if consumers:
            out.given["consumers"] = consumers
    else:
        note("no --traffic: the scenario has no producers or consumers (the report needs them)")
    out.given["seed"], out.origins["seed"] = 1, Origin("chosen by import")
    out.given["duration.ms"] = IMPORT_DURATION_MS
    out.origins["duration.ms"] = Origin("chosen by import: 10 simulated seconds (a run at a real cluster's size is "
                                        "slow; the report says when it shortens a run)")
    _validate(out)
    return out


def _ids(ids: list[int]) -> str:
    return ",".join(map(str, ids)) if len(ids) <= 12 else ",".join(map(str, ids[:12])) + ",..."


def _racks(out: Imported, order: list[int], props_of: dict[int, Properties], note) -> None:
    given = {b: pr for b, pr in props_of.items() if "broker.rack" in pr.values}
    if not given:
        return
    if len(given) < len(order):
        missing = [b for b in order if b not in given]
        note(f"broker.rack is set for brokers {_ids(sorted(given))} but not {_ids(missing)}: racks left out (Kafka "
             "places replicas rack-aware only when every broker has a rack)")
        return
    racks = [given[b].values["broker.rack"][0] for b in order]
    period = next(k for k in range(1, len(racks) + 1) if all(racks[i] == racks[i % k] for i in range(len(racks))))
    out.given["racks"] = racks[:period]
    out.origins["racks"] = Origin("broker.rack of " + ", ".join(
        f"{given[b].source}:{given[b].values['broker.rack'][1]}" for b in order[:period])
        + (f" (repeating: broker i is in racks[i % {period}])" if period < len(racks) else ""))


def _broker_settings(out: Imported, broker: dict, pr: Properties, note) -> list[str]:
    values = dict(pr.values)
    said: dict[str, str] = {}  # a setting computed from another: what the file said
    # Kafka's precedence: log.retention.ms, else .minutes, else .hours
    if "log.retention.ms" not in values:
        for key, factor in (("log.retention.minutes", 60_000), ("log.retention.hours", 3_600_000)):
            if key in values:
                value, line = values[key]
                if not re.fullmatch(r"-?\d+", value):
                    raise InputError(pr.source, line, f"{key}: expected an integer, got {value!r}")
                values["log.retention.ms"] = (str(int(value) * factor) if int(value) >= 0 else "-1", line)
                said["log.retention.ms"] = f"{key}={value}"
                break
    unknown = []
    for key, (value, line) in values.items():
        if key in schema.BROKER:
            _broker_setting(out, broker, key, value, pr.source, line, note, said.get(key, key))
        elif key not in NOT_BROKER_SETTINGS:
            unknown.append(key)
    return unknown


def _broker_setting(out: Imported, broker: dict, key: str, value: str, source: str, line: int, note, what: str) -> None:
    if key not in schema.BROKER:
        note(f"{source}:{line}: {key}={value}: not modelled")
        return
    v = _typed(value)
    if key == "log.retention.ms" and v == -1:
        v = None
    problems = schema.BROKER[key].check(v, key)
    if problems:
        raise InputError(source, line, f"expected {problems[0]}")
    if key in broker and broker[key] != v:
        note(f"{source}:{line}: {key}={value} differs from {out.origins[f'broker.{key}']}: the model has one value "
             f"for every broker; it keeps {broker[key]}")
        return
    if key not in broker:
        broker[key] = v
        out.origins[f"broker.{key}"] = at(source, line, what if what != key else "")


def _partition_states(t, source: str, out: Imported, note) -> None:
    """What the describe output says of the partitions' state now, where the run starts otherwise."""
    moved = [p for p in t.partitions if p.leader is not None and p.leader != p.replicas[0]]
    leaderless = [p for p in t.partitions if p.leader is None]
    shrunk = [p for p in t.partitions if set(p.isr) != set(describe_format.target_replicas(p))]
    moving = [p for p in t.partitions if p.adding or p.removing]
    elr = [p for p in t.partitions if p.elr or p.last_known_elr]
    for ps, what in ((moved, "led by another replica than the preferred leader"),
                     (leaderless, "without a leader"), (shrunk, "with an ISR smaller than its replicas"),
                     (moving, "being reassigned (modelled as finished: Replicas without Removing Replicas)"),
                     (elr, "with eligible leader replicas (KIP-966)")):
        if ps:
            lines = ", ".join(str(p.line) for p in ps[:5]) + (" ..." if len(ps) > 5 else "")
            note(f"{source}: {len(ps)} partition(s) of {t.name} {what} (lines {lines}): the run starts with every "
                 "partition on its preferred leader and a full ISR")
    if t.marked_for_deletion:
        note(f"{source}:{t.line}: {t.name} is marked for deletion: modelled as a live topic")


def _validate(out: Imported) -> None:
    """The model's own checks; a refusal is reported at the line its value came from."""
    try:
        Scenario(out.given)
    except ScenarioError as exc:
        problem = str(exc).splitlines()[0].strip()
        path = problem.split(":", 1)[0]
        origin = out.origins.get(path)
        while origin is None and "." in path:
            path = path.rsplit(".", 1)[0]
            origin = out.origins.get(path)
        where = str(origin).split(" ", 1)[0] if origin else "import"
        file, _, line = where.rpartition(":")
        raise InputError(file or where, int(line) if line.isdigit() else None,
                         f"the model refuses the value: {problem}") from None


# ---- writing: YAML with the origin beside each value -------------------------------------------------------------


def _flow(v) -> str:
    return yaml.safe_dump(v, default_flow_style=True, width=10**9, sort_keys=False).strip().removesuffix("...").strip()


def render(imp: Imported) -> str:
    g, o = imp.given, imp.origins
    lines = ["# A scenario of your cluster, written by kafkamodel cluster import (docs/your-cluster.md).",
             "# Beside each value: where it was read (file:line and what), or why it was chosen."]

    def put(indent: str, key: str, value, origin) -> None:
        text = f"{indent}{key}: {_flow(value)}"
        lines.append(f"{text}  # {origin}" if origin else text)

    for key in ("name", "kafka.version", "kafka.metadata", "seed", "duration.ms", "brokers", "racks"):
        if key in g:
            put("", key, g[key], o.get(key))
    for section in ("broker", "hardware"):
        if section in g:
            lines.append(f"{section}:")
            for key, value in g[section].items():
                if isinstance(value, dict):
                    lines.append(f"  {key}:")
                    for k2, v2 in value.items():
                        put("    ", k2, v2, o.get(f"{section}.{key}.{k2}"))
                else:
                    put("  ", key, value, o.get(f"{section}.{key}"))
    for name in ("topics", "producers", "consumers"):
        if name not in g:
            continue
        lines.append(f"{name}:" if g[name] else f"{name}: []")
        for i, item in enumerate(g[name]):
            for j, (key, value) in enumerate(item.items()):
                indent = "  - " if j == 0 else "    "
                if key == "replicas":
                    lines.append(f"{indent}replicas:  # {o.get(f'{name}[{i}].replicas')}")
                    lines.extend(f"      - {_flow(r)}" for r in value)
                else:
                    put(indent, key, value, o.get(f"{name}[{i}].{key}"))
    if imp.unmodelled:
        lines.append("")
        lines.append("# Read but not modelled:")
        lines.extend(f"#   {u}" for u in imp.unmodelled)
    return "\n".join(lines) + "\n"


def read(path: str, flag: str) -> tuple[str, str]:
    """(text, the name to cite it by) of an input file, or InputError naming the flag."""
    p = Path(path)
    try:
        return p.read_text(encoding="utf-8"), str(path)
    except FileNotFoundError:
        raise InputError(f"{flag} {path}", None, "no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{flag} {path}", None, f"cannot read it ({exc.__class__.__name__}: {exc})") from None
