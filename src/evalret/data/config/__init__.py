"""The YAML config, validated by pydantic: every field has a default, unknown keys are rejected.

Relative paths in a config file are resolved against the directory of that file; with no file,
against the current directory.

One module per section, re-exported here (import from ``evalret.data.config``), lower ones first:
``base`` (the strict model, the path type, ``AtKey``), ``dsn`` (ports, URLs and libpq connection
strings), ``endpoints`` (what HTTP sections share), ``models`` (``model``, by provider),
``typed_indexes``, ``faiss_settings`` and ``rerank`` (the typed indexes, by type), ``indexes``
(``indexes``), ``slices``, ``gate``, ``judge``, ``synth``, ``settings`` (the smaller sections),
``root`` (the root ``Config`` and its cross-section validators) and ``loading`` (YAML, lines,
errors). A section never imports ``root``; the import-linter contract in pyproject.toml holds
the order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalret.data.config.base import MODEL_CONFIG, AtKey, StrictModel, UsablePath
from evalret.data.config.dsn import OUT_OF_RANGE, dsn_problem, port_problem, url_port_problem
from evalret.data.config.endpoints import (
    MAX_API_NAME,
    MAX_RESPONSE_MB,
    MIB,
    OPENAI_URL,
    ChatEndpointConfig,
    checked_base_url,
    max_response_field,
)
from evalret.data.config.faiss_settings import (
    C_INT_MAX,
    FAISS_CHECKS,
    FAISS_PARAM_RANGES,
    MAX_EF,
    MAX_FACTORY,
    MAX_HNSW_M,
    MAX_THREADS,
    FaissCheck,
    FaissIndexConfig,
    faiss_error,
    faiss_param_problem,
)
from evalret.data.config.gate import (
    BUDGET_INDEX_TYPES,
    DEFAULT_THRESHOLDS,
    LATENCY_INDEX_TYPES,
    CoverageGate,
    GateConfig,
    HealthThreshold,
    IndexBudget,
    Labels,
    SignificanceConfig,
    Threshold,
    ThresholdOverride,
    UnjudgedConfig,
)
from evalret.data.config.indexes import (
    BUILTIN_INDEXES,
    INDEX_CONFIGS,
    Bm25IndexConfig,
    ExactIndexConfig,
    HnswIndexConfig,
    HybridIndexConfig,
    IndexesConfig,
    TypedIndexConfig,
)
from evalret.data.config.judge import JudgeConfig
from evalret.data.config.models import (
    ANSWER_DIMENSIONS,
    DEFAULT_PROVIDER,
    JSON_ITEM_BYTES,
    JSON_NUMBER_BYTES,
    MODEL_CONFIGS,
    PACKAGED_MODEL,
    PATH_MAX,
    RESERVED_REQUEST_FIELDS,
    ModelConfig,
    ModelConfigBase,
    OpenAIModelConfig,
    PromptsConfig,
    PythonModelConfig,
    RequestFieldsConfig,
    SentenceTransformersModelConfig,
)
from evalret.data.config.rerank import (
    RERANKER_PROVIDERS,
    CrossEncoderRerankerConfig,
    HttpRerankerConfig,
    PythonRerankerConfig,
    RerankerConfig,
    RerankIndexConfig,
    rerank_problem,
)
from evalret.data.config.root import DEFAULT_METRICS, Config, WithoutRelevant, refresh_unions
from evalret.data.config.settings import (
    DEMO_GOLDEN_SET,
    DEMO_SHOWN,
    GOLDEN_FORMATS,
    RAY_ADDRESS,
    BeyondAccuracyConfig,
    BootstrapConfig,
    CacheConfig,
    EmbeddingConfig,
    GoldenFormatName,
    GoldenSetConfig,
    HealthConfig,
    HistoryConfig,
    LeakageConfig,
    OutputConfig,
    SampleConfig,
    demo_golden_set,
)
from evalret.data.config.slices import SliceDefinition, SlicesConfig, configured_slices
from evalret.data.config.store import (
    STORE_DRIVERS,
    SearchValue,
    StoreConnect,
    StoreIndexConfig,
    StoreStability,
)
from evalret.data.config.synth import STYLES, Style, SynthConfig
from evalret.data.config.typed_indexes import (
    INDEX_NAME,
    PgvectorIndexConfig,
    PythonIndexConfig,
    QuantizedIndexConfig,
    RunIndexConfig,
    SqlName,
    TypedIndexBase,
)

if TYPE_CHECKING:
    from evalret.data.config.loading import load_config, parse_config, read_yaml_mapping

_LOADING = ("load_config", "parse_config", "read_yaml_mapping")


def __getattr__(name: str) -> Any:
    """``loading``'s names, imported when first asked for: a Config built in code (`evalret
    score`) reads no YAML, and the YAML parser is a large import."""
    if name not in _LOADING:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from evalret.data.config import loading

    return getattr(loading, name)


__all__ = [
    "ANSWER_DIMENSIONS",
    "BUDGET_INDEX_TYPES",
    "BUILTIN_INDEXES",
    "C_INT_MAX",
    "DEFAULT_METRICS",
    "DEFAULT_PROVIDER",
    "DEFAULT_THRESHOLDS",
    "DEMO_GOLDEN_SET",
    "DEMO_SHOWN",
    "FAISS_CHECKS",
    "FAISS_PARAM_RANGES",
    "GOLDEN_FORMATS",
    "INDEX_CONFIGS",
    "INDEX_NAME",
    "JSON_ITEM_BYTES",
    "JSON_NUMBER_BYTES",
    "LATENCY_INDEX_TYPES",
    "MAX_API_NAME",
    "MAX_EF",
    "MAX_FACTORY",
    "MAX_HNSW_M",
    "MAX_RESPONSE_MB",
    "MAX_THREADS",
    "MIB",
    "MODEL_CONFIG",
    "MODEL_CONFIGS",
    "OPENAI_URL",
    "OUT_OF_RANGE",
    "PACKAGED_MODEL",
    "PATH_MAX",
    "RAY_ADDRESS",
    "RERANKER_PROVIDERS",
    "RESERVED_REQUEST_FIELDS",
    "STORE_DRIVERS",
    "STYLES",
    "AtKey",
    "BeyondAccuracyConfig",
    "Bm25IndexConfig",
    "BootstrapConfig",
    "CacheConfig",
    "ChatEndpointConfig",
    "Config",
    "CoverageGate",
    "CrossEncoderRerankerConfig",
    "EmbeddingConfig",
    "ExactIndexConfig",
    "FaissCheck",
    "FaissIndexConfig",
    "GateConfig",
    "GoldenFormatName",
    "GoldenSetConfig",
    "HealthConfig",
    "HealthThreshold",
    "HistoryConfig",
    "HnswIndexConfig",
    "HttpRerankerConfig",
    "HybridIndexConfig",
    "IndexBudget",
    "IndexesConfig",
    "JudgeConfig",
    "Labels",
    "LeakageConfig",
    "ModelConfig",
    "ModelConfigBase",
    "OpenAIModelConfig",
    "OutputConfig",
    "PgvectorIndexConfig",
    "PromptsConfig",
    "PythonIndexConfig",
    "PythonModelConfig",
    "PythonRerankerConfig",
    "QuantizedIndexConfig",
    "RequestFieldsConfig",
    "RerankIndexConfig",
    "RerankerConfig",
    "RunIndexConfig",
    "SampleConfig",
    "SearchValue",
    "SentenceTransformersModelConfig",
    "SignificanceConfig",
    "SliceDefinition",
    "SlicesConfig",
    "SqlName",
    "StoreConnect",
    "StoreIndexConfig",
    "StoreStability",
    "StrictModel",
    "Style",
    "SynthConfig",
    "Threshold",
    "ThresholdOverride",
    "TypedIndexBase",
    "TypedIndexConfig",
    "UnjudgedConfig",
    "UsablePath",
    "WithoutRelevant",
    "checked_base_url",
    "configured_slices",
    "demo_golden_set",
    "dsn_problem",
    "faiss_error",
    "faiss_param_problem",
    "load_config",
    "max_response_field",
    "parse_config",
    "port_problem",
    "read_yaml_mapping",
    "refresh_unions",
    "rerank_problem",
    "url_port_problem",
]
