"""A rerank index beside its first stage (the report's ``rerank`` section), as every view shows
it: one line per index on the terminal, a table per index in report.md and the HTML page.

Each row is a slice: its queries, the candidate ceiling (the first stage's recall@k), then for one
metric the ideal ranking, the oracle reranker, the first stage, the rerank index, and the change
attributed to each stage (stage 1: first stage - ideal; stage 2: rerank - first stage) and the
headroom left to a better reranker (oracle - rerank). Text from the report is escaped by the
caller's medium.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from evalret.data.schema import RerankSection, RunReport
from evalret.report.numbers import Medium, number

COLUMNS = (
    "slice",
    "n",
    "ceiling",
    "ideal",
    "oracle",
    "first stage",
    "rerank",
    "stage 1",
    "stage 2",
    "headroom",
)
MEANING = (
    "ceiling: the first stage's recall@{k}, the most a reranker can find; oracle: the candidates "
    "in ideal order (by grade); stage 1 = first stage − ideal, stage 2 = rerank − first stage, "
    "headroom = oracle − rerank"
)


@dataclass(frozen=True)
class RerankTable:
    """One rerank index on one metric, per slice: cells as text (not escaped)."""

    section: RerankSection
    metric: str
    rows: list[list[str]]


def _value(report: RunReport, index: str, slice_name: str, metric: str) -> float | None:
    result = report.indexes.get(index)
    s = result.slices.get(slice_name) if result is not None else None
    value = s.metrics.get(metric) if s is not None else None
    return value.value if value is not None else None


def rerank_table(report: RunReport, section: RerankSection, medium: Medium) -> RerankTable:
    """The table of ``section`` on the run's first metric."""
    first = next(iter(section.slices.values()))
    metric = next(iter(first.oracle))

    def n(v: float | None, signed: bool = False) -> str:
        return number(v, signed, medium=medium)

    rows = [
        [
            name,
            str(s.n_queries),
            n(s.ceiling),
            n(s.ideal.get(metric)),
            n(s.oracle.get(metric)),
            n(_value(report, section.first_stage, name, metric)),
            n(_value(report, section.index, name, metric)),
            n(s.stage1.get(metric), True),
            n(s.stage2.get(metric), True),
            n(s.headroom.get(metric), True),
        ]
        for name, s in section.slices.items()
    ]
    return RerankTable(section, metric, rows)


def rerank_line(report: RunReport, section: RerankSection, medium: Medium) -> str:
    """One line on slice ``all`` (else the first slice): ceiling, oracle, and each stage's
    change on the first metric."""
    table = rerank_table(report, section, medium)
    row = next((r for r in table.rows if r[0] == "all"), table.rows[0])
    cells = dict(zip(COLUMNS, row, strict=True))
    return (
        f"rerank {section.index} of {section.first_stage} (top {section.k}) on {row[0]}: "
        f"ceiling recall@{section.k} {cells['ceiling']}; {table.metric} oracle {cells['oracle']}, "
        f"first stage {cells['first stage']}, rerank {cells['rerank']} "
        f"(stage 1 {cells['stage 1']}, stage 2 {cells['stage 2']}, "
        f"headroom {cells['headroom']})"
    )


def rerank_markdown(report: RunReport, medium: Medium, escape: Callable[[str], str]) -> list[str]:
    """report.md's lines: a table per rerank index."""
    lines: list[str] = []
    for section in report.rerank.values():
        table = rerank_table(report, section, medium)
        lines += [
            "",
            f"### Rerank {escape(section.index)} of {escape(section.first_stage)} "
            f"(top {section.k}) on {escape(table.metric)}",
            "",
            MEANING.format(k=section.k) + ".",
            "",
            "| " + " | ".join(COLUMNS) + " |",
            "|" + " --- |" * len(COLUMNS),
            *("| " + " | ".join([escape(r[0]), *r[1:]]) + " |" for r in table.rows),
        ]
    return lines
