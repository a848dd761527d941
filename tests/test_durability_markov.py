"""kafkamodel/durability/markov.py: the Markov chain against its closed form and a brute-force simulation of the
same chain."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kafkamodel.durability import markov


@pytest.mark.parametrize("n", [2, 3, 5])
@pytest.mark.parametrize("lam_r", [1e-4, 1e-3, 1e-2])
def test_markov_rate_is_the_closed_form_for_small_lambda_r(n, lam_r):
    """1 / MTTDL -> n lam^n r^(n-1) as lam r -> 0 (flow into "all lost" from the binomial quasi-steady state);
    the first-order correction is of relative size O(n lam r)."""
    r = 1 / 365.25
    lam = lam_r / r
    closed = n * lam ** n * r ** (n - 1)
    assert markov.loss_rate_per_year(n, lam, r) == pytest.approx(closed, rel=(n + 1) * lam_r)


def test_markov_against_brute_force_monte_carlo_of_the_same_chain():
    """Gillespie simulation of the chain itself: mean time to every copy lost, and the share lost within a year."""
    n, lam, r = 3, 10.0, 7 / 365.25  # lam r ~ 0.19: losses common enough to count
    rng = np.random.default_rng(7)
    times = []
    for _ in range(4000):
        k, t = 0, 0.0
        while k < n:
            up, down = (n - k) * lam, k / r
            t += rng.exponential(1 / (up + down))
            k += 1 if rng.random() < up / (up + down) else -1
        times.append(t)
    times = np.array(times)
    se = times.std(ddof=1) / math.sqrt(len(times))
    assert abs(times.mean() - markov.mttdl_years(n, lam, r)) < 3 * se
    p = markov.loss_probability_within(n, lam, r, 1.0)
    share = (times <= 1.0).mean()
    assert abs(share - p) < 3 * math.sqrt(p * (1 - p) / len(times))


def test_markov_unavailability_is_the_binomial_tail():
    n, m, lam, r = 3, 2, 4.0, 1 / 365.25
    p = lam * r / (1 + lam * r)
    assert markov.unavailable_fraction(n, m, lam, r) == pytest.approx(3 * p ** 2 * (1 - p) + p ** 3)
