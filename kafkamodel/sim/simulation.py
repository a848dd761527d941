"""``simulate(scenario)``: the cluster, its network and clock, and its actors, wired together.

The shared state is declared here, once: the settings in force, the kernel
and transport, the brokers, the partitions as the controller sees them,
every replica, the batch table, the replication mode and strategies, the
recorder of events and counters, availability. Each actor (``producer``,
``leader``, ``follower``, ``replica_manager``, ``controller``, ``faults``,
``consumer``) takes what it needs of it, and its handlers are declared in
its ``MESSAGES`` and ``TIMERS`` (the model's ``Next``: with
``debug.invariants`` every delivered message and fired timer is checked
against them).
"""

from __future__ import annotations

from ..config.distributions import Sampler
from ..config.scenario import Scenario, load_scenario
from ..config.settings import Settings
from .batches import Batches
from .broker.consumer_fetch import ConsumerFetchHandler
from .broker.fetcher import ReplicaFetcherManager
from .broker.follower import FollowerRole
from .broker.leader import LeaderRole
from .broker.produce import ProduceHandler
from .broker.replica_manager import ReplicaManager
from .broker.server import Server
from .broker.sessions import SessionManager
from .clients.consumer import ConsumerGroups
from .clients.producer import ProducerClient
from .clients.workload import build_workload
from .controller.controller import Controller
from .controller.placement import assign
from .engine.kernel import Kernel
from .engine.network import Layout, latency_streams
from .engine.transport import Streams, Transport
from .faults import FaultInjector
from .results.invariants import check_all
from .results.measures import INVARIANT_VIOLATION, Availability, Recorder
from .results.outcome import RunEnd, build_result
from .results.result import Result
from .rules.lag import make_lag_rule
from .rules.modes import make_mode
from .rules.truncation import make_truncation
from .state import Broker, Partition, Replica
from .storage.log import Log


class Simulation:
    def __init__(self, scenario: Scenario, partitioner=None):
        self.scenario = scenario  # the resolved scenario (what the run folder records)
        settings = self.settings = Settings.of(scenario)  # what is in force, typed
        self.kernel = Kernel()
        self.streams = Streams(settings.seed, len(settings.producers))  # one random stream per source, by name
        self.brokers = [Broker(b) for b in range(settings.brokers)]
        # one latency stream per kind of connection: 0 brokers and producers, 1 consumers and their coordinator,
        # so a consumer-side change (commit policy, a consumer crash) leaves producers and replication alone
        draws = (Sampler(settings.latency_ms, self.streams("network")),
                 Sampler(settings.latency_ms, self.streams("consumers")))
        self.layout = Layout(settings)  # node ids, racks, which link each pair of nodes takes
        latency = latency_streams(self.layout, settings, self.streams, draws)
        self.transport = Transport(self.kernel, self.brokers, draws, latency, self.layout.offset,
                                   settings.bandwidth_mbps)

        # partitions, their replicas placed as Kafka places a new topic's (placement; rack-aware with racks)
        self.partitions: list[Partition] = []
        self.topic_first: dict[str, int] = {}  # topic -> its first global partition index
        for t in settings.topics:
            self.topic_first[t.name] = len(self.partitions)
            placed = assign(t.partitions, t.replication_factor, settings.brokers, settings.racks)
            for p, replicas in enumerate(placed):
                self.partitions.append(Partition(len(self.partitions), p, replicas, t))
        self.partitions_of: list[list[int]] = [[] for _ in self.brokers]  # broker -> partitions it holds
        for part in self.partitions:
            for b in part.replicas:
                self.partitions_of[b].append(part.index)
        duration = settings.duration_ms
        self.retention_on = any(  # keep segments only when retention can act within the run
            part.config.retention_bytes is not None
            or (part.config.retention_ms is not None and part.config.retention_ms < duration)
            for part in self.partitions)

        self.workload = build_workload(settings, self.topic_first, self.streams, partitioner)  # the records
        self.batches = Batches([p.record_size_bytes for p in settings.producers])  # filled as producers drain
        # replicas[p][b]: broker b's replica of partition p
        self.replicas: list[dict[int, Replica]] = [
            {b: Replica(part.index, b, Log(part.config.segment_bytes, self.batches.bytes)) for b in part.replicas}
            for part in self.partitions
        ]
        self.mode = make_mode(settings.replication, self.partitions, self.brokers, settings.broker, settings.quorum_fsync,
                              settings.kafka.hw_held_below_min_isr)
        # log.flush.interval.messages (a durable quorum fsyncs every append), and what an fsync takes
        self.flush_messages = 1 if self.mode.durable else settings.broker.log_flush_interval_messages
        self.fsync = Sampler(settings.fsync_ms, self.streams("disk")).stream
        self.lag_rule = make_lag_rule(settings.broker)
        self.truncation = make_truncation(self.mode.truncation or settings.kafka.truncation,
                                          kip279=settings.kafka.kip279 or self.mode.truncation is not None)
        self.recorder = Recorder(self.kernel, self.partitions)  # events and counters
        self.availability = Availability(self.kernel, self.partitions, self.writable)
        self.timeline: list[tuple] = []  # sampled per partition: leader, epoch, LEO, HW, ISR size

        self.server = Server(self)
        self.producer = ProducerClient(self)
        self.leader = LeaderRole(self)
        self.produce = ProduceHandler(self)
        self.consumer_fetch = ConsumerFetchHandler(self)
        self.sessions = SessionManager(self)
        self.follower = FollowerRole(self)
        self.fetchers = ReplicaFetcherManager(self)
        self.replica_manager = ReplicaManager(self)
        self.controller = Controller(self)
        self.consumers = ConsumerGroups(self)
        self.faults = FaultInjector(self)
        self.producer.wire(self.server, self.produce)
        self.leader.wire(self.server, self.produce, self.sessions, self.consumer_fetch, self.follower, self.controller)
        self.produce.wire(self.server, self.producer, self.sessions, self.leader)
        self.consumer_fetch.wire(self.server, self.consumers)
        self.sessions.wire(self.server, self.leader, self.follower)
        self.follower.wire(self.fetchers, self.leader)
        self.fetchers.wire(self.server, self.sessions, self.leader)
        self.replica_manager.wire(self.leader, self.follower)
        self.controller.wire(self.replica_manager)
        self.consumers.wire(self.server, self.consumer_fetch)
        self.faults.wire(self.producer, self.leader, self.follower, self.sessions, self.server, self.replica_manager,
                         self.controller, self.consumers)
        self.actors = (self.server, self.producer, self.leader, self.produce, self.consumer_fetch, self.sessions,
                       self.follower, self.fetchers, self.replica_manager, self.controller, self.consumers, self.faults)
        self._seen_violations: set = set()  # (property, problem) pairs already reported in debug mode

    @property
    def groups(self) -> list:
        return self.consumers.groups

    # ---- availability ----------------------------------------------------------------------------------------

    def writable(self, part: Partition) -> bool:
        """Could the partition accept an acks=all write right now?"""
        leader = part.leader
        if leader < 0 or not self.brokers[leader].healthy:
            return False
        rep = self.replicas[part.index][leader]
        if not rep.is_leader or rep.leader_epoch != part.leader_epoch:
            return False
        return self.mode.writable(part, rep)

    # ---- timeline ------------------------------------------------------------------------------------------------

    def _sample_timeline(self, interval: float) -> None:
        now = self.kernel.now
        rows = self.timeline
        for part in self.partitions:
            leader = part.leader
            if leader >= 0 and self.brokers[leader].up:
                rep = self.replicas[part.index][leader]
                leo, hw = rep.log.log_end_offset, rep.high_watermark
            else:
                leo = hw = -1
            rows.append((now, part.topic, part.number, leader, part.leader_epoch, leo, hw, len(part.isr)))
        self.kernel.schedule(now + interval, self._sample_timeline, interval)

    # ---- the run ---------------------------------------------------------------------------------------------------

    def run(self) -> Result:
        settings = self.settings
        duration = settings.duration_ms
        if settings.debug_invariants:
            self.kernel.after_event = self._debug_check
            self.transport.check = declared_handlers(self.actors)
        self.transport.start(broker_faults=any(not f.consumer for f in settings.faults))
        self.replica_manager.start()
        self.controller.start()
        self.producer.start()
        self.consumers.start()
        self.faults.start()
        self.kernel.schedule(0.0, self._sample_timeline, settings.timeline_interval_ms)
        self.availability.note()
        self.kernel.run(duration)
        self.availability.note()
        self.availability.close(duration)
        return build_result(RunEnd(
            settings=settings, scenario=self.scenario.to_dict(), workload=self.workload, batches=self.batches,
            partitions=self.partitions, replicas=self.replicas, topic_first=self.topic_first, groups=self.groups,
            counters=self.recorder.counters, events=self.recorder.events, timeline=self.timeline,
            violations=check_all(self), unavailable_wall_ms=self.availability.wall_ms, end_ms=self.kernel.now,
            threads={"request_handler": (self.server.io_busy_ms, self.server.io_threads),
                     "network": (self.server.net_busy_ms, self.server.network_threads),
                     "replica_fetcher": self.follower.busiest_ms()}))

    def _debug_check(self) -> None:
        for name, problems in check_all(self).items():
            for problem in problems:
                key = (name, problem)
                if key not in self._seen_violations:
                    self._seen_violations.add(key)
                    self.recorder.event(INVARIANT_VIOLATION, -1, -1, f"{name}: {problem}")


def declared_handlers(actors):
    """A check that every message delivered and timer fired is a handler its actor declares (MESSAGES, TIMERS)."""
    declared = {(type(a), name) for a in actors for name in (*getattr(a, "MESSAGES", ()), *getattr(a, "TIMERS", ()))}

    def check(action) -> None:
        owner = getattr(action, "__self__", None)
        if (type(owner), action.__name__) not in declared:
            raise AssertionError(f"{type(owner).__name__}.{action.__name__} runs as a message or timer "
                                 "but is not in its MESSAGES or TIMERS")

    return check


def simulate(scenario, partitioner=None) -> Result:
    """Run one scenario (a Scenario, a dict, or a YAML path) and return its Result.

    `partitioner`, if given, is a callable (key or None, partitions) -> partition
    used by every producer instead of the scenario's partitioner.
    """
    return Simulation(load_scenario(scenario), partitioner).run()
