"""The papermill engine: papermill executes notebooks in a pool of worker processes.

Points are run in batches: one execution of ``01_sweep_batch.ipynb`` runs a
chunk of a study's points (``kafkamodel.kit.point.execute_batch``), each
published as it finishes, and a run folder holds exactly what the Spark engine
writes. Each worker process keeps one kernel for every batch it executes
(papermill runs the notebook on that kernel), so kernel starts scale with the
workers, not with the batches or the points; a batch that fails in any way
(the kernel died, a cell raised or ran past its time) shuts its kernel down,
and the worker's next batch starts a fresh one. A spec that names its own
``point_notebook`` gets one execution of it per point, on a kernel of its own,
whose executed notebook is kept in the run folder. A kernel that never answers
its first request (the machine's problem, not the point's) is started once
more.
"""

from __future__ import annotations

import json
import logging
import math
import shutil
import time
import uuid
from pathlib import Path

from ...paths import NOTEBOOKS, ROOT
from ..dataset import is_uri, local_path
from ..runs import amend_timing, clear_failure, commit_run, error_line, record_failure, staging_dir
from ..spec import DEFAULT_POINT_NOTEBOOK, StudyError
from .pool import as_finished

BATCH_NOTEBOOK = NOTEBOOKS / "01_sweep_batch.ipynb"
MAX_BATCH = 20  # points per batch at most: progress and a dead kernel's loss stay small
BATCH_GRACE_S = 120.0  # beyond the points' own timeouts, for the kernel's start and the batch's imports

# a kernel that does not answer its first request (seen about once in 300 runs on a loaded 2-core machine)
KERNEL_START_FAILURES = ("Kernel didn't respond in", "Kernel died before replying to kernel_info")
KERNEL_RETRIES = 1  # starts of a fresh kernel for such a point before it counts as failed
KERNEL_ARGS = ["--IPKernelApp.log_level=CRITICAL"]  # ERROR hides "running over TCP without encryption" but not "KeyboardInterrupt caught in kernel" at shutdown


_kernel = None  # this worker process's kernel for batches (a jupyter_client AsyncKernelManager), once started
_finalizer = None  # the worker's exit shuts it down (registered once)


def _batch_kernel():
    """The kernel manager this worker runs its batches on: papermill (nbclient) starts its kernel at the first
    batch and, since the manager is not its own, leaves it running for the next."""
    global _kernel, _finalizer
    if _kernel is None:
        import multiprocessing.util
        from jupyter_client.manager import AsyncKernelManager

        _kernel = AsyncKernelManager(kernel_name="python3")
        if _finalizer is None:  # a pool's worker ends through multiprocessing (os._exit: no atexit), which runs it
            _finalizer = multiprocessing.util.Finalize(None, _drop_kernel, exitpriority=10)
    return _kernel


def _drop_kernel() -> None:
    """Shut this worker's batch kernel down (after a failed batch, and when the worker ends)."""
    global _kernel
    km, _kernel = _kernel, None
    if km is not None and km.has_kernel:
        import asyncio

        try:
            asyncio.run(km.shutdown_kernel(now=True))
        except Exception:  # it is gone already: nothing left to stop
            pass


def _execute(notebook, executed: Path, parameters: dict, timeout: float, clean, reuse: bool = False) -> int:
    """papermill.execute_notebook, started once more if the kernel never answers; returns the restarts.
    `reuse`: on this worker's batch kernel (``_batch_kernel``), dropped if the execution fails in any way."""
    import papermill as pm

    logging.getLogger("papermill").setLevel(logging.ERROR)
    restarts = 0
    while True:
        try:
            pm.execute_notebook(
                str(notebook), str(executed), parameters=parameters,
                execution_timeout=timeout, progress_bar=False, log_output=False, kernel_name="python3",
                request_save_on_cell_execute=False, cwd=str(ROOT), extra_arguments=KERNEL_ARGS,
                **({"km": _batch_kernel()} if reuse else {}),
            )
            return restarts
        except BaseException as exc:
            if reuse:  # a kernel that failed a batch (dead, busy past a timeout, or never up) serves no other
                _drop_kernel()
            # the kernel never started: the machine's problem, not the point's
            if (not isinstance(exc, RuntimeError) or restarts >= KERNEL_RETRIES
                    or not str(exc).startswith(KERNEL_START_FAILURES)):
                raise
            restarts += 1
            clean()


def papermill_batch(points: list, study_dir: str, timeout: float, replace: bool) -> list[dict]:
    """Worker: execute the batch notebook for `points`; one outcome row per point.

    A point the batch never finished (the kernel died, or the batch ran past
    its time) is recorded as failed with the batch's error, and the executed
    batch notebook goes to the first such point's failure record.
    """
    target = study_dir  # a folder, or the file: URI of a runs dataset (the notebook publishes there)
    study_dir = local_path(study_dir) if is_uri(study_dir) else Path(study_dir)
    tag = uuid.uuid4().hex[:8]
    executed, outcomes = study_dir / f".batch-{tag}.ipynb", study_dir / f".batch-{tag}.jsonl"

    def clean():
        executed.unlink(missing_ok=True)
        outcomes.unlink(missing_ok=True)

    error, restarts = None, 0
    t0 = time.perf_counter()
    try:
        restarts = _execute(BATCH_NOTEBOOK, executed, {"points": points, "study_dir": str(target), "replace": replace,
                                                       "timeout": timeout, "outcomes": str(outcomes)},
                            timeout * len(points) + BATCH_GRACE_S, clean, reuse=True)
    except Exception as exc:  # the batch stopped: what it finished stands, the rest failed
        error = error_line(exc)
    wall = time.perf_counter() - t0
    try:
        rows = [json.loads(line) for line in outcomes.read_text().splitlines()] if outcomes.is_file() else []
        # papermill's own time (and the worker's first batch: the kernel's start and imports), shared by the batch's
        # points (timing.json keeps each point's own)
        share = (wall - sum(r.get("total_s", 0.0) for r in rows)) / len(points)
        for r in rows:
            if r["ok"]:
                r["total_s"] += share
                r["overhead_s"] += share
        done = {r["run_id"] for r in rows}
        for point in points:
            if point["run_id"] not in done:
                message = error or "the batch ended without running this point"
                record_failure(study_dir, point, message, executed)  # the notebook goes with the first
                rows.append({"run_id": point["run_id"], "ok": False, "error": message})
        for r in rows:
            r["kernel_restarts"] = restarts
        return rows
    finally:
        clean()


def papermill_point(point: dict, study_dir: str, notebook: str, timeout: float, replace: bool) -> dict:
    """Worker: execute a spec's own point notebook for one point and publish its run folder with the
    executed notebook."""
    study_dir = Path(study_dir)
    staging = staging_dir(study_dir, point["run_id"])
    executed = staging.with_name(staging.name + ".ipynb")

    def clean():
        shutil.rmtree(staging, ignore_errors=True)
        executed.unlink(missing_ok=True)

    t0 = time.perf_counter()
    try:
        restarts = _execute(notebook, executed, {"point": point, "out": str(staging), "plots": False,
                                                 "interactive": False}, timeout, clean)
        total = time.perf_counter() - t0
        if not (staging / "summary.json").is_file():
            raise StudyError([f"{notebook}: finished without writing the run folder (does it call execute_point?)"])
        timing = amend_timing(staging, total, engine="papermill", kernel_restarts=restarts)
        executed.rename(staging / "notebook.ipynb")
        commit_run(staging, study_dir / point["run_id"], replace=replace)
        clear_failure(study_dir, point["run_id"])
        return {"run_id": point["run_id"], "ok": True, **timing}
    except Exception as exc:  # recorded, and the sweep carries on
        record_failure(study_dir, point, error_line(exc), executed)
        return {"run_id": point["run_id"], "ok": False, "error": error_line(exc)}
    finally:
        clean()


def batches(jobs: list, workers: int) -> list[tuple]:
    """(study, kind, payload): the jobs of the default point notebook in batches of the same study folder,
    about a third of a worker's share each (at most MAX_BATCH), and every other job alone."""
    groups: dict = {}
    single = []
    for study, point, study_dir, nb in jobs:
        if Path(nb).name == DEFAULT_POINT_NOTEBOOK:
            groups.setdefault((study, study_dir), []).append(point)
        else:
            single.append((study, "point", (point, study_dir, nb)))
    size = max(1, min(MAX_BATCH, math.ceil(len(jobs) / (max(workers, 1) * 3))))
    out = [(study, "batch", (points[i:i + size], study_dir)) for (study, study_dir), points in groups.items()
           for i in range(0, len(points), size)]
    return out + single


def run_papermill(jobs: list, on_result, *, workers: int, timeout: float, replace: bool, progress: bool,
                  already_done: int = 0) -> None:
    """Run `jobs` ((study, point dict, study_dir, notebook)) in `workers` processes; `on_result(study, row)`."""
    from ..progress import progress_bar

    bar = progress_bar(len(jobs), "sweep", disable=not progress)
    bar.set_postfix_str(f"{already_done} already done")
    try:
        jobs_ = [(study, (papermill_batch, (*payload, timeout, replace)) if kind == "batch"
                  else (papermill_point, (*payload, timeout, replace)))
                 for study, kind, payload in batches(jobs, workers)]
        failed = 0
        for study, future in as_finished(_call, jobs_, workers):
            result = future.result()
            for r in result if isinstance(result, list) else [result]:
                on_result(study, r)
                if not r["ok"]:
                    failed += 1
                    bar.set_postfix_str(f"{already_done} already done, {failed} failed")
                bar.update(1)
    finally:
        bar.close()


def _call(fn, args: tuple):
    """In a pool's process: one job, a batch of points or a point."""
    return fn(*args)
