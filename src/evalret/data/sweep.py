"""sweep.json, written by `evalret sweep`: per grid point its settings, per index its quality on
slice ``all``, its ANN recall against exact search, and (faiss indexes) its measured search cost
and size, with the Pareto fronts of quality against latency and against memory."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from evalret.data.schema import MetricValue

SWEEP_SCHEMA_VERSION = 1


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class IndexCost(_Model):
    """An index's search cost (machine-dependent; see ``SweepReport.timing``) and size: a faiss
    index's every figure; a store's or an approximate Python index's latency alone (None: what
    evalret cannot measure of a search outside it)."""

    p50_ms: float
    p95_ms: float
    qps: float
    fetch: int
    ef_search: int | None  # HNSW: the efSearch searched with (raised to the fetch when lower)
    distances_per_query: float | None
    build_s: float
    index_bytes: int | None
    vector_bytes: int


class SweepIndex(_Model):
    """One index at one grid point."""

    params: dict[str, Any]
    metrics: dict[str, MetricValue]  # slice all: the quality metric and every recall@k
    ann_recall: dict[str, float | None] | None = None  # approximate indexes: top-k kept of exact's
    cost: IndexCost | None = None  # timed indexes: faiss ones, stores, approximate python ones
    pareto_latency: bool = False
    pareto_memory: bool = False


class SweepPoint(_Model):
    """One point of the grid: its --set values and every enabled index's figures."""

    id: int
    settings: dict[str, Any]
    dim: int
    indexes: dict[str, SweepIndex]
    fingerprint: str  # the run's fingerprint digest
    # texts embedded for this point ("documents", "queries"): 0 when the cache held them all;
    # None when nothing was cached (--no-cache, or no index needs vectors)
    embedded: dict[str, int] | None = None


class SweepReport(_Model):
    schema_version: int = SWEEP_SCHEMA_VERSION
    evalret_version: str
    config: str  # the config file, or "(built-in defaults)"
    axes: dict[str, list[Any]]  # --set path -> its values, in order
    quality_metric: str  # the y of the Pareto fronts
    slice: str = "all"
    n_queries: int
    n_documents: int
    repeats: int
    machine_dependent: bool = True  # latency, QPS and build time depend on the machine and load
    machine: dict[str, Any]
    timing: dict[str, str]  # what exactly is timed
    points: list[SweepPoint]
    pareto_latency: list[list[Any]]  # [point id, index] on the quality/latency front
    pareto_memory: list[list[Any]]
