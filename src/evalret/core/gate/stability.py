"""Verdict stability: how often a check's verdict would differ on another day's sample of
queries. A verdict close to its threshold flips under resampling; a flaky gate is named, not
silently retried.

For every check over per-query values (``min``, ``max_drop``, ``max_drop_pct``,
``non_inferiority``, ``equivalence``), the **flip probability** is the share of ``samples``
bootstrap resamples of its slice's queries (drawn with replacement, seeded by ``seed`` and the
slice's name, so every check of a slice shares the same resamples: ``resample_indices``) in
which the check's rule decides otherwise than it does on the slice's queries themselves. The
rule, on a resample as on the whole slice:

* ``min``: the mean is below the floor;
* ``max_drop`` / ``max_drop_pct``: the drop of the mean (from the baseline's mean on the same
  resample) exceeds the allowed drop (for a percentage, of the resample's baseline mean);
* ``non_inferiority`` / ``equivalence``: the t bound of the resample's mean difference, mean -/+
  t_{1-alpha, n-1} * sd / sqrt(n), proves the margin (the closed form, on every resample, even
  where the check's own interval is the bootstrap's).

A paired test and its correction are not re-run on each resample: the flip probability is that
of the threshold decision, which is what a check near its threshold flips on. Checks against
fixed bounds of other figures (ANN recall, budgets, health, judged@k) have none (None).

``gate.min_stability`` (``Stability.min_stability``): a check whose stability, 1 - its flip
probability, is below the level becomes **inconclusive** (status ``inconclusive``, reason
``unstable``); whether that blocks the gate is the unjudged policy's (warn: exit 0, fail: exit
1). A margin check that is not proven stays failed (the burden of proof is the change's), and a
check already inconclusive keeps its reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from evalret.core.gate.model import (
    EPS,
    MARGIN_KINDS,
    Check,
    Scores,
    UnjudgedPolicy,
    _finite,
    made_inconclusive,
)
from evalret.core.stats import MAX_CELLS, seed_for

RESAMPLED_KINDS = ("min", "max_drop", "max_drop_pct", *MARGIN_KINDS)


@dataclass(frozen=True)
class Stability:
    """How the flip probabilities are drawn (``samples`` resamples from ``seed``: the run's
    bootstrap settings), the alpha of the margin checks' bounds, and ``min_stability`` (None:
    reported, never inconclusive) with the policy that decides an inconclusive check's exit."""

    samples: int
    seed: int
    alpha: float = 0.05
    min_stability: float | None = None
    policy: UnjudgedPolicy = "warn"


def resample_indices(n: int, samples: int, seed: int, slice_name: str) -> np.ndarray:
    """[samples, n]: the query positions of each resample of a slice of ``n`` queries (drawn in
    one go from ``seed_for(seed, "stability", slice_name)``)."""
    rng = np.random.default_rng(seed_for(seed, "stability", slice_name))
    return rng.integers(0, n, size=(samples, n))


def decisions(check: Check, cur: np.ndarray, base: np.ndarray | None, alpha: float) -> np.ndarray:
    """The check's rule on each row of ``cur`` (and ``base``), [resamples, n]: True where the
    threshold is crossed (a floor or drop), or where the margin is proven."""
    cur_mean = cur.mean(axis=1)
    if check.kind == "min":
        return np.asarray(cur_mean < check.threshold - EPS)
    assert base is not None
    base_mean = base.mean(axis=1)
    if check.kind == "max_drop":
        return np.asarray(base_mean - cur_mean > check.threshold + EPS)
    if check.kind == "max_drop_pct":
        return np.asarray(base_mean - cur_mean > check.threshold / 100 * base_mean + EPS)
    from scipy import stats as sps

    d = cur - base
    n = d.shape[1]
    mean = d.mean(axis=1)
    half = float(sps.t.ppf(1 - alpha, n - 1)) * d.std(axis=1, ddof=1) / np.sqrt(n)
    proven = mean - half > -check.threshold
    if check.kind == "equivalence":
        proven &= mean + half < check.threshold
    return np.asarray(proven)


def flip_probability(
    check: Check, cur: np.ndarray, base: np.ndarray | None, idx: np.ndarray, alpha: float
) -> float:
    """The share of the resamples ``idx`` [samples, n] in which the check's rule decides
    otherwise than on the slice's values ``cur`` (and ``base``) themselves."""
    whole = decisions(check, cur[None, :], None if base is None else base[None, :], alpha)[0]
    flips = 0
    step = max(1, MAX_CELLS // max(cur.size, 1))
    for start in range(0, len(idx), step):
        rows = idx[start : start + step]
        resampled = decisions(check, cur[rows], None if base is None else base[rows], alpha)
        flips += int(np.count_nonzero(resampled != whole))
    return flips / len(idx)


def with_stability(
    checks: Sequence[Check],
    current: Scores,
    baseline: Scores | None,
    slices: Mapping[str, np.ndarray],
    stability: Stability,
) -> list[Check]:
    """``checks`` with the flip probability of every check over per-query values, and those
    less stable than ``stability.min_stability`` made inconclusive (see the module)."""
    drawn: dict[str, np.ndarray] = {}
    out = []
    for c in checks:
        mask = slices.get(c.slice)
        cur = current.get(c.index, {}).get(c.metric)
        base = (baseline or {}).get(c.index, {}).get(c.metric) if c.kind != "min" else None
        if (
            c.kind not in RESAMPLED_KINDS
            or mask is None
            or cur is None
            or (c.kind != "min" and base is None)
            or int(mask.sum()) < 2
            or not _finite(c.current, c.baseline)
        ):
            out.append(c)
            continue
        if c.slice not in drawn:
            drawn[c.slice] = resample_indices(
                int(mask.sum()), stability.samples, stability.seed, c.slice
            )
        b = base[mask] if base is not None else None
        flip = flip_probability(c, cur[mask], b, drawn[c.slice], stability.alpha)
        out.append(_unstable(replace(c, flip_probability=flip), stability))
    return out


def _unstable(c: Check, stability: Stability) -> Check:
    """A check less stable than ``min_stability``: inconclusive (see the module)."""
    level = stability.min_stability
    flip = c.flip_probability
    if level is None or flip is None or 1 - flip >= level - EPS or c.status == "inconclusive":
        return c
    if c.kind in MARGIN_KINDS and not c.passed:
        return c
    why = (
        f"its verdict flips in {flip:.0%} of {stability.samples} resamples of the queries, more "
        f"than gate.min_stability {level:g} allows"
    )
    return made_inconclusive(c, stability.policy, "unstable", why)
