"""Reports: execute a study's analysis notebook against its aggregates, export offline HTML, and the index.

``reports/<study>.html``: the executed notebook without code cells, figures
embedded as PNG, no scripts from the network (require.js, MathJax, jQuery,
mermaid and the widget manager are all switched off, widget state cleared).
``reports/<study>.json``: the headline the notebook recorded and how the
report was made; ``reports/index.html`` links every study with its one-line
finding (a pending study gets a placeholder page saying so).
"""

from __future__ import annotations

import html
import json
import os
import platform
import re
import subprocess
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from ..folders import write_atomic
from ..paths import CHECKOUT, PROCESSED, REPORTS, ROOT
from .engines.papermill import KERNEL_ARGS
from .headline import read_headline
from .spec import Spec, StudyError
from .specfile import all_specs, load_spec, notebook_path
from .sweep import check_timeout

EMPTY_SCRIPT = re.compile(r"<script src=\"\">\s*</script>")
TEMPLATES = Path(__file__).with_name("templates")  # report.html.j2: the lab template, figures with their alt text
CDN_TRAITS = ("require_js_url", "mathjax_url", "jquery_url", "mermaid_js_url", "mermaid_layout_elk_js_url",
              "jupyter_widgets_base_url", "widget_renderer_url")
STYLE = """body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:62rem;margin:2rem auto;padding:0 1rem;
color:#222;line-height:1.45}table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.5rem;
text-align:left;vertical-align:top}th{background:#f4f4f4}.pending{color:#8a6d00}.missing{color:#999}small,.meta{color:#666}
code{background:#f4f4f4;padding:0 .2rem}"""


@dataclass
class ReportOutcome:
    study: str
    html: Path
    finding: str
    seconds: float

    def line(self) -> str:
        return f"{self.study}: {self.html} ({self.seconds:.1f} s)"


INTERACTIVE = "interactive"  # the tag of a notebook's cells about its widget panel: not in a static report


def export_html(notebook, title: str = "kafkamodel report") -> str:
    """Offline HTML of an executed notebook node: outputs only, no external scripts, and no cell tagged
    ``interactive`` (the widget panel and its text: a static page has no panel)."""
    import copy

    from nbconvert import HTMLExporter

    nb = copy.deepcopy(notebook)
    nb.cells = [c for c in nb.cells if INTERACTIVE not in c.get("metadata", {}).get("tags", [])]
    nb.metadata.pop("widgets", None)  # saved widget state would pull the widget manager from a CDN
    exporter = HTMLExporter(template_name="lab", extra_template_paths=[str(TEMPLATES)],
                            template_file="report.html.j2", exclude_input=True, exclude_input_prompt=True,
                            exclude_output_prompt=True)
    for trait in CDN_TRAITS:
        if exporter.has_trait(trait):
            setattr(exporter, trait, "")
    body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": title}})
    body = EMPTY_SCRIPT.sub("", body)  # what the emptied URLs leave behind
    return body


def provenance() -> dict:
    """When, how and from which kit a report was made: the commit only when the kit runs from its own clone
    (an installed kit must not name the commit of whatever repository the user happens to be in)."""
    commit = None
    try:
        if CHECKOUT is not None:
            commit = subprocess.run(["git", "-C", str(CHECKOUT), "rev-parse", "--short", "HEAD"], capture_output=True,
                                    text=True, timeout=5).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        pass
    from .. import __version__

    return {"generated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "command": os.environ.get("KAFKAMODEL_COMMAND", "python -m kafkamodel report"),
            "kafkamodel": __version__, "git_commit": commit, "host": f"{platform.system()} {platform.machine()}, "
            f"{os.cpu_count()} cores, Python {platform.python_version()}"}


def report(study: "str | Spec", *, processed: Path | None = None, reports: Path | None = None,
           timeout: float = 600.0, index: bool = True) -> ReportOutcome:
    """Execute the study's analysis notebook against its aggregates and export reports/<study>.html."""
    t0 = time.perf_counter()
    spec = study if isinstance(study, Spec) else load_spec(study)
    timeout = check_timeout(timeout)
    reports = Path(reports or REPORTS)
    if spec.is_pending:
        return _placeholder(spec, reports, index, t0)
    folder = Path(processed or PROCESSED) / spec.study
    if not (folder / "meta.json").is_file():
        raise StudyError([f"{spec.study}: no aggregates in {folder}; run `python -m kafkamodel aggregate {spec.study}` first"])
    source = notebook_path(spec.notebook, Path(spec.source).parent)
    nb = execute_report_notebook(source, folder, {"study": spec.study, "processed": str(folder), "interactive": False},
                                 timeout, label=spec.notebook)
    meta = json.loads((folder / "meta.json").read_text())
    record = publish(nb, reports, spec.study, f"{spec.title}: kafkamodel", index=index, study=spec.study,
                     title=spec.title, question=spec.question, status="done", runs=meta.get("runs"),
                     configs=meta.get("configs"), aggregated_at=meta.get("generated_at"))
    out = reports / record["html"]
    return ReportOutcome(spec.study, out, record["finding"], time.perf_counter() - t0)


def publish(nb, reports: Path, name: str, page_title: str, *, index: bool = True, **about) -> dict:
    """Export an executed report notebook to ``reports/<name>.html`` and write ``reports/<name>.json`` beside it:
    `about`, the finding and the headline numbers the notebook recorded (for machines: the page shows no table
    of them), the HTML's name and how it was made; then the index. Returns that record."""
    headline = read_headline(nb) or {}
    out = reports / f"{name}.html"
    write_atomic(out, export_html(nb, page_title))
    record = {**about, "finding": headline.get("finding", ""), "numbers": headline.get("numbers", {}),
              "html": out.name, **provenance()}
    write_atomic(reports / f"{name}.json", json.dumps(record, indent=2) + "\n")
    if index:
        write_index(reports)
    return record


def execute_report_notebook(source: Path, folder: Path, parameters: dict, timeout: float, label: str | None = None):
    """Execute a report notebook on the results in `folder` into ``folder/report.ipynb`` (hidden until it has
    finished) and return it; a failure is one line naming the notebook (`label`, else its file name)."""
    import nbformat
    import papermill as pm

    executed = folder / f".report-{uuid.uuid4().hex[:8]}.ipynb"
    try:
        pm.execute_notebook(str(source), str(executed), parameters=parameters, execution_timeout=timeout,
                            progress_bar=False, log_output=False, kernel_name="python3", cwd=str(ROOT),
                            extra_arguments=KERNEL_ARGS)
    except Exception as exc:
        ename, evalue = getattr(exc, "ename", type(exc).__name__), getattr(exc, "evalue", str(exc))
        raise StudyError([f"{label or source.name}: failed against {folder}: {ename}: "
                          f"{' '.join(str(evalue).split())[:300]} (executed notebook: {executed})"]) from None
    os.replace(executed, folder / "report.ipynb")
    return nbformat.read(str(folder / "report.ipynb"), as_version=4)


def _placeholder(spec: Spec, reports: Path, index: bool, t0: float) -> ReportOutcome:
    finding = f"Pending: {spec.pending}"
    body = (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(spec.title)} (pending)</title>"
            f"<style>{STYLE}</style></head><body><p><a href='index.html'>← all studies</a></p>"
            f"<h1>{html.escape(spec.title)}</h1><p class='pending'><b>Pending.</b> {html.escape(spec.pending)}</p>"
            f"<p>{html.escape(spec.question)}</p><p>This study has no runs and no numbers yet. It will be added as "
            f"a sweep spec (<code>data/studies/{spec.study}.yaml</code>), an analysis notebook and its analysis module; "
            f"the sweep, Spark aggregation and this report then come from the same pipeline as the other studies.</p>"
            f"</body></html>\n")
    out = reports / f"{spec.study}.html"
    write_atomic(out, body)
    record = {"study": spec.study, "title": spec.title, "question": spec.question, "status": "pending",
              "finding": finding, "numbers": {}, "html": out.name, **provenance()}
    write_atomic(reports / f"{spec.study}.json", json.dumps(record, indent=2) + "\n")
    if index:
        write_index(reports)
    return ReportOutcome(spec.study, out, finding, time.perf_counter() - t0)


def write_index(reports: Path | None = None, specs: list[Spec] | None = None) -> Path:
    """reports/index.html: every study, its one-line finding, and when and how each report was made."""
    reports = Path(reports or REPORTS)
    rows = []
    for spec in specs if specs is not None else all_specs():
        path = reports / f"{spec.study}.json"
        record = json.loads(path.read_text()) if path.is_file() else None
        title = html.escape(spec.title)
        if record is None and spec.is_pending:
            record = {"status": "pending", "finding": f"Pending: {spec.pending}", "html": f"{spec.study}.html"}
        if record is None:
            rows.append(f"<tr><td>{title}</td><td class='missing'>not generated yet: "
                        f"<code>python -m kafkamodel report {spec.study}</code></td><td></td></tr>")
            continue
        cls = " class='pending'" if record.get("status") == "pending" else ""
        made = (f"{record.get('generated_at', '')}<br><code>{html.escape(record.get('command', ''))}</code>"
                + (f"<br>{record['runs']} runs, {record['configs']} configurations" if record.get("runs") else ""))
        link = f"<a href='{html.escape(record['html'])}'>{title}</a>" if (reports / record["html"]).is_file() else title
        rows.append(f"<tr><td>{link}</td>"
                    f"<td{cls}>{html.escape(record.get('finding') or '')}</td><td class='meta'>{made}</td></tr>")
    campaigns = _campaign_rows(reports)
    validation = _validation_paragraph(reports)
    how = provenance()
    page = (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>kafkamodel studies</title><style>{STYLE}</style>"
            f"</head><body><h1>kafkamodel studies</h1><p>Kafka replication studied on a deterministic discrete-event model: "
            f"each study is a sweep (grid × seeds) run with papermill or as Spark tasks, aggregated on Spark, and reported from its "
            f"analysis notebook. Every report is a single offline HTML file.</p>"
            f"<table><tr><th>study</th><th>finding</th><th>generated</th></tr>{''.join(rows)}</table>"
            + (f"<h2>Fault campaigns</h2><p>Random fault schedules against settings, each checked for what it "
               f"promises (<code>python -m kafkamodel campaign NAME</code>).</p><table><tr><th>campaign</th>"
               f"<th>finding</th><th>generated</th></tr>{''.join(campaigns)}</table>" if campaigns else "")
            + validation
            + f"<p class='meta'>Index written {how['generated_at']} by <code>{html.escape(how['command'])}</code>; "
            f"kafkamodel {how['kafkamodel']}"
            + (f", commit {how['git_commit']}" if how["git_commit"] else "")
            + f"; {html.escape(how['host'])}. Regenerate everything with <code>make study</code> "
            f"(bigger: <code>make study SCALE=4</code>).</p></body></html>\n")
    out = reports / "index.html"
    write_atomic(out, page)
    return out


def _validation_paragraph(reports: Path) -> str:
    """The validation set's finding and link (reports/validation.json, written by ``python -m kafkamodel
    validation``), or nothing."""
    path = reports / "validation.json"
    if not path.is_file() or not (reports / "validation.html").is_file():
        return ""
    record = json.loads(path.read_text())
    return (f"<h2>Validation against published measurements</h2><p><a href='validation.html'>"
            f"{html.escape(record.get('finding') or 'the report')}</a></p><p class='meta'>{record.get('generated_at', '')}"
            f" <code>{html.escape(record.get('command', ''))}</code></p>")


def _campaign_rows(reports: Path) -> list[str]:
    """A row per campaign report (reports/campaign_<name>.json, written by kafkamodel.campaign.report)."""
    rows = []
    for path in sorted(reports.glob("campaign_*.json")):
        record = json.loads(path.read_text())
        title = html.escape(record.get("title") or record.get("campaign", path.stem))
        link = f"<a href='{html.escape(record['html'])}'>{title}</a>" if (reports / record["html"]).is_file() else title
        made = (f"{record.get('generated_at', '')}<br><code>{html.escape(record.get('command', ''))}</code>"
                f"<br>{record.get('schedules', 0):,} schedules x {record.get('settings', 0)} settings, "
                f"{record.get('runs', 0):,} runs")
        rows.append(f"<tr><td>{link}</td><td>{html.escape(record.get('finding') or '')}</td>"
                    f"<td class='meta'>{made}</td></tr>")
    return rows
