"""Zones and their bill (issue 36): fetch from follower (KIP-392) as Kafka runs it in each era, and the bytes
that cross zones.

The layout: three brokers, one per zone (``racks: [a, b, c]``: broker i in rack i), one topic of six partitions
at RF 3, so every broker holds every partition and leads two; a producer in zone a; one consumer group in each
zone (``client.rack``). Latencies are constants, so the bounds below are computed from them: one way inside a
zone LOCAL ms, between zones CROSS ms.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from kafkamodel import load_scenario, simulate
from kafkamodel.config.settings import LEADER_SELECTOR, RACK_AWARE_SELECTOR
from kafkamodel.sim.simulation import Simulation

LOCAL, CROSS = 0.2, 1.5  # one way, ms
ZONES = ("a", "b", "c")
EPS = 0.5  # ms: the brokers' and clients' CPU per request and byte (costs), a few tens of µs each, summed


def scenario(selector=RACK_AWARE_SELECTOR, version="4.1", rate=1000.0, duration=6000, price=None, **extra):
    s = {"name": "zones-test", "kafka.version": version, "seed": 7, "duration.ms": duration, "brokers": 3,
         "racks": list(ZONES),
         "broker": {"min.insync.replicas": 2},
         "network": {"latency.ms": LOCAL, "links": [{"between": [f"rack:{x}", f"rack:{y}"], "latency.ms": CROSS}
                                                    for x, y in (("a", "b"), ("a", "c"), ("b", "c"))]},
         "topics": [{"name": "t", "partitions": 6, "replication.factor": 3}],
         # producers start once the consumers have joined (a consumer's first fetch resets its position)
         "producers": [{"topic": "t", "rate.per.s": rate, "start.ms": 1000, "acks": "all", "client.rack": "a",
                        "keys": {"cardinality": 1000}}],
         "consumers": [{"group": f"in-{z}", "topic": "t", "client.rack": z, "processing.ms": 0,
                        "commit": "after_processing"} for z in ZONES]}
    if selector is not None:
        s["broker"]["replica.selector.class"] = selector
    if price is not None:
        s["network"]["cross.zone.price.per.gb"] = price
    for path, value in extra.items():
        s[path] = value
    return load_scenario(s)


# ---- the keys, and their refusal -------------------------------------------------------------------------------

def test_the_selector_is_refused_before_2_4_in_one_line_naming_it_and_the_version(tmp_path):
    path = tmp_path / "old.yaml"
    path.write_text("kafka.version: '2.3'\nbrokers: 3\nbroker: {replica.selector.class: "
                    f"{RACK_AWARE_SELECTOR}}}\ntopics: [{{name: t, partitions: 1, replication.factor: 3}}]\n")
    out = subprocess.run([sys.executable, "-m", "kafkamodel", "run", str(path), "--out", str(tmp_path / "run")],
                         capture_output=True, text=True)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error: broker.replica.selector.class: not a property of Kafka 2.3")
    assert "2.4" in lines[0]
    assert "KIP-392" in lines[0]
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("path,value,rule", [
    ("broker.replica.selector.class", "RackAware", "must be one of"),
    ("network.cross.zone.price.per.gb", -1, "must be >= 0"),
    ("consumers[0].metadata.max.age.ms", 0, "must be > 0"),
])
def test_bad_zone_keys_name_the_field(path, value, rule):
    base = {"brokers": 3, "topics": [{"name": "t", "partitions": 1, "replication.factor": 3}],
            "consumers": [{"group": "g", "topic": "t"}]}
    section, key = path.split(".", 1)
    if section == "consumers[0]":
        base["consumers"][0][key] = value
    else:
        base[section] = {key: value}
    with pytest.raises(Exception) as err:
        load_scenario(base)
    assert str(err.value).startswith(f"{path}: {rule}")


# ---- bytes across zones --------------------------------------------------------------------------------------------

def _layout_share(result, sim) -> float:
    """The consumers' cross-zone share the layout implies: each group reads every partition from its leader; a
    partition's bytes cross when the leader's rack is not the group's. Weighted by each partition's records."""
    records = result.partitions.set_index("partition")["records"]
    racks = sim.settings.racks
    crossing = sum(records[part.number] for g in sim.settings.consumers for part in sim.partitions
                   if racks[part.leader] != g.client_rack)
    return crossing / (len(sim.settings.consumers) * records.sum())


def test_without_a_selector_two_thirds_of_consumer_bytes_cross_zones_as_the_layout_says():
    sim = Simulation(scenario(selector=None))
    r = sim.run()
    s = r.summary
    leaders = [part.leader for part in sim.partitions]
    assert sorted(leaders) == [0, 0, 1, 1, 2, 2]  # evenly spread: two per zone
    expected = _layout_share(r, sim)
    assert expected == pytest.approx(2 / 3, abs=0.05)  # the keys spread the records evenly enough
    assert s["cross_zone_bytes_consume"] / s["consume_bytes"] == pytest.approx(expected, rel=0.02)
    assert s["consumer_fetches_from_followers"] == 0
    # replication: each leader sends every byte to two followers, both in other zones
    assert s["cross_zone_bytes_replication"] > 0
    # the table says the same, per pair of zones: a group's bytes come from every zone
    consume = r.zones[r.zones["kind"] == "consume"].groupby(["from_zone", "to_zone"])["bytes"].sum()
    assert set(consume.index) == {(x, y) for x in ZONES for y in ZONES}


def test_the_rack_aware_selector_keeps_consumer_bytes_in_their_zone_and_not_replication():
    without = simulate(scenario(selector=None)).summary
    r = simulate(scenario())
    s = r.summary
    assert s["cross_zone_bytes_consume"] == 0
    assert s["consume_bytes"] > 0.9 * without["consume_bytes"]  # the same records consumed
    assert s["consumer_fetches_from_followers"] > 0
    # replication and produce do not move: the same bytes, leader to followers
    assert s["cross_zone_bytes_replication"] == without["cross_zone_bytes_replication"] > 0
    assert s["cross_zone_bytes_produce"] == without["cross_zone_bytes_produce"] > 0
    consume = r.zones[r.zones["kind"] == "consume"]
    assert (consume["from_zone"] == consume["to_zone"]).all()
    assert s["consumed_lost"] == 0 and s["consumed_duplicates"] == 0


def test_leader_selector_is_the_same_as_unset():
    unset = simulate(scenario(selector=None, duration=3000)).summary
    leader = simulate(scenario(selector=LEADER_SELECTOR, duration=3000)).summary
    assert unset == leader


def test_the_cost_line_is_bytes_times_price_as_documented():
    """network.cross.zone.price.per.gb per GB of 2^30 bytes, the run's bytes kept up for a month of 730 hours;
    the table's pairs add up to the summary's bytes."""
    price = 0.05
    r = simulate(scenario(selector=None, price=price))
    s, z = r.summary, r.zones
    crossing = z[z["from_zone"] != z["to_zone"]]
    assert int(crossing["bytes"].sum()) == s["cross_zone_bytes"]
    for kind in ("produce", "replication", "consume"):
        assert int(crossing[crossing["kind"] == kind]["bytes"].sum()) == s[f"cross_zone_bytes_{kind}"]
    seconds = s["duration_ms"] / 1000.0
    month_seconds = 730 * 3600
    assert s["cross_zone_cost_per_month"] == pytest.approx(
        int(crossing["bytes"].sum()) / seconds * month_seconds / 2 ** 30 * price, rel=1e-12)
    # per second: one row per second of the run at most, each pair
    assert set(z["time_ms"]) <= {1000.0 * i for i in range(1, int(seconds) + 1)}


def test_without_racks_nothing_crosses_and_the_table_is_empty():
    s = {"brokers": 3, "topics": [{"name": "t", "partitions": 3, "replication.factor": 3}], "duration.ms": 2000,
         "producers": [{"topic": "t", "rate.per.s": 500}], "consumers": [{"group": "g", "topic": "t"}]}
    r = simulate(load_scenario(s))
    assert r.summary["cross_zone_bytes"] == 0 and r.summary["cross_zone_cost_per_month"] == 0
    assert r.summary["consume_bytes"] > 0
    assert len(r.zones) == 0 and list(r.zones.columns) == ["time_ms", "kind", "from_zone", "to_zone", "bytes"]


# ---- what a consumer on a follower reads, and when ------------------------------------------------------------------

class Watch:
    """Spies on a run: each follower's HW as its fetch answers bring it, and every consumer answer's slices."""

    def __init__(self, sim):
        self.sim = sim
        self.learned: dict[tuple, list] = {}  # (partition, follower) -> [(time, HW)] each time an answer moved it
        self.reads: list = []  # (time, broker, partition, was leader, last offset read, replica HW, leader HW)
        sessions, handler = sim.sessions, sim.consumer_fetch
        answer, original = sessions.follower_handle_response, handler._answer

        def response(key, req, parts):
            answer(key, req, parts)
            now, follower = sim.kernel.now, key[1]
            for p, *_ in parts:
                hw = sim.replicas[p][follower].high_watermark
                seen = self.learned.setdefault((p, follower), [(0.0, 0)])
                if hw > seen[-1][1]:
                    seen.append((now, hw))

        def spy(fetch, parts, ready, src):
            for a in parts:
                rep = sim.replicas[a.partition].get(fetch.broker)
                leader = sim.partitions[a.partition].leader
                for b, first, last, offset in a.records:
                    self.reads.append((sim.kernel.now, fetch.broker, a.partition, rep.is_leader,
                                       offset + last - first - 1, rep.high_watermark,
                                       sim.replicas[a.partition][leader].high_watermark))
            original(fetch, parts, ready, src)

        sessions.follower_handle_response = response
        handler._answer = spy

    def learned_at(self, p: int, follower: int, offset: int) -> float:
        """When the follower first knew a HW above `offset`."""
        return next((t for t, hw in self.learned[(p, follower)] if hw > offset), float("nan"))


def _visible(sim, result, group: str) -> tuple:
    """Per record of the group's topic: its partition, offset, when the leader's HW covered it, when the group
    first processed it."""
    g = next(g for g in sim.groups if g.name == group)
    rec = result.records
    return (rec["partition"].to_numpy(), rec["offset"].to_numpy(), rec["visible_ms"].to_numpy(),
            g.first_processed_ms)


@pytest.mark.parametrize("version", ["3.3", "4.1"])
def test_a_consumer_on_a_follower_reads_only_below_the_hw_it_knows_and_only_committed_records(version):
    sim = Simulation(scenario(version=version))
    watch = Watch(sim)
    r = sim.run()
    from_followers = [x for x in watch.reads if not x[3]]
    assert len(from_followers) > 100
    for t, broker, p, leader, last, replica_hw, leader_hw in from_followers:
        assert last < replica_hw, f"at {t} broker {broker} gave {p} up to {last}, its HW {replica_hw}"
        assert last < leader_hw  # committed: below the leader's HW
    assert r.summary["consumed_lost"] == 0 and r.summary["consumed_duplicates"] == 0


def test_a_consumer_on_a_follower_lags_the_leader_by_the_followers_fetch_timing():
    """Group in-a reads partitions 0 and 3 from their leader, broker 0 in its zone; in-b and in-c read them from
    brokers 1 and 2, their followers. A record reaches a follower's consumer once the follower learned a HW above it
    (its next fetch answer: at most replica.fetch.wait.max.ms and two cross-zone trips after the leader's HW covered
    it), then one fetch round trip inside the zone; the leader's consumer gets it one trip after the HW. So the
    follower's consumer is later by at most the follower's HW delay plus two local trips, and by at least a
    cross-zone trip less the local one."""
    sim = Simulation(scenario())
    watch = Watch(sim)
    r = sim.run()
    wait = sim.settings.broker.replica_fetch_wait_max_ms
    part, offset, visible, leader_seen = _visible(sim, r, "in-a")
    done = 0
    for group, follower in (("in-b", 1), ("in-c", 2)):
        _, _, _, seen = _visible(sim, r, group)
        for i in np.flatnonzero(np.isin(part, [0, 3]) & ~np.isnan(seen) & ~np.isnan(leader_seen)):
            learned = watch.learned_at(int(part[i]), follower, int(offset[i]))
            hw_delay = learned - visible[i]
            assert CROSS - EPS <= hw_delay <= wait + 2 * CROSS + EPS
            assert seen[i] >= learned  # never before its follower knew it was committed
            late = seen[i] - leader_seen[i]
            assert CROSS - LOCAL - EPS <= late <= hw_delay + 2 * LOCAL + EPS
            done += 1
    assert done > 1000


@pytest.mark.parametrize("version,waits", [("3.3", True), ("3.4", False)])
def test_before_3_4_a_fetch_parked_on_a_follower_waits_fetch_max_wait_ms(version, waits):
    """KAFKA-14334 (3.4): the follower's fetcher completes the consumer fetches parked on it when its HW moves.
    Before, at a low rate (one partition, led in zone a; a record every 50 ms) the fetches of the consumers in zones b
    and c, which read only from followers, wait out fetch.max.wait.ms (500 ms) unless a new record comes first."""
    rate = 20.0
    r = simulate(scenario(version=version, rate=rate, duration=12000,
                          topics=[{"name": "t", "partitions": 1, "replication.factor": 3}]))
    groups = r.groups.set_index("group")
    on_leader = groups.loc["in-a", "consume_e2e_latency_ms_p50"]
    on_followers = groups.loc[["in-b", "in-c"], "consume_e2e_latency_ms_p50"]
    wait = 500.0
    if waits:
        assert (on_followers > wait / 4).all()  # a record waits for the end of the wait it arrived in
    else:
        # the follower learns the HW with its next fetch answer (the next record's, or its own fetch's), then one trip
        assert (on_followers < on_leader + 1000.0 / rate + 2 * CROSS + 2 * LOCAL + EPS).all()
    assert (on_followers > on_leader).all()


@pytest.mark.parametrize("version,at_once", [("2.5", True), ("2.6", False)])
def test_in_2_4_and_2_5_a_follower_learns_the_hw_at_once(version, at_once):
    """KIP-392 as released in 2.4 (DelayedFetch's Case H, ReplicaManager's followerNeedsHwUpdate): a follower whose
    last answer's HW is stale is answered at once, so it learns a new HW one cross-zone trip after it moved. 2.6
    removed it (KAFKA-9952): the HW rides on the next answer with records, which at a low rate (a record every
    50 ms) comes with the next record."""
    sim = Simulation(scenario(version=version, rate=20.0, duration=6000,
                              topics=[{"name": "t", "partitions": 1, "replication.factor": 3}]))
    watch = Watch(sim)
    r = sim.run()
    part, offset, visible, _ = _visible(sim, r, "in-a")
    delays = np.array([watch.learned_at(0, f, int(offset[i])) - visible[i] for f in (1, 2)
                       for i in np.flatnonzero(visible < 5000)])
    assert not np.isnan(delays).any() and len(delays) > 100
    assert min(delays) >= CROSS - EPS
    if at_once:
        assert max(delays) <= 2 * CROSS + EPS
    else:
        assert np.median(delays) > 10 * CROSS


@pytest.mark.parametrize("version,at_once", [("3.2", False), ("3.3", True)])
def test_before_3_3_an_answer_naming_a_preferred_replica_waits_in_purgatory(version, at_once):
    """KAFKA-13767 (3.3): the leader answers at once when it names a preferred read replica; before, the fetch waits
    in purgatory as an empty one, fetch.max.wait.ms unless its other partitions bring bytes."""
    sim = Simulation(scenario(version=version, duration=3000))
    handler = sim.consumer_fetch
    held = []
    handle, answer = handler.handle_consumer_fetch, handler._answer
    arrived = {}

    def arrive(broker, gi, mi, token, fid, parts):
        arrived[(gi, mi, fid)] = sim.kernel.now
        handle(broker, gi, mi, token, fid, parts)

    def out(fetch, parts, ready, src):
        if parts and all(a.preferred_read_replica >= 0 for a in parts):
            held.append(sim.kernel.now - arrived[(fetch.gi, fetch.mi, fetch.fid)])
        answer(fetch, parts, ready, src)

    handler.handle_consumer_fetch, handler._answer = arrive, out
    sim.fetcher.broker_handle_consumer_fetch = arrive  # (what the fetcher's requests ask the server to run)
    sim.run()
    assert held
    wait = sim.settings.consumers[0].fetch_max_wait_ms
    if at_once:
        assert max(held) < 1.0
    else:
        assert min(held) == pytest.approx(wait, abs=1.0)


# ---- back to the leader --------------------------------------------------------------------------------------------

def _reads_by_zone(r, zone: str, after: float, before: float = float("inf")) -> set:
    """The zones the consumer group in `zone` got records from between two times (the zones table's seconds)."""
    z = r.zones
    rows = z[(z["kind"] == "consume") & (z["to_zone"] == zone) & (z["time_ms"] > after) & (z["time_ms"] <= before)]
    return set(rows["from_zone"])


@pytest.mark.parametrize("version", ["3.4", "3.5", "4.1"])
def test_a_follower_that_dies_sends_its_consumers_back_to_the_leader_nothing_skipped_or_repeated(version):
    """Broker 1 (zone b) crashes at 3 s and stays down (KRaft, fenced 3 s after its last heartbeat). Group in-b read
    everything from it. Until the controller fences it, the leaders keep naming it (it is still in the ISR, its LEO
    has the consumer's offset) and it is online in the consumer's metadata, so the group reads nothing: before 3.5
    it keeps fetching the dead broker, from 3.5 (KAFKA-14379) each failure sends it to the leader, which sends it
    back. Once the broker is offline in the metadata (and out of the ISRs), the group reads from the leaders, in
    zones a and c; nothing skipped, nothing processed twice."""
    sim = Simulation(scenario(version=version, duration=12000, **{"kafka.metadata": "kraft"},
                              broker={"min.insync.replicas": 2, "replica.selector.class": RACK_AWARE_SELECTOR,
                                      "broker.session.timeout.ms": 3000, "broker.heartbeat.interval.ms": 500},
                              faults=[{"at.ms": 3000, "kind": "crash", "broker": 1}]))
    r = sim.run()
    s = r.summary
    groups = r.groups.set_index("group")
    assert s["consumed_lost"] == 0 and s["consumed_duplicates"] == 0
    assert (groups["consumed_lost"] == 0).all() and (groups["consumed_duplicates"] == 0).all()
    assert _reads_by_zone(r, "b", 0, 3000) == {"b"}  # from its own zone's broker while it lived
    dead = r.events[(r.events["kind"] == "broker_failure_detected") & (r.events["broker"] == 1)]["time_ms"].min()
    assert 5000 < dead < 7000
    assert _reads_by_zone(r, "b", 4000, np.floor(dead / 1000) * 1000) == set()
    assert _reads_by_zone(r, "b", dead + 1000) == {"a", "c"}  # broker 1 gone: the leaders are in zones a and c
    assert groups.loc["in-b", "lag_records_end"] < 100  # caught up: what is visible was read


@pytest.mark.parametrize("version,at_once", [("3.4", False), ("3.5", True)])
def test_a_follower_moved_away_sends_its_consumers_to_the_leader_from_3_5(version, at_once):
    """A reassignment takes broker 1 (zone b) out of one partition's replicas at 3 s. Its consumers there get
    NOT_LEADER_OR_FOLLOWER. From 3.5 (KAFKA-14379: the error clears the preferred read replica, and the metadata no
    longer lists it as a replica) group in-b reads that partition from its leader at once; before 3.5 the broker is
    still online in the metadata, so the group keeps asking it until metadata.max.age.ms (8 s here, from when the
    leader named it, before 1.5 s) runs out."""
    age = 8000.0
    base = scenario(version=version, duration=14000, brokers=4, racks=["a", "b", "c", "a"],
                    consumers=[{"group": f"in-{z}", "topic": "t", "client.rack": z, "processing.ms": 0,
                                "commit": "after_processing", "metadata.max.age.ms": age} for z in ZONES])
    sim = Simulation(base)
    moved = next(part for part in sim.partitions if 1 in part.replicas and part.leader != 1)
    spare = next(b for b in (3, 0, 2) if b not in moved.replicas)
    replicas = [spare if b == 1 else b for b in moved.replicas]
    sim = Simulation(base.with_overrides({"operations": [
        {"at.ms": 3000, "kind": "reassign", "topic": "t", "partitions": [moved.number], "replicas": [replicas]}]}))
    r = sim.run()
    s = r.summary
    assert s["consumed_lost"] == 0 and s["consumed_duplicates"] == 0
    done = r.events[r.events["kind"] == "operation_end"]["time_ms"].min()
    leader_zone = sim.settings.racks[sim.partitions[moved.index].leader]
    assert _reads_by_zone(r, "b", 0, 3000) == {"b"}
    if at_once:
        assert leader_zone in _reads_by_zone(r, "b", done, done + 2000)
    else:
        assert leader_zone not in _reads_by_zone(r, "b", done, age)
        assert leader_zone in _reads_by_zone(r, "b", done, 1500 + age + 2000)


def test_a_follower_out_of_the_isr_loses_its_consumers_at_their_next_metadata_age():
    """Broker 1 (zone b) becomes 1000 times slower at replicating at 2 s and leaves the ISRs after
    replica.lag.time.max.ms (2 s). Group in-b keeps its preferred read replica until metadata.max.age.ms (3 s); then
    the leaders (in zones a and c) no longer name it, and the group reads their partitions from them. Nothing lost
    or processed twice."""
    sim = Simulation(scenario(duration=16000,
                              broker={"min.insync.replicas": 1, "replica.lag.time.max.ms": 2000,
                                      "replica.selector.class": RACK_AWARE_SELECTOR},
                              consumers=[{"group": f"in-{z}", "topic": "t", "client.rack": z, "processing.ms": 0,
                                          "commit": "after_processing", "metadata.max.age.ms": 3000} for z in ZONES],
                              faults=[{"at.ms": 2000, "kind": "slow", "broker": 1, "factor": 1000,
                                       "duration.ms": 60000}]))
    r = sim.run()
    shrinks = r.events[(r.events["kind"] == "isr_shrink") & r.events["detail"].str.startswith("removed [1]")]
    assert len(shrinks) == 4 and shrinks["time_ms"].max() < 6000  # from the four partitions it follows
    s = r.summary
    assert s["consumed_lost"] == 0 and s["consumed_duplicates"] == 0
    assert _reads_by_zone(r, "b", 0, 2000) == {"b"}
    assert {"a", "c"} <= _reads_by_zone(r, "b", shrinks["time_ms"].max() + 3000 + 1000)


def test_debug_invariants_hold_with_fetch_from_follower():
    r = simulate(scenario(duration=3000, **{"debug.invariants": True},
                          faults=[{"at.ms": 1500, "kind": "crash", "broker": 2, "duration.ms": 500}]))
    assert all(r.summary[k] == 0 for k in r.summary if k.endswith("_violations"))
