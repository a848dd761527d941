"""The formulas study 1b (requests) is drawn against: Kafka's rules, not the model's code.

* A broker handles one request of a connection at a time (``SocketServer``'s
  ``Processor`` mutes the channel until the answer is sent), a produce
  request carries at most one batch (``batch.size``) per partition, and an
  acks=all request commits 2L after the leader appends it (the parked
  followers get it in L, their next fetch reports it in another L). So one
  partition's connection commits one batch per 2L (4L with one request in
  flight): its capacity is records per batch / 2L.
* acks=1 answers at the append: each of ``max.in.flight`` requests carries a
  batch per round trip, so the capacity is in-flight × records per batch / 2L.
* While the in-flight slots are full, a record waits for the requests ahead
  of it and half a cycle for its batch to be drained: (in-flight + 0.5) ×
  cycle. Beyond capacity the backlog grows at offered − capacity, until the
  batches hold all of ``buffer.memory`` (``batch.size`` each) and send()
  blocks.
* A follower's fetcher threads (``getFetcherId``: ``abs(31 * hash(topic) +
  p) % num.replica.fetchers``) each read their partitions at the leader and
  append them; a burst's produce request is validated whole before its
  appends take effect. The extra commit latency of n partitions is
  (partitions led × partition.us) + (the busiest fetcher's partitions ×
  (partition.us + fetcher.partition.us)).
* A follower is caught up when it reaches the leader's LEO, or the LEO the
  leader had at its previous fetch (``Replica.updateFetchState``); the leader
  drops it after ``replica.lag.time.max.ms`` without that. Under acks=all the
  leader's LEO waits for the slow follower, which is caught up at every
  fetch; under acks=1 it is caught up only to its previous fetch, and only
  if ``replica.fetch.max.bytes`` per round trip carries what was produced.
"""

from __future__ import annotations

import math

import numpy as np

KEEPS_UP, PACE, BACKLOG_GROWS, EVICTED = "unaffected", "sets the pace", "backlog grows", "leaves the ISR"


# ---- the formulas ----------------------------------------------------------------------------------------------

def varint_bytes(value: int) -> int:
    """Bytes of Kafka's zigzag varint (ByteUtils.sizeOfVarint): 7 bits per byte."""
    zigzag, size = (value << 1) ^ (value >> 63), 1
    while zigzag >= 0x80:
        zigzag >>= 7
        size += 1
    return size


def v2_record_bytes(value_bytes: int, offset_delta: int) -> int:
    """DefaultRecord.sizeInBytes of a record with a null key, no headers and timestamp delta 0: the body (attributes
    1, timestamp delta, offset delta, key length -1, value length and value, header count) after its length."""
    body = 1 + varint_bytes(0) + varint_bytes(offset_delta) + varint_bytes(-1) + varint_bytes(value_bytes) \
        + value_bytes + varint_bytes(0)
    return varint_bytes(body) + body


RECORD_BATCH_OVERHEAD = 61  # DefaultRecordBatch.RECORD_BATCH_OVERHEAD (magic v2, Kafka 0.11+)


def records_per_batch(batch_size: int, record_bytes: int) -> int:
    """Records of `record_bytes` value bytes a full v2 batch holds (MemoryRecordsBuilder.hasRoomFor: the first
    always, then each while the 61-byte header, the records so far and it fit in batch.size)."""
    total, n = RECORD_BATCH_OVERHEAD + v2_record_bytes(int(record_bytes), 0), 1
    while total + v2_record_bytes(int(record_bytes), n) <= int(batch_size):
        total += v2_record_bytes(int(record_bytes), n)
        n += 1
    return n


def acks_all_capacity_per_s(batch_records: int, one_way_ms: float, in_flight: int = 5) -> float:
    """One partition's acks=all capacity: a batch per commit cycle, 2L (4L with one request in flight)."""
    cycle = (2 if in_flight >= 2 else 4) * one_way_ms
    return batch_records / cycle * 1000.0


def acks1_capacity_per_s(batch_records: int, one_way_ms: float, in_flight: int = 5) -> float:
    """One partition's acks=1 capacity: each in-flight request carries a batch per round trip (2L)."""
    return in_flight * batch_records / (2 * one_way_ms) * 1000.0


def queued_latency_ms(in_flight: int, cycle_ms: float) -> float:
    """A record's latency while the in-flight slots are full: the requests ahead of it, and half a cycle."""
    return (in_flight + 0.5) * cycle_ms


def held_records_max(buffer_memory: int, batch_size: int, batch_records: int) -> int:
    """Records a producer can hold unanswered: its BufferPool gives every batch batch.size bytes of buffer.memory
    (until it is answered) and send() blocks once they are used up, so buffer.memory // batch.size full batches."""
    return int(buffer_memory) // int(batch_size) * int(batch_records)


def backlog_after(offered_per_s: float, capacity_per_s: float, seconds: float, held_max: float = math.inf) -> float:
    """Records waiting after `seconds` beyond capacity: they pile up at offered − capacity, up to what buffer.memory
    holds (`held_max`; beyond it send() blocks and the records wait outside the producer's accumulator)."""
    return min(max(0.0, offered_per_s - capacity_per_s) * seconds, held_max)


def java_string_hash(text: str) -> int:
    """Java's String.hashCode, from its definition: s[0]*31^(n-1) + ... + s[n-1], as a 32-bit int."""
    h = 0
    for c in text:
        h = (31 * h + ord(c)) % 2**32
    return h - 2**32 if h >= 2**31 else h


def fetcher_of(topic: str, partition: int, fetchers: int) -> int:
    """Kafka's AbstractFetcherManager.getFetcherId: Utils.abs(31 * topic.hashCode + partition) % fetchers."""
    x = (31 * java_string_hash(topic) + partition) % 2**32
    x = x - 2**32 if x >= 2**31 else x
    return (0 if x == -2**31 else abs(x)) % fetchers


def busiest_fetcher(topic: str, led: list[int], fetchers: int) -> tuple[int, int]:
    """(partitions of the busiest fetcher thread, fetcher threads that get any) for one leader's partitions."""
    counts = np.bincount([fetcher_of(topic, p, fetchers) for p in led], minlength=fetchers)
    return int(counts.max()) if len(led) else 0, int((counts > 0).sum())


def replication_extra_ms(partitions: int, fetchers: int, brokers: int, partition_us: float,
                         fetcher_partition_us: float, topic: str = "t") -> float:
    """Commit latency that n partitions add (replicas of p on brokers p, p+1, ...; p's leader is p % brokers):
    the leader validates a batch per partition it leads before appending, and the follower's busiest fetcher reads
    (partition.us) and appends (fetcher.partition.us) each of its partitions. The slowest leader's figure."""
    worst = 0.0
    for leader in range(brokers):
        led = [p for p in range(partitions) if p % brokers == leader]
        per_fetcher, _ = busiest_fetcher(topic, led, fetchers)
        worst = max(worst, len(led) * partition_us + per_fetcher * (partition_us + fetcher_partition_us))
    return worst / 1000.0


def slow_round_trip_ms(one_way_ms: float, factor: float) -> float:
    """The slow follower's fetch round trip: its request and the answer each take factor × one way."""
    return 2.0 * one_way_ms * factor


def slow_factor(one_way_ms: float, round_trip_ms: float) -> float:
    """The slowdown factor that makes the slow follower's round trip `round_trip_ms`."""
    return round_trip_ms / (2.0 * one_way_ms)


def slow_regime(acks: str, round_trip_ms: float, rate_per_s: float, batch_records: int, record_bytes: int,
                in_flight: int, linger_ms: float, lag_ms: float, fetch_max_bytes: int) -> str:
    """What a slow follower does, by Kafka's rules (the module docstring)."""
    if str(acks) == "all":
        if round_trip_ms > lag_ms:  # caught up at every fetch (the LEO waits for it): only a round trip this long
            return EVICTED
        if rate_per_s > batch_records / round_trip_ms * 1000.0:  # a batch per round trip carries less than offered
            return BACKLOG_GROWS
        if round_trip_ms > linger_ms + 1000.0 / rate_per_s:  # batches are ready faster than commits: slots fill
            return PACE
        return KEEPS_UP
    behind = fetch_max_bytes / round_trip_ms < rate_per_s * record_bytes / 1000.0  # bytes per ms fetched < produced
    if behind or 2 * round_trip_ms > lag_ms:  # caught up only to its previous fetch: two round trips must fit
        return EVICTED
    return KEEPS_UP
