"""How messages and timers travel: connections, latency draws, cut links, held messages; named random streams.

* ``send`` is a one-way message over a connection ``(src, dst, conn)``:
  it arrives after an independent latency draw (plus the transfer time of
  its bytes through each broker NIC on its way, one message at a time per
  direction, when a bandwidth is set; a client's own NIC is the client's, which
  passes its sending time as ``delay``), in order with the connection's earlier
  messages (as over TCP), unless a fault eats it: an isolated sender or
  receiver, a cut link, a receiver whose process is down (then `refused`, if
  given, tells the sender), or a paused receiver, which holds it until it
  resumes.
* ``timer`` is a broker process's timer: void if the process dies, held
  while it is paused.
* In a run with no broker fault (``start``) neither check can ever fail, so
  messages and timers go onto the kernel's heap as their handlers
  themselves: the same times, the same order, less work per event. In a run
  whose broker faults are all scheduled ahead (no operations), the same holds
  for a message or timer due before the next fault's start or end while every
  broker is up, running and reachable (``expect``).
* ``Streams``: one random stream per source of randomness, found by name.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from heapq import heapify, heappop, heappush

import numpy as np

from ...config.distributions import Sampler
from ..protocol import CLIENT

INF = float("inf")


class Streams:
    """The run's random streams, one per source, each found by its name.

    Every stream is a child of the run's ``SeedSequence(seed)``. The streams
    the model had before streams were named keep the child positions they had
    (``network`` 0; producer i's ``producers[i].arrivals`` 1+2i and
    ``producers[i].keys`` 2+2i; ``consumers`` after the producers), so recorded
    runs reproduce; any other name gets a child key of its own derived from
    the name, so adding a stream moves no other stream's draws.
    """

    def __init__(self, seed: int, producers: int):
        self.seed = seed
        self.positions = {"network": 0, "consumers": 1 + 2 * producers}
        for i in range(producers):
            self.positions[f"producers[{i}].arrivals"] = 1 + 2 * i
            self.positions[f"producers[{i}].keys"] = 2 + 2 * i
        self._made: dict[str, np.random.Generator] = {}

    def key(self, name: str) -> int:
        """The stream's child key: its historical position, or one derived from its name (>= 2**32)."""
        return self.positions.get(name, (1 << 32) + zlib.crc32(name.encode()))

    def __call__(self, name: str) -> np.random.Generator:
        """The generator of the stream `name` (the same object every time)."""
        rng = self._made.get(name)
        if rng is None:
            rng = self._made[name] = np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=(self.key(name),)))
        return rng


class Link:
    """One connection (src, dst, kind of connection): a TCP stream, so its messages arrive in the order sent."""

    __slots__ = ("draws", "last", "sent")

    def __init__(self, draws) -> None:
        self.draws = draws  # the link's latency draws (an iterator: ``next`` gives one)
        self.last = 0.0  # the latest arrival of a message sent on it so far
        self.sent = 0  # record bytes sent on it so far (results.zones: the bytes that cross zones)


class Transport:
    """Message delivery and broker timers over the kernel."""

    __slots__ = ("kernel", "heap", "seq", "brokers", "draws", "links", "slow", "ms_per_byte",
                 "egress_free", "ingress_free", "cuts", "calm", "check", "direct_until", "changes", "deliver", "fire")

    def __init__(self, kernel, brokers, draws: tuple, latency: tuple, offset: int, ms_per_byte: float):
        self.kernel = kernel
        self.heap, self.seq = kernel.events()  # messages go straight onto the kernel's heap (the hot path)
        self.brokers = brokers  # Broker objects: up, paused, isolated, slow, incarnation, deferred
        self.draws = draws  # network.latency.ms's Sampler per kind of connection (protocol.DATA_CONN, CONSUMER_CONN)
        # [conn][src][dst]: the connection, with its link's latency draws (network.Layout). Indexed by node id
        # itself: the brokers 0..n-1 first, then the other nodes, whose negative ids index from the end
        by_id = [*range(offset, len(latency[0])), *range(offset)]  # node id -> its index in network's tables
        self.links = [[[Link(table[a][b]) for b in by_id] for a in by_id] for table in latency]
        self.slow = 0  # brokers slowed down now (their fetch messages take `slow` times longer)
        self.ms_per_byte = ms_per_byte  # a broker NIC's time per byte of a TCP stream (0.0: unlimited)
        self.egress_free = [0.0] * len(brokers)  # broker -> when its NIC has sent everything queued so far
        self.ingress_free = [0.0] * len(brokers)  # broker -> when its NIC has received everything so far
        self.cuts: dict[tuple[int, int], int] = {}  # (from, to) -> active partial isolations dropping that link
        self.calm = True  # no broker down, paused or isolated, no link cut: messages need no checks
        self.check: Callable | None = None  # debug: called with each action delivered or fired (the handlers' check)
        # a message or timer due before this goes on the heap as its handler: nothing can drop or hold it by then
        self.direct_until = -INF  # (start, expect)
        # when the broker faults scheduled so far start or end (a heap); None: the run's faults cannot be foreseen
        self.changes: list[float] | None = None
        self.deliver = self._deliver  # what every message runs on arrival (bound once: it goes on the heap per message)
        self.fire = self._fire  # what every timer runs when due (likewise)

    def start(self, changes: list[float] | None) -> None:
        """The run begins; `changes`: when its broker faults start (None: a broker may go down, pause or be cut off
        at a time not scheduled ahead, as an operation's steps do). With no broker fault (and no check of the
        handlers), nothing can drop, refuse or hold a message or a timer: each goes onto the kernel's heap as its
        handler itself, at the same time and in the same order, without the checks. With faults, the same holds
        while every broker is up, running and reachable, for what is due before the next fault's start or end
        (the fault's steps tell: ``expect``, ``arrived``)."""
        if changes is not None and self.check is None:
            self.changes = list(changes)
            heapify(self.changes)
        self._settle()

    def expect(self, at: float) -> None:
        """A fault's step (its start or end) is scheduled at `at`: what is due from then on goes through the
        checks until it has run."""
        if self.changes is not None:
            heappush(self.changes, at)
            self._settle()

    def arrived(self) -> None:
        """The earliest fault step expected has run."""
        if self.changes:
            heappop(self.changes)
            self._settle()

    def _settle(self) -> None:
        """Until when a message or timer may skip the checks (-INF: none may; INF: all may)."""
        changes = self.changes
        if changes is None or not self.calm:
            self.direct_until = -INF
        else:
            self.direct_until = changes[0] if changes else INF

    # ---- links ------------------------------------------------------------------------------------------

    def reachable(self, a: int, b: int) -> bool:
        """Can a message go from node a to node b now (isolation and cut links)?"""
        brokers = self.brokers
        if (a >= 0 and brokers[a].isolated) or (b >= 0 and brokers[b].isolated):
            return False
        return not self.cuts or (a, b) not in self.cuts

    def cut(self, a: int, b: int) -> None:
        """Drop messages both ways between a and b (cuts stack: each is healed once)."""
        for link in ((a, b), (b, a)):
            self.cuts[link] = self.cuts.get(link, 0) + 1
        self.refresh()

    def heal(self, a: int, b: int) -> None:
        """Undo one cut between a and b."""
        for link in ((a, b), (b, a)):
            self.cuts[link] -= 1
            if not self.cuts[link]:
                del self.cuts[link]
        self.refresh()

    def set_slow(self, b: int, factor: float) -> None:
        """Broker b's fetch messages (both ways) take `factor` times longer (1: normal again)."""
        was = self.brokers[b].slow != 1.0
        self.brokers[b].slow = factor
        self.slow += (factor != 1.0) - was

    def is_cut(self, a: int, b: int) -> bool:
        """Does some partial isolation still drop messages from a to b?"""
        return (a, b) in self.cuts

    # ---- messages -----------------------------------------------------------------------------------------

    def send(self, src: int, dst: int, action, args: tuple, fetch: bool = False, refused=None, nbytes: int = 0,
             conn: int = 0, delay: float = 0.0) -> None:
        """Deliver action(*args) at `dst` after a latency draw of the connection's kind (`fetch`: a
        replication message, slowed by a slow broker at either end; `nbytes`: record bytes it carries,
        through each broker's NIC; `delay`: it leaves that much later, when the sender is done with it)."""
        if not self.calm:
            if src >= 0 and self.brokers[src].isolated:
                return
            if self.cuts and (src, dst) in self.cuts:
                return
        link = self.links[conn][src][dst]
        latency = slowed = next(link.draws)
        if fetch and self.slow:  # late after the wire: the NICs' queues are not held while it is
            brokers = self.brokers
            slowed *= max(brokers[src].slow if src >= 0 else 1.0, brokers[dst].slow if dst >= 0 else 1.0)
        at = self.kernel.now + delay
        if nbytes:
            link.sent += nbytes
        if nbytes and self.ms_per_byte:  # a broker's NIC sends (and receives) one message at a time
            tx = nbytes * self.ms_per_byte
            if src >= 0:  # (a client's own NIC is the client's: its send comes `delay` later)
                free = self.egress_free[src]
                at = (free if free > at else at) + tx
                self.egress_free[src] = at
            if dst >= 0:
                done = self.ingress_free[dst] + tx
                if done > at + latency:  # received once the NIC is free, then late by the slowness
                    self.ingress_free[dst] = done
                    at = done + (slowed - latency)
                else:
                    self.ingress_free[dst] = at + latency
                    at += slowed
            else:
                at += slowed
        else:
            at += slowed
        if at < link.last:  # in order, as sent
            at = link.last
        link.last = at
        if at < self.direct_until:
            heappush(self.heap, (at, next(self.seq), action, args))
        else:
            heappush(self.heap, (at, next(self.seq), self.deliver, (src, dst, action, args, refused, conn)))

    def _deliver(self, src: int, dst: int, action, args: tuple, refused, conn: int) -> None:
        if not self.calm:
            brokers = self.brokers
            if src >= 0 and brokers[src].isolated:
                return
            if self.cuts and (src, dst) in self.cuts:
                return
            if dst >= 0:
                b = brokers[dst]
                if not b.up:
                    if refused is not None:  # the connection is refused: the sender learns it
                        self.send(CLIENT, src, refused, args, conn=conn)
                    return
                if b.isolated:
                    return
                if b.paused:
                    b.deferred.append((action, args))
                    return
        if self.check is not None:
            self.check(action)
        action(*args)

    def refresh(self) -> None:
        """After a broker's process, pause or isolation changed: is every broker up, running and reachable?"""
        self.calm = not self.cuts and all(b.up and not b.paused and not b.isolated for b in self.brokers)
        self._settle()

    # ---- timers and held messages ---------------------------------------------------------------------------

    def timer(self, broker: int, delay: float, action, *args) -> None:
        """A timer of a broker's process: void if the process dies, held while paused."""
        now = self.kernel.now
        at = now + delay
        at = at if at > now else now  # never in the past (as Kernel.schedule)
        if at < self.direct_until:
            heappush(self.heap, (at, next(self.seq), action, args))
        else:
            heappush(self.heap, (at, next(self.seq), self.fire, (broker, self.brokers[broker].incarnation, action, args)))

    def _fire(self, broker: int, incarnation: int, action, args: tuple) -> None:
        b = self.brokers[broker]
        if b.incarnation != incarnation or not b.up:
            return
        if b.paused:
            b.deferred.append((action, args))
            return
        if self.check is not None:
            self.check(action)
        action(*args)

    def release_held(self, broker: int) -> int:
        """A paused broker resumes: what it held runs now, in order (until it dies or pauses again)."""
        b = self.brokers[broker]
        held, b.deferred = b.deferred, []
        for action, args in held:
            if not b.up or b.paused:
                break
            if self.check is not None:
                self.check(action)
            action(*args)
        return len(held)
