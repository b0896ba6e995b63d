"""Filtered search in the views: an approximate index's recall against filtered exact search by
selectivity bucket (the share of the corpus a query's filter leaves eligible), as the terminal's
one line, report.md's table and report.html's table draw it. Texts are returned unescaped; each
view escapes them for its medium."""

from __future__ import annotations

from dataclasses import dataclass

from evalret.data.schema import AnnSection
from evalret.report.numbers import Medium, number

SELECTIVITY_MEANING = (
    "recall against exact search over the same eligible documents, by the share of the corpus "
    "each query's filter leaves eligible (a query without a filter: 100%)"
)


@dataclass(frozen=True)
class SelectivityRow:
    bucket: str
    n_queries: int
    cells: list[str]  # one per recall@k, formatted


def selectivity_rows(ann: AnnSection, medium: Medium) -> tuple[list[str], list[SelectivityRow]]:
    """(the recall@k names, one row per bucket); empty when the run filtered no query."""
    if not ann.selectivity:
        return [], []
    ks = list(next(iter(ann.selectivity.values())).recall)
    rows = [
        SelectivityRow(
            bucket=name,
            n_queries=b.n_queries,
            cells=[number(b.recall[k], medium=medium) for k in ks],
        )
        for name, b in ann.selectivity.items()
    ]
    return ks, rows


def selectivity_line(ann: AnnSection, medium: Medium) -> str | None:
    """One line: the first recall@k of every bucket with queries, and its query count."""
    ks, rows = selectivity_rows(ann, medium)
    if not ks:
        return None
    parts = [f"{r.bucket} {r.cells[0]} (n {r.n_queries})" for r in rows if r.n_queries]
    return f"ANN {ann.index} {ks[0]} by filter selectivity: " + ", ".join(parts)
