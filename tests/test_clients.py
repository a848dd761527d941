"""Producers and consumers end to end: partitioners, idempotence, groups, delivery semantics, retention (the
assignors' documented examples: test_sim_clients_assignors.py)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkamodel import load_scenario, simulate
from kafkamodel.sim.clients.partitioner import murmur2
from kafkamodel.sim.simulation import Simulation

from kafka_format import v2_capacity
from shipped import SCENARIOS, run


def producer_only(**producer):
    return {"name": "p", "seed": 3, "duration.ms": 3000, "brokers": 3,
            "topics": [{"name": "t", "partitions": 4, "replication.factor": 3}],
            "producers": [{"topic": "t", "rate.per.s": 2000, **producer}]}


# ---- partitioners ---------------------------------------------------------------


def test_keyed_records_go_where_kafkas_murmur2_says():
    r = simulate(producer_only(keys={"cardinality": 200}))
    keys = r.records.key.astype(str)
    expected = [(murmur2(k.encode()) & 0x7FFFFFFF) % 4 for k in keys]
    assert (r.records.partition.to_numpy() == np.array(expected)).all()


def test_uniform_sticky_sends_batch_size_runs_to_one_partition_then_switches():
    r = simulate(producer_only())  # null keys: a batch.size 16384 of 100-byte records in Kafka's format per run
    parts = r.records.sort_values("send_ms").partition.to_numpy()
    runs = np.split(parts, np.flatnonzero(np.diff(parts)) + 1)
    assert all(len(run) == v2_capacity(16384, 100) for run in runs[:-1])
    assert len(runs) > 10


def test_legacy_round_robin_and_round_robin_partitioner():
    legacy = simulate(producer_only(partitioner="legacy")).records.sort_values("send_ms")
    assert (legacy.partition.to_numpy() == np.arange(len(legacy)) % 4).all()
    rr = simulate(producer_only(partitioner="round_robin", keys={"cardinality": 3})).records.sort_values("send_ms")
    assert (rr.partition.to_numpy() == np.arange(len(rr)) % 4).all()  # keys ignored


def test_sticky_kip480_switches_when_a_batch_closes():
    # low rate: a batch closes on linger.ms (5 ms), long before a batch is full; each batch's records share a partition
    r = simulate(producer_only(partitioner="sticky", **{"rate.per.s": 300}))
    parts = r.records.sort_values("send_ms").partition.to_numpy()
    runs = np.split(parts, np.flatnonzero(np.diff(parts)) + 1)
    assert max(len(run) for run in runs) < v2_capacity(16384, 100) and len(runs) > 50


def test_custom_mapping_and_callable_partitioners():
    mapped = simulate(producer_only(keys={"cardinality": 10}, partitioner={"mapping": {"key-3": 2, "key-7": 0}})).records
    assert (mapped[mapped.key == "key-3"].partition == 2).all()
    assert (mapped[mapped.key == "key-7"].partition == 0).all()
    other = mapped[~mapped.key.isin(["key-3", "key-7"])]
    assert (other.partition.to_numpy() == [(murmur2(k.encode()) & 0x7FFFFFFF) % 4 for k in other.key.astype(str)]).all()
    called = simulate(producer_only(keys={"cardinality": 10}), partitioner=lambda key, n: int(key.split("-")[1]) % n)
    assert (called.records.partition.to_numpy() == called.records.key.astype(str).str[4:].astype(int).to_numpy() % 4).all()


def test_skew_is_reported():
    one_key = simulate(producer_only(keys={"cardinality": 1}))
    assert one_key.summary["partition_skew"] == pytest.approx(4.0)
    assert sorted(one_key.partitions.records.tolist())[:3] == [0, 0, 0]
    spread = simulate(producer_only(keys={"cardinality": 10000}))
    assert spread.summary["partition_skew"] < 1.1


# ---- delivery semantics ----------------------------------------------------------


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_at_most_once_loses_and_never_duplicates(seed):
    g = run("delivery-at-most-once", seed=seed).groups.iloc[0]
    assert g.consumed_duplicates == 0 and g.consumed_lost > 0


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_at_least_once_duplicates_and_never_loses(seed):
    g = run("delivery-at-least-once", seed=seed).groups.iloc[0]
    assert g.consumed_lost == 0 and g.consumed_duplicates > 0


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_exactly_once_neither_loses_nor_duplicates(seed):
    r = run("delivery-exactly-once", seed=seed)
    g = r.groups.iloc[0]
    assert g.consumed_lost == 0 and g.consumed_duplicates == 0
    assert r.summary["records_duplicated"] == 0 and g.records_processed > 0.7 * r.summary["records_sent"]
    # the same schedule breaks each weaker setting, so the zeros above are earned
    assert run("delivery-exactly-once", seed=seed, **{"consumers[*].commit": "after_processing"}
               ).groups.iloc[0].consumed_duplicates > 0
    assert run("delivery-exactly-once", seed=seed, **{"consumers[*].commit": "before_processing"}
               ).groups.iloc[0].consumed_lost > 0
    assert run("delivery-exactly-once", seed=seed, **{"producers[*].enable.idempotence": False}
               ).summary["records_duplicated"] > 0


def test_every_consumer_message_travels_on_the_consumers_connections(monkeypatch):
    """Group, fetch and commit messages (also a stepping-down or crashed leader's answers to parked
    fetches) use the consumers' connections and stream; nothing else does."""
    from kafkamodel.sim.engine.transport import Transport
    from kafkamodel.sim.protocol import CONSUMER_CONN

    seen = Counter()
    send = Transport.send

    def consumer_message(action, args) -> bool:  # to a consumer or its coordinator, or a consumer's fetch to a leader
        name = action.__func__.__qualname__
        if name == "Server.request":  # a request for a broker's handler threads: whose handler?
            name = args[2].__func__.__qualname__
        if name.startswith("MetadataUpdater."):  # the metadata requests of the consumers' updater (the fetcher's)
            return action.__self__.counter == "consumer_metadata_refreshes"
        return name.startswith(("KafkaConsumer.", "Fetcher.", "GroupCoordinator.", "ConsumerFetchHandler."))

    def spy(self, src, dst, action, args, fetch=False, refused=None, nbytes=0, conn=0, delay=0.0):
        seen[(consumer_message(action, args), conn)] += 1
        return send(self, src, dst, action, args, fetch, refused, nbytes, conn, delay)

    monkeypatch.setattr(Transport, "send", spy)
    for name in ("delivery-at-most-once", "delivery-at-least-once", "delivery-exactly-once"):
        for seed in range(1, 6):
            Simulation(load_scenario(SCENARIOS / f"{name}.yaml").with_overrides({"seed": seed})).run()
    assert seen[(True, CONSUMER_CONN)] > 1000 and seen[(False, 0)] > 1000
    assert set(seen) == {(True, CONSUMER_CONN), (False, 0)}, seen


def test_the_commit_policy_leaves_the_producer_side_on_the_same_draws():
    """Consumers draw from their own stream on their own connections (common random numbers across policies).

    No NIC limit: consumers' fetch responses share each broker's NIC with the producers' traffic, so under a limit
    a policy that fetches differently moves producer acks through queueing, which is not what this checks."""
    runs = [run("delivery-exactly-once", **{"consumers[*].commit": policy, "producers[*].enable.idempotence": False,
                                            "hardware.broker.nic.gbps": None})
            for policy in ("atomic", "after_processing", "before_processing")]
    producer_side = ["partition", "send_ms", "acked", "ack_ms", "error", "offset"]
    for other in runs[1:]:
        pd.testing.assert_frame_equal(runs[0].records[producer_side], other.records[producer_side])
        assert other.summary["records_duplicated"] == runs[0].summary["records_duplicated"] > 0
    assert len({r.groups.iloc[0].consumed_duplicates for r in runs}) > 1  # while the consumers' outcomes differ


consumer_faults = st.lists(
    st.fixed_dictionaries({
        "at.ms": st.floats(500, 14000).map(lambda x: round(x, 1)),
        "kind": st.sampled_from(["consumer_crash", "consumer_crash", "consumer_leave", "consumer_join"]),
        "duration.ms": st.floats(100, 4000).map(lambda x: round(x, 1)),
        "member": st.integers(0, 2),
    }), min_size=1, max_size=4)


def delivery_scenario(faults, seed, commit, broker_crash):
    fs = []
    for f in faults:
        f = {**f, "group": "g"}
        if f["kind"] == "consumer_join":
            f.pop("member"), f.pop("duration.ms")
        if f["kind"] == "consumer_leave":
            f.pop("duration.ms")
        fs.append(f)
    if broker_crash is not None:
        fs.append({"at.ms": broker_crash, "kind": "crash", "broker": "leader:t-0", "duration.ms": 3000})
    return {
        "name": "delivery", "seed": seed, "duration.ms": 24000, "brokers": 3,
        "broker": {"min.insync.replicas": 2, "broker.session.timeout.ms": 2000, "broker.heartbeat.interval.ms": 500},
        "topics": [{"name": "t", "partitions": 4, "replication.factor": 3}],
        "producers": [{"topic": "t", "rate.per.s": 300, "keys": {"cardinality": 100},
                       "burst": {"records": 800, "every.ms": 2000}, "request.timeout.ms": 3000}],
        "consumers": [{"group": "g", "topic": "t", "members": 3, "commit": commit, "processing.ms": 1.0,
                       "session.timeout.ms": 3000, "heartbeat.interval.ms": 1000, "auto.offset.reset": "earliest"}],
        "faults": fs,
    }


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(faults=consumer_faults, seed=st.integers(0, 2**32),
       broker_crash=st.one_of(st.none(), st.floats(500, 14000).map(lambda x: round(x, 1))))
def test_each_commit_policy_keeps_its_guarantee_under_crash_schedules(faults, seed, broker_crash):
    exactly = simulate(delivery_scenario(faults, seed, "atomic", broker_crash))
    g = exactly.groups.iloc[0]
    assert (g.consumed_lost, g.consumed_duplicates, exactly.summary["records_duplicated"]) == (0, 0, 0)
    at_least = simulate(delivery_scenario(faults, seed, "after_processing", broker_crash)).groups.iloc[0]
    assert at_least.consumed_lost == 0
    at_most = simulate(delivery_scenario(faults, seed, "before_processing", broker_crash)).groups.iloc[0]
    assert at_most.consumed_duplicates == 0


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(faults=consumer_faults, seed=st.integers(0, 2**32))
def test_rebalances_never_give_a_partition_to_two_members(faults, seed):
    r = simulate(delivery_scenario(faults, seed, "auto", None))
    owner: dict[str, str] = {}
    for kind, detail in r.events[r.events.kind.isin(["consumer_assign", "consumer_revoke", "consumer_crash",
                                                     "consumer_session_expired", "consumer_leave"])][["kind", "detail"]].itertuples(index=False):
        member = detail.split(": ")[1].split(" ")[0]
        parts = detail.split("[")[1].rstrip("]").split(", ") if "[" in detail else []
        if kind == "consumer_assign":
            for p in filter(None, parts):
                assert owner.get(p) in (None, member), f"{p} owned by {owner.get(p)} and given to {member}"
                owner[p] = member
        elif kind in ("consumer_revoke", "consumer_session_expired", "consumer_leave"):
            for p in [p for p, m in owner.items() if m == member]:
                del owner[p]


def test_a_drain_fills_its_request_up_to_max_request_size_and_leaves_the_rest_for_the_next(monkeypatch):
    """RecordAccumulator.drain: one batch of every partition of the node with data, while the request's bytes so far
    plus batch.size fit in max.request.size (the first always): a partition with data is left for the next request
    only when the request was full."""
    from kafkamodel.sim.clients.producer import ProducerClient

    batch_size, limit = 4096, 4 * 4096
    sent = []
    send = ProducerClient._send_request

    def record(self, ps, conn, taken, nbytes):
        b = self.batches
        sent.append((self.kernel.now, nbytes, [(b.partition[i], b.bytes[i], self.times[b.lo[i]]) for i in taken]))
        return send(self, ps, conn, taken, nbytes)

    monkeypatch.setattr(ProducerClient, "_send_request", record)
    simulate({"name": "p", "seed": 3, "duration.ms": 500, "brokers": 1,
              "topics": [{"name": "t", "partitions": 30, "replication.factor": 1}],
              "producers": [{"topic": "t", "rate.per.s": 30000, "acks": 1, "linger.ms": 20, "batch.size": batch_size,
                             "max.request.size": limit, "keys": {"cardinality": 10000}}]})
    left = 0
    for (now, nbytes, batches), (_, _, after) in zip(sent, sent[1:]):
        sizes = [size for _, size, _ in batches]
        assert nbytes == sum(sizes)
        assert sum(sizes[:-1]) + batch_size <= limit  # each batch went in with room for batch.size
        taken = {p for p, _, _ in batches}
        if any(p not in taken and created <= now for p, _, created in after):  # it had data and was left out
            assert nbytes + batch_size > limit
            left += 1
    assert left > 10


# ---- idempotence, duplicates, ordering ------------------------------------------------


def log_order_inversions(records) -> int:
    """Per key, how often the log (all copies, by partition and offset) goes back in send order."""
    rec = records[records.copies > 0]
    firsts = rec[["partition", "offset", "send_ms", "key"]]
    seconds = rec[rec.copies > 1][["partition", "last_offset", "send_ms", "key"]].rename(columns={"last_offset": "offset"})
    log = np.concatenate([firsts.to_numpy(dtype=object), seconds.to_numpy(dtype=object)])
    inversions = 0
    for key in set(log[:, 3]):
        rows = log[log[:, 3] == key]
        rows = rows[np.lexsort((rows[:, 1].astype(int), rows[:, 0].astype(int)))]
        inversions += int((np.diff(rows[:, 2].astype(float)) < 0).sum())
    return inversions


def test_leader_failure_after_followers_fetched_duplicates_only_without_idempotence():
    dups = [run("producer-retry-duplicates", seed=s).summary["records_duplicated"] for s in range(1, 7)]
    assert sum(d > 0 for d in dups) >= 3, dups
    for s in range(1, 7):
        idem = run("producer-retry-idempotent", seed=s)
        assert idem.summary["records_duplicated"] == 0
        # ... and nothing lost: a producer that dropped its retried batches would not duplicate either. Read from
        # the records themselves (not the summary's counters): every record sent before the run's last second
        # (many retries' worth: retry.backoff.ms is 100, Kafka's default) was acknowledged and is in the final log exactly once
        records = idem.records
        early = records[records.send_ms < idem.scenario["duration.ms"] - 1000]
        assert len(early) > 0.9 * len(records)
        assert early.acked.all() and (early.copies == 1).all() and early.error.isna().all()


@pytest.mark.parametrize("seed", [1, 2])
def test_timed_out_requests_duplicate_only_without_idempotence_and_do_not_reorder(seed):
    plain = run("producer-timeout-duplicates", seed=seed)
    assert plain.summary["records_duplicated"] > 0
    idem = run("producer-timeout-idempotent", seed=seed)
    assert idem.summary["records_duplicated"] == 0
    assert idem.summary["acked_records_lost"] == plain.summary["acked_records_lost"] == 0
    # the broker handles one request of a connection at a time: the resends go in order, nothing overtakes them
    assert log_order_inversions(plain.records) == log_order_inversions(idem.records) == 0


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_refused_request_resent_behind_an_accepted_one_reorders_only_without_idempotence(seed):
    plain = run("producer-refusal-reordering", seed=seed)
    idem = run("producer-refusal-idempotent", seed=seed)
    for r in (plain, idem):
        assert r.summary["not_enough_replicas_errors"] > 0 and r.summary["isr_expands"] == 1
        assert r.summary["acked_records_lost"] == 0
    assert log_order_inversions(plain.records) > 0
    assert log_order_inversions(idem.records) == 0 and idem.summary["records_duplicated"] == 0


def test_order_is_kept_per_key_but_not_across_partitions():
    sim = Simulation(load_scenario(SCENARIOS / "key-ordering.yaml"))
    result = sim.run()
    rec = result.records.assign(processed_ms=sim.groups[0].first_processed_ms)
    rec = rec[~rec.processed_ms.isna()]
    per_key = sum(int((np.diff(g.sort_values("processed_ms").send_ms.to_numpy()) < 0).sum())
                  for _, g in rec.groupby("key", observed=True))
    overall = int((np.diff(rec.sort_values("processed_ms").send_ms.to_numpy()) < 0).sum())
    assert per_key == 0
    assert overall > 100


# ---- retention ------------------------------------------------------------------------


def test_a_consumer_behind_retention_loses_what_was_deleted_and_producers_lose_nothing():
    r = simulate({
        "name": "retention", "seed": 1, "duration.ms": 30000, "brokers": 3,
        "broker": {"log.retention.check.interval.ms": 1000},
        "topics": [{"name": "t", "partitions": 1, "replication.factor": 3, "segment.bytes": 100000, "retention.ms": 5000}],
        "producers": [{"topic": "t", "rate.per.s": 1000}],
        "consumers": [
            {"group": "slow", "topic": "t", "commit": "after_processing", "processing.ms": 2, "auto.offset.reset": "earliest"},
            {"group": "fast", "topic": "t", "commit": "after_processing", "processing.ms": 0.1, "auto.offset.reset": "earliest"},
        ],
    })
    groups = r.groups.set_index("group")
    assert groups.loc["slow", "consumed_lost"] > 0 and groups.loc["fast", "consumed_lost"] == 0
    assert (r.events.kind == "retention").any() and (r.events.kind == "offset_reset").any()
    assert r.summary["acked_records_lost"] == 0 and r.summary["no_committed_record_lost_violations"] == 0
    # each broker's log start only moves forward
    retention = r.events[r.events.kind == "retention"]
    for _, rows in retention.groupby("broker"):
        starts = rows.detail.str.extract(r"now (\d+)")[0].astype(int)
        assert (starts.diff().dropna() > 0).all()


# ---- finding a moved leader (issue 35): metadata refresh before 3.7, KIP-951's hint from 3.7, KIP-580's backoff ---

RETRY_BACKOFF = 100.0  # retry.backoff.ms, Kafka's default


def moved_leaders(version: str):
    """Broker 0 shut down (controlled) and back; at 10 s kafka-leader-election hands its partitions back while
    every broker stays up, so the old leaders answer NOT_LEADER_OR_FOLLOWER. A plain producer (no idempotence:
    nothing but the leader decides when a resend goes)."""
    return simulate(load_scenario({
        "name": "moved", "brokers": 3, "duration.ms": 12000, "kafka.version": version,
        "broker": {"min.insync.replicas": 2}, "network": {"latency.ms": 1},
        "topics": [{"name": "t", "partitions": 6, "replication.factor": 3}],
        "producers": [{"topic": "t", "rate.per.s": 5000, "acks": "all", "enable.idempotence": False}],
        "operations": [{"at.ms": 2000, "kind": "controlled_shutdown", "broker": 0},
                       {"at.ms": 4000, "kind": "restart", "broker": 0},
                       {"at.ms": 10000, "kind": "preferred_leader_election", "topic": "t"}]}))


def _after_election(r):
    rec = r.records
    sent = rec[(rec["send_ms"] >= 10000) & (rec["send_ms"] < 11000)]
    return sent["ack_ms"] - sent["send_ms"]


def test_before_3_7_a_moved_leader_costs_the_backoff_and_a_metadata_refresh():
    """3.6: a batch answered NOT_LEADER_OR_FOLLOWER waits retry.backoff.ms and a metadata round trip (it names no
    leader, so the producer asks a broker); from 3.7 (KIP-951) the answer names the new leader, read from the old
    leader's metadata cache, and the batch goes there at once: the tail after the election shrinks by the backoff."""
    old, new = moved_leaders("3.6"), moved_leaders("3.7")
    assert old.summary["producer_leader_hints"] == 0 and new.summary["producer_leader_hints"] > 0
    assert new.summary["producer_metadata_refreshes"] < old.summary["producer_metadata_refreshes"]
    slow, fast = _after_election(old).max(), _after_election(new).max()
    assert slow >= RETRY_BACKOFF  # waited the backoff (and the refresh's round trip: 2 x 1 ms at least)
    assert fast < RETRY_BACKOFF / 4  # a few round trips of 1 ms each way and the replication, no backoff
    assert old.summary["acked_records_lost"] == new.summary["acked_records_lost"] == 0


def test_kip_580_backoff_doubles_up_to_retry_backoff_max_ms_with_jitter():
    """ExponentialBackoff(retry.backoff.ms, 2, retry.backoff.max.ms, 0.2): attempt k waits retry.backoff.ms x
    2^min(k-1, log2(max / retry.backoff.ms)) x a factor in [0.8, 1.2] in whole ms, at most retry.backoff.max.ms
    (so once the doubling passes the cap, 0.8 to 1 times the cap); before 3.7 always retry.backoff.ms."""
    from kafkamodel.sim.clients.producer import ProducerClient

    sim = Simulation(load_scenario(producer_only(**{"retry.backoff.ms": 100, "retry.backoff.max.ms": 1000}) |
                                   {"kafka.version": "3.7"}))
    ps = sim.producer.states[0]
    for attempt in range(1, 8):
        ms = ProducerClient._backoff_ms(ps, attempt)
        nominal = min(100 * 2 ** (attempt - 1), 1000)
        assert 0.8 * nominal <= ms <= min(1.2 * nominal, 1000) and ms == int(ms)
    old = Simulation(load_scenario(producer_only(**{"retry.backoff.ms": 100}) | {"kafka.version": "3.6"}))
    assert [ProducerClient._backoff_ms(old.producer.states[0], a) for a in (1, 2, 5)] == [100, 100, 100]




def test_a_burst_fills_the_free_in_flight_slots_and_each_answer_frees_one(monkeypatch):
    """The Sender sends while the connection has fewer than max.in.flight.requests.per.connection requests
    unanswered and does not wake while it has not (Kafka's Sender leaves such nodes out of its poll timeout); the
    answer that frees a slot has it look again: a burst of 3,000 records for one partition (one batch per partition
    per request) leaves as max.in.flight requests before the first answer, then one request at the instant of each
    answer while full batches wait."""
    from kafkamodel.sim.clients.producer import ProducerClient
    from kafkamodel.sim.engine.transport import Transport

    events = []  # (time, +1 a produce request sent, -1 an answer arrived)
    send, answer = Transport.send, ProducerClient.handle_response

    def spy_send(self, src, dst, action, args, fetch=False, refused=None, nbytes=0, conn=0, delay=0.0):
        if getattr(action, "__qualname__", "") == "Server.produce":
            events.append((self.kernel.now, 1))
        return send(self, src, dst, action, args, fetch, refused, nbytes, conn, delay)

    def spy_answer(self, *args):
        events.append((self.kernel.now, -1))
        return answer(self, *args)

    monkeypatch.setattr(Transport, "send", spy_send)
    monkeypatch.setattr(ProducerClient, "handle_response", spy_answer)
    for in_flight in (1, 3, 5):
        events.clear()
        r = Simulation(load_scenario({
            "name": "burst", "seed": 3, "duration.ms": 200, "brokers": 3,
            "topics": [{"name": "t", "partitions": 1, "replication.factor": 3}],
            "producers": [{"topic": "t", "acks": "all", "max.in.flight.requests.per.connection": in_flight,
                           "burst": {"records": 3000, "every.ms": 1000, "start.ms": 10}}]})).run()
        requests = r.summary["produce_requests"]
        assert r.summary["records_acked"] == 3000 and r.summary["batches"] == requests > in_flight + 5
        first_answer = next(k for k, (_, e) in enumerate(events) if e < 0)
        assert first_answer == in_flight, (in_flight, events[:12])  # every slot filled, no more
        unanswered = sent = 0
        for k, (t, e) in enumerate(events):
            unanswered += e
            sent += e > 0
            assert 0 <= unanswered <= in_flight, (in_flight, k, events)
            if e < 0 and sent < requests:  # full batches wait: the freed slot takes the next one at once
                assert events[k + 1] == (t, 1), (in_flight, k, events[k - 2:k + 3])


def test_each_request_leaves_when_the_first_of_its_nodes_queues_is_ready(monkeypatch):
    """RecordAccumulator.ready: a partition's batch is ready when batch.size worth of records has arrived or linger.ms
    after its first record, whichever comes first, and the Sender drains a node when the first of its partitions
    is ready (acks=0: no in-flight limit holds it back). Each request is sent at the least of those times over its
    batches, computed here from the records' send times, whether a full batch or a lingering one decided it."""
    from kafkamodel.sim.clients.producer import ProducerClient

    linger = 20.0
    seen = []  # per request: (sent at, the earliest of its batches' ready times, how that one became ready)
    send = ProducerClient._send_request

    def record(self, ps, conn, taken, nbytes):
        b, times = self.batches, ps.acc.times
        cap = b.formats[ps.index].records_per_batch
        ready = []
        for i in taken:
            first, count = b.lo[i], b.count[i]
            full = count == cap and times[first + cap - 1] < times[first] + linger
            ready.append((times[first + cap - 1], "full") if full else (times[first] + linger, "linger"))
        seen.append((self.kernel.now, *min(ready)))
        return send(self, ps, conn, taken, nbytes)

    monkeypatch.setattr(ProducerClient, "_send_request", record)
    r = simulate({"name": "p", "seed": 5, "duration.ms": 1000, "brokers": 3,
                  "topics": [{"name": "t", "partitions": 12, "replication.factor": 1}],
                  "producers": [{"topic": "t", "rate.per.s": 3000, "acks": 0, "linger.ms": linger,
                                 "batch.size": 2048, "record.size.bytes": 200,
                                 "keys": {"cardinality": 1000}}]})
    assert r.summary["produce_requests"] == len(seen)
    assert [(now, now) for now, _, _ in seen] == [(now, at) for now, at, _ in seen]
    kinds = Counter(kind for _, _, kind in seen)
    assert kinds["full"] > 20 and kinds["linger"] > 20, kinds
