"""A client's metadata refresh (Kafka's Metadata and NetworkClient's DefaultMetadataUpdater), one rule for the
producer and the consumer.

``request_update`` is Metadata.requestUpdate: the next metadata request goes out once the refresh backoff has
passed since the last answer (Metadata.timeToAllowUpdate), at once if that was long ago. Before 3.7 the backoff is
``retry.backoff.ms``. From 3.7 (KIP-580) it is ExponentialBackoff(``retry.backoff.ms``, 2,
``retry.backoff.max.ms``, 0.2) at the count of failed requests in a row (``Metadata.failedUpdate``: no answer, a
refused connection), or at the count of answers in a row that moved no leader if that is longer (Metadata's
``equivalentResponseCount``, reset by an answer with a newer leader epoch in ``updateLatestMetadata``, and by a
failed request), so a client asking again and again for a leader its brokers do not know yet waits 100, 200, 400
ms, and one whose answers move leaders waits ``retry.backoff.ms`` x a factor in [0.8, 1.2]. It goes to the least
loaded broker (NetworkClient.leastLoadedNode) and is answered from that broker's metadata cache as it is when the
broker handles it (it may be stale); no answer within ``request.timeout.ms``, or a refused connection, counts as an
answer without metadata. The client decides what an answer does (``answered``). A client kind whose connections
are modelled (the producer's, ``network_client``) sends it on its connection to that broker (``channel``): it
counts as a request in flight there and waits behind the requests before it, as in Kafka, where the broker reads
one request per connection at a time; otherwise (the consumer's) it is answered on arrival, one round trip.

A client's state object carries ``refresh_armed``, ``refresh_stamp``, ``last_refresh_ms``, ``node`` (its
machine) and ``config`` (its ``retry_backoff_ms``, ``retry_backoff_max_ms``: None before 3.7, and
``request_timeout_ms``); ``answered(state, leaders)`` returns whether the answer moved a leader the client knew.
"""

from __future__ import annotations

import math

from ...config.distributions import Sampler

RETRY_BACKOFF_EXP_BASE = 2  # CommonClientConfigs.RETRY_BACKOFF_EXP_BASE
RETRY_BACKOFF_JITTER = 0.2  # CommonClientConfigs.RETRY_BACKOFF_JITTER


def exponential_backoff(initial_ms: float, max_ms: float, attempts: int, factor: float) -> float:
    """Kafka's ExponentialBackoff.backoff(attempts) (3.7+, KIP-580) with its random factor `factor` (drawn in
    [1 - jitter, 1 + jitter]): initial x 2^min(attempts, expMax) x factor in whole milliseconds, at most max,
    where expMax = log2(max / initial); the initial interval itself when max is not above it."""
    initial = min(initial_ms, max_ms)
    if max_ms <= initial:
        return initial
    exp_max = math.log(max_ms / max(initial, 1.0)) / math.log(RETRY_BACKOFF_EXP_BASE)
    term = initial * RETRY_BACKOFF_EXP_BASE ** min(attempts, exp_max)
    return min(float(math.floor(term * factor)), max_ms)


class MetadataUpdater:
    """One client kind's metadata requests (the producers', or the consumers')."""

    MESSAGES = ("handle_metadata_request", "handle_metadata_response")
    TIMERS = ("_refresh", "_metadata_timeout")

    def __init__(self, sim, counter: str, answered, epochs: bool = False, conn: int = 0, channel=None):
        self.kernel = sim.kernel
        self.send = sim.transport.send
        self.brokers = sim.brokers
        self.reachable = sim.transport.reachable
        self.metadata_cache = sim.replica_manager.metadata_leader  # broker -> partition -> leader
        self.metadata_process = sim.replica_manager.metadata_process  # broker -> the process that has its cache
        self.metadata_epoch = sim.replica_manager.metadata_epoch if epochs else None  # the answers carry the leaders'
        # epochs too (the consumer's Metadata.update keeps a partition's leader unless the answer's epoch is newer)
        self.counters = sim.recorder.counters
        self.counter = counter  # the summary count of metadata requests sent
        self.conn = conn  # the connections' kind (their latency draws): the consumers' are their own
        self.answered = answered  # (state, leaders or None) -> None: what the client does with an answer
        self.channel = channel  # the client's connections, if it sends its metadata requests on them (send_metadata)
        self.states: list = []  # index -> a client's state (messages name it by index)
        self.load = {}  # index -> (state, now) -> broker -> None (backing off it) or its requests in flight
        self.streams = sim.streams
        self.failed: list[int] = []  # index -> failed requests in a row (Metadata.attempts)
        self.equivalent: list[int] = []  # index -> answers in a row that moved no leader (equivalentResponseCount)
        self.jitter: list = []  # index -> KIP-580's random factors (3.7+), draw after draw; None before 3.7

    def register(self, st, load) -> int:
        """A client's state; `load(st, now, broker)`: None when it backs off that broker, else its requests there."""
        index = len(self.states)
        self.states.append(st)
        self.load[index] = load
        self.failed.append(0)
        self.equivalent.append(0)
        self.jitter.append(None if st.config.retry_backoff_max_ms is None else Sampler(
            {"dist": "uniform", "low": 1 - RETRY_BACKOFF_JITTER, "high": 1 + RETRY_BACKOFF_JITTER},
            self.streams(f"{self.counter}.backoff[{index}]")).stream)
        return index

    def backoff_ms(self, st, index: int) -> float:
        """Metadata.timeToAllowUpdate's wait after the last answer: retry.backoff.ms before 3.7; from 3.7 the
        larger of backoff(failed - 1) (backoff(0) with none failed) and backoff(equivalent - 1) (0 with none)."""
        cfg = st.config
        jitter = self.jitter[index]
        if jitter is None:
            return max(cfg.retry_backoff_ms, 1.0)
        failed, equivalent = self.failed[index], self.equivalent[index]
        wait = exponential_backoff(cfg.retry_backoff_ms, cfg.retry_backoff_max_ms, max(failed - 1, 0), next(jitter))
        if equivalent > 0:
            wait = max(wait, exponential_backoff(cfg.retry_backoff_ms, cfg.retry_backoff_max_ms, equivalent - 1,
                                                 next(jitter)))
        return max(wait, 1.0)

    def request_update(self, st, index: int) -> None:
        if not st.refresh_armed:
            st.refresh_armed = True
            now = self.kernel.now
            at = max(now, st.last_refresh_ms + self.backoff_ms(st, index))
            self.kernel.schedule(at, self._refresh, index)

    def least_loaded_node(self, index: int, now: float) -> int:
        """NetworkClient.leastLoadedNode: a broker the client can reach, not backing off, with the fewest of its
        requests in flight; ties go to the first from an offset (Kafka draws it at random; here the client's
        index). A paused broker is passed over: it would not answer, and the client would ask another after
        request.timeout.ms; so is a restarted process before the controller sent it every partition's metadata
        (it does not serve clients before it registered). -1: none."""
        st, load = self.states[index], self.load[index]
        n = len(self.brokers)
        best, best_key = -1, None
        serving = self.metadata_process
        for b in range(n):
            broker = self.brokers[b]
            if not broker.up or broker.paused or serving[b] != broker.incarnation or not self.reachable(st.node, b):
                continue
            inflight = load(st, now, b)
            if inflight is None:
                continue
            key = (inflight, (b - index) % n)
            if best_key is None or key < best_key:
                best, best_key = b, key
        return best

    def _refresh(self, index: int) -> None:
        st = self.states[index]
        node = self.least_loaded_node(index, self.kernel.now)
        if node < 0:
            st.refresh_armed = False
            st.last_refresh_ms = self.kernel.now
            self.answered(st, None)
            return
        st.refresh_stamp += 1
        setattr(self.counters, self.counter, getattr(self.counters, self.counter) + 1)
        if self.channel is not None:  # on the client's connection to `node`, behind its requests there
            self.channel.send_metadata(st, node, index, st.refresh_stamp)
            return
        # refused (the broker's process is gone): the same arguments reach handle_metadata_response, no metadata
        self.send(st.node, node, self.handle_metadata_request, (index, st.refresh_stamp, None, node),
                  refused=self.handle_metadata_response, conn=self.conn)
        self.kernel.schedule(self.kernel.now + st.config.request_timeout_ms, self._metadata_timeout, index,
                             st.refresh_stamp)

    def cache(self, node: int) -> tuple:
        """What a metadata answer from broker `node` carries: its metadata cache's leaders now (and their epochs)."""
        leaders = tuple(self.metadata_cache[node])
        if self.metadata_epoch is not None:
            leaders = (leaders, tuple(self.metadata_epoch[node]))
        return leaders

    def handle_metadata_request(self, index: int, stamp: int, _, node: int) -> None:
        """At broker `node`, answered on arrival."""
        leaders = self.cache(node)
        self.send(node, self.states[index].node, self.handle_metadata_response, (index, stamp, leaders, node),
                  conn=self.conn)

    def _metadata_timeout(self, index: int, stamp: int) -> None:
        st = self.states[index]
        if st.refresh_stamp == stamp and st.refresh_armed:  # request.timeout.ms without an answer
            st.refresh_stamp += 1
            self._done(st, index, None)

    def request_failed(self, index: int, stamp: int) -> None:
        """The connection that carried the request closed before its answer (NetworkClient's
        handleFailedRequest)."""
        self._metadata_timeout(index, stamp)

    def handle_metadata_response(self, index: int, stamp: int, leaders: tuple | None, node: int) -> None:
        """The metadata answer from `node` (None: the connection was refused; the next try asks another broker)."""
        st = self.states[index]
        if st.refresh_stamp != stamp:
            return
        st.refresh_stamp += 1
        self._done(st, index, leaders)

    def _done(self, st, index: int, leaders) -> None:
        """An answer (None: the request failed: Metadata.failedUpdate) and the counts its next backoff reads."""
        st.refresh_armed = False
        st.last_refresh_ms = self.kernel.now
        moved = self.answered(st, leaders)
        if leaders is None:
            self.failed[index] += 1
            self.equivalent[index] = 0
        else:
            self.failed[index] = 0
            self.equivalent[index] = 0 if moved else self.equivalent[index] + 1
