"""The annotation session without the web framework: reading the pool (every problem with its
file:line, before any server starts), the scale and its definitions, the seeded order of the
items per annotator, resuming from the annotator's output file, and the session's cursor (next,
grade, skip, back, progress). ``pipeline/annotate_app.py`` serves it over HTTP on 127.0.0.1.

Every grade is one line appended to the output file at once and durably
(``data.atomic.append_line_durably``): the pool line's fields with ``grade`` set, plus
``annotator`` and ``graded_at``. Nothing is rewritten; regrading appends a new line and the last
line of an (annotator, query_id, doc_id) wins. A skipped item writes nothing. Several servers
may append to one file (``--out``): each append takes an exclusive lock on the file and first
repairs a torn last line another one left (``repair_tail``), so a grade never lands glued to it."""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from evalret.data.atomic import append_line_durably, check_writable_file, cut_torn_tail
from evalret.data.judgments import Scale, parse_scale
from evalret.data.paths import Declared, Input, guard
from evalret.data.textfile import TextProblem, decode, parse_json
from evalret.errors import InputError, Problem

EXTRA = "evalret[annotate]"


_ANNOTATOR = re.compile(r"^[^\W][\w.@+-]*$")


def check_annotator(name: str) -> str:
    """The annotator's name, refused (InputError) unless it is a plain word that can be part of a
    file name: letters, digits and ``. _ @ + -``, not starting with punctuation."""
    if not _ANNOTATOR.match(name) or len(name) > 100:
        raise InputError(
            f"--annotator {name!r}: use letters, digits and . _ @ + - (it names the output file)"
        )
    return name


@dataclass(frozen=True)
class Item:
    """One (query, document) pair of the pool, and the pool line it came from."""

    id: str  # stable across restarts: a digest of (query_id, doc_id)
    query_id: str
    doc_id: str
    record: dict[str, Any]  # the pool line as read, every field kept for the annotation line

    def shown(self) -> dict[str, Any]:
        """What the page gets: the texts and ids, never ``gold_grade`` nor the run labels."""
        document = self.record.get("document")
        title = self.record.get("title")
        return {
            "id": self.id,
            "query_id": self.query_id,
            "doc_id": self.doc_id,
            "query": self.record["query"],
            "title": title if isinstance(title, str) else "",
            "document": document if isinstance(document, str) else None,
        }


def item_id(query_id: str, doc_id: str) -> str:
    return hashlib.sha256(json.dumps([query_id, doc_id]).encode("utf-8")).hexdigest()[:16]


def _pool_item(obj: Any, scale: Scale) -> Item:
    """One pool line's object as an Item; raises TextProblem saying what is wrong."""
    if not isinstance(obj, dict):
        raise TextProblem("a pool line must be a JSON object", code="invalid-pool-line")
    for key in ("query_id", "doc_id", "query"):
        if not isinstance(obj.get(key), str):
            raise TextProblem(f"{key!r} must be a string", code="invalid-pool-line")
    if "document" not in obj or not isinstance(obj["document"], str | None):
        raise TextProblem("'document' must be a string or null", code="invalid-pool-line")
    if "title" in obj and not isinstance(obj["title"], str | None):
        raise TextProblem("'title' must be a string or null", code="invalid-pool-line")
    if "gold_grade" in obj and obj["gold_grade"] not in scale:
        raise TextProblem(
            f"gold_grade {obj['gold_grade']!r} is not on the scale {scale.lo}-{scale.hi}",
            code="invalid-pool-line",
        )
    return Item(item_id(obj["query_id"], obj["doc_id"]), obj["query_id"], obj["doc_id"], obj)


def read_pool(path: Path, scale: Scale) -> list[Item]:
    """The pool's items in file order; every problem (not JSON, a field missing or of the wrong
    type, a pair twice) is an InputError with its file:line, raised before any server starts."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise InputError(f"cannot read pool {path}: {e.strerror or e}") from None
    items: list[Item] = []
    problems: list[Problem] = []
    first_line: dict[str, int] = {}
    for n, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            item = _pool_item(parse_json(decode(raw, n)), scale)
        except TextProblem as e:
            problems.append(Problem(e.message, str(path), n, e.code))
            continue
        if item.id in first_line:
            message = f"({item.query_id}, {item.doc_id}) is also on line {first_line[item.id]}"
            problems.append(Problem(message, str(path), n, "duplicate-pair"))
            continue
        first_line[item.id] = n
        items.append(item)
    if problems:
        raise InputError(f"pool {path} is not a pool file", problems)
    if not items:
        raise InputError(f"pool {path} has no items to grade")
    return items


def annotator_order(n: int, annotator: str, seed: int) -> list[int]:
    """The order (pool positions) in which ``annotator`` sees ``n`` items: a permutation drawn
    from a seed that is a hash of the annotator's name and ``seed``, so every annotator gets their
    own order (against position bias) and the same one after a restart."""
    digest = hashlib.sha256(f"{annotator}\0{seed}".encode()).digest()
    rng = np.random.default_rng(int.from_bytes(digest[:16], "big"))
    return [int(i) for i in rng.permutation(n)]


def default_output(pool: Path, annotator: str) -> Path:
    """``POOL``'s stem + ``.<annotator>.jsonl`` beside it."""
    return pool.with_name(f"{pool.stem}.{annotator}.jsonl")


def _annotation(obj: Any) -> tuple[str, str, str, int] | None:
    """(annotator, query_id, doc_id, grade) of an annotation line's object; None if not one."""
    if not isinstance(obj, dict):
        return None
    annotator, query_id, doc_id = obj.get("annotator"), obj.get("query_id"), obj.get("doc_id")
    grade = obj.get("grade")
    if not (isinstance(annotator, str) and isinstance(query_id, str) and isinstance(doc_id, str)):
        return None
    return (annotator, query_id, doc_id, grade) if type(grade) is int else None


@dataclass
class Resumed:
    """What the output file already holds for one annotator."""

    grades: dict[str, int] = field(default_factory=dict)  # item id -> last grade
    torn: bool = False  # the last line was torn (a killed write) and was ignored


def read_grades(path: Path, annotator: str) -> Resumed:
    """The last grade per item that ``annotator`` gave in ``path`` (other annotators' lines are
    left alone). A malformed line is an InputError with file:line, except a torn last line (no
    newline, not JSON): that one is ignored, and ``torn`` says so."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return Resumed()
    except OSError as e:
        raise InputError(f"cannot read annotations {path}: {e.strerror or e}") from None
    resumed = Resumed()
    lines = data.split(b"\n")
    problems: list[Problem] = []
    for n, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            found = _annotation(parse_json(decode(raw, n)))
        except TextProblem as e:
            if n == len(lines):  # no newline after it: a write cut short
                resumed.torn = True
                continue
            problems.append(Problem(e.message, str(path), n, e.code))
            continue
        if found is None:
            message = "not an annotation line (annotator, query_id, doc_id, integer grade)"
            problems.append(Problem(message, str(path), n, "invalid-annotation"))
        elif found[0] == annotator:
            resumed.grades[item_id(found[1], found[2])] = found[3]
    if problems:
        raise InputError(f"annotations {path} cannot be resumed", problems)
    return resumed


def repair_tail(path: Path) -> str | None:
    """Make ``path`` end with a newline before grades are appended to it: a last line that is
    whole JSON gets its newline; a torn one is cut off. Returns a note saying which, or None."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise InputError(f"cannot read annotations {path}: {e.strerror or e}") from None
    if not data or data.endswith(b"\n"):
        return None
    tail = data[data.rfind(b"\n") + 1 :]
    try:
        parse_json(decode(tail))
    except TextProblem:
        cut = cut_torn_tail(path, "annotations")
        return f"{path}: cut a torn last line ({cut} bytes, a write killed mid-line)"
    append_line_durably(path, "", "annotations")
    return None


def _ends_a_line(path: Path) -> bool:
    """Whether ``path`` is empty, missing, or ends with a newline (its last byte only read)."""
    try:
        with path.open("rb") as f:
            end = f.seek(0, os.SEEK_END)
            if end == 0:
                return True
            f.seek(end - 1)
            return f.read(1) == b"\n"
    except FileNotFoundError:
        return True
    except OSError as e:
        raise InputError(f"cannot read annotations {path}: {e.strerror or e}") from None


def _check_appendable(out: Path) -> None:
    """InputError (exit 2) when grades cannot be appended to ``out``: an existing file is opened
    for appending (it is appended to in place, never replaced), a new one is probed in its
    directory."""
    if not out.exists():
        check_writable_file(out, "annotations")
        return
    try:
        with open(out, "ab"):
            pass
    except OSError as e:
        raise InputError(f"cannot append to annotations {out}: {e.strerror or e}") from None


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive advisory lock on ``path`` (created if missing) while appending: another
    evalret server on the same file waits (no lock where the system has no flock)."""
    try:
        import fcntl
    except ImportError:  # not POSIX: appends are still one write each
        yield
        return
    try:
        handle = path.open("ab")
    except OSError as e:
        raise InputError(f"cannot write annotations {path}: {e.strerror or e}") from None
    with handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def append_grade(path: Path, line: str) -> str | None:
    """Append ``line`` to the annotations at ``path`` under the file's lock, after repairing a
    torn last line another server left; returns the repair's note, if any."""
    with _locked(path):
        note = None if _ends_a_line(path) else repair_tail(path)
        append_line_durably(path, line, "annotations")
    return note


def _utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Session:
    """One annotator's pass over a pool: the items in their order, their grades so far (from the
    output file), and a cursor. ``current()`` is the item on screen: the one ``back`` returned
    to, else the first item in order that is neither graded nor skipped in this sitting (when
    only skipped ones are left, the skips are forgotten and they come round again)."""

    def __init__(
        self,
        items: list[Item],
        annotator: str,
        seed: int,
        out: Path,
        grades: dict[str, int] | None = None,
        clock: Callable[[], str] = _utc_now,
    ) -> None:
        self.order = [items[i] for i in annotator_order(len(items), annotator, seed)]
        self.by_id = {it.id: it for it in items}
        self.annotator, self.out, self.clock = annotator, out, clock
        self.grades = {k: v for k, v in (grades or {}).items() if k in self.by_id}
        self.skipped: set[str] = set()
        self.history: list[str] = []  # ids acted on (graded or skipped), oldest first
        self.revisit: str | None = None  # the id `back` returned to
        self.notes: list[str] = []  # repairs of the output file made while serving

    @property
    def progress(self) -> tuple[int, int]:
        return len(self.grades), len(self.order)

    def current(self) -> Item | None:
        if self.revisit is not None:
            return self.by_id[self.revisit]
        left = [it for it in self.order if it.id not in self.grades]
        if not left:
            return None
        fresh = [it for it in left if it.id not in self.skipped]
        if not fresh:
            self.skipped.clear()
            fresh = left
        return fresh[0]

    def grade(self, item_id: str, grade: int, scale: Scale) -> None:
        """Append the grade to the output file (durably), then move on. Raises ValueError for an
        unknown item or a grade off the scale."""
        item = self.by_id.get(item_id)
        if item is None:
            raise ValueError(f"no item {item_id!r} in this pool")
        if grade not in scale:
            raise ValueError(f"grade {grade!r} is not on the scale {scale.lo}-{scale.hi}")
        line = {**item.record, "grade": grade, "annotator": self.annotator}
        line["graded_at"] = self.clock()
        note = append_grade(self.out, json.dumps(line, ensure_ascii=False))
        if note is not None:
            self.notes.append(note)
        self.grades[item_id] = grade
        self.skipped.discard(item_id)
        self._acted(item_id)

    def skip(self, item_id: str) -> None:
        if item_id not in self.by_id:
            raise ValueError(f"no item {item_id!r} in this pool")
        if item_id not in self.grades:
            self.skipped.add(item_id)
        self._acted(item_id)

    def back(self) -> None:
        """Return to the item acted on before the one on screen (no-op at the start)."""
        on_screen = self.current()
        while self.history:
            previous = self.history.pop()
            if on_screen is None or previous != on_screen.id:
                self.revisit = previous
                self.skipped.discard(previous)
                return

    def _acted(self, item_id: str) -> None:
        if not self.history or self.history[-1] != item_id:
            self.history.append(item_id)
        self.revisit = None

    def state(self, scale: Scale) -> dict[str, Any]:
        """What ``GET /api/next`` answers: the item on screen (None when done), its grade so far
        by this annotator (when going back), progress, and the scale."""
        item = self.current()
        graded, total = self.progress
        return {
            "item": item.shown() if item is not None else None,
            "grade": self.grades.get(item.id) if item is not None else None,
            "graded": graded,
            "total": total,
            "done": item is None,
            "annotator": self.annotator,
            "scale": scale.definitions(),
        }


@dataclass(frozen=True)
class AnnotateSetup:
    session: Session
    scale: Scale
    out: Path
    notes: list[str]


def prepare_annotation(
    pool: Path, annotator: str, out: Path | None, scale_text: str, seed: int
) -> AnnotateSetup:
    """Everything checked before the server starts: the name, the scale, the pool (file:line),
    the output file (writable; its earlier grades read, a torn last line repaired)."""
    scale = parse_scale(scale_text)
    check_annotator(annotator)
    out = out if out is not None else default_output(pool, annotator)
    reads = [Input("the pool (POOL)", pool)]
    guard(Declared("annotate", reads, updated=[Input("the annotation file (--out)", out)]))
    items = read_pool(pool, scale)
    _check_appendable(out)
    resumed = read_grades(out, annotator)
    notes: list[str] = []
    if out.exists():  # another server may be appending to it (a new file stays unmade)
        with _locked(out):
            notes = [n for n in [repair_tail(out)] if n is not None]
    session = Session(items, annotator, seed, out, resumed.grades)
    return AnnotateSetup(session, scale, out, notes)
