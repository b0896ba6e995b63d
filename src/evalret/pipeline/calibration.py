"""Agreement of two graders on the items both graded, from scikit-learn (the ``judgments``
extra): shared by `evalret judgments agreement` (every pair of annotators) and `evalret judge
--calibrate` (the LLM judge against human labels, with the confusion matrix and the mean bias),
and what `judge --calibrate` and `golden judge --calibrate` share: the human pairs read, and the
refusal below ``judge.min_kappa``.

A figure that is undefined (no shared item; one category only, so chance agreement is 1) is
None.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from evalret.data.config import GoldenSetConfig, JudgeConfig
from evalret.data.goldenset import load_golden_set
from evalret.data.judgments import Scale, read_annotations
from evalret.errors import InputError
from evalret.pipeline import judge as jp

EXTRA = "judgments"


def cohen_kappa() -> Any:
    """scikit-learn's ``cohen_kappa_score``, or an InputError naming the extra."""
    try:
        from sklearn.metrics import cohen_kappa_score
    except ImportError as e:
        raise InputError(f"agreement needs {e.name}: pip install 'evalret[{EXTRA}]'") from None
    return cohen_kappa_score


def finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def pair_agreement(cohen: Any, x: list[int], y: list[int], scale: Scale) -> dict[str, Any]:
    """Raw agreement, Cohen's kappa and weighted kappa (linear, quadratic) of two graders'
    grades ``x`` and ``y`` of the same items."""
    labels = scale.grades
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an undefined kappa (one category) is reported as None
        kappas = {
            name: finite(cohen(x, y, labels=labels, weights=w)) if x else None
            for name, w in (("cohen_kappa", None), ("linear", "linear"), ("quadratic", "quadratic"))
        }
    return {
        "items": len(x),
        "raw_agreement": float(np.mean(np.array(x) == np.array(y))) if x else None,
        "cohen_kappa": kappas["cohen_kappa"],
        "weighted_kappa_linear": kappas["linear"],
        "weighted_kappa_quadratic": kappas["quadratic"],
    }


def calibration(
    human: Mapping[tuple[str, str], int], judge: Mapping[tuple[str, str], int], scale: Scale
) -> dict[str, Any]:
    """The judge against human grades on the pairs both graded: the agreement figures, the
    confusion matrix (rows: the human grade, columns: the judge's, in scale order) and the mean
    grade bias (judge minus human; positive: the judge grades higher)."""
    both = [k for k in human if k in judge]
    x = [human[k] for k in both]
    y = [judge[k] for k in both]
    matrix = np.zeros((len(scale.grades), len(scale.grades)), dtype=np.int64)
    for h, j in zip(x, y, strict=True):
        matrix[h - scale.lo, j - scale.lo] += 1
    return {
        **pair_agreement(cohen_kappa(), x, y, scale),
        "grades": scale.grades,
        "confusion": matrix.tolist(),
        "bias": float(np.mean(np.array(y) - np.array(x))) if both else None,
        "human_pairs": len(human),
    }


def human_pairs(path: Path, scale: Scale) -> list[tuple[jp.Pair, int]]:
    """The human-graded pairs of an annotation file (each pair's humans' median, rounded down;
    ``llm:`` annotators left out) or of a golden set directory, with their texts."""
    if path.is_dir():
        golden = load_golden_set(GoldenSetConfig(path=path))
        texts = dict(zip(golden.query_ids, golden.query_texts, strict=True))
        return [
            (jp.Pair(q, d, texts[q], golden.doc_texts[golden.doc_index[d]], {}), g)
            for q in golden.query_ids
            for d, g in golden.qrels.get(q, {}).items()
            if d in golden.doc_index and g in scale
        ]
    grades: dict[tuple[str, str], list[int]] = {}
    found: dict[tuple[str, str], jp.Pair] = {}
    for a in read_annotations([path], scale).items:
        if a.annotator.startswith("llm:") or not a.document:
            continue
        key = (a.query_id, a.doc_id)
        grades.setdefault(key, []).append(a.grade)
        found.setdefault(key, jp.Pair(a.query_id, a.doc_id, a.query, a.document, {}))
    return [(found[k], jp.vote_grade(g)) for k, g in grades.items()]


def below_min(judge: JudgeConfig, figures: dict[str, Any]) -> str | None:
    """Why the labels are not written, when Cohen's kappa is below judge.min_kappa."""
    floor = judge.min_kappa
    kappa = figures.get("cohen_kappa")
    if floor is None or (kappa is not None and kappa >= floor):
        return None
    shown = "undefined" if kappa is None else f"{kappa:.3f}"
    return (
        f"Cohen's kappa against the human labels is {shown}, below judge.min_kappa {floor} "
        f"(on {figures['items']} pairs): no labels written"
    )
