"""``python -m kafkamodel cluster import | export | calibrate | report`` (docs/your-cluster.md)."""

from __future__ import annotations

import sys
from pathlib import Path

from .errors import InputError


def add_parser(verbs) -> None:
    cluster = verbs.add_parser("cluster", help="your cluster: import its files into a scenario, calibrate a hardware "
                                               "profile to your measurements, report on it (docs/your-cluster.md)")
    sub = cluster.add_subparsers(dest="cluster_verb", required=True, metavar="STEP", parser_class=type(cluster))

    imp = sub.add_parser("import", help="kafka-topics --describe, server.properties, kafka-configs --describe and a "
                                        "traffic table -> a scenario, each value's origin beside it")
    imp.add_argument("--describe", required=True, metavar="FILE", help="kafka-topics --describe output, as printed")
    imp.add_argument("--server-properties", action="append", default=[], metavar="FILE",
                     help="a broker's server.properties (repeatable: one per broker, each with broker.id/node.id)")
    imp.add_argument("--configs", metavar="FILE", help="kafka-configs --describe output (topic and broker overrides)")
    imp.add_argument("--traffic", metavar="FILE.csv", help="the traffic table: topic,mb.per.s,record.size.bytes,"
                                                           "consumer.groups (more optional: docs/your-cluster.md)")
    imp.add_argument("--hardware", metavar="PROFILE", help="the brokers' machines: a profile name (python -m "
                                                           "kafkamodel hardware) or a profile file (cluster calibrate)")
    imp.add_argument("--kafka-version", metavar="X.Y", help="the cluster's Kafka release line, when no "
                                                             "inter.broker.protocol.version says it (4.0+ has none)")
    imp.add_argument("--out", required=True, metavar="SCENARIO.yaml", help="the scenario to write")
    imp.set_defaults(func=_cmd_import)

    exp = sub.add_parser("export", help="a scenario as the files import reads: describe.txt (kafka-topics "
                                        "--describe), server-N.properties, traffic.csv")
    exp.add_argument("scenario")
    exp.add_argument("--out", required=True, metavar="DIR")
    exp.set_defaults(func=_cmd_export)


def _usage(exc: Exception):
    from ..cli import UsageError

    return UsageError(str(exc))


def _cmd_import(args) -> int:
    from ..folders import check_file_replaceable, write_atomic
    from .importer import build, read

    out = Path(args.out)
    try:
        check_file_replaceable(out, "--out")
        imported = build(read(args.describe, "--describe"),
                         [read(p, "--server-properties") for p in args.server_properties],
                         read(args.configs, "--configs") if args.configs else None,
                         read(args.traffic, "--traffic") if args.traffic else None,
                         args.hardware, name=out.stem, kafka_version=args.kafka_version)
    except InputError as exc:
        raise _usage(exc) from None
    write_atomic(out, imported.yaml())
    print(f"{out}: {imported.given['brokers']} brokers, {len(imported.given['topics'])} topics, "
          f"{sum(t['partitions'] for t in imported.given['topics'])} partitions, "
          f"{len(imported.given.get('producers', []))} producers")
    if imported.unmodelled:
        print("read but not modelled:", file=sys.stderr)
        for line in imported.unmodelled:
            print(f"  {line}", file=sys.stderr)
    return 0


def _cmd_export(args) -> int:
    from ..cli import _load
    from ..folders import staged
    from .export import files

    scenario = _load(args.scenario)
    with staged(Path(args.out)) as tmp:
        for name, text in files(scenario).items():
            (tmp / name).write_text(text, encoding="utf-8")
    print(f"{args.out}: " + ", ".join(files(scenario)))
    return 0
