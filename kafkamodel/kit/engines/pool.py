"""The kit's plain process pool: many independent jobs in worker processes, for whatever needs neither a notebook
(papermill) nor Spark: the papermill engine's kernels, a campaign's shrinks, durability's detailed runs, the
study pipeline's reports.

Workers are spawned (a fresh interpreter each, as Spark's Python workers and papermill's kernels are), never
forked: a fork would copy the parent's threads and locks (the Spark session's, the progress bar's) half-held. A
job's function and arguments must therefore pickle (a module-level function; a Scenario is passed as what its
author wrote). Leaving early (an error, an interrupt) cancels the jobs not started.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from typing import Any, Callable, Iterable, Iterator


def spawned_pool(workers: int) -> ProcessPoolExecutor:
    """A pool of `workers` spawned processes (the caller shuts it down; ``as_finished`` and ``in_order`` do)."""
    return ProcessPoolExecutor(max_workers=max(1, workers), mp_context=multiprocessing.get_context("spawn"))


def as_finished(fn: Callable, jobs: Iterable[tuple[Any, tuple]], workers: int) -> Iterator[tuple[Any, Future]]:
    """``fn(*args)`` for each (tag, args) of `jobs` in `workers` processes; yields (tag, future) as each finishes
    (``future.result()`` gives its answer or raises its error, so one failed job need not stop the others)."""
    jobs = list(jobs)
    pool = spawned_pool(min(workers, len(jobs)))
    try:
        futures = {pool.submit(fn, *args): tag for tag, args in jobs}
        for future in as_completed(futures):
            yield futures[future], future
    except BaseException:  # an error, an interrupt, or the caller leaving early: nothing more is started
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def in_order(fn: Callable, jobs: Iterable[tuple], workers: int) -> Iterator[Any]:
    """``fn(*args)`` for each args of `jobs` in `workers` processes; yields the answers in the jobs' order
    (an error raises where its job's answer would be)."""
    jobs = list(jobs)
    pool = spawned_pool(min(workers, len(jobs)))
    try:
        for future in [pool.submit(fn, *args) for args in jobs]:
            yield future.result()
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
