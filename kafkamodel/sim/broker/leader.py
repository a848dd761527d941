"""The leader replica's own state: becoming and ceasing to be leader, the HW, the ISR, and its answer to
OffsetsForLeaderEpoch (Kafka's Partition, as the leader).

Transitions are named after Kafka's TLA+ specification (hachikuji/kafka-specification, KafkaReplication.tla):
``become_leader`` (BecomeLeader), ``leader_advance_high_watermark`` (LeaderIncHighWatermark),
``leader_shrink_isr`` (LeaderShrinkIsr), ``leader_expand_isr`` (LeaderExpandIsr). What depends on the
replication mode (the HW rule, who counts, the epoch marker) is asked of ``modes``; when a follower is out of
sync, of ``lag``. The requests a leader serves are apart: produce (``produce``), follower fetches
(``sessions``), consumer fetches (``consumer_fetch``).
"""

from __future__ import annotations

from bisect import bisect_right

from ..protocol import NONE, NOT_LEADER_OR_FOLLOWER, EpochEndOffset
from ..results.measures import BECOME_LEADER, ISR_EXPAND, ISR_SHRINK
from ..state import Replica
from ..storage.log import CONTROL


class LeaderRole:
    """Every broker's leader replicas."""

    MESSAGES = ("handle_epoch_query",)  # through the server
    TIMERS = ("leader_shrink_isr",)

    def __init__(self, sim):
        self.kernel = sim.kernel
        self.timer = sim.transport.timer
        self.replicas = sim.replicas
        self.replicas_of = sim.replicas_of  # broker -> its replicas, in partitions_of's order
        self.batches = sim.batches
        self.mode = sim.mode
        self.new_high_watermark = sim.mode.new_high_watermark  # the mode's HW rule, asked at every append
        self.lag_rule = sim.lag_rule
        self.epoch_answer = getattr(sim.truncation, "answer", None)  # OffsetsForLeaderEpoch, as the version answers
        self.counters = sim.recorder.counters
        self.event = sim.recorder.event
        self.note_availability = sim.availability.note
        # 0.8.2 (KAFKA-1430): a moving HW answers parked consumer fetches; before, an acks=-1 acknowledgement does
        self.hw_completes_fetch = sim.settings.kafka.hw_completes_delayed_fetch
        self.hw_ends_long_poll = sim.settings.kafka.hw_ends_follower_long_poll  # 2.4-2.5 (KIP-392, until KAFKA-9952)
        # wired
        self.server = self.produce = self.sessions = self.consumer_fetch = self.follower = None
        self.controller_alter_isr = None
        self.release_consumers = None  # wired: where faults find the consumer fetches a dead leader answers

    def wire(self, server, produce, sessions, consumer_fetch, follower, controller) -> None:
        self.server, self.produce, self.sessions, self.follower = server, produce, sessions, follower
        self.consumer_fetch = consumer_fetch
        self.controller_alter_isr = controller.alter_isr
        self.release_consumers = consumer_fetch.release

    # ---- the high watermark --------------------------------------------------------------------------------------

    def leader_advance_high_watermark(self, rep: Replica) -> None:
        """LeaderIncHighWatermark, as the mode's rule allows (Kafka's maybeIncrementLeaderHW): what it newly covers
        is committed; followers learn it, parked consumer fetches and acks=all requests it satisfies are answered."""
        hw = self.new_high_watermark(rep)
        old = rep.high_watermark
        if hw <= old:
            return
        rep.high_watermark = hw
        log = rep.log
        bases = log.bases
        n = log.rows
        # the entries it newly covers, from the one holding the old HW (Log.entry_index's; the old HW is below
        # the LEO, which the HW never passes): usually one or two, the old HW at one of the last entries' bases
        i = n - 1
        if i > 0 and bases[i] > old:
            i = bisect_right(bases, old, 0, i) - 1
            if i < 0:
                i = 0
        if i >= 0 and bases[i] < hw:
            ids = log.batch_ids
            batches = self.batches
            visible = batches.visible_at  # (0 until committed: Batches.committed)
            at = 0  # this instant's index in the batch table's visible instants, once a batch needs it
            while True:
                b = ids[i]
                if b >= 0 and not visible[b]:
                    if not at:
                        at = batches.visible_index(self.kernel.now)
                    visible[b] = at
                i += 1
                if i == n or bases[i] >= hw:
                    break
        lead = rep.lead
        p = rep.partition  # the followers' sessions learn it with their next answer (it does not end a long poll)
        for s in lead.sessions.values():
            s.dirty[p] = True
        if self.hw_ends_long_poll:  # 2.4-2.5: parked follower fetches answer with it now (DelayedFetch's Case H)
            self.sessions.hw_moved(lead)
        if lead.consumer_parked:
            if self.hw_completes_fetch:
                self.consumer_fetch.hw_moved(rep)
            elif lead.pending:  # 0.8.1: each acknowledged acks=-1 batch counts its bytes for the parked fetches
                acked = sum(self.batches.bytes[dp.results[i][0]] for end, _, dp, i in lead.pending if end <= hw)
                if acked:
                    self.consumer_fetch.produced(rep, acked)
        if lead.pending:
            self.produce.complete_delayed(rep, hw)

    # ---- the ISR -------------------------------------------------------------------------------------------------

    def leader_shrink_isr(self, b: int) -> None:
        """LeaderShrinkIsr: broker b's periodic isr-expiration task (Kafka's maybeShrinkIsr)."""
        now = self.kernel.now
        rule = self.lag_rule
        if self.mode.keeps_isr:
            for rep in self.replicas_of(b):
                if not rep.is_leader:
                    continue
                isr = rep.lead.isr
                out = [f for f in isr if f != b and rule.out_of_sync(rep, f, now)]
                if out and self.controller_alter_isr(rep, isr.difference(out)):
                    self.counters.isr_shrinks += 1
                    self.event(ISR_SHRINK, rep.partition, b, f"removed {sorted(out)}; isr now {sorted(rep.lead.isr)}")
                    self.leader_advance_high_watermark(rep)
                    self.note_availability((rep.partition,))
        self.timer(b, rule.check_every_ms, self.leader_shrink_isr, b)

    def leader_expand_isr(self, rep: Replica, f: int) -> None:
        """LeaderExpandIsr: a follower caught up to the HW (and the epoch's start) rejoins (maybeExpandIsr)."""
        if self.controller_alter_isr(rep, rep.lead.isr | {f}):
            self.counters.isr_expands += 1
            self.event(ISR_EXPAND, rep.partition, rep.broker, f"added {f}; isr now {sorted(rep.lead.isr)}")
            self.leader_advance_high_watermark(rep)
            self.note_availability((rep.partition,))
        elif f in rep.lead.sessions:  # refused: it asks again at the follower's next fetch
            rep.lead.sessions[f].retry_expand.add(rep.partition)

    # ---- OffsetsForLeaderEpoch ----------------------------------------------------------------------------------

    def handle_epoch_query(self, key: tuple, req: int, entries: list) -> None:
        """Where each asked epoch ends in the leader's log (Kafka's lastOffsetForLeaderEpoch), or NOT_LEADER."""
        ready = self.server.departure
        leader, follower, _ = key
        answers = []
        for p, epoch in entries:
            rep = self.replicas[p][leader]
            if not rep.is_leader:
                answers.append(EpochEndOffset(p, NOT_LEADER_OR_FOLLOWER, epoch, -1, -1))
                continue
            found, end = self.epoch_answer(rep, epoch)
            answers.append(EpochEndOffset(p, NONE, epoch, found, end))
        self.server.respond(leader, ready, follower, self.follower.handle_epoch_answer, (key, req, answers))

    # ---- changes of role ----------------------------------------------------------------------------------------

    def become_leader(self, rep: Replica, epoch: int, isr: tuple) -> None:
        """BecomeLeader (Kafka's Partition.makeLeader): the epoch starts at the LEO; every follower counts as
        caught up now."""
        now = self.kernel.now
        if not rep.log.timed:  # (follower_append_times_read: no consumers, faults, operations, retention)
            raise RuntimeError(f"partition {rep.partition}: broker {rep.broker}'s replica, a follower that keeps no "
                               "append times, was elected in a run that was to elect no one after t=0")
        rep.is_leader = True
        rep.leader = rep.broker
        rep.leader_epoch = epoch
        self.follower.stop_fetching(rep)
        lead = rep.start_leading(now)
        lead.set_isr(isr)
        log = rep.log
        lead.epoch_start_offset = log.log_end_offset  # (its followers count as caught up and fetched now: since_ms)
        if self.mode.opens_epoch_with_marker:
            base = log.log_end_offset
            log.append(base, base + 1, epoch, CONTROL, now)  # the epoch marker
        if self.mode.durable:  # a new leader starts from a flushed log (its fsync is not timed here)
            log.flushed(log.begin_flush())
        self.event(BECOME_LEADER, rep.partition, rep.broker,
                   f"epoch {epoch}, LEO {log.log_end_offset}, HW {rep.high_watermark}")
        self.leader_advance_high_watermark(rep)

    def resign(self, rep: Replica) -> None:
        """Stop leading: waiting produce requests and parked consumer fetches hear NOT_LEADER_OR_FOLLOWER."""
        if rep.is_leader:
            self.produce.fail_delayed(rep)
            self.consumer_fetch.release(rep, rep.broker)
            self.sessions.resigned(rep)
            rep.stop_leading()
            rep.is_leader = False
