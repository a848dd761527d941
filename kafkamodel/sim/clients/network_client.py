"""The producers' connections to the brokers (Kafka's NetworkClient, as the Sender uses it).

A producer keeps one connection per broker, with its requests in flight. A
request unanswered for ``request.timeout.ms`` closes the connection, failing
every request in flight on it; a refused or reset connection fails them too,
and the producer waits ``reconnect.backoff.ms`` (doubling up to
``reconnect.backoff.max.ms``) before it connects again. What happens to the
failed requests' batches is the Sender's (``producer``).
"""

from __future__ import annotations

from ..protocol import NETWORK_EXCEPTION, REQUEST_TIMED_OUT

RECONNECT_BACKOFF_MS = 50.0  # reconnect.backoff.ms
RECONNECT_BACKOFF_MAX_MS = 1000.0  # reconnect.backoff.max.ms


class Connection:
    """A producer's connection to one broker, as the client sees it."""

    __slots__ = ("node", "epoch", "inflight", "sent_ms", "backoff_until", "failures", "retry_armed", "timer_armed")

    def __init__(self, node: int):
        self.node = node
        self.epoch = 0  # bumps when the connection is closed or reset; answers on an older one are void
        self.inflight: dict[int, list] = {}  # request id -> its (batch, attempt) pairs, oldest first
        self.sent_ms: dict[int, float] = {}  # request id -> when it was sent
        self.timer_armed = False  # a request.timeout.ms check is scheduled
        self.backoff_until = 0.0  # no connection attempt before this time
        self.failures = 0  # consecutive refused connections
        self.retry_armed = False  # a drain is scheduled for when the backoff ends


class NetworkClient:
    """Every producer's connections: in-flight requests, their timeouts, refused and reset connections."""

    MESSAGES = ("handle_refused", "connection_reset")
    TIMERS = ("request_timeout",)

    def __init__(self, sim, server):
        self.kernel = sim.kernel
        self.server_forget = server.forget  # the broker's side of a closed connection

    def connect(self, sender) -> None:
        """The Sender whose requests these are (built after it: it sends through it)."""
        self.states = sender.states
        self.requests_failed = sender.requests_failed

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
        self.requests_failed(ps, inflight.values(), error)
