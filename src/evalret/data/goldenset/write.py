"""Golden sets written: a copy of a native or BEIR golden set's directory (every file kept) with
merged grades and their provenance (`evalret judgments merge`, pipeline/merge.py plans what
changes). Native: each query's ``relevant`` in ``queries.jsonl`` (a list of ids becomes a {doc
id: grade} map where it gains a grade), with its ``sources`` and ``llm_relevant``; BEIR: rows
appended to ``qrels/<split>.tsv`` (with --overwrite an existing row's grade is replaced), the
provenance in ``judgments.sources.jsonl``. Lines the merge does not change are kept byte for
byte. The formats are those the readers read (evalret.data.goldenset)."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalret.core.provenance import IMPORT
from evalret.data.atomic import publish_dir, temp_dir_beside
from evalret.data.config import GoldenSetConfig
from evalret.data.goldenset.model import Format, GoldenSet
from evalret.data.goldenset.scan import SOURCES_FILE
from evalret.errors import InputError


@dataclass
class MergePlan:
    """What the merge writes: golden grades, the sources after it, LLM grades kept apart."""

    grades: dict[tuple[str, str], int] = field(default_factory=dict)  # new or replaced grades
    sources: dict[str, dict[str, str]] = field(default_factory=dict)  # every recorded source
    beside: dict[str, dict[str, tuple[int, str]]] = field(default_factory=dict)  # LLM by person
    disputed: list[dict[str, Any]] = field(default_factory=list)
    moved: set[tuple[str, str]] = field(default_factory=set)  # LLM golden grades a person replaced

    def source(self, q: str, d: str) -> str:
        return self.sources.get(q, {}).get(d, IMPORT)

    def set_grade(self, q: str, d: str, grade: int, source: str) -> None:
        self.grades[(q, d)] = grade
        self.sources.setdefault(q, {})[d] = source


def _provenance_fields(plan: MergePlan, q: str) -> dict[str, Any]:
    """A native query line's ``sources`` and ``llm_relevant`` after the merge (absent: none)."""
    out: dict[str, Any] = {}
    if plan.sources.get(q):
        out["sources"] = plan.sources[q]
    if plan.beside.get(q):
        out["llm_relevant"] = {d: {"grade": g, "source": s} for d, (g, s) in plan.beside[q].items()}
    return out


def _native_queries(path: Path, plan: MergePlan) -> str:
    """queries.jsonl with the merged grades in each query's ``relevant``, and its provenance;
    lines of queries that gain nothing are kept byte for byte."""
    by_query: dict[str, dict[str, int]] = {}
    for (q, d), g in plan.grades.items():
        by_query.setdefault(q, {})[d] = g
    out = []
    for line in path.read_text(encoding="utf-8-sig").splitlines(keepends=True):
        if not line.strip():
            out.append(line)
            continue
        obj = json.loads(line)
        q = obj.get("id")
        new = by_query.get(q, {})
        provenance = _provenance_fields(plan, q)
        before = {k: obj[k] for k in ("sources", "llm_relevant") if k in obj}
        if not new and provenance == before:
            out.append(line if line.endswith("\n") else line + "\n")
            continue
        relevant = obj.get("relevant", {})
        if isinstance(relevant, list) and new:
            relevant = dict.fromkeys(relevant, 1)
        obj["relevant"] = {**relevant, **new} if new else relevant
        obj.pop("sources", None)
        obj.pop("llm_relevant", None)
        out.append(json.dumps(obj | provenance, ensure_ascii=False) + "\n")
    return "".join(out)


def _beir_qrels(path: Path, merged: dict[tuple[str, str], int]) -> str:
    """qrels/<split>.tsv with a merged (overwritten) grade replacing its row's and the new ones
    appended as rows."""
    pending = dict(merged)
    lines = path.read_text(encoding="utf-8-sig").splitlines()
    out = []
    for n, line in enumerate(lines):
        cols = line.split("\t")
        key = (cols[0], cols[1]) if len(cols) >= 3 and n > 0 else None
        if key is not None and key in pending:
            cols[-1] = str(pending.pop(key))
            line = "\t".join(cols)
        out.append(line)
    out.extend(f"{q}\t{d}\t{g}" for (q, d), g in pending.items())
    return "\n".join(out) + "\n"


def _sources_lines(path: Path, golden: GoldenSet, plan: MergePlan) -> str | None:
    """``judgments.sources.jsonl`` after the merge: the lines of other splits' queries kept,
    this split's written anew; None when there is nothing to record and no file was there."""
    kept = []
    if path.is_file():
        for line in path.read_text(encoding="utf-8-sig").splitlines():
            if line.strip() and json.loads(line).get("query_id") not in golden.qrels:
                kept.append(line + "\n")
    records: list[dict[str, Any]] = [
        {"query_id": q, "doc_id": d, "source": s}
        for q in golden.query_ids
        for d, s in plan.sources.get(q, {}).items()
    ]
    records += [
        {"query_id": q, "doc_id": d, "source": s, "grade": g}
        for q in golden.query_ids
        for d, (g, s) in plan.beside.get(q, {}).items()
    ]
    if not records and not path.is_file():
        return None
    return "".join(kept) + "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def _write(cfg: GoldenSetConfig, fmt: str, tmp: Path, golden: GoldenSet, plan: MergePlan) -> None:
    shutil.copytree(cfg.path, tmp, dirs_exist_ok=True)
    if fmt == "native":
        target = tmp / "queries.jsonl"
        text = _native_queries(cfg.path / "queries.jsonl", plan)
        target.write_text(text, encoding="utf-8")
    else:
        qrels = tmp / "qrels" / f"{cfg.split}.tsv"
        qrels.write_text(_beir_qrels(cfg.path / "qrels" / f"{cfg.split}.tsv", plan.grades), "utf-8")
        sources = _sources_lines(cfg.path / SOURCES_FILE, golden, plan)
        if sources is not None:
            (tmp / SOURCES_FILE).write_text(sources, encoding="utf-8")
    lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in plan.disputed)
    (tmp / "disputed.jsonl").write_text(lines, encoding="utf-8")


def write_merged(
    into: GoldenSetConfig, fmt: Format, out: Path, golden: GoldenSet, plan: MergePlan
) -> None:
    """Write the golden set ``into`` (read as ``golden``, format ``fmt``: native or BEIR) with
    ``plan`` applied, and ``disputed.jsonl``, into ``out``: whole or not at all (built in a
    directory beside it, then published). InputError when it cannot be written."""
    try:
        tmp = temp_dir_beside(out)
    except OSError as e:
        raise InputError(f"cannot write {out}: {e.strerror or e}") from None
    try:
        _write(into, fmt, tmp, golden, plan)
        publish_dir(tmp, out)
    except OSError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        raise InputError(f"cannot write {out}: {e.strerror or e}") from None
