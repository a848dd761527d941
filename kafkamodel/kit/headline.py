"""Headline numbers: what a notebook records so tests and the index can read it back.

``record_headline(numbers, finding)`` displays one output carrying two
representations: ``application/vnd.kafkamodel.headline+json`` (the finding
and the numbers, for machines) and Markdown (the finding, for readers of the
report). ``read_headline`` finds it in an executed notebook; the report
writes the numbers to ``reports/<study>.json`` beside the HTML, never as a
table in it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Mapping

MIME = "application/vnd.kafkamodel.headline+json"
MAX_FINDING = 300  # characters: a finding is one or two lines of the index


def fit(sentences: list[str], limit: int = MAX_FINDING) -> str:
    """The sentences, in order, as many as fit in `limit` characters (the first always)."""
    text = sentences[0]
    for sentence in sentences[1:]:
        if len(text) + 1 + len(sentence) <= limit:
            text += " " + sentence
    return text


def _clean(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):  # numpy scalars
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def headline_bundle(numbers: Mapping[str, Any], finding: str) -> dict:
    """The display bundle: machine-readable numbers, and the finding in Markdown (what a reader sees first)."""
    data = {"finding": finding, "numbers": _clean(dict(numbers))}
    return {MIME: data, "text/markdown": f"**Finding.** {finding}\n"}


def record_headline(numbers: Mapping[str, Any], finding: str) -> None:
    """Display the headline in the running notebook (``read_headline`` reads it back).

    Returns nothing: a notebook cell ending in this call would otherwise echo the numbers again as a raw dict.
    """
    from IPython.display import display

    display(headline_bundle(numbers, finding), raw=True)


def read_headline(notebook: "str | Path | Mapping") -> dict | None:
    """The last headline recorded in an executed notebook (a path or a notebook node), or None."""
    if isinstance(notebook, (str, Path)):
        nb = json.loads(Path(notebook).read_text(encoding="utf-8"))
    else:
        nb = notebook
    found = None
    for cell in nb.get("cells", []):
        for output in cell.get("outputs", []) or []:
            data = output.get("data") or {}
            if MIME in data:
                value = data[MIME]
                found = json.loads(value) if isinstance(value, str) else value
    return found
