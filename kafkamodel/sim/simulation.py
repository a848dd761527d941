"""``simulate(scenario)``: the cluster, its network and clock, and its actors, wired together.

The shared state is declared here, once: the settings in force, the kernel
and transport, the brokers, the partitions as the controller sees them,
every replica, the batch table, the replication mode and strategies, the
recorder of events and counters, availability. Each actor takes what it
needs of it and the actors it calls, all wired in ``Simulation.__init__``:
the broker's (``server``, ``leader``, ``sessions``, ``follower``,
``replica_manager``, ``group_coordinator``), the controller's (``controller``:
liveness; ``replication``: partition changes; their ``cluster`` view), the
clients' (``producer``; ``consumer`` and its ``fetcher``), ``faults`` and the
``timeline``. Every action the kernel runs (a message, a timer, any scheduled
event) is a handler its actor declares in ``MESSAGES`` or ``TIMERS`` (the
model's ``Next``: with ``debug.invariants`` each is checked against them).
"""

from __future__ import annotations

from ..config.distributions import Sampler
from ..config.scenario import Scenario, load_scenario
from ..config.settings import Settings, nic_ms_per_byte
from .batches import Batches, record_format
from .broker.consumer_fetch import ConsumerFetchHandler
from .broker.cpu import Cpu
from .broker.fetcher import ReplicaFetcherManager
from .broker.follower import FollowerRole
from .broker.group_coordinator import GroupCoordinator
from .broker.leader import LeaderRole
from .broker.produce import ProduceHandler
from .broker.quotas import ReplicationQuotas
from .broker.replica_manager import ReplicaManager, follower_append_times_read
from .broker.server import Server
from .broker.sessions import SessionManager
from .clients.consumer import KafkaConsumer
from .clients.fetcher import Fetcher
from .clients.network_client import NetworkClient
from .clients.producer import ProducerClient
from .clients.workload import build_workload
from .controller.cluster import ClusterView, ControllerChannel
from .controller.metadata import metadata_mode
from .controller.controller import Controller
from .controller.placement import assign_to
from .controller.replication import ReplicationControl
from .engine.collector import collector_paused
from .engine.kernel import Kernel
from .engine.network import Layout, latency_streams
from .engine.transport import Streams, Transport
from .faults import FaultInjector
from .operations import Operations
from .results.accounting import AccountFold
from .results.invariants import check_all
from .results.health import PartitionHealth
from .results.measures import INVARIANT_VIOLATION, Availability, Recorder
from .results.outcome import RunEnd, build_result
from .results.result import Result
from .results.timeline import Timeline
from .results.zones import ZoneTraffic
from .rules.lag import make_lag_rule
from .rules.modes import make_mode
from .rules.truncation import make_truncation
from .state import Broker, Partition, Replica, ReplicasOf
from .storage.disk import GIB, PageCache
from .storage.log import AppendTable, Instants
from .storage.recovery import LogRecovery


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
        mbps = settings.bandwidth_mbps  # each broker's NIC (hardware.broker.nic.gbps, or network.bandwidth.mbps)
        self.transport = Transport(self.kernel, self.brokers, draws, latency, self.layout.offset,
                                   nic_ms_per_byte(mbps / 1000.0 if mbps else None, settings.broker_machine.nic_mtu))

        # partitions, their replicas placed as Kafka places a new topic's (placement; rack-aware with racks)
        self.partitions: list[Partition] = []
        self.topic_first: dict[str, int] = {}  # topic -> its first global partition index
        # a broker an operation adds later (add_broker) is not running at the start and holds no replica
        self.added_later = sorted({op.broker for op in settings.operations if op.kind == "add_broker"})
        present = [b for b in range(settings.brokers) if b not in self.added_later]
        for t in settings.topics:
            self.topic_first[t.name] = len(self.partitions)
            placed = t.replicas or assign_to(t.partitions, t.replication_factor, present, settings.racks)
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
        self.batches = Batches([record_format(settings, p) for p in settings.producers],  # filled as producers drain
                               self.workload.records, len(self.partitions))
        # replicas[p][b]: broker b's replica of partition p; a partition's logs share one append table (log.py)
        self.replicas: list[dict[int, Replica]] = []
        clock = Instants()  # the instants at which some log appended: one column for the run (log.py)
        for part in self.partitions:
            table = AppendTable(clock=clock)
            self.replicas.append({b: Replica(part.index, b, self.batches.log(part.config.segment_bytes, table))
                                  for b in part.replicas})
        self.replicas_of = ReplicasOf(self.replicas, self.partitions_of)  # broker -> its replicas (periodic tasks)
        fold = self.workload.fold
        if fold is not None and not follower_append_times_read(settings, self.retention_on):
            # no log loses a row and no leader moves: the results' account folds as the latencies do
            fold.account = AccountFold(self.partitions, self.replicas, len(settings.producers))
        self.mode = make_mode(settings.replication, self.partitions, self.brokers, settings.broker, settings.quorum_fsync,
                              settings.kafka.hw_held_below_min_isr)
        # log.flush.interval.messages (a durable quorum fsyncs every append), and what an fsync takes
        self.flush_messages = 1 if self.mode.durable else settings.broker.log_flush_interval_messages
        self.fsync = Sampler(settings.fsync_ms, self.streams("disk")).stream
        # each broker machine: its cores and JVM (cpu), its page cache and disk (storage.disk)
        machine, costs, os = settings.broker_machine, settings.costs, settings.os
        self.cpu = Cpu(self.kernel, settings.brokers, machine.cores, costs.gc_young_mib, costs.gc_request_kib,
                       Sampler(costs.gc_pause_ms, self.streams("gc")).stream, self.streams("gc.phase"))
        cache_bytes = max(machine.memory_gib - machine.jvm_heap_gib, 0.0) * GIB
        self.caches = [PageCache(machine.disk_write_mib_per_s, machine.disk_read_mib_per_s, cache_bytes,
                                 os.dirty_background_ratio, os.dirty_ratio, os.dirty_expire_ms,
                                 Sampler(machine.disk_latency_ms, self.streams(f"disk.read[{b}]")).stream)
                       for b in range(settings.brokers)]
        self.lag_rule = make_lag_rule(settings.broker)
        self.truncation = make_truncation(self.mode.truncation or settings.kafka.truncation,
                                          kip279=settings.kafka.kip279 or self.mode.truncation is not None)
        self.recorder = Recorder(self.kernel, self.partitions)  # events and counters
        self.availability = Availability(self.kernel, self.partitions, self.writable)
        self.health = PartitionHealth(self.kernel, self.partitions)  # Kafka's partition gauges, over time
        self.quotas = ReplicationQuotas(self.kernel, settings.brokers, settings.broker.leader_replication_throttled_rate,
                                        settings.broker.follower_replication_throttled_rate)  # KIP-73 throttles

        # the actors, each built with the shared state above and the actors it calls (built before it)
        self.server = Server(self)
        self.leader = LeaderRole(self)
        self.produce = ProduceHandler(self)
        self.consumer_fetch = ConsumerFetchHandler(self)
        self.sessions = SessionManager(self)
        self.follower = FollowerRole(self)
        self.fetchers = ReplicaFetcherManager(self)
        self.replica_manager = ReplicaManager(self)
        self.metadata = metadata_mode(settings, self.streams)  # ZooKeeper or KRaft: where the controller's parts differ
        self.cluster = ClusterView(self.brokers, self.metadata)  # the brokers as the controller believes them
        self.channel = ControllerChannel(self, self.cluster, self.replica_manager)  # the controller's thread and requests
        self.replication = ReplicationControl(self, self.cluster, self.channel)
        self.controller = Controller(self, self.cluster, self.replication, self.channel)
        for b in self.added_later:  # down, unregistered, and free to register once it starts
            self.brokers[b].up = False
            self.brokers[b].unhealthy_since = 0.0
            self.cluster.live_brokers.discard(b)
        self.producer_network = NetworkClient(self, self.server)
        self.producer = ProducerClient(self, self.server, self.produce, self.producer_network)
        self.group_coordinator = GroupCoordinator(self)
        self.fetcher = Fetcher(self, self.group_coordinator.groups, self.server, self.consumer_fetch)
        self.consumer = KafkaConsumer(self, self.group_coordinator, self.fetcher)
        self.recovery = LogRecovery(self)  # recovery points and an unclean start's log recovery (storage.recovery)
        self.faults = FaultInjector(self, producer_network=self.producer_network, leader=self.leader,
                                    follower=self.follower, sessions=self.sessions, server=self.server,
                                    replica_manager=self.replica_manager, controller=self.controller,
                                    consumer=self.consumer)
        self.operations = Operations(self, self.faults, self.controller, self.replication)
        self.timeline = Timeline(self)
        self.zones = ZoneTraffic(self)  # the bytes that cross zones, per second (results.zones)
        # ... and the calls back to actors built later: answers, and who wakes whom. Every wire is here, once.
        self.leader.wire(self.server, self.produce, self.sessions, self.consumer_fetch, self.follower, self.replication)
        self.produce.wire(self.server, self.producer, self.sessions, self.leader)
        self.produce.current_leader = self.consumer_fetch.leader_hint = self.replica_manager.current_leader
        self.consumer_fetch.wire(self.server, self.fetcher)
        self.sessions.wire(self.server, self.leader, self.follower)
        self.follower.wire(self.fetchers, self.leader)
        self.fetchers.wire(self.server, self.sessions, self.leader)
        self.replica_manager.wire(self.leader, self.follower, self.replication, self.channel)
        self.producer_network.connect(self.producer)
        self.group_coordinator.connect(self.consumer)
        self.fetcher.connect(self.consumer)
        # every actor that declares handlers (MESSAGES, TIMERS)
        self.actors = (self.server, self.producer, self.producer.metadata_updater, self.producer_network, self.leader,
                       self.produce, self.consumer_fetch, self.sessions, self.follower, self.fetchers,
                       self.replica_manager, self.fetcher.metadata_updater, self.controller, self.replication,
                       self.channel, self.group_coordinator, self.fetcher, self.consumer, self.faults, self.operations,
                       self.timeline, self.zones)
        self._seen_violations: set = set()  # (property, problem) pairs already reported in debug mode

    @property
    def groups(self) -> list:
        return self.group_coordinator.groups

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

    # ---- the run ---------------------------------------------------------------------------------------------------

    @collector_paused()  # the state it builds is kept, and its event loop makes no cyclic garbage (tests/test_scale.py)
    def run(self) -> Result:
        settings = self.settings
        duration = settings.duration_ms
        if settings.debug_invariants:
            self.kernel.after_event = self._debug_check
            self.check_handlers(declared_handlers(self.actors))
        self.transport.start(None if settings.operations else self.faults.starts())
        self.replica_manager.start()
        self.replication.start()
        self.producer.start()
        self.consumer.start()
        self.faults.start()
        self.operations.start()
        self.timeline.start()
        self.zones.start()
        self.availability.note()
        self.kernel.run(duration)
        self.availability.note()
        self.availability.close(duration)
        self.producer.finish()
        self.zones.close(duration)
        window = self.operations.close(self.kernel.now)  # (its unfinished operations' events go in first)
        return build_result(RunEnd(
            settings=settings, scenario=self.scenario.to_dict(), workload=self.workload, batches=self.batches,
            partitions=self.partitions, replicas=self.replicas, topic_first=self.topic_first, groups=self.groups,
            counters=self.recorder.counters, events=self.recorder.events, timeline=self.timeline.rows,
            violations=check_all(self), unavailable_wall_ms=self.availability.wall_ms, end_ms=self.kernel.now,
            threads={"request_handler": (self.server.io_busy_ms, self.server.io_threads),
                     "network": (self.server.net_busy_ms, self.server.network_threads),
                     "replica_fetcher": self.follower.busiest_ms()},
            cpu=self.cpu, caches=self.caches, recorder=self.recorder,
            operations={"window": window, "catch_up_ms": self.operations.catch_up_ms, **self.health.close(duration),
                        "reassignment_bytes": self.quotas.moved_bytes, "produce_error_ms": self.producer.error_ms,
                        "throttled_bytes": self.quotas.throttled_bytes,
                        "under_min_isr_ms": self.health.under_min_isr_ms},
            zones=self.zones))

    def check_handlers(self, check) -> None:
        """Run `check(action)` before every action the run performs: each event the kernel runs, and, inside the
        transport's envelopes (a message's delivery, a broker timer's firing) and a broker fault's step, the handler
        each one carries."""
        transport = self.transport
        envelopes = (transport.deliver, transport.fire, self.faults.fault_step)
        transport.check = check
        self.kernel.check = lambda action: action in envelopes or check(action)

    def _debug_check(self) -> None:
        for name, problems in check_all(self).items():
            for problem in problems:
                key = (name, problem)
                if key not in self._seen_violations:
                    self._seen_violations.add(key)
                    self.recorder.event(INVARIANT_VIOLATION, -1, -1, f"{name}: {problem}")


def declared_handlers(actors):
    """A check that every action run as a message, a timer or any other scheduled event is a handler its actor
    declares (MESSAGES, TIMERS)."""
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
    scenario = load_scenario(scenario)
    with collector_paused():  # partitions, replicas and their logs, the producers' queues: built once, kept
        sim = Simulation(scenario, partitioner)
    return sim.run()
