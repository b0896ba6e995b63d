"""``indexes.<name>: {type: store, driver: ...}``: a vector database searched through one of
evalret's store drivers (engines/stores/), in the existing collection or in a scratch one loaded
with evalret's own vectors."""

from __future__ import annotations

import re
from pathlib import Path
from typing import ClassVar, Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator

from evalret.data.config.base import AtKey, StrictModel, UsablePath
from evalret.data.config.typed_indexes import TypedIndexBase

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
STORE_DRIVERS = ("qdrant", "chroma", "lancedb", "milvus", "pgvector")
SearchValue = int | float | str | bool


def _env_name(v: str | None) -> str | None:
    if v is not None and not _ENV_NAME.fullmatch(v):
        raise ValueError("the name of an environment variable (letters, digits, _), not a secret")
    return v


class StoreConnect(StrictModel):
    """Where the store is: a local store's ``path``, or a server's ``url``. Secrets (an API key,
    a token, a DSN) are never written in the config: each ``*_env`` key names the environment
    variable that holds one, read when the index runs and never printed."""

    path: UsablePath | None = Field(
        None,
        description="a local store's directory or file (qdrant local mode, chroma, lancedb, "
        "milvus lite's .db); scratch mode without path or url: a temporary directory",
    )
    url: str | None = Field(None, description="a server's URL, without credentials")
    url_env: str | None = Field(None, description="environment variable holding the URL")
    api_key_env: str | None = Field(None, description="environment variable holding an API key")
    token_env: str | None = Field(None, description="environment variable holding a token")
    dsn_env: str | None = Field(None, description="pgvector: environment variable holding the DSN")

    @field_validator("url_env", "api_key_env", "token_env", "dsn_env")
    @classmethod
    def _names(cls, v: str | None) -> str | None:
        return _env_name(v)

    @field_validator("url")
    @classmethod
    def _no_credentials(cls, v: str | None) -> str | None:
        if v is not None and (urlsplit(v).password or urlsplit(v).username):
            raise ValueError("a URL without credentials (put a secret in an *_env variable)")
        return v

    def resolve_paths(self, base: Path) -> StoreConnect:
        """A copy whose relative ``path`` is made absolute against ``base``."""
        if self.path is None or self.path.is_absolute():
            return self
        return self.model_copy(update={"path": (base / self.path).resolve()})


class StoreStability(StrictModel):
    """Searching (and, in scratch mode, building) the index more than once: the report shows the
    spread of recall and of each gated metric over the repeats."""

    repeats: int = Field(1, ge=1, le=20, description="searches (scratch: builds) of the index")


class StoreIndexConfig(TypedIndexBase):
    """A vector database searched through a store driver (engines/stores/): its approximate
    search measured against evalret's exact search like any approximate index."""

    type: Literal["store"] = Field(description="store: a vector database through its driver")
    approximate: ClassVar[bool] = True
    driver: Literal["qdrant", "chroma", "lancedb", "milvus", "pgvector"] = Field(
        description="the store's driver (each an optional extra: evalret[<driver>])"
    )
    connect: StoreConnect = Field(StoreConnect(), description="where the store is")
    collection: str | None = Field(
        None,
        min_length=1,
        description="the collection (the table for lancedb and pgvector); scratch mode: null "
        "makes a temporary one, dropped after the search",
    )
    id_field: str = Field("id", min_length=1, description="where each row's document id is")
    vector_field: str = Field("vector", min_length=1, description="the vector field or column")
    metadata_field: str | None = Field(
        None,
        description="where filtered queries read metadata: null = the driver's default "
        "(qdrant: the payload, chroma: the metadata, lancedb: top-level columns, milvus: a JSON "
        "field named metadata, pgvector: a jsonb column named metadata)",
    )
    metric: Literal["ip", "cosine", "l2"] = Field(
        "ip", description="the collection's metric, as it was built"
    )
    mode: Literal["existing", "scratch"] = Field(
        "existing",
        description="existing: search what is there (read-only); scratch: load evalret's "
        "vectors into a temporary collection, search it, drop it",
    )
    search: dict[str, SearchValue] = Field(
        default_factory=dict,
        description="passed to the store's search as its parameters (nprobes, ef, ...), "
        "recorded in the report",
    )
    build: dict[str, SearchValue] = Field(
        default_factory=dict,
        description="scratch mode: the index to build (driver's keys: index_type, m, "
        "ef_construction, nlist, ...); empty: the store's flat (exact) search",
    )
    chunks: Literal["none", "fold"] = Field(
        "none", description="fold: several rows per document, the best row counts"
    )
    stability: StoreStability = Field(StoreStability(), description="repeated searches")

    @model_validator(mode="after")
    def _where(self) -> StoreIndexConfig:
        """An existing collection is named; scratch mode loads no existing one."""
        if self.mode == "existing" and self.collection is None:
            raise AtKey("mode existing searches a named collection: set collection", ("mode",))
        if self.mode == "existing" and self.build:
            raise AtKey(
                "build applies to scratch mode only (existing: as it was built)", ("build",)
            )
        if self.driver == "pgvector" and self.connect.dsn_env is None:
            raise AtKey("pgvector reads its DSN from the variable connect.dsn_env", ("connect",))
        return self

    def repeats_of(self) -> int:
        return self.stability.repeats

    def resolve_paths(self, base: Path) -> StoreIndexConfig:
        """A copy whose relative ``connect.path`` is made absolute against ``base``."""
        return self.model_copy(update={"connect": self.connect.resolve_paths(base)})
