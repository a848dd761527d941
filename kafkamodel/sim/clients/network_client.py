"""The producers' connections to the brokers (Kafka's NetworkClient, as the Sender uses it).

A producer keeps one connection per broker, with its requests in flight. A
request unanswered for ``request.timeout.ms`` closes the connection, failing
every request in flight on it; a refused or reset connection fails them too,
and the producer waits ``reconnect.backoff.ms`` (doubling up to
``reconnect.backoff.max.ms``) before it connects again. What happens to the
failed requests' batches is the Sender's (``producer``).

A metadata request (``clients.metadata``) goes on the connection
NetworkClient.leastLoadedNode picks, as one more request in flight there
(DefaultMetadataUpdater.maybeUpdate, sendInternalMetadataRequest): the broker
reads it after the requests before it on that connection (the channel is
muted while one is handled, ``server``), so it waits behind an acks=all
produce request in purgatory; it counts against
``max.in.flight.requests.per.connection``; and it fails with its connection
(a refusal, a reset, ``request.timeout.ms``: cancelInFlightRequests ->
handleFailedRequest -> Metadata.failedUpdate).
"""

from __future__ import annotations

from ..protocol import NETWORK_EXCEPTION, REQUEST_TIMED_OUT

RECONNECT_BACKOFF_MS = 50.0  # reconnect.backoff.ms
RECONNECT_BACKOFF_MAX_MS = 1000.0  # reconnect.backoff.max.ms


class Connection:
    """A producer's connection to one broker, as the client sees it."""

    __slots__ = ("node", "epoch", "inflight", "sent_ms", "backoff_until", "failures", "retry_armed", "timer_armed",
                 "metadata")

    def __init__(self, node: int):
        self.node = node
        self.epoch = 0  # bumps when the connection is closed or reset; answers on an older one are void
        self.inflight: dict[int, list] = {}  # request id -> its (batch, attempt) pairs, oldest first
        self.sent_ms: dict[int, float] = {}  # request id -> when it was sent
        self.timer_armed = False  # a request.timeout.ms check is scheduled
        self.backoff_until = 0.0  # no connection attempt before this time
        self.failures = 0  # consecutive refused connections
        self.retry_armed = False  # a drain is scheduled for when the backoff ends
        self.metadata = None  # (request id, updater index, stamp) of the metadata request in flight on it


class NetworkClient:
    """Every producer's connections: in-flight requests, their timeouts, refused and reset connections."""

    MESSAGES = ("handle_refused", "connection_reset", "handle_metadata_request", "handle_metadata_response")
    TIMERS = ("request_timeout",)

    def __init__(self, sim, server):
        self.kernel = sim.kernel
        self.send = sim.transport.send
        self.server = server
        self.server_forget = server.forget  # the broker's side of a closed connection

    def connect(self, sender) -> None:
        """The Sender whose requests these are (built after it: it sends through it)."""
        self.states = sender.states
        self.requests_failed = sender.requests_failed
        self.slot_freed = sender.slot_freed
        self.updater = sender.metadata_updater

    # ---- metadata requests on a producer connection -----------------------------------------------------------

    def send_metadata(self, ps, node: int, index: int, stamp: int) -> None:
        """The updater's metadata request goes out on the producer's connection to `node`: in flight there, read by
        the broker after the requests before it (the transport keeps a connection's order)."""
        conn = ps.conns[node]
        now = self.kernel.now
        req = ps.next_request = ps.next_request + 1
        conn.inflight[req] = ()  # no batches
        conn.sent_ms[req] = now
        conn.metadata = (req, index, stamp)
        key = (ps.index, conn.epoch, node)
        self.send(ps.node, node, self.server.produce,
                  (node, key, self.handle_metadata_request, (node, ps.index, conn.epoch, req, (index, stamp)), 0, 0),
                  False, self.handle_refused)
        self.sent(ps, conn, now)

    def handle_metadata_request(self, node: int, pi: int, epoch: int, req: int, payload: tuple) -> None:
        """At broker `node`, its turn on the connection come: the answer carries its metadata cache now; the
        connection takes its next request once the answer has left."""
        leaders = self.updater.cache(node)
        self.server.respond(node, self.server.departure, self.states[pi].node, self.handle_metadata_response,
                            (pi, node, epoch, req, payload, leaders), 0, False, (pi, epoch, node))

    def handle_metadata_response(self, pi: int, node: int, epoch: int, req: int, payload: tuple, leaders) -> None:
        ps = self.states[pi]
        conn = ps.conns[node]
        cfg = ps.config
        full = cfg.acks and len(conn.inflight) >= cfg.max_in_flight  # (the Sender scheduled no wake-up while it was)
        if conn.epoch != epoch or conn.inflight.pop(req, None) is None:
            return  # the connection closed since (the request failed then)
        del conn.sent_ms[req]
        conn.metadata = None
        conn.failures = 0
        index, stamp = payload
        self.updater.handle_metadata_response(index, stamp, leaders, node)
        if full:  # a slot of max.in.flight.requests.per.connection is free again
            self.slot_freed(ps, node)

    def sent(self, ps, conn: Connection, now: float) -> None:
        """A request went out on `conn`: one request.timeout.ms check per connection, at its oldest request's
        deadline."""
        if not conn.timer_armed:
            conn.timer_armed = True
            self.kernel.schedule(now + ps.config.request_timeout_ms, self.request_timeout, ps, conn.node)

    def handle_refused(self, node: int, key, handler, args: tuple, partitions: int, nbytes: int) -> None:
        """The connection to the broker was refused (its process is down): the request fails, and the
        producer backs off before connecting again."""
        _, pi, epoch, req, _ = args
        self._connection_failed(self.states[pi], node, epoch, req, NETWORK_EXCEPTION)

    def connection_reset(self, pi: int, node: int, epoch: int) -> None:
        """The broker's process died and its kernel reset the connection: every request in flight fails."""
        self._connection_failed(self.states[pi], node, epoch, None, NETWORK_EXCEPTION)

    def _connection_failed(self, ps, node: int, epoch: int, req, error: int) -> None:
        conn = ps.conns[node]
        if conn.epoch != epoch or (req is not None and req not in conn.inflight):
            return
        conn.failures += 1
        conn.backoff_until = self.kernel.now + min(RECONNECT_BACKOFF_MS * 2 ** (conn.failures - 1),
                                                   RECONNECT_BACKOFF_MAX_MS)
        self._close(ps, conn, error)

    def request_timeout(self, ps, node: int) -> None:
        """request.timeout.ms: if the oldest request in flight has waited that long, the connection closes
        (Kafka's NetworkClient), failing every request on it."""
        conn = ps.conns[node]
        conn.timer_armed = False
        if not conn.sent_ms:
            return
        oldest = next(iter(conn.sent_ms.values()))
        deadline = oldest + ps.config.request_timeout_ms
        if self.kernel.now < deadline:
            conn.timer_armed = True
            self.kernel.schedule(deadline, self.request_timeout, ps, node)
            return
        self._close(ps, conn, REQUEST_TIMED_OUT)

    def _close(self, ps, conn: Connection, error: int) -> None:
        """Close the connection: every request in flight on it fails with `error`; metadata is refreshed."""
        inflight, conn.inflight = conn.inflight, {}
        conn.sent_ms = {}
        self.server_forget((ps.index, conn.epoch, conn.node))  # what the broker had not read yet is gone
        conn.epoch += 1
        metadata, conn.metadata = conn.metadata, None
        self.requests_failed(ps, inflight.values(), error)
        if metadata is not None:  # the metadata request in flight on it failed (Metadata.failedUpdate)
            _, index, stamp = metadata
            self.updater.request_failed(index, stamp)
