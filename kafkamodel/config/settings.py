"""The settings in force, resolved once from a validated scenario.

Two steps, both here:

* ``derive(scenario_dict, given, kafka)``: the defaults that depend on other
  settings (``enable.idempotence`` on unless the producer's settings conflict,
  as in Kafka 3.x; an unset ``delivery.timeout.ms`` raised to ``linger.ms +
  request.timeout.ms``; ``acks: -1`` written as ``all``). The scenario's resolved
  view (``Scenario.to_dict()``, the run folder's ``scenario.yaml``) is this.
* ``Settings.of(scenario)``: a typed, frozen view of it that the actors
  read: the version's mechanisms, per broker, per topic (topic overrides of
  broker settings applied, min.insync.replicas as the version caps it), per
  producer, per consumer, per fault (targets parsed). Times are float
  milliseconds.

Each rule that relates settings is stated here once (``acks_code``,
``idempotence_conflicts``, ``delivery_timeout_floor``, ``leader_target``):
validation checks with it and the settings are resolved with it. Actors never
look a scenario key up themselves.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any, Mapping

from .hardware import PARTS, nic_ms_per_byte, profile  # nic_ms_per_byte: for the model, which reads config here
from .schema import CLOSED_LOOP, CONSUMER_FAULTS, LEADER_SELECTOR, RACK_AWARE_SELECTOR, assignor_list  # noqa: F401 (the selectors: for the model)
from .versions import MAX_INT, Mechanisms, mechanisms

# acks as Kafka codes it on the wire (ProduceRequest.acks): 0, 1, or -1 for all
ACKS_ALL = -1

TIMELINE_ROWS = 50_000  # by default the timeline samples at most this many (time, partition) rows


def acks_code(acks: Any) -> int:
    """A producer's acks setting (0, 1, all or -1) as Kafka codes it: 0, 1 or ACKS_ALL."""
    return ACKS_ALL if acks in ("all", ACKS_ALL) else acks


def idempotence_conflicts(p: Mapping, kafka: Mechanisms) -> list[str]:
    """What in a producer's settings rules idempotence out, each as 'key: rule' (KafkaProducer: acks all, retries
    above 0, at most the version's limit of requests in flight); empty when idempotence fits them."""
    found = []
    if acks_code(p["acks"]) != ACKS_ALL:
        found.append(f"enable.idempotence: true needs acks=all, got acks={p['acks']}")
    elif p["retries"] == 0:
        found.append("enable.idempotence: true needs retries > 0")
    limit, in_flight = kafka.idempotence_max_in_flight, p["max.in.flight.requests.per.connection"]
    if in_flight > limit:
        found.append(f"max.in.flight.requests.per.connection: must be <= {limit} with enable.idempotence, got "
                     f"{in_flight}" + (f" (Kafka {kafka.version}; 5 from 1.0, KAFKA-5494)" if limit == 1 else ""))
    return found


def delivery_timeout_floor(p: Mapping) -> float:
    """The least delivery.timeout.ms KafkaProducer runs with: linger.ms + request.timeout.ms (capped at 2^31 - 1), as
    KafkaProducer.configureDeliveryTimeout has it since KIP-91 (2.1)."""
    return min(p["linger.ms"] + p["request.timeout.ms"], MAX_INT)


def authored(given: Mapping, name: str, count: int) -> list[Mapping]:
    """What the author wrote for each of the `count` items of list `name` ({} where it wrote no mapping)."""
    items = given.get(name)
    items = items if isinstance(items, list) else []
    return [items[i] if i < len(items) and isinstance(items[i], Mapping) else {} for i in range(count)]


def resolved_machines(s: Mapping, given: Mapping) -> dict[str, dict]:
    """hardware.broker and hardware.client with every part: the profile's, except those the author wrote beside it
    (null included: unlimited)."""
    written = given.get("hardware")
    written = written if isinstance(written, Mapping) else {}
    machines = {}
    for role, machine in s["hardware"].items():
        mine = written.get(role)
        mine = mine if isinstance(mine, Mapping) else {}
        parts = profile(machine["profile"]).values()
        machines[role] = {"profile": machine["profile"], **{k: machine[k] if k in mine else copy.deepcopy(parts[k]) for k in PARTS}}
    return machines


def derive(s: dict, given: Mapping, kafka: Mechanisms) -> dict:
    """Fill the defaults that depend on other settings, in place; returns `s`. `given`: what the author wrote."""
    s["hardware"] = resolved_machines(s, given)
    written = given.get("costs") if isinstance(given.get("costs"), Mapping) else {}
    for key, part in profile(s["hardware"]["broker"]["profile"]).costs.items():  # a calibrated profile's costs
        if key in s["costs"] and key not in written:
            s["costs"][key] = part.value
    for p, mine in zip(s["producers"], authored(given, "producers", len(s["producers"]))):
        if p["enable.idempotence"] is None:  # Kafka 3.x: on unless the settings conflict
            p["enable.idempotence"] = not idempotence_conflicts(p, kafka)
        if mine.get("delivery.timeout.ms") is None and p["delivery.timeout.ms"] < delivery_timeout_floor(p):
            p["delivery.timeout.ms"] = delivery_timeout_floor(p)  # KafkaProducer raises an unset one (a set one: refused)
        if acks_code(p["acks"]) == ACKS_ALL:
            p["acks"] = "all"
    return s


_LEADER_TARGET = re.compile(r"^leader:(?P<topic>.+)-(?P<partition>\d+)$")


@dataclass(frozen=True, slots=True)
class LeaderTarget:
    """A fault target ``leader:TOPIC-P``: the partition's leader, as the controller has it when the fault fires."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"leader:{self.topic}-{self.partition}"


def leader_target(target: Any) -> LeaderTarget | None:
    """The partition a ``leader:TOPIC-P`` target names (partition digits as written, no leading zero), else None."""
    m = _LEADER_TARGET.match(target) if isinstance(target, str) else None
    if m is None or (len(m["partition"]) > 1 and m["partition"].startswith("0")):
        return None
    return LeaderTarget(m["topic"], int(m["partition"]))


def _ms(value) -> float | None:
    return None if value is None else float(value)


@dataclass(frozen=True, slots=True)
class BrokerSettings:
    replica_lag_time_max_ms: float
    replica_lag_max_messages: int | None  # 0.8's count rule; None: off
    replica_fetch_wait_max_ms: float  # a follower fetch's long poll
    replica_fetch_max_bytes: int  # bytes one fetch response carries per partition (at least one batch)
    replica_fetch_backoff_ms: float
    replica_socket_timeout_ms: float
    replica_high_watermark_checkpoint_interval_ms: float
    session_timeout_ms: float  # the controller declares a silent broker dead after this (ZooKeeper's or KRaft's)
    heartbeat_interval_ms: float | None  # KRaft: a broker heartbeats this often; None: ZooKeeper (expiry counts from silence)
    log_flush_interval_messages: int  # fsync after this many appended records; 0: never forced
    log_flush_interval_ms: float | None  # fsync every this many ms; None: never forced
    auto_leader_rebalance_enable: bool
    controlled_shutdown_enable: bool  # a shutting-down broker has the controller move its leaderships first
    leader_replication_throttled_rate: float | None  # bytes/s to throttled followers; None: no throttle
    follower_replication_throttled_rate: float | None  # bytes/s fetched for throttled replicas; None: no throttle
    leader_imbalance_check_interval_ms: float
    leader_imbalance_per_broker_percentage: float
    eligible_leader_replicas_enable: bool  # KIP-966
    log_retention_check_interval_ms: float
    num_replica_fetchers: int  # fetcher threads per (follower broker, leader broker)
    replica_fetch_min_bytes: int
    replica_fetch_response_max_bytes: int
    num_io_threads: int
    num_network_threads: int
    num_recovery_threads_per_data_dir: int = 1  # log loading and recovery threads at a start (one data dir)
    log_flush_offset_checkpoint_interval_ms: float = 60000.0  # recovery points written this often
    replica_selector_class: str | None = None  # KIP-392 (2.4): RackAwareReplicaSelector, LeaderSelector; None: unset

    @classmethod
    def of(cls, b: Mapping) -> "BrokerSettings":
        return cls(
            replica_lag_time_max_ms=float(b["replica.lag.time.max.ms"]),
            replica_lag_max_messages=b["replica.lag.max.messages"],
            replica_fetch_wait_max_ms=float(b["replica.fetch.wait.max.ms"]),
            replica_fetch_max_bytes=b["replica.fetch.max.bytes"],
            replica_fetch_backoff_ms=float(b["replica.fetch.backoff.ms"]),
            replica_socket_timeout_ms=float(b["replica.socket.timeout.ms"]),
            replica_high_watermark_checkpoint_interval_ms=float(b["replica.high.watermark.checkpoint.interval.ms"]),
            session_timeout_ms=float(b["zookeeper.session.timeout.ms"] or b["broker.session.timeout.ms"]),
            heartbeat_interval_ms=_ms(None if b["zookeeper.session.timeout.ms"] else b["broker.heartbeat.interval.ms"]),
            log_flush_interval_messages=b["log.flush.interval.messages"] or 0,
            log_flush_interval_ms=_ms(b["log.flush.interval.ms"] or None),
            auto_leader_rebalance_enable=bool(b["auto.leader.rebalance.enable"]),
            controlled_shutdown_enable=bool(b["controlled.shutdown.enable"]),
            leader_replication_throttled_rate=_ms(b["leader.replication.throttled.rate"]),
            follower_replication_throttled_rate=_ms(b["follower.replication.throttled.rate"]),
            leader_imbalance_check_interval_ms=float(b["leader.imbalance.check.interval.seconds"]) * 1000.0,
            leader_imbalance_per_broker_percentage=float(b["leader.imbalance.per.broker.percentage"]),
            eligible_leader_replicas_enable=bool(b["eligible.leader.replicas.enable"]),
            log_retention_check_interval_ms=float(b["log.retention.check.interval.ms"]),
            num_replica_fetchers=int(b["num.replica.fetchers"]),
            replica_fetch_min_bytes=int(b["replica.fetch.min.bytes"]),
            replica_fetch_response_max_bytes=int(b["replica.fetch.response.max.bytes"]),
            num_io_threads=int(b["num.io.threads"]),
            num_network_threads=int(b["num.network.threads"]),
            num_recovery_threads_per_data_dir=int(b["num.recovery.threads.per.data.dir"]),
            log_flush_offset_checkpoint_interval_ms=float(b["log.flush.offset.checkpoint.interval.ms"]),
            replica_selector_class=b.get("replica.selector.class"),
        )


@dataclass(frozen=True, slots=True)
class MachineSettings:
    """A broker's or a client's machine (hardware.broker / hardware.client; profiles in config/hardware.py)."""

    profile: str
    cores: int | None  # hardware threads (vCPUs); None: unlimited
    memory_gib: float
    nic_gbps: float | None  # each direction; None: unlimited
    nic_mtu: int  # a TCP stream gets hardware.goodput(mtu) of the NIC's bits
    disk_write_mib_per_s: float | None  # None: unlimited (no writeback limit, no disk time)
    disk_read_mib_per_s: float | None  # None: unlimited
    disk_latency_ms: Any  # one read's access time (a distribution, as config.distributions takes it)
    fsync_ms: Any  # one fsync (a distribution)
    jvm_heap_gib: float  # -Xmx: memory that is not page cache

    @classmethod
    def of(cls, m: Mapping) -> "MachineSettings":
        def bound(v):
            return None if v is None else float(v)

        return cls(
            profile=m["profile"], cores=None if m["cores"] is None else int(m["cores"]),
            memory_gib=float(m["memory.gib"]), nic_gbps=bound(m["nic.gbps"]), nic_mtu=int(m["nic.mtu"]),
            disk_write_mib_per_s=bound(m["disk.write.mib.per.s"]), disk_read_mib_per_s=bound(m["disk.read.mib.per.s"]),
            disk_latency_ms=m["disk.latency.ms"], fsync_ms=m["fsync.ms"], jvm_heap_gib=float(m["jvm.heap.gib"]),
        )


@dataclass(frozen=True, slots=True)
class OsSettings:
    """Linux's dirty-page writeback (os.vm.*), times in ms."""

    dirty_background_ratio: float  # percent of dirtyable memory: background writeback starts
    dirty_ratio: float  # percent of dirtyable memory: writers are throttled
    dirty_expire_ms: float  # vm.dirty_expire_centisecs * 10: dirty data older than this is written back
    dirty_writeback_ms: float  # vm.dirty_writeback_centisecs * 10: the flusher's period (0: no periodic wakeup)

    @classmethod
    def of(cls, o: Mapping) -> "OsSettings":
        return cls(
            dirty_background_ratio=float(o["vm.dirty_background_ratio"]), dirty_ratio=float(o["vm.dirty_ratio"]),
            dirty_expire_ms=float(o["vm.dirty_expire_centisecs"]) * 10.0,
            dirty_writeback_ms=float(o["vm.dirty_writeback_centisecs"]) * 10.0,
        )


@dataclass(frozen=True, slots=True)
class ControllerSettings:
    """The controller's time per partition (docs/controller.md); None where the metadata mode has no such cost."""

    zookeeper_write_ms: float | None  # ZooKeeper: per partition state change written
    zookeeper_read_ms: float | None  # ZooKeeper: per partition read by a new controller
    kraft_record_ms: float | None  # KRaft: per partition change record
    kraft_commit_ms: float | None  # KRaft: per batch of records committed to the metadata log

    @classmethod
    def of(cls, c: Mapping) -> "ControllerSettings":
        return cls(**{k.replace(".", "_"): _ms(v) for k, v in c.items()})


@dataclass(frozen=True, slots=True)
class CostSettings:
    """CPU per request (µs), the client's per record, batch and request, and the brokers' GC: the model's calibration
    (docs/calibration.md)."""

    request_us: float
    partition_us: float
    kib_us: float
    network_request_us: float
    network_kib_us: float
    fetcher_response_us: float
    fetcher_partition_us: float
    fetcher_kib_us: float
    producer_record_us: float  # a producer's sender thread, per record
    producer_batch_us: float  # per batch
    producer_request_us: float  # per produce request
    gc_young_mib: float  # a young collection per this many MiB allocated
    gc_pause_ms: Any  # one young pause (a distribution)
    gc_request_kib: float  # KiB allocated per request besides its records
    crc32_kib_us: float  # per KiB appended, formats v0/v1 only: each message's pure-Java CRC32 (0 from 0.11)

    DISTRIBUTIONS = ("gc.pause.ms",)  # cost keys that are distributions, not numbers

    @classmethod
    def of(cls, c: Mapping) -> "CostSettings":
        return cls(**{k.replace(".", "_"): v if k in cls.DISTRIBUTIONS else float(v) for k, v in c.items()})


@dataclass(frozen=True, slots=True)
class TopicSettings:
    name: str
    partitions: int
    replication_factor: int
    min_insync_replicas: int  # in force: the topic's own (at most RF), else the broker's; capped at RF from 3.7
    unclean_leader_election_enable: bool  # in force: the topic's own, else the broker's
    segment_bytes: int  # in force: segment.bytes, else log.segment.bytes
    retention_ms: float | None  # in force: retention.ms, else log.retention.ms (None: forever)
    retention_bytes: int | None  # in force: retention.bytes, else log.retention.bytes (None: no limit)
    replicas: tuple[tuple[int, ...], ...] | None  # each partition's replicas as given (None: Kafka's placement)
    min_insync_replicas_set: int = 0  # min.insync.replicas as set (the topic's own, else the broker's), uncapped
    min_isr_capped_by_replicas: bool = False  # 3.7+: in force is min(it, the partition's replica count) at any time

    def min_isr_for(self, replicas: int) -> int:
        """min.insync.replicas in force for a partition with `replicas` replicas now (Partition.effectiveMinIsr from
        3.7: min(min.insync.replicas, remote replicas + 1), read at each produce; before 3.7 the value as set)."""
        if not self.min_isr_capped_by_replicas:
            return self.min_insync_replicas_set or self.min_insync_replicas
        return min(self.min_insync_replicas_set or self.min_insync_replicas, replicas)

    @classmethod
    def of(cls, t: Mapping, b: Mapping, kafka: Mechanisms) -> "TopicSettings":
        rf = t["replication.factor"]
        unclean = t["unclean.leader.election.enable"]
        min_isr = t["min.insync.replicas"] or b["min.insync.replicas"]  # a topic's own above its RF is refused
        return cls(
            name=t["name"], partitions=t["partitions"], replication_factor=rf,
            min_insync_replicas=min(min_isr, rf) if kafka.min_isr_capped_by_replicas else min_isr,
            unclean_leader_election_enable=bool(b["unclean.leader.election.enable"] if unclean is None else unclean),
            segment_bytes=t["segment.bytes"] or b["log.segment.bytes"],
            retention_ms=_ms(t["retention.ms"] or b["log.retention.ms"]),
            retention_bytes=t["retention.bytes"] or b["log.retention.bytes"],
            replicas=None if t["replicas"] is None else tuple(tuple(r) for r in t["replicas"]),
            min_insync_replicas_set=min_isr, min_isr_capped_by_replicas=kafka.min_isr_capped_by_replicas,
        )


@dataclass(frozen=True, slots=True)
class BurstSettings:
    records: int  # records sent at once
    every_ms: float
    start_ms: float


@dataclass(frozen=True, slots=True)
class ProducerSettings:
    topic: str
    rate_per_s: float  # Poisson arrivals
    burst: BurstSettings | None
    start_ms: float
    stop_ms: float | None
    acks: int  # 0, 1 or ACKS_ALL (-1), as Kafka codes it
    linger_ms: float
    batch_size: int  # bytes
    record_size_bytes: int
    retries: int
    retry_backoff_ms: float
    retry_backoff_max_ms: float | None  # KIP-580 (3.7+): the exponential backoff's cap; None: constant (before 3.7)
    request_timeout_ms: float
    delivery_timeout_ms: float
    enable_idempotence: bool
    max_in_flight: int  # max.in.flight.requests.per.connection
    max_request_size: int
    client_rack: str | None  # the rack it runs in (network.links)
    partitioner: Any  # a name, or {mapping: {key: partition}}
    key_cardinality: int | None  # keys key-0 .. key-(n-1); None: null keys
    closed_loop: bool  # rate.per.s: max (then rate_per_s is 0.0): as fast as buffer.memory and in-flight requests allow
    buffer_memory: int  # bytes
    max_block_ms: float
    compression_type: str  # none, gzip, snappy, lz4, zstd
    instance: int  # which copy of its producers[] entry (0 .. instances-1)

    @property
    def records_per_batch(self) -> int:
        """Records that fit in batch.size (at least one)."""
        return max(1, self.batch_size // self.record_size_bytes)

    @classmethod
    def of(cls, p: Mapping, instance: int = 0) -> "ProducerSettings":
        burst = p["burst"]
        closed = p["rate.per.s"] == CLOSED_LOOP
        return cls(
            topic=p["topic"], rate_per_s=0.0 if closed else float(p["rate.per.s"]),
            burst=None if burst is None else BurstSettings(int(burst["records"]), float(burst["every.ms"]),
                                                           float(burst["start.ms"])),
            start_ms=float(p["start.ms"]), stop_ms=_ms(p["stop.ms"]),
            acks=acks_code(p["acks"]), linger_ms=float(p["linger.ms"]), batch_size=int(p["batch.size"]),
            record_size_bytes=int(p["record.size.bytes"]), retries=int(p["retries"]),
            retry_backoff_ms=float(p["retry.backoff.ms"]), retry_backoff_max_ms=_ms(p.get("retry.backoff.max.ms")),
            request_timeout_ms=float(p["request.timeout.ms"]), delivery_timeout_ms=float(p["delivery.timeout.ms"]), enable_idempotence=bool(p["enable.idempotence"]),
            max_in_flight=int(p["max.in.flight.requests.per.connection"]),
            max_request_size=int(p["max.request.size"]), client_rack=p["client.rack"], partitioner=p["partitioner"],
            key_cardinality=None if p["keys"] is None else int(p["keys"]["cardinality"]),
            closed_loop=closed, buffer_memory=int(p["buffer.memory"]), max_block_ms=float(p["max.block.ms"]),
            compression_type=p["compression.type"], instance=instance,
        )


@dataclass(frozen=True, slots=True)
class ConsumerSettings:
    group: str  # group.id
    topic: str
    members: int
    assignment_strategy: str  # the assignor the group uses: the first of partition.assignment.strategy
    commit: str  # auto, before_processing, after_processing, atomic
    auto_commit_interval_ms: float
    processing_ms: float  # per record
    max_poll_records: int
    fetch_max_wait_ms: float
    fetch_min_bytes: int
    fetch_max_bytes: int
    max_partition_fetch_bytes: int
    session_timeout_ms: float
    heartbeat_interval_ms: float
    auto_offset_reset: str  # latest or earliest
    retry_backoff_ms: float
    retry_backoff_max_ms: float | None  # KIP-580 (3.7+): the metadata refresh backoff's cap; None: constant
    request_timeout_ms: float  # a fetch unanswered this long (after fetch.max.wait.ms) is given up
    client_rack: str | None  # the rack its members run in (network.links)
    rebalance_protocol: str = "eager"  # eager, cooperative (KIP-429: every listed assignor supports it), or consumer (KIP-848)
    remote_assignor: str = "uniform"  # group.protocol consumer: the coordinator's assignor
    instance_ids: tuple | None = None  # group.instance.id per member (static membership, KIP-345), or None
    metadata_max_age_ms: float = 300000.0  # a preferred read replica (KIP-392) lasts this long

    @classmethod
    def of(cls, c: Mapping, broker: Mapping | None = None) -> "ConsumerSettings":
        listed = assignor_list(c["partition.assignment.strategy"])
        ids = c.get("group.instance.id")
        if isinstance(ids, str):
            ids = [f"{ids}-{i}" for i in range(int(c["members"]))]
        protocol = ("consumer" if c.get("group.protocol") == "consumer"
                    else "cooperative" if all(n == "cooperative-sticky" for n in listed) else "eager")
        return cls(
            rebalance_protocol=protocol, remote_assignor=c.get("group.remote.assignor") or "uniform",
            instance_ids=tuple(ids) if ids else None,
            group=c["group"], topic=c["topic"], members=int(c["members"]),
            assignment_strategy=listed[0], commit=c["commit"],
            auto_commit_interval_ms=float(c["auto.commit.interval.ms"]), processing_ms=float(c["processing.ms"]),
            max_poll_records=int(c["max.poll.records"]), fetch_max_wait_ms=float(c["fetch.max.wait.ms"]),
            fetch_min_bytes=int(c["fetch.min.bytes"]), fetch_max_bytes=int(c["fetch.max.bytes"]),
            max_partition_fetch_bytes=int(c["max.partition.fetch.bytes"]),
            # group.protocol consumer: the broker's group.consumer.* settings replace the client's (KIP-848)
            session_timeout_ms=float((broker or {}).get("group.consumer.session.timeout.ms") or 45000
                                     if protocol == "consumer" else c["session.timeout.ms"]),
            heartbeat_interval_ms=float((broker or {}).get("group.consumer.heartbeat.interval.ms") or 5000
                                        if protocol == "consumer" else c["heartbeat.interval.ms"]),
            auto_offset_reset=c["auto.offset.reset"], retry_backoff_ms=float(c["retry.backoff.ms"]),
            retry_backoff_max_ms=_ms(c.get("retry.backoff.max.ms")),
            request_timeout_ms=float(c["request.timeout.ms"]), client_rack=c["client.rack"],
            metadata_max_age_ms=float(c.get("metadata.max.age.ms", 300000)),
        )


@dataclass(frozen=True, slots=True)
class FaultSettings:
    at_ms: float
    kind: str
    consumer: bool  # a consumer fault (kind consumer_*): it hits a group's member, not brokers
    targets: tuple  # broker ids or LeaderTargets (rack:NAME and * expanded to ids), hit at the same instant
    group: str | None  # consumer faults
    member: int | None
    duration_ms: float | None
    isolate_from: tuple | None  # isolate: cut only these links (broker ids, "controller", "clients")
    factor: float  # slow

    @classmethod
    def of(cls, f: Mapping, racks: tuple = (), brokers: int = 0) -> "FaultSettings":
        """`racks`: each broker's rack, for rack:NAME targets; `brokers`: how many there are, for *."""
        target = f["broker"]
        targets = []
        for t in (target if isinstance(target, (list, tuple)) else (target,)):
            if t == "*":
                targets.extend(range(brokers))
            elif isinstance(t, str) and t.startswith("rack:"):
                targets.extend(b for b, rack in enumerate(racks) if rack == t[5:])
            else:
                targets.append(leader_target(t) or t)
        targets = tuple(dict.fromkeys(targets))  # a broker named twice (rack:a and 0) is hit once
        return cls(
            at_ms=float(f["at.ms"]), kind=f["kind"], consumer=f["kind"] in CONSUMER_FAULTS, targets=targets, group=f["group"], member=f["member"],
            duration_ms=_ms(f["duration.ms"]), isolate_from=None if f["from"] is None else tuple(f["from"]),
            factor=float(f["factor"]),
        )


@dataclass(frozen=True, slots=True)
class OperationSettings:
    """One scheduled operation (operations:), in Kafka's terms; which fields a kind uses: config.scenario."""

    at_ms: float
    kind: str
    broker: int | None
    brokers: tuple  # rolling_restart: in order (all, in id order, unless given)
    gate: tuple  # rolling_restart: ("wait.ms", N), ("no_under_replicated", 0) or ("full_isr_for.ms", N)
    downtime_ms: float
    topic: str | None
    partitions: tuple | None  # partition numbers (None: every partition, for preferred_leader_election)
    replicas: tuple  # reassign: the new replica list per partition
    throttle: float | None  # reassign: bytes/s

    @classmethod
    def of(cls, op: Mapping, brokers: int) -> "OperationSettings":
        gate = op["gate"]
        if gate is None:
            gate = ("no_under_replicated", 0.0)
        elif isinstance(gate, str):
            gate = (gate, 0.0)
        else:
            (key, value), = gate.items()
            gate = (key, float(value))
        return cls(at_ms=float(op["at.ms"]), kind=op["kind"], broker=op["broker"],
                   brokers=tuple(op["brokers"] or range(brokers)), gate=gate, downtime_ms=float(op["downtime.ms"]),
                   topic=op["topic"], partitions=None if op["partitions"] is None else tuple(op["partitions"]),
                   replicas=tuple(tuple(r) for r in op["replicas"] or ()), throttle=_ms(op["throttle"]))


@dataclass(frozen=True, slots=True)
class Settings:
    name: str
    seed: int
    duration_ms: float
    kafka: Mechanisms  # what kafka.version (and kafka.metadata) run: truncation, metadata mode, ... (versions.py)
    replication: str  # "isr" or "quorum"
    brokers: int
    timeline_interval_ms: float  # the timeline's sampling period
    debug_invariants: bool
    broker: BrokerSettings
    latency_ms: Any  # the one-way latency distribution (every link network.links does not name)
    links: tuple  # ((end X, end Y), latency distribution) per network.links entry, in order (later wins)
    racks: tuple  # broker -> its rack (broker.rack); () without racks
    fsync_ms: Any  # one fsync's duration (distribution): disk.fsync.ms, else the broker machine's
    quorum_fsync: bool  # quorum mode: replicas count towards the majority once durable
    bandwidth_mbps: float | None  # each broker NIC: network.bandwidth.mbps, else the broker machine's; None: no transfer time
    broker_machine: MachineSettings
    client_machine: MachineSettings  # each producer instance's own
    os: OsSettings
    costs: CostSettings
    controller: "ControllerSettings"
    topics: tuple  # TopicSettings, in scenario order
    producers: tuple  # ProducerSettings
    consumers: tuple  # ConsumerSettings
    faults: tuple  # FaultSettings
    operations: tuple  # OperationSettings, in scenario order
    cross_zone_price_per_gb: float = 0.02  # network.cross.zone.price.per.gb: a GB (2^30 bytes) across zones, both ends
    results_records: str = "all"  # results.records: the per-record table kept (all, sample, none)

    @classmethod
    def of(cls, scenario: Mapping) -> "Settings":
        b = scenario["broker"]
        duration = float(scenario["duration.ms"])
        interval = scenario["timeline.interval.ms"]
        partitions = sum(t["partitions"] for t in scenario["topics"])
        racks = tuple(scenario["racks"][i % len(scenario["racks"])] for i in range(scenario["brokers"])) \
            if scenario["racks"] else ()
        kafka = mechanisms(scenario["kafka.version"], scenario["kafka.metadata"])
        broker_machine = MachineSettings.of(scenario["hardware"]["broker"])
        bandwidth = scenario["network"]["bandwidth.mbps"]
        if bandwidth is None and broker_machine.nic_gbps is not None:  # null: the machine's NIC (itself null: unlimited)
            bandwidth = broker_machine.nic_gbps * 1000.0
        fsync = scenario["disk"]["fsync.ms"]
        return cls(
            name=scenario["name"], seed=scenario["seed"], duration_ms=duration,
            kafka=kafka, replication=scenario["replication"],
            brokers=scenario["brokers"],
            timeline_interval_ms=float(interval or max(duration / 400.0, 1.0, duration * partitions / TIMELINE_ROWS)),
            debug_invariants=bool(scenario["debug.invariants"]),
            broker=BrokerSettings.of(b),
            latency_ms=scenario["network"]["latency.ms"], bandwidth_mbps=_ms(bandwidth),
            links=tuple((tuple(link["between"]), link["latency.ms"]) for link in scenario["network"]["links"]),
            racks=racks,
            fsync_ms=broker_machine.fsync_ms if fsync is None else fsync, quorum_fsync=bool(scenario["quorum.fsync"]),
            broker_machine=broker_machine, client_machine=MachineSettings.of(scenario["hardware"]["client"]),
            os=OsSettings.of(scenario["os"]),
            costs=CostSettings.of(scenario["costs"]),
            controller=ControllerSettings.of(scenario["controller"]),
            topics=tuple(TopicSettings.of(t, b, kafka) for t in scenario["topics"]),
            producers=tuple(ProducerSettings.of(p, k) for p in scenario["producers"] for k in range(p["instances"])),
            consumers=tuple(ConsumerSettings.of(c, b) for c in scenario["consumers"]),
            faults=tuple(FaultSettings.of(f, racks, scenario["brokers"]) for f in scenario["faults"]),
            operations=tuple(OperationSettings.of(op, scenario["brokers"]) for op in scenario["operations"]),
            cross_zone_price_per_gb=float(scenario["network"].get("cross.zone.price.per.gb", 0.02)),
            results_records=scenario["results.records"],
        )

    def topic(self, name: str) -> TopicSettings:
        return next(t for t in self.topics if t.name == name)
