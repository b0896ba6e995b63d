"""The beyond-accuracy stage of a run: corpus coverage and the Gini coefficient of retrieval
counts (evalret.core.beyond) of every index's top k, per slice, into each slice's ``beyond``.

Reported, never gated: a gate check cannot name these figures.
"""

from __future__ import annotations

import math

from evalret.core.beyond import popularity
from evalret.core.ranking import SearchResult
from evalret.core.slices import Slice
from evalret.data.schema import IndexResult


def beyond_k(k: int, depth: int, n_docs: int) -> int:
    """The cutoff the figures use: the configured ``k``, lowered to the search ``depth`` when the
    rankings are shorter than k without holding the whole corpus (then the top k is the whole
    ranking and k stands)."""
    return k if depth >= min(k, n_docs) else depth


def _figure(v: float) -> float | None:
    return None if math.isnan(v) else v


def add_beyond(
    indexes: dict[str, IndexResult],
    rankings: dict[str, SearchResult],
    slices: list[Slice],
    *,
    n_docs: int,
    k: int,
    depth: int,
) -> dict[str, IndexResult]:
    """``indexes`` with ``coverage@k``, ``gini@k`` and ``outside_corpus@k`` in every slice's
    ``beyond``, computed from ``rankings`` over a corpus of ``n_docs`` documents (ids >= n_docs
    are documents outside it), at ``beyond_k(k, depth, n_docs)``."""
    cut = beyond_k(k, depth, n_docs)
    out = {}
    for name, index in indexes.items():
        ids = rankings[name].ids
        figures = {s.name: popularity(ids, s.mask, n_docs, cut) for s in slices}
        out[name] = index.model_copy(
            update={
                "slices": {
                    s: result.model_copy(
                        update={
                            "beyond": {
                                f"coverage@{cut}": _figure(figures[s].coverage),
                                f"gini@{cut}": _figure(figures[s].gini),
                                f"outside_corpus@{cut}": figures[s].outside,
                            }
                        }
                    )
                    for s, result in index.slices.items()
                }
            }
        )
    return out
