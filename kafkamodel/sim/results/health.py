"""Partition health as Kafka's gauges count it, kept exactly over time.

Kafka's brokers expose, for the partitions each leads, ``UnderReplicatedPartitions`` (ISR smaller than the
replica list), ``UnderMinIsrPartitionCount`` (ISR below ``min.insync.replicas``) and ``AtMinIsrPartitionCount``
(ISR exactly at it); the controller exposes ``OfflinePartitionsCount`` (no leader). ``PartitionHealth`` keeps
each partition's state as the controller stores it (leader and ISR, which the leaders' AlterPartition keep
current), the cluster's counts now, and the partition-milliseconds spent in each state (the summary's
``under_replicated_partition_ms``, ``under_min_isr_partition_ms``, ``offline_partition_ms``; per partition, its
time under min ISR: the partitions table's ``under_min_isr_ms``). The controller
calls ``changed(part)`` after every change of a partition's leader or ISR; whoever waits on the counts (an
operation's gate) registers in ``watchers``. Over time, per broker, the gauges are ``broker_gauges``, read from
the timeline table.
"""

from __future__ import annotations

import pandas as pd

OFFLINE, UNDER_MIN_ISR, UNDER_REPLICATED = 1, 2, 4  # a partition's state: these bits


def state_of(leader: int, isr_size: int, replicas: int, min_isr: int) -> int:
    """A partition's state bits, as Kafka counts it: offline without a leader; else under-replicated and under
    min ISR by its ISR's size (a leaderless partition is counted offline only, as no broker reports it)."""
    if leader < 0:
        return OFFLINE
    return (UNDER_REPLICATED if isr_size < replicas else 0) | (UNDER_MIN_ISR if isr_size < min_isr else 0)


class PartitionHealth:
    """Each partition's state, the counts now, and partition-ms per state."""

    __slots__ = ("kernel", "partitions", "state", "since", "count", "ms", "under_min_isr_ms", "watchers", "changes")

    def __init__(self, kernel, partitions) -> None:
        self.kernel = kernel
        self.partitions = partitions
        self.state = [state_of(p.leader, len(p.isr), len(p.replicas), p.min_isr) for p in partitions]
        self.since = [0.0] * len(partitions)
        self.count = {bit: sum(1 for s in self.state if s & bit) for bit in (OFFLINE, UNDER_MIN_ISR, UNDER_REPLICATED)}
        self.ms = {OFFLINE: 0.0, UNDER_MIN_ISR: 0.0, UNDER_REPLICATED: 0.0}
        self.under_min_isr_ms = [0.0] * len(partitions)  # per partition (the partitions table's under_min_isr_ms)
        self.watchers: list = []  # callables run after any count changed
        self.changes = 0  # state changes so far (a gate that must hold for a while compares it)

    def changed(self, part) -> None:
        i = part.index
        new = state_of(part.leader, len(part.isr), len(part.replicas), part.min_isr)
        old = self.state[i]
        if new == old:
            return
        now = self.kernel.now
        self._add(i, old, now - self.since[i])
        for bit in self.ms:
            self.count[bit] += bool(new & bit) - bool(old & bit)
        self.state[i], self.since[i] = new, now
        self.changes += 1
        for watch in list(self.watchers):
            watch()

    def _add(self, i: int, state: int, ms: float) -> None:
        for bit in self.ms:
            if state & bit:
                self.ms[bit] += ms
        if state & UNDER_MIN_ISR:
            self.under_min_isr_ms[i] += ms

    def close(self, end: float) -> dict:
        """The summary's partition-ms per state at the run's end."""
        for i, s in enumerate(self.state):
            self._add(i, s, end - self.since[i])
            self.since[i] = end
        return {"under_replicated_partition_ms": self.ms[UNDER_REPLICATED],
                "under_min_isr_partition_ms": self.ms[UNDER_MIN_ISR],
                "offline_partition_ms": self.ms[OFFLINE]}


GAUGES = ("time_ms", "broker", "leader_count", "UnderReplicatedPartitions", "UnderMinIsrPartitionCount",
          "AtMinIsrPartitionCount", "OfflinePartitionsCount")


def broker_gauges(timeline: pd.DataFrame, partitions: pd.DataFrame, min_isr: dict, brokers: int) -> pd.DataFrame:
    """Per timeline sample and broker, Kafka's gauges: leader_count, UnderReplicatedPartitions,
    UnderMinIsrPartitionCount, AtMinIsrPartitionCount (of the partitions it leads) and the controller's
    OfflinePartitionsCount (the same in each broker's row). `min_isr`: topic -> min.insync.replicas in force;
    `partitions`: the partitions table (its replicas)."""
    rf = {(t, p): len(str(r).split(",")) for t, p, r in partitions[["topic", "partition", "replicas"]].itertuples(index=False)}
    tl = timeline[["time_ms", "topic", "partition", "leader", "isr_size"]].copy()
    tl["topic"] = tl["topic"].astype(str)
    replicas = [rf[(t, p)] for t, p in zip(tl["topic"], tl["partition"])]
    mins = tl["topic"].map(min_isr)
    led = tl["leader"] >= 0
    tl["UnderReplicatedPartitions"] = led & (tl["isr_size"] < replicas)
    tl["UnderMinIsrPartitionCount"] = led & (tl["isr_size"] < mins)
    tl["AtMinIsrPartitionCount"] = led & (tl["isr_size"] == mins)
    tl["leader_count"] = led
    offline = (~led).groupby(tl["time_ms"]).sum()
    per = tl[led].groupby(["time_ms", "leader"])[list(GAUGES[2:6])].sum()
    times = sorted(tl["time_ms"].unique())
    index = pd.MultiIndex.from_product([times, range(brokers)], names=["time_ms", "broker"])
    out = per.rename_axis(["time_ms", "broker"]).reindex(index, fill_value=0).astype("int64").reset_index()
    out["OfflinePartitionsCount"] = out["time_ms"].map(offline).astype("int64")
    return out[list(GAUGES)]
