"""The lexical reference beside the dense indexes: BM25 (the bm25s package).

It returns a ``SearchResult`` ranked under evalret's tie rule (score descending, then document
id descending), like the faiss indexes, so every metric, report and run file treats them alike.
BM25 retrieves only documents that share at least one term with the query: a query whose terms
are all unknown or stop words retrieves nothing (and scores 0), as a lexical engine would.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from evalret.core.filters import Eligibility
from evalret.core.ranking import SearchResult, empty_result, top_candidates
from evalret.data.config import Bm25IndexConfig
from evalret.errors import ConfigError


def _tokenizer(cfg: Bm25IndexConfig) -> Any:
    try:
        from bm25s.tokenization import Tokenizer
    except ImportError as e:  # pragma: no cover - bm25s is a dependency
        raise ConfigError("indexes.bm25 needs the 'bm25s' package: pip install bm25s") from e
    stemmer = None
    if cfg.stemmer is not None:
        try:
            import Stemmer
        except ImportError as e:  # pragma: no cover - PyStemmer is a dependency
            raise ConfigError(
                "indexes.bm25.stemmer needs the 'PyStemmer' package: pip install PyStemmer"
            ) from e
        try:
            stemmer = Stemmer.Stemmer(cfg.stemmer)
        except KeyError:
            raise ConfigError(
                f"indexes.bm25.stemmer: unknown language {cfg.stemmer!r} "
                f"(one of {', '.join(sorted(Stemmer.algorithms()))})"
            ) from None
    return Tokenizer(lower=True, stopwords=cfg.stopwords or [], stemmer=stemmer)


def bm25_search(
    doc_texts: Sequence[str],
    query_texts: Sequence[str],
    cfg: Bm25IndexConfig,
    depth: int,
    rank: np.ndarray,
    progress: Callable[[int], None] | None = None,
    eligible: Eligibility | None = None,
) -> SearchResult:
    """Top ``depth`` documents per query by BM25 (documents with a positive score only; with
    ``eligible``, only those the query's filter keeps)."""
    import bm25s

    tokenizer = _tokenizer(cfg)
    corpus = tokenizer.tokenize(list(doc_texts), return_as="ids", show_progress=False)
    retriever = bm25s.BM25(method=cfg.method, k1=cfg.k1, b=cfg.b)
    retriever.index(corpus, show_progress=False)
    queries = tokenizer.tokenize(
        list(query_texts), return_as="ids", update_vocab=False, show_progress=False
    )
    # id 0 is the tokenizer's empty token (a query of stop words or unknown terms only)
    vocab = retriever.vocab_dict
    out = empty_result(len(queries), depth)
    for qi, tokens in enumerate(queries):
        known = [t for t in tokens if t != 0 and t in vocab]
        if known:
            row = np.asarray(retriever.get_scores(known), dtype=np.float64)  # as computed
            mask = eligible.mask(qi) if eligible is not None else None
            matched = np.flatnonzero((row > 0) if mask is None else (row > 0) & mask)
            out.ids[qi], out.scores[qi] = top_candidates(matched, row[matched], depth, rank)
        if progress is not None:
            progress(1)
    return out
