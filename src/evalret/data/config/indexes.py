"""``indexes``: the built-in indexes by their fixed keys (exact, hnsw, bm25, hybrid) and the typed
indexes by name, members of the ``TypedIndexConfig`` union told apart by ``type``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, model_validator

from evalret.data.config.base import MODEL_CONFIG, AtKey, StrictModel
from evalret.data.config.faiss_settings import MAX_EF, MAX_HNSW_M, MAX_THREADS, FaissIndexConfig
from evalret.data.config.rerank import RerankIndexConfig, rerank_problem
from evalret.data.config.store import StoreIndexConfig
from evalret.data.config.typed_indexes import (
    INDEX_NAME,
    PgvectorIndexConfig,
    PythonIndexConfig,
    QuantizedIndexConfig,
    RunIndexConfig,
    TypedIndexBase,
)
from evalret.data.unions import RegisteredUnion, members_by_tag


class ExactIndexConfig(StrictModel):
    """Brute-force inner-product search over every document vector (faiss IndexFlatIP)."""

    enabled: bool = Field(True, description="search with it")


class HnswIndexConfig(StrictModel):
    """An approximate HNSW graph over the document vectors (faiss IndexHNSWFlat, inner product),
    checked against the exact index."""

    enabled: bool = Field(True, description="search with it")
    m: int = Field(32, ge=2, le=MAX_HNSW_M, description="neighbours per node of the graph")
    ef_construction: int = Field(
        200, ge=1, le=MAX_EF, description="candidate list size while building"
    )
    ef_search: int = Field(128, ge=1, le=MAX_EF, description="candidate list size while searching")
    threads: int | None = Field(
        None,
        ge=1,
        le=MAX_THREADS,
        description="threads building the graph: null = all cores; 1 = deterministic "
        "(the same graph every build, what a gate on hnsw metrics wants)",
    )


class Bm25IndexConfig(StrictModel):
    """The lexical reference (bm25s): documents as title + " " + text, queries as text."""

    enabled: bool = Field(True, description="search with it")
    k1: float = Field(1.5, ge=0, description="term-frequency saturation")
    b: float = Field(0.75, ge=0, le=1, description="document-length normalization")
    method: Literal["lucene", "robertson", "atire", "bm25l", "bm25+"] = Field(
        "lucene", description="the BM25 variant bm25s computes"
    )
    stemmer: str | None = Field("english", description="a Snowball language, or null")
    stopwords: str | None = Field("en", description="a bm25s stop-word list, or null")


class HybridIndexConfig(StrictModel):
    """Reciprocal rank fusion of BM25 and a dense index: sum of 1 / (rrf_k + rank)."""

    enabled: bool = Field(True, description="search with it (needs bm25 and its dense index)")
    dense: Literal["exact", "hnsw"] = Field("exact", description="the dense index fused with BM25")
    rrf_k: float = Field(60, gt=0, description="the constant k of 1 / (k + rank)")
    candidates: int = Field(100, ge=1, description="results taken from each ranking")


# the typed indexes, told apart by ``type``: a new kind is one more member here (or, from outside
# evalret, engines.retrievers.register_retriever_type)
_INDEX_MEMBERS = (
    RunIndexConfig
    | PythonIndexConfig
    | PgvectorIndexConfig
    | RerankIndexConfig
    | FaissIndexConfig
    | QuantizedIndexConfig
    | StoreIndexConfig
)
INDEX_CONFIGS: dict[str, type[TypedIndexBase]] = members_by_tag(_INDEX_MEMBERS, "type")
TypedIndexConfig = Annotated[_INDEX_MEMBERS, RegisteredUnion(INDEX_CONFIGS, "type", None)]


class IndexesConfig(StrictModel):
    """The built-in indexes by their fixed keys, and any number of typed indexes by name."""

    # extra keys are typed indexes (validated as TypedIndexConfig); a config without them
    # dumps exactly as before
    model_config = ConfigDict(**{**MODEL_CONFIG, "extra": "allow"})
    __pydantic_extra__: dict[str, TypedIndexConfig] = Field(init=False)

    exact: ExactIndexConfig = Field(ExactIndexConfig(), description="exact inner-product search")
    hnsw: HnswIndexConfig = Field(HnswIndexConfig(), description="the approximate HNSW index")
    bm25: Bm25IndexConfig = Field(Bm25IndexConfig(), description="the lexical reference")
    hybrid: HybridIndexConfig = Field(
        HybridIndexConfig(), description="BM25 fused with a dense index"
    )

    @property
    def typed(self) -> dict[str, TypedIndexConfig]:
        """The typed indexes by name, in the config's order."""
        return dict(self.__pydantic_extra__ or {})

    def enabled_names(self) -> list[str]:
        """Every enabled index, built-in ones first."""
        builtin = [n for n in BUILTIN_INDEXES if getattr(self, n).enabled]
        return builtin + [n for n, t in self.typed.items() if t.enabled]

    def kind(self, name: str) -> str:
        """What index ``name`` is: a built-in index's name, a typed index's ``type``."""
        typed = self.typed.get(name)
        return typed.type if typed is not None else name

    def approximate_names(self) -> list[str]:
        """Every enabled approximate index (measured against exact search): hnsw, and each typed
        index that declares itself approximate, by its type (faiss, quantized, pgvector) or by
        its setting (python's ``approximate: true``)."""
        typed = self.typed
        return [
            n
            for n in self.enabled_names()
            if n == "hnsw" or (n in typed and typed[n].approximate_of())
        ]

    def resolve_paths(self, base: Path) -> IndexesConfig:
        """A copy whose typed indexes' relative paths are made absolute against ``base``."""
        if not self.typed:
            return self
        resolved = {name: t.resolve_paths(base) for name, t in self.typed.items()}
        return IndexesConfig.model_validate(
            {
                **self.model_dump(exclude=set(resolved)),
                **{n: t.model_dump() for n, t in resolved.items()},
            }
        )

    @model_validator(mode="before")
    @classmethod
    def _builtin_names_untyped(cls, data: Any) -> Any:
        for name in BUILTIN_INDEXES:
            value = data.get(name) if isinstance(data, dict) else None
            if isinstance(value, dict) and "type" in value:
                raise AtKey(
                    f"{name!r} is a built-in index: give a typed index another name", (name,)
                )
        return data

    @model_validator(mode="after")
    def _one_enabled(self) -> IndexesConfig:
        for name in self.typed:
            if not INDEX_NAME.fullmatch(name):
                raise AtKey(
                    f"index name {name!r}: letters, digits, '_', '.' and '-', starting with a "
                    "letter or digit, at most 64 characters",
                    (name,),
                )
        self._rerank_stages()
        typed = any(t.enabled for t in self.typed.values())
        if not (self.exact.enabled or self.hnsw.enabled or typed):
            raise ValueError(
                "at least one dense index (exact or hnsw) or typed index must be enabled"
            )
        if self.hybrid.enabled and not self.bm25.enabled:
            raise ValueError("hybrid fuses BM25 with a dense index: enable bm25 or disable hybrid")
        if self.hybrid.enabled and not getattr(self, self.hybrid.dense).enabled:
            raise ValueError(
                f"hybrid.dense is {self.hybrid.dense!r}, which is disabled: enable it or "
                "choose the other dense index"
            )
        return self

    def _rerank_stages(self) -> None:
        """Every rerank index's first stage exists, is enabled, and leads to no cycle."""
        indexes: dict[str, Any] = {n: getattr(self, n) for n in IndexesConfig.model_fields}
        indexes.update(self.typed)
        enabled = {n for n, t in indexes.items() if t.enabled}
        for name, t in self.typed.items():
            problem = rerank_problem(name, indexes, enabled) if t.type == "rerank" else None
            if problem is not None:
                raise problem


# the built-in indexes: the fixed keys of ``indexes`` (each one a retriever of
# engines/retrievers.RETRIEVERS by the same name)
BUILTIN_INDEXES: tuple[str, ...] = tuple(IndexesConfig.model_fields)
