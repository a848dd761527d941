"""The analytic cross-check: a partition's replicas as a birth-death Markov chain.

A partition has ``n`` replicas (replication.factor) on ``n`` brokers. Each
broker's machine fails at rate ``lam`` (per year) and loses its disk; the
replica is then rebuilt (the machine replaced and the log fetched again from
the leader) in a time exponentially distributed with mean ``r`` (years), each
rebuild independent of the others. State ``k`` is the number of replicas lost
or being rebuilt; a rebuilding replica is not in the ISR (it holds an
incomplete copy). From ``k`` the chain goes to ``k + 1`` at rate
``(n - k) lam`` and to ``k - 1`` at rate ``k / r``.

**The event counted** is reaching ``k = n``: every replica has lost its disk
and none has finished its rebuild, so no in-sync copy of the acknowledged
records is left (whatever ``min.insync.replicas`` is: it decides how much is
lost, and when writes are refused, not whether the last copy goes). ``n`` is
absorbing: the mean time to it from ``k = 0`` is the MTTDL, and the long-run
rate of such losses is ``1 / MTTDL`` per year. For ``lam r << 1`` that rate is
``n lam^n r^(n-1)`` (the chain's flow into ``n``).

**Unavailability** (writes with acks=all refused): the chain with ``n``
reflecting instead, whose stationary law is Binomial(n, p), p = lam r / (1 +
lam r); the share of time with fewer than ``min.insync.replicas`` in-sync
replicas is ``P(k > n - m)``.
"""

from __future__ import annotations

import math

import numpy as np

MINUTES_PER_YEAR = 365.25 * 24 * 60


def _check(n: int, lam: float, r: float) -> None:
    if n < 1 or lam < 0 or r <= 0:
        raise ValueError(f"need n >= 1, lam >= 0, r > 0; got n={n}, lam={lam}, r={r}")


def generator(n: int, lam: float, r: float) -> np.ndarray:
    """The transient states 0..n-1's generator (rows sum to minus the rate of absorption into n)."""
    _check(n, lam, r)
    q = np.zeros((n, n))
    for k in range(n):
        up = (n - k) * lam
        down = k / r
        if k + 1 < n:
            q[k, k + 1] = up
        if k > 0:
            q[k, k - 1] = down
        q[k, k] = -(up + down)
    return q


def mttdl_years(n: int, lam: float, r: float) -> float:
    """Mean time (years) from every replica healthy to every replica lost at once."""
    if lam == 0:
        return math.inf
    t = np.linalg.solve(-generator(n, lam, r), np.ones(n))  # expected times to absorption from each state
    return float(t[0])


def loss_rate_per_year(n: int, lam: float, r: float) -> float:
    """Long-run losses of every copy per partition-year (1 / MTTDL)."""
    m = mttdl_years(n, lam, r)
    return 0.0 if math.isinf(m) else 1.0 / m


def loss_probability_per_year(n: int, lam: float, r: float) -> float:
    """Probability of at least one loss of every copy in a year, at the long-run rate: 1 - exp(-1 / MTTDL)."""
    return -math.expm1(-loss_rate_per_year(n, lam, r))


def loss_probability_within(n: int, lam: float, r: float, years: float = 1.0) -> float:
    """Probability of reaching "every copy lost" within `years`, starting with every replica healthy
    (the transient chain's exponential, by eigendecomposition of its tridiagonal generator)."""
    q = generator(n, lam, r)
    w, v = np.linalg.eig(q)
    p = (v @ np.diag(np.exp(w * years)) @ np.linalg.inv(v)).real
    return float(1.0 - p[0].sum())


def unavailable_fraction(n: int, m: int, lam: float, r: float) -> float:
    """Share of time with fewer than min(m, n) replicas in sync (acks=all refused), from the stationary law."""
    _check(n, lam, r)
    m = min(m, n)
    p = lam * r / (1 + lam * r)
    return float(sum(math.comb(n, k) * p ** k * (1 - p) ** (n - k) for k in range(n - m + 1, n + 1)))


def unavailable_minutes_per_year(n: int, m: int, lam: float, r: float) -> float:
    return unavailable_fraction(n, m, lam, r) * MINUTES_PER_YEAR
