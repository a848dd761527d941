"""The optional mypyc accelerator (tools/build_accelerated.sh, docs/speed.md "mypyc, measured").

The accelerated tree compiles the event loop's modules from the same source; the interpreted package stays the
reference, so the compiled build must give the snapshot's numbers exactly. The build installs mypy from PyPI into
.cache/mypyc-venv on first use and takes about a minute, the snapshot about one more: ``make test-accelerated``
(left out of ``make test`` and ``make test-slow``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tools" / "build_accelerated.sh"


def _build(out: Path, python: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), str(out)], env={**os.environ, "PYTHON": python},
                          capture_output=True, text=True, timeout=1200)


def test_a_missing_interpreter_is_one_line_exit_2_and_nothing_written(tmp_path):
    out = tmp_path / "accelerated"
    done = _build(out, str(tmp_path / "no-python"))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "PYTHON=" in done.stderr
    assert not out.exists() and not out.with_name("accelerated.tmp").exists()


@pytest.mark.slow
@pytest.mark.accelerated
def test_the_accelerated_build_gives_the_recorded_numbers(tmp_path):
    out = tmp_path / "accelerated"
    built = _build(out, sys.executable)
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    # the event loop's modules are the compiled ones when a command runs from the tree (else this test proves nothing)
    probe = subprocess.run([sys.executable, "-c", "import kafkamodel.sim.engine.kernel as k, kafkamodel.sim.state as s, "
                            "kafkamodel.sim.broker.sessions as f; print(k.__file__, s.__file__, f.__file__)"],
                           cwd=out, capture_output=True, text=True, check=True)
    files = probe.stdout.split()
    assert len(files) == 3 and all(f.startswith(str(out)) and f.endswith(".so") for f in files), files
    snap = subprocess.run([sys.executable, str(out / "tests" / "snapshot.py"), "--workers", "2"], cwd=out,
                          capture_output=True, text=True, timeout=1800)
    assert snap.returncode == 0, snap.stdout[-3000:] + snap.stderr[-2000:]
    cases = 3 * len(list((ROOT / "data" / "scenarios").glob("*.yaml")))  # each at its seed and the two extra seeds
    assert re.search(rf"^{cases} cases, 0 moved$", snap.stderr, re.M), snap.stderr[-2000:]
