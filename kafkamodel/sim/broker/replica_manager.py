"""A broker's process-level duties over its replicas (Kafka's ReplicaManager and LogManager).

* the controller's LeaderAndIsr: become leader or follower;
* the controller's UpdateMetadata: its metadata cache, every partition's
  leader as this broker would answer a client's metadata request;
* its periodic tasks: ISR expiration (the leaders' lag rule), the HW
  checkpoint (replication-offset-checkpoint), forced flushes
  (``log.flush.interval.ms``), retention, the followers' socket timeout.
"""

from __future__ import annotations

from ..protocol import CONTROLLER
from ..results.measures import RETENTION


def follower_append_times_read(settings, retention_on: bool) -> bool:
    """Whether a follower's append instants (``Log.append_at``) can be read in this run. They are read by a read of
    the follower's log (a consumer's, KIP-392), by its recovery or power loss (a fault), once it leads (a fault or
    an operation moves leaders: at t=0 every preferred replica leads, and nothing else elects), and by retention
    (its segments' times, `retention_on`). Without any of these, followers keep no append instants
    (``Log.untimed``)."""
    return bool(settings.consumers or settings.faults or settings.operations or retention_on)


class ReplicaManager:
    """Every broker's."""

    MESSAGES = ("handle_leader_and_isr", "handle_update_metadata", "handle_stop_replica")
    TIMERS = ("apply_retention", "flush", "_flushed", "checkpoint_hw")

    def __init__(self, sim):
        self.kernel = sim.kernel
        self.timer = sim.transport.timer
        self.replicas = sim.replicas
        self.partitions = sim.partitions
        self.replicas_of = sim.replicas_of  # broker -> its replicas, in partitions_of's order
        self.brokers = sim.brokers
        self.lag_rule = sim.lag_rule
        self.event = sim.recorder.event
        self.recorder = sim.recorder
        self.send = sim.transport.send
        self.note_availability = sim.availability.note
        self.retention_on = sim.retention_on
        # else the followers' logs keep none
        self.follower_times = follower_append_times_read(sim.settings, sim.retention_on)
        cfg = sim.settings.broker
        self.retention_check_ms = cfg.log_retention_check_interval_ms
        self.flush_ms = cfg.log_flush_interval_ms
        self.fsync = sim.fsync  # one fsync's duration, draw after draw
        self.checkpoint_ms = cfg.replica_high_watermark_checkpoint_interval_ms
        self.socket_timeout_ms = cfg.replica_socket_timeout_ms
        self.broker_epochs = sim.settings.kafka.broker_epochs  # KIP-380: requests for an older incarnation are refused
        self.leader = self.follower = self.replication = self.channel = None  # wired
        # the metadata cache, broker -> partition -> the leader (and its epoch) as its last UpdateMetadata said
        self.metadata_leader: list[list[int]] = []
        self.metadata_epoch: list[list[int]] = []
        self.metadata_process: list[int] = []  # broker -> the process (incarnation) whose cache it is: serving
        self.kip951 = sim.settings.kafka.kip951  # 3.7: NOT_LEADER_OR_FOLLOWER names the current leader

    def current_leader(self, broker: int, p: int) -> tuple[int, int]:
        """KIP-951 (3.7): the leader and its epoch a NOT_LEADER_OR_FOLLOWER answer of `broker` names for partition
        `p` (CurrentLeader in produce and fetch responses, from the broker's metadata cache); (-1, -1): none, before
        3.7, or the cache still names this broker."""
        if not self.kip951:
            return -1, -1
        leader = self.metadata_leader[broker][p]
        return (leader, self.metadata_epoch[broker][p]) if leader != broker else (-1, -1)

    def wire(self, leader, follower, replication, channel) -> None:
        self.leader, self.follower, self.replication, self.channel = leader, follower, replication, channel

    def start(self) -> None:
        """t=0: every preferred replica leads with a full ISR; followers start fetching; periodic tasks start."""
        now = self.kernel.now
        for part in self.partitions:
            for b, rep in self.replicas[part.index].items():
                rep.leader_epoch = part.leader_epoch
                rep.leader = part.leader
                if b == part.leader:
                    rep.is_leader = True
                    lead = rep.start_leading(now)
                    for f in part.replicas:
                        if f != b:  # caught up and fetched now, at offset 0
                            lead.follower(f).log_end_offset = 0
                    lead.set_isr(part.isr)
            for b, rep in self.replicas[part.index].items():
                if b != part.leader:
                    if not self.follower_times:
                        rep.log.untimed()
                    self.follower.start_fetching(rep)
        leaders = [part.leader for part in self.partitions]
        epochs = [part.leader_epoch for part in self.partitions]
        self.metadata_leader[:] = [list(leaders) for _ in self.brokers]  # in place: the clients hold the list
        self.metadata_epoch[:] = [list(epochs) for _ in self.brokers]
        self.metadata_process[:] = [broker.incarnation if broker.up else -1 for broker in self.brokers]
        for b in range(len(self.brokers)):
            self.start_timers(b)

    def start_timers(self, b: int) -> None:
        """The periodic tasks of broker b's process (again after a restart)."""
        timer = self.timer
        if self.retention_on:
            timer(b, self.retention_check_ms, self.apply_retention, b)
        if self.flush_ms:
            timer(b, self.flush_ms, self.flush, b)
        timer(b, self.lag_rule.check_every_ms, self.leader.leader_shrink_isr, b)
        timer(b, self.checkpoint_ms, self.checkpoint_hw, b)
        timer(b, self.socket_timeout_ms, self.follower.fetchers.check_socket_timeout, b)

    # ---- the controller's requests ------------------------------------------------------------------------------

    def handle_leader_and_isr(self, b: int, states: list, broker_epoch: int, decided: float, metadata: list,
                              then: int | None) -> None:
        """The controller's LeaderAndIsr request reaches broker b with the state of some of its partitions
        ((partition, leader, epoch, isr, recovering) each), addressed to the incarnation the controller last
        registered (`broker_epoch`). Since KIP-380 (and in KRaft, where a restarted broker replays the metadata
        log from the top) a new process refuses one meant for its predecessor (STALE_BROKER_EPOCH); before it,
        a broker that restarted quickly could act on a request sent to the process that died. `decided`: when
        the controller made the changes. `metadata`: the batch's partition states for the metadata cache, applied
        with it (KRaft's metadata log; a full resend), or, if `then` (the controller's epoch) is set, sent by the
        ZooKeeper controller as UpdateMetadata once this request is answered."""
        if self.broker_epochs and broker_epoch != self.brokers[b].incarnation:
            return
        now = self.kernel.now
        rec = self.recorder
        self._apply(b, states, now, rec)
        if then is None:
            if metadata:
                self.handle_update_metadata(b, metadata, broker_epoch, decided)
        else:  # the answer: the controller's RequestSendThread for b sends the next request, UpdateMetadata
            self.send(b, CONTROLLER, self.channel.leader_and_isr_answered, (b, metadata, decided, then))
        self.note_availability([state[0] for state in states])  # only these partitions changed

    def handle_update_metadata(self, b: int, metadata: list, broker_epoch: int, decided: float,
                               every: bool = False) -> None:
        """UpdateMetadata (KRaft: the metadata log's records) reaches broker b: its metadata cache takes each
        (partition, leader, leader epoch), unless it holds a later epoch already (the controller's per-broker
        queue keeps them in order in Kafka). Metadata propagation is measured here, from `decided`, per broker:
        from now on a client asking this broker learns the change. Refused for an older incarnation (KIP-380).
        `every`: every partition's state (a registration's, a new controller's): a process that (re)started
        answers metadata requests from then on (before, its cache was empty: Kafka's broker serves clients only
        once registered)."""
        broker = self.brokers[b]
        if self.broker_epochs and broker_epoch != broker.incarnation:
            return
        self.recorder.metadata_propagation_ms.append(self.kernel.now - decided)
        if every:
            self.metadata_process[b] = broker.incarnation
        leaders, epochs = self.metadata_leader[b], self.metadata_epoch[b]
        for p, leader, epoch in metadata:
            if epoch >= epochs[p]:
                leaders[p] = leader
                epochs[p] = epoch

    def _apply(self, b: int, states: list, now: float, rec) -> None:
        """LeaderAndIsr's partition states, on broker b: become leader or follower."""
        for p, leader, epoch, isr, recovering in states:
            rep = self.replicas[p][b]
            if epoch < rep.leader_epoch:
                continue  # stale
            if leader == b:
                if rep.is_leader and epoch == rep.leader_epoch:
                    rep.lead.set_isr(isr)  # an ISR change made by the controller
                    self.leader.leader_advance_high_watermark(rep)
                    continue
                self.leader.become_leader(rep, epoch, isr)
                died = rec.awaiting_leader.pop(p, None)
                if died is not None:
                    rec.election_ms.append(now - died)
                if recovering:  # KIP-704: the leader reports its log recovered (AlterPartition, RECOVERED)
                    self.send(b, CONTROLLER, self.replication.handle_recovered, (p, epoch))
            elif rep.is_leader or rep.leader != leader or epoch != rep.leader_epoch:
                self.follower.become_follower_and_truncate(rep, leader, epoch)

    def handle_stop_replica(self, b: int, ps: tuple, broker_epoch: int, delete: bool) -> None:
        """StopReplica for partitions `ps` reaches broker b. With delete (a reassignment removed its replicas) it
        stops leading and fetching them; without (a controlled shutdown, for the partitions it follows) it removes
        their fetchers only (ReplicaManager.stopReplicas: removeFetcherForPartitions), so it cannot rejoin their
        ISRs before it stops."""
        if self.broker_epochs and broker_epoch != self.brokers[b].incarnation:
            return
        for p in ps:
            rep = self.replicas[p][b]
            if delete:
                self.leader.resign(rep)
                self.follower.stop_fetching(rep)
                rep.leader = -1
            elif not rep.is_leader:
                self.follower.stop_fetching(rep)
        if delete:
            self.note_availability(ps)

    # ---- periodic tasks -------------------------------------------------------------------------------------------

    def apply_retention(self, b: int) -> None:
        """Delete whole old segments (never the active one, never above the HW) by age and by size."""
        now = self.kernel.now
        for rep in self.replicas_of(b):
            p = rep.partition
            part = self.partitions[p]
            log = rep.log
            cut = log.apply_retention(now, rep.high_watermark, part.config.retention_ms, part.config.retention_bytes)
            if cut:
                self.event(RETENTION, p, b, f"deleted {cut} segment(s); log start offset now {log.log_start_offset}")
        self.timer(b, self.retention_check_ms, self.apply_retention, b)

    def flush(self, b: int) -> None:
        """log.flush.interval.ms: the log flusher fsyncs every log of the broker, one after another, in the
        background; what each fsync covers is durable once it ends."""
        fsync = 0.0
        done = []
        for rep in self.replicas_of(b):
            log = rep.log
            if log.log_end_offset > log.flushed_offset:
                fsync += next(self.fsync)
                done.append((log, log.begin_flush(), fsync))
        if done:
            if fsync > 0.0:
                self.timer(b, done[0][2], self._flushed, b, done, 0)
            else:
                for log, offset, _ in done:
                    log.flushed(offset)
        self.timer(b, self.flush_ms, self.flush, b)

    def _flushed(self, b: int, done: list, i: int) -> None:
        """The flusher's i-th fsync ended (the next one ends after its own fsync)."""
        log, offset, at = done[i]
        log.flushed(offset)
        if i + 1 < len(done):
            self.timer(b, done[i + 1][2] - at, self._flushed, b, done, i + 1)

    def checkpoint_hw(self, b: int) -> None:
        """replication-offset-checkpoint: the HW every replica of the broker has now survives a crash. (And where
        followers keep no append instants, nothing but a follower's fetch reads a leader's: each leader's log drops
        those of its rows below every follower's fetch position, which never goes back in such a run.)"""
        forget = not self.follower_times
        for rep in self.replicas_of(b):
            rep.hw_checkpoint = rep.high_watermark
            if forget and rep.is_leader:
                below = min((fs.log_end_offset for fs in rep.lead.followers.values()), default=-1)
                if below > 0:
                    rep.log.forget_times_below(rep.log.entry_index(below))
        self.timer(b, self.checkpoint_ms, self.checkpoint_hw, b)
