"""A broker machine's cores, shared by all its threads, and the JVM's stop-the-world young collections.

Kafka's threads (request handlers, network processors, replica fetchers) each
run one piece of work at a time; the machine runs at most ``cores`` of them at
once. A piece of work that is ready (its thread is free and its input is
there) takes the core that frees first, so with more busy threads than cores
work queues for a core: ``run`` returns when the work ends.

The JVM allocates as the broker reads bytes into its heap (produce requests,
fetch responses a follower reads; consumer fetches go out with ``sendfile`` and
allocate nothing) plus ``gc.request.kib`` per request. Every ``gc.young.mib``
allocated, G1 runs a young collection: a stop-the-world pause drawn from
``gc.pause.ms`` during which no thread of the broker runs (the kernel still
moves packets and writes dirty pages back). Work that is running when a pause
starts stretches by the pause; work that becomes ready during it starts after
it. Pauses per second therefore follow the allocation rate: (bytes allocated
per second / young generation) collections of the pause's mean length. A run
starts each broker's young generation filled to a uniformly random point (as
a broker that has been running is found), so even a run shorter than the
time between two collections meets them at their rate.

``cores: null`` removes the core limit (pauses still stop the broker).
"""

from __future__ import annotations

from heapq import heapify, heapreplace

MIB = 1048576.0


class Cpu:
    """Every broker's cores and collections."""

    __slots__ = ("cores", "free", "paused_until", "busy_ms", "young_bytes", "request_bytes", "allocated",
                 "pause_draws", "pause_ms", "pauses", "kernel", "run")

    def __init__(self, kernel, brokers: int, cores: int | None, young_mib: float, request_kib: float, pause_draws,
                 rng=None):
        self.cores = cores
        self.free = None if cores is None else [[0.0] * cores for _ in range(brokers)]  # broker -> cores' free times
        self.paused_until = [0.0] * brokers  # broker -> end of its current (or last) collection
        self.busy_ms = [0.0] * brokers  # broker -> CPU time its threads spent
        self.young_bytes = young_mib * MIB if young_mib > 0 else float("inf")  # a collection every this many bytes
        self.request_bytes = request_kib * 1024.0  # garbage one request leaves
        # broker -> bytes allocated since its last collection: a broker that has been running has its young
        # generation filled to a point anywhere in it (uniform), so a short run does not start every broker just
        # after a collection
        self.allocated = ([0.0] * brokers if rng is None or self.young_bytes == float("inf")
                          else (rng.random(brokers) * self.young_bytes).tolist())
        self.pause_draws = pause_draws  # an iterator of pause lengths (ms)
        self.pause_ms = [0.0] * brokers  # broker -> time stopped by collections
        self.pauses = [0] * brokers
        self.kernel = kernel
        self.run = self._run_unlimited if cores is None else self._run_on_cores  # (bound once: a call per work)

    def _run_on_cores(self, broker: int, ready: float, cost: float) -> float:
        """Work of `cost` ms that may start at `ready` on `broker`: when it ends (on the core that frees first;
        a collection holds every core, so no pause check is needed here)."""
        self.busy_ms[broker] += cost
        cores = self.free[broker]
        first = cores[0]
        end = (ready if ready > first else first) + cost
        heapreplace(cores, end)
        return end

    def _run_unlimited(self, broker: int, ready: float, cost: float) -> float:
        """As ``_run_on_cores`` without a core limit: only a collection holds the work back."""
        self.busy_ms[broker] += cost
        stopped = self.paused_until[broker]
        return (ready if ready > stopped else stopped) + cost

    def allocate(self, broker: int, nbytes: float) -> None:
        """The broker read `nbytes` into its heap for a request (plus the request's own garbage)."""
        a = self.allocated[broker] + nbytes + self.request_bytes
        if a < self.young_bytes:
            self.allocated[broker] = a
            return
        self.allocated[broker] = a - self.young_bytes  # the young generation filled: collect now
        self._collect(broker)

    def _collect(self, broker: int) -> None:
        """A young collection now: every thread of the broker stops for the pause."""
        pause = next(self.pause_draws)
        now = self.kernel.now
        start = self.paused_until[broker]
        start = now if now > start else start  # (a collection due during one runs right after it)
        self.paused_until[broker] = start + pause
        self.pause_ms[broker] += pause
        self.pauses[broker] += 1
        if self.free is not None:  # the core that runs something now finishes it later; an idle one is held
            cores = self.free[broker]
            for i, f in enumerate(cores):
                cores[i] = (f if f > start else start) + pause
            heapify(cores)

    def reset(self, broker: int) -> None:
        """The broker's process died: its threads start idle and its heap empty."""
        if self.free is not None:
            self.free[broker] = [0.0] * self.cores
        self.allocated[broker] = 0.0
