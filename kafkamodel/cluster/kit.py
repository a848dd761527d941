"""What the cluster report takes from the kit and the durability estimator, in one place."""

from __future__ import annotations

from ..durability.estimate import estimate as durability_estimate  # noqa: F401
from ..durability.markov import MINUTES_PER_YEAR  # noqa: F401
from ..durability.spec import Configuration, DurabilitySpec, parse_failures, zones_of  # noqa: F401
from ..kit import STYLE, Table, interval, number, percent, progress_bar, provenance  # noqa: F401
