"""The scenario schema: every key, its Kafka default and its rule.

Keys are Kafka's own property names where Kafka has one. Each entry is a
``Key(default, check)``; ``check(value, path)`` returns a list of problems,
each a line ``path: rule``. Defaults are the newest modelled Kafka's (see
docs/kafka-facts.md); ``versions`` gives each ``kafka.version`` its own
defaults and says which properties it lacks (docs/versions.md).
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from . import hardware
from .distributions import check_distribution
from .versions import KRAFT, NEWEST, ZOOKEEPER, check_version

Check = Callable[[Any, str], "list[str]"]

REQUIRED = object()  # marks a key without a default


@dataclass(frozen=True)
class Key:
    default: Any  # Kafka's default, or REQUIRED
    check: Check  # returns the problems with a value, as 'path: rule'
    doc: str = ""  # one line shown by `python -m kafkamodel keys`


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _bounds(v: float, path: str, lo: float | None, hi: float | None) -> list[str]:
    if lo is not None and v < lo:
        return [f"{path}: must be >= {lo}, got {v}"]
    if hi is not None and v > hi:
        return [f"{path}: must be <= {hi}, got {v}"]
    return []


def integer(lo: int | None = None, hi: int | None = None) -> Check:
    def check(v: Any, path: str) -> list[str]:
        if isinstance(v, bool) or not isinstance(v, int):
            return [f"{path}: must be an integer, got {v!r}"]
        return _bounds(v, path, lo, hi)

    return check


def number(lo: float | None = None, *, positive: bool = False, hi: float | None = None) -> Check:
    def check(v: Any, path: str) -> list[str]:
        if not _is_number(v):
            return [f"{path}: must be a finite number, got {v!r}"]
        if positive and v <= 0:
            return [f"{path}: must be > 0, got {v}"]
        return _bounds(v, path, lo, hi)

    return check


def boolean(v: Any, path: str) -> list[str]:
    return [] if isinstance(v, bool) else [f"{path}: must be true or false, got {v!r}"]


def text(v: Any, path: str) -> list[str]:
    return [] if isinstance(v, str) and v else [f"{path}: must be a non-empty string, got {v!r}"]


def choice(*options: Any) -> Check:
    def check(v: Any, path: str) -> list[str]:
        if v in options and not isinstance(v, bool):
            return []
        shown = ", ".join(str(o) for o in options)
        return [f"{path}: must be one of {shown}, got {v!r}"]

    return check


def optional(inner: Check) -> Check:
    def check(v: Any, path: str) -> list[str]:
        return [] if v is None else inner(v, path)

    if hasattr(inner, "keys"):  # an optional nested section is still filled and checked
        check.keys = inner.keys  # type: ignore[attr-defined]
    return check


def distribution(v: Any, path: str) -> list[str]:
    return check_distribution(v, path)


def acks(v: Any, path: str) -> list[str]:
    if v in ("all", -1, 0, 1) and not isinstance(v, bool):
        return []
    return [f"{path}: must be 0, 1, all or -1, got {v!r}"]


PARTITIONERS = ("default", "uniform_sticky", "sticky", "legacy", "round_robin")


def partitioner(v: Any, path: str) -> list[str]:
    """A partitioner name, or {mapping: {key-i: partition, ...}} (other keys go to the default)."""
    if isinstance(v, str):
        return [] if v in PARTITIONERS else [f"{path}: must be one of {', '.join(PARTITIONERS)} or {{mapping: ...}}, got {v!r}"]
    if isinstance(v, Mapping) and set(v) == {"mapping"} and isinstance(v["mapping"], Mapping) and v["mapping"]:
        problems = []
        for key, part in v["mapping"].items():
            if not isinstance(key, str) or isinstance(part, bool) or not isinstance(part, int) or part < 0:
                problems.append(f"{path}.mapping.{key}: must map a key string to a partition number >= 0, got {part!r}")
        return problems
    return [f"{path}: must be one of {', '.join(PARTITIONERS)} or {{mapping: {{key: partition}}}}, got {v!r}"]


def rack_list(v: Any, path: str) -> list[str]:
    """A list of rack names (non-empty strings)."""
    if v is None:
        return []
    if not isinstance(v, list) or not v:
        return [f"{path}: must be a non-empty list of rack names, got {v!r}"]
    return [f"{path}[{i}]: must be a non-empty string, got {r!r}" for i, r in enumerate(v)
            if not isinstance(r, str) or not r]


LINK_END = "a broker id, rack:NAME, clients or *"


def link_list(v: Any, path: str) -> list[str]:
    """network.links: [{between: [X, Y], latency.ms: DIST}] (the names X and Y refer to are cross-checked)."""
    if not isinstance(v, list):
        return [f"{path}: must be a list of {{between: [X, Y], latency.ms: DIST}}, got {type(v).__name__}"]
    problems = []
    for i, link in enumerate(v):
        where = f"{path}[{i}]"
        if not isinstance(link, Mapping):
            problems.append(f"{where}: must be a mapping {{between: [X, Y], latency.ms: DIST}}, got {link!r}")
            continue
        for key in link:
            if key not in ("between", "latency.ms"):
                problems.append(unknown_link_key(key, where))
        ends = link.get("between")
        if not isinstance(ends, list) or len(ends) != 2:
            problems.append(f"{where}.between: must be a list of two ends ({LINK_END}), got {ends!r}")
        else:
            for k, end in enumerate(ends):
                ok = (isinstance(end, int) and not isinstance(end, bool) and end >= 0) or (
                    isinstance(end, str) and (end in ("clients", "*") or (end.startswith("rack:") and len(end) > 5)))
                if not ok:
                    problems.append(f"{where}.between[{k}]: must be {LINK_END}, got {end!r}")
        if "latency.ms" not in link:
            problems.append(f"{where}.latency.ms: required")
        else:
            problems.extend(check_distribution(link["latency.ms"], f"{where}.latency.ms"))
    return problems


def unknown_link_key(key: Any, where: str) -> str:
    return f"{where}.{key}: unknown key; a link has between and latency.ms"


COMPRESSION_TYPES = ("none", "gzip", "snappy", "lz4", "zstd")
CLOSED_LOOP = "max"  # rate.per.s: max


def rate(v: Any, path: str) -> list[str]:
    """rate.per.s: a number of records per second (0 .. 1e8), or max (closed loop)."""
    if v == CLOSED_LOOP:
        return []
    if not _is_number(v):
        return [f"{path}: must be a number of records per second or max, got {v!r}"]
    return _bounds(v, path, 0, 1e8)


def profile_name(v: Any, path: str) -> list[str]:
    """A hardware profile (config/hardware.py), named with the nearest valid names if unknown."""
    names = list(hardware.PROFILES)
    if isinstance(v, str) and v in hardware.PROFILES:
        return []
    if hardware.is_profile_file(v):
        problem = hardware.profile_file_problem(v)
        return [f"{path}: profile file {v}: {problem}"] if problem else []
    near = difflib.get_close_matches(str(v), names, n=3, cutoff=0.5)
    hint = f"; did you mean {' or '.join(repr(n) for n in near)}?" if near else ""
    return [f"{path}: unknown profile {v!r}{hint} (profiles: {', '.join(names)})"]


def _section(keys: Mapping[str, Key]) -> Check:
    """A nested mapping of keys (for burst: and keys:), checked by the loader."""

    def check(v: Any, path: str) -> list[str]:
        return [] if isinstance(v, Mapping) else [f"{path}: must be a mapping, got {type(v).__name__}"]

    check.keys = keys  # type: ignore[attr-defined]
    return check


MAX_INT = 2147483647

# replica.selector.class (KIP-392, 2.4): Kafka's two selectors; unset (null) is the leader, as LeaderSelector
RACK_AWARE_SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
LEADER_SELECTOR = "org.apache.kafka.common.replica.LeaderSelector"

TOP: dict[str, Key] = {
    "name": Key("scenario", text, "a name for the run"),
    "seed": Key(0, integer(0, 2**63 - 1), "root of the run's numpy SeedSequence"),
    "duration.ms": Key(60000, number(positive=True, hi=1e9), "simulated time"),
    "replication": Key("isr", choice("isr", "quorum"), "isr (Kafka) or quorum (majority commit, Raft-like election)"),
    "brokers": Key(3, integer(1, 1000), "number of brokers, ids 0..n-1"),
    "timeline.interval.ms": Key(None, optional(number(positive=True)), "timeline sampling period (default: duration/400, fewer past 125 partitions: at most 50,000 rows)"),
    "debug.invariants": Key(False, boolean, "evaluate the safety properties after every event (slow)"),
    "results.records": Key("all", choice("all", "sample", "none"), "the per-record table: all (exact percentiles), sample (every k-th record, at most 100,000 rows) or none; loss, duplicates and order are counted per batch either way, percentiles from a histogram (within p/256 + 0.5 us) unless all"),
    "racks": Key(None, lambda v, p: rack_list(v, p), "broker.rack of each broker: broker i is in racks[i % len]; null = no racks"),
    "quorum.fsync": Key(True, boolean, "quorum mode: a replica counts towards the majority once it fsynced (Raft); false = from memory"),
    "kafka.version": Key(NEWEST, check_version, "the Kafka release line whose mechanisms, defaults and property names apply (docs/versions.md)"),
    "kafka.metadata": Key(None, optional(choice(ZOOKEEPER, KRAFT)), "zookeeper or kraft (3.3+); default: zookeeper before 4.0, kraft from 4.0"),
}

BROKER: dict[str, Key] = {
    "min.insync.replicas": Key(1, integer(1, 1000), "acks=all needs an ISR at least this large"),
    "unclean.leader.election.enable": Key(False, boolean, "elect an out-of-sync replica when no ISR member is alive"),
    "replica.lag.time.max.ms": Key(30000, number(positive=True), "out of sync after not catching up for this long"),
    "replica.lag.max.messages": Key(None, optional(integer(1)), "0.8's count rule (4000 in 0.8; removed in 0.9)"),
    "replica.fetch.wait.max.ms": Key(500, number(positive=True), "a follower fetch long-polls this long"),
    "replica.fetch.max.bytes": Key(1048576, integer(1), "bytes a fetch response carries (at least one batch)"),
    "replica.fetch.backoff.ms": Key(1000, number(lo=0), "follower pause after a fetch error"),
    "replica.socket.timeout.ms": Key(30000, number(positive=True), "a follower resends a request unanswered this long"),
    "replica.high.watermark.checkpoint.interval.ms": Key(5000, number(positive=True), "how often the HW is written to disk"),
    "zookeeper.session.timeout.ms": Key(None, optional(number(positive=True)), "ZooKeeper: the controller declares a silent broker dead after this (6000 before 2.5, 18000 from 2.5)"),
    "broker.session.timeout.ms": Key(9000, optional(number(positive=True)), "KRaft: a broker without a heartbeat for this long is fenced"),
    "broker.heartbeat.interval.ms": Key(2000, optional(number(positive=True)), "KRaft: how often a broker heartbeats to the controller quorum"),
    "truncation": Key("leader_epoch", choice("high_watermark", "leader_epoch"), "follows kafka.version (KIP-101 brought leader epochs; docs/versions.md); given, it must agree"),
    "log.flush.interval.messages": Key(None, optional(integer(1)), "fsync after this many appended records; null = never forced (Kafka's default)"),
    "log.flush.interval.ms": Key(None, optional(number(positive=True)), "fsync every this many ms; null = never forced (Kafka's default)"),
    "auto.leader.rebalance.enable": Key(True, boolean, "periodic preferred-replica election"),
    "group.consumer.heartbeat.interval.ms": Key(5000, optional(number(positive=True)), "group.protocol consumer (KIP-848): members heartbeat to the coordinator this often"),
    "group.consumer.session.timeout.ms": Key(45000, optional(number(positive=True)), "group.protocol consumer (KIP-848): a member silent this long is removed"),
    "controlled.shutdown.enable": Key(True, boolean, "a broker shutting down asks the controller to move its leaderships first (operations)"),
    "leader.replication.throttled.rate": Key(None, optional(number(positive=True)), "bytes/s a leader sends to its throttled followers (operations: reassign); null = no throttle"),
    "follower.replication.throttled.rate": Key(None, optional(number(positive=True)), "bytes/s a follower fetches for its throttled replicas (operations: reassign); null = no throttle"),
    "leader.imbalance.check.interval.seconds": Key(300, number(positive=True), "period of the preferred-replica check"),
    "leader.imbalance.per.broker.percentage": Key(10, number(lo=0, hi=100), "imbalance that triggers a preferred election"),
    "eligible.leader.replicas.enable": Key(True, boolean, "KIP-966 (eligible.leader.replicas.version=1): replicas removed below min.insync.replicas stay electable; 4.0+, on from 4.1"),
    "log.segment.bytes": Key(1073741824, integer(1), "a log rolls a new segment past this size"),
    "num.recovery.threads.per.data.dir": Key(1, integer(1, 10000), "threads that load (and after an unclean shutdown recover) the logs at a broker's start; 1, 2 from 4.0 (KIP-1030)"),
    "log.flush.offset.checkpoint.interval.ms": Key(60000, integer(1, 2**31 - 1), "how often each log's recovery point is written to recovery-point-offset-checkpoint (an unclean start recovers from there)"),
    "log.retention.ms": Key(604800000, optional(number(positive=True)), "segments older than this are deleted (7 days); null = forever"),
    "log.retention.bytes": Key(None, optional(integer(1)), "old segments are deleted while the log is larger; null = no limit"),
    "log.retention.check.interval.ms": Key(300000, number(positive=True), "how often retention runs"),
    "num.replica.fetchers": Key(1, integer(1, 1000), "replica fetcher threads per (follower broker, leader broker)"),
    "replica.fetch.min.bytes": Key(1, integer(0, MAX_INT), "a follower fetch is answered once this many bytes are there (else it waits up to replica.fetch.wait.max.ms)"),
    "replica.fetch.response.max.bytes": Key(10485760, integer(0, MAX_INT), "bytes one fetch response carries over all its partitions (the first batch always)"),
    "num.io.threads": Key(8, integer(1, 10000), "request handler threads per broker"),
    "num.network.threads": Key(3, integer(1, 10000), "network threads per broker (read requests, write responses)"),
    "replica.selector.class": Key(None, optional(choice(RACK_AWARE_SELECTOR, LEADER_SELECTOR)), "KIP-392 (2.4): the leader names a preferred read replica to consumers (RackAwareReplicaSelector: one in the consumer's client.rack); null = consumers read from the leader"),
}

NETWORK: dict[str, Key] = {
    "latency.ms": Key({"dist": "lognormal", "median": 0.5, "sigma": 0.5}, distribution, "one-way message latency"),
    "links": Key([], lambda v, p: link_list(v, p), "[{between: [X, Y], latency.ms: DIST}]: X, Y a broker id, rack:NAME, clients or *; later entries win"),
    "bandwidth.mbps": Key(None, optional(number(positive=True)), "each broker's NIC in Mbps, shared by all its traffic, each direction; null = hardware.broker.nic.gbps (a number here wins)"),
    "cross.zone.price.per.gb": Key(0.02, number(lo=0), "what one GB (2^30 bytes) that crosses zones (racks) costs, both ends counted: AWS's $0.01/GB in each direction (docs/zones.md)"),
}

DISK: dict[str, Key] = {
    "fsync.ms": Key(None, optional(distribution), "one fsync of a log; null = hardware.broker.fsync.ms (a value here wins)"),
}



def machine_keys(default_profile: str) -> dict[str, Key]:
    """hardware.broker / hardware.client: a profile and its parts; a part written beside the profile overrides the
    profile's (settings.derive). Defaults shown are the default profile's."""
    parts = hardware.profile(default_profile).values()
    return {
        "profile": Key(default_profile, profile_name, "a machine profile (python -m kafkamodel hardware lists them)"),
        "cores": Key(parts["cores"], optional(integer(1, 100000)), "hardware threads (vCPUs) shared by every thread of the process; null = unlimited"),
        "memory.gib": Key(parts["memory.gib"], number(positive=True), "RAM in GiB: the JVM heap, and the page cache in what is left"),
        "nic.gbps": Key(parts["nic.gbps"], optional(number(positive=True)), "the NIC in Gbps (10^9 bit/s), each direction; null = unlimited"),
        "nic.mtu": Key(parts["nic.mtu"], integer(576, 65536), "the network's MTU in bytes: a TCP stream gets (mtu - 52) / (mtu + 38) of the NIC's bits (headers, Ethernet framing)"),
        "disk.write.mib.per.s": Key(parts["disk.write.mib.per.s"], optional(number(positive=True)), "sequential write bandwidth of the log disks together, MiB/s; null = unlimited"),
        "disk.read.mib.per.s": Key(parts["disk.read.mib.per.s"], optional(number(positive=True)), "sequential read bandwidth of the log disks together, MiB/s; null = unlimited"),
        "disk.latency.ms": Key(parts["disk.latency.ms"], distribution, "one read's access time on the log disks (seek, or an NVMe read)"),
        "fsync.ms": Key(parts["fsync.ms"], distribution, "one fsync of a log segment"),
        "jvm.heap.gib": Key(parts["jvm.heap.gib"], number(positive=True), "the JVM heap (-Xmx) in GiB: memory that is not page cache"),
    }


BROKER_MACHINE = machine_keys(hardware.DEFAULT_BROKER)
CLIENT_MACHINE = machine_keys(hardware.DEFAULT_CLIENT)

HARDWARE: dict[str, Key] = {
    "broker": Key({"profile": hardware.DEFAULT_BROKER}, _section(BROKER_MACHINE), "each broker's machine: {profile, parts...}"),
    "client": Key({"profile": hardware.DEFAULT_CLIENT}, _section(CLIENT_MACHINE), "each producer instance's machine: {profile, parts...}"),
}

# Linux's dirty-page writeback sysctls (Documentation/admin-guide/sysctl/vm.rst; defaults from mm/page-writeback.c)
OS: dict[str, Key] = {
    "vm.dirty_background_ratio": Key(10, integer(0, 100), "percent of dirtyable memory at which the flusher threads start writing dirty pages back"),
    "vm.dirty_ratio": Key(20, integer(0, 100), "percent of dirtyable memory at which a writing process is throttled to write back itself"),
    "vm.dirty_expire_centisecs": Key(3000, integer(0, MAX_INT), "dirty data older than this (1/100 s) is written back when the flusher wakes"),
    "vm.dirty_writeback_centisecs": Key(500, integer(0, MAX_INT), "the flusher threads wake this often (1/100 s); 0 = never periodically"),
}

# keys that moved: their old path -> where they went (named in the error)
MOVED: dict[str, str] = {
    "broker.os.dirty.expire.ms": "removed; use os: {vm.dirty_expire_centisecs: N} (N = milliseconds / 10; Linux's default 3000 = 30 s)",
}

# a broker's CPU per request, in microseconds (the model's calibration, not Kafka properties; docs/calibration.md)
COSTS: dict[str, Key] = {
    "request.us": Key(20, number(lo=0), "a handler thread, per request"),
    "partition.us": Key(2, number(lo=0), "a handler thread, per partition in a produce or fetch request"),
    "kib.us": Key(0.25, number(lo=0), "a handler thread, per KiB of records (CRC check and copy)"),
    "network.request.us": Key(5, number(lo=0), "a network thread, per request read and per response written"),
    "network.kib.us": Key(0.1, number(lo=0), "a network thread, per KiB read or written"),
    "fetcher.response.us": Key(10, number(lo=0), "a follower's replica fetcher thread, per fetch response"),
    "fetcher.partition.us": Key(2, number(lo=0), "a replica fetcher thread, per partition appended"),
    "fetcher.kib.us": Key(0.25, number(lo=0), "a replica fetcher thread, per KiB appended"),
    "producer.record.us": Key(0.5, number(lo=0), "a producer's sender thread, per record (serialise, append to a batch)"),
    "producer.batch.us": Key(5, number(lo=0), "a producer's sender thread, per batch (close it, checksum it)"),
    "producer.request.us": Key(20, number(lo=0), "a producer's sender thread, per produce request (build, send, complete)"),
    "gc.young.mib": Key(1024, number(positive=True), "a broker's JVM runs a young collection each time it has allocated this many MiB"),
    "gc.pause.ms": Key({"dist": "lognormal", "median": 12, "sigma": 0.45}, distribution, "one young-collection pause; it stops every thread of the broker"),
    "gc.request.kib": Key(4, number(lo=0), "KiB a broker allocates per request, besides the bytes of its records"),
    "crc32.kib.us": Key(0, number(lo=0), "a handler or replica fetcher thread, per KiB appended in the message "
                        "formats before 0.11 (v0, v1): a pure-Java CRC32 of every message; its default follows "
                        "kafka.version"),
}

# the controller's own time per partition (the model's calibration, not Kafka properties; docs/controller.md). Each
# takes its default from kafka.version (versions.DEFAULTS); the zookeeper.* keys exist in ZooKeeper mode only, the
# kraft.* keys in KRaft mode only.
CONTROLLER: dict[str, Key] = {
    "zookeeper.write.ms": Key(0.3, optional(number(lo=0)), "ZooKeeper: controller time per partition state change (election, ISR change) it writes to ZooKeeper: serial synchronous writes before 1.1 (3.9 ms: between Rao 2015's 5 ms and Rao 2018's 3 ms on 1.0.0), pipelined from 1.1 (KAFKA-5642: 0.3 ms, Rao 2018)"),
    "zookeeper.read.ms": Key(0.14, optional(number(lo=0)), "ZooKeeper: a new controller's time per partition to read its state before it acts (0.28 ms before 1.1, 0.14 ms from 1.1: Rao 2018, 100K partitions in 28 s, then 14 s)"),
    "kraft.record.ms": Key(0.005, optional(number(lo=0)), "KRaft: the active controller's time per partition change record (in memory; assumed)"),
    "kraft.commit.ms": Key(2, optional(number(lo=0)), "KRaft: a batch of records committed to the metadata log by the controller quorum (assumed: a round trip and an fsync)"),
}

TOPIC: dict[str, Key] = {
    "name": Key(REQUIRED, text, "topic name"),
    "partitions": Key(1, integer(1, 100000), "num.partitions"),
    "replication.factor": Key(1, integer(1, 1000), "default.replication.factor is 1 in Kafka"),
    "min.insync.replicas": Key(None, optional(integer(1, 1000)), "topic override of the broker setting"),
    "unclean.leader.election.enable": Key(None, optional(boolean), "topic override of the broker setting"),
    "segment.bytes": Key(None, optional(integer(1)), "topic override of log.segment.bytes"),
    "retention.ms": Key(None, optional(number(positive=True)), "topic override of log.retention.ms"),
    "retention.bytes": Key(None, optional(integer(1)), "topic override of log.retention.bytes"),
    "replicas": Key(None, lambda v, p: [], "one broker list per partition, the preferred leader first (as kafka-topics "
                    "--describe's Replicas and the reassignment JSON); null = placed as Kafka places a new topic's"),
}

BURST: dict[str, Key] = {
    "records": Key(REQUIRED, integer(1, 10**8), "records sent at once"),
    "every.ms": Key(REQUIRED, number(positive=True), "period of the bursts"),
    "start.ms": Key(0, number(lo=0), "time of the first burst"),
}

KEYS: dict[str, Key] = {
    "cardinality": Key(REQUIRED, integer(1, 10**9), "keys are key-0 .. key-(n-1), drawn uniformly"),
}

PRODUCER: dict[str, Key] = {
    "topic": Key(REQUIRED, text, "topic written to"),
    "rate.per.s": Key(0, lambda v, p: rate(v, p), "Poisson arrival rate of records, or max: closed loop, as fast as buffer.memory and in-flight requests allow"),
    "instances": Key(1, integer(1, 10000), "copies of this producer, each on its own client machine"),
    "buffer.memory": Key(33554432, integer(0, 2**63 - 1), "bytes of records waiting to be sent; send() blocks when they are used up"),
    "max.block.ms": Key(60000, number(lo=0), "send() fails after blocking this long for buffer.memory"),
    "compression.type": Key("none", choice(*COMPRESSION_TYPES), "none, gzip, snappy, lz4 or zstd (2.1+)"),
    "burst": Key(None, optional(_section(BURST)), "periodic bursts: {records, every.ms, start.ms}"),
    "start.ms": Key(0, number(lo=0), "first possible send"),
    "stop.ms": Key(None, optional(number(lo=0)), "no sends from here on (default: end of run)"),
    "acks": Key("all", acks, "0, 1 or all (-1)"),
    "linger.ms": Key(5, number(lo=0), "batch wait (5 since Kafka 4.0, 0 before)"),
    "batch.size": Key(16384, integer(1), "bytes per batch"),
    "record.size.bytes": Key(100, integer(1), "serialized size of one record (not a Kafka property)"),
    "retries": Key(MAX_INT, integer(0, MAX_INT), "resends of a failed batch"),
    "retry.backoff.ms": Key(100, number(lo=0), "wait before a resend"),
    "retry.backoff.max.ms": Key(1000, optional(number(positive=True)), "3.7+ (KIP-580): a resend's backoff doubles from retry.backoff.ms per attempt up to this, with 20% jitter"),
    "request.timeout.ms": Key(30000, number(positive=True), "a request without answer fails after this"),
    "delivery.timeout.ms": Key(120000, number(positive=True), "a batch fails this long after its creation (unset and below linger.ms + request.timeout.ms: that sum, as KafkaProducer)"),
    "enable.idempotence": Key(None, optional(boolean), "producer id + sequence (0.11+); from 3.0 on unless acks, retries or in-flight requests conflict"),
    "max.in.flight.requests.per.connection": Key(5, integer(1, 1000), "unanswered produce requests per broker connection (<= 5 with idempotence)"),
    "max.request.size": Key(1048576, integer(0, MAX_INT), "bytes of batches in one produce request (the first batch always goes)"),
    "client.rack": Key(None, optional(text), "the rack (zone) the producer runs in, for network.links"),
    "partitioner": Key("default", partitioner, "default (murmur2 keys, uniform sticky nulls), sticky, legacy, round_robin, or {mapping: {key: partition}}"),
    "keys": Key(None, optional(_section(KEYS)), "null (no keys) or {cardinality}"),
}

BROKER_FAULTS = ("crash", "restart", "power_loss", "isolate", "pause", "slow", "disk_loss")
CONSUMER_FAULTS = ("consumer_crash", "consumer_leave", "consumer_join", "consumer_restart")
FAULT_KINDS = BROKER_FAULTS + CONSUMER_FAULTS

FAULT: dict[str, Key] = {
    "at.ms": Key(REQUIRED, number(lo=0), "when the fault starts"),
    "kind": Key(REQUIRED, choice(*FAULT_KINDS), "what happens"),
    "broker": Key(None, lambda v, p: [], "a broker id, leader:TOPIC-P, rack:NAME (its brokers), * (every broker), controller (crash only: ZooKeeper's controller broker, or KRaft's active quorum controller), or a list of them (all at once)"),
    "group": Key(None, optional(text), "consumer faults: the group.id"),
    "member": Key(None, optional(integer(0)), "consumer_crash / consumer_leave: the member index"),
    "duration.ms": Key(None, optional(number(positive=True)), "how long (isolate, pause, slow; a crash, power loss or disk loss then restarts)"),
    "from": Key(None, lambda v, p: [], "isolate: cut only these links (broker ids, 'controller', 'clients'); default all"),
    "factor": Key(10, number(lo=1), "slow: fetch messages take this many times longer"),
}

OPERATION_KINDS = ("controlled_shutdown", "restart", "rolling_restart", "reassign", "preferred_leader_election",
                   "add_broker", "remove_broker")
GATES = ("no_under_replicated",)  # or {wait.ms: N} or {full_isr_for.ms: N}

OPERATION: dict[str, Key] = {
    "at.ms": Key(REQUIRED, number(lo=0), "when the operation starts"),
    "kind": Key(REQUIRED, choice(*OPERATION_KINDS), "what the operator does"),
    "broker": Key(None, optional(integer(0)), "controlled_shutdown, restart, add_broker, remove_broker: the broker id"),
    "brokers": Key(None, lambda v, p: [], "rolling_restart: the broker ids, in order (default: all, in id order)"),
    "gate": Key(None, lambda v, p: [], "rolling_restart: before the next broker, {wait.ms: N}, no_under_replicated or {full_isr_for.ms: N}"),
    "downtime.ms": Key(10000, number(lo=0), "rolling_restart: how long each broker's process stays down before it starts again"),
    "topic": Key(None, optional(text), "reassign: the topic"),
    "partitions": Key(None, lambda v, p: [], "reassign: the partition numbers"),
    "replicas": Key(None, lambda v, p: [], "reassign: one broker list per partition, as the reassignment JSON"),
    "throttle": Key(None, optional(number(positive=True)), "reassign: bytes/s, as kafka-reassign-partitions --throttle"),
}

COMMIT_POLICIES = ("auto", "before_processing", "after_processing", "atomic")
ASSIGNORS = ("range", "roundrobin", "sticky", "cooperative-sticky", "range_ceil")

def strategies(v: Any, path: str) -> list[str]:
    """partition.assignment.strategy: one assignor, or a list (a YAML list, or Kafka's comma-separated string),
    in order of preference."""
    names = assignor_list(v)
    if names is None or not names:
        return [f"{path}: must be an assignor or a list of them ({', '.join(ASSIGNORS)}), got {v!r}"]
    problems = [f"{path}: unknown assignor {n!r}; known: {', '.join(ASSIGNORS)}" for n in names if n not in ASSIGNORS]
    if not problems and len(set(names)) < len(names):
        problems.append(f"{path}: an assignor is listed twice in {v!r}")
    return problems


def assignor_list(v: Any) -> list[str] | None:
    """The assignor names of a partition.assignment.strategy value, or None if it is neither a string nor a list."""
    if isinstance(v, str):
        return [n.strip() for n in v.split(",") if n.strip()]
    if isinstance(v, (list, tuple)) and all(isinstance(n, str) for n in v):
        return list(v)
    return None


def instance_ids(v: Any, path: str) -> list[str]:
    """group.instance.id: a string (member i gets "<id>-<i>") or one string per member."""
    if isinstance(v, str) and v:
        return []
    if isinstance(v, list) and v and all(isinstance(i, str) and i for i in v):
        return []
    return [f"{path}: must be a non-empty string (member i gets <id>-<i>) or a list of one per member, got {v!r}"]


GROUP_PROTOCOLS = ("classic", "consumer")
REMOTE_ASSIGNORS = ("uniform", "range")

CONSUMER: dict[str, Key] = {
    "group": Key(REQUIRED, text, "group.id"),
    "topic": Key(REQUIRED, text, "topic subscribed to"),
    "members": Key(1, integer(1, 1000), "consumers in the group at the start"),
    "partition.assignment.strategy": Key("range", strategies, "range, roundrobin, sticky, cooperative-sticky (range_ceil: seed 002's ceil(P/C)), or a list in order of preference; cooperative rebalancing (KIP-429) when every listed one supports it"),
    "group.protocol": Key("classic", choice(*GROUP_PROTOCOLS), "classic (JoinGroup/SyncGroup, the assignor runs on the group leader) or consumer (KIP-848, 4.0+: the coordinator assigns, members reconcile by heartbeat)"),
    "group.remote.assignor": Key(None, optional(choice(*REMOTE_ASSIGNORS)), "group.protocol consumer: the coordinator's assignor (default uniform, the broker's first group.consumer.assignors)"),
    "group.instance.id": Key(None, optional(instance_ids), "static membership (KIP-345): a string (member i gets <id>-<i>) or one id per member"),
    "commit": Key("auto", choice(*COMMIT_POLICIES), "auto, before_processing (at most once), after_processing (at least once), atomic (exactly once)"),
    "auto.commit.interval.ms": Key(5000, number(positive=True), "commit: auto commits what earlier polls returned this often"),
    "processing.ms": Key(0.1, number(lo=0), "time to process one record"),
    "max.poll.records": Key(500, integer(1), "records one poll returns at most"),
    "fetch.max.wait.ms": Key(500, number(positive=True), "a fetch long-polls this long for data below the HW"),
    "fetch.min.bytes": Key(1, integer(0, MAX_INT), "a fetch is answered once this many bytes below the HW are there"),
    "fetch.max.bytes": Key(52428800, integer(0, MAX_INT), "bytes one fetch response carries (the first batch always)"),
    "max.partition.fetch.bytes": Key(1048576, integer(0, MAX_INT), "bytes a fetch response carries per partition (the first batch always)"),
    "session.timeout.ms": Key(45000, number(positive=True), "a silent member is removed after this"),
    "heartbeat.interval.ms": Key(3000, number(positive=True), "heartbeats to the group coordinator"),
    "auto.offset.reset": Key("latest", choice("latest", "earliest"), "where a member starts without a valid committed offset"),
    "retry.backoff.ms": Key(100, number(lo=0), "wait after a failed fetch"),
    "retry.backoff.max.ms": Key(1000, optional(number(positive=True)), "3.7+ (KIP-580): the metadata refresh's backoff doubles from retry.backoff.ms per failed or unchanged answer up to this, with 20% jitter"),
    "request.timeout.ms": Key(30000, number(positive=True), "a fetch unanswered this long after fetch.max.wait.ms is given up"),
    "client.rack": Key(None, optional(text), "the rack (zone) the consumers run in, for network.links and the brokers' replica.selector.class"),
    "metadata.max.age.ms": Key(300000, number(positive=True), "a preferred read replica (KIP-392) is used this long, then the consumer asks the leader again"),
}

SECTIONS: dict[str, dict[str, Key]] = {"broker": BROKER, "network": NETWORK, "disk": DISK, "costs": COSTS,
                                       "hardware": HARDWARE, "os": OS, "controller": CONTROLLER}
LISTS: dict[str, dict[str, Key]] = {"topics": TOPIC, "producers": PRODUCER, "consumers": CONSUMER, "faults": FAULT,
                                 "operations": OPERATION}
