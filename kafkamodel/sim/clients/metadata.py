"""A client's metadata refresh (Kafka's Metadata and NetworkClient's DefaultMetadataUpdater), one rule for the
producer and the consumer.

``request_update`` is Metadata.requestUpdate: the next metadata request goes out once ``retry.backoff.ms`` has
passed since the last answer (Metadata.timeToAllowUpdate), at once if that was long ago. It goes to the least
loaded broker (NetworkClient.leastLoadedNode) and is answered one round trip later from that broker's metadata
cache as it is when the request arrives (it may be stale); no answer within ``request.timeout.ms``, or a refused
connection, counts as an answer without metadata. The client decides what an answer does (``answered``).

A client's state object carries ``refresh_armed``, ``refresh_stamp``, ``last_refresh_ms``, ``node`` (its
machine) and ``config`` (its ``retry_backoff_ms`` and ``request_timeout_ms``).
"""

from __future__ import annotations


class MetadataUpdater:
    """One client kind's metadata requests (the producers', or the consumers')."""

    MESSAGES = ("handle_metadata_request", "handle_metadata_response")
    TIMERS = ("_refresh", "_metadata_timeout")

    def __init__(self, sim, counter: str, answered, epochs: bool = False, conn: int = 0):
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
        self.states: list = []  # index -> a client's state (messages name it by index)
        self.load = {}  # index -> (state, now) -> broker -> None (backing off it) or its requests in flight

    def register(self, st, load) -> int:
        """A client's state; `load(st, now, broker)`: None when it backs off that broker, else its requests there."""
        self.states.append(st)
        self.load[len(self.states) - 1] = load
        return len(self.states) - 1

    def request_update(self, st, index: int) -> None:
        if not st.refresh_armed:
            st.refresh_armed = True
            now = self.kernel.now
            at = max(now, st.last_refresh_ms + max(st.config.retry_backoff_ms, 1.0))
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
        # refused (the broker's process is gone): the same arguments reach handle_metadata_response, no metadata
        self.send(st.node, node, self.handle_metadata_request, (index, st.refresh_stamp, None, node),
                  refused=self.handle_metadata_response, conn=self.conn)
        self.kernel.schedule(self.kernel.now + st.config.request_timeout_ms, self._metadata_timeout, index,
                             st.refresh_stamp)

    def handle_metadata_request(self, index: int, stamp: int, _, node: int) -> None:
        """At broker `node`: the answer carries its metadata cache's leaders now (and their epochs)."""
        leaders = tuple(self.metadata_cache[node])
        if self.metadata_epoch is not None:
            leaders = (leaders, tuple(self.metadata_epoch[node]))
        self.send(node, self.states[index].node, self.handle_metadata_response, (index, stamp, leaders, node),
                  conn=self.conn)

    def _metadata_timeout(self, index: int, stamp: int) -> None:
        st = self.states[index]
        if st.refresh_stamp == stamp and st.refresh_armed:  # request.timeout.ms without an answer
            st.refresh_stamp += 1
            self._done(st, None)

    def handle_metadata_response(self, index: int, stamp: int, leaders: tuple | None, node: int) -> None:
        """The metadata answer from `node` (None: the connection was refused; the next try asks another broker)."""
        st = self.states[index]
        if st.refresh_stamp != stamp:
            return
        st.refresh_stamp += 1
        self._done(st, leaders)

    def _done(self, st, leaders) -> None:
        st.refresh_armed = False
        st.last_refresh_ms = self.kernel.now
        self.answered(st, leaders)
