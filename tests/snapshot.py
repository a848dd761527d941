"""The model's regression snapshot: every shipped scenario and every study point, summarised.

For each case the snapshot keeps the summary (exact values) and a digest of
each result table (its columns, dtypes and every value). ``test_snapshot``
asserts that the model still gives exactly these; a change that moves
numbers on purpose regenerates them, in its own commit, with this command:

    .venv/bin/python tests/snapshot.py --update            # shipped scenarios (the fast test)
    .venv/bin/python tests/snapshot.py --update --studies  # every study point at scale 1 (the slow test)
    .venv/bin/python tests/snapshot.py [--studies]         # compare only: which numbers moved
    .venv/bin/python tests/snapshot.py --studies --only operations/roll_large --update   # one part's points

The comparison names each case whose numbers moved, and each summary key
(old -> new) and table that differs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SCENARIOS_FILE = HERE / "snapshots" / "scenarios.json"
STUDIES_FILE = HERE / "snapshots" / "studies.json"
EXTRA_SEEDS = (101, 202)  # besides the seed each scenario ships with


def table_digest(df: pd.DataFrame) -> str:
    """sha256 over the column names, dtypes and every value (independent of how Parquet serialises them)."""
    h = hashlib.sha256()
    for name, dtype in df.dtypes.items():
        h.update(f"{name}:{dtype};".encode())
    for name in df.columns:
        col = df[name]
        if isinstance(col.dtype, pd.CategoricalDtype):
            h.update(repr(list(col.cat.categories)).encode())
    h.update(pd.util.hash_pandas_object(df, index=False).to_numpy().tobytes() if len(df.columns) else b"")
    h.update(str(len(df)).encode())
    return h.hexdigest()[:24]


def capture(result) -> dict:
    return {"summary": json.loads(json.dumps(result.summary, sort_keys=True)),
            "tables": {name: table_digest(t) for name, t in result.tables().items()}}


def scenario_cases():
    """(case id, Scenario): each shipped scenario at its own seed and at EXTRA_SEEDS."""
    sys.path.insert(0, str(ROOT))
    from kafkamodel import load_scenario

    for path in sorted((ROOT / "data" / "scenarios").glob("*.yaml")):
        base = load_scenario(path)
        yield f"{path.stem}@{base['seed']}", base
        for seed in EXTRA_SEEDS:
            yield f"{path.stem}@{seed}", base.with_overrides({"seed": seed})


def study_cases():
    """(case id, Scenario): every point of every study at scale 1."""
    sys.path.insert(0, str(ROOT))
    from kafkamodel.kit.point import scenario_for
    from kafkamodel.kit.specfile import all_specs

    for spec in all_specs():
        if spec.is_pending:
            continue
        for point in spec.points(1):
            yield f"{spec.study}/{point.run_id}", scenario_for(point)


def _capture_given(given: dict) -> dict:
    """One case in a worker process: the scenario rebuilt from what its author wrote (a Scenario does not pickle)."""
    from kafkamodel import load_scenario, simulate

    return capture(simulate(load_scenario(given)))


def compute(cases, workers: int | None = None) -> dict:
    """Every case's capture, in `workers` processes (default: one per CPU available; 1: in this process)."""
    from kafkamodel.kit import check_workers, in_order

    cases = list(cases)
    workers = check_workers(workers)  # each case is independent and deterministic: any number gives the same
    if workers <= 1 or len(cases) < 2 * workers:
        from kafkamodel import simulate

        return {case: capture(simulate(scenario)) for case, scenario in cases}

    captured = in_order(_capture_given, [(scenario.given,) for _, scenario in cases], workers)
    return {case: result for (case, _), result in zip(cases, captured)}


def differences(old: dict, new: dict) -> list[str]:
    """One line per case that moved, naming the numbers."""
    lines = []
    for case in sorted(set(old) | set(new)):
        if case not in old:
            lines.append(f"{case}: new case")
            continue
        if case not in new:
            lines.append(f"{case}: case gone")
            continue
        a, b = old[case], new[case]
        moved = []
        for key in sorted(set(a["summary"]) | set(b["summary"])):
            x, y = a["summary"].get(key, "<absent>"), b["summary"].get(key, "<absent>")
            if x != y:
                moved.append(f"{key} {x} -> {y}")
        for name in sorted(set(a["tables"]) | set(b["tables"])):
            if a["tables"].get(name) != b["tables"].get(name):
                moved.append(f"table {name}")
        if moved:
            lines.append(f"{case}: " + "; ".join(moved))
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--update", action="store_true", help="rewrite the snapshot with today's numbers")
    parser.add_argument("--studies", action="store_true", help="every study point instead of the shipped scenarios")
    parser.add_argument("--workers", type=int, default=None,
                        help="processes to run the cases in (default: one per CPU available; 1: this process)")
    parser.add_argument("--only", action="append", default=[], metavar="PREFIX",
                        help="only the cases whose id starts so (a study 'operations/', a part 'operations/roll_large'; "
                             "repeatable); with --update the others keep their recorded numbers")
    args = parser.parse_args(argv)
    path, cases = (STUDIES_FILE, study_cases()) if args.studies else (SCENARIOS_FILE, scenario_cases())
    chosen = lambda case: not args.only or case.startswith(tuple(args.only))
    cases = [(case, scenario) for case, scenario in cases if chosen(case)]
    if not cases:
        print(f"--only: no case id starts with {' or '.join(args.only)}", file=sys.stderr)
        return 2
    from kafkamodel.kit import StudyError

    try:
        new = compute(cases, args.workers)
    except StudyError as exc:  # a bad --workers: one line, exit status 2
        print(exc, file=sys.stderr)
        return 2
    recorded = json.loads(path.read_text()) if path.is_file() else {}
    old = {case: value for case, value in recorded.items() if chosen(case)}
    lines = differences(old, new)
    for line in lines:
        print(line)
    print(f"{len(new)} cases, {len(lines)} moved", file=sys.stderr)
    if args.update:
        path.parent.mkdir(exist_ok=True)
        kept = {case: value for case, value in recorded.items() if not chosen(case)}
        path.write_text(json.dumps({**kept, **new}, indent=1, sort_keys=True) + "\n")
        print(f"wrote {path.relative_to(ROOT)}", file=sys.stderr)
        return 0
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
