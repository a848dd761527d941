"""The traffic table an operator fills: one row per topic's producers, in CSV.

Required columns: ``topic``, ``mb.per.s`` (bytes in, in MB/s: 10^6 bytes/s, as broker dashboards show
BytesInPerSec), ``record.size.bytes``, ``consumer.groups`` (how many groups read the topic: its fan-out).
Optional columns, Kafka's producer and consumer property names: ``acks``, ``linger.ms``, ``batch.size``,
``compression.type``, ``enable.idempotence``, ``max.in.flight.requests.per.connection``, ``producers`` (producer
instances sharing the rate: the scenario's ``instances``), ``keys`` (distinct keys; empty: no keys),
``consumer.members`` (consumers per group), ``client.rack``. An empty cell keeps the default.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass

from ..config import schema
from .errors import InputError

REQUIRED = ("topic", "mb.per.s", "record.size.bytes", "consumer.groups")
PRODUCER_COLUMNS = ("acks", "linger.ms", "batch.size", "compression.type", "enable.idempotence",
                    "max.in.flight.requests.per.connection", "client.rack")
OPTIONAL = PRODUCER_COLUMNS + ("producers", "keys", "consumer.members")
MB = 1e6  # bytes in one MB of mb.per.s


@dataclass(frozen=True)
class Row:
    line: int
    topic: str
    mb_per_s: float
    record_size_bytes: int
    consumer_groups: int
    producer: dict  # producer keys of the scenario from the optional columns
    producers: int
    keys: int | None
    consumer_members: int

    @property
    def rate_per_s(self) -> float:
        """Records per second of each producer instance: the topic's bytes in over the record size, shared."""
        return round(self.mb_per_s * MB / self.record_size_bytes / self.producers, 6)


def _number(value: str, source: str, line: int, column: str, what: str, integer: bool = False, lo: float = 0.0,
            strict: bool = True):
    try:
        x = int(value) if integer else float(value)
    except ValueError:
        x = None
    if x is None or (x <= lo if strict else x < lo):
        raise InputError(source, line, f"{column}: expected {what}, got {value!r}")
    return x


def _typed(value: str):
    """A CSV cell as YAML would read it: true/false, an integer, a number, else the text."""
    low = value.lower()
    if low in ("true", "false"):
        return low == "true"
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def read_traffic(text: str, source: str) -> list[Row]:
    reader = csv.reader(io.StringIO(text))
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        raise InputError(source, 1, f"expected a header line with the columns {','.join(REQUIRED)}") from None
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise InputError(source, 1, f"expected the columns {','.join(REQUIRED)} (more optional: "
                                    f"{','.join(OPTIONAL)}); missing {','.join(missing)}")
    unknown = [c for c in header if c not in REQUIRED + OPTIONAL]
    if unknown:
        raise InputError(source, 1, f"expected only the columns {','.join(REQUIRED + OPTIONAL)}; unknown "
                                    f"{','.join(unknown)}")
    rows = []
    for cells in reader:
        line = reader.line_num
        if not any(c.strip() for c in cells):
            continue
        if len(cells) != len(header):
            raise InputError(source, line, f"expected {len(header)} cells as the header has, got {len(cells)}")
        cell = {h: c.strip() for h, c in zip(header, cells)}
        producer = {}
        for column in PRODUCER_COLUMNS:
            if cell.get(column):
                value = _typed(cell[column])
                problems = schema.PRODUCER[column].check(value, column)
                if problems:
                    raise InputError(source, line, f"expected {problems[0]}")
                producer[column] = value
        rows.append(Row(
            line=line, topic=cell["topic"] or _missing(source, line, "topic"),
            mb_per_s=_number(cell["mb.per.s"], source, line, "mb.per.s", "MB/s (10^6 bytes/s), a number > 0"),
            record_size_bytes=_number(cell["record.size.bytes"], source, line, "record.size.bytes",
                                      "bytes per record, an integer > 0", integer=True),
            consumer_groups=_number(cell["consumer.groups"], source, line, "consumer.groups",
                                    "the number of consumer groups, an integer >= 0", integer=True, strict=False),
            producer=producer,
            producers=_number(cell.get("producers") or "1", source, line, "producers",
                              "producer instances, an integer > 0", integer=True),
            keys=_number(cell["keys"], source, line, "keys", "distinct keys, an integer > 0 (empty: no keys)",
                         integer=True) if cell.get("keys") else None,
            consumer_members=_number(cell.get("consumer.members") or "1", source, line, "consumer.members",
                                     "consumers per group, an integer > 0", integer=True)))
    if not rows:
        raise InputError(source, None, "expected at least one row of traffic under the header")
    return rows


def _missing(source: str, line: int, column: str) -> str:
    raise InputError(source, line, f"{column}: expected a value")


def export(scenario) -> str:
    """The scenario's producers and consumer groups as the traffic table (one row per producer)."""
    groups: dict[str, list] = {}
    for c in scenario["consumers"]:
        groups.setdefault(c["topic"], []).append(c)
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(REQUIRED + ("acks", "linger.ms", "batch.size", "producers", "keys", "consumer.members"))
    for p in scenario["producers"]:
        g = groups.pop(p["topic"], [])
        w.writerow([p["topic"], repr(p["rate.per.s"] * p["instances"] * p["record.size.bytes"] / MB), p["record.size.bytes"], len(g),
                    p["acks"], _plain(p["linger.ms"]), p["batch.size"], p["instances"],
                    p["keys"]["cardinality"] if p["keys"] else "", g[0]["members"] if g else 1])
    return out.getvalue()


def _plain(v):
    return int(v) if isinstance(v, float) and v.is_integer() else v
