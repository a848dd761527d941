"""What the producers send: records and the batches the accumulator makes.

Everything here is decided before the run, in NumPy: record arrival times
(Poisson and bursts), keys, partitions (Kafka's partitioner) and batches
(``linger.ms`` / ``batch.size``). Records are ordered by producer, partition
and send time, so each batch is a contiguous range ``[lo, hi)`` of records.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from .partitioner import partition_for_keys

ACKS_CODE = {0: 0, 1: 1, "all": 2}


@dataclass
class Workload:
    # per record, in (producer, partition, send time) order
    send_ms: np.ndarray  # float64: when the application called send()
    producer: np.ndarray  # int16: producer index
    partition: np.ndarray  # int32: global partition index
    key: np.ndarray  # int64: key index (key-<i>), -1 for a null key
    batch: np.ndarray  # int32: the batch holding the record
    # per batch, in creation order within each (producer, partition)
    batch_lo: np.ndarray  # int64: first record
    batch_hi: np.ndarray  # int64: one past the last record
    batch_partition: np.ndarray  # int32
    batch_producer: np.ndarray  # int32
    batch_create_ms: np.ndarray  # float64: first record's send time
    batch_ready_ms: np.ndarray  # float64: when the sender may send it (full, or linger.ms elapsed)

    @property
    def records(self) -> int:
        return len(self.send_ms)

    @property
    def batches(self) -> int:
        return len(self.batch_lo)


def _arrivals(p: dict, duration: float, rng: np.random.Generator) -> np.ndarray:
    start = float(p["start.ms"])
    stop = float(p["stop.ms"]) if p["stop.ms"] is not None else duration
    stop = min(stop, duration)
    parts = []
    rate = float(p["rate.per.s"])
    if rate > 0 and stop > start:
        mean_gap = 1000.0 / rate
        expected = (stop - start) / mean_gap
        chunks = []
        t = start
        while t < stop:
            n = int(expected + 6 * np.sqrt(expected) + 16)
            times = t + np.cumsum(rng.exponential(mean_gap, n))
            chunks.append(times)
            t = times[-1]
        times = np.concatenate(chunks)
        parts.append(times[times < stop])
    burst = p["burst"]
    if burst is not None:
        first = max(float(burst["start.ms"]), start)
        at = np.arange(first, stop, float(burst["every.ms"]))
        parts.append(np.repeat(at, int(burst["records"])))
    if not parts:
        return np.empty(0)
    return np.sort(np.concatenate(parts), kind="stable")


def _sticky_chunks(times: list[float], cap: int, linger: float | None) -> list[tuple[int, int]]:
    """Runs of records a sticky partitioner sends to one partition.

    KIP-480 (linger given): a run lasts as long as one batch would (cap records
    or linger.ms). KIP-794 (linger None): a run is batch.size bytes (cap records).
    """
    runs, i, n = [], 0, len(times)
    while i < n:
        if linger is None:
            j = min(i + cap, n)
        else:
            j = min(bisect_right(times, times[i] + linger, i, n), i + cap)
        runs.append((i, j))
        i = j
    return runs


def assign_partitions(p: dict, key: np.ndarray, times: np.ndarray, partitions: int,
                      rng: np.random.Generator, custom=None) -> np.ndarray:
    """Kafka's partitioners, for one producer's records in send order."""
    n = len(key)
    if custom is not None:  # a Python callable through the API: (key or None, partitions) -> partition
        names = [None if k < 0 else f"key-{k}" for k in key.tolist()]
        out = np.fromiter((custom(k, partitions) for k in names), dtype=np.int64, count=n)
        bad = (out < 0) | (out >= partitions)
        if bad.any():
            raise ValueError(f"partitioner: the callable returned {int(out[bad][0])} for key {names[int(np.argmax(bad))]!r}; "
                             f"partitions are 0..{partitions - 1}")
        return out.astype(np.int32)
    name = p["partitioner"] if isinstance(p["partitioner"], str) else "default"
    if name == "round_robin":  # RoundRobinPartitioner: every record to the next partition, keys ignored
        return (np.arange(n) % partitions).astype(np.int32)
    out = np.empty(n, dtype=np.int32)
    keyed = key >= 0
    if keyed.any():
        out[keyed] = partition_for_keys(key[keyed], partitions)
        mapping = p["partitioner"].get("mapping") if isinstance(p["partitioner"], Mapping) else None
        if mapping:
            table = {int(k.split("-", 1)[1]): v for k, v in mapping.items() if k.startswith("key-") and k[4:].isdigit()}
            for k, part in table.items():
                out[key == k] = part
    nulls = np.flatnonzero(~keyed)
    if len(nulls):
        if name == "legacy":  # before 2.4: round robin over null-key records
            out[nulls] = np.arange(len(nulls)) % partitions
        else:
            cap = max(1, int(p["batch.size"]) // int(p["record.size.bytes"]))
            linger = float(p["linger.ms"]) if name == "sticky" else None
            runs = _sticky_chunks(times[nulls].tolist(), cap, linger)
            choice, last = np.empty(len(runs), dtype=np.int32), -1
            draws = rng.integers(0, max(partitions - 1, 1), len(runs)).tolist()
            for r, d in enumerate(draws):  # a new partition, other than the last one, for each run
                last = d if last < 0 or partitions == 1 else (d if d < last else d + 1)
                choice[r] = last
            lengths = np.fromiter((j - i for i, j in runs), dtype=np.int64, count=len(runs))
            out[nulls] = np.repeat(choice, lengths)
    return out


def build_workload(scenario, topic_first: dict[str, int], rngs: list[tuple[np.random.Generator, np.random.Generator]],
                   partitioner=None) -> Workload:
    """Records and batches for every producer of the scenario.

    `topic_first` maps a topic to its first global partition index; `rngs`
    gives each producer its (arrivals, keys) generators (the keys generator
    also makes the sticky partitioners' choices). `partitioner` is an
    optional callable (key or None, partitions) -> partition for every producer.
    """
    duration = float(scenario["duration.ms"])
    topics = {t["name"]: t for t in scenario["topics"]}
    send, prod, part, keys = [], [], [], []
    for i, p in enumerate(scenario["producers"]):
        arrivals_rng, keys_rng = rngs[i]
        times = _arrivals(p, duration, arrivals_rng)
        n = len(times)
        partitions = topics[p["topic"]]["partitions"]
        if p["keys"] is not None:
            key = keys_rng.integers(0, int(p["keys"]["cardinality"]), n).astype(np.int64)
        else:
            key = np.full(n, -1, dtype=np.int64)
        local = assign_partitions(p, key, times, partitions, keys_rng, partitioner)
        send.append(times)
        prod.append(np.full(n, i, dtype=np.int16))
        part.append(local + topic_first[p["topic"]])
        keys.append(key)
    if send:
        send_ms, producer, partition, key = (np.concatenate(a) for a in (send, prod, part, keys))
    else:
        send_ms, producer, partition, key = np.empty(0), np.empty(0, np.int16), np.empty(0, np.int32), np.empty(0, np.int64)
    order = np.lexsort((send_ms, partition, producer))
    send_ms, producer, partition, key = send_ms[order], producer[order], partition[order], key[order]
    return _batch(scenario, send_ms, producer, partition, key)


def _batch(scenario, send_ms, producer, partition, key) -> Workload:
    """Cut each (producer, partition) stream into batches as the accumulator does.

    A batch opens with a record and closes when it holds batch.size bytes
    (sent at once) or linger.ms after it opened, whichever comes first.
    """
    n = len(send_ms)
    batch = np.empty(n, dtype=np.int32)
    los, his, ready = [], [], []
    if n:
        group_start = np.flatnonzero(np.r_[True, (producer[1:] != producer[:-1]) | (partition[1:] != partition[:-1])])
        group_end = np.r_[group_start[1:], n]
    else:
        group_start = group_end = np.empty(0, dtype=np.int64)
    times = send_ms.tolist()
    producers = scenario["producers"]
    for g0, g1 in zip(group_start.tolist(), group_end.tolist()):
        p = producers[int(producer[g0])]
        linger = float(p["linger.ms"])
        cap = max(1, int(p["batch.size"]) // int(p["record.size.bytes"]))  # records that fit in batch.size
        i = g0
        while i < g1:
            close = times[i] + linger
            j = bisect_right(times, close, i, g1)
            if j - i >= cap:
                j = i + cap
                ready.append(times[j - 1])  # full: sent as soon as the last record fits
            else:
                ready.append(close)
            los.append(i)
            his.append(j)
            i = j
    lo = np.asarray(los, dtype=np.int64)
    hi = np.asarray(his, dtype=np.int64)
    counts = hi - lo
    batch[:] = np.repeat(np.arange(len(lo), dtype=np.int32), counts)
    return Workload(
        send_ms=send_ms, producer=producer, partition=partition, key=key, batch=batch,
        batch_lo=lo, batch_hi=hi,
        batch_partition=partition[lo].astype(np.int32) if len(lo) else np.empty(0, np.int32),
        batch_producer=producer[lo].astype(np.int32) if len(lo) else np.empty(0, np.int32),
        batch_create_ms=send_ms[lo] if len(lo) else np.empty(0),
        batch_ready_ms=np.asarray(ready, dtype=np.float64),
    )
