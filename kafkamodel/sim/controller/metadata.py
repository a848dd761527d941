"""The metadata mode, ZooKeeper or KRaft: one object per run that the controller's parts ask where the two differ.

``kafka.version`` and ``kafka.metadata`` choose it (docs/versions.md). What
differs, and nothing else, is here; the rest of the controller is the same
code for both:

* **who holds the controller role**: a broker (ZooKeeper's KafkaController,
  the lowest id at start), which fails with it; or the controller quorum
  (KRaft's QuorumController), whose standby takes over when the active one
  dies (``controller_crashed``);
* **what a state change costs the controller's thread**: a ZooKeeper write per
  partition (and, taking the role over, a read of every partition); a KRaft
  record per partition and one commit of the batch to the metadata log;
* **when a broker's session expires**: ZooKeeper counts
  ``zookeeper.session.timeout.ms`` from the silence; KRaft counts
  ``broker.session.timeout.ms`` from the last heartbeat, one every
  ``broker.heartbeat.interval.ms`` on the broker's own phase (drawn from the
  seed, so sessions expire in the order the brokers went silent);
* **a registration**: KRaft registers a broker fenced until it has caught up
  with the metadata log (``caught_up_after``); ZooKeeper's is live at once;
* **how decisions reach the brokers**: ZooKeeper's UpdateMetadata follows the
  LeaderAndIsr's answer (the RequestSendThread sends one request at a time);
  KRaft's brokers apply the batch's records together. A ZooKeeper controlled
  shutdown (1.1+) stops the followed replicas in one StopReplica; KRaft's
  brokers stop following from the metadata they apply. An unclean election
  leaves the partition RECOVERING in KRaft only (KIP-704).
"""

from __future__ import annotations

from ..protocol import CONTROLLER

STARTING_HEARTBEAT_MS = 10.0  # BrokerLifecycleManager: a STARTING broker's heartbeats, until it has caught up
QUORUM_FETCH_TIMEOUT_MS = 2000.0  # controller.quorum.fetch.timeout.ms's default (QuorumConfig): a voter that has not
# fetched from the leader for this long becomes a candidate


class ZooKeeper:
    """ZooKeeper mode (up to 3.9): the controller role runs on a broker; ZooKeeper (node CONTROLLER) never fails."""

    first_controller = 0  # the lowest broker id holds the role at start
    controller_is_broker = True  # a fault on `controller` crashes that broker
    registers_fenced = False
    metadata_after_answer = True  # a replica's UpdateMetadata leaves once its LeaderAndIsr is answered
    stop_replica_on_shutdown = True  # controlled shutdown (1.1+): one StopReplica for the partitions it follows
    recovering_after_unclean = False  # KIP-704 is KRaft's

    def __init__(self, settings, streams) -> None:
        c = settings.controller
        self.partition_ms = c.zookeeper_write_ms  # a write per changed partition
        self.batch_ms = 0.0
        self.load_ms = c.zookeeper_read_ms or 0.0  # a new controller reads every partition first
        self.session_timeout_ms = settings.broker.session_timeout_ms

    def session_expiry(self, broker, now: float) -> float:
        """When the session of a broker silent from `now` expires: its ZooKeeper session times out from the silence."""
        return now + self.session_timeout_ms

    def caught_up_after(self) -> float:
        return 0.0

    def controller_crashed(self, controller) -> int:
        """A fault on the controller crashes the broker that holds the role (returned)."""
        return controller.view.controller_broker


class KRaft(ZooKeeper):
    """KRaft mode (3.3+, the only mode from 4.0): the controller quorum (node CONTROLLER) holds the role."""

    first_controller = CONTROLLER
    controller_is_broker = False
    registers_fenced = True
    metadata_after_answer = False  # the brokers apply the batch's records with their partitions' state
    stop_replica_on_shutdown = False
    recovering_after_unclean = True

    def __init__(self, settings, streams) -> None:
        c = settings.controller
        self.partition_ms, self.batch_ms = c.kraft_record_ms, c.kraft_commit_ms  # a record each, one commit a batch
        self.load_ms = 0.0  # a standby holds the state already (it replays the metadata log)
        self.catch_up_ms = c.kraft_commit_ms or 0.0  # a registration committed to the metadata log
        self.session_timeout_ms = settings.broker.session_timeout_ms
        self.heartbeat_ms = settings.broker.heartbeat_interval_ms
        draws = streams("heartbeat")  # each broker's heartbeat phase after it (re)starts answering
        self.phase = [float(draws.uniform(0.0, self.heartbeat_ms)) if self.heartbeat_ms else 0.0
                      for _ in range(settings.brokers)]

    def session_expiry(self, broker, now: float) -> float:
        """From its last heartbeat: its registration, then every broker.heartbeat.interval.ms from its phase."""
        first = broker.healthy_since + self.phase[broker.id]
        last = broker.healthy_since if now < first else first + (now - first) // self.heartbeat_ms * self.heartbeat_ms
        return last + self.session_timeout_ms

    def caught_up_after(self) -> float:
        """From its registration to the heartbeat that unfences a broker. While STARTING, a broker heartbeats every
        10 ms until the controller answers that it has caught up with the metadata log (its registration committed,
        ``controller.kraft.commit.ms``); ready to unfence, it heartbeats again at once (BrokerLifecycleManager:
        scheduleNextCommunication(10 ms), SetReadyToUnfenceEvent)."""
        return -(-self.catch_up_ms // STARTING_HEARTBEAT_MS) * STARTING_HEARTBEAT_MS

    def controller_crashed(self, controller) -> int:
        """The active controller dies: a standby notices after controller.quorum.fetch.timeout.ms, wins the
        election and commits its leadership (no reload); meanwhile nothing is decided. No broker crashes (-1)."""
        controller.quorum_lost(controller.kernel.now + QUORUM_FETCH_TIMEOUT_MS + self.catch_up_ms)
        return -1


def metadata_mode(settings, streams) -> ZooKeeper:
    """The run's metadata mode, as kafka.version and kafka.metadata chose it."""
    return (KRaft if settings.kafka.kraft else ZooKeeper)(settings, streams)
