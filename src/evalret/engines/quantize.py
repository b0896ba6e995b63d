"""Quantized embeddings (``model.embedding_precision``) and their search.

The vectors are quantized by sentence-transformers' ``quantize_embeddings``: int8 / uint8 map
each dimension's range onto 256 buckets, the ranges calibrated on the corpus's document vectors
(queries are quantized with the same ranges); binary / ubinary keep the sign bit of every
dimension, packed 8 to a byte. int8 and uint8 codes are searched by inner product over the codes
(every document scored, faiss's flat kernel, as exact search); binary codes by Hamming distance
with a ``faiss.IndexBinaryFlat`` (the score is minus the distance). With ``rescore: N`` the
quantized search fetches the top ``N * depth`` documents, rescored by the inner product of the
float query and document vectors, and the top ``depth`` of them are kept. Every step runs under
evalret's tie rule.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from evalret.core.ranking import SearchResult, apply_tie_rule
from evalret.engines.faiss_index import exact_search, search

BINARY = ("binary", "ubinary")
RESCORE_BATCH = 64  # queries whose candidates are rescored at once


def quantize(docs: np.ndarray, queries: np.ndarray, precision: str) -> tuple[np.ndarray, ...]:
    """(document codes, query codes) as sentence-transformers quantizes them, calibrated on
    ``docs``; binary codes as uint8 bytes (binary's int8 bytes shifted by 128: the same bits)."""
    try:
        from sentence_transformers.util.quantization import quantize_embeddings
    except ImportError:  # sentence-transformers before 5
        from sentence_transformers.quantization import (  # type: ignore[no-redef]
            quantize_embeddings,
        )

    calibration = docs if precision not in BINARY else None
    out = []
    for matrix in (docs, queries):
        codes = np.asarray(
            quantize_embeddings(matrix, precision, calibration_embeddings=calibration)  # type: ignore[arg-type]
        )
        if precision == "binary":
            codes = (codes.astype(np.int16) + 128).astype(np.uint8)
        out.append(np.ascontiguousarray(codes))
    return tuple(out)


class _NegatedHamming:
    """A faiss binary index answering minus the Hamming distance: higher is nearer, as the tie
    rule and ``faiss_index.search`` read scores."""

    def __init__(self, index: Any) -> None:
        self.index = index
        self.ntotal = index.ntotal

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        distances, ids = self.index.search(queries, k)
        return -distances.astype(np.float32), ids


def binary_index(codes: np.ndarray) -> Any:
    """A ``faiss.IndexBinaryFlat`` holding the packed ``codes``."""
    import faiss

    index = faiss.IndexBinaryFlat(codes.shape[1] * 8)
    if len(codes):
        index.add(codes)
    return index


def quantized_search(
    doc_codes: np.ndarray, query_codes: np.ndarray, precision: str, depth: int, rank: np.ndarray
) -> tuple[SearchResult, Any]:
    """The top ``depth`` of every query over the codes, and what was searched (a binary index,
    or the codes themselves)."""
    searched, find = code_searcher(doc_codes, precision, rank)
    return find(query_codes, depth), searched


def code_searcher(
    doc_codes: np.ndarray, precision: str, rank: np.ndarray
) -> tuple[Any, Callable[[np.ndarray, int], SearchResult]]:
    """What searches ``doc_codes`` (a binary index, or the codes themselves), built once, and
    its search: (query codes, depth) -> their top ``depth`` under the tie rule."""
    if precision in BINARY:
        index = binary_index(doc_codes)
        hamming = _NegatedHamming(index)
        return index, lambda codes, depth: search(hamming, codes, depth, rank)
    as_float = doc_codes.astype(np.float32)
    return doc_codes, lambda codes, depth: exact_search(
        as_float, codes.astype(np.float32), depth, rank
    )


def rescore(
    candidates: SearchResult,
    docs: np.ndarray,
    queries: np.ndarray,
    depth: int,
    rank: np.ndarray,
) -> SearchResult:
    """The top ``depth`` of each query's candidates by the float inner product."""
    n_queries = len(candidates.ids)
    keep = min(depth, candidates.ids.shape[1])
    ids_out = np.full((n_queries, depth), -1, dtype=np.int64)
    scores_out = np.full((n_queries, depth), -np.inf, dtype=np.float64)
    for start in range(0, n_queries, RESCORE_BATCH):
        ids = candidates.ids[start : start + RESCORE_BATCH]
        gathered = docs[np.where(ids >= 0, ids, 0)].astype(np.float32)  # [b, m, dim]
        q = queries[start : start + RESCORE_BATCH].astype(np.float32)
        scores = np.einsum("bmd,bd->bm", gathered, q).astype(np.float64)
        scores = np.where(ids >= 0, scores, -np.inf)
        ids, scores = apply_tie_rule(ids, scores, rank)
        ids_out[start : start + len(ids), :keep] = ids[:, :keep]
        scores_out[start : start + len(ids), :keep] = scores[:, :keep]
    return SearchResult(ids=ids_out, scores=scores_out)
