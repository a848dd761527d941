"""results.histogram: the streamed latency histogram's percentiles are within its stated error of NumPy's exact
ones (random samples and the shipped scenarios' own latencies), its p99.9 and maximum are exact, and a bucket
holds the values it is given."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from kafkamodel.sim.results.histogram import (ABSOLUTE_ERROR_MS, RELATIVE_ERROR, LatencyHistogram, bucket_bounds,
                                              bucket_of, exact_top)

from shipped import SCENARIOS, run

QS = (0, 1, 10, 25, 50, 75, 90, 99, 99.5, 99.9, 100)
latencies = arrays(np.float64, st.integers(1, 3000),
                   elements=st.one_of(st.floats(0, 1e6, allow_nan=False), st.floats(0, 2, allow_nan=False),
                                      st.sampled_from([0.0, 0.001, 0.128, 5.0])))


def streamed(values: np.ndarray, chunks: int, keep: int | None = None) -> LatencyHistogram:
    h = LatencyHistogram(exact_top(len(values)) if keep is None else keep)
    for part in np.array_split(values, max(1, min(chunks, len(values)))):
        h.add(part)
    return h


def assert_within(h: LatencyHistogram, values: np.ndarray) -> None:
    for q in QS:
        exact = float(np.percentile(values, q))
        # the stated bound, and float rounding of the ms <-> µs conversion
        assert abs(h.percentile(q) - exact) <= RELATIVE_ERROR * exact + ABSOLUTE_ERROR_MS + 1e-12 * exact, q
    assert h.percentile(99.9) == float(np.percentile(values, 99.9))
    assert h.max == float(values.max())
    assert h.n == len(values)


@settings(max_examples=200, deadline=None)
@given(latencies, st.integers(1, 20))
def test_percentiles_are_within_the_stated_error_and_p999_and_max_exact(values, chunks):
    assert_within(streamed(values, chunks), values)


@settings(max_examples=200, deadline=None)
@given(arrays(np.float64, st.integers(1, 200), elements=st.floats(0, 1e9, allow_nan=False)))
def test_each_value_lies_in_its_bucket_and_the_bucket_is_as_narrow_as_stated(values):
    low, high = bucket_bounds(bucket_of(values))
    tol = 1e-12 * values  # (ms -> µs in floating point)
    assert np.all(low <= values + tol) and np.all(values < high + tol)
    width = high - low
    assert np.all(width <= np.maximum(2 * RELATIVE_ERROR * low, 2 * ABSOLUTE_ERROR_MS) * (1 + 1e-12))


@settings(max_examples=50, deadline=None)
@given(latencies, latencies)
def test_merged_histograms_are_the_histogram_of_both(a, b):
    both = np.concatenate([a, b])
    keep = exact_top(len(both))  # (each keeps as many as both need: they may all be in one of them)
    one, other = streamed(a, 3, keep), streamed(b, 2, keep)
    one.merge(other)
    whole = streamed(both, 1)
    assert np.array_equal(one.counts[:len(whole.counts)], whole.counts[:len(one.counts)])
    assert sorted(one.top.tolist()) == sorted(whole.top.tolist())
    assert_within(one, both)


@settings(max_examples=50, deadline=None)
@given(latencies, st.integers(1, 20), st.integers(0, 5000))
def test_a_histogram_kept_for_a_bound_and_trimmed_is_the_one_made_for_its_count(values, chunks, extra):
    """``latency.Fold`` keeps the top values for a bound on the records (their count is known at the end) and trims
    them to what the count needs: the same kept values, so the same percentiles, as one made knowing it."""
    want = streamed(values, 1)
    got = streamed(values, chunks, exact_top(len(values)) + extra)
    got.trim(exact_top(len(values)))
    assert got.keep == want.keep and sorted(got.top.tolist()) == sorted(want.top.tolist())
    assert [got.percentile(q) for q in (0, 50, 99, 99.9, 100)] == [want.percentile(q) for q in (0, 50, 99, 99.9, 100)]


def test_the_error_bound_is_reached_not_just_respected():
    """The bound is the histogram's real resolution: a value just above a bucket's low edge comes back as its
    midpoint, about RELATIVE_ERROR higher (not a bound that no value nears)."""
    edge = 2.0 ** 20 / 1000  # 2^20 µs, in ms: a bucket [edge, edge * (1 + 1/128)) starts here
    values = np.full(10_000, edge * (1 + 1e-9))
    values[-1] = 2000.0  # (the top value is exact: keep it away from the median)
    h = LatencyHistogram(exact_top(len(values)))
    h.add(values)
    assert h.percentile(50) == pytest.approx(edge * (1 + RELATIVE_ERROR), rel=1e-9)


def test_bad_values_are_refused():
    h = LatencyHistogram()
    for bad in (-0.001, np.nan):
        with pytest.raises(ValueError, match=">= 0"):
            h.add(np.array([1.0, bad]))
    assert h.n == 0 and h.percentile(50) is None and h.max is None and h.mean is None


@pytest.mark.parametrize("name", sorted(p.stem for p in SCENARIOS.glob("*.yaml")))
def test_shipped_scenarios_latencies_streamed_batch_by_batch(name):
    """Each shipped scenario's produce and end-to-end latencies, streamed a thousand records at a time."""
    records = run(name).records
    acked = records[records["acked"]]
    for values in ((acked["ack_ms"] - acked["send_ms"]).to_numpy(),
                   (records["visible_ms"] - records["send_ms"]).dropna().to_numpy()):
        if len(values):
            h = streamed(values, max(1, len(values) // 1000))
            assert_within(h, values)
            assert h.mean == pytest.approx(values.mean(), rel=1e-12)
