"""`evalret judgments merge`: annotators' grades merged into a new golden set, and the items that
need adjudication in ``disputed.jsonl``.

The new golden set is a copy of the input directory (every file kept) with the merged grades
added to its judgments, written in the input's format: native (each query's ``relevant`` in
``queries.jsonl``; a list of ids becomes a {doc id: grade} map where it gains a grade) or BEIR
(rows appended to ``qrels/<split>.tsv``; with --overwrite an existing row's grade is replaced).
A TREC golden set is refused (its qrels, queries and corpus may lie anywhere): convert it first.

What is merged: an item (query, document) that is no gold item (gold items are judged already),
whose query is in the golden set and document in its corpus, that is not judged already (unless
--overwrite), and that is not disputed (see evalret.core.judgments). Annotators whose accuracy
on gold items is below --drop-annotators-below are left out first; an annotator who graded no
gold item is kept (nothing says they are worse), and reported.
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalret.core.judgments import POLICIES, MergeOutcome, Policy, dispute_reason, merged_grade
from evalret.data.atomic import publish_dir, temp_dir_beside
from evalret.data.config import GoldenSetConfig
from evalret.data.goldenset import GoldenSet, detect_format, load_golden_set
from evalret.data.judgments import (
    Annotations,
    Scale,
    gold_accuracy,
    parse_scale,
    read_annotations,
)
from evalret.data.paths import Declared, Input, Output, guard
from evalret.errors import InputError


@dataclass(frozen=True)
class MergeOptions:
    policy: Policy = "median"
    min_annotators: int = 1
    drop_below: float | None = None
    overwrite: bool = False

    def __post_init__(self) -> None:
        """--drop-annotators-below is an accuracy: a number from 0 to 1 (NaN, which no accuracy
        is below, would drop nobody silently)."""
        d = self.drop_below
        if d is not None and not (isinstance(d, int | float) and math.isfinite(d) and 0 <= d <= 1):
            raise InputError(f"--drop-annotators-below {d}: a gold accuracy from 0 to 1 (e.g. 0.7)")


def _drop(annotations: Annotations, drop_below: float | None, outcome: MergeOutcome) -> set[str]:
    accuracy = gold_accuracy(annotations)
    outcome.annotators_without_gold = [n for n, r in accuracy.items() if r["accuracy"] is None]
    if drop_below is None:
        return set()
    outcome.dropped_annotators = [
        n for n, r in accuracy.items() if r["accuracy"] is not None and r["accuracy"] < drop_below
    ]
    return set(outcome.dropped_annotators)


def plan_merge(
    golden: GoldenSet, annotations: Annotations, options: MergeOptions, outcome: MergeOutcome
) -> tuple[dict[tuple[str, str], int], list[dict[str, Any]]]:
    """The grades to write ((query, doc) -> grade) and the disputed items, counted in
    ``outcome``."""
    dropped = _drop(annotations, options.drop_below, outcome)
    grades: dict[tuple[str, str], dict[str, int]] = {}
    texts: dict[tuple[str, str], tuple[str, str | None]] = {}
    gold: set[tuple[str, str]] = set()
    for a in annotations.items:
        key = (a.query_id, a.doc_id)
        if a.gold_grade is not None:
            gold.add(key)
        if a.annotator not in dropped:
            grades.setdefault(key, {})[a.annotator] = a.grade
            texts[key] = (a.query, a.document)
    outcome.gold_items = len(gold)
    merged: dict[tuple[str, str], int] = {}
    disputed: list[dict[str, Any]] = []
    for (q, d), by in grades.items():
        if (q, d) in gold:
            continue
        if q not in golden.qrels or d not in golden.doc_index:
            outcome.unknown += 1
            continue
        exists = d in golden.qrels[q]
        if exists and not options.overwrite:
            outcome.kept_existing += 1
            continue
        values = list(by.values())
        reason = dispute_reason(values, options.policy, options.min_annotators)
        if reason is not None:
            query, document = texts[(q, d)]
            disputed.append(
                {"query_id": q, "doc_id": d, "query": query, "document": document}
                | {"grades": dict(sorted(by.items())), "reason": reason}
            )
            continue
        grade = merged_grade(values, options.policy)
        assert grade is not None  # no dispute: the policy found a grade
        merged[(q, d)] = grade
        outcome.overwritten += int(exists)
    outcome.merged, outcome.disputed = len(merged), len(disputed)
    return merged, disputed


def _native_queries(path: Path, merged: dict[tuple[str, str], int]) -> str:
    """queries.jsonl with the merged grades in each query's ``relevant``; lines of queries that
    gain nothing are kept byte for byte."""
    by_query: dict[str, dict[str, int]] = {}
    for (q, d), g in merged.items():
        by_query.setdefault(q, {})[d] = g
    out = []
    for line in path.read_text(encoding="utf-8-sig").splitlines(keepends=True):
        if not line.strip():
            out.append(line)
            continue
        obj = json.loads(line)
        new = by_query.get(obj.get("id"))
        if not new:
            out.append(line if line.endswith("\n") else line + "\n")
            continue
        relevant = obj.get("relevant", {})
        if isinstance(relevant, list):
            relevant = dict.fromkeys(relevant, 1)
        obj["relevant"] = {**relevant, **new}
        out.append(json.dumps(obj, ensure_ascii=False) + "\n")
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


def _write(
    cfg: GoldenSetConfig,
    fmt: str,
    tmp: Path,
    merged: dict[tuple[str, str], int],
    disputed: list[dict[str, Any]],
) -> None:
    shutil.copytree(cfg.path, tmp, dirs_exist_ok=True)
    if fmt == "native":
        target = tmp / "queries.jsonl"
        target.write_text(_native_queries(cfg.path / "queries.jsonl", merged), encoding="utf-8")
    else:
        qrels = tmp / "qrels" / f"{cfg.split}.tsv"
        qrels.write_text(_beir_qrels(cfg.path / "qrels" / f"{cfg.split}.tsv", merged), "utf-8")
    lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in disputed)
    (tmp / "disputed.jsonl").write_text(lines, encoding="utf-8")


def _check_out(out: Path) -> None:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InputError(f"--out {out}: exists and is not an empty directory")


def merge_command(
    files: Sequence[Path],
    into: GoldenSetConfig,
    out: Path,
    scale: Scale,
    options: MergeOptions,
) -> MergeOutcome:
    """`evalret judgments merge`: read, plan, write the new golden set into ``out`` (whole or
    not at all), and check that it loads."""
    fmt = detect_format(into)
    if fmt == "trec":
        raise InputError(
            f"judgments merge writes native and BEIR golden sets; {into.path} is TREC: convert "
            "it to the native format (corpus.jsonl + queries.jsonl with relevant) first"
        )
    reads = [Input("the annotation file (FILES)", f) for f in files]
    reads.append(Input("the golden set (--into)", into.path, tree=into.path.is_dir()))
    guard(Declared("judgments merge", reads, [Output("--out", out, "tree")]))
    _check_out(out)
    golden = load_golden_set(into)
    annotations = read_annotations(files, scale)
    outcome = MergeOutcome(out=out, format=fmt, warnings=list(annotations.warnings))
    merged, disputed = plan_merge(golden, annotations, options, outcome)
    try:
        tmp = temp_dir_beside(out)
    except OSError as e:
        raise InputError(f"cannot write {out}: {e.strerror or e}") from None
    try:
        _write(into, fmt, tmp, merged, disputed)
        publish_dir(tmp, out)
    except OSError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        raise InputError(f"cannot write {out}: {e.strerror or e}") from None
    outcome.fingerprint_before = golden.fingerprint
    new = GoldenSetConfig(path=out, format=fmt, split=into.split)
    outcome.fingerprint_after = load_golden_set(new).fingerprint
    return outcome


def merge_judgments_command(
    files: Sequence[Path],
    into: Path,
    out: Path,
    *,
    scale: str = "0-3",
    policy: str = "median",
    min_annotators: int = 1,
    drop_below: float | None = None,
    overwrite: bool = False,
    golden_format: str | None = None,
    split: str | None = None,
) -> MergeOutcome:
    """`evalret judgments merge` from its options as given: the policy and scale checked (exit 2
    naming the option), the golden set ``into`` read in ``golden_format`` (default auto) and
    ``split`` (default test), then ``merge_command``."""
    chosen = next((p for p in POLICIES if p == policy), None)
    if chosen is None:
        raise InputError(f"--policy {policy!r}: choose {', '.join(POLICIES)}")
    parsed = parse_scale(scale)
    cfg = GoldenSetConfig(path=into, format=golden_format or "auto", split=split or "test")
    options = MergeOptions(chosen, min_annotators, drop_below, overwrite)
    return merge_command(files, cfg, out, parsed, options)
