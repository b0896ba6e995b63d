"""Golden-set drafts (`evalret golden ...`): a native golden-set directory whose queries may judge
nothing yet, and the ``manifest.json`` that makes it reproducible.

A draft holds ``corpus.jsonl`` (native lines), ``queries.jsonl`` (native lines: ``relevant`` is
``{}`` until `evalret golden judge` fills it; ``origin`` is ``log``, ``synthetic`` or
``human``, read as the tag ``origin:<value>``; a synthetic query's ``generated`` names the
chat model, the prompt's hash and the document(s) it was written from) and ``manifest.json``:
``{"format": "evalret-golden-draft/1", "steps": [...]}``, one object per command that made or
extended the draft, in order (its command, seed, inputs with their sha256, counts at each
step, rules). A step never records a query's text, only counts. Every later step keeps the
earlier ones, so the whole history of a golden set stays beside it.

``CORPUS`` (the ``--corpus`` of the golden commands) is a ``corpus.jsonl`` (native ``id`` or BEIR
``_id`` lines) or a golden-set directory holding one (a draft included: then its queries are
kept by the next step, ``read_draft``)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalret.data.atomic import publish_dir, temp_dir_beside
from evalret.data.goldenset.scan import GoldenSetScan, _BeirDoc, _NativeDoc, _NativeQuery
from evalret.data.textfile import read_json
from evalret.errors import GoldenSetError, InputError

DRAFT_FORMAT = "evalret-golden-draft/1"
MANIFEST = "manifest.json"


@dataclass(frozen=True)
class CorpusDoc:
    id: str
    text: str
    title: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def embedded(self) -> str:
        """What is embedded and searched: (title + " " + text).strip(), as every reader reads it."""
        return f"{self.title} {self.text}".strip()


@dataclass(frozen=True)
class DraftQuery:
    id: str
    text: str
    tags: tuple[str, ...] = ()
    frequency: int | None = None
    origin: str | None = None  # log | synthetic | human
    generated: dict[str, Any] | None = None  # model, prompt_hash, source_docs, style
    relevant: dict[str, int] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)  # doc id -> source of its grade

    def line(self) -> dict[str, Any]:
        """The native ``queries.jsonl`` object (fields left at their default are left out)."""
        out: dict[str, Any] = {"id": self.id, "text": self.text, "relevant": self.relevant}
        tags = [t for t in self.tags if not t.startswith("origin:")]  # the reader adds it back
        if tags:
            out["tags"] = tags
        if self.frequency is not None:
            out["frequency"] = self.frequency
        if self.sources:
            out["sources"] = self.sources
        if self.origin:
            out["origin"] = self.origin
        if self.generated:
            out["generated"] = self.generated
        return out


def corpus_file(corpus: Path) -> Path:
    """The corpus.jsonl that CORPUS names (itself, or the one in the directory it names)."""
    path = corpus / "corpus.jsonl" if corpus.is_dir() else corpus
    if not path.is_file():
        raise InputError(
            f"{corpus}: no corpus.jsonl (give a corpus file or a golden-set directory)"
        )
    return path


def read_corpus(corpus: Path) -> list[CorpusDoc]:
    """The documents of CORPUS in file order; GoldenSetError listing every bad line (file:line)."""
    path = corpus_file(corpus)
    scan = GoldenSetScan()
    docs: list[CorpusDoc] = []
    for n, raw in scan.lines(path):
        obj = scan.record(raw, path, n)
        if obj is None:
            continue
        doc = scan.record(raw, path, n, _BeirDoc if "_id" in obj else _NativeDoc)
        if doc is None:
            continue
        first = doc.id not in scan.docs
        scan.add_doc(doc.id, f"{doc.title} {doc.text}".strip(), path, n)  # a repeat: a problem
        if first:
            meta = doc.metadata if isinstance(doc.metadata, dict) else {}
            docs.append(CorpusDoc(doc.id, doc.text, doc.title, meta))
    scan.fail_if_any(str(path))
    return docs


def read_draft(directory: Path) -> list[DraftQuery]:
    """The queries of a native golden set or draft directory with their origin and generation
    (what the golden commands carry on); GoldenSetError listing every bad line."""
    path = directory / "queries.jsonl"
    if not path.is_file():
        return []
    scan = GoldenSetScan()
    out: list[DraftQuery] = []
    for n, q in scan.jsonl(path, _NativeQuery):
        if not scan.add_query(q.id, q.text, path, n):
            continue
        relevant = q.relevant if isinstance(q.relevant, dict) else dict.fromkeys(q.relevant, 1)
        generated = q.generated.model_dump(exclude_none=True) if q.generated else None
        out.append(
            DraftQuery(
                q.id, q.text, tuple(q.tags), q.frequency, q.origin, generated, relevant, q.sources
            )
        )
    scan.fail_if_any(str(path))
    return out


def read_manifest(directory: Path) -> list[dict[str, Any]]:
    """The steps of a draft's manifest.json ([] where there is none)."""
    path = directory / MANIFEST
    if not path.is_file():
        return []
    data = read_json(path, "draft manifest")
    if not isinstance(data, dict) or data.get("format") != DRAFT_FORMAT:
        raise InputError(f"{path}: not an evalret draft manifest ({DRAFT_FORMAT})")
    steps = data.get("steps")
    if not isinstance(steps, list):
        raise InputError(f"{path}: 'steps' must be a list")
    return steps


def _jsonl(records: Sequence[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def write_draft(
    out: Path,
    docs: Sequence[CorpusDoc],
    queries: Sequence[DraftQuery],
    steps: Sequence[dict[str, Any]],
) -> None:
    """Write the draft into ``out`` (new or an empty directory): whole or not at all (built
    beside it, then published). InputError when it cannot be written."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InputError(f"{out}: the output must be a new or empty directory")
    corpus = [
        {"id": d.id, "text": d.text}
        | ({"title": d.title} if d.title else {})
        | ({"metadata": d.metadata} if d.metadata else {})
        for d in docs
    ]
    manifest = {"format": DRAFT_FORMAT, "steps": list(steps)}
    try:
        tmp = temp_dir_beside(out)
    except OSError as e:
        raise InputError(f"cannot write {out}: {e.strerror or e}") from None
    try:
        (tmp / "corpus.jsonl").write_text(_jsonl(corpus), encoding="utf-8")
        (tmp / "queries.jsonl").write_text(_jsonl([q.line() for q in queries]), encoding="utf-8")
        text = json.dumps(manifest, indent=2, ensure_ascii=False, sort_keys=True) + "\n"
        (tmp / MANIFEST).write_text(text, encoding="utf-8")
        if out.is_dir():
            out.rmdir()
        publish_dir(tmp, out)
    except OSError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        raise InputError(f"cannot write {out}: {e.strerror or e}") from None


__all__ = [
    "DRAFT_FORMAT",
    "MANIFEST",
    "CorpusDoc",
    "DraftQuery",
    "GoldenSetError",
    "corpus_file",
    "read_corpus",
    "read_draft",
    "read_manifest",
    "write_draft",
]
