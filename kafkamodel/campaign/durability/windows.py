"""The failure process over years, cheaply: one partition's replicas, failure windows, failure biasing.

A partition's ``n`` replicas sit on ``n`` brokers, replica ``i`` in zone
``zones[i]``. Processes (Poisson, rates per year):

* ``crash`` of a broker that is up (the process restarts after
  ``broker.restart.ms``; its log survives);
* ``disk_loss``: its machine fails (back after ``machine.replace.hours`` with an
  empty disk);
* ``power_loss`` of a zone: every up broker in it at once (unflushed data gone;
  back after ``broker.restart.ms``);
* ``isolate``: a zone outage, every up broker in it unreachable for
  ``zone.outage.hours`` (nothing lost).

Correlation is explicit: a zone's event hits every replica in that zone at the
same instant. A broker that is down (or rebuilding) is out of the ISR and has
no further failures until it is back; back, it is in sync again (its catch-up
is part of its down time).

**Cycles.** With every replica up the process is memoryless, so time splits
into independent cycles: a healthy stretch (mean ``1 / rate of any event``)
and a *window*, from the first event until every replica is back. Losses can
only happen inside windows, at *critical events*: an event that hits the
partition's leader (the first in-sync replica in assignment order) or leaves
no replica in sync. Each critical event is described by its *pattern*: the
replicas still down at that moment, in the order they went down (with what
took them down), the event itself, and the order they come back in. Whether a
pattern loses acknowledged records, and how many, is for the detailed model
(``estimate``); this module only finds them and weighs them.

**Rare events: failure biasing** (importance sampling, as in Shahabuddin's
balanced failure biasing for Markovian dependability models, here for fixed
repair times). Inside a window every failure rate is multiplied by ``beta``,
chosen at each event from what is known then (so the change of measure is
valid): ``beta = max(1, c / (rate * time to the next return))``, which makes a
further failure before the next return about as likely as ``1 - e^-c``. Each
quantity is weighted by the likelihood ratio ``L`` of the path so far: a
failure multiplies ``L`` by ``1 / beta``, a stretch of length ``d`` without
one by ``exp((beta - 1) rate d)``. Then E[f] = E_biased[f L] for every
quantity, and the estimates are renewal-reward ratios over cycles.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

UP = 0
CRASH, DISK_LOSS, POWER_LOSS, ISOLATE = "crash", "disk_loss", "power_loss", "isolate"
BIAS = 1.0  # c: expected further failures before the next return, under the biased measure


@dataclass(frozen=True)
class Rates:
    """Per replica and zone, in years: what the window simulation draws from."""

    crash: float  # per broker
    restart: float  # years down after a crash or a power loss
    machine: float  # per broker
    replace: float  # years rebuilding after a machine failure
    power_loss: dict  # zone -> per year
    outage: dict  # zone -> per year
    outage_years: float
    exponential: bool = False  # down times exponential with these means (the Markov chain's law) instead of fixed


@dataclass(frozen=True)
class Critical:
    pattern: tuple  # ((kind, (replica, ...)), ...): what is down, in order, ending with this event
    returns: tuple  # replica indices in the order they come back
    weight: float  # likelihood ratio at the event
    exposure: float  # weighted time from the window's start to the event


@dataclass
class Window:
    criticals: list = field(default_factory=list)  # Critical, in time order
    exposure: float = 0.0  # weighted length of the window
    unavailable: float = 0.0  # weighted time with fewer in-sync replicas than needed to accept writes
    events: int = 0


def _processes(zones: Sequence[str], rates: Rates, down: list) -> list[tuple[float, str, tuple]]:
    """(rate, kind, replicas hit) of every process that can fire now."""
    up = [i for i in range(len(zones)) if down[i] is None]
    out = []
    for i in up:
        if rates.crash > 0:
            out.append((rates.crash, CRASH, (i,)))
        if rates.machine > 0:
            out.append((rates.machine, DISK_LOSS, (i,)))
    for zone in sorted(set(zones)):
        hit = tuple(i for i in up if zones[i] == zone)
        if not hit:
            continue
        if rates.power_loss.get(zone, 0) > 0:
            out.append((rates.power_loss[zone], POWER_LOSS, hit))
        if rates.outage.get(zone, 0) > 0:
            out.append((rates.outage[zone], ISOLATE, hit))
    return out


def healthy_rate(zones: Sequence[str], rates: Rates) -> float:
    """Rate (per year) at which a window opens: any process with every replica up."""
    return sum(r for r, _, _ in _processes(zones, rates, [None] * len(zones)))


def _duration(kind: str, rates: Rates, rng: np.random.Generator) -> float:
    mean = {CRASH: rates.restart, POWER_LOSS: rates.restart, DISK_LOSS: rates.replace, ISOLATE: rates.outage_years}[kind]
    return float(rng.exponential(mean)) if rates.exponential else mean


def window(zones: Sequence[str], rates: Rates, needed: int, rng: np.random.Generator, bias: float = BIAS) -> Window:
    """One window, from its first event until every replica is back (see the module's docstring).

    `needed`: in-sync replicas the partition needs to accept the producers' writes (min.insync.replicas for
    acks=all, 1 otherwise); time below it is unavailable."""
    n = len(zones)
    down: list = [None] * n  # replica -> (order it went down, kind, back at) or None when up
    w = Window()
    t, weight, order = 0.0, 1.0, 0
    procs = _processes(zones, rates, down)
    total = sum(r for r, _, _ in procs)
    first = True
    while True:
        if first:
            pick = rng.random() * total
            dt = 0.0
        else:
            back = min(d[2] for d in down if d is not None)
            procs = _processes(zones, rates, down)
            total = sum(r for r, _, _ in procs)
            span = back - t
            beta = max(1.0, bias / (total * span)) if total > 0 and span > 0 else 1.0
            dt = float(rng.exponential(1.0 / (beta * total))) if total > 0 else math.inf
            stretch = min(dt, span)
            grow = (beta - 1.0) * total  # d(log L)/dt while nothing fires
            in_sync = sum(d is None for d in down)
            seg = weight * (math.expm1(grow * stretch) / grow if grow > 0 else stretch)
            w.exposure += seg
            if in_sync < needed:
                w.unavailable += seg
            weight *= math.exp(grow * stretch)
            t += stretch
            if dt >= span:  # the next return comes first
                for i in range(n):
                    if down[i] is not None and down[i][2] <= t:
                        down[i] = None
                if all(d is None for d in down):
                    return w
                continue
            weight /= beta
            pick = rng.random() * total
        first = False
        for r, kind, hit in procs:
            pick -= r
            if pick < 0:
                break
        leader = next((i for i in range(n) if down[i] is None), None)
        for i in hit:
            down[i] = (order, kind, t + _duration(kind, rates, rng))
        order += 1
        w.events += 1
        if leader in hit or all(d is not None for d in down):
            w.criticals.append(Critical(_pattern(down), _returns(down), weight, w.exposure))


def _pattern(down: list) -> tuple:
    steps: dict = {}
    for i, d in enumerate(down):
        if d is not None:
            steps.setdefault((d[0], d[1]), []).append(i)
    return tuple((kind, tuple(ix)) for (_, kind), ix in sorted(steps.items()))


def _returns(down: list) -> tuple:
    return tuple(i for _, i in sorted((d[2], i) for i, d in enumerate(down) if d is not None))


@dataclass(frozen=True)
class Cycles:
    """N cycles of one replica layout: each window's critical events, weighted, plus what the ratios need."""

    healthy_years: float  # mean healthy stretch: 1 / rate at which windows open
    windows: list  # Window


def sample(zones: Sequence[str], rates: Rates, needed: int, n: int, seed, bias: float = BIAS) -> Cycles:
    rng = np.random.default_rng(seed)
    rate = healthy_rate(zones, rates)
    if rate == 0:
        return Cycles(math.inf, [])
    return Cycles(1.0 / rate, [window(zones, rates, needed, rng, bias) for _ in range(n)])


@dataclass(frozen=True)
class Estimate:
    rate: float  # per year
    low: float  # 95%
    high: float


Z95 = 1.959963984540054


def ratio(a: np.ndarray, b: np.ndarray) -> Estimate:
    """Renewal-reward: E[a] / E[b] per cycle, with a 95% interval by the delta method; with no event observed,
    0 and the rule of three's bound (3 events over the cycles' total time) as the high end."""
    n = len(a)
    if n == 0:  # no window ever opens: no failure, no loss
        return Estimate(0.0, 0.0, 0.0)
    mb = float(b.mean())
    if not np.any(a):
        return Estimate(0.0, 0.0, 3.0 / float(b.sum()))
    r = float(a.mean()) / mb
    sd = float(np.std(a - r * b, ddof=1)) / (mb * math.sqrt(n)) if n > 1 else math.inf
    return Estimate(r, max(0.0, r - Z95 * sd), r + Z95 * sd)


def loss_rate(cycles: Cycles, loses) -> Estimate:
    """Critical events that lose (``loses(critical)`` true) per year: each cycle counts its first such event,
    with its time truncated there (so 1 / rate is the mean time to the first loss)."""
    a, b = [], []
    for w in cycles.windows:
        hit = next((c for c in w.criticals if loses(c)), None)
        a.append(hit.weight if hit else 0.0)
        b.append(cycles.healthy_years + (hit.exposure if hit else w.exposure))
    return ratio(np.array(a), np.array(b))


def per_year(cycles: Cycles, value) -> Estimate:
    """The yearly sum of ``value(critical)`` over every critical event (e.g. records lost)."""
    a = np.array([sum(c.weight * value(c) for c in w.criticals) for w in cycles.windows])
    b = np.array([cycles.healthy_years + w.exposure for w in cycles.windows])
    return ratio(a, b)


def unavailable_share(cycles: Cycles) -> Estimate:
    """Share of time the partition refuses writes (fewer in-sync replicas than needed)."""
    a = np.array([w.unavailable for w in cycles.windows])
    b = np.array([cycles.healthy_years + w.exposure for w in cycles.windows])
    return ratio(a, b)
