"""A run's results per index: metric values with their intervals, per-query scores and curves,
slices, and the sections beside them (ANN recall, lexical, rerank, intrinsic health, labels,
latency)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    SerializerFunctionWrapHandler,
    model_serializer,
)

# the closed vocabularies are the core's, defined once there
from evalret.core.slices import Reliability
from evalret.data.schema.base import (
    IntervalMethod,
    _Model,
    _Sparse,
)


class MetricValue(_Sparse):
    value: float | None  # None for an empty slice
    ci_low: float | None  # the interval's lower end
    ci_high: float | None  # the interval's upper end
    # only when the golden set holds LLM labels (pipeline/intervals.py): how the interval was
    # computed, the slice's queries whose LLM labels a person checked (labelled) and those with
    # an LLM label nobody checked (predicted), and the prediction-powered estimate of the mean
    interval: IntervalMethod | None = None
    n_labelled: int | None = None  # queries whose LLM labels a person checked
    n_predicted: int | None = None  # queries with an LLM label nobody checked
    estimate: float | None = None  # the prediction-powered estimate of the mean


class SliceResult(_Model):
    n_queries: int  # queries in the slice
    reliability: Reliability  # how far its means can be trusted, from its number of queries
    metrics: dict[str, MetricValue]  # every metric's mean and interval, by metric name
    # mean share of the top k holding a judged document, per cutoff ("judged@10": 0.83)
    judged: dict[str, float | None] = {}
    # corpus coverage and Gini of retrieval counts in the top k (evalret.core.beyond), and the
    # distinct documents outside the corpus there: {"coverage@10": 0.41, "gini@10": 0.62,
    # "outside_corpus@10": 0}; absent in reports of older versions
    beyond: dict[str, float | int | None] = {}

    @model_serializer(mode="wrap")
    def _beyond_absent_stays_absent(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A report written before ``beyond`` existed dumps back without it."""
        data: dict[str, Any] = handler(self)
        if "beyond" not in self.model_fields_set:
            data.pop("beyond", None)
        return data


class MetricCurves(_Model):
    """Mean metric@k per slice at every cutoff ``k`` (evalret.core.curves), rounded to 6 digits."""

    k: list[int]  # the cutoffs, 1 to the search depth
    values: dict[str, dict[str, list[float | None]]]  # family -> slice -> value at each k


class IndexResult(_Sparse):
    kind: str  # exact | hnsw
    params: dict[str, Any]  # the index's settings; an external ranking's counts beside them
    slices: dict[str, SliceResult]  # metrics per slice, by slice name
    per_query: dict[str, list[float]]  # each metric's score per query, aligned with query_ids
    # the judged-only (condensed) form of each metric per query (recall@10 holds
    # recall@10:judged), aligned with query_ids: what tells a drop from unjudged documents
    # (absent in reports of older versions)
    condensed: dict[str, list[float]] | None = None
    top_ids: list[list[str]]  # the first TOP_KEPT document ids per query, aligned with query_ids
    curves: MetricCurves | None = None  # metric@k for k = 1..depth per slice (for the HTML report)


class SliceInfo(_Model):
    kind: str  # what made the slice: all, tag, frequency or custom
    definition: str  # its rule, in words
    n_queries: int  # queries in the slice
    reliability: Reliability  # how far its means can be trusted, from its number of queries
    members: list[int]  # positions in query_ids of the slice's queries


class AnnSlice(_Model):
    n_queries: int  # queries in the slice
    recall: dict[str, float | None]  # "recall@k" of the ANN top-k against the exact top-k
    metric_deltas: dict[str, float | None]  # ann - exact, per metric


class SelectivityBucket(_Model):
    """The filtered queries whose filter leaves a share of the corpus eligible in one range."""

    n_queries: int  # filtered queries in this range
    recall: dict[str, float | None]  # "recall@k" against filtered exact search, mean (None: none)


class Spread(_Model):
    """One figure over the repeated searches of an index (``stability.repeats``; in scratch mode
    each a new build): its mean over the repeats, the worst and the best (None: an empty
    slice)."""

    mean: float | None  # the mean over the repeats
    min: float | None  # the worst repeat's (every figure here is higher-is-better)
    max: float | None  # the best repeat's
    values: list[float | None]  # each repeat's, in order (the first is the index's own ranking)


class AnnStabilitySlice(_Model):
    n_queries: int  # queries in the slice
    recall: dict[str, Spread]  # "recall@k" against the exact top-k, over the repeats
    metric_deltas: dict[str, Spread]  # ann - exact per metric, over the repeats


class AnnStability(_Model):
    """The spread of an approximate index's figures over its repeated searches (builds)."""

    repeats: int  # the searches (scratch mode: builds) of the index
    slices: dict[str, AnnStabilitySlice]  # the spread per slice


class AnnSection(_Sparse):
    index: str  # the approximate index
    reference: str  # the exact index it is measured against
    slices: dict[str, AnnSlice]  # recall and metric changes per slice
    # with filtered queries only: recall by selectivity bucket ("<1%", "1-10%", "10-50%",
    # ">=50%" of the corpus eligible; a query without a filter counts as 100%)
    selectivity: dict[str, SelectivityBucket] | None = None
    # the approximate index's size: serialized bytes, and those per document; absent when the
    # index does not tell (pgvector) and in reports of older versions
    index_bytes: int | None = None
    bytes_per_vector: float | None = None  # its size per document
    # vectors the index's search compared per query (faiss's HNSW / IVF statistics, every
    # vector for a scan); absent when the index does not tell and in reports of older versions
    distances_per_query: float | None = None
    # with stability.repeats above 1 only: the spread of recall and of each metric's change over
    # the repeats (the section's slices hold the first repeat's figures); absent otherwise
    stability: AnnStability | None = None


class LexicalSlice(_Model):
    n_queries: int  # queries in the slice
    dense_minus_bm25: dict[str, float | None]  # per metric, mean over the slice's queries
    # per metric, the hybrid's mean minus the dense index's
    hybrid_minus_dense: dict[str, float | None]
    dense_wins: dict[str, int]  # queries where the dense index scores higher than BM25
    bm25_wins: dict[str, int]  # queries where BM25 scores higher than the dense index


class LexicalSection(_Model):
    """Where the embedding model beats or loses to lexical search, per slice."""

    dense: str  # the dense index compared (the one the hybrid fuses)
    slices: dict[str, LexicalSlice]  # the comparison per slice


class RerankSlice(_Model):
    """A rerank index beside its first stage in one slice (pipeline/rerank_report.py)."""

    n_queries: int  # queries in the slice
    ceiling: float | None  # the first stage's recall@k: the most a reranker can find
    oracle: dict[str, float | None]  # the candidates in ideal order, per metric
    ideal: dict[str, float | None]  # the corpus's judged documents in ideal order
    stage1: dict[str, float | None]  # first stage - ideal
    stage2: dict[str, float | None]  # rerank - first stage
    headroom: dict[str, float | None]  # oracle - rerank


class RerankSection(_Model):
    """A rerank index's first stage, its k, and the comparison per slice."""

    index: str  # the rerank index
    first_stage: str  # the index whose candidates it reorders
    k: int  # candidates reranked per query
    slices: dict[str, RerankSlice]  # the comparison per slice


class IntrinsicSection(_Model):
    """Label-free health of the vectors (evalret.core.health): figures for documents and queries."""

    documents: dict[str, float | int | bool]  # the health figures of the document vectors
    queries: dict[str, float | int | bool] | None  # None with fewer than 2 queries
    collapse_reasons: dict[str, list[str]]  # per matrix; empty lists when healthy
    settings: dict[str, Any]  # seed, pairs and rows sampled


class LabelView(_Model):
    """One set of labels' headline: per index, every metric's mean on the ``all`` slice."""

    n_queries: int  # the run's queries this labelling scores
    indexes: dict[str, dict[str, MetricValue]]  # per index, every metric's mean on the all slice


class LabelsSection(_Model):
    """A run whose golden set holds an LLM judge's grades (core/provenance.py): the headline on
    human labels alone beside all labels. Every other metric of the report is on ``gate``'s."""

    gate: Literal["all", "human"]  # the labels the report's metrics and the gate use
    n_judgments: int  # the golden set's judgments, all labels
    n_llm_judgments: int  # of them, an LLM judge's grade
    n_llm_beside_human: int  # an LLM judge's grades of pairs a person graded (kept apart)
    human: LabelView  # the headline on human labels alone
    all: LabelView  # the headline on all labels


class IndexLatency(_Model):
    """One index's single-query latency in a run (engines/search_cost.run_latency)."""

    p50_ms: float  # median single-query latency, milliseconds
    p95_ms: float  # its 95th percentile
    n_queries: int  # the queries timed


class LatencySection(_Model):
    """Wall-clock latency per index, and the machine it was measured on: machine-dependent,
    gated only by a budget's ``max_p95_ms``."""

    note: str  # how it was measured
    machine: dict[str, Any]  # CPUs, platform, processor, Python, load average (search_cost.machine)
    indexes: dict[str, IndexLatency]  # per timed index
