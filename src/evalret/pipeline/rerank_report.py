"""The report's ``rerank`` section: each rerank index set beside its first stage, per slice.

For a rerank index over ``k`` candidates of its first stage:

- **ceiling**: the first stage's recall@k, the share of the relevant documents among the
  candidates: nothing a reranker does can find the others.
- **oracle**: every metric of the candidates in ideal order (by grade, highest first; an unjudged
  document counts as grade 0; ties by the tie rule, document id descending): the best any
  reranker of these candidates can score.
- **ideal**: every metric of the ideal ranking of the whole corpus (every judged document by
  grade, ties by the tie rule): the best any system can score.
- **attribution**, per metric: ``stage1`` = first stage - ideal (what the first stage lost,
  ordering and candidates together), ``stage2`` = rerank - first stage (what the reranker
  changed), so that ideal + stage1 + stage2 = rerank; and ``headroom`` = oracle - rerank (what a
  better reranker of the same candidates could still win).

All are computed by the same metric code as the indexes' own figures (core/metrics.py), on the
queries the run scores.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from evalret.core.metrics import Metric, build_judgments, compute, parse_metrics
from evalret.core.ranking import SearchResult, empty_result, id_rank, top_candidates
from evalret.core.slices import Slice
from evalret.data.config import Config
from evalret.data.goldenset import GoldenSet
from evalret.data.schema import RerankSection, RerankSlice
from evalret.engines.retrievers import Retriever, Staged
from evalret.engines.retrievers.rerank import candidates


@dataclass(frozen=True)
class Stage:
    """A rerank index, its first stage, and that stage's candidates per query."""

    index: str
    first_stage: str
    k: int
    pools: list[np.ndarray]  # per query: the first stage's first k documents the corpus has


def rerank_stages(
    enabled: Sequence[Retriever], rankings: dict[str, SearchResult], n_docs: int
) -> list[Stage]:
    """The stage of every enabled rerank index (a ``Staged`` retriever: (first stage, k)), its
    candidates taken from the first stage's ranking before it is cut to the run's depth."""
    out = []
    for r in enabled:
        if isinstance(r, Staged):
            first, k = r.stage
            out.append(Stage(r.name, first, k, candidates(rankings[first], k, n_docs)))
    return out


def _graded(ids: np.ndarray, grades: dict[int, int], depth: int, rank: np.ndarray) -> np.ndarray:
    """``ids`` ordered by grade (unjudged: 0), then by the tie rule, ``depth`` ranks."""
    values = np.array([grades.get(int(d), 0) for d in ids], dtype=np.float64)
    ordered, _ = top_candidates(np.asarray(ids, dtype=np.int64), values, depth, rank)
    return ordered


def oracle_ranking(
    pools: Sequence[np.ndarray], golden: GoldenSet, depth: int, rank: np.ndarray
) -> SearchResult:
    """Each query's candidates in ideal order (see the module docstring)."""
    out = empty_result(len(pools), depth)
    for q, (qid, pool) in enumerate(zip(golden.query_ids, pools, strict=True)):
        grades = {golden.doc_index[d]: g for d, g in golden.qrels.get(qid, {}).items()}
        out.ids[q] = _graded(pool, grades, depth, rank)
    return out


def ideal_ranking(golden: GoldenSet, depth: int, rank: np.ndarray) -> SearchResult:
    """Each query's judged documents by grade, then by the tie rule."""
    out = empty_result(len(golden.query_ids), depth)
    for q, qid in enumerate(golden.query_ids):
        grades = {golden.doc_index[d]: g for d, g in golden.qrels.get(qid, {}).items()}
        out.ids[q] = _graded(np.array(sorted(grades), dtype=np.int64), grades, depth, rank)
    return out


def per_query(
    ids: np.ndarray, golden: GoldenSet, metrics: Sequence[Metric], config: Config
) -> dict[str, np.ndarray]:
    """Every metric's per-query values of the ranking ``ids`` (documents of the corpus)."""
    judgments = build_judgments(
        ids,
        *golden.qrel_arrays(),
        n_docs=len(golden.doc_ids),
        relevance_level=config.relevance_level,
    )
    return compute(metrics, judgments, config.ndcg_gain)


def _mean(v: np.ndarray, mask: np.ndarray) -> float | None:
    return float(v[mask].mean()) if mask.any() else None


def rerank_section(
    stage: Stage,
    scores: dict[str, dict[str, np.ndarray]],
    golden: GoldenSet,
    slices: list[Slice],
    config: Config,
    depth: int,
) -> RerankSection:
    """The section of one rerank index (``scores``: per index, its per-query metric values)."""
    metrics = config.metric_specs
    rank = id_rank(golden.doc_ids)
    pool_ids = empty_result(len(stage.pools), stage.k).ids
    for q, pool in enumerate(stage.pools):
        pool_ids[q, : len(pool)] = pool
    ceiling = per_query(pool_ids, golden, parse_metrics([f"recall@{stage.k}"]), config)
    recall = next(iter(ceiling.values()))
    oracle = per_query(
        oracle_ranking(stage.pools, golden, depth, rank).ids, golden, metrics, config
    )
    ideal = per_query(ideal_ranking(golden, depth, rank).ids, golden, metrics, config)
    first, reranked = scores[stage.first_stage], scores[stage.index]
    return RerankSection(
        index=stage.index,
        first_stage=stage.first_stage,
        k=stage.k,
        slices={
            s.name: RerankSlice(
                n_queries=s.n_queries,
                ceiling=_mean(recall, s.mask),
                oracle={m: _mean(v, s.mask) for m, v in oracle.items()},
                ideal={m: _mean(v, s.mask) for m, v in ideal.items()},
                stage1={m: _mean(first[m] - ideal[m], s.mask) for m in ideal},
                stage2={m: _mean(reranked[m] - first[m], s.mask) for m in ideal},
                headroom={m: _mean(oracle[m] - reranked[m], s.mask) for m in ideal},
            )
            for s in slices
        },
    )
