"""The search every store driver shares: stored ids mapped onto the golden set's, rows of one
document folded into its best, a fetch that widens while a tie or a fold straddles the cut, the
tie rule, and the counts of what could not be ranked as stored.

A driver's session returns, per query, (stored id, raw value) pairs in the store's order; the
raw values become float64 similarities by the driver's rule for the metric. Then, per query:

- a row whose id is NULL or unknown to the corpus holds no rank (skipped, counted);
- a row of a document already met is folded into that document's better row (a collection of
  chunks holds several rows per document: the best row counts; counted);
- a document the query's filter excludes (core/filters.py's evaluation, not the store's) is
  dropped and counted: the store's translation let it through;
- the rest are ranked by the tie rule (score descending in float64, then document id
  descending), the first ``depth`` kept.

A skipped, folded or dropped row is counted only when it is strictly better than the
``depth``-th document kept, so the counts do not depend on the store's order among ties. As with
faiss, ``TIE_MARGIN`` rows past the depth are fetched, and the fetch doubles (up to the
session's ``limit``) for the queries whose cut is still open: fewer than ``depth`` documents
kept from a full fetch, or the last kept tied with the last fetched. A query left with fewer
documents than it could have (the depth, or the documents its filter keeps) is counted short.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evalret.core.ranking import SearchResult, empty_result, top_candidates
from evalret.engines.ranking_checks import EXAMPLES_SHOWN, RankingCounts
from evalret.engines.stores.driver import StoreDriver, StoreSession

TIE_MARGIN = 16
QUERY_BATCH = 256
EXAMPLE_CHARS = 64  # a stored id shown as an example is cut to this many characters

Scored = list[tuple[Any, float]]  # (stored id, similarity), best first


@dataclass
class StoreCounts:
    """What one index's search could not rank as stored, over all its queries."""

    ranks_unknown_id: int = 0  # rows better than the cut whose id the corpus lacks (skipped)
    ranks_null_id: int = 0  # of those, rows whose id is NULL
    rows_folded: int = 0  # rows better than the cut folded into their document's better row
    unknown_ids: set[str] = field(default_factory=set)
    ranking: RankingCounts = field(default_factory=RankingCounts)
    returned: list[list[float]] = field(default_factory=list)  # similarities in store order

    def params(self) -> dict[str, Any]:
        """The nonzero counts, as the index's params name them (a clean search adds none), with
        the first few unknown stored ids (in id order, each cut to ``EXAMPLE_CHARS``) as
        examples."""
        out: dict[str, Any] = {
            k: v
            for k, v in (
                ("ranks_unknown_id", self.ranks_unknown_id),
                ("ranks_null_id", self.ranks_null_id),
                ("rows_folded", self.rows_folded),
            )
            if v
        }
        if self.unknown_ids:
            shown = sorted(self.unknown_ids)[:EXAMPLES_SHOWN]
            out["ranks_unknown_id_examples"] = [i[:EXAMPLE_CHARS] for i in shown]
        return {**out, **self.ranking.params()}


class IdMap:
    """Stored ids (read as text) to document indices of the corpus."""

    def __init__(self, doc_ids: Sequence[str]) -> None:
        self.index = {d: i for i, d in enumerate(doc_ids)}

    def __call__(self, found: Any) -> int:
        """The document index of a stored id; -1 when NULL or unknown."""
        return -1 if found is None else self.index.get(str(found), -1)


@dataclass(frozen=True)
class Query:
    """One query's search: its id, how many documents it may rank, and which documents its
    filter keeps (None: all)."""

    qid: str
    wanted: int
    mask: np.ndarray | None


def scored(driver: StoreDriver, metric: str, hits: Sequence[tuple[Any, float]]) -> Scored:
    """The hits with the driver's similarities, best first (stable: the store's order among
    equal similarities)."""
    if not hits:
        return []
    raw = np.array([h[1] for h in hits], dtype=np.float64)
    sims = driver.similarity(metric, raw).tolist()
    out = [(h[0], s) for h, s in zip(hits, sims, strict=True)]
    out.sort(key=lambda hit: -hit[1])
    return out


def _kept(
    hits: Scored, ids: IdMap, q: Query
) -> tuple[list[int], list[float], list[tuple[str, Any, float]]]:
    """The documents a query ranks (each once, at its best row) and the rows it skipped, as
    (reason, stored id, similarity)."""
    docs: list[int] = []
    sims: list[float] = []
    skipped: list[tuple[str, Any, float]] = []
    seen: set[int] = set()
    for found, sim in hits:
        doc = ids(found)
        if doc < 0:
            skipped.append(("unknown", found, sim))
        elif q.mask is not None and not q.mask[doc]:
            skipped.append(("outside", found, sim))
        elif doc in seen:
            skipped.append(("folded", found, sim))
        else:
            seen.add(doc)
            docs.append(doc)
            sims.append(sim)
    return docs, sims, skipped


def open_at_cut(hits: Scored, fetch: int, ids: IdMap, q: Query) -> bool:
    """Whether a full fetch may have cut the query's documents short: fewer than it wants, or
    the last one wanted tied with the last row fetched (never when it wants none: its filter
    keeps no document, whatever the store returned)."""
    if len(hits) < fetch or q.wanted == 0:
        return False
    _, sims, _ = _kept(hits, ids, q)
    return len(sims) < q.wanted or sims[q.wanted - 1] == hits[-1][1]


def rank_query(
    hits: Scored, ids: IdMap, q: Query, depth: int, rank: np.ndarray, counts: StoreCounts
) -> tuple[np.ndarray, np.ndarray]:
    """The query's top ``depth`` under the tie rule, its skipped rows counted."""
    docs, sims, skipped = _kept(hits, ids, q)
    cut = sims[q.wanted - 1] if q.wanted and len(sims) >= q.wanted else -math.inf
    outside = 0
    for reason, found, sim in skipped:
        if sim <= cut:
            continue
        if reason == "outside":
            outside += 1
        elif reason == "folded":
            counts.rows_folded += 1
        else:
            counts.ranks_unknown_id += 1
            if found is None:
                counts.ranks_null_id += 1
            else:
                counts.unknown_ids.add(str(found))
    counts.ranking.add(q.qid, min(len(docs), q.wanted), q.wanted, outside)
    return top_candidates(
        np.array(docs, dtype=np.int64), np.array(sims, dtype=np.float64), depth, rank
    )


def search_store(
    session: StoreSession,
    driver: StoreDriver,
    metric: str,
    queries: np.ndarray,
    plan: Sequence[Query],
    where: Any | None,
    depth: int,
    rank: np.ndarray,
    ids: IdMap,
    counts: StoreCounts,
    tick: Callable[[int], None],
) -> SearchResult:
    """Every query of ``queries`` (one filter: ``where``, native) searched in batches, the
    fetch widened for the queries whose cut is open; ``plan`` aligned with ``queries``."""
    out = empty_result(len(queries), depth)
    limit = max(1, session.limit)
    for start in range(0, len(queries), QUERY_BATCH):
        batch = np.ascontiguousarray(queries[start : start + QUERY_BATCH], dtype=np.float32)
        fetch = min(depth + TIE_MARGIN, limit)
        rows = list(range(len(batch)))
        found: dict[int, Scored] = {}
        first = True
        while rows:
            got = session.search(batch[rows], fetch, where)
            for n, hits in zip(rows, got, strict=True):
                if first:  # the store's own order, for the score-direction check
                    raw = np.array([h[1] for h in hits], dtype=np.float64)
                    counts.returned.append(driver.similarity(metric, raw).tolist())
                found[n] = scored(driver, metric, hits)
            first = False
            if fetch >= limit:
                break
            rows = [n for n in rows if open_at_cut(found[n], fetch, ids, plan[start + n])]
            fetch = min(limit, fetch * 2)
        for n, hits in found.items():
            out.ids[start + n], out.scores[start + n] = rank_query(
                hits, ids, plan[start + n], depth, rank, counts
            )
        tick(len(batch))
    return out
