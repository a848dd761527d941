"""The event kernel's order: by time, ties in the order of scheduling, never in the past, up to `until` inclusive.

The reference is a plain list searched with ``min`` on (time, scheduling number) for every step: the order the
kernel's docstring promises, computed without a heap and without the kernel's stop entry.
"""

from __future__ import annotations

import random

import pytest

from kafkamodel.sim.engine.kernel import Kernel


def _random_schedule(seed: int, kernel_schedule, now, log: list, budget: list) -> tuple:
    """Actions that log (name, time) and schedule more: some at `now` (a zero delay), some at a time already in
    use, some in the past (clamped to now), some later; `kernel_schedule(at, action, *args)` is how they schedule."""
    rng = random.Random(seed)
    times = [0.0, 1.0, 2.5, 4.0, 7.0, 10.0]

    def act(name: str) -> None:
        log.append((name, now()))
        for _ in range(rng.choice((0, 1, 1, 2, 3))):
            if budget[0] <= 0:
                return
            budget[0] -= 1
            kind = rng.random()
            if kind < 0.3:
                at = now()  # zero delay
            elif kind < 0.4:
                at = now() - 1.0  # in the past: runs now
            elif kind < 0.7:
                at = rng.choice(times)  # ties with other events (or in the past)
            else:
                at = now() + rng.choice((0.5, 1.0, 3.0))
            kernel_schedule(at, act, f"{name}.{budget[0]}")

    return act, times


def _reference(seed: int, until: float) -> tuple[list, list]:
    """The promised order, by a linear search for the smallest (time, number) each step."""
    pending: list = []  # (time, number, action, args)
    number = [0]
    clock = [0.0]
    log: list = []

    def schedule(at, action, *args):
        pending.append((max(at, clock[0]), number[0], action, args))
        number[0] += 1

    act, times = _random_schedule(seed, schedule, lambda: clock[0], log, [400])
    for i, t in enumerate(times * 2):
        schedule(t, act, f"root{i}")
    while pending:
        entry = min(pending, key=lambda e: (e[0], e[1]))
        if entry[0] > until:
            break
        pending.remove(entry)
        clock[0] = entry[0]
        entry[2](*entry[3])
    return log, sorted((e[0], e[1]) for e in pending)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("until", [4.0, 6.0, 1000.0])
def test_the_kernel_runs_a_random_schedule_in_time_then_scheduling_order(seed, until):
    kernel = Kernel()
    log: list = []
    act, times = _random_schedule(seed, kernel.schedule, lambda: kernel.now, log, [400])
    for i, t in enumerate(times * 2):
        kernel.schedule(t, act, f"root{i}")
    kernel.run(until)
    expected, left = _reference(seed, until)
    assert log == expected
    assert kernel.now == until
    assert kernel.pending() == len(left)  # what is due later stays (and no stop entry is left behind)
    assert all(at > until for at, _ in left)


def test_an_event_scheduled_at_until_during_the_run_runs_in_it_and_a_second_run_goes_on():
    kernel = Kernel()
    ran: list = []

    def at_until():
        ran.append(("until", kernel.now))
        kernel.schedule(kernel.now, lambda: ran.append(("zero delay at until", kernel.now)))
        kernel.schedule(kernel.now + 1.0, lambda: ran.append(("later", kernel.now)))

    kernel.schedule(5.0, at_until)
    kernel.run(5.0)
    assert ran == [("until", 5.0), ("zero delay at until", 5.0)]
    kernel.run(10.0)
    assert ran[-1] == ("later", 6.0) and kernel.now == 10.0 and kernel.pending() == 0


def test_the_check_and_after_event_hooks_see_every_event_in_the_same_order():
    def build(kernel, log):
        def step(i):
            log.append((i, kernel.now))
            if i < 20:
                kernel.schedule(kernel.now + (i % 3) * 0.5, step, i + 1)
                kernel.schedule(kernel.now + 0.5, log.append, ("tick", i))
        kernel.schedule(0.0, step, 0)

    plain, hooked = Kernel(), Kernel()
    plain_log: list = []
    hooked_log: list = []
    build(plain, plain_log)
    build(hooked, hooked_log)
    checked: list = []
    after = [0]
    hooked.check = checked.append
    hooked.after_event = lambda: after.__setitem__(0, after[0] + 1)
    plain.run(100.0)
    hooked.run(100.0)
    assert hooked_log == plain_log
    assert len(checked) == after[0] == len(plain_log) == 21 + 20  # steps 0..20, a tick after each of 0..19
