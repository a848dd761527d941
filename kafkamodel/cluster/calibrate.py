"""Fit the costs a hardware profile leaves uncertain to an operator's own measurements.

Each measured point (``perftest.Measurement``) is run in the model: the operator's scenario with its producers
replaced by the one producer of the test (topic, record size, target rate or closed loop, producer properties),
no consumers, faults or operations, for ``duration_ms``. The fitted parameters (``PARAMETERS``: the request
handler's time per request and per KiB, the NIC, the disks' write rate, the fsync time) are searched by
Nelder-Mead in log space, minimising the squared log ratio of model to measurement over the quantities each point
has: the throughput of a closed-loop test, the average and p99 produce latency. perf-test truncates each latency
to whole milliseconds before averaging and taking percentiles, so a measured value m is compared with m + 0.5.

Some points are fitted; the others (``holdout``) are predicted, and their error is the fit's honest figure. A fit
whose parameter leaves its physical range (``PARAMETERS``' bounds) is refused, naming the parameter.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..config.scenario import thaw
from .perftest import Measurement


@dataclass(frozen=True)
class Parameter:
    path: str  # the scenario path it sets (with_overrides)
    low: float  # its physical range, for the refusal
    high: float
    unit: str
    why: str  # why the range is what it is


PARAMETERS: dict[str, Parameter] = {
    "costs.request.us": Parameter("costs.request.us", 1, 5000, "us per request",
                                  "a request handler's fixed work per request: above 5 ms a broker could not serve "
                                  "200 requests/s per thread; below 1 us it is less than a JVM method dispatch chain"),
    "costs.kib.us": Parameter("costs.kib.us", 0.01, 50, "us per KiB",
                              "copying and CRC-checking a KiB: 0.01 us is 100 GB/s (beyond memory bandwidth), 50 us "
                              "is 20 MB/s per thread"),
    "hardware.broker.nic.gbps": Parameter("hardware.broker.nic.gbps", 0.1, 400, "Gbps",
                                          "from Fast Ethernet to the fastest NICs sold"),
    "hardware.broker.disk.write.mib.per.s": Parameter("hardware.broker.disk.write.mib.per.s", 10, 50000, "MiB/s",
                                                      "from one slow hard disk to an array of NVMe drives"),
    "fsync.ms": Parameter("hardware.broker.fsync.ms", 0.005, 100, "ms (median)",
                          "an enterprise NVMe flush with power-loss protection to a hard disk's rotation and more"),
}
DEFAULT_FIT = ("costs.request.us", "costs.kib.us")


class FitRefused(ValueError):
    """A fit whose parameters leave their physical ranges (one line naming each)."""


def point_scenario(scenario, m: Measurement, duration_ms: float) -> dict:
    """The operator's scenario running the test of measurement `m` alone."""
    s = thaw(scenario.given)
    producer = {"topic": m.topic, "rate.per.s": m.rate_per_s, "record.size.bytes": m.record_size_bytes, **m.producer}
    s.update({"producers": [producer], "consumers": [], "faults": [], "operations": [], "duration.ms": duration_ms})
    return s


def _set(s: dict, name: str, value: float) -> dict:
    p = PARAMETERS[name]
    section, _, rest = p.path.partition(".")
    if name == "fsync.ms":
        s.setdefault("hardware", {}).setdefault("broker", {})["fsync.ms"] = {"dist": "lognormal", "median": value,
                                                                           "sigma": 0.5}
    elif section == "hardware":
        role, _, part = rest.partition(".")
        s.setdefault("hardware", {}).setdefault(role, {})[part] = value
    else:
        s.setdefault(section, {})[rest] = value
    return s


def predict(scenario, m: Measurement, values: dict[str, float], duration_ms: float) -> dict:
    """The model's throughput and produce latencies at measurement m's load, with these parameter values."""
    from .. import simulate

    s = point_scenario(scenario, m, duration_ms)
    for name, v in values.items():
        _set(s, name, v)
    summary = simulate(s).summary
    return {"records_per_s": summary["records_acked_per_s"], "avg": summary["produce_latency_ms_mean"],
            "p50": summary["produce_latency_ms_p50"], "p99": summary["produce_latency_ms_p99"]}


def residuals(m: Measurement, got: dict) -> list[float]:
    """log(model / measured) of each quantity the point has (measured latencies + 0.5: perf-test truncates)."""
    out = []
    if m.rate_per_s == "max" and m.records_per_s:
        out.append(math.log(max(got["records_per_s"], 1e-9) / m.records_per_s))
    for key in ("avg", "p99"):
        if key in m.latency_ms and got[key] == got[key]:
            out.append(math.log(max(got[key], 1e-6) / (m.latency_ms[key] + 0.5)))
    return out


def nelder_mead(f, x0: np.ndarray, step: float = 0.7, iterations: int = 40, tolerance: float = 0.01):
    """Minimise f from x0 (Nelder and Mead 1965, the standard coefficients 1, 2, 0.5, 0.5); stop when the simplex
    is smaller than `tolerance` in every direction (in log space: 1 %), or after `iterations`."""
    n = len(x0)
    simplex = [x0] + [x0 + step * np.eye(n)[i] for i in range(n)]
    values = [f(x) for x in simplex]
    for _ in range(iterations):
        order = np.argsort(values)
        simplex, values = [simplex[i] for i in order], [values[i] for i in order]
        if max(np.max(np.abs(x - simplex[0])) for x in simplex[1:]) < tolerance:
            break
        centroid = np.mean(simplex[:-1], axis=0)
        reflected = centroid + (centroid - simplex[-1])
        fr = f(reflected)
        if fr < values[0]:
            expanded = centroid + 2 * (centroid - simplex[-1])
            fe = f(expanded)
            simplex[-1], values[-1] = (expanded, fe) if fe < fr else (reflected, fr)
        elif fr < values[-2]:
            simplex[-1], values[-1] = reflected, fr
        else:
            contracted = centroid + 0.5 * (simplex[-1] - centroid)
            fc = f(contracted)
            if fc < values[-1]:
                simplex[-1], values[-1] = contracted, fc
            else:
                simplex = [simplex[0]] + [simplex[0] + 0.5 * (x - simplex[0]) for x in simplex[1:]]
                values = [values[0]] + [f(x) for x in simplex[1:]]
    best = int(np.argmin(values))
    return simplex[best], values[best]


@dataclass
class Fit:
    values: dict[str, float]  # the fitted parameters
    start: dict[str, float]  # where the search started (the scenario's profile)
    fitted: list[dict] = field(default_factory=list)  # per point: source, measured, predicted
    held_out: list[dict] = field(default_factory=list)
    evaluations: int = 0
    duration_ms: float = 0.0


def _row(m: Measurement, got: dict) -> dict:
    measured = {"records_per_s": m.records_per_s, **m.latency_ms}
    err = {k: got[k] / (measured[k] + (0.5 if k != "records_per_s" else 0)) - 1
           for k in ("records_per_s", "avg", "p99") if measured.get(k) is not None and k in got}
    return {"source": m.source, "topic": m.topic, "record.size.bytes": m.record_size_bytes, "rate.per.s": m.rate_per_s,
            "measured": measured, "predicted": got, "relative_error": err}


def fit(scenario, points: list[Measurement], holdout: list[Measurement], names=DEFAULT_FIT,
        duration_ms: float = 1000.0, iterations: int = 40) -> Fit:
    """Fit `names` to `points`; predict `holdout`. FitRefused if a parameter leaves its physical range."""
    resolved = scenario.to_dict()
    start = {}
    for name in names:
        p = PARAMETERS[name]
        if name == "fsync.ms":
            d = resolved["hardware"]["broker"]["fsync.ms"]
            v = d.get("median", d.get("value", 1.0)) if isinstance(d, dict) else float(d)
        elif p.path.startswith("hardware."):
            v = resolved["hardware"]["broker"][p.path.split(".", 2)[2]]
        else:
            section, key = p.path.split(".", 1)
            v = resolved[section][key]
        start[name] = float(v) if v else p.low * 10
    count = [0]

    def loss(x: np.ndarray) -> float:
        count[0] += 1
        values = {n: float(math.exp(v)) for n, v in zip(names, x)}
        if any(not PARAMETERS[n].low / 100 <= v <= PARAMETERS[n].high * 100 for n, v in values.items()):
            return 1e6  # far outside: the search turns back (and a result there is refused below)
        r = [e for m in points for e in residuals(m, predict(scenario, m, values, duration_ms))]
        return float(np.mean(np.square(r))) if r else 0.0

    x, _ = nelder_mead(loss, np.log([start[n] for n in names]), iterations=iterations)
    values = {n: float(math.exp(v)) for n, v in zip(names, x)}
    outside = [f"{n} = {v:.4g} {PARAMETERS[n].unit} leaves its physical range {PARAMETERS[n].low:g}..."
               f"{PARAMETERS[n].high:g} ({PARAMETERS[n].why})" for n, v in values.items()
               if not PARAMETERS[n].low <= v <= PARAMETERS[n].high]
    if outside:
        raise FitRefused("fit refused: " + "; ".join(outside) + ": the measurements are not explained by these "
                         "parameters (another part limits them, or the setup differs from the scenario)")
    out = Fit(values, start, evaluations=count[0], duration_ms=duration_ms)
    out.fitted = [_row(m, predict(scenario, m, values, duration_ms)) for m in points]
    out.held_out = [_row(m, predict(scenario, m, values, duration_ms)) for m in holdout]
    return out


def profile_yaml(f: Fit, base: str, name: str, sources: list[str], when: str) -> str:
    """The hardware profile file: the base profile's parts with the fitted ones and the fitted costs, each sourced."""
    import yaml

    def source(n: str) -> str:
        held = "; ".join(f"{r['source']}: {', '.join(f'{k} {v:+.0%}' for k, v in r['relative_error'].items())}"
                         for r in f.held_out) or "no point held out"
        return (f"fitted by kafkamodel cluster calibrate on {when} to {len(f.fitted)} measured point(s) "
                f"({', '.join(sources)}); started from {f.start[n]:.4g}; error on the held-out points: {held}")

    parts, costs = {}, {}
    for n, v in f.values.items():
        p = PARAMETERS[n]
        if n == "fsync.ms":
            parts["fsync.ms"] = {"value": {"dist": "lognormal", "median": round(v, 4), "sigma": 0.5}, "source": source(n)}
        elif p.path.startswith("hardware."):
            parts[p.path.split(".", 2)[2]] = {"value": round(v, 4), "source": source(n)}
        else:
            costs[p.path.split(".", 1)[1]] = {"value": round(v, 4), "source": source(n)}
    doc = {"name": name, "about": f"{base} with costs fitted to the operator's measurements (kafkamodel cluster "
                                  "calibrate)", "base": base, "parts": parts, "costs": costs,
           "fit": {"duration.ms": f.duration_ms, "evaluations": f.evaluations, "fitted": f.fitted,
                   "held_out": f.held_out}}
    return ("# A hardware profile written by kafkamodel cluster calibrate: use it as hardware: {broker: {profile: "
            "THIS_FILE}}\n" + yaml.safe_dump(_plain(doc), sort_keys=False, width=120))


def _plain(v):
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, (np.floating, np.integer)):
        return v.item()
    return v
