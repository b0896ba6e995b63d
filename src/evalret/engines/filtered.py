"""Filtered vector search: each query searches only the documents its filter keeps
(``core.filters.Eligibility``), under the tie rule, one batch of queries per distinct filter.

* exact search scores the eligible rows alone (``exact_search`` over them), so its ranking is the
  exact top ``depth`` of the eligible documents;
* a faiss index (HNSW, or any other) searches with an ID selector (``faiss.IDSelectorBitmap``
  in the index's ``SearchParameters``): the graph is walked as built, and only eligible documents
  enter the results, as a vector database's filtered HNSW search does. With few eligible
  documents the walk may find fewer than ``depth`` of them (its recall drops: the report measures
  it by selectivity).

A query without a filter searches the whole corpus as before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from evalret.core.filters import Eligibility
from evalret.core.ranking import SearchResult, apply_tie_rule, empty_result
from evalret.engines.faiss_index import QUERY_BATCH, TIE_MARGIN, exact_search, search

Rows = np.ndarray | slice  # query positions (slice(None): every query)
# (query positions, mask or None) -> the rows' result, ids in the whole corpus
GroupSearch = Callable[[np.ndarray, np.ndarray | None], SearchResult]
MaskedSearch = Callable[[np.ndarray, np.ndarray], SearchResult]  # (rows, mask) -> their result


def by_filter(n_queries: int, depth: int, eligible: Eligibility, one: GroupSearch) -> SearchResult:
    """The rankings of every query, searched one filter group at a time by ``one``."""
    out = empty_result(n_queries, depth)
    for rows, mask in eligible.groups():
        found = one(rows, mask)
        width = min(depth, found.ids.shape[1])
        out.ids[rows, :width], out.scores[rows, :width] = (
            found.ids[:, :width],
            found.scores[:, :width],
        )
    return out


def on_eligible(
    mask: np.ndarray, n_rows: int, depth: int, search_rows: Callable[[np.ndarray], SearchResult]
) -> SearchResult:
    """``search_rows(keep)``, a search over the eligible documents ``keep`` of ``mask`` alone,
    with its ids (positions in ``keep``) mapped back to the whole corpus; ``n_rows`` empty
    rankings when the filter keeps nothing."""
    keep = np.flatnonzero(mask)
    if len(keep) == 0:  # a filter that keeps nothing: nothing to rank
        return empty_result(n_rows, depth)
    found = search_rows(keep)
    ids = np.where(found.ids >= 0, keep[np.maximum(found.ids, 0)], -1)
    return SearchResult(ids=ids, scores=found.scores)


def filtered(
    n_queries: int,
    depth: int,
    eligible: Eligibility | None,
    plain: Callable[[Rows], SearchResult],
    masked: MaskedSearch,
) -> SearchResult:
    """Every query's ranking: ``plain(rows)`` searches the whole corpus for the query rows
    (all of them, as ``slice(None)``, when no query has a filter), ``masked(rows, mask)`` only
    the documents ``mask`` keeps."""
    if eligible is None:
        return plain(slice(None))
    return by_filter(
        n_queries,
        depth,
        eligible,
        lambda rows, mask: plain(rows) if mask is None else masked(rows, mask),
    )


def filtered_exact(
    vectors: np.ndarray,
    queries: np.ndarray,
    depth: int,
    rank: np.ndarray,
    eligible: Eligibility | None,
) -> SearchResult:
    """``exact_search`` where each query scores only its eligible documents."""
    return filtered(
        len(queries),
        depth,
        eligible,
        lambda rows: exact_search(vectors, queries[rows], depth, rank),
        lambda rows, mask: on_eligible(
            mask,
            len(rows),
            depth,
            lambda keep: exact_search(vectors[keep], queries[rows], depth, rank[keep]),
        ),
    )


def search_params(index: Any, selector: Any, fetch: int) -> Any:
    """The faiss ``SearchParameters`` of ``index``'s kind carrying ``selector``: HNSW keeps its
    efSearch (raised to ``fetch``), an IVF index (behind a transform too: ``PCA8,IVF16,Flat``)
    its nprobe; any other index the plain parameters."""
    import faiss

    lib: Any = faiss  # its stubs lack the parameter classes' keywords
    inner = lib.downcast_index(index)
    hnsw = getattr(inner, "hnsw", None)
    if hnsw is not None:
        return lib.SearchParametersHNSW(sel=selector, efSearch=max(hnsw.efSearch, fetch))
    ivf = lib.try_extract_index_ivf(inner)
    if ivf is not None:
        return lib.SearchParametersIVF(sel=selector, nprobe=ivf.nprobe)
    return lib.SearchParameters(sel=selector)


def _selected_search(
    index: Any, queries: np.ndarray, depth: int, rank: np.ndarray, mask: np.ndarray
) -> SearchResult:
    """Top ``depth`` of ``mask``'s documents per query from ``index``, through an ID selector;
    the fetch widens while a tie straddles the cut, as in ``faiss_index.search``."""
    import faiss

    bits = np.packbits(mask.astype(np.uint8), bitorder="little")
    selector = faiss.IDSelectorBitmap(len(mask), faiss.swig_ptr(bits))
    n_eligible = int(mask.sum())
    keep = min(depth, n_eligible)
    out = empty_result(len(queries), depth)
    if keep == 0:
        return out
    for start in range(0, len(queries), QUERY_BATCH):
        batch = np.ascontiguousarray(queries[start : start + QUERY_BATCH], dtype=np.float32)
        fetch = min(n_eligible, depth + TIE_MARGIN)
        while True:
            params = search_params(index, selector, fetch)
            scores, ids = index.search(batch, fetch, params=params)
            ids = ids.astype(np.int64)
            open_cut = (ids[:, -1] >= 0) & (scores[:, keep - 1] == scores[:, -1])
            if fetch >= n_eligible or not open_cut.any():
                break
            fetch = min(n_eligible, fetch * 2)
        ids, scores = apply_tie_rule(ids, scores, rank)
        out.ids[start : start + len(batch), :keep] = ids[:, :keep]
        out.scores[start : start + len(batch), :keep] = scores[:, :keep]
    return out  # ``bits`` (which the selector reads, not owns) lived until here


def filtered_index_search(
    index: Any,
    queries: np.ndarray,
    depth: int,
    rank: np.ndarray,
    eligible: Eligibility | None,
) -> SearchResult:
    """``faiss_index.search`` where each query retrieves only its eligible documents."""
    return filtered(
        len(queries),
        depth,
        eligible,
        lambda rows: search(index, queries[rows], depth, rank),
        lambda rows, mask: _selected_search(index, queries[rows], depth, rank, mask),
    )
