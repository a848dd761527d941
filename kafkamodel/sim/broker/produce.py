"""The leader's side of produce requests: Kafka's ReplicaManager.appendRecords and its produce purgatory.

A request (one batch per partition) is read by a handler thread; each batch
is refused (not the leader; acks=all below min.insync.replicas, as the mode
says; an idempotent batch out of sequence), recognised as a resend, or
appended (KafkaReplication.tla's ``LeaderWrite``). Appends that reach
``log.flush.interval.messages`` are fsynced by the handler thread before the
request goes on. An acks=all request then waits in purgatory
(``DelayedProduce``) until the HW covers every batch it appended, and is
answered as a whole; acks=1 is answered at once, acks=0 not at all.
"""

from __future__ import annotations

from bisect import insort
from itertools import count

from ...config.settings import ACKS_ALL
from ..protocol import (
    NONE,
    NOT_ENOUGH_REPLICAS,
    NOT_LEADER_OR_FOLLOWER,
    OUT_OF_ORDER_SEQUENCE_NUMBER,
)
from ..state import Replica
from ..storage import producer_state as sequence
from ..storage.producer_state import ProducerStateManager


class DelayedProduce:
    """An acks=all produce request in purgatory: answered as a whole once every batch in it is committed
    (or failed), as Kafka's DelayedProduce."""

    __slots__ = ("broker", "producer", "epoch", "req", "results", "remaining", "sealed")

    def __init__(self, broker: int, producer: int, epoch: int, req: int, n: int):
        self.broker = broker
        self.producer = producer
        self.epoch = epoch  # the producer's connection it came on
        self.req = req
        self.results: list = [None] * n  # per batch: its answer (protocol.PRODUCE_PARTITION_RESPONSE)
        self.remaining = 0  # batches still waiting for the HW
        self.sealed = False  # every batch of the request has been handled


class ProduceHandler:
    """Every leader broker's produce requests."""

    MESSAGES = ("handle_produce",)  # through the server
    TIMERS = ("_produce_handled",)

    def __init__(self, sim):
        self.kernel = sim.kernel
        self.timer = sim.transport.timer
        self.replicas = sim.replicas
        self.batches = sim.batches
        self.producer_settings = sim.settings.producers
        self.producer_nodes = [sim.layout.client_node(p.client_rack) for p in sim.settings.producers]
        self.mode = sim.mode
        # the mode's rules asked at every append, bound once
        self.refuses_acks_all, self.append_commits = sim.mode.refuses_acks_all, sim.mode.append_commits
        self.committed_too_few = sim.mode.committed_too_few
        self.counters = sim.recorder.counters
        self.flush_messages = sim.flush_messages  # fsync after this many appended records (0: never forced)
        self.fsync = sim.fsync  # one fsync's duration, draw after draw
        self.caches = sim.caches  # broker -> its page cache and disk
        # LogValidator decompresses a compressed batch to check it: CPU on the handler thread (batches.decompress_ms)
        self.validates_compressed = any(p.compression_type != "none" for p in sim.settings.producers)
        self.cpu_run = sim.cpu.run
        self.retention_on = sim.retention_on  # keep segments (retention can act within the run)
        self.producer_state = ProducerStateManager(sim.batches)
        self.track_producers = any(p.enable_idempotence for p in sim.settings.producers)  # brokers keep producer state
        self.seq = count()  # ties in the purgatory resolve by arrival
        # before 0.8.2 (KAFKA-1430) a produce, not the HW, answers parked consumer fetches (consumer_fetch.produced)
        self.produce_wakes_consumers = not sim.settings.kafka.hw_completes_delayed_fetch
        self.server = self.sessions = self.leader = None  # wired
        self.producer_handle_response = None  # wired: where answers go
        self.current_leader = None  # wired: the replica manager's KIP-951 hint (broker, partition -> leader, epoch)

    def wire(self, server, producer, sessions, leader) -> None:
        self.server, self.sessions, self.leader = server, sessions, leader
        self.producer_handle_response = producer.handle_response

    def handle_produce(self, broker: int, producer: int, epoch: int, req: int, entries: list) -> None:
        """A produce request (one (batch, attempt) per partition) read by a handler thread."""
        ready = self.server.departure
        acks = self.producer_settings[producer].acks
        dp = DelayedProduce(broker, producer, epoch, req, len(entries)) if acks == ACKS_ALL else None
        results = dp.results if dp is not None else [None] * len(entries)
        woken: set = set()  # parked follower fetches that these appends give records to
        flushes: list = []  # (replica, offset) of the logs these appends fsync (log.flush.interval.messages)
        appended_bytes = self._append(broker, producer, entries, acks, dp, results, woken, flushes)
        wait = 0.0
        if self.validates_compressed:  # the handler decompresses each compressed batch it appends (LogValidator)
            cpu = sum(self.batches.decompress_ms(b, producer) for b, _ in entries)  # (a request: one producer's)
            if cpu > 0.0:
                wait = self.cpu_run(broker, ready, cpu) - ready
        if appended_bytes:  # write() into the page cache: throttled when too much of it is dirty
            cache = self.caches[broker]
            now = self.kernel.now
            wait += cache.append(now, appended_bytes)
            if flushes:  # Log.append -> flush: the handler thread fsyncs each log, then the request goes on
                wait += sum(next(self.fsync) for _ in flushes) + cache.fsync(now, appended_bytes)
        elif flushes:
            wait += sum(next(self.fsync) for _ in flushes)
        if wait > 0.0:
            self.server.hold(broker, ready, wait)
            self.timer(broker, wait, self._produce_handled, broker, producer, epoch, req, results, dp, woken,
                       flushes, ready + wait)
            return
        self._produce_handled(broker, producer, epoch, req, results, dp, woken, flushes, ready)

    def _produce_handled(self, broker, producer, epoch, req, results, dp, woken, flushes, ready) -> None:
        """The request's appends are done (and fsynced): parked fetches wake, and it is answered or waits."""
        for rep, offset in flushes:
            rep.log.flushed(offset)
            if rep.is_leader and self.mode.durable:  # the leader counts itself once durable
                self.leader.leader_advance_high_watermark(rep)
        if woken:
            self.sessions.wake(woken)
        if self.produce_wakes_consumers:  # 0.8.1: after the appends, each partition's bytes go to its parked fetches
            self._wake_consumers(broker, results)
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

    def _wake_consumers(self, broker: int, results: list) -> None:
        """0.8.1's KafkaApis.handleProducerRequest: maybeUnblockDelayedFetchRequests for each partition appended."""
        batches, replicas = self.batches, self.replicas
        for b, _, error, _ in results:
            if error == NONE:
                rep = replicas[batches.partition[b]][broker]
                if rep.is_leader and rep.lead.consumer_parked:
                    self.leader.consumer_fetch.produced(rep, batches.bytes[b])

    def _append(self, broker: int, producer: int, entries: list, acks: int, dp, results: list, woken: set,
                flushes: list) -> int:
        """LeaderWrite for each batch of a request: appended, refused, or recognised as a resend; its answer
        (protocol.PRODUCE_PARTITION_RESPONSE) goes into `results`. Returns the bytes appended."""
        batches, replicas = self.batches, self.replicas
        partition_of, count_of, bytes_of = batches.partition, batches.count, batches.bytes
        # what holds for every batch of the request, decided once: the steps a batch takes are bound here (None:
        # not taken), so the usual batch is a few calls
        refuses = self.refuses_acks_all if acks == ACKS_ALL else None
        state = self.producer_state
        admit = state.admit if self.producer_settings[producer].enable_idempotence else None  # check + track
        track = state.track if self.track_producers and admit is None else None
        retention_on, flush_messages = self.retention_on, self.flush_messages
        appended, commits = self.sessions.appended, self.append_commits
        seq = self.seq
        now = self.kernel.now
        total = waiting = 0
        for i, (b, attempt) in enumerate(entries):
            rep = replicas[partition_of[b]][broker]
            if not rep.is_leader:
                results[i] = (b, attempt, NOT_LEADER_OR_FOLLOWER, self.leader_hint(broker, rep.partition))
                continue
            if refuses is not None and refuses(rep):
                self.counters.not_enough_replicas_errors += 1
                results[i] = (b, attempt, NOT_ENOUGH_REPLICAS, -1)
                continue
            log = rep.log
            base = log.log_end_offset
            end = base + count_of[b]
            if admit is not None:
                found = admit(log, b, base, end, True, producer)
                if found is not None:
                    results[i] = self._not_in_sequence(rep, b, attempt, found, dp, i)
                    continue
            elif track is not None:
                track(log, b, base, end, producer)
            log.append(base, end, rep.leader_epoch, b, now)
            total += bytes_of[b]
            if retention_on:
                log.segment_append(base, b, now)
            if flush_messages and log.needs_flush(flush_messages):
                flushes.append((rep, log.begin_flush()))
            results[i] = (b, attempt, NONE, base)
            if dp is not None:  # into the purgatory; it ends past every batch waiting there (they are in the log)
                waiting += 1
                rep.lead.pending.append((end, next(seq), dp, i))
            appended(rep, base, woken)
            if commits(rep):
                self.leader.leader_advance_high_watermark(rep)
        if waiting:  # (counted here: the request is not sealed, so no batch of it settled above answers it)
            dp.remaining += waiting
        return total

    def _not_in_sequence(self, rep: Replica, b: int, attempt: int, found: tuple, dp, i: int) -> tuple:
        """An idempotent batch that is not the next in its producer's sequence (`found`: what
        ProducerStateManager.admit found): refused, or a resend answered with the offsets it was written at (once
        the HW covers them, for acks=all)."""
        outcome, base, end = found
        if outcome == sequence.OUT_OF_ORDER_SEQUENCE_NUMBER:
            return (b, attempt, OUT_OF_ORDER_SEQUENCE_NUMBER, -1)
        if outcome == sequence.DUPLICATE_BATCH and dp is not None and rep.high_watermark < end:
            dp.results[i] = (b, attempt, NONE, base)
            dp.remaining += 1
            insort(rep.lead.pending, (end, next(self.seq), dp, i))
            return dp.results[i]
        return (b, attempt, NONE, base)  # a duplicate: taken as written (with its offsets if remembered)

    # ---- the purgatory ---------------------------------------------------------------------------------------

    def complete_delayed(self, rep: Replica, hw: int) -> None:
        """The HW moved to `hw`: the waiting batches it covers are done (checkAndComplete)."""
        lead = rep.lead
        pending = lead.pending
        if not pending or pending[0][0] > hw:
            return
        if pending[-1][0] <= hw:  # all of them (the usual case): no copies
            done, lead.pending = pending, []
        else:
            k = 1
            while pending[k][0] <= hw:
                k += 1
            done, lead.pending = pending[:k], pending[k:]
        self._settle(done, NOT_ENOUGH_REPLICAS if self.committed_too_few(rep) else NONE)  # before 3.7: ..._AFTER_APPEND

    def leader_hint(self, broker: int, p: int) -> int:
        """KIP-951's current leader of a NOT_LEADER_OR_FOLLOWER answer (-1: none), carried in the answer's
        base-offset field, which an error leaves unused."""
        return self.current_leader(broker, p)[0]

    def fail_delayed(self, rep: Replica) -> None:
        """The replica stops leading: its waiting batches hear NOT_LEADER_OR_FOLLOWER."""
        pending, rep.lead.pending = rep.lead.pending, []
        self._settle(pending, NOT_LEADER_OR_FOLLOWER, self.leader_hint(rep.broker, rep.partition))

    def _settle(self, done: list, error: int, hint: int = -1) -> None:
        """Batches of requests in purgatory are done (committed, or their leader stepped down: `hint`, KIP-951's
        current leader); a request whose last batch this was is answered."""
        for _, _, dp, i in done:
            if error:
                b, attempt, _, _ = dp.results[i]
                dp.results[i] = (b, attempt, error, hint)
            dp.remaining -= 1
            if dp.sealed and not dp.remaining:
                self.server.respond(dp.broker, self.kernel.now, self.producer_nodes[dp.producer],
                                    self.producer_handle_response,
                                    (dp.producer, dp.broker, dp.epoch, dp.req, dp.results), 0, False,
                                    (dp.producer, dp.epoch, dp.broker))
