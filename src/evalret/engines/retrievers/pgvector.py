"""``type: pgvector``: HNSW search in Postgres, run by the store interface's pgvector driver.

The search is the store interface's (engines/retrievers/store.py, engines/stores/search.py) with
the pgvector driver (engines/stores/pgvector.py, where the Postgres side is described: the DSN
never shown, the scratch table in a transaction never committed, the read-only table, the
filters as jsonb conditions, ef_search raised to the fetch). ``PgvectorIndexConfig`` maps onto
the store settings: ``table: null`` is scratch mode with ``build: {m, ef_construction}``, a table
is existing mode (``collection: table``, ``id_field: id_column``, ``vector_field:
vector_column``, ``metadata_field: metadata_column``); ``ef_search`` is ``search: {ef_search}``;
``inner_product`` is ``ip``. Messages name this type's keys (``dsn_env``, ``table``).

What stays this type's own, so that the figures and fingerprints of existing baselines do not
change: the params (``pgvector.hnsw`` and its settings; in table mode the counts of what the
search could not rank as stored, ``TABLE_COUNTS``, each only when nonzero, and the metadata
column only when a query filtered), the cache notes, and how a query is counted: every query
wants ``depth`` documents (one whose filter keeps fewer is counted short, and the rows skipped
or folded before its last document are all counted), and the documents a filter lets through
are the table's own metadata's (no check against the golden set's).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from evalret.data.config import Config, PgvectorIndexConfig, StoreIndexConfig
from evalret.engines.retrievers.store import StoreRetriever
from evalret.engines.stores.pgvector import (
    SCRATCH_PREFIX,
    Keys,
    PgvectorDriver,
    PgvectorError,
    connection,
    load_scratch,
    scratch_tables,
    sweep_scratch_tables,
    where_sql,
)
from evalret.engines.stores.search import Query

__all__ = [
    "SCRATCH_PREFIX",
    "TABLE_COUNTS",
    "PgvectorError",
    "PgvectorRetriever",
    "open_session",
    "scratch_tables",
    "store_settings",
    "sweep_scratch_tables",
    "where_sql",
]

KEYS = Keys(dsn_env="dsn_env", collection="table", what="index type pgvector")
_METRIC = {"inner_product": "ip", "cosine": "cosine"}

# what a table search could not rank as it stands, as the index params name it (only when
# nonzero, so a clean table's fingerprint is what it was); the report shows each one
TABLE_COUNTS = {
    "rows_null_vector": "null_vectors",
    "rows_null_id": "null_ids",
    "ranks_unknown_id": "unknown_ranks",
    "rows_folded": "rows_folded",
    "queries_short": "short_queries",
}


def store_settings(s: PgvectorIndexConfig) -> StoreIndexConfig:
    """The store settings ``type: pgvector``'s settings stand for."""
    common: dict[str, Any] = {
        "type": "store",
        "driver": "pgvector",
        "enabled": s.enabled,
        "connect": {"dsn_env": s.dsn_env},
        "metric": _METRIC[s.metric],
        "search": {"ef_search": s.ef_search},
    }
    if s.table is None:
        build = {"m": s.m, "ef_construction": s.ef_construction}
        return StoreIndexConfig.model_validate(common | {"mode": "scratch", "build": build})
    return StoreIndexConfig.model_validate(
        common
        | {
            "mode": "existing",
            "collection": s.table,
            "id_field": s.id_column,
            "vector_field": s.vector_column,
            "metadata_field": s.metadata_column,
        }
    )


def open_session(
    settings: PgvectorIndexConfig | StoreIndexConfig, name: str, *, read_only: bool
) -> Any:
    """A connection to the Postgres the settings name (engines/stores/pgvector.py's
    ``connection``: one transaction, always rolled back, then closed)."""
    if isinstance(settings, StoreIndexConfig):
        env, table = str(settings.connect.dsn_env), settings.collection
    else:
        env, table = settings.dsn_env, settings.table
    return connection(env, name, read_only=read_only, table=table, keys=KEYS)


def _load_scratch(
    conn: Any,
    vectors: np.ndarray,
    _settings: Any,
    tick: Callable[[int], None],
    metadata: Sequence[Any] = (),
) -> Any:
    """The scratch table loaded with ``vectors`` (engines/stores/pgvector.py's
    ``load_scratch``); its identifier."""
    return load_scratch(conn, vectors, tick, metadata)


class PgvectorRetriever(StoreRetriever):
    """An index of the run searched in Postgres by pgvector's HNSW (scratch or table mode)."""

    def __init__(self, name: str, settings: PgvectorIndexConfig, config: Config) -> None:
        super().__init__(name, store_settings(settings), config, driver=PgvectorDriver(KEYS))
        self.pgvector = settings

    def _plan(
        self, qids: Sequence[str], depth: int, n_docs: int, mask: np.ndarray | None
    ) -> list[Query]:
        """Every query wants ``depth`` documents; the table's WHERE alone decides the filter."""
        return [Query(qid, depth, None) for qid in qids]

    @property
    def notes(self) -> dict[str, Any]:
        """What the last retrieve found (never the DSN); empty before."""
        d = self.description
        if not d:
            return {}
        c = self.counts
        out: dict[str, Any] = {
            "mode": "table" if self.pgvector.table else "scratch",
            "filtered": self.filtered,
            "pgvector_version": d["version"],
            "short_queries": c.ranking.queries_short,
        }
        if self.pgvector.table is None:
            return out
        index = d["index"]
        return out | {
            "index": index.get("name") if isinstance(index, dict) else None,
            "null_vectors": d["rows_null_vector"],
            "null_ids": d["rows_null_id"],
            "unknown_ranks": c.ranks_unknown_id,
            "unknown_ids": len(c.unknown_ids),
            "null_id_ranks": c.ranks_null_id,
            "rows_folded": c.rows_folded,
        }

    def params(self) -> dict[str, Any]:
        """The settings that decide its rankings (no DSN, no environment variable)."""
        s = self.pgvector
        notes = self.notes
        common = {"type": "pgvector.hnsw", "metric": s.metric, "ef_search": s.ef_search}
        if s.table is None:
            return {**common, "mode": "scratch", "m": s.m, "ef_construction": s.ef_construction}
        counts = {k: notes.get(n, 0) for k, n in TABLE_COUNTS.items()}
        return {
            **common,
            "mode": "table",
            "table": s.table,
            "id_column": s.id_column,
            "vector_column": s.vector_column,
            # only when a query filtered: an unfiltered run's fingerprint is what it was
            **({"metadata_column": s.metadata_column} if notes.get("filtered") else {}),
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
