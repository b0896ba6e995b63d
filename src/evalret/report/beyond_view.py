"""The beyond-accuracy rows the terminal, report.md and report.html draw: per slice, every
index's corpus coverage@k and Gini@k (``indexes.<name>.slices.<slice>.beyond`` in report.json),
and a line for each index that retrieved documents outside the corpus. Not gated.
"""

from __future__ import annotations

from dataclasses import dataclass

from evalret.data.schema import RunReport
from evalret.report.numbers import Medium, number

BEYOND_TITLE = "Beyond accuracy"
BEYOND_MEANING = (
    "coverage: share of the corpus in the top {k} of at least one query; gini: Gini coefficient "
    "of how often each corpus document is in a top {k} (0 every document equally often, "
    "towards 1 a few documents take every retrieval); not gated"
)

BEYOND_BRIEF = (
    "top {k}, not gated; cov: share of the corpus retrieved; gini: 0 even, near 1 concentrated"
)


@dataclass(frozen=True)
class BeyondRow:
    """One slice: its name, its number of queries, then (coverage, gini) per index, formatted."""

    slice: str
    n_queries: int
    cells: list[tuple[str, str]]


@dataclass(frozen=True)
class BeyondTable:
    """The figures at cutoff ``k`` of the ``indexes`` that carry them, one row per slice."""

    k: int
    indexes: list[str]
    rows: list[BeyondRow]
    outside: list[str]  # "bm25: 12 documents outside the corpus in the top 10 (all queries)"

    @property
    def brief(self) -> str:
        """The meaning in one short line, for the terminal's title."""
        return BEYOND_BRIEF.format(k=self.k)

    @property
    def meaning(self) -> str:
        """What the two figures mean, for a caption."""
        return BEYOND_MEANING.format(k=self.k)


def _cutoff(keys: list[str]) -> int | None:
    return next((int(key.split("@")[1]) for key in keys if key.startswith("coverage@")), None)


def beyond_table(report: RunReport, medium: Medium, digits: int = 4) -> BeyondTable | None:
    """The beyond-accuracy table of a report, or None when no index carries the figures (a
    report of an older evalret)."""
    carrying = {
        name: result
        for name, result in report.indexes.items()
        if any(s.beyond for s in result.slices.values())
    }
    if not carrying:
        return None
    first = next(iter(next(iter(carrying.values())).slices.values()))
    k = _cutoff(list(first.beyond))
    if k is None:
        return None
    rows = []
    for name, info in report.slices.items():
        cells = []
        for result in carrying.values():
            figures = result.slices[name].beyond if name in result.slices else {}
            coverage, gini = (_float(figures.get(f"{f}@{k}")) for f in ("coverage", "gini"))
            cells.append(
                (
                    number(coverage, digits=digits, medium=medium),
                    number(gini, digits=digits, medium=medium),
                )
            )
        rows.append(BeyondRow(name, info.n_queries, cells))
    return BeyondTable(k, list(carrying), rows, _outside_lines(report, list(carrying), k))


def _float(v: float | int | None) -> float | None:
    return None if v is None else float(v)


def _outside_lines(report: RunReport, indexes: list[str], k: int) -> list[str]:
    """One line per index whose top k holds documents outside the corpus (over all queries)."""
    lines = []
    for name in indexes:
        slices = report.indexes[name].slices
        whole = slices.get("all") or next(iter(slices.values()))
        n = whole.beyond.get(f"outside_corpus@{k}") or 0
        if n:
            lines.append(
                f"{name}: {int(n)} documents outside the corpus in the top {k} "
                "(all queries; not in coverage or gini)"
            )
    return lines
