"""kafkamodel.kit.engines.pool: the one process pool (spawned workers) every verb that runs many jobs uses."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from kafkamodel.kit.engines.pool import as_finished, in_order

PACKAGE = Path(__file__).resolve().parents[1] / "kafkamodel"


def test_as_finished_gives_every_job_its_answer_and_its_own_error():
    jobs = [(n, (n,)) for n in (4, 9, -1, 16)]
    got = {}
    for tag, future in as_finished(math.sqrt, jobs, 2):
        try:
            got[tag] = future.result()
        except ValueError:
            got[tag] = "math domain error"
    assert got == {4: 2.0, 9: 3.0, -1: "math domain error", 16: 4.0}


def test_in_order_keeps_the_jobs_order():
    assert list(in_order(pow, [(2, 10), (3, 2), (10, 0)], 3)) == [1024, 9, 1]


def test_an_error_raises_where_its_answer_would_be():
    answers = in_order(math.sqrt, [(1,), (-1,), (4,)], 2)
    assert next(answers) == 1.0
    with pytest.raises(ValueError):
        next(answers)


def test_no_other_module_keeps_a_process_pool_of_its_own():
    """The private pools went (campaign's shrinks, durability's detailed runs, the papermill engine, the pipeline's
    reports): only this module builds one."""
    builders = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                if re.search(r"ProcessPoolExecutor\(|multiprocessing\.Pool\(", p.read_text())]
    assert builders == ["kit/engines/pool.py"]
