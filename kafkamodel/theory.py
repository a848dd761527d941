"""Analytical predictions the simulation is checked against and the studies draw.

acks=all commit latency as an order statistic (docs/kafka-facts.md, "Quorum vs
ISR"). With every one-way message an independent draw from the same latency
distribution and records far enough apart that nothing queues, a write costs

    request (1 hop) + commit delay + response (1 hop)

where the commit delay is an order statistic of the followers' round trips
(fetch response to the follower + its next fetch back to the leader, two
hops each):

* ISR: the slowest of the RF-1 followers (the maximum);
* quorum: the ceil((RF-1)/2)-th smallest, so that with the leader a majority has it.

With an fsync per append (``log.flush.interval.messages: 1``, or a quorum
with ``quorum.fsync``) the leader's handler thread fsyncs before the parked
fetches see the records, and each follower fsyncs before it fetches again:
the leader's fsync adds to every write, each follower's to its round trip.

Distributions are the model's own (``{dist: exponential, mean}``, lognormal,
uniform, constant, or a number); the prediction is computed numerically on a
grid (probability masses, FFT convolutions), independently of the model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

EXPONENTIAL_1MS = {"dist": "exponential", "mean": 1.0}  # the theory tests' latency
_CELLS = 1 << 16  # grid cells; the step adapts to the distribution's tail


@dataclass(frozen=True)
class Prediction:
    mean: float  # ms, expected produce latency
    p50: float  # ms
    p99: float  # ms
    p999: float  # ms


def _as_dist(latency: Any) -> Mapping[str, Any]:
    if isinstance(latency, (int, float)) and not isinstance(latency, bool):
        return {"dist": "constant", "value": float(latency)}
    if isinstance(latency, Mapping) and "dist" in latency:
        return latency
    raise ValueError(f"latency: must be a number or a distribution mapping, got {latency!r}")


_erf = np.vectorize(math.erf, otypes=[float])


def one_way_cdf(latency: Any) -> tuple[Callable[[np.ndarray], np.ndarray], float]:
    """(CDF of one one-way message, a time beyond which its mass is negligible)."""
    d = _as_dist(latency)
    kind = d["dist"]
    if kind == "constant":
        v = float(d["value"])
        return (lambda t: (t >= v).astype(float)), max(v, 1e-9)
    if kind == "exponential":
        mean = float(d["mean"])
        return (lambda t: np.where(t > 0, 1.0 - np.exp(-np.maximum(t, 0) / mean), 0.0)), mean * math.log(1e7)
    if kind == "lognormal":
        mu, sigma = math.log(float(d["median"])), float(d["sigma"])

        def cdf(t):
            z = (np.log(np.maximum(t, 1e-300)) - mu) / (sigma * math.sqrt(2.0))
            return np.where(t > 0, 0.5 * (1.0 + _erf(z)), 0.0)

        return cdf, math.exp(mu + 5.2 * sigma)  # the 1 - 1e-7 quantile
    if kind == "uniform":
        lo, hi = float(d["low"]), float(d["high"])
        return (lambda t: np.clip((t - lo) / max(hi - lo, 1e-12), 0.0, 1.0)), hi
    raise ValueError(f"latency.dist: no prediction for {kind!r}")


def _convolve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    n = 2 * len(a)
    return np.clip(np.fft.irfft(np.fft.rfft(a, n) * np.fft.rfft(b, n), n)[: len(a)], 0.0, None)


def order_statistic_cdf(F: np.ndarray, k: int, n: int) -> np.ndarray:
    """CDF of the k-th smallest of n iid draws whose CDF is F."""
    return sum(math.comb(n, j) * F**j * (1 - F) ** (n - j) for j in range(k, n + 1))


def followers_awaited(rf: int, mode: str) -> int:
    """Which order statistic of the RF-1 follower round trips commits a write (0: none)."""
    if mode not in ("isr", "quorum"):
        raise ValueError(f"mode: must be isr or quorum, got {mode!r}")
    followers = rf - 1
    return followers if mode == "isr" else math.ceil(followers / 2)


def predict(rf: int, mode: str, latency: Any = EXPONENTIAL_1MS, fsync: Any = None) -> Prediction:
    """acks=all produce latency (mean, p50, p99, p999) for RF replicas under isr or quorum.

    `fsync`: one fsync's duration when every replica fsyncs each append (None: none does).
    """
    cdf, tail = one_way_cdf(latency)
    t_max = 6.0 * tail  # four hops, the slowest of up to RF-1 round trips: well past the tail
    if fsync is not None:
        fsync_cdf, fsync_tail = one_way_cdf(fsync)
        t_max += 2.0 * fsync_tail  # the leader's fsync and the awaited follower's
    h = t_max / _CELLS
    t = np.arange(_CELLS) * h

    def mass(f):  # each cell's probability, at its centre
        return np.clip(f(t + h / 2) - f(t - h / 2), 0.0, None)

    hop = mass(cdf)
    round_trip = _convolve(hop, hop)
    leg = round_trip if fsync is None else _convolve(round_trip, mass(fsync_cdf))
    k, n = followers_awaited(rf, mode), rf - 1
    if k == 0:
        commit = np.zeros(_CELLS)
        commit[0] = 1.0
    else:
        commit = np.diff(order_statistic_cdf(np.clip(np.cumsum(leg), 0.0, 1.0), k, n), prepend=0.0)
    if fsync is not None:
        commit = _convolve(commit, mass(fsync_cdf))  # the leader's fsync comes first
    total = _convolve(commit, round_trip)  # request + response are another two hops
    total /= total.sum()
    cum = np.cumsum(total)

    def q(p: float) -> float:
        return float(t[min(np.searchsorted(cum, p), _CELLS - 1)])

    return Prediction(mean=float(np.sum(t * total)), p50=q(0.5), p99=q(0.99), p999=q(0.999))


def predicted_latency(rf: int, mode: str, latency: Any = EXPONENTIAL_1MS, fsync: Any = None) -> tuple[float, float]:
    """(mean, p99) of request + order statistic + response, in ms."""
    p = predict(rf, mode, latency, fsync)
    return p.mean, p.p99


def replicas_needed(failures: int, mode: str) -> int:
    """Replicas that keep a partition available and lossless through `failures` broker failures.

    ISR: f+1 (any one surviving in-sync replica can lead); quorum: 2f+1 (a
    live majority is needed to elect and to commit).
    """
    if mode not in ("isr", "quorum"):
        raise ValueError(f"mode: must be isr or quorum, got {mode!r}")
    return failures + 1 if mode == "isr" else 2 * failures + 1
