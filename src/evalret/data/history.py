"""The history database of `evalret history`: one SQLite file (the standard library's sqlite3)
that keeps, for every report added, its label, commit, baseline mark, gate verdict, fingerprint
and every metric value (with its interval) per index and slice.

- The file is recognised by its application id (``PRAGMA application_id``, "evrt") and its schema
  version (``PRAGMA user_version``). A file that is not SQLite, an SQLite database of another
  application, one written by a newer evalret and a damaged one (``PRAGMA quick_check``, or SQLite
  finding a malformed page) are refused with exit 2, before anything is written to them.
- WAL journal, a busy timeout, and one ``BEGIN IMMEDIATE`` transaction per add (the schema of a
  new file is created in the same transaction): concurrent adds wait for each other and all land,
  and a reader sees whole entries only. Every look at the file's state is one read transaction,
  so a process never sees another's schema half made. The switch to WAL (once per file) is
  retried here: SQLite answers a switch that finds the file busy at once, without its busy
  timeout.
"""

from __future__ import annotations

import json
import random
import sqlite3
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from evalret.core.digest import json_digest
from evalret.core.trend import EntryPrint
from evalret.data.atomic import contained_target
from evalret.data.baseline import definitions_of
from evalret.data.schema import RunReport
from evalret.data.stores import APPLICATION_ID, CANNOT_WRITE, SQLITE_MAGIC, read_only
from evalret.errors import EvalretError, InputError

SCHEMA_VERSION = 1
BUSY_TIMEOUT_S = 60.0  # how long an add waits for another process's transaction
DEFAULT_PATH = Path("evalret-history.sqlite")  # without --db or history.path in the config

SCHEMA = (
    """CREATE TABLE entry (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  added_at TEXT NOT NULL,            -- UTC, ISO 8601
  label TEXT,
  commit_sha TEXT,
  baseline INTEGER NOT NULL CHECK (baseline IN (0, 1)),
  source TEXT NOT NULL,              -- the report's path as given
  report_sha256 TEXT NOT NULL,
  evalret_version TEXT NOT NULL,
  gate_verdict TEXT,                 -- pass, fail, or NULL without a gate
  fingerprint TEXT NOT NULL          -- the report's fingerprint, JSON
)""",
    """CREATE TABLE value (
  entry INTEGER NOT NULL REFERENCES entry(id) ON DELETE CASCADE,
  index_name TEXT NOT NULL,
  slice TEXT NOT NULL,
  metric TEXT NOT NULL,
  value REAL,                        -- NULL: an empty slice
  ci_low REAL,
  ci_high REAL,
  n_queries INTEGER NOT NULL,
  UNIQUE (entry, index_name, slice, metric)
)""",
)
_TABLES = {"entry", "value"}


@dataclass(frozen=True)
class HistoryEntry:
    """One added report."""

    id: int
    added_at: str
    label: str | None
    commit: str | None
    baseline: bool
    source: str
    report_sha256: str
    evalret_version: str
    gate_verdict: str | None
    fingerprint: dict[str, Any]

    def trend_print(self) -> EntryPrint:
        """The fingerprint parts a trend compares: golden set, metric definitions, model,
        indexes (each a digest)."""
        f = self.fingerprint
        metrics = f.get("metrics")
        return EntryPrint(
            golden_set=str(f.get("golden_set")),
            definitions=json_digest(definitions_of(metrics if isinstance(metrics, dict) else {})),
            model=json_digest(f.get("model")),
            indexes=json_digest(f.get("indexes")),
        )


@dataclass(frozen=True)
class HistoryValue:
    """One metric value of one entry, index and slice."""

    entry: int
    index: str
    slice: str
    metric: str
    value: float | None
    ci_low: float | None
    ci_high: float | None
    n_queries: int


@dataclass(frozen=True)
class History:
    """A history database's entries (oldest first: in the order they were added) and values."""

    path: Path
    entries: list[HistoryEntry]
    values: list[HistoryValue]


# --- opening a file --------------------------------------------------------------------------


def _refused(db: Path, why: str) -> InputError:
    return InputError(f"{db} is not an evalret history database: {why}; give another --db")


def _check_file(db: Path, create: bool) -> None:
    """Refuse a path that is not a regular file, or a file that is not SQLite, before SQLite
    opens it (SQLite would write a journal beside it, or turn an empty path into a database); to
    add (``create``), a symbolic link that leads out of the database's directory too."""
    if create:
        contained_target(db, "history database")  # never written through a link leading out
    if not db.exists():
        if create:
            return
        raise InputError(
            f"no history database at {db}: `evalret history add REPORT --db {db}` creates it"
        )
    if not db.is_file():
        raise _refused(db, "it is not a regular file")
    try:
        with db.open("rb") as f:
            head = f.read(len(SQLITE_MAGIC))
    except OSError as e:
        raise InputError(f"cannot read history database {db}: {e.strerror or e}") from None
    if head and head != SQLITE_MAGIC:
        raise _refused(db, "not an SQLite file")


_DAMAGED_HINT = ": restore it from a copy, or start a new history with another --db"
_CORRUPT = ("not a database", "malformed", "corrupt")
_BUSY = ("locked", "busy")


@contextmanager
def _sqlite_errors(db: Path, doing: str = "write") -> Iterator[None]:
    """SQLite's failures as evalret's: a damaged file is bad input (2), a database still locked
    after the busy timeout a runtime failure (3), a file that cannot be written (or, ``doing``
    "read", opened) bad input (2)."""
    try:
        yield
    except sqlite3.Error as e:
        text = str(e).lower()
        if any(word in text for word in _CORRUPT):
            raise InputError(f"history database {db} is damaged ({e}){_DAMAGED_HINT}") from None
        if any(word in text for word in _BUSY):
            raise EvalretError(
                f"history database {db} stayed locked by another process for "
                f"{BUSY_TIMEOUT_S:.0f} s: {e}"
            ) from None
        if any(word in text for word in CANNOT_WRITE):
            raise InputError(f"cannot {doing} history database {db}: {e}") from None
        raise EvalretError(f"history database {db}: {e}") from None


def _connect(db: Path) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit) that waits up to
    BUSY_TIMEOUT_S for another process's lock."""
    conn = sqlite3.connect(str(db), timeout=BUSY_TIMEOUT_S, isolation_level=None)
    conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def _state(conn: sqlite3.Connection, db: Path) -> str:
    """ "empty" for a new database (nothing in it yet), "ours" for an evalret history; anything
    else is refused."""
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    if app_id == 0 and not names:
        return "empty"
    if app_id != APPLICATION_ID:
        raise _refused(db, f"an SQLite database of another application (application id {app_id})")
    if version > SCHEMA_VERSION:
        raise InputError(
            f"history database {db} has schema version {version}, this evalret reads "
            f"{SCHEMA_VERSION}: use a newer evalret"
        )
    if version != SCHEMA_VERSION or not _TABLES.issubset(names):
        raise InputError(
            f"history database {db} is damaged (its tables are missing){_DAMAGED_HINT}"
        )
    return "ours"


def _read_state(conn: sqlite3.Connection, db: Path) -> str:
    """``_state`` in one read transaction: one consistent snapshot of the header and tables."""
    with _transaction(conn, "BEGIN"):
        return _state(conn, db)


def _use_wal(conn: sqlite3.Connection, db: Path) -> None:
    """Put the file in WAL mode (it stays so). Switching needs the file to itself; a switch that
    finds it busy fails at once (or leaves the old mode), so it is tried again until
    BUSY_TIMEOUT_S has passed."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            if conn.execute("PRAGMA journal_mode = WAL").fetchone()[0] == "wal":
                return
        except sqlite3.OperationalError as e:
            if not any(word in str(e).lower() for word in _BUSY):
                raise
        if time.monotonic() > deadline:
            raise EvalretError(
                f"history database {db} stayed locked by another process for "
                f"{BUSY_TIMEOUT_S:.0f} s: could not switch it to WAL mode"
            )
        time.sleep(random.uniform(0.01, 0.05))


def _quick_check(conn: sqlite3.Connection, db: Path) -> None:
    rows = [r[0] for r in conn.execute("PRAGMA quick_check")]
    if rows != ["ok"]:
        found = "; ".join(rows[:5])
        raise InputError(f"history database {db} is damaged ({found}){_DAMAGED_HINT}")


def _create(conn: sqlite3.Connection) -> None:
    for statement in SCHEMA:
        conn.execute(statement)
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


@contextmanager
def _transaction(conn: sqlite3.Connection, begin: str) -> Iterator[None]:
    conn.execute(begin)
    try:
        yield
    except BaseException:
        if conn.in_transaction:
            conn.rollback()
        raise
    conn.execute("COMMIT")


# --- adding and reading ----------------------------------------------------------------------


def _clean(text: str | None) -> str | None:
    return text.strip() or None if text is not None else None


def _insert(conn: sqlite3.Connection, entry: HistoryEntry, report: RunReport) -> HistoryEntry:
    """Insert ``entry`` and the report's values; the entry with its id and time of addition."""
    added_at = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    cursor = conn.execute(
        "INSERT INTO entry (added_at, label, commit_sha, baseline, source, report_sha256, "
        "evalret_version, gate_verdict, fingerprint) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            added_at,
            entry.label,
            entry.commit,
            int(entry.baseline),
            entry.source,
            entry.report_sha256,
            entry.evalret_version,
            entry.gate_verdict,
            json.dumps(entry.fingerprint, sort_keys=True),
        ),
    )
    entry_id = int(cursor.lastrowid or 0)
    conn.executemany(
        "INSERT INTO value (entry, index_name, slice, metric, value, ci_low, ci_high, n_queries) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (entry_id, index, name, metric, v.value, v.ci_low, v.ci_high, s.n_queries)
            for index, result in report.indexes.items()
            for name, s in result.slices.items()
            for metric, v in s.metrics.items()
        ],
    )
    return replace(entry, id=entry_id, added_at=added_at)


def add_report(
    db: Path,
    report: RunReport,
    *,
    source: str,
    report_sha256: str,
    label: str | None = None,
    commit: str | None = None,
    baseline: bool = False,
) -> HistoryEntry:
    """Append ``report`` to the history at ``db`` (created, with its parent directories, when
    missing) in one transaction; returns the entry as stored."""
    _check_file(db, create=True)
    try:
        db.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"cannot create the directory of {db}: {e.strerror or e}") from None
    entry = HistoryEntry(
        id=0,
        added_at="",
        label=_clean(label),
        commit=_clean(commit),
        baseline=baseline,
        source=source,
        report_sha256=report_sha256,
        evalret_version=report.evalret_version,
        gate_verdict=report.gate.verdict if report.gate is not None else None,
        fingerprint=report.fingerprint.model_dump(mode="json"),
    )
    with _sqlite_errors(db), closing(_connect(db)) as conn:
        _read_state(conn, db)  # a foreign file is refused before anything is written to it
        _use_wal(conn, db)
        with _transaction(conn, "BEGIN IMMEDIATE"):
            if _state(conn, db) == "empty":  # decided again under the lock: two first adds
                _create(conn)
            _quick_check(conn, db)
            return _insert(conn, entry, report)


def _entry(row: tuple[Any, ...], db: Path) -> HistoryEntry:
    try:
        fingerprint = json.loads(row[9])
    except (TypeError, ValueError):
        fingerprint = None
    if not isinstance(fingerprint, dict):
        raise InputError(
            f"history database {db} is damaged (entry {row[0]} has no fingerprint){_DAMAGED_HINT}"
        )
    return HistoryEntry(
        id=int(row[0]),
        added_at=str(row[1]),
        label=row[2],
        commit=row[3],
        baseline=bool(row[4]),
        source=str(row[5]),
        report_sha256=str(row[6]),
        evalret_version=str(row[7]),
        gate_verdict=row[8],
        fingerprint=fingerprint,
    )


def read_history(db: Path) -> History:
    """Every entry and value of the history at ``db``, read in one snapshot; a missing file, a
    foreign or damaged one is an InputError (exit 2). Nothing is written: the file is opened
    read-only, so a history on a read-only file, directory or mount is read all the same."""
    _check_file(db, create=False)
    with (
        _sqlite_errors(db, "read"),
        closing(read_only(db.resolve(), BUSY_TIMEOUT_S)) as conn,
        _transaction(conn, "BEGIN"),
    ):
        if _state(conn, db) == "empty":
            return History(db, [], [])
        _quick_check(conn, db)
        entries = [
            _entry(row, db)
            for row in conn.execute(
                "SELECT id, added_at, label, commit_sha, baseline, source, report_sha256, "
                "evalret_version, gate_verdict, fingerprint FROM entry ORDER BY id"
            )
        ]
        values = [
            HistoryValue(*row)
            for row in conn.execute(
                "SELECT entry, index_name, slice, metric, value, ci_low, ci_high, n_queries "
                "FROM value ORDER BY entry, rowid"
            )
        ]
    return History(db, entries, values)
