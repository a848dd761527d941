"""The operator's questions, answered by runs of the model on their cluster's scenario (``answers`` ->
``answers.json``; ``report`` renders it).

* **Load**: produce and end-to-end p50 / p99 / p99.9 at today's load and at 1.5x and 2x (every producer's rate
  scaled), over `seeds` seeds: each figure the median of the seeds with their range as its interval.
* **Saturation**: each resource's utilisation at those loads (the busiest broker's request handler threads,
  network threads, replica fetcher thread, CPU, disk writes: the run's own measures; the NIC: the bytes the
  placement sends through the busiest broker's NIC, computed); the load at which each reaches 100 % by a straight
  line through the origin fitted to the measured points; the first to get there.
* **A broker's death**: the broker that leads the most partitions crashes after `warmup_ms` and stays down;
  unavailability (partition-ms and the longest partition), under-replicated partition-time, the producers' p99
  over the records sent after the crash, and whether send() blocked (time waiting for buffer.memory).
* **A rolling restart** gated as the operator says (``gate``), each broker down ``downtime_ms``: how long it took,
  under-min-ISR and under-replicated partition-time, the producers' p99 meanwhile and their errors.
* **Durability** in nines per partition-year, from the failure rates (docs/durability.md's defaults unless the
  operator gives theirs), by the kit's durability estimator.

Runs are shortened (``duration_ms``, default 5 simulated seconds for the load runs) because the model is slow at
real sizes; ``shortening`` in the answers says what was shortened and what that costs.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field

import numpy as np

from ..config.hardware import goodput
from ..config.scenario import Scenario, thaw
from . import kit
from .describe import placed

LOADS = (1.0, 1.5, 2.0)
RESOURCES = {  # summary key -> what it is
    "request_handler_busy_max": "request handler threads (num.io.threads) of the busiest broker",
    "network_thread_busy_max": "network threads (num.network.threads) of the busiest broker",
    "replica_fetcher_busy_max": "the busiest replica fetcher thread",
    "broker_cpu_utilization_max": "the busiest broker's CPU cores",
    "disk_write_rate_utilization_max": "the busiest broker's log disks, the bytes its replicas append over "
                                       "hardware.broker.disk.write.mib.per.s (computed from the placement: a run "
                                       "shorter than vm.dirty_expire_centisecs writes nothing back)",
    "nic_utilization_max": "the busiest broker's NIC, the busier direction (computed from the placement)",
}
COMPUTED = ("disk_write_rate_utilization_max", "nic_utilization_max")
LATENCIES = ("produce_latency_ms_p50", "produce_latency_ms_p99", "produce_latency_ms_p999",
             "e2e_latency_ms_p50", "e2e_latency_ms_p99", "e2e_latency_ms_p999")


@dataclass
class Plan:
    seeds: tuple = (1, 2, 3)
    loads: tuple = LOADS
    duration_ms: float = 5000.0  # each load run
    warmup_ms: float = 2000.0  # traffic before a crash or an operation
    gate: object = "no_under_replicated"  # the rolling restart's gate, as the scenario's operations take it
    downtime_ms: float = 10000.0  # each broker's process down in the rolling restart
    failures: dict = field(default_factory=dict)  # durability: failure rates (docs/durability.md's keys)
    windows: int = 200  # durability: failure windows per replica layout
    durability: bool = True


def scaled(given: dict, factor: float) -> dict:
    s = copy.deepcopy(given)
    for p in s.get("producers") or []:
        if p.get("rate.per.s") not in (None, "max"):
            p["rate.per.s"] = p["rate.per.s"] * factor
    return s


def _spread(values: list) -> dict:
    """The median of the seeds and their range: {value, low, high}."""
    v = [float(x) for x in values if x is not None and not (isinstance(x, float) and math.isnan(x))]
    if not v:
        return {"value": None, "low": None, "high": None}
    return {"value": float(np.median(v)), "low": min(v), "high": max(v)}


def _bytes(scenario) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bytes per second into and out of each broker's NIC, and appended to each broker's logs."""
    brokers = scenario["brokers"]
    into, out, disk = np.zeros(brokers), np.zeros(brokers), np.zeros(brokers)
    groups: dict[str, int] = {}
    for c in scenario["consumers"]:
        groups[c["topic"]] = groups.get(c["topic"], 0) + 1
    rates: dict[str, float] = {}
    for p in scenario["producers"]:
        if p["rate.per.s"] != "max":
            rates[p["topic"]] = rates.get(p["topic"], 0.0) + p["rate.per.s"] * p["instances"] * p["record.size.bytes"]
    for t in scenario["topics"]:
        per_partition = rates.get(t["name"], 0.0) / t["partitions"]
        for replicas in placed(scenario, t):
            leader = replicas[0]
            into[leader] += per_partition
            out[leader] += per_partition * (len(replicas) - 1 + groups.get(t["name"], 0))
            for b in replicas:
                disk[b] += per_partition
            for f in replicas[1:]:
                into[f] += per_partition
    return into, out, disk


def disk_utilization(scenario) -> float:
    """The busiest broker's appended bytes over its disks' sequential write rate (0: unlimited)."""
    rate = scenario["hardware"]["broker"]["disk.write.mib.per.s"]
    return float(_bytes(scenario)[2].max() / (rate * 2**20)) if rate else 0.0


def nic_utilization(scenario) -> float:
    """The busiest broker NIC's busier direction at this load: produce bytes into each leader, replication from
    each leader to its followers, each consumer group's reads from the leader (the bytes on the wire at the NIC's
    goodput for the MTU)."""
    into, out, _ = _bytes(scenario)
    m = scenario["hardware"]["broker"]
    gbps = scenario["network"]["bandwidth.mbps"] / 1000 if scenario["network"]["bandwidth.mbps"] else m["nic.gbps"]
    if not gbps:
        return 0.0
    return float(max(into.max(), out.max()) * 8 / (gbps * 1e9 * goodput(m["nic.mtu"])))


def run_loads(scenario: Scenario, plan: Plan, simulate) -> list[dict]:
    given = thaw(scenario.given)
    given["duration.ms"] = plan.duration_ms
    rows = []
    for load in plan.loads:
        at = Scenario(scaled(given, load))
        for seed in plan.seeds:
            s = simulate(at.with_overrides({"seed": seed})).summary
            row = {"load": load, "seed": seed, "records_acked_per_s": s["records_acked_per_s"],
                   "records_sent": s["records_sent"], "nic_utilization_max": nic_utilization(at),
                   "disk_write_rate_utilization_max": disk_utilization(at)}
            row.update({k: s.get(k) for k in LATENCIES})
            row.update({k: s.get(k) for k in RESOURCES if k not in COMPUTED})
            rows.append(row)
    return rows


def load_answer(rows: list[dict], plan: Plan) -> list[dict]:
    out = []
    for load in plan.loads:
        at = [r for r in rows if r["load"] == load]
        out.append({"load": load, "records_acked_per_s": _spread([r["records_acked_per_s"] for r in at]),
                    **{k: _spread([r[k] for r in at]) for k in LATENCIES}})
    return out


def saturation_answer(rows: list[dict], plan: Plan) -> dict:
    resources = []
    for key, what in RESOURCES.items():
        pts = [(r["load"], r[key]) for r in rows if r.get(key) is not None]
        if not pts:
            resources.append({"resource": key, "what": what, "measured": False})
            continue
        x = np.array([p[0] for p in pts])
        u = np.array([p[1] for p in pts])
        slope = float((x * u).sum() / (x * x).sum())  # utilisation = slope x load, through the origin
        resources.append({"resource": key, "what": what, "measured": True,
                          "today": _spread([r[key] for r in rows if r["load"] == 1.0 and r.get(key) is not None]),
                          "per_load": {str(load): _spread([r[key] for r in rows if r["load"] == load])
                                       for load in plan.loads},
                          "saturates_at_load": (1.0 / slope) if slope > 0 else None})
    ranked = sorted((r for r in resources if r.get("saturates_at_load")), key=lambda r: r["saturates_at_load"])
    first = ranked[0] if ranked else None
    return {"resources": resources, "first": first["resource"] if first else None,
            "first_what": first["what"] if first else None,
            "first_at_load": first["saturates_at_load"] if first else None,
            "method": "a straight line through the origin fitted to each resource's utilisation at the loads run; "
                      "the load where it reaches 100 % (queues grow without bound there; latency rises well before)"}


def leaders_of(scenario) -> list[int]:
    count = [0] * scenario["brokers"]
    for t in scenario["topics"]:
        for replicas in placed(scenario, t):
            count[replicas[0]] += 1
    return count


def detection_ms(scenario) -> float:
    b = scenario["broker"]
    return float(b.get("broker.session.timeout.ms") or b.get("zookeeper.session.timeout.ms") or 18000)


def _p99_after(result, start_ms: float) -> float | None:
    rec = result.records
    if rec is None or len(rec) == 0:
        return None
    sent = rec[(rec["send_ms"] >= start_ms) & rec["acked"]]
    if len(sent) == 0:
        return None
    return float(np.percentile(sent["ack_ms"] - sent["send_ms"], 99))


def detection_key(scenario) -> str:
    """The broker setting after which the controller declares a silent broker dead."""
    return ("broker.session.timeout.ms" if scenario["kafka.metadata"] == "kraft" else "zookeeper.session.timeout.ms")


def death_answer(scenario: Scenario, plan: Plan, simulate, alternative: bool = True) -> dict:
    leads = leaders_of(scenario)
    broker = int(np.argmax(leads))
    duration = plan.warmup_ms + detection_ms(scenario) + 10000.0
    given = thaw(scenario.given)
    given.update({"duration.ms": duration, "faults": [{"at.ms": plan.warmup_ms, "kind": "crash", "broker": broker}],
                  "operations": []})
    out = _death_runs(scenario, given, plan, simulate, broker, leads, duration)
    if alternative:  # the setting that moves this answer most: how long a silent broker goes unnoticed
        key, half = detection_key(scenario), detection_ms(scenario) / 2
        changed = copy.deepcopy(given)
        changed.setdefault("broker", {})[key] = half
        alt = _death_runs(Scenario(changed), changed, plan, simulate, broker, leads, duration)
        out["with_setting"] = {"setting": key, "value": half,
                               "partition_unavailable_ms_max": alt["partition_unavailable_ms_max"],
                               "produce_p99_after_crash_ms": alt["produce_p99_after_crash_ms"]}
    return out


def _death_runs(scenario, given: dict, plan: Plan, simulate, broker: int, leads: list, duration: float) -> dict:
    runs = []
    for seed in plan.seeds:
        result = simulate(Scenario({**given, "seed": seed}))
        s = result.summary
        runs.append({"seed": seed, "unavailable_partition_ms": s["unavailable_ms"],
                     "partition_unavailable_ms_max": s.get("partition_unavailable_ms_max"),
                     "under_replicated_partition_ms": s.get("under_replicated_partition_ms"),
                     "produce_p99_after_crash_ms": _p99_after(result, plan.warmup_ms),
                     "producer_buffer_wait_ms": s.get("producer_buffer_wait_ms"),
                     "not_enough_replicas_errors": s.get("not_enough_replicas_errors")})
    keys = [k for k in runs[0] if k != "seed"]
    return {"broker": broker, "leads_partitions": leads[broker], "crash_at_ms": plan.warmup_ms,
            "run_ms": duration, "detection_ms": detection_ms(scenario),
            **{k: _spread([r[k] for r in runs]) for k in keys},
            "send_blocked": any((r["producer_buffer_wait_ms"] or 0) > 0 for r in runs)}


RESTART_MARGIN_MS = 15000.0  # per broker, beyond its downtime and gate: its start, log recovery and catch-up


def _gate_ms(gate) -> float:
    return float(next(iter(gate.values()))) if isinstance(gate, dict) else 0.0


def restart_answer(scenario: Scenario, plan: Plan, simulate) -> dict:
    brokers = scenario["brokers"]
    # a controlled shutdown needs no failure detection: each broker's downtime, its catch-up and the gate; a run
    # that ends first says so (unfinished_seeds)
    duration = plan.warmup_ms + brokers * (plan.downtime_ms + RESTART_MARGIN_MS + _gate_ms(plan.gate))
    given = thaw(scenario.given)
    given.update({"duration.ms": duration, "faults": [],
                  "operations": [{"at.ms": plan.warmup_ms, "kind": "rolling_restart", "gate": plan.gate,
                                  "downtime.ms": plan.downtime_ms}]})
    runs = []
    for seed in plan.seeds:
        s = simulate(Scenario({**given, "seed": seed})).summary
        runs.append({"operation_ms": s.get("operation_ms"),
                     "under_min_isr_partition_ms": s.get("under_min_isr_partition_ms"),
                     "under_replicated_partition_ms": s.get("under_replicated_partition_ms"),
                     "operation_produce_p99_ms": s.get("operation_produce_p99_ms"),
                     "operation_produce_errors": s.get("operation_produce_errors")})
    unfinished = sum(r["operation_ms"] is None for r in runs)
    return {"gate": plan.gate, "downtime_ms": plan.downtime_ms, "run_ms": duration, "unfinished_seeds": unfinished,
            **{k: _spread([r[k] for r in runs]) for k in runs[0]}}


def durability_answer(scenario: Scenario, plan: Plan, progress: bool = False) -> dict:
    problems: list[str] = []
    failures = kit.parse_failures(plan.failures, kit.zones_of(scenario), problems)
    if problems:
        raise ValueError(problems[0])
    spec = kit.DurabilitySpec(source="cluster report", base=scenario["name"], base_path="",
                              configurations=(kit.Configuration("today", {}, scenario),), failures=failures,
                              seed=1, windows=plan.windows)
    (e,) = kit.durability_estimate(spec, progress=progress, workers=1)
    row = e.row()

    def nines(p):
        return -math.log10(p) if p and p > 0 else None

    return {"failures": dict(failures.given), "windows": plan.windows, "partitions": e.partitions,
            "loss_probability_per_partition_year": {"value": row["loss_probability_per_partition_year"],
                                                    "low": row["loss_probability_per_partition_year_low"],
                                                    "high": row["loss_probability_per_partition_year_high"]},
            "nines": {"value": nines(row["loss_probability_per_partition_year"]),
                      "low": nines(row["loss_probability_per_partition_year_high"]),
                      "high": nines(row["loss_probability_per_partition_year_low"])},
            "acked_records_lost_per_year": row["acked_records_lost_per_year"],
            "unavailable_minutes_per_year": row["unavailable_minutes_per_year"]}


def shortening(scenario: Scenario, plan: Plan, rows: list[dict]) -> dict:
    records = min(r["records_sent"] for r in rows if r["load"] == 1.0)
    busiest = 0.0
    for t in scenario["topics"]:
        rate = sum(p["rate.per.s"] * p["instances"] * p["record.size.bytes"] for p in scenario["producers"]
                   if p["topic"] == t["name"] and p["rate.per.s"] != "max")
        busiest = max(busiest, rate / t["partitions"] / (t["segment.bytes"] or scenario["broker"]["log.segment.bytes"]))
    roll_s = 1 / busiest if busiest else None
    return {"scenario_duration_ms": scenario["duration.ms"], "load_run_ms": plan.duration_ms,
            "shortened": plan.duration_ms < scenario["duration.ms"],
            "partitions_simulated": sum(t["partitions"] for t in scenario["topics"]), "partitions_sampled": False,
            "records_per_run_today": records, "records_above_p999_per_run": records / 1000,
            "segment_roll_every_s": roll_s, "seeds": len(plan.seeds)}


def answers(scenario: Scenario, plan: Plan, simulate=None, inputs: dict | None = None,
            progress: bool = False) -> dict:
    import time

    from .. import simulate as run

    model = simulate or run
    seconds: dict[str, float] = {}  # CPU seconds of each part: what the answers cost
    seeds = len(plan.seeds)
    runs = len(plan.loads) * seeds + (3 * seeds if scenario["producers"] else 0)  # loads; death twice; the roll
    bar = kit.progress_bar(runs, "cluster report: model runs", disable=not progress)

    def simulate(s):
        result = model(s)
        bar.update()
        return result

    def timed(name, f, *args):
        t0 = time.process_time()
        value = f(*args)
        seconds[name] = round(time.process_time() - t0, 1)
        return value

    rows = timed("load", run_loads, scenario, plan, simulate)
    out = {"scenario": scenario["name"], "inputs": inputs or {}, "brokers": scenario["brokers"],
           "kafka.version": scenario["kafka.version"], "profile": scenario["hardware"]["broker"]["profile"],
           "load": load_answer(rows, plan), "saturation": saturation_answer(rows, plan),
           "shortening": shortening(scenario, plan, rows), "runs": rows, "made": kit.provenance()}
    if scenario["producers"]:
        out["broker_death"] = timed("broker_death", death_answer, scenario, plan, simulate)
        out["rolling_restart"] = timed("rolling_restart", restart_answer, scenario, plan, simulate)
    bar.close()
    if plan.durability:
        out["durability"] = timed("durability", durability_answer, scenario, plan, progress)
    out["shortening"]["cpu_seconds"] = seconds
    return out
