"""``server.properties`` (one, or one per broker) and ``kafka-configs --describe`` output.

server.properties is a Java properties file: ``key=value`` (or ``key: value``, ``key value``), ``#`` and ``!``
comments, a trailing backslash continues a line. kafka-configs prints (``ConfigCommand``)::

    Dynamic configs for topic orders are:
      min.insync.replicas=2 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:min.insync.replicas=2, ...}
    Dynamic configs for broker 0 are:
    Default configs for brokers in the cluster are:
    All configs for topic orders are:          (--all: every entry; the first synonym names its source)

and the ZooKeeper-era command (before 2.x's --bootstrap-server) one line per entity:
``Configs for topic 'orders' are min.insync.replicas=2,retention.ms=86400000``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .errors import InputError


@dataclass
class Properties:
    """One server.properties: {key: (value, line)}."""
    source: str
    values: dict[str, tuple[str, int]]

    def get(self, key: str) -> str | None:
        return self.values[key][0] if key in self.values else None


def read_properties(text: str, source: str) -> Properties:
    values: dict[str, tuple[str, int]] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        number, line = i + 1, lines[i].strip()
        i += 1
        if not line or line[0] in "#!":
            continue
        while line.endswith("\\") and not line.endswith("\\\\") and i < len(lines):
            line = line[:-1] + lines[i].strip()
            i += 1
        m = re.match(r"([^=:\s]+)\s*[=:\s]\s*(.*)$", line)
        if not m:
            raise InputError(source, number, f"expected key=value, got {line[:60]!r}")
        key, value = m.group(1), m.group(2).strip()
        if key in values:
            raise InputError(source, number, f"expected each key once; {key} was set at line {values[key][1]}")
        values[key] = (value, number)
    if not values:
        raise InputError(source, None, "expected server.properties (key=value lines); found none")
    return Properties(source, values)


@dataclass
class ConfigsDescription:
    """kafka-configs --describe: overrides per topic and per broker ('' = the cluster-wide broker default)."""
    source: str
    topics: dict[str, dict[str, tuple[str, int]]] = field(default_factory=dict)
    brokers: dict[str, dict[str, tuple[str, int]]] = field(default_factory=dict)


_HEAD = re.compile(r"^(Dynamic|All) configs for (topic|broker) (\S+) are:$")
_DEFAULT = re.compile(r"^Default configs for brokers in the cluster are:$")
_ENTRY = re.compile(r"^\s+(\S+?)=(.*?) sensitive=(true|false) synonyms=\{(.*)\}$")
_OLD = re.compile(r"^Configs for (topic|topics|broker|brokers) '([^']*)' are ?(.*)$")
# the sources that are an override of this entity (not Kafka's default, not another entity's)
_OVERRIDES = ("DYNAMIC_TOPIC_CONFIG", "DYNAMIC_BROKER_CONFIG", "DYNAMIC_DEFAULT_BROKER_CONFIG",
              "STATIC_BROKER_CONFIG")


def read_configs(text: str, source: str) -> ConfigsDescription:
    out = ConfigsDescription(source)
    current: dict | None = None
    all_entries = False
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        head, default, old = _HEAD.match(raw.strip()), _DEFAULT.match(raw.strip()), _OLD.match(raw.strip())
        if head:
            table = out.topics if head.group(2) == "topic" else out.brokers
            current = table.setdefault(head.group(3), {})
            all_entries = head.group(1) == "All"
        elif default:
            current, all_entries = out.brokers.setdefault("", {}), False
        elif old:
            table = out.topics if old.group(1).startswith("topic") else out.brokers
            entries = table.setdefault(old.group(2), {})
            for item in filter(None, old.group(3).split(",")):
                name, eq, value = item.partition("=")
                if not eq:
                    raise InputError(source, number, f"expected name=value pairs separated by commas, got {item!r}")
                entries[name.strip()] = (value.strip(), number)
            current = None
        else:
            entry = _ENTRY.match(raw)
            if not entry or current is None:
                raise InputError(source, number, "expected kafka-configs --describe output: 'Dynamic configs for "
                                                 "topic NAME are:' and entries '  name=value sensitive=false "
                                                 f"synonyms={{...}}', got {raw.strip()[:60]!r}")
            name, value, _, synonyms = entry.groups()
            first = synonyms.split(":", 1)[0].strip()
            if all_entries and first not in _OVERRIDES:
                continue  # --all lists Kafka's defaults too: not an override
            current[name] = (value, number)
    if not out.topics and not out.brokers:
        raise InputError(source, None, "expected kafka-configs --describe output; found no entity")
    return out
