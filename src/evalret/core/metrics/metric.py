"""A metric as a declared value: ``Metric("ndcg", 10)``, written ``ndcg@10``, and what a list of
them asks of a search (its cutoffs, how deep the rankings must go). The conventions every metric
follows are in the package's docstring (``evalret.core.metrics``)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from functools import total_ordering
from typing import Literal

Gain = Literal["linear", "exponential"]
# |grade| bound: int64 sums stay exact and exponential gain 2^g stays finite in float64 for any
# query with fewer than 2^23 judged documents (2^1000 * 2^23 < 2^1024)
MAX_GRADE = 1000
MAX_CUTOFF = 10**9  # far beyond any collection: larger cutoffs are refused as typing errors
# how deep "the whole ranking" goes when a metric has no cutoff and no search_depth is configured:
# trec_eval's runs are conventionally 1000 deep (TREC ad hoc tracks, BEIR's exported runs)
DEFAULT_SEARCH_DEPTH = 1000
# the largest gain a metric's own gain mapping may give a grade (``ndcg@10(gains=0:0,1:1,2:3)``):
# far beyond 2^g - 1 for any usual grade, and int64 sums of gains stay exact
MAX_GAIN = 10**6

GainMap = tuple[tuple[int, int], ...]  # (grade, gain) pairs, by grade, each grade once


JUDGED_SUFFIX = "judged"  # ndcg@10:judged, map:judged: the judged-only (condensed list) variant


@total_ordering
@dataclass(frozen=True)
class Metric:
    """A metric family at a cutoff, e.g. ``Metric("ndcg", 10)`` written ``ndcg@10``, or over the
    whole ranking, ``Metric("ndcg")`` written ``ndcg`` (``k`` is None); with ``judged`` the
    family scores each ranking with its unjudged documents removed first, written
    ``ndcg@10:judged``; with ``rel`` it reads relevance at its own level, not the run's
    (``relevance_level``), written ``P@5(rel=2)`` (ir_measures' ``P(rel=2)@5``); with ``gains``
    (a family that reads grades as gains: nDCG) each listed grade gains the given value instead
    of its own, written ``ndcg@10(gains=0:0,1:1,2:3)`` (ir_measures' ``nDCG(gains={...})@10``;
    the rule is ``RankedJudgments.with_gains``). Both parameters: ``(rel=2,gains=...)``. Ordered
    by family, then cutoff (the whole ranking last), then judged, then level, then gains."""

    family: str
    k: int | None = None
    judged: bool = False
    rel: int | None = None  # its own relevance level, ``ndcg@10(rel=2)``; None: the run's
    gains: GainMap | None = None  # its own gain per grade, ``ndcg@10(gains=1:1,2:3)``

    def __str__(self) -> str:
        name = self.family if self.k is None else f"{self.family}@{self.k}"
        name = f"{name}:{JUDGED_SUFFIX}" if self.judged else name
        params = [] if self.rel is None else [f"rel={self.rel}"]
        if self.gains is not None:
            params.append("gains=" + ",".join(f"{g}:{v}" for g, v in self.gains))
        return f"{name}({','.join(params)})" if params else name

    @property
    def depth_key(self) -> float:
        """The cutoff, or infinity for the whole ranking: sorts metrics from shallow to deep."""
        return math.inf if self.k is None else float(self.k)

    @property
    def reads_whole_ranking(self) -> bool:
        """Whether the value depends on how deep the ranking goes: no cutoff, or judged-only
        (which looks past rank k for the first k judged documents)."""
        return self.k is None or self.judged

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Metric):
            return NotImplemented
        return self._key < other._key

    @property
    def _key(self) -> tuple[str, float, bool, int, GainMap]:
        level = -1 if self.rel is None else self.rel
        return (self.family, self.depth_key, self.judged, level, self.gains or ())


def search_depth(metrics: Iterable[Metric], configured: int | None = None) -> int:
    """How deep rankings must go for ``metrics``: ``configured`` when given, else the largest
    cutoff, or at least DEFAULT_SEARCH_DEPTH when a metric reads the whole ranking (no cutoff,
    or judged-only). Callers cap it at the corpus size (a ranking cannot be longer)."""
    metrics = list(metrics)
    if configured is not None:
        return configured
    deepest = max((m.k for m in metrics if m.k is not None), default=0)
    return max(deepest, DEFAULT_SEARCH_DEPTH) if has_uncut(metrics) else deepest


def is_plain_cut(metric: Metric, family: str) -> bool:
    """Whether ``metric`` is ``family`` at a cutoff and not judged-only (``recall@10``, not
    ``recall`` or ``recall@10:judged``): how the views pick a family's columns, by the registry's
    parse and never by the spelling of a name."""
    return metric.family == family and metric.k is not None and not metric.judged


def has_uncut(metrics: Iterable[Metric]) -> bool:
    """Whether any of ``metrics`` reads the whole ranking: has no cutoff, or is judged-only (it
    looks past rank k for judged documents), so its value depends on the search depth."""
    return any(m.reads_whole_ranking for m in metrics)


def cutoffs(metrics: Iterable[Metric]) -> list[int]:
    """The distinct cutoffs of ``metrics``, ascending (metrics without one add none)."""
    return sorted({m.k for m in metrics if m.k is not None})
