"""The producer client: sending batches, answers, retries, timeouts.

Batches are fixed before the run (``workload``); here they are sent to the
leader the producer's metadata names, answered or refused, and retried.
Retries of a partition go through one queue per (producer, partition):
while it holds batches, new batches wait behind them and only the oldest is
resent each ``retry.backoff.ms`` (the idempotent producer's in-order resend;
it also keeps a long outage from costing one event per batch per backoff).
"""

from __future__ import annotations

from bisect import insort

import numpy as np

from .workload import ACKS_CODE

# batch states
PENDING, INFLIGHT, ACKED, FAILED = 0, 1, 2, 3
ALL = 2  # acks code for acks=all

# error codes, named as Kafka's errors
NONE = 0
ERRORS = ("NONE", "NOT_LEADER_OR_FOLLOWER", "NOT_ENOUGH_REPLICAS", "REQUEST_TIMED_OUT", "NETWORK_EXCEPTION",
          "DELIVERY_TIMEOUT", "OUT_OF_ORDER_SEQUENCE_NUMBER")
NOT_LEADER, NOT_ENOUGH_REPLICAS, REQUEST_TIMED_OUT, NETWORK_EXCEPTION, DELIVERY_TIMEOUT, OUT_OF_ORDER_SEQUENCE = range(1, 7)

RECONNECT_BACKOFF_MS = 50.0  # reconnect.backoff.ms
RECONNECT_BACKOFF_MAX_MS = 1000.0  # reconnect.backoff.max.ms


class ProducerConfig:
    __slots__ = ("acks", "idempotent", "retries", "backoff", "request_timeout", "delivery_timeout", "max_inflight",
                 "metadata", "queue", "armed", "probe", "node_backoff", "node_failures", "inflight", "blocked", "epoch",
                 "next_seq")

    def __init__(self, cfg: dict, partitions: int, brokers: int):
        self.acks = ACKS_CODE[cfg["acks"]]  # 0, 1 or 2 (all)
        self.idempotent = bool(cfg["enable.idempotence"])  # producer id + sequence numbers
        self.retries = int(cfg["retries"])
        self.backoff = float(cfg["retry.backoff.ms"])
        self.request_timeout = float(cfg["request.timeout.ms"])
        self.delivery_timeout = float(cfg["delivery.timeout.ms"])
        self.max_inflight = int(cfg["max.in.flight.requests.per.connection"])
        self.metadata = [-1] * partitions  # partition -> leader as this producer last learned it
        self.queue: dict[int, list[int]] = {}  # partition -> batches waiting to be resent, oldest first
        self.armed: set[int] = set()  # partitions with a retry wake-up pending
        self.probe: dict[int, int] = {}  # partition -> the queued batch currently resent alone
        self.node_backoff = [0.0] * brokers  # broker -> no connection attempt before this time
        self.node_failures = [0] * brokers  # broker -> consecutive refused connections
        self.inflight = [0] * partitions  # partition -> batches sent and not yet answered
        self.blocked: dict[int, list[int]] = {}  # partition -> batches waiting for an in-flight slot, oldest first
        self.epoch = [0] * partitions  # partition -> producer epoch; bumped when a batch fails for good (KIP-360)
        self.next_seq = [0] * partitions  # partition -> next sequence number in the current epoch


class ProducerActor:
    def init_producers(self, rngs) -> None:
        w = self.workload
        nb = w.batches
        P = len(self.partitions)
        self.producer_cfg = [ProducerConfig(p, P, len(self.brokers)) for p in self.scenario["producers"]]
        self.b_partition = w.batch_partition.tolist()
        self.b_producer = w.batch_producer.tolist()
        self.b_count = (w.batch_hi - w.batch_lo).tolist()
        self.b_bytes = [c * int(self.scenario["producers"][pr]["record.size.bytes"]) for c, pr in zip(self.b_count, self.b_producer)]
        self.b_create = w.batch_create_ms.tolist()
        self.b_state = [PENDING] * nb  # PENDING, INFLIGHT, ACKED or FAILED
        self.b_attempt = [0] * nb  # sends so far
        self.b_ack_ms = [np.nan] * nb  # when the producer learned of success
        self.b_error = [NONE] * nb  # the error a failed batch ended with
        self.b_base = [-1] * nb  # offset the leader reported
        self.b_visible_ms = [np.nan] * nb  # first time a leader's HW covered it
        self.b_committed = [False] * nb  # some leader's HW covered it
        self.b_epoch = [-1] * nb  # producer epoch its sequence number belongs to
        self.b_seq = [-1] * nb  # sequence number, given at its first send in an epoch (batches go out in order)
        self.track_producers = any(pc.idempotent for pc in self.producer_cfg)  # brokers keep producer state
        self.feed = np.argsort(w.batch_ready_ms, kind="stable").tolist()
        self.feed_ready = w.batch_ready_ms[self.feed].tolist() if nb else []

    def start_producers(self) -> None:
        for pc in self.producer_cfg:
            for part in self.partitions:
                pc.metadata[part.index] = part.leader
        if self.feed:
            self.kernel.schedule(self.feed_ready[0], self._producer_feed, 0)

    def _producer_feed(self, i: int) -> None:
        """The sender finds batch feed[i] ready; the next ready batch is scheduled."""
        if i + 1 < len(self.feed):
            self.kernel.schedule(self.feed_ready[i + 1], self._producer_feed, i + 1)
        b = self.feed[i]
        pc = self.producer_cfg[self.b_producer[b]]
        p = self.b_partition[b]
        if p in pc.queue:
            insort(pc.queue[p], b)  # resends in progress: wait behind them, in order
            return
        if p in pc.blocked:
            pc.blocked[p].append(b)  # in-flight slots taken: wait in order
            return
        self.producer_send(b)

    def producer_send(self, b: int) -> None:
        """Send batch b to the leader this producer knows, or queue it for later."""
        now = self.kernel.now
        pc = self.producer_cfg[self.b_producer[b]]
        p = self.b_partition[b]
        if now - self.b_create[b] >= pc.delivery_timeout:
            self._producer_fail(b, DELIVERY_TIMEOUT)
            return
        leader = pc.metadata[p]
        if leader < 0 or pc.node_backoff[leader] > now:
            self._producer_queue(b, pc, p, now)
            return
        if pc.acks and pc.inflight[p] >= pc.max_inflight:
            insort(pc.blocked.setdefault(p, []), b)  # max.in.flight.requests.per.connection reached
            return
        attempt = self.b_attempt[b] + 1
        self.b_attempt[b] = attempt
        if pc.idempotent and self.b_epoch[b] != pc.epoch[p]:  # first send in this epoch: next sequence number
            self.b_epoch[b] = pc.epoch[p]
            self.b_seq[b] = pc.next_seq[p]
            pc.next_seq[p] += 1
        self.stats["produce_requests"] += 1
        if pc.acks == 0:  # acks=0: success once it is on the wire; no answer comes
            if self.b_state[b] != ACKED:
                self.b_state[b] = ACKED
                self.b_ack_ms[b] = now
            self.send(-1, leader, self.leader_handle_produce, (leader, b, attempt), nbytes=self.b_bytes[b])
            return
        self.b_state[b] = INFLIGHT
        pc.inflight[p] += 1
        self.send(-1, leader, self.leader_handle_produce, (leader, b, attempt), refused=self._producer_refused,
                  nbytes=self.b_bytes[b])
        self.kernel.schedule(now + pc.request_timeout, self._producer_request_timeout, b, attempt)

    def producer_handle_response(self, b: int, attempt: int, error: int, base: int) -> None:
        """The leader's answer reaches the producer."""
        if self.b_attempt[b] != attempt or self.b_state[b] != INFLIGHT:
            return  # an answer to an abandoned attempt
        pc = self.producer_cfg[self.b_producer[b]]
        p = self.b_partition[b]
        pc.inflight[p] -= 1
        leader = pc.metadata[p]
        if leader >= 0:
            pc.node_failures[leader] = 0
        if error == NONE:
            self.b_state[b] = ACKED
            self.b_ack_ms[b] = self.kernel.now
            self.b_base[b] = base
            if pc.probe.get(p) == b:
                self._producer_flush(pc, p)
            self._producer_pump(pc, p)
            return
        if error == NOT_LEADER:
            pc.metadata[p] = -1  # ask for fresh metadata before the resend
        elif error == OUT_OF_ORDER_SEQUENCE and pc.inflight[p] == 0 and self._oldest_unsent(pc, p, b):
            self._producer_bump_epoch(pc, p)  # nothing earlier is pending: the broker lost our state (KIP-360)
        self._producer_retry(b, error)
        self._producer_pump(pc, p)

    def _oldest_unsent(self, pc: ProducerConfig, p: int, b: int) -> bool:
        queue = pc.queue.get(p)
        return not queue or queue[0] > b

    def _producer_bump_epoch(self, pc: ProducerConfig, p: int) -> None:
        """A new producer epoch: sequence numbers start again at 0 for the batches still to be written."""
        pc.epoch[p] += 1
        pc.next_seq[p] = 0

    def _producer_pump(self, pc: ProducerConfig, p: int) -> None:
        """An in-flight slot freed: send the batches that waited for one (unless resends are pending)."""
        blocked = pc.blocked.get(p)
        while blocked and pc.inflight[p] < pc.max_inflight and p not in pc.queue:
            self.producer_send(blocked.pop(0))
        if blocked is not None and not blocked:
            pc.blocked.pop(p, None)

    def _producer_refused(self, leader: int, b: int, attempt: int) -> None:
        """The connection to the leader was refused (its process is down)."""
        if self.b_attempt[b] != attempt or self.b_state[b] != INFLIGHT:
            return
        pc = self.producer_cfg[self.b_producer[b]]
        pc.inflight[self.b_partition[b]] -= 1
        fails = pc.node_failures[leader] = pc.node_failures[leader] + 1
        pc.node_backoff[leader] = self.kernel.now + min(RECONNECT_BACKOFF_MS * 2 ** (fails - 1), RECONNECT_BACKOFF_MAX_MS)
        pc.metadata[self.b_partition[b]] = -1
        self._producer_retry(b, NETWORK_EXCEPTION)

    def _producer_request_timeout(self, b: int, attempt: int) -> None:
        if self.b_attempt[b] != attempt or self.b_state[b] != INFLIGHT:
            return
        pc = self.producer_cfg[self.b_producer[b]]
        p = self.b_partition[b]
        pc.inflight[p] -= 1
        pc.metadata[p] = -1  # Kafka disconnects and refreshes metadata
        self._producer_retry(b, REQUEST_TIMED_OUT)
        self._producer_pump(pc, p)

    def _producer_retry(self, b: int, error: int) -> None:
        pc = self.producer_cfg[self.b_producer[b]]
        self.b_error[b] = error
        if self.b_attempt[b] > pc.retries:
            self._producer_fail(b, error)
            return
        p = self.b_partition[b]
        if pc.probe.get(p) == b:
            del pc.probe[p]
        self._producer_queue(b, pc, p, self.kernel.now)

    def _producer_queue(self, b: int, pc: ProducerConfig, p: int, now: float) -> None:
        self.b_state[b] = PENDING
        queue = pc.queue.setdefault(p, [])
        insort(queue, b)
        for waiting in pc.blocked.pop(p, []):  # one backlog, oldest first: nothing overtakes a resend
            insort(queue, waiting)
        if p not in pc.armed:
            pc.armed.add(p)
            self.kernel.schedule(now + max(pc.backoff, 1.0), self._producer_wake, pc, p)

    def _producer_wake(self, pc: ProducerConfig, p: int) -> None:
        """After the backoff: refresh metadata, drop expired batches, resend the oldest."""
        pc.armed.discard(p)
        now = self.kernel.now
        part = self.partitions[p]
        pc.metadata[p] = part.leader  # a metadata request answered from the controller's view
        queue = pc.queue.get(p)
        while queue and now - self.b_create[queue[0]] >= pc.delivery_timeout:
            self._producer_fail(queue.pop(0), DELIVERY_TIMEOUT)
        if not queue:
            pc.queue.pop(p, None)
            return
        leader = pc.metadata[p]
        if leader < 0 or pc.node_backoff[leader] > now:
            pc.armed.add(p)
            wait = max(pc.backoff, 1.0) if leader < 0 else max(pc.node_backoff[leader] - now, 1.0)
            self.kernel.schedule(now + wait, self._producer_wake, pc, p)
            return
        b = queue.pop(0)
        pc.probe[p] = b
        self.producer_send(b)

    def _producer_flush(self, pc: ProducerConfig, p: int) -> None:
        """The resent batch went through: send everything that waited behind it."""
        pc.probe.pop(p, None)
        queue = pc.queue.pop(p, None) or []
        for b in queue:
            self.producer_send(b)
        self._producer_pump(pc, p)

    def _producer_fail(self, b: int, error: int) -> None:
        self.b_state[b] = FAILED
        self.b_error[b] = error
        pc = self.producer_cfg[self.b_producer[b]]
        p = self.b_partition[b]
        if pc.idempotent:
            self._producer_bump_epoch(pc, p)  # KIP-360: a new epoch lets later batches past the gap
        if pc.probe.get(p) == b:
            self._producer_flush(pc, p)
