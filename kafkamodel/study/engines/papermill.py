"""The papermill engine: each point executes the spec's point notebook (``00_explore.ipynb`` by default)
in a pool of worker processes.

The notebook calls ``kafkamodel.study.point.execute_point`` into a hidden
staging folder; the worker adds the executed notebook and timing.json and
publishes the folder with one rename. A kernel that never answers its first
request (the machine's problem, not the point's) is started once more.
"""

from __future__ import annotations

import logging
import multiprocessing
import shutil
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from ...paths import ROOT
from ..runs import amend_timing, clear_failure, commit_run, error_line, record_failure, staging_dir
from ..spec import StudyError

# a kernel that does not answer its first request (seen about once in 300 runs on a loaded 2-core machine)
KERNEL_START_FAILURES = ("Kernel didn't respond in", "Kernel died before replying to kernel_info")
KERNEL_RETRIES = 1  # starts of a fresh kernel for such a point before it counts as failed
KERNEL_ARGS = ["--IPKernelApp.log_level=CRITICAL"]  # ERROR hides "running over TCP without encryption" but not "KeyboardInterrupt caught in kernel" at shutdown


def papermill_point(point: dict, study_dir: str, notebook: str, timeout: float, replace: bool) -> dict:
    """Worker: execute the point notebook for one point and publish its run folder."""
    import papermill as pm

    logging.getLogger("papermill").setLevel(logging.ERROR)
    study_dir = Path(study_dir)
    staging = staging_dir(study_dir, point["run_id"])
    executed = staging.with_name(staging.name + ".ipynb")
    t0 = time.perf_counter()
    restarts = 0
    try:
        while True:
            try:
                pm.execute_notebook(
                    notebook, str(executed),
                    parameters={"point": point, "out": str(staging), "plots": False, "interactive": False},
                    execution_timeout=timeout, progress_bar=False, log_output=False, kernel_name="python3",
                    request_save_on_cell_execute=False, cwd=str(ROOT), extra_arguments=KERNEL_ARGS,
                )
                break
            except RuntimeError as exc:  # the kernel never started: the machine's problem, not the point's
                if restarts >= KERNEL_RETRIES or not str(exc).startswith(KERNEL_START_FAILURES):
                    raise
                restarts += 1
                shutil.rmtree(staging, ignore_errors=True)
                executed.unlink(missing_ok=True)
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
        shutil.rmtree(staging, ignore_errors=True)
        executed.unlink(missing_ok=True)


def run_papermill(jobs: list, on_result, *, workers: int, timeout: float, replace: bool, progress: bool,
                  already_done: int = 0) -> None:
    """Run `jobs` ((study, point dict, study_dir, notebook)) in `workers` processes; `on_result(study, row)`."""
    from ..progress import progress_bar

    bar = progress_bar(len(jobs), "sweep", disable=not progress)
    bar.set_postfix_str(f"{already_done} already done")
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))
    try:
        futures = {pool.submit(papermill_point, point, study_dir, nb, timeout, replace): study
                   for study, point, study_dir, nb in jobs}
        failed = 0
        for future in as_completed(futures):
            r = future.result()
            on_result(futures[future], r)
            if not r["ok"]:
                failed += 1
                bar.set_postfix_str(f"{already_done} already done, {failed} failed")
            bar.update(1)
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    finally:
        bar.close()
    pool.shutdown(wait=True)
