"""The report written as report.json: pydantic models with a versioned schema.

A metric's value sits at ``indexes.<index>.slices.<slice>.metrics.<metric>.value`` beside
``ci_low`` and ``ci_high``; per-query scores at ``indexes.<index>.per_query.<metric>``, aligned with
the top-level ``query_ids``.

The parts: ``base`` (the base models, the schema version), ``results`` (per index: values,
curves, sections), ``run_info`` (what the run read and used, the fingerprint), ``gate_section``,
``run_report`` (the root, ``RunReport``), ``compare`` (compare.json) and ``plan`` (the dry run).
Every name is importable from here.
"""

from __future__ import annotations

from evalret.data.schema.base import (
    COMPARE_SCHEMA_VERSION,
    READABLE_SCHEMA_VERSIONS,
    SCHEMA_VERSION,
    TOP_KEPT,
    Change,
    IntervalMethod,
)
from evalret.data.schema.compare import (
    ComparedGoldenSet,
    CompareReport,
    CompareSide,
    JudgedPair,
    MetricComparison,
    QueryExample,
    RankedDoc,
    SettingsRecord,
    SliceComparison,
    UnjudgedDoc,
    UnjudgedDocs,
    Verdict,
    comparison_problems,
)
from evalret.data.schema.gate_section import (
    GateCheck,
    GateSection,
    GateSignificance,
    GateUnjudged,
)
from evalret.data.schema.plan import (
    EmbeddingPlan,
    PlannedKind,
)
from evalret.data.schema.results import (
    AnnSection,
    AnnSlice,
    IndexLatency,
    IndexResult,
    IntrinsicSection,
    LabelsSection,
    LabelView,
    LatencySection,
    LexicalSection,
    LexicalSlice,
    MetricCurves,
    MetricValue,
    RerankSection,
    RerankSlice,
    SelectivityBucket,
    SliceInfo,
    SliceResult,
)
from evalret.data.schema.run_info import (
    ApiKindUse,
    ApiUse,
    BackendCheck,
    BackendInfo,
    BootstrapInfo,
    CacheUse,
    EmbeddingCache,
    EmbeddingInfo,
    EngineInfo,
    Fingerprint,
    GoldenSetInfo,
    ReaderWarning,
    SampleSection,
    SampleSlice,
)
from evalret.data.schema.run_report import (
    RunReport,
    alignment_problems,
)

__all__ = [
    "COMPARE_SCHEMA_VERSION",
    "READABLE_SCHEMA_VERSIONS",
    "SCHEMA_VERSION",
    "TOP_KEPT",
    "AnnSection",
    "AnnSlice",
    "ApiKindUse",
    "ApiUse",
    "BackendCheck",
    "BackendInfo",
    "BootstrapInfo",
    "CacheUse",
    "Change",
    "CompareReport",
    "CompareSide",
    "ComparedGoldenSet",
    "EmbeddingCache",
    "EmbeddingInfo",
    "EmbeddingPlan",
    "EngineInfo",
    "Fingerprint",
    "GateCheck",
    "GateSection",
    "GateSignificance",
    "GateUnjudged",
    "GoldenSetInfo",
    "IndexLatency",
    "IndexResult",
    "IntervalMethod",
    "IntrinsicSection",
    "JudgedPair",
    "LabelView",
    "LabelsSection",
    "LatencySection",
    "LexicalSection",
    "LexicalSlice",
    "MetricComparison",
    "MetricCurves",
    "MetricValue",
    "PlannedKind",
    "QueryExample",
    "RankedDoc",
    "ReaderWarning",
    "RerankSection",
    "RerankSlice",
    "RunReport",
    "SampleSection",
    "SampleSlice",
    "SelectivityBucket",
    "SettingsRecord",
    "SliceComparison",
    "SliceInfo",
    "SliceResult",
    "UnjudgedDoc",
    "UnjudgedDocs",
    "Verdict",
    "alignment_problems",
    "comparison_problems",
]
