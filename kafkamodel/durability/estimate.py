"""Rates to loss per year: the failure process finds the critical events, the detailed model measures each.

For a configuration (a scenario), partitions are grouped by the zones of their
replicas in assignment order (partitions alike in that are alike to the
failure process). For each group, ``windows.sample`` draws the windows of one
partition (failure biasing). Each critical event falls in a class (``reduced``:
the kinds and sizes of its steps; none where Kafka's rules decide alone), and
each class is run once through ``simulate`` (whatever the layout: the first
group's first partition stands for all): the scenario with that class's faults
on that partition's brokers, *compressed in time* (each step followed by a gap
longer than the failure detection time, and for an isolation than
replica.lag.time.max.ms, so the controller and the leaders have reacted to it
before the next, as they have in real minutes or hours; every replica down at
the critical moment kept down until after it, then back in the order of their
kinds' down times). The partition's ``acked_records_lost`` in that run is the
class's loss. (The records lost by a class that loses a whole log are those
the compressed run acknowledged; in a real window the log's retention is at
stake: the details file says so.)

The whole cluster (``Cluster``): the same failure process over every broker,
each distinct replica list a layout; the first loss anywhere per cycle gives
the probability of any loss per cluster-year (classes it finds that the
groups did not are run too).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..config.scenario import Scenario
from ..config.settings import Settings
from ..folders import write_atomic
from ..kit import as_finished, progress_bar, stable_hash
from ..sim.controller.placement import assign
from ..sim.storage.recovery import scenario_mean_recovery_ms
from . import windows as W
from .markov import MINUTES_PER_YEAR
from .spec import MS_PER_YEAR, Configuration, DurabilitySpec, Failures, zones_of

WARMUP_MS = 5000.0  # traffic before the first step
SETTLE_MS = 5000.0  # beyond detection and lag limits between steps


def at_least_once(rate: float) -> float:
    """P(at least one event in a year) for a Poisson rate per year."""
    return -math.expm1(-rate)


@dataclass
class Group:
    zones: tuple  # the replicas' zones, in assignment order
    partitions: list  # (topic, partition, replica brokers)
    cycles: W.Cycles | None = None


@dataclass
class Cluster:
    """The whole cluster's failure process: every broker, each distinct replica list a layout."""
    zones: list  # each broker's zone
    layouts: list  # distinct replica lists (broker ids), in the order partitions first use them
    sizes: list  # partitions per layout
    cycles: W.Cycles | None = None


def cluster_of(groups: list[Group], zones: list[str]) -> Cluster:
    layouts: dict = {}
    for g in groups:
        for _, _, replicas in g.partitions:
            layouts[tuple(replicas)] = layouts.get(tuple(replicas), 0) + 1
    return Cluster(list(zones), list(layouts), list(layouts.values()))


@dataclass
class ConfigurationEstimate:
    configuration: str
    loss: W.Estimate  # first losses per partition-year
    records: W.Estimate  # acknowledged records lost per year, the whole cluster
    unavailable: W.Estimate  # share of time a partition refuses writes
    partitions: int
    windows: int
    classes: dict = field(default_factory=dict)  # class of critical events -> records its detailed run lost
    cluster: W.Estimate | None = None  # first losses anywhere in the cluster per year

    def row(self) -> dict:
        """The contract's row of durability.json."""
        to_p = at_least_once
        return {"configuration": self.configuration,
                "loss_probability_per_partition_year": to_p(self.loss.rate),
                "loss_probability_per_partition_year_low": to_p(self.loss.low),
                "loss_probability_per_partition_year_high": to_p(self.loss.high),
                "acked_records_lost_per_year": self.records.rate,
                "unavailable_minutes_per_year": self.unavailable.rate * MINUTES_PER_YEAR}


def rates_of(f: Failures, zones: list | None = None, scenario=None) -> W.Rates:
    """The window sampler's rates; `zones` (each broker's): a cluster in one zone has no other zone to be cut
    from, so its zone.partition rate is dropped. With the `scenario`, a crash's and a power loss's down time is
    broker.restart.ms (the process's start) plus the log recovery its brokers need on average
    (``storage.recovery.scenario_mean_recovery_ms``: what they hold past the recovery point, their disk, threads)."""
    partition = dict(f.partition_per_year) if zones is None or len(set(zones)) > 1 else {}
    recovery = {}
    if scenario is not None:
        settings = Settings.of(scenario)
        recovery = {"crash_recovery": scenario_mean_recovery_ms(settings, cold=False) / MS_PER_YEAR,
                    "power_loss_recovery": scenario_mean_recovery_ms(settings, cold=True) / MS_PER_YEAR}
    return W.Rates(f.crash_per_year, f.restart_years, f.machine_per_year, f.replace_years,
                   dict(f.power_loss_per_year), dict(f.outage_per_year), f.outage_years,
                   pause=f.pause_per_year, pause_years=f.pause_years, slow=f.slow_per_year,
                   slow_years=f.slow_years, partition=partition, partition_years=f.partition_years,
                   machine_crash=f.machine_crash_per_year, **recovery)


def needed_in_sync(scenario) -> int:
    """In-sync replicas a partition needs to accept the producers' writes: quorum: a majority; acks=all:
    min.insync.replicas (at most RF, Partition.effectiveMinIsr); otherwise the leader alone."""
    rf = max(t["replication.factor"] for t in scenario["topics"])
    if scenario["replication"] == "quorum":
        return rf // 2 + 1
    if any(str(p["acks"]) in ("all", "-1") for p in scenario["producers"]):
        return min(int(scenario["broker"]["min.insync.replicas"]), rf)
    return 1


def groups_of(scenario) -> list[Group]:
    zones = zones_of(scenario)
    racks = tuple(zones) if scenario.get("racks") else ()
    out: dict = {}
    for t in scenario["topics"]:
        placed = t.get("replicas") or assign(t["partitions"], t["replication.factor"], scenario["brokers"], racks)
        for p, replicas in enumerate(tuple(r) for r in placed):  # a topic's own assignment (topics[].replicas) wins
            key = tuple(zones[b] for b in replicas)
            out.setdefault(key, Group(key, [])).partitions.append((t["name"], p, replicas))
    return list(out.values())


def gaps_ms(scenario) -> dict:
    """How long after each kind of step (and after each return) the next comes, in the compressed run: past the
    failure detection (the broker's session; a returning broker also waits for its old session to expire) and,
    for an isolation, a pause or a zone cut off, past replica.lag.time.max.ms (the leader's shrink), plus
    SETTLE_MS. A slow broker keeps its session, so only the leader's shrink takes it out: past twice
    replica.lag.time.max.ms (behind that long, then the leader's check, every half of it; 0.8: every whole)."""
    b = scenario["broker"]
    detect = float(b.get("broker.session.timeout.ms") or b.get("zookeeper.session.timeout.ms") or 18000)
    lag = max(detect, float(b["replica.lag.time.max.ms"]))
    return {W.CRASH: detect + SETTLE_MS, W.POWER_LOSS: detect + SETTLE_MS, W.DISK_LOSS: detect + SETTLE_MS,
            W.ISOLATE: lag + SETTLE_MS, W.PAUSE: lag + SETTLE_MS, W.ZONE_PARTITION: lag + SETTLE_MS,
            W.SLOW: 2 * lag + SETTLE_MS, W.SLOW_LEADER: 2 * lag + SETTLE_MS, "return": detect + SETTLE_MS}


def step_fault(scenario, slow_factor: float | None = None):
    """(kind, brokers hit by the step) -> the detailed model's fault fields for it: a slow spell is the ``slow``
    fault with the spec's factor; a zone cut off is ``isolate`` from every broker outside the zones hit and from
    the controller (ZooKeeper, or KRaft's quorum: on the other side), the clients still reaching both sides; the
    other kinds are the faults of their names."""
    zones = zones_of(scenario)

    def fields(kind: str, hit: list) -> dict:
        if kind in (W.SLOW, W.SLOW_LEADER):
            return {"kind": "slow", "factor": slow_factor}
        if kind == W.ZONE_PARTITION:
            cut = {zones[b] for b in hit}
            return {"kind": "isolate", "from": [b for b, z in enumerate(zones) if z not in cut] + ["controller"]}
        return {"kind": kind}
    return fields


def schedule(pattern: tuple, returns: tuple, replicas: tuple, gaps: dict, fields=None) -> tuple[list, float]:
    """The faults reproducing a critical pattern on these brokers, compressed; and the run's duration.ms.
    `fields`: (kind, brokers hit) -> the fault's kind and extra fields (``step_fault``; default: the kind)."""
    fields = fields or (lambda kind, hit: {"kind": kind})
    at, starts = WARMUP_MS, []
    for kind, _ in pattern:
        starts.append(at)
        at += gaps[kind]
    back = {i: at + gaps["return"] * j for j, i in enumerate(returns)}
    faults = [{"at.ms": start, **fields(kind, [replicas[j] for j in hit]), "broker": replicas[i],
               "duration.ms": back[i] - start}
              for start, (kind, hit) in zip(starts, pattern) for i in hit]
    return faults, at + gaps["return"] * (len(returns) + 1)


def detailed_overrides(scenario, replicas: tuple, pattern: tuple, returns: tuple,
                       slow_factor: float | None = None) -> dict:
    """What a class's detailed run sets on the configuration's scenario: its compressed faults and duration.ms
    (`slow_factor`: the slow fault's factor, given when the pattern has a slow spell)."""
    faults, duration = schedule(pattern, returns, replicas, gaps_ms(scenario), step_fault(scenario, slow_factor))
    return {"faults": faults, "duration.ms": duration}


def measure(scenario, topic: str, partition: int, replicas: tuple, pattern: tuple, returns: tuple,
            slow_factor: float | None = None) -> int:
    """Acknowledged records of `topic`-`partition` the pattern loses, by the detailed model."""
    from ..sim.simulation import simulate
    from .sweep import records_lost

    result = simulate(scenario.with_overrides(detailed_overrides(scenario, replicas, pattern, returns, slow_factor)))
    return records_lost(result.partitions, topic, partition)


def combine(parts: list[tuple[float, W.Estimate]]) -> W.Estimate:
    """Σ weight × estimate, independent parts; a zero part's rule-of-three bound counts as its spread."""
    rate = sum(w * e.rate for w, e in parts)
    var = sum((w * (e.high - e.rate) / W.Z95) ** 2 for w, e in parts)
    sd = math.sqrt(var)
    return W.Estimate(rate, max(0.0, rate - W.Z95 * sd) if rate > 0 else 0.0, rate + W.Z95 * sd)


def kafka_rules_apply(scenario) -> bool:
    """Whether a critical event's loss follows from Kafka's rules alone: ISR replication, every producer acks=all,
    unclean.leader.election.enable false. Then an acknowledged record is on every ISR member (HW = min LEO of the
    ISR), only an ISR member is elected (or an ELR member, which was one), and a crash, an isolation or a pause
    keeps the log (the page cache outlives a process; a paused process holds everything), and so do a slow
    spell and a zone cut off (a leader cut from the controller cannot shrink its ISR, so it acknowledges nothing
    its followers across the cut lack). A paused leader cannot
    acknowledge behind the new leader's back: its ISR shrink is refused (stale leader epoch / zkVersion), so its
    high watermark stays where the followers' fetches left it (tests/test_durability_estimate.py checks both). So an event
    that leaves an in-sync replica up and intact loses nothing, nor does one that takes the last in-sync replicas down with their logs kept: they come back with
    them and are elected again."""
    return (scenario["replication"] == "isr" and not scenario["broker"]["unclean.leader.election.enable"]
            and all(str(p["acks"]) in ("all", "-1") for p in scenario["producers"]))


def reduced(c: W.Critical, n: int, by_rules: bool) -> tuple | None:
    """The class of a critical event the detailed model runs once: the steps' kinds and sizes in order (which
    replicas and when does not enter: the last step hits the leader, replica 0; earlier steps the others, from
    replica 1 on), or None when Kafka's rules already say it loses nothing (``kafka_rules_apply``)."""
    out = len({i for _, hit in c.pattern for i in hit})
    final = c.pattern[-1][0]
    alone = any(kind == W.SLOW_LEADER for kind, _ in c.pattern)  # its followers are out of the ISR too
    if by_rules and ((out < n and not alone) or final in W.KEEP_LOG):
        return None
    return tuple((kind, len(hit)) for kind, hit in c.pattern)


def representative(steps: tuple, n: int, failures: Failures) -> tuple[tuple, tuple]:
    """A class's schedule on replica indices: (pattern, returns). Earlier steps take replicas 1, 2, ...; the last
    step replica 0 (the leader) and any more it hits; a slow leader's spell is on replica 0 too (the first; a
    later one on the next free replica), so a last step after it hits the slow leader. They come back in the
    order of their kinds' down times (restart < outage < replacement with the defaults), first down first among
    equals; a replica under two steps when the later of them ends."""
    pool, slowed = list(range(1, n)), []  # slowed: followers given a slow spell (a later step may hit them)
    pattern, slow_leader = [], False
    for k, (kind, size) in enumerate(steps):
        if kind == W.SLOW_LEADER and not slow_leader:
            hit, slow_leader = [0], True
        elif k == len(steps) - 1 and kind != W.SLOW_LEADER:
            hit, pool = [0] + pool[:size - 1], pool[size - 1:]
        else:
            hit, pool = pool[:size], pool[size:]
            hit = (hit + slowed[:size - len(hit)]) or [0]
        if kind in (W.SLOW, W.SLOW_LEADER):
            slowed.extend(i for i in hit if i != 0)
        pattern.append((kind, tuple(hit)))
    down = W.down_years(rates_of(failures))
    order = sorted((down[kind], k, i) for k, (kind, hit) in enumerate(pattern) for i in hit)
    returns: dict = {}
    for _, _, i in order:  # each replica once, where it is back from its last step
        returns.pop(i, None)
        returns[i] = None
    return tuple(pattern), tuple(returns)


def _cache_file(cache: Path, args: tuple) -> tuple[Path, dict]:
    scenario, topic, partition, replicas, pattern, returns, factor = args
    ran = {"scenario": scenario.to_dict(), "topic": topic, "partition": partition, "replicas": list(replicas),
           "pattern": pattern, "returns": list(returns)}
    if factor is not None:  # only a run with a slow spell has one (the other runs keep their names)
        ran["broker.slow.factor"] = factor
    return cache / f"{stable_hash(ran)}.json", ran


def cached(cache: Path | None, args: tuple) -> int | None:
    """The answer kept in `cache` for the detailed run `args` (scenario, topic, partition, replicas, pattern,
    returns, slow factor or None), or None: not run yet (or a file we cannot read: it is run again)."""
    if cache is None:
        return None
    path, _ = _cache_file(cache, args)
    if path.is_file():
        try:
            return int(json.loads(path.read_text())["acked_records_lost"])
        except (ValueError, KeyError, TypeError):
            pass
    return None


def keep(cache: Path | None, args: tuple, lost: int) -> None:
    """One small JSON file per detailed run, named by what it ran, written whole as it finishes: a killed
    estimate resumes without running it again."""
    if cache is None:
        return
    path, ran = _cache_file(cache, args)
    write_atomic(path, json.dumps({"acked_records_lost": lost, "written_by": "kafkamodel durability", **ran},
                                  default=list) + "\n")


class DetailedRunError(RuntimeError):
    """A detailed run failed; the message is one line naming the configuration and the class."""


def _failed(failures: dict, jobs: list) -> DetailedRunError:
    """One line: the first failed run in the jobs' order (so the same whatever the worker count), and how many."""
    key = next(k for k, _ in jobs if k in failures)
    exc = failures[key]
    name, n, steps = key
    what = " then ".join(f"{kind} x{size}" for kind, size in steps)
    text = " ".join(str(exc).split()) or type(exc).__name__
    return DetailedRunError(f"durability: the detailed run of configuration {name!r}, RF {n}: {what} failed: "
                            f"{type(exc).__name__}: {text} ({len(failures)} of {len(jobs)} detailed runs failed; "
                            "the others are kept and a rerun retries only the failed)")


def workers_or_cores(workers: int | None) -> int:
    """Worker processes for the detailed runs: the given count (checked >= 1 by the command line), or the cores."""
    return workers if workers is not None else (os.cpu_count() or 1)


def _measure_given(measure, given: dict, *rest) -> int:
    """In a pool's process: the scenario rebuilt from what its author wrote (a Scenario does not pickle)."""
    return measure(Scenario(given), *rest)


def run_all(jobs: list, measure, cache: Path | None, workers: int, progress: bool, engine=None) -> dict:
    """Every job's (key, args) detailed run, answers kept in `cache` as they finish; {key: records lost} in the
    jobs' order whatever order they finish in. `workers` > 1: the kit's process pool (``as_finished``), `measure` must then be picklable (a module-level function). `engine`: instead, a function running
    the (key, args) not kept yet on the campaign's engines (``sweep.run_detailed``), returning ({key: records
    lost}, {key: exception}); its answers are kept in `cache` as well."""
    got: dict = {}
    bar = progress_bar(len(jobs), "durability", unit="simulation", disable=not progress)
    try:
        todo = []
        for key, args in jobs:
            lost = cached(cache, args)
            if lost is None:
                todo.append((key, args))
            else:
                got[key] = lost
                bar.update(1)
        failures: dict = {}

        def done(key, args, run):
            try:
                got[key] = int(run())
            except Exception as exc:  # the others go on: their answers are kept
                failures[key] = exc
            else:
                keep(cache, args, got[key])
            bar.update(1)

        if engine is not None and todo:
            ran, failures = engine(todo)
            for key, args in todo:
                if key in ran:
                    got[key] = ran[key]
                    keep(cache, args, got[key])
            bar.update(len(todo))
        elif workers <= 1 or len(todo) <= 1:
            for key, args in todo:
                done(key, args, lambda args=args: measure(*args))
        else:
            for (key, args), future in as_finished(_measure_given, [((key, args), (measure, args[0].given, *args[1:]))
                                                                    for key, args in todo], workers):
                done(key, args, future.result)
        if failures:
            raise _failed(failures, jobs)
    finally:
        bar.close()
    return {key: got[key] for key, _ in jobs}


def estimate(spec: DurabilitySpec, progress: bool = True, measure=measure,
             cache: Path | None = None, workers: int = 1, engine: str = "local", master: str | None = None,
             spark=None) -> list[ConfigurationEstimate]:
    """Every configuration's estimate: failure process per replica layout, detailed model per class of critical
    events (``reduced``), Kafka's rules where they decide alone; `cache`: a folder keeping each detailed run's
    answer (``keep``); `workers`: processes running the detailed runs (``run_all``; the answers do not depend on
    it). `engine` papermill or spark: the detailed runs are the campaign's sweep points instead (``sweep``: run
    folders under `cache`/sweep/, `workers` notebook kernels, or Spark tasks on `spark` or a session on
    `master`), with the same answers."""
    plans, todo = [], {}
    for config in spec.configurations:
        scenario = config.scenario
        rates = rates_of(spec.failures, zones_of(scenario), scenario)
        groups = groups_of(scenario)
        needed = needed_in_sync(scenario)
        by_rules = kafka_rules_apply(scenario)

        def classes(criticals, n_of, group_of, config=config, by_rules=by_rules):
            for c in criticals:
                key = reduced(c, n_of(c), by_rules)
                if key is not None:  # the first layout with n replicas stands for all
                    todo.setdefault((config.name, n_of(c), key), (config, group_of(c)))

        for g in groups:  # the same draws for the same layout in every configuration (common random numbers)
            seed = np.random.SeedSequence([spec.seed, int(stable_hash(list(g.zones)), 16)])
            g.cycles = W.sample(g.zones, rates, needed, spec.windows, seed)
            for w in g.cycles.windows:
                classes(w.criticals, lambda c, g=g: len(g.zones), lambda c, g=g: g)
        cluster = cluster_of(groups, zones_of(scenario))
        seed = np.random.SeedSequence([spec.seed, int(stable_hash([cluster.zones, cluster.layouts]), 16)])
        cluster.cycles = W.sample(cluster.zones, rates, needed, spec.windows, seed, layouts=cluster.layouts)
        sized = {len(g.zones): g for g in groups}
        for w in cluster.cycles.windows:
            classes(w.criticals, lambda c: len(cluster.layouts[c.layout]),
                    lambda c: sized[len(cluster.layouts[c.layout])])
        plans.append((config, groups, by_rules, cluster))
    jobs = []
    for key, (config, g) in sorted(todo.items(), key=lambda kv: kv[0]):
        topic, partition, replicas = g.partitions[0]
        pattern, returns = representative(key[2], len(g.zones), spec.failures)
        slow = spec.failures.slow_factor if any(kind in (W.SLOW, W.SLOW_LEADER) for kind, _ in pattern) else None
        jobs.append((key, (config.scenario, topic, partition, replicas, pattern, returns, slow)))
    on_engine = None
    if engine != "local":
        if cache is None:
            raise ValueError("the papermill and spark engines keep their run folders in the cache folder")
        by_config = {c.name: c for c in spec.configurations}

        def on_engine(todo):
            from .sweep import detailed_point, run_detailed

            points = []
            for key, (scenario, topic, partition, replicas, pattern, returns, slow) in todo:
                config = by_config[key[0]]
                extra = detailed_overrides(scenario, replicas, pattern, returns, slow)
                points.append((key, detailed_point(spec.base, spec.base_path, config.name, config.overrides, extra,
                                                   scenario["seed"]), topic, partition))
            return run_detailed(points, engine=engine, root=cache / "sweep", workers=workers, progress=progress,
                                master=master, spark=spark)
    lost = run_all(jobs, measure, cache, workers, progress, on_engine)
    return [_combine(config, groups, spec, by_rules, lost, cluster) for config, groups, by_rules, cluster in plans]


def _combine(config: Configuration, groups: list[Group], spec: DurabilitySpec, by_rules: bool,
             lost: dict, cluster: Cluster) -> ConfigurationEstimate:
    total = sum(len(g.partitions) for g in groups)
    loss, records, unavailable, classes = [], [], [], {}
    for g in groups:
        def amount(c, g=g):
            key = reduced(c, len(g.zones), by_rules)
            return 0 if key is None else lost[(config.name, len(g.zones), key)]

        share = len(g.partitions) / total
        loss.append((share, W.loss_rate(g.cycles, lambda c, amount=amount: amount(c) > 0)))
        records.append((len(g.partitions), W.per_year(g.cycles, amount)))
        unavailable.append((share, W.unavailable_share(g.cycles)))
    for (name, n, steps), count in lost.items():
        if name == config.name:
            classes[f"RF {n}: " + " then ".join(f"{kind} x{size}" for kind, size in steps)] = count

    def loses(c):
        n = len(cluster.layouts[c.layout])
        key = reduced(c, n, by_rules)
        return key is not None and lost[(config.name, n, key)] > 0

    return ConfigurationEstimate(config.name, combine(loss), combine(records), combine(unavailable), total,
                                 spec.windows, classes, within_partition_bounds(
                                     W.loss_rate(cluster.cycles, loses),
                                     [(len(g.partitions), e) for g, (_, e) in zip(groups, loss)]))


def within_partition_bounds(cluster: W.Estimate, partitions: list[tuple[int, W.Estimate]]) -> W.Estimate:
    """The cluster's first-loss rate lies between the largest partition's (a partition's loss is the cluster's)
    and the sum over its partitions (the union bound, whatever the correlation). The interval is those bounds
    from the partitions' intervals (if each holds its partition's true rate, it holds the cluster's); the point is
    the cluster sampler's own estimate, kept inside them. The sampler's own interval is not used: over a cluster
    a window runs through many failures and the likelihood-ratio weights are heavy-tailed, so a few hundred windows
    give an interval that misses by orders of magnitude (docs/durability.md: measured)."""
    low = max(e.low for _, e in partitions)
    top = sum(n * e.rate for n, e in partitions)
    rate = min(max(cluster.rate, max(e.rate for _, e in partitions)), top)
    return W.Estimate(rate, low, sum(n * e.high for n, e in partitions))
