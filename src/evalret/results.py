"""The report written as report.json: pydantic models with a versioned schema.

A metric's value sits at ``indexes.<index>.slices.<slice>.metrics.<metric>.value`` beside
``ci_low`` and ``ci_high``; per-query scores at ``indexes.<index>.per_query.<metric>``, aligned with
the top-level ``query_ids``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

SCHEMA_VERSION = 1


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MetricValue(_Model):
    value: float | None  # None for an empty slice
    ci_low: float | None
    ci_high: float | None


class SliceResult(_Model):
    n_queries: int
    reliability: str
    metrics: dict[str, MetricValue]


class IndexResult(_Model):
    kind: str  # exact | hnsw
    params: dict[str, Any]
    slices: dict[str, SliceResult]
    per_query: dict[str, list[float]]


class SliceInfo(_Model):
    kind: str
    definition: str
    n_queries: int
    reliability: str


class AnnSlice(_Model):
    n_queries: int
    recall: dict[str, float | None]  # "recall@k" of the ANN top-k against the exact top-k
    metric_deltas: dict[str, float | None]  # ann - exact, per metric


class AnnSection(_Model):
    index: str
    reference: str
    slices: dict[str, AnnSlice]


class GoldenSetInfo(_Model):
    source: str
    format: str
    fingerprint: str
    n_documents: int
    n_queries_judged: int
    n_queries_evaluated: int
    queries_without_relevant: list[str]
    n_judgments: int


class Fingerprint(_Model):
    golden_set: str
    model: dict[str, Any]
    indexes: dict[str, dict[str, Any]]
    metrics: dict[str, Any]
    digest: str  # sha256 of the four parts above


class RunReport(_Model):
    schema_version: int = SCHEMA_VERSION
    evalret_version: str
    config: dict[str, Any]
    fingerprint: Fingerprint
    golden_set: GoldenSetInfo
    embedding: dict[str, Any]
    bootstrap: dict[str, Any]
    query_ids: list[str]
    slices: dict[str, SliceInfo]
    indexes: dict[str, IndexResult]
    ann: AnnSection | None
    timings: dict[str, float]
