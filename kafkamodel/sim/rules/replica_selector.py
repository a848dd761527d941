"""Which replica a consumer reads from (KIP-392): Kafka's ``ReplicaSelector``s and the leader's choice of a
preferred read replica.

* ``RackAwareReplicaSelector.select`` as Kafka's (``org.apache.kafka.common.replica``, unchanged from 2.4 to 4.x):
  with a ``client.rack``, the replicas in that rack; none there: the leader; the leader among them: the leader;
  else the most caught-up (``ReplicaView.comparator``: the highest LEO, then the shortest time since it was last
  caught up, then the highest broker id). Without a ``client.rack``: the leader.
* ``LeaderSelector``: always the leader (Kafka's default class; unset is the same).
* ``preferred_read_replica``: ``ReplicaManager.findPreferredReadReplica``, the leader's side. Only a leader
  answers with one, only to a consumer, only when the selector picks a replica other than the leader. The
  candidates are the followers whose LEO (as the leader knows it: the offset of their last fetch) has the fetch
  offset and whose log start is at or below it, each with its time since last caught up; from 3.4
  (KAFKA-14372) only the ISR's members, before it any such replica, however far behind.

Pure functions of the views they are given: Kafka's own test case (``ReplicaSelectorTest.testSameRackSelector``)
pins them in ``tests/test_zones.py``.
"""

from __future__ import annotations

from typing import NamedTuple

from ...config.settings import LEADER_SELECTOR, RACK_AWARE_SELECTOR


class ReplicaView(NamedTuple):
    """Kafka's ``ReplicaView``: what a selector knows of a replica."""

    broker: int  # endpoint().id()
    rack: str | None  # endpoint().rack()
    log_end_offset: int
    time_since_last_caught_up_ms: float  # 0 for the leader


def most_caught_up(views) -> ReplicaView:
    """max by ``ReplicaView.comparator()``: LEO, then the shortest time since caught up, then the highest id."""
    return max(views, key=lambda v: (v.log_end_offset, -v.time_since_last_caught_up_ms, v.broker))


class LeaderSelector:
    name = LEADER_SELECTOR

    @staticmethod
    def select(client_rack: str | None, replicas: list, leader: ReplicaView) -> ReplicaView:
        return leader


class RackAwareReplicaSelector:
    name = RACK_AWARE_SELECTOR

    @staticmethod
    def select(client_rack: str | None, replicas: list, leader: ReplicaView) -> ReplicaView:
        """`replicas`: the partition view's replicas (the leader among them)."""
        if not client_rack:
            return leader
        same = [v for v in replicas if v.rack == client_rack]
        if not same:
            return leader
        if leader in same:
            return leader  # the leader if it is in this rack
        return most_caught_up(same)


SELECTORS = {LEADER_SELECTOR: LeaderSelector, RACK_AWARE_SELECTOR: RackAwareReplicaSelector}


def make_selector(class_name: str | None):
    """The broker's replica.selector.class as a selector, or None when unset (Kafka's replicaSelectorOpt)."""
    return None if class_name is None else SELECTORS[class_name]


def preferred_read_replica(selector, client_rack: str | None, leader: ReplicaView, followers: list,
                           fetch_offset: int, in_isr_only: bool, isr) -> int:
    """findPreferredReadReplica on the leader: the broker to name in the answer, or -1 (read here).
    `followers`: (ReplicaView, log start offset) of every other replica, as the leader knows them."""
    views = [leader]
    for view, log_start in followers:
        if in_isr_only and view.broker not in isr:
            continue  # KAFKA-14372 (3.4): the follower may lag behind
        if view.log_end_offset >= fetch_offset and log_start <= fetch_offset:
            views.append(view)
    chosen = selector.select(client_rack, views, leader)
    return -1 if chosen == leader else chosen.broker
