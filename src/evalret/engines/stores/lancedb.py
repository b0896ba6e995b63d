"""LanceDB (embedded, a directory of Lance tables) as a store: driver ``lancedb``.

Rows are searched with LanceDB's query builder, all queries of a batch in one call (its
``query_index`` column tells them apart); ``_distance`` is ``1 - dot`` for ``ip``, ``1 - cos``
for ``cosine`` and the squared L2 for ``l2``. Search settings (``search:``) are the query
builder's: ``nprobes``, ``refine_factor``, ``ef``, ``minimum_nprobes``, ``maximum_nprobes``,
``bypass_vector_index``. Filters run before the vector search (``prefilter``).

Metadata lives in top-level columns: scratch mode makes one per key (strings, float64 numbers,
booleans), and one per key and type, named ``__<type>__<key>``, for a key holding values of
several types. A filter is compiled to SQL over them with core/filters.py's semantics, against
LanceDB's NULL logic and column types: a condition on a key the table has no column of the
operand's type for is false for ``$eq``, ``$in`` and ranges and true for ``$ne``/``$nin``;
a NULL (a missing key) fails ``$eq`` and passes ``$ne`` (``col IS NULL OR col <> v``: SQL's
``col <> v`` alone is NULL there, and the row would be dropped). Every condition is two-valued,
so ``NOT``/``OR`` compose as they do in core/filters.py.

Scratch mode writes the table into ``connect.path`` (a temporary directory without one) under a
name ``evalret_scratch_<pid>_<random>``, builds the index ``build:`` describes
(``{index_type: IVF_PQ, num_partitions: 16, num_sub_vectors: 8}``; empty: none, a flat scan),
and drops it (and the temporary directory) when the session ends. ``build:`` takes
``index_type`` (``INDEX_TYPES``: IVF_PQ by default) and that index config's own parameters
(``num_partitions``, ``num_sub_vectors``, ``m``, ``ef_construction``, ...), checked with the
rest of the config.
"""

from __future__ import annotations

import contextlib
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
    key_types,
    known_keys,
    local,
    local_store,
    package,
    refuse_keys,
    scratch_dir,
    sweep,
    typed_key,
)
from evalret.engines.stores.driver import Hit, ScratchRows
from evalret.errors import ConfigError

EXTRA = "evalret[lancedb]"
SCRATCH_PREFIX = "evalret_scratch_"
SCRATCH_ID, SCRATCH_VECTOR = "id", "vector"  # scratch mode's own columns
LOAD_BATCH = 10_000
SEARCH_KEYS = (
    "nprobes",
    "refine_factor",
    "ef",
    "minimum_nprobes",
    "maximum_nprobes",
    "bypass_vector_index",
)
_DISTANCE = {"ip": "dot", "cosine": "cosine", "l2": "l2"}
_COMPARE = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}


def _library() -> Any:
    return package("lancedb", "lancedb", EXTRA)


def _identifier(key: str) -> str:
    return f"`{key}`"


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return repr(float(value))


def _kind(arrow_type: Any) -> str | None:
    """The filter type a column holds: string, number or boolean (None: none of them)."""
    import pyarrow as pa

    if pa.types.is_boolean(arrow_type):
        return "boolean"
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return "string"
    if pa.types.is_integer(arrow_type) or pa.types.is_floating(arrow_type):
        return "number"
    return None


Columns = Mapping[tuple[str, str], str]  # (metadata key, filter type) -> its column


def condition_sql(c: Condition, columns: Columns) -> str:
    """One condition, two-valued, over the columns ``columns`` names."""
    negated = c.op in ("$ne", "$nin")
    name = columns.get((c.key, c.type))
    if name is None:  # no column of the operand's type: never equal
        return "TRUE" if negated else "FALSE"
    col = _identifier(name)
    if c.op in _COMPARE:
        return f"({col} IS NOT NULL AND {col} {_COMPARE[c.op]} {_literal(c.value)})"
    items = c.value if isinstance(c.value, tuple) else (c.value,)
    values = ", ".join(_literal(v) for v in items)
    if negated:
        return f"({col} IS NULL OR {col} NOT IN ({values}))"
    return f"({col} IS NOT NULL AND {col} IN ({values}))"


def where_sql(f: Filter, columns: Columns) -> str:
    """The filter as LanceDB SQL over top-level columns (core/filters.py's semantics)."""
    if isinstance(f, Logical):
        joiner = " AND " if f.op == "$and" else " OR "
        return "(" + joiner.join(where_sql(p, columns) for p in f.parts) + ")"
    return condition_sql(f, columns)


def _metadata_columns(metadata: Sequence[Mapping[str, Any] | None]) -> dict[str, Any]:
    """One arrow column per metadata key and type (NULL where a document has no such value):
    the key's name when it holds one type, ``typed_key`` names for each type otherwise, and for
    a key that is the name of a column of scratch mode's own or starts with ``_`` (LanceDB's
    ``_distance``, ``_rowid``...)."""
    import pyarrow as pa

    arrow = {"string": pa.string(), "number": pa.float64(), "boolean": pa.bool_()}
    out = {}
    for key, found in key_types(metadata).items():
        plain = len(found) == 1 and key not in (SCRATCH_ID, SCRATCH_VECTOR)
        for kind in sorted(found):
            values = [_typed_value((row or {}).get(key), kind) for row in metadata]
            name = key if plain and not key.startswith("_") else typed_key(key, kind)
            out[name] = pa.array(values, type=arrow[kind])
    return out


def _typed_value(value: Any, kind: str) -> Any:
    """``value`` when it is of the filter type ``kind`` (numbers as floats), else None."""
    if value_type(value) != kind:
        return None
    return float(value) if kind == "number" else value


def _schema_columns(schema: Any, own: tuple[str, ...] = ()) -> dict[tuple[str, str], str]:
    """(key, type) -> column, from a table's schema: each column of a filterable type under its
    name, and scratch mode's typed columns under their key; ``own``: columns that hold no
    metadata (scratch mode's id and vector)."""
    out: dict[tuple[str, str], str] = {}
    for f in schema:
        if f.name in own:
            continue
        kind = _kind(f.type)
        if kind is None:
            continue
        prefix = f"__{kind}__"
        out[(f.name[len(prefix) :] if f.name.startswith(prefix) else f.name, kind)] = f.name
    return out


INDEX_TYPES = {
    "IVF_FLAT": "IvfFlat",
    "IVF_SQ": "IvfSq",
    "IVF_PQ": "IvfPq",
    "IVF_RQ": "IvfRq",
    "IVF_HNSW_FLAT": "IvfHnswFlat",
    "IVF_HNSW_SQ": "IvfHnswSq",
    "IVF_HNSW_PQ": "IvfHnswPq",
}


def index_config(settings: StoreIndexConfig, index: str) -> Any:
    """``build:`` as LanceDB's index config (``index_type`` one of ``INDEX_TYPES``, the other
    keys its parameters); ConfigError at ``indexes.<index>.build`` when LanceDB refuses them."""
    import lancedb.index

    build = dict(settings.build)
    kind = build.pop("index_type", "IVF_PQ")
    where = f"indexes.{index}.build"
    if kind not in INDEX_TYPES:
        raise ConfigError(f"{where}.index_type: one of {', '.join(INDEX_TYPES)}, not {kind!r}")
    try:
        return getattr(lancedb.index, INDEX_TYPES[str(kind)])(
            distance_type=_DISTANCE[settings.metric], **build
        )
    except TypeError as e:
        raise ConfigError(f"{where}: LanceDB's {kind} does not take these settings: {e}") from None


class LanceSession:
    """One LanceDB table, searched."""

    swept = 0  # scratch leftovers of killed runs dropped on opening (common.py)

    def __init__(
        self, table: Any, settings: StoreIndexConfig, id_field: str, vector: str, scratch: bool
    ) -> None:
        self.table = table
        self.settings = settings
        self.id_field = id_field
        self.vector = vector
        self.limit = max(1, int(table.count_rows()))
        self.columns = _schema_columns(table.schema, (id_field, vector) if scratch else ())

    def describe(self) -> dict[str, Any]:
        lancedb = _library()
        indices = [
            {"name": i.name, "index_type": str(i.index_type), "columns": list(i.columns)}
            for i in self.table.list_indices()
        ]
        return {
            "version": lancedb.__version__,
            "index": indices or "flat",
            "rows": int(self.table.count_rows()),
        }

    def where(self, f: Filter) -> str:
        return where_sql(f, self.columns)

    def search(self, vectors: np.ndarray, limit: int, where: Any | None) -> list[list[Hit]]:
        query = (
            self.table.search(np.asarray(vectors, dtype=np.float32), vector_column_name=self.vector)
            .distance_type(_DISTANCE[self.settings.metric])
            .limit(int(limit))
            .select([self.id_field, "_distance"])
        )
        for key, value in self.settings.search.items():
            if key != "bypass_vector_index":
                query = getattr(query, key)(value)
            elif value:
                query = query.bypass_vector_index()
        if where is not None:
            query = query.where(where, prefilter=True)
        got = query.to_arrow().to_pydict()
        out: list[list[Hit]] = [[] for _ in range(len(vectors))]
        rows = got.get("query_index") or [0] * len(got[self.id_field])
        for n, found, dist in zip(rows, got[self.id_field], got["_distance"], strict=True):
            out[int(n)].append((found, float(dist)))
        return out


def _check_metric(table: Any, settings: StoreIndexConfig, index: str) -> None:
    """ConfigError at ``metric`` when the vector column's index measures another metric:
    LanceDB would search such a table by brute force (a warning on its log), and the index
    the report describes would read as exact. ``bypass_vector_index`` asks for that scan."""
    if settings.search.get("bypass_vector_index"):
        return
    for i in table.list_indices():
        built = str((getattr(i, "index_details", None) or {}).get("metric_type", ""))
        on_vector = settings.vector_field in list(i.columns)
        if on_vector and built and built.lower() != _DISTANCE[settings.metric]:
            named = {v: k for k, v in _DISTANCE.items()}.get(built.lower())
            raise ConfigError(
                f"indexes.{index}.metric: the index {i.name!r} of table "
                f"{settings.collection!r} measures {built}"
                + (f" (metric {named})" if named else "")
                + f", not {settings.metric}: set the metric it was built with"
            )


class LanceDriver:
    """The ``lancedb`` driver."""

    name = "lancedb"
    extra = EXTRA

    def check(self, settings: StoreIndexConfig, index: str) -> None:
        _library()
        where = f"indexes.{index}.search"
        known_keys(settings.search, SEARCH_KEYS, where, "lancedb search setting")
        if settings.build:
            index_config(settings, index)
        local_store(settings, index, look=False)  # the store itself: check_store
        if settings.metadata_field is not None:
            raise ConfigError(
                f"indexes.{index}.metadata_field: lancedb reads metadata from top-level "
                "columns (leave metadata_field out)"
            )

    def check_store(self, settings: StoreIndexConfig, index: str) -> None:
        local_store(settings, index)

    def check_filter(self, f: Filter, index: str) -> None:
        refuse_keys(
            f, index, "lancedb", lambda k: "a backtick in a column name" if "`" in k else None
        )

    def similarity(self, metric: str, raw: np.ndarray) -> np.ndarray:
        return -raw if metric == "l2" else 1.0 - raw

    @contextlib.contextmanager
    def open(
        self,
        settings: StoreIndexConfig,
        index: str,
        scratch: ScratchRows | None,
        tick: Callable[[int], None],
    ) -> Iterator[LanceSession]:
        lancedb = _library()
        if scratch is None:
            path = settings.connect.path or settings.connect.url
            db = lancedb.connect(str(path))
            try:
                table = db.open_table(settings.collection)
            except (FileNotFoundError, ValueError) as e:
                raise ConfigError(
                    f"indexes.{index}.collection: no table {settings.collection!r} in {path}: {e}"
                ) from None
            _check_metric(table, settings, index)
            yield LanceSession(table, settings, settings.id_field, settings.vector_field, False)
            return
        made, swept = (None, 0) if settings.connect.path else scratch_dir("lance")
        db = lancedb.connect(str(settings.connect.path or made))
        name = f"{SCRATCH_PREFIX}{os.getpid()}_{secrets.token_hex(4)}"
        swept += _sweep(db, settings) if local(settings) else 0
        try:
            table = _load(db, name, scratch, tick)
            if settings.build:
                table.create_index(SCRATCH_VECTOR, config=index_config(settings, index))
            session = LanceSession(table, settings, SCRATCH_ID, SCRATCH_VECTOR, True)
            session.swept = swept
            yield session
        finally:
            with contextlib.suppress(Exception):
                db.drop_table(name)
            if made is not None:
                shutil.rmtree(made, ignore_errors=True)


def _sweep(db: Any, settings: StoreIndexConfig) -> int:
    """The scratch tables of killed runs in ``connect.path`` dropped (common.py's ``sweep``): a
    table half written when its process died is removed as a directory."""
    path = Path(str(settings.connect.path))
    names = [p.name[: -len(".lance")] for p in path.glob(f"{SCRATCH_PREFIX}*.lance")]

    def drop(name: str) -> None:
        with contextlib.suppress(Exception):
            db.drop_table(name)
        shutil.rmtree(path / f"{name}.lance", ignore_errors=True)

    return sweep(names, drop)


def _load(db: Any, name: str, rows: ScratchRows, tick: Callable[[int], None]) -> Any:
    """The scratch table: ``id``, ``vector`` and one column per metadata key, in batches."""
    import pyarrow as pa

    meta = _metadata_columns(rows.metadata) if rows.metadata else {}
    table = None
    for start in range(0, len(rows.ids), LOAD_BATCH):
        stop = min(start + LOAD_BATCH, len(rows.ids))
        chunk = np.ascontiguousarray(rows.vectors[start:stop], dtype=np.float32)
        columns = {
            SCRATCH_ID: pa.array(list(rows.ids[start:stop]), type=pa.string()),
            SCRATCH_VECTOR: pa.FixedSizeListArray.from_arrays(
                pa.array(chunk.ravel()), chunk.shape[1]
            ),
            **{k: v.slice(start, stop - start) for k, v in meta.items()},
        }
        batch = pa.table(columns)
        if table is None:
            table = db.create_table(name, batch)
        else:
            table.add(batch)
        tick(stop - start)
    return table


DRIVER = LanceDriver()
