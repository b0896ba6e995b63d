"""evalret's own stores: what it keeps in a cache directory between runs, where that directory is
and which setting names it, and how an SQLite file is recognised as evalret's.

A cache directory (``cache.dir``; else ``$EVALRET_CACHE_DIR``; else the per-user cache
directory) holds:

- ``embeddings/`` the embedding cache (engines/cache.py), ``models/`` exported ONNX models and
  ``indexes/`` HNSW and faiss graphs;
- ``judgments/judge.sqlite`` the LLM judge's answers (pipeline/judge.py);
- ``judgments/synth.sqlite`` the query writer's answers of `evalret golden synth`
  (pipeline/synth.py);
- ``rerank/scores.sqlite`` the rerankers' scores (engines/rerankers.py).

Every command declares these as inputs (data/paths.py): no output may be one, be a link to one,
or lie inside one. evalret's SQLite files (these three and the history database) carry the
application id ``APPLICATION_ID`` in their header; engines/sqlite_table.py checks an existing
file before anything writes to it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from evalret.data.config import CacheConfig

if TYPE_CHECKING:
    import sqlite3

APPLICATION_ID = 0x65767274  # "evrt" in an SQLite database header: evalret's
SQLITE_MAGIC = b"SQLite format 3\x00"
# what SQLite says when a file or its directory cannot be written (nor, read-only, opened)
CANNOT_WRITE = ("readonly", "read-only", "unable to open", "permission", "disk is full")


def read_only(path: Path, timeout: float) -> sqlite3.Connection:
    """A connection to the SQLite file ``path`` that never writes: ``mode=ro`` (no journal
    switch, no checkpoint on close). A WAL database in a directory that cannot be written
    (read-only, immutable, a read-only mount) cannot even be opened so, as SQLite must make its
    shared-memory file beside it: then ``immutable=1``, which reads the file as it is (no other
    process can change a file there either). ``timeout``: how long a read waits for a writer.
    (sqlite3 is imported here: `evalret score` imports this module and no database.)"""
    import sqlite3

    uri = "file:" + quote(str(path)) + "?mode=ro"
    conn = sqlite3.connect(uri, uri=True, timeout=timeout, isolation_level=None)
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return conn
    except sqlite3.OperationalError as e:
        conn.close()
        if not any(word in str(e).lower() for word in CANNOT_WRITE):
            raise
    return sqlite3.connect(uri + "&immutable=1", uri=True, isolation_level=None)


@dataclass(frozen=True)
class SqliteStore:
    """One SQLite table that evalret keeps in the cache directory: its file (relative to the
    cache directory), its table and columns (the first the text primary key ``key``), and what
    to call it in messages."""

    file: Path
    table: str
    columns: str
    what: str


JUDGE_ANSWERS = SqliteStore(
    Path("judgments") / "judge.sqlite",
    "answers",
    "key TEXT PRIMARY KEY, grade INTEGER NOT NULL, answer TEXT NOT NULL, graded_at TEXT NOT NULL",
    "the judge's answer cache",
)
SYNTH_ANSWERS = SqliteStore(
    Path("judgments") / "synth.sqlite",
    "generations",
    "key TEXT PRIMARY KEY, answer TEXT NOT NULL, asked_at TEXT NOT NULL",
    "the query writer's answer cache",
)
RERANK_SCORES = SqliteStore(
    Path("rerank") / "scores.sqlite",
    "scores",
    "key TEXT PRIMARY KEY, score REAL",
    "the reranker's score cache",
)
SQLITE_STORES = (JUDGE_ANSWERS, SYNTH_ANSWERS, RERANK_SCORES)
# the directories of the embedding cache, by name, and what to call each
STORE_DIRS = {
    "embeddings": "the embedding cache",
    "models": "the cache's exported models",
    "indexes": "the cache's index graphs",
}


def default_cache_dir() -> Path:
    """$EVALRET_CACHE_DIR, else the per-user cache directory (e.g. ~/.cache/evalret)."""
    env = os.environ.get("EVALRET_CACHE_DIR")
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_cache_dir("evalret", appauthor=False))


def default_cache_key() -> str:
    """What names the default cache directory: $EVALRET_CACHE_DIR or the per-user default."""
    if os.environ.get("EVALRET_CACHE_DIR"):
        return "$EVALRET_CACHE_DIR"
    return "the per-user cache directory"


@dataclass(frozen=True)
class CacheRoot:
    """A cache directory and the setting that names it (``cache.dir``, ``--dir``,
    ``$EVALRET_CACHE_DIR``, or the per-user default)."""

    path: Path
    key: str

    def file(self, store: SqliteStore) -> Path:
        return self.path / store.file


def cache_root(cache: CacheConfig | None = None, key: str = "cache.dir") -> CacheRoot:
    """The cache directory of ``cache`` (its ``dir``, named by ``key``), else the default."""
    if cache is not None and cache.dir is not None:
        return CacheRoot(cache.dir, key)
    return CacheRoot(default_cache_dir(), default_cache_key())
