"""The reports as a reader meets them: finding and figure first, then tables a person can read.

Over every table of every study's report (tiny studies, two seeds): no index
column, no NaN, integers without a decimal point, no number with more
significant digits than three (what 2-5 seeds support), no interval or
latency below zero, and a footnote wherever a cell carries a footnote mark.
Over every report: no table of internal headline keys (they go to the JSON
beside it), no interval outside the measure's physical range (a latency below
zero or longer than the run), a finding of at most ~300 characters, and no
"Explore" section about a panel a static page does not have.
"""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest
from bs4 import BeautifulSoup
from conftest import STUDY_NAMES

from kafkamodel.kit.headline import MAX_FINDING
from kafkamodel.kit.present import Table, interval, number, percent, percent_interval
from kafkamodel.kit.tables import load_aggregates

NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?(?![\w.])")
MISSING = {"nan", "NaN", "None", "<NA>", "NaT", "inf", "-inf"}


def _tables(html: str):
    soup = BeautifulSoup(html, "html.parser")
    return soup, soup.find_all("table")


def _significant(token: str) -> int:
    digits = token.lstrip("-").replace(",", "").replace(".", "").lstrip("0")
    return len(digits)


@pytest.mark.parametrize("study", STUDY_NAMES)
def test_every_report_table_reads_well(study_reports, study):
    html = (study_reports / f"{study}.html").read_text()
    soup, tables = _tables(html)
    assert tables, f"{study}: no tables"
    for table in tables:
        header = [th.get_text(" ", strip=True) for th in table.find("thead").find_all("th")]
        assert header and all(header), f"{study}: a blank header cell (an index column?): {header}"
        rows = table.find("tbody").find_all("tr")
        assert rows
        for tr in rows:
            assert not tr.find_all("th"), f"{study}: a row header (the pandas index) in {header}"
            cells = [td.get_text(" ", strip=True) for td in tr.find_all("td")]
            assert len(cells) == len(header)
            for column, text in zip(header, cells):
                where = f"{study}: {column!r} = {text!r}"
                assert not MISSING & set(text.split()), where
                for token in NUMBER.findall(text):
                    if "." in token:  # a non-integer: never '3.0', never more digits than three significant
                        assert not re.fullmatch(r"-?[\d,]+\.0+", token), where
                        assert _significant(token) <= 3, where
                    if " – " in text or "latency" in column or "(ms)" in column or "p99" in column:
                        assert not token.startswith("-"), where  # intervals and latencies stay >= 0
        marked = [td for td in table.find_all("td") if td.get_text(strip=True).endswith("*")]
        if marked:
            note = table.find_next("p", class_="table-note")
            assert note is not None and note.get_text().startswith("*"), f"{study}: a '*' without its footnote"


def test_quorum_vs_isr_footnotes_the_theory_rows_it_did_not_run(study_reports):
    soup, _ = _tables((study_reports / "quorum_vs_isr.html").read_text())
    notes = " ".join(p.get_text() for p in soup.find_all("p", class_="table-note"))
    # the tiny study runs RF 3 and 5: theory's RF 2 (f=1 under ISR) has no simulated counterpart
    assert "* Theory's RF (2, 4, 7) was not simulated: the study runs RF 3, 5" in notes
    assert "intervals and whiskers show the range over seeds" in notes  # the interval method, named (two seeds)


def test_every_report_opens_with_its_finding_and_a_figure(study_reports):
    for study in STUDY_NAMES:
        html = (study_reports / f"{study}.html").read_text()
        finding, figure, table = html.find("Finding."), html.find("<img "), html.find("<table")
        assert 0 < finding < figure < table, study
        soup = BeautifulSoup(html, "html.parser")
        alts = [img.get("alt", "") for img in soup.find_all("img")]
        assert alts and all(alt and alt != "figure" for alt in alts), study  # each figure named by its titles


def test_lag_policies_says_why_expands_outnumber_shrinks(study_reports):
    text = BeautifulSoup((study_reports / "lag_policies.html").read_text(), "html.parser").get_text(" ")
    assert "one shrink removes every follower that is out of sync at that check, in one ISR change" in text


def test_number_and_interval_formatting():
    assert [number(x) for x in (3000.623287, 3.0, 2, 0.012345, 2.5, 127.08, -1.86, float("nan"), None, True)] == [
        "3,001", "3", "2", "0.0123", "2.5", "127", "-1.86", "", "", "yes"]
    assert number(float("nan"), na="not run") == "not run"
    assert interval(1.234, 130.2) == "1.23 – 130" and interval(None, 3) == "" and interval(2.0001, 1.9999) == "2"
    table = Table(pd.DataFrame({"mode": ["isr", "quorum"], "p99 (ms)": [3000.623287, float("nan")],
                                "runs": [2.0, 3.0]}), ["a note"], na="not run")
    assert table.cells().to_dict("list") == {"mode": ["isr", "quorum"], "p99 (ms)": ["3,001", "not run"],
                                             "runs": ["2", "3"]}
    html = table._repr_html_()
    assert "nan" not in html.lower() and "<th class=\"row_heading" not in html and "a note" in html


def _text(study_reports, study: str) -> str:
    return BeautifulSoup((study_reports / f"{study}.html").read_text(), "html.parser").get_text(" ")


@pytest.mark.parametrize("study", STUDY_NAMES)
def test_no_internal_key_table_and_the_headline_beside_the_html(study_reports, study):
    """The machine-readable headline is reports/<study>.json; none of its snake_case keys shows on the page."""
    record = json.loads((study_reports / f"{study}.json").read_text())
    keys = [k for k in record["numbers"] if "_" in k]
    assert len(keys) >= 3, f"{study}: the JSON carries no headline numbers"
    html = (study_reports / f"{study}.html").read_text()
    soup, tables = _tables(html)
    cells = {td.get_text(" ", strip=True) for table in tables for td in table.find_all(["td", "th"])}
    assert not {"headline number", *keys} & cells, f"{study}: an internal key table"
    shown = [k for k in keys if re.search(rf"(?<![\w.]){re.escape(k)}(?![\w.])", soup.get_text(" "))]
    assert not shown, f"{study}: internal keys on the page: {shown[:5]}"


@pytest.mark.parametrize("study", STUDY_NAMES)
def test_a_static_report_has_no_explore_section(study_reports, study):
    soup = BeautifulSoup((study_reports / f"{study}.html").read_text(), "html.parser")
    headings = [h.get_text(" ", strip=True) for h in soup.find_all(["h1", "h2", "h3"])]
    assert not [h for h in headings if h.startswith("Explore")], f"{study}: {headings}"
    assert "interactive = True" not in soup.get_text(" ") and "panel re-runs the model" not in soup.get_text(" ")


@pytest.mark.parametrize("study", STUDY_NAMES)
def test_findings_are_one_or_two_lines(study_reports, study):
    finding = json.loads((study_reports / f"{study}.json").read_text())["finding"]
    assert 40 < len(finding) <= MAX_FINDING, f"{study}: {len(finding)} characters: {finding}"
    assert "n/a" not in finding and "nan" not in finding.split()
    for token in NUMBER.findall(finding):  # 16300 is written 16,300; no more than three significant digits
        plain = token.replace(",", "")
        if "." in plain:
            assert _significant(token) <= 3, f"{study}: {token} in {finding}"
        elif len(plain.lstrip("-")) > 4:
            assert "," in token, f"{study}: {token} without a thousands separator in {finding}"
    index = BeautifulSoup((study_reports / "index.html").read_text(), "html.parser")
    assert finding in index.get_text(" ")


@pytest.mark.parametrize("study", STUDY_NAMES)
def test_intervals_stay_in_the_physical_range(aggregated, study_reports, study):
    """Every interval the aggregates hold (the plots' whiskers, the tables' brackets) lies where the measure can: a
    count or a duration never below zero, a latency or a wall-clock time never longer than the run; with fewer
    than five seeds the interval is the range over seeds, and the report says so."""
    agg = load_aggregates(study, aggregated(study))
    stats = agg.stats.dropna(subset=["lo", "hi"])
    assert len(stats), study
    run_ms = agg.runs.groupby("config_id")["duration_ms"].max()
    never_negative = stats["min"] >= 0
    assert (stats.loc[never_negative, "lo"] >= 0).all(), study
    bounded = stats["measure"].str.contains("latency|_wall_ms|time_to_", regex=True)
    longest = stats.loc[bounded, "config_id"].map(run_ms)
    over = stats.loc[bounded][stats.loc[bounded, "hi"] > longest + 1e-6]
    assert over.empty, f"{study}: intervals beyond the run: {over[['measure', 'hi']].head().to_dict('records')}"
    few = stats["n"] < 5
    assert (stats.loc[few, "interval"] == "range over seeds").all()
    assert ((stats.loc[few, "lo"] == stats.loc[few, "min"]) & (stats.loc[few, "hi"] == stats.loc[few, "max"])).all()
    assert "range over seeds" in _text(study_reports, study)
    # the tables' intervals: a latency's ends between 0 and the run's length
    longest_run = float(agg.runs["duration_ms"].max())
    _, tables = _tables((study_reports / f"{study}.html").read_text())
    for table in tables:
        header = [th.get_text(" ", strip=True) for th in table.find("thead").find_all("th")]
        for tr in table.find("tbody").find_all("tr"):
            for column, td in zip(header, tr.find_all("td")):
                text = td.get_text(" ", strip=True)
                if " – " not in text or "(ms)" not in column:
                    continue
                ends = [float(t.replace(",", "")) for t in NUMBER.findall(text.split("(")[-1])[-2:]]
                assert all(0 <= e <= longest_run for e in ends), f"{study}: {column!r} = {text!r}"


def test_percentages_read_as_percentages():
    assert [percent(x) for x in (0.0, 5.55e-15, 0.004, 0.0123, 9.2345, 56.1, 100.0)] == [
        "0", "< 0.01", "< 0.01", "0.0123", "9.23", "56.1", "100"]
    assert percent_interval(5.55e-15, 56.1) == "< 0.01 – 56.1" and percent_interval(0.0, 1.5) == "0 – 1.5"


def test_a_campaign_rate_of_zero_reads_as_zero():
    """The campaign report once printed '0% (0.00000000000000555 – 56.1)': Wilson's lower end at k = 0 is exactly 0
    (and the upper end at k = n exactly 1), and a share is written as a percentage."""
    from kafkamodel.campaign import analysis

    assert analysis.wilson(0, 5)[0] == 0.0 and analysis.wilson(5, 5)[1] == 1.0
    z2 = 1.959963984540054 ** 2
    top = number(100 * z2 / (5 + z2))  # Wilson's upper end at k = 0: z² / (n + z²)
    assert analysis._percent(0, 5) == f"0% (0 – {top}%)" == "0% (0 – 43.4%)"
    assert analysis._percent(5, 5) == f"100% ({number(100 - 100 * z2 / (5 + z2))} – 100%)"


def test_recovery_protocols_says_leader_epochs_do_not_save_what_was_never_fsynced(study_reports):
    """KIP-101's second scenario: 0.11 ends the divergence, but both replicas lost power and what neither had
    fsynced is lost on 0.11 as on 0.10; the finding must say so, with the number the table shows."""
    from kafkamodel.studies.common import fmt

    record = json.loads((study_reports / "recovery_protocols.json").read_text())
    n = record["numbers"]
    assert n["kip101_power_loss_fix_divergence"] == 0 < n["kip101_power_loss_anomaly_divergence"]
    assert n["kip101_power_loss_fix_committed_lost"] > 0
    assert f"not its {fmt(n['kip101_power_loss_fix_committed_lost'])} committed records lost" in record["finding"]
