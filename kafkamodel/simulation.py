"""``simulate(scenario)``: the cluster, its network and clock, wired together.

The protocol lives in the actor modules, one job each: ``producer`` (the
client), ``replication`` (leader and follower), ``controller`` (failure
detection, elections, ISR metadata) and ``faults`` (scheduled faults).
This module holds the shared machinery: message delivery, broker timers,
availability accounting and the run itself.
"""

from __future__ import annotations

import numpy as np

from .consumer import ConsumerActor
from .controller import ControllerActor
from .distributions import Sampler
from .faults import FaultActor
from .invariants import check_all
from .kernel import Kernel
from .producer import ProducerActor
from .replication import ReplicationActor, make_commit_rule, make_lag_rule, make_truncation
from .result import Result, build_result
from .scenario import Scenario, load_scenario
from .state import Broker, Partition, Replica
from .workload import build_workload

CLIENT = -1  # node id of the producers (clients never fail)
CONTROLLER = -2  # node id of the controller (ZooKeeper or KRaft quorum; it never fails here)

# The order of the children of the run's SeedSequence: one stream per source of randomness.
STREAMS = ("network",)


class Simulation(ProducerActor, ConsumerActor, ReplicationActor, ControllerActor, FaultActor):
    def __init__(self, scenario: Scenario, partitioner=None):
        self.scenario = scenario
        self.kernel = Kernel()
        self.events: list[tuple] = []  # (time_ms, kind, topic, partition, broker, detail)
        self.stats = dict.fromkeys(
            ("isr_shrinks", "isr_expands", "leader_elections", "unclean_leader_elections",
             "not_enough_replicas_errors", "truncated_offsets", "committed_records_truncated",
             "produce_requests", "fetch_requests"), 0)
        broker_cfg = scenario["broker"]
        self.broker_cfg = broker_cfg
        self.flush_messages = broker_cfg["log.flush.interval.messages"] or 0  # 0: never forced
        self.fetch_wait_ms = float(broker_cfg["replica.fetch.wait.max.ms"])  # a follower fetch's long poll
        self._seen_violations: set = set()  # (property, problem) pairs already reported in debug mode
        self.quorum = scenario["replication"] == "quorum"

        seeds = np.random.SeedSequence(scenario["seed"])
        producer_count = len(scenario["producers"])
        children = seeds.spawn(len(STREAMS) + 2 * producer_count + 1)
        self.latency = Sampler(scenario["network"]["latency.ms"], np.random.default_rng(children[0]))
        # one latency stream per kind of connection (send's `conn`): 0 brokers and producers, 1 consumers and
        # their coordinator (the last child), so a consumer-side change (commit policy, a consumer crash)
        # leaves producers and replication on the same draws
        self.draws = (self.latency, Sampler(scenario["network"]["latency.ms"], np.random.default_rng(children[-1])))
        mbps = scenario["network"]["bandwidth.mbps"]
        self.ms_per_byte = 8.0 / (mbps * 1000.0) if mbps else 0.0  # transfer time of one byte
        producer_rngs = [
            (np.random.default_rng(children[len(STREAMS) + 2 * i]), np.random.default_rng(children[len(STREAMS) + 2 * i + 1]))
            for i in range(producer_count)
        ]

        self.brokers = [Broker(b) for b in range(scenario["brokers"])]
        self.cuts: dict[tuple[int, int], int] = {}  # (from, to) -> active partial isolations dropping that link
        self.channel_clock: dict[tuple, float] = {}  # (from, to, conn) -> arrival time of its latest message
        self.partitions: list[Partition] = []
        self.topic_first: dict[str, int] = {}
        n = len(self.brokers)
        for t in scenario["topics"]:
            self.topic_first[t["name"]] = len(self.partitions)
            rf = t["replication.factor"]
            min_isr = t["min.insync.replicas"] or min(broker_cfg["min.insync.replicas"], rf)
            unclean = t["unclean.leader.election.enable"]
            unclean = broker_cfg["unclean.leader.election.enable"] if unclean is None else unclean
            for p in range(t["partitions"]):
                replicas = tuple((p + i) % n for i in range(rf))
                part = Partition(len(self.partitions), t["name"], p, replicas, min_isr, unclean)
                part.segment_bytes = t["segment.bytes"] or broker_cfg["log.segment.bytes"]
                part.retention_ms = t["retention.ms"] or broker_cfg["log.retention.ms"]
                part.retention_bytes = t["retention.bytes"] or broker_cfg["log.retention.bytes"]
                self.partitions.append(part)
        # replicas[p][b]: broker b's replica of partition p
        self.replicas: list[dict[int, Replica]] = [
            {b: Replica(part.index, b) for b in part.replicas} for part in self.partitions
        ]
        self.partitions_of: list[list[int]] = [[] for _ in self.brokers]
        for part in self.partitions:
            for b in part.replicas:
                self.partitions_of[b].append(part.index)
        self.majority = [len(part.replicas) // 2 + 1 for part in self.partitions]
        duration = float(scenario["duration.ms"])
        self.retention_on = any(  # keep segments only when retention can act within the run
            part.retention_bytes is not None or (part.retention_ms is not None and part.retention_ms < duration)
            for part in self.partitions)

        self.commit_rule = make_commit_rule(self)
        self.lag_rule = make_lag_rule(broker_cfg)
        self.truncation = make_truncation("leader_epoch" if self.quorum else broker_cfg["truncation"])

        self.workload = build_workload(scenario, self.topic_first, producer_rngs, partitioner)
        self.init_controller()
        self.init_producers(producer_rngs)
        self.init_consumers()
        self.init_faults()

    # ---- messages and timers -------------------------------------------------

    def reachable(self, a: int, b: int) -> bool:
        """Can a message go from node a to node b now (isolation and cut links)?"""
        brokers = self.brokers
        if (a >= 0 and brokers[a].isolated) or (b >= 0 and brokers[b].isolated):
            return False
        return not self.cuts or (a, b) not in self.cuts

    def send(self, src: int, dst: int, action, args: tuple, fetch: bool = False, refused=None, nbytes: int = 0,
             conn: int = 0) -> None:
        """A one-way message: delivered after a latency draw (plus nbytes over the
        bandwidth, when one is set) unless a fault eats it. Messages of one
        connection (`src`, `dst`, `conn`) arrive in order; each kind of connection
        (`conn`: 0 brokers and producers, 1 consumers) draws from its own stream."""
        brokers = self.brokers
        if src >= 0 and brokers[src].isolated:
            return
        if self.cuts and (src, dst) in self.cuts:
            return
        latency = self.draws[conn]()
        if nbytes and self.ms_per_byte:
            latency += nbytes * self.ms_per_byte
        if fetch:
            factor = max(brokers[src].slow if src >= 0 else 1.0, brokers[dst].slow if dst >= 0 else 1.0)
            latency *= factor
        at = self.kernel.now + latency
        channel = (src, dst, conn)  # one TCP connection: in order, as sent
        last = self.channel_clock.get(channel, 0.0)
        if at < last:
            at = last
        self.channel_clock[channel] = at
        self.kernel.schedule(at, self._deliver, src, dst, action, args, refused, conn)

    def _deliver(self, src: int, dst: int, action, args: tuple, refused, conn: int) -> None:
        brokers = self.brokers
        if src >= 0 and brokers[src].isolated:
            return
        if self.cuts and (src, dst) in self.cuts:
            return
        if dst >= 0:
            b = brokers[dst]
            if not b.up:
                if refused is not None:  # the connection is refused: the sender learns it
                    self.send(CLIENT, src, refused, args, conn=conn)
                return
            if b.isolated:
                return
            if b.paused:
                b.deferred.append((action, args))
                return
        action(*args)

    def timer(self, broker: int, delay: float, action, *args) -> None:
        """A timer of a broker's process: void if the process dies, held while paused."""
        self.kernel.schedule(self.kernel.now + delay, self._fire, broker, self.brokers[broker].incarnation, action, args)

    def _fire(self, broker: int, incarnation: int, action, args: tuple) -> None:
        b = self.brokers[broker]
        if b.incarnation != incarnation or not b.up:
            return
        if b.paused:
            b.deferred.append((action, args))
            return
        action(*args)

    def event(self, kind: str, partition: int = -1, broker: int = -1, detail: str = "") -> None:
        part = self.partitions[partition] if partition >= 0 else None
        self.events.append(
            (self.kernel.now, kind, part.topic if part else "", part.number if part else -1, broker, detail)
        )

    # ---- availability --------------------------------------------------------

    def writable(self, part: Partition) -> bool:
        """Could the partition accept an acks=all write right now?"""
        leader = part.leader
        if leader < 0 or not self.brokers[leader].healthy:
            return False
        rep = self.replicas[part.index][leader]
        if not rep.is_leader or rep.leader_epoch != part.leader_epoch:
            return False
        if self.quorum:
            healthy = sum(1 for b in part.replicas if self.brokers[b].healthy)
            return healthy >= self.majority[part.index]
        return len(rep.isr) >= part.min_isr

    def note_availability(self) -> None:
        now = self.kernel.now
        for part in self.partitions:
            ok = self.writable(part)
            if ok and part.unavailable_since is not None:
                part.unavailable_ms += now - part.unavailable_since
                part.unavailable_since = None
            elif not ok and part.unavailable_since is None:
                part.unavailable_since = now

    # ---- timeline ------------------------------------------------------------

    def _sample_timeline(self, interval: float) -> None:
        now = self.kernel.now
        rows = self.timeline
        for part in self.partitions:
            leader = part.leader
            if leader >= 0 and self.brokers[leader].up:
                rep = self.replicas[part.index][leader]
                leo, hw = rep.log_end_offset, rep.high_watermark
            else:
                leo = hw = -1
            rows.append((now, part.topic, part.number, leader, part.leader_epoch, leo, hw, len(part.isr)))
        self.kernel.schedule(now + interval, self._sample_timeline, interval)

    # ---- the run -------------------------------------------------------------

    def run(self) -> Result:
        scenario = self.scenario
        duration = float(scenario["duration.ms"])
        self.timeline: list[tuple] = []
        self.start_replication()
        self.start_controller()
        self.start_producers()
        self.start_consumers()
        self.start_faults()
        interval = scenario["timeline.interval.ms"] or max(duration / 400.0, 1.0)
        self.kernel.schedule(0.0, self._sample_timeline, float(interval))
        if scenario["debug.invariants"]:
            self.kernel.after_event = self._debug_check
        self.note_availability()
        self.kernel.run(duration)
        self.note_availability()
        for part in self.partitions:
            if part.unavailable_since is not None:
                part.unavailable_ms += duration - part.unavailable_since
                part.unavailable_since = None
        return build_result(self)

    def _debug_check(self) -> None:
        for name, problems in check_all(self).items():
            for problem in problems:
                key = (name, problem)
                if key not in self._seen_violations:
                    self._seen_violations.add(key)
                    self.event("invariant_violation", -1, -1, f"{name}: {problem}")


def simulate(scenario, partitioner=None) -> Result:
    """Run one scenario (a Scenario, a dict, or a YAML path) and return its Result.

    `partitioner`, if given, is a callable (key or None, partitions) -> partition
    used by every producer instead of the scenario's partitioner.
    """
    return Simulation(load_scenario(scenario), partitioner).run()
