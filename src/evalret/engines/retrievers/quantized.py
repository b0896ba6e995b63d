"""Search over quantized embeddings (``indexes.<name>: {type: quantized, precision, rescore}``),
rescored with the float vectors when ``rescore`` says (engines/quantize.py); measured against
exact search like every approximate index."""

from __future__ import annotations

from typing import Any

import numpy as np

from evalret.core.ranking import SearchResult
from evalret.data.config import Config, QuantizedIndexConfig
from evalret.engines.faiss_factory import index_bytes
from evalret.engines.filtered import by_filter, on_eligible
from evalret.engines.quantize import BINARY, binary_index, quantize, quantized_search, rescore
from evalret.engines.retrievers.base import BaseRetriever, SearchJob


class QuantizedRetriever(BaseRetriever):
    """The quantized vectors' ranking (then its rescoring)."""

    approximate = True

    def __init__(self, name: str, settings: QuantizedIndexConfig, config: Config) -> None:
        self.name = name
        self.precision = settings.precision
        self.rescore = settings.rescore
        self.enabled = settings.enabled
        self.size: dict[str, float] | None = None

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

    def index_size(self) -> dict[str, float] | None:
        return self.size

    def retrieve(self, job: SearchJob) -> SearchResult:
        docs, queries = job.doc_vectors, job.query_vectors
        with job.timed(f"quantize_{self.name}"):
            doc_codes, query_codes = quantize(docs, queries, self.precision)
        fetch = min(len(docs), job.depth * (self.rescore or 1))

        def one(rows: np.ndarray, mask: np.ndarray | None) -> SearchResult:
            """The queries ``rows`` searched over their eligible documents (all: ``mask`` None)."""
            if mask is None:
                return quantized_search(
                    doc_codes, query_codes[rows], self.precision, fetch, job.rank
                )[0]
            return on_eligible(
                mask,
                len(rows),
                fetch,
                lambda keep: quantized_search(
                    doc_codes[keep],
                    query_codes[rows],
                    self.precision,
                    min(fetch, len(keep)),
                    job.rank[keep],
                )[0],
            )

        with job.timed(f"search_{self.name}"):
            if job.eligibility is None:
                found = one(np.arange(len(queries)), None)
            else:
                found = by_filter(len(queries), fetch, job.eligibility, one)
        binary = self.precision in BINARY
        n_bytes = index_bytes(binary_index(doc_codes)) if binary else int(doc_codes.nbytes)
        self.size = {"index_bytes": n_bytes, "bytes_per_vector": n_bytes / max(len(docs), 1)}
        if self.rescore is None:
            return found
        with job.timed(f"rescore_{self.name}"):
            return rescore(found, docs, queries, job.depth, job.rank)
