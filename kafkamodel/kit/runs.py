"""Run folders: staging, publishing, the per-study lock, failure records, timing. Every engine uses these.

A point is written into a hidden staging folder beside its final place
(``staging_dir``) and published with one rename (``commit_run``), so a run
folder is complete or absent. A failed point is recorded under
``<study>/_failed/`` (its error, and the executed notebook when there is one)
and cleared when it succeeds. ``timing.json`` is the only engine-specific
file of a run.
"""

from __future__ import annotations

import json
import re
import shutil
import uuid
from contextlib import contextmanager
from pathlib import Path

from ..folders import swap_in
from .spec import StudyError

TIMING = "timing.json"  # engine-specific; everything else in a run folder is engine-independent
FAILED = "_failed"  # failed points: <run_id>.json (error, point) and <run_id>.ipynb
# the only hidden names a sweep removes: what staging_dir names (.RUN.HEX8, and the executed notebook beside it),
# folders.hidden_sibling (.NAME.TAG-HEX8) and an engine's working files (.TAG-HEX8.ipynb / .jsonl)
STAGING_NAME = re.compile(r"^\.(?:.+\.(?:[a-z]+-)?|[a-z]+-)[0-9a-f]{8}(?:\.ipynb|\.jsonl)?$")


def staging_dir(study_dir: Path, run_id: str) -> Path:
    """A hidden sibling of the final folder (Spark and the sweep ignore names starting with '.')."""
    return study_dir / f".{run_id}.{uuid.uuid4().hex[:8]}"


def is_finished(study_dir: Path, run_id: str) -> bool:
    return (study_dir / run_id / "summary.json").is_file()


def commit_run(staging: Path, final: Path, replace: bool = False) -> bool:
    """Publish a complete staging folder as `final` with one rename.

    If `final` already exists (another process finished the same point, or
    a killed sweep's worker did), the staging copy is dropped unless
    `replace`: a point is deterministic, so either copy is the run. Returns
    True if this call published it.
    """
    return swap_in(staging, final, replace=replace)


def amend_timing(out: Path, total_s: float, **fields) -> dict:
    """Complete a run folder's timing.json (model_s, write_s from execute_point) with the engine's view:
    `total_s` it spent on the point, `overhead_s` of it outside the model and writing, and `fields`."""
    path = Path(out) / TIMING
    timing = json.loads(path.read_text()) if path.is_file() else {}
    timing.setdefault("model_s", 0.0)
    timing.setdefault("write_s", 0.0)
    timing.update(fields, total_s=total_s, overhead_s=total_s - timing["model_s"] - timing["write_s"])
    path.write_text(json.dumps(timing) + "\n")
    return timing


def record_failure(study_dir: Path, point: dict, error: str, notebook: Path | None) -> None:
    folder = study_dir / FAILED
    folder.mkdir(exist_ok=True)
    tmp = folder / f".{point['run_id']}.json"
    tmp.write_text(json.dumps({"run_id": point["run_id"], "error": error, "point": point}, indent=2, default=str) + "\n")
    tmp.rename(folder / f"{point['run_id']}.json")
    if notebook is not None and notebook.exists():
        notebook.rename(folder / f"{point['run_id']}.ipynb")


def clear_failure(study_dir: Path, run_id: str) -> None:
    for suffix in (".json", ".ipynb"):
        (study_dir / FAILED / f"{run_id}{suffix}").unlink(missing_ok=True)


def error_line(exc: BaseException) -> str:
    ename, evalue = getattr(exc, "ename", None), getattr(exc, "evalue", None)
    text = f"{ename}: {evalue}" if ename else f"{type(exc).__name__}: {exc}"
    return " ".join(text.split())[:500]


@contextmanager
def study_lock(study_dir: Path):
    """One sweep of a study at a time (an advisory lock on <study>/.lock)."""
    import fcntl  # POSIX: only sweeps need it

    study_dir.mkdir(parents=True, exist_ok=True)
    handle = open(study_dir / ".lock", "w")
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise StudyError([f"sweep: another sweep of {study_dir.name} is running ({study_dir / '.lock'})"]) from None
        yield
    finally:
        handle.close()


def clean_staging(study_dir: Path) -> None:
    """Leftovers of a killed sweep: hidden staging folders and notebooks, by the names the kit gives them (never
    the lock, nor any other file)."""
    from .dataset import TABLES

    # and in a runs dataset's table folders (papermill into a file: URI) the partitions being published
    for folder in [study_dir, *(study_dir / t for t in TABLES if (study_dir / t).is_dir())]:
        for entry in folder.iterdir():
            if STAGING_NAME.match(entry.name):
                if entry.is_dir():
                    shutil.rmtree(entry, ignore_errors=True)
                else:
                    entry.unlink(missing_ok=True)
