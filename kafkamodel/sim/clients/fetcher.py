"""The consumers' Fetcher: fetch requests to the partitions' leaders (or preferred read replicas) and the buffer
poll takes from.

Each member fetches as Kafka's consumer does: one fetch per broker for all its
assigned partitions read there that have nothing buffered, at most one in flight
per broker (``fetch.min.bytes``, ``fetch.max.bytes``, ``max.partition.fetch.bytes``,
``fetch.max.wait.ms`` at the broker); what comes back waits in its buffer until a
poll takes it. A fetch unanswered for ``request.timeout.ms`` (beyond
``fetch.max.wait.ms``) is given up. The broker's side of a consumer fetch is in
``broker.consumer_fetch``.

Fetch from follower (KIP-392; Kafka's ``Fetcher.selectReadReplica`` and
``SubscriptionState``): a leader's answer may name a preferred read replica for
a partition; the member then fetches it there until ``metadata.max.age.ms`` has
passed since it was named, or the replica is offline or no longer a replica in
its metadata (the controller's view here, as for leaders), or an answer says
OFFSET_OUT_OF_RANGE, which sends it back to the leader without resetting its
position. From 3.5 (KAFKA-14379) a failed fetch (a refused or reset connection,
no answer) and the errors that ask for a metadata update (NOT_LEADER_OR_FOLLOWER,
FENCED_LEADER_EPOCH) send it back as well. The fetch names the leader epoch of
the member's metadata, which a follower checks.

Finding a moved leader (issue 35): each member has its own metadata (the leaders as the cluster's metadata
named them when it first fetched). A fetch answer's NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH or
UNKNOWN_LEADER_EPOCH, a lost connection, or a partition without a known leader asks for a metadata update
(FetchCollector.handleInitializeErrors' requestMetadataUpdate; NetworkClient on a disconnect), sent by the
producer's rule (``clients.metadata``: to the least loaded broker once ``retry.backoff.ms`` has passed since the
last answer, answered from its metadata cache one round trip later), and the member polls again after
``retry.backoff.ms``. From 3.7 (KIP-951) a NOT_LEADER_OR_FOLLOWER partition names the leader the broker's
metadata cache has (CurrentLeader, NodeEndpoints); the member takes it at once (Metadata.updatePartitionLeadership,
AbstractFetch.handleFetchSuccess) and fetches there without the backoff; the metadata update is still asked for,
as Kafka's consumer does.
"""

from __future__ import annotations

from ..protocol import (CONSUMER_CONN, FENCED_LEADER_EPOCH, NETWORK_EXCEPTION, NOT_LEADER_OR_FOLLOWER,
                        OFFSET_OUT_OF_RANGE, UNKNOWN_LEADER_EPOCH)
from ..results.measures import OFFSET_RESET
from .metadata import MetadataUpdater

RESET = -1  # position unknown: auto.offset.reset decides at the leader
BACK_TO_LEADER = (NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, NETWORK_EXCEPTION)  # 3.5: requestMetadataUpdate
ASK_METADATA = (*BACK_TO_LEADER, UNKNOWN_LEADER_EPOCH)  # errors after which the member asks for a metadata update


class MemberMetadata:
    """One member's metadata (its Metadata object): the leaders it knows, and its metadata refresh's state."""

    __slots__ = ("leaders", "epochs", "node", "config", "index", "refresh_armed", "refresh_stamp", "last_refresh_ms",
                 "member", "group")

    def __init__(self, leaders: list, epochs: list, node: int, config, member, group):
        self.leaders = leaders  # partition -> the leader it knows (-1: none)
        self.epochs = epochs  # partition -> that leader's epoch
        self.node = node  # its machine (the group's)
        self.config = config  # retry.backoff.ms, request.timeout.ms
        self.member = member
        self.group = group
        self.index = -1  # its place in the metadata updater's states
        self.refresh_armed = False  # a metadata request is scheduled or in flight
        self.refresh_stamp = 0  # the metadata request in flight
        self.last_refresh_ms = float("-inf")  # when the last metadata answer came (Metadata.lastRefreshMs)


class Fetcher:
    """Every consumer member's fetches and buffered records."""

    MESSAGES = ("handle_fetch", "refused")
    TIMERS = ("fetch_timeout",)

    def __init__(self, sim, groups: list, server, broker_side):
        self.kernel = sim.kernel
        self.send = sim.transport.send
        self.partitions = sim.partitions
        self.counters = sim.recorder.counters
        self.event = sim.recorder.event
        self.groups = groups  # the consumer groups (the broker reads their fetch settings)
        self.server_request = server.request
        self.broker_handle_consumer_fetch = broker_side.handle_consumer_fetch
        self.cluster = sim.cluster  # the brokers as the controller believes them: the members' metadata
        self.clears_on_error = sim.settings.kafka.consumer_clears_preferred_on_error  # 3.5 (KAFKA-14379)
        self.kip951 = sim.settings.kafka.kip951  # 3.7: a NOT_LEADER_OR_FOLLOWER partition names the new leader
        self.metadata_updater = MetadataUpdater(sim, "consumer_metadata_refreshes", self._answered, epochs=True,
                                                conn=CONSUMER_CONN)

    def metadata(self, g, m) -> MemberMetadata:
        """The member's metadata, the cluster's leaders when it first fetches (its first metadata request is not
        modelled)."""
        md = m.metadata
        if md is None:
            md = m.metadata = MemberMetadata([part.leader for part in self.partitions],
                                               [part.leader_epoch for part in self.partitions], g.node, g.config, m, g)
            md.index = self.metadata_updater.register(md, self._load)
        return md

    @staticmethod
    def _load(md: MemberMetadata, now: float, b: int) -> int:
        """For NetworkClient.leastLoadedNode: the member's requests in flight to broker `b` (a fetch or none)."""
        return 1 if b in md.member.pending else 0

    def _answered(self, md: MemberMetadata, leaders) -> bool:
        """A metadata answer (None: none came): a partition takes the leader it names unless the member knows a
        newer leader epoch (Metadata.updateLatestMetadata keeps the newer). True: it named a newer epoch."""
        if leaders is None:
            return False
        known, epochs = md.leaders, md.epochs
        moved = newer = False
        for p, (leader, epoch) in enumerate(zip(*leaders)):
            if epoch >= epochs[p]:
                moved = moved or known[p] != leader
                newer = newer or epoch > epochs[p]
                known[p], epochs[p] = leader, epoch
        m = md.member
        if moved and m.alive and m.waiting and m.processing is None:  # the poll loop wakes on the answer
            self.poll(md.group, m, m.token)  # (ConsumerNetworkClient.poll) and fetches from the new leaders
        return newer  # a newer leader epoch resets KIP-580's count of equivalent answers (3.7+)

    def connect(self, consumer) -> None:
        """The poll loop an answer wakes (built after it: it fetches through it)."""
        self.poll = consumer.poll

    def take(self, m, budget: int) -> tuple[list, dict]:
        """Up to `budget` buffered records, partition by partition in fetch order; the positions after them."""
        slices, positions = [], {}
        for p in list(m.buffer):
            chunks = m.buffer[p]
            while chunks and budget > 0:
                b, first, last, offset = chunks[0]
                n = min(last - first, budget)
                slices.append((b, first, first + n, offset))
                budget -= n
                if n == last - first:
                    chunks.pop(0)
                else:
                    chunks[0] = (b, first + n, last, offset + n)
                positions[p] = offset + n
            if not chunks:
                del m.buffer[p]
            if budget <= 0:
                break
        m.positions.update(positions)
        return slices, positions

    def read_replica(self, m, p: int, leader: int, now: float) -> int:
        """selectReadReplica: the preferred read replica while it is named, unexpired and online in the metadata (from
        3.5 also still a replica: Cluster.nodeIfOnline, KAFKA-14379); else the leader."""
        chosen = m.preferred.get(p)
        if chosen is None:
            return leader
        b, expires = chosen
        cluster = self.cluster
        if now > expires or b not in cluster.live_brokers or b in cluster.fenced \
                or (self.clears_on_error and b not in self.partitions[p].replicas):  # 3.5: a replica still
            del m.preferred[p]  # expired (metadata.max.age.ms), or offline / gone in the metadata: the leader
            return leader
        return b

    def send_fetches(self, g, m) -> None:
        """One fetch per broker without one in flight, for the assigned partitions with nothing buffered."""
        by_broker: dict[int, list] = {}
        now = self.kernel.now
        partitions = self.partitions
        md = self.metadata(g, m)
        known = md.leaders
        for p in m.assignment:
            if p in m.buffer:
                continue
            part = partitions[p]
            leader = known[p]  # the member's metadata
            if leader < 0:
                self.metadata_updater.request_update(md, md.index)  # no leader known: ask
                continue
            b = self.read_replica(m, p, leader, now) if m.preferred else leader
            if b not in m.pending:
                by_broker.setdefault(b, []).append((p, m.fetched.get(p, RESET), md.epochs[p]))
        for b, parts in by_broker.items():
            m.fetch_id += 1
            m.pending[b] = m.fetch_id
            m.asked[b] = parts
            counters = self.counters
            counters.consumer_fetch_requests += 1
            if any(known[p] != b for p, _, _ in parts):
                counters.consumer_fetches_from_followers += 1
            self.send(g.node, b, self.server_request,
                      (b, None, self.broker_handle_consumer_fetch, (b, g.index, m.index, m.token, m.fetch_id, parts),
                       len(parts), 0),
                      refused=self.refused, conn=CONSUMER_CONN)
            # no answer (the broker cut off or stuck): give up after request.timeout.ms
            self.kernel.schedule(now + g.config.fetch_max_wait_ms + g.config.request_timeout_ms, self.fetch_timeout,
                                 g, m, m.token, b, m.fetch_id)

    def refused(self, broker, conn, handler, args, partitions, nbytes) -> None:
        _, gi, mi, token, fid, parts = args
        self.handle_fetch(gi, mi, token, fid, broker,
                          [(p, pos, [], pos, NETWORK_EXCEPTION, -1, -1) for p, pos, _ in parts])

    def _leader_moved(self, g, m, p: int, error: int, hint: int, epoch: int) -> bool:
        """A fetch error that asks for a metadata update; True: KIP-951's hint named a newer leader, taken now."""
        md = self.metadata(g, m)
        self.metadata_updater.request_update(md, md.index)
        if hint >= 0 and epoch > md.epochs[p]:
            self.counters.consumer_leader_hints += 1
            md.leaders[p], md.epochs[p] = hint, epoch  # Metadata.updatePartitionLeadership (a newer epoch only)
            return True
        return False

    def fetch_timeout(self, g, m, token: int, broker: int, fid: int) -> None:
        if m.alive and token == m.token and m.pending.get(broker) == fid:
            del m.pending[broker]
            parts = m.asked.pop(broker, ())
            if self.clears_on_error:  # handleFetchFailure (3.5): the session's partitions go back to the leader
                for p, _, _ in parts:
                    m.preferred.pop(p, None)
            md = self.metadata(g, m)
            self.metadata_updater.request_update(md, md.index)  # the connection is closed: metadata is refreshed
            if m.waiting:
                self.poll(g, m, m.token)

    def handle_fetch(self, gi, mi, token, fid, broker, parts) -> None:
        """A fetch answer: per partition (partition, offset asked, slices, next offset, error, preferred read
        replica)."""
        g = self.groups[gi]
        m = g.members[mi]
        if not m.alive or token != m.token or m.pending.get(broker) != fid:
            return
        del m.pending[broker]
        m.asked.pop(broker, None)
        failed = hinted = False
        for p, pos, slices, nxt, error, preferred, hint_epoch in parts:
            if p not in m.fetched:
                continue
            if error:
                if error in ASK_METADATA and self._leader_moved(g, m, p, error, preferred, hint_epoch):
                    hinted = True  # KIP-951: the next fetch goes to the new leader at once
                else:
                    failed = True
                if error == OFFSET_OUT_OF_RANGE:
                    if m.preferred.pop(p, None) is not None:
                        continue  # from a follower: back to the leader, the position kept
                    m.positions[p] = m.fetched[p] = RESET  # auto.offset.reset next; what it skips is lost to the group
                    m.buffer.pop(p, None)
                    self.event(OFFSET_RESET, p, -1, f"group {g.name}: {m.id} at {pos} is out of range")
                elif self.clears_on_error and error in BACK_TO_LEADER:
                    m.preferred.pop(p, None)  # requestMetadataUpdate (3.5): and fetch from the leader
                continue
            asked = m.fetched[p]
            if asked == RESET:
                if p not in g.origin:
                    g.origin[p] = pos  # where auto.offset.reset put the group first: nothing before is its to lose
                if m.positions.get(p) == RESET:
                    m.positions[p] = pos
            elif asked != pos:
                continue  # an answer for an offset it no longer wants
            m.fetched[p] = nxt
            if slices:
                m.buffer.setdefault(p, []).extend(slices)
            if preferred >= 0:  # updatePreferredReadReplica: a new one starts its metadata.max.age.ms
                held = m.preferred.get(p)
                if held is None or held[0] != preferred:
                    m.preferred[p] = (preferred, self.kernel.now + g.config.metadata_max_age_ms)
        if m.waiting:
            if m.buffer:
                self.poll(g, m, m.token)
            elif failed:
                m.busy = True
                self.kernel.schedule(self.kernel.now + max(g.config.retry_backoff_ms, 1.0), self.poll, g, m, m.token)
            elif hinted or not m.pending:  # (KIP-951: a named leader is fetched from at once, without the backoff)
                self.poll(g, m, m.token)  # nothing came within fetch.max.wait.ms (or a replica was named): fetch again
