"""The report written as report.json: pydantic models with a versioned schema.

A metric's value sits at ``indexes.<index>.slices.<slice>.metrics.<metric>.value`` beside
``ci_low`` and ``ci_high``; per-query scores at ``indexes.<index>.per_query.<metric>``, aligned with
the top-level ``query_ids``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

# the closed vocabularies are the core's, defined once there
from evalret.core.comparison import CompareStatus
from evalret.core.gate import CheckKind, CheckStatus, GateVerdict, UnjudgedPolicy
from evalret.core.metrics import SCORE_SLACK
from evalret.core.slices import Reliability
from evalret.core.stats import Correction, PairedTest

SCHEMA_VERSION = 1
TOP_KEPT = 10  # ranked document ids kept per query in a report (drift, qualitative review)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Sparse(_Model):
    """A model whose optional fields stay out of the JSON when the input left them out: keys an
    older evalret did not write (or a backend does not have) are not added as nulls or empty
    lists, so a saved report reads back and writes out the same."""

    @model_serializer(mode="wrap")
    def _absent_stays_absent(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        return {k: v for k, v in data.items() if k in self.model_fields_set}


class Change(_Model):
    """One setting that differs between two runs: its value in each (None where absent)."""

    baseline: Any  # the value in the baseline
    current: Any  # the value in this run

    @model_validator(mode="before")
    @classmethod
    def _an_object(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            raise ValueError("not an object")
        return data


IntervalMethod = Literal["bootstrap", "ppi"]


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
    params: dict[str, Any]  # the index's settings
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


class ReaderWarning(_Model):
    """A warning of the golden-set readers (an empty text, truncated grades...), with where."""

    code: str | None  # the kind of warning, when it has one
    file: str | None  # the file it is about
    line: int | None  # its line in that file, when known
    message: str  # what the reader noticed


class GoldenSetInfo(_Sparse):
    source: str  # the path it was read from
    format: str  # the format read: native, beir or trec
    fingerprint: str  # sha256 of the queries, corpus and judgments
    corpus_fingerprint: str  # sha256 of the corpus alone
    query_fingerprints: dict[str, str]  # every judged query, for saying what changed
    n_documents: int  # documents in the corpus
    n_queries_judged: int  # queries with at least one judgment
    n_queries_evaluated: int  # queries evaluated (fewer in a sampled run)
    queries_without_relevant: list[str]  # listed whether excluded or scored
    n_judgments: int  # (query, document, grade) judgments
    warnings: list[ReaderWarning] = []  # absent in reports of older versions (and kept absent)


class CacheUse(_Model):
    """What the embedding cache served for one kind of text (documents or queries)."""

    hits: int  # texts read from the cache
    misses: int  # texts embedded and written to it
    corrupt_shards: list[str]  # shard ids set aside as unreadable, their texts embedded again


class EmbeddingCache(_Sparse):
    """The embedding cache of a run: where it is, what it served and what it repaired, then
    what each retriever says of its own use of the cache (its ``cache_notes()``). A retriever
    other than hnsw adds its notes as further string-valued keys, written after these."""

    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, str]  # further retrievers' notes: strings, kept in their order

    dir: str  # the cache directory
    namespace: str  # the key of these settings' vectors in the cache
    document: CacheUse | None = None  # absent when no document went through the cache
    # what the cache served for the queries; absent when none went through it
    query: CacheUse | None = None
    warnings: list[str] = []  # what the cache could not do (absent in older reports)
    # hit | built | rebuilt (the cached graph was unreadable or did not fit) | not built (HNSW
    # off); absent when no hnsw retriever reported on the cache
    hnsw_index: str | None = None


class BackendInfo(_Sparse):
    """The embedding backend: name and precision; onnx / openvino add threads and the model."""

    name: str  # torch | onnx | openvino
    precision: str  # fp32 or int8
    threads: int | None = None  # threads the backend ran with
    model: str | None = None  # read | exported | ... (how the exported model was obtained)
    model_file: str | None = None  # the model file the backend loaded
    device: str | None = None  # torch: the device it ran on (auto resolved); absent before


class BackendCheck(_Model):
    """Cosine agreement of a non-torch backend's document vectors with torch's on a sample."""

    reference: str  # the backend compared with (torch)
    sample: int  # texts embedded by both
    seed: int  # seed of the sample
    mean_cosine: float  # mean cosine between the two backends' vectors
    min_cosine: float  # lowest cosine between them


class ApiKindUse(_Sparse):
    """What one kind of text cost at an embedding API in a run."""

    requests: int  # requests sent
    retries: int  # requests sent again after a 429, 5xx or timeout
    texts: int  # texts embedded
    tokens: int | None  # as the API's usage reported them; None when a server reported none
    cost: float | None = None  # tokens x model.price_per_million_tokens, when the price is set


class ApiUse(_Sparse):
    """The embedding API a run used (provider openai): its endpoint and what each kind cost."""

    endpoint: str  # the base URL called
    model: str  # the model asked for
    served_model: str | None = None  # the model the answers named, when not ``model``
    document: ApiKindUse | None = None  # absent when every document came from the cache
    # what the queries took; absent when every query came from the cache
    query: ApiKindUse | None = None
    # gate.max_cost_per_run: what embedding every text of the run costs with nothing cached
    # (tokens counted as --dry-run counts them, times the price); absent when not asked
    cold_cost: float | None = None


class EngineInfo(_Sparse):
    """Where the cache misses were embedded when not in this process (embedding.engine ray)."""

    name: str  # ray
    address: str  # "local runtime" (started and shut down by the run), "auto" or ray://...
    workers: int  # Ray actors, one model each
    batch_size: int  # texts per batch sent to an actor
    gpus_per_worker: float  # GPUs per actor
    texts: int  # texts the engine embedded in this run (0: everything came from the cache)
    startup_s: float | None = None  # joining or starting the runtime; None: it was not needed


class EmbeddingInfo(_Sparse):
    """The vectors of a run: their shape, the cache and the backend that made them."""

    dim: int  # the vectors' dimension
    n_documents: int  # documents embedded or read from the cache
    n_queries: int  # queries embedded or read from the cache
    document_text: str  # how a document's text was built before embedding
    cache: EmbeddingCache | None = None  # None without a cache; absent in older reports
    backend: BackendInfo | None = None  # absent in older reports
    backend_check: BackendCheck | None = None  # None for torch; absent in older reports
    api: ApiUse | None = None  # provider openai only
    engine: EngineInfo | None = None  # embedding.engine ray only (absent: this process)


class BootstrapInfo(_Model):
    """How the confidence intervals of a run were computed."""

    samples: int  # resamples of the queries
    seed: int  # seed of the resampling
    confidence: float  # the intervals' confidence level
    method: str  # how the intervals are read from the resamples


class Fingerprint(_Model):
    golden_set: str  # the golden set's fingerprint
    model: dict[str, Any]  # the model settings that shape the vectors
    indexes: dict[str, dict[str, Any]]  # every index by name: the settings that shape its rankings
    metrics: dict[str, Any]  # the metric names and the settings that change their values
    evalret_version: str  # the evalret that computed it
    digest: str  # sha256 of the parts above
    # a sampled run: how it was drawn and digests of the queries and documents drawn (the
    # digest covers it); absent for a run on the whole golden set
    sample: dict[str, Any] | None = None

    @model_serializer(mode="wrap")
    def _no_sample_stays_absent(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A run on the whole golden set dumps without ``sample``."""
        data: dict[str, Any] = handler(self)
        if self.sample is None:
            data.pop("sample", None)
        return data

    @field_validator("metrics")
    @classmethod
    def _metric_names(cls, v: dict[str, Any]) -> dict[str, Any]:
        names = v.get("names", [])
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ValueError("names must be a list of metric names")
        return v


class SampleSlice(_Model):
    """One slice in a sampled run: its queries in the whole set and in the sample, and its
    proportional share (sample size x total / queries of the set) that stratification aims at
    (the floor may raise a small slice above it)."""

    total: int  # its queries in the whole set
    sampled: int  # its queries in the sample
    share: float  # its proportional share of the sample


class SampleSection(_Model):
    """What a sampled run evaluated (evalret.core.sampling states the rule): the settings, the
    sizes before and after, each slice's share, and notes on reading the figures."""

    queries: int  # requested
    documents: int | None  # requested; None: the whole corpus
    seed: int  # seed of the draw
    min_per_slice: int  # the floor of queries per slice
    method: str  # how the sample was drawn
    n_queries: int  # drawn (more than requested when the floors needed more)
    n_queries_total: int  # the queries the whole set scores
    n_documents: int  # embedded and searched
    n_documents_total: int  # documents in the whole corpus
    n_documents_judged: int | None  # judged documents of the drawn queries (documents sample)
    n_strata: int  # strata the queries were drawn from
    floor_raised: list[str]  # slices whose floor is above their proportional share
    slices: dict[str, SampleSlice]  # each slice's queries in the set and in the sample
    query_digest: str  # sha256 of the drawn query ids
    document_digest: str | None  # sha256 of the kept document ids (documents sample)
    notes: list[str]  # what to keep in mind reading a sampled run


class GateCheck(_Sparse):
    """One named check of the gate and its outcome. ``passed``: the check does not block the
    gate; ``status`` says pass, fail or inconclusive (absent in reports of older versions, where
    it follows ``passed``)."""

    name: str  # the check's name, as the terminal and report.md show it
    index: str  # the index checked
    slice: str  # the slice checked
    metric: str  # the metric checked
    kind: CheckKind  # what is checked
    threshold: float  # the limit from the config
    baseline: float | None  # the baseline's value; null for a check without one
    current: float | None  # None in a saved report: the value was not a finite number
    delta: float | None  # current - baseline
    n_queries: int  # queries behind the value
    p_value: float | None  # paired test, one-sided (a drop), when significance is configured
    p_adjusted: float | None  # after the correction across all tested checks
    mde: float | None  # minimum detectable drop for this slice (alpha, power of the gate)
    underpowered: bool  # the slice is too small for its threshold to be detectable
    passed: bool  # whether the check does not block the gate
    message: str  # the outcome in words
    # pass | fail | inconclusive (the current judged@k fell too far below the baseline's)
    status: CheckStatus | None = None
    # drop checks: judged@k of the baseline and of the current run on the check's index and
    # slice (absent in older reports; None where a figure is missing)
    judged_k: int | None = None
    judged_baseline: float | None = None  # judged@k of the baseline
    judged_current: float | None = None  # judged@k of this run
    unjudged_policy: UnjudgedPolicy | None = None  # gate.unjudged.policy, on an inconclusive check
    # a drop check whose judged@k fell: the judged-only (condensed) form of its metric, which
    # decided between inconclusive and failed (absent where not read); the baseline's mean
    condensed_baseline: float | None = None
    condensed_current: float | None = None  # the judged-only form's mean in this run

    @property
    def outcome(self) -> CheckStatus:
        """pass, fail or inconclusive (an older report's check: from ``passed``)."""
        if self.status is not None:
            return self.status
        return "pass" if self.passed else "fail"


class GateSignificance(_Model):
    """The paired test a drop must pass to fail the gate (the config's gate.significance)."""

    test: PairedTest  # the paired test over queries
    alpha: float  # significance level
    correction: Correction  # multiple-comparison correction
    samples: int  # permutations or resamples
    seed: int  # seed of the test
    power: float  # power behind the minimum detectable effect


class GateUnjudged(_Model):
    """The config's gate.unjudged: how far judged@k may fall below the baseline's before a drop
    check is inconclusive, and whether that blocks the gate."""

    max_drop: float  # largest fall of judged@k below the baseline's
    policy: UnjudgedPolicy  # warn or fail
    # the floor on judged@k (slice all); null: a tenth of the baseline's (absent in older reports)
    min_judged: float | None = None


class GateSection(_Sparse):
    # the gate's outcome: inconclusive when no check failed but some could not tell
    verdict: GateVerdict
    baseline: str | None  # path of the baseline file
    baseline_fingerprint: str | None  # the fingerprint of the baseline's run
    changed: dict[
        str, Change
    ]  # what differs from the baseline (model, indexes): shown, not refused
    # the paired test drops had to pass; null without gate.significance
    significance: GateSignificance | None
    checks: list[GateCheck]  # every check, in order
    notes: list[str]  # what the reader should know about this verdict
    unjudged: GateUnjudged | None = None  # absent in older reports and with gate.unjudged null

    @property
    def failed(self) -> list[GateCheck]:
        """The checks that block the gate (an inconclusive one under policy fail included)."""
        return [c for c in self.checks if not c.passed]

    @property
    def inconclusive(self) -> list[GateCheck]:
        """The drop checks whose labels could not tell (too few of the new top k judged)."""
        return [c for c in self.checks if c.outcome == "inconclusive"]


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


class RunReport(_Model):
    schema_version: int = SCHEMA_VERSION  # the version of this layout (1)
    evalret_version: str  # the evalret that wrote the report
    config: dict[str, Any]  # the resolved config the run used, every key (paths absolute)
    # what must match for two runs to be compared: golden set, model, indexes, metrics
    fingerprint: Fingerprint
    golden_set: GoldenSetInfo  # the golden set read: source, format, counts and fingerprints
    embedding: EmbeddingInfo  # the vectors: dimension, counts, the cache, backend and API use
    bootstrap: BootstrapInfo  # how the confidence intervals were computed
    query_ids: list[str]  # the evaluated queries, in the order every per-query list follows
    slices: dict[str, SliceInfo]  # every slice by name: its rule and member queries
    indexes: dict[str, IndexResult]  # every index by name: its settings and metrics per slice
    ann: AnnSection | None  # the hnsw index against exact search
    # the dense index against BM25 and the hybrid, per slice; absent without bm25
    lexical: LexicalSection | None = None
    # the label-free health of the vectors; absent when health is off
    intrinsic: IntrinsicSection | None = None
    # the gate's verdict and every check; absent when nothing was gated
    gate: GateSection | None = None
    timings: dict[str, float]  # seconds spent per stage of the run
    # every other approximate index (pgvector, ...) against exact search, by index name; absent
    # when there is none (and in reports of older versions)
    ann_others: dict[str, AnnSection] = {}
    # what a sampled run evaluated; absent for a run on the whole golden set
    sample: SampleSection | None = None
    # the id of the run that wrote this report.json (a fresh uuid per run, or $EVALRET_RUN_ID):
    # the action and the hook take a verdict only from the report of the run they started;
    # absent in saved baselines and in reports of older versions
    run_id: str | None = None
    # the config settings given on the command line (--set, --model, --dimension), by dotted
    # path, as given (the config above holds their effect); absent when there were none
    overrides: dict[str, Any] | None = None
    # the headline on human labels beside all labels, when an LLM judge graded part of the golden
    # set; absent otherwise (and in reports of older versions)
    labels: LabelsSection | None = None
    # `run --judge`: the LLM judge's labels this run was scored with (their source, the indexes
    # and top k judged, pairs labelled, cached, asked, left unjudged); absent without --judge
    judge: dict[str, Any] | None = None
    # how many of the scored queries' judgments each label source gave, as the metrics used
    # them: "human" (every source that is not a model's) and each LLM judge's
    # "llm:<model>@<prompt hash>" (`run --judge`'s listed even when it labelled nothing); a
    # baseline and a run whose sources differ are not compared (data/baseline.py); absent in
    # reports of older versions
    label_sources: dict[str, int] | None = None
    # every rerank index beside its first stage, by index name; absent when there is none
    rerank: dict[str, RerankSection] = {}
    # single-query latency of the exact and faiss-backed indexes (machine-dependent); absent
    # when none was timed (and in reports of older versions)
    latency: LatencySection | None = None

    @model_serializer(mode="wrap")
    def _no_other_ann_stays_absent(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A report without other approximate indexes dumps without ``ann_others``, one on the
        whole golden set without ``sample``, one not written by a run without ``run_id``."""
        data: dict[str, Any] = handler(self)
        if not self.ann_others:
            data.pop("ann_others", None)
        if self.sample is None:
            data.pop("sample", None)
        if self.run_id is None:
            data.pop("run_id", None)
        if self.overrides is None:
            data.pop("overrides", None)
        if self.labels is None:
            data.pop("labels", None)
        if self.judge is None:
            data.pop("judge", None)
        if self.label_sources is None:
            data.pop("label_sources", None)
        if not self.rerank:
            data.pop("rerank", None)
        if self.latency is None:
            data.pop("latency", None)
        return data

    def ann_sections(self) -> list[AnnSection]:
        """Every approximate index against exact search: hnsw first, then the others."""
        return [*([self.ann] if self.ann is not None else []), *self.ann_others.values()]

    @model_validator(mode="after")
    def _aligned_with_query_ids(self) -> RunReport:
        problems = alignment_problems(self)
        if problems:
            raise ValueError("; ".join(problems))
        return self


def alignment_problems(report: RunReport) -> list[str]:
    """Where a report disagrees with itself, each named by its JSON path: per-query arrays of
    another length than ``query_ids``, slice members outside it, an index's slices that are not
    the report's or that list other metrics than the index's first slice, metric@k curves of
    another length than their cutoffs, ANN and lexical sections the report cannot draw."""
    n = len(report.query_ids)
    out = []
    for name, info in report.slices.items():
        outside = [m for m in info.members if not 0 <= m < n]
        if outside:
            out.append(f"slices.{name}.members: position {outside[0]} is not in query_ids")
    for name, index in report.indexes.items():
        out += _index_problems(f"indexes.{name}", index, n, report.slices.keys())
    if report.ann is not None and not report.ann.slices:
        out.append("ann.slices: empty")
    if report.lexical is not None:
        out += _lexical_problems(report.lexical)
    return out


def _lexical_problems(lex: LexicalSection) -> list[str]:
    first = next(iter(lex.slices.values()), None)
    metrics = set(first.dense_minus_bm25) if first is not None else set()
    out = [] if metrics else ["lexical.slices: no slice with metrics"]
    hybrid = set(first.hybrid_minus_dense) if first is not None else set()
    for name, result in lex.slices.items():
        for field in ("dense_minus_bm25", "hybrid_minus_dense", "dense_wins", "bm25_wins"):
            # without a hybrid index, hybrid_minus_dense is empty in every slice
            expected = hybrid if field == "hybrid_minus_dense" and not hybrid else metrics
            if set(getattr(result, field)) != expected:
                out.append(f"lexical.slices.{name}.{field}: other metrics than the first slice's")
    return out


def _index_problems(where: str, index: IndexResult, n: int, slices: Any) -> list[str]:
    out = []
    arrays: dict[str, list[Any]] = {f"per_query.{m}": v for m, v in index.per_query.items()}
    arrays |= {f"condensed.{m}": v for m, v in (index.condensed or {}).items()}
    for field, values in {**arrays, "top_ids": index.top_ids}.items():
        if len(values) != n:
            out.append(f"{where}.{field}: {len(values)} entries for {n} query_ids")
    for field, values in arrays.items():  # every metric family scores a query in [0, 1]
        bad = next(
            (i for i, v in enumerate(values) if not -SCORE_SLACK <= v <= 1 + SCORE_SLACK), None
        )
        if bad is not None:
            out.append(f"{where}.{field}[{bad}]: {values[bad]!r} is not a score in [0, 1]")
    if index.curves is not None:
        out += _curve_problems(f"{where}.curves", index.curves)
    metrics = [set(s.metrics) for s in index.slices.values()]
    for name, names in zip(index.slices, metrics, strict=True):
        if name not in slices:
            out.append(f"{where}.slices.{name}: not a slice of the report")
        elif names != metrics[0]:
            out.append(f"{where}.slices.{name}.metrics: other metrics than the first slice's")
    return out


def _curve_problems(where: str, curves: MetricCurves) -> list[str]:
    return [
        f"{where}.values.{family}.{name}: {len(values)} entries for {len(curves.k)} cutoffs k"
        for family, per_slice in curves.values.items()
        for name, values in per_slice.items()
        if len(values) != len(curves.k)
    ]


# --- compare.json ------------------------------------------------------------------------------


class MetricComparison(_Model):
    a: float  # A's mean
    b: float  # B's mean
    delta: float  # b - a
    ci_low: float  # bootstrap interval of the delta
    ci_high: float  # upper end of the delta's interval
    p_randomization: float  # two-sided, paired
    p_t_test: float  # paired t-test p-value
    p_randomization_adjusted: float  # after the correction across all tests
    p_t_test_adjusted: float  # after the correction across all tests
    significant: bool  # adjusted randomization p < alpha
    wins: int  # queries where B scores higher
    ties: int  # queries where both score the same
    losses: int  # queries where B scores lower


class JudgedPair(_Model):
    """judged@k of one slice in A and in B (None: an empty slice)."""

    a: float | None  # judged@k of A
    b: float | None  # judged@k of B


class SliceComparison(_Sparse):
    n_queries: int  # queries in the slice
    reliability: Reliability  # how far its means can be trusted, from its number of queries
    mde: dict[str, float | None]  # two-sided minimum detectable effect per metric
    metrics: dict[str, MetricComparison]  # every metric's comparison, by name
    drift: dict[str, float]  # jaccard@10, rbo@10 between A's and B's rankings
    diagnosis: str  # what the numbers say, in words
    # judged@k of A and of B at every cutoff both computed ("judged@10": {a, b}); absent in
    # compare.json of older versions
    judged: dict[str, JudgedPair] = {}


class UnjudgedDoc(_Model):
    """A document in B's top k that nobody judged for the queries it was retrieved for."""

    id: str  # the document
    lists: int  # how many of B's top-k lists (one per query) hold it unjudged
    text: str  # its first characters ("" when the golden set is not at hand)


class UnjudgedDocs(_Model):
    """B's most frequent unjudged documents in one index's top k, most frequent first."""

    index: str  # the index read
    k: int  # the cutoff
    n_queries: int  # B's top-k lists read
    documents: list[UnjudgedDoc]  # the documents, most frequent first


class RankedDoc(_Model):
    id: str  # the document
    grade: int | None  # None when unjudged (or unknown: golden set not available)
    text: str  # its first characters


class QueryExample(_Model):
    query_id: str  # the query
    text: str  # its text
    a: float  # A's score on the primary metric
    b: float  # B's score
    delta: float  # B - A
    relevant: list[RankedDoc]  # its relevant documents
    a_top: list[RankedDoc]  # A's top documents
    b_top: list[RankedDoc]  # B's top documents


class Verdict(_Model):
    status: CompareStatus  # candidate, not a candidate or no difference
    reason: str  # why, in words
    blocking: list[str]  # what keeps B from being a candidate, per slice
    regressions: list[str]  # significant regressions anywhere


class CompareSide(_Sparse):
    """One of the two compared runs: its label (the path given), fingerprint, model, indexes,
    and the settings its run took from the command line (absent when none)."""

    label: str  # the path given
    fingerprint: str  # its run's fingerprint digest
    model: dict[str, Any]  # its model settings
    indexes: dict[str, dict[str, Any]]  # its indexes' settings
    # settings its run took from the command line; absent when none
    overrides: dict[str, Any] | None = None

    @field_validator("model", mode="before")
    @classmethod
    def _model_object(cls, v: Any) -> Any:
        if not isinstance(v, dict):
            raise ValueError("not an object")
        return v


class SettingsRecord(_Sparse):
    """The settings of a comparison (``evalret compare`` options) and its fixed methods."""

    primary: str  # the metric the verdict is decided on
    min_gain: float  # gain B needs on the primary metric in every slice
    alpha: float  # significance level
    correction: Correction  # multiple-test correction
    samples: int  # randomization-test resamples
    bootstrap_samples: int  # bootstrap resamples of the intervals
    confidence: float  # the intervals' confidence level
    seed: int  # seed of every resampling
    power: float  # power behind the minimum detectable effect
    samples_drawn: int | None = None  # absent in compare.json of older versions
    rbo_p: float  # persistence of rank-biased overlap
    tests: str  # the paired tests run, in words
    ci: str  # how the intervals are computed, in words

    @field_validator("primary", mode="before")
    @classmethod
    def _metric_name(cls, v: Any) -> Any:
        if not isinstance(v, str):
            raise ValueError("not a metric name")
        return v


class ComparedGoldenSet(_Model):
    source: str  # the path it was read from
    fingerprint: str  # its fingerprint
    n_queries: int  # queries compared


class CompareReport(_Sparse):
    schema_version: int  # the version of this layout
    evalret_version: str  # the evalret that wrote it
    a: CompareSide  # the first run (the reference)
    b: CompareSide  # the second run (the candidate)
    changed: dict[str, Change]  # the settings that differ between A and B
    settings: SettingsRecord  # the options of the comparison
    golden_set: ComparedGoldenSet  # the golden set both runs were scored on
    primary_index: str  # the index the verdict is decided on
    indexes: dict[str, dict[str, SliceComparison]]  # per index, then per slice: the comparison
    notes: list[str]  # what the reader should know about this comparison
    verdict: Verdict  # whether B is a candidate, and why
    losers: list[QueryExample]  # biggest losses of B on the primary metric
    gainers: list[QueryExample]  # biggest gains of B on the primary metric
    # B's most frequent unjudged documents on the primary index; None when the golden set is not
    # at hand (absent in compare.json of older versions)
    unjudged: UnjudgedDocs | None = None

    @model_validator(mode="after")
    def _consistent(self) -> CompareReport:
        problems = comparison_problems(self)
        if problems:
            raise ValueError("; ".join(problems))
        return self


def comparison_problems(report: CompareReport) -> list[str]:
    """Where a compare.json disagrees with itself (by JSON path): a primary index or metric it
    does not hold, slices of one index listing other metrics."""
    primary = report.settings.primary
    out = []
    if report.indexes and report.primary_index not in report.indexes:
        out.append(f"primary_index: {report.primary_index!r} is not in indexes")
    for index, slices in report.indexes.items():
        out += _compared_index_problems(f"indexes.{index}", slices, primary)
    return out


def _compared_index_problems(
    where: str, slices: dict[str, SliceComparison], primary: str
) -> list[str]:
    first = next(iter(slices.values()), None)
    if first is None:
        return [f"{where}: no slice"]
    out = []
    for name, result in slices.items():
        if set(result.metrics) != set(first.metrics):
            out.append(f"{where}.{name}.metrics: other metrics than the first slice's")
        elif primary not in result.metrics:
            out.append(f"{where}.{name}.metrics: no {primary} (settings.primary)")
    return out


class PlannedKind(_Model):
    """What a run would embed of one kind of text (``evalret run --dry-run``)."""

    texts: int
    cached: int
    to_embed: int
    tokens: int  # of the texts to embed, as sent (after their prefix)
    requests: int | None  # provider openai: requests the texts to embed would take
    cost: float | None  # tokens x model.price_per_million_tokens, when the price is set


class EmbeddingPlan(_Model):
    """What `evalret run` would embed and what it would cost; nothing is embedded or sent."""

    model: str  # the model's source, as reports name it
    provider: str
    endpoint: str | None  # provider openai
    cache: str | None  # the cache directory (None: the cache is off)
    tokenizer: str  # how tokens were counted (tiktoken, or the documented estimate)
    tokenizer_note: str | None
    price_per_million_tokens: float | None
    document: PlannedKind
    query: PlannedKind
    # one line per enabled rerank index: what it would ask (nothing is sent in a dry run)
    rerank: list[str] = []
