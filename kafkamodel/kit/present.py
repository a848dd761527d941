"""Tables as a reader meets them, in a notebook and in an exported report.

``Table(df, notes=...)`` keeps the numbers (``.df``, for code and tests) and
renders them (pandas' ``Styler``): no index column, integers as integers,
other numbers to three significant digits (what 2-5 seeds support), a blank
or "not run" instead of ``NaN``, booleans as yes/no, and footnotes under the
table. ``number`` and ``interval`` are the same rules for a single value.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import Any

import pandas as pd

DIGITS = 3  # significant digits of a non-integer


def missing(x: Any) -> bool:
    return x is None or x is pd.NA or x is pd.NaT or (isinstance(x, Real) and not isinstance(x, Integral)
                                                      and math.isnan(float(x)))


def number(x: Any, digits: int = DIGITS, na: str = "") -> str:
    """3000.623287 -> '3,001', 2.0 -> '2', 0.012345 -> '0.0123', 2.5 -> '2.5', NaN -> `na`, True -> 'yes'."""
    if missing(x):
        return na
    if isinstance(x, bool) or hasattr(x, "dtype") and str(getattr(x, "dtype", "")) == "bool":
        return "yes" if bool(x) else "no"
    if isinstance(x, Integral):
        return f"{int(x):,}"
    if not isinstance(x, Real):
        return str(x)
    x = float(x)
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    if x == 0:
        return "0"
    decimals = max(digits - 1 - math.floor(math.log10(abs(x))), 0)
    text = f"{x:,.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def interval(lo: Any, hi: Any, digits: int = DIGITS) -> str:
    """'1.2 – 130'; one value when both ends round alike (every seed agreed); blank without one (a single seed)."""
    if missing(lo) or missing(hi):
        return ""
    a, b = number(lo, digits), number(hi, digits)
    return a if a == b else f"{a} – {b}"


def percent(x: Any, digits: int = DIGITS) -> str:
    """A share in percent for a reader: '9.23', '0.0123', '< 0.01' (below a hundredth of a percent: what a
    floating-point rest like 5.55e-15 would otherwise print as 0.00000000000000555), '0'."""
    if missing(x):
        return ""
    x = float(x)
    if x == 0:
        return "0"
    if 0 < x < 0.01:
        return "< 0.01"
    return number(x, digits)


def percent_interval(lo: Any, hi: Any, digits: int = DIGITS) -> str:
    """'0 – 1.5' or '6.1 – 13': an interval of percentages, each end as `percent` writes it."""
    if missing(lo) or missing(hi):
        return ""
    a, b = percent(lo, digits), percent(hi, digits)
    return a if a == b else f"{a} – {b}"


@dataclass
class Table:
    """A table for readers: `df` holds the numbers; `notes` are footnotes; `na` is what a missing cell says."""

    df: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    na: str = ""
    digits: int = DIGITS

    def cells(self) -> pd.DataFrame:
        """Every cell as the text a reader sees."""
        return self.df.apply(lambda col: col.map(lambda v: number(v, self.digits, self.na))).reset_index(drop=True)

    def _numeric(self) -> list:
        return [c for c in self.df.columns
                if pd.api.types.is_numeric_dtype(self.df[c]) and not pd.api.types.is_bool_dtype(self.df[c])]

    def _repr_html_(self) -> str:
        styler = (self.df.reset_index(drop=True).style.hide(axis="index")
                  .format(lambda v: number(v, self.digits, self.na))
                  .set_table_attributes('class="kafkamodel-table"'))
        numeric = self._numeric()
        text = [c for c in self.df.columns if c not in numeric]
        for columns, side in ((numeric, "right"), (text, "left")):  # cells and their headers alike
            if columns:
                styler = styler.set_properties(subset=columns, **{"text-align": side})
                styler = styler.set_table_styles({c: [{"selector": "th", "props": f"text-align: {side}"}]
                                                  for c in columns}, overwrite=False)
        notes = "".join(f"<p class='table-note'><small>{html.escape(n)}</small></p>" for n in self.notes)
        return styler.to_html() + notes

    def __repr__(self) -> str:
        text = self.cells().to_string(index=False)
        return text + "".join(f"\n{n}" for n in self.notes)
