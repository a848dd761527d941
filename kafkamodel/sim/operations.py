"""Operations: what an SRE schedules (``operations:``), dispatched like faults, in Kafka's terms.

* ``controlled_shutdown`` of a broker: with ``controlled.shutdown.enable`` the broker first asks the controller
  to move its leaderships (ZooKeeper: the ControlledShutdown request; KRaft: a heartbeat asking to shut down);
  the controller elects another ISR member for each partition it leads and takes it out of every ISR
  (``ReplicationControl.controlled_shutdown``) and answers; then the process stops cleanly (log whole, HW
  checkpointed, connections closed) and its session closes at once. Without it the process stops cleanly
  first and the controller moves the leaderships when the session closes: the partitions it led have no
  live leader in between. A partition with no other live ISR member keeps it as leader until it stops.
* ``restart``: a new process on the same disk (as the fault ``restart``); the operation ends once the broker
  is back in the ISR of every partition it holds.
* ``rolling_restart`` over ``brokers`` (default all, in id order), as a user's automation does it: shut one
  down (as above), start it again after ``downtime.ms``, and wait for the ``gate`` before the next one:
  ``{wait.ms: N}`` (N ms after the restart), ``no_under_replicated`` (no partition with an ISR smaller than its
  replicas, none offline), ``{full_isr_for.ms: N}`` (that, held for N ms).
* ``preferred_leader_election`` (kafka-leader-election --election-type PREFERRED) for a topic's partitions
  (all partitions of the topic, or of every topic), sent by an admin client to the controller.

The operations' duration (``operation_ms``: the first start to the last end) is measured here; the partition
states over time by ``results.health``.
"""

from __future__ import annotations

from .protocol import CLIENT, CONTROLLER
from .state import Replica
from .results.measures import (BROKER_CAUGHT_UP, BROKER_SHUTDOWN, CONTROLLED_SHUTDOWN, OPERATION_END, OPERATION_START,
                               OPERATION_UNFINISHED)
from .results.health import OFFLINE, UNDER_REPLICATED


class Operations:
    """Every scheduled operation: ``begin`` starts one; each kind's steps follow as timers and messages."""

    MESSAGES = ("shutdown_answered",)
    TIMERS = ("begin", "restart_process", "gate_held", "proceed")

    def __init__(self, sim, faults, controller, replication):
        self.kernel = sim.kernel
        self.send = sim.transport.send
        self.brokers = sim.brokers
        self.partitions = sim.partitions
        self.partitions_of = sim.partitions_of
        self.topic_first = sim.topic_first
        self.health = sim.health
        self.event = sim.recorder.event
        self.operations = sim.settings.operations
        self.controlled = sim.settings.broker.controlled_shutdown_enable
        self.faults, self.controller, self.replication = faults, controller, replication
        self.after_moves: dict = {}  # operation -> what runs once its moves completed
        self.waiting_shutdown: dict = {}  # broker -> what runs once its controlled shutdown is answered
        self.started: list[float] = []  # per operation that began: when
        self.ended: dict[int, float] = {}  # operation -> when it ended
        self.catch_up_ms: list[float] = []  # per broker a rolling restart started again: until back in every ISR
        self.begin_of = {"controlled_shutdown": self.begin_shutdown, "restart": self.begin_restart,
                         "rolling_restart": self.begin_rolling_restart,
                         "preferred_leader_election": self.begin_preferred_leader_election,
                         "reassign": self.begin_reassign, "remove_broker": self.begin_remove_broker,
                         "add_broker": self.begin_add_broker}
        self.replicas = sim.replicas
        # a new replica's log shares the table of the log it will copy (the last elected leader's: log.py)
        self.new_log = lambda part: sim.batches.log(part.config.segment_bytes,
                                                    self.replicas[part.index][part.last_leader].log.table)
        self.quotas = sim.quotas
        self.moving: dict[int, set] = {}  # operation -> partitions it still moves
        replication.reassigned = self.partition_moved

    def start(self) -> None:
        for i, op in enumerate(self.operations):
            self.kernel.schedule(op.at_ms, self.begin, i)

    def begin(self, i: int) -> None:
        op = self.operations[i]
        self.started.append(self.kernel.now)
        self.event(OPERATION_START, -1, -1 if op.broker is None else op.broker, f"{i}: {op.kind}")
        self.begin_of[op.kind](i, op)

    def end(self, i: int, detail: str = "") -> None:
        self.ended[i] = self.kernel.now
        self.event(OPERATION_END, -1, -1, f"{i}: {self.operations[i].kind}" + (f"; {detail}" if detail else ""))

    def close(self, end_ms: float) -> tuple[float, float, bool] | None:
        """At the run's end: an event for each operation that began and has not finished; the first operation's
        start and the last one's end (an unfinished one: the run's end), and whether every one finished; None if
        none began. operation_ms is the window's length once all finished (else null); the produce latency and
        errors "during the operation" fall in the window."""
        if not self.started:
            return None
        for i, op in enumerate(self.operations[:len(self.started)]):
            if i not in self.ended:
                self.event(OPERATION_UNFINISHED, -1, -1, f"{i}: {op.kind}" + (
                    f"; {len(self.moving[i])} partitions still moving" if self.moving.get(i) else ""))
        finished = len(self.ended) == len(self.started)
        last = max(self.ended.values()) if finished else end_ms
        return min(self.started), last, finished

    # ---- a broker's shutdown and restart --------------------------------------------------------------------

    def shut_down(self, b: int, then) -> None:
        """Stop broker b as Kafka's shutdown does; `then()` runs once its process is gone."""
        if not self.brokers[b].up:
            then()
            return
        if self.controlled:
            self.send(b, CONTROLLER, self.controller.handle_controlled_shutdown, (b, self.shutdown_answered))
            self.waiting_shutdown[b] = then
        else:
            self.stop(b)
            then()

    def shutdown_answered(self, b: int, remaining: int) -> None:
        """The controller moved what it could (`remaining`: partitions b still leads; -1: no controller)."""
        self.event(CONTROLLED_SHUTDOWN, -1, b, f"{remaining} partitions still led" if remaining else "")
        self.stop(b)
        self.waiting_shutdown.pop(b)()

    def stop(self, b: int) -> None:
        if self.faults.stop_cleanly(b):
            self.event(BROKER_SHUTDOWN, -1, b, "")
            self.controller.session_closed(b)

    def in_sync(self, b: int) -> bool:
        """Is broker b back in the ISR of every partition it holds (as the controller stores them)?"""
        return all(b in self.partitions[p].isr for p in self.partitions_of[b])

    def when(self, ready, then) -> None:
        """Run `then()` once `ready()` holds (checked now and after each change of a partition's state)."""
        if ready():
            then()
            return
        watchers = self.health.watchers

        def watch() -> None:  # runs inside the controller's change: the next step runs after it, at once
            if ready():
                watchers.remove(watch)
                self.kernel.schedule(self.kernel.now, self.proceed, then)

        watchers.append(watch)

    def proceed(self, then) -> None:
        then()

    def begin_shutdown(self, i: int, op) -> None:
        self.shut_down(op.broker, lambda: self.end(i))

    def begin_restart(self, i: int, op) -> None:
        self.restart_broker(op.broker, lambda: self.end(i))

    def restart_broker(self, b: int, then) -> None:
        """A new process starts (held while its old session lives, as the fault); `then()` once it is back in
        every ISR it belongs to."""
        self.faults.fault_restart(b, None)
        self.when(lambda: self.brokers[b].up and self.in_sync(b), then)

    def restart_process(self, b: int, then) -> None:
        """A new process starts; `then()` at once (a rolling restart's gate counts from here). Once the broker is
        back in the ISR of every partition it holds, a broker_caught_up event says how long that took from here
        (its log recovery, if any, included)."""
        started = self.kernel.now
        self.faults.fault_restart(b, None)

        def caught_up() -> None:
            ms = self.kernel.now - started
            self.catch_up_ms.append(ms)
            self.event(BROKER_CAUGHT_UP, -1, b, f"back in every ISR {ms:g} ms after its process started")

        self.when(lambda: self.brokers[b].up and self.in_sync(b), caught_up)
        then()

    # ---- rolling restart ------------------------------------------------------------------------------------

    def begin_rolling_restart(self, i: int, op) -> None:
        self.roll(i, op, 0)

    def roll(self, i: int, op, k: int) -> None:
        if k == len(op.brokers):
            self.end(i)
            return
        b = op.brokers[k]

        def restarted() -> None:
            self.gate(op, lambda: self.roll(i, op, k + 1))

        self.shut_down(b, lambda: self.kernel.schedule(self.kernel.now + op.downtime_ms, self.restart_process, b,
                                                       restarted))

    def gate(self, op, then) -> None:
        """Wait for the rolling restart's gate, from now (the restarted broker is up)."""
        kind, ms = op.gate
        if kind == "wait.ms":
            self.kernel.schedule(self.kernel.now + ms, self.proceed, then)
        elif kind == "no_under_replicated":
            self.when(self.fully_replicated, then)
        else:  # full_isr_for.ms: fully replicated, and still so ms later
            self.when(self.fully_replicated, lambda: self.kernel.schedule(
                self.kernel.now + ms, self.gate_held, op, then, self.health.changes))

    def gate_held(self, op, then, changes: int) -> None:
        if self.health.changes == changes:
            then()
        else:  # some partition left its full ISR meanwhile: wait again
            self.gate(op, then)

    def fully_replicated(self) -> bool:
        count = self.health.count
        return count[UNDER_REPLICATED] == 0 and count[OFFLINE] == 0

    # ---- preferred leader election ----------------------------------------------------------------------------

    def begin_preferred_leader_election(self, i: int, op) -> None:
        if op.topic is None:
            indices = [part.index for part in self.partitions]
        else:
            first = self.topic_first[op.topic]
            numbers = op.partitions if op.partitions is not None else [
                part.number for part in self.partitions if part.topic == op.topic]
            indices = [first + n for n in numbers]
        self.send(CLIENT, CONTROLLER, self.replication.elect_preferred, (indices,))
        self.end(i)

    # ---- reassignment ---------------------------------------------------------------------------------------------

    def begin_reassign(self, i: int, op) -> None:
        first = self.topic_first[op.topic]
        self.reassign(i, [(first + n, target) for n, target in zip(op.partitions, op.replicas)], op.throttle)

    def reassign(self, i: int, moves: list, throttle: float | None, then=None) -> None:
        """kafka-reassign-partitions --execute [--throttle]: the rates set on the brokers, the moving replicas
        throttled, AlterPartitionReassignments to the controller. A partition already moving to the same target
        is left to its move (run again with another --throttle, only the rates change)."""
        self.quotas.set_rates(throttle)
        sent = []
        for p, target in moves:
            if self.replication.reassigning.get(p) == target:
                continue
            part = self.partitions[p]
            adding = [b for b in target if b not in part.replicas]
            for b in adding:  # the broker creates the (empty) log when LeaderAndIsr names it
                if b not in self.replicas[p]:
                    self.replicas[p][b] = Replica(p, b, self.new_log(part))
                self.partitions_of[b].append(p)
            self.quotas.throttled[p] = set(adding)
            sent.append((p, tuple(target)))
        self.moving[i] = {p for p, _ in sent}
        self.after_moves[i] = then if then is not None else (lambda: self.end(i))
        if not sent:
            self.moved(i)
            return
        self.send(CLIENT, CONTROLLER, self.replication.alter_partition_reassignments, (sent,))

    def partition_moved(self, p: int) -> None:
        """The controller completed partition p's move: its replicas are no longer throttled."""
        self.quotas.throttled.pop(p, None)
        for i, parts in list(self.moving.items()):
            if p in parts:
                parts.discard(p)
                if not parts:
                    self.moved(i)

    def moved(self, i: int) -> None:
        del self.moving[i]
        self.after_moves.pop(i)()

    def begin_remove_broker(self, i: int, op) -> None:
        """Decommission a broker: each of its replicas moves to the live broker holding the fewest replicas (not
        already a replica of that partition), in its place in the list; then it shuts down."""
        b = op.broker
        load = {x: len(self.partitions_of[x]) for x in range(len(self.brokers)) if x != b and self.brokers[x].up}
        moves = []
        for p in list(self.partitions_of[b]):
            part = self.partitions[p]
            spare = [x for x in sorted(load, key=lambda x: (load[x], x)) if x not in part.replicas]
            if not spare:
                continue
            load[spare[0]] += 1
            moves.append((p, tuple(spare[0] if r == b else r for r in part.replicas)))
        self.reassign(i, moves, None, then=lambda: self.shut_down(b, lambda: self.end(i)))

    def begin_add_broker(self, i: int, op) -> None:
        """A new broker starts, empty, and registers (reassignments move replicas onto it)."""
        self.faults.fault_restart(op.broker, None)
        self.end(i)
