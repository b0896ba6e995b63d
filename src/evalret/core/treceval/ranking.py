"""One query's ranking as trec_eval's measures read it (its ``form_res_rels``): the run's
documents sorted, cut, looked up in the qrels, and the counts every measure shares.

A run's lines are looked up once for all its queries (``graded_columns``: one sort of the
qrels' keys, one ``searchsorted`` of the run's), and each ``Ranking`` carries the ranks the
measures walk (relevant, judged, positive, pooled) besides the grades, so that a measure's
cost follows the judged documents a query retrieves, not its depth."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

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


@dataclass(frozen=True, eq=False)
class Ranking:
    """What the measures read about one query: ``rels``, the grade at each rank (NONPOOL or
    UNJUDGED for documents the qrels do not judge); ``rel_levels``, how many of the query's
    judged documents have each grade 0..max (retrieved or not, negative grades left out); the
    counts R (``num_rel``: judged documents at or above the level), relevant retrieved,
    retrieved, and retrieved unjudged of both kinds; and the 0-based ranks, ascending, of the
    documents relevant at ``level`` (``relevant``), judged (``judged``), with a grade above 0
    (``positive``) and in the qrels at all (``pooled``: judged or UNJUDGED); and ``memo``, what
    several measures derive from it, kept there by the first that needs it."""

    rels: np.ndarray
    rel_levels: tuple[int, ...]
    num_rel: int
    num_rel_ret: int
    num_ret: int
    num_nonpool: int
    num_unjudged: int
    level: int
    relevant: list[int]
    judged: list[int]
    positive: list[int]
    pooled: list[int]
    pooled_grades: dict[int, int]  # rank -> grade, at the pooled ranks
    judged_grades: list[int]  # the grades at the judged ranks
    positive_grades: list[int]  # the grades at the positive ranks
    memo: dict[Any, Any] = field(default_factory=dict, repr=False)

    @property
    def num_rel_levels(self) -> int:
        """1 + the highest grade any of the query's judged documents has (0 when none)."""
        top = [i for i, n in enumerate(self.rel_levels) if n]
        return top[-1] + 1 if top else 0

    def grade(self, rank: int) -> int:
        """The grade at 0-based ``rank`` (as ``rels`` holds it)."""
        return self.pooled_grades.get(rank, NONPOOL)


class RunColumns(Protocol):
    """A run as columns (what ``data.runfile.RunFile`` holds): per query, in ``query_ids``'
    order, rows ``offsets[i]`` to ``offsets[i + 1]`` of ``docs`` (indices into ``doc_ids``),
    already in trec_eval's order (score descending, then docno descending) and cut."""

    @property
    def query_ids(self) -> list[str]: ...
    @property
    def doc_ids(self) -> Sequence[str]: ...
    @property
    def offsets(self) -> np.ndarray: ...
    @property
    def docs(self) -> np.ndarray: ...


def form_ranking(
    judgments: Mapping[str, int], run: Sequence[tuple[str, float]], settings: Settings
) -> Ranking:
    """The ranking trec_eval forms from one query's run lines (docno, score) and judgments:
    sorted by score descending, then docno descending (byte order); the first ``max_docs``
    kept; with ``judged_only`` the documents without a grade >= 0 dropped after the cut."""
    ranked = sorted(run, key=lambda d: (d[1], d[0].encode("utf-8")), reverse=True)
    ranked = ranked[: max(settings.max_docs, 0)]
    rels: list[int] = []
    for docno, _ in ranked:
        grade = judgments.get(docno)
        rels.append(NONPOOL if grade is None else grade if is_judged(grade) else UNJUDGED)
    return ranking_of(judgments, np.asarray(rels, dtype=np.int64), settings)


def graded_columns(
    qrels: Mapping[str, Mapping[str, int]], run: RunColumns, settings: Settings
) -> dict[str, np.ndarray]:
    """Query id -> the grades of its run documents in rank order (NONPOOL, UNJUDGED for those
    the qrels do not judge), for every query of ``run``, cut at ``max_docs``: what
    ``form_ranking`` gives from lines, from columns already in trec_eval's order, looked up
    for all the queries at once."""
    n_docs = len(run.doc_ids)
    judged_docs = {docno for judged in qrels.values() for docno in judged}
    where = {d: i for i, d in enumerate(run.doc_ids) if d in judged_docs}  # the judged ones
    row_of = dict(zip(run.query_ids, range(len(run.query_ids)), strict=True))
    keys: list[int] = []
    grades: list[int] = []
    for qid, judged in qrels.items():
        qi = row_of.get(qid)
        if qi is None:
            continue
        for docno, grade in judged.items():
            di = where.get(docno)
            if di is not None:
                keys.append(qi * n_docs + di)
                grades.append(grade if is_judged(grade) else UNJUDGED)
    offsets = np.asarray(run.offsets, dtype=np.int64)
    sizes = np.diff(offsets)
    docs = np.asarray(run.docs, dtype=np.int64)
    rels = np.full(len(docs), NONPOOL, dtype=np.int64)
    if keys:
        key_array = np.asarray(keys, dtype=np.int64)
        in_qrels = np.zeros(n_docs, dtype=bool)
        in_qrels[key_array % n_docs] = True
        rows = np.flatnonzero(in_qrels[docs])  # only documents some query judges are looked up
        run_keys = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)[rows] * n_docs
        run_keys += docs[rows]
        order = np.argsort(key_array, kind="stable")
        sorted_keys = key_array[order]
        sorted_grades = np.asarray(grades, dtype=np.int64)[order]
        at = np.minimum(np.searchsorted(sorted_keys, run_keys), len(sorted_keys) - 1)
        hit = sorted_keys[at] == run_keys
        rels[rows[hit]] = sorted_grades[at[hit]]
    keep = max(settings.max_docs, 0)
    starts = offsets[:-1].tolist()
    ends = np.minimum(offsets[1:], offsets[:-1] + keep).tolist()
    return {q: rels[a:b] for q, a, b in zip(run.query_ids, starts, ends, strict=True)}


def ranking_of(judgments: Mapping[str, int], rels: np.ndarray, settings: Settings) -> Ranking:
    """The ranking of one query from the grades of its documents in rank order (already cut at
    ``max_docs``); with ``judged_only`` the documents without a grade >= 0 dropped."""
    level = settings.relevance_level
    if settings.judged_only:
        rels = rels[is_judged(rels)]
    grades = [g for g in judgments.values() if is_judged(g)]
    top = max(judgments.values(), default=-1)
    rel_levels = [0] * (top + 1 if top >= 0 else 0)
    for g in grades:
        rel_levels[g] += 1
    pooled = np.flatnonzero(rels != NONPOOL).tolist()
    grade_at = dict(zip(pooled, rels[pooled].tolist(), strict=True))
    # the ranks a measure walks are read off the pooled ones (the few the qrels name), but
    # at a level below 0 a document outside the qrels (NONPOOL) counts as relevant too
    relevant = (
        [i for i, g in grade_at.items() if is_relevant(g, level)]
        if level > NONPOOL
        else np.flatnonzero(is_relevant(rels, level)).tolist()
    )
    judged = [i for i, g in grade_at.items() if is_judged(g)]
    positive = [i for i, g in grade_at.items() if g > 0]
    return Ranking(
        rels=rels,
        rel_levels=tuple(rel_levels),
        num_rel=sum(1 for g in grades if is_relevant(g, level)),
        num_rel_ret=sum(1 for g in grade_at.values() if is_judged(g) and is_relevant(g, level)),
        num_ret=len(rels),
        num_nonpool=len(rels) - len(pooled),
        num_unjudged=sum(1 for g in grade_at.values() if g == UNJUDGED),
        level=level,
        relevant=relevant,
        judged=judged,
        positive=positive,
        pooled=pooled,
        pooled_grades=grade_at,
        judged_grades=[grade_at[i] for i in judged],
        positive_grades=[grade_at[i] for i in positive],
    )
