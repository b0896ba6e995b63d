"""Annotation files: what `evalret annotate` appends (JSON Lines) and Label Studio's JSON export,
read into one grade per (annotator, query, document).

An annotation line is a pool line (``query_id``, ``doc_id``, ``query``, ``document``, ...) with
``grade`` set to an integer on the scale, ``annotator`` and ``graded_at``; a gold line also has
``gold_grade``. When the same (annotator, query_id, doc_id) appears more than once, in one file or
across files (in the order given), the LAST line wins: regrading appends, nothing is rewritten.

A line written by an LLM judge (``evalret judge``) has an ``annotator`` starting with ``llm:``,
``prompt_hash`` (12 lowercase hex characters: which prompt asked) and optionally ``votes`` (every
vote's grade, each on the scale). Both are read strictly when present: an ``llm:`` annotator
without a prompt hash, or a prompt hash on any other annotator's line, is refused (a model's
grades must never pass for a person's). ``Annotation.source`` is the judgment's provenance
(core/provenance.py): ``llm:<model>@<prompt hash>`` or ``human:<annotator>``.

A malformed line is an InputError naming file:line. A last line that is not valid JSON and has no
newline at its end is a torn write (a killed writer): it is ignored, with a warning.

A file whose first non-blank character is ``[`` is read as Label Studio's JSON export: a list of
tasks with ``data`` (``query_id``, ``doc_id``, optional ``gold_grade``) and ``annotations``, each
with ``completed_by`` (the annotator: an id, or an object with ``email`` or ``id``) and
``result[].value`` holding ``choices`` (a label starting with the grade, e.g. "2" or "2 highly
relevant") or ``rating`` (stars 1..n: grade = scale low + stars - 1). Cancelled annotations and
annotations without a choice or rating are skipped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalret.core.provenance import LLM_PREFIX, human_source, llm_source
from evalret.data.textfile import TextProblem, decode, parse_json
from evalret.errors import InputError, Problem

# what each grade means, per scale (TREC-style graded relevance); the scales evalret accepts
_DEFINITIONS: dict[tuple[int, int], tuple[str, ...]] = {
    (0, 1): ("not relevant", "relevant"),
    (0, 2): ("not relevant", "partially relevant", "highly relevant"),
    (0, 3): ("not relevant", "related", "highly relevant", "perfectly relevant"),
    (0, 4): (
        "not relevant",
        "related",
        "somewhat relevant",
        "highly relevant",
        "perfectly relevant",
    ),
}
SCALES = tuple(f"{lo}-{hi}" for lo, hi in _DEFINITIONS)
_LEADING_INT = re.compile(r"^\s*([+-]?\d+)")
_PROMPT_HASH = re.compile(r"[0-9a-f]{12}")


@dataclass(frozen=True)
class Scale:
    """A graded scale ``lo``..``hi`` (integers, inclusive) and what each grade means."""

    lo: int = 0
    hi: int = 3

    @property
    def grades(self) -> list[int]:
        return list(range(self.lo, self.hi + 1))

    @property
    def labels(self) -> tuple[str, ...]:
        return _DEFINITIONS.get((self.lo, self.hi), tuple(f"grade {g}" for g in self.grades))

    def definitions(self) -> list[dict[str, Any]]:
        return [
            {"grade": g, "label": label} for g, label in zip(self.grades, self.labels, strict=True)
        ]

    def __contains__(self, grade: object) -> bool:
        return type(grade) is int and self.lo <= grade <= self.hi

    def __str__(self) -> str:
        return f"{self.lo}-{self.hi}"


def parse_scale(text: str) -> Scale:
    """``"0-3"`` as the 0..3 Scale; one of SCALES, InputError otherwise."""
    m = re.fullmatch(r"\s*(\d+)\s*-\s*(\d+)\s*", text)
    key = (int(m.group(1)), int(m.group(2))) if m else None
    if key not in _DEFINITIONS:
        raise InputError(f"--scale {text!r}: choose one of {', '.join(SCALES)}")
    assert key is not None
    return Scale(*key)


@dataclass(frozen=True)
class Annotation:
    """One annotator's grade of one (query, document), and where it was read."""

    annotator: str
    query_id: str
    doc_id: str
    grade: int
    gold_grade: int | None
    query: str
    document: str | None
    where: str  # file:line (or file:task index for Label Studio)
    prompt_hash: str | None = None  # an LLM judge's prompt (its lines only)
    votes: tuple[int, ...] | None = None  # an LLM judge's votes, when it recorded them

    @property
    def source(self) -> str:
        """Where this grade comes from: ``llm:<model>@<prompt hash>`` for a judge's line,
        ``human:<annotator>`` for every other."""
        if self.prompt_hash is not None:
            return llm_source(self.annotator.removeprefix(LLM_PREFIX), self.prompt_hash)
        return human_source(self.annotator)


@dataclass
class Annotations:
    """The grades read, last one per (annotator, query_id, doc_id), in first-seen order."""

    by_key: dict[tuple[str, str, str], Annotation] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    lines_read: int = 0

    @property
    def items(self) -> list[Annotation]:
        return list(self.by_key.values())

    @property
    def annotators(self) -> list[str]:
        return sorted({a.annotator for a in self.by_key.values()})

    def add(self, a: Annotation) -> None:
        self.lines_read += 1
        key = (a.annotator, a.query_id, a.doc_id)
        self.by_key.pop(key, None)  # the last line wins, and takes the last place
        self.by_key[key] = a


def read_annotations(paths: Sequence[Path], scale: Scale) -> Annotations:
    """Every annotation of ``paths`` (JSONL or a Label Studio export, told apart by content);
    raises InputError listing every malformed line (file:line)."""
    out = Annotations()
    problems: list[Problem] = []
    for path in paths:
        try:
            data = path.read_bytes()
        except OSError as e:
            raise InputError(f"annotation file {path}: cannot read: {e.strerror or e}") from None
        start = data.lstrip(b"\xef\xbb\xbf \t\r\n")
        if start.startswith(b"["):
            _read_label_studio(path, data, scale, out, problems)
        else:
            if start.startswith(b"{"):
                _refuse_one_object(path, data)
            _read_jsonl(path, data, scale, out, problems)
    if problems:
        raise InputError(f"{len(problems)} malformed annotation(s)", problems)
    return out


# the keys of a Label Studio task or of an object that holds tasks: not one annotation line
_LABEL_STUDIO_KEYS = ("annotations", "data", "tasks", "predictions", "result")


def _refuse_one_object(path: Path, data: bytes) -> None:
    """InputError when the whole file is one JSON object that is not one annotation per line:
    an object spread over several lines, or a Label Studio task (or an object holding tasks)
    where a Label Studio export is a list of them. Read line by line, it would be reported as
    malformed lines, or as an annotation without its fields."""
    try:
        obj = parse_json(decode(data))
    except TextProblem:
        return  # not one JSON document: JSON Lines (or broken ones), read line by line
    if not isinstance(obj, dict):
        return
    keys = [k for k in _LABEL_STUDIO_KEYS if k in obj]
    lines = sum(1 for line in data.splitlines() if line.strip())
    if not keys and lines == 1:
        return  # one annotation line
    what = f"a JSON object with {', '.join(repr(k) for k in keys)}" if keys else "one JSON object"
    raise InputError(
        f"annotation file {path}: {what}"
        + (f" over {lines} lines" if lines > 1 else "")
        + ", not annotations: a Label Studio export is a JSON list of tasks ([{...}, ...]: "
        "export the project as JSON), and evalret annotate's file is JSON Lines (one "
        "annotation object per line)"
    )


def _read_jsonl(
    path: Path, data: bytes, scale: Scale, out: Annotations, problems: list[Problem]
) -> None:
    lines = data.split(b"\n")
    torn_possible = not data.endswith(b"\n")
    for n, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            obj = parse_json(decode(raw, n))
        except TextProblem as e:
            if torn_possible and n == len(lines):
                out.warnings.append(
                    f"{path}:{n}: the last line is cut short (a writer killed mid-line?): ignored"
                )
                continue
            problems.append(e.at(path, n))
            continue
        try:
            out.add(_annotation(obj, scale, f"{path}:{n}"))
        except ValueError as e:
            problems.append(Problem(str(e), str(path), n, "annotation"))


def _int_field(obj: dict[str, Any], name: str, scale: Scale, required: bool) -> int | None:
    value = obj.get(name)
    if value is None and not required:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an integer on the scale {scale}, not {value!r}")
    if not scale.lo <= value <= scale.hi:
        raise ValueError(f"{name} {value} is outside the scale {scale}")
    return value


def _text_field(obj: dict[str, Any], name: str) -> str:
    value = obj.get(name)
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} must be a non-empty string, not {value!r}")
    return value


def _judge_fields(
    obj: dict[str, Any], annotator: str, scale: Scale
) -> tuple[str | None, tuple[int, ...] | None]:
    """An LLM judge's ``prompt_hash`` and ``votes``, checked: both only on an ``llm:`` annotator's
    line, which must carry its prompt hash."""
    prompt_hash, votes = obj.get("prompt_hash"), obj.get("votes")
    if not annotator.startswith(LLM_PREFIX):
        for name, value in (("prompt_hash", prompt_hash), ("votes", votes)):
            if value is not None:
                raise ValueError(
                    f"{name} on the line of annotator {annotator!r}: only an LLM judge's lines "
                    f"(annotator 'llm:<model>') carry one"
                )
        return None, None
    if len(annotator) == len(LLM_PREFIX):
        raise ValueError("annotator 'llm:' names no model")
    if not isinstance(prompt_hash, str) or not _PROMPT_HASH.fullmatch(prompt_hash):
        raise ValueError(
            f"annotator {annotator!r} is an LLM judge: its line must carry prompt_hash (12 "
            f"lowercase hex characters, as evalret judge writes it), not {prompt_hash!r}"
        )
    if votes is None:
        return prompt_hash, None
    if not isinstance(votes, list) or not votes:
        raise ValueError(f"votes must be a non-empty list of grades, not {votes!r}")
    return prompt_hash, tuple(
        int(_int_field({"votes": v}, "votes", scale, required=True) or 0) for v in votes
    )


def _annotation(obj: Any, scale: Scale, where: str) -> Annotation:
    if not isinstance(obj, dict):
        raise ValueError("each line must be a JSON object")
    query, document = obj.get("query"), obj.get("document")
    annotator = _text_field(obj, "annotator")
    prompt_hash, votes = _judge_fields(obj, annotator, scale)
    return Annotation(
        annotator=annotator,
        query_id=_text_field(obj, "query_id"),
        doc_id=_text_field(obj, "doc_id"),
        grade=int(_int_field(obj, "grade", scale, required=True) or 0),
        gold_grade=_int_field(obj, "gold_grade", scale, required=False),
        query=query if isinstance(query, str) else "",
        document=document if isinstance(document, str) else None,
        where=where,
        prompt_hash=prompt_hash,
        votes=votes,
    )


def _read_label_studio(
    path: Path, data: bytes, scale: Scale, out: Annotations, problems: list[Problem]
) -> None:
    try:
        tasks = parse_json(decode(data))
    except TextProblem as e:
        raise InputError(f"Label Studio export {path}", [e.at(path)]) from None
    if not isinstance(tasks, list):
        raise InputError(f"Label Studio export {path}: expected a JSON list of tasks")
    if tasks and not any(isinstance(t, dict) and "annotations" in t for t in tasks):
        raise InputError(
            f"{path}: a JSON list whose tasks have no 'annotations': not a Label Studio export "
            "(an import file? export the project as JSON, not JSON-MIN)"
        )
    for i, task in enumerate(tasks):
        where = f"{path}: task {i}"
        try:
            for record in _label_studio_records(task, scale):
                out.add(_annotation(record, scale, where))
        except ValueError as e:
            problems.append(Problem(f"task {i}: {e}", str(path), None, "annotation"))


def _annotator_name(completed_by: Any) -> str:
    if isinstance(completed_by, dict):
        completed_by = completed_by.get("email") or completed_by.get("id")
    if completed_by is None or isinstance(completed_by, bool | list | dict):
        raise ValueError(f"completed_by must name the annotator, not {completed_by!r}")
    return str(completed_by)


def _ls_grade(results: Iterable[Any], scale: Scale) -> int | None:
    """The grade of one annotation's ``result`` list: its first choice or rating."""
    for r in results:
        value = r.get("value") if isinstance(r, dict) else None
        if not isinstance(value, dict):
            continue
        choices = value.get("choices")
        if isinstance(choices, list) and choices:
            m = _LEADING_INT.match(str(choices[0]))
            if not m:
                raise ValueError(f"choice {choices[0]!r} does not start with a grade")
            return int(m.group(1))
        rating = value.get("rating")
        if isinstance(rating, int) and not isinstance(rating, bool):
            return scale.lo + rating - 1
    return None


def _label_studio_records(task: Any, scale: Scale) -> list[dict[str, Any]]:
    if not isinstance(task, dict) or not isinstance(task.get("data"), dict):
        raise ValueError("a task must be an object with 'data'")
    annotations = task.get("annotations", [])
    if not isinstance(annotations, list):
        raise ValueError("'annotations' must be a list")
    records = []
    for a in annotations:
        if not isinstance(a, dict) or a.get("was_cancelled"):
            continue
        results = a.get("result", [])
        grade = _ls_grade(results if isinstance(results, list) else [], scale)
        if grade is None:
            continue
        records.append(
            {**task["data"], "grade": grade, "annotator": _annotator_name(a.get("completed_by"))}
        )
    return records


def label_studio_tasks(records: Sequence[dict[str, object]]) -> str:
    """Pool records as Label Studio's JSON import: a list of ``{"data": {...}}`` tasks (a
    missing document text becomes "")."""
    tasks = [
        {"data": {**r, "document": r.get("document") or ""}}
        for r in ({k: v for k, v in rec.items() if k != "grade"} for rec in records)
    ]
    return json.dumps(tasks, ensure_ascii=False, indent=1) + "\n"


def item_grades(annotations: Annotations) -> dict[tuple[str, str], dict[str, int]]:
    """(query_id, doc_id) -> {annotator: grade}, in first-seen order."""
    items: dict[tuple[str, str], dict[str, int]] = {}
    for a in annotations.items:
        items.setdefault((a.query_id, a.doc_id), {})[a.annotator] = a.grade
    return items


def gold_accuracy(annotations: Annotations) -> dict[str, dict[str, Any]]:
    """Per annotator: gold items graded, how many exactly right, accuracy (None: no gold)."""
    out: dict[str, dict[str, Any]] = {
        name: {"gold_items": 0, "correct": 0, "accuracy": None} for name in annotations.annotators
    }
    for a in annotations.items:
        if a.gold_grade is not None:
            row = out[a.annotator]
            row["gold_items"] += 1
            row["correct"] += int(a.grade == a.gold_grade)
    for row in out.values():
        if row["gold_items"]:
            row["accuracy"] = row["correct"] / row["gold_items"]
    return out
