"""A comparison's rows, shared by the terminal and HTML views of `evalret compare`: the per-slice
rows on the primary metric (``compare_rows``, under ``COMPARE_COLUMNS``), judged@k of both sides,
and the start of an unjudged document's text. Numbers from the one formatter
(``evalret.report.numbers``).
"""

from __future__ import annotations

from dataclasses import dataclass

from evalret.data.schema import (
    MetricComparison,
    SliceComparison,
    UnjudgedDoc,
)
from evalret.report.numbers import Medium, number, p_pair

# the per-slice columns of a comparison on its primary metric (terminal and HTML)
COMPARE_COLUMNS = (
    "slice",
    "n",
    "A",
    "B",
    "delta",
    "95% CI",
    "p rand. (adj.)",
    "p t (adj.)",
    "W/T/L",
    "MDE",
)


# --- a comparison ------------------------------------------------------------------------------


@dataclass(frozen=True)
class CompareRow:
    """One slice of a comparison on its primary metric, formatted for a medium (the columns of
    ``COMPARE_COLUMNS``, then the diagnosis)."""

    name: str
    n: str
    a: str
    b: str
    delta: str
    ci: str
    p_randomization: str
    p_t_test: str
    wtl: str
    mde: str
    diagnosis: str
    metric: MetricComparison  # the numbers, for a view's colours and emphasis


def compare_rows(
    slices: dict[str, SliceComparison], primary: str, medium: Medium
) -> list[CompareRow]:
    """One row per slice that has the ``primary`` metric."""
    rows = []
    for name, sc in slices.items():
        if primary not in sc.metrics:
            continue
        m = sc.metrics[primary]
        mde = sc.mde.get(primary)
        low, high = (number(x, signed=True, medium=medium) for x in (m.ci_low, m.ci_high))
        rows.append(
            CompareRow(
                name=name,
                n=str(sc.n_queries),
                a=number(m.a, medium=medium),
                b=number(m.b, medium=medium),
                delta=number(m.delta, signed=True, medium=medium),
                ci=f"[{low}, {high}]",
                p_randomization=p_pair(m.p_randomization, m.p_randomization_adjusted, medium),
                p_t_test=p_pair(m.p_t_test, m.p_t_test_adjusted, medium),
                wtl=f"{m.wins}/{m.ties}/{m.losses}",
                mde=number(mde, digits=3, medium=medium),
                diagnosis=sc.diagnosis,
                metric=m,
            )
        )
    return rows


def compared_judged_key(slices: dict[str, SliceComparison]) -> str | None:
    """The judged@k a comparison shows: judged@10 when both sides computed it, else the
    smallest k; None for a compare.json without judged figures."""
    keys = list(next(iter(slices.values())).judged) if slices else []
    if not keys:
        return None
    return "judged@10" if "judged@10" in keys else min(keys, key=lambda k: int(k.split("@")[1]))


@dataclass(frozen=True)
class JudgedRow:
    """judged@k of one slice in A and in B, and B - A, formatted for a medium."""

    name: str
    a: str
    b: str
    delta: str


def judged_rows(
    slices: dict[str, SliceComparison], medium: Medium
) -> tuple[str | None, list[JudgedRow]]:
    """The judged@k shown and one row per slice (none without judged figures)."""
    key = compared_judged_key(slices)
    if key is None:
        return None, []
    rows = []
    for name, sc in slices.items():
        pair = sc.judged.get(key)
        if pair is None:
            continue
        delta = None if pair.a is None or pair.b is None else pair.b - pair.a
        rows.append(
            JudgedRow(
                name=name,
                a=number(pair.a, medium=medium),
                b=number(pair.b, medium=medium),
                delta=number(delta, signed=True, medium=medium),
            )
        )
    return key, rows


SNIPPET_CHARS = 80  # characters of an unjudged document's text shown in a list


def snippet(doc: UnjudgedDoc) -> str:
    """The start of an unjudged document's text (untrusted: escape where shown)."""
    text = " ".join(doc.text.split())
    return text if len(text) <= SNIPPET_CHARS else text[: SNIPPET_CHARS - 1] + "…"
