"""The event kernel: a heap of (time, sequence, action, args).

Ties in time resolve by the order of scheduling, so a run is the same every
time. There is no global state; an exception in an action propagates.
"""

from __future__ import annotations

from heapq import heappop, heappush
from itertools import count
from typing import Any, Callable

_LAST = float("inf")  # the stop entry's sequence number: after any event's


class Kernel:
    __slots__ = ("now", "_heap", "_seq", "check", "after_event")

    def __init__(self) -> None:
        self.now = 0.0  # simulated time, ms
        self._heap: list = []  # (time, sequence, action, args)
        self._seq = count()  # tie-breaker: scheduling order
        self.check: Callable[[Callable], None] | None = None  # debug: called with each action before it runs
        self.after_event: Callable[[], None] | None = None  # debug hook run after each event

    def schedule(self, at: float, action: Callable[..., Any], *args: Any) -> None:
        """Run action(*args) at time `at` (never in the past)."""
        heappush(self._heap, (at if at > self.now else self.now, next(self._seq), action, args))

    def run(self, until: float) -> None:
        """Process events up to and including time `until`.

        A stop entry ``(until, inf, None, ())`` goes on the heap first: it sorts after every event due by
        `until`, whenever scheduled (their sequence numbers are finite), and before every later one, so the
        loop pops until it meets it and needs no look at the heap's head per event."""
        heap = self._heap
        check, hook = self.check, self.after_event
        heappush(heap, (until, _LAST, None, ()))
        if check is None and hook is None:  # the hot loop; the one below is the same with the debug hooks
            while True:
                at, _, action, args = heappop(heap)
                if action is None:
                    break
                self.now = at
                action(*args)
        else:
            while True:
                at, _, action, args = heappop(heap)
                if action is None:
                    break
                self.now = at
                if check is not None:
                    check(action)
                action(*args)
                if hook is not None:
                    hook()
        self.now = until

    def events(self) -> tuple:
        """The heap and the sequence counter, for a caller that pushes (at >= now, next(seq), action, args) itself."""
        return self._heap, self._seq

    def pending(self) -> int:
        return len(self._heap)
