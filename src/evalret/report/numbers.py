"""The one number formatter of the views (terminal, Markdown, JUnit, HTML and its charts).

Kept apart from the view-models so that the chart module, which knows nothing about reports,
formats its numbers the same way without importing the report schema.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Medium:
    """How a view writes a number it does not have: the text for a missing value, and whether a
    NaN counts as missing (else Python's ``nan``)."""

    missing: str
    nan_is_missing: bool


# The terminal and the compare Markdown write a missing number as "-", report.md as an en dash;
# only the HTML page (and its charts) writes a NaN as missing. These are today's outputs, kept.
PLAIN = Medium("-", nan_is_missing=False)
TYPOGRAPHIC = Medium("–", nan_is_missing=False)
HTML = Medium("–", nan_is_missing=True)


def number(v: float | None, signed: bool = False, digits: int = 4, *, medium: Medium) -> str:
    """``v`` with ``digits`` decimals (a sign always with ``signed``), or the medium's mark for
    a missing value. The medium has no default: each view names its own."""
    if v is None or (medium.nan_is_missing and isinstance(v, float) and math.isnan(v)):
        return medium.missing
    return f"{v:+.{digits}f}" if signed else f"{v:.{digits}f}"


def p_value(p: float) -> str:
    """A p-value with 3 significant digits."""
    return f"{p:.3g}"


def p_pair(p: float | None, adjusted: float | None, medium: Medium) -> str:
    """A p-value and its adjusted value as ``p (adjusted)``, 3 significant digits; the medium's
    missing mark when there was no test."""
    if p is None or adjusted is None:
        return medium.missing
    return f"{p_value(p)} ({p_value(adjusted)})"
