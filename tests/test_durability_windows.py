"""kafkamodel/durability/windows.py: the failure-biasing window sampler against the Markov chain, its intervals,
its processes and the time each event keeps a broker down."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kafkamodel.durability import markov, windows as W
from kafkamodel.durability.spec import load_durability
from durability_specs import CRASH_RATE, MS_YEAR, RESTART_MS, SLOW_MS, SLOW_RATE, write_spec
from durability_specs import slow_then_crash_rate as _slow_then_crash_rate


def _every_copy_lost(c):
    return sum(len(ix) for kind, ix in c.pattern if kind == W.DISK_LOSS) == 3


def _machine_only(lam, r):
    return W.Rates(0.0, 1e-9, lam, r, {}, {}, 1e-9, exponential=True)


@pytest.mark.parametrize("lam", [0.02, 0.2, 2.0, 20.0])
def test_failure_biasing_agrees_with_the_markov_chain_across_three_orders_of_magnitude(lam):
    """Independent machine failures, RF 3, exponential rebuilds of a day: the biased window sampler's loss rate
    (per partition-year, probabilities from 1e-10 to 0.1) holds the chain's 1 / MTTDL within its 95% interval."""
    r = 1 / 365.25
    est = W.loss_rate(W.sample(["a", "b", "c"], _machine_only(lam, r), 2, 3000, 11), _every_copy_lost)
    exact = markov.loss_rate_per_year(3, lam, r)
    assert est.low <= exact <= est.high, (est, exact)
    assert est.high - est.low < exact  # an interval that says something


def test_unavailability_agrees_with_the_markov_chain():
    lam, r = 5.0, 1 / 365.25
    est = W.unavailable_share(W.sample(["a", "b", "c"], _machine_only(lam, r), 2, 3000, 5, bias=0.0))
    exact = markov.unavailable_fraction(3, 2, lam, r)
    assert est.low <= exact <= est.high, (est, exact)


@pytest.mark.parametrize("layouts, sets", [
    ([(0, 1, 2), (3, 4, 5)], 2),  # two disjoint replica sets: two independent partitions
    ([(i, (i + 1) % 6, (i + 2) % 6) for i in range(6)] + [(1, 0, 2)], 6),  # round-robin; a reordered list is one set
    ([tuple(c) for c in __import__("itertools").combinations(range(6), 3)], 20),  # every 3 of the 6 brokers
])
def test_a_cluster_loses_at_the_chain_rate_times_its_distinct_replica_sets(layouts, sets):
    """Six brokers, independent machine failures, exponential rebuilds of a day: the first loss anywhere in the
    cluster comes at (distinct replica sets) x the chain's rate per partition, to first order in lam r (losing
    every copy of one set means those three machines down together; two sets at once is a higher order), not at
    (partitions) x that rate: replica lists holding the same brokers lose together."""
    lam, r = 2.0, 1 / 365.25
    cycles = W.sample(["a", "b", "c", "a", "b", "c"], _machine_only(lam, r), 2, 10000, 7, layouts=layouts)
    est = W.loss_rate(cycles, _every_copy_lost)
    exact = sets * markov.loss_rate_per_year(3, lam, r)
    assert est.low <= exact <= est.high, (est, exact)
    assert est.high - est.low < exact


def test_one_layout_over_its_own_replicas_is_the_partition_sampler():
    """The cluster sampler with one replica list over every broker draws exactly the partition's windows."""
    rates = W.Rates(1.0, 1e-4, 0.1, 3e-3, {"a": 0.5}, {"b": 1.0}, 1e-3)
    one = W.sample(["a", "b", "c"], rates, 2, 200, 9)
    same = W.sample(["a", "b", "c"], rates, 2, 200, 9, layouts=[(0, 1, 2)])
    assert one == same


def test_few_windows_with_a_loss_widen_the_interval_to_the_poisson_count():
    """One cycle with an event among many: the delta method would give an interval from that one value; the
    interval holds Garwood's exact Poisson interval for one event, 0.0253 to 5.57 times the estimate."""
    a = np.zeros(50)
    a[7] = 0.3
    est = W.ratio(a, np.ones(50))
    assert est.rate == pytest.approx(0.3 / 50)
    assert est.high >= 5.5716 * est.rate and est.low <= 0.02532 * est.rate


@pytest.mark.parametrize("k", [100, 800, 2000, 5000])
def test_garwood_bounds_hold_for_many_windows_with_an_event(k):
    """Garwood's exact Poisson interval on k events, against the Wilson-Hilferty approximation of its chi-square
    quantiles (k (1 - 1/(9k) - z/(3 sqrt k))^3 and (k+1) (1 - 1/(9(k+1)) + z/(3 sqrt(k+1)))^3, good to a few
    parts in 10^4 from k = 100): above ~745 events exp(-mu) underflowed, and the bounds came out at 0.37 k for
    k = 2000 (both ends) and below k for the upper one at k = 800."""
    low, high = W._poisson_mean(k, 0.025, upper=False), W._poisson_mean(k, 0.025, upper=True)
    z = W.Z95
    assert low == pytest.approx(k * (1 - 1 / (9 * k) - z / (3 * math.sqrt(k))) ** 3, rel=1e-3), (k, low)
    upper = (k + 1) * (1 - 1 / (9 * (k + 1)) + z / (3 * math.sqrt(k + 1))) ** 3
    assert high == pytest.approx(upper, rel=1e-3), (k, high)


def test_nothing_lost_is_zero_with_an_upper_bound():
    est = W.loss_rate(W.sample(["a", "b", "c"], _machine_only(0.5, 1 / 365.25), 2, 500, 3), lambda c: False)
    assert est.rate == 0 and est.low == 0 and 0 < est.high < 1


@pytest.mark.slow
def test_intervals_cover_the_markov_value_nine_times_in_ten():
    r, lam = 1 / 365.25, 2.0
    exact = markov.loss_rate_per_year(3, lam, r)
    hits = [W.loss_rate(W.sample(["a", "b", "c"], _machine_only(lam, r), 2, 1000, seed), _every_copy_lost)
            for seed in range(100)]
    coverage = np.mean([e.low <= exact <= e.high for e in hits])
    assert coverage >= 0.9, coverage


def test_a_machine_crash_hits_one_broker_and_a_zone_power_loss_every_broker_of_the_zone():
    """The sampler's processes: a machine crash is one broker's power loss at machine.crash.per.year each; a zone's
    power loss hits every broker of the zone up at that instant."""
    zones = ["a", "a", "b"]
    rates = W.Rates(0.0, 1e-5, 0.0, 1e-3, {"a": 0.3, "b": 0.0}, {}, 1e-3, machine_crash=2.0)
    procs = W._processes(zones, rates, [None] * 3)
    assert sorted((r, kind, hit) for r, kind, hit in procs) == sorted(
        [(2.0, W.POWER_LOSS, (0,)), (2.0, W.POWER_LOSS, (1,)), (2.0, W.POWER_LOSS, (2,)), (0.3, W.POWER_LOSS, (0, 1))])
    down = [(0, W.POWER_LOSS, 1.0), None, None]  # broker 0 is down: no crash of it, and zone a's loss hits broker 1 only
    assert sorted(W._processes(zones, rates, down)) == sorted(
        [(2.0, W.POWER_LOSS, (1,)), (2.0, W.POWER_LOSS, (2,)), (0.3, W.POWER_LOSS, (1,))])


def test_a_windows_first_event_is_weighted_back_to_the_processes_rates():
    """The first event's defensive mixture: each of the 24 processes (six brokers in three zones: crash, machine
    crash, disk loss each; power loss and outage per zone) drawn with (1 - m) x its share of the rates + m / 24,
    and weighted by p / q, computed here from the rates, so that weighted the draws are at the rates."""
    zones = ["a", "b", "c", "a", "b", "c"]
    rates = W.Rates(1.0, 1e-5, 0.04, 1e-3, {z: 0.2 for z in "abc"}, {z: 0.5 for z in "abc"}, 1e-3, machine_crash=2.0)
    procs = W._processes(zones, rates, [None] * 6)
    total = sum(r for r, _, _ in procs)
    rng = np.random.default_rng(7)
    n = 200_000
    assert len(procs) == 24 and total == pytest.approx(6 * (1.0 + 0.04 + 2.0) + 3 * (0.2 + 0.5))
    drawn, weights = {}, {}
    for _ in range(n):
        proc, weight = W._first(procs, total, rng)
        key = (proc[1], proc[2])
        drawn[key] = drawn.get(key, 0) + 1
        weights.setdefault(key, set()).add(weight)
    m = 0.5  # half uniform (W.FIRST_MIX)
    for r, kind, hit in procs:
        p, q = r / total, (1 - m) * r / total + m / 24
        assert abs(drawn[(kind, hit)] / n - q) < 5 * math.sqrt(q * (1 - q) / n), (kind, hit)
        (weight,) = weights[(kind, hit)]
        assert weight == pytest.approx(p / q, rel=1e-12) and weight <= 2


SLOW_THEN_CRASH = {(W.SLOW, W.CRASH), (W.SLOW_LEADER, W.CRASH)}


@pytest.mark.parametrize("n", [2, 3])
def test_a_slow_spell_then_the_leaders_crash_comes_at_the_rate_of_the_formula(n):
    """The window sampler alone: the rate of "a slow spell, then the leader crashes while the ISR is the leader
    alone" (RF 2: a slow follower then the leader's crash, or a slow leader then its own; RF 3: a slow leader then
    its own crash) agrees with the formula computed from the rates."""
    rates = W.Rates(CRASH_RATE, RESTART_MS / MS_YEAR, 0.0, 1.0, {}, {}, 1e-9, slow=SLOW_RATE,
                    slow_years=SLOW_MS / MS_YEAR)
    alone = (lambda c: tuple(k for k, _ in c.pattern) in SLOW_THEN_CRASH) if n == 2 else \
        (lambda c: tuple(k for k, _ in c.pattern) == (W.SLOW_LEADER, W.CRASH))
    est = W.loss_rate(W.sample(["a", "b", "c"][:n], rates, 1, 3000, 21), alone)
    exact = _slow_then_crash_rate(n - 1)
    assert est.low <= exact <= est.high, (est, exact)
    assert est.high - est.low < 0.5 * exact  # measured: 15% (RF 2), 37% (RF 3)


def test_a_slow_leader_keeps_the_leadership_and_an_isr_of_itself():
    """A slow spell on the leader is a critical event of its own kind (slow_leader); the leader's own crash during
    it is critical again, with both steps on the same replica; a follower's crash meanwhile is not (the slow
    leader still leads)."""
    down, slow = [None] * 3, [None] * 3
    slow[0] = (0, 1.0, frozenset({0}))
    assert W._in_sync((0, 1, 2), 0, down, slow) == (0,)
    slow[0] = (0, 1.0, frozenset())  # slow since it was a follower: out of the ISR
    assert W._in_sync((0, 1, 2), 0, down, slow) == (1, 2)
    slow[0], down[0] = (0, 1.0, frozenset({0})), (1, W.CRASH, 0.5)
    assert W._in_sync((0, 1, 2), 0, down, slow) == ()
    assert W._pattern(down, slow, 0) == ((W.SLOW_LEADER, (0,)), (W.CRASH, (0,)))


def test_a_crash_and_a_power_loss_are_down_for_the_restart_plus_the_derived_log_recovery(tmp_path):
    """broker.restart.ms is the process's start; the windows add the scenario's mean log recovery (docs/restarts.md),
    longer after a power loss (read from the disk) than after a process crash (the page cache holds it)."""
    from kafkamodel.durability.estimate import rates_of
    from kafkamodel.config.settings import Settings
    from kafkamodel.sim.storage.recovery import scenario_mean_recovery_ms
    spec = load_durability(write_spec(tmp_path, configurations={"base": {"producers[0].rate.per.s": 500}},
                                      failures={"broker.restart.ms": 60000}))
    scenario = spec.configurations[0].scenario
    rates = rates_of(spec.failures, None, scenario)
    down = W.down_years(rates)
    year = 365.25 * 24 * 3600 * 1000.0
    settings = Settings.of(scenario)
    crash, power = scenario_mean_recovery_ms(settings, cold=False), scenario_mean_recovery_ms(settings, cold=True)
    assert 0 < crash < power
    assert down[W.CRASH] * year == pytest.approx(60000 + crash) and down[W.POWER_LOSS] * year == pytest.approx(60000 + power)
    assert W.down_years(rates_of(spec.failures))[W.CRASH] * year == pytest.approx(60000)  # no scenario: the constant
