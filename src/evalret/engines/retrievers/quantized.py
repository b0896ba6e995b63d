"""Search over quantized embeddings (``indexes.<name>: {type: quantized, precision, rescore}``),
rescored with the float vectors when ``rescore`` says (engines/quantize.py); measured against
exact search like every approximate index."""

from __future__ import annotations

from typing import Any

import numpy as np

from evalret.core.ranking import SearchResult
from evalret.data.config import Config, QuantizedIndexConfig
from evalret.engines.faiss_factory import index_bytes
from evalret.engines.filtered import Rows, filtered, on_eligible
from evalret.engines.quantize import BINARY, code_searcher, quantize, quantized_search, rescore
from evalret.engines.retrievers.base import BaseRetriever, SearchJob


class QuantizedRetriever(BaseRetriever):
    """The quantized vectors' ranking (then its rescoring)."""

    approximate = True

    def __init__(self, name: str, settings: QuantizedIndexConfig, config: Config) -> None:
        self.name = name
        self.precision = settings.precision
        self.rescore = settings.rescore
        self.enabled = settings.enabled

    def params(self) -> dict[str, Any]:
        binary = self.precision in BINARY
        return {
            "type": "faiss.IndexBinaryFlat" if binary else "flat inner product over the codes",
            "precision": self.precision,
            "metric": "hamming" if binary else "inner_product",
            "quantizer": "sentence_transformers quantize_embeddings"
            + ("" if binary else ", ranges calibrated on the documents"),
            **({"rescore": self.rescore} if self.rescore is not None else {}),
        }

    def retrieve(self, job: SearchJob) -> SearchResult:
        docs, queries, depth, rank = job.doc_vectors, job.query_vectors, job.depth, job.rank
        with job.timed(f"quantize_{self.name}"):
            doc_codes, query_codes = quantize(docs, queries, self.precision)
        fetch = min(len(docs), depth * (self.rescore or 1))
        searched, find = code_searcher(doc_codes, self.precision, rank)

        def plain(rows: Rows) -> SearchResult:
            return find(query_codes[rows], fetch)

        def masked(rows: np.ndarray, mask: np.ndarray) -> SearchResult:
            return on_eligible(
                mask,
                len(rows),
                fetch,
                lambda keep: quantized_search(
                    doc_codes[keep],
                    query_codes[rows],
                    self.precision,
                    min(fetch, len(keep)),
                    rank[keep],
                )[0],
            )

        def rescored(found: SearchResult, rows: Rows) -> SearchResult:
            if self.rescore is None:
                return found
            return rescore(found, docs, queries[rows], depth, rank)

        with job.timed(f"search_{self.name}"):
            found = filtered(len(queries), fetch, job.eligibility, plain, masked)
        binary = self.precision in BINARY
        n_bytes = index_bytes(searched) if binary else int(doc_codes.nbytes)
        self.cost = {
            "index_bytes": n_bytes,
            "bytes_per_vector": n_bytes / max(len(docs), 1),
            # a scan of every code, then the float products of the candidates rescored
            "distances_per_query": float(len(docs) + (fetch if self.rescore else 0)),
        }
        self.searcher = lambda rows: rescored(plain(rows), rows)
        if self.rescore is None:
            return found
        with job.timed(f"rescore_{self.name}"):
            return rescored(found, slice(None))
