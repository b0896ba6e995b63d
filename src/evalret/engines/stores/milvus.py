"""Milvus (a server, or Milvus Lite: a local ``.db`` directory) as a store: driver ``milvus``.

``connect.path`` (ending in ``.db``) is Milvus Lite, which pymilvus serves from this process;
``connect.url`` (or ``connect.url_env``) is a server, with the token read from the variable
``connect.token_env`` (never printed). A collection holds the document id in ``id_field``
(VARCHAR or INT64: the primary key, or with ``chunks: fold`` any field several rows share),
the vector in ``vector_field`` (FLOAT_VECTOR), and the metadata filters read in the JSON field
``metadata_field`` (default ``metadata``); ``metadata_field: $meta`` reads a collection's
dynamic fields instead (its top-level keys outside the schema).

All queries of a batch go in one ``search`` call, with the collection's own index and metric
(no ``metric_type`` is sent; a ``metric`` that is not the one the vector field's index was
built with is a ConfigError at ``metric``, before any search); ``search:`` keys go into the search
parameters (``nprobe``, ``ef``, ``level``, ``search_list``, ``reorder_k``; ``ef`` raised to
the rows a search fetches, which a server requires and Milvus Lite does itself). Milvus returns
IP and COSINE as similarities and L2 as the squared distance (``similarity`` negates it). One
search returns at most 16384 rows (Milvus' topk bound), and no more than the collection holds.

Filters become Milvus boolean expressions with core/filters.py's semantics, each condition
two-valued (Milvus' NULL logic: ``metadata["k"] != "a"``, and ``not`` of anything on a missing
key, is NULL and drops the row): ``$eq`` is ``(exists P and P == v)``, ``$in`` an OR of
equalities under the same ``exists`` (Milvus Lite has no ``in`` on a JSON path), the ranges
``(exists P and P > v)``, and ``$ne``/``$nin`` ``not`` of their positive form, so documents
without the key are kept. Strings are double-quoted with ``\\``, ``"``, newline, return and tab
escaped. Numbers compare as numbers in JSON (``2021`` equals ``2021.0``).

Milvus Lite evaluates JSON comparisons in Python, where ``true`` equals ``1``: it cannot tell a
boolean from a number under the same key. Scratch mode therefore records, per metadata key, the
types it holds: a key of one type is stored under its name, a key holding several under one
key per type, ``__<type>__<key>``, and a condition whose type a key does not hold is a constant
(false; true for ``$ne``/``$nin``), which is exact on Milvus Lite and on a server. On an
existing collection in Milvus Lite, a condition on a boolean or a number first reads back, typed,
the key's values Milvus Lite takes for true or false (one query per key): when they hold the
other type (``1`` under a key compared with ``true``, ``true`` under a key compared with a
number), the filter is a ConfigError naming the key, not a different answer.

Scratch mode creates the collection ``evalret_scratch_<pid>_<random>`` on the server, or in the
Milvus Lite database ``connect.path`` names when it ends in ``.db`` (the collection alone is
dropped after), or else in a database ``evalret_scratch_<pid>_<random>.db`` of its own, in the
directory ``connect.path`` (a temporary directory without one), removed after. It inserts the
rows in batches (a tick per batch), builds the index ``build:`` describes (``{index_type:
IVF_FLAT, nlist: 16}``, ``{index_type: HNSW, M: 8, efConstruction: 64}``; empty: FLAT, an exact
scan), loads it, and drops it when the session ends, after an error too. Milvus takes no seed
for its builds (faiss's k-means under Milvus Lite's IVF is seeded by faiss itself).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from evalret.core.filters import Condition, Filter, Logical, value_type
from evalret.data.config import StoreIndexConfig
from evalret.engines.stores.common import (
    conditions,
    key_types,
    known_keys,
    local,
    package,
    scratch_dir,
    sweep,
    typed_key,
    typed_rows,
)
from evalret.engines.stores.driver import Hit, ScratchRows
from evalret.errors import ConfigError

EXTRA = "evalret[milvus]"
SCRATCH_PREFIX = "evalret_scratch_"
TOPK = 16384  # Milvus' bound on the rows one search returns
LOAD_FLOATS = 2_000_000  # floats per insert batch (a gRPC message stays well under its limit)
SEARCH_KEYS = ("nprobe", "ef", "level", "search_list", "reorder_k")
BUILD_KEYS = ("index_type", "nlist", "M", "efConstruction", "nbits", "m", "sq_type")
DYNAMIC = "$meta"
_METRIC = {"ip": "IP", "cosine": "COSINE", "l2": "L2"}
_COMPARE = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
_ESCAPE = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}

KeyTypes = Mapping[str, set[str]]  # scratch mode: metadata key -> the filter types it holds


def _library() -> Any:
    return package("pymilvus", "milvus", EXTRA)


def _lite(index: str) -> None:
    try:
        import milvus_lite  # noqa: F401
    except ImportError:
        raise ConfigError(
            f"index {index}: Milvus Lite (a local .db; scratch mode without a server) needs the "
            f"milvus-lite package (not installed): pip install '{EXTRA}'"
        ) from None


def _string(text: str) -> str:
    return '"' + "".join(_ESCAPE.get(ch, ch) for ch in text) + '"'


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return _string(value)
    number = float(value)
    return str(int(number)) if number.is_integer() else repr(number)


def condition_expr(c: Condition, field: str, types: KeyTypes | None) -> str:
    """One condition, two-valued, on the JSON field ``field`` (``$meta``: dynamic fields);
    ``types``: scratch mode's key types (None: an existing collection, keys as written)."""
    negated = c.op in ("$ne", "$nin")
    key: str | None = c.key
    if types is not None:
        held = types.get(c.key, set())
        key = None if c.type not in held else c.key if len(held) == 1 else typed_key(c.key, c.type)
    if key is None:  # the key never holds the operand's type: never equal
        return "true" if negated else "false"
    path = f"{field}[{_string(key)}]"
    if c.op in _COMPARE:
        return f"(exists {path} and {path} {_COMPARE[c.op]} {_literal(c.value)})"
    items = c.value if isinstance(c.value, tuple) else (c.value,)
    equal = " or ".join(f"{path} == {_literal(v)}" for v in items)
    positive = f"(exists {path} and ({equal}))"
    return f"(not {positive})" if negated else positive


def where_expr(f: Filter, field: str, types: KeyTypes | None) -> str:
    """The filter as a Milvus boolean expression (core/filters.py's semantics)."""
    if isinstance(f, Logical):
        joiner = " and " if f.op == "$and" else " or "
        return "(" + joiner.join(where_expr(p, field, types) for p in f.parts) + ")"
    return condition_expr(f, field, types)


def scratch_metadata(
    metadata: Sequence[Mapping[str, Any] | None],
) -> tuple[list[dict[str, Any]], dict[str, set[str]]]:
    """Each document's JSON for scratch mode and the types each key holds: filterable values
    only, numbers as floats, a key holding several types split into ``typed_key`` keys."""
    types = key_types(metadata)
    return typed_rows(metadata, types), types


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """pymilvus' and Milvus Lite's own logs of a failed call silenced while it runs (evalret
    reports the failure itself, at the config key)."""
    loggers = [logging.getLogger(n) for n in ("pymilvus", "pymilvus.milvus_client", "milvus_lite")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


class MilvusSession:
    """One Milvus collection, searched."""

    swept = 0  # scratch leftovers of killed runs dropped on opening (common.py)

    def __init__(
        self,
        client: Any,
        collection: str,
        settings: StoreIndexConfig,
        fields: tuple[str, str, str],
        types: KeyTypes | None,
    ) -> None:
        self.client = client
        self.collection = collection
        self.settings = settings
        self.id_field, self.vector_field, self.metadata_field = fields
        self.types = types
        self.missing: str | None = None  # why the collection cannot be filtered
        self.lite_index: str | None = None  # an existing collection on Milvus Lite: the index
        self.booleans: dict[str, set[str]] = {}  # key -> types among its values equal to true
        self.rows = int(client.get_collection_stats(collection).get("row_count", 0))
        self.limit = max(1, min(TOPK, self.rows))

    def describe(self) -> dict[str, Any]:
        pymilvus = _library()
        out: dict[str, Any] = {"version": pymilvus.__version__}
        with contextlib.suppress(Exception):
            out["server"] = str(self.client.get_server_version())
        names = self.client.list_indexes(self.collection, field_name=self.vector_field)
        index = self.client.describe_index(self.collection, names[0]) if names else None
        return out | {"index": _jsonable(dict(index or {})) or "none", "rows": self.rows}

    def where(self, f: Filter) -> str:
        if self.missing is not None:
            raise ConfigError(self.missing)
        if self.lite_index is not None:
            for c in conditions(f):
                self._check_lite(c, self.lite_index)
        return where_expr(f, self.metadata_field, self.types)

    def _check_lite(self, c: Condition, index: str) -> None:
        """ConfigError when Milvus Lite would compare a boolean with a number under the
        condition's key (it cannot tell ``true`` from ``1``): the key's values equal to true
        or false, read back typed, hold the other type."""
        if c.type not in ("boolean", "number"):
            return
        if c.key not in self.booleans:
            path = f"{self.metadata_field}[{_string(c.key)}]"
            dynamic = self.metadata_field == DYNAMIC
            rows = self.client.query(
                self.collection,
                filter=f"exists {path} and ({path} == true or {path} == false)",
                output_fields=[c.key if dynamic else self.metadata_field],
            )
            found = {
                value_type(
                    row.get(c.key) if dynamic else (row.get(self.metadata_field) or {}).get(c.key)
                )
                for row in rows
            }
            self.booleans[c.key] = {t for t in found if t is not None}
        other = "number" if c.type == "boolean" else "boolean"
        if other in self.booleans[c.key]:
            raise ConfigError(
                f"index {index}: Milvus Lite cannot filter {c.key!r} with {c.op} on a "
                f"{c.type} exactly: the collection holds booleans and numbers under "
                f"{c.key!r}, and Milvus Lite compares true equal to 1 (search a Milvus server, "
                "or the same vectors in scratch mode)"
            )

    def _params(self, limit: int) -> dict[str, Any]:
        """``search:`` as Milvus' search params, ``ef`` raised to the rows fetched (a server
        refuses an ef below them; Milvus Lite's faiss raises it alike)."""
        params = dict(self.settings.search)
        if isinstance(params.get("ef"), int) and not isinstance(params["ef"], bool):
            params["ef"] = max(int(params["ef"]), limit)
        return params

    def search(self, vectors: np.ndarray, limit: int, where: Any | None) -> list[list[Hit]]:
        got = self.client.search(
            collection_name=self.collection,
            data=np.asarray(vectors, dtype=np.float32).tolist(),
            anns_field=self.vector_field,
            limit=int(limit),
            filter=where or "",
            output_fields=[self.id_field],
            search_params={"params": self._params(int(limit))},
        )
        return [
            [(hit["entity"].get(self.id_field), float(hit["distance"])) for hit in hits]
            for hits in got
        ]


class MilvusDriver:
    """The ``milvus`` driver."""

    name = "milvus"
    extra = EXTRA

    def check(self, settings: StoreIndexConfig, index: str) -> None:
        _library()
        where = f"indexes.{index}.search"
        known_keys(settings.search, SEARCH_KEYS, where, "milvus search setting")
        unknown = sorted(set(settings.build) - set(BUILD_KEYS))
        if unknown:
            raise ConfigError(
                f"indexes.{index}.build.{unknown[0]}: no milvus index setting "
                f"(one of {', '.join(BUILD_KEYS)})"
            )
        c = settings.connect
        if c.path is None and c.url is None and c.url_env is None and settings.mode == "existing":
            raise ConfigError(
                f"indexes.{index}.connect: an existing milvus collection needs connect.path "
                "(a Milvus Lite .db) or connect.url / connect.url_env (a server)"
            )
        if c.url is None and c.url_env is None:
            if settings.mode == "existing" and not str(c.path).endswith(".db"):
                raise ConfigError(
                    f"indexes.{index}.connect.path: Milvus Lite's path ends in .db "
                    f"(got {Path(str(c.path)).name!r})"
                )
            _lite(index)
        if settings.metadata_field is not None and not settings.metadata_field:
            raise ConfigError(f"indexes.{index}.metadata_field: the name of a JSON field or $meta")

    def check_store(self, settings: StoreIndexConfig, index: str) -> None:
        c = settings.connect
        local = c.url is None and c.url_env is None
        if settings.mode == "existing" and local and c.path is not None and not c.path.exists():
            raise ConfigError(f"indexes.{index}.connect.path: no Milvus Lite database at {c.path}")

    def check_filter(self, f: Filter, index: str) -> None:
        """Every operator of core/filters.py is expressible (the module docstring says how; on an
        existing Milvus Lite collection a key holding booleans and numbers is refused when the
        session translates the filter)."""
        if isinstance(f, Logical):
            for p in f.parts:
                self.check_filter(p, index)

    def similarity(self, metric: str, raw: np.ndarray) -> np.ndarray:
        return -raw if metric == "l2" else raw

    @contextlib.contextmanager
    def open(
        self,
        settings: StoreIndexConfig,
        index: str,
        scratch: ScratchRows | None,
        tick: Callable[[int], None],
    ) -> Iterator[MilvusSession]:
        _library()
        if scratch is None:
            path = settings.connect.path
            if _url(settings, index) is None and path is not None and not Path(path).exists():
                raise ConfigError(
                    f"indexes.{index}.connect.path: no Milvus Lite database at {path}"
                )
            client = _client(settings, index, None)
            try:
                yield _existing(client, settings, index)
            finally:
                with contextlib.suppress(Exception):
                    client.close()
            return
        name = f"{SCRATCH_PREFIX}{os.getpid()}_{secrets.token_hex(4)}"
        swept = _sweep(settings, index) if local(settings) else 0
        lite, made, removed = _scratch_lite(settings, index, name)
        swept += removed
        client = _client(settings, index, lite)
        try:
            if lite is None and local(settings):  # connect.path is the Milvus Lite .db
                swept += sweep(client.list_collections(), client.drop_collection)
            types = _load(client, name, scratch, tick)
            _build(client, name, settings, index, wait=_url(settings, index) is not None)
            session = MilvusSession(client, name, settings, ("id", "vector", "metadata"), types)
            session.swept = swept
            yield session
        finally:
            with contextlib.suppress(Exception):
                client.drop_collection(name)
            with contextlib.suppress(Exception):
                client.close()
            if made is not None:
                _release_lite(lite)
                shutil.rmtree(made, ignore_errors=True)


def _scratch_lite(
    settings: StoreIndexConfig, index: str, name: str
) -> tuple[Path | None, Path | None, int]:
    """Where a scratch collection goes when not on a server: (the Milvus Lite database, what
    to remove after). ``connect.path`` ending in .db: that database (the collection alone is
    dropped); another ``connect.path``: a directory, holding ``<name>.db`` while the session
    lasts; neither: a temporary directory (common.py's ``scratch_dir``: the count is of the
    temporary directories of dead processes removed)."""
    path = settings.connect.path
    if _url(settings, index) is not None:
        return None, None, 0
    if path is not None and str(path).endswith(".db"):
        return None, None, 0
    if path is None:
        made, removed = scratch_dir("milvus")
        return made / f"{name}.db", made, removed
    Path(path).mkdir(parents=True, exist_ok=True)
    return Path(path) / f"{name}.db", Path(path) / f"{name}.db", 0


def _sweep(settings: StoreIndexConfig, index: str) -> int:
    """The scratch databases (``<name>.db``) of killed runs in the directory ``connect.path``
    removed (common.py's ``sweep``); none when it is a ``.db`` itself."""
    path = Path(str(settings.connect.path))
    if str(path).endswith(".db") or not path.is_dir():
        return 0

    def drop(name: str) -> None:
        _release_lite(path / name)
        shutil.rmtree(path / name)

    return sweep((p.name for p in path.glob(f"{SCRATCH_PREFIX}*.db")), drop)


def _url(settings: StoreIndexConfig, index: str) -> str | None:
    c = settings.connect
    if c.url_env is None:
        return c.url
    url = os.environ.get(c.url_env)
    if not url:
        raise ConfigError(
            f"indexes.{index}.connect.url_env: the environment variable {c.url_env} is not set"
        )
    return url


def _client(settings: StoreIndexConfig, index: str, lite: Path | None) -> Any:
    """A client: on the server the settings name, else on Milvus Lite at ``connect.path``
    (``lite``: a temporary one)."""
    pymilvus = _library()
    url = None if lite is not None else _url(settings, index)
    if url is None:
        _lite(index)
        return pymilvus.MilvusClient(uri=str(lite or settings.connect.path))
    token = ""
    env = settings.connect.token_env
    if env is not None:
        token = os.environ.get(env, "")
        if not token:
            raise ConfigError(
                f"indexes.{index}.connect.token_env: the environment variable {env} is not set"
            )
    return pymilvus.MilvusClient(uri=url, token=token)


def _release_lite(path: Path | None) -> None:
    """Stop the in-process Milvus Lite server of a temporary ``.db`` (it would hold it open)."""
    with contextlib.suppress(Exception):
        from milvus_lite.server_manager import server_manager_instance

        server_manager_instance.release_server(str(path))


def _existing(client: Any, settings: StoreIndexConfig, index: str) -> MilvusSession:
    """The configured collection, its fields checked against the settings, loaded."""
    name = str(settings.collection)
    if not client.has_collection(name):
        raise ConfigError(f"indexes.{index}.collection: no milvus collection {name!r}")
    schema = client.describe_collection(name)
    fields = {f["name"]: f for f in schema.get("fields", [])}
    for key in ("id_field", "vector_field"):
        if getattr(settings, key) not in fields:
            raise ConfigError(
                f"indexes.{index}.{key}: collection {name!r} has no field "
                f"{getattr(settings, key)!r} (its fields: {', '.join(map(repr, sorted(fields)))})"
            )
    types = _library().DataType
    vector = fields[settings.vector_field].get("type")
    if vector != types.FLOAT_VECTOR:
        raise ConfigError(
            f"indexes.{index}.vector_field: {settings.vector_field!r} is "
            f"{getattr(vector, 'name', vector)}, not FLOAT_VECTOR"
        )
    kind = fields[settings.id_field].get("type")
    if kind not in (types.VARCHAR, types.INT64):
        raise ConfigError(
            f"indexes.{index}.id_field: {settings.id_field!r} is "
            f"{getattr(kind, 'name', kind)}, not VARCHAR or INT64"
        )
    metadata = settings.metadata_field or "metadata"
    if metadata == DYNAMIC:
        found = bool(schema.get("enable_dynamic_field"))
    else:
        found = fields.get(metadata, {}).get("type") == types.JSON
    _check_metric(client, name, settings, index)
    client.load_collection(name)
    session = MilvusSession(
        client, name, settings, (settings.id_field, settings.vector_field, metadata), None
    )
    if _url(settings, index) is None:
        session.lite_index = index
    if not found:
        session.missing = (
            f"indexes.{index}.metadata_field: collection {name!r} has "
            + ("no dynamic fields" if metadata == DYNAMIC else f"no JSON field {metadata!r}")
            + " to filter on"
        )
    return session


def _check_metric(client: Any, name: str, settings: StoreIndexConfig, index: str) -> None:
    """ConfigError at ``metric`` when the vector field's index measures another metric (IP
    read as COSINE, or the reverse, keeps its direction: the score-direction check would not
    see it)."""
    for found in client.list_indexes(name, field_name=settings.vector_field):
        built = str(client.describe_index(name, found).get("metric_type") or "").upper()
        if built and built != _METRIC[settings.metric]:
            named = {v: k for k, v in _METRIC.items()}.get(built)
            raise ConfigError(
                f"indexes.{index}.metric: collection {name!r} is indexed for {built}"
                + (f" (metric {named})" if named else "")
                + f", not {settings.metric}: set the metric it was built with"
            )


def _load(client: Any, name: str, rows: ScratchRows, tick: Callable[[int], None]) -> KeyTypes:
    """The scratch collection: ``id``, ``vector`` and (when queries filter) ``metadata``,
    inserted in batches; the types each metadata key holds."""
    pymilvus = _library()
    documents, types = scratch_metadata(rows.metadata) if rows.metadata else ([], {})
    dim = int(rows.vectors.shape[1])
    schema = pymilvus.MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
    longest = max((len(str(i).encode()) for i in rows.ids), default=1)
    schema.add_field("id", pymilvus.DataType.VARCHAR, max_length=max(1, longest), is_primary=True)
    schema.add_field("vector", pymilvus.DataType.FLOAT_VECTOR, dim=dim)
    schema.add_field("metadata", pymilvus.DataType.JSON)
    # strong consistency: a server's search sees every row inserted, as Milvus Lite's does
    client.create_collection(name, schema=schema, consistency_level="Strong")
    batch = max(1, min(10_000, LOAD_FLOATS // max(1, dim)))
    for start in range(0, len(rows.ids), batch):
        stop = min(start + batch, len(rows.ids))
        chunk = np.asarray(rows.vectors[start:stop], dtype=np.float32).tolist()
        client.insert(
            name,
            [
                {"id": str(rows.ids[i]), "vector": v, "metadata": documents[i] if documents else {}}
                for i, v in zip(range(start, stop), chunk, strict=True)
            ],
        )
        tick(stop - start)
    client.flush(name)  # sealed segments: the index is built over them
    return types


def _build(client: Any, name: str, settings: StoreIndexConfig, index: str, wait: bool) -> None:
    """The index ``build:`` describes (FLAT when empty), then the collection loaded; the
    store's refusal is a ConfigError at ``build``. ``wait``: for the server's build (Milvus
    Lite builds when loading, and cannot be waited on)."""
    pymilvus = _library()
    build = dict(settings.build)
    index_type = str(build.pop("index_type", "FLAT")).upper()
    params = client.prepare_index_params()
    # the parameters nested under "params": the form Milvus Lite reads (a server reads it too)
    params.add_index(
        field_name="vector",
        index_type=index_type,
        metric_type=_METRIC[settings.metric],
        params={"params": build} if build else None,
    )
    try:
        with _quiet():
            client.create_index(name, params, sync=wait)
            client.load_collection(name)
    except (pymilvus.MilvusException, ValueError, NotImplementedError) as e:
        raise ConfigError(
            f"indexes.{index}.build: milvus cannot build {index_type} with {build}: "
            f"{getattr(e, 'message', e)}"
        ) from None


DRIVER = MilvusDriver()
