"""Beyond accuracy: how much of the corpus a ranking reaches, and how evenly, in numpy alone.

Both figures read the document indices of a ``SearchResult`` (int64 [Q, depth]) at a cutoff k,
over the queries of one slice (a boolean mask); no judgment enters them.

- **Corpus coverage@k**: the share of the corpus's ``n_docs`` documents that appear in the top k
  of at least one query of the slice: ``|union over q of top_k(q) ∩ corpus| / n_docs``.
- **Gini@k**: the Gini coefficient of the retrieval counts ``x_d`` (how many of the slice's queries
  hold document d in their top k) over *every* corpus document, never-retrieved ones included
  (their count is 0). With the counts sorted ascending ``x_(1) <= ... <= x_(n)``, n = ``n_docs``::

      G = sum_i (2i - n - 1) x_(i) / (n * sum_i x_(i))
        = sum_i sum_j |x_i - x_j| / (2 n^2 mean(x))       (the mean-difference form)

  0 when every document is retrieved equally often; (n - 1) / n, the most it can be, when one
  document takes every retrieval, so G -> 1 as retrievals concentrate on a few documents of a
  large corpus.

Ids: -1 marks an empty rank and is no document. An id >= ``n_docs`` is a document outside the
corpus (a run file may rank documents the golden set does not know); each distinct such id is one
such document. They count in ``outside`` only: coverage stays relative to the corpus (its
numerator and denominator count corpus documents) and the Gini coefficient is over the corpus
documents' counts.

Undefined values are NaN: both figures for a slice without queries, coverage for an empty corpus,
the Gini coefficient when no corpus document is retrieved at all (0 / 0).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Popularity:
    """Coverage and concentration of one slice's top k (see the module docstring)."""

    k: int
    coverage: float  # share of the corpus retrieved by at least one query; NaN if undefined
    gini: float  # Gini coefficient of the corpus documents' retrieval counts; NaN if undefined
    retrieved: int  # distinct corpus documents in the top k
    outside: int  # distinct documents outside the corpus (ids >= n_docs) in the top k


def retrieval_counts(ids: np.ndarray, mask: np.ndarray, n_docs: int, k: int) -> np.ndarray:
    """int64 [n_docs]: per corpus document, how many ranks of the masked queries' top ``k``
    hold it (one per query: a ranking holds a document once). Ids -1 and >= ``n_docs`` are
    skipped."""
    top = np.asarray(ids, dtype=np.int64)[np.asarray(mask, dtype=bool), :k]
    corpus = top[(top >= 0) & (top < n_docs)]
    return np.bincount(corpus, minlength=n_docs).astype(np.int64)


def gini(counts: np.ndarray) -> float:
    """The Gini coefficient of non-negative ``counts``, one per document (zeros included):
    ``sum_i (2i - n - 1) x_(i) / (n sum x)`` over the ascending order, i = 1..n. NaN when the
    counts are empty or all zero."""
    x = np.sort(np.asarray(counts, dtype=np.float64))
    n, total = len(x), float(x.sum())
    if n == 0 or total == 0:
        return float("nan")
    weights = 2 * np.arange(1, n + 1, dtype=np.float64) - n - 1
    return float((weights @ x) / (n * total))


def popularity(ids: np.ndarray, mask: np.ndarray, n_docs: int, k: int) -> Popularity:
    """Coverage@k, Gini@k and the distinct documents inside and outside the corpus in the top
    ``k`` of the queries selected by ``mask`` (bool [Q]) of rankings ``ids`` (int64 [Q, depth])."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    top = np.asarray(ids, dtype=np.int64)[np.asarray(mask, dtype=bool), :k]
    outside = len(np.unique(top[top >= n_docs]))
    counts = retrieval_counts(ids, mask, n_docs, k)
    retrieved = int((counts > 0).sum())
    if not top.shape[0]:  # no query in the slice
        return Popularity(k, float("nan"), float("nan"), 0, 0)
    coverage = retrieved / n_docs if n_docs > 0 else float("nan")
    return Popularity(k, coverage, gini(counts), retrieved, outside)
