"""Machine profiles: the parts of the machines brokers and clients run on, each with its source.

A scenario's ``hardware: {broker: {...}, client: {...}}`` names a profile
and/or sets parts; parts written beside ``profile`` override the profile's
(``settings.derive`` resolves them). Each part here is data with its source:
a publication (title, year, URL) or ``judgement: why``. ``python -m
kafkamodel hardware`` lists them; docs/calibration.md carries the same
tables for readers.

Units, exactly: ``nic.gbps`` in 10^9 bits/s per direction (as AWS and NIC
vendors count); ``disk.*.mib.per.s`` in MiB/s (2^20 bytes; ``dd`` and disk
datasheets print decimal MB/s, converted here with ``mb_to_mib``);
``memory.gib`` and ``jvm.heap.gib`` in GiB; ``cores`` counts the hardware
threads the OS schedules (an AWS vCPU is one hyper-thread: two per physical
core on Intel instances); ``disk.latency.ms`` (one random read's access time)
and ``fsync.ms`` (one fsync of a log segment) are distributions as
``config.distributions`` takes them. ``None`` for cores, NIC or disk
bandwidth means unlimited.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping

# the parts of a machine, as scenarios name them (hardware.broker.<part>), in the order tables show them
PARTS = ("cores", "memory.gib", "nic.gbps", "nic.mtu", "disk.write.mib.per.s", "disk.read.mib.per.s",
         "disk.latency.ms", "fsync.ms", "jvm.heap.gib")

# Bytes of a full TCP segment on the wire beyond its payload: IPv4 20 + TCP 20 + the timestamps option 12 (Linux
# sends it by default: RFC 7323) inside the MTU, and Ethernet's 14-byte header, 4-byte FCS, 8-byte preamble and
# 12-byte inter-frame gap outside it (IEEE 802.3). A NIC of G Gbps carries G x goodput(mtu) of a stream's bytes.
TCP_IP_HEADERS = 20 + 20 + 12
ETHERNET_FRAMING = 14 + 4 + 8 + 12


def goodput(mtu: int) -> float:
    """The share of a NIC's bit rate a TCP stream's payload gets with full segments of this MTU."""
    return (mtu - TCP_IP_HEADERS) / (mtu + ETHERNET_FRAMING)


def nic_ms_per_byte(gbps: float | None, mtu: int) -> float:
    """The time a NIC of `gbps` takes per byte of a TCP stream (0.0: unlimited)."""
    return 8.0 / (gbps * 1e6 * goodput(mtu)) if gbps else 0.0

DEFAULT_BROKER = "default"  # hardware.broker.profile when a scenario names none
DEFAULT_CLIENT = "c5n.2xlarge"  # hardware.client.profile when a scenario names none


def mb_to_mib(mb_per_s: float) -> float:
    """Decimal MB/s (10^6 bytes, as dd and datasheets print them) in MiB/s (2^20 bytes)."""
    return mb_per_s * 1e6 / 2**20


@dataclass(frozen=True)
class Part:
    value: Any  # in the part's unit (module docstring); None: unlimited
    source: str  # what a publication says, citing it as [key] (REFERENCES: title, year, URL), or "judgement: why"


@dataclass(frozen=True)
class Profile:
    name: str
    about: str  # one line: what machine this is
    parts: Mapping[str, Part]  # every name in PARTS
    costs: Mapping[str, Part] = field(default_factory=dict)  # a profile file's fitted costs (costs: keys)

    def values(self) -> dict[str, Any]:
        """{part: value} in PARTS order."""
        return {name: self.parts[name].value for name in PARTS}

    def references(self) -> dict[str, str]:
        """{key: citation} of every [key] its parts cite, in the order first cited."""
        cited = re.findall(r"\[([a-z0-9-]+)\]", " ".join(self.parts[name].source for name in PARTS))
        return {key: REFERENCES[key] for key in dict.fromkeys(cited)}


# ---- references, cited by the parts below as [key] ------------------------------------------------------------------

REFERENCES: dict[str, str] = {
    "aws-storage": ("AWS, Amazon EC2 User Guide, \"Storage optimized instances\": hardware, network (baseline and "
                    "burst bandwidth) and instance-store IOPS tables, "
                    "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/storage-optimized-instances.html (read in "
                    "awsdocs/amazon-ec2-user-guide, doc_source/storage-optimized-instances.md at commit 1300242, "
                    "2023-04-25)"),
    "aws-bandwidth": ("AWS, Amazon EC2 User Guide, \"Amazon EC2 instance network bandwidth\": instances sized "
                      "\"up to\" a bandwidth have a baseline and burst on network I/O credits \"typically from 5 to "
                      "60 minutes\", https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-instance-network-bandwidth.html"),
    "aws-compute": ("AWS, Amazon EC2 User Guide, \"Compute optimized instances\": hardware and network (baseline "
                    "and burst bandwidth) tables, "
                    "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/compute-optimized-instances.html (read in "
                    "awsdocs/amazon-ec2-user-guide, doc_source/compute-optimized-instances.md at commit d289961, "
                    "2023-05-11)"),
    "confluent-2020": ("A. Nikhil, \"Benchmarking Apache Kafka, Apache Pulsar, and RabbitMQ: Which is the Fastest?\", "
                       "Confluent blog, 2020, https://www.confluent.io/blog/kafka-fastest-messaging-system/, and its "
                       "repository confluentinc/openmessaging-benchmark (docs/validation-sources.md section 2)"),
    "kreps-2014": ("J. Kreps, \"Benchmarking Apache Kafka: 2 Million Writes Per Second (On Three Cheap Machines)\", "
                   "LinkedIn Engineering blog, 2014, https://engineering.linkedin.com/kafka/benchmarking-apache-kafka-2-"
                   "million-writes-second-three-cheap-machines (read in copies: docs/validation-sources.md section 1)"),
    "aws-mtu": ("AWS, Amazon EC2 User Guide, \"Network maximum transmission unit (MTU) for your EC2 instance\": "
                "\"All current generation instances support jumbo frames\" (9001 MTU) inside a VPC, "
                "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/network_mtu.html (read in "
                "awsdocs/amazon-ec2-user-guide, doc_source/network_mtu.md)"),
    "kafka-java": ("Apache Kafka documentation, \"Java Version\": -Xmx6g -Xms6g ... -XX:+UseG1GC; the 0.8 "
                   "documentation: -Xms4g -Xmx4g, https://kafka.apache.org/documentation/#java "
                   "(docs/validation-sources.md section 7.3)"),
    "callaghan-2026": ("M. Callaghan, \"SSDs, power loss protection and fsync latency\", Small Datum blog, 2026: a "
                       "16 KB write + fsync takes about 0.89 ms on a consumer NVMe SSD without power-loss protection "
                       "(Samsung 990 Pro), 12-58 us on enterprise drives with it"),
    "hgst-7k4000": ("HGST, \"Ultrastar 7K4000 Hard Disk Drive Specification\" (7200 RPM), section 4.4.1.1: "
                    "average seek 8.2 ms typical, read and write (read in a copy: "
                    "https://www.easymanua.ls/hgst/hus724040als640/manual?p=25)"),
    "hitachi-7k320": ("Hitachi, \"7K320 SATA OEM Specification\", table 8: 7200 RPM, 8.3 ms per revolution, 4.2 ms "
                      "average latency (read in a copy: https://www.manualowl.com/m/Hitachi/7K320/Manual/334882?page=19)"),
    "seagate-constellation2": ("Seagate, \"Constellation.2 SAS Product Manual\" rev. H, section 5.1: 7200 RPM, "
                               "internal data rate 84-163 MB/s by zone (read in a copy: https://manualsdump.com/en/"
                               "manuals/seagate-st9500621ss-st9500620ss-st9500622ss-100620418model-st91000642ss-"
                               "st91000641ss-st91000640ss/136768/19)"),
}

# i3en: the per-disk write bandwidth Confluent measured on i3en.2xlarge (dd, O_DIRECT, 1 MiB blocks, decimal MB/s)
I3EN_2XL_WRITE_MB = 327 + 328  # its two disks
# [aws-storage]: 4 KiB IOPS at queue depth saturation over all instance-store volumes; and baseline/burst Gbps
I3EN = {  # name: (vCPUs, GiB, baseline Gbps, burst Gbps or None, 100% random read IOPS, write IOPS)
    "i3en.large": (2, 16, 2.1, 25.0, 42_500, 32_500),
    "i3en.xlarge": (4, 32, 4.2, 25.0, 85_000, 65_000),
    "i3en.2xlarge": (8, 64, 8.4, 25.0, 170_000, 130_000),
    "i3en.3xlarge": (12, 96, 12.5, 25.0, 250_000, 200_000),
    "i3en.6xlarge": (24, 192, 25.0, None, 500_000, 400_000),
}

NVME_LATENCY = Part({"dist": "lognormal", "median": 0.1, "sigma": 0.5},
                    "judgement: a 4 KiB random read on an NVMe SSD takes about 0.1 ms; AWS publishes IOPS at queue "
                    "depth saturation, not latency")
NVME_FSYNC = Part({"dist": "lognormal", "median": 0.9, "sigma": 0.5},
                  "[callaghan-2026]; judgement: AWS does not say whether i3en instance store has power-loss "
                  "protection, so the consumer-drive figure (the model's default before hardware profiles) is kept; "
                  "sigma 0.5 (p99 about 3.2x the median) is a judgement")
AWS_MTU = Part(9001, "[aws-mtu]: jumbo frames inside the VPC (Confluent 2020's cluster was one subnet)")
KAFKA_HEAP = Part(6, "[kafka-java]: -Xmx6g; Confluent 2020's brokers ran the same (KAFKA_HEAP_OPTS=-Xms6g -Xmx6g, "
                     "[confluent-2020])")


def _i3en(name: str) -> Profile:
    cores, memory_gib, baseline, burst, read_iops, write_iops = I3EN[name]
    write_mb = I3EN_2XL_WRITE_MB * write_iops / I3EN["i3en.2xlarge"][5]
    read_mb = write_mb * read_iops / write_iops
    if name == "i3en.2xlarge":
        write_source = ("[confluent-2020]: dd oflag=direct bs=1M gave 327 and 328 MB/s on the two disks (decimal MB): "
                        "655 MB/s = 624.7 MiB/s together")
    else:
        write_source = (f"judgement: [confluent-2020]'s 655 MB/s for i3en.2xlarge scaled by [aws-storage]'s write IOPS "
                        f"({write_iops:,} vs 130,000): {write_mb:.1f} MB/s; no sequential figure is published for it")
    nic = (f"[aws-storage]: baseline {baseline:g} Gbps, burst {burst:g} Gbps; the baseline is what a sustained load "
           "gets once the credits are spent ([aws-bandwidth])" if burst else f"[aws-storage]: {baseline:g} Gbps")
    disks = " (2 x 2,500 GB: [confluent-2020])" if name == "i3en.2xlarge" else ""
    return Profile(name, f"AWS {name}: {cores} vCPUs, {memory_gib} GiB, NVMe instance store{disks}, "
                         f"{baseline:g} Gbps" + (f" (burst {burst:g})" if burst else ""), {
        "cores": Part(cores, f"[aws-storage]: {cores} vCPUs = {cores // 2} cores with two hyper-threads each"),
        "memory.gib": Part(memory_gib, f"[aws-storage]: {memory_gib} GiB"),
        "nic.gbps": Part(baseline, nic),
        "nic.mtu": AWS_MTU,
        "disk.write.mib.per.s": Part(round(mb_to_mib(write_mb), 1), write_source),
        "disk.read.mib.per.s": Part(round(mb_to_mib(read_mb), 1), (
            f"judgement: the write bandwidth scaled by [aws-storage]'s random-read over write IOPS ({read_iops:,} / "
            f"{write_iops:,}): {read_mb:.1f} MB/s; no sequential read figure is published")),
        "disk.latency.ms": NVME_LATENCY,
        "fsync.ms": NVME_FSYNC,
        "jvm.heap.gib": KAFKA_HEAP,
    })


# Kreps 2014: "Intel Xeon 2.5 GHz processor with six cores", "Six 7200 RPM SATA drives" (JBOD: one log.dir
# each), "32GB of RAM", "1Gb Ethernet"
HDD_MB = (84 + 163) / 2  # the middle of a 7200 RPM drive's zone range of the time ([seagate-constellation2])
LINKEDIN_2014 = Profile("linkedin-2014", "the brokers of Kreps 2014: one six-core 2.5 GHz Xeon, 32 GB, 1 GbE, "
                        "six 7200 RPM SATA drives (JBOD)", {
    "cores": Part(12, "[kreps-2014]: \"Intel Xeon 2.5 GHz processor with six cores\"; judgement: 12 hardware threads "
                      "(Xeons of that clock and core count had hyper-threading), counted as AWS counts vCPUs"),
    "memory.gib": Part(32, "[kreps-2014]: \"32GB of RAM\" (memory is sold in binary sizes: 32 GiB)"),
    "nic.gbps": Part(1.0, "[kreps-2014]: \"1Gb Ethernet\""),
    "nic.mtu": Part(1500, "judgement: standard Ethernet frames (1500 MTU); the post mentions no jumbo frames"),
    "disk.write.mib.per.s": Part(round(mb_to_mib(6 * HDD_MB), 1), (
        f"judgement: six drives (JBOD; Kafka spreads partitions over the six log.dirs) at {HDD_MB:g} MB/s each, the "
        "middle of a 7200 RPM drive's zone range ([seagate-constellation2]); Kreps' own figure for the six disks is "
        "unresolved in the copies read (822 or 82 MB/s)")),
    "disk.read.mib.per.s": Part(round(mb_to_mib(6 * HDD_MB), 1),
                                "judgement: a hard disk reads sequentially at the rate it writes (the same zones)"),
    "disk.latency.ms": Part({"dist": "lognormal", "median": 12.4, "sigma": 0.3}, (
        "a random read: average seek 8.2 ms ([hgst-7k4000]) + half a revolution 4.2 ms ([hitachi-7k320]); "
        "sigma 0.3 is a judgement")),
    "fsync.ms": Part({"dist": "lognormal", "median": 8.3, "sigma": 0.5}, (
        "judgement: an fsync of appended data waits for the write and the drive's cache flush, about one revolution: "
        "8.3 ms at 7200 RPM ([hitachi-7k320]); no fsync measurement of these drives is published")),
    "jvm.heap.gib": Part(4, "[kafka-java]: the 0.8 documentation's -Xmx4g; Kreps 2014 does not give the brokers' heap"),
})

C5N_2XLARGE = Profile("c5n.2xlarge", "AWS c5n.2xlarge: 8 vCPUs, 21 GiB, 10 Gbps (burst 25), EBS only (Confluent "
                      "2020's clients; the default client)", {
    "cores": Part(8, "[aws-compute]: 8 vCPUs; [confluent-2020]: \"8 vCores\""),
    "memory.gib": Part(21, "[aws-compute]: 21 GiB; [confluent-2020]: \"21 GB RAM\""),
    "nic.gbps": Part(10.0, ("[aws-compute]: baseline 10 Gbps, burst 25 Gbps ([confluent-2020]: \"Upto 25 Gbps\"); "
                            "the baseline is what a sustained load gets once the credits are spent ([aws-bandwidth])")),
    "nic.mtu": AWS_MTU,
    "disk.write.mib.per.s": Part(None, "judgement: a client writes no log (not modelled)"),
    "disk.read.mib.per.s": Part(None, "judgement: a client reads no log (not modelled)"),
    "disk.latency.ms": Part(0, "judgement: a client does no disk I/O in the model"),
    "fsync.ms": Part(0, "judgement: a client does no fsync"),
    "jvm.heap.gib": Part(16, "[confluent-2020]: the OpenMessaging Benchmark workers ran with -Xms16G -Xmx16G"),
})

I3EN_PROFILES = [_i3en(name) for name in I3EN]
DEFAULT = Profile(DEFAULT_BROKER, "the default broker: the parts of i3en.2xlarge (Confluent 2020's brokers)",
                  dict(next(p for p in I3EN_PROFILES if p.name == "i3en.2xlarge").parts))

PROFILES: dict[str, Profile] = {p.name: p for p in (DEFAULT, *I3EN_PROFILES, LINKEDIN_2014, C5N_2XLARGE)}


def is_profile_file(name) -> bool:
    """A profile given as a file (what ``cluster calibrate`` writes) rather than a shipped name."""
    return isinstance(name, str) and name.endswith((".yaml", ".yml"))


_FILES: dict[tuple, Profile] = {}  # (path, mtime) -> its profile


def profile_file_problem(path: str) -> str | None:
    """Why `path` is not a usable profile file (None if it is)."""
    try:
        load_profile_file(path)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return f"{exc.__class__.__name__}: {exc}" if not isinstance(exc, ValueError) else str(exc)
    return None


def load_profile_file(path: str) -> Profile:
    """A profile file: {name, about, base: a shipped profile, parts: {part: {value, source}}, costs: {key: {value,
    source}}}; parts it does not set are the base's. Read relative to the current folder."""
    import os

    import yaml

    key = (os.path.abspath(path), os.stat(path).st_mtime_ns)
    if key in _FILES:
        return _FILES[key]
    with open(path, encoding="utf-8") as f:
        data = yaml.safe_load(f)
    if not isinstance(data, dict) or not isinstance(data.get("parts", {}), dict):
        raise ValueError("a profile file is a mapping with name, about, base, parts and costs")
    base = data.get("base", DEFAULT_BROKER)
    if base not in PROFILES:
        raise ValueError(f"base: unknown profile {base!r} (profiles: {', '.join(PROFILES)})")
    parts = dict(PROFILES[base].parts)
    for name, part in (data.get("parts") or {}).items():
        if name not in PARTS or not isinstance(part, dict) or "value" not in part or "source" not in part:
            raise ValueError(f"parts.{name}: expected one of {', '.join(PARTS)} as {{value, source}}")
        parts[name] = Part(part["value"], part["source"])
    costs = {}
    for name, part in (data.get("costs") or {}).items():
        if not isinstance(part, dict) or "value" not in part or "source" not in part:
            raise ValueError(f"costs.{name}: expected {{value, source}}")
        costs[name] = Part(part["value"], part["source"])
    out = Profile(str(data.get("name", path)), str(data.get("about", f"the profile in {path}")), parts, costs)
    _FILES[key] = out
    return out


def profile(name: str) -> Profile:
    """The profile of that name, or of that file (names are checked by the schema first)."""
    return load_profile_file(name) if is_profile_file(name) else PROFILES[name]
