"""What a run read and used: the golden set, the embedding cache, backend and API use, the engine
and the embedding, bootstrap settings, the fingerprint of every input, and a sampled run."""

from __future__ import annotations

from typing import Any

from pydantic import (
    ConfigDict,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
)

# the closed vocabularies are the core's, defined once there
from evalret.data.schema.base import (
    _Model,
    _Sparse,
)


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
    # model.truncate_dim with the cache: the full dimension of the cached vectors the run's were
    # cut from (the cache keeps the full vectors; ``namespace`` is theirs); absent: not cut
    truncated_from: int | None = None
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
