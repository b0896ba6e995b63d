"""Chroma as a store: driver ``chroma``, a local store (``connect.path``: ``PersistentClient``) or
a server (``connect.url`` / ``url_env``: ``HttpClient``, a token from ``connect.token_env`` or
``api_key_env`` sent as ``Authorization: Bearer``, never printed).

The document id is Chroma's own id when ``id_field`` is ``id``, else the metadata key
``id_field`` (a collection of chunks holds several rows per document, each with its own Chroma
id). The collection's space (its configuration's ``hnsw.space``, which a collection made with the
old ``hnsw:space`` metadata reports too) must be the configured ``metric``, checked when opened.
Chroma returns distances: ``1 - dot`` for ip, ``1 - cos`` for cosine, the squared L2 for l2.

Chroma's HNSW settings belong to the collection, not to a query: ``search:`` takes no key (an
existing collection searches with its own ``ef_search``; scratch mode sets it in ``build:``).
Scratch mode's ``build:`` is the HNSW configuration: ``max_neighbors`` (M), ``ef_construction``,
``ef_search``, ``num_threads``, ``resize_factor``, ``sync_threshold``, ``batch_size``, and the old
metadata names ``M``, ``construction_ef``, ``search_ef``. Chroma's build takes no seed and is
not reproducible (the same rows, even on one thread, give another graph each time: its recall
varies between builds; ``stability.repeats`` reports the spread). An empty ``build:`` is a flat
search as near as Chroma has one: ``ef_search`` at least the row count, so the graph search
visits every row it reaches (all of them on a connected graph).
Without ``connect.path`` or a URL, scratch mode uses an in-memory client.

Chroma's metadata filter (``where``) has core/filters.py's grammar and semantics (checked by
tests/test_stores.py's conformance test: a number equals an int and a float alike, a boolean is
not a number, ``$ne`` / ``$nin`` keep the rows without the key). The translation writes each
condition as its own single-key object and ``$and`` / ``$or`` with at least two parts (a single
part stands alone), as Chroma's parser requires. Chroma stores no metadata key starting with
``#`` or ``$`` and reserves ``chroma:document``: a filter on such a key is refused
(``check_filter``), and scratch mode loads only filterable values under keys Chroma accepts.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from evalret.core.filters import Filter, Logical, value_type
from evalret.data.config import StoreIndexConfig
from evalret.engines.stores.common import local, local_store, package, refuse_keys, secret, sweep
from evalret.engines.stores.driver import Hit, ScratchRows
from evalret.errors import ConfigError

EXTRA = "evalret[chroma]"
SCRATCH_PREFIX = "evalret_scratch_"
LOAD_BATCH = 5_000
# build: key -> the HNSW configuration's key and its type
BUILD_KEYS: dict[str, tuple[str, type]] = {
    "max_neighbors": ("max_neighbors", int),
    "M": ("max_neighbors", int),
    "ef_construction": ("ef_construction", int),
    "construction_ef": ("ef_construction", int),
    "ef_search": ("ef_search", int),
    "search_ef": ("ef_search", int),
    "num_threads": ("num_threads", int),
    "resize_factor": ("resize_factor", float),
    "sync_threshold": ("sync_threshold", int),
    "batch_size": ("batch_size", int),
}
RESERVED = "chroma:document"
_DESCRIBED = ("space", "max_neighbors", "ef_construction", "ef_search", "resize_factor")


def _library() -> Any:
    return package("chromadb", "chroma", EXTRA)


def _keeps(key: str) -> bool:
    """Whether Chroma stores a metadata key."""
    return bool(key) and key[0] not in "#$" and key != RESERVED


def hnsw_build(build: dict[str, Any], index: str) -> dict[str, Any]:
    """``build:`` as Chroma's HNSW configuration keys; ConfigError at the key otherwise."""
    out: dict[str, Any] = {}
    for key, value in build.items():
        if key not in BUILD_KEYS:
            raise ConfigError(
                f"indexes.{index}.build: {key!r} is no chroma HNSW setting "
                f"(one of {', '.join(BUILD_KEYS)}; the space is the metric)"
            )
        name, kind = BUILD_KEYS[key]
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not number or value <= 0 or (kind is int and not isinstance(value, int)):
            wanted = "a positive integer" if kind is int else "a positive number"
            raise ConfigError(f"indexes.{index}.build.{key}: {wanted}, not {value!r}")
        if name in out:
            raise ConfigError(f"indexes.{index}.build.{key}: {name} is set twice")
        out[name] = kind(value)
    return out


def where_of(f: Filter) -> dict[str, Any]:
    """The filter as Chroma's ``where`` (core/filters.py's semantics, Chroma's shape)."""
    if isinstance(f, Logical):
        parts = [where_of(p) for p in f.parts]
        return parts[0] if len(parts) == 1 else {f.op: parts}
    value = list(f.value) if isinstance(f.value, tuple) else f.value
    return {f.key: {f.op: value}}


def _client(settings: StoreIndexConfig, index: str) -> Any:
    """The server's client when a URL is configured, else the local store at ``connect.path``
    (None: in memory)."""
    chromadb = _library()
    c = settings.connect
    url = c.url or (secret(c.url_env, "url_env", index) if c.url_env else None)
    if url is not None:
        parts = urlsplit(url)
        headers = {}
        token_env = c.token_env or c.api_key_env
        if token_env is not None:
            what = "token_env" if c.token_env else "api_key_env"
            headers["Authorization"] = f"Bearer {secret(token_env, what, index)}"
        https = parts.scheme == "https"
        return chromadb.HttpClient(
            host=parts.hostname or "localhost",
            port=parts.port or (443 if https else 8000),
            ssl=https,
            headers=headers,
        )
    if c.path is None:
        return chromadb.EphemeralClient()
    return chromadb.PersistentClient(path=str(c.path))


def _configuration(collection: Any) -> dict[str, Any]:
    """The collection's configuration (chromadb warns, reading one made without an embedding
    function, about a legacy embedding function config that evalret does not use)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        config: dict[str, Any] = dict(collection.configuration or {})
    return config


def _space(collection: Any) -> str | None:
    config = _configuration(collection)
    for section in ("hnsw", "spann"):
        if config.get(section):
            return str(config[section].get("space"))
    space = (collection.metadata or {}).get("hnsw:space")
    return None if space is None else str(space)


class ChromaSession:
    """One Chroma collection, searched."""

    swept = 0  # scratch leftovers of killed runs dropped on opening (common.py)

    def __init__(self, collection: Any, id_field: str) -> None:
        self.collection = collection
        self.id_field = id_field
        self.limit = max(1, int(collection.count()))

    def describe(self) -> dict[str, Any]:
        config = _configuration(self.collection)
        hnsw = config.get("hnsw") or {}
        index: dict[str, Any]
        if hnsw:
            index = {"type": "hnsw"} | {k: hnsw[k] for k in _DESCRIBED if k in hnsw}
        else:
            spann = config.get("spann") or {}
            index = {"type": "spann", "space": spann.get("space")}
        return {
            "version": str(_library().__version__),
            "index": index,
            "rows": int(self.collection.count()),
        }

    def where(self, f: Filter) -> dict[str, Any]:
        return where_of(f)

    def search(self, vectors: np.ndarray, limit: int, where: Any | None) -> list[list[Hit]]:
        by_id = self.id_field == "id"
        got = self.collection.query(
            query_embeddings=np.asarray(vectors, dtype=np.float32),
            n_results=int(limit),
            where=where,
            include=["distances"] if by_id else ["distances", "metadatas"],
        )
        out: list[list[Hit]] = []
        for n, ids in enumerate(got["ids"]):
            distances = got["distances"][n]
            if by_id:
                found: list[Any] = list(ids)
            else:
                found = [(m or {}).get(self.id_field) for m in got["metadatas"][n]]
            out.append([(d, float(x)) for d, x in zip(found, distances, strict=True)])
        return out


class ChromaDriver:
    """The ``chroma`` driver."""

    name = "chroma"
    extra = EXTRA

    def check(self, settings: StoreIndexConfig, index: str) -> None:
        _library()
        if settings.search:
            key = next(iter(settings.search))
            raise ConfigError(
                f"indexes.{index}.search.{key}: chroma takes no search setting at query time "
                "(ef_search is the collection's: in scratch mode set build: {ef_search: N}; "
                "an existing collection searches with its own)"
            )
        hnsw_build(dict(settings.build), index)
        local_store(settings, index, look=False)  # the store itself: check_store, before a search
        if settings.metadata_field is not None:
            raise ConfigError(
                f"indexes.{index}.metadata_field: chroma reads metadata from each row's "
                "metadata (leave metadata_field out)"
            )

    def check_store(self, settings: StoreIndexConfig, index: str) -> None:
        local_store(settings, index)

    def check_filter(self, f: Filter, index: str) -> None:
        why = f"Chroma stores no key starting with # or $, and reserves {RESERVED}"
        refuse_keys(f, index, "chroma", lambda k: None if _keeps(k) else why)

    def similarity(self, metric: str, raw: np.ndarray) -> np.ndarray:
        out: np.ndarray = -raw if metric == "l2" else 1.0 - raw
        return out

    @contextlib.contextmanager
    def open(
        self,
        settings: StoreIndexConfig,
        index: str,
        scratch: ScratchRows | None,
        tick: Callable[[int], None],
    ) -> Iterator[ChromaSession]:
        client = _client(settings, index)
        if scratch is None:
            yield _existing(client, settings, index)
            return
        name = f"{SCRATCH_PREFIX}{os.getpid()}_{secrets.token_hex(4)}"
        try:
            swept = 0
            if local(settings):
                names = [getattr(c, "name", c) for c in client.list_collections()]
                swept = sweep(names, client.delete_collection)
            collection = _load(client, name, settings, index, scratch, tick)
            session = ChromaSession(collection, "id")
            session.swept = swept
            yield session
        finally:
            with contextlib.suppress(Exception):
                client.delete_collection(name)


def _existing(client: Any, settings: StoreIndexConfig, index: str) -> ChromaSession:
    """A session on the configured collection, its space checked."""
    name = str(settings.collection)
    try:
        collection = client.get_collection(name, embedding_function=None)
    except Exception as e:  # chromadb's NotFoundError (its class moved between releases)
        raise ConfigError(f"indexes.{index}.collection: no collection {name!r}: {e}") from None
    space = _space(collection)
    if space != settings.metric:
        raise ConfigError(
            f"indexes.{index}.metric: collection {name!r} was built with space {space}, not "
            f"{settings.metric}: set the metric it was built with"
        )
    return ChromaSession(collection, settings.id_field)


def _load(
    client: Any,
    name: str,
    settings: StoreIndexConfig,
    index: str,
    rows: ScratchRows,
    tick: Callable[[int], None],
) -> Any:
    """The scratch collection: one row per document, its id Chroma's, its filterable metadata;
    the HNSW configuration of ``build:``."""
    hnsw = {"space": settings.metric} | hnsw_build(dict(settings.build), index)
    if not settings.build:
        hnsw["ef_search"] = max(100, len(rows.ids))
    collection = client.create_collection(
        name, configuration={"hnsw": hnsw}, embedding_function=None
    )
    batch = max(1, min(LOAD_BATCH, int(client.get_max_batch_size())))
    for start in range(0, len(rows.ids), batch):
        stop = min(start + batch, len(rows.ids))
        metadatas = []
        for i in range(start, stop):
            meta = rows.metadata[i] if rows.metadata else None
            kept = {
                k: v for k, v in (meta or {}).items() if _keeps(k) and value_type(v) is not None
            }
            metadatas.append(kept or None)
        collection.add(
            ids=list(rows.ids[start:stop]),
            embeddings=np.ascontiguousarray(rows.vectors[start:stop], dtype=np.float32),
            metadatas=metadatas if rows.metadata else None,
        )
        tick(stop - start)
    return collection


DRIVER = ChromaDriver()
