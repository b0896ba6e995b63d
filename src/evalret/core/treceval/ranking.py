"""One query's ranking as trec_eval's measures read it (its ``form_res_rels``): the run's
documents sorted, cut, looked up in the qrels, and the counts every measure shares."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from evalret.core.relevance import DEFAULT_RELEVANCE_LEVEL, is_judged, is_relevant

NONPOOL = -1  # retrieved, not in the qrels
UNJUDGED = -2  # retrieved, in the qrels with a negative grade (pooled, not judged)
BOGUS_DOCNO = "ceci_nest_pas_un_docno"  # the one document of a query missing from the run (-c)


@dataclass(frozen=True)
class Settings:
    """trec_eval's command-line settings the measures read: ``-l`` (relevance level), ``-J``
    (judged documents only), ``-M`` (documents kept per query), ``-N`` (documents in the
    collection, for utility), ``-c`` (average over every qrels query), ``-q``, ``-n``."""

    relevance_level: int = DEFAULT_RELEVANCE_LEVEL
    judged_only: bool = False
    max_docs: int = 2147483647
    docs_in_collection: int = 0
    average_complete: bool = False
    per_query: bool = False
    summary: bool = True


@dataclass(frozen=True)
class Ranking:
    """What the measures read about one query: ``rels``, the grade at each rank (NONPOOL or
    UNJUDGED for documents the qrels do not judge); ``rel_levels``, how many of the query's
    judged documents have each grade 0..max (retrieved or not, negative grades left out); and
    the counts R (``num_rel``: judged documents at or above the level), relevant retrieved,
    retrieved, and retrieved unjudged of both kinds."""

    rels: tuple[int, ...]
    rel_levels: tuple[int, ...]
    num_rel: int
    num_rel_ret: int
    num_ret: int
    num_nonpool: int
    num_unjudged: int

    @property
    def num_rel_levels(self) -> int:
        """1 + the highest grade any of the query's judged documents has (0 when none)."""
        top = [i for i, n in enumerate(self.rel_levels) if n]
        return top[-1] + 1 if top else 0


def form_ranking(
    judgments: Mapping[str, int], run: Sequence[tuple[str, float]], settings: Settings
) -> Ranking:
    """The ranking trec_eval forms from one query's run lines (docno, score) and judgments:
    sorted by score descending, then docno descending (byte order); the first ``max_docs``
    kept; with ``judged_only`` the documents without a grade >= 0 dropped after the cut."""
    level = settings.relevance_level
    ranked = sorted(run, key=lambda d: (d[1], d[0].encode("utf-8")), reverse=True)
    ranked = ranked[: max(settings.max_docs, 0)]
    rels: list[int] = []
    for docno, _ in ranked:
        grade = judgments.get(docno)
        rels.append(NONPOOL if grade is None else grade if is_judged(grade) else UNJUDGED)
    if settings.judged_only:
        rels = [r for r in rels if is_judged(r)]
    grades = [g for g in judgments.values() if is_judged(g)]
    top = max(judgments.values(), default=-1)
    rel_levels = [0] * (top + 1 if top >= 0 else 0)
    for g in grades:
        rel_levels[g] += 1
    return Ranking(
        rels=tuple(rels),
        rel_levels=tuple(rel_levels),
        num_rel=sum(1 for g in grades if is_relevant(g, level)),
        num_rel_ret=sum(1 for r in rels if is_relevant(r, level) and is_judged(r)),
        num_ret=len(rels),
        num_nonpool=rels.count(NONPOOL),
        num_unjudged=rels.count(UNJUDGED),
    )
