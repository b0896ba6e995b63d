"""Postgres with pgvector as a store: driver ``pgvector`` (and ``type: pgvector``, which is this
driver under its own config, engines/retrievers/pgvector.py).

The DSN comes from the environment variable ``connect.dsn_env`` (``dsn_env`` for ``type:
pgvector``) and is never put in a parameter, a description or an error message: Postgres's
messages are shown with it, and its password, blanked out (``Redactor``). The database must have
the ``vector`` extension. Everything a session does happens in one transaction that is never
committed, rolled back when the session ends (after an error or Ctrl-C too).

- **scratch** mode: evalret's document vectors are copied (binary COPY, in batches) into an
  unlogged table named ``evalret_scratch_<pid>_<random>`` (``i int4``: the document's number,
  ``embedding vector(dim)``, and with filtered queries ``meta jsonb``: each document's
  metadata), and pgvector's HNSW index is built on it with ``build:`` ``{m, ef_construction}``
  (empty ``build:``: no index, an exact scan), without parallel workers. The table dies with the
  transaction: rolled back after a normal run, an error or Ctrl-C, and aborted by Postgres when
  the process is killed (the connection drops), so no other session ever sees it.
  ``sweep_scratch_tables`` removes committed leftovers with the prefix (none are made here; it
  is the cleanup step for older or foreign copies).
- **existing** mode: the table ``collection`` (``NAME`` or ``SCHEMA.NAME``) is read in a
  read-only transaction (``SET TRANSACTION READ ONLY``): ``id_field`` read as text,
  ``vector_field``, and for filtered queries the jsonb column ``metadata_field`` (default
  ``metadata``). A table, column or dimension that does not fit is a config error naming
  ``collection``; a vector column whose indexes all serve other metrics one naming ``metric``
  (``check_index_metric``).

A batch of queries is one statement: per query a LATERAL ``ORDER BY vector <op> query LIMIT n``
(``<#>`` for ``ip``, ``<=>`` for ``cosine``, ``<->`` for ``l2``), after ``SET LOCAL
hnsw.ef_search`` to ``search: {ef_search}`` (default 40) raised to the rows fetched (an HNSW scan
returns at most ``ef_search`` rows; pgvector's bound is 1000, the session's ``limit``) and
``enable_seqscan = off`` (the planner cannot answer a small table exactly instead of through the
index). pgvector returns distances; the similarity is ``-distance`` (ip, l2) or ``1 - distance``
(cosine) in float64. A row with a NULL vector never comes back.

Filters (``where_sql``) are compiled to a ``WHERE`` over the jsonb column with core/filters.py's
semantics: ``jsonb_typeof`` keeps ``$eq``, ``$in`` and the ranges to values of the operand's type
(never NULL: a missing key is false), ``$ne`` and ``$nin`` are their complements, so every
operator is expressed. As in any HNSW search with a ``WHERE``, the scan filters the ``ef_search``
candidates it finds, so a selective filter may leave a query short (counted).

``describe``: the pgvector version, the index the planner uses for the search (its access method,
operator class and options as Postgres stores them; its name in existing mode; ``flat`` when no
index is used), the row count and the rows whose vector or id is NULL. pgvector draws each node's
HNSW level at random, seeded per server process, so two builds of the same vectors may rank a few
documents differently.

psycopg and pgvector are imported inside the functions that use them (extra
``evalret[pgvector]``).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import quote

import numpy as np

from evalret.core.filters import Condition, Filter, Logical
from evalret.data.config import StoreIndexConfig, dsn_problem
from evalret.engines.stores.driver import Hit, ScratchRows
from evalret.errors import ConfigError, EvalretError, ExitCode

EXTRA = "evalret[pgvector]"
SCRATCH_PREFIX = "evalret_scratch_"
COPY_BATCH = 10_000
MAX_EF_SEARCH = 1000  # pgvector's bound on hnsw.ef_search
MAX_HNSW_DIM = 2000  # pgvector's bound on an HNSW index over the vector type
DEFAULT_EF_SEARCH = 40  # pgvector's default hnsw.ef_search
# pgvector's own bounds (hnsw.c) on the settings, and what the driver takes
BOUNDS = {"m": (2, 100), "ef_construction": (4, 1000), "ef_search": (1, MAX_EF_SEARCH)}
BUILD_KEYS = ("m", "ef_construction")
SEARCH_KEYS = ("ef_search",)
# distance operator and operator class per metric; similarity = SCALE * distance + OFFSET
OPERATORS = {
    "ip": ("<#>", "vector_ip_ops"),
    "cosine": ("<=>", "vector_cosine_ops"),
    "l2": ("<->", "vector_l2_ops"),
}
_SCALE_OFFSET = {"ip": (-1.0, 0.0), "cosine": (-1.0, 1.0), "l2": (-1.0, 0.0)}


class PgvectorError(EvalretError):
    """Postgres refused or failed (connection, permission, a statement): exit 3. The message
    never holds the DSN."""

    exit_code = ExitCode.INTERNAL


@dataclass(frozen=True)
class Keys:
    """How messages name the settings: ``type: store``'s keys, or ``type: pgvector``'s."""

    dsn_env: str = "connect.dsn_env"
    collection: str = "collection"
    what: str = "driver pgvector"


STORE_KEYS = Keys()


def libraries(keys: Keys = STORE_KEYS) -> tuple[Any, Any]:
    """(psycopg, pgvector.psycopg.register_vector); ConfigError naming the extra when absent."""
    try:
        import psycopg
        from pgvector.psycopg import register_vector
    except ImportError as e:
        missing = e.name or "psycopg or pgvector"
        raise ConfigError(
            f"{keys.what} needs psycopg 3 and pgvector ({missing} is not installed): "
            f"pip install '{EXTRA}'"
        ) from None
    return psycopg, register_vector


class Redactor:
    """Blanks the DSN and its password out of any text shown to the user."""

    def __init__(self, dsn: str) -> None:
        self.secrets = [dsn]
        with contextlib.suppress(Exception):  # an unparsable DSN: only the whole text is blanked
            from psycopg.conninfo import conninfo_to_dict

            password = conninfo_to_dict(dsn).get("password")
            if password:
                self.secrets += [str(password), quote(str(password), safe="")]
        self.secrets.sort(key=len, reverse=True)

    def clean(self, text: str) -> str:
        """``text`` with every secret replaced by ``***``."""
        for secret in self.secrets:
            if secret:
                text = text.replace(secret, "***")
        return text


def _connect(env: str, index: str, keys: Keys) -> tuple[Any, Redactor]:
    """A connection (not autocommit) to the Postgres the environment variable ``env`` names, and
    the redactor for its DSN; ConfigError when the variable is unset or holds no usable DSN."""
    psycopg, _ = libraries(keys)
    dsn = os.environ.get(env, "")
    if not dsn.strip():
        raise ConfigError(
            f"indexes.{index}.{keys.dsn_env}: the environment variable {env} is not set "
            "(it must hold the DSN of the Postgres to search)"
        )
    redactor = Redactor(dsn)
    problem = dsn_problem(dsn)  # checked when the config is loaded too: bad input, exit 2
    if problem:
        raise ConfigError(
            f"indexes.{index}.{keys.dsn_env}: the environment variable {env} holds no "
            f"usable connection string (not shown): {problem}"
        )
    try:
        conn = psycopg.connect(dsn, application_name="evalret", autocommit=False)
    except psycopg.Error as e:
        raise PgvectorError(
            f"index {index}: the Postgres named by ${env}: cannot connect: "
            f"{redactor.clean(str(e)).strip()}"
        ) from None
    return conn, redactor


@contextlib.contextmanager
def connection(
    env: str, index: str, *, read_only: bool, table: str | None = None, keys: Keys = STORE_KEYS
) -> Iterator[Any]:
    """A connection with the vector type registered, inside one transaction that is always
    rolled back at the end (after an error or Ctrl-C too), then closed. ``read_only``: the
    transaction's first statement is ``SET TRANSACTION READ ONLY``, and a missing table or
    column, or a vector of another dimension, is a ConfigError naming ``table``. Other Postgres
    errors become PgvectorError; the DSN is blanked out of every message."""
    psycopg, register_vector = libraries(keys)
    conn, redactor = _connect(env, index, keys)
    try:
        if read_only:
            conn.execute("SET TRANSACTION READ ONLY")
        if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone() is None:
            raise PgvectorError(
                f"index {index}: the database has no vector extension (CREATE EXTENSION vector)"
            )
        register_vector(conn)
        yield conn
    except psycopg.Error as e:
        message = redactor.clean(str(e)).strip()
        wrong = (psycopg.errors.UndefinedTable, psycopg.errors.UndefinedColumn)
        if read_only and isinstance(e, (*wrong, psycopg.errors.DataException)):
            # the configured table, its columns or their dimensions do not fit: bad input
            raise ConfigError(f"indexes.{index}.{keys.collection} {table!r}: {message}") from None
        raise PgvectorError(f"index {index}: Postgres failed: {message}") from None
    finally:
        with contextlib.suppress(Exception):  # a broken connection: the server aborts it anyway
            conn.rollback()
        conn.close()


def scratch_tables(conn: Any) -> list[str]:
    """The committed tables whose name starts with the scratch prefix, in any schema."""
    rows = conn.execute(
        "SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE c.relkind = 'r' AND starts_with(c.relname, %s) ORDER BY 1, 2",
        (SCRATCH_PREFIX,),
    ).fetchall()
    return [f"{schema}.{table}" for schema, table in rows]


def sweep_scratch_tables(conn: Any) -> list[str]:
    """Drop every committed scratch table (the cleanup step) and return their names.

    This driver never commits one, so there is nothing to sweep after its own runs, killed or
    not; the sweep is for copies left by something else using the prefix."""
    from psycopg import sql

    found = scratch_tables(conn)
    for qualified in found:
        schema, table = qualified.split(".", 1)
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(schema, table)))
    return found


def load_scratch(
    conn: Any,
    vectors: np.ndarray,
    tick: Callable[[int], None],
    metadata: Sequence[Mapping[str, Any] | None] = (),
) -> Any:
    """Create the scratch table, COPY the vectors in (binary, in batches, ``tick`` per batch)
    and, with ``metadata`` (one entry per vector), each document's metadata in a ``meta`` jsonb
    column; returns the table's identifier."""
    from psycopg import sql
    from psycopg.types.json import Jsonb

    table = sql.Identifier(f"{SCRATCH_PREFIX}{os.getpid()}_{secrets.token_hex(4)}")
    dim = sql.SQL(str(int(vectors.shape[1])))
    meta = sql.SQL(", meta jsonb NOT NULL" if metadata else "")
    conn.execute(
        sql.SQL(
            "CREATE UNLOGGED TABLE {} (i int4 NOT NULL, embedding vector({}) NOT NULL{})"
        ).format(table, dim, meta)
    )
    columns = sql.SQL("i, embedding, meta" if metadata else "i, embedding")
    copy_sql = sql.SQL("COPY {} ({}) FROM STDIN WITH (FORMAT BINARY)").format(table, columns)
    with conn.cursor() as cur:
        for start in range(0, len(vectors), COPY_BATCH):
            chunk = np.ascontiguousarray(vectors[start : start + COPY_BATCH], dtype=np.float32)
            with cur.copy(copy_sql) as copy:
                if metadata:
                    copy.set_types(["int4", "vector", "jsonb"])
                    for i, vector in enumerate(chunk, start):
                        copy.write_row((i, vector, Jsonb(metadata[i] or {})))
                else:
                    copy.set_types(["int4", "vector"])
                    for i, vector in enumerate(chunk, start):
                        copy.write_row((i, vector))
            tick(len(chunk))
    return table


def build_hnsw(conn: Any, table: Any, metric: str, m: int, ef_construction: int) -> None:
    """pgvector's HNSW index on the scratch table, built without parallel workers."""
    from psycopg import sql

    conn.execute("SET LOCAL max_parallel_maintenance_workers = 0")
    conn.execute(
        sql.SQL(
            "CREATE INDEX ON {} USING hnsw (embedding {}) WITH (m = {}, ef_construction = {})"
        ).format(
            table,
            sql.SQL(OPERATORS[metric][1]),
            sql.SQL(str(int(m))),
            sql.SQL(str(int(ef_construction))),
        )
    )


_JSON_TYPE = {"string": "string", "number": "number", "boolean": "boolean"}
_COMPARE = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}


def _condition_sql(c: Condition, column: Any) -> Any:
    """One condition over the jsonb ``column``, true or false (never NULL), as core/filters.py
    reads it: ``$eq``, ``$in`` and the ranges hold only for a row whose metadata has the key with
    a value of the operand's type; ``$ne`` and ``$nin`` are their complements."""
    from psycopg import sql

    value = sql.SQL("({} -> {})").format(column, sql.Literal(c.key))
    typed = sql.SQL("jsonb_typeof({}) = {}").format(value, sql.Literal(_JSON_TYPE[c.type]))
    if c.op in _COMPARE:
        test = sql.SQL("{}::numeric {} {}").format(
            value, sql.SQL(_COMPARE[c.op]), sql.Literal(str(c.value))
        )
    else:
        items = c.value if isinstance(c.value, tuple) else (c.value,)
        array = sql.SQL("ARRAY[{}]::jsonb[]").format(
            sql.SQL(", ").join(sql.Literal(json.dumps(v)) for v in items)
        )
        test = sql.SQL("{} = ANY({})").format(value, array)
    held = sql.SQL("(CASE WHEN {} THEN coalesce({}, false) ELSE false END)").format(typed, test)
    return sql.SQL("(NOT {})").format(held) if c.op in ("$ne", "$nin") else held


def where_sql(f: Filter, column: Any) -> Any:
    """The filter as a SQL condition over the jsonb metadata ``column`` (psycopg.sql, every
    value a quoted literal)."""
    from psycopg import sql

    if isinstance(f, Logical):
        joiner = sql.SQL(" AND " if f.op == "$and" else " OR ")
        return sql.SQL("({})").format(joiner.join(where_sql(p, column) for p in f.parts))
    return _condition_sql(f, column)


@dataclass(frozen=True)
class Source:
    """What a search reads: the relation, the id expression, the vector column, the metric."""

    relation: Any  # psycopg.sql.Composable
    id_expr: Any
    vector: Any
    metric: str
    limit: int  # the most rows one query can get back
    where: Any = None  # psycopg.sql.Composable: the rows a filtered query may get (None: all)


def table_source(table: str, id_field: str, vector_field: str, metric: str) -> Source:
    """An existing table (``NAME`` or ``SCHEMA.NAME``), its id column read as text."""
    from psycopg import sql

    return Source(
        relation=sql.Identifier(*table.split(".")),
        id_expr=sql.SQL("{}::text").format(sql.Identifier(id_field)),
        vector=sql.Identifier(vector_field),
        metric=metric,
        limit=MAX_EF_SEARCH,
    )


def query_sql(source: Source) -> Any:
    """One batch's statement: per query (its number, its vector) the nearest ``limit`` rows."""
    from psycopg import sql

    op = sql.SQL(OPERATORS[source.metric][0])
    where = sql.SQL("") if source.where is None else sql.SQL(" WHERE {}").format(source.where)
    return sql.SQL(
        "SELECT q.n, d.id, d.dist FROM unnest(%s::int4[], %s::vector[]) AS q(n, v)"
        " CROSS JOIN LATERAL (SELECT {id} AS id, {vec} {op} q.v AS dist FROM {rel}{where}"
        " ORDER BY {vec} {op} q.v LIMIT %s) AS d"
    ).format(id=source.id_expr, vec=source.vector, op=op, rel=source.relation, where=where)


def plan_index(conn: Any, source: Source, query: np.ndarray) -> str | None:
    """The index the planner scans for one query of ``source`` (None: no index, an exact scan)."""
    from psycopg import sql

    statement = sql.SQL("EXPLAIN ") + query_sql(source)
    plan = conn.execute(statement, ([0], [query], 1)).fetchall()
    for (line,) in plan:
        match = re.search(r"Index Scan using (\S+) on", str(line))
        if match:
            return match.group(1)
    return None


def table_counts(conn: Any, source: Source) -> tuple[int, int, int]:
    """(rows, rows whose vector is NULL, rows whose id is NULL) of the whole table: one count."""
    from psycopg import sql

    statement = sql.SQL(
        "SELECT count(*), count(*) FILTER (WHERE {vec} IS NULL),"
        " count(*) FILTER (WHERE {id} IS NULL) FROM {rel}"
    ).format(vec=source.vector, id=source.id_expr, rel=source.relation)
    rows, null_vectors, null_ids = conn.execute(statement).fetchone()
    return int(rows), int(null_vectors), int(null_ids)


def index_of(conn: Any, source: Source, name: str) -> dict[str, Any]:
    """The index ``name`` of ``source``'s relation as Postgres stores it: access method,
    operator class, options (``WITH (...)``)."""
    relation = source.relation.as_string(conn)
    row = conn.execute(
        "SELECT am.amname, opc.opcname, coalesce(c.reloptions, '{}') FROM pg_index i"
        " JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am am ON am.oid = c.relam"
        " JOIN pg_opclass opc ON opc.oid = i.indclass[0]"
        " WHERE i.indrelid = %s::regclass AND c.relname = %s",
        (relation, name.strip('"')),
    ).fetchone()
    if row is None:
        return {}
    method, opclass, options = row
    return {
        "method": method,
        "opclass": opclass,
        "options": dict(o.split("=", 1) for o in options),
    }


def check_index_metric(conn: Any, table: str, column: str, metric: str, index: str) -> None:
    """ConfigError at ``metric`` when the column's pgvector indexes all serve other metrics: the
    planner could use none of them for the metric's operator and would scan the table exactly,
    so the index the table is deployed with would go unmeasured (a flat column is searched
    exactly, as it stands)."""
    from psycopg import sql

    wanted = OPERATORS[metric][1]
    relation = sql.Identifier(*table.split(".")).as_string(conn)
    found = conn.execute(
        "SELECT c.relname, opc.opcname FROM pg_index i"
        " JOIN pg_class c ON c.oid = i.indexrelid"
        " JOIN pg_opclass opc ON opc.oid = i.indclass[0]"
        " JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]"
        " WHERE i.indrelid = %s::regclass AND a.attname = %s AND opc.opcname LIKE 'vector%%ops'"
        " ORDER BY c.relname",
        (relation, column),
    ).fetchall()
    if found and all(opclass != wanted for _, opclass in found):
        name, opclass = found[0]
        raise ConfigError(
            f"indexes.{index}.metric: the index {name!r} of {table!r} serves {opclass}, not "
            f"{wanted} (metric {metric}): set the metric it was built with"
        )


class PgSession:
    """One Postgres transaction searching one table (the scratch one, or an existing one)."""

    def __init__(
        self, conn: Any, source: Source, ef_search: int, ids: Sequence[str] | None, meta: Any
    ) -> None:
        self.conn = conn
        self.source = source
        self.ef_search = ef_search
        self.ids = ids  # scratch mode: document number -> id (None: the table's ids as text)
        self.meta = meta  # the jsonb column filtered queries read
        self.limit = source.limit

    def describe(self) -> dict[str, Any]:
        conn, source = self.conn, self.source
        version = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        rows, null_vectors, null_ids = table_counts(conn, source)
        from psycopg import sql

        probe = conn.execute(
            sql.SQL("SELECT {vec} FROM {rel} WHERE {vec} IS NOT NULL LIMIT 1").format(
                vec=source.vector, rel=source.relation
            )
        ).fetchone()
        name = None if probe is None else plan_index(conn, source, probe[0])
        index: Any = "flat"
        if name is not None:
            index = index_of(conn, source, name)
            if self.ids is None:  # the scratch table's index name is random: left out
                index = {"name": name, **index}
        return {
            "version": version.fetchone()[0],
            "index": index,
            "rows": rows,
            "rows_null_vector": null_vectors,
            "rows_null_id": null_ids,
        }

    def where(self, f: Filter) -> Any:
        return where_sql(f, self.meta)

    def search(self, vectors: np.ndarray, limit: int, where: Any | None) -> list[list[Hit]]:
        """The nearest ``limit`` rows per query, nearest first (stable: the scan's order among
        equal distances), with the scan's ef_search at least ``limit``."""
        from psycopg import sql

        ef_scan = min(MAX_EF_SEARCH, max(self.ef_search, limit))
        self.conn.execute(
            sql.SQL("SET LOCAL hnsw.ef_search = {}").format(sql.SQL(str(int(ef_scan))))
        )
        statement = query_sql(replace(self.source, where=where))
        numbers = list(range(len(vectors)))
        records = self.conn.execute(statement, (numbers, list(vectors), int(limit))).fetchall()
        got: list[list[Hit]] = [[] for _ in numbers]
        for n, found, dist in records:
            if dist is not None:
                stored = found if self.ids is None else self.ids[int(found)]
                got[n].append((stored, float(dist)))
        for hits in got:
            hits.sort(key=lambda hit: hit[1])
        return got


def _int_setting(
    values: Mapping[str, Any], key: str, index: str, where: str, default: int | None = None
) -> int:
    """``values[key]`` as an int within pgvector's bounds; ConfigError naming it otherwise."""
    value = values.get(key, default)
    low, high = BOUNDS[key]
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(
            f"indexes.{index}.{where}.{key}: an integer from {low} to {high} (pgvector's bounds), "
            f"not {value!r}"
        )
    return value


class PgvectorDriver:
    """The ``pgvector`` driver; ``keys`` names the settings in its messages."""

    name = "pgvector"
    extra = EXTRA

    def __init__(self, keys: Keys = STORE_KEYS) -> None:
        self.keys = keys

    def check(self, settings: StoreIndexConfig, index: str) -> None:
        libraries(self.keys)
        for where, allowed, given in (
            ("search", SEARCH_KEYS, settings.search),
            ("build", BUILD_KEYS, settings.build),
        ):
            unknown = sorted(set(given) - set(allowed))
            if unknown:
                raise ConfigError(
                    f"indexes.{index}.{where}: {unknown[0]!r} is no pgvector {where} setting "
                    f"(one of {', '.join(allowed)})"
                )
        _int_setting(settings.search, "ef_search", index, "search", DEFAULT_EF_SEARCH)
        if settings.build:
            m = _int_setting(settings.build, "m", index, "build", 16)
            ef_construction = _int_setting(settings.build, "ef_construction", index, "build", 64)
            if ef_construction < 2 * m:
                raise ConfigError(
                    f"indexes.{index}.build.ef_construction: at least 2 * m (pgvector refuses less)"
                )
        if settings.collection is not None and len(settings.collection.split(".")) > 2:
            raise ConfigError(f"indexes.{index}.collection: a table name, NAME or SCHEMA.NAME")

    def check_store(self, settings: StoreIndexConfig, index: str) -> None:
        """Nothing to look at before the search: the DSN is checked with the config."""

    def check_filter(self, f: Filter, index: str) -> None:
        """Every filter of core/filters.py is expressed over jsonb: nothing to refuse."""

    def similarity(self, metric: str, raw: np.ndarray) -> np.ndarray:
        scale, offset = _SCALE_OFFSET[metric]
        return scale * raw + offset

    @contextlib.contextmanager
    def open(
        self,
        settings: StoreIndexConfig,
        index: str,
        scratch: ScratchRows | None,
        tick: Callable[[int], None],
    ) -> Iterator[PgSession]:
        build = dict(settings.build)
        if scratch is not None and build and scratch.vectors.shape[1] > MAX_HNSW_DIM:
            raise ConfigError(
                f"indexes.{index}: pgvector's HNSW index takes at most {MAX_HNSW_DIM} "
                f"dimensions, the vectors have {scratch.vectors.shape[1]} (set model.truncate_dim)"
            )
        env = str(settings.connect.dsn_env)
        ef_search = int(settings.search.get("ef_search", DEFAULT_EF_SEARCH))
        read_only = scratch is None
        with connection(
            env, index, read_only=read_only, table=settings.collection, keys=self.keys
        ) as conn:
            from psycopg import sql

            if scratch is None:
                conn.execute("SET LOCAL enable_seqscan = off")
                assert settings.collection is not None
                check_index_metric(
                    conn, settings.collection, settings.vector_field, settings.metric, index
                )
                source = table_source(
                    settings.collection, settings.id_field, settings.vector_field, settings.metric
                )
                meta = sql.Identifier(settings.metadata_field or "metadata")
                yield PgSession(conn, source, ef_search, None, meta)
                return
            table = load_scratch(conn, scratch.vectors, tick, scratch.metadata)
            if build:
                m, ef_construction = int(build.get("m", 16)), int(build.get("ef_construction", 64))
                build_hnsw(conn, table, settings.metric, m, ef_construction)
            conn.execute("SET LOCAL enable_seqscan = off")
            source = Source(
                relation=table,
                id_expr=sql.Identifier("i"),
                vector=sql.Identifier("embedding"),
                metric=settings.metric,
                limit=min(MAX_EF_SEARCH, len(scratch.vectors)),
            )
            yield PgSession(conn, source, ef_search, scratch.ids, sql.Identifier("meta"))


DRIVER = PgvectorDriver()
