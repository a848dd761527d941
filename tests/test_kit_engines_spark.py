"""The Spark engine for sweeps: the same runs as papermill, failures recorded, and a real standalone cluster."""

from __future__ import annotations

import filecmp
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from kafkamodel.paths import ROOT
from kafkamodel.kit.engines import spark as spark_engine
from kafkamodel.kit.aggregate import aggregate
from kafkamodel.kit.point import deadline, execute_point
from kafkamodel.kit.specfile import load_spec
from kafkamodel.kit.sweep import run_sweeps

from helpers import ENGINES_SPEC

# two acks settings x two seeds over a leader crash that loses acks=1 writes: runs that differ from each other
ENGINE_FILES = {"timing.json", "notebook.ipynb"}  # what differs by engine; everything else must not


def _spec(folder: Path, text: str = ENGINES_SPEC):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "engines.yaml").write_text(text)
    return load_spec(folder / "engines.yaml")


def _run_folders(study_dir: Path) -> dict[str, Path]:
    return {d.name: d for d in sorted(study_dir.iterdir()) if not d.name.startswith((".", "_"))}


def test_both_engines_write_the_same_runs_and_aggregate_alike(spark, tmp_path):
    spec = _spec(tmp_path)
    (by_papermill,) = run_sweeps([spec], workers=2, timeout=300, runs=tmp_path / "papermill", progress=False)
    (by_spark,) = run_sweeps([spec], timeout=300, runs=tmp_path / "spark", progress=False, engine="spark", spark=spark)
    assert by_papermill.ok and by_spark.ok and len(by_spark.ran) == by_spark.total == 4
    assert by_spark.slots == 2 and by_spark.overhead_per_point() > 0  # slot time beyond the model: measured, not assumed
    # the package zip went to the executors, not onto this process's sys.path (spawned papermill workers inherit it)
    assert not [entry for entry in sys.path if Path(entry).name.startswith("kafkamodel-")]

    papermill, spark_runs = _run_folders(tmp_path / "papermill" / "engines"), _run_folders(tmp_path / "spark" / "engines")
    assert sorted(spark_runs) == sorted(papermill) == sorted(p.run_id for p in spec.points())
    for run_id, folder in spark_runs.items():
        files = {p.name for p in folder.iterdir()}
        assert files == {p.name for p in papermill[run_id].iterdir()} - {"notebook.ipynb"}
        for name in sorted(files - ENGINE_FILES):  # summary, tables, scenario, point: byte for byte
            assert filecmp.cmp(folder / name, papermill[run_id] / name, shallow=False), f"{run_id}/{name} differs"
        timing = json.loads((folder / "timing.json").read_text())
        assert timing["engine"] == "spark" and timing["model_s"] > 0
    # the runs differ from each other (a comparison of empty or constant runs would prove nothing)
    lost = {json.loads((f / "summary.json").read_text())["acked_records_lost"] for f in spark_runs.values()}
    assert len(lost) > 1 and max(lost) > 0

    # aggregate reads the Spark engine's runs unchanged, to the same statistics
    stats = {}
    for engine in ("papermill", "spark"):
        out = aggregate(spec, spark=spark, runs=tmp_path / engine, processed=tmp_path / f"processed-{engine}").out
        stats[engine] = pd.read_parquet(out / "stats").sort_values(["measure", "config_id"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(stats["papermill"], stats["spark"])

    # a second sweep finds every run done
    (again,) = run_sweeps([spec], runs=tmp_path / "spark", progress=False, engine="spark", spark=spark)
    assert again.skipped == 4 and not again.ran


def test_points_share_tasks_only_when_every_slot_keeps_enough_tasks():
    assert spark_engine.TASKS_PER_SLOT == 16 and spark_engine.POINTS_PER_TASK == 25  # the numbers below assume these
    # make campaign: 10,000 schedules on local[2]: 400 tasks of 25 points (a task per point cost ~56 ms of CPU each)
    assert spark_engine.task_count(10_000, 2) == 400
    # 200 points on 2 slots: 200 // 32 = 6 points a task, 34 tasks (33 of 6 and the rest)
    assert spark_engine.task_count(200, 2) == 34
    # fewer than 16 points a slot: a task each, as before
    assert spark_engine.task_count(31, 2) == 31 and spark_engine.task_count(63, 4) == 63 and spark_engine.task_count(1, 2) == 1
    # a cluster of 100 slots: 10,000 points give each slot 16 tasks of 6 points (the last slot's share shorter)
    assert spark_engine.task_count(10_000, 100) == 1667
    # at most MAX_TASKS tasks, however many points
    assert spark_engine.task_count(10_000_000, 2) == spark_engine.MAX_TASKS


@pytest.mark.parametrize("tasks_per_slot", [spark_engine.TASKS_PER_SLOT, 1], ids=["a task a point", "2 points a task"])
def test_a_point_that_raises_in_its_task_is_recorded_and_the_others_complete(spark, tmp_path, monkeypatch,
                                                                             task_counts, tasks_per_slot):
    monkeypatch.setattr(spark_engine, "TASKS_PER_SLOT", tasks_per_slot)  # 1: 4 points on 2 slots, 2 a task
    tasks = task_counts
    spec = _spec(tmp_path)
    study_dir = tmp_path / "runs" / "engines"
    study_dir.mkdir(parents=True)
    broken = spec.points()[1].run_id
    (study_dir / broken).write_text("a file where the run folder should go\n")  # publishing this point raises

    (outcome,) = run_sweeps([spec], runs=tmp_path / "runs", progress=False, engine="spark", spark=spark)
    assert not outcome.ok
    assert sorted(outcome.ran) == sorted(p.run_id for p in spec.points() if p.run_id != broken)
    assert [run_id for run_id, _ in outcome.failed] == [broken]
    assert "NotADirectoryError" in outcome.failed[0][1]
    record = json.loads((study_dir / "_failed" / f"{broken}.json").read_text())
    assert record["run_id"] == broken and "NotADirectoryError" in record["error"]
    assert record["point"]["columns"] == {"acks": spec.points()[1].columns["acks"]}
    assert f"FAILED {broken}: NotADirectoryError" in "\n".join(outcome.lines())
    assert tasks == [4 if tasks_per_slot > 1 else 2]  # the point that failed shared its task with another
    assert not [d for d in study_dir.iterdir() if d.name.startswith(".") and d.name != ".lock"]  # no staging left

    # once the cause is gone, the next sweep runs only that point and forgets the failure
    (study_dir / broken).unlink()
    (retry,) = run_sweeps([spec], runs=tmp_path / "runs", progress=False, engine="spark", spark=spark)
    assert retry.ok and retry.ran == [broken] and retry.skipped == 3
    assert not list((study_dir / "_failed").iterdir())


def test_deadline_interrupts_a_point_that_runs_too_long():
    t0 = time.perf_counter()
    with pytest.raises(TimeoutError, match="0.2 s timeout"):
        with deadline(0.2):
            time.sleep(5)
    assert time.perf_counter() - t0 < 2
    with deadline(0.2):  # a block that ends in time leaves no timer behind
        pass
    time.sleep(0.4)


# --- a real distributed run: a standalone master and one worker on the loopback ------------------------

SPARK_BIN = Path(__import__("pyspark").__file__).parent / "bin" / "spark-class"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(log: Path, text: str, proc: subprocess.Popen, seconds: float) -> None:
    end = time.time() + seconds
    while time.time() < end:
        if log.exists() and text in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    pytest.fail(f"{text!r} not in {log.name} within {seconds} s:\n{log.read_text(errors='replace')[-3000:]}")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(15)


@pytest.mark.spark  # a standalone master and worker, and Spark in the sweep's process
def test_a_sweep_runs_on_a_standalone_cluster(tmp_path):
    spec = _spec(tmp_path / "spec")
    port = _free_port()
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_NO_DAEMONIZE": "1"}
    procs = []

    def start(name: str, *args: str) -> tuple[subprocess.Popen, Path]:
        log = tmp_path / f"{name}.log"
        with open(log, "w") as out:
            proc = subprocess.Popen([str(SPARK_BIN), *args], stdout=out, stderr=subprocess.STDOUT, env=env,
                                    cwd=tmp_path, start_new_session=True)
        procs.append(proc)
        return proc, log

    try:
        master, master_log = start("master", "org.apache.spark.deploy.master.Master",
                                   "--host", "127.0.0.1", "--port", str(port), "--webui-port", "0")
        _wait_for(master_log, "I have been elected leader", master, 90)
        worker, worker_log = start("worker", "org.apache.spark.deploy.worker.Worker", f"spark://127.0.0.1:{port}",
                                   "--cores", "1", "--memory", "2g", "--webui-port", "0",
                                   "--work-dir", str(tmp_path / "work"))
        _wait_for(worker_log, "Successfully registered with master", worker, 90)

        runs = tmp_path / "runs"
        done = subprocess.run(
            [sys.executable, "-m", "kafkamodel", "sweep", str(tmp_path / "spec" / "engines.yaml"), "--engine", "spark",
             "--master", f"spark://127.0.0.1:{port}", "--runs", str(runs), "--timeout", "120"],
            cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        assert "engines: 4 points: 4 ran, 0 already done, 0 failed" in done.stdout

        # the runs dataset at a file:// URI given as a URI, and aggregation on the cluster reading it back
        uri = (tmp_path / "dataset").as_uri()
        done = subprocess.run(
            [sys.executable, "-m", "kafkamodel", "sweep", str(tmp_path / "spec" / "engines.yaml"), "--engine", "spark",
             "--master", f"spark://127.0.0.1:{port}", "--runs", uri, "--timeout", "120"],
            cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        assert "engines: 4 points: 4 ran, 0 already done, 0 failed" in done.stdout
        aggregated = subprocess.run(
            [sys.executable, "-c", "import sys; from pathlib import Path; from kafkamodel.kit.aggregate import "
             "aggregate; print(aggregate(sys.argv[1], master=sys.argv[2], runs=sys.argv[3], "
             "processed=Path(sys.argv[4])).line())", str(tmp_path / "spec" / "engines.yaml"),
             f"spark://127.0.0.1:{port}", uri, str(tmp_path / "processed")],
            cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert aggregated.returncode == 0, aggregated.stderr[-3000:]
        assert "engines: 4 runs -> 2 configurations" in aggregated.stdout
    finally:
        for proc in reversed(procs):
            _stop(proc)
    assert all(proc.poll() is not None for proc in procs)  # nothing left running

    # the points ran in the worker's executor (its work dir holds the application), not in the driver
    assert list((tmp_path / "work").glob("app-*/*/stderr"))
    # and gave the runs a local execute_point gives: the same summary, byte for byte
    folders = _run_folders(runs / "engines")
    assert sorted(folders) == sorted(p.run_id for p in spec.points())
    texts = dict(pd.read_parquet(tmp_path / "dataset" / "engines" / "files")[["run_id", "summary_json"]]
                 .astype(str).itertuples(index=False))
    for point in spec.points():
        execute_point(point, tmp_path / "local" / point.run_id)
        assert (folders[point.run_id] / "summary.json").read_bytes() == (tmp_path / "local" / point.run_id / "summary.json").read_bytes()
        assert texts[point.run_id] == (tmp_path / "local" / point.run_id / "summary.json").read_text()
    # the aggregates the cluster computed from the dataset: every configuration, both seeds
    stats = pd.read_parquet(tmp_path / "processed" / "engines" / "stats")
    acked = stats[stats["measure"] == "records_acked"]
    assert sorted(acked["config_id"]) == sorted({p.config_id for p in spec.points()}) and set(acked["n"]) == {2}


# --- the runs dataset at a URI (kafkamodel.kit.dataset) ------------------------------------------------

def test_the_spark_engine_writes_the_runs_dataset_at_a_uri_and_aggregation_reads_it(spark, tmp_path):
    spec = _spec(tmp_path)
    uri = (tmp_path / "dataset").as_uri()  # file:///...: given as a URI, written through Spark
    (by_uri,) = run_sweeps([spec], timeout=300, runs=uri, progress=False, engine="spark", spark=spark)
    assert by_uri.ok and len(by_uri.ran) == by_uri.total == 4
    study = tmp_path / "dataset" / "engines"
    run_ids = sorted(p.run_id for p in spec.points())
    for table in ("summary", "files", "events", "timeline", "partitions"):  # one partition per run
        assert sorted(d.name for d in (study / table).iterdir() if d.name.startswith("run_id=")) == \
            [f"run_id={r}" for r in run_ids], table
    assert not (tmp_path / "runs").exists()  # nothing went to a run folder

    # the same points run in this process into run folders: the same summary.json bytes, the same table rows
    files = spark.read.parquet(f"{uri}/engines/files").toPandas().set_index("run_id")
    for point in spec.points():
        folder = tmp_path / "local" / "engines" / point.run_id
        execute_point(point, folder)
        assert files.loc[point.run_id, "summary_json"] == (folder / "summary.json").read_text()
        assert files.loc[point.run_id, "scenario_yaml"] == (folder / "scenario.yaml").read_text()
        assert json.loads(files.loc[point.run_id, "point_json"]) == json.loads((folder / "point.json").read_text())
        for table in ("events", "timeline", "records"):
            local = pd.read_parquet(folder / f"{table}.parquet")  # categories (Arrow dictionaries) as their values
            local = local.astype({c: object for c in local.columns if isinstance(local[c].dtype, pd.CategoricalDtype)})
            remote = (spark.read.parquet(f"{uri}/engines/{table}").where(f"run_id = '{point.run_id}'").toPandas()
                      .sort_values(list(local.columns[:2])).reset_index(drop=True))
            local = local.sort_values(list(local.columns[:2])).reset_index(drop=True)
            assert len(local) > 0
            pd.testing.assert_frame_equal(remote[list(local.columns)], local, check_dtype=False)

    # the papermill engine writes the same layout into a file: URI: the same partitions, summary.json texts and
    # summary rows
    pm_uri = (tmp_path / "pm-dataset").as_uri()
    (by_papermill,) = run_sweeps([spec], workers=2, timeout=300, runs=pm_uri, progress=False)
    assert by_papermill.ok and len(by_papermill.ran) == 4
    for table in ("summary", "files", "events", "timeline", "partitions", "records"):
        assert sorted(d.name for d in (tmp_path / "pm-dataset" / "engines" / table).iterdir()
                      if not d.name.startswith((".", "_"))) == \
            sorted(d.name for d in (study / table).iterdir() if not d.name.startswith((".", "_"))), table
    pm_files = spark.read.parquet(f"{pm_uri}/engines/files").toPandas().set_index("run_id")
    assert (pm_files.loc[files.index, "summary_json"] == files["summary_json"]).all()
    summaries = [spark.read.parquet(f"{u}/engines/summary").toPandas().sort_values("run_id").reset_index(drop=True)
                 for u in (uri, pm_uri)]
    pd.testing.assert_frame_equal(summaries[0], summaries[1])

    # aggregation reads the dataset to the statistics it computes from run folders
    stats = {}
    for name, runs in (("folders", tmp_path / "local"), ("dataset", uri), ("papermill-dataset", pm_uri)):
        out = aggregate(spec, spark=spark, runs=runs, processed=tmp_path / f"processed-{name}").out
        stats[name] = pd.read_parquet(out / "stats").sort_values(["measure", "config_id"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(stats["folders"], stats["dataset"])
    pd.testing.assert_frame_equal(stats["folders"], stats["papermill-dataset"])

    # resumable: a second sweep finds every run done; a lost summary partition is run again, and only it
    (again,) = run_sweeps([spec], runs=uri, progress=False, engine="spark", spark=spark)
    assert again.skipped == 4 and not again.ran
    import shutil

    shutil.rmtree(study / "summary" / f"run_id={run_ids[0]}")
    (again,) = run_sweeps([spec], runs=uri, progress=False, engine="spark", spark=spark)
    assert again.ran == [run_ids[0]] and again.skipped == 3
    assert spark.read.parquet(f"{uri}/engines/events").where(f"run_id = '{run_ids[0]}'").count() == \
        len(pd.read_parquet(tmp_path / "local" / "engines" / run_ids[0] / "events.parquet"))  # replaced, not doubled


def test_a_runs_uri_spark_cannot_write_is_one_line_and_nothing_is_written(spark, tmp_path):
    from kafkamodel.kit.spec import StudyError

    spec = _spec(tmp_path / "spec")
    before = sorted(tmp_path.rglob("*"))
    with pytest.raises(StudyError, match=r"^--runs: Spark cannot write to 'nosuchfs://bucket/runs': .*No FileSystem for scheme .nosuchfs."):
        run_sweeps([spec], runs="nosuchfs://bucket/runs", progress=False, engine="spark", spark=spark)
    (tmp_path / "a-file").write_text("not a folder\n")
    with pytest.raises(StudyError, match=r"^--runs: Spark cannot write to 'file://.*/a-file/runs/engines'"):
        run_sweeps([spec], runs=(tmp_path / "a-file" / "runs").as_uri(), progress=False, engine="spark", spark=spark)
    with pytest.raises(StudyError, match=r"^--runs: a file URI names an absolute path"):
        run_sweeps([spec], runs="file://runs", progress=False, engine="spark", spark=spark)
    with pytest.raises(StudyError, match=r"^--runs: the papermill engine writes the runs dataset to a file:/// URI "
                                         r".* use --engine spark for other filesystems"):
        run_sweeps([spec], runs="hdfs://namenode/runs", progress=False)
    assert sorted(tmp_path.rglob("*")) == sorted(before + [tmp_path / "a-file"])  # nothing half-written
