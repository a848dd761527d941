"""The explorer panel's logic, without widgets: control values -> scenario overrides, which controls matter, problems.

Pure functions, so the panel's behaviour is tested without a browser:

* ``initial_values(scenario)``: the controls' starting values, read from the
  scenario (fault timing chosen so that a leader crash outlasts the session
  timeout and a failover shows);
* ``at_version(scenario, version)``: the scenario under another
  ``kafka.version`` (what it sets that the version lacks is left out: the
  version's own defaults and mechanisms apply); the panel reloads it when
  its version control moves;
* ``panel_overrides(values, scenario)``: the overrides for what differs from
  the starting values, so an untouched panel runs exactly the scenario it
  was given (brokers grow to fit the replication factor, see ``fit_brokers``);
* ``active(values)``: which controls have an effect with these values (the
  others are greyed out);
* ``problem(values)``: a combination the panel refuses, in one line;
* ``hint(values)``: a note on a setting that will not do what it seems to.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from ...config import versions
from ...config.scenario import Scenario
from ...config.schema import LISTS, RACK_AWARE_SELECTOR, SECTIONS

FAULTS = {  # named fault schedules: (kind, target, extra)
    "as in the scenario": None,
    "none": (),
    "leader crash": ("crash", "leader", {}),
    "follower crash": ("crash", "follower", {}),
    "all followers crash": ("crash", "followers", {}),
    "slow follower (x100)": ("slow", "follower", {"factor": 100}),
    "stuck follower (pause)": ("pause", "follower", {}),
    "leader isolated": ("isolate", "leader", {}),
}
OPERATIONS = {  # named operations (operations:), started at a quarter of the run; brokers down a tenth of it
    "as in the scenario": None,
    "none": (),
    "controlled shutdown + restart of broker 1": "bounce",
    "rolling restart (gate: no under-replicated)": "no_under_replicated",
    "rolling restart (no wait)": "no_wait",
    "rolling restart (uncontrolled, no wait)": "uncontrolled",
    "preferred leader election": "preferred",
}
SELECTORS = {"unset (the leader)": None, "RackAwareReplicaSelector": RACK_AWARE_SELECTOR}  # replica.selector.class
AS_GIVEN = "as in the scenario"
EVERY_ZONE = "a group in every zone"
NO_RACK = "no client.rack"
LAG_TIMES = [100, 250, 500, 1000, 2000, 5000, 10000, 30000]
LAG_MESSAGES = [500, 1000, 2000, 4000, 8000, 16000, 64000]
SESSION_TIMEOUTS = [1000, 2000, 3000, 6000, 9000, 12000, 18000, 30000]
VERSIONS = list(versions.VERSIONS)
RF_PATH = re.compile(r"^topics\[(\d+|\*)\]\.replication\.factor$")


def _nearest(options: list, value: float) -> Any:
    return min(options, key=lambda o: abs(o - float(value)))


def _latency(scenario: Scenario) -> tuple[float, float]:
    """(median, sigma) of a lognormal close to the scenario's one-way latency, for the two latency controls."""
    latency = scenario["network"]["latency.ms"]
    median, sigma = 0.5, 0.5
    if isinstance(latency, Mapping) and latency.get("dist") == "lognormal":
        median, sigma = float(latency["median"]), float(latency["sigma"])
    elif isinstance(latency, Mapping) and latency.get("dist") == "exponential":
        median, sigma = float(latency["mean"]) * 0.693, 0.8
    elif isinstance(latency, Mapping) and latency.get("dist") == "uniform":
        median, sigma = (float(latency["low"]) + float(latency["high"])) / 2, 0.3
    elif isinstance(latency, (int, float)):
        median, sigma = float(latency), 0.0
    return round(min(max(median, 0.05), 20.0), 2), round(min(max(sigma, 0.0), 2.0), 2)


def fault_timing(duration_ms: float, session_timeout_ms: float) -> tuple[int, int]:
    """(at, lasts) for the panel's fault schedules: at a quarter of the run, and long enough that a crashed leader
    is declared dead (session timeout) and replaced while the run still has a fifth of its time to show it."""
    at = int(duration_ms * 0.25)
    wanted = max(duration_ms * 0.4, session_timeout_ms + duration_ms * 0.2)
    return at, int(max(min(wanted, duration_ms - at), 1))


def session_key(metadata: str) -> str:
    """The override path of the session timeout in force: ZooKeeper's or KRaft's."""
    zookeeper = metadata == versions.ZOOKEEPER
    return "broker.zookeeper.session.timeout.ms" if zookeeper else "broker.broker.session.timeout.ms"


def count_rule(version: str) -> bool:
    """Does the version have 0.8's count rule (replica.lag.max.messages)?"""
    return versions.has("broker", "replica.lag.max.messages", version, versions.default_metadata(version))


def zones(scenario: Scenario) -> list[str]:
    """The brokers' racks (zones), in order of first mention."""
    return list(dict.fromkeys(scenario["racks"] or []))


def consumer_rack_choices(scenario: Scenario) -> list[str]:
    """Where the consumers can run: as given, a group in every zone, all in one zone, or in none."""
    return [AS_GIVEN, *([EVERY_ZONE] if zones(scenario) else []), *(f"all in {z}" for z in zones(scenario)), NO_RACK]


def selects_replicas(version: str) -> bool:
    """Does the version have replica.selector.class (KIP-392, 2.4)?"""
    return versions.has("broker", "replica.selector.class", version, versions.default_metadata(version))


def at_version(scenario: Scenario, version: str) -> Scenario:
    """The scenario under another kafka.version: properties it sets that the version lacks, values of another era
    (a broker.truncation the version does not run) and its kafka.metadata are left out, so the version's own
    defaults and mechanisms apply."""
    if version == scenario["kafka.version"]:
        return scenario
    given = scenario.given
    given["kafka.version"] = version
    given.pop("kafka.metadata", None)
    metadata = versions.default_metadata(version)

    def keep(section: str, key: str, value) -> bool:
        return (versions.has(section, key, version, metadata)
                and versions.value_problem(section, key, value, version, key) is None)

    for section in SECTIONS:
        if isinstance(given.get(section), Mapping):
            given[section] = {k: v for k, v in given[section].items() if keep(section, k, v)}
    for name in LISTS:
        if isinstance(given.get(name), list):
            given[name] = [{k: v for k, v in item.items() if keep(name, k, v)} if isinstance(item, Mapping) else item
                           for item in given[name]]
    return Scenario(given)


def initial_values(scenario: Scenario) -> dict:
    """The controls' starting values, read from the scenario."""
    topic = scenario["topics"][0] if scenario["topics"] else {"replication.factor": 1, "name": "t"}
    producer = scenario["producers"][0] if scenario["producers"] else {"acks": "all"}
    broker = scenario["broker"]
    count = broker["replica.lag.max.messages"]
    session = broker["zookeeper.session.timeout.ms"] or broker["broker.session.timeout.ms"]
    median, sigma = _latency(scenario)
    at, lasts = fault_timing(float(scenario["duration.ms"]), float(session))
    return {
        "kafka_version": scenario["kafka.version"],
        "replication": scenario["replication"],
        "rf": int(topic["replication.factor"]),
        "acks": str(producer["acks"]),
        "min_insync_replicas": int(broker["min.insync.replicas"]),
        "unclean": bool(broker["unclean.leader.election.enable"]),
        "session_timeout_ms": _nearest(SESSION_TIMEOUTS, session),
        "lag_time_ms": _nearest(LAG_TIMES, broker["replica.lag.time.max.ms"]),
        "lag_max_messages": _nearest(LAG_MESSAGES, count or 4000),
        "latency_median_ms": median,
        "latency_sigma": sigma,
        "faults": "as in the scenario",
        "fault_at_ms": at,
        "fault_duration_ms": lasts,
        "operation": "as in the scenario",
        "replica_selector": next((k for k, v in SELECTORS.items() if v == broker["replica.selector.class"]),
                                 "unset (the leader)"),
        "consumer_racks": AS_GIVEN,
    }


def active(values: Mapping[str, Any]) -> dict[str, bool]:
    """Which controls change the run with these values (the others have no effect and are greyed out)."""
    isr = values["replication"] == "isr"
    own_faults = FAULTS[values["faults"]] not in (None, ())
    return {name: True for name in values} | {
        "min_insync_replicas": isr and values["acks"] == "all",  # only acks=all writes need min.insync.replicas
        "unclean": isr,  # a majority quorum elects the most up-to-date live replica: no unclean elections
        "lag_time_ms": isr,  # a quorum has no ISR to shrink
        "lag_max_messages": isr and count_rule(values["kafka_version"]),  # 0.8's count rule
        "fault_at_ms": own_faults,
        "fault_duration_ms": own_faults,
        "replica_selector": selects_replicas(values["kafka_version"]),  # KIP-392: from 2.4
    }


def problem(values: Mapping[str, Any]) -> str | None:
    """A combination the panel does not run, in one line naming the field and the rule; None when fine. (From 3.7
    Kafka caps min.insync.replicas at the replica count, Partition.effectiveMinIsr: that runs.)"""
    rf, mi, version = int(values["rf"]), int(values["min_insync_replicas"]), values["kafka_version"]
    capped = versions.mechanisms(version, versions.default_metadata(version)).min_isr_capped_by_replicas
    if active(values)["min_insync_replicas"] and mi > rf and not capped:
        return (f"min.insync.replicas: {mi} exceeds the replication factor ({rf}); Kafka {version} refuses every "
                f"acks=all write (NOT_ENOUGH_REPLICAS; from 3.7 it is capped at the replication factor). "
                f"Lower it to {rf} or less, or raise the replication factor.")
    return None


def hint(values: Mapping[str, Any], scenario: Scenario) -> str | None:
    """A setting that will not show what it seems to (a leader crash shorter than the session timeout: no failover
    while it is down)."""
    schedule = FAULTS[values["faults"]]
    if not schedule or schedule[1] != "leader" or schedule[0] not in ("crash", "isolate"):
        return None
    session, lasts = int(values["session_timeout_ms"]), int(values["fault_duration_ms"])
    end = int(values["fault_at_ms"]) + session
    if lasts < session and schedule[0] == "crash":
        return (f"The leader restarts after {lasts / 1000:g} s, before its session ({session / 1000:g} s) expires: "
                f"a new process cannot register while the old session lives, so writes wait for the expiry either "
                f"way, and the restarted broker comes back then.")
    if lasts < session:
        return (f"The leader is back after {lasts / 1000:g} s, before its session ({session / 1000:g} s) expires: "
                f"no failover while it is gone, writes wait for it. "
                f"Make the fault last longer or the session timeout shorter.")
    if end >= float(scenario["duration.ms"]):
        return (f"The session ({session / 1000:g} s) expires after the run ends: no failover within the run.")
    return None


def fit_brokers(scenario: Scenario, overrides: Mapping[str, Any]) -> dict:
    """`overrides`, plus ``brokers`` grown to the largest replication factor they ask for (as the panel does),
    unless they set ``brokers`` themselves."""
    out = dict(overrides)
    if "brokers" in out:
        return out
    wanted = [int(v) for k, v in out.items() if RF_PATH.match(k) and isinstance(v, int) and not isinstance(v, bool)]
    topics = out.get("topics")
    for topic in topics if isinstance(topics, list) else []:  # a whole topic list replaced
        rf = topic.get("replication.factor") if isinstance(topic, Mapping) else None
        if isinstance(rf, int) and not isinstance(rf, bool):
            wanted.append(rf)
    if wanted and max(wanted) > int(scenario["brokers"]):
        out["brokers"] = max(wanted)
    return out


def _full(values: Mapping[str, Any], scenario: Scenario) -> dict:
    """Every override the control values stand for."""
    rf = int(values["rf"])
    acks = values["acks"] if values["acks"] == "all" else int(values["acks"])
    version = values["kafka_version"]
    same = version == scenario["kafka.version"]
    key = session_key(scenario["kafka.metadata"] if same else versions.default_metadata(version))
    other = ({"broker.zookeeper.session.timeout.ms", "broker.broker.session.timeout.ms"} - {key}).pop()
    ov: dict[str, Any] = {
        "kafka.version": version,
        "replication": values["replication"],
        "broker.min.insync.replicas": int(values["min_insync_replicas"]),
        "broker.unclean.leader.election.enable": bool(values["unclean"]),
        key: int(values["session_timeout_ms"]),
        other: None,  # the other metadata mode's: not a property here
        "broker.replica.lag.time.max.ms": values["lag_time_ms"],
        "broker.replica.lag.max.messages": values["lag_max_messages"] if count_rule(version) else None,
        "network.latency.ms": ({"dist": "lognormal", "median": float(values["latency_median_ms"]),
                                "sigma": float(values["latency_sigma"])} if float(values["latency_sigma"]) > 0
                               else float(values["latency_median_ms"])),
    }
    if scenario["topics"]:
        ov["topics[*].replication.factor"] = rf
    if scenario["producers"]:
        ov["producers[*].acks"] = acks
    schedule = FAULTS[values["faults"]]
    if schedule is not None:
        ov["faults"] = _faults(schedule, values, scenario, rf)
    if selects_replicas(version):
        ov["broker.replica.selector.class"] = SELECTORS[values.get("replica_selector", "unset (the leader)")]
    racks = values.get("consumer_racks", AS_GIVEN)
    if racks != AS_GIVEN:
        ov["consumers"] = _consumers(racks, scenario)
    operation = OPERATIONS[values.get("operation", "as in the scenario")]
    if operation is not None:
        ov["operations"] = _operations(operation, float(scenario["duration.ms"]), int(scenario["brokers"]))
        if operation:
            ov["broker.controlled.shutdown.enable"] = operation != "uncontrolled"
    return ov


def _consumers(choice: str, scenario: Scenario) -> list:
    """The consumers a rack choice stands for: the scenario's groups with their client.rack set (all in one zone,
    or none), or one group per zone reading the first topic as the scenario's first group does (a group
    ``<group>-<zone>`` each; ``explore`` when the scenario has none)."""
    given = [dict(c) for c in scenario.given.get("consumers") or []]
    if choice == EVERY_ZONE:
        base = {k: v for k, v in (given[0] if given else {}).items() if k not in ("group", "client.rack")}
        base.setdefault("topic", scenario["topics"][0]["name"] if scenario["topics"] else "t")
        name = given[0].get("group", "explore") if given else "explore"
        return [{**base, "group": f"{name}-{z}", "client.rack": z} for z in zones(scenario)]
    rack = None if choice == NO_RACK else choice[len("all in "):]
    return [{**c, "client.rack": rack} for c in given]


def _operations(name, duration: float, brokers: int) -> list:
    """The operations a named choice stands for, timed against the run: from a quarter of it, each broker down
    a tenth of it."""
    if not name:
        return []
    at, down = int(duration / 4), int(duration / 10)
    if name == "bounce":
        return [{"at.ms": at, "kind": "controlled_shutdown", "broker": 1 % brokers},
                {"at.ms": at + down, "kind": "restart", "broker": 1 % brokers}]
    if name == "preferred":
        return [{"at.ms": at, "kind": "controlled_shutdown", "broker": 0},
                {"at.ms": at + down, "kind": "restart", "broker": 0},
                {"at.ms": int(duration * 0.75), "kind": "preferred_leader_election"}]
    gate = "no_under_replicated" if name == "no_under_replicated" else {"wait.ms": 0}
    return [{"at.ms": at, "kind": "rolling_restart", "gate": gate, "downtime.ms": down}]


def panel_overrides(values: Mapping[str, Any], scenario: Scenario) -> dict:
    """Scenario overrides for the controls that differ from their starting values (brokers grow to fit RF)."""
    start, now = _full(initial_values(scenario), scenario), _full(values, scenario)
    changed = {k: v for k, v in now.items() if k not in start or start[k] != v}  # latency: a lognormal replaces the
    return fit_brokers(scenario, changed)  # scenario's distribution only once a latency control moved


def _faults(schedule, values, scenario: Scenario, rf: int) -> list:
    if not schedule:
        return []
    kind, target, extra = schedule
    topic = scenario["topics"][0]["name"] if scenario["topics"] else "t"
    fault = {"at.ms": int(values["fault_at_ms"]), "kind": kind, "duration.ms": int(values["fault_duration_ms"]), **extra}
    if target == "leader":
        fault["broker"] = f"leader:{topic}-0"
    elif target == "follower":
        fault["broker"] = 1 % max(rf, 1)  # partition 0's replicas are brokers 0..rf-1; 0 is the preferred leader
    else:
        fault["broker"] = list(range(1, rf)) or [0]
    return [fault]
