"""State of brokers, replicas and partitions, named as Kafka names them.

What the controller believes (``Partition``) and what a replica believes
(``Replica``) are separate, as in Kafka's TLA+ specification. A replica's
storage is its ``Log``; what only a leader keeps (the ISR as it sees it,
each follower's progress, requests waiting in purgatory) is its
``LeaderState``, new each time it becomes leader. LEO and HW are "next
offset" values. A consumer group (``Group``) is shared by its members (the
clients) and its coordinator (on the broker side).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..config.settings import ConsumerSettings, TopicSettings
from .storage.log import Log


class Broker:
    __slots__ = ("id", "up", "paused", "isolated", "slow", "incarnation", "deferred", "unhealthy_since", "healthy_since",
                 "session_expires", "episode", "unclean_shutdown", "cut_from_zk")

    def __init__(self, broker_id: int):
        self.id = broker_id  # broker.id
        self.up = True  # the process is running
        self.paused = False  # stuck process: holds messages and timers until resumed
        self.isolated = False  # cut from every other node (brokers, controller, clients)
        self.slow = 1.0  # fetch messages to or from it take this many times longer
        self.incarnation = 0  # bumps on crash and restart; timers of an old process are dropped
        self.deferred: list = []  # (action, args) held while paused
        self.unhealthy_since: float | None = None  # when it last stopped answering the controller
        self.healthy_since = 0.0  # when it last started answering it (KRaft: its heartbeats count from here)
        self.session_expires = 0.0  # while unhealthy: when its session expires (ZooKeeper's, or KRaft's)
        self.episode = 0  # bumps on every health change; a session expiry for an old episode is void
        self.unclean_shutdown = False  # its process died (crash or power loss): no clean shutdown, as Kafka sees it
        self.cut_from_zk = 0  # partial isolations that cut it from ZooKeeper (its session then lapses)

    @property
    def healthy(self) -> bool:
        return self.up and not self.paused and not self.isolated and not self.cut_from_zk


NEVER = 1 << 62  # FollowerState.last_fetch_leader_leo before its first read: no fetch offset reaches it


class FollowerState:
    """What a leader keeps of one follower of its partition (Kafka's remote ``Replica`` and its ``ReplicaState``):
    one small record per follower, so a follower's fetch of the partition reads and writes one object."""

    __slots__ = ("log_end_offset", "last_caught_up_ms", "last_fetch_ms", "last_fetch_leader_leo")

    def __init__(self, since_ms: float) -> None:
        self.log_end_offset = -1  # LEO: the fetch offset it last reported (-1: none yet)
        self.last_caught_up_ms = since_ms  # last time it was seen caught up (see LeaderState.caught_up_ms)
        self.last_fetch_ms = since_ms  # when its fetch last read this partition
        self.last_fetch_leader_leo = NEVER  # the leader's LEO at that read (NEVER: not read yet)


class LeaderState:
    """What a replica keeps only while it leads (Kafka's Partition leader state and its purgatories)."""

    __slots__ = ("broker", "isr", "isr_followers", "followers", "sessions", "pending", "consumer_parked",
                 "epoch_start_offset", "since_ms")

    def __init__(self, now: float = 0.0, broker: int = -1) -> None:
        self.broker = broker  # the leader's broker
        self.isr: set[int] = set()  # in-sync replicas as the leader believes (itself included): set by ``set_isr``
        self.isr_followers: list[FollowerState] = []  # the ISR's followers' states, where the HW rule reads them
        self.followers: dict[int, FollowerState] = {}  # follower -> what the leader keeps of it (``follower``)
        self.sessions: dict = {}  # follower -> its fetch session that holds this partition
        self.pending: list = []  # acks=all produce requests waiting for the HW: (end, seq, DelayedProduce, index)
        self.consumer_parked: dict = {}  # consumer fetches waiting for the HW to move
        self.epoch_start_offset = 0  # LEO when its epoch began
        self.since_ms = now  # when it became leader

    def set_isr(self, isr) -> None:
        """The ISR as the leader now believes it (its own broker included); its followers' states are kept with it."""
        self.isr = members = set(isr)
        me, followers, states = self.broker, self.followers, []
        for f in members:
            if f != me:
                fs = followers.get(f)
                states.append(fs if fs is not None else self.follower(f))
        self.isr_followers = states

    def follower(self, f: int) -> FollowerState:
        """Follower f's state, new (caught up and fetched when this leader began, no offset reported) if it has none."""
        fs = self.followers.get(f)
        if fs is None:
            fs = self.followers[f] = FollowerState(self.since_ms)
        return fs

    def follower_leo(self, f: int, missing: int = -1) -> int:
        """The fetch offset follower f last reported (`missing` if none)."""
        fs = self.followers.get(f)
        if fs is None or fs.log_end_offset < 0:
            return missing
        return fs.log_end_offset

    def caught_up_ms(self, f: int, leo: int) -> float:
        """Kafka's lastCaughtUpTimeMs of follower f: a follower whose reported offset is the LEO is caught up
        at every fetch of its session (read lazily: its session's last fetch)."""
        fs = self.followers.get(f)
        if fs is None:
            return self.since_ms
        t = fs.last_caught_up_ms
        s = self.sessions.get(f)
        if s is not None and fs.log_end_offset >= leo and s.last_fetch_ms > t:
            return s.last_fetch_ms
        return t

    def fetched_ms(self, f: int) -> float:
        """When follower f last fetched (any fetch of the session that holds this partition)."""
        fs = self.followers.get(f)
        t = self.since_ms if fs is None else fs.last_fetch_ms
        s = self.sessions.get(f)
        return s.last_fetch_ms if s is not None and s.last_fetch_ms > t else t


class Replica:
    """One broker's replica of one partition, as that broker sees it."""

    __slots__ = ("partition", "broker", "log", "high_watermark", "hw_checkpoint", "leader_epoch", "is_leader",
                 "leader", "fetcher", "truncating", "delayed_until", "lead")

    def __init__(self, partition: int, broker: int, log: Log):
        self.partition = partition  # global partition index
        self.broker = broker  # the broker holding this replica
        self.log = log  # its log
        self.high_watermark = 0  # HW as this replica knows it
        self.hw_checkpoint = 0  # HW last written to replication-offset-checkpoint (survives a crash)
        self.leader_epoch = 0  # latest leader epoch this replica was told
        self.is_leader = False  # this replica believes it leads the partition
        self.leader = -1  # the broker it follows (-1: none known)
        self.fetcher: Any = None  # as follower: the broker.fetcher.Fetcher thread that fetches it (None: none)
        self.truncating = False  # as follower: it must learn where to truncate (OffsetsForLeaderEpoch) first
        self.delayed_until = 0.0  # as follower: after a fetch error, not fetched before this
        self.lead: LeaderState | None = None  # as leader: what it keeps while it leads (new each time it leads)

    def start_leading(self, now: float) -> LeaderState:
        self.lead = LeaderState(now, self.broker)
        return self.lead

    def stop_leading(self) -> None:
        self.lead = None

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """OffsetsForLeaderEpoch, answered from this replica: (largest epoch <= `epoch`, where it ends).

        As leader, its current epoch is the last in its epoch cache (Kafka
        assigns it at the LEO when it becomes leader): it ends at the LEO, and
        the epochs before it end where it starts, even before it holds an entry.
        """
        log = self.log
        if not self.is_leader:
            return log.end_offset_for_epoch(epoch, log.log_end_offset)
        if epoch >= self.leader_epoch:
            return (self.leader_epoch, log.log_end_offset) if epoch == self.leader_epoch else (-1, -1)
        start = self.lead.epoch_start_offset
        if epoch < 0:
            return -1, -1
        if not log.rows:  # older than every epoch it has (its current one): ends where that starts
            return epoch, start
        last = log.last_epoch()
        if epoch > last:  # newer than its log: the log's last epoch ends where the current one starts
            return last, start
        return log.end_offset_for_epoch(epoch, start)

    def truncate_to(self, offset: int) -> int:
        """Cut the log at `offset` (whole batches); the HW and its checkpoint never pass the new LEO.
        Returns the offsets removed."""
        log = self.log
        if offset >= log.log_end_offset:
            return 0
        removed = log.truncate_to(offset)
        leo = log.log_end_offset
        if self.high_watermark > leo:
            self.high_watermark = leo
        if self.hw_checkpoint > leo:
            self.hw_checkpoint = leo
        return removed

    def restart_log_at(self, start: int) -> None:
        """truncateFullyAndStartAt: the whole log goes (retired, not lost) and starts again at `start`."""
        log = self.log
        log.retire(log.rows)
        self.truncate_to(log.log_start_offset)
        log.log_start_offset = log.log_end_offset = start
        self.high_watermark = max(self.high_watermark, start)


class ReplicasOf:
    """broker -> its replicas, in ``partitions_of``'s order: what a broker's periodic tasks (ISR expiry, HW
    checkpoint, flush, retention) walk. A walk over the objects costs about a tenth of one through
    ``replicas[p][b]`` (two lookups per partition, scattered in memory): it is what a 100k-partition cluster pays
    for the partitions that exist. The list is rebuilt when the broker's partitions change (a reassignment)."""

    __slots__ = ("replicas", "partitions_of", "_parts", "_held")

    def __init__(self, replicas: list, partitions_of: list[list[int]]):
        self.replicas = replicas  # replicas[p][b]
        self.partitions_of = partitions_of  # broker -> the partitions it holds (reassignments change it)
        self._parts: list = [None] * len(partitions_of)  # broker -> partitions_of[b] when its list was built
        self._held: list = [None] * len(partitions_of)  # broker -> its Replica objects, in that order

    def __call__(self, b: int) -> list[Replica]:
        parts = self.partitions_of[b]
        if self._parts[b] != parts:
            replicas = self.replicas
            self._parts[b] = list(parts)
            self._held[b] = [replicas[p][b] for p in parts]
        return self._held[b]


class Partition:
    """A partition as the controller sees it, plus what the run measures of it."""

    __slots__ = ("index", "topic", "number", "replicas", "config", "min_isr", "unclean", "leader", "leader_epoch",
                 "isr", "elr", "last_known_elr", "last_leader", "unavailable_since", "unavailable_ms", "recovering")

    def __init__(self, index: int, number: int, replicas: tuple[int, ...], config: TopicSettings):
        self.index = index  # global partition index
        self.topic = config.name  # topic name
        self.number = number  # partition number within the topic
        self.replicas = replicas  # AR in assignment order; the first is the preferred leader
        self.config = config  # the topic's settings in force
        self.min_isr = config.min_insync_replicas  # min.insync.replicas in force
        self.unclean = config.unclean_leader_election_enable  # unclean.leader.election.enable in force
        self.leader = replicas[0]  # the leader the controller elected (-1: offline)
        self.leader_epoch = 0  # the controller's leader epoch
        self.isr: tuple[int, ...] = replicas  # the ISR the controller holds
        self.elr: tuple[int, ...] = ()  # KIP-966 eligible leader replicas (removed while ISR < min.insync.replicas)
        self.last_known_elr: tuple[int, ...] = ()  # KIP-966: the last leader, kept while the ISR and ELR are empty
        self.last_leader = replicas[0]  # last broker elected leader (whose log is final)
        self.unavailable_since: float | None = None  # start of the current unwritable stretch
        self.unavailable_ms = 0.0  # total time an acks=all write could not be accepted
        self.recovering = False  # KRaft (KIP-704): LeaderRecoveryState RECOVERING after a last-known-leader election

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.number}"


class Group:
    """A consumer group: what its coordinator keeps (members, generation, committed offsets) and what its
    members have processed (the application's output)."""

    __slots__ = ("index", "name", "config", "node", "partitions", "members", "committed", "generation", "rebalancing",
                 "joined", "previous", "processed", "first_processed_ms", "rebalances", "origin", "protocol",
                 "unowned_from", "paused_ms", "target", "free", "epoch_changes")

    def __init__(self, index: int, config: ConsumerSettings, partitions: list[int], records: int, node: int):
        self.index = index
        self.name = config.group  # group.id
        self.config = config  # its settings
        self.node = node  # its members' network node (their client.rack's, or the clients')
        self.partitions = partitions  # subscribed partitions (global indices)
        self.members: list = []  # its members (clients.consumer.Member), in joining order
        self.committed: dict[int, int] = {}  # partition -> committed offset (next record to read)
        self.generation = 0  # bumps with every completed rebalance
        self.rebalancing = False
        self.joined: set[int] = set()  # members that revoked and rejoined in this rebalance
        self.previous: dict[str, list[int]] = {}  # last assignment (the sticky assignor keeps it)
        self.processed = np.zeros(records, dtype=np.int16)  # times each record was processed by the group
        self.first_processed_ms = np.full(records, np.nan)  # when it was first processed
        self.rebalances = 0
        self.origin: dict[int, int] = {}  # partition -> where the group first started (auto.offset.reset)
        self.protocol = config.rebalance_protocol  # eager, cooperative (KIP-429) or consumer (KIP-848)
        self.unowned_from: dict[int, float] = {}  # partition -> since when no live member consumes it (after the first assignment)
        self.paused_ms: dict[int, float] = {p: 0.0 for p in partitions}  # partition -> time it was not consumed so far
        self.target: dict[int, list[int]] = {}  # group.protocol consumer: member index -> its target assignment
        self.free: set[int] = set()  # group.protocol consumer: partitions no member owns (revoked, or never assigned)
        self.epoch_changes = 0  # group.protocol consumer: target assignments computed after the first

    def stop_consuming(self, parts, now: float) -> None:
        """These partitions' owner stopped consuming them (revoked, crashed, left)."""
        for p in parts:
            self.unowned_from.setdefault(p, now)

    def resume_consuming(self, parts, now: float) -> None:
        """A live member owns these partitions again: the time they waited counts as paused."""
        for p in parts:
            since = self.unowned_from.pop(p, None)
            if since is not None:
                self.paused_ms[p] += now - since

    def mark_processed(self, batch_lo, t0: float, slices: list, upto: int | None) -> None:
        """Records of a poll are processed one after another from t0; only the first `upto` if given.
        `batch_lo`: each batch's first record (Batches.lo)."""
        proc = self.config.processing_ms
        done = 0
        for b, first, last, _ in slices:
            n = last - first
            if upto is not None:
                n = min(n, upto - done)
                if n <= 0:
                    break
            start = int(batch_lo[b]) + first
            self.processed[start:start + n] += 1
            finish = t0 + proc * np.arange(done + 1, done + n + 1)
            seen = self.first_processed_ms[start:start + n]
            self.first_processed_ms[start:start + n] = np.where(np.isnan(seen), finish, seen)
            done += n
