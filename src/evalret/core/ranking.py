"""Rankings and evalret's tie rule, in numpy alone.

Tie rule (trec_eval's): documents are ordered by score descending, then by document id descending
(plain string order), scores compared in float64. Every retriever returns a ``SearchResult`` ranked
under this rule, so metrics, reports and run files treat all of them alike.

Documents are addressed by their index in the golden set's document list; ``id_rank`` turns those
indices into the tie-break key. A ranking read from outside (a run file, a Python retriever) may
hold documents the corpus does not have: such a ranking carries their names in ``extra_docs``, and
an id ``n_docs + i`` names ``extra_docs[i]`` (``n_docs``: the golden set's document count). Those
documents are unjudged in every metric (``judgeable_ids``), are written under their own names in
run files and ``top_ids``, and are never fused (the hybrid reads only the built-in rankings). The
ranking is already in tie-rule order when it is made (its reader sorts by name), so ``id_rank``
never sees them. Reciprocal-rank fusion and the top-k overlap of two rankings (an approximate
index's recall of exact search) live here too: they are ranking arithmetic, whatever produced
the rankings.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

TIE_RULE = "score descending, then document id descending (trec_eval)"
PRIMARY_INDEX = "exact"


@dataclass(frozen=True)
class SearchResult:
    """ids: int64 [Q, depth], document indices in rank order (-1 past the corpus end).

    scores: float64 [Q, depth], aligned with ids (-inf past the corpus end): the scores as
    computed (float32 inner products promoted exactly), so that the tie rule and the run files
    see every difference the engine made.

    extra_docs: ids ``n_docs + i`` name ``extra_docs[i]``, documents the corpus does not have
    (see the module docstring); empty for a ranking of evalret's own. A tuple, or a sequence
    that makes its names when first read (a run file's: ``data.runcolumns.ArrowNames``, whose
    ``pick`` makes only the names asked for: ``picked``).
    """

    ids: np.ndarray
    scores: np.ndarray
    extra_docs: Sequence[str] = ()

    def cut(self, depth: int) -> SearchResult:
        """The first ``depth`` ranks."""
        return SearchResult(
            ids=self.ids[:, :depth], scores=self.scores[:, :depth], extra_docs=self.extra_docs
        )

    def padded(self, depth: int) -> SearchResult:
        """The first ``depth`` ranks, empty ranks (-1 / -inf) added where the ranking is shorter."""
        short = depth - self.ids.shape[1]
        if short <= 0:
            return self.cut(depth)
        pad = empty_result(len(self.ids), short)
        return SearchResult(
            ids=np.concatenate([self.ids, pad.ids], axis=1),
            scores=np.concatenate([self.scores, pad.scores], axis=1),
            extra_docs=self.extra_docs,
        )

    def doc_name(self, doc: int, doc_ids: Sequence[str]) -> str:
        """The name of document ``doc`` (>= 0): a corpus id, or one of ``extra_docs``."""
        return doc_ids[doc] if doc < len(doc_ids) else self.extra_docs[doc - len(doc_ids)]

    def names(self, row: int, doc_ids: Sequence[str], depth: int | None = None) -> list[str]:
        """The document names of query ``row``'s first ``depth`` ranks (all when None)."""
        return self._named(self.ids[row, :depth].tolist(), doc_ids)

    def names_by_row(self, doc_ids: Sequence[str], depth: int | None = None) -> list[list[str]]:
        """``names`` of every row (the ids read out once, the extra documents' names made
        together, only theirs)."""
        rows = self.ids[:, :depth].tolist()
        n = len(doc_ids)
        wanted = sorted({d - n for row in rows for d in row if d >= n})
        extra = dict(zip(wanted, picked(self.extra_docs, wanted), strict=True))
        return [[doc_ids[d] if d < n else extra[d - n] for d in row if d >= 0] for row in rows]

    def _named(self, ids: list[int], doc_ids: Sequence[str]) -> list[str]:
        """``doc_name`` of each of ``ids`` that is not an empty rank (-1), without a call per
        document."""
        n, extra = len(doc_ids), self.extra_docs
        return [doc_ids[d] if d < n else extra[d - n] for d in ids if d >= 0]


def picked(names: Sequence[str], indices: list[int]) -> list[str]:
    """``names[i]`` for each of ``indices``: through the sequence's own ``pick`` where it has
    one (a run's names, which then makes only those strings), else one by one."""
    pick = getattr(names, "pick", None)
    return list(pick(indices)) if pick is not None else [names[i] for i in indices]


def judgeable_ids(ids: np.ndarray, n_docs: int) -> np.ndarray:
    """``ids`` with every document the corpus does not have (id >= n_docs) turned into ``n_docs``:
    retrieved, never judged (metrics.build_judgments finds no judgment for it)."""
    return np.where(ids >= n_docs, n_docs, ids)


def topk_overlap(approx: np.ndarray, exact: np.ndarray, k: int) -> np.ndarray:
    """Per query |approx top-k ∩ exact top-k| / |exact top-k| (ANN recall@k against exact)."""
    a, e = approx[:, :k], exact[:, :k]
    # one key space for all rows: document index + row * width; -1 (nothing retrieved) never counts
    width = max(int(a.max(initial=0)), int(e.max(initial=0))) + 1
    offset = np.arange(len(e), dtype=np.int64)[:, None] * width
    hits = np.isin(a + offset, np.where(e >= 0, e + offset, -1)) & (a >= 0)
    denom = (e >= 0).sum(axis=1)
    out = np.zeros(len(e))
    np.divide(hits.sum(axis=1), denom, out=out, where=denom > 0)
    return out


def empty_result(n_queries: int, depth: int) -> SearchResult:
    """``n_queries`` rows of ``depth`` empty ranks (-1 ids, -inf scores), to be filled in."""
    return SearchResult(
        ids=np.full((n_queries, depth), -1, dtype=np.int64),
        scores=np.full((n_queries, depth), -np.inf, dtype=np.float64),
    )


def primary_index(names: Iterable[str]) -> str:
    """The index a single-index view shows: "exact" when present, else the first of ``names``."""
    listed = list(names)
    return PRIMARY_INDEX if PRIMARY_INDEX in listed else listed[0]


def id_rank(doc_ids: Sequence[str]) -> np.ndarray:
    """Position of each document id in ascending string order (the tie-break key)."""
    order = sorted(range(len(doc_ids)), key=doc_ids.__getitem__)
    rank = np.empty(len(doc_ids), dtype=np.int64)
    rank[np.array(order, dtype=np.int64)] = np.arange(len(doc_ids), dtype=np.int64)
    return rank


def apply_tie_rule(
    ids: np.ndarray, scores: np.ndarray, rank: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Re-sort each row by score descending, then document id descending; -1 ids go last."""
    valid = ids >= 0
    key_id = np.where(valid, rank[np.where(valid, ids, 0)], -1)
    key_score = np.where(valid, scores.astype(np.float64), -np.inf)
    order = np.lexsort((-key_id, -key_score), axis=-1)
    return np.take_along_axis(ids, order, axis=1), np.take_along_axis(scores, order, axis=1)


def top_candidates(
    ids: np.ndarray, scores: np.ndarray, depth: int, rank: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The first ``depth`` of one query's scored candidates (document indices ``ids``,
    ``scores`` compared in float64) under the tie rule, padded with -1 / -inf. Every candidate
    tied with the one at the cut is considered, so the cut keeps the documents trec_eval would
    keep."""
    out_ids = np.full(depth, -1, dtype=np.int64)
    out_scores = np.full(depth, -np.inf, dtype=np.float64)
    scores = np.asarray(scores, dtype=np.float64)
    if len(ids) > depth:  # pre-cut: everything scoring at least the depth-th best score
        cut = np.partition(scores, len(scores) - depth)[len(scores) - depth]
        keep = scores >= cut
        ids, scores = ids[keep], scores[keep]
    ranked_ids, ranked_scores = apply_tie_rule(
        np.asarray(ids, dtype=np.int64)[None, :],
        scores[None, :],
        rank,
    )
    n = min(depth, ranked_ids.shape[1])
    out_ids[:n], out_scores[:n] = ranked_ids[0, :n], ranked_scores[0, :n]
    return out_ids, out_scores


def rrf_fuse(
    rankings: Sequence[SearchResult], k: float, candidates: int, depth: int, rank: np.ndarray
) -> SearchResult:
    """Reciprocal rank fusion: a document scores sum over rankings of 1 / (k + its rank), ranks
    counted from 1 within each ranking's first ``candidates`` results. Scores are summed and
    ranked in float64 (the run file records them exactly)."""
    out = empty_result(len(rankings[0].ids), depth)
    for qi in range(len(out.ids)):
        found = [row[row >= 0] for row in (r.ids[qi, :candidates] for r in rankings)]
        docs = np.concatenate(found)
        parts = np.concatenate([1.0 / (k + np.arange(1, len(f) + 1)) for f in found])
        unique, where = np.unique(docs, return_inverse=True)
        fused = np.zeros(len(unique), dtype=np.float64)
        np.add.at(fused, where, parts)  # in ranking order: the same sum every run
        out.ids[qi], out.scores[qi] = top_candidates(unique, fused, depth, rank)
    return out
