"""Hardware profiles, Linux writeback settings and the new producer keys: what reaches Settings, and one clear
error (naming the field) for each broken value."""

from __future__ import annotations

import copy

import pytest

from kafkamodel.cli import main
from kafkamodel.config.scenario import ScenarioError, load_scenario
from kafkamodel.config.settings import Settings

BASE = {
    "name": "hw", "duration.ms": 1000, "brokers": 3,
    "topics": [{"name": "t", "partitions": 3, "replication.factor": 3}],
    "producers": [{"topic": "t", "rate.per.s": 100}],
}


def scenario(**sections) -> dict:
    s = copy.deepcopy(BASE)
    for key, value in sections.items():
        s[key.replace("__", ".")] = value
    return s


def settings(**sections) -> Settings:
    return Settings.of(load_scenario(scenario(**sections)))


def problems(s: dict) -> list[str]:
    with pytest.raises(ScenarioError) as caught:
        load_scenario(s)
    return caught.value.problems


MIB = 2**20


def test_the_default_broker_is_an_i3en_2xlarge_as_aws_and_confluent_publish_it():
    m = settings().broker_machine
    assert m.profile == "default"
    # AWS EC2 User Guide, storage optimized instances: 8 vCPUs, 64 GiB, baseline 8.4 Gbps
    assert (m.cores, m.memory_gib, m.nic_gbps) == (8, 64.0, 8.4)
    # Confluent 2020's dd: 327 + 328 MB/s (decimal) on the two disks, in MiB/s
    assert m.disk_write_mib_per_s == pytest.approx((327 + 328) * 1e6 / MIB, abs=0.05)
    # reads: the writes scaled by AWS's 4 KiB random-read over write IOPS, 170,000 / 130,000
    assert m.disk_read_mib_per_s == pytest.approx((327 + 328) * 1e6 / MIB * 170 / 130, abs=0.05)
    assert m.jvm_heap_gib == 6.0  # Kafka's documented -Xmx6g
    named = settings(hardware={"broker": {"profile": "i3en.2xlarge"}}).broker_machine
    assert {**_fields(named), "profile": "default"} == _fields(m)


def _fields(m) -> dict:
    return {name: getattr(m, name) for name in m.__slots__}


def test_a_profiles_parts_reach_settings():
    m = settings(hardware={"broker": {"profile": "linkedin-2014"}}).broker_machine
    assert (m.profile, m.nic_gbps, m.memory_gib) == ("linkedin-2014", 1.0, 32.0)  # Kreps 2014: 1 GbE, 32 GB
    assert m.cores == 12  # six cores, two hardware threads each
    big = settings(hardware={"broker": {"profile": "i3en.6xlarge"}}).broker_machine
    # AWS: 24 vCPUs, 192 GiB, 25 Gbps; disks: Confluent's 655 MB/s scaled by write IOPS 400,000 / 130,000
    assert (big.cores, big.memory_gib, big.nic_gbps) == (24, 192.0, 25.0)
    assert big.disk_write_mib_per_s == pytest.approx(655e6 * 400 / 130 / MIB, abs=0.05)
    client = settings().client_machine
    assert (client.profile, client.cores, client.memory_gib) == ("c5n.2xlarge", 8, 21.0)


def test_a_part_beside_the_profile_overrides_it_and_null_means_unlimited():
    m = settings(hardware={"broker": {"profile": "i3en.6xlarge", "nic.gbps": 10, "cores": None}}).broker_machine
    assert (m.nic_gbps, m.cores, m.memory_gib) == (10.0, None, 192.0)
    s = load_scenario(scenario(hardware={"broker": {"profile": "i3en.6xlarge", "nic.gbps": 10}}))
    assert s["hardware"]["broker"]["nic.gbps"] == 10 and s["hardware"]["broker"]["cores"] == 24  # resolved view
    # an override path reaches into the nested section
    assert Settings.of(s.with_overrides({"hardware.broker.nic.gbps": 1})).broker_machine.nic_gbps == 1.0
    assert Settings.of(s.with_overrides({"hardware.broker.profile": "linkedin-2014"})).broker_machine.nic_gbps == 10.0


def test_disk_fsync_ms_comes_from_the_broker_machine_unless_given():
    hdd = settings(hardware={"broker": {"profile": "linkedin-2014"}})
    assert hdd.fsync_ms == hdd.broker_machine.fsync_ms and hdd.fsync_ms["median"] == pytest.approx(8.3)
    assert settings(hardware={"broker": {"profile": "linkedin-2014"}}, disk={"fsync.ms": 0.03}).fsync_ms == 0.03


def test_os_settings_in_ms():
    o = settings(os={"vm.dirty_expire_centisecs": 500, "vm.dirty_writeback_centisecs": 100}).os
    assert (o.dirty_expire_ms, o.dirty_writeback_ms) == (5000.0, 1000.0)
    assert (o.dirty_background_ratio, o.dirty_ratio) == (10.0, 20.0)  # mm/page-writeback.c's defaults


@pytest.mark.parametrize("edit, field, rule", [
    ({"hardware": {"broker": {"profile": "i3en.2xlarg"}}}, "hardware.broker.profile", "did you mean 'i3en.2xlarge'"),
    ({"hardware": {"client": {"profile": "m5.large"}}}, "hardware.client.profile", "unknown profile 'm5.large'"),
    ({"hardware": {"broker": {"nic.gbit": 1}}}, "hardware.broker.nic.gbit", "did you mean 'nic.gbps'"),
    ({"hardware": {"broker": {"cores": 0}}}, "hardware.broker.cores", "must be >= 1"),
    ({"hardware": {"broker": {"fsync.ms": {"dist": "lognormal", "median": 1}}}}, "hardware.broker.fsync.ms.sigma",
     "required"),
    ({"hardware": {"broker": {"jvm.heap.gib": 64}}}, "hardware.broker.jvm.heap.gib", "must be below memory.gib (64)"),
    ({"os": {"vm.dirty_ratio": 101}}, "os.vm.dirty_ratio", "must be <= 100"),
    ({"os": {"vm.dirty_background_ratio": 20}}, "os.vm.dirty_background_ratio", "must be below vm.dirty_ratio (20)"),
    ({"os": {"vm.dirty_ratio": 12.5}}, "os.vm.dirty_ratio", "must be an integer"),
    ({"broker": {"os.dirty.expire.ms": 30000}}, "broker.os.dirty.expire.ms", "vm.dirty_expire_centisecs"),
    ({"producers": [{"topic": "t", "rate.per.s": "fast"}]}, "producers[0].rate.per.s", "a number of records per second or max"),
    ({"producers": [{"topic": "t", "rate.per.s": "max", "burst": {"records": 1, "every.ms": 10}}]},
     "producers[0].burst", "not used with rate.per.s: max"),
    ({"producers": [{"topic": "t", "rate.per.s": 1, "instances": 0}]}, "producers[0].instances", "must be >= 1"),
    ({"producers": [{"topic": "t", "rate.per.s": 1, "compression.type": "brotli"}]}, "producers[0].compression.type",
     "must be one of none, gzip, snappy, lz4, zstd"),
    ({"kafka.version": "2.0", "producers": [{"topic": "t", "rate.per.s": 1, "compression.type": "zstd"}]},
     "producers[0].compression.type", 'zstd is not in Kafka 2.0 (KIP-110, 2.1); set kafka.version "2.1" or later'),
])
def test_each_broken_value_gives_one_clear_error_naming_the_field(edit, field, rule):
    found = problems({**copy.deepcopy(BASE), **edit})
    assert len(found) == 1, found
    assert found[0].startswith(field + ":") and rule in found[0], found[0]


def test_codecs_by_version():
    # snappy and gzip since 0.8, lz4 since 0.8.2 (the "0.8" line), zstd since 2.1 (KIP-110)
    for codec in ("gzip", "snappy", "lz4"):
        assert settings(**{"kafka__version": "0.8", "producers": [
            {"topic": "t", "rate.per.s": 1, "compression.type": codec}]}).producers[0].compression_type == codec
    assert settings(kafka__version="2.1", producers=[
        {"topic": "t", "rate.per.s": 1, "compression.type": "zstd"}]).producers[0].compression_type == "zstd"


def test_closed_loop_and_producer_defaults():
    p = settings(producers=[{"topic": "t", "rate.per.s": "max"}]).producers[0]
    assert (p.closed_loop, p.rate_per_s) == (True, 0.0)
    # Kafka's ProducerConfig defaults: buffer.memory 32 MiB, max.block.ms 60 s, compression.type none
    assert (p.buffer_memory, p.max_block_ms, p.compression_type, p.instance) == (32 * MIB, 60000.0, "none", 0)
    assert settings().producers[0].closed_loop is False


def test_instances_expand_into_single_producers():
    s = settings(producers=[{"topic": "t", "rate.per.s": 50, "instances": 3}, {"topic": "t", "rate.per.s": 7}])
    assert [(p.rate_per_s, p.instance) for p in s.producers] == [(50.0, 0), (50.0, 1), (50.0, 2), (7.0, 0)]


def test_the_gc_pause_cost_is_a_distribution():
    c = settings(costs={"gc.pause.ms": {"dist": "constant", "value": 20}}).costs
    assert c.gc_pause_ms == {"dist": "constant", "value": 20} and c.gc_young_mib == 1024.0
    assert problems({**copy.deepcopy(BASE), "costs": {"gc.pause.ms": -1}})[0].startswith("costs.gc.pause.ms:")


def test_keys_lists_the_new_keys(capsys):
    assert main(["keys"]) == 0
    out = capsys.readouterr().out
    for key in ("hardware.broker.profile", "hardware.broker.nic.gbps", "hardware.client.cores",
                "hardware.broker.jvm.heap.gib", "os.vm.dirty_background_ratio", "os.vm.dirty_expire_centisecs",
                "producers[].rate.per.s", "producers[].instances", "producers[].buffer.memory",
                "producers[].max.block.ms", "producers[].compression.type", "costs.producer.record.us",
                "costs.gc.pause.ms", "costs.gc.request.kib"):
        assert f"\n{key} " in out, key
    assert "broker.os.dirty.expire.ms" not in out


def test_an_unknown_profile_exits_2_with_one_line(tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text("topics: [{name: t}]\nhardware: {broker: {profile: i3en.3xl}}\n")
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: hardware.broker.profile: unknown profile 'i3en.3xl'")


def test_the_nic_comes_from_the_broker_machine_unless_network_bandwidth_mbps_is_given():
    assert settings().bandwidth_mbps == 8400.0  # i3en.2xlarge's 8.4 Gbps baseline, in Mbps
    assert settings(hardware={"broker": {"profile": "linkedin-2014"}}).bandwidth_mbps == 1000.0  # 1 GbE
    assert settings(hardware={"broker": {"nic.gbps": None}}).bandwidth_mbps is None  # unlimited
    assert settings(network={"bandwidth.mbps": 10000}).bandwidth_mbps == 10000.0  # a number given wins


# ---- python -m kafkamodel hardware -----------------------------------------------------------------------------------

def test_hardware_lists_every_profile_with_its_parts_and_sources(capsys):
    from kafkamodel.config.hardware import PARTS, PROFILES, REFERENCES

    assert main(["hardware"]) == 0
    out = capsys.readouterr().out
    for name in ("default", "i3en.xlarge", "i3en.2xlarge", "i3en.6xlarge", "linkedin-2014", "c5n.2xlarge"):
        assert f"\n{name}: " in "\n" + out, name
    assert out.count("\n  nic.gbps ") == len(PROFILES)
    assert "[kreps-2014] J. Kreps" in out and "https://www.confluent.io/blog/kafka-fastest-messaging-system/" in out
    for p in PROFILES.values():  # every part has a source: a cited reference or a judgement saying why
        for k in PARTS:
            source = p.parts[k].source
            assert source.startswith("judgement: ") or "[" in source, (p.name, k)
        assert set(p.references()) <= set(REFERENCES)


def test_hardware_name_shows_one_profile_and_json_is_machine_readable(capsys):
    import json

    assert main(["hardware", "linkedin-2014"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("linkedin-2014: ") and "i3en" not in out
    assert "  nic.gbps              1 " in out
    assert main(["hardware", "i3en.2xlarge", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    parts = data["i3en.2xlarge"]["parts"]
    assert parts["nic.gbps"]["value"] == 8.4 and parts["disk.write.mib.per.s"]["value"] == pytest.approx(655e6 / MIB, abs=0.05)
    assert "confluent-2020" in data["i3en.2xlarge"]["references"]


def test_hardware_with_an_unknown_name_exits_2_with_one_line(capsys):
    assert main(["hardware", "i3en.2xl"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown profile 'i3en.2xl'" in err and "'i3en.2xlarge'" in err


def test_calibration_md_carries_every_profile_as_the_data_has_it(capsys):
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs" / "calibration.md").read_text(encoding="utf-8")
    assert main(["hardware", "--markdown"]) == 0
    tables = capsys.readouterr().out.strip()
    start = page.index("<!-- hardware profiles: generated")
    generated = page[page.index("\n", start) + 1:page.index("<!-- end of hardware profiles -->")].strip()
    assert generated == tables  # regenerate with: python -m kafkamodel hardware --markdown


def test_a_profile_file_sets_parts_and_costs_over_its_base(tmp_path, monkeypatch):
    # what cluster calibrate writes: a base profile, the parts and costs it fitted, each with its source
    (tmp_path / "mine.yaml").write_text(
        "name: mine\nabout: fitted\nbase: i3en.xlarge\nparts:\n  nic.gbps: {value: 1.5, source: fitted}\n"
        "costs:\n  request.us: {value: 99, source: fitted}\n")
    monkeypatch.chdir(tmp_path)
    from kafkamodel import load_scenario
    from kafkamodel.config.scenario import ScenarioError

    s = load_scenario({"hardware": {"broker": {"profile": "mine.yaml"}}})
    assert s["hardware"]["broker"]["nic.gbps"] == 1.5 and s["hardware"]["broker"]["cores"] == 4  # i3en.xlarge's
    assert s["costs"]["request.us"] == 99
    assert load_scenario({"hardware": {"broker": {"profile": "mine.yaml"}}, "costs": {"request.us": 5}})[
        "costs"]["request.us"] == 5  # the scenario's own wins
    with pytest.raises(ScenarioError, match=r"^hardware.broker.profile: profile file gone.yaml: FileNotFoundError"):
        load_scenario({"hardware": {"broker": {"profile": "gone.yaml"}}})
