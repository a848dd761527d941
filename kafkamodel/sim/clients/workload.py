"""What the producers send: the records, decided before the run in NumPy.

Record arrival times (Poisson and bursts), keys and partitions (Kafka's
partitioners). Records are ordered by producer, partition and send time, so
one producer's records for one partition are a contiguous range, and every
batch the accumulator makes of them during the run (``accumulator``) is a
contiguous range ``[lo, hi)`` of it.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ...config.settings import ProducerSettings, Settings
from ...config.hardware import nic_ms_per_byte
from ..batches import compress_ms_per_byte, record_format
from .partitioner import partition_for_keys


@dataclass
class Workload:
    # per record, in (producer, partition, send time) order
    send_ms: np.ndarray  # float64: when the application called send()
    producer: np.ndarray  # int16: producer index
    partition: np.ndarray  # int32: global partition index
    key: np.ndarray  # int64: key index (key-<i>), -1 for a null key
    # per producer and partition: its records are [lo, hi)
    lo: np.ndarray  # int64 (producers, partitions)
    hi: np.ndarray  # int64 (producers, partitions)
    ready_ms: np.ndarray | None = None  # float64: when send() returned (the record is in the accumulator); the
    #                                     producer takes it over (None after)
    closed: dict | None = None  # closed-loop producer -> (partition of each record in send order, their keys or None):
    #                             its records' slots are filled as its application thread sends them (application)
    sent: np.ndarray | None = None  # bool: the slots filled (None: every one), set at the run's end
    returns: dict | None = None  # open-loop producer whose records could fill buffer.memory -> when each send()
    #                              returns, in send order (application.PoolWatch)

    @property
    def records(self) -> int:
        return len(self.send_ms)


def _arrivals(p: ProducerSettings, duration: float, rng: np.random.Generator) -> np.ndarray:
    start = p.start_ms
    stop = p.stop_ms if p.stop_ms is not None else duration
    stop = min(stop, duration)
    parts = []
    rate = p.rate_per_s
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
    burst = p.burst
    if burst is not None:
        first = max(burst.start_ms, start)
        at = np.arange(first, stop, burst.every_ms)
        parts.append(np.repeat(at, burst.records))
    if not parts:
        return np.empty(0)
    if len(parts) == 1:  # one source alone is in order already (Poisson: running sums of draws >= 0)
        return parts[0]
    return np.sort(np.concatenate(parts), kind="stable")


def send_cost_ms(settings: Settings, p: ProducerSettings, fmt=None) -> float:
    """The application thread's time per send(): producer.record.us, and compressing the record."""
    fmt = fmt or record_format(settings, p)
    return settings.costs.producer_record_us / 1000.0 + fmt.record_size * compress_ms_per_byte(p.compression_type)


def _after_sends(arrivals: np.ndarray, cost: float) -> np.ndarray:
    """When each send() returns, one application thread calling it at `arrivals` (in order) and `cost` ms each:
    e_k = max(a_k, e_(k-1)) + cost, that is cost * (k + 1) + the running max of a_j - cost * j."""
    if cost <= 0 or not len(arrivals):
        return arrivals
    steps = cost * np.arange(len(arrivals), dtype=np.float64)
    return np.maximum.accumulate(arrivals - steps) + steps + cost


def closed_loop_records(settings: Settings, p: ProducerSettings, index: int) -> tuple[int, float]:
    """How many records a closed-loop producer can send at most (its slots), and the gap between two of them the
    application thread's speed gives: its window over the time one send() takes, or over its client NIC's time per
    record, plus what buffer.memory holds."""
    fmt = record_format(settings, p)
    cost = send_cost_ms(settings, p, fmt)
    stop = min(p.stop_ms if p.stop_ms is not None else settings.duration_ms, settings.duration_ms)
    window = max(0.0, stop - p.start_ms)
    machine = settings.client_machine
    gaps = [g for g in (cost, (fmt.record_size / fmt.ratio) * nic_ms_per_byte(machine.nic_gbps, machine.nic_mtu))
            if g > 0]
    if not gaps:
        raise ValueError(f"producers[{index}]: rate.per.s: max needs costs producer.record.us > 0 or a client nic.gbps "
                         "(nothing else bounds how fast the application sends)")
    gap = max(gaps)
    bound = int(window / gap) + 1
    if cost <= 0:
        bound += int(p.buffer_memory / fmt.record_bytes) + 1
    return bound, gap


def _sticky_runs(times: np.ndarray, cap: int, linger: float | None) -> np.ndarray:
    """Lengths of the runs of records a sticky partitioner sends to one partition.

    KIP-480 (linger given): a run lasts as long as one batch would (cap records
    or linger.ms). KIP-794 (linger None): a run is batch.size bytes (cap records).
    """
    n = len(times)
    if linger is None:
        lengths = np.full(n // cap, cap, dtype=np.int64)
        return np.append(lengths, n % cap) if n % cap else lengths
    t = times.tolist()
    runs, i = [], 0
    while i < n:
        j = min(bisect_right(t, t[i] + linger, i, n), i + cap)
        runs.append(j - i)
        i = j
    return np.asarray(runs, dtype=np.int64)


def assign_partitions(p: ProducerSettings, key: np.ndarray, times: np.ndarray, partitions: int,
                      rng: np.random.Generator, custom=None, cap: int | None = None) -> np.ndarray:
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
    name = p.partitioner if isinstance(p.partitioner, str) else "default"
    if name == "round_robin":  # RoundRobinPartitioner: every record to the next partition, keys ignored
        return (np.arange(n) % partitions).astype(np.int32)
    out = np.empty(n, dtype=np.int32)
    keyed = key >= 0
    some_keyed = keyed.any()
    if some_keyed:
        out[keyed] = partition_for_keys(key[keyed], partitions)
        mapping = p.partitioner.get("mapping") if isinstance(p.partitioner, Mapping) else None
        if mapping:
            table = {int(k.split("-", 1)[1]): v for k, v in mapping.items() if k.startswith("key-") and k[4:].isdigit()}
            for k, part in table.items():
                out[key == k] = part
    nulls = np.flatnonzero(~keyed) if some_keyed else slice(None)  # the null-key records (all: the whole arrays)
    null_count = len(nulls) if some_keyed else n
    if null_count:
        if name == "legacy":  # before 2.4: round robin over null-key records
            out[nulls] = np.arange(null_count) % partitions
        else:
            cap = cap or p.records_per_batch  # records a batch holds (the record format's, from build_workload)
            linger = p.linger_ms if name == "sticky" else None
            lengths = _sticky_runs(times[nulls], cap, linger)
            choice, last = [0] * len(lengths), -1
            draws = rng.integers(0, max(partitions - 1, 1), len(lengths)).tolist()
            for r, d in enumerate(draws):  # a new partition, other than the last one, for each run
                last = d if last < 0 or partitions == 1 else (d if d < last else d + 1)
                choice[r] = last
            out[nulls] = np.repeat(np.asarray(choice, dtype=np.int32), lengths)
    return out


def build_workload(settings: Settings, topic_first: dict[str, int], streams, partitioner=None) -> Workload:
    """The records of every producer of the scenario.

    `topic_first` maps a topic to its first global partition index; `streams`
    gives producer i its ``producers[i].arrivals`` and ``producers[i].keys``
    generators (the keys generator also makes the sticky partitioners'
    choices). `partitioner` is an optional callable (key or None, partitions)
    -> partition for every producer.
    """
    duration = settings.duration_ms
    send, ready, prod, part, keys, closed, returns = [], [], [], [], [], {}, {}
    for i, p in enumerate(settings.producers):
        arrivals_rng, keys_rng = streams(f"producers[{i}].arrivals"), streams(f"producers[{i}].keys")
        if p.closed_loop:  # its partitions as if sent back to back; its times come as the application sends them
            n, gap = closed_loop_records(settings, p, i)
            times = p.start_ms + gap * np.arange(1, n + 1, dtype=np.float64)
        else:
            times = _arrivals(p, duration, arrivals_rng)
            n = len(times)
        partitions = settings.topic(p.topic).partitions
        if p.key_cardinality is not None:
            key = keys_rng.integers(0, p.key_cardinality, n).astype(np.int64)
        else:
            key = np.full(n, -1, dtype=np.int64)
        local = assign_partitions(p, key, times, partitions, keys_rng, partitioner,
                                  record_format(settings, p).records_per_batch)
        if p.closed_loop:
            closed[i] = ((local + topic_first[p.topic]).astype(np.int32),
                         key if p.key_cardinality is not None else None)
            send.append(np.full(n, np.nan))
            ready.append(np.full(n, np.inf))
        else:
            fmt = record_format(settings, p)
            cost = send_cost_ms(settings, p, fmt)
            done = _after_sends(times, cost)
            send.append(done if done is times else done - cost)
            ready.append(done)
            if n * fmt.record_bytes > p.buffer_memory:
                returns[i] = done
        prod.append(np.full(n, i, dtype=np.int16))
        part.append(local + topic_first[p.topic])
        keys.append(key)
    if send:
        same = all(r is t for r, t in zip(ready, send))  # no send() cost: the record is in a batch when sent
        send_ms, producer, partition, key = (np.concatenate(a) for a in (send, prod, part, keys))
        ready_ms = send_ms if same else np.concatenate(ready)
    else:
        send_ms, ready_ms, producer, partition, key = (np.empty(0), np.empty(0), np.empty(0, np.int16),
                                                       np.empty(0, np.int32), np.empty(0, np.int64))
    # each producer's records are in send order already (arrivals are sorted): a stable sort by
    # (producer, partition) keeps it within each partition (one producer whose partitions are in order already,
    # one partition for instance, needs none)
    if len(settings.producers) > 1:
        order = np.lexsort((partition, producer))
    elif len(partition) and np.any(partition[1:] < partition[:-1]):
        order = np.argsort(partition, kind="stable")
    else:
        order = None
    if order is not None:
        same = ready_ms is send_ms
        send_ms, partition = send_ms[order], partition[order]
        ready_ms = send_ms if same else ready_ms[order]
        if len(settings.producers) > 1:  # (one producer's index, and null keys alone, read the same in any order)
            producer = producer[order]
        if any(q.key_cardinality is not None for q in settings.producers):
            key = key[order]
    n_partitions = sum(t.partitions for t in settings.topics)
    lo = np.zeros((len(settings.producers), n_partitions), dtype=np.int64)
    hi = np.zeros_like(lo)
    if len(send_ms):
        flat = producer.astype(np.int64) * n_partitions + partition
        cells = np.arange(len(settings.producers) * n_partitions)
        lo[:] = np.searchsorted(flat, cells, side="left").reshape(lo.shape)
        hi[:] = np.searchsorted(flat, cells, side="right").reshape(lo.shape)
    return Workload(send_ms=send_ms, producer=producer, partition=partition, key=key, lo=lo, hi=hi, ready_ms=ready_ms,
                    closed=closed or None, returns=returns or None)
