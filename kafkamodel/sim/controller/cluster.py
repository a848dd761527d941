"""The brokers as the controller sees them (Kafka's ClusterControlManager; ZooKeeper's registered brokers),
and the controller's channel to them (ControllerChannelManager: LeaderAndIsr).

What the controller believes is kept apart from what is true (``state.Broker``): a broker is live here
while its session holds, whatever its process is doing.
"""

from __future__ import annotations

from ..protocol import CONTROLLER
from ..state import Partition


class ClusterView:
    """Registrations and the controller role."""

    __slots__ = ("brokers", "live_brokers", "broker_epoch", "controller_broker")

    def __init__(self, brokers: list, kraft: bool):
        self.brokers = brokers  # the brokers themselves (whether the role's holder still runs)
        self.live_brokers: set[int] = set(range(len(brokers)))  # brokers with a live session, as it saw
        self.broker_epoch = [0] * len(brokers)  # broker -> the incarnation it last registered (KIP-380's epoch)
        self.controller_broker = CONTROLLER if kraft else 0  # who holds the role: a broker (-1: none can), the quorum

    def active(self) -> bool:
        """Does a controller hold the role now (KRaft: always; ZooKeeper: a running broker)?"""
        c = self.controller_broker
        return c == CONTROLLER or (c >= 0 and self.brokers[c].healthy)


class ControllerChannel:
    """LeaderAndIsr from the controller to the brokers."""

    def __init__(self, sim, view: ClusterView, replica_manager):
        self.send = sim.transport.send
        self.partitions = sim.partitions
        self.partitions_of = sim.partitions_of
        self.view = view
        self.handle_leader_and_isr = replica_manager.handle_leader_and_isr
        self.handle_stop_replica = replica_manager.handle_stop_replica

    def send_partition(self, part: Partition) -> None:
        """LeaderAndIsr to every live replica of the partition."""
        view = self.view
        src = view.controller_broker
        for r in part.replicas:
            if r in view.live_brokers:
                self.send(src, r, self.handle_leader_and_isr,
                          (r, part.index, part.leader, part.leader_epoch, part.isr, view.broker_epoch[r]))

    def send_stop_replica(self, b: int, p: int) -> None:
        """StopReplica (with delete) to broker b for partition p: a reassignment removed its replica."""
        view = self.view
        self.send(view.controller_broker, b, self.handle_stop_replica, (b, p, view.broker_epoch[b]))

    def send_state(self, b: int) -> None:
        """LeaderAndIsr for every partition broker b holds (the controller's channel resends on reconnect)."""
        view = self.view
        for p in self.partitions_of[b]:
            part = self.partitions[p]
            self.send(view.controller_broker, b, self.handle_leader_and_isr,
                      (b, p, part.leader, part.leader_epoch, part.isr, view.broker_epoch[b]))
