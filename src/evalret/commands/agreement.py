"""`evalret judgments agreement`: how far annotators agree, from their annotation files.

Every figure is over the items (query, document) that the annotators graded, gold items
included (annotators do not know which ones are gold):
* per pair of annotators, over the items both graded: raw agreement, Cohen's kappa, and
  weighted kappa (linear and quadratic weights) from scikit-learn's ``cohen_kappa_score``;
* over all annotators: Fleiss' kappa (statsmodels' ``fleiss_kappa``) on the items graded by
  EVERY annotator (Fleiss needs the same number of raters per item; the others are counted and
  left out), Krippendorff's alpha, ordinal, from ``krippendorff`` (missing grades allowed, the
  scale as its value domain), and the share of items graded by two or more on which all agree;
* per annotator, accuracy on gold items (exact match with ``gold_grade``);
* the items with the widest disagreement (max - min grade, then more annotators, then ids).

A figure that is undefined (no shared item; one category only, so chance agreement is 1) is
None ("n/a" on the terminal).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from evalret.core.judgments import spread
from evalret.data.atomic import atomic_write_text, check_writable_file
from evalret.data.judgments import (
    Annotations,
    Scale,
    gold_accuracy,
    item_grades,
    parse_scale,
    read_annotations,
)
from evalret.data.paths import Declared, Input, Output, guard
from evalret.errors import InputError
from evalret.pipeline.calibration import finite, pair_agreement

EXTRA = "judgments"


def _libraries() -> tuple[Any, Any, Any]:
    """(cohen_kappa_score, fleiss_kappa, krippendorff), or an InputError naming the extra."""
    try:
        import krippendorff
        from sklearn.metrics import cohen_kappa_score
        from statsmodels.stats.inter_rater import fleiss_kappa
    except ImportError as e:
        raise InputError(
            f"judgments agreement needs {e.name}: pip install 'evalret[{EXTRA}]'"
        ) from None
    return cohen_kappa_score, fleiss_kappa, krippendorff


def _pairs(
    cohen: Any, items: dict[tuple[str, str], dict[str, int]], names: list[str], scale: Scale
) -> list[dict[str, Any]]:
    rows = []
    for a, b in combinations(names, 2):
        shared = [g for g in items.values() if a in g and b in g]
        row = pair_agreement(cohen, [g[a] for g in shared], [g[b] for g in shared], scale)
        rows.append({"a": a, "b": b, **row})
    return rows


def _fleiss(
    fleiss: Any, items: dict[tuple[str, str], dict[str, int]], names: list[str], scale: Scale
) -> dict[str, Any]:
    # Fleiss' kappa needs two annotators or more; the items it leaves out are those graded by
    # two or more but not by every annotator (never a negative count)
    full = [g for g in items.values() if len(g) == len(names)] if len(names) >= 2 else []
    graded = sum(1 for g in items.values() if len(g) >= 2)
    value = None
    if len(names) >= 2 and full:
        table = np.zeros((len(full), len(scale.grades)), dtype=np.int64)
        for i, g in enumerate(full):
            for grade in g.values():
                table[i, grade - scale.lo] += 1
        with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
            warnings.simplefilter("ignore")
            value = finite(fleiss(table, method="fleiss"))
    return {"kappa": value, "items": len(full), "items_left_out": graded - len(full)}


def _alpha(
    kripp: Any, items: dict[tuple[str, str], dict[str, int]], names: list[str], scale: Scale
) -> dict[str, Any]:
    multi = [g for g in items.values() if len(g) >= 2]
    if len(names) < 2 or not multi:
        return {"alpha": None, "items": len(multi)}
    data = np.full((len(names), len(multi)), np.nan)
    for j, g in enumerate(multi):
        for i, name in enumerate(names):
            if name in g:
                data[i, j] = g[name]
    if len(np.unique(data[~np.isnan(data)])) < 2:
        return {"alpha": None, "items": len(multi)}  # one value only: alpha is undefined
    value = kripp.alpha(
        reliability_data=data, value_domain=scale.grades, level_of_measurement="ordinal"
    )
    return {"alpha": finite(value), "items": len(multi)}


def widest(
    annotations: Annotations, items: dict[tuple[str, str], dict[str, int]], top: int
) -> list[dict[str, Any]]:
    """The ``top`` items graded by two or more with the widest spread of grades."""
    texts = {(a.query_id, a.doc_id): a.query for a in annotations.items}
    multi = [(k, g) for k, g in items.items() if len(g) >= 2 and spread(list(g.values())) > 0]
    multi.sort(key=lambda kg: (-spread(list(kg[1].values())), -len(kg[1]), kg[0]))
    return [
        {
            "query_id": q,
            "doc_id": d,
            "query": texts[(q, d)],
            "spread": spread(list(g.values())),
            "grades": dict(sorted(g.items())),
        }
        for (q, d), g in multi[:top]
    ]


def agreement_report(annotations: Annotations, scale: Scale, top: int = 10) -> dict[str, Any]:
    """Every agreement figure of ``annotations`` as a JSON-ready dict."""
    cohen, fleiss, kripp = _libraries()
    items = item_grades(annotations)
    names = annotations.annotators
    multi = [g for g in items.values() if len(g) >= 2]
    all_agree = sum(1 for g in multi if spread(list(g.values())) == 0)
    return {
        "scale": str(scale),
        "annotators": names,
        "items": len(items),
        "items_multiply_graded": len(multi),
        "raw_agreement": all_agree / len(multi) if multi else None,
        "pairs": _pairs(cohen, items, names, scale),
        "fleiss": _fleiss(fleiss, items, names, scale),
        "krippendorff_ordinal": _alpha(kripp, items, names, scale),
        "gold_accuracy": gold_accuracy(annotations),
        "widest_disagreement": widest(annotations, items, top),
        "warnings": list(annotations.warnings),
    }


def agreement_command(
    *, files: Sequence[Path], scale: Scale | str, top: int, json_out: Path | None
) -> dict[str, Any]:
    """`evalret judgments agreement`: read ``files`` graded on ``scale`` (a Scale, or its text
    ``lo-hi``), compute, write the figures as JSON to ``json_out`` (--out) when asked."""
    if isinstance(scale, str):
        scale = parse_scale(scale)
    reads = [Input("the annotation file (FILES)", f) for f in files]
    guard(Declared("judgments agreement", reads, [Output("--out", json_out)] if json_out else []))
    if json_out is not None:
        check_writable_file(json_out, "agreement JSON")
    report = agreement_report(read_annotations(files, scale), scale, top)
    if json_out is not None:
        text = json.dumps(report, indent=2, ensure_ascii=False) + "\n"
        atomic_write_text(json_out, text, "agreement JSON")
    return report
