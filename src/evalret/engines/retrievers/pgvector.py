"""Approximate search in Postgres with pgvector's HNSW index, under evalret's tie rule.

Two modes (``PgvectorIndexConfig``):

- **scratch** (``table: null``): evalret's document vectors are copied (binary COPY, in batches)
  into an unlogged table named ``evalret_scratch_<pid>_<random>``, pgvector's HNSW index is built
  on it with the configured ``m`` and ``ef_construction``, every query is searched, and the table is
  dropped. All of it happens in one transaction that is never committed: the table is rolled back
  in a ``finally`` after a normal run, an error or Ctrl-C, and when the process is killed (SIGKILL,
  where no ``finally`` runs) Postgres aborts the open transaction as the connection drops, so the
  table never existed for anyone else. ``sweep_scratch_tables`` removes committed leftovers with
  the prefix (none are made by this module; it is the cleanup step for older or foreign copies).
- **table** (``table: NAME``): an existing table is queried in a read-only transaction
  (``SET TRANSACTION READ ONLY``); its ``id_column`` (read as text) is mapped onto the golden set's
  document ids. A table of chunks holds several rows per id: each document is ranked once, at its
  best row, and the fetch widens until ``depth`` distinct documents are in hand (up to pgvector's
  1000 rows a scan; a query left short is counted). What the search could not rank as stored is
  counted and becomes the index's params (``TABLE_COUNTS``, when nonzero), which the terminal and
  report.md show: rows with a NULL vector or a NULL id (one count over the whole table), ranks
  held by an id that is NULL or unknown to the corpus (skipped), rows folded into their document's
  best row, and short queries. A skipped or folded row is counted when it is strictly nearer than
  the ``depth``-th document, so the counts do not depend on the scan's order among ties.

Queries run in batches with ``SET LOCAL hnsw.ef_search`` and ``enable_seqscan = off`` (so the
planner cannot answer a small table exactly instead of through the index): one statement per batch,
a LATERAL ``ORDER BY vector <#> query LIMIT n`` per query. pgvector returns distances; scores are
``-distance`` (inner product) or ``1 - distance`` (cosine) in float64, and the tie rule (score
descending, then document id descending) is applied again to what came back. As with faiss, a few
rows past the depth are fetched and the fetch widens while a tie straddles the cut; the scan's
``hnsw.ef_search`` is raised to the fetch when it is smaller (an HNSW scan returns at most
``ef_search`` rows), up to pgvector's limit of 1000.

Filtered queries (``core/filters.py``): each filter is compiled to a ``WHERE`` over a jsonb
column of metadata (``where_sql``, with the semantics of ``core/filters.py``: ``jsonb_typeof``
keeps ``$eq``, ``$in`` and the ranges to values of the operand's type; ``$ne`` and ``$nin`` are
their complements), and
the queries of one filter are searched together. In scratch mode the scratch table gets a ``meta``
jsonb column holding each document's metadata; in table mode the table's ``metadata_column`` is
read. As in any pgvector HNSW search with a ``WHERE``, the scan filters the ``ef_search``
candidates it finds, so a selective filter may leave a query short (counted as ``queries_short``).

pgvector draws each node's HNSW level at random, seeded per server process, so two builds of the
same vectors may rank a few documents differently; the index is built without parallel workers to
remove thread timing from it. The DSN comes from the environment variable ``dsn_env`` and is never
put in a parameter, note or error message (Postgres's messages are shown with it blanked out).

psycopg and pgvector are imported inside the functions that use them (extra ``evalret[pgvector]``).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import secrets
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import quote

import numpy as np

from evalret.core.filters import Condition, Filter, Logical
from evalret.core.ranking import SearchResult, empty_result, top_candidates
from evalret.data.config import Config, PgvectorIndexConfig, dsn_problem
from evalret.engines.filtered import by_filter
from evalret.engines.retrievers.base import BaseRetriever, SearchJob
from evalret.errors import ConfigError, EvalretError, ExitCode

SCRATCH_PREFIX = "evalret_scratch_"
COPY_BATCH = 10_000
QUERY_BATCH = 256
TIE_MARGIN = 16
MAX_EF_SEARCH = 1000  # pgvector's bound on hnsw.ef_search
MAX_HNSW_DIM = 2000  # pgvector's bound on an HNSW index over the vector type
EXTRA = "evalret[pgvector]"
# distance operator and operator class per metric; score = SCALE * distance + OFFSET
OPERATORS = {"inner_product": ("<#>", "vector_ip_ops"), "cosine": ("<=>", "vector_cosine_ops")}
_SCORE = {"inner_product": (-1.0, 0.0), "cosine": (-1.0, 1.0)}


class PgvectorError(EvalretError):
    """Postgres refused or failed (connection, permission, a statement): exit 3. The message
    never holds the DSN."""

    exit_code = ExitCode.INTERNAL


def _libraries() -> tuple[Any, Any]:
    """(psycopg, pgvector.psycopg.register_vector); ConfigError naming the extra when absent."""
    try:
        import psycopg
        from pgvector.psycopg import register_vector
    except ImportError as e:
        missing = e.name or "psycopg or pgvector"
        raise ConfigError(
            f"index type pgvector needs psycopg 3 and pgvector ({missing} is not installed): "
            f"pip install '{EXTRA}'"
        ) from None
    return psycopg, register_vector


class _Redactor:
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


def _read_dsn(settings: PgvectorIndexConfig, name: str) -> str:
    """The DSN from the environment variable the config names; ConfigError when it is unset."""
    dsn = os.environ.get(settings.dsn_env, "")
    if not dsn.strip():
        raise ConfigError(
            f"indexes.{name}.dsn_env: the environment variable {settings.dsn_env} is not set "
            "(it must hold the DSN of the Postgres to search)"
        )
    return dsn


def _connect(settings: PgvectorIndexConfig, name: str) -> tuple[Any, _Redactor]:
    """A connection (not autocommit) to the Postgres the environment names, and the redactor
    for its DSN."""
    psycopg, _ = _libraries()
    dsn = _read_dsn(settings, name)
    redactor = _Redactor(dsn)
    where = f"index {name}: the Postgres named by ${settings.dsn_env}"
    problem = dsn_problem(dsn)  # checked when the config is loaded too: bad input, exit 2
    if problem:
        raise ConfigError(
            f"indexes.{name}.dsn_env: the environment variable {settings.dsn_env} holds no "
            f"usable connection string (not shown): {problem}"
        )
    try:
        conn = psycopg.connect(dsn, application_name="evalret", autocommit=False)
    except psycopg.Error as e:
        raise PgvectorError(f"{where}: cannot connect: {redactor.clean(str(e)).strip()}") from None
    return conn, redactor


@contextlib.contextmanager
def open_session(settings: PgvectorIndexConfig, name: str, *, read_only: bool) -> Iterator[Any]:
    """A connection with the vector type registered, inside one transaction that is always
    rolled back at the end (after an error or Ctrl-C too), then closed. ``read_only``: the
    transaction's first statement is ``SET TRANSACTION READ ONLY``. Postgres errors become
    PgvectorError with the DSN blanked out."""
    psycopg, register_vector = _libraries()
    conn, redactor = _connect(settings, name)
    try:
        if read_only:
            conn.execute("SET TRANSACTION READ ONLY")
        if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone() is None:
            raise PgvectorError(
                f"index {name}: the database has no vector extension (CREATE EXTENSION vector)"
            )
        register_vector(conn)
        yield conn
    except psycopg.Error as e:
        message = redactor.clean(str(e)).strip()
        wrong = (psycopg.errors.UndefinedTable, psycopg.errors.UndefinedColumn)
        if read_only and isinstance(e, (*wrong, psycopg.errors.DataException)):
            # the configured table, its columns or their dimensions do not fit: bad input
            raise ConfigError(f"indexes.{name}.table {settings.table!r}: {message}") from None
        raise PgvectorError(f"index {name}: Postgres failed: {message}") from None
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

    This module never commits one, so there is nothing to sweep after its own runs, killed or
    not; the sweep is for copies left by something else using the prefix."""
    from psycopg import sql

    found = scratch_tables(conn)
    for qualified in found:
        schema, table = qualified.split(".", 1)
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(schema, table)))
    return found


@dataclass(frozen=True)
class _Source:
    """What a search reads: the relation, the id expression, the vector column, the metric."""

    relation: Any  # psycopg.sql.Composable
    id_expr: Any
    vector: Any
    metric: str
    limit: int  # the most rows one query can get back
    where: Any = None  # psycopg.sql.Composable: the rows a filtered query may get (None: all)


def _load_scratch(
    conn: Any,
    vectors: np.ndarray,
    settings: PgvectorIndexConfig,
    tick: Callable[[int], None],
    metadata: Sequence[Any] = (),
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


def _build_hnsw(conn: Any, table: Any, settings: PgvectorIndexConfig) -> None:
    """pgvector's HNSW index on the scratch table, built without parallel workers."""
    from psycopg import sql

    conn.execute("SET LOCAL max_parallel_maintenance_workers = 0")
    conn.execute(
        sql.SQL(
            "CREATE INDEX ON {} USING hnsw (embedding {}) WITH (m = {}, ef_construction = {})"
        ).format(
            table,
            sql.SQL(OPERATORS[settings.metric][1]),
            sql.SQL(str(int(settings.m))),
            sql.SQL(str(int(settings.ef_construction))),
        )
    )


def _query_sql(source: _Source) -> Any:
    """One batch's statement: per query (its number, its vector) the nearest ``limit`` rows."""
    from psycopg import sql

    op = sql.SQL(OPERATORS[source.metric][0])
    where = sql.SQL("") if source.where is None else sql.SQL(" WHERE {}").format(source.where)
    return sql.SQL(
        "SELECT q.n, d.id, d.dist FROM unnest(%s::int4[], %s::vector[]) AS q(n, v)"
        " CROSS JOIN LATERAL (SELECT {id} AS id, {vec} {op} q.v AS dist FROM {rel}{where}"
        " ORDER BY {vec} {op} q.v LIMIT %s) AS d"
    ).format(id=source.id_expr, vec=source.vector, op=op, rel=source.relation, where=where)


Hits = list[tuple[Any, float]]  # (id as stored, distance), nearest first


def _fetch(
    conn: Any, statement: Any, batch: np.ndarray, rows: Sequence[int], fetch: int, ef: int
) -> dict[int, Hits]:
    """The nearest ``fetch`` rows of each query ``rows`` of ``batch``, with the scan's
    ef_search at least ``fetch`` (within pgvector's bound)."""
    from psycopg import sql

    ef_scan = min(MAX_EF_SEARCH, max(ef, fetch))
    conn.execute(sql.SQL("SET LOCAL hnsw.ef_search = {}").format(sql.SQL(str(int(ef_scan)))))
    got: dict[int, Hits] = {n: [] for n in rows}
    records = conn.execute(statement, (list(rows), [batch[n] for n in rows], fetch)).fetchall()
    for n, found, dist in records:
        if dist is not None:
            got[n].append((found, float(dist)))
    for hits in got.values():
        hits.sort(key=lambda hit: hit[1])  # stable: the scan's order among equal distances
    return got


def _open_at_cut(hits: Hits, fetch: int, keep: int, mapper: _Mapper) -> bool:
    """Whether a full fetch may have cut a tie (or the known documents) short: fewer than
    ``keep`` distinct known documents, or the keep-th one's distance equal to the last fetched."""
    if len(hits) < fetch:
        return False
    dists = mapper.best_distances(hits)
    return len(dists) < keep or dists[keep - 1] == hits[-1][1]


class _Mapper:
    """Stored ids to document indices (-1: unknown to the corpus), counting the skipped ranks
    and the rows folded into a better row of their document."""

    def __init__(self, doc_ids: Sequence[str] | None) -> None:
        self.index = {d: i for i, d in enumerate(doc_ids)} if doc_ids is not None else None
        self.unknown_ranks = 0  # ranks held by an id that is NULL or not in the corpus
        self.unknown_ids: set[str] = set()
        self.null_id_ranks = 0
        self.rows_folded = 0
        self.short_queries = 0

    def best_distances(self, hits: Hits) -> list[float]:
        """The distance of each distinct known document's best (first) row, nearest first."""
        seen: set[Any] = set()
        out = []
        for found, dist in hits:
            if self.known(found) and found not in seen:
                seen.add(found)
                out.append(dist)
        return out

    def known(self, found: Any) -> bool:
        """Whether the stored id names a document of the corpus."""
        return self.index is None or (found is not None and found in self.index)

    def to_index(self, found: Any) -> int:
        """The document index of a stored id (-1 when unknown)."""
        if self.index is None:
            return int(found)
        return self.index.get(found, -1) if found is not None else -1

    def _skipped(self, found: Any, doc: int) -> None:
        """Count one row that holds no rank: a repeat of a document, a NULL or unknown id."""
        if doc >= 0:
            self.rows_folded += 1
            return
        self.unknown_ranks += 1
        if found is None:
            self.null_id_ranks += 1
        else:
            self.unknown_ids.add(str(found))

    def candidates(self, hits: Hits, metric: str, keep: int) -> tuple[np.ndarray, np.ndarray]:
        """Document indices and float64 scores of the known hits, each document once at its
        best row (a table of chunks has several rows per id); the rows of unknown ids and the
        folded rows nearer than the ``keep``-th document are counted (they would have held a
        rank; a row tied with it is not, whatever the scan's order among ties)."""
        scale, offset = _SCORE[metric]
        ids: list[int] = []
        dists: list[float] = []
        skipped: list[tuple[Any, int, float]] = []
        seen: set[int] = set()
        for found, dist in hits:
            doc = self.to_index(found)
            if doc < 0 or doc in seen:
                skipped.append((found, doc, dist))
                continue
            seen.add(doc)
            ids.append(doc)
            dists.append(dist)
        cut = dists[keep - 1] if len(ids) >= keep else math.inf
        for found, doc, dist in skipped:
            if dist < cut:
                self._skipped(found, doc)
        if len(ids) < keep:
            self.short_queries += 1
        scores = [scale * dist + offset for dist in dists]
        return np.array(ids, dtype=np.int64), np.array(scores, dtype=np.float64)


def _search(
    conn: Any,
    source: _Source,
    queries: np.ndarray,
    depth: int,
    rank: np.ndarray,
    ef_search: int,
    mapper: _Mapper,
    tick: Callable[[int], None],
) -> SearchResult:
    """Top ``depth`` documents per query under the tie rule, in query batches; the fetch widens
    (doubling, up to the source's limit) for the queries whose cut is still open."""
    statement = _query_sql(source)
    out = empty_result(len(queries), depth)
    for start in range(0, len(queries), QUERY_BATCH):
        batch = np.ascontiguousarray(queries[start : start + QUERY_BATCH], dtype=np.float32)
        fetch = min(depth + TIE_MARGIN, source.limit)
        rows: list[int] = list(range(len(batch)))
        found: dict[int, Hits] = {}
        while rows:
            found.update(_fetch(conn, statement, batch, rows, fetch, ef_search))
            if fetch >= source.limit:
                break
            rows = [n for n in rows if _open_at_cut(found[n], fetch, depth, mapper)]
            fetch = min(source.limit, fetch * 2)
        for n, hits in found.items():
            ids, scores = mapper.candidates(hits, source.metric, depth)
            out.ids[start + n], out.scores[start + n] = top_candidates(ids, scores, depth, rank)
        tick(len(batch))
    return out


def _table_source(settings: PgvectorIndexConfig) -> _Source:
    """The configured existing table, its id column read as text."""
    from psycopg import sql

    assert settings.table is not None
    return _Source(
        relation=sql.Identifier(*settings.table.split(".")),
        id_expr=sql.SQL("{}::text").format(sql.Identifier(settings.id_column)),
        vector=sql.Identifier(settings.vector_column),
        metric=settings.metric,
        limit=MAX_EF_SEARCH,
    )


def null_rows(conn: Any, source: _Source) -> tuple[int, int]:
    """(rows whose vector is NULL, rows whose id is NULL) of the whole table: one count."""
    from psycopg import sql

    statement = sql.SQL(
        "SELECT count(*) FILTER (WHERE {vec} IS NULL), count(*) FILTER (WHERE {id} IS NULL)"
        " FROM {rel}"
    ).format(vec=source.vector, id=source.id_expr, rel=source.relation)
    null_vectors, null_ids = conn.execute(statement).fetchone()
    return int(null_vectors), int(null_ids)


# what a table search could not rank as it stands, as the index params name it (only when
# nonzero, so a clean table's fingerprint is what it was); the report shows each one
TABLE_COUNTS = {
    "rows_null_vector": "null_vectors",
    "rows_null_id": "null_ids",
    "ranks_unknown_id": "unknown_ranks",
    "rows_folded": "rows_folded",
    "queries_short": "short_queries",
}


def plan_index(conn: Any, source: _Source, query: np.ndarray) -> str | None:
    """The index the planner scans for one query of ``source`` (None: no index, an exact scan)."""
    from psycopg import sql

    statement = sql.SQL("EXPLAIN ") + _query_sql(source)
    plan = conn.execute(statement, ([0], [query], 1)).fetchall()
    for (line,) in plan:
        match = re.search(r"Index Scan using (\S+) on", str(line))
        if match:
            return match.group(1)
    return None


class PgvectorRetriever(BaseRetriever):
    """An index of the run searched in Postgres by pgvector's HNSW (scratch or table mode)."""

    approximate = True

    def __init__(self, name: str, settings: PgvectorIndexConfig, config: Config) -> None:
        self.name = name
        self.settings = settings
        self.config = config
        self.enabled = settings.enabled
        self.notes: dict[str, Any] = {}  # what the last retrieve found (never the DSN)

    def params(self) -> dict[str, Any]:
        """The settings that decide its rankings (no DSN, no environment variable)."""
        s = self.settings
        common = {"type": "pgvector.hnsw", "metric": s.metric, "ef_search": s.ef_search}
        if s.table is None:
            return {**common, "mode": "scratch", "m": s.m, "ef_construction": s.ef_construction}
        counts = {k: self.notes.get(n, 0) for k, n in TABLE_COUNTS.items()}
        return {
            **common,
            "mode": "table",
            "table": s.table,
            "id_column": s.id_column,
            "vector_column": s.vector_column,
            # only when a query filtered: an unfiltered run's fingerprint is what it was
            **({"metadata_column": s.metadata_column} if self.notes.get("filtered") else {}),
            **{k: v for k, v in counts.items() if v},
        }

    def cache_notes(self) -> dict[str, str]:
        """One line on what the index did: the scratch table dropped, or the table read."""
        n = self.notes
        if not n:
            return {f"pgvector.{self.name}": "not run"}
        if n["mode"] == "scratch":
            return {f"pgvector.{self.name}": "scratch table loaded, indexed and dropped"}
        line = f"table read read-only through {n['index'] or 'no index (exact scan)'}"
        if n["unknown_ranks"]:
            line += (
                f"; {n['unknown_ranks']} ranks held {n['unknown_ids']} ids unknown to the "
                "corpus, skipped"
            )
        if n["null_id_ranks"]:
            line += f"; {n['null_id_ranks']} ranks held a NULL id, skipped"
        if n["rows_folded"]:
            line += f"; {n['rows_folded']} rows folded into their document's best row"
        if n["null_vectors"] or n["null_ids"]:
            line += f"; {n['null_vectors']} rows with a NULL vector, {n['null_ids']} a NULL id"
        return {f"pgvector.{self.name}": line}

    def retrieve(self, job: SearchJob) -> SearchResult:
        """The top ``job.depth`` documents of every query, searched in Postgres."""
        dim = job.doc_vectors.shape[1]
        if self.settings.table is None and dim > MAX_HNSW_DIM:
            raise ConfigError(
                f"indexes.{self.name}: pgvector's HNSW index takes at most {MAX_HNSW_DIM} "
                f"dimensions, the vectors have {dim} (set model.truncate_dim)"
            )
        if len(job.query_vectors) == 0:
            return empty_result(0, job.depth)
        with open_session(self.settings, self.name, read_only=self.settings.table is not None) as c:
            version = c.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            self.notes = {"mode": "table" if self.settings.table else "scratch"}
            self.notes["filtered"] = job.eligibility is not None
            self.notes["pgvector_version"] = version.fetchone()[0]
            if self.settings.table is None:
                return self._scratch(c, job)
            return self._table(c, job)

    def _scratch(self, conn: Any, job: SearchJob) -> SearchResult:
        """Load, index and search the scratch table (rolled back by the session)."""
        with job.timed(f"load_{self.name}"):
            tick = job.progress(f"Loading {self.name} (pgvector)", len(job.doc_vectors))
            metadata = job.doc_metadata if job.eligibility is not None else ()
            table = _load_scratch(conn, job.doc_vectors, self.settings, tick, metadata)
        with job.timed(f"build_{self.name}"):
            _build_hnsw(conn, table, self.settings)
        conn.execute("SET LOCAL enable_seqscan = off")
        from psycopg import sql

        source = _Source(
            relation=table,
            id_expr=sql.Identifier("i"),
            vector=sql.Identifier("embedding"),
            metric=self.settings.metric,
            limit=min(MAX_EF_SEARCH, len(job.doc_vectors)),
        )
        mapper = _Mapper(None)
        result = self._search(conn, source, job, mapper)
        self.notes["short_queries"] = mapper.short_queries
        return result

    def _search(self, conn: Any, source: _Source, job: SearchJob, mapper: _Mapper) -> SearchResult:
        """Every query of ``job`` against ``source``, timed and with a progress bar; with
        filtered queries, the queries of each filter together, under its ``WHERE``."""
        with job.timed(f"search_{self.name}"):
            tick = job.progress(f"Searching {self.name} (pgvector)", len(job.query_vectors))
            ef = self.settings.ef_search
            if job.eligibility is None:
                return _search(
                    conn, source, job.query_vectors, job.depth, job.rank, ef, mapper, tick
                )
            column = self._metadata_column(source)

            def one(rows: np.ndarray, _mask: np.ndarray | None) -> SearchResult:
                f = job.filters[int(rows[0])]
                where = None if f is None else where_sql(f, column)
                sub = replace(source, where=where)
                queries = job.query_vectors[rows]
                return _search(conn, sub, queries, job.depth, job.rank, ef, mapper, tick)

            return by_filter(len(job.query_vectors), job.depth, job.eligibility, one)

    def _metadata_column(self, source: _Source) -> Any:
        """The jsonb column of metadata: the scratch table's ``meta``, or the table's
        ``metadata_column``."""
        from psycopg import sql

        name = "meta" if self.settings.table is None else self.settings.metadata_column
        return sql.Identifier(name)

    def _table(self, conn: Any, job: SearchJob) -> SearchResult:
        """Search the existing table read-only, mapping its ids onto the golden set's."""
        conn.execute("SET LOCAL enable_seqscan = off")
        source = _table_source(self.settings)
        self.notes["index"] = plan_index(conn, source, job.query_vectors[0])
        self.notes["null_vectors"], self.notes["null_ids"] = null_rows(conn, source)
        mapper = _Mapper(job.doc_ids)
        result = self._search(conn, source, job, mapper)
        self.notes.update(
            unknown_ranks=mapper.unknown_ranks,
            unknown_ids=len(mapper.unknown_ids),
            null_id_ranks=mapper.null_id_ranks,
            rows_folded=mapper.rows_folded,
            short_queries=mapper.short_queries,
        )
        return result
