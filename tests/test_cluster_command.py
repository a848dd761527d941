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


LAB = {"name": "lab", "brokers": 3, "seed": 1, "topics": [{"name": "t", "partitions": 6, "replication.factor": 3}]}


def test_calibrate_writes_a_profile_a_scenario_can_name_and_refuses_what_no_cost_explains(tmp_path):
    import json

    import yaml

    from kafkamodel import load_scenario
    from kafkamodel.cluster.calibrate import predict
    from kafkamodel.cluster.perftest import Measurement, write_perf_test

    (tmp_path / "lab.yaml").write_text(json.dumps(LAB))
    for name, rate, size in (("a.txt", "max", 1000), ("b.txt", "max", 100)):
        m = Measurement(name, "t", size, rate, {"acks": "all", "linger.ms": 0})
        got = predict(load_scenario(LAB), m, {"costs.kib.us": 2.0}, 1000)
        m = Measurement(name, "t", size, rate, m.producer, records_per_s=got["records_per_s"],
                        latency_ms={"avg": got["avg"] - 0.5, "max": got["p99"], "p50": int(got["p50"]),
                                    "p95": int(got["p99"]), "p99": int(got["p99"]), "p999": int(got["p99"])})
        (tmp_path / name).write_text(write_perf_test(m, 10000))
    done = kit("calibrate", "lab.yaml", "--perf-test", "a.txt", "--perf-test", "b.txt", "--fit", "costs.kib.us",
               "--out", "mine.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "held out b.txt: records_per_s" in done.stdout
    profile = yaml.safe_load((tmp_path / "mine.yaml").read_text())
    fitted = profile["costs"]["kib.us"]["value"]
    assert "b.txt: records_per_s" in profile["costs"]["kib.us"]["source"]  # the held-out error beside the value
    os.chdir(tmp_path)  # profile paths are read from the current folder
    try:
        assert load_scenario({**LAB, "hardware": {"broker": {"profile": "mine.yaml"}}})["costs"]["kib.us"] == fitted
    finally:
        os.chdir(REPO)
    (tmp_path / "slow.txt").write_text(
        "$ kafka-producer-perf-test --topic t --num-records 1000 --record-size 100 --throughput 100 "
        "--producer-props acks=all\n"
        "1000 records sent, 100.000000 records/sec (0.01 MB/sec), 20000.00 ms avg latency, 30000.00 ms max latency, "
        "20000 ms 50th, 29000 ms 95th, 30000 ms 99th, 30000 ms 99.9th.\n")
    done = kit("calibrate", "lab.yaml", "--perf-test", "slow.txt", "--fit", "costs.request.us", "--out", "no.yaml",
               cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.startswith("error: fit refused: costs.request.us = ")
    assert done.stderr.count("\n") == 1 and not (tmp_path / "no.yaml").exists()
