"""The cluster report: every sentence carries the numbers of the table beside it; the page names its inputs,
says how the runs were shortened, and renders offline in Debian's Chromium."""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kafkamodel import load_scenario
from kafkamodel.cluster.answers import Plan, answers
from kafkamodel.cluster.report import _iv, render

REPO = Path(__file__).resolve().parents[1]
TINY = {"name": "tiny", "brokers": 3, "broker": {"min.insync.replicas": 2},
        "topics": [{"name": "t", "partitions": 3, "replication.factor": 3}],
        "producers": [{"topic": "t", "rate.per.s": 1000, "record.size.bytes": 500, "acks": "all"}],
        "consumers": [{"group": "g", "topic": "t"}]}


@pytest.fixture(scope="module")
def tiny_answers():
    plan = Plan(seeds=(1, 2), loads=(1.0, 2.0), duration_ms=1000, durability=False)
    return answers(load_scenario(TINY), plan, inputs={"scenario": "tiny.yaml"})


def _section(page: str, anchor: str) -> str:
    start = page.index(f"id='{anchor}'")
    end = page.find("<h2", start)
    return page[start:end if end > 0 else None]


def _sentence(section: str) -> str:
    return html.unescape(re.search(r"<p class='answer'>(.*?)</p>", section, re.S).group(1))


def _cells(section: str) -> list[str]:
    return [html.unescape(c) for c in re.findall(r"<td>(.*?)</td>", section, re.S)]


def test_each_sentence_carries_the_numbers_of_its_table(tiny_answers):
    page = render(tiny_answers)
    today = tiny_answers["load"][0]
    load = _section(page, "load")
    p99 = _iv(today["produce_latency_ms_p99"])
    assert p99 in _sentence(load) and p99 in _cells(load)
    death = tiny_answers["broker_death"]
    section = _section(page, "death")
    assert _iv(death["produce_p99_after_crash_ms"]) in _sentence(section)
    assert _iv(death["produce_p99_after_crash_ms"]) in _cells(section)
    w = death["with_setting"]  # the setting that would change it, and the new figure, beside the table's
    assert w["setting"] == "broker.session.timeout.ms" and w["value"] == 4500  # KRaft 4.1: half of 9,000
    # and it moves the way it must: a dead broker noticed sooner leaves its partitions leaderless for less long
    assert w["partition_unavailable_ms_max"]["high"] < death["partition_unavailable_ms_max"]["low"]
    assert _iv(w["partition_unavailable_ms_max"], 1 / 1000) in _sentence(section)
    assert _iv(w["partition_unavailable_ms_max"]) in _cells(section)
    restart = _section(page, "restart")
    took = tiny_answers["rolling_restart"]["operation_ms"]
    assert _iv(took, 1 / 1000) in _sentence(restart) and _iv(took) in _cells(restart)
    # RF 3 over min.insync.replicas 2, no waiting gate, a catch-up of milliseconds: the roll is its 3 x 10 s downtime
    assert "with_setting" not in tiny_answers["rolling_restart"]
    assert took["value"] == pytest.approx(3 * 10000, rel=0.05)
    assert "No setting moves it much: the roll is its brokers' downtime (3 x 10 s)" in _sentence(restart)
    w = tiny_answers["load_with_setting"]  # nothing is busy at 1,000 records/s: the batch wait, halved
    assert w["setting"] == "linger.ms" and w["value"] == 2.5  # Kafka 4.x's default of 5, halved
    assert _iv(w["produce_latency_ms_p50"]) in _sentence(load) and _iv(w["produce_latency_ms_p50"]) in _cells(load)
    assert w["produce_latency_ms_p50"]["high"] < today["produce_latency_ms_p50"]["low"]  # a shorter wait, a lower p50
    assert "1x with linger.ms = 2.5" in _cells(load)
    sat, saturation = tiny_answers["saturation"], _section(page, "saturation")
    assert sat["first"] == "broker_cpu_utilization_max" and "with_setting" not in sat  # no property adds cores
    assert "No Kafka property adds to the busiest broker's CPU cores" in _sentence(saturation)


def test_the_page_names_its_inputs_and_how_the_runs_were_shortened(tiny_answers):
    page = render(tiny_answers)
    assert "<code>scenario</code>: tiny.yaml" in page
    shortened = html.unescape(_section(page, "shortened"))
    s = tiny_answers["shortening"]
    assert "shortened from the scenario's 60 s" in shortened and s["load_run_ms"] == 1000
    assert f"sent {s['records_per_run_today']:,} records" in shortened
    assert set(s["cpu_seconds"]) == {"load", "load_setting", "broker_death", "rolling_restart"}  # each part's cost
    assert "CPU-s for the rolling restart" in shortened
    assert "http" not in page.split("</style>", 1)[1].replace("kafkamodel", "")  # nothing fetched


CHROMIUM = os.environ.get("KAFKAMODEL_CHROMIUM", "/usr/bin/chromium")


@pytest.mark.browser
@pytest.mark.timeout(900)
def test_the_report_renders_offline_in_chromium(tmp_path):
    if not Path(CHROMIUM).is_file():
        if os.environ.get("KAFKAMODEL_REQUIRE_BROWSER") == "1":
            pytest.fail(f"browser tests required: no Chromium at {CHROMIUM}")
        pytest.skip(f"no Chromium at {CHROMIUM} (Debian: apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    (tmp_path / "tiny.yaml").write_text(json.dumps(TINY))
    done = subprocess.run([sys.executable, "-m", "kafkamodel", "cluster", "report", "tiny.yaml", "--seeds", "1",
                           "--duration-ms", "1000", "--windows", "20", "--out", "out"], cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=800)
    assert done.returncode == 0, done.stderr
    a = json.loads((tmp_path / "out" / "answers.json").read_text())
    assert {"load", "saturation", "broker_death", "rolling_restart", "durability", "shortening"} <= set(a)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=["--headless", "--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        problems = []
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda exc: problems.append(str(exc)))
        page.on("request", lambda r: problems.append(f"network request: {r.url}")
                if not r.url.startswith(("file://", "data:")) else None)
        page.goto((tmp_path / "out" / "report.html").as_uri())
        page.wait_for_load_state("load")
        state = page.evaluate("""() => ({scrollWidth: document.documentElement.scrollWidth,
            innerWidth: window.innerWidth, headings: [...document.querySelectorAll('h2')].map(h => h.textContent),
            images: [...document.images].map(i => ({alt: i.alt, ok: i.complete && i.naturalWidth > 0}))})""")
        page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        browser.close()
    assert state["scrollWidth"] <= state["innerWidth"]
    assert state["headings"] == ["Inputs", "How the runs were shortened", "Latency at today's load, 1.5x and 2x",
                                 "What saturates first", "A broker's death", "A rolling restart", "Durability"]
    assert state["images"] and all(i["ok"] and i["alt"] for i in state["images"])
    assert not problems, problems


def test_the_progress_bar_counts_every_model_run(capsys):
    calls = []

    def counted(s):
        calls.append(s)
        return __import__("kafkamodel").simulate(s)

    answers(load_scenario(TINY), Plan(seeds=(1,), loads=(1.0,), duration_ms=1000, durability=False), counted,
            progress=True)
    last = capsys.readouterr().err.strip().splitlines()[-1]
    # 1 load, latency's setting, death twice, the roll once (the downtime is the roll: no alternative to run)
    assert f" {len(calls)}/{len(calls)} runs" in last, last
    assert len(calls) == 5
