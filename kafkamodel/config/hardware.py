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

from dataclasses import dataclass
from typing import Any, Mapping

# the parts of a machine, as scenarios name them (hardware.broker.<part>), in the order tables show them
PARTS = ("cores", "memory.gib", "nic.gbps", "disk.write.mib.per.s", "disk.read.mib.per.s", "disk.latency.ms",
         "fsync.ms", "jvm.heap.gib")

DEFAULT_BROKER = "default"  # hardware.broker.profile when a scenario names none
DEFAULT_CLIENT = "c5n.2xlarge"  # hardware.client.profile when a scenario names none


def mb_to_mib(mb_per_s: float) -> float:
    """Decimal MB/s (10^6 bytes, as dd and datasheets print them) in MiB/s (2^20 bytes)."""
    return mb_per_s * 1e6 / 2**20


@dataclass(frozen=True)
class Part:
    value: Any  # in the part's unit (module docstring); None: unlimited
    source: str  # "title, year, URL" of a publication, or "judgement: why"


@dataclass(frozen=True)
class Profile:
    name: str
    about: str  # one line: what machine this is
    parts: Mapping[str, Part]  # every name in PARTS

    def values(self) -> dict[str, Any]:
        """{part: value} in PARTS order."""
        return {name: self.parts[name].value for name in PARTS}


# ---- sources, cited by the parts below ------------------------------------------------------------------------------

AWS_STORAGE = ("AWS, Amazon EC2 User Guide, \"Storage optimized instances\" (hardware, network and instance-store "
               "IOPS tables), 2022, https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/storage-optimized-instances.html "
               "(read in awsdocs/amazon-ec2-user-guide doc_source/storage-optimized-instances.md at commit 1300242)")
AWS_COMPUTE = ("AWS, Amazon EC2 User Guide, \"Compute optimized instances\" (hardware table), "
               "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/compute-optimized-instances.html")
CONFLUENT_2020 = ("A. Nikhil, \"Benchmarking Apache Kafka, Apache Pulsar, and RabbitMQ: Which is the Fastest?\", "
                  "Confluent blog, 2020, https://www.confluent.io/blog/kafka-fastest-messaging-system/")
KREPS_2014 = ("J. Kreps, \"Benchmarking Apache Kafka: 2 Million Writes Per Second (On Three Cheap Machines)\", "
              "LinkedIn Engineering blog, 2014, https://engineering.linkedin.com/kafka/"
              "benchmarking-apache-kafka-2-million-writes-second-three-cheap-machines (read in copies: "
              "docs/validation-sources.md section 1)")
KAFKA_JAVA = ("Apache Kafka documentation, \"Java Version\" (-Xmx6g -Xms6g ... -XX:+UseG1GC), "
              "https://kafka.apache.org/documentation/#java")
CALLAGHAN_2026 = ("M. Callaghan, \"SSDs, power loss protection and fsync latency\", Small Datum blog, 2026 "
                  "(a 16 KB write + fsync: about 0.89 ms on a consumer NVMe SSD without power-loss protection; "
                  "docs/calibration.md)")
ULTRASTAR_7K4000 = ("HGST, \"Ultrastar 7K4000 Hard Disk Drive Specification\" (7200 RPM, 2012-2016): average seek "
                    "8.2 ms typical, read and write")
HDD_7200_LATENCY = ("Hitachi, \"7K320 SATA OEM Specification\", table 8: 7200 RPM, 8.3 ms per revolution, 4.2 ms "
                    "average rotational latency")
CONSTELLATION_2 = ("Seagate, \"Constellation.2 SAS Product Manual\" rev. H, section 5.1: 7200 RPM, internal data rate "
                   "84-163 MB/s (by zone)")

# i3en: per-disk write bandwidth measured by Confluent (dd, O_DIRECT, 1 MiB blocks, decimal MB/s) on i3en.2xlarge
I3EN_2XL_WRITE_MB = 327 + 328  # two disks
I3EN_WRITE_IOPS = {"i3en.xlarge": 65_000, "i3en.2xlarge": 130_000, "i3en.6xlarge": 400_000}  # AWS_STORAGE
I3EN_READ_IOPS = {"i3en.xlarge": 85_000, "i3en.2xlarge": 170_000, "i3en.6xlarge": 500_000}  # AWS_STORAGE, 100% random

NVME_LATENCY = Part({"dist": "lognormal", "median": 0.1, "sigma": 0.5},
                    "judgement: one 4 KiB random read on an NVMe SSD is about 0.1 ms; AWS publishes IOPS at queue "
                    "depth saturation, not latency, for i3en instance store")
NVME_FSYNC = Part({"dist": "lognormal", "median": 0.9, "sigma": 0.5},
                  CALLAGHAN_2026 + "; judgement: AWS does not say whether i3en instance store has power-loss "
                  "protection, so the consumer-drive figure (the model's default before hardware profiles) is kept; "
                  "sigma 0.5 is a judgement")
KAFKA_HEAP = Part(6, KAFKA_JAVA + "; Confluent 2020's brokers ran the same (KAFKA_HEAP_OPTS=-Xms6g -Xmx6g)")


def _i3en(name: str, cores: int, memory_gib: float, nic_gbps: float, nic_note: str) -> Profile:
    write_mb = I3EN_2XL_WRITE_MB * I3EN_WRITE_IOPS[name] / I3EN_WRITE_IOPS["i3en.2xlarge"]
    read_mb = write_mb * I3EN_READ_IOPS[name] / I3EN_WRITE_IOPS[name]
    measured = name == "i3en.2xlarge"
    write_source = (CONFLUENT_2020 + ": dd oflag=direct bs=1M, 327 and 328 MB/s on the two disks (decimal MB), "
                    "655 MB/s = 624.7 MiB/s together") if measured else (
        f"judgement: Confluent 2020's 655 MB/s for i3en.2xlarge (dd, two disks) scaled by AWS's write IOPS "
        f"({I3EN_WRITE_IOPS[name]:,} vs 130,000; {AWS_STORAGE}): {write_mb:.1f} MB/s; no sequential figure is "
        "published for this size")
    read_source = (f"judgement: the write bandwidth scaled by AWS's random-read over write IOPS "
                   f"({I3EN_READ_IOPS[name]:,} / {I3EN_WRITE_IOPS[name]:,}; {AWS_STORAGE}): {read_mb:.1f} MB/s; "
                   "no sequential read figure is published, and NVMe reads outrun writes by about this much")
    return Profile(name, f"AWS {name}: {cores} vCPUs, {memory_gib:g} GiB, NVMe instance store, {nic_note}", {
        "cores": Part(cores, f"{AWS_STORAGE}: {cores} vCPUs ({cores // 2} cores with two hyper-threads each)"),
        "memory.gib": Part(memory_gib, f"{AWS_STORAGE}: {memory_gib:g} GiB"),
        "nic.gbps": Part(nic_gbps, f"{AWS_STORAGE}: {nic_note}"),
        "disk.write.mib.per.s": Part(round(mb_to_mib(write_mb), 1), write_source),
        "disk.read.mib.per.s": Part(round(mb_to_mib(read_mb), 1), read_source),
        "disk.latency.ms": NVME_LATENCY,
        "fsync.ms": NVME_FSYNC,
        "jvm.heap.gib": KAFKA_HEAP,
    })


_BASELINE = ("baseline bandwidth {b} Gbps, burst {u} Gbps on network I/O credits (\"typically from 5 to 60 "
             "minutes\"): the baseline is what a sustained load gets")

I3EN_XLARGE = _i3en("i3en.xlarge", 4, 32, 4.2, _BASELINE.format(b=4.2, u=25))
I3EN_2XLARGE = _i3en("i3en.2xlarge", 8, 64, 8.4, _BASELINE.format(b=8.4, u=25))
I3EN_6XLARGE = _i3en("i3en.6xlarge", 24, 192, 25.0, "25 Gbps (no burst: the baseline)")

# Kreps 2014: "Intel Xeon 2.5 GHz processor with six cores", "Six 7200 RPM SATA drives" (JBOD, one log.dir
# each), "32GB of RAM", "1Gb Ethernet"
HDD_MB = (84 + 163) / 2  # the middle of a 2012-era 7200 RPM drive's zone range (CONSTELLATION_2)
LINKEDIN_2014 = Profile("linkedin-2014", "the brokers of Kreps 2014: one six-core 2.5 GHz Xeon, 32 GB, 1 GbE, "
                        "six 7200 RPM SATA drives (JBOD)", {
    "cores": Part(12, KREPS_2014 + ": \"Intel Xeon 2.5 GHz processor with six cores\"; judgement: counted as 12 "
                  "hardware threads (Xeons of that clock and core count had hyper-threading), as AWS counts vCPUs"),
    "memory.gib": Part(32, KREPS_2014 + ": \"32GB of RAM\" (memory sizes are binary: 32 GiB)"),
    "nic.gbps": Part(1.0, KREPS_2014 + ": \"1Gb Ethernet\""),
    "disk.write.mib.per.s": Part(round(mb_to_mib(6 * HDD_MB), 1), (
        f"judgement: six drives (JBOD, Kafka spreads partitions over the six log.dirs) at {HDD_MB:g} MB/s each, the "
        f"middle of the zone range of a 7200 RPM drive of the time ({CONSTELLATION_2}); Kreps' own figure for the "
        "six disks is unresolved in the copies read (822 vs 82 MB/s)")),
    "disk.read.mib.per.s": Part(round(mb_to_mib(6 * HDD_MB), 1),
                                "judgement: a hard disk reads sequentially at the rate it writes (same zones)"),
    "disk.latency.ms": Part({"dist": "lognormal", "median": 12.4, "sigma": 0.3}, (
        f"a random read: average seek 8.2 ms ({ULTRASTAR_7K4000}) + half a revolution 4.2 ms ({HDD_7200_LATENCY}); "
        "sigma 0.3 is a judgement")),
    "fsync.ms": Part({"dist": "lognormal", "median": 8.3, "sigma": 0.5}, (
        f"judgement: an fsync of appended data waits for the write and the drive's cache flush, about one "
        f"revolution, 8.3 ms at 7200 RPM ({HDD_7200_LATENCY}); no fsync measurement of these drives is published")),
    "jvm.heap.gib": Part(4, "Apache Kafka 0.8 documentation, \"Java Version\": -Xms4g -Xmx4g (docs/validation-sources"
                         ".md section 7.3); Kreps 2014 does not give the brokers' heap"),
})

C5N_2XLARGE = Profile("c5n.2xlarge", "AWS c5n.2xlarge: 8 vCPUs, 21 GiB, up to 25 Gbps, EBS only (Confluent 2020's "
                      "clients)", {
    "cores": Part(8, f"{AWS_COMPUTE}: 8 vCPUs; {CONFLUENT_2020}: \"8 vCores\""),
    "memory.gib": Part(21, f"{AWS_COMPUTE}: 21 GiB; {CONFLUENT_2020}: \"21 GB RAM\""),
    "nic.gbps": Part(25.0, (f"{CONFLUENT_2020}: \"Upto 25 Gbps\"; judgement: the burst figure, because AWS's baseline "
                            "for this size was not found in the sources read and clients rarely run for long at the "
                            "limit")),
    "disk.write.mib.per.s": Part(None, "judgement: a producer writes no log (EBS only; not modelled)"),
    "disk.read.mib.per.s": Part(None, "judgement: a client reads no log (not modelled)"),
    "disk.latency.ms": Part(0, "judgement: a client does no disk I/O in the model"),
    "fsync.ms": Part(0, "judgement: a client does no fsync"),
    "jvm.heap.gib": Part(16, (f"{CONFLUENT_2020}: the OpenMessaging Benchmark workers ran with -Xms16G -Xmx16G "
                              "(read in its repository, docs/validation-sources.md section 2)")),
})

DEFAULT = Profile(DEFAULT_BROKER, "the default broker: the parts of i3en.2xlarge (Confluent 2020's brokers)",
                  dict(I3EN_2XLARGE.parts))

PROFILES: dict[str, Profile] = {p.name: p for p in (DEFAULT, I3EN_XLARGE, I3EN_2XLARGE, I3EN_6XLARGE, LINKEDIN_2014,
                                                     C5N_2XLARGE)}


def profile(name: str) -> Profile:
    """The profile of that name (names are checked by the schema first)."""
    return PROFILES[name]
