"""One point of a sweep: the pure unit of work every engine runs.

``run_point(point) -> Result`` builds the scenario (base + overrides + seed)
and simulates it; ``write_point`` writes the run folder (Parquet tables,
summary.json, scenario.yaml, point.json), every row carrying the run id, the
seed and the swept parameters; the per-record table only if the point asks
for it (``Point.records``). An engine (papermill, or Spark tasks) calls
``execute_point`` into a staging folder, adds its own files (the executed
notebook, timing.json) and publishes it with ``runs.commit_run``:
one rename, so a run folder is either complete or absent.
"""

from __future__ import annotations

import gc
import json
import shutil
import signal
import threading
import time
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Mapping

from ..config.scenario import Scenario, load_scenario
from .dataset import is_uri, local_path, write_local
from .runs import TIMING, amend_timing, clear_failure, commit_run, error_line, record_failure, staging_dir
from .spec import Point, StudyError

SUMMARY_TABLE = "summary.parquet"  # summary.json as a typed one-row table (what Spark reads)


def as_point(point: "Point | Mapping") -> Point:
    if isinstance(point, Point):
        return point
    if not isinstance(point, Mapping):
        raise StudyError([f"point: must be a sweep point (a mapping), got {type(point).__name__}"])
    return Point.from_dict(point)


def scenario_for(point: "Point | Mapping", base_text: str | None = None) -> Scenario:
    """The point's scenario: its base with its overrides and seed.

    `base_text` is the base scenario's YAML, for an engine whose workers
    cannot read the driver's files; else it is read from ``base_path``.
    """
    point = as_point(point)
    if base_text is not None:
        base = _base_scenario(base_text, None)
    else:
        path = Path(point.base_path)
        try:  # the file's text is the key: an edited base is read again
            text = path.read_text(encoding="utf-8")
        except TimeoutError:  # the point's deadline (an OSError too)
            raise
        except (OSError, UnicodeDecodeError):
            text = None
        base = load_scenario(path) if text is None else _base_scenario(text, str(path))  # unreadable: its own error
    return base.with_overrides({**point.overrides, "seed": point.seed})


@lru_cache(maxsize=16)
def _base_scenario(text: str, path: str | None) -> Scenario:
    """A base scenario parsed and checked once per process however many points run on it (a Scenario is
    immutable; a point's overrides make a new one): ~1.3 ms a point, docs/performance.md. `path` names it
    in errors."""
    return load_scenario(Path(path) if path is not None else text)


def run_point(point: "Point | Mapping", base_text: str | None = None):
    """Simulate one point; no I/O besides reading its base scenario (unless given as text)."""
    from ..sim.simulation import simulate

    return simulate(scenario_for(point, base_text))


def row_columns(point: "Point | Mapping") -> dict:
    """What every row of the point's tables (and its summary) carries."""
    point = as_point(point)
    return {"study": point.study, "part": point.part, "run_id": point.run_id, "config_id": point.config_id,
            "seed": point.seed, **point.columns}


def _kept_tables(result, point: Point) -> tuple:
    """The tables a point keeps (records only if it asks for them); a param that clashes with a table's column
    or a summary key is refused."""
    for name, table in result.tables().items():
        clash = [c for c in point.columns if c in table.columns]
        if clash:
            raise StudyError([f"params.{clash[0]}: the {name} table already has a column {clash[0]!r}; rename the param"])
    clash = [c for c in point.columns if c in result.summary and result.summary[c] != point.columns[c]]
    if clash:
        raise StudyError([f"params.{clash[0]}: the summary already has a key {clash[0]!r}; rename the param"])
    return tuple(name for name in result.tables() if name != "records" or point.records)


def point_json(point: Point) -> str:
    return json.dumps(point.to_dict(), indent=2, default=str) + "\n"


def write_point(result, point: "Point | Mapping", out: "str | Path") -> Path:
    """Write the run folder for `result` at `out` (atomically), with the point beside it."""
    point = as_point(point)
    columns = row_columns(point)
    out = result.write(out, columns=columns, tables=_kept_tables(result, point))
    (out / "point.json").write_text(point_json(point))
    write_summary_table(result.summary, columns, out / SUMMARY_TABLE)
    return out


def point_tables(result, point: "Point | Mapping") -> dict:
    """The run as Arrow tables, the rows a runs dataset holds (``kafkamodel.kit.dataset``): ``summary`` (what
    summary.parquet holds), ``files`` (one row: summary.json's, scenario.yaml's and point.json's text) and each
    kept table with rows (what its Parquet file in a run folder holds)."""
    import pyarrow as pa

    from ..sim.results.result import arrow_table

    point = as_point(point)
    kept = _kept_tables(result, point)
    columns = row_columns(point)
    extra = result.row_columns(columns)
    out = {"summary": summary_arrow(result.summary, columns),
           "files": pa.table({"run_id": [point.run_id], "summary_json": [result.summary_json(extra)],
                              "scenario_yaml": [result.scenario_yaml()], "point_json": [point_json(point)]})}
    for name, table in result.tables().items():
        if name in kept and len(table):
            out[name] = arrow_table(table, extra)
    return out


def write_summary_table(summary: Mapping, columns: Mapping, path: Path) -> None:
    """The summary as a one-row Parquet table with fixed types, so Spark reads a study's runs without inferring."""
    import pyarrow.parquet as pq

    pq.write_table(summary_arrow(summary, columns), path)


def summary_arrow(summary: Mapping, columns: Mapping):
    """The summary as a one-row Arrow table with fixed types.

    Numbers are float64 (a count and a latency that may be null read alike
    across runs); run identity and swept columns keep their own types.
    """
    import pyarrow as pa

    arrays, names = [], []
    for key, value in {**summary, **columns}.items():
        if key in columns:
            kind = pa.string() if isinstance(value, str) else pa.bool_() if isinstance(value, bool) else (
                pa.int64() if isinstance(value, int) else pa.float64())
        elif isinstance(value, bool):
            kind = pa.bool_()
        elif isinstance(value, (int, float)) or value is None:
            kind, value = pa.float64(), (None if value is None else float(value))
        else:
            kind, value = pa.string(), value if isinstance(value, str) else json.dumps(value, default=str)
        arrays.append(pa.array([value], type=kind))
        names.append(key)
    return pa.Table.from_arrays(arrays, names=names)


def execute_point(point: "Point | Mapping", out: "str | Path", base_text: str | None = None):
    """run_point + write_point, timed into timing.json; returns the Result."""
    t0 = time.perf_counter()
    result = run_point(point, base_text)
    t1 = time.perf_counter()
    out = write_point(result, point, out)
    t2 = time.perf_counter()
    (out / TIMING).write_text(json.dumps({"model_s": t1 - t0, "write_s": t2 - t1}) + "\n")
    return result


@contextmanager
def deadline(seconds: float | None):
    """Raise TimeoutError in this block after `seconds` (a POSIX interval timer; papermill kernels and Spark's
    Python workers run points on their main thread); no limit if None or off the main thread."""
    if not seconds or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum, frame):
        raise TimeoutError(f"the point ran longer than the {seconds:g} s timeout")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def publish_point(point: dict, study_dir: "str | Path", *, replace: bool = False, timeout: float | None = None,
                  base_text: str | None = None, **timing) -> dict:
    """Run one point into a staging folder beside its run folder and publish it with one rename, or record its
    failure (an error, or past `timeout` seconds) under ``_failed/``; the outcome row. What every engine's
    worker does per point; `timing`: the engine's fields for timing.json."""
    if is_uri(str(study_dir)):
        return _publish_local_dataset(point, local_path(str(study_dir)), timeout=timeout, base_text=base_text,
                                      **timing)
    study_dir = Path(study_dir)
    staging = staging_dir(study_dir, point["run_id"])
    t0 = time.perf_counter()
    try:
        with deadline(timeout):
            execute_point(point, staging, base_text)
        done = amend_timing(staging, time.perf_counter() - t0, **timing)
        commit_run(staging, study_dir / point["run_id"], replace=replace)
        clear_failure(study_dir, point["run_id"])
        return {"run_id": point["run_id"], "ok": True, "error": None, **done}
    except Exception as exc:  # recorded, and the other points go on
        record_failure(study_dir, point, error_line(exc), None)
        return {"run_id": point["run_id"], "ok": False, "error": error_line(exc), "model_s": None, "write_s": None}
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _publish_local_dataset(point: dict, study_dir: Path, *, timeout: float | None, base_text: str | None,
                           **timing) -> dict:
    """publish_point into the runs dataset in a local folder (a ``file:`` URI given as ``--runs``)."""
    t0 = time.perf_counter()
    try:
        with deadline(timeout):
            result = run_point(point, base_text)
            t1 = time.perf_counter()
            write_local(study_dir, point["run_id"], point_tables(result, point))
        t2 = time.perf_counter()
        clear_failure(study_dir, point["run_id"])
        return {"run_id": point["run_id"], "ok": True, "error": None, "model_s": t1 - t0, "write_s": t2 - t1,
                "total_s": t2 - t0, "overhead_s": 0.0, **timing}
    except Exception as exc:  # recorded, and the other points go on
        record_failure(study_dir, point, error_line(exc), None)
        return {"run_id": point["run_id"], "ok": False, "error": error_line(exc), "model_s": None, "write_s": None}


def execute_batch(points: list, study_dir: "str | Path", *, replace: bool = False, timeout: float | None = None,
                  outcomes: "str | Path | None" = None) -> list[dict]:
    """Run `points` one after another in this process, publishing each run folder as it finishes.

    The unit a papermill kernel runs: one kernel start serves a whole batch,
    and a batch killed half-way leaves every finished point published (the
    next sweep skips them). A point that fails or runs past `timeout` seconds
    is recorded under ``_failed/`` and the batch goes on. Between points the
    run's objects are freed and what survives is frozen (``gc.freeze``), so a
    point does not pay for collecting its predecessors' leftovers. Each
    point's outcome row is appended to `outcomes` (JSON lines) as it ends, so
    the engine learns them even if the kernel dies later; the rows are also
    returned.
    """
    rows = []
    for point in points:
        row = publish_point(point, study_dir, replace=replace, timeout=timeout, engine="papermill", batch=len(points))
        rows.append(row)
        if outcomes is not None:
            with open(outcomes, "a") as f:
                f.write(json.dumps(row) + "\n")
        gc.collect()
        gc.freeze()
    return rows
