"""Qdrant as a store: driver ``qdrant``, local mode (``connect.path``: qdrant-client's embedded
store, one process at a time per directory) or a server (``connect.url`` / ``url_env``, an API
key from ``connect.api_key_env``, never printed).

A point's id is an integer or a UUID, so the document id is a payload key (``id_field``); scratch
mode numbers its points and writes the document id to the payload key ``id``, the document's
metadata under the payload key ``metadata``. An existing collection's vector is its unnamed one,
or, when the collection has named vectors, the one named ``vector_field``; its distance must be
the configured ``metric``'s (ip: Dot, cosine: Cosine, l2: Euclid), checked when opened. Qdrant's
score is the similarity for Dot and Cosine and the (not squared) Euclidean distance for Euclid,
read as ``-distance**2`` so that l2 scores are those of the other stores.

A batch of queries is one ``query_batch_points`` call. Search settings (``search:``) are
Qdrant's ``SearchParams``: ``hnsw_ef``, ``exact``, ``indexed_only``, and
``quantization_rescore`` / ``quantization_oversampling`` / ``quantization_ignore`` (its
``quantization`` object). Scratch mode's ``build:`` is the collection's ``hnsw_config``: ``m``,
``ef_construct``, ``full_scan_threshold``. Local mode builds no index and searches exactly
(qdrant-client's own numpy search): there ``build:`` and ``search:`` could have no effect and
are refused at their key (``_local_settings``), and the description says the search is exact.

Metadata is read from the payload (``metadata_field`` null) or from under a payload key
(``metadata_field``, a Qdrant key path: ``meta`` or ``meta.inner``). A filter becomes a Qdrant
``Filter`` with core/filters.py's semantics, against Qdrant's matching: ``$and`` is ``must``,
``$or`` is ``should``; ``$eq`` / ``$in`` on strings and booleans are ``MatchValue`` /
``MatchAny`` (one ``should`` of ``MatchValue`` per boolean: ``MatchAny`` takes no booleans), a
boolean matching no number and no number a boolean; a number is never a ``MatchValue`` (which
takes no float, and an integer operand would miss a float payload): ``$eq`` on a number is the
range ``gte = lte = value``, which Qdrant applies to integers and floats alike and never to
booleans; the ranges likewise. ``$ne`` / ``$nin`` are ``must_not`` of ``$eq`` / ``$in``, which
keeps the points without the key or with a value of another type, as core/filters.py does. A key
is quoted in the path when it holds characters other than ASCII letters, digits, ``_`` and ``-``; a
key with a double quote cannot be written (``check_filter``). One difference is left: Qdrant
matches each element of a payload list, where evalret's metadata holds no lists (scratch mode
loads only filterable values; an existing collection's lists are read as Qdrant reads them).
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import secrets
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from evalret.core.filters import Condition, Filter, Logical, value_type
from evalret.data.config import StoreIndexConfig
from evalret.engines.stores.common import local, local_store, package, refuse_keys, secret, sweep
from evalret.engines.stores.driver import Hit, ScratchRows
from evalret.errors import ConfigError

EXTRA = "evalret[qdrant]"
SCRATCH_PREFIX = "evalret_scratch_"
SCRATCH_ID = "id"  # scratch mode's payload keys: the document id and its metadata
SCRATCH_METADATA = "metadata"
LOAD_BATCH = 1_000
# search: key -> (its field in SearchParams, or in its quantization object for quantization_*;
# the value's type)
SEARCH_KEYS: dict[str, tuple[str, type]] = {
    "hnsw_ef": ("hnsw_ef", int),
    "exact": ("exact", bool),
    "indexed_only": ("indexed_only", bool),
    "quantization_rescore": ("rescore", bool),
    "quantization_oversampling": ("oversampling", float),
    "quantization_ignore": ("ignore", bool),
}
BUILD_KEYS: dict[str, type] = {"m": int, "ef_construct": int, "full_scan_threshold": int}
_DISTANCE = {"ip": "Dot", "cosine": "Cosine", "l2": "Euclid"}
_METRIC = {v: k for k, v in _DISTANCE.items()}
_RANGE = {"$gt": "gt", "$gte": "gte", "$lt": "lt", "$lte": "lte"}


def _library() -> Any:
    return package("qdrant_client", "qdrant", EXTRA)


def _models() -> Any:
    _library()
    from qdrant_client import models

    return models


def _typed(at: str, value: Any, kind: type) -> Any:
    """``value`` as ``kind`` (an int is a float too); ConfigError at ``at`` otherwise."""
    ok = isinstance(value, bool) if kind is bool else not isinstance(value, bool)
    if kind is int:
        ok = ok and isinstance(value, int) and value > 0
    elif kind is float:
        ok = ok and isinstance(value, (int, float)) and value > 0
    if not ok:
        wanted = {bool: "true or false", int: "a positive integer", float: "a positive number"}
        raise ConfigError(f"{at}: {wanted[kind]}, not {value!r}")
    return float(value) if kind is float else value


def _settings(given: dict[str, Any], known: dict[str, Any], at: str) -> None:
    """Each key of ``given`` known and of its type."""
    for key, value in given.items():
        if key not in known:
            raise ConfigError(
                f"{at}: {key!r} is no qdrant setting here (one of {', '.join(known)})"
            )
        kind = known[key][1] if isinstance(known[key], tuple) else known[key]
        _typed(f"{at}.{key}", value, kind)


def search_params(search: dict[str, Any]) -> Any:
    """``search:`` as Qdrant's SearchParams (None when empty)."""
    if not search:
        return None
    models = _models()
    plain = {SEARCH_KEYS[k][0]: v for k, v in search.items() if not k.startswith("quantization_")}
    quantized = {SEARCH_KEYS[k][0]: v for k, v in search.items() if k.startswith("quantization_")}
    if quantized:
        plain["quantization"] = models.QuantizationSearchParams(**quantized)
    return models.SearchParams(**plain)


def key_path(prefix: str | None, key: str) -> str:
    """A metadata key as a Qdrant key path under ``prefix`` (quoted unless plain)."""
    plain = all(ch.isascii() and (ch.isalnum() or ch in "_-") for ch in key)
    part = key if plain else f'"{key}"'
    return part if prefix is None else f"{prefix}.{part}"


def _equal(models: Any, path: str, c: Condition, values: tuple[Any, ...]) -> Any:
    """``path`` equal to one of ``values`` (all of ``c.type``) as one Qdrant condition."""
    if c.type == "string":
        if len(values) == 1:
            return models.FieldCondition(key=path, match=models.MatchValue(value=values[0]))
        return models.FieldCondition(key=path, match=models.MatchAny(any=list(values)))
    if c.type == "boolean":
        parts = [
            models.FieldCondition(key=path, match=models.MatchValue(value=bool(v))) for v in values
        ]
    else:
        parts = [
            models.FieldCondition(key=path, range=models.Range(gte=float(v), lte=float(v)))
            for v in values
        ]
    return parts[0] if len(parts) == 1 else models.Filter(should=parts)


def condition_of(c: Condition, prefix: str | None) -> Any:
    """One condition as a Qdrant condition (a FieldCondition or a nested Filter)."""
    models = _models()
    path = key_path(prefix, c.key)
    if c.op in _RANGE:
        bound = {_RANGE[c.op]: float(c.value)}  # type: ignore[arg-type]
        return models.FieldCondition(key=path, range=models.Range(**bound))
    values = c.value if isinstance(c.value, tuple) else (c.value,)
    equal = _equal(models, path, c, values)
    if c.op in ("$ne", "$nin"):
        return models.Filter(must_not=[equal])
    return equal


def filter_of(f: Filter, prefix: str | None) -> Any:
    """The filter as a Qdrant ``Filter`` (core/filters.py's semantics)."""
    models = _models()
    if isinstance(f, Logical):
        parts = [_part(p, prefix) for p in f.parts]
        return models.Filter(must=parts) if f.op == "$and" else models.Filter(should=parts)
    got = condition_of(f, prefix)
    return got if isinstance(got, models.Filter) else models.Filter(must=[got])


def _part(f: Filter, prefix: str | None) -> Any:
    return filter_of(f, prefix) if isinstance(f, Logical) else condition_of(f, prefix)


def _client(settings: StoreIndexConfig, index: str, local: Path | None) -> Any:
    """A client: the server's when a URL is configured, else local mode at ``local`` (None:
    in memory)."""
    qdrant_client = _library()
    c = settings.connect
    url = c.url or (secret(c.url_env, "url_env", index) if c.url_env else None)
    if url is not None:
        key = secret(c.api_key_env, "api_key_env", index) if c.api_key_env else None
        return qdrant_client.QdrantClient(url=url, api_key=key)
    if local is None:
        return qdrant_client.QdrantClient(location=":memory:")
    return qdrant_client.QdrantClient(path=str(local))


def _vector(info: Any, settings: StoreIndexConfig, index: str) -> tuple[str | None, Any]:
    """(the vector's name, None when unnamed; its VectorParams) of an existing collection."""
    vectors = info.config.params.vectors
    if isinstance(vectors, dict):
        if settings.vector_field not in vectors:
            names = ", ".join(sorted(vectors)) or "none"
            raise ConfigError(
                f"indexes.{index}.vector_field: collection {settings.collection!r} has no "
                f"vector named {settings.vector_field!r} (its named vectors: {names})"
            )
        return settings.vector_field, vectors[settings.vector_field]
    if vectors is None:
        raise ConfigError(
            f"indexes.{index}.collection: {settings.collection!r} has no dense vector"
        )
    return None, vectors


class QdrantSession:
    """One Qdrant collection, searched."""

    swept = 0  # scratch leftovers of killed runs dropped on opening (common.py)

    def __init__(
        self,
        client: Any,
        collection: str,
        using: str | None,
        id_field: str,
        prefix: str | None,
        settings: StoreIndexConfig,
    ) -> None:
        self.client = client
        self.collection = collection
        self.using = using
        self.id_field = id_field
        self.prefix = prefix
        self.settings = settings
        self.local = settings.connect.url is None and settings.connect.url_env is None
        # local mode warns that search parameters have no effect: it is said in describe()
        self.params = None if self.local else search_params(dict(settings.search))
        self.limit = max(1, self._rows())

    def _rows(self) -> int:
        return int(self.client.count(self.collection, exact=True).count)

    def describe(self) -> dict[str, Any]:
        info = self.client.get_collection(self.collection)
        hnsw = info.config.hnsw_config
        vectors = info.config.params.vectors
        vectors = vectors[self.using] if self.using is not None else vectors
        index: dict[str, Any] = {
            "distance": str(vectors.distance.value),
            "hnsw_config": {
                "m": hnsw.m,
                "ef_construct": hnsw.ef_construct,
                "full_scan_threshold": hnsw.full_scan_threshold,
            },
        }
        if self.local:
            index["search"] = "exact: local mode builds no index"
        try:
            version = str(self.client.info().version)
        except Exception:  # an older server or client without info()
            version = importlib.metadata.version("qdrant-client")
        where = "local" if self.local else "server"
        return {"version": version, "mode": where, "index": index, "rows": self._rows()}

    def where(self, f: Filter) -> Any:
        return filter_of(f, self.prefix)

    def search(self, vectors: np.ndarray, limit: int, where: Any | None) -> list[list[Hit]]:
        models = _models()
        requests = [
            models.QueryRequest(
                query=v.tolist(),
                using=self.using,
                filter=where,
                params=self.params,
                limit=int(limit),
                with_payload=[self.id_field],
            )
            for v in np.asarray(vectors, dtype=np.float32)
        ]
        got = self.client.query_batch_points(self.collection, requests=requests)
        return [
            [((p.payload or {}).get(self.id_field), float(p.score)) for p in r.points] for r in got
        ]


def _local_settings(settings: StoreIndexConfig, index: str) -> None:
    """ConfigError at the first ``build`` or ``search`` key in local mode, where it cannot take
    effect: the search is exact whatever they say, and the gate would pass an HNSW it never
    measured."""
    for what in ("build", "search"):
        keys = sorted(getattr(settings, what))
        if keys:
            raise ConfigError(
                f"indexes.{index}.{what}.{keys[0]}: qdrant's local mode builds no index and "
                f"searches every point exactly, so {what} settings have no effect there: point "
                "connect.url at a Qdrant server to measure its HNSW"
            )


class QdrantDriver:
    """The ``qdrant`` driver."""

    name = "qdrant"
    extra = EXTRA

    def check(self, settings: StoreIndexConfig, index: str) -> None:
        _library()
        _settings(dict(settings.search), SEARCH_KEYS, f"indexes.{index}.search")
        _settings(dict(settings.build), BUILD_KEYS, f"indexes.{index}.build")
        if settings.connect.url is None and settings.connect.url_env is None:
            _local_settings(settings, index)
        local_store(settings, index, look=False)  # the store itself: check_store, before a search

    def check_store(self, settings: StoreIndexConfig, index: str) -> None:
        local_store(settings, index)

    def check_filter(self, f: Filter, index: str) -> None:
        refuse_keys(
            f, index, "qdrant", lambda k: "a double quote in a key path" if '"' in k else None
        )

    def similarity(self, metric: str, raw: np.ndarray) -> np.ndarray:
        out: np.ndarray = -np.square(raw) if metric == "l2" else raw
        return out

    @contextlib.contextmanager
    def open(
        self,
        settings: StoreIndexConfig,
        index: str,
        scratch: ScratchRows | None,
        tick: Callable[[int], None],
    ) -> Iterator[QdrantSession]:
        if scratch is None:
            client = _client(settings, index, settings.connect.path)
            try:
                yield _existing(client, settings, index)
            finally:
                client.close()
            return
        path = settings.connect.path
        made = path is not None and not path.exists()
        client = _client(settings, index, path)
        name = f"{SCRATCH_PREFIX}{os.getpid()}_{secrets.token_hex(4)}"
        try:
            swept = 0
            if local(settings) and not made:
                names = [c.name for c in client.get_collections().collections]
                swept = sweep(names, client.delete_collection)
            _load(client, name, settings, scratch, tick)
            session = QdrantSession(client, name, None, SCRATCH_ID, SCRATCH_METADATA, settings)
            session.swept = swept
            yield session
        finally:
            with contextlib.suppress(Exception):
                client.delete_collection(name)
            client.close()
            if made and path is not None:
                shutil.rmtree(path, ignore_errors=True)


def _existing(client: Any, settings: StoreIndexConfig, index: str) -> QdrantSession:
    """A session on the configured collection, its vector and distance checked."""
    name = str(settings.collection)
    if not client.collection_exists(name):
        raise ConfigError(f"indexes.{index}.collection: no collection {name!r} in the store")
    using, params = _vector(client.get_collection(name), settings, index)
    distance = str(params.distance.value)
    if distance != _DISTANCE[settings.metric]:
        built = f" (metric {_METRIC[distance]})" if distance in _METRIC else ""
        raise ConfigError(
            f"indexes.{index}.metric: collection {name!r} measures {distance}{built}, not "
            f"{_DISTANCE[settings.metric]} (metric {settings.metric}): set the metric it was "
            "built with"
        )
    return QdrantSession(client, name, using, settings.id_field, settings.metadata_field, settings)


def _load(
    client: Any,
    name: str,
    settings: StoreIndexConfig,
    rows: ScratchRows,
    tick: Callable[[int], None],
) -> None:
    """The scratch collection: one point per document, numbered, its id and filterable metadata
    in the payload."""
    models = _models()
    hnsw = models.HnswConfigDiff(**dict(settings.build)) if settings.build else None
    client.create_collection(
        name,
        vectors_config=models.VectorParams(
            size=int(rows.vectors.shape[1]),
            distance=getattr(models.Distance, _DISTANCE[settings.metric].upper()),
        ),
        hnsw_config=hnsw,
    )
    for start in range(0, len(rows.ids), LOAD_BATCH):
        stop = min(start + LOAD_BATCH, len(rows.ids))
        payloads = []
        for i in range(start, stop):
            meta = rows.metadata[i] if rows.metadata else None
            kept = {k: v for k, v in (meta or {}).items() if value_type(v) is not None}
            payloads.append({SCRATCH_ID: rows.ids[i], SCRATCH_METADATA: kept})
        vectors = np.asarray(rows.vectors[start:stop], dtype=np.float32)
        client.upsert(
            name,
            points=models.Batch(
                ids=list(range(start, stop)), vectors=vectors.tolist(), payloads=payloads
            ),
            wait=True,
        )
        tick(stop - start)


DRIVER = QdrantDriver()
