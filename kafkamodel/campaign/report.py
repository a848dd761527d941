"""A campaign's report: its notebook executed against the published results, exported as the studies are.

``reports/campaign_<campaign>.html`` (offline: ``study.report.export_html``)
and ``reports/campaign_<campaign>.json`` (the finding, the headline numbers,
when and how it was made), then the index (``study.report.write_index``
lists campaigns after the studies).
"""

from __future__ import annotations

import json
from pathlib import Path

from ..folders import write_atomic
from ..paths import NOTEBOOKS, REPORTS
from ..study.headline import read_headline
from ..study.report import execute_report_notebook, export_html, provenance, write_index
from .spec import Campaign

NOTEBOOK = NOTEBOOKS / "70_campaign.ipynb"
PREFIX = "campaign_"  # reports/campaign_<name>.html: apart from the studies' names


def report(campaign: Campaign, processed: Path, *, reports: Path | None = None, timeout: float = 600.0) -> Path:
    """Execute the campaign notebook on `processed` and export it; returns the HTML's path."""
    reports = Path(reports or REPORTS)
    nb = execute_report_notebook(NOTEBOOK, Path(processed), {"campaign": campaign.name, "processed": str(processed)},
                                 timeout)
    headline = read_headline(nb) or {}
    meta = json.loads((Path(processed) / "meta.json").read_text())
    out = reports / f"{PREFIX}{campaign.name}.html"
    write_atomic(out, export_html(nb, f"{campaign.title}: kafkamodel"))
    record = {"campaign": campaign.name, "title": campaign.title, "question": campaign.question, "status": "done",
              "finding": headline.get("finding", ""), "numbers": headline.get("numbers", {}), "runs": meta["runs"],
              "schedules": meta["schedules"], "settings": len(meta["settings"]), "html": out.name, **provenance()}
    write_atomic(reports / f"{PREFIX}{campaign.name}.json", json.dumps(record, indent=2) + "\n")
    write_index(reports)
    return out
