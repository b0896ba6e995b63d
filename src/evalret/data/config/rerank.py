"""The rerank index (``type: rerank``): a first stage reordered by a reranker, one of the reranker
providers (cross-encoder, python, http), and the check of its chain of first stages."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import Field, field_validator

from evalret.core.metrics import MAX_CUTOFF
from evalret.data.config.base import AtKey, StrictModel, UsablePath
from evalret.data.config.endpoints import (
    MAX_API_NAME,
    MAX_RESPONSE_MB,
    MIB,
    checked_base_url,
    max_response_field,
)
from evalret.data.config.typed_indexes import TypedIndexBase


class CrossEncoderRerankerConfig(StrictModel):
    """A local sentence-transformers CrossEncoder directory, loaded offline (never fetched)."""

    provider: Literal["cross-encoder"] = Field(description="cross-encoder: a local model")
    path: UsablePath = Field(description="a local directory holding a CrossEncoder")
    batch_size: int = Field(32, ge=1, le=4096, description="(query, document) pairs per batch")
    max_length: int | None = Field(None, ge=1, description="tokens per pair; default: the model's")
    device: str = Field(
        "cpu",
        pattern=r"^(cpu|cuda|cuda:\d+|mps|auto)$",
        description="where it scores, as model.device: cpu, cuda, cuda:N, mps, or auto",
    )


class PythonRerankerConfig(StrictModel):
    """``fn(query: str, documents: list[str]) -> one score per document``, called per query."""

    provider: Literal["python"] = Field(description="python: a function evalret calls")
    callable: str = Field(
        pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$", description='"pkg.module:function"'
    )


class HttpRerankerConfig(StrictModel):
    """``POST {base_url}/rerank`` as Cohere, Jina, Voyage and infinity answer it."""

    provider: Literal["http"] = Field(description="http: a /rerank endpoint")
    base_url: str = Field(pattern=r"^https?://[^\s]+$", description="its /rerank is called")
    model: str = Field(
        min_length=1, max_length=MAX_API_NAME, description="the reranker model the endpoint serves"
    )
    api_key_env: str | None = Field(
        None,
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
        description="the environment variable holding the key (null: no key, a local server)",
    )
    concurrency: int = Field(4, ge=1, le=64, description="requests in flight")
    max_retries: int = Field(6, ge=0, le=20, description="retries of a 429, 5xx or timeout")
    timeout: float = Field(60.0, gt=0, le=3600, description="seconds a request may take")
    max_response_mb: int = max_response_field(MAX_RESPONSE_MB, "the endpoint (one query's scores)")

    @property
    def response_limit(self) -> int:
        """The most bytes an answer may hold."""
        return self.max_response_mb * MIB

    @field_validator("base_url")
    @classmethod
    def _safe_base_url(cls, value: str) -> str:
        return checked_base_url(value)


RerankerConfig = Annotated[
    CrossEncoderRerankerConfig | PythonRerankerConfig | HttpRerankerConfig,
    Field(discriminator="provider"),
]
# the reranker's providers: an error's loc carries one after ``reranker`` (no key of the file)
RERANKER_PROVIDERS = frozenset(
    get_args(member.model_fields["provider"].annotation)[0]
    for member in (CrossEncoderRerankerConfig, PythonRerankerConfig, HttpRerankerConfig)
)


class RerankIndexConfig(TypedIndexBase):
    """The first ``k`` documents of index ``of`` reordered by a reranker
    (engines/retrievers/rerank.py); ``of`` runs first."""

    type: Literal["rerank"] = Field(description="rerank: a first stage reordered by a reranker")
    of: str = Field(description="the first stage: another index of this config")
    k: int = Field(100, ge=1, le=MAX_CUTOFF, description="candidates reranked per query")
    reranker: RerankerConfig = Field(description="what scores the candidates, by provider")

    def resolve_paths(self, base: Path) -> RerankIndexConfig:
        """A copy whose relative cross-encoder ``path`` is made absolute against ``base``."""
        r = self.reranker
        if not isinstance(r, CrossEncoderRerankerConfig) or r.path.is_absolute():
            return self
        return self.model_copy(
            update={"reranker": r.model_copy(update={"path": (base / r.path).resolve()})}
        )


def rerank_problem(name: str, indexes: dict[str, Any], enabled: set[str]) -> AtKey | None:
    """Why the rerank index ``name`` cannot run after its first stage: an unknown or disabled
    ``of``, or a chain of ``of`` that comes back to it (a cycle); None when it can."""
    seen, at = [name], indexes[name]
    while isinstance(at, RerankIndexConfig):
        if at.of not in indexes:
            if at is indexes[name]:
                known = ", ".join(sorted(indexes))
                return AtKey(f"unknown index {at.of!r}: one of {known}", (name, "of"))
            return None  # another index's error
        if at.of in seen:
            chain = " -> ".join([*seen[seen.index(at.of) :], at.of])
            return AtKey(f"the first stages form a cycle: {chain}", (name, "of"))
        seen.append(at.of)
        at = indexes[at.of]
    if indexes[name].enabled and seen[1] not in enabled:
        return AtKey(f"the first stage {seen[1]!r} is disabled: enable it", (name, "of"))
    return None
