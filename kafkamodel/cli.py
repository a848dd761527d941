"""``kafkamodel VERB`` (or ``python -m kafkamodel VERB``): run, validate, keys, hardware, measures, bench, validation,
and the study kit's study, sweep, aggregate, report, campaign.

The study kit (``kafkamodel.kit``) is imported only by its own verbs, so
``run``, ``validate`` and ``keys`` stay light; a verb whose extra is not
installed says which in one line. Bad input exits with status 2 and one line
on stderr naming the field and the rule; nothing is left half-written, and no
folder the kit did not write is replaced (``kafkamodel.folders``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys

from . import __version__
from .command import UsageError, load_named
from .config.scenario import ScenarioError
from .folders import FolderError, check_replaceable, writable_folder
from .paths import child_environment

ENGINES = "papermill, spark"  # the study kit's sweep engines (kafkamodel.kit.engines checks the name)
# what the study extra's verbs import: papermill runs notebooks (sweep points, reports), Spark aggregates
PAPERMILL = ("papermill", "nbformat", "nbclient", "ipykernel")
REPORTING = ("papermill", "nbconvert", "matplotlib", "ipykernel")
STUDY_EXTRA = {"pyspark", "papermill", "nbconvert", "nbclient", "nbformat", "ipykernel", "ipywidgets", "matplotlib",
               "jupyterlab", "py4j"}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, status 2, like every other input error
        raise UsageError(f"{self.prog}: {message}")


def _writable_out(out: str) -> None:
    """--out: a folder that can be created where it is (a probe), and, if it exists, one the kit wrote (a run
    folder) or an empty one: checked before the run."""
    from .sim.results.result import TABLES

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
    from .sim.results.measures import SUMMARY

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


def _cmd_run(args) -> int:
    from .sim.simulation import simulate

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


def _scale(value: str, flag: str = "--scale") -> float:
    try:
        return float(value)
    except ValueError:
        raise UsageError(f"{flag}: must be a number > 0, got {value!r}") from None


def _default_scale() -> float:
    raw = os.environ.get("SCALE", "").strip()
    return _scale(raw, "SCALE") if raw else 1.0


def _command(argv) -> None:
    """Remember how the reports were made (they say so)."""
    os.environ["KAFKAMODEL_COMMAND"] = " ".join(["python -m kafkamodel", *argv])


def _needs(verb: str, *modules: str) -> None:
    """The study extra's verbs: one line naming the extra when a module they import is not installed."""
    missing = [m for m in dict.fromkeys(modules) if importlib.util.find_spec(m) is None]
    if missing:
        raise UsageError(_extra_hint(verb, missing))


def _extra_hint(verb: str, missing) -> str:
    return (f"{verb} needs the study extra ({', '.join(missing)} not installed): "
            "pip install 'kafkamodel[study]' (Spark also needs Java 17+)")


def _engine_modules(engine: str) -> tuple:
    return ("pyspark",) if engine == "spark" else PAPERMILL


def _cmd_study(args) -> int:
    """All sweeps, Spark aggregation, reports and the index; prints where the reports are."""
    _needs("study", *_engine_modules(args.engine), "pyspark", *REPORTING)
    from .kit.command import run_study

    scale = args.scale if args.scale is not None else _default_scale()
    outcome = run_study(scale=scale, workers=args.workers, timeout=args.timeout, master=args.master,
                        engine=args.engine, runs=args.runs, studies=args.studies, keep=args.keep)
    print(f"reports: {outcome.index.parent}/ (open {outcome.index}) after {outcome.timing()}")
    if outcome.failed_points:
        print(f"error: {outcome.failed_points} failure(s); see the lines above", file=sys.stderr)
        return 1
    return 0


def _cmd_sweep(args) -> int:
    _needs("sweep", *_engine_modules(args.engine))
    from .kit.specfile import load_spec
    from .kit.sweep import run_sweeps

    spec = load_spec(args.spec)
    if spec.is_pending:
        raise UsageError(f"{spec.study}: pending ({spec.pending}); it has no points to run")
    scale = args.scale if args.scale is not None else _default_scale()
    if args.master is not None and args.engine != "spark":
        raise UsageError("--master: only with --engine spark (papermill runs on this machine)")
    (outcome,) = run_sweeps([spec], scale=scale, workers=args.workers, timeout=args.timeout,
                            resume=not args.no_resume, engine=args.engine, master=args.master, runs=args.runs,
                            keep=args.keep)
    for line in outcome.lines():
        print(line)
    if outcome.failed:
        print(f"error: {len(outcome.failed)} of {outcome.total} points failed; re-run to retry them", file=sys.stderr)
        return 1
    return 0


def _cmd_campaign(args) -> int:
    _needs("campaign", *_engine_modules(args.engine), *(() if args.no_report else REPORTING))
    from .campaign.command import run_campaign

    if args.master is not None and args.engine != "spark":
        raise UsageError("--master: only with --engine spark (papermill runs on this machine)")
    outcome = run_campaign(args.spec, schedules=args.schedules, engine=args.engine, master=args.master,
                           workers=args.workers, timeout=args.timeout, runs=args.runs, resume=not args.no_resume,
                           report=not args.no_report)
    for line in outcome.lines():
        print(line)
    if outcome.sweep.failed:
        print(f"error: {len(outcome.sweep.failed)} of {outcome.sweep.total} runs failed; re-run to retry them",
              file=sys.stderr)
        return 1
    if outcome.broken:
        print("error: a safe setting broke a property it promises: "
              + ", ".join(f"{s} in {n} runs" for s, n in outcome.broken.items())
              + "; see the counterexamples above", file=sys.stderr)
        return 1
    return 0


def _cmd_durability(args) -> int:
    from .durability.command import lines, run_durability

    from .durability.estimate import DetailedRunError

    if args.engine in ("papermill", "spark"):
        _needs("durability", *_engine_modules(args.engine))
    try:
        rows, path = run_durability(args.spec, args.out, workers=args.workers, engine=args.engine,
                                    master=args.master)
    except DetailedRunError as exc:  # one line; the detailed runs that finished are kept in DIR/runs
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for line in lines(rows):
        print(line)
    print(f"wrote {path}")
    return 0


def _cmd_aggregate(args) -> int:
    _needs("aggregate", "pyspark")
    from .kit.aggregate import aggregate

    print(aggregate(args.study, master=args.master, runs=args.runs).line())
    return 0


def _cmd_report(args) -> int:
    _needs("report", *REPORTING)
    from .kit.report import report

    outcome = report(args.study, timeout=args.timeout)
    print(outcome.line())
    print(f"index: {outcome.html.parent / 'index.html'}")
    return 0


def _cmd_validation(args) -> int:
    from .validation.command import readme_from, run_validation, summary_lines

    if args.readme:
        if args.out or args.case:
            raise UsageError("--readme: rewrites README.md from --from (a validation.json); no --out or --case")
        print(f"updated {readme_from(args.from_)}")
        return 0
    if args.from_:
        raise UsageError("--from: only with --readme")
    doc, paths = run_validation(args.out, args.case, command=os.environ.get("KAFKAMODEL_COMMAND", ""))
    for line in summary_lines(doc, paths):
        print(line)
    return 0


def _cmd_validate(args) -> int:
    scenario = load_named(args.scenario)
    print(f"{args.scenario}: ok ({scenario['name']})")
    return 0


def _cmd_keys(args) -> int:
    from .config import versions
    from .config.schema import LISTS, REQUIRED, SECTIONS, TOP

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


def _cmd_hardware(args) -> int:
    from .config.hardware import PARTS, PROFILES
    from .config.schema import profile_name

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
    from .config.hardware import PARTS

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


def _cmd_measures(args) -> int:
    from .sim.results.measures import EVENT_KINDS, GROUP_SUMMARY, SUMMARY

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


def _cmd_bench(args) -> int:
    from .bench import run_bench, run_sweep_bench

    if args.sweep:
        return run_sweep_bench(points=args.points)
    return run_bench(records=args.records, repeats=args.repeats, cases=args.case)


def _positive_int(flag: str):
    def parse(value: str) -> int:
        try:
            n = int(value)
        except ValueError:
            n = 0
        if n < 1:
            raise UsageError(f"{flag}: must be an integer >= 1, got {value!r}")
        return n

    return parse


def _seconds(flag: str):
    def parse(value: str) -> float:
        try:
            x = float(value)
        except ValueError:
            x = -1.0
        if not x > 0:
            raise UsageError(f"{flag}: must be a number of seconds > 0, got {value!r}")
        return x

    return parse


def _prog() -> str:
    """As the user typed it: the console script, or python -m."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return "kafkamodel" if name == "kafkamodel" else "python -m kafkamodel"


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=_prog(), description="Kafka replication study kit: a deterministic model of Kafka "
                                               "replication, and the studies, reports and fault campaigns run on it",
                     epilog="docs/install.md: installing, where outputs go ($KAFKAMODEL_HOME or the current folder)")
    parser.add_argument("--version", action="version", version=f"kafkamodel {__version__}")
    verbs = parser.add_subparsers(dest="verb", required=True, parser_class=_Parser, metavar="VERB")

    run = verbs.add_parser("run", help="simulate one scenario; print its summary")
    run.add_argument("scenario", help="a shipped scenario's name (data/scenarios/) or a scenario YAML file")
    run.add_argument("--out", help="write the run folder here (Parquet tables, summary.json); a new or empty folder, "
                                   "or a run folder kafkamodel wrote (replaced)")
    run.add_argument("--json", action="store_true", help="print every summary key as JSON instead of the table")
    run.set_defaults(func=_cmd_run)

    validate = verbs.add_parser("validate", help="check a scenario without running it")
    validate.add_argument("scenario")
    validate.set_defaults(func=_cmd_validate)

    def sweep_options(p: argparse.ArgumentParser, scale: bool = True) -> None:
        p.add_argument("--engine", default="papermill",
                       help=f"{ENGINES}: papermill runs a notebook per batch of points, on one kernel per worker "
                            "process; spark a Spark task per batch of points")
        p.add_argument("--master", help="Spark master URL for the Spark work (default: local[*])")
        p.add_argument("--workers", type=_positive_int("--workers"), help="papermill worker processes (default: cores)")
        p.add_argument("--timeout", type=_seconds("--timeout"), default=600.0,
                       help="execution timeout per notebook cell, or per point on Spark (s)")
        if scale:
            p.add_argument("--scale", type=_scale, help="multiply the seeds per configuration (default: $SCALE or 1)")

    def keep_option(p: argparse.ArgumentParser) -> None:
        from .kit.sweep import KEEP

        p.add_argument("--keep", choices=KEEP, default="needed",
                       help="needed: the per-record table (records.parquet) only in runs of parts whose analysis "
                            "pools record latency; all: in every new run (default: needed)")

    study = verbs.add_parser("study", help="every study: sweeps, Spark aggregation, HTML reports, index")
    study.add_argument("studies", nargs="*", metavar="STUDY", help="only these shipped studies (default: all)")
    sweep_options(study)
    study.add_argument("--runs", help="where run folders go (default: data/runs), or with --engine spark a URI "
                                      "Spark writes the runs to as Parquet datasets (file:///..., hdfs://..., s3a://...)")
    keep_option(study)
    study.set_defaults(func=_cmd_study)

    sweep = verbs.add_parser("sweep", help="run a study's grid x seeds with papermill or Spark (finished runs are skipped)")
    sweep.add_argument("spec", help="a study name (data/studies/NAME.yaml) or a sweep spec file")
    sweep_options(sweep)
    sweep.add_argument("--runs", help="where run folders go (default: data/runs); with --engine spark, or a URI "
                                      "Spark writes to (file:///..., hdfs://..., s3a://...): the runs as Parquet "
                                      "datasets there")
    sweep.add_argument("--no-resume", action="store_true", help="run every point again, replacing finished runs")
    keep_option(sweep)
    sweep.set_defaults(func=_cmd_sweep)

    campaign = verbs.add_parser("campaign", help="random fault schedules against settings, checked for what each "
                                                 "promises; counterexamples shrunk to scenario files; a report")
    campaign.add_argument("spec", help="a campaign name (data/campaigns/NAME.yaml) or a campaign spec file")
    sweep_options(campaign, scale=False)
    campaign.add_argument("--schedules", type=_positive_int("--schedules"),
                          help="schedules per setting (default: the spec's `schedules`)")
    campaign.add_argument("--runs", help="where run folders go (default: data/runs; they go in campaigns/NAME/); "
                                         "with --engine spark, or a URI Spark writes to (file:///..., hdfs://..., "
                                         "s3a://...)")
    campaign.add_argument("--no-resume", action="store_true", help="run every schedule again, replacing finished runs")
    campaign.add_argument("--no-report", action="store_true", help="skip the HTML report")
    campaign.set_defaults(func=_cmd_campaign)

    durability = verbs.add_parser("durability", help="failure rates -> acknowledged records lost per year and the "
                                                     "yearly loss probability per partition, per configuration")
    durability.add_argument("spec", help="a durability spec name (data/durability/NAME.yaml) or a spec file")
    durability.add_argument("--out", required=True, help="folder for durability.json (and durability-details.json)")
    durability.add_argument("--workers", type=_positive_int("--workers"),
                            help="processes (local) or notebook kernels (papermill) running the detailed runs "
                                 "(default: cores; the answers do not depend on it)")
    durability.add_argument("--engine", default="local",
                            help="local: in this process or a process pool; papermill or spark: the detailed runs "
                                 "as the campaign's sweep points (run folders in OUT/runs/sweep/); the same answers")
    durability.add_argument("--master", help="with --engine spark: the Spark master URL (default: local[*])")
    durability.set_defaults(func=_cmd_durability)

    agg = verbs.add_parser("aggregate", help="per-configuration statistics over seeds, on Spark -> data/processed/STUDY/")
    agg.add_argument("study", help="a study name or spec file")
    agg.add_argument("--master", help="Spark master URL (default: local[*])")
    agg.add_argument("--runs", help="where the run folders are (default: data/runs), or the URI a Spark sweep "
                                    "wrote the runs to")
    agg.set_defaults(func=_cmd_aggregate)

    rep = verbs.add_parser("report", help="execute the study's notebook on its aggregates -> reports/STUDY.html")
    rep.add_argument("study", help="a study name or spec file")
    rep.add_argument("--timeout", type=_seconds("--timeout"), default=600.0, help="execution timeout per notebook cell (s)")
    rep.set_defaults(func=_cmd_report)

    val = verbs.add_parser("validation", help="the validation set: published measurements of real Kafka vs the "
                                               "model -> validation.json and validation.html (docs/validation.md)")
    val.add_argument("--out", help="folder for validation.json and validation.html (default: reports/)")
    val.add_argument("--case", action="append", help="only this case of data/validation/ (repeatable)")
    val.add_argument("--readme", action="store_true", help="instead: rewrite README.md's validation table from --from")
    val.add_argument("--from", dest="from_", help="with --readme: the validation.json (default: reports/validation.json)")
    val.set_defaults(func=_cmd_validation)

    keys = verbs.add_parser("keys", help="list every scenario key with its default (--version: that Kafka's)")
    keys.add_argument("--version", default=None, help="a Kafka release line (default: the newest modelled)")
    keys.add_argument("--metadata", choices=["zookeeper", "kraft"], default=None,
                      help="ZooKeeper or KRaft (default: the version's)")
    keys.set_defaults(func=_cmd_keys)

    hw = verbs.add_parser("hardware", help="list the machine profiles (hardware.broker/client.profile) with their "
                                            "parts and each part's source")
    hw.add_argument("name", nargs="?", default=None, help="only this profile")
    hw.add_argument("--json", action="store_true", help="print the profiles as JSON")
    hw.add_argument("--markdown", action="store_true", help="print the profiles as docs/calibration.md's tables")
    hw.set_defaults(func=_cmd_hardware)

    from .cluster.command import add_parser as add_cluster

    add_cluster(verbs)

    measures = verbs.add_parser("measures", help="list every summary key (with its unit) and event kind a run reports")
    measures.set_defaults(func=_cmd_measures)

    bench = verbs.add_parser("bench", help="simulated records per CPU-second and bytes per record (--sweep: engines)")
    bench.add_argument("--records", type=_positive_int("--records"), default=600_000, help="records in the steady-state run")
    bench.add_argument("--repeats", type=_positive_int("--repeats"), default=5, help="timed repeats (the median is reported)")
    bench.add_argument("--case", action="append",
                       choices=("steady-state", "one-partition", "many-partitions", "100k-partitions", "production",
                                "production-60s"),
                       help="only this case (repeatable; default: the first four; production and production-60s, "
                            "minutes each, run only when named)")
    bench.add_argument("--sweep", action="store_true",
                       help="instead: points/s and per-point overhead of papermill and Spark local[1], local[2]")
    bench.add_argument("--points", type=_positive_int("--points"), default=24, help="points per engine with --sweep")
    bench.set_defaults(func=_cmd_bench)
    return parser


def verbs_text(parser: argparse.ArgumentParser) -> list[str]:
    """The usage line and one line per verb (what a bare invocation prints)."""
    actions = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    width = max(len(c.dest) for c in actions._choices_actions)
    return ([f"usage: {parser.prog} VERB [options]   ({parser.prog} VERB --help for a verb's options; --version)",
             "verbs:"] + [f"  {c.dest:<{width}}  {c.help}" for c in actions._choices_actions])


def main(argv: list[str] | None = None) -> int:
    verb = None
    try:
        argv = sys.argv[1:] if argv is None else list(argv)
        parser = build_parser()
        if not argv:  # what can I type here?
            print("\n".join(verbs_text(parser)), file=sys.stderr)
            return 2
        args = parser.parse_args(argv)
        verb = args.verb
        _command(argv)
        child_environment()
        return args.func(args)
    except (ScenarioError, UsageError, FolderError) as exc:
        print("error: " + " ".join(line.strip() for line in str(exc).splitlines()), file=sys.stderr)  # one line
        return 2
    except ModuleNotFoundError as exc:  # an extra's module imported further in than _needs looked
        if verb is None or (exc.name or "").split(".")[0] not in STUDY_EXTRA:
            raise
        print(f"error: {_extra_hint(verb, [exc.name])}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (| head): not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print("interrupted: finished runs are kept; the same command resumes", file=sys.stderr)
        return 130
