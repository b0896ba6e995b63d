"""Annotators' grades merged into a new golden set, and the items that need adjudication in
``disputed.jsonl`` (`evalret judgments merge`; ``evalret.merge`` for a library user).

The new golden set is the input's with the merged grades added, in the input's format (how it is
written: data.goldenset.write). A TREC golden set is refused (its qrels, queries and corpus may
lie anywhere): convert it first.

Provenance (core/provenance.py): every merged grade keeps its source. A line of an LLM judge
(annotator ``llm:<model>`` with a ``prompt_hash``: `evalret judge`) is ``llm:<model>@<hash>``, any
other annotator's ``human:<name>``; a grade merged from several people is ``human:a+b`` (names
sorted), from several judges their sources joined by ``+``; a grade carried over keeps the
source the input records (``import`` when none). People's grades come first: where a person and
a judge graded a pair, the person's grade is the golden one and the judge's is kept apart (native
``llm_relevant``; a ``grade`` line of ``judgments.sources.jsonl`` for BEIR), so calibration and
prediction-powered intervals can use the overlap. A judge's golden grade gives way to a person's
without --overwrite (it is kept apart); a judge's grade never replaces a person's. Native sets
record the sources in each query line's ``sources``; BEIR sets in ``judgments.sources.jsonl``
(written only when there is something to record, or the input had one).

What is merged: an item (query, document) that is no gold item (gold items are judged already),
whose query is in the golden set and document in its corpus, that is not judged already (unless
--overwrite), and that is not disputed (see evalret.core.judgments). Annotators whose accuracy
on gold items is below --drop-annotators-below are left out first; an annotator who graded no
gold item is kept (nothing says they are worse), and reported.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from evalret.core.judgments import POLICIES, MergeOutcome, Policy, dispute_reason, merged_grade
from evalret.core.provenance import HUMAN_PREFIX, human_source, is_llm
from evalret.data.config import GoldenSetConfig
from evalret.data.goldenset import (
    Format,
    GoldenSet,
    MergePlan,
    detect_format,
    load_golden_set,
    write_merged,
)
from evalret.data.judgments import (
    Annotations,
    Scale,
    gold_accuracy,
    read_annotations,
)
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


def check_policy(policy: str) -> Policy:
    """``policy`` as one of core.judgments.POLICIES; InputError naming --policy otherwise."""
    chosen = next((p for p in POLICIES if p == policy), None)
    if chosen is None:
        raise InputError(f"--policy {policy!r}: choose {', '.join(POLICIES)}")
    return chosen


def _drop(annotations: Annotations, drop_below: float | None, outcome: MergeOutcome) -> set[str]:
    accuracy = gold_accuracy(annotations)
    outcome.annotators_without_gold = [n for n, r in accuracy.items() if r["accuracy"] is None]
    if drop_below is None:
        return set()
    outcome.dropped_annotators = [
        n for n, r in accuracy.items() if r["accuracy"] is not None and r["accuracy"] < drop_below
    ]
    return set(outcome.dropped_annotators)


@dataclass
class _Item:
    """One (query, document)'s grades from the annotation files, people and judges apart."""

    humans: dict[str, int] = field(default_factory=dict)  # annotator -> grade
    llms: dict[str, int] = field(default_factory=dict)  # llm:<model>@<hash> -> grade
    texts: tuple[str, str | None] = ("", None)


def _combined_source(sources: Sequence[str]) -> str:
    """One source for a grade merged from several: ``human:alice+bob`` for people (names
    sorted), the judges' sources joined by ``+`` for LLM judges."""
    if all(is_llm(s) for s in sources):
        return "+".join(sorted(sources))
    return HUMAN_PREFIX + "+".join(sorted(s.removeprefix(HUMAN_PREFIX) for s in sources))


def _items(
    annotations: Annotations, dropped: set[str]
) -> tuple[dict[tuple[str, str], _Item], set[tuple[str, str]]]:
    items: dict[tuple[str, str], _Item] = {}
    gold: set[tuple[str, str]] = set()
    for a in annotations.items:
        key = (a.query_id, a.doc_id)
        if a.gold_grade is not None:
            gold.add(key)
        if a.annotator in dropped:
            continue
        item = items.setdefault(key, _Item())
        if is_llm(a.source):
            item.llms[a.source] = a.grade
        else:
            item.humans[a.annotator] = a.grade
        item.texts = (a.query, a.document)
    return items, gold


def _start(golden: GoldenSet) -> MergePlan:
    """The plan before any annotation: the golden set's recorded sources and LLM grades."""
    plan = MergePlan(sources={q: dict(m) for q, m in golden.sources.items()})
    for q, grades in golden.llm_qrels.items():
        for d, g in grades.items():
            if not is_llm(plan.source(q, d)):
                judge = golden.llm_sources.get(q, {}).get(d, "llm:unknown@unknown")
                plan.beside.setdefault(q, {})[d] = (g, judge)
    return plan


def _graded(
    plan: MergePlan,
    key: tuple[str, str],
    item: _Item,
    by: dict[str, int],
    options: MergeOptions,
    min_annotators: int,
) -> int | None:
    """The merged grade of ``by``; None after recording the item as disputed."""
    values = list(by.values())
    reason = dispute_reason(values, options.policy, min_annotators)
    if reason is None:
        return merged_grade(values, options.policy)
    query, document = item.texts
    plan.disputed.append(
        {"query_id": key[0], "doc_id": key[1], "query": query, "document": document}
        | {"grades": dict(sorted(by.items())), "reason": reason}
    )
    return None


def _merge_humans(
    plan: MergePlan,
    golden: GoldenSet,
    key: tuple[str, str],
    item: _Item,
    options: MergeOptions,
    outcome: MergeOutcome,
) -> None:
    """People's grades: the golden grade, unless a person's is there (without --overwrite).
    An LLM's golden grade gives way to a person's and is kept apart."""
    q, d = key
    exists = d in golden.qrels[q]
    was_llm = exists and is_llm(plan.source(q, d))
    if exists and not was_llm and not options.overwrite:
        outcome.kept_existing += 1
        return
    grade = _graded(plan, key, item, item.humans, options, options.min_annotators)
    if grade is None:
        return
    if was_llm:
        plan.beside.setdefault(q, {})[d] = (golden.qrels[q][d], plan.source(q, d))
        plan.moved.add(key)
    outcome.overwritten += int(exists and not was_llm)
    plan.set_grade(q, d, grade, _combined_source([human_source(n) for n in item.humans]))


def _merge_llms(
    plan: MergePlan,
    golden: GoldenSet,
    key: tuple[str, str],
    item: _Item,
    options: MergeOptions,
    outcome: MergeOutcome,
) -> None:
    """An LLM judge's grades: the golden grade of a pair no person graded, else kept apart
    beside the person's (llm_qrels); a grade already there stays unless --overwrite."""
    q, d = key
    judged = d in golden.qrels[q] or key in plan.grades
    by_person = judged and not is_llm(plan.source(q, d))
    there = d in plan.beside.get(q, {}) and key not in plan.moved if by_person else judged
    if there and not options.overwrite:
        outcome.kept_existing += 1
        return
    grade = _graded(plan, key, item, item.llms, options, 1)
    if grade is None:
        return
    source = _combined_source(list(item.llms))
    if by_person:
        plan.beside.setdefault(q, {})[d] = (grade, source)
        outcome.llm_beside_human += 1
        return
    outcome.overwritten += int(judged)
    outcome.llm_graded += 1
    plan.set_grade(q, d, grade, source)


def plan_merge(
    golden: GoldenSet, annotations: Annotations, options: MergeOptions, outcome: MergeOutcome
) -> MergePlan:
    """The grades to write, the sources and LLM grades after the merge, and the disputed
    items, counted in ``outcome``. People's grades are merged first, then the judges'."""
    dropped = _drop(annotations, options.drop_below, outcome)
    items, gold = _items(annotations, dropped)
    outcome.gold_items = len(gold)
    plan = _start(golden)
    for key, item in items.items():
        q, d = key
        if q not in golden.qrels or d not in golden.doc_index:
            outcome.unknown += 1
            continue
        if item.humans and key not in gold:
            _merge_humans(plan, golden, key, item, options, outcome)
        if item.llms:
            _merge_llms(plan, golden, key, item, options, outcome)
    outcome.merged, outcome.disputed = len(plan.grades), len(plan.disputed)
    return plan


def _check_out(out: Path) -> None:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InputError(f"--out {out}: exists and is not an empty directory")


def mergeable_format(into: GoldenSetConfig) -> Format:
    """The format of the golden set ``into``: native or BEIR; InputError for TREC."""
    fmt = detect_format(into)
    if fmt == "trec":
        raise InputError(
            f"judgments merge writes native and BEIR golden sets; {into.path} is TREC: convert "
            "it to the native format (corpus.jsonl + queries.jsonl with relevant) first"
        )
    return fmt


def merge_judgments(
    files: Sequence[Path],
    into: GoldenSetConfig,
    out: Path,
    scale: Scale,
    options: MergeOptions,
    fmt: Format | None = None,
) -> MergeOutcome:
    """Read the golden set ``into`` and the annotation ``files``, plan the merge, write the new
    golden set into ``out`` (whole or not at all; it must be absent or an empty directory), and
    check that it loads. ``fmt``: ``into``'s format when already found (mergeable_format)."""
    fmt = fmt or mergeable_format(into)
    _check_out(out)
    golden = load_golden_set(into)
    annotations = read_annotations(files, scale)
    outcome = MergeOutcome(out=out, format=fmt, warnings=list(annotations.warnings))
    plan = plan_merge(golden, annotations, options, outcome)
    write_merged(into, fmt, out, golden, plan)
    outcome.fingerprint_before = golden.fingerprint
    new = GoldenSetConfig(path=out, format=fmt, split=into.split)
    outcome.fingerprint_after = load_golden_set(new).fingerprint
    return outcome
