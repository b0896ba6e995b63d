"""The typed indexes (``indexes.<name>: {type: ...}``) other than rerank and faiss: their common
base, run files, Python functions, pgvector and quantized search."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Annotated, ClassVar, Literal

from pydantic import AfterValidator, Field, field_validator, model_validator

from evalret.data.config.base import AtKey, StrictModel, UsablePath
from evalret.data.config.dsn import dsn_problem

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _sql_name(v: str) -> str:
    """A Postgres identifier as given (quoted later with psycopg.sql): 1 to 63 bytes, no NUL."""
    if not v or len(v.encode()) > 63 or "\x00" in v:
        raise ValueError("a Postgres name: 1 to 63 bytes, no NUL character")
    return v


def _table_name(v: str) -> str:
    """``table`` or ``schema.table``, each part a Postgres name."""
    parts = v.split(".")
    if len(parts) > 2:
        raise ValueError("a table name: NAME or SCHEMA.NAME")
    for part in parts:
        _sql_name(part)
    return v


SqlName = Annotated[str, AfterValidator(_sql_name)]


INDEX_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")  # also a run file's name part


class TypedIndexBase(StrictModel):
    """What every typed index (``indexes.<name>: {type: ...}``) has: ``type`` and ``enabled``."""

    enabled: bool = Field(True, description="search with it")
    # an approximate nearest-neighbour search over the model's vectors: measured against exact
    # search and held to gate.ann_min_recall; gated by default (the rule: Config.gated_indexes).
    # A type that is approximate sets it (a plug-in's type too); python's is a setting; a type
    # without it is exact (read through ``approximate_of``). Declared here without a value, so
    # that a type may make it a setting without shadowing a default of the base
    approximate: ClassVar[bool]

    def approximate_of(self) -> bool:
        """Whether this index is approximate: its type's or its setting's ``approximate``."""
        return bool(getattr(self, "approximate", False))

    def repeats_of(self) -> int:
        """How many times a run searches it (a store's ``stability.repeats``; 1 by default)."""
        return 1

    def resolve_paths(self, base: Path) -> TypedIndexBase:
        """A copy whose relative paths are made absolute against ``base`` (none by default)."""
        return self


class RunIndexConfig(TypedIndexBase):
    """A ranking read from a run file (TREC ``qid Q0 docno rank score tag``, or JSONL)."""

    type: Literal["run"] = Field(description="run: rankings read from a run file")
    path: UsablePath = Field(description="the run file (TREC or JSONL, gzipped or not)")
    format: Literal["trec", "jsonl"] | None = Field(
        None,
        description="default: jsonl for a .jsonl or .json file (gzipped or not), else trec; "
        "a file that starts as gzip does is read through gzip",
    )

    @property
    def file_format(self) -> Literal["trec", "jsonl"]:
        """The format given, else the one the file's suffix says (before a ``.gz``)."""
        if self.format is not None:
            return self.format
        suffixes = [s.lower() for s in self.path.suffixes]
        if suffixes[-1:] == [".gz"]:
            suffixes.pop()
        return "jsonl" if suffixes[-1:] in ([".jsonl"], [".json"]) else "trec"

    def resolve_paths(self, base: Path) -> RunIndexConfig:
        """A copy whose relative ``path`` is made absolute against ``base``."""
        if self.path.is_absolute():
            return self
        return self.model_copy(update={"path": (base / self.path).resolve()})


class PythonIndexConfig(TypedIndexBase):
    """A ranking returned by a Python function (engines.retrievers.python documents the call)."""

    type: Literal["python"] = Field(description="python: rankings returned by a function")
    callable: str = Field(
        pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$", description='"pkg.module:function"'
    )
    setup: str | None = Field(
        None,
        pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$",
        description='"pkg.module:function" called once before the search; what it returns '
        "is passed to the search function as the keyword state=",
    )
    close: str | None = Field(
        None,
        pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$",
        description='"pkg.module:function" called with what the setup returned (None without '
        "one) after the search, also when the search failed",
    )
    approximate: bool = Field(  # type: ignore[misc]  # a setting here: python may be either
        False,
        description="an approximate search (a vector store's ANN index, say): measured against "
        "exact search like hnsw (recall, metric change, selectivity buckets), gated by default "
        "and held to gate.ann_min_recall and budgets",
    )


class PgvectorIndexConfig(TypedIndexBase):
    """An HNSW index in Postgres with pgvector (engines/retrievers/pgvector.py: the store driver
    engines/stores/pgvector.py under these settings).

    Scratch mode (``table: null``): evalret's document vectors are loaded into a scratch table,
    indexed with these settings, searched, and dropped. Table mode: an existing table is queried
    read-only with the config's query vectors. The DSN is read from the environment variable
    ``dsn_env`` when the index runs, and is never written anywhere."""

    type: Literal["pgvector"] = Field(description="pgvector: HNSW search in Postgres")
    approximate: ClassVar[bool] = True
    dsn_env: str = Field(description="name of the environment variable holding the DSN")
    # pgvector's own bounds (hnsw.c): m 2..100, ef_construction 4..1000, ef_search 1..1000
    m: int = Field(16, ge=2, le=100, description="neighbours per node of the HNSW graph")
    ef_construction: int = Field(
        64, ge=4, le=1000, description="candidate list size while building (>= 2 m)"
    )
    ef_search: int = Field(
        40, ge=1, le=1000, description="hnsw.ef_search: candidate list size while searching"
    )
    metric: Literal["inner_product", "cosine"] = Field(
        "inner_product", description="<#> (vector_ip_ops) or <=> (vector_cosine_ops)"
    )
    table: str | None = Field(None, description="an existing table (read-only); null: scratch")
    id_column: SqlName = Field("id", description="table mode: the column of document ids")
    vector_column: SqlName = Field("embedding", description="table mode: the vector column")
    metadata_column: SqlName = Field(
        "metadata", description="table mode: the jsonb column that filtered queries read"
    )

    @field_validator("dsn_env")
    @classmethod
    def _env_name(cls, v: str) -> str:
        if not _ENV_NAME.fullmatch(v):
            raise ValueError("the name of an environment variable (letters, digits, _), not a DSN")
        return v

    @field_validator("table")
    @classmethod
    def _table(cls, v: str | None) -> str | None:
        return None if v is None else _table_name(v)

    @model_validator(mode="after")
    def _graph_settings(self) -> PgvectorIndexConfig:
        if self.ef_construction < 2 * self.m:
            raise ValueError("ef_construction must be at least 2 * m (pgvector refuses less)")
        return self

    @model_validator(mode="after")
    def _usable_dsn(self) -> PgvectorIndexConfig:
        """The DSN in ``dsn_env``, when set, is one libpq takes (checked when the config is
        loaded, not after the embedding); an unset variable is refused when the index runs."""
        dsn = os.environ.get(self.dsn_env, "")
        problem = dsn_problem(dsn) if self.enabled and dsn.strip() else None
        if problem:
            raise AtKey(
                f"the environment variable {self.dsn_env} holds no usable connection string "
                f"(not shown): {problem}",
                ("dsn_env",),
            )
        return self


class QuantizedIndexConfig(TypedIndexBase):
    """The document and query vectors quantized as sentence-transformers' quantize_embeddings
    does, searched over the codes, optionally rescored with the float vectors
    (engines/quantize.py)."""

    type: Literal["quantized"] = Field(description="quantized: search over quantized vectors")
    approximate: ClassVar[bool] = True
    precision: Literal["float32", "int8", "uint8", "binary", "ubinary"] = Field(
        description="int8 / uint8: ranges calibrated on the documents; binary / ubinary: sign "
        "bits, searched by Hamming distance"
    )
    rescore: int | None = Field(
        None, ge=1, description="rescore the top rescore x depth with the float vectors"
    )
