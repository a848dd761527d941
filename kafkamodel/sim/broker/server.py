"""Brokers spend time on requests: Kafka's SocketServer and request handler pool, as queues.

A request that reaches a broker waits for one of its ``num.io.threads``
handler threads; the handler runs it (the model's handler code runs when the
thread takes it), and its response leaves when the thread is done with it
and one of the ``num.network.threads`` network threads has written it. A
connection is muted from the moment a request is read until its response
has been sent (Kafka's ``Processor`` mutes the channel), so a producer's
in-flight requests on one connection are handled one after another, and an
acks=all request waiting for replication holds the ones behind it.

Service times (``costs``, in µs; zero makes a pool vanish) are per request,
per partition in it and per KiB it carries; ``docs/calibration.md`` says
which published measurement each default comes from. Every piece of work
also needs one of the machine's cores, and none runs during a GC pause
(``cpu``): a thread is busy from when it takes the work until the work ends.
Reading a request into the heap allocates its bytes (``cpu.allocate``).
"""

from __future__ import annotations

from collections import deque
from heapq import heapify, heappush, heapreplace


class _Muted:
    __slots__ = ("busy", "queue")

    def __init__(self) -> None:
        self.busy = False  # a request of this connection is being handled or waits for its response
        self.queue: deque = deque()  # requests read after it, waiting (handler, args, partitions, nbytes)


class Server:
    """Every broker's request queue, handler threads and network threads."""

    MESSAGES = ("request", "produce")
    TIMERS = ("_run", "_resume")

    def __init__(self, sim):
        self.kernel = sim.kernel
        self.cpu = sim.cpu
        self.cpu_run = sim.cpu.run  # the machine's cores: when a piece of work that may start then ends
        # (with a core limit, run inline per request and response: broker -> its cores' free times, CPU time spent)
        self.cores, self.cpu_busy_ms = sim.cpu.free, sim.cpu.busy_ms
        self.allocate = sim.cpu.allocate  # the JVM's heap: what a request reads into it
        # (its usual case, inline in ``request``: Cpu keeps these lists and numbers for the run)
        self.allocated, self.young_bytes, self.request_bytes = sim.cpu.allocated, sim.cpu.young_bytes, sim.cpu.request_bytes
        self.heap, self.seq = sim.kernel.events()  # (``request``'s timer, when nothing can hold it: transport.direct_until)
        self.transport = sim.transport
        self.send = sim.transport.send
        self.timer = sim.transport.timer
        s = sim.settings
        c = s.costs
        self.request_ms = (c.request_us + c.network_request_us) / 1000.0  # handler + reading the request
        self.partition_ms = c.partition_us / 1000.0
        self.byte_ms = (c.kib_us + c.crc32_kib_us + c.network_kib_us) / 1024.0 / 1000.0  # a produce's bytes
        self.write_ms = c.network_request_us / 1000.0  # a network thread writing a response
        self.write_byte_ms = c.network_kib_us / 1024.0 / 1000.0
        n = s.brokers
        self.io_threads = s.broker.num_io_threads
        self.network_threads = s.broker.num_network_threads
        self.io_free = [[0.0] * self.io_threads for _ in range(n)]  # broker -> its handler threads' free times
        self.net_free = [[0.0] * self.network_threads for _ in range(n)]  # broker -> its network threads'
        self.io_busy_ms = [0.0] * n  # broker -> handler thread time spent
        self.net_busy_ms = [0.0] * n  # broker -> network thread time spent
        self.muted: dict = {}  # connection key -> _Muted
        self.departure = 0.0  # while a handler runs: when its response may leave (the thread is done then)
        self.on_run = self._run  # bound once: it goes on the heap for every produce request

    # ---- requests in -------------------------------------------------------------------------------------------

    def request(self, broker: int, conn, handler, args: tuple, partitions: int = 1, nbytes: int = 0,
                when_done: bool = False) -> None:
        """A request read at `broker` (a fetch, a consumer's fetch, OffsetsForLeaderEpoch) waits for the handler
        thread free first (a heap: the smallest first); handler(*args) runs when the thread takes it (`when_done`:
        when the thread is done with it, as a produce request); its response leaves when the thread is done
        (``departure``)."""
        transport = self.transport
        if transport.check is not None:
            transport.check(handler)
        a = self.allocated[broker] + nbytes + self.request_bytes  # cpu.allocate's usual case inline (per request)
        if a < self.young_bytes:
            self.allocated[broker] = a
        else:
            self.allocate(broker, nbytes)
        cost = self.request_ms + self.partition_ms * partitions + self.byte_ms * nbytes
        now = self.kernel.now
        if cost > 0.0:
            free = self.io_free[broker]
            start = free[0] if free[0] > now else now
            cores = self.cores
            if cores is None:
                end = self.cpu_run(broker, start, cost)
            else:  # Cpu._run_on_cores inline (a call per request)
                self.cpu_busy_ms[broker] += cost
                cores = cores[broker]
                end = (start if start > cores[0] else cores[0]) + cost
                heapreplace(cores, end)
            heapreplace(free, end)
            self.io_busy_ms[broker] += end - start
            runs = end if when_done else start
            if runs > now:
                at = now + (runs - now)
                if at < transport.direct_until:  # transport.timer's direct case inline (the same time and order)
                    heappush(self.heap, (at, next(self.seq), self.on_run, (end, handler, args)))
                else:
                    self.timer(broker, runs - now, self.on_run, end, handler, args)
                return
            self.departure = end
        else:
            self.departure = now
        handler(*args)

    def produce(self, broker: int, conn, handler, args: tuple, partitions: int = 1, nbytes: int = 0) -> None:
        """A produce request read at `broker` on the client connection `conn`: it waits for the response to
        the one before it on that connection, then for a handler thread; handler(*args) runs when the thread
        is done with it (it validates every batch before it appends)."""
        st = self.muted.get(conn)
        if st is None:
            st = self.muted[conn] = _Muted()
        if st.busy:
            st.queue.append((handler, args, partitions, nbytes))
            return
        st.busy = True
        self.request(broker, conn, handler, args, partitions, nbytes, True)

    def hold(self, broker: int, end: float, extra: float) -> None:
        """The handler thread that ends a request at `end` stays busy `extra` longer (an fsync, or the page cache
        throttling its write, in its path: waiting, not using a core)."""
        free = self.io_free[broker]
        if end in free:
            free[free.index(end)] = end + extra
            heapify(free)
            self.io_busy_ms[broker] += extra

    def _run(self, departure: float, handler, args: tuple) -> None:
        self.departure = departure
        handler(*args)

    # ---- responses out -------------------------------------------------------------------------------------------

    def respond(self, broker: int, ready: float, dst: int, action, args: tuple, nbytes: int = 0, fetch: bool = False,
                conn=None, kind: int = 0) -> None:
        """Send a response that is ready at `ready` (the handler's `departure`, or now for one that waited
        in purgatory); a muted connection `conn` takes its next request once it has left."""
        now = self.kernel.now
        leave = ready if ready > now else now
        cost = self.write_ms + self.write_byte_ms * nbytes  # a network thread writes it
        if cost > 0.0:
            free = self.net_free[broker]
            start = free[0] if free[0] > leave else leave
            cores = self.cores
            if cores is None:
                leave = self.cpu_run(broker, start, cost)
            else:  # (as in ``request``)
                self.cpu_busy_ms[broker] += cost
                cores = cores[broker]
                leave = (start if start > cores[0] else cores[0]) + cost
                heapreplace(cores, leave)
            heapreplace(free, leave)
            self.net_busy_ms[broker] += leave - start
        self.send(broker, dst, action, args, fetch, None, nbytes, kind, leave - now)
        if conn is not None and self._waiting(conn) is not None:  # (``unmute``, one call fewer when none waits)
            self._read_next(broker, conn, leave)

    def _waiting(self, conn):
        """The muted connection's state if a request waits on it; else None (an idle connection is marked so)."""
        st = self.muted.get(conn)
        if st is None:
            return None
        if not st.queue:
            st.busy = False
            return None
        return st

    def unmute(self, broker: int, conn, at: float) -> None:
        """The connection's response has left (or there is none, acks=0): the next request read may start."""
        if self._waiting(conn) is not None:
            self._read_next(broker, conn, at)

    def _read_next(self, broker: int, conn, at: float) -> None:
        """A request waits on the connection whose response leaves (or left) at `at`: it is read then."""
        if at > self.kernel.now:
            self.timer(broker, at - self.kernel.now, self._resume, broker, conn)
        else:
            self._resume(broker, conn)

    def _resume(self, broker: int, conn) -> None:
        st = self._waiting(conn)
        if st is None:
            return
        handler, args, partitions, nbytes = st.queue.popleft()
        self.request(broker, conn, handler, args, partitions, nbytes, True)

    # ---- faults ----------------------------------------------------------------------------------------------------

    def reset(self, broker: int) -> None:
        """The broker's process died: its connections and what they queued are gone; its threads start idle."""
        self.muted = {k: v for k, v in self.muted.items() if k[-1] != broker}
        self.io_free[broker] = [0.0] * self.io_threads
        self.net_free[broker] = [0.0] * self.network_threads
        self.cpu.reset(broker)

    def forget(self, conn) -> None:
        """The client closed the connection: requests it queued are dropped."""
        self.muted.pop(conn, None)
