"""``python -m kafkamodel cluster import | export | calibrate | report`` (docs/your-cluster.md)."""

from __future__ import annotations

import sys
from pathlib import Path

from .errors import InputError

PARAMETERS_NAMES = ("costs.request.us", "costs.kib.us", "hardware.broker.nic.gbps",
                    "hardware.broker.disk.write.mib.per.s", "fsync.ms")  # calibrate.PARAMETERS (kept light here)
DEFAULT_FIT_NAMES = ("costs.request.us", "costs.kib.us")


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

    cal = sub.add_parser("calibrate", help="fit the handler's costs (and, on request, NIC, disk, fsync) to "
                                           "kafka-producer-perf-test output and OpenMessagingBenchmark results "
                                           "-> a hardware profile file")
    cal.add_argument("scenario", help="the cluster's scenario (cluster import)")
    cal.add_argument("--perf-test", action="append", default=[], metavar="FILE",
                     help="kafka-producer-perf-test output, the command line first (repeatable)")
    cal.add_argument("--omb", action="append", default=[], metavar="FILE.json[:TOPIC]",
                     help="an OpenMessagingBenchmark result (repeatable); TOPIC: the scenario's topic it ran on")
    cal.add_argument("--fit", action="append", choices=sorted(PARAMETERS_NAMES), metavar="PARAMETER",
                     help=f"a parameter to fit (repeatable; default: {', '.join(DEFAULT_FIT_NAMES)}; "
                          f"choices: {', '.join(sorted(PARAMETERS_NAMES))})")
    cal.add_argument("--hold-out", type=int, default=None, metavar="N",
                     help="predict the last N points instead of fitting them (default: 1 when there are 2 or more)")
    cal.add_argument("--duration-ms", type=float, default=1000.0, help="simulated time per point (default 1000)")
    cal.add_argument("--out", required=True, metavar="PROFILE.yaml")
    cal.set_defaults(func=_cmd_calibrate)

    rep = sub.add_parser("report", help="answer the operator's questions about the scenario's cluster -> "
                                        "DIR/report.html (offline) and DIR/answers.json")
    rep.add_argument("scenario", help="the cluster's scenario (cluster import)")
    rep.add_argument("--profile", metavar="PROFILE.yaml", help="the brokers' hardware profile (cluster calibrate): "
                                                              "sets hardware.broker.profile")
    rep.add_argument("--out", required=True, metavar="DIR")
    rep.add_argument("--seeds", type=int, default=3, help="seeds per run (default 3): the intervals")
    rep.add_argument("--duration-ms", type=float, default=5000.0,
                     help="simulated time of each load run (default 5000; the report says what shortening costs)")
    rep.add_argument("--gate", default="no_under_replicated",
                     help="the rolling restart's gate: no_under_replicated, wait.ms=N or full_isr_for.ms=N")
    rep.add_argument("--downtime-ms", type=float, default=10000.0, help="each broker's downtime in the rolling "
                                                                        "restart (default 10000)")
    rep.add_argument("--failures", metavar="FILE.yaml", help="failure rates for durability (docs/durability.md's "
                                                             "failures: keys; default: its sourced defaults)")
    rep.add_argument("--windows", type=int, default=200, help="durability: failure windows per replica layout")
    rep.add_argument("--no-durability", action="store_true", help="skip the durability estimate (the slowest part)")
    rep.set_defaults(func=_cmd_report)

    exp = sub.add_parser("export", help="a scenario as the files import reads: describe.txt (kafka-topics "
                                        "--describe), server-N.properties, traffic.csv")
    exp.add_argument("scenario")
    exp.add_argument("--out", required=True, metavar="DIR")
    exp.set_defaults(func=_cmd_export)


def _usage(exc: Exception):
    from ..command import UsageError

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
    from ..command import load_named
    from ..folders import staged
    from .export import files

    scenario = load_named(args.scenario)
    with staged(Path(args.out)) as tmp:
        for name, text in files(scenario).items():
            (tmp / name).write_text(text, encoding="utf-8")
    print(f"{args.out}: " + ", ".join(files(scenario)))
    return 0


def _cmd_calibrate(args) -> int:
    import datetime

    from ..command import load_named
    from ..folders import check_file_replaceable, write_atomic
    from .calibrate import FitRefused, fit, profile_yaml
    from .importer import read
    from .omb import read_omb
    from .perftest import read_perf_test

    scenario = load_named(args.scenario)
    out = Path(args.out)
    try:
        check_file_replaceable(out, "--out")
        points = [read_perf_test(*read(p, "--perf-test")) for p in args.perf_test]
        for item in args.omb:
            path, _, topic = item.partition(".json:")
            path = path + ".json" if topic else item
            points.append(read_omb(*read(path, "--omb"), topic or scenario["topics"][0]["name"]))
        if not points:
            raise InputError("--perf-test", None, "expected at least one measured point (--perf-test or --omb)")
        topics = {t["name"] for t in scenario["topics"]}
        for m in points:
            if m.topic not in topics:
                raise InputError(m.source, None, f"expected a topic of {args.scenario} ({', '.join(sorted(topics))}),"
                                                 f" got {m.topic!r}")
        held = args.hold_out if args.hold_out is not None else (1 if len(points) >= 2 else 0)
        if not 0 <= held < len(points):
            raise InputError("--hold-out", None, f"expected 0..{len(points) - 1} (points: {len(points)}), got {held}")
        result = fit(scenario, points[:len(points) - held], points[len(points) - held:],
                     tuple(args.fit or DEFAULT_FIT_NAMES), duration_ms=args.duration_ms)
    except (InputError, FitRefused) as exc:
        raise _usage(exc) from None
    base = scenario["hardware"]["broker"]["profile"]
    when = datetime.date.today().isoformat()
    write_atomic(out, profile_yaml(result, base if not base.endswith((".yaml", ".yml")) else "default", out.stem,
                                   [m.source for m in points], when))
    print(f"{out}: " + ", ".join(f"{k} {v:.4g}" for k, v in result.values.items()))
    for row in result.fitted + result.held_out:
        kind = "fitted" if row in result.fitted else "held out"
        print(f"  {kind:8} {row['source']}: " + ", ".join(f"{k} {v:+.1%}" for k, v in row["relative_error"].items()))
    return 0


def _gate(text: str):
    if text == "no_under_replicated":
        return text
    key, eq, value = text.partition("=")
    try:
        ms = float(value)
    except ValueError:
        ms = -1.0
    if not eq or key not in ("wait.ms", "full_isr_for.ms") or ms < 0:
        raise InputError("--gate", None, f"expected no_under_replicated, wait.ms=N or full_isr_for.ms=N, got {text!r}")
    return {key: ms}


def _cmd_report(args) -> int:
    import json

    import yaml

    from ..command import load_named
    from ..folders import staged, writable_folder
    from .answers import Plan, answers
    from .report import render

    scenario = load_named(args.scenario)
    try:
        if args.seeds < 1:
            raise InputError("--seeds", None, f"expected an integer >= 1, got {args.seeds}")
        if not args.duration_ms > 0:
            raise InputError("--duration-ms", None, f"expected a number of ms > 0, got {args.duration_ms}")
        failures = {}
        if args.failures:
            from .importer import read

            text, source = read(args.failures, "--failures")
            failures = yaml.safe_load(text) or {}
            failures = failures.get("failures", failures) if isinstance(failures, dict) else failures
        plan = Plan(seeds=tuple(range(1, args.seeds + 1)), duration_ms=args.duration_ms, gate=_gate(args.gate),
                    downtime_ms=args.downtime_ms, failures=failures, windows=args.windows,
                    durability=not args.no_durability)
    except InputError as exc:
        raise _usage(exc) from None
    if args.profile:
        scenario = scenario.with_overrides({"hardware.broker.profile": args.profile})
    writable_folder(args.out, "--out")
    inputs = {"scenario": args.scenario, "hardware profile": args.profile or scenario["hardware"]["broker"]["profile"],
              "failure rates": args.failures or "docs/durability.md's defaults", "seeds": args.seeds,
              "rolling restart gate": args.gate}
    try:
        a = answers(scenario, plan, inputs=inputs, progress=True)
    except ValueError as exc:  # failure rates the estimator refuses
        raise _usage(exc) from None
    with staged(Path(args.out)) as tmp:
        (tmp / "answers.json").write_text(json.dumps(a, indent=1, default=str) + "\n", encoding="utf-8")
        (tmp / "report.html").write_text(render(a), encoding="utf-8")
    print(f"{args.out}/report.html, {args.out}/answers.json")
    return 0
