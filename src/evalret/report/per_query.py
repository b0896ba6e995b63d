"""What the HTML page shows of single queries, computed before it is drawn.

The commands layer picks the queries (largest losses and gains, lowest scores) and sums up the
per-query changes; the page receives these plain values and only draws them, so the views do
no selection and read no golden set.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from evalret.data.schema import QueryExample


@dataclass(frozen=True)
class DeltaSpread:
    """The per-query change (after - before) of one metric on one index, and its counts."""

    index: str
    deltas: list[float]  # every query's change, in the before report's query order
    query_ids: list[str]  # aligned with ``deltas``
    wins: int  # queries that gain
    losses: int
    ties: int
    mean: float | None  # None without queries
    changed: list[float]  # the non-zero changes (the histogram)
    extent: float  # largest absolute change (1.0 when nothing changed): the histogram's range


@dataclass(frozen=True)
class ScoreSpread:
    """The per-query scores of one metric on one index (a run without a baseline)."""

    index: str
    values: list[float]
    mean: float | None  # None without queries
    zeros: int  # queries scoring 0
    ones: int  # queries scoring 1


@dataclass(frozen=True)
class RunQueries:
    """The per-query part of a run page on its primary ``metric`` ("" when none is computed).

    Against a baseline: ``comparable`` says whether the baseline has per-query scores for these
    queries; ``changes`` has one spread per index both have; ``losers`` and ``gainers`` are the
    biggest changes on the ``focus`` index. Without one: ``scores`` per index, and ``losers``
    the lowest-scoring queries of ``focus``. ``texts`` says whether the golden set was known
    (query and document texts in the examples)."""

    metric: str
    texts: bool
    comparable: bool = True
    focus: str = ""
    changes: list[DeltaSpread] = field(default_factory=list)
    scores: list[ScoreSpread] = field(default_factory=list)
    losers: list[QueryExample] = field(default_factory=list)
    gainers: list[QueryExample] = field(default_factory=list)
