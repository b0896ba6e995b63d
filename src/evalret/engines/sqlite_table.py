"""One SQLite table of rows by a text key, in the cache directory: what the reranker's score
cache and the LLM judge's answer cache keep (data/stores.py names them; a row is committed as it
is written, so a killed run keeps what it paid for).

A file already at the store's path is checked before anything writes to it, through a read-only
connection that changes nothing (no journal switch, no checkpoint): it must be a regular file
whose real path stays inside the cache directory, and an SQLite database that is evalret's, its
header carrying evalret's application id (data/stores.APPLICATION_ID) and its one table exactly
the store's. A store of an older evalret (no application id yet, the same table) is taken up:
its application id is set on the first write. An empty file or an empty SQLite database holds
nothing and becomes the store. Anything else (another application's database, a non-SQLite
file, another evalret store, a directory, a link that leads out of the cache directory) is
refused with an InputError (exit 2) naming the file and the setting that points at it, and is
left byte-identical. Reading never creates the file: a dry run writes nothing.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Iterable, Iterator, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

from evalret.data.atomic import contained_target
from evalret.data.stores import (
    APPLICATION_ID,
    CANNOT_WRITE,
    SQLITE_MAGIC,
    CacheRoot,
    SqliteStore,
    read_only,
)
from evalret.errors import EvalretError, InputError

CHUNK = 500  # keys per SELECT ... IN (...)
HEADER_BYTES = 100  # an SQLite file's header


def _columns(db: sqlite3.Connection, table: str) -> list[tuple[Any, ...]]:
    """(name, type, not null, default, primary key) of each column of ``table``."""
    return [tuple(row[1:]) for row in db.execute(f"PRAGMA table_info({table})")]


class SqliteTable:
    """The table of ``store`` in the cache directory ``root`` (None: nothing is kept: lookups
    find nothing and writes are dropped), checked as the module docstring says, opened for
    writing on the first write (WAL, autocommit; ``durable``: synchronous FULL). Errors of
    SQLite itself are EvalretError (exit 3); a file that is not this store, or one that cannot
    be written (read-only, a full disk), is InputError (exit 2), as every write error is."""

    def __init__(self, store: SqliteStore, root: CacheRoot | None, durable: bool = False) -> None:
        self.store = store
        self.root = root
        self.path = root.file(store) if root is not None else None
        self.name = store.table
        self.durable = durable
        self._db: sqlite3.Connection | None = None  # for writing (and reading, once open)
        self._reader: sqlite3.Connection | None = None  # read-only, before the first write
        self._state = ""  # "", or what check() found: "new", "empty", "older", "ours"

    def _refuse(self, why: str) -> InputError:
        assert self.path is not None and self.root is not None
        key = self.root.key if self.root.key.startswith(("cache.", "--", "$")) else "cache.dir"
        return InputError(
            f"{self.store.what} {self.path} (in {self.root.key} {self.root.path}) is not "
            f"evalret's: {why}. Nothing was written to it: move it away, or point {key} at "
            "another directory (or set cache.enabled: false)"
        )

    def _failed(self, e: OSError | sqlite3.Error) -> EvalretError:
        """An error of SQLite or the file system as evalret's: a file that cannot be written is
        bad input (exit 2, naming it), anything else an internal error (exit 3)."""
        said = str(e.strerror if isinstance(e, OSError) and e.strerror else e)
        if isinstance(e, OSError) or any(word in said.lower() for word in CANNOT_WRITE):
            return InputError(
                f"cannot write {self.store.what} {self.path}: {said} (make it writable, or "
                "set cache.enabled: false)"
            )
        return EvalretError(f"{self.store.what} {self.path}: {said}")

    def _unreadable(self, e: OSError) -> InputError:
        return InputError(f"cannot read {self.store.what} {self.path}: {e.strerror or e}")

    def _target(self) -> Path | None:
        """The real path of the file (None: there is none yet, or it is empty), refused when it
        is not a regular file or a link leads out of the cache directory."""
        assert self.path is not None and self.root is not None
        try:
            real = contained_target(self.path, self.store.what, self.root.path)
        except InputError as e:
            raise self._refuse(f"a symbolic link leads it out of {self.root.path}") from e
        try:
            st = os.stat(real)
        except FileNotFoundError:
            return None
        except OSError as e:
            raise self._unreadable(e) from None
        if not stat.S_ISREG(st.st_mode):
            raise self._refuse("it is not a regular file")
        return real if st.st_size else None

    def check(self) -> None:
        """Check the file at the store's path (once): the module docstring's rules."""
        if self._state or self.path is None:
            return
        real = self._target()
        if real is None:
            self._state = "new"
        else:
            self._check_file(real)

    def _check_file(self, real: Path) -> None:
        try:
            with real.open("rb") as f:
                head = f.read(HEADER_BYTES)
        except OSError as e:
            raise self._unreadable(e) from None
        if not head.startswith(SQLITE_MAGIC):
            raise self._refuse("it is not an SQLite file")
        try:
            db = read_only(real, 30)
        except sqlite3.Error as e:
            raise self._refuse(f"SQLite cannot read it ({e})") from None
        try:
            self._state = self._recognise(db)
        except sqlite3.DatabaseError as e:
            db.close()
            raise self._refuse(f"SQLite cannot read it ({e})") from None
        except BaseException:
            db.close()
            raise
        self._reader = db

    def _recognise(self, db: sqlite3.Connection) -> str:
        """What the database ``db`` is: "ours" (this store), "older" (this store of an evalret
        that set no application id), "empty" (no table at all); InputError for anything else."""
        app_id = db.execute("PRAGMA application_id").fetchone()[0]
        if app_id not in (0, APPLICATION_ID):
            raise self._refuse(
                f"it is an SQLite database of another application (application id {app_id})"
            )
        objects = [
            f"{kind} {name}"
            for kind, name in db.execute("SELECT type, name FROM sqlite_master ORDER BY name")
            if not name.startswith("sqlite_autoindex_")
        ]
        if not objects:
            return "empty"
        with closing(sqlite3.connect(":memory:")) as expected:
            expected.execute(f"CREATE TABLE {self.name} ({self.store.columns})")
            want = _columns(expected, self.name)
        if objects == [f"table {self.name}"] and _columns(db, self.name) == want:
            return "ours" if app_id == APPLICATION_ID else "older"
        whose = "another evalret database" if app_id else "an SQLite database"
        if objects == [f"table {self.name}"]:
            raise self._refuse(f"it is {whose} whose table {self.name} has other columns")
        raise self._refuse(
            f"it is {whose} holding {', '.join(objects[:5])}, not just the table {self.name}"
        )

    def _open(self) -> sqlite3.Connection | None:
        if self.path is None:
            return None
        if self._db is None:
            if self._state == "new":  # none when checked: another run may have made it since
                self._state = ""
            self.check()
            if self._reader is not None:
                self._reader.close()
                self._reader = None
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
                if self._state != "ours":  # new, empty, or an older evalret's: made evalret's
                    db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                db.execute("PRAGMA journal_mode=WAL")
                if self.durable:
                    db.execute("PRAGMA synchronous=FULL")
                db.execute(f"CREATE TABLE IF NOT EXISTS {self.name} ({self.store.columns})")
            except (OSError, sqlite3.Error) as e:
                raise self._failed(e) from None
            self._db = db
        return self._db

    def _for_reading(self) -> sqlite3.Connection | None:
        """The connection lookups use: the writing one once open, else the checked read-only one
        (None: no file yet, nothing to find)."""
        if self._db is not None or self.path is None:
            return self._db
        self.check()
        return self._reader

    def select(self, columns: str, keys: Iterable[str]) -> Iterator[tuple[Any, ...]]:
        """``key, <columns>`` of every row whose key is among ``keys``."""
        db = self._for_reading()
        if db is None:
            return
        if self._db is None and self._state == "empty":
            return  # no table yet
        wanted = list(dict.fromkeys(keys))
        for start in range(0, len(wanted), CHUNK):
            chunk = wanted[start : start + CHUNK]
            marks = ",".join("?" * len(chunk))
            query = f"SELECT key, {columns} FROM {self.name} WHERE key IN ({marks})"
            try:
                yield from db.execute(query, chunk)
            except sqlite3.Error as e:
                raise self._failed(e) from None

    def put(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """Insert ``rows`` (every column, the key first), replacing rows of the same key."""
        if not rows:
            return
        db = self._open()
        if db is None:
            return
        marks = ",".join("?" * len(rows[0]))
        try:
            db.executemany(f"INSERT OR REPLACE INTO {self.name} VALUES ({marks})", rows)
        except sqlite3.Error as e:
            raise self._failed(e) from None

    def close(self) -> None:
        for db in (self._db, self._reader):
            if db is not None:
                db.close()
        self._db = self._reader = None
