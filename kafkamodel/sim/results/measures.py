"""What a run measures, declared once: event kinds, counters, summary keys, table columns.

Every event kind and every summary key is named here with its meaning (and
unit); actors record events with these constants and bump the declared
counters; the result builders (``outcome``) fill the declared summary; the
study kit derives the column names a sweep parameter may not take from the
declared table columns. Adding a measure: declare it here, count it where it
happens (a counter, or a builder in ``outcome``).

``Recorder`` is the run's log of events and its counters; ``Availability``
tracks how long partitions could not accept an acks=all write.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Measure:
    name: str
    unit: str  # "records", "ms", "count", "offsets", ... ("" for labels)
    meaning: str


# ---- event kinds (the events table's `kind`) -----------------------------------------------------------------

EVENT_KINDS: dict[str, str] = {}


def _kind(name: str, meaning: str) -> str:
    EVENT_KINDS[name] = meaning
    return name


# faults, as scheduled (faults)
FAULT_CRASH = _kind("fault_crash", "a broker process died (its log survives)")
FAULT_POWER_LOSS = _kind("fault_power_loss", "a broker lost power (its unflushed log tail is gone)")
FAULT_RESTART = _kind("fault_restart", "a crashed broker's process started again")
FAULT_ISOLATE = _kind("fault_isolate", "a broker was cut from every other node, or from some")
FAULT_PAUSE = _kind("fault_pause", "a broker process stalled (GC, disk): it holds messages and timers")
FAULT_SLOW = _kind("fault_slow", "fetches to and from a broker became `factor` times slower")
FAULT_ISOLATE_END = _kind("fault_isolate_end", "an isolation healed")
FAULT_RESUME = _kind("fault_resume", "a paused broker resumed")
FAULT_SLOW_END = _kind("fault_slow_end", "a slow broker is normal again")
FAULT_SKIPPED = _kind("fault_skipped", "a scheduled fault had no target (no leader, already down, no such member)")
FAULT_DISK_LOSS = _kind("fault_disk_loss", "a broker's machine failed: it comes back (after duration.ms) with an empty log")
LOG_RECOVERY = _kind("log_recovery", "a broker starting after an unclean shutdown recovered its logs before it "
                                     "registered (detail: bytes and segments re-read, ms)")
# the faults that start something (a fault's end, or a skipped one, is not one)
FAULT_STARTS = frozenset({FAULT_CRASH, FAULT_POWER_LOSS, FAULT_RESTART, FAULT_ISOLATE, FAULT_PAUSE, FAULT_SLOW,
                          FAULT_DISK_LOSS})
# operations, as scheduled (operations)
OPERATION_START = _kind("operation_start", "a scheduled operation began (detail: its index and kind)")
OPERATION_END = _kind("operation_end", "an operation finished (a rolling restart: its last gate passed)")
OPERATION_UNFINISHED = _kind("operation_unfinished", "at the run's end, an operation that began had not finished "
                                                     "(operation_ms is then null; detail: its index and kind)")
BROKER_CAUGHT_UP = _kind("broker_caught_up", "a broker a rolling restart started again is back in the ISR of every "
                                             "partition it holds (detail: ms from its process's start)")
CONTROLLED_SHUTDOWN = _kind("controlled_shutdown", "the controller answered a broker's controlled shutdown "
                                                   "(its leaderships moved, it left the ISRs)")
BROKER_SHUTDOWN = _kind("broker_shutdown", "a broker process stopped cleanly (log whole, HW checkpointed)")
# replication (broker/: leader, follower, replica_manager)
ISR_SHRINK = _kind("isr_shrink", "followers left the ISR (the leader's lag rule, or the controller dropping a dead broker)")
ISR_EXPAND = _kind("isr_expand", "a caught-up follower rejoined the ISR")
BECOME_LEADER = _kind("become_leader", "a replica took leadership of its partition")
TRUNCATION = _kind("truncation", "a replica cut its log (detail: how many offsets, how many of them committed)")
RETENTION = _kind("retention", "retention deleted old segments")
# the controller (controller/: controller, replication)
LEADER_ELECTION = _kind("leader_election", "the controller elected a leader (detail: clean, unclean, ELR, quorum, preferred)")
PARTITION_OFFLINE = _kind("partition_offline", "no replica could be elected: the partition has no leader")
BROKER_FAILURE_DETECTED = _kind("broker_failure_detected", "the controller declared a broker dead")
BROKER_REGISTERED = _kind("broker_registered", "a broker registered (again) with the controller")
BROKER_UNFENCED = _kind("broker_unfenced", "KRaft: a registered broker caught up with the metadata log and was unfenced")
CONTROLLER_FAILOVER = _kind("controller_failover", "another broker took the controller role (KRaft: the active controller died; the quorum elects another)")
CONTROLLER_LOST = _kind("controller_lost", "no healthy broker could take the controller role")
# consumer groups (clients/: consumer, fetcher; broker/group_coordinator)
REBALANCE_START = _kind("rebalance_start", "a consumer group began a rebalance")
CONSUMER_REVOKE = _kind("consumer_revoke", "a member gave up its partitions for a rebalance")
CONSUMER_ASSIGN = _kind("consumer_assign", "a member got its partitions at the end of a rebalance")
OFFSET_RESET = _kind("offset_reset", "a member's position was out of range; auto.offset.reset applies")
CONSUMER_CRASH = _kind("consumer_crash", "a member's process died")
CONSUMER_SESSION_EXPIRED = _kind("consumer_session_expired", "the coordinator removed a silent member")
CONSUMER_LEAVE = _kind("consumer_leave", "a member left its group")
# checks (results/invariants)
INVARIANT_VIOLATION = _kind("invariant_violation", "a safety property did not hold (detail: which, and where)")


# ---- counters: bumped by the actors, reported in the summary under the same names --------------------------

COUNTERS = (
    Measure("isr_shrinks", "count", "ISR shrinks, by the leaders' lag rule or the controller"),
    Measure("isr_expands", "count", "ISR expansions"),
    Measure("leader_elections", "count", "leaders elected (clean, unclean, ELR, quorum, preferred)"),
    Measure("unclean_leader_elections", "count", "elections of a replica outside the ISR (unclean, or KIP-966's last known leader)"),
    Measure("not_enough_replicas_errors", "count", "produce requests refused with NOT_ENOUGH_REPLICAS"),
    Measure("truncated_offsets", "offsets", "offsets removed from logs by truncation (power loss included)"),
    Measure("committed_records_truncated", "records", "committed records among them"),
    Measure("produce_requests", "count", "produce requests sent (resends included)"),
    Measure("produce_batches", "count", "batches in them (a request carries one per partition)"),
    Measure("fetch_requests", "count", "follower fetch requests sent"),
    Measure("fetch_partitions", "count", "partitions in the fetch responses (with records, a new HW or an error)"),
    Measure("consumer_fetch_requests", "count", "consumer fetch requests sent"),
    Measure("consumer_fetches_from_followers", "count", "consumer fetch requests sent to a follower, its preferred read "
                                                       "replica (KIP-392: replica.selector.class)"),
    Measure("producer_metadata_refreshes", "count", "metadata requests the producers sent to find a partition's "
                                                    "leader (after NOT_LEADER_OR_FOLLOWER or a lost connection)"),
    Measure("producer_leader_hints", "count", "NOT_LEADER_OR_FOLLOWER answers that named the new leader (KIP-951, "
                                              "3.7+): the batch went there at once, without a metadata refresh"),
    Measure("consumer_metadata_refreshes", "count", "metadata requests the consumers sent to find a partition's "
                                                    "leader (after NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH or a lost "
                                                    "connection in a fetch, or no leader known)"),
    Measure("consumer_leader_hints", "count", "fetch answers' NOT_LEADER_OR_FOLLOWER partitions that named the new "
                                              "leader (KIP-951, 3.7+: CurrentLeader): the next fetch went there at "
                                              "once, without waiting for the metadata refresh"),
    Measure("producer_buffer_wait_ms", "ms", "time producers' send() blocked on a full buffer.memory (BufferPool), summed over producers"),
    Measure("buffer_exhausted_records", "records", "records whose send() failed after max.block.ms (never sent)"),
)


class Counters:
    """The run's counters, one slot each (a typo is an AttributeError, not a new key)."""

    __slots__ = tuple(m.name for m in COUNTERS)

    def __init__(self) -> None:
        for name in self.__slots__:
            setattr(self, name, 0)

    def get(self, name: str) -> int:
        return getattr(self, name)


_COUNTED = {m.name: m for m in COUNTERS}  # the summary reports these counters as they are


# ---- the summary ----------------------------------------------------------------------------------------------

SUMMARY = (
    Measure("scenario", "", "the scenario's name"),
    Measure("seed", "", "root of the run's random streams"),
    Measure("replication", "", "isr or quorum"),
    Measure("duration_ms", "ms", "simulated time"),
    Measure("records_sent", "records", "records the producers sent"),
    Measure("records_acked", "records", "records whose producer got success"),
    Measure("records_failed", "records", "records whose batch failed for good"),
    Measure("records_acked_per_s", "records/s", "records acknowledged per simulated second"),
    Measure("acked_mib_per_s", "MiB/s", "acknowledged records' payload (record.size.bytes) per simulated second, MiB"),
    Measure("records_pending", "records", "records still unanswered at the end"),
    Measure("records_committed", "records", "records some leader's HW covered"),
    Measure("acked_records_lost", "records", "acknowledged, and absent from the final log"),
    Measure("committed_records_lost", "records", "committed, and absent from the final log"),
    Measure("records_duplicated", "records", "present more than once in the final log"),
    Measure("records_out_of_order", "records", "copies in the final log after a record their producer sent later to "
                                               "the same partition (without idempotence: a batch overtaken by a later "
                                               "one, or a duplicate after the original's later records)"),
    _COUNTED["not_enough_replicas_errors"],
    Measure("produce_latency_ms_p50", "ms", "send -> acknowledgement, median over acknowledged records"),
    Measure("produce_latency_ms_p99", "ms", "send -> acknowledgement, 99th percentile"),
    Measure("produce_latency_ms_mean", "ms", "send -> acknowledgement, mean"),
    Measure("produce_latency_ms_p999", "ms", "send -> acknowledgement, 99.9th percentile"),
    Measure("e2e_latency_ms_p50", "ms", "send -> visible below a leader's HW, median"),
    Measure("e2e_latency_ms_p99", "ms", "send -> visible below a leader's HW, 99th percentile"),
    Measure("e2e_latency_ms_p999", "ms", "send -> visible below a leader's HW, 99.9th percentile"),
    _COUNTED["isr_shrinks"],
    _COUNTED["isr_expands"],
    _COUNTED["leader_elections"],
    _COUNTED["unclean_leader_elections"],
    Measure("unavailable_ms", "partition-ms", "time partitions could not accept an acks=all write, summed over partitions"),
    Measure("unavailable_wall_ms", "ms", "wall-clock time some partition could not accept an acks=all write"),
    Measure("replica_divergence", "offsets",
            "offsets below both their HWs on which two replicas disagree (committed prefixes; should be 0)"),
    Measure("replica_uncommitted_divergence", "offsets",
            "offsets above the committed prefix where a replica's log still differs from the last leader's "
            "at the end (a tail not truncated yet)"),
    _COUNTED["truncated_offsets"],
    _COUNTED["produce_requests"],
    _COUNTED["fetch_requests"],
    Measure("batches", "count", "producer batches"),
    _COUNTED["consumer_fetch_requests"],
    Measure("records_per_batch_mean", "records", "records per batch the producers made"),
    Measure("batches_per_request_mean", "batches", "batches per produce request (partitions it carried)"),
    Measure("partitions_per_fetch_mean", "partitions", "partitions per follower fetch response"),
    Measure("request_handler_busy_max", "fraction", "the busiest broker's request handler threads: time busy / (threads x run)"),
    Measure("network_thread_busy_max", "fraction", "the busiest broker's network threads: time busy / (threads x run)"),
    Measure("replica_fetcher_busy_max", "fraction", "the busiest replica fetcher thread: time busy / run"),
    Measure("backlog_records", "records", "records sent and not yet answered at the end (accumulator and in flight)"),
    _COUNTED["producer_buffer_wait_ms"],
    _COUNTED["buffer_exhausted_records"],
    Measure("broker_cpu_utilization_max", "fraction", "the busiest broker machine: CPU time of its threads / (cores x run); "
                                                     "null without a core limit"),
    Measure("gc_pause_ms_per_s", "ms/s", "stop-the-world young-collection pauses per second, per broker (mean over brokers)"),
    Measure("disk_write_utilization_max", "fraction", "the busiest broker disk: time writing back and fsyncing / run"),
    Measure("disk_read_utilization_max", "fraction", "the busiest broker disk: time reading data out of the page cache / run"),
    Measure("writeback_stall_ms", "ms", "time threads spent throttled or blocked by the page cache's dirty limits "
                                        "(vm.dirty_ratio), summed over threads and brokers"),
    Measure("dirty_mib_max", "MiB", "the most dirty page-cache data any broker held"),
    Measure("page_cache_hit_ratio", "fraction", "bytes fetches read from the page cache / bytes they read; null: no reads"),
    Measure("leader_in_isr_violations", "count", "times the controller's leader was outside its ISR"),
    Measure("committed_prefixes_agree_violations", "count", "replica pairs differing below both HWs"),
    Measure("no_committed_record_lost_violations", "count", "partitions missing committed records"),
    Measure("partition_skew", "ratio", "records of the busiest partition over the mean, per topic, the worst"),
    Measure("consumed_lost", "records", "records every group skipped for good, summed over groups"),
    Measure("consumed_duplicates", "records", "records a group processed more than once, summed over groups"),
    Measure("leader_election_time_ms_max", "ms", "a leader's death (it went silent) -> a new leader of the partition "
                                                 "took the role, the longest over partitions (the last one's)"),
    Measure("leader_election_time_ms_p50", "ms", "a leader's death -> its partition's new leader took the role, median"),
    Measure("partition_unavailable_ms_p50", "ms", "time a partition could not accept an acks=all write, median over the "
                                                  "partitions that could not at some point"),
    Measure("partition_unavailable_ms_p99", "ms", "the same, 99th percentile"),
    Measure("partition_unavailable_ms_max", "ms", "the same, the longest"),
    Measure("controller_busy_ms", "ms", "the controller thread's work: ZooKeeper writes and reads, or KRaft records "
                                        "and commits (controller.*)"),
    Measure("broker_recovery_ms_max", "ms", "the longest log recovery of a broker start after an unclean shutdown "
                                            "(storage.recovery); 0 when every restart was clean or none happened"),
    Measure("controller_queue_max", "partitions", "the most partition changes in one controller batch"),
    Measure("metadata_propagation_ms_p50", "ms", "the controller's decision -> a broker's metadata cache holds it (UpdateMetadata), median"),
    Measure("metadata_propagation_ms_max", "ms", "the same, the longest"),
    Measure("operation_ms", "ms", "operations: from the first operation's start to the last one's end; null without "
                                  "operations, and while one has not finished by the run's end (an "
                                  "operation_unfinished event says which)"),
    Measure("under_replicated_partition_ms", "partition-ms", "time partitions had an ISR smaller than their replica "
                                                             "list (Kafka's UnderReplicatedPartitions), summed"),
    Measure("under_min_isr_partition_ms", "partition-ms", "time partitions had an ISR below min.insync.replicas "
                                                          "(UnderMinIsrPartitionCount), summed"),
    Measure("offline_partition_ms", "partition-ms", "time partitions had no leader (OfflinePartitionsCount), summed"),
    Measure("reassignment_bytes", "bytes", "bytes reassigned replicas fetched to catch up (operations: reassign)"),
    Measure("operation_produce_p50_ms", "ms", "send -> acknowledgement, median over the acknowledged records sent "
                                              "during the operations (operation_ms's window); null without operations"),
    Measure("operation_produce_p99_ms", "ms", "the same, 99th percentile"),
    Measure("operation_produce_p999_ms", "ms", "the same, 99.9th percentile"),
    Measure("operation_produce_max_ms", "ms", "the same, the longest"),
    Measure("operation_produce_errors", "batches", "errors the producers got during the operations: a batch answered "
                                                   "with an error (NOT_ENOUGH_REPLICAS, NOT_LEADER_OR_FOLLOWER, ...), in "
                                                   "a request that failed or timed out, or expired (delivery.timeout.ms), "
                                                   "retried or not; null without operations"),
    Measure("throttled_bytes", "bytes", "bytes throttled replicas fetched under a replication throttle "
                                        "(leader/follower.replication.throttled.rate, KIP-73); 0 when unthrottled"),
    Measure("broker_catch_up_ms_max", "ms", "rolling restarts: the longest time from a broker's process start to "
                                            "its return to every ISR it belongs to; null without rolling restarts"),
    _COUNTED["producer_metadata_refreshes"],
    _COUNTED["producer_leader_hints"],
    _COUNTED["consumer_metadata_refreshes"],
    _COUNTED["consumer_leader_hints"],
    # zones (racks) and their bill (results.zones; docs/zones.md): record bytes as sent (message format overhead in,
    # compressed; request headers and TCP/IP not counted), a byte crossing when its two ends are in different racks
    Measure("cross_zone_bytes", "bytes", "record bytes that crossed zones over the run (produce + replication + "
                                         "consume; 0 without racks; a client without client.rack is in no zone)"),
    Measure("cross_zone_bytes_produce", "bytes", "producers to leaders, across zones"),
    Measure("cross_zone_bytes_replication", "bytes", "leaders to followers (their fetch answers), across zones"),
    Measure("cross_zone_bytes_consume", "bytes", "brokers to consumers (fetch answers), across zones"),
    Measure("cross_zone_cost_per_month", "$/month", "cross_zone_bytes at the run's average rate over a month of 730 "
                                                    "hours, per GB (2^30 bytes) at network.cross.zone.price.per.gb"),
    _COUNTED["consumer_fetches_from_followers"],
    Measure("consume_bytes", "bytes", "record bytes consumers fetched, from any broker (what cross_zone_bytes_consume "
                                      "is a share of)"),
    Measure("consume_e2e_latency_ms_p50", "ms", "send -> first processed by a consumer group, median over every "
                                                "group's records pooled"),
    Measure("consume_e2e_latency_ms_p99", "ms", "the same, 99th percentile"),
)
# per consumer group, as "<group>.<key>"
GROUP_SUMMARY = (
    Measure("records_processed", "records", "records the group processed at least once"),
    Measure("consumed_lost", "records", "in the log below its committed offset, never processed"),
    Measure("consumed_duplicates", "records", "processed more than once"),
    Measure("consume_e2e_latency_ms_p50", "ms", "send -> first processed, median"),
    Measure("consume_e2e_latency_ms_p99", "ms", "send -> first processed, 99th percentile"),
    Measure("consume_e2e_latency_ms_p999", "ms", "send -> first processed, 99.9th percentile"),
    Measure("rebalances", "count", "rebalances the group went through"),
    Measure("paused_partition_ms", "partition-ms", "time its partitions were not consumed after the first assignment "
                                                   "(revoked, or their owner dead or gone, until a live member owns "
                                                   "them again), summed over partitions"),
    Measure("paused_partition_ms_max", "ms", "the longest any one partition was not consumed, in all"),
    Measure("partitions_paused", "count", "partitions that stopped being consumed at least once"),
    Measure("lag_records_max", "records", "the most records visible to consumers (below the HW) not yet processed"),
    Measure("lag_records_end", "records", "records visible and not yet processed when the run ends"),
)
SUMMARY_KEYS = tuple(m.name for m in SUMMARY)


# ---- table columns ----------------------------------------------------------------------------------------------

TABLES: dict[str, tuple[str, ...]] = {
    "records": ("topic", "partition", "key", "producer", "send_ms", "acked", "ack_ms", "error", "offset",
                "last_offset", "visible_ms", "copies"),
    "events": ("time_ms", "kind", "topic", "partition", "broker", "detail"),
    "timeline": ("time_ms", "topic", "partition", "leader", "leader_epoch", "log_end_offset", "high_watermark",
                 "isr_size"),
    "partitions": ("topic", "partition", "leader", "last_leader", "leader_epoch", "replicas", "isr", "log_end_offset",
                   "high_watermark", "unavailable_ms", "replica_divergence", "replica_uncommitted_divergence",
                   "acked_records_lost",
                   "committed_records_lost", "records_duplicated", "records", "backlog", "under_min_isr_ms"),
    "groups": ("group", "topic", "members", "commit", "records_processed", "consumed_lost", "consumed_duplicates",
               "consume_e2e_latency_ms_p50", "consume_e2e_latency_ms_p99", "consume_e2e_latency_ms_p999", "rebalances",
               "paused_partition_ms", "paused_partition_ms_max", "partitions_paused", "lag_records_max",
               "lag_records_end"),
    # record bytes from one zone (rack) to another, per second (results.zones): the row's time ends its interval
    "zones": ("time_ms", "kind", "from_zone", "to_zone", "bytes"),
}
TABLE_COLUMNS = frozenset(c for columns in TABLES.values() for c in columns)


# ---- during the run ----------------------------------------------------------------------------------------------


class Recorder:
    """The run's events (time_ms, kind, topic, partition, broker, detail) and counters."""

    __slots__ = ("kernel", "partitions", "events", "counters", "awaiting_leader", "election_ms", "metadata_propagation_ms",
                 "controller_busy_ms", "controller_queue_max", "recovery_ms")

    def __init__(self, kernel, partitions) -> None:
        self.kernel = kernel
        self.partitions = partitions  # the controller's partitions (for topic and number)
        self.events: list[tuple] = []
        self.counters = Counters()
        # the control plane's time (controller/): partition -> when the broker that led it died, until a new leader
        # takes the role; each such wait; each LeaderAndIsr request's delay from the controller's decision
        self.awaiting_leader: dict[int, float] = {}
        self.election_ms: list[float] = []
        self.metadata_propagation_ms: list[float] = []
        self.controller_busy_ms = 0.0  # the controller thread's work (writes, reads, records), summed
        self.controller_queue_max = 0  # the most partition changes in one batch
        self.recovery_ms: list[float] = []  # each unclean start's log recovery (storage.recovery)

    def event(self, kind: str, partition: int = -1, broker: int = -1, detail: str = "") -> None:
        part = self.partitions[partition] if partition >= 0 else None
        self.events.append(
            (self.kernel.now, kind, part.topic if part else "", part.number if part else -1, broker, detail))


class Availability:
    """How long partitions could not accept an acks=all write: per partition, and wall-clock (any of them).

    Call ``note()`` after anything that can change partitions' writability (the replication mode says what that
    is): ``note()`` looks at every partition, ``note(indices)`` only at those partitions, for a change that touched
    nothing else (a LeaderAndIsr request's partitions, one ISR change), so that a run whose changes come one
    partition at a time does not walk every partition per change. ``close(end)`` at the end.
    """

    __slots__ = ("kernel", "partitions", "writable", "since", "wall_ms", "down")

    def __init__(self, kernel, partitions, writable) -> None:
        self.kernel = kernel
        self.partitions = partitions
        self.writable = writable  # Partition -> could it accept an acks=all write now?
        self.since: float | None = None  # start of the current stretch with some partition unwritable
        self.wall_ms = 0.0  # wall-clock time some partition could not accept an acks=all write
        self.down = 0  # partitions unwritable now (those with an unavailable_since)

    def note(self, indices=None) -> None:
        now = self.kernel.now
        down = self.down
        writable = self.writable
        partitions = self.partitions
        for part in partitions if indices is None else [partitions[i] for i in indices]:
            if writable(part):
                if part.unavailable_since is not None:
                    part.unavailable_ms += now - part.unavailable_since
                    part.unavailable_since = None
                    down -= 1
            elif part.unavailable_since is None:
                part.unavailable_since = now
                down += 1
        self.down = down
        if down and self.since is None:
            self.since = now
        elif not down and self.since is not None:
            self.wall_ms += now - self.since
            self.since = None

    def close(self, end: float) -> None:
        for part in self.partitions:
            if part.unavailable_since is not None:
                part.unavailable_ms += end - part.unavailable_since
                part.unavailable_since = None
        self.down = 0
        if self.since is not None:
            self.wall_ms += end - self.since
            self.since = None
