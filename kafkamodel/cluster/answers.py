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
import dataclasses
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

SETTINGS = {  # resource -> the broker property that adds to it (doubled in the alternative run)
    "request_handler_busy_max": "num.io.threads",
    "network_thread_busy_max": "num.network.threads",
    "replica_fetcher_busy_max": "num.replica.fetchers",
}
BUSY = 0.5  # a first resource busier than this today queues requests enough to be latency's setting too


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


def changed(scenario: Scenario, setting: str, value) -> dict:
    """The scenario as given with one Kafka property changed: a broker property, or every producer's."""
    given = thaw(scenario.given)
    if setting in ("linger.ms", "acks"):
        for p in given.get("producers") or []:
            p[setting] = value
    else:
        given.setdefault("broker", {})[setting] = value
    return given


def run_today(scenario: Scenario, plan: Plan, simulate, setting: str, value) -> list[dict]:
    """One seed set at today's load with one property changed: the alternative's runs."""
    return run_loads(Scenario(changed(scenario, setting, value)), dataclasses.replace(plan, loads=(1.0,)), simulate)


def saturation_setting(scenario: Scenario, sat: dict) -> dict | None:
    """The property that raises the first resource to saturate, doubled; None when no Kafka property does (CPU,
    disks, NIC: more brokers or bigger machines)."""
    key = SETTINGS.get(sat["first"])
    if key is None:
        return None
    today = int(scenario["broker"][key])
    return {"setting": key, "value": 2 * today, "today": today,
            "why": f"the first to saturate is {sat['first_what']}; {key} ({today} today) sets how many there are: "
                   "doubled"}


def latency_setting(scenario: Scenario, sat: dict) -> dict | None:
    """The property that moves latency at today's load most, as the saturation ranking says: the first resource's
    property when it is already busy (its queue is in the latency), else the producers' batch wait (linger.ms:
    at low load each batch waits for it), else acks=1 (no wait for the followers)."""
    first = next((r for r in sat["resources"] if r["resource"] == sat["first"]), None)
    busy = first["today"]["value"] if first else None
    if first and first["resource"] in SETTINGS and busy is not None and busy >= BUSY:
        alt = saturation_setting(scenario, sat)
        alt["why"] = (f"the first to saturate, {sat['first_what']}, is {busy:.0%} busy today: requests queue for it; "
                      f"{alt['setting']} ({alt['today']} today) doubled")
        return alt
    lingers = [p["linger.ms"] for p in scenario["producers"]]
    if max(lingers) > 0:
        busy_note = f" (the first to saturate is only {busy:.0%} busy)" if busy is not None else ""
        return {"setting": "linger.ms", "value": max(lingers) / 2, "today": max(lingers),
                "why": f"no resource is busy enough to queue{busy_note}, so at today's load each batch waits "
                       f"linger.ms ({_g(max(lingers))} ms) before it is sent; halved"}
    if any(p["acks"] == "all" for p in scenario["producers"]):
        return {"setting": "acks", "value": "1", "today": "all",
                "why": "no resource is busy and linger.ms is 0: with acks=all each write waits for the followers' "
                       "fetch; acks=1 answers from the leader (and gives up what acks=all guarantees)"}
    return None


def _g(x) -> str:
    return f"{x:g}"


def load_alternative(scenario: Scenario, alt: dict, rows: list[dict]) -> dict:
    return {**alt, "load": 1.0, **{k: _spread([r[k] for r in rows]) for k in LATENCIES}}


def saturation_alternative(alt: dict, first: str, rows: list[dict]) -> dict:
    busy = _spread([r[first] for r in rows if r.get(first) is not None])
    return {**alt, "resource": first, "today_busy": busy,
            "saturates_at_load": (1.0 / busy["value"]) if busy["value"] else None}


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


def grow(scenario: Scenario, topic: dict, rf: int) -> None:
    """Set a given topic's replication factor to rf; an explicit assignment (``replicas``) gets, in each partition,
    the brokers it lacks in a rack it does not use yet where there is one, the least loaded first (as an operator's
    reassignment would add them)."""
    topic["replication.factor"] = rf
    if not topic.get("replicas"):
        return
    racks = scenario["racks"] or []
    load = [0] * scenario["brokers"]
    for t in scenario["topics"]:
        for replicas in placed(scenario, t):
            for b in replicas:
                load[b] += 1
    out = []
    for replicas in topic["replicas"]:
        replicas = list(replicas)
        while len(replicas) < rf:
            used = {racks[b % len(racks)] for b in replicas} if racks else set()
            b = min((b for b in range(scenario["brokers"]) if b not in replicas),
                    key=lambda b: (bool(racks) and racks[b % len(racks)] in used, load[b], b))
            replicas.append(b)
            load[b] += 1
        out.append(replicas)
    topic["replicas"] = out


def restart_answer(scenario: Scenario, plan: Plan, simulate, alternative: bool = True, skipped=None) -> dict:
    out = _restart_runs(scenario, plan, plan.gate, simulate)
    if alternative:
        alt = restart_alternative(scenario, plan, out, simulate)
        if alt.get("setting"):
            out["with_setting"] = alt
        else:
            out["no_setting"] = alt["why"]
            if skipped:
                skipped()
    return out


CATCH_UP_SHARE = 0.1  # a catch-up shorter than this share of the downtime: more fetcher threads cannot matter


def _isr(scenario, t) -> int:
    return t.get("min.insync.replicas") or scenario["broker"]["min.insync.replicas"]


def restart_alternative(scenario: Scenario, plan: Plan, out: dict, simulate) -> dict:
    """What moves the roll most. Topics whose replication factor is not above min.insync.replicas go under it while
    any of their replicas is down (acks=all writes fail): one replica more for them. Else each broker costs its
    downtime, its followers' catch-up and the gate's wait: a gate waiting longer than the catch-up measured in the
    runs, the wait halved; a catch-up of a tenth of the downtime or more, num.replica.fetchers doubled; else the
    downtime is the roll, and no property shortens it (no run)."""
    brokers, gate_ms = scenario["brokers"], _gate_ms(plan.gate)
    took = out["operation_ms"]["value"]
    catch_up = max(0.0, took / brokers - plan.downtime_ms - gate_ms) if took is not None else None
    short = [t for t in scenario["topics"] if t["replication.factor"] <= _isr(scenario, t)]
    if (out["under_min_isr_partition_ms"]["value"] or 0) > 0 and short:
        names = ", ".join(t["name"] for t in short)
        given = thaw(scenario.given)
        more = all(t["replication.factor"] < brokers for t in short)
        for t in given["topics"]:
            for u in short:
                if t["name"] == u["name"]:
                    if more:
                        grow(scenario, t, u["replication.factor"] + 1)
                    else:
                        t["min.insync.replicas"] = u["replication.factor"] - 1
        rf = {t["replication.factor"] for t in short}
        key = "replication.factor" if more else "min.insync.replicas"
        today = max(rf) if more else max(_isr(scenario, t) for t in short)
        alt = {"setting": f"{key} of {names}", "value": today + 1 if more else min(rf) - 1, "today": today,
               "why": f"{names} ha{'s' if len(short) == 1 else 've'} no more replicas than min.insync.replicas, so "
                      "while a broker holding one of them is down acks=all writes to it fail; "
                      + ("one replica more" if more else "every broker holds one already: min.insync.replicas one "
                         "lower (fewer copies per acknowledged record)")}
        runs = _restart_runs(Scenario(given), plan, plan.gate, simulate)
    elif gate_ms and (catch_up is None or gate_ms > catch_up):
        (kind,) = plan.gate
        gate = {kind: gate_ms / 2}
        alt = {"setting": f"the gate's {kind}", "value": gate_ms / 2, "today": gate_ms,
               "why": f"each broker waits {_g(gate_ms)} ms at the gate, more than its catch-up "
                      + (f"({_g(round(catch_up))} ms)" if catch_up is not None else "") + ": the wait halved"}
        runs = _restart_runs(scenario, dataclasses.replace(plan, gate=gate), gate, simulate)
    elif catch_up is None or catch_up >= CATCH_UP_SHARE * plan.downtime_ms:
        today = int(scenario["broker"]["num.replica.fetchers"])
        alt = {"setting": "num.replica.fetchers", "value": 2 * today, "today": today,
               "why": "besides the downtime, which no property shortens, each broker's time is its catch-up "
                      + (f"(about {_g(round(catch_up))} ms)" if catch_up is not None else "")
                      + f"; num.replica.fetchers ({today} today) sets how many threads fetch it: doubled"}
        runs = _restart_runs(Scenario(changed(scenario, "num.replica.fetchers", 2 * today)), plan, plan.gate,
                             simulate)
    else:
        return {"why": f"the roll is its brokers' downtime ({brokers} x {_g(plan.downtime_ms / 1000)} s): each "
                       f"broker's followers catch up in about {_g(round(catch_up))} ms, under a tenth of it, and "
                       "the gate does not wait; no Kafka property shortens a broker's downtime"}
    return {**alt, **{k: runs[k] for k in RESTART_MEASURES}, "unfinished_seeds": runs["unfinished_seeds"]}


RESTART_MEASURES = ("operation_ms", "under_min_isr_partition_ms", "under_replicated_partition_ms",
                    "operation_produce_p99_ms", "operation_produce_errors")


def _restart_runs(scenario: Scenario, plan: Plan, gate, simulate) -> dict:
    brokers = scenario["brokers"]
    # a controlled shutdown needs no failure detection: each broker's downtime, its catch-up and the gate; a run
    # that ends first says so (unfinished_seeds)
    duration = plan.warmup_ms + brokers * (plan.downtime_ms + RESTART_MARGIN_MS + _gate_ms(gate))
    given = thaw(scenario.given)
    given.update({"duration.ms": duration, "faults": [],
                  "operations": [{"at.ms": plan.warmup_ms, "kind": "rolling_restart", "gate": gate,
                                  "downtime.ms": plan.downtime_ms}]})
    runs = []
    for seed in plan.seeds:
        s = simulate(Scenario({**given, "seed": seed})).summary
        runs.append({k: s.get(k) for k in RESTART_MEASURES})
    unfinished = sum(r["operation_ms"] is None for r in runs)
    return {"gate": gate, "downtime_ms": plan.downtime_ms, "run_ms": duration, "unfinished_seeds": unfinished,
            **{k: _spread([r[k] for r in runs]) for k in runs[0]}}


def durability_setting(scenario: Scenario) -> dict | None:
    """The weakest topic (the fewest replicas, then the lowest min.insync.replicas): one replica more while the
    brokers allow it, else min.insync.replicas one higher (an acknowledged record then has one copy more)."""
    default_isr = scenario["broker"]["min.insync.replicas"]

    def isr(t):
        return t.get("min.insync.replicas") or default_isr

    weakest = min(scenario["topics"], key=lambda t: (t["replication.factor"], isr(t)))
    rf, name = weakest["replication.factor"], weakest["name"]
    if rf < scenario["brokers"]:
        return {"setting": f"replication.factor of {name}", "topic": name, "key": "replication.factor",
                "value": rf + 1, "today": rf,
                "why": f"{name} has the fewest replicas ({rf}): its partitions are lost first; one replica more"}
    if isr(weakest) < rf:
        return {"setting": f"min.insync.replicas of {name}", "topic": name, "key": "min.insync.replicas",
                "value": isr(weakest) + 1, "today": isr(weakest),
                "why": f"{name} already has a replica on every broker; with min.insync.replicas {isr(weakest)} an "
                       "acknowledged record may have that few copies: one more"}
    return None


def durability_answer(scenario: Scenario, plan: Plan, progress: bool = False, alternative: bool = True) -> dict:
    problems: list[str] = []
    failures = kit.parse_failures(plan.failures, kit.zones_of(scenario), problems)
    if problems:
        raise ValueError(problems[0])
    configurations = [kit.Configuration("today", {}, scenario)]
    alt = durability_setting(scenario) if alternative else None
    if alt:
        given = thaw(scenario.given)
        for t in given["topics"]:
            if t["name"] == alt["topic"]:
                if alt["key"] == "replication.factor":
                    grow(scenario, t, alt["value"])
                else:
                    t[alt["key"]] = alt["value"]
        configurations.append(kit.Configuration("with_setting", {}, Scenario(given)))
    spec = kit.DurabilitySpec(source="cluster report", base=scenario["name"], base_path="",
                              configurations=tuple(configurations), failures=failures, seed=1, windows=plan.windows)
    estimates = kit.durability_estimate(spec, progress=progress, workers=1)
    out = {"failures": dict(failures.given), "windows": plan.windows, **_durability_figures(estimates[0])}
    if alt:
        out["with_setting"] = {**alt, **_durability_figures(estimates[1])}
    return out


def _durability_figures(e) -> dict:
    row = e.row()

    def nines(p):
        return -math.log10(p) if p and p > 0 else None

    return {"partitions": e.partitions,
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
    # loads; latency's alternative (one set at 1x); death twice; the roll twice (saturation's alternative, when it
    # has one and it is not latency's, is added once the ranking is known)
    runs = len(plan.loads) * seeds + (5 * seeds if scenario["producers"] else 0)
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
        sat = out["saturation"]
        lat, fix = latency_setting(scenario, sat), saturation_setting(scenario, sat)
        if lat is None:
            bar.total -= seeds
        if fix and (lat is None or lat["setting"] != fix["setting"]):
            bar.total += seeds
        bar.refresh()
        done = {}
        if lat:
            done[lat["setting"]] = timed("load_setting", run_today, scenario, plan, simulate, lat["setting"],
                                         lat["value"])
            out["load_with_setting"] = load_alternative(scenario, lat, done[lat["setting"]])
        if fix:
            if fix["setting"] not in done:
                done[fix["setting"]] = timed("saturation_setting", run_today, scenario, plan, simulate,
                                             fix["setting"], fix["value"])
            sat["with_setting"] = saturation_alternative(fix, sat["first"], done[fix["setting"]])
        out["broker_death"] = timed("broker_death", death_answer, scenario, plan, simulate)

        def skipped():  # the roll's alternative was not run
            bar.total -= seeds
            bar.refresh()

        out["rolling_restart"] = timed("rolling_restart", restart_answer, scenario, plan, simulate, True, skipped)
    bar.close()
    if plan.durability:
        out["durability"] = timed("durability", durability_answer, scenario, plan, progress)
    out["shortening"]["cpu_seconds"] = seconds
    return out
