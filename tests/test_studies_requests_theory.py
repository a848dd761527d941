"""The requests study's formulas (kafkamodel.studies.requests_theory) against the tests' own."""

from __future__ import annotations

import pytest
from kafka_format import v2_capacity
from helpers import fetcher_of, java_hash

from kafkamodel.studies import requests_theory as rt


@pytest.mark.parametrize("topic", ["t", "orders", "a-much-longer-topic-name-with-unicode-é"])
def test_fetcher_ids_are_kafkas(topic):
    assert rt.java_string_hash(topic) == java_hash(topic)
    assert [rt.fetcher_of(topic, p, n) for n in (1, 3, 4) for p in range(60)] == \
        [fetcher_of(topic, p, n) for n in (1, 3, 4) for p in range(60)]


def test_replication_extra_is_the_leaders_validation_and_the_busiest_fetcher():
    # 1,000 partitions on 2 brokers: each leads 500; with 4 fetchers getFetcherId puts them on 2, 250 each
    assert rt.busiest_fetcher("t", list(range(0, 1000, 2)), 4) == (250, 2)
    assert rt.replication_extra_ms(1000, 4, 2, 10, 10) == pytest.approx((500 * 10 + 250 * 20) / 1000)
    assert rt.replication_extra_ms(1000, 1, 2, 10, 10) == pytest.approx((500 * 10 + 500 * 20) / 1000)


def test_capacities_and_regimes():
    # a v2 batch: the 61-byte header and each record's varints (tests/kafka_format.py, from Kafka's definitions)
    for batch_size, value in ((16384, 100), (64000, 100), (16384, 1000), (1024, 10), (100, 100)):
        assert rt.records_per_batch(batch_size, value) == v2_capacity(batch_size, value), (batch_size, value)
    assert rt.records_per_batch(16384, 100) == 148
    assert rt.acks_all_capacity_per_s(148, 5) == pytest.approx(14800)
    assert rt.acks_all_capacity_per_s(148, 5, in_flight=1) == pytest.approx(7400)  # 4L with one in flight
    assert rt.acks1_capacity_per_s(148, 5) == pytest.approx(74000)
    assert rt.backlog_after(20000, 14800, 10) == pytest.approx(52000) and rt.backlog_after(1000, 14800, 10) == 0
    # buffer.memory 32 MiB in batch.size pieces of 148 records: 2048 batches; beyond, send() blocks
    assert rt.held_records_max(33554432, 16384, 148) == 2048 * 148
    assert rt.backlog_after(111000, 74000, 10, held_max=2048 * 148) == 2048 * 148
    assert rt.backlog_after(20000, 14800, 10, held_max=2048 * 148) == pytest.approx(52000)
    regime = dict(rate_per_s=2000, batch_records=148, record_bytes=100, in_flight=5, linger_ms=5, lag_ms=10000,
                  fetch_max_bytes=1048576)
    assert [rt.slow_regime("all", rtt, **regime) for rtt in (1, 10, 100, 6000, 20000)] == [
        rt.KEEPS_UP, rt.PACE, rt.BACKLOG_GROWS, rt.BACKLOG_GROWS, rt.EVICTED]
    # acks=1: keeps up while 1 MiB per round trip covers 200 kB/s and two round trips fit in 10 s
    assert [rt.slow_regime("1", rtt, **regime) for rtt in (300, 4900, 5100, 6000)] == [
        rt.KEEPS_UP, rt.KEEPS_UP, rt.EVICTED, rt.EVICTED]
    assert rt.slow_regime("1", 300, **{**regime, "fetch_max_bytes": 16384}) == rt.EVICTED  # 16 KiB per 0.3 s < 200 kB/s


def test_the_requests_specs_rates_are_the_stated_multiples_of_the_capacity_its_settings_give():
    """data/studies/requests.yaml writes its offered loads out (a spec lists values); they must be the multiples
    its comment names of the capacities that the part's own settings give (batch.size, record size, latency, in
    flight), computed here with Kafka's rule, independently of the numbers in the file."""
    from kafkamodel.config.scenario import load_scenario
    from kafkamodel.config.settings import Settings
    from kafkamodel.paths import scenario_path
    from kafkamodel.kit.specfile import load_spec

    spec = load_spec("requests")
    part = next(p for p in spec.parts if p.name == "load_one_partition")
    s = Settings.of(load_scenario(scenario_path(part.base)).with_overrides(part.overrides).to_dict())
    p = s.producers[0]
    batch = v2_capacity(p.batch_size, p.record_size_bytes)  # Kafka: a v2 batch holds what fits in batch.size
    all_cap = batch / (2 * float(s.latency_ms)) * 1000.0  # one batch per 2L (leader append to follower's next fetch)
    one_cap = p.max_in_flight * all_cap  # acks=1: every in-flight request carries a batch per round trip
    multiples = {"all": {0.25, 0.5, 0.75, 0.9, 1.1, 1.5, 2.0}, "1": {0.25, 0.5, 1.1, 1.5, 2.0}}
    rates = sorted({(str(c["acks"]), c["rate"]) for c in part.combos if "rate" in c})  # each under ISR and quorum
    assert len(rates) == 15
    for acks, rate in rates:
        ok = [m for m in multiples[acks] if rate == pytest.approx(m * all_cap)]
        ok += [m for m in ((0.9, 1.1, 1.5) if acks == "1" else ()) if rate == pytest.approx(m * one_cap)]
        assert ok, f"acks={acks} rate {rate}: not a stated multiple of {all_cap:g} or {one_cap:g} records/s"
