"""``python -m kafkamodel VERB``: run, keys, bench (and the study verbs).

Bad input exits with status 2 and one line on stderr naming the field and
the rule; nothing is left half-written.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .scenario import ScenarioError, load_scenario


class UsageError(Exception):
    """A bad command line: reported in one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, status 2, like every other input error
        raise UsageError(f"{self.prog}: {message}")


def _cmd_run(args) -> int:
    from .simulation import simulate

    scenario = load_scenario(Path(args.scenario))
    result = simulate(scenario)
    if args.out:
        out = result.write(args.out)
        print(f"wrote {out}", file=sys.stderr)
    print(json.dumps(result.summary, indent=2))
    return 0


def _cmd_study(args) -> int:
    """Run every shipped scenario, write its run folder, print a comparison table."""
    from tqdm import tqdm

    from .paths import RUNS, SCENARIOS
    from .simulation import simulate

    files = sorted(SCENARIOS.glob("*.yaml"))
    if not files:
        raise UsageError(f"no scenarios in {SCENARIOS}")
    scenarios = [load_scenario(f) for f in files]  # validate all before running any
    columns = ["records_sent", "records_acked", "acked_records_lost", "committed_records_lost",
               "not_enough_replicas_errors", "isr_shrinks", "isr_expands", "leader_elections",
               "unclean_leader_elections", "unavailable_ms", "produce_latency_ms_p50", "produce_latency_ms_p99"]
    rows = []
    for f, scenario in tqdm(list(zip(files, scenarios)), desc="scenarios", unit="run", file=sys.stderr):
        result = simulate(scenario)
        result.write(RUNS / "scenarios" / f.stem, columns={"run_id": f.stem})
        rows.append((f.stem, result.summary))
    width = max(len(name) for name, _ in rows)
    print(f"{'scenario':<{width}}  " + "  ".join(c for c in columns))
    for name, s in rows:
        cells = []
        for c in columns:
            v = s[c]
            cells.append(f"{v:>{len(c)}.1f}" if isinstance(v, float) else f"{str(v):>{len(c)}}")
        print(f"{name:<{width}}  " + "  ".join(cells))
    print(f"\nrun folders: {RUNS / 'scenarios'}", file=sys.stderr)
    return 0


def _cmd_validate(args) -> int:
    scenario = load_scenario(Path(args.scenario))
    print(f"{args.scenario}: ok ({scenario['name']})")
    return 0


def _cmd_keys(args) -> int:
    from .schema import LISTS, SECTIONS, TOP, REQUIRED

    def show(prefix, keys):
        for name, key in keys.items():
            default = "required" if key.default is REQUIRED else json.dumps(key.default)
            print(f"{prefix}{name:<52} {default:<16} {key.doc}")

    show("", TOP)
    for section, keys in SECTIONS.items():
        show(f"{section}.", keys)
    for section, keys in LISTS.items():
        show(f"{section}[].", keys)
    return 0


def _cmd_bench(args) -> int:
    from .bench import run_bench

    return run_bench(records=args.records, repeats=args.repeats)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m kafkamodel", description="Kafka replication study kit")
    verbs = parser.add_subparsers(dest="verb", required=True, parser_class=_Parser)

    run = verbs.add_parser("run", help="simulate one scenario; print its summary")
    run.add_argument("scenario", help="scenario YAML file")
    run.add_argument("--out", help="write the run folder here (Parquet tables, summary.json)")
    run.set_defaults(func=_cmd_run)

    validate = verbs.add_parser("validate", help="check a scenario without running it")
    validate.add_argument("scenario")
    validate.set_defaults(func=_cmd_validate)

    study = verbs.add_parser("study", help="run every shipped scenario and print their summaries")
    study.set_defaults(func=_cmd_study)

    keys = verbs.add_parser("keys", help="list every scenario key with its default")
    keys.set_defaults(func=_cmd_keys)

    bench = verbs.add_parser("bench", help="simulated records per CPU-second and bytes per record")
    bench.add_argument("--records", type=int, default=600_000, help="records in the steady-state run")
    bench.add_argument("--repeats", type=int, default=5, help="timed repeats (the median is reported)")
    bench.set_defaults(func=_cmd_bench)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return args.func(args)
    except (ScenarioError, UsageError) as exc:
        print("error: " + " ".join(line.strip() for line in str(exc).splitlines()), file=sys.stderr)  # one line
        return 2
