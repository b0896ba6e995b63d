"""The margin checks of a threshold whose ``mode`` is ``non_inferiority`` or ``equivalence``:
"no significant drop" is not "no drop" (a small set finds nothing significant), so these checks
put the burden of proof on the change.

* ``non_inferiority`` (margin δ): passes only when the one-sided (1 - alpha) lower confidence
  bound of the mean paired difference (current - baseline) over the slice's queries lies above
  -δ;
* ``equivalence`` (TOST): passes only when the lower bound lies above -δ and the upper bound
  below +δ (the two one-sided tests at alpha, the two-sided 1 - 2 alpha interval).

The bounds are Student's t with the t-test and the percentile bootstrap of the mean difference
otherwise (``gate.significance.test``; ``stats.margin_bounds``), at ``gate.significance``'s
alpha, samples and seed, or its defaults (``DEFAULT_SIGNIFICANCE``) when it is not configured.
Each margin check's p-value (for equivalence, the larger of the two one-sided ones; each the
inverse of its bound, ``stats.PairedSpread``) joins the family the drop checks' paired tests are
corrected across (Holm by default, with or without ``gate.significance``): a check passes only
when its corrected p-value is below alpha. Its reported bounds are drawn at the level the
correction held it to, alpha * p / p_corrected (``held_level``; alpha / m for p = 0; alpha itself
without a correction or alone in the family), so a check passes exactly when its reported bound
proves the margin.

A check that does not pass is **not proven** when the observed mean difference itself is at or
past the margin, and **underpowered** when the observed difference is within it but the bound
is not: it fails all the same (never inconclusive, whatever the unjudged policy), and its
message says how many queries would prove the margin at the observed spread and at the level
it was held to (``stats.queries_to_prove``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from evalret.core.gate.model import (
    Evidence,
    Rule,
    Significance,
    ThresholdMode,
    _finite,
    _fmt,
    _Pending,
)
from evalret.core.stats import (
    IntervalMethod,
    PairedSpread,
    adjust_p_values,
    interval_method,
    paired_spread,
    queries_to_prove,
    seed_for,
)


@dataclass(frozen=True)
class Bounds:
    """A margin's interval: the one-sided (1 - alpha) bounds of the mean difference at the
    level ``alpha`` the correction held it to, how they were drawn, and the observed spread
    (the sd of the per-query differences)."""

    low: float
    high: float
    method: IntervalMethod
    alpha: float
    sd: float


@dataclass(frozen=True)
class Tested:
    """A margin's test before the correction: the spread its bounds are read from and its
    uncorrected p-value (for equivalence, the larger of the two one-sided ones)."""

    spread: PairedSpread
    p_value: float


def test_margin(
    diffs: np.ndarray,
    mode: ThresholdMode,
    margin: float,
    settings: Significance,
    seed: np.random.SeedSequence,
) -> Tested:
    """The margin's test on the paired differences ``diffs`` (current - baseline)."""
    spread = paired_spread(diffs, interval_method(settings.test), settings.samples, seed)
    p_low, p_high = spread.p_values(margin)
    return Tested(spread, p_low if mode == "non_inferiority" else max(p_low, p_high))


def held_level(alpha: float, p: float, p_adjusted: float, family: int) -> float:
    """The level a test was held to by the correction: alpha * p / p_adjusted, so that p is
    below it exactly when p_adjusted is below alpha (alpha / family when p is 0)."""
    if p <= 0 or p_adjusted <= 0:
        return alpha / max(family, 1)
    if p_adjusted <= p:  # no correction, or a family of one: alpha itself
        return alpha
    return alpha * p / p_adjusted


def held_bounds(tested: Tested, level: float) -> Bounds:
    """The bounds of a tested margin at the level it was held to."""
    s = tested.spread
    low, high = s.bounds(level)
    return Bounds(low, high, s.method, level, s.se * np.sqrt(s.n) if s.usable else float("nan"))


def margin_evidence(
    mode: ThresholdMode, margin: float, mean: float, bounds: Bounds, proven: bool
) -> tuple[Evidence, int | None]:
    """What a margin's bounds showed (``proven``: its corrected p-value is below alpha), and
    the queries that would prove the margin at the observed mean and spread, at the level it
    was held to (None: none would)."""
    needed = queries_to_prove(mean, bounds.sd, margin, bounds.alpha, mode == "equivalence")
    if proven:
        return "proven", needed
    return ("underpowered" if needed is not None else "not_proven"), needed


def margin_pending(
    rule: Rule, cur: np.ndarray, base: np.ndarray, settings: Significance
) -> _Pending | None:
    """The margin check of ``rule`` (mode non_inferiority or equivalence) on the slice's paired
    values, with its test and uncorrected p-value; None for a rule of mode drop."""
    t = rule.threshold
    if t.mode == "drop" or t.margin is None:
        return None
    cur_mean, base_mean = float(cur.mean()), float(base.mean())
    seed = seed_for(settings.seed, "margin", rule.index, rule.slice, rule.metric)
    tested = test_margin(cur - base, t.mode, t.margin, settings, seed)
    crossed = not _finite(cur_mean, base_mean)
    pending = _Pending(
        rule, t.mode, t.margin, None, base_mean, cur_mean, len(cur), crossed, tested.p_value
    )
    pending.margin = tested
    return pending


def settle(
    c: _Pending, p_adjusted: float | None, alpha: float, family: int
) -> tuple[bool, Bounds, Evidence, int | None]:
    """A pending margin check once the family's correction is known: whether it is proven, its
    bounds at the level it was held to, its evidence and the queries that would prove it."""
    tested = c.margin
    assert isinstance(tested, Tested) and c.baseline is not None
    q = 1.0 if p_adjusted is None else p_adjusted
    proven = not c.crossed and q < alpha
    bounds = held_bounds(tested, held_level(alpha, tested.p_value, q, family))
    mode: ThresholdMode = "equivalence" if c.kind == "equivalence" else "non_inferiority"
    found, needed = margin_evidence(mode, c.threshold, c.current - c.baseline, bounds, proven)
    return proven, bounds, found, needed


def margin_message(
    c: _Pending,
    bounds: Bounds,
    p_adjusted: float | None,
    proven: bool,
    correction: str,
    needed: int | None,
) -> str:
    """What a margin check found: the change, the bounds against the margin, the corrected
    p-value and, when not proven, the queries that would prove it."""
    assert c.baseline is not None
    metric, delta, b = c.rule.metric, c.threshold, bounds
    change = f"{_fmt(c.baseline)} -> {_fmt(c.current)} ({c.current - c.baseline:+.4g})"
    if not _finite(c.current, c.baseline):
        return f"{metric} {change}: not a finite number, so the margin is not proven"
    level = f"{100 * (1 - b.alpha):.4g}% one-sided after {correction}, {b.method}"
    if c.kind == "non_inferiority":
        bound = f"lower bound of the difference {b.low:+.4f} ({level}) against -{delta:g}"
    else:
        interval = f"[{b.low:+.4f}, {b.high:+.4f}]"
        bound = f"bounds of the difference {interval} ({level}) against ±{delta:g}"
    p = "" if p_adjusted is None else f", {correction}-adjusted p = {p_adjusted:.4g}"
    if proven:
        return f"{metric} {change}: {bound}{p}: the margin holds"
    if needed is None:
        return f"{metric} {change}: {bound}{p}: the observed difference itself is past the margin"
    return (
        f"{metric} {change}: {bound}{p}: the margin is not proven; about {needed} queries "
        f"would prove it at the observed spread (sd {b.sd:.4f}, normal approximation)"
    )


@dataclass(frozen=True)
class MarginOutcome:
    """One margin tested within a family (``margin_family``)."""

    bounds: Bounds
    p_value: float
    p_adjusted: float
    passed: bool  # proven: the corrected p-value is below alpha
    evidence: Evidence
    queries_needed: int | None


def margin_family(
    diffs: Sequence[tuple[np.ndarray, np.random.SeedSequence]],
    mode: ThresholdMode,
    margin: float,
    settings: Significance,
) -> list[MarginOutcome]:
    """The margin ``margin`` tested on each set of paired differences (with its seed), the
    p-values corrected across all of them (``settings.correction``), as the gate's margin
    checks are (`evalret compare --margin`)."""
    tested = [test_margin(d, mode, margin, settings, seed) for d, seed in diffs]
    adjusted = adjust_p_values([t.p_value for t in tested], settings.correction)
    out = []
    for t, q in zip(tested, adjusted, strict=True):
        proven = t.spread.usable and float(q) < settings.alpha
        level = held_level(settings.alpha, t.p_value, float(q), len(tested))
        bounds = held_bounds(t, level)
        found, needed = margin_evidence(mode, margin, t.spread.mean, bounds, proven)
        out.append(MarginOutcome(bounds, t.p_value, float(q), proven, found, needed))
    return out
