"""The leader's side of produce requests (with idempotence and the acks=all purgatory) and of consumer
fetches; the HW and the ISR as the leader keeps them. Follower fetches are served by ``sessions``.

Transitions are named as in Kafka's TLA+ specification
(``leader_handle_produce``, ``leader_advance_high_watermark``,
``leader_shrink_isr``, ``leader_expand_isr``, ``become_leader``). What
depends on the replication mode (the NOT_ENOUGH_REPLICAS check, the HW
rule, who counts, the epoch marker) is asked of ``modes``; when a follower is
out of sync, of ``lag``.
"""

from __future__ import annotations

from bisect import insort
from itertools import count

from ...config.settings import ACKS_ALL
from ..protocol import (
    CLIENT,
    CONSUMER_CONN,
    NONE,
    NOT_ENOUGH_REPLICAS,
    NOT_LEADER_OR_FOLLOWER,
    OFFSET_OUT_OF_RANGE,
    OUT_OF_ORDER_SEQUENCE_NUMBER,
)
from ..results.measures import BECOME_LEADER, ISR_EXPAND, ISR_SHRINK
from ..state import Replica
from ..storage.log import CONTROL

RESET = -1  # a consumer position still to be set by auto.offset.reset


class DelayedProduce:
    """An acks=all produce request in purgatory: answered as a whole once every batch in it is committed
    (or failed), as Kafka's DelayedProduce."""

    __slots__ = ("broker", "producer", "epoch", "req", "results", "remaining", "sealed")

    def __init__(self, broker: int, producer: int, epoch: int, req: int, n: int):
        self.broker = broker
        self.producer = producer
        self.epoch = epoch  # the producer's connection it came on
        self.req = req
        self.results: list = [None] * n  # per batch: (batch, attempt, error, base offset)
        self.remaining = 0  # batches still waiting for the HW
        self.sealed = False  # every batch of the request has been handled


class LeaderRole:
    """Every broker's leader replicas."""

    MESSAGES = ("handle_produce", "handle_consumer_fetch")  # through the server
    TIMERS = ("shrink_isr", "_produce_handled", "_consumer_wait_expired")

    def __init__(self, sim):
        self.kernel = sim.kernel
        self.send = sim.transport.send
        self.timer = sim.transport.timer
        self.replicas = sim.replicas
        self.partitions = sim.partitions
        self.partitions_of = sim.partitions_of
        self.batches = sim.batches
        self.producer_settings = sim.settings.producers
        self.producer_nodes = [sim.layout.client_node(p.client_rack) for p in sim.settings.producers]
        self.mode = sim.mode
        # the mode's rules asked at every append and fetch, bound once
        self.refuses_acks_all, self.append_commits = sim.mode.refuses_acks_all, sim.mode.append_commits
        self.new_high_watermark = sim.mode.new_high_watermark
        self.lag_rule = sim.lag_rule
        self.counters = sim.recorder.counters
        self.event = sim.recorder.event
        self.note_availability = sim.availability.note
        self.flush_messages = sim.flush_messages  # fsync after this many appended records (0: never forced)
        self.fsync = sim.fsync  # one fsync's duration, draw after draw
        self.retention_on = sim.retention_on  # keep segments (retention can act within the run)
        self.track_producers = any(p.enable_idempotence for p in sim.settings.producers)  # brokers keep producer state
        self.seq = count()  # ties in the purgatory resolve by arrival
        # wired
        self.server = None
        self.producer_handle_response = None
        self.sessions = self.follower = None
        self.controller_alter_isr = None
        self.groups = None
        self.consumer_handle_fetch = None

    def wire(self, server, producer, sessions, follower, controller, consumers) -> None:
        self.server = server
        self.follower = follower
        self.producer_handle_response = producer.handle_response
        self.sessions = sessions
        self.controller_alter_isr = controller.alter_isr
        self.groups = consumers.groups
        self.consumer_handle_fetch = consumers.handle_fetch

    # ---- produce ----------------------------------------------------------------------------------------------

    def handle_produce(self, broker: int, producer: int, epoch: int, req: int, entries: list) -> None:
        """leader_handle_produce: a produce request (one batch per partition) read by a handler thread."""
        ready = self.server.departure
        acks = self.producer_settings[producer].acks
        dp = DelayedProduce(broker, producer, epoch, req, len(entries)) if acks == ACKS_ALL else None
        results = dp.results if dp is not None else [None] * len(entries)
        woken: set = set()  # parked follower fetches that these appends give records to
        flushes: list = []  # (replica, offset) of the logs these appends fsync (log.flush.interval.messages)
        for i, (b, attempt) in enumerate(entries):
            results[i] = self._append(broker, b, attempt, acks, dp, i, woken, flushes)
        if flushes:  # Log.append -> flush: the handler thread fsyncs each log, then the request goes on
            fsync = sum(next(self.fsync) for _ in flushes)
            if fsync > 0.0:
                self.server.hold(broker, ready, fsync)
                self.timer(broker, fsync, self._produce_handled, broker, producer, epoch, req, results, dp, woken,
                           flushes, ready + fsync)
                return
        self._produce_handled(broker, producer, epoch, req, results, dp, woken, flushes, ready)

    def _produce_handled(self, broker, producer, epoch, req, results, dp, woken, flushes, ready) -> None:
        """The request's appends are done (and fsynced): parked fetches wake, and it is answered or waits."""
        for rep, offset in flushes:
            rep.log.flushed(offset)
            if rep.is_leader and self.mode.durable:  # the leader counts itself once durable
                self.advance_high_watermark(rep)
        if woken:
            self.sessions.wake(woken)
        if dp is not None:
            dp.sealed = True
            if dp.remaining:
                return  # in purgatory: answered when the last batch is committed
        conn = (producer, epoch, broker)
        if self.producer_settings[producer].acks == 0:  # no answer: the next request may start
            self.server.unmute(broker, conn, ready)
            return
        self.server.respond(broker, ready, self.producer_nodes[producer], self.producer_handle_response,
                            (producer, broker, epoch, req, results), 0, False, conn)

    def _append(self, broker: int, b: int, attempt: int, acks: int, dp, i: int, woken: set, flushes: list) -> tuple:
        """One batch of a produce request: appended, refused, or recognised as a resend."""
        batches = self.batches
        rep = self.replicas[batches.partition[b]][broker]
        if not rep.is_leader:
            return (b, attempt, NOT_LEADER_OR_FOLLOWER, -1)
        if acks == ACKS_ALL and self.refuses_acks_all(rep):
            self.counters.not_enough_replicas_errors += 1
            return (b, attempt, NOT_ENOUGH_REPLICAS, -1)
        if self.producer_settings[batches.producer[b]].enable_idempotence:
            kind, base, end = self._check_sequence(rep, b)
            if kind == "gap":
                return (b, attempt, OUT_OF_ORDER_SEQUENCE_NUMBER, -1)
            if kind == "dup" and dp is not None and rep.high_watermark < end:
                self._wait(rep, dp, i, end, (b, attempt, NONE, base))
                return dp.results[i]
            if kind is not None:
                return (b, attempt, NONE, base)
        log = rep.log
        now = self.kernel.now
        base = log.log_end_offset
        end = base + batches.count[b]
        entry = (base, end, rep.leader_epoch, b)
        log.append(entry, now)
        if self.retention_on:
            log.segment_append(entry, now)
        if self.track_producers:
            self.track_producer(log, entry)
        if self.flush_messages and log.needs_flush(self.flush_messages):
            flushes.append((rep, log.begin_flush()))
        result = (b, attempt, NONE, base)
        if dp is not None:
            self._wait(rep, dp, i, end, result)
        self.sessions.appended(rep, woken)
        if self.append_commits(rep):
            self.advance_high_watermark(rep)
        return result

    def _wait(self, rep: Replica, dp: DelayedProduce, i: int, end: int, result: tuple) -> None:
        dp.results[i] = result
        dp.remaining += 1
        insort(rep.lead.pending, (end, next(self.seq), dp, i))

    def _settle(self, dp: DelayedProduce, i: int, error: int) -> None:
        """A batch of a request in purgatory is done (committed, or its leader stepped down)."""
        if error:
            b, attempt, _, _ = dp.results[i]
            dp.results[i] = (b, attempt, error, -1)
        dp.remaining -= 1
        if dp.sealed and not dp.remaining:
            self.server.respond(dp.broker, self.kernel.now, self.producer_nodes[dp.producer], self.producer_handle_response,
                                (dp.producer, dp.broker, dp.epoch, dp.req, dp.results), 0, False,
                                (dp.producer, dp.epoch, dp.broker))

    # ---- idempotent producer state ---------------------------------------------------------------------------

    def track_producer(self, log, entry: tuple) -> None:
        """Remember the entry among its producer's last 5 in this log (sequence numbers travel with the log)."""
        if log.producers is None:
            return  # rebuilt lazily from the log when next needed
        b = entry[3]
        if b >= 0:
            batches = self.batches
            producer = batches.producer[b]
            tail = log.producers.get(producer)
            if tail is None:
                tail = log.producers[producer] = []
            tail.append((b, batches.epoch[b], batches.seq[b], entry[0], entry[1]))
            if len(tail) > 5:
                del tail[0]

    def _check_sequence(self, rep: Replica, b: int) -> tuple:
        """(None, -1, -1) to append; else why not: ('dup', base, end) | ('old', -1, -1) | ('gap', -1, -1)."""
        batches = self.batches
        log = rep.log
        if log.producers is None:  # after a truncation: scan the log back, as a broker reloads its snapshot
            log.producers = {}
            for entry in log.entries:
                self.track_producer(log, entry)
        tail = log.producers.get(batches.producer[b], ())  # its producer's last entries here
        epoch, seq = batches.epoch[b], batches.seq[b]
        for entry in tail:  # (batch, epoch, seq, base, end)
            if entry[2] == seq and entry[1] == epoch:
                return ("dup", entry[3], entry[4])  # a resend of a batch it has: answer with its offsets
        if not tail or epoch > tail[-1][1]:
            # a producer it does not know, or a new epoch: the sequence must start at 0
            return (None, -1, -1) if seq == 0 else ("gap", -1, -1)
        if epoch < tail[-1][1]:
            return ("gap", -1, -1)  # a fenced (older) epoch: the client resends it in the new one
        last = tail[-1][2]
        if seq == last + 1:
            return (None, -1, -1)
        if seq <= last:
            return ("old", -1, -1)  # DUPLICATE_SEQUENCE_NUMBER: older than the 5 it remembers
        return ("gap", -1, -1)  # OUT_OF_ORDER_SEQUENCE_NUMBER: an earlier batch is missing

    # ---- the high watermark --------------------------------------------------------------------------------------

    def advance_high_watermark(self, rep: Replica) -> None:
        """leader_advance_high_watermark: as the mode's rule allows; what it newly covers is committed,
        parked consumer fetches are answered, and acks=all requests it satisfies are answered."""
        hw = self.new_high_watermark(rep)
        old = rep.high_watermark
        if hw <= old:
            return
        rep.high_watermark = hw
        now = self.kernel.now
        log = rep.log
        entries = log.entries
        n = len(entries)
        # the HW usually stood at the last entry's base: found without a search (Log.entry_index)
        i = n - 1 if n and entries[-1][0] == old else log.entry_index(old)
        visible, committed = self.batches.visible_ms, self.batches.committed
        while i < n and entries[i][0] < hw:
            b = entries[i][3]
            if b >= 0 and not committed[b]:
                committed[b] = True
                visible[b] = now
            i += 1
        lead = rep.lead
        self.sessions.hw_moved(rep)
        if lead.consumer_parked:
            self.wake_consumers(rep)
        pending = lead.pending
        if pending and pending[0][0] <= hw:
            k = 0
            while k < len(pending) and pending[k][0] <= hw:
                k += 1
            if k == len(pending):  # all of them (the usual case): no copies
                done, lead.pending = pending, []
            else:
                done, lead.pending = pending[:k], pending[k:]
            error = NOT_ENOUGH_REPLICAS if self.mode.committed_too_few(rep) else NONE  # before 3.7: ..._AFTER_APPEND
            for _, _, dp, i in done:
                self._settle(dp, i, error)

    # ---- the ISR -------------------------------------------------------------------------------------------------

    def shrink_isr(self, b: int) -> None:
        """leader_shrink_isr: broker b's periodic isr-expiration task."""
        now = self.kernel.now
        rule = self.lag_rule
        if self.mode.keeps_isr:
            for p in self.partitions_of[b]:
                rep = self.replicas[p][b]
                if not rep.is_leader:
                    continue
                isr = rep.lead.isr
                out = [f for f in isr if f != b and rule.out_of_sync(rep, f, now)]
                if out and self.controller_alter_isr(rep, isr.difference(out)):
                    self.counters.isr_shrinks += 1
                    self.event(ISR_SHRINK, p, b, f"removed {sorted(out)}; isr now {sorted(rep.lead.isr)}")
                    self.advance_high_watermark(rep)
                    self.note_availability()
        self.timer(b, rule.check_every_ms, self.shrink_isr, b)

    def expand_isr(self, rep: Replica, f: int) -> None:
        """leader_expand_isr: a follower caught up to the HW (and the epoch's start) rejoins."""
        if self.controller_alter_isr(rep, rep.lead.isr | {f}):
            self.counters.isr_expands += 1
            self.event(ISR_EXPAND, rep.partition, rep.broker, f"added {f}; isr now {sorted(rep.lead.isr)}")
            self.advance_high_watermark(rep)
            self.note_availability()

    # ---- changes of role ----------------------------------------------------------------------------------------

    def become_leader(self, rep: Replica, epoch: int, isr: tuple) -> None:
        now = self.kernel.now
        rep.is_leader = True
        rep.leader = rep.broker
        rep.leader_epoch = epoch
        self.follower.stop_fetching(rep)
        lead = rep.start_leading(now)
        lead.isr = set(isr)
        log = rep.log
        lead.epoch_start_offset = log.log_end_offset
        for f in self.partitions[rep.partition].replicas:
            lead.last_caught_up_ms[f] = now
            lead.last_fetch_ms[f] = now
        if self.mode.opens_epoch_with_marker:
            base = log.log_end_offset
            log.append((base, base + 1, epoch, CONTROL), now)
        if self.mode.durable:  # a new leader starts from a flushed log (its fsync is not timed here)
            log.flushed(log.begin_flush())
        self.event(BECOME_LEADER, rep.partition, rep.broker,
                   f"epoch {epoch}, LEO {log.log_end_offset}, HW {rep.high_watermark}")
        self.advance_high_watermark(rep)

    def resign(self, rep: Replica) -> None:
        """Stop leading: waiting produce requests and parked consumer fetches hear NOT_LEADER_OR_FOLLOWER."""
        if rep.is_leader:
            pending, rep.lead.pending = rep.lead.pending, []
            for _, _, dp, i in pending:
                self._settle(dp, i, NOT_LEADER_OR_FOLLOWER)
            self.release_consumers(rep, rep.broker)
            self.sessions.resigned(rep)
            rep.stop_leading()
            rep.is_leader = False

    # ---- consumer fetches ------------------------------------------------------------------------------------------

    def handle_consumer_fetch(self, broker, gi, mi, token, fid, parts) -> None:
        """A consumer's fetch for its partitions led here, read by a handler thread: answered at once if it
        finds fetch.min.bytes below the HW (or an error), else when the HW brings them, or after fetch.max.wait.ms."""
        fetch = ConsumerFetch(broker, gi, mi, token, fid, parts)
        ready = self.server.departure
        answer, found = self._read_consumer(fetch)
        if found >= self.groups[gi].config.fetch_min_bytes or any(e for *_, e in answer):
            self._answer_consumer(fetch, answer, ready, broker)
            return
        for p, _ in parts:
            self.replicas[p][broker].lead.consumer_parked[fetch] = True
        self.kernel.schedule(self.kernel.now + self.groups[gi].config.fetch_max_wait_ms, self._consumer_wait_expired,
                             fetch)

    def _read_consumer(self, fetch: "ConsumerFetch") -> tuple[list, int]:
        """Per partition (partition, offset, slices, next offset, error): whole batches below the HW, up to
        max.partition.fetch.bytes each and fetch.max.bytes in all (the first batch always)."""
        cfg = self.groups[fetch.gi].config
        bytes_of = self.batches.bytes
        budget = cfg.fetch_max_bytes
        answer, total = [], 0
        for p, pos in fetch.parts:
            rep = self.replicas[p][fetch.broker]
            if not rep.is_leader:
                answer.append((p, pos, [], pos, NOT_LEADER_OR_FOLLOWER))
                continue
            log = rep.log
            if pos == RESET:
                pos = rep.high_watermark if cfg.auto_offset_reset == "latest" else log.log_start_offset
            if pos < log.log_start_offset or pos > log.log_end_offset:
                answer.append((p, pos, [], pos, OFFSET_OUT_OF_RANGE))
                continue
            hw = rep.high_watermark
            entries = log.entries
            i = log.entry_index(pos)
            slices, nxt, size = [], pos, 0
            cap = min(cfg.max_partition_fetch_bytes, budget)
            while i < len(entries) and entries[i][0] < hw:
                base, end, _, b = entries[i]
                n = bytes_of[b] if b >= 0 else 0
                if size + n > cap and (size or total):
                    break
                lo, hi = max(base, nxt), min(end, hw)
                if b >= 0:
                    slices.append((b, lo - base, hi - base, lo))
                size += n
                nxt = hi
                i += 1
            total += size
            budget -= size
            answer.append((p, pos, slices, nxt, NONE))
        return answer, total

    def _answer_consumer(self, fetch: "ConsumerFetch", answer: list, ready: float, src: int) -> None:
        fetch.done = True
        for p, _ in fetch.parts:
            lead = self.replicas[p][fetch.broker].lead
            if lead is not None:
                lead.consumer_parked.pop(fetch, None)
        nbytes = sum(self.batches.bytes[s[0]] for *_, slices, _, _ in answer for s in slices)
        args = (fetch.gi, fetch.mi, fetch.token, fetch.fid, fetch.broker, answer)
        node = self.groups[fetch.gi].node
        if src == fetch.broker:
            self.server.respond(src, ready, node, self.consumer_handle_fetch, args, nbytes=nbytes, kind=CONSUMER_CONN)
        else:  # the dead process's kernel resets the connection
            self.send(src, node, self.consumer_handle_fetch, args, conn=CONSUMER_CONN)

    def wake_consumers(self, rep: Replica) -> None:
        """The HW moved: parked consumer fetches that now find fetch.min.bytes are answered."""
        now = self.kernel.now
        for fetch in list(rep.lead.consumer_parked):
            if fetch.done:
                continue
            answer, found = self._read_consumer(fetch)
            if found >= self.groups[fetch.gi].config.fetch_min_bytes:
                self._answer_consumer(fetch, answer, now, fetch.broker)

    def release_consumers(self, rep: Replica, src: int) -> None:
        """The leader steps down or its process dies: parked consumer fetches are answered now, this partition
        with NOT_LEADER_OR_FOLLOWER (from `src`: the broker, or CLIENT for a connection its dead process's
        kernel resets)."""
        for fetch in list(rep.lead.consumer_parked):
            if fetch.done:
                continue
            answer = [(p, pos, [], pos, NOT_LEADER_OR_FOLLOWER) for p, pos in fetch.parts]
            self._answer_consumer(fetch, answer, self.kernel.now, src)
        rep.lead.consumer_parked = {}

    def _consumer_wait_expired(self, fetch: "ConsumerFetch") -> None:
        if not fetch.done:
            answer, _ = self._read_consumer(fetch)
            self._answer_consumer(fetch, answer, self.kernel.now, fetch.broker)


class ConsumerFetch:
    """A consumer's fetch at one leader broker (waiting in purgatory while it finds too little)."""

    __slots__ = ("broker", "gi", "mi", "token", "fid", "parts", "done")

    def __init__(self, broker: int, gi: int, mi: int, token: int, fid: int, parts: list):
        self.broker, self.gi, self.mi, self.token, self.fid = broker, gi, mi, token, fid
        self.parts = parts  # (partition, offset) asked
        self.done = False
