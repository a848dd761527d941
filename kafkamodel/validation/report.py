"""The validation document (``runner.run_cases``) as a self-contained HTML page and as the README's table.

Every sentence is made here from the document's numbers (``figure_sentence``, ``finding``); the only prose from
the case files is what they quote or assume (the setup as published, the assumptions, what each run does).
"""

from __future__ import annotations

import html
import math
import re
from pathlib import Path

from ..kit import STYLE, number, provenance
from .bands import BANDS

README_START = "<!-- validation table: python -m kafkamodel validation --readme -->"
README_END = "<!-- end of validation table -->"
KIND_LABEL = {"throughput": "throughput", "latency": "latency up to p99", "latency_p999": "latency p99.9",
              "ratio": "ratio"}
EXTRA_STYLE = (".in{color:#116611;font-weight:600}.out{color:#a11;font-weight:600}td.n{text-align:right;"
               "white-space:nowrap}td.run{white-space:nowrap}h2{margin-top:2.5rem}h3{margin-top:1.5rem}blockquote{margin:.5rem 0;color:#444}")


def with_unit(x: float, unit: str) -> str:
    """A value with its unit (a ratio has none)."""
    return number(x) if unit == "ratio" else f"{number(x)} {unit}"


def _model_text(f: dict) -> str:
    return "no value" if f["model"] is None else with_unit(f["model"], f["unit"])


def _band_text(f: dict) -> str:
    b = f["band"]
    if b["on"] == "value":
        return f"{number(b['low'])} – {number(b['high'])}"
    return f"{number(b['low'])}× – {number(b['high'])}×"


def figure_sentence(f: dict) -> str:
    """One sentence on a figure, every number read from it."""
    verdict = "inside" if f["inside"] else "outside"
    published = with_unit(f["published"]["value"], f["unit"])
    if f["model"] is None:
        why = f" ({f['note']})" if f["note"] else ""
        return f"The model gives no value{why}, against {published} published: {verdict} the band."
    if f["band"]["on"] == "value":
        return (f"The model's ratio is {number(f['model'])} against {number(f['published']['value'])} published; the band is "
                f"{f['band']['text']}: {verdict}.")
    return (f"The model gives {number(f['model'])} {f['unit']} against {published} published: "
            f"{number(f['ratio'])}× the published value, {verdict} the band ({f['band']['text']}, "
            f"{_band_text(f)}).")


def run_sentence(r: dict) -> str:
    """What bounded a run, as far as its measures say (every number read from them); "" without them."""
    c = r["context"]
    parts = []
    if c.get("producer_buffer_wait_ms"):
        parts.append(f"send() waited on buffer.memory {number(c['producer_buffer_wait_ms'])} ms in total")
    if c.get("broker_cpu_utilization_max") is not None:
        parts.append(f"the busiest broker's cores were {number(100 * c['broker_cpu_utilization_max'])}% busy")
    if c.get("gc_pause_ms_per_s"):
        parts.append(f"GC paused a broker {number(c['gc_pause_ms_per_s'])} ms per second on average")
    if c.get("disk_write_utilization_max"):
        parts.append(f"its disk wrote back {number(100 * c['disk_write_utilization_max'])}% of the run")
    if "writeback_stall_ms" in c and c.get("dirty_mib_max"):
        parts.append(f"dirty pages peaked at {number(c['dirty_mib_max'])} MiB and "
                     + (f"writers were throttled {number(c['writeback_stall_ms'])} ms" if c["writeback_stall_ms"]
                        else "no writer was throttled (the dirty limit was not reached in the run)"))
    return ("In this run " + "; ".join(parts) + ".") if parts else ""


def finding(doc: dict) -> str:
    """The headline: how many figures are inside, per kind, and the furthest from its published value."""
    figures = [f for c in doc["cases"] for f in c["figures"]]
    parts = [f"{doc['totals']['inside']} of {doc['totals']['figures']} figures are inside their bands"]
    per_kind = []
    for kind, label in KIND_LABEL.items():
        of_kind = [f for f in figures if f["kind"] == kind]
        if of_kind:
            per_kind.append(f"{label} {sum(f['inside'] for f in of_kind)} of {len(of_kind)}")
    text = parts[0] + (f" ({'; '.join(per_kind)})" if per_kind else "") + "."
    rated = [f for f in figures if f["ratio"] is not None and f["ratio"] >= 0]
    if rated:  # how far, either way: a ratio of 0 (a value truncated to 0 ms) is the furthest
        worst = max(rated, key=lambda f: abs(math.log(f["ratio"])) if f["ratio"] > 0 else math.inf)
        text += (f" Furthest from its published value: {worst['title']} ({worst['case']}), "
                 f"{number(worst['ratio'])}× the published value.")
    missing = [f for f in figures if f["model"] is None]
    if missing:
        text += f" {len(missing)} figure{'s' * (len(missing) > 1)} got no value from the model."
    return text


def _rows(doc: dict):
    for c in doc["cases"]:
        for f in c["figures"]:
            yield c, f


def html_page(doc: dict) -> str:
    how = provenance()
    esc = html.escape
    bands = "; ".join(f"{KIND_LABEL[k]}: model/published {b.text}" for k, b in BANDS.items())
    summary = "".join(
        f"<tr><td>{esc(f['title'])}</td><td>{esc(c['source']['authors'][0])} {c['source']['year']}</td>"
        f"<td class='n'>{esc(with_unit(f['published']['value'], f['unit']))}</td><td class='n'>{esc(_model_text(f))}</td>"
        f"<td class='n'>{number(f['ratio'], na='–')}</td><td class='n'>{_band_text(f)}</td>"
        f"<td class='{'in' if f['inside'] else 'out'}'>{'inside' if f['inside'] else 'outside'}</td></tr>"
        for c, f in _rows(doc))
    sections = "".join(_case_section(c) for c in doc["cases"])
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>kafkamodel validation</title>"
            f"<style>{STYLE}{EXTRA_STYLE}</style></head><body><h1>Validation against published measurements</h1>"
            f"<p><b>{esc(finding(doc))}</b></p>"
            f"<p>Each published figure is reproduced as a scenario with the setup its source published "
            f"(docs/validation.md). Bands (issue 20): {esc(bands)}; a ratio of two figures has the band its case "
            f"names.</p><table><tr><th>figure</th><th>source</th><th>published</th><th>model</th>"
            f"<th>model / published</th><th>band</th><th></th></tr>{summary}</table>{sections}"
            f"<p class='meta'>Model run {esc(doc['generated_at'])} by <code>{esc(doc['command'])}</code> "
            f"({esc(doc['generated_by'])}" + (f", commit {esc(doc['git_commit'])}" if doc.get("git_commit") else "")
            + f"); page written {how['generated_at']}"
            + f"; {esc(how['host'])}.</p></body></html>\n")


def _case_section(c: dict) -> str:
    esc = html.escape
    s = c["source"]
    v = s["verified"]
    published = "".join(f"<tr><td>{esc(r['item'])}</td><td>{esc(r['value'])}</td><td>{esc(r['tag'])}</td></tr>"
                        for r in c["setup"]["published"])
    unknown = "".join(f"<tr><td>{esc(r['item'])}</td><td>{esc(r['assumed'])}</td></tr>" for r in c["setup"]["unknown"])
    runs = "".join(
        f"<tr><td class='run'><code>{esc(r['name'])}</code></td><td>{esc(r['what'])}<br><small>{esc(r['scenario'])}; records "
        f"counted from {number(r['window_ms'][0] / 1000)} s to {number(r['window_ms'][1] / 1000)} s</small></td>"
        f"<td class='n'>{number(r['cpu_seconds'])} s</td><td>{esc(run_sentence(r))}<br><small>"
        + ", ".join(f"{esc(k)} {number(x)}" for k, x in r["context"].items()) + "</small></td></tr>"
        for r in c["runs"])
    figures = "".join(
        f"<tr><td>{esc(f['title'])}<br><small>{esc(f['quantity'])}"
        + (f"<br>{esc(f['match'])}" if f.get("match") else "") + "</small></td>"
        f"<td>{esc(with_unit(f['published']['value'], f['unit']))} <small>({esc(f['published']['tag'])})</small>"
        + (f"<blockquote>“{esc(f['published']['quote'])}”</blockquote>" if f["published"].get("quote") else "")
        + f"</td><td>{esc(figure_sentence(f))}"
        + (f"<br><small>Band: {esc(f['band']['source'])}</small>" if f["band"].get("source") else "")
        + "</td></tr>" for f in c["figures"])
    link = f"<a href='{esc(s['url'])}'>{esc(s['title'])}</a>"
    return (f"<h2>{esc(', '.join(s['authors']))} {s['year']}: {link}</h2>"
            f"<p>{esc(s.get('publisher', ''))}" + (f"; configs: {esc(s['config_url'])}" if s.get("config_url") else "")
            + f". Verified: <b>{esc(v['tag'])}</b> ({esc(v['meaning'])}). {esc(v['how'])}</p>"
            f"<h3>Figures</h3><table><tr><th>figure (model quantity)</th><th>published</th><th>model</th></tr>"
            f"{figures}</table>"
            f"<h3>Setup as published</h3><table><tr><th>item</th><th>value</th><th>tag</th></tr>{published}</table>"
            f"<h3>Not published: what the scenario assumes</h3><table><tr><th>item</th><th>assumed</th></tr>{unknown}"
            f"</table><h3>Runs</h3><table><tr><th>run</th><th>what</th><th>CPU</th><th>the model's measures</th></tr>"
            f"{runs}</table>")


def readme_table(doc: dict) -> str:
    """The README's table (markdown) and its one-line finding, from the document."""
    lines = [finding(doc), "",
             "| figure | source | published | model | model / published | band | inside? |",
             "|---|---|---|---|---|---|---|"]
    for c, f in _rows(doc):
        lines.append(f"| {f['title']} | {c['source']['authors'][0]} {c['source']['year']} | "
                     f"{with_unit(f['published']['value'], f['unit'])} | {_model_text(f)} | {number(f['ratio'], na='–')} | "
                     f"{_band_text(f)} | {'yes' if f['inside'] else '**no**'} |")
    lines.append("")
    commit = f", commit {doc['git_commit']}" if doc.get("git_commit") else ""
    lines.append(f"Model run {doc['generated_at']} ({doc['generated_by']}{commit}): `{doc['command']}`.")
    return "\n".join(lines)


def update_readme(readme: Path, doc: dict) -> str:
    """README.md's text with the table between the markers replaced (the markers must be there)."""
    text = Path(readme).read_text(encoding="utf-8")
    pattern = re.compile(re.escape(README_START) + r".*?" + re.escape(README_END), re.S)
    if not pattern.search(text):
        raise ValueError(f"{readme}: no validation table markers ({README_START} ... {README_END})")
    return pattern.sub(lambda _: f"{README_START}\n{readme_table(doc)}\n{README_END}", text, count=1)
