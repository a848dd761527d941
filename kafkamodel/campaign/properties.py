"""The safety properties a campaign checks in every run, and what each setting promises about them.

Each property is read from a run's summary: how much of it broke (records,
offsets, or times), 0 when it held. The names are the TLA+ specification's
(``invariants``) with the producer's own promise first:

* ``no_acked_record_lost``: every record a producer was told is written is
  in the final log (``acked_records_lost``);
* ``no_committed_record_lost``: every record some leader's HW covered is
  (``committed_records_lost``, or partitions missing some);
* ``committed_prefixes_agree``: replicas agree below both their HWs
  (``replica_divergence``, or replica pairs that differ);
* ``leader_in_isr``: the controller's leader is in its ISR (ISR mode).

A ``safe`` setting promises all four in every run: a run that breaks one is
a counterexample. An ``unsafe`` setting promises none; the campaign counts how
often each breaks and by how much.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping


@dataclass(frozen=True)
class Property:
    name: str  # as in the TLA+ specification (invariants.PROPERTIES), or the producer's promise
    unit: str  # what `amount` counts
    meaning: str  # one line, for reports
    measure: str  # the summary key that says how much broke
    violations: str | None  # the summary's count of end-of-run violations of the invariant, if it has one

    def amount(self, summary: Mapping) -> int:
        """How much of the property broke in this run (0: it held)."""
        measured = int(summary.get(self.measure) or 0)
        counted = int(summary.get(self.violations) or 0) if self.violations else 0
        return measured if measured else counted


PROPERTIES = (
    Property("no_acked_record_lost", "records", "every acknowledged record is in the final log",
             "acked_records_lost", None),
    Property("no_committed_record_lost", "records", "every record a leader's HW covered is in the final log",
             "committed_records_lost", "no_committed_record_lost_violations"),
    Property("committed_prefixes_agree", "offsets", "replicas agree on every offset below both their HWs",
             "replica_divergence", "committed_prefixes_agree_violations"),
    Property("leader_in_isr", "violations", "the controller's leader is a member of its ISR",
             "leader_in_isr_violations", None),
)
BY_NAME = {p.name: p for p in PROPERTIES}
PROMISES = {"safe": "every property holds in every run", "unsafe": "expected to break them sometimes: counted"}


def quantity(n: int, unit: str) -> str:
    """'1 record', '946 records', '3 offsets'."""
    return f"{n:,} {unit[:-1] if n == 1 and unit.endswith('s') else unit}"


def broken(summary: Mapping) -> dict[str, int]:
    """property -> amount, for each property this run broke."""
    out = {}
    for p in PROPERTIES:
        n = p.amount(summary)
        if n:
            out[p.name] = n
    return out
