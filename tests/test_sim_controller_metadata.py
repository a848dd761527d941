"""controller.metadata: the two metadata modes, each rule checked against Kafka's documented one computed here
(ZooKeeper's session from the silence; KRaft's from the last heartbeat on the broker's phase, its STARTING
heartbeats every 10 ms, the controller quorum as no broker), and the mode the versions choose."""

from __future__ import annotations

import pytest

from kafkamodel.config.scenario import load_scenario
from kafkamodel.config.settings import Settings
from kafkamodel.sim.controller.metadata import KRaft, ZooKeeper, metadata_mode
from kafkamodel.sim.engine.transport import Streams
from kafkamodel.sim.protocol import CONTROLLER
from kafkamodel.sim.state import Broker


def mode(version: str, **extra):
    s = Settings.of(load_scenario({"name": "m", "seed": 3, "brokers": 4, "kafka.version": version, **extra}))
    return metadata_mode(s, Streams(s.seed, len(s.producers))), s


def test_versions_choose_the_mode_and_kraft_is_no_broker():
    zk, _ = mode("3.6")
    kraft, _ = mode("3.6", **{"kafka.metadata": "kraft"})
    only, _ = mode("4.0")
    assert type(zk) is ZooKeeper and type(kraft) is KRaft and type(only) is KRaft
    assert zk.first_controller == 0 and zk.controller_is_broker  # KafkaController on the lowest id
    assert kraft.first_controller == CONTROLLER and not kraft.controller_is_broker
    assert not zk.registers_fenced and kraft.registers_fenced  # BrokerRegistration fenced until caught up
    assert zk.metadata_after_answer and not kraft.metadata_after_answer


def test_zookeeper_session_expires_its_timeout_after_the_silence():
    zk, s = mode("2.8", **{"broker": {"zookeeper.session.timeout.ms": 18000}})
    b = Broker(1)
    b.healthy_since = 1234.0
    for silent in (1234.0, 5000.5, 77777.0):
        assert zk.session_expiry(b, silent) == silent + 18000


def test_kraft_session_expires_its_timeout_after_the_last_heartbeat():
    """BrokerHeartbeatManager: a broker's session ends broker.session.timeout.ms after its last heartbeat; heartbeats
    go every broker.heartbeat.interval.ms from its phase after it started answering (none before the first)."""
    kraft, s = mode("4.0", **{"broker": {"broker.session.timeout.ms": 9000, "broker.heartbeat.interval.ms": 2000}})
    b = Broker(2)
    b.healthy_since = 500.0
    phase = kraft.phase[2]
    assert 0.0 <= phase < 2000.0 and len(set(kraft.phase)) == 4  # drawn per broker
    beats = [b.healthy_since + phase + 2000.0 * k for k in range(100)]
    for silent in (500.0, b.healthy_since + phase - 1, b.healthy_since + phase, 10_321.5, 60_000.0):
        heard = [t for t in beats if t <= silent]
        last = heard[-1] if heard else b.healthy_since  # its registration is its first word
        assert kraft.session_expiry(b, silent) == pytest.approx(last + 9000, abs=1e-9)


@pytest.mark.parametrize("commit,expected", [(2.0, 10.0), (10.0, 10.0), (10.5, 20.0), (0.0, 0.0), (35.0, 40.0)])
def test_kraft_unfences_at_the_first_starting_heartbeat_after_its_registration_commits(commit, expected):
    kraft, _ = mode("4.0", **{"controller": {"kraft.commit.ms": commit}})
    assert kraft.caught_up_after() == expected  # STARTING heartbeats every 10 ms (BrokerLifecycleManager)
    zk, _ = mode("3.6")
    assert zk.caught_up_after() == 0.0  # a ZooKeeper registration is live at once


def test_costs_are_the_modes_own():
    zk, _ = mode("3.6", **{"controller": {"zookeeper.write.ms": 0.7, "zookeeper.read.ms": 0.3}})
    kraft, _ = mode("4.0", **{"controller": {"kraft.record.ms": 0.01, "kraft.commit.ms": 3}})
    assert (zk.partition_ms, zk.batch_ms, zk.load_ms) == (0.7, 0.0, 0.3)
    assert (kraft.partition_ms, kraft.batch_ms, kraft.load_ms) == (0.01, 3, 0.0)
