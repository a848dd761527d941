"""The pipeline end to end: papermill sweep -> Spark aggregate -> offline HTML report; resume; failures."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from html import escape
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from kafkamodel import cli
from kafkamodel.paths import ROOT
from kafkamodel.kit import sweep as sweep_module
from kafkamodel.kit.aggregate import aggregate
from kafkamodel.kit.engines.papermill import papermill_point
from kafkamodel.kit.report import report
from kafkamodel.kit.specfile import all_specs, load_spec
from kafkamodel.kit.sweep import run_sweeps


def test_sweep_aggregate_report_end_to_end(spark, study_root, tiny_spec):
    spec = tiny_spec("recovery_protocols")
    runs, processed, reports = study_root / "runs", study_root / "processed", study_root / "reports"
    (outcome,) = run_sweeps([spec], workers=2, timeout=300, runs=runs, progress=False)
    assert outcome.ok and len(outcome.ran) == outcome.total == 8
    assert all(o > 0 for o in outcome.overhead_s)  # papermill's cost per run is measured
    folder = runs / "recovery_protocols" / outcome.ran[0]
    assert {"summary.json", "summary.parquet", "timeline.parquet", "events.parquet",
            "point.json", "timing.json"} <= {p.name for p in folder.iterdir()}
    assert not (folder / "records.parquet").exists()  # its parts pool no record latency (record_latency: false)
    assert not (folder / "notebook.ipynb").exists()  # a batch ran it: the run folder is what Spark writes
    batched = [json.loads((runs / "recovery_protocols" / r / "timing.json").read_text()) for r in outcome.ran]
    assert {t["engine"] for t in batched} == {"papermill"}
    assert sum(1 / t["batch"] for t in batched) < len(batched)  # fewer kernel starts than points
    timeline = pd.read_parquet(folder / "timeline.parquet", columns=["run_id", "seed", "part"])
    assert len(timeline) and set(timeline["run_id"]) == {folder.name} and set(timeline["seed"]) == {1}

    agg = aggregate(spec, spark=spark, runs=runs, processed=processed)
    assert (agg.runs, agg.configs, agg.stale) == (8, 8, 0)
    stats = pd.read_parquet(agg.out / "stats")

    def mean(part, measure, **where):
        rows = stats[(stats.part == part) & (stats.measure == measure)]
        for k, v in where.items():
            rows = rows[rows[k] == v]
        assert len(rows) == 1
        return float(rows["mean"].iloc[0])

    # each anomaly loses or diverges; its fix does not (KIP-101, KIP-966, Jepsen 2013)
    assert mean("kip101_truncation", "committed_records_lost", version="0.10") > 0
    assert mean("kip101_truncation", "committed_records_lost", version="0.11") == 0
    assert mean("kip101_power_loss", "replica_divergence", version="0.10") > 0
    assert mean("kip101_power_loss", "replica_divergence", version="0.11") == 0
    assert mean("last_replica_standing", "committed_records_lost", version="3.9") > 0
    assert mean("last_replica_standing", "committed_records_lost", version="4.1") == 0
    assert mean("jepsen_2013", "acked_records_lost", config="kafka_0_8") > 0
    assert mean("jepsen_2013", "acked_records_lost", config="min_isr_2_clean") == 0
    assert mean("jepsen_2013", "unavailable_ms", config="min_isr_2_clean") > mean("jepsen_2013", "unavailable_ms", config="kafka_0_8")

    done = report(spec, processed=processed, reports=reports, timeout=300)
    html = done.html.read_text()
    assert "<script src=\"http" not in html and "<script src='http" not in html
    assert not re.search(r"""<(script|link)[^>]+(src|href)=["']https?://""", html)
    figures = re.findall(r'<img alt="([^"]*)" src="data:image/png;base64,', html)
    assert figures and all(alt and "No description" not in alt for alt in figures)  # embedded, each with its titles
    assert "import " not in html  # no code cells
    record = json.loads((reports / "recovery_protocols.json").read_text())
    assert record["numbers"]["jepsen_2013_anomaly_acked_lost"] == pytest.approx(
        mean("jepsen_2013", "acked_records_lost", config="kafka_0_8"), abs=0.1)
    index = (reports / "index.html").read_text()
    assert "recovery_protocols.html" in index and record["finding"][:40] in index
    for other in all_specs():  # every study is listed, with its report or how to make it
        assert escape(other.title) in index


def _kill_spec(folder: Path, seeds: int = 2) -> Path:
    spec = folder / "killme.yaml"
    spec.write_text(textwrap.dedent(f"""
        study: killme
        notebook: 00_explore.ipynb
        base: unclean-election
        seeds: {seeds}
        overrides: {{duration.ms: 10000}}
        grid:
          producers[*].acks: [1, all]
    """))
    return spec


# Spark runs points ~10x faster than papermill: more of them, so the kill lands mid-way
@pytest.mark.parametrize("engine, seeds", [("papermill", 2), pytest.param("spark", 10, marks=pytest.mark.spark)])
def test_a_killed_sweep_resumes_with_every_run_exactly_once(tmp_path, request, engine, seeds):
    spec_path = _kill_spec(tmp_path, seeds)
    total = 2 * seeds
    runs = tmp_path / "runs"
    on = {"engine": engine, **({"master": "local[2]"} if engine == "spark" else {})}
    code = (f"from kafkamodel.kit.specfile import load_spec; from kafkamodel.kit.sweep import run_sweeps; "
            f"run_sweeps([load_spec({str(spec_path)!r})], workers=2, runs={str(runs)!r}, progress=False, **{on!r})")
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    study_dir = runs / "killme"
    deadline = time.time() + 120
    try:
        while time.time() < deadline:
            finished = [d for d in study_dir.glob("[!._]*") if (d / "summary.json").is_file()] if study_dir.exists() else []
            if finished:
                break
            time.sleep(0.1)
        assert finished, "no run finished before the deadline"
        assert proc.poll() is None, "the sweep ended before it could be killed mid-way"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the sweep, its workers (kernels / JVM and Python workers), mid-run
        proc.wait()

    def published() -> set:
        return {d.name for d in study_dir.iterdir() if not d.name.startswith((".", "_"))}

    # Spark's Python workers lead their own process groups: one may finish (and publish) its point after
    # the kill, then exit when it finds the JVM gone. Count what is there once nothing changes any more.
    before, settle = published(), time.time() + 30
    while time.time() < settle:
        time.sleep(1.5)
        if published() == before:
            break
        before = published()
    assert 1 <= len(before) < total

    resume = {"engine": "spark", "spark": request.getfixturevalue("spark")} if engine == "spark" else {}
    (outcome,) = run_sweeps([load_spec(spec_path)], workers=2, runs=runs, progress=False, **resume)
    assert outcome.ok
    assert outcome.skipped == len(before) and len(outcome.ran) == total - len(before)
    folders = sorted(d for d in study_dir.iterdir() if not d.name.startswith((".", "_")))
    expected = sorted(p.run_id for p in load_spec(spec_path).points(1))
    assert [d.name for d in folders] == expected  # every run exactly once
    assert not [d for d in study_dir.iterdir() if d.name.startswith(".") and d.name != ".lock"]  # no leftovers
    for d in folders:
        assert json.loads((d / "summary.json").read_text())["run_id"] == d.name
    # a third sweep has nothing to do
    (again,) = run_sweeps([load_spec(spec_path)], workers=2, runs=runs, progress=False, **resume)
    assert again.skipped == total and not again.ran


def test_a_kernel_that_does_not_start_is_started_again_but_a_point_error_is_not_retried(tmp_path, monkeypatch):
    import papermill

    spec = load_spec(_kill_spec(tmp_path))
    point = spec.points()[0].to_dict()
    study_dir = tmp_path / "runs" / "killme"
    study_dir.mkdir(parents=True)
    notebook = str(ROOT / "notebooks" / "00_explore.ipynb")
    real, calls = papermill.execute_notebook, []

    def flaky(*args, **kwargs):  # the first kernel never answers, as jupyter_client reports it
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("Kernel didn't respond in 60 seconds")
        return real(*args, **kwargs)

    monkeypatch.setattr(papermill, "execute_notebook", flaky)
    r = papermill_point(point, str(study_dir), notebook, 300, False)
    assert r["ok"] and r["kernel_restarts"] == 1 and len(calls) == 2
    assert json.loads((study_dir / point["run_id"] / "timing.json").read_text())["kernel_restarts"] == 1

    def broken(*args, **kwargs):
        calls.append(1)
        raise RuntimeError("the point's own error")

    calls.clear()
    monkeypatch.setattr(papermill, "execute_notebook", broken)
    r = papermill_point(spec.points()[1].to_dict(), str(study_dir), notebook, 300, False)
    assert not r["ok"] and len(calls) == 1 and "the point's own error" in r["error"]


def test_a_batch_records_a_failing_and_a_slow_point_and_goes_on(tmp_path, monkeypatch):
    """execute_batch (what a papermill kernel runs): a point that raises and one past --timeout are recorded
    under _failed/, the rest are published; nothing is left in staging."""
    from kafkamodel.kit import point as point_module

    points = [p.to_dict() for p in load_spec(_kill_spec(tmp_path, seeds=2)).points()]
    study_dir = tmp_path / "runs" / "killme"
    study_dir.mkdir(parents=True)
    real = point_module.execute_point

    def sometimes(point, out, base_text=None):
        if point["run_id"] == points[0]["run_id"]:
            raise RuntimeError("deliberate failure")
        if point["run_id"] == points[1]["run_id"]:
            time.sleep(5)  # past the 1 s timeout below
        return real(point, out, base_text)

    monkeypatch.setattr(point_module, "execute_point", sometimes)
    outcomes = tmp_path / "outcomes.jsonl"
    rows = point_module.execute_batch(points, study_dir, timeout=1.0, outcomes=outcomes)
    assert [r["ok"] for r in rows] == [False, False, True, True]
    assert "deliberate failure" in rows[0]["error"] and "longer than the 1 s timeout" in rows[1]["error"]
    assert [json.loads(line) for line in outcomes.read_text().splitlines()] == rows
    for r in rows:
        assert (study_dir / r["run_id"] / "summary.json").is_file() == r["ok"]
        assert (study_dir / "_failed" / f"{r['run_id']}.json").is_file() != r["ok"]
    assert not [d for d in study_dir.iterdir() if d.name.startswith(".")]


def test_a_batch_whose_kernel_dies_keeps_what_it_finished(tmp_path, monkeypatch):
    """papermill_batch: the kernel finishes one point, then dies; that point stands, the others are failed with
    the batch's error (the next sweep runs them), and the first of them keeps the executed notebook."""
    from kafkamodel.kit import point as point_module
    from kafkamodel.kit.engines import papermill as engine

    points = [p.to_dict() for p in load_spec(_kill_spec(tmp_path, seeds=2)).points()]
    study_dir = tmp_path / "runs" / "killme"
    study_dir.mkdir(parents=True)

    def dies(notebook, executed, parameters, timeout, clean, reuse=False):
        point_module.execute_batch(parameters["points"][:1], parameters["study_dir"], outcomes=parameters["outcomes"])
        Path(executed).write_text("{}")
        raise RuntimeError("Kernel died before replying to execute_request")

    monkeypatch.setattr(engine, "_execute", dies)
    rows = engine.papermill_batch(points, str(study_dir), 300, False)
    assert [r["ok"] for r in rows] == [True, False, False, False]
    assert all("Kernel died" in r["error"] for r in rows[1:])
    assert (study_dir / points[0]["run_id"] / "summary.json").is_file()
    assert (study_dir / "_failed" / f"{points[1]['run_id']}.ipynb").is_file()
    assert not [d for d in study_dir.iterdir() if d.name.startswith(".")]


def test_a_worker_runs_its_batches_on_one_kernel_and_a_failed_batch_gets_a_fresh_one(tmp_path, monkeypatch):
    """papermill_batch keeps the worker's kernel between batches (one start, the same kernel process for the
    second batch), and a batch whose execution fails shuts that kernel down: the next batch starts another."""
    import papermill
    import psutil

    from kafkamodel.kit.engines import papermill as engine

    points = [p.to_dict() for p in load_spec(_kill_spec(tmp_path, seeds=2)).points()]
    study_dir = tmp_path / "runs" / "killme"
    study_dir.mkdir(parents=True)
    monkeypatch.setattr(engine, "_kernel", None)
    real, kernels = papermill.execute_notebook, []

    def watched(*args, **kwargs):  # the kernel process each execution ran on
        out = real(*args, **kwargs)
        kernels.append(kwargs["km"].provisioner.process.pid)
        return out

    monkeypatch.setattr(papermill, "execute_notebook", watched)
    try:
        assert [r["ok"] for r in engine.papermill_batch(points[:1], str(study_dir), 300, False)] == [True]
        assert [r["ok"] for r in engine.papermill_batch(points[1:2], str(study_dir), 300, False)] == [True]
        assert len(kernels) == 2 and kernels[0] == kernels[1] and psutil.pid_exists(kernels[0])

        def fails_after(*args, **kwargs):  # the execution ends in an error once the batch ran
            watched(*args, **kwargs)
            raise RuntimeError("Kernel died before replying to execute_request")

        monkeypatch.setattr(papermill, "execute_notebook", fails_after)
        rows = engine.papermill_batch(points[2:3], str(study_dir), 300, False)
        assert [r["ok"] for r in rows] == [True]  # it had published its point before the error
        assert kernels[2] == kernels[0] and engine._kernel is None
        assert not psutil.pid_exists(kernels[0]) or psutil.Process(kernels[0]).status() == psutil.STATUS_ZOMBIE

        monkeypatch.setattr(papermill, "execute_notebook", watched)
        assert [r["ok"] for r in engine.papermill_batch(points[3:4], str(study_dir), 300, False)] == [True]
        assert kernels[3] != kernels[0]
    finally:
        engine._drop_kernel()
    for p in points:
        assert (study_dir / p["run_id"] / "summary.json").is_file()


FAILING_NOTEBOOK = """
from kafkamodel.kit.point import execute_point

if point["columns"]["acks"] == "1":
    raise RuntimeError("deliberate failure for acks=1")
execute_point(point, out)
"""


def test_a_failing_point_is_reported_and_the_others_complete(tmp_path, monkeypatch, capsys):
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    params = nbformat.v4.new_code_cell("point = None\nout = None")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell(FAILING_NOTEBOOK)]
    nbformat.write(nb, tmp_path / "fails.ipynb")
    spec = tmp_path / "failing.yaml"
    spec.write_text(textwrap.dedent("""
        study: failing
        notebook: 00_explore.ipynb
        point_notebook: fails.ipynb
        base: unclean-election
        seeds: 1
        overrides: {duration.ms: 9500}
        params: {acks: "producers[*].acks"}
        grid: {acks: [0, 1, all]}
    """))
    monkeypatch.setattr(sweep_module, "RUNS", tmp_path / "runs")
    assert cli.main(["sweep", str(spec), "--workers", "2", "--timeout", "120"]) == 1
    out, err = capsys.readouterr()
    assert "3 points: 2 ran, 0 already done, 1 failed" in out
    assert "RuntimeError: deliberate failure for acks=1" in out
    assert "1 of 3 points failed" in err
    study_dir = tmp_path / "runs" / "failing"
    failed = json.loads(next((study_dir / "_failed").glob("*.json")).read_text())
    assert failed["point"]["columns"] == {"acks": "1"} and "deliberate failure" in failed["error"]
    assert (study_dir / "_failed" / f"{failed['run_id']}.ipynb").is_file()  # the traceback, where it happened
    assert len([d for d in study_dir.iterdir() if (d / "summary.json").is_file()]) == 2


def test_bad_spec_exits_2_with_one_line_and_writes_nothing(tmp_path, monkeypatch, capsys):
    spec = tmp_path / "bad.yaml"
    spec.write_text("study: bad\nnotebook: 00_explore.ipynb\nbase: steady-state\nseeds: 1\n"
                    "grid: {broker.min.insync.replica: [1, 2]}\n")
    monkeypatch.setattr(sweep_module, "RUNS", tmp_path / "runs")
    assert cli.main(["sweep", str(spec)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "broker.min.insync.replica: unknown key; did you mean 'min.insync.replicas'?" in err[0]
    assert not (tmp_path / "runs").exists()


def test_spark_starts_beside_the_sweep(monkeypatch):
    """run_study builds Spark on a thread while papermill sweeps: get() waits for it, a failed start is raised
    where the session is needed, and the session is stopped on the way out."""
    import threading

    from kafkamodel.kit import command as pipeline, spark as spark_module

    release, built = threading.Event(), []

    class Session:
        stopped = False

        def stop(self):
            self.stopped = True

    def slow_build(master, app_name):
        release.wait(10)
        built.append(Session())
        return built[-1]

    monkeypatch.setattr(spark_module, "build_spark", slow_build)
    with pipeline.spark_starting(None, "test") as get:
        assert not built  # the caller works while it starts
        release.set()
        session = get()
        assert session is built[0] and not session.stopped
    assert session.stopped

    def failing_build(master, app_name):
        raise RuntimeError("JAVA_GATEWAY_EXITED")

    monkeypatch.setattr(spark_module, "build_spark", failing_build)
    with pytest.raises(RuntimeError, match="JAVA_GATEWAY_EXITED"):
        with pipeline.spark_starting(None, "test") as get:
            get()


def test_a_study_is_aggregated_and_reported_while_the_others_still_sweep(tmp_path, monkeypatch):
    """run_study hands each study to Spark's aggregation as its last point comes in: the first study's
    aggregation and report start before the sweep returns; their lines wait for the sweep's own lines; a failed
    aggregation is counted and the other studies are still reported."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from kafkamodel.kit import aggregate as aggregate_module, command as pipeline, report as report_module
    from kafkamodel.kit import spark as spark_module
    from kafkamodel.kit.sweep import SweepOutcome

    class Session:
        def stop(self):
            pass

    studies = ("acks_durability", "zones", "requests")
    first, second, third = [s.study for s in all_specs() if s.study in studies]  # in the order run_study sweeps
    aggregated, first_reported, reported, said = threading.Event(), threading.Event(), [], []

    def sweeps(specs, *, on_study, **kwargs):
        assert [s.study for s in specs] == [first, second, third]
        outcomes = [SweepOutcome(s.study, 1, ran=["r"], wall_s=1.0) for s in specs]
        on_study(outcomes[0])
        assert aggregated.wait(10) and first_reported.wait(10)  # while this sweep is still going
        assert reported == [first]
        on_study(outcomes[1])
        on_study(outcomes[2])
        return outcomes

    def fake_aggregate(spec, **kwargs):
        if spec.study == second:
            raise RuntimeError("no runs")
        line = f"{spec.study}: aggregated"
        if spec.study == first:
            aggregated.set()
        return type("Outcome", (), {"line": lambda self: line})()

    def fake_report(spec, **kwargs):
        reported.append(spec.study)
        if spec.study == first:
            first_reported.set()
        return type("Outcome", (), {"line": lambda self: f"{spec.study}: reported"})()

    monkeypatch.setattr(spark_module, "build_spark", lambda master, app_name: Session())
    monkeypatch.setattr(sweep_module, "run_sweeps", sweeps)
    monkeypatch.setattr(aggregate_module, "aggregate", fake_aggregate)
    monkeypatch.setattr(report_module, "report", fake_report)
    monkeypatch.setattr(report_module, "write_index", lambda reports, specs: Path(reports) / "index.html")
    monkeypatch.setattr(pipeline, "spawned_pool", ThreadPoolExecutor)
    outcome = pipeline.run_study(studies=studies, runs=tmp_path / "runs",
                                 processed=tmp_path / "processed", reports=tmp_path / "reports", say=said.append,
                                 progress=False)
    sweep_lines = [line for line in said if "points:" in line]
    assert len(sweep_lines) == 3 and said.index(sweep_lines[-1]) < said.index(f"{first}: aggregated")
    assert outcome.lines.index(f"{first}: aggregated") > outcome.lines.index(sweep_lines[-1])
    assert any(line.startswith(f"{second}: aggregation failed: no runs") for line in said)
    assert sorted(reported) == sorted([first, third]) and outcome.failed_points == 1
    assert set(outcome.phases) == {"sweep", "aggregate after the sweep", "reports after the last aggregate"}


def test_a_sweep_that_fails_is_not_held_up_by_an_aggregation_under_way(tmp_path, monkeypatch):
    """The sweep's error (an interrupt, a refused folder) comes out at once, not after the aggregation the
    aggregation thread is in the middle of."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from kafkamodel.kit import aggregate as aggregate_module, command as pipeline, spark as spark_module
    from kafkamodel.kit.sweep import SweepOutcome

    class Session:
        def stop(self):
            pass

    started, release = threading.Event(), threading.Event()

    def sweeps(specs, *, on_study, **kwargs):
        on_study(SweepOutcome(specs[0].study, 1))
        assert started.wait(10)
        raise RuntimeError("interrupted")

    def slow_aggregate(spec, **kwargs):
        started.set()
        release.wait(30)
        raise RuntimeError("released")

    monkeypatch.setattr(spark_module, "build_spark", lambda master, app_name: Session())
    monkeypatch.setattr(sweep_module, "run_sweeps", sweeps)
    monkeypatch.setattr(aggregate_module, "aggregate", slow_aggregate)
    monkeypatch.setattr(pipeline, "spawned_pool", ThreadPoolExecutor)
    t0 = time.perf_counter()
    try:
        with pytest.raises(RuntimeError, match="interrupted"):
            pipeline.run_study(studies=("zones",), runs=tmp_path / "runs", processed=tmp_path / "processed",
                               reports=tmp_path / "reports", say=lambda line: None, progress=False)
        assert time.perf_counter() - t0 < 10
    finally:
        release.set()


def test_study_reports_its_wall_time_by_phase():
    from kafkamodel.kit.command import StudyOutcome

    outcome = StudyOutcome(seconds=212.4, phases={"sweep": 150.2, "aggregate": 40.0})
    assert outcome.timing() == "212 s (sweep 150 s, aggregate 40 s)"


def test_a_points_base_scenario_is_read_once_per_process_and_again_when_edited(tmp_path, monkeypatch):
    from kafkamodel.kit import point as point_module
    from kafkamodel.kit.spec import point_of

    parsed = []
    load = point_module.load_scenario
    monkeypatch.setattr(point_module, "load_scenario", lambda source: parsed.append(source) or load(source))
    base = tmp_path / "base.yaml"
    base.write_text("name: base\nduration.ms: 2000\nbrokers: 3\n")

    def scenario(seed, isr):
        return point_module.scenario_for(point_of("s", "p", "base", str(base), {"broker.min.insync.replicas": isr},
                                                  {}, seed))

    a, b = scenario(1, 1), scenario(2, 2)
    assert len(parsed) == 1  # the second point's base came from the first's parse
    assert (a["seed"], b["seed"]) == (1, 2)
    assert (a["broker"]["min.insync.replicas"], b["broker"]["min.insync.replicas"]) == (1, 2)
    assert scenario(1, 1) == a and len(parsed) == 1  # a point's overrides left the shared base as it was
    base.write_text("name: base\nduration.ms: 3000\nbrokers: 3\n")  # an edited base is read again
    assert scenario(1, 1)["duration.ms"] == 3000 and len(parsed) == 2
    base.write_text("name: [base\nbrokers: 3\n")  # and a broken one is the file's own error, not a cached copy
    with pytest.raises(Exception, match=re.escape(f"{base}: line 2 not valid YAML")):
        scenario(1, 1)
