"""Fault-schedule campaigns: schedules drawn from a seed, specs checked, the sweep and its verdicts, shrinking,
the report.

The tests use the shipped spec (``data/campaigns/safety.yaml``), changed and
written to a temporary folder (so counterexamples land there, not in the
repository), and a tiny campaign on the papermill engine; the slow one runs a
bounded campaign (hundreds of schedules) on the test run's Spark session.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import yaml
from bs4 import BeautifulSoup
from helpers import CHROMIUM, CHROMIUM_ARGS, SAFETY, VIEWPORT, campaign_spec_file, need_browser

from kafkamodel import load_scenario, simulate
from kafkamodel.campaign import analysis, counterexample, vocabulary
from kafkamodel.campaign.properties import BY_NAME, PROPERTIES, broken
from kafkamodel.campaign.command import run_campaign
from kafkamodel.campaign.shrink import shrink
from kafkamodel.campaign.spec import load_campaign
from kafkamodel.cli import main
from kafkamodel.paths import CAMPAIGNS
from kafkamodel.kit.engines import spark as spark_engine
from kafkamodel.kit.point import run_point

HEADER = re.compile(r"^# Breaks (?P<prop>\w+) \(.*\): (?P<amount>[\d,]+) \w+ here\.$", re.M)


# ---- schedules --------------------------------------------------------------------------------------------------


def test_schedules_come_from_the_seed_and_index_alone_and_stay_in_the_vocabulary():
    c = load_campaign(SAFETY)
    isr, quorum = c.setting("isr_safe"), c.setting("quorum_fsync")
    v = isr.faults
    drawn = [v.schedule(c.seed, i) for i in range(400)]
    assert drawn[7] == v.schedule(c.seed, 7) and drawn[7] != drawn[8]
    assert c.setting("isr_acks1").faults.schedule(c.seed, 7) == drawn[7]  # same vocabulary, same schedules
    assert c.point(isr, 7).seed == c.point(quorum, 7).seed == vocabulary.run_seed(c.seed, 7)
    for faults in drawn:
        ordinary = [f for f in faults if f["kind"] != "power_loss"]
        assert len(ordinary) <= v.count[1] and faults == sorted(faults, key=lambda f: f["at.ms"])
        for f in faults:
            assert v.duration_ms[0] <= f["duration.ms"] and f["at.ms"] + f["duration.ms"] <= v.end_ms + 1e-9
            if f["kind"] == "power_loss":
                assert f["broker"] in v.power_loss_targets  # one broker at once (power_loss.brokers [1, 1])
            else:
                assert f["broker"] in v.targets and f["kind"] in v.kinds
    # power_loss.chance 0.5: the share of schedules with one is within a binomial 99.9% band of 400 draws
    share = np.mean([any(f["kind"] == "power_loss" for f in faults) for faults in drawn])
    assert abs(share - 0.5) < 3.3 * np.sqrt(0.25 / 400)
    # the quorum setting draws several brokers at once (power_loss.brokers [1, 4])
    sizes = {len(f["broker"]) if isinstance(f["broker"], list) else 1
             for i in range(200) for f in quorum.faults.schedule(c.seed, i) if f["kind"] == "power_loss"}
    assert sizes == {1, 2, 3, 4}


def test_the_wilson_interval_matches_newcombes_worked_examples():
    # Newcombe (1998), Statistics in Medicine 17:857, table I, method 3 (score interval without correction)
    for (k, n), (lo, hi) in {(81, 263): (0.2553, 0.3662), (15, 148): (0.0624, 0.1605), (0, 20): (0.0, 0.1611),
                             (1, 29): (0.0061, 0.1718)}.items():
        got = analysis.wilson(k, n)
        assert got == pytest.approx((lo, hi), abs=1e-4), (k, n)


# ---- bad specs ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("change, message", [
    (lambda d: d.update(schedule=3), "schedule: unknown key; did you mean 'schedules'?"),
    (lambda d: d["faults"].update(kinds=["crash", "explode"]),
     "faults.kinds.explode: not a fault kind; kinds are crash, isolate, pause, slow"),
    (lambda d: d["faults"].update(targets=[0, 7]), "faults.targets[1]: no broker 7; ids are 0..3"),
    (lambda d: d["faults"].update(targets=["leader:t-5"]), "faults.targets[0]: topic 't' has partitions 0..1, not 5"),
    (lambda d: d["faults"].update({"duration.ms": [100, 50]}),
     "faults.duration.ms: must be [low, high] (or one value), numbers > 0, low <= high, got [100, 50]"),
    (lambda d: d["faults"].pop("end.ms"), "faults.end.ms: required (every fault is over by then; leave the cluster "
                                          "time to heal before duration.ms)"),
    (lambda d: d["settings"]["isr_safe"].update(promise="mostly"),
     "settings.isr_safe.promise: must be one of safe, unsafe (safe: no property may break; unsafe: count how often "
     "and how much), got 'mostly'"),
    (lambda d: d["settings"]["isr_safe"].update(overrides={"broker.min.insync.replica": 2}),
     "settings.isr_safe.overrides: broker.min.insync.replica: unknown key; did you mean 'min.insync.replicas'?"),
    (lambda d: d["settings"]["quorum_fsync"]["faults"].update({"power_loss.brokers": [1, 5]}),
     "settings.quorum_fsync.faults.power_loss.brokers: at most 4 (the brokers in power_loss.targets), got 5"),
    (lambda d: d.update(base="steady_state"),
     "base: no scenario 'steady_state' in data/scenarios/ or beside the spec; did you mean 'steady-state'?"),
    (lambda d: d.update(shrink={"budgets": 3}), "shrink.budgets: unknown key; did you mean 'budget'?"),
])
def test_a_bad_spec_is_one_line_exit_2_and_nothing_written(tmp_path, capsys, change, message):
    spec = campaign_spec_file(tmp_path, change)
    runs = tmp_path / "runs"
    assert main(["campaign", str(spec), "--engine", "spark", "--runs", str(runs)]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {spec}: {message}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [spec.name]  # no runs folder, nothing else


def test_a_bad_flag_is_one_line_exit_2(capsys):
    assert main(["campaign", "safety", "--schedules", "0"]) == 2
    assert capsys.readouterr().err == "error: --schedules: must be an integer >= 1, got '0'\n"
    assert main(["campaign", "safty"]) == 2
    assert capsys.readouterr().err.startswith("error: safty: no such campaign or spec file; did you mean 'safety'?")


# ---- shrinking ----------------------------------------------------------------------------------------------------


def test_an_unsafe_setting_declared_safe_shrinks_to_a_few_faults_that_still_lose_when_run_from_the_file(tmp_path, capsys):
    # acks=1 declared safe: the first schedule (found by search, not picked) that loses acknowledged records
    c = load_campaign(campaign_spec_file(tmp_path, lambda d: d["settings"]["isr_acks1"].update(promise="safe")))
    acks1 = c.setting("isr_acks1")
    index = next(i for i in range(40) if broken(run_point(c.point(acks1, i)).summary).get("no_acked_record_lost"))
    shrunk = shrink(c, acks1, index, "no_acked_record_lost", budget=60)
    assert shrunk.original_amount > 0 and shrunk.amount > 0
    assert len(shrunk.faults) <= 3 and len(shrunk.faults) < len(shrunk.original)
    path = counterexample.write(c, shrunk, Path(c.folder))
    assert path == tmp_path / "safety" / f"isr_acks1-no_acked_record_lost-{index}.yaml"
    text = path.read_text()
    header = HEADER.search(text)
    assert header["prop"] == "no_acked_record_lost" and int(header["amount"].replace(",", "")) == shrunk.amount
    assert f"setting isr_acks1 (promise: safe" in text and f"schedule {index}, campaign seed {c.seed}" in text
    assert main(["run", str(path), "--json"]) == 0  # the shipped format: `run` reproduces it
    summary = json.loads(capsys.readouterr().out)
    assert summary["acked_records_lost"] == shrunk.amount
    assert yaml.safe_load(text)["faults"] == shrunk.faults


def test_the_shipped_counterexamples_still_break_what_their_header_says():
    files = sorted(CAMPAIGNS.glob("*/*.yaml"))
    assert files, "no counterexample is shipped"
    for path in files:
        header = HEADER.search(path.read_text())
        summary = simulate(load_scenario(path)).summary
        assert BY_NAME[header["prop"]].amount(summary) == int(header["amount"].replace(",", "")), path.name


# ---- a tiny campaign end to end (papermill) --------------------------------------------------------------------------


def _tiny(d: dict) -> None:
    """Two settings, three schedules; acks=1 declared safe, each schedule cutting a leader off from its
    followers and the controller but not from the producer (Jepsen 2013): it acknowledges what it will lose."""
    d["settings"] = {"isr_safe": d["settings"]["isr_safe"],
                     "acks1_claimed_safe": {"promise": "safe", "about": "acks=1, wrongly declared safe",
                                            "overrides": {"producers[0].acks": 1}}}
    d["faults"].update({"count": 1, "kinds": ["isolate"], "targets": ["leader:t-0"], "isolate.partial": 1,
                        "isolate.from": [1, 2, 3, "controller"], "isolate.peers": 4, "duration.ms": [3000, 6000],
                        "power_loss.chance": 0})
    d["schedules"] = 3
    d["shrink"] = {"budget": 25, "per_property": 1, "examples": 1}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("campaign")
    spec = campaign_spec_file(root, _tiny, name="tiny")
    out = run_campaign(spec, engine="papermill", workers=2, runs=root / "runs", processed=root / "processed",
                       reports=root / "reports", progress=False, say=lambda line: None)
    return root, spec, out


def test_a_tiny_campaign_runs_judges_shrinks_and_resumes(tiny, tmp_path):
    root, spec, out = tiny
    assert out.sweep.total == 6 and len(out.sweep.ran) == 6 and not out.sweep.failed
    assert set(out.runs.setting) == {"isr_safe", "acks1_claimed_safe"} and len(out.runs) == 6
    assert "isr_safe" not in out.broken and out.broken["acks1_claimed_safe"] > 0 and not out.ok
    # every verdict is the run folder's own summary, read again
    for row in out.runs.itertuples():
        summary = json.loads((root / "runs" / "campaigns" / "tiny" / row.run_id / "summary.json").read_text())
        assert row.no_acked_record_lost == summary["acked_records_lost"]
        timing = json.loads((root / "runs" / "campaigns" / "tiny" / row.run_id / "timing.json").read_text())
        assert timing["engine"] == "papermill"  # papermill ran it
    shrunk, path = out.examples[0]
    assert path.parent == root / "tiny" and shrunk.setting == "acks1_claimed_safe"
    published = json.loads((out.processed / "counterexamples.json").read_text())
    assert [e["file"] for e in published] == [str(path)]
    again = run_campaign(spec, engine="papermill", runs=root / "runs", processed=tmp_path / "p", report=False,
                         progress=False, say=lambda line: None)
    assert again.sweep.skipped == 6 and not again.sweep.ran
    assert again.runs.equals(out.runs)


@pytest.mark.parametrize("tasks_per_slot", [spark_engine.TASKS_PER_SLOT, 1], ids=["a task a run", "3 runs a task"])
def test_the_tiny_campaign_on_spark_into_a_runs_dataset_judges_and_shrinks_as_on_papermill(tiny, spark, tmp_path,
                                                                                            monkeypatch, task_counts,
                                                                                            tasks_per_slot):
    monkeypatch.setattr(spark_engine, "TASKS_PER_SLOT", tasks_per_slot)
    root, spec, out = tiny
    uri = (tmp_path / "runs").as_uri()  # the runs dataset at a file: URI: no run folders
    on_spark = run_campaign(spec, engine="spark", spark=spark, runs=uri, processed=tmp_path / "processed",
                            report=False, progress=False, say=lambda line: None)
    assert len(on_spark.sweep.ran) == 6 and not on_spark.sweep.failed
    assert task_counts == [6 if tasks_per_slot > 1 else 2]  # the job as the engine cut it: 6 runs on local[2]
    study = tmp_path / "runs" / "campaigns" / "tiny"
    assert sorted(d.name for d in study.iterdir() if not d.name.startswith((".", "_"))) == \
        ["events", "files", "partitions", "summary", "timeline"]
    assert on_spark.runs.equals(out.runs)  # the same verdicts, read from the dataset
    assert [(s.setting, s.faults, s.amount) for s, _ in on_spark.examples] == \
        [(s.setting, s.faults, s.amount) for s, _ in out.examples]


def test_the_tiny_campaign_on_spark_in_shared_tasks_writes_papermills_run_folders(tiny, spark, tmp_path, monkeypatch,
                                                                                  task_counts):
    root, spec, out = tiny
    monkeypatch.setattr(spark_engine, "TASKS_PER_SLOT", 1)  # 6 runs on local[2]: 3 a task, as 10,000 share 25
    on_spark = run_campaign(spec, engine="spark", spark=spark, runs=tmp_path / "runs", processed=tmp_path / "processed",
                            report=False, progress=False, say=lambda line: None)
    assert len(on_spark.sweep.ran) == 6 and not on_spark.sweep.failed
    assert task_counts == [2]  # the job as the engine cut it
    assert on_spark.runs.equals(out.runs)  # the same verdicts
    mine, theirs = tmp_path / "runs" / "campaigns" / "tiny", root / "runs" / "campaigns" / "tiny"
    for row in out.runs.itertuples():  # every file of every run, byte for byte, but the engine's own timing
        files = sorted(p.name for p in (theirs / row.run_id).iterdir() if p.name != "timing.json")
        assert files == sorted(p.name for p in (mine / row.run_id).iterdir() if p.name != "timing.json")
        for name in files:
            assert (mine / row.run_id / name).read_bytes() == (theirs / row.run_id / name).read_bytes(), name
        assert json.loads((mine / row.run_id / "timing.json").read_text())["engine"] == "spark"
    assert [(s.setting, s.faults, s.amount) for s, _ in on_spark.examples] == \
        [(s.setting, s.faults, s.amount) for s, _ in out.examples]


def test_the_campaign_report_opens_with_its_finding_and_reads_well(tiny):
    root, _, out = tiny
    html = out.report.read_text()
    finding, figure, table = html.find("Finding."), html.find("<img "), html.find("<table")
    assert 0 < finding < figure < table
    assert "a safe setting broke its promise: acks1_claimed_safe broke no_acked_record_lost" in html
    soup = BeautifulSoup(html, "html.parser")
    assert all(img.get("alt") not in (None, "", "figure") for img in soup.find_all("img"))
    assert "<script src=" not in html.replace('<script src=""', "")  # offline
    for table in soup.find_all("table"):
        header = [th.get_text(" ", strip=True) for th in table.find("thead").find_all("th")]
        assert header and all(header)
        for tr in table.find("tbody").find_all("tr"):
            assert not tr.find_all("th")  # no index column
            text = " ".join(td.get_text(" ", strip=True) for td in tr.find_all("td"))
            assert not {"nan", "NaN", "None", "<NA>"} & set(text.split())
            assert not re.search(r"\b\d+\.0\b", text)  # integers as integers
    record = json.loads((root / "reports" / "campaign_tiny.json").read_text())
    # (run, property) pairs broken on the safe settings, counted from the judged runs' per-property amounts
    safe = out.runs[out.runs.promise == "safe"]
    assert record["numbers"]["safe_violations"] == int((safe[list(BY_NAME)] > 0).to_numpy().sum()) > 0
    index = (root / "reports" / "index.html").read_text()
    assert "Fault campaigns" in index and "campaign_tiny.html" in index


@pytest.mark.browser
def test_the_campaign_report_in_the_browser(tiny, tmp_path):

    need_browser()
    from playwright.sync_api import sync_playwright

    _, _, out = tiny
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport=VIEWPORT)
        errors = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("request", lambda r: errors.append(r.url) if not r.url.startswith(("file://", "data:")) else None)
        page.goto(out.report.as_uri())
        state = page.evaluate("""() => ({scroll: document.documentElement.scrollWidth, width: window.innerWidth,
            images: [...document.images].map(i => i.complete && i.naturalWidth > 0)})""")
        page.screenshot(path=str(tmp_path / "campaign.png"), full_page=True)
        browser.close()
    assert state["scroll"] <= state["width"] and state["images"] and all(state["images"]) and not errors


# ---- a bounded campaign (CI) ------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_bounded_campaign_breaks_safe_settings_only_kafkas_way_and_measures_loss_on_unsafe_ones(spark, tmp_path):
    spec = campaign_spec_file(tmp_path)
    out = run_campaign(spec, schedules=75, engine="spark", spark=spark, runs=tmp_path / "runs",
                       processed=tmp_path / "processed", reports=tmp_path / "reports", progress=False)
    assert len(out.runs) == 300 and not out.sweep.failed
    # quorum_fsync: nothing broke. isr_safe breaks in about 0.7% of schedules, Kafka's own way only: KIP-966's
    # last-known-leader election of the partition's last ISR member, whose unflushed log a power loss then takes
    # (shipped: data/campaigns/safety/isr_safe-*-175.yaml, tested above; among these 75, schedule 17 since the
    # clients' metadata backoff of issue 35 moved its timing). Each break is re-run and must show that sequence.
    assert set(out.broken) <= {"isr_safe"} and out.broken.get("isr_safe", 0) <= 3
    points = {p.run_id: p for p in load_campaign(spec).sweep(75).points()}
    safe = out.runs[out.runs.setting == "isr_safe"]
    for run_id in safe[(safe[[p.name for p in PROPERTIES]] > 0).any(axis=1)].run_id:
        ev = run_point(points[run_id]).events
        elected = ev[(ev.kind == "leader_election") & ev.detail.str.startswith("last known leader")]
        assert len(elected), run_id
        power = ev[(ev.kind == "truncation") & ev.detail.str.startswith("power loss")]
        lost = [e for e in elected.itertuples()
                if ((power.time_ms > e.time_ms) & (power.partition == e.partition) & (power.broker == e.broker)).any()]
        assert lost, f"{run_id}: a loss without a power loss of a last known leader"
    losses = analysis.losses(analysis.load("safety", out.processed)).set_index("setting")
    assert losses.loc["isr_acks1", "losing"] > 0 and losses.loc["isr_unclean", "losing"] > 0
    assert losses.loc["quorum_fsync", "lost"] == 0
    assert losses.loc["isr_safe", "lost"] == safe.acked_records_lost.sum()  # only the breaks above
    record = json.loads((tmp_path / "reports" / "campaign_safety.json").read_text())
    acks1 = out.runs[out.runs.setting == "isr_acks1"]
    assert record["numbers"]["isr_acks1.loss_rate"] == pytest.approx((acks1.acked_records_lost > 0).mean(), abs=1e-4)
    for shrunk, path in out.examples:  # a shrunk example per unsafe setting (and broken safe one), from its file
        assert shrunk.setting in ("isr_acks1", "isr_unclean", *out.broken)
        assert BY_NAME[shrunk.prop].amount(simulate(load_scenario(path)).summary) == shrunk.amount > 0
