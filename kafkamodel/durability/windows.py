"""The failure process over years, cheaply: one partition's replicas, failure windows, failure biasing.

A partition's ``n`` replicas sit on ``n`` brokers, replica ``i`` in zone
``zones[i]``. Processes (Poisson, rates per year):

* ``crash`` of a broker that is up (the process restarts after
  ``broker.restart.ms``; its log survives);
* ``power_loss`` of one broker that is up: its machine crashes or reboots
  (the page cache is lost: unflushed data gone; the disk kept; back after
  ``broker.restart.ms``), at ``machine.crash.per.year``;
* ``disk_loss``: its machine fails (back after ``machine.replace.hours`` with an
  empty disk);
* ``power_loss`` of a zone: every up broker in it at once (unflushed data gone;
  back after ``broker.restart.ms``);
* ``isolate``: a zone outage, every up broker in it unreachable for
  ``zone.outage.hours`` (nothing lost);
* ``pause`` of a broker that is up: a stop-the-world pause (GC, a noisy
  neighbour) of ``broker.pause.ms``; its log and page cache are kept, it is
  out of the ISR for the pause (as a crash, without the restart);
* ``slow`` of a broker that is up: a fail-slow spell of ``broker.slow.ms``
  (a degraded disk or NIC: its replication fetches take
  ``broker.slow.factor`` times longer). The broker keeps running (it can
  still crash, fail or lose power) and its log. As a follower it is out of
  the ISR for the whole spell (Kafka drops it once it has been behind for
  ``replica.lag.time.max.ms``, if the factor makes it fall behind: the
  detailed run, with the factor, measures whether it does); as the leader
  when the spell begins (``slow_leader`` in a pattern) it stays leader and
  its followers are out instead (they cannot keep up with its slow fetch
  responses), so the ISR is the slow leader alone;
* ``zone_partition`` of a zone: every up broker in it cut from the brokers
  of the other zones and from the controller quorum (on the other side) for
  ``zone.partition.minutes``; clients still reach both sides; logs kept.

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

**A cluster** (``sample`` with `layouts`): the same process over every broker
of the cluster, each partition's replica list a *layout* (broker indices in
assignment order). An event is critical for a layout under the rule above,
read on that layout's replicas, and is recorded with the layout's index and
its pattern on the layout's replica positions; so a cluster's cycles give the
rate of the first loss anywhere in it (a zone event that hits many layouts
at once counts once), not a sum over partitions that would count correlated
losses many times.

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

**The first event** of a window is drawn from a defensive mixture: half at
the processes' rates, half uniformly over them (``FIRST_MIX``), weighted by
its likelihood ratio (at most 2). Frequent, harmless window openers (a
broker's crash, its machine's) would otherwise leave a rare one (a zone's
power loss) a few windows in a hundred; drawn this way it opens one in
every few, and no weight can exceed 2 (Hesterberg's defensive importance
sampling).

Slow spells are not biased (``UNBIASED``: drawn at their own rates inside a
window, ``beta`` computed from the other processes, the likelihood ratio
unchanged by them). A slow broker keeps running and its spell outlasts many
restarts, so forcing them too would make windows of several slow spells
each (measured on three zones with the default rates plus 2 spells of 10
minutes a year: 686 classes of critical events instead of 140, up to 6
steps long); the paths that matter start with one spell, which opens the
window at its own rate anyway, and then need a crash, which is forced.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

UP = 0
CRASH, DISK_LOSS, POWER_LOSS, ISOLATE, PAUSE = "crash", "disk_loss", "power_loss", "isolate", "pause"
SLOW, SLOW_LEADER, ZONE_PARTITION = "slow", "slow_leader", "zone_partition"
KEEP_LOG = (CRASH, ISOLATE, PAUSE, SLOW, SLOW_LEADER, ZONE_PARTITION)  # kinds that leave the log (and page cache) whole
BIAS = 1.0  # c: expected further failures before the next return, under the biased measure
UNBIASED = (SLOW,)  # drawn at their own rates inside a window (see the module's docstring)
FIRST_MIX = 0.5  # share of first events drawn uniformly over the processes (``_first``)


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
    pause: float = 0.0  # stop-the-world pauses per broker
    pause_years: float = 0.0  # each this long
    crash_recovery: float = 0.0  # years of log recovery after a process crash, on top of restart (storage.recovery)
    power_loss_recovery: float = 0.0  # the same after a power loss (the page cache cold, the unflushed tail gone)
    slow: float = 0.0  # fail-slow spells per broker
    slow_years: float = 0.0  # each this long
    partition: dict = field(default_factory=dict)  # zone -> per year: cut from the other zones
    partition_years: float = 0.0  # each this long
    machine_crash: float = 0.0  # per broker: a power loss of its machine alone (page cache lost, disk kept)


@dataclass(frozen=True)
class Critical:
    pattern: tuple  # ((kind, (replica, ...)), ...): what is down, in order, ending with this event
    returns: tuple  # replica indices in the order they come back
    weight: float  # likelihood ratio at the event
    exposure: float  # weighted time from the window's start to the event
    layout: int = 0  # which replica list (``sample``'s `layouts`); pattern and returns are on its positions


@dataclass
class Window:
    criticals: list = field(default_factory=list)  # Critical, in time order
    exposure: float = 0.0  # weighted length of the window
    unavailable: float = 0.0  # weighted time with fewer in-sync replicas than needed to accept writes
    events: int = 0


def _processes(zones: Sequence[str], rates: Rates, down: list,
               slow: list | None = None) -> list[tuple[float, str, tuple]]:
    """(rate, kind, replicas hit) of every process that can fire now (`slow`: the replicas in a slow spell, which
    run and can fail, but not slow down again)."""
    up = [i for i in range(len(zones)) if down[i] is None]
    out = []
    for i in up:
        if rates.crash > 0:
            out.append((rates.crash, CRASH, (i,)))
        if rates.machine > 0:
            out.append((rates.machine, DISK_LOSS, (i,)))
        if rates.pause > 0:  # after the others: with no pauses the draws are those of the process without them
            out.append((rates.pause, PAUSE, (i,)))
        if rates.slow > 0 and (slow is None or slow[i] is None):
            out.append((rates.slow, SLOW, (i,)))
        if rates.machine_crash > 0:  # last: with none the draws are those of the process without it
            out.append((rates.machine_crash, POWER_LOSS, (i,)))
    for zone in sorted(set(zones)):
        hit = tuple(i for i in up if zones[i] == zone)
        if not hit:
            continue
        if rates.power_loss.get(zone, 0) > 0:
            out.append((rates.power_loss[zone], POWER_LOSS, hit))
        if rates.outage.get(zone, 0) > 0:
            out.append((rates.outage[zone], ISOLATE, hit))
        if rates.partition.get(zone, 0) > 0:
            out.append((rates.partition[zone], ZONE_PARTITION, hit))
    return out


def healthy_rate(zones: Sequence[str], rates: Rates) -> float:
    """Rate (per year) at which a window opens: any process with every replica up."""
    return sum(r for r, _, _ in _processes(zones, rates, [None] * len(zones)))


def down_years(rates: Rates) -> dict:
    """Each kind's (mean) down time in years."""
    return {CRASH: rates.restart + rates.crash_recovery, POWER_LOSS: rates.restart + rates.power_loss_recovery,
            DISK_LOSS: rates.replace, ISOLATE: rates.outage_years,
            PAUSE: rates.pause_years, SLOW: rates.slow_years, SLOW_LEADER: rates.slow_years,
            ZONE_PARTITION: rates.partition_years}


def _duration(kind: str, rates: Rates, rng: np.random.Generator) -> float:
    mean = down_years(rates)[kind]
    return float(rng.exponential(mean)) if rates.exponential else mean


def window(zones: Sequence[str], rates: Rates, needed: int, rng: np.random.Generator, bias: float = BIAS,
           layouts: Sequence[tuple] | None = None) -> Window:
    """One window, from its first event until every replica is back (see the module's docstring).

    `needed`: in-sync replicas a partition needs to accept the producers' writes (min.insync.replicas for
    acks=all, 1 otherwise); time with a layout below it is unavailable. `layouts`: replica lists over the
    `zones`' indices (default: one partition whose replicas are all of them)."""
    n = len(zones)
    layouts = [tuple(range(n))] if layouts is None else [tuple(lay) for lay in layouts]
    down: list = [None] * n  # replica -> (order it went down, kind, back at) or None when up
    slow: list = [None] * n  # replica -> (order its slow spell began, ends at, layouts it led then) or None
    w = Window()
    t, weight, order = 0.0, 1.0, 0
    procs = _processes(zones, rates, down, slow)
    total = sum(r for r, _, _ in procs)
    first = True
    while True:
        if first:
            (r, kind, hit), weight = _first(procs, total, rng)
        else:
            back = min([d[2] for d in down if d is not None] + [x[1] for x in slow if x is not None])
            procs = _processes(zones, rates, down, slow)
            plain = sum(r for r, kind, _ in procs if kind in UNBIASED)  # drawn at their own rates
            forced = sum(r for r, kind, _ in procs if kind not in UNBIASED)  # biased (all of them without slow)
            span = back - t
            beta = max(1.0, bias / (forced * span)) if forced > 0 and span > 0 else 1.0
            now = beta * forced + plain  # the biased measure's total rate
            dt = float(rng.exponential(1.0 / now)) if now > 0 else math.inf
            stretch = min(dt, span)
            grow = (beta - 1.0) * forced  # d(log L)/dt while nothing fires
            seg = weight * (math.expm1(grow * stretch) / grow if grow > 0 else stretch)
            w.exposure += seg
            if any(len(_in_sync(lay, k, down, slow)) < needed for k, lay in enumerate(layouts)):
                w.unavailable += seg
            weight *= math.exp(grow * stretch)
            t += stretch
            if dt >= span:  # the next return comes first
                for i in range(n):
                    if down[i] is not None and down[i][2] <= t:
                        down[i] = None
                    if slow[i] is not None and slow[i][1] <= t:
                        slow[i] = None
                if all(d is None for d in down) and all(x is None for x in slow):
                    return w
                continue
            # the forced failures drawn at beta x their rates, the others at theirs
            r, kind, hit = _pick(procs, rng.random() * now, beta)
            if kind not in UNBIASED:
                weight /= beta
        first = False
        leaders = [next(iter(_in_sync(lay, k, down, slow)), None) for k, lay in enumerate(layouts)]
        for i in hit:
            if kind == SLOW:
                led = frozenset(k for k, b in enumerate(leaders) if b == i)  # the layouts it leads as it slows
                slow[i] = (order, t + _duration(kind, rates, rng), led)
            else:
                down[i] = (order, kind, t + _duration(kind, rates, rng))
        order += 1
        w.events += 1
        for k, lay in enumerate(layouts):
            if leaders[k] in hit or (leaders[k] is not None and not _in_sync(lay, k, down, slow)):
                on, slowed = [down[i] for i in lay], [slow[i] for i in lay]
                w.criticals.append(Critical(_pattern(on, slowed, k), _returns(on, slowed), weight, w.exposure, k))


def _first(procs: list, total: float, rng: np.random.Generator) -> tuple:
    """A window's first event, drawn from the defensive mixture (1 - FIRST_MIX) x the rates + FIRST_MIX x uniform
    over the processes, so that a rare kind (a zone's power loss among frequent crashes) opens a fair share of
    the windows; returns the process and the likelihood ratio of the choice, p / q <= 1 / (1 - FIRST_MIX)."""
    u, share, acc = rng.random(), FIRST_MIX / len(procs), 0.0
    for proc in procs:
        q = (1.0 - FIRST_MIX) * proc[0] / total + share
        acc += q
        if u < acc:
            break
    return proc, (proc[0] / total) / q


def _pick(procs: list, pick: float, beta: float = 1.0) -> tuple:
    """The process `pick` falls in, walking the rates (the forced ones times `beta`, the UNBIASED at theirs)."""
    for r, kind, hit in procs:
        pick -= r if beta == 1.0 or kind in UNBIASED else beta * r
        if pick < 0:
            break
    return r, kind, hit


def _in_sync(lay: tuple, k: int, down: list, slow: list) -> tuple:
    """Layout k's in-sync replicas, its leader first: a replica in a slow spell that led k when the spell began
    stays leader with an ISR of itself (its followers cannot keep up), and while it is down there is none (its
    followers fell out: only an unclean election, which the detailed run decides, would take one); otherwise the
    replicas up and not slow, in assignment order (the first leads)."""
    for i in lay:
        if slow[i] is not None and k in slow[i][2]:
            return (i,) if down[i] is None else ()
    return tuple(i for i in lay if down[i] is None and slow[i] is None)


def _pattern(down: list, slow: list | None = None, k: int = 0) -> tuple:
    steps: dict = {}
    for i, d in enumerate(down):
        if d is not None:
            steps.setdefault((d[0], d[1]), []).append(i)
    for i, x in enumerate(slow or ()):
        if x is not None:
            steps.setdefault((x[0], SLOW_LEADER if k in x[2] else SLOW), []).append(i)
    return tuple((kind, tuple(ix)) for (_, kind), ix in sorted(steps.items()))


def _returns(down: list, slow: list | None = None) -> tuple:
    """Replica positions in the order they are back (a slow one that also went down: the later of the two)."""
    back: dict = {}
    for i, d in enumerate(down):
        if d is not None:
            back[i] = d[2]
    for i, x in enumerate(slow or ()):
        if x is not None:
            back[i] = max(back.get(i, x[1]), x[1])
    return tuple(i for _, i in sorted((b, i) for i, b in back.items()))


@dataclass(frozen=True)
class Cycles:
    """N cycles of one replica layout: each window's critical events, weighted, plus what the ratios need."""

    healthy_years: float  # mean healthy stretch: 1 / rate at which windows open
    windows: list  # Window


def sample(zones: Sequence[str], rates: Rates, needed: int, n: int, seed, bias: float | None = None,
           layouts: Sequence[tuple] | None = None) -> Cycles:
    """`n` cycles of the brokers in `zones` (one partition on all of them, or the replica lists `layouts`).

    `bias` (c): by default ``BIAS`` scaled by replicas per partition over brokers. Over a cluster, c = 1 would
    keep a window going for tens of failures (some broker is always down, each failure forced before the next
    return); scaled, a cascade dies out as it does on one partition's replicas (measured on 6 brokers, RF 3:
    2.9 failures per window instead of 34, a 16th of the time, an interval 1.5 to 2 times as wide)."""
    if bias is None:
        bias = BIAS * (max(len(lay) for lay in layouts) / len(zones) if layouts else 1.0)
    rng = np.random.default_rng(seed)
    rate = healthy_rate(zones, rates)
    if rate == 0:
        return Cycles(math.inf, [])
    return Cycles(1.0 / rate, [window(zones, rates, needed, rng, bias, layouts) for _ in range(n)])


@dataclass(frozen=True)
class Estimate:
    rate: float  # per year
    low: float  # 95%
    high: float


Z95 = 1.959963984540054


def _poisson_mean(k: int, tail: float, upper: bool) -> float:
    """Garwood's exact bound on a Poisson mean from `k` observed events: the mean whose upper tail P(N >= k)
    (lower bound) or lower tail P(N <= k) (upper bound) is `tail`. Bisection on the Poisson sum."""
    def below(mu: float) -> float:  # P(N <= k - 1) for the lower bound, P(N <= k) for the upper one
        last = k if upper else k - 1
        if mu > 700:  # exp(-mu) underflows: the terms in logs (k above ~700 windows with an event)
            logs = [-mu + i * math.log(mu) - math.lgamma(i + 1) for i in range(last + 1)]
            top = max(logs)
            return math.exp(top) * sum(math.exp(x - top) for x in logs)
        term, total = math.exp(-mu), 0.0
        for i in range(last + 1):
            total += term
            term *= mu / (i + 1)
        return total

    lo, hi = 0.0, k + 20.0 * math.sqrt(k + 1) + 20.0
    for _ in range(100):
        mid = (lo + hi) / 2
        p = below(mid) if upper else 1.0 - below(mid)
        if (p > tail) == upper:  # the bound is further out
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def ratio(a: np.ndarray, b: np.ndarray) -> Estimate:
    """Renewal-reward: E[a] / E[b] per cycle, with a 95% interval by the delta method (Student's t with n - 1
    degrees of freedom), widened where few cycles hold an event: the delta method's spread is itself estimated
    from those few and comes out too narrow, so the interval also holds the relative spread of Garwood's exact
    Poisson interval on the count of cycles with an event (k = 1: 0.025 to 5.57 times the estimate). With no
    event observed: 0, and the rule of three's bound (3 events over the cycles' total time) as the high end."""
    n = len(a)
    if n == 0:  # no window ever opens: no failure, no loss
        return Estimate(0.0, 0.0, 0.0)
    mb = float(b.mean())
    if not np.any(a):
        return Estimate(0.0, 0.0, 3.0 / float(b.sum()))
    r = float(a.mean()) / mb
    sd = float(np.std(a - r * b, ddof=1)) / (mb * math.sqrt(n)) if n > 1 else math.inf
    q = _t95(n - 1)
    k = int(np.count_nonzero(a))
    low = min(r - q * sd, r * _poisson_mean(k, 0.025, upper=False) / k)
    high = max(r + q * sd, r * _poisson_mean(k, 0.025, upper=True) / k)
    return Estimate(r, max(0.0, low), high)


def _t95(df: int) -> float:
    """Student's t two-sided 95% quantile: the table's values for 1 and 2 degrees of freedom, then the
    Cornish-Fisher expansion in 1/df around the normal's 1.96 (within 0.1% of the table from 3 on)."""
    if df < 1:
        return math.inf
    if df <= 2:
        return (12.7062047, 4.30265273)[df - 1]
    z = Z95
    g1 = (z ** 3 + z) / 4
    g2 = (5 * z ** 5 + 16 * z ** 3 + 3 * z) / 96
    g3 = (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / 384
    g4 = (79 * z ** 9 + 776 * z ** 7 + 1482 * z ** 5 - 1920 * z ** 3 - 945 * z) / 92160
    return z + g1 / df + g2 / df ** 2 + g3 / df ** 3 + g4 / df ** 4


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
