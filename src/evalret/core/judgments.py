"""Merging several annotators' grades of one item into one grade, and when an item is disputed.

Policies (grades are integers on a scale lo..hi):
* ``median``: the LOWER median (of an even count, the smaller of the two middle grades: a
  disagreement between "relevant" and "not" resolves to the more conservative grade);
* ``majority``: the grade given by MORE than half of the annotators; none: no grade (disputed);
* ``mean``: the mean, rounded half up (1.5 -> 2), which stays on the scale.

An item is disputed (needs adjudication, is not merged) when its grades span more than one grade
(max - min > 1), when the policy is ``majority`` and no grade has a majority, or when fewer than
``min_annotators`` annotators graded it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from evalret.choices import POLICIES as POLICIES
from evalret.choices import Policy as Policy


def merged_grade(grades: Sequence[int], policy: Policy) -> int | None:
    """One grade for ``grades`` (non-empty) under ``policy``; None when ``majority`` finds none."""
    if not grades:
        raise ValueError("no grades to merge")
    ordered = sorted(grades)
    if policy == "median":
        return ordered[(len(ordered) - 1) // 2]
    if policy == "mean":
        return math.floor(sum(ordered) / len(ordered) + 0.5)
    grade, count = Counter(ordered).most_common(1)[0]
    return grade if 2 * count > len(ordered) else None


def dispute_reason(grades: Sequence[int], policy: Policy, min_annotators: int) -> str | None:
    """Why an item with ``grades`` needs adjudication, or None when it can be merged."""
    if len(grades) < min_annotators:
        return f"fewer than {min_annotators} annotators ({len(grades)})"
    if max(grades) - min(grades) > 1:
        return f"grades span more than one grade ({min(grades)} to {max(grades)})"
    if merged_grade(grades, policy) is None:
        return "no majority"
    return None


def spread(grades: Sequence[int]) -> int:
    """max - min: how far apart the annotators of an item are."""
    return max(grades) - min(grades)


@dataclass
class MergeOutcome:
    """What `judgments merge` did, counted."""

    out: Path
    format: str
    merged: int = 0
    overwritten: int = 0
    kept_existing: int = 0  # already judged, left as they were (no --overwrite)
    gold_items: int = 0
    disputed: int = 0
    unknown: int = 0  # query not in the golden set or document not in its corpus
    llm_graded: int = 0  # of ``merged``: grades an LLM judge gave, no person's beside them
    llm_beside_human: int = 0  # LLM grades kept apart beside a person's grade (llm_qrels)
    dropped_annotators: list[str] = field(default_factory=list)
    annotators_without_gold: list[str] = field(default_factory=list)
    fingerprint_before: str = ""
    fingerprint_after: str = ""
    warnings: list[str] = field(default_factory=list)
