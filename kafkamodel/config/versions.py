"""Kafka versions: the one place that maps ``kafka.version`` to its mechanisms, defaults and property names.

Tables, each row citing the KIP or release note that made the change
(docs/versions.md is the same history written for readers; a test checks
the resolved defaults against that page):

* ``DEFAULTS``: per property, its default as it changed over the versions;
* ``PROPERTIES``: the properties that some modelled version lacks: since and
  until when they exist, in which metadata mode, what to use instead, and
  what the version does without them (the value the model resolves);
* ``VALUES`` and ``DECIDED``: values some version lacks, and the model's own
  keys whose value the version decides (``broker.truncation``);
* ``mechanisms(version, metadata)``: the protocol variants in force, resolved
  once per scenario (``version_checks.resolve_version``, ``Settings.kafka``).

A version names a release line (``"2.8"`` is 2.8.x; ``"0.8"`` is 0.8.2, the
first with ``min.insync.replicas``); ``"2.8.1"`` reads as ``"2.8"``, except the
patch releases in ``PATCHES`` (``"0.8.1"``), which run their line's mechanisms
less what a later patch of the line brought. Versions
before 4.0 run ZooKeeper unless ``kafka.metadata: kraft`` (3.3 and later:
KRaft was production-ready from 3.3, KIP-833); 4.0 removed ZooKeeper.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MAX_INT = 2147483647

VERSIONS = ("0.8", "0.9", "0.10", "0.11", "1.0", "1.1",
            "2.0", "2.1", "2.2", "2.3", "2.4", "2.5", "2.6", "2.7", "2.8",
            "3.0", "3.1", "3.2", "3.3", "3.4", "3.5", "3.6", "3.7", "3.8", "3.9",
            "4.0", "4.1")  # the release lines modelled, oldest first
NEWEST = VERSIONS[-1]  # the default kafka.version

ZOOKEEPER, KRAFT = "zookeeper", "kraft"
KRAFT_SINCE = "3.3"  # KIP-833: KRaft production-ready (earlier KRaft was early access: not modelled)
ZOOKEEPER_UNTIL = "4.0"  # KIP-500: 4.0 has no ZooKeeper mode


# patch releases modelled apart from their line (a line is its newest patch: "0.8" is 0.8.2): per patch, what the
# line's later patch brought that it lacks: (section, key) of a property -> the change that brought it
PATCHES: dict[str, dict[tuple[str, str], str]] = {
    "0.8.1": {("broker", "min.insync.replicas"): "KAFKA-1555, 0.8.2",
              ("topics", "min.insync.replicas"): "KAFKA-1555, 0.8.2"},
}


def order(version: str) -> tuple[int, int]:
    """A release line as a sortable (major, minor)."""
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def at_least(version: str, since: str) -> bool:
    return order(version) >= order(since)


def canonical(value: Any) -> str | None:
    """The release line a kafka.version value names ("2.8.1" -> "2.8"; a patch in PATCHES stays itself), or None if
    it names none."""
    if not isinstance(value, str):
        return None
    if value.strip() in PATCHES:
        return value.strip()
    parts = value.strip().split(".")
    if len(parts) not in (2, 3) or not all(p.isdigit() for p in parts):
        return None
    line = f"{int(parts[0])}.{int(parts[1])}"
    return line if line in VERSIONS else None


def check_version(value: Any, path: str) -> list[str]:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [f'{path}: must be a quoted string such as "2.8" (YAML reads 0.10 as the number 0.1), got {value!r}']
    if canonical(value) is None:
        return [f"{path}: unknown version {value!r}; known: {', '.join(VERSIONS)}"]
    return []


def default_metadata(version: str) -> str:
    """Before 4.0 ZooKeeper (the mode clusters of that era ran and were upgraded in); KRaft from 4.0."""
    return KRAFT if at_least(version, ZOOKEEPER_UNTIL) else ZOOKEEPER


def check_metadata(version: str, metadata: str, path: str = "kafka.metadata") -> list[str]:
    if metadata == KRAFT and not at_least(version, KRAFT_SINCE):
        return [f"{path}: kraft needs kafka.version {KRAFT_SINCE} or later (KRaft production-ready, KIP-833), "
                f"got {version!r}"]
    if metadata == ZOOKEEPER and at_least(version, ZOOKEEPER_UNTIL):
        return [f"{path}: zookeeper is not in Kafka {version} (removed in 4.0, KIP-500); "
                f'set kafka.version "3.9" or older']
    return []


# ---- defaults ---------------------------------------------------------------------------------------------------

# (section, key) -> ((the version it took this default in, default), ...), oldest first; with the source of each
# change in docs/versions.md. `None` for enable.idempotence: derived (on unless the producer's settings conflict).
DEFAULTS: dict[tuple[str, str], tuple[tuple[str, Any], ...]] = {
    ("broker", "replica.lag.time.max.ms"): (("0.8", 10000), ("2.5", 30000)),  # KIP-537
    ("broker", "replica.lag.max.messages"): (("0.8", 4000),),  # removed in 0.9 (KIP-16)
    ("broker", "zookeeper.session.timeout.ms"): (("0.8", 6000), ("2.5", 18000)),  # KIP-537
    ("broker", "broker.session.timeout.ms"): (("3.3", 9000),),  # KIP-631
    ("broker", "broker.heartbeat.interval.ms"): (("3.3", 2000),),  # KIP-631
    ("broker", "unclean.leader.election.enable"): (("0.8", True), ("0.11", False)),  # KIP-106
    ("broker", "truncation"): (("0.8", "high_watermark"), ("0.11", "leader_epoch")),  # KIP-101
    ("broker", "num.recovery.threads.per.data.dir"): (("0.8", 1), ("4.0", 2)),  # KIP-1030
    ("broker", "eligible.leader.replicas.enable"): (("4.0", False), ("4.1", True)),  # KIP-966: preview, then on
    ("producers", "acks"): (("0.8", 1), ("3.0", "all")),  # KIP-679
    ("producers", "enable.idempotence"): (("0.11", False), ("3.0", None)),  # KIP-98, KIP-679
    ("producers", "linger.ms"): (("0.8", 0), ("4.0", 5)),  # KIP-1030
    ("producers", "partitioner"): (("0.8", "legacy"), ("2.4", "sticky"), ("3.3", "default")),  # KIP-480, KIP-794
    ("producers", "retries"): (("0.8", 0), ("2.1", MAX_INT)),  # KIP-91
    ("producers", "delivery.timeout.ms"): (("2.1", 120000),),  # KIP-91
    ("consumers", "session.timeout.ms"): (("0.8", 30000), ("0.10", 10000), ("3.0", 45000)),  # KIP-62 (0.10.1), KIP-735
    ("consumers", "max.poll.records"): (("0.10", 500),),  # KIP-41
    # before 1.1: the geometric mean of the two published per-change costs, Rao 2015's 5 ms (a hypothetical) and
    # Rao 2018's 3 ms (30 s for 10,000 changes measured on 1.0.0): sqrt(5 x 3) = 3.9; from 1.1: KAFKA-5642, Rao 2018
    ("controller", "zookeeper.write.ms"): (("0.8", 3.9), ("1.1", 0.3)),
    ("controller", "zookeeper.read.ms"): (("0.8", 0.28), ("1.1", 0.14)),  # Rao 2018 (28 s, then 14 s for 100K)
    # formats v0/v1: Log.append checks a pure-Java CRC32 of every message (kafka.utils.Crc32, then
    # common.utils.Crc32), 1 KiB at 2.2 GB/s = 0.47 us (apache/hadoop PR 8349); v2's CRC32C is in kib.us (KIP-98)
    ("costs", "crc32.kib.us"): (("0.8", 0.47), ("0.11", 0.0)),
}


@dataclass(frozen=True)
class Property:
    """A property some modelled version lacks."""

    since: str | None = None  # the first version that has it (None: every modelled one)
    until: str | None = None  # the first version without it again (None: still there)
    metadata: str | None = None  # it exists only in this metadata mode
    came: str = ""  # what brought it (or took it away): a KIP or release note
    instead: str = ""  # what to use where it is missing
    absent: Any = None  # what the model resolves where the version lacks it (what that version did)


PROPERTIES: dict[tuple[str, str], Property] = {
    ("controller", "zookeeper.write.ms"): Property(
        metadata=ZOOKEEPER, came="a ZooKeeper-mode controller's cost", instead="use controller.kraft.record.ms in KRaft"),
    ("controller", "zookeeper.read.ms"): Property(
        metadata=ZOOKEEPER, came="a ZooKeeper-mode controller's cost (a KRaft standby already holds the state)",
        instead="leave it out in KRaft"),
    ("controller", "kraft.record.ms"): Property(
        since=KRAFT_SINCE, metadata=KRAFT, came="a KRaft controller's cost", instead="use controller.zookeeper.write.ms with ZooKeeper"),
    ("controller", "kraft.commit.ms"): Property(
        since=KRAFT_SINCE, metadata=KRAFT, came="a KRaft controller's cost", instead="leave it out with ZooKeeper"),
    ("broker", "replica.lag.max.messages"): Property(
        until="0.9", came="0.9 removed it: KIP-16's time rule replaced the count rule",
        instead='use replica.lag.time.max.ms, or set kafka.version "0.8"'),
    ("broker", "zookeeper.session.timeout.ms"): Property(
        metadata=ZOOKEEPER, came="ZooKeeper mode only, removed in 4.0 by KIP-500",
        instead='use broker.session.timeout.ms (KRaft), or run ZooKeeper: kafka.version "3.9" or older'),
    ("broker", "broker.session.timeout.ms"): Property(
        since=KRAFT_SINCE, metadata=KRAFT, came="KRaft mode only, KIP-631",
        instead="use zookeeper.session.timeout.ms (ZooKeeper), or set kafka.metadata: kraft (3.3 and later)"),
    ("broker", "broker.heartbeat.interval.ms"): Property(
        since=KRAFT_SINCE, metadata=KRAFT, came="KRaft mode only, KIP-631",
        instead="use zookeeper.session.timeout.ms (ZooKeeper), or set kafka.metadata: kraft (3.3 and later)"),
    ("broker", "eligible.leader.replicas.enable"): Property(
        since="4.0", metadata=KRAFT, came="Eligible Leader Replicas came in 4.0 with KIP-966", absent=False,
        instead='set kafka.version "4.0" or later'),
    ("broker", "replica.fetch.response.max.bytes"): Property(
        since="0.10", came="it came in 0.10.1 with KIP-74", absent=MAX_INT, instead='set kafka.version "0.10" or later'),
    ("broker", "leader.replication.throttled.rate"): Property(
        since="0.10", came="replication quotas came in 0.10.1 with KIP-73", instead='set kafka.version "0.10" or later'),
    ("broker", "follower.replication.throttled.rate"): Property(
        since="0.10", came="replication quotas came in 0.10.1 with KIP-73", instead='set kafka.version "0.10" or later'),
    ("producers", "enable.idempotence"): Property(
        since="0.11", came="the idempotent producer came in 0.11 with KIP-98", absent=False,
        instead='set kafka.version "0.11" or later'),
    ("producers", "delivery.timeout.ms"): Property(
        since="2.1", came="it came in 2.1 with KIP-91", absent=MAX_INT,
        instead='use retries and request.timeout.ms, or set kafka.version "2.1" or later'),
    ("producers", "retry.backoff.max.ms"): Property(
        since="3.7", came="exponential client backoff came in 3.7 with KIP-580", absent=None,
        instead='leave it out (a constant retry.backoff.ms), or set kafka.version "3.7" or later'),
    ("consumers", "retry.backoff.max.ms"): Property(
        since="3.7", came="exponential client backoff came in 3.7 with KIP-580", absent=None,
        instead='leave it out (a constant retry.backoff.ms), or set kafka.version "3.7" or later'),
    ("consumers", "max.poll.records"): Property(
        since="0.10", came="it came in 0.10.0 with KIP-41", absent=MAX_INT, instead='set kafka.version "0.10" or later'),
    ("consumers", "group.instance.id"): Property(
        since="2.3", came="static membership came in 2.3 with KIP-345", instead='set kafka.version "2.3" or later'),
    ("consumers", "group.protocol"): Property(
        since="3.7", came="it came in 3.7 with KIP-848 (early access; generally available in 4.0)", absent="classic",
        instead='leave it out (the classic protocol), or set kafka.version "4.0" or later'),
    ("consumers", "group.remote.assignor"): Property(
        since="3.7", came="it came in 3.7 with KIP-848", instead='set kafka.version "4.0" or later'),
    ("broker", "group.consumer.heartbeat.interval.ms"): Property(
        since="3.7", came="it came in 3.7 with KIP-848", instead='set kafka.version "4.0" or later'),
    ("broker", "group.consumer.session.timeout.ms"): Property(
        since="3.7", came="it came in 3.7 with KIP-848", instead='set kafka.version "4.0" or later'),
    ("broker", "replica.selector.class"): Property(
        since="2.4", came="fetch-from-follower came in 2.4 with KIP-392", instead='set kafka.version "2.4" or later'),
    ("consumers", "fetch.max.bytes"): Property(
        since="0.10", came="it came in 0.10.1 with KIP-74", absent=MAX_INT, instead='set kafka.version "0.10" or later'),
}

# the model's own keys whose value the version decides (its DEFAULTS row): given, it must agree with the version;
# (section, key) -> (what the version does, in words; what changed it)
DECIDED: dict[tuple[str, str], tuple[str, str]] = {
    ("broker", "truncation"): ("truncates by", "KIP-101"),
}

# values of a key that some modelled version lacks: (section, key, value) -> (since, what brought it)
VALUES: dict[tuple[str, str, str], tuple[str, str]] = {
    ("producers", "partitioner", "sticky"): ("2.4", "KIP-480"),
    ("producers", "partitioner", "round_robin"): ("2.4", "KIP-369"),
    ("producers", "partitioner", "uniform_sticky"): ("3.3", "KIP-794"),
    ("consumers", "partition.assignment.strategy", "sticky"): ("0.11", "KIP-54"),
    ("consumers", "partition.assignment.strategy", "cooperative-sticky"): ("2.4", "KIP-429"),
    ("consumers", "group.protocol", "consumer"): ("4.0", "KIP-848"),
    # gzip and snappy are in 0.8, lz4 in 0.8.2 (KAFKA-1456; the "0.8" line is 0.8.2): every modelled version
    ("producers", "compression.type", "zstd"): ("2.1", "KIP-110"),
}


def has(section: str, key: str, version: str, metadata: str) -> bool:
    """Does this version (in this metadata mode) have the property?"""
    if (section, key) in PATCHES.get(version, ()):
        return False
    prop = PROPERTIES.get((section, key))
    if prop is None:
        return True
    return ((prop.since is None or at_least(version, prop.since))
            and (prop.until is None or not at_least(version, prop.until))
            and (prop.metadata is None or prop.metadata == metadata))


def default(section: str, key: str, version: str, metadata: str, fallback: Any) -> Any:
    """The default of a key under this version: its own, what the version does without it, or `fallback`."""
    if (section, key) in PATCHES.get(version, ()):
        return fallback  # what the patch did without it: min.insync.replicas 1 (acks=-1 waits for the whole ISR)
    if not has(section, key, version, metadata):
        return PROPERTIES[(section, key)].absent
    return _in_force(DEFAULTS.get((section, key), ()), version, fallback)


def section_defaults(section: str, keys, version: str, metadata: str) -> dict:
    """{key: default under this version} for every key of a section that the versions change."""
    changed = {k for s, k in (*DEFAULTS, *PROPERTIES) if s == section}
    return {k: default(section, k, version, metadata, keys[k].default) for k in changed if k in keys}


def name_problem(section: str, key: str, version: str, metadata: str, where: str) -> str | None:
    """One line if this version (in this metadata mode) lacks the property: which, why, and what instead."""
    if has(section, key, version, metadata):
        return None
    if (section, key) in PATCHES.get(version, ()):
        came = PATCHES[version][(section, key)]
        return f'{where}: not a property of Kafka {version} (it came in {came}); set kafka.version "0.8" or later'
    prop = PROPERTIES[(section, key)]
    in_version = ((prop.since is None or at_least(version, prop.since))
                  and (prop.until is None or not at_least(version, prop.until)))
    mode = "" if not in_version else " in KRaft mode" if metadata == KRAFT else " in ZooKeeper mode"
    return f"{where}: not a property of Kafka {version}{mode} ({prop.came}); {prop.instead}"


def _in_force(rows: tuple[tuple[str, Any], ...], version: str, fallback: Any = None) -> Any:
    """The value of a DEFAULTS row under this version."""
    value = fallback
    for since, then in rows:
        if at_least(version, since):
            value = then
    return value


def _decided_problem(section: str, key: str, value: str, version: str, where: str) -> str | None:
    """One line if a key the version decides is given a value of another era: which era, and the KIP between."""
    rows = DEFAULTS[(section, key)]
    values = [then for _, then in rows]
    own = _in_force(rows, version)
    if value == own or value not in values:
        return None  # agrees, or is no value of any era (the schema's rule refuses it)
    verb, came = DECIDED[(section, key)]
    i = values.index(value)
    boundary = rows[max(i, values.index(own))][0]  # the version where the two eras part
    era = (f'kafka.version "{rows[i][0]}" or later' if i + 1 == len(rows)
           else f'kafka.version "{VERSIONS[VERSIONS.index(rows[i + 1][0]) - 1]}" or older')
    return (f"{where}: Kafka {version} {verb} {own.replace('_', ' ')}, not {value.replace('_', ' ')} "
            f"({came}, {boundary}); leave it out, or set {era}")


def value_problem(section: str, key: str, value: Any, version: str, where: str) -> str | None:
    """One line if the value names a mechanism this version lacks (a partitioner or assignor that came later), or
    disagrees with what the version decides (``DECIDED``)."""
    if key == "partition.assignment.strategy" and (isinstance(value, list) or "," in str(value)):  # each listed
        return next(filter(None, (value_problem(section, key, str(v).strip(), version, where)
                                  for v in (value if isinstance(value, list) else value.split(",")))), None)
    if not isinstance(value, str):
        return None
    if (section, key) in DECIDED:
        return _decided_problem(section, key, value, version, where)
    if (section, key, value) not in VALUES:
        return None
    since, came = VALUES[(section, key, value)]
    if at_least(version, since):
        return None
    return f'{where}: {value} is not in Kafka {version} ({came}, {since}); set kafka.version "{since}" or later'


# ---- mechanisms ---------------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Mechanisms:
    """The protocol variants a Kafka version runs (docs/versions.md)."""

    version: str  # the release line
    metadata: str  # zookeeper or kraft
    truncation: str  # high_watermark, or leader_epoch (KIP-101): DEFAULTS' broker.truncation row
    kip279: bool  # 2.0: OffsetsForLeaderEpoch answers carry the epoch; the follower truncates to the smaller end and asks again
    hw_held_below_min_isr: bool  # 3.7 (KAFKA-15583): the HW does not advance while the ISR is below min.insync.replicas
    min_isr_capped_by_replicas: bool  # 3.7 (KAFKA-15583): Partition.effectiveMinIsr, min(min.insync.replicas, replicas)
    idempotence_max_in_flight: int  # in-flight requests idempotence allows: 1 in 0.11 (KIP-98), 5 from 1.0 (KAFKA-5494)
    kip360: bool  # 2.5: an idempotent producer bumps its epoch past a sequence gap and retries (before: the batch fails)
    unclean_shutdown_fencing: bool  # 4.0 (KIP-966): a broker registering after an unclean shutdown leaves ISRs and ELRs
    broker_epochs: bool  # 2.2 (KIP-380) and KRaft: a broker refuses controller requests meant for an older incarnation
    magic: int  # the message format producers write: 0 (0.8), 1 (0.10, KIP-32: timestamps), 2 (0.11, KIP-98: RecordBatch)
    fetch_sessions: bool  # 1.1 (KIP-227): incremental fetch sessions; before, every fetch names every partition and
    # every answer carries every partition asked for
    hw_completes_delayed_fetch: bool = True  # 0.8.2 (KAFKA-1430, purgatory redesign): a consumer's parked fetch is
    # answered when the HW moves; before (0.8.1), only when a produce (or an acks=-1 request's acknowledgement) to its
    # partitions brings fetch.min.bytes, answered with what is below the HW then, or when fetch.wait.max.ms passes
    static_member_order: bool = True  # 2.4 (KAFKA-8355, KAFKA-8356): range and roundrobin order static members by
    # group.instance.id (KIP-345's group.instance.id itself is 2.3: there they order every member by member id)
    kip841: bool = False  # KRaft (KIP-841) and ZooKeeper from 3.4 (KAFKA-14140): the controller refuses an ISR that
    # adds a broker it does not count live: fenced or offline, or in a controlled shutdown
    controlled_shutdown_batched: bool = True  # 1.1 (KAFKA-5642) and KRaft: the controller moves a controlled shutdown's
    # partitions in one batch; before, a ZooKeeper controller moved them one at a time, each its own batch
    # fetch-from-follower (KIP-392, 2.4: replica.selector.class exists from there), as it changed (docs/zones.md):
    kip392: bool = False  # 2.4: a consumer's fetch carries its client metadata (rack), so any replica serves it
    hw_ends_follower_long_poll: bool = False  # 2.4-2.5 (KIP-392's DelayedFetch "Case H", removed in 2.6 by
    # KAFKA-9952): a follower whose last answer's HW is stale is answered at once, parked or not
    preferred_replica_answers_at_once: bool = False  # 3.3 (KAFKA-13767): a leader's answer naming a preferred read
    # replica goes out at once; before, it waits in purgatory like an empty fetch (fetch.max.wait.ms, unless other
    # partitions of the fetch bring fetch.min.bytes)
    preferred_replica_in_isr: bool = False  # 3.4 (KAFKA-14372): the leader names only an ISR member; before, any
    # replica whose LEO has the fetch offset, however far behind
    follower_completes_delayed_fetch: bool = False  # 3.4 (KAFKA-14334): a follower answers the consumer fetches parked
    # on it when a fetch answer moves its HW; before, they wait fetch.max.wait.ms
    consumer_clears_preferred_on_error: bool = False  # 3.5 (KAFKA-14379): a failed fetch, or an error asking for a
    # metadata update, sends the consumer back to the leader; before, only OFFSET_OUT_OF_RANGE, the replica offline
    # in its metadata, or metadata.max.age.ms
    kip951: bool = False  # 3.7 (KIP-951): a NOT_LEADER_OR_FOLLOWER produce answer names the leader the broker's
    # metadata cache has (CurrentLeader); the producer sends there at once, without a metadata refresh or backoff
    producer_snapshot_fsync: bool = False  # 2.8 (KAFKA-9892): a producer-state snapshot is forced to disk, so log
    # recovery fsyncs once per recovered segment (LogLoader.recoverSegment's takeSnapshot)
    # (ELR itself, the idempotent producer, the count rule: their properties exist only where the version has them)

    @property
    def kraft(self) -> bool:
        return self.metadata == KRAFT


def mechanisms(version: str, metadata: str) -> Mechanisms:
    kraft = metadata == KRAFT
    return Mechanisms(
        version=version, metadata=metadata,
        truncation=_in_force(DEFAULTS[("broker", "truncation")], version),
        kip279=at_least(version, "2.0"),
        hw_held_below_min_isr=at_least(version, "3.7"),
        min_isr_capped_by_replicas=at_least(version, "3.7"),
        idempotence_max_in_flight=5 if at_least(version, "1.0") else 1,
        kip360=at_least(version, "2.5"),
        unclean_shutdown_fencing=kraft and at_least(version, "4.0"),
        broker_epochs=kraft or at_least(version, "2.2"),
        magic=2 if at_least(version, "0.11") else 1 if at_least(version, "0.10") else 0,
        fetch_sessions=at_least(version, "1.1"),
        hw_completes_delayed_fetch=version != "0.8.1",
        static_member_order=at_least(version, "2.4"),
        kip841=kraft or at_least(version, "3.4"),
        controlled_shutdown_batched=kraft or at_least(version, "1.1"),
        kip392=at_least(version, "2.4"),
        hw_ends_follower_long_poll=at_least(version, "2.4") and not at_least(version, "2.6"),
        preferred_replica_answers_at_once=at_least(version, "3.3"),
        preferred_replica_in_isr=at_least(version, "3.4"),
        follower_completes_delayed_fetch=at_least(version, "3.4"),
        consumer_clears_preferred_on_error=at_least(version, "3.5"),
        producer_snapshot_fsync=at_least(version, "2.8"),
        kip951=at_least(version, "3.7"),
    )
