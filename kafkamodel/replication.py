"""Leader and follower: appends, fetches, HW, ISR, truncation.

Transitions are named actor + verb as in Kafka's TLA+ specification
(``leader_handle_produce``, ``follower_fetch``, ``leader_shrink_isr``,
``leader_expand_isr``, ``leader_advance_high_watermark``, ``become_leader``,
``become_follower_and_truncate``). The protocol variants are strategies:

* commit rule: ``IsrCommit`` (HW = min LEO over the ISR) or
  ``QuorumCommit`` (HW = the majority's LEO, current-epoch entries only);
* lag rule: ``TimeLagRule`` (>= 0.9: not caught up for
  replica.lag.time.max.ms, checked every half period) or ``CountLagRule``
  (0.8: no fetch for replica.lag.time.max.ms, or more than
  replica.lag.max.messages behind; checked every period, as 0.8 did);
* truncation: ``HighWatermarkTruncation`` (before 0.11) or
  ``LeaderEpochTruncation`` (KIP-101 with KIP-279's refinement).
"""

from __future__ import annotations

from bisect import insort

from .producer import ALL, NONE, NOT_ENOUGH_REPLICAS, NOT_LEADER, OUT_OF_ORDER_SEQUENCE
from .state import CONTROL, Replica

CLIENT = -1


# ---- strategies ---------------------------------------------------------------


class IsrCommit:
    """Kafka: HW is the minimum LEO over the ISR; since 3.7 it holds while the ISR < min.insync.replicas."""

    name = "isr"

    def __init__(self, sim):
        self.sim = sim

    def new_high_watermark(self, rep: Replica) -> int:
        if len(rep.isr) < self.sim.partitions[rep.partition].min_isr:
            return rep.high_watermark
        hw = rep.log_end_offset
        leo = rep.follower_leo
        me = rep.broker
        for f in rep.isr:
            if f != me:
                v = leo.get(f, -1)
                if v < hw:
                    hw = v
        return hw


class QuorumCommit:
    """Majority commit: HW is the LEO a majority has reached, Raft's current-epoch rule applied."""

    name = "quorum"

    def __init__(self, sim):
        self.sim = sim

    def new_high_watermark(self, rep: Replica) -> int:
        part = self.sim.partitions[rep.partition]
        leos = [rep.follower_leo.get(f, -1) for f in part.replicas if f != rep.broker]
        leos.append(rep.log_end_offset)
        leos.sort(reverse=True)
        hw = leos[self.sim.majority[rep.partition] - 1]
        if hw <= rep.high_watermark:
            return rep.high_watermark
        # Raft: a leader commits by counting only entries of its own epoch
        i = rep.entry_index(hw - 1)
        if i >= len(rep.log) or rep.log[i][2] != rep.leader_epoch:
            return rep.high_watermark
        return hw


def make_commit_rule(sim):
    return QuorumCommit(sim) if sim.quorum else IsrCommit(sim)


class TimeLagRule:
    """Kafka >= 0.9 (KIP-16): out of sync when not caught up for replica.lag.time.max.ms."""

    name = "time"

    def __init__(self, cfg: dict):
        self.max_lag_ms = float(cfg["replica.lag.time.max.ms"])
        self.check_every_ms = self.max_lag_ms / 2

    def out_of_sync(self, rep: Replica, f: int, now: float) -> bool:
        return now - rep.last_caught_up_ms.get(f, now) > self.max_lag_ms


class CountLagRule(TimeLagRule):
    """Kafka 0.8: stuck (no fetch for replica.lag.time.max.ms) or more than replica.lag.max.messages behind."""

    name = "count"

    def __init__(self, cfg: dict):
        super().__init__(cfg)
        self.max_messages = int(cfg["replica.lag.max.messages"])
        self.check_every_ms = self.max_lag_ms  # 0.8 ran its isr-expiration task every replica.lag.time.max.ms

    def out_of_sync(self, rep: Replica, f: int, now: float) -> bool:
        if now - rep.last_fetch_ms.get(f, now) > self.max_lag_ms:
            return True
        return rep.log_end_offset - rep.follower_leo.get(f, 0) > self.max_messages


def make_lag_rule(cfg: dict):
    return CountLagRule(cfg) if cfg["replica.lag.max.messages"] is not None else TimeLagRule(cfg)


class HighWatermarkTruncation:
    """Before 0.11: a follower truncates its log to its own HW, then fetches."""

    name = "high_watermark"

    def begin(self, sim, rep: Replica) -> None:
        sim.truncate_replica(rep, rep.high_watermark, "to local high watermark")
        sim.follower_fetch(rep)


class LeaderEpochTruncation:
    """0.11+ (KIP-101, KIP-279): ask the leader where our last epoch ends, truncate there."""

    name = "leader_epoch"

    def begin(self, sim, rep: Replica) -> None:
        if not rep.log:
            sim.follower_fetch(rep)
            return
        sim.follower_query_epoch(rep)


def make_truncation(name: str):
    return LeaderEpochTruncation() if name == "leader_epoch" else HighWatermarkTruncation()


# ---- the protocol ---------------------------------------------------------------


class ReplicationActor:
    def start_replication(self) -> None:
        """t=0: every preferred replica leads with a full ISR; followers start fetching."""
        now = self.kernel.now
        for part in self.partitions:
            for b, rep in self.replicas[part.index].items():
                rep.leader_epoch = part.leader_epoch
                rep.leader = part.leader
                if b == part.leader:
                    rep.is_leader = True
                    rep.isr = set(part.isr)
                    for f in part.replicas:
                        rep.last_caught_up_ms[f] = now
                        rep.last_fetch_ms[f] = now
                        rep.follower_leo[f] = 0
            for b, rep in self.replicas[part.index].items():
                if b != part.leader:
                    self.follower_fetch(rep)
        for b in range(len(self.brokers)):
            self.start_broker_timers(b)

    # ---- segments and retention ------------------------------------------------

    def _segment_append(self, rep: Replica, entry: tuple, now: float) -> None:
        if rep.segments is None:
            self._rebuild_segments(rep)
            return
        size = self.b_bytes[entry[3]] if entry[3] >= 0 else 0
        segs = rep.segments
        if not segs or segs[-1][1] + size > self.partitions[rep.partition].segment_bytes:
            segs.append([entry[0], 0, now])  # roll a new segment
        segs[-1][1] += size
        segs[-1][2] = now

    def _rebuild_segments(self, rep: Replica) -> None:
        rep.segments = []
        for entry, at in zip(rep.log, rep.append_ms):
            self._segment_append(rep, entry, at)

    def broker_apply_retention(self, b: int) -> None:
        """Delete whole old segments (never the active one, never above the HW) by age and by size."""
        now = self.kernel.now
        for p in self.partitions_of[b]:
            rep, part = self.replicas[p][b], self.partitions[p]
            if rep.segments is None:
                self._rebuild_segments(rep)
            segs = rep.segments
            cut = 0
            deletable = lambda k: k < len(segs) - 1 and segs[k + 1][0] <= rep.high_watermark
            if part.retention_ms is not None:
                while deletable(cut) and now - segs[cut][2] > part.retention_ms:
                    cut += 1
            if part.retention_bytes is not None:
                total = sum(s[1] for s in segs[cut:])
                while deletable(cut) and total - segs[cut][1] >= part.retention_bytes:
                    total -= segs[cut][1]
                    cut += 1
            if cut:
                start = segs[cut][0]
                k = rep.entry_index(start)
                rep.retired.extend(rep.log[:k])
                del rep.log[:k], rep.bases[:k], rep.append_ms[:k], segs[:cut]
                rep.log_start_offset = start
                self.event("retention", p, b, f"deleted {cut} segment(s); log start offset now {start}")
        self.timer(b, float(self.broker_cfg["log.retention.check.interval.ms"]), self.broker_apply_retention, b)

    def start_broker_timers(self, b: int) -> None:
        if self.retention_on:
            self.timer(b, float(self.broker_cfg["log.retention.check.interval.ms"]), self.broker_apply_retention, b)
        flush_ms = self.broker_cfg["log.flush.interval.ms"]
        if flush_ms:
            self.timer(b, float(flush_ms), self.broker_flush, b)
        self.timer(b, self.lag_rule.check_every_ms, self.leader_shrink_isr, b)
        self.timer(b, float(self.broker_cfg["replica.high.watermark.checkpoint.interval.ms"]), self.broker_checkpoint_hw, b)
        self.timer(b, float(self.broker_cfg["replica.socket.timeout.ms"]), self.follower_check_socket_timeout, b)

    def follower_check_socket_timeout(self, b: int) -> None:
        """A follower whose leader has not answered for replica.socket.timeout.ms resends its request."""
        timeout = float(self.broker_cfg["replica.socket.timeout.ms"])
        now = self.kernel.now
        for p in self.partitions_of[b]:
            rep = self.replicas[p][b]
            if not rep.is_leader and rep.leader >= 0 and now - rep.last_heard_ms >= timeout:
                rep.fetch_session += 1
                self._follower_resend(rep)
        self.timer(b, timeout / 2, self.follower_check_socket_timeout, b)

    def _follower_resend(self, rep: Replica) -> None:
        rep.last_heard_ms = self.kernel.now
        if rep.awaiting_epoch:
            self.follower_query_epoch(rep)
        else:
            self.follower_fetch(rep)

    def broker_flush(self, b: int) -> None:
        """log.flush.interval.ms: fsync every log of the broker."""
        for p in self.partitions_of[b]:
            rep = self.replicas[p][b]
            rep.flushed_offset = rep.log_end_offset
        self.timer(b, float(self.broker_cfg["log.flush.interval.ms"]), self.broker_flush, b)

    def broker_checkpoint_hw(self, b: int) -> None:
        """replication-offset-checkpoint: the HW every replica of the broker has now survives a crash."""
        for p in self.partitions_of[b]:
            rep = self.replicas[p][b]
            rep.hw_checkpoint = rep.high_watermark
        self.timer(b, float(self.broker_cfg["replica.high.watermark.checkpoint.interval.ms"]), self.broker_checkpoint_hw, b)

    # ---- produce ------------------------------------------------------------

    def leader_handle_produce(self, broker: int, b: int, attempt: int) -> None:
        rep = self.replicas[self.b_partition[b]][broker]
        pc = self.producer_cfg[self.b_producer[b]]
        acks = pc.acks
        if not rep.is_leader:
            if acks:
                self.send(broker, CLIENT, self.producer_handle_response, (b, attempt, NOT_LEADER, -1))
            return
        if acks == ALL and not self.quorum and len(rep.isr) < self.partitions[rep.partition].min_isr:
            self.stats["not_enough_replicas_errors"] += 1
            self.send(broker, CLIENT, self.producer_handle_response, (b, attempt, NOT_ENOUGH_REPLICAS, -1))
            return
        if pc.idempotent:
            verdict = self._leader_check_sequence(rep, b)
            if verdict is not None:
                self._leader_answer_sequence(rep, b, attempt, acks, verdict)
                return
        base = rep.log_end_offset
        end = base + self.b_count[b]
        rep.append((base, end, rep.leader_epoch, b), self.kernel.now)
        if self.retention_on:
            self._segment_append(rep, rep.log[-1], self.kernel.now)
        if self.track_producers:
            self._track_producer(rep, (base, end, rep.leader_epoch, b))
        if self.flush_messages and end - rep.flushed_offset >= self.flush_messages:
            rep.flushed_offset = end  # log.flush.interval.messages: fsync
        if acks == 1:
            self.send(broker, CLIENT, self.producer_handle_response, (b, attempt, NONE, base))
        elif acks == ALL:
            rep.pending.append((end, b, attempt, base))
        if rep.parked:
            self._leader_wake_parked(rep)
        self.leader_advance_high_watermark(rep)

    # ---- idempotent producer state ----------------------------------------------

    def _track_producer(self, rep: Replica, entry: tuple) -> None:
        """Remember the entry among its producer's last 5 in this replica (sequence numbers travel with the log)."""
        if rep.producers is None:
            return  # rebuilt lazily from the log when next needed
        b = entry[3]
        if b >= 0:
            tail = rep.producers.setdefault(self.b_producer[b], [])
            tail.append((b, self.b_epoch[b], self.b_seq[b], entry[0], entry[1]))
            if len(tail) > 5:
                del tail[0]

    def _producer_tail(self, rep: Replica, producer: int) -> list:
        if rep.producers is None:  # after a truncation: scan the log back, as a broker reloads its snapshot
            rep.producers = {}
            for entry in rep.log:
                self._track_producer(rep, entry)
        return rep.producers.get(producer, [])

    def _leader_check_sequence(self, rep: Replica, b: int):
        """None to append; else why not: ('dup', base, end) | ('old', -1, -1) | ('gap', -1, -1)."""
        tail = self._producer_tail(rep, self.b_producer[b])
        epoch, seq = self.b_epoch[b], self.b_seq[b]
        for _, e, s, base, end in tail:
            if e == epoch and s == seq:
                return ("dup", base, end)  # a resend of a batch it has: answer with its offsets
        if not tail or epoch > tail[-1][1]:
            # a producer it does not know, or a new epoch: the sequence must start at 0
            return None if seq == 0 else ("gap", -1, -1)
        if epoch < tail[-1][1]:
            return ("gap", -1, -1)  # a fenced (older) epoch: the client resends it in the new one
        last = tail[-1][2]
        if seq == last + 1:
            return None
        if seq <= last:
            return ("old", -1, -1)  # DUPLICATE_SEQUENCE_NUMBER: older than the 5 it remembers
        return ("gap", -1, -1)  # OUT_OF_ORDER_SEQUENCE_NUMBER: an earlier batch is missing

    def _leader_answer_sequence(self, rep: Replica, b: int, attempt: int, acks: int, verdict: tuple) -> None:
        kind, base, end = verdict
        respond, broker = self.producer_handle_response, rep.broker
        if kind == "gap":
            if acks:
                self.send(broker, CLIENT, respond, (b, attempt, OUT_OF_ORDER_SEQUENCE, -1))
        elif kind == "dup" and acks == ALL and rep.high_watermark < end:
            insort(rep.pending, (end, b, attempt, base))
        elif acks:
            self.send(broker, CLIENT, respond, (b, attempt, NONE, base))

    def leader_advance_high_watermark(self, rep: Replica) -> None:
        hw = self.commit_rule.new_high_watermark(rep)
        old = rep.high_watermark
        if hw <= old:
            return
        rep.high_watermark = hw
        now = self.kernel.now
        log = rep.log
        i = rep.entry_index(old)
        visible, committed = self.b_visible_ms, self.b_committed
        while i < len(log) and log[i][0] < hw:
            b = log[i][3]
            if b >= 0 and not committed[b]:
                committed[b] = True
                visible[b] = now
            i += 1
        if rep.consumer_parked:
            self.leader_wake_consumers(rep)
        pending = rep.pending
        if pending and pending[0][0] <= hw:
            k = 0
            send, respond, broker = self.send, self.producer_handle_response, rep.broker
            while k < len(pending) and pending[k][0] <= hw:
                _, b, attempt, base = pending[k]
                send(broker, CLIENT, respond, (b, attempt, NONE, base))
                k += 1
            del pending[:k]

    # ---- fetch --------------------------------------------------------------

    def follower_fetch(self, rep: Replica) -> None:
        """Send the next fetch to the leader; one is outstanding at a time."""
        leader = rep.leader
        if leader < 0 or rep.is_leader:
            return
        self.stats["fetch_requests"] += 1
        self.send(rep.broker, leader, self.leader_handle_fetch,
                  (leader, rep.partition, rep.broker, rep.log_end_offset, rep.leader_epoch, rep.fetch_session), True,
                  refused=self._follower_refused)

    def follower_query_epoch(self, rep: Replica) -> None:
        """OffsetsForLeaderEpoch for the epoch of our last entry (KIP-101)."""
        rep.awaiting_epoch = True
        leader = rep.leader
        self.send(rep.broker, leader, self.leader_handle_epoch_query,
                  (leader, rep.partition, rep.broker, rep.last_epoch(), rep.fetch_session), refused=self._follower_refused)

    def _follower_refused(self, leader: int, p: int, f: int, *rest) -> None:
        """The leader's process is down: back off, then try again (the controller may name a new leader)."""
        self.follower_handle_fetch_error(f, p, rest[-1])

    def leader_handle_fetch(self, broker: int, p: int, f: int, offset: int, epoch: int, session: int) -> None:
        rep = self.replicas[p][broker]
        if not rep.is_leader or epoch != rep.leader_epoch:  # NOT_LEADER / FENCED_LEADER_EPOCH
            self.send(broker, f, self.follower_handle_fetch_error, (f, p, session), True)
            return
        if offset > rep.log_end_offset:  # OFFSET_OUT_OF_RANGE: the follower has more than we do
            self.send(broker, f, self.follower_handle_out_of_range, (f, p, session, rep.log_end_offset), True)
            return
        if offset < rep.log_start_offset:  # OFFSET_OUT_OF_RANGE: retention deleted what it needs
            self.send(broker, f, self.follower_restart_log_at, (f, p, session, rep.log_start_offset), True)
            return
        now = self.kernel.now
        leo = rep.log_end_offset
        if offset >= leo:
            rep.last_caught_up_ms[f] = now
        elif offset >= rep.last_fetch_leader_leo.get(f, leo + 1):
            rep.last_caught_up_ms[f] = rep.last_fetch_ms[f]
        rep.last_fetch_ms[f] = now
        rep.last_fetch_leader_leo[f] = leo
        rep.follower_leo[f] = offset
        if f in rep.isr or self.quorum:
            self.leader_advance_high_watermark(rep)
        elif offset >= rep.high_watermark and offset >= rep.epoch_start_offset:
            self.leader_expand_isr(rep, f)
        if leo > offset:
            self._leader_answer_fetch(rep, f, offset, session)
        else:
            rep.parked[f] = (offset, now, session)
            if f not in rep.timer_armed:
                rep.timer_armed.add(f)
                self.timer(broker, self.fetch_wait_ms, self._leader_fetch_wait_expired, rep, f)

    def _leader_answer_fetch(self, rep: Replica, f: int, offset: int, session: int) -> None:
        log = rep.log
        i = rep.entry_index(offset)
        budget = self.broker_cfg["replica.fetch.max.bytes"]
        b_bytes = self.b_bytes
        j = i
        n = len(log)
        size = 0
        while j < n:
            b = log[j][3]
            size += b_bytes[b] if b >= 0 else 0
            if size > budget and j > i:
                break
            j += 1
        self.send(rep.broker, f, self.follower_handle_fetch_response,
                  (f, rep.partition, session, log[i:j], rep.high_watermark), True, nbytes=size)

    def _leader_wake_parked(self, rep: Replica) -> None:
        leo = rep.log_end_offset
        for f, (offset, _, session) in list(rep.parked.items()):
            if leo > offset:
                del rep.parked[f]
                self._leader_answer_fetch(rep, f, offset, session)

    def _leader_fetch_wait_expired(self, rep: Replica, f: int) -> None:
        parked = rep.parked.get(f)
        if parked is None:
            rep.timer_armed.discard(f)
            return
        offset, at, session = parked
        due = at + self.fetch_wait_ms
        if self.kernel.now + 1e-9 < due:  # parked again since the timer was set
            self.timer(rep.broker, due - self.kernel.now, self._leader_fetch_wait_expired, rep, f)
            return
        rep.timer_armed.discard(f)
        del rep.parked[f]
        self.send(rep.broker, f, self.follower_handle_fetch_response, (f, rep.partition, session, [], rep.high_watermark), True)

    def _follower_heard(self, f: int, p: int, session: int) -> Replica | None:
        """Broker f's replica of p if an answer of this fetch session reaches it (the leader heard from), else None."""
        rep = self.replicas[p][f]
        if rep.fetch_session != session or rep.is_leader:
            return None
        rep.last_heard_ms = self.kernel.now
        return rep

    def follower_handle_fetch_response(self, f: int, p: int, session: int, entries: list, leader_hw: int) -> None:
        rep = self._follower_heard(f, p, session)
        if rep is None:
            return
        if entries:
            if entries[0][0] != rep.log_end_offset:  # not contiguous: refetch from our LEO
                self.follower_fetch(rep)
                return
            rep.extend(entries, self.kernel.now)
            if self.retention_on:
                for entry in entries:
                    self._segment_append(rep, entry, self.kernel.now)
            if self.track_producers:
                for entry in entries:
                    self._track_producer(rep, entry)
            if self.flush_messages and rep.log_end_offset - rep.flushed_offset >= self.flush_messages:
                rep.flushed_offset = rep.log_end_offset
        leo = rep.log_end_offset
        rep.high_watermark = leader_hw if leader_hw < leo else leo
        self.follower_fetch(rep)

    def follower_handle_fetch_error(self, f: int, p: int, session: int) -> None:
        rep = self._follower_heard(f, p, session)
        if rep is None:
            return
        self.timer(f, float(self.broker_cfg["replica.fetch.backoff.ms"]), self._follower_retry, rep, session)

    def _follower_retry(self, rep: Replica, session: int) -> None:
        if rep.fetch_session == session and not rep.is_leader and rep.leader >= 0:
            self._follower_resend(rep)

    def follower_restart_log_at(self, f: int, p: int, session: int, start: int) -> None:
        """truncateFullyAndStartAt: the leader no longer has what follows our log; start over at its log start."""
        rep = self._follower_heard(f, p, session)
        if rep is None:
            return
        rep.retired.extend(rep.log)
        rep.truncate_to(rep.log_start_offset)
        rep.log_start_offset = rep.log_end_offset = start
        rep.high_watermark = max(rep.high_watermark, start)
        self.event("truncation", p, f, f"below the leader's log start: log restarts at {start}")
        self.follower_fetch(rep)

    def follower_handle_out_of_range(self, f: int, p: int, session: int, leader_leo: int) -> None:
        rep = self._follower_heard(f, p, session)
        if rep is None:
            return
        self.truncate_replica(rep, leader_leo, "offset out of range: to leader's log end offset")
        self.follower_fetch(rep)

    # ---- ISR ----------------------------------------------------------------

    def leader_shrink_isr(self, b: int) -> None:
        """The periodic isr-expiration task of broker b."""
        now = self.kernel.now
        rule = self.lag_rule
        if not self.quorum:
            for p in self.partitions_of[b]:
                rep = self.replicas[p][b]
                if not rep.is_leader:
                    continue
                out = [f for f in rep.isr if f != b and rule.out_of_sync(rep, f, now)]
                if out and self.controller_alter_isr(rep, rep.isr.difference(out)):
                    self.stats["isr_shrinks"] += 1
                    self.event("isr_shrink", p, b, f"removed {sorted(out)}; isr now {sorted(rep.isr)}")
                    self.leader_advance_high_watermark(rep)
                    self.note_availability()
        self.timer(b, rule.check_every_ms, self.leader_shrink_isr, b)

    def leader_expand_isr(self, rep: Replica, f: int) -> None:
        if self.controller_alter_isr(rep, rep.isr | {f}):
            self.stats["isr_expands"] += 1
            self.event("isr_expand", rep.partition, rep.broker, f"added {f}; isr now {sorted(rep.isr)}")
            self.leader_advance_high_watermark(rep)
            self.note_availability()

    # ---- leadership changes -----------------------------------------------------

    def broker_handle_leader_and_isr(self, b: int, p: int, leader: int, epoch: int, isr: tuple) -> None:
        """The controller's LeaderAndIsr request reaches broker b."""
        rep = self.replicas[p][b]
        if epoch < rep.leader_epoch:
            return  # stale
        if leader == b:
            if rep.is_leader and epoch == rep.leader_epoch:
                rep.isr = set(isr)  # an ISR change made by the controller
                self.leader_advance_high_watermark(rep)
            else:
                self.become_leader(rep, epoch, isr)
        elif rep.is_leader or rep.leader != leader or epoch != rep.leader_epoch:
            self.become_follower_and_truncate(rep, leader, epoch)
        self.note_availability()

    def become_leader(self, rep: Replica, epoch: int, isr: tuple) -> None:
        now = self.kernel.now
        rep.is_leader = True
        rep.leader = rep.broker
        rep.leader_epoch = epoch
        rep.fetch_session += 1
        rep.reset_leader_state()
        rep.isr = set(isr)
        rep.epoch_start_offset = rep.log_end_offset
        for f in self.partitions[rep.partition].replicas:
            rep.last_caught_up_ms[f] = now
            rep.last_fetch_ms[f] = now
        if self.quorum:  # KRaft-style: a leader opens its epoch with a control record
            base = rep.log_end_offset
            rep.append((base, base + 1, epoch, CONTROL), now)
        self.event("become_leader", rep.partition, rep.broker, f"epoch {epoch}, LEO {rep.log_end_offset}, HW {rep.high_watermark}")
        self.leader_advance_high_watermark(rep)

    def _resign(self, rep: Replica) -> None:
        """Stop leading: waiting produce requests are answered NOT_LEADER_OR_FOLLOWER."""
        if rep.is_leader:
            for _, b, attempt, _ in rep.pending:
                self.send(rep.broker, CLIENT, self.producer_handle_response, (b, attempt, NOT_LEADER, -1))
            self.leader_release_consumers(rep, rep.broker)
            rep.reset_leader_state()
            rep.is_leader = False

    def become_follower_and_truncate(self, rep: Replica, leader: int, epoch: int) -> None:
        self._resign(rep)
        rep.leader = leader
        rep.leader_epoch = epoch
        rep.fetch_session += 1
        rep.awaiting_epoch = False
        rep.last_heard_ms = self.kernel.now
        if leader >= 0:
            self.truncation.begin(self, rep)

    def truncate_replica(self, rep: Replica, offset: int, why: str) -> int:
        """Cut a replica's log at `offset`; an event says how much went, and how much of it was committed."""
        if offset >= rep.log_end_offset:
            return 0
        i = rep.entry_index(offset)
        committed = self.b_committed
        gone = sum(self.b_count[e[3]] for e in rep.log[i:] if e[3] >= 0 and committed[e[3]])
        removed = rep.truncate_to(offset)
        self.stats["truncated_offsets"] += removed
        detail = f"{why}: removed {removed} offsets, LEO now {rep.log_end_offset}"
        if gone:
            detail += f"; {gone} of them committed"
            self.stats["committed_records_truncated"] += gone
        self.event("truncation", rep.partition, rep.broker, detail)
        return removed

    def leader_handle_epoch_query(self, broker: int, p: int, f: int, epoch: int, session: int) -> None:
        """OffsetsForLeaderEpoch: where does `epoch` end in the leader's log?"""
        rep = self.replicas[p][broker]
        if not rep.is_leader:
            self.send(broker, f, self.follower_handle_fetch_error, (f, p, session))
            return
        found, end = rep.end_offset_for_epoch(epoch)
        self.send(broker, f, self.follower_handle_epoch_answer, (f, p, session, epoch, found, end))

    def follower_handle_epoch_answer(self, f: int, p: int, session: int, asked: int, epoch: int, end: int) -> None:
        rep = self._follower_heard(f, p, session)
        if rep is None:
            return
        rep.awaiting_epoch = False
        if epoch < 0:  # UNDEFINED: the leader has no epoch this old; fall back to the HW
            target = rep.high_watermark
        else:
            own_end = rep.log_end_offset  # KIP-279: where that epoch ends in our log: our first later epoch starts
            for base, _, e, _ in reversed(rep.log):
                if e <= epoch:
                    break
                own_end = base
            target = min(end, own_end)
        self.truncate_replica(rep, target, f"to end of leader epoch {epoch}")
        if 0 <= epoch != asked and rep.log and rep.last_epoch() > epoch:
            self.follower_query_epoch(rep)  # KIP-279: ask again with our new last epoch until the leader knows it
            return
        self.follower_fetch(rep)
