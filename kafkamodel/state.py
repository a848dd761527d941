"""State of brokers, replicas and partitions, named as Kafka names them.

What the controller believes (``Partition``) and what a replica believes
(``Replica``) are separate fields, as in Kafka's TLA+ specification.
A log is a list of entries ``(base_offset, end_offset, leader_epoch, batch)``
where ``batch`` indexes the producer batch the entry holds (-1 for a
control record such as a quorum leader's epoch marker). LEO and HW are "next
offset" values.
"""

from __future__ import annotations

from bisect import bisect_right

CONTROL = -1  # batch id of a control record (one offset, no data records)


class Broker:
    __slots__ = ("id", "up", "paused", "isolated", "slow", "incarnation", "deferred", "unhealthy_since", "episode", "restarted", "unclean_shutdown", "cut_from_zk")

    def __init__(self, broker_id: int):
        self.id = broker_id  # broker.id
        self.up = True  # the process is running
        self.paused = False  # stuck process: holds messages and timers until resumed
        self.isolated = False  # cut from every other node (brokers, controller, clients)
        self.slow = 1.0  # fetch messages to or from it take this many times longer
        self.incarnation = 0  # bumps on crash and restart; timers of an old process are dropped
        self.deferred: list = []  # (action, args) held while paused
        self.unhealthy_since: float | None = None  # when it last stopped answering the controller
        self.episode = 0  # bumps on every health change; a session expiry for an old episode is void
        self.restarted = False  # a new process (new broker epoch) the controller has yet to fence and register
        self.unclean_shutdown = False  # it lost power: its log may miss what it had acknowledged
        self.cut_from_zk = 0  # partial isolations that cut it from ZooKeeper (its session then lapses)

    @property
    def healthy(self) -> bool:
        return self.up and not self.paused and not self.isolated and not self.cut_from_zk


class Replica:
    """One broker's replica of one partition, as that broker sees it."""

    __slots__ = (
        "partition", "broker", "log", "bases", "log_end_offset", "high_watermark", "hw_checkpoint",
        "leader_epoch", "is_leader", "leader", "fetch_session", "epoch_start_offset", "awaiting_epoch", "last_heard_ms",
        "append_ms", "flushed_offset", "producers", "log_start_offset", "consumer_parked", "segments", "retired",
        "isr", "follower_leo", "last_caught_up_ms", "last_fetch_ms", "last_fetch_leader_leo",
        "parked", "timer_armed", "pending",
    )

    def __init__(self, partition: int, broker: int):
        self.partition = partition  # global partition index
        self.broker = broker  # the broker holding this replica
        self.log: list[tuple[int, int, int, int]] = []  # entries (base, end, leader_epoch, batch)
        self.bases: list[int] = []  # base offsets of the entries, for bisect
        self.append_ms: list[float] = []  # when each entry reached this replica's page cache
        self.flushed_offset = 0  # log is on disk (fsynced) below this offset
        self.producers: dict | None = {}  # producer -> its last 5 entries here; None: rebuild from the log
        self.log_start_offset = 0  # first offset still in the log (retention deletes whole segments below it)
        self.consumer_parked: dict = {}  # as leader: consumer fetches waiting for the HW to move
        self.segments: list | None = []  # [base offset, bytes, last append ms] per segment; None: rebuild
        self.retired: list[int] = []  # batches retention deleted from this log
        self.log_end_offset = 0  # LEO: next offset to be written
        self.high_watermark = 0  # HW as this replica knows it
        self.hw_checkpoint = 0  # HW last written to replication-offset-checkpoint (survives a crash)
        self.leader_epoch = 0  # latest leader epoch this replica was told
        self.is_leader = False  # this replica believes it leads the partition
        self.leader = -1  # the broker it follows (-1: none known)
        self.fetch_session = 0  # bumps when its follower fetch loop restarts; stale responses are dropped
        self.epoch_start_offset = 0  # as leader: LEO when its epoch began
        self.awaiting_epoch = False  # as follower: its OffsetsForLeaderEpoch request is unanswered
        self.last_heard_ms = 0.0  # as follower: when the leader last answered it
        # leader-only state, reset by become_leader
        self.isr: set[int] = set()  # in-sync replicas as the leader believes (itself included)
        self.follower_leo: dict[int, int] = {}  # follower -> LEO learned from its last fetch offset
        self.last_caught_up_ms: dict[int, float] = {}  # follower -> last time it was caught up
        self.last_fetch_ms: dict[int, float] = {}  # follower -> time of its last fetch
        self.last_fetch_leader_leo: dict[int, int] = {}  # follower -> leader LEO at its last fetch
        self.parked: dict[int, tuple[int, float, int]] = {}  # follower -> (fetch offset, parked at, session)
        self.timer_armed: set[int] = set()  # followers whose long-poll timer is pending
        self.pending: list = []  # acks=all produce requests waiting for HW: (end, batch, attempt, base)

    def reset_leader_state(self) -> None:
        self.isr = set()
        self.follower_leo = {}
        self.last_caught_up_ms = {}
        self.last_fetch_ms = {}
        self.last_fetch_leader_leo = {}
        self.parked = {}
        self.timer_armed = set()
        self.pending = []
        self.consumer_parked = {}

    def append(self, entry: tuple, now: float) -> None:
        self.log.append(entry)
        self.bases.append(entry[0])
        self.append_ms.append(now)
        self.log_end_offset = entry[1]

    def extend(self, entries: list, now: float) -> None:
        self.log.extend(entries)
        self.bases.extend([e[0] for e in entries])
        self.append_ms.extend([now] * len(entries))
        self.log_end_offset = entries[-1][1]

    def last_epoch(self) -> int:
        """Leader epoch of the last entry (-1 for an empty log)."""
        return self.log[-1][2] if self.log else -1

    def entry_index(self, offset: int) -> int:
        """Index of the entry holding `offset` (or the first one after it)."""
        i = bisect_right(self.bases, offset) - 1
        if i < 0:
            return 0
        return i if self.log[i][1] > offset else i + 1

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """(largest epoch <= `epoch` in this log, the offset where it ends).

        The end is the start of the next higher epoch, or the LEO. As leader,
        the current epoch counts from ``epoch_start_offset`` even before it
        holds an entry. (-1, -1) if no such epoch: KIP-279's UNDEFINED.
        """
        if self.is_leader and epoch >= self.leader_epoch:
            return self.leader_epoch, self.log_end_offset
        end = self.epoch_start_offset if self.is_leader else self.log_end_offset
        for base, _, e, _ in reversed(self.log):
            if e <= epoch:
                return e, end
            end = base
        return -1, -1

    def truncate_to(self, offset: int) -> int:
        """Drop every entry that ends past `offset` (a batch is removed whole).

        Returns the number of offsets removed.
        """
        if offset >= self.log_end_offset:
            return 0
        i = self.entry_index(offset)  # an entry straddling `offset` goes whole, as Kafka drops whole batches
        del self.log[i:]
        del self.bases[i:]
        del self.append_ms[i:]
        self.producers = None  # the idempotence state is rebuilt from what remains
        self.segments = None
        old = self.log_end_offset
        self.log_end_offset = self.log[-1][1] if self.log else self.log_start_offset
        removed = old - self.log_end_offset
        if self.high_watermark > self.log_end_offset:
            self.high_watermark = self.log_end_offset
        if self.hw_checkpoint > self.log_end_offset:
            self.hw_checkpoint = self.log_end_offset
        if self.flushed_offset > self.log_end_offset:
            self.flushed_offset = self.log_end_offset
        return removed

    def durable_offset(self, now: float, dirty_expire_ms: float) -> int:
        """End of the log that survives a power loss now: fsynced, or written back by the OS."""
        cutoff = now - dirty_expire_ms
        i = bisect_right(self.append_ms, cutoff)  # entries old enough for OS write-back
        written_back = self.log[i - 1][1] if i else 0
        return max(self.flushed_offset, written_back)

    def batches(self) -> list[int]:
        return [e[3] for e in self.log]


class Partition:
    """A partition as the controller sees it, plus what the run measures of it."""

    __slots__ = (
        "index", "topic", "number", "replicas", "min_isr", "unclean", "leader", "leader_epoch", "isr",
        "last_leader", "unavailable_since", "unavailable_ms", "elr", "segment_bytes", "retention_ms", "retention_bytes",
    )

    def __init__(self, index: int, topic: str, number: int, replicas: tuple[int, ...], min_isr: int, unclean: bool):
        self.index = index  # global partition index
        self.topic = topic  # topic name
        self.number = number  # partition number within the topic
        self.replicas = replicas  # AR in assignment order; the first is the preferred leader
        self.min_isr = min_isr  # min.insync.replicas in force
        self.unclean = unclean  # unclean.leader.election.enable in force
        self.leader = replicas[0]  # the leader the controller elected (-1: offline)
        self.leader_epoch = 0  # the controller's leader epoch
        self.isr: tuple[int, ...] = replicas  # the ISR the controller holds
        self.elr: tuple[int, ...] = ()  # KIP-966 eligible leader replicas (removed while ISR < min.insync.replicas)
        self.segment_bytes = 1 << 30  # segment.bytes in force
        self.retention_ms: float | None = None  # retention.ms in force (None: forever)
        self.retention_bytes: int | None = None  # retention.bytes in force (None: no limit)
        self.last_leader = replicas[0]  # last broker elected leader (whose log is final)
        self.unavailable_since: float | None = None  # start of the current unwritable stretch
        self.unavailable_ms = 0.0  # total time an acks=all write could not be accepted

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.number}"
