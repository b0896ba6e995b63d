"""Metric@k curves: a metric family's mean at every cutoff up to the search depth, per slice.

Pure: ranked judgments and slice masks in, numbers out. The values come from the same metric
functions as every reported metric (``evalret.core.metrics.at_cutoffs``: the registry's
functions, to the last bit), so a curve passes through the reported value at each configured
cutoff.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from evalret.core.metrics import Gain, RankedJudgments, at_cutoffs

CURVE_FAMILIES = ("recall", "ndcg")
DENSE_UP_TO = 100  # every cutoff 1..100; beyond, about 20 log-spaced cutoffs up to the depth
SPARSE_POINTS = 20
DIGITS = 6  # curve means are rounded for the report (they are drawn, not gated)


def curve_cutoffs(depth: int) -> list[int]:
    """1, 2, ..., min(depth, 100), then log-spaced cutoffs up to ``depth`` (always included)."""
    ks = list(range(1, min(depth, DENSE_UP_TO) + 1))
    if depth > DENSE_UP_TO:
        sparse = np.geomspace(DENSE_UP_TO, depth, SPARSE_POINTS + 1).round().astype(np.int64)
        ks += sorted({int(k) for k in sparse if k > DENSE_UP_TO} | {depth})
    return ks


def metric_curves(
    judgments: RankedJudgments,
    masks: Mapping[str, np.ndarray],
    depth: int,
    gain: Gain = "linear",
    families: Sequence[str] = CURVE_FAMILIES,
) -> tuple[list[int], dict[str, dict[str, list[float | None]]]]:
    """The cutoffs, and per family and slice the mean over the slice's queries at each cutoff
    (None for an empty slice). ``depth`` must not exceed the rankings' depth."""
    if depth > judgments.depth:
        raise ValueError(f"curves to depth {depth} need rankings that deep, got {judgments.depth}")
    ks = curve_cutoffs(depth)
    out: dict[str, dict[str, list[float | None]]] = {}
    for family in families:
        per_k = at_cutoffs(judgments, family, ks, gain)  # [Q, len(ks)]
        out[family] = {
            name: (
                [round(float(v), DIGITS) for v in per_k[mask].mean(axis=0)]
                if mask.any()
                else [None] * len(ks)
            )
            for name, mask in masks.items()
        }
    return ks, out
