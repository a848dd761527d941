"""python -m kafkamodel cluster ...: one line and exit status 2 for what it cannot read, nothing written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "data" / "cluster-example"


def kit(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "kafkamodel", "cluster", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def example_args() -> list[str]:
    args = ["--describe", str(EXAMPLE / "describe.txt"), "--configs", str(EXAMPLE / "configs.txt"),
            "--traffic", str(EXAMPLE / "traffic.csv"), "--hardware", "i3en.2xlarge"]
    for f in sorted(EXAMPLE.glob("server-*.properties")):
        args += ["--server-properties", str(f)]
    return args


def test_the_worked_example_imports_and_lists_what_it_does_not_model(tmp_path):
    done = kit("import", *example_args(), "--out", "shop.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "read but not modelled:" in done.stderr
    assert (tmp_path / "shop.yaml").read_text().startswith("# A scenario of your cluster")


def test_a_malformed_file_gives_one_line_exit_2_and_nothing_written(tmp_path):
    broken = tmp_path / "describe.txt"
    lines = (EXAMPLE / "describe.txt").read_text().splitlines()
    broken.write_text("\n".join(lines[:3] + ["\tTopic: orders\tPartition: 2\tLeader: 1\tReplicas: 1,x\tIsr: 1"]
                                + lines[4:]) + "\n")
    args = example_args()
    args[1] = str(broken)
    done = kit("import", *args, "--out", "shop.yaml", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith(f"error: {broken}:4: expected Replicas: broker ids separated by commas")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["describe.txt"]


def test_a_missing_file_is_named_by_its_flag(tmp_path):
    done = kit("import", "--describe", "nope.txt", "--out", "s.yaml", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (2, "error: --describe nope.txt: no such file\n")
    assert list(tmp_path.iterdir()) == []


def test_export_writes_the_files_import_reads(tmp_path):
    done = kit("export", str(REPO / "data" / "scenarios" / "steady-state.yaml"), "--out", "files", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert {"describe.txt", "server-0.properties", "traffic.csv"} <= {p.name for p in (tmp_path / "files").iterdir()}
