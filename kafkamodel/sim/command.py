"""The model's verbs: ``run`` (simulate one scenario, print its summary or write its run folder), ``validate``
(check a scenario without running it), ``keys`` (every scenario key with its default, as a Kafka version resolves
it), ``hardware`` (the machine profiles, each part with its source) and ``measures`` (every summary key and event
kind a run reports): their parsers and handlers."""

from __future__ import annotations

import json
import sys

from ..command import UsageError, load_named
from ..folders import check_replaceable, writable_folder


def add_run(verbs) -> None:
    run = verbs.add_parser("run", help="simulate one scenario; print its summary")
    run.add_argument("scenario", help="a shipped scenario's name (data/scenarios/) or a scenario YAML file")
    run.add_argument("--out", help="write the run folder here (Parquet tables, summary.json); a new or empty folder, "
                                   "or a run folder kafkamodel wrote (replaced)")
    run.add_argument("--json", action="store_true", help="print every summary key as JSON instead of the table")
    run.set_defaults(func=cmd_run)


def add_measures(verbs) -> None:
    measures = verbs.add_parser("measures", help="list every summary key (with its unit) and event kind a run reports")
    measures.set_defaults(func=cmd_measures)


def _writable_out(out: str) -> None:
    """--out: a folder that can be created where it is (a probe), and, if it exists, one the kit wrote (a run
    folder) or an empty one: checked before the run."""
    from .results.result import TABLES

    path = writable_folder(out, "--out")
    check_replaceable(path, "--out", [f"{t}.parquet" for t in TABLES] + ["summary.json", "scenario.yaml"])


# `run`'s table: (summary key, label); the unit is the measure's own (measures.SUMMARY)
RUN_TABLE = (
    ("records_sent", "records sent"), ("records_acked", "records acknowledged"),
    ("records_failed", "records failed"), ("records_pending", "records unanswered at the end"),
    ("acked_records_lost", "acknowledged records lost"), ("committed_records_lost", "committed records lost"),
    ("records_duplicated", "records duplicated in the log"),
    ("not_enough_replicas_errors", "NOT_ENOUGH_REPLICAS refusals"),
    ("records_acked_per_s", "acknowledged per second"), ("acked_mib_per_s", "acknowledged payload per second"),
    ("produce_latency_ms_p50", "produce latency p50"), ("produce_latency_ms_p99", "produce latency p99"),
    ("produce_latency_ms_p999", "produce latency p99.9"),
    ("e2e_latency_ms_p50", "end-to-end latency p50"), ("e2e_latency_ms_p99", "end-to-end latency p99"),
    ("e2e_latency_ms_p999", "end-to-end latency p99.9"),
    ("broker_cpu_utilization_max", "busiest broker's CPU"), ("disk_write_utilization_max", "busiest disk writing back"),
    ("writeback_stall_ms", "writers held by dirty-page limits"), ("gc_pause_ms_per_s", "GC pauses per broker"),
    ("producer_buffer_wait_ms", "send() blocked on buffer.memory"),
    ("unavailable_ms", "unavailable (summed over partitions)"), ("unavailable_wall_ms", "unavailable (wall clock)"),
    ("leader_elections", "leader elections"), ("unclean_leader_elections", "unclean leader elections"),
    ("isr_shrinks", "ISR shrinks"), ("isr_expands", "ISR expansions"),
    ("truncated_offsets", "offsets truncated"), ("replica_divergence", "committed offsets diverging"),
)
CONSUMER_TABLE = (("consumed_lost", "records consumers skipped"), ("consumed_duplicates", "records consumed twice"))


def number(x) -> str:
    """A number as a person reads it: integers whole (with thousands separators), others to 3 significant digits
    (without an exponent: 6619.6 -> 6,620)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return str(x)
    if isinstance(x, float) and not x.is_integer():
        x = float(f"{x:.3g}")
        if not x.is_integer():
            return f"{x:.3g}"
    return f"{round(x):,}"


def run_table(summary: dict, consumers: bool) -> list[str]:
    """`run`'s summary as lines: the scenario, then one row per headline measure with its unit."""
    from .results.measures import SUMMARY

    units = {m.name: m.unit for m in SUMMARY}
    rows = list(RUN_TABLE) + (list(CONSUMER_TABLE) if consumers else [])
    rows += [(k, k.replace("_", " ")) for k in summary if k.endswith("_violations") and summary[k]]
    shown = [(label, number(summary[k]), units.get(k, "")) for k, label in rows if k in summary]
    width = max(len(label) for label, _, _ in shown)
    digits = max(len(value) for _, value, _ in shown)
    head = (f"{summary['scenario']}: seed {summary['seed']}, {summary['replication']} replication, "
            f"{number(summary['duration_ms'] / 1000)} s simulated")
    return [head] + [f"  {label:<{width}}  {value:>{digits}} {'' if unit == 'count' else unit}".rstrip()
                     for label, value, unit in shown]


def cmd_run(args) -> int:
    from .simulation import simulate

    scenario = load_named(args.scenario)
    if args.out:
        _writable_out(args.out)
    result = simulate(scenario)
    out = None
    if args.out:
        try:
            out = result.write(args.out)
        except OSError as exc:
            raise UsageError(f"--out: cannot write {args.out} ({exc.strerror or exc})") from None
    if args.json:
        if out is not None:
            print(f"wrote {out}", file=sys.stderr)
        print(json.dumps(result.summary, indent=2))
        return 0
    for line in run_table(result.summary, consumers=len(result.groups) > 0):
        print(line)
    print(f"run folder: {out}/ (Parquet tables, summary.json)" if out is not None else
          "(--out DIR writes the run folder; --json prints every summary key)")
    return 0


def cmd_measures(args) -> int:
    from .results.measures import EVENT_KINDS, GROUP_SUMMARY, SUMMARY

    print("summary keys (result.summary, summary.json):")
    for m in SUMMARY:
        print(f"  {m.name:<40} {m.unit:<13} {m.meaning}")
    print("per consumer group, as GROUP.key:")
    for m in GROUP_SUMMARY:
        print(f"  {m.name:<40} {m.unit:<13} {m.meaning}")
    print("event kinds (result.events.kind):")
    for kind, meaning in EVENT_KINDS.items():
        print(f"  {kind:<40} {meaning}")
    return 0


def add_validate(verbs) -> None:
    validate = verbs.add_parser("validate", help="check a scenario without running it")
    validate.add_argument("scenario")
    validate.set_defaults(func=cmd_validate)


def add_keys(verbs) -> None:
    keys = verbs.add_parser("keys", help="list every scenario key with its default (--version: that Kafka's)")
    keys.add_argument("--version", default=None, help="a Kafka release line (default: the newest modelled)")
    keys.add_argument("--metadata", choices=["zookeeper", "kraft"], default=None,
                      help="ZooKeeper or KRaft (default: the version's)")
    keys.set_defaults(func=cmd_keys)


def add_hardware(verbs) -> None:
    hw = verbs.add_parser("hardware", help="list the machine profiles (hardware.broker/client.profile) with their "
                                            "parts and each part's source")
    hw.add_argument("name", nargs="?", default=None, help="only this profile")
    hw.add_argument("--json", action="store_true", help="print the profiles as JSON")
    hw.add_argument("--markdown", action="store_true", help="print the profiles as docs/calibration.md's tables")
    hw.set_defaults(func=cmd_hardware)


def cmd_validate(args) -> int:
    scenario = load_named(args.scenario)
    print(f"{args.scenario}: ok ({scenario['name']})")
    return 0


def cmd_keys(args) -> int:
    from ..config import versions
    from ..config.schema import LISTS, REQUIRED, SECTIONS, TOP

    version = versions.canonical(args.version or versions.NEWEST)
    if version is None:
        raise UsageError(f"--version: unknown version {args.version!r}; known: {', '.join(versions.VERSIONS)}")
    metadata = args.metadata or versions.default_metadata(version)
    problem = versions.check_metadata(version, metadata, "--metadata")
    if problem:
        raise UsageError(problem[0])
    mode = "KRaft" if metadata == versions.KRAFT else "ZooKeeper"
    print(f"# Kafka {version} ({mode}): defaults as kafka.version {version!r} resolves them (docs/versions.md)")

    def show(prefix, keys, section=None):
        for name, key in keys.items():
            if key.default is REQUIRED:
                default = "required"
            elif name == "kafka.version":
                default = json.dumps(version)
            elif name == "kafka.metadata":
                default = json.dumps(metadata)
            else:
                value = versions.default(section, name, version, metadata, key.default) if section else key.default
                default = json.dumps(value)
                if section and not versions.has(section, name, version, metadata):
                    default = f"(not in {version})"
                elif (section, name) == ("producers", "enable.idempotence") and value is None:
                    default = "derived"
            print(f"{prefix + name:<56} {default:<16} {key.doc}")
            nested = getattr(key.check, "keys", None)
            if nested is not None:  # burst.records, hardware.broker.nic.gbps, ...
                show(f"{prefix}{name}.", nested)

    show("", TOP)
    for section, keys in SECTIONS.items():
        show(f"{section}.", keys, section)
    for section, keys in LISTS.items():
        show(f"{section}[].", keys, section)
    return 0


def cmd_hardware(args) -> int:
    from ..config.hardware import PARTS, PROFILES
    from ..config.schema import profile_name

    if args.name is not None and args.name not in PROFILES:
        raise UsageError(profile_name(args.name, "hardware NAME")[0])
    chosen = [PROFILES[args.name]] if args.name else list(PROFILES.values())
    if args.json:
        print(json.dumps({p.name: {"about": p.about, "parts": {k: {"value": p.parts[k].value, "source": p.parts[k].source}
                                                                for k in PARTS}, "references": p.references()}
                          for p in chosen}, indent=2))
        return 0
    if args.markdown:
        print("\n\n".join(profile_markdown(p) for p in chosen))
        return 0
    for i, p in enumerate(chosen):
        print(("\n" if i else "") + f"{p.name}: {p.about}")
        print(f"  {'part':<21} {'value':<32} source")
        for k in PARTS:
            print(f"  {k:<21} {part_value(p.parts[k].value):<32} {p.parts[k].source}")
        for key, citation in p.references().items():
            print(f"  [{key}] {citation}")
    return 0


def profile_markdown(p) -> str:
    """One profile as docs/calibration.md shows it: a heading, a table of part, value and source, its references."""
    from ..config.hardware import PARTS

    rows = [f"### `{p.name}`", "", p.about[0].upper() + p.about[1:] + ".", "", "| part | value | source |",
            "|---|---|---|"]
    rows += [f"| `{k}` | {part_value(p.parts[k].value)} | {p.parts[k].source} |" for k in PARTS]
    rows += [""] + [f"- [{key}] {citation}" for key, citation in p.references().items()]
    return "\n".join(rows)


def part_value(value) -> str:
    """A machine part as a person reads it: null as unlimited, a distribution in one phrase."""
    if value is None:
        return "unlimited"
    if isinstance(value, dict):
        return value["dist"] + " " + ", ".join(f"{k} {v:g}" for k, v in value.items() if k != "dist")
    return f"{value:g}"
