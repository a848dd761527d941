"""The brokers as the controller sees them (Kafka's ClusterControlManager; ZooKeeper's registered brokers),
and the controller's channel to them (ControllerChannelManager: LeaderAndIsr, UpdateMetadata).

The controller's time: it is one thread (KafkaController's event queue; the
QuorumController's too) and every partition state change costs it time
(``controller.*``, docs/controller.md): with ZooKeeper a write per partition
(serial and synchronous before 1.1, pipelined from 1.1, KAFKA-5642), with
KRaft a record per partition and one commit of the batch to the metadata
log. Changes decided in one action are one batch (Kafka's
ControllerBrokerRequestBatch: newBatch ... sendRequestsToBrokers): the batch
waits for the controller's earlier work, costs its partitions' writes, and
then goes out as one LeaderAndIsr request per broker. Completion times are
computed, not simulated partition by partition: two kernel events a batch.

Every batch also goes to every registered broker as metadata, replica of
its partitions or not, so that a client asking any broker learns the new
leaders. ZooKeeper: UpdateMetadata, one request per live (or shutting-down)
broker (addLeaderAndIsrRequestForBrokers adds every partition it changes to
addUpdateMetadataRequestForBrokers(liveOrShuttingDownBrokerIds)); a broker's
RequestSendThread sends one request at a time and waits for its answer, and
sendRequestsToBrokers queues the LeaderAndIsr first, so a replica's
UpdateMetadata leaves when its LeaderAndIsr's answer is back, a
non-replica's at once. KRaft: every broker, fenced or not, applies the
batch's records from the metadata log, its partitions and its metadata cache
together. The controller's time is per partition and per batch, not per
request, so neither costs it more (as Kafka's channel, whose sends are
other threads').

What the controller believes is kept apart from what is true (``state.Broker``): a broker is live here
while its session holds, whatever its process is doing.
"""

from __future__ import annotations

from ..protocol import CONTROLLER
from ..state import Partition


class ClusterView:
    """Registrations and the controller role."""

    __slots__ = ("brokers", "live_brokers", "fenced", "broker_epoch", "controller_broker", "epoch", "loading")

    def __init__(self, brokers: list, metadata):
        self.brokers = brokers  # the brokers themselves (whether the role's holder still runs)
        self.live_brokers: set[int] = set(range(len(brokers)))  # brokers with a live session, as it saw
        self.fenced: set[int] = set()  # KRaft: registered, not yet unfenced (it replays the metadata log)
        self.broker_epoch = [0] * len(brokers)  # broker -> the incarnation it last registered (KIP-380's epoch)
        self.controller_broker = metadata.first_controller  # who holds the role: a broker (-1: none can), the quorum
        self.epoch = 0  # the controller epoch: bumps on every failover (a batch of an old controller is dropped)
        self.loading = False  # ZooKeeper: a new controller still reads every partition's state; KRaft: the quorum
        # elects a new active controller

    def active(self) -> bool:
        """Does a controller hold the role now and act (KRaft: unless the quorum is electing; ZooKeeper: a running
        broker that has read the cluster's state)?"""
        c = self.controller_broker
        return not self.loading and (c == CONTROLLER or (c >= 0 and self.brokers[c].healthy))


class ControllerChannel:
    """The controller's thread and its LeaderAndIsr requests to the brokers: partition changes queue into
    batches, each costs the controller its per-partition time, then goes out as one request per broker."""

    MESSAGES = ("leader_and_isr_answered",)
    TIMERS = ("close_batch", "send_batch", "resend_state", "send_stop_replica")

    def __init__(self, sim, view: ClusterView, replica_manager):
        self.kernel = sim.kernel
        self.send = sim.transport.send
        self.partitions = sim.partitions
        self.partitions_of = sim.partitions_of
        self.recorder = sim.recorder
        self.view = view
        self.handle_leader_and_isr = replica_manager.handle_leader_and_isr
        self.handle_stop_replica = replica_manager.handle_stop_replica
        self.handle_update_metadata = replica_manager.handle_update_metadata
        mode = self.metadata = sim.metadata  # ZooKeeper or KRaft (controller.metadata)
        self.partition_ms, self.batch_ms = mode.partition_ms, mode.batch_ms  # per changed partition, per batch
        self.load_ms = mode.load_ms  # ZooKeeper: a new controller reads every partition
        self.pending: dict[int, None] = {}  # partitions changed since the batch opened, in order
        self.in_flight: dict[int, int] = {}  # partition -> batches with it that the controller has not sent yet
        self.closing = False  # a close_batch is scheduled for this instant
        self.busy_until = 0.0  # the controller thread is busy until then

    def occupy(self, ms: float) -> float:
        """The controller's thread does `ms` of work after what it already has: when it is done."""
        start = max(self.kernel.now, self.busy_until)
        self.busy_until = start + ms
        self.recorder.controller_busy_ms += ms
        return self.busy_until

    def load(self) -> float:
        """ZooKeeper: a new controller reads every partition's state; when it is done."""
        return self.occupy(len(self.partitions) * self.load_ms)

    def send_partition(self, part: Partition) -> None:
        """A change of the partition's leader or ISR: it joins the open batch (LeaderAndIsr to its replicas once
        the controller has written it)."""
        self.pending[part.index] = None
        if not self.closing:
            self.closing = True
            self.kernel.schedule(self.kernel.now, self.close_batch)

    def close_batch(self) -> None:
        """The batch is complete (the action that changed it is done): its LeaderAndIsr requests are built now (the
        state and addressees as the controller decided them) and leave when the controller has written it."""
        self.closing = False
        if not self.pending:
            return
        parts = list(self.pending)
        self.pending.clear()
        view, in_flight = self.view, self.in_flight
        per_broker: dict[int, list] = {}
        for p in parts:
            in_flight[p] = in_flight.get(p, 0) + 1
            for r in self.partitions[p].replicas:
                if r in view.live_brokers or r in view.fenced:
                    per_broker.setdefault(r, []).append(p)
        requests = [self._request(b, ps) for b, ps in per_broker.items()]
        metadata = self._metadata(parts)
        rec = self.recorder
        rec.controller_queue_max = max(rec.controller_queue_max, len(parts))
        done = self.occupy(len(parts) * self.partition_ms + self.batch_ms)
        self.kernel.schedule(done, self.send_batch, parts, requests, metadata, sorted(view.live_brokers | view.fenced),
                             view.epoch, self.kernel.now)

    def send_batch(self, parts: list, requests: list, metadata: list, brokers: list, epoch: int,
                   decided: float) -> None:
        """The batch is written: its LeaderAndIsr requests go out, and its metadata to every broker registered when
        it was decided (`brokers`): a replica's after its LeaderAndIsr (ZooKeeper: once answered; KRaft: with it),
        the others' now. A batch of a controller that lost the role is dropped (the next one's resync resends)."""
        in_flight = self.in_flight
        for p in parts:
            if in_flight[p] == 1:
                del in_flight[p]
            else:
                in_flight[p] -= 1
        if epoch != self.view.epoch or not self.view.active():
            return
        with_state = set()
        for request in requests:
            self._send(request, decided, metadata)
            with_state.add(request[0])
        for b in brokers:
            if b not in with_state:
                self._send_metadata(b, metadata, decided)

    def leader_and_isr_answered(self, b: int, metadata: list, decided: float, epoch: int) -> None:
        """ZooKeeper: broker b answered a LeaderAndIsr; its RequestSendThread sends the next request queued for
        it, the batch's UpdateMetadata (dropped if this controller lost the role meanwhile)."""
        view = self.view
        if epoch == view.epoch and view.active() and b in view.live_brokers:
            self._send_metadata(b, metadata, decided)

    def send_stop_replica(self, b: int, ps: tuple, delete: bool = True, at: float | None = None,
                          epoch: int | None = None) -> None:
        """StopReplica to broker b for partitions `ps`, one request: with delete, a reassignment removed its
        replicas; without, it stops following them (a controlled shutdown). `at`: when the controller's thread
        gets to it (it leaves then, after the requests sent before it; dropped if the controller lost its role)."""
        view = self.view
        if at is not None and at > self.kernel.now:
            self.kernel.schedule(at, self.send_stop_replica, b, ps, delete, None, view.epoch)
            return
        if epoch is not None and (epoch != view.epoch or not view.active()):
            return
        self.send(view.controller_broker, b, self.handle_stop_replica, (b, ps, view.broker_epoch[b], delete))

    def send_state(self, b: int) -> None:
        """LeaderAndIsr for every partition broker b holds (the controller's channel resends on reconnect; a new
        controller sends it to every broker): the controller's thread gets to it after the work it already has."""
        self.kernel.schedule(max(self.kernel.now, self.busy_until), self.resend_state, b, self.view.epoch)

    def resend_state(self, b: int, epoch: int) -> None:
        """The metadata of every partition (onBrokerStartup's UpdateMetadata with all partitions, a new controller's
        to every broker: sent first), then the state of broker b's partitions, as written (a change not written
        yet goes with its batch, which is addressed to b). The UpdateMetadata does not wait for an answer here
        before the LeaderAndIsr (one trip sooner than Kafka's RequestSendThread)."""
        view = self.view
        if epoch != view.epoch or not view.active():
            return
        pending, in_flight = self.pending, self.in_flight
        now = self.kernel.now
        every = [p for p in range(len(self.partitions)) if p not in pending and p not in in_flight]
        self._send_metadata(b, self._metadata(every), now, every=True)
        ps = [p for p in self.partitions_of[b] if p not in pending and p not in in_flight]
        self._send(self._request(b, ps), now, (), answered=False)

    def _request(self, b: int, ps) -> tuple:
        """A LeaderAndIsr request to broker b: the partitions' state as the controller holds it now."""
        states = [(p, part.leader, part.leader_epoch, part.isr, part.recovering)
                  for p in ps for part in (self.partitions[p],)]
        return b, states, self.view.broker_epoch[b]

    def _metadata(self, ps) -> list:
        """UpdateMetadata's partition states: each partition's leader and leader epoch as the controller holds them
        now (what a client's metadata request reads)."""
        partitions = self.partitions
        return [(p, partitions[p].leader, partitions[p].leader_epoch) for p in ps]

    def _send_metadata(self, b: int, metadata: list, decided: float, every: bool = False) -> None:
        """UpdateMetadata to broker b's current incarnation (`every`: all partitions, a (re)registration's)."""
        view = self.view
        self.send(view.controller_broker, b, self.handle_update_metadata,
                  (b, metadata, view.broker_epoch[b], decided, every))

    def _send(self, request: tuple, decided: float, metadata: list, answered: bool = True) -> None:
        """LeaderAndIsr to a broker, with the metadata it applies with it (KRaft), or that follows its answer
        (ZooKeeper's batches: `answered`; a resend's went before it)."""
        b, states, broker_epoch = request
        then = self.view.epoch if answered and self.metadata.metadata_after_answer else None
        self.send(self.view.controller_broker, b, self.handle_leader_and_isr,
                  (b, states, broker_epoch, decided, metadata, then))
