"""A campaign's report: its notebook executed against the published results, exported as the studies are.

``reports/campaign_<campaign>.html`` (offline: ``kit.report.export_html``)
and ``reports/campaign_<campaign>.json`` (the finding, the headline numbers,
when and how it was made), then the index (``kit.report.write_index``
lists campaigns after the studies).
"""

from __future__ import annotations

import json
from pathlib import Path

from ..kit import execute_report_notebook, publish
from ..paths import NOTEBOOKS, REPORTS
from .spec import Campaign

NOTEBOOK = NOTEBOOKS / "70_campaign.ipynb"
PREFIX = "campaign_"  # reports/campaign_<name>.html: apart from the studies' names


def report(campaign: Campaign, processed: Path, *, reports: Path | None = None, timeout: float = 600.0) -> Path:
    """Execute the campaign notebook on `processed` and export it; returns the HTML's path."""
    reports = Path(reports or REPORTS)
    nb = execute_report_notebook(NOTEBOOK, Path(processed), {"campaign": campaign.name, "processed": str(processed)},
                                 timeout)
    meta = json.loads((Path(processed) / "meta.json").read_text())
    record = publish(nb, reports, f"{PREFIX}{campaign.name}", f"{campaign.title}: kafkamodel", campaign=campaign.name,
                     title=campaign.title, question=campaign.question, status="done", runs=meta["runs"],
                     schedules=meta["schedules"], settings=len(meta["settings"]))
    return reports / record["html"]
