"""A scenario as the files ``cluster import`` reads, so that importing them gives the scenario back."""

from __future__ import annotations

from ..config import versions
from . import describe, traffic


def server_properties(scenario, broker: int) -> str:
    """Broker `broker`'s server.properties: its id, rack, release and the broker settings the scenario sets."""
    version, metadata = scenario["kafka.version"], scenario["kafka.metadata"]
    lines = ["# written by kafkamodel cluster export", f"{'node.id' if metadata == versions.KRAFT else 'broker.id'}={broker}"]
    if metadata == versions.KRAFT:
        lines.append("process.roles=broker")
    else:
        lines.append("zookeeper.connect=localhost:2181")
    if versions.VERSIONS.index(version) < versions.VERSIONS.index("4.0"):
        lines.append(f"inter.broker.protocol.version={version}")
    racks = scenario["racks"]
    if racks:
        lines.append(f"broker.rack={racks[broker % len(racks)]}")
    for key, value in (scenario.given.get("broker") or {}).items():
        lines.append(f"{key}={'' if value is None else describe._config_value(value)}")
    return "\n".join(lines) + "\n"


def files(scenario) -> dict[str, str]:
    """{file name: text}: describe.txt, server-<id>.properties for every broker, traffic.csv (with producers)."""
    out = {"describe.txt": describe.export(scenario)}
    for b in range(scenario["brokers"]):
        out[f"server-{b}.properties"] = server_properties(scenario, b)
    if scenario["producers"]:
        out["traffic.csv"] = traffic.export(scenario)
    return out
