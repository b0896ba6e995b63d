"""One SQLite table of rows by a text key, in the cache directory: what the reranker's score
cache and the LLM judge's answer cache keep (a row is committed as it is written, so a killed
run keeps what it paid for)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from evalret.errors import EvalretError

CHUNK = 500  # keys per SELECT ... IN (...)


class SqliteTable:
    """The table ``name`` (``columns``, its first the text primary key ``key``) in the file
    ``path``, opened on first use (WAL, autocommit; ``durable``: synchronous FULL). With
    ``path`` None nothing is kept: lookups find nothing and writes are dropped. ``what`` names
    it in errors (EvalretError: exit 3)."""

    def __init__(
        self, path: Path | None, name: str, columns: str, what: str, durable: bool = False
    ) -> None:
        self.path = path
        self.name = name
        self.columns = columns
        self.what = what
        self.durable = durable
        self._db: sqlite3.Connection | None = None

    def _open(self) -> sqlite3.Connection | None:
        if self.path is None:
            return None
        if self._db is None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
                db.execute("PRAGMA journal_mode=WAL")
                if self.durable:
                    db.execute("PRAGMA synchronous=FULL")
                db.execute(f"CREATE TABLE IF NOT EXISTS {self.name} ({self.columns})")
            except (OSError, sqlite3.Error) as e:
                raise EvalretError(f"{self.what} {self.path}: {e}") from None
            self._db = db
        return self._db

    def select(self, columns: str, keys: Iterable[str]) -> Iterator[tuple[Any, ...]]:
        """``key, <columns>`` of every row whose key is among ``keys``."""
        db = self._open()
        if db is None:
            return
        wanted = list(dict.fromkeys(keys))
        for start in range(0, len(wanted), CHUNK):
            chunk = wanted[start : start + CHUNK]
            marks = ",".join("?" * len(chunk))
            query = f"SELECT key, {columns} FROM {self.name} WHERE key IN ({marks})"
            yield from db.execute(query, chunk)

    def put(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """Insert ``rows`` (every column, the key first), replacing rows of the same key."""
        db = self._open()
        if db is None or not rows:
            return
        marks = ",".join("?" * len(rows[0]))
        try:
            db.executemany(f"INSERT OR REPLACE INTO {self.name} VALUES ({marks})", rows)
        except sqlite3.Error as e:
            raise EvalretError(f"{self.what} {self.path}: {e}") from None

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
