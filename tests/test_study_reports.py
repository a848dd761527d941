"""The reports as a reader meets them: finding and figure first, then tables a person can read.

Over every table of every study's report (tiny studies, two seeds): no index
column, no NaN, integers without a decimal point, no number with more
significant digits than three (what 2-5 seeds support), no interval or
latency below zero, and a footnote wherever a cell carries a footnote mark.
"""

from __future__ import annotations

import re

import pandas as pd
import pytest
from bs4 import BeautifulSoup
from conftest import STUDY_NAMES

from kafkamodel.study.present import Table, interval, number

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
    assert "Student t on the log of the per-seed values for latencies" in notes  # the interval method, named


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
