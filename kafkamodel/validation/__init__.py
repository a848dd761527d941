"""The validation set: published measurements of real Kafka, each reproduced as a scenario, side by side with the model.

``data/validation/<case>.yaml`` holds one source each: where it was published and how its figures were checked,
its setup as published (and what the scenario assumes where the source is silent), a base scenario with the
contract's keys, named runs (overrides of that scenario) and the figures: each a model quantity on a run (or the
ratio or difference of two), the published value and its kind, which sets the band (``bands``).

* ``cases``: reading and checking the case files (one line per problem, naming the file and the field);
* ``bands``: the issue's bands per kind of figure, and whether a value is inside;
* ``measure``: a quantity from a run's Result (summary keys, or records over a window);
* ``runner``: running a set of cases into one JSON-ready document;
* ``report``: that document as a self-contained HTML page and as the README's table.

``python -m kafkamodel validation`` runs it (docs/validation.md).
"""

from .bands import BANDS, band_for, inside
from .cases import Case, ValidationError, load_case, load_cases

__all__ = ["BANDS", "Case", "ValidationError", "band_for", "inside", "load_case", "load_cases"]
