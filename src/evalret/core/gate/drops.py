"""The floor and drop checks of every rule (``evaluate_gate``): per-query means, paired tests
corrected across the checks, the minimum detectable drop, and each check's message."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from evalret.core.gate.margins import Bounds, margin_message, margin_pending, settle
from evalret.core.gate.model import (
    DEFAULT_SIGNIFICANCE,
    EPS,
    MARGIN_KINDS,
    NOT_FINITE,
    Check,
    CheckKind,
    Paired,
    Rule,
    Scores,
    Significance,
    _finite,
    _fmt,
    _Pending,
)
from evalret.core.stats import (
    adjust_p_values,
    minimum_detectable_effect,
    paired_p_value,
    resamples_for,
    seed_for,
)


def evaluate_gate(
    current: Scores,
    baseline: Scores | None,
    slices: Mapping[str, np.ndarray],
    rules: Sequence[Rule],
    significance: Significance | None = None,
) -> list[Check]:
    """Every floor and drop check's outcome. ``baseline`` arrays are aligned with ``current``'s
    queries. (The fixed bounds of an index, its recall floor among them, are ``ann_check``,
    ``ceiling_check`` and ``budget_check``.)"""
    alpha = significance.alpha if significance else 0.05
    power = significance.power if significance else 0.8
    pending: list[_Pending] = []
    paired: Paired = {}
    for rule in rules:
        pending += _rule_checks(rule, current, baseline, slices, alpha, power, significance, paired)
    if significance is not None:
        _attach_p_values(pending, paired, significance)
    p_adj = _adjusted_p_values(pending, significance)
    family = len(p_adj)
    return [_finish(c, p_adj.get(id(c)), alpha, significance, family) for c in pending]


def _rule_checks(
    rule: Rule,
    current: Scores,
    baseline: Scores | None,
    slices: Mapping[str, np.ndarray],
    alpha: float,
    power: float,
    significance: Significance | None,
    paired: Paired,
) -> list[_Pending]:
    """The floor and drop checks of one rule (none when its index, metric or slice has no
    values); a drop check to be tested records its paired values in ``paired``."""
    values = current.get(rule.index, {}).get(rule.metric)
    mask = slices.get(rule.slice)
    if values is None or mask is None or not mask.any():
        return []
    cur = values[mask]
    out = []
    if rule.threshold.min is not None:
        out.append(_floor_check(rule, rule.threshold.min, float(cur.mean()), int(mask.sum())))
    base_values = (baseline or {}).get(rule.index, {}).get(rule.metric)
    if base_values is not None and rule.threshold.mode != "drop":
        margin = margin_pending(rule, cur, base_values[mask], significance or DEFAULT_SIGNIFICANCE)
        out += [margin] if margin is not None else []
    elif base_values is not None:
        drops = _drop_checks(rule, cur, base_values[mask], alpha, power)
        if drops and significance is not None and _finite(drops[0].baseline, drops[0].current):
            paired[drops[0].key] = (cur, base_values[mask])
        out += drops
    return out


def _floor_check(rule: Rule, floor: float, cur_mean: float, n: int) -> _Pending:
    """The ``min`` check: the current mean against a fixed floor."""
    crossed = not _finite(cur_mean) or cur_mean < floor - EPS
    return _Pending(rule, "min", floor, None, None, cur_mean, n, crossed)


def _drop_checks(
    rule: Rule, cur: np.ndarray, base: np.ndarray, alpha: float, power: float
) -> list[_Pending]:
    """The ``max_drop`` and ``max_drop_pct`` checks of one rule on the slice's paired values,
    each with the slice's minimum detectable drop."""
    n = len(cur)
    cur_mean, base_mean = float(cur.mean()), float(base.mean())
    drop = base_mean - cur_mean
    diffs = cur - base
    finite_diffs = n > 1 and bool(np.isfinite(diffs).all())
    sd = float(diffs.std(ddof=1)) if finite_diffs else 0.0  # no MDE from non-finite values
    mde = minimum_detectable_effect(sd, n, alpha, power) if sd > 0 else None
    t = rule.threshold
    out = []
    drops: tuple[tuple[CheckKind, float | None], ...] = (
        ("max_drop", t.max_drop),
        ("max_drop_pct", t.max_drop_pct),
    )
    for kind, limit in drops:
        if limit is None:
            continue
        allowed = limit if kind == "max_drop" else limit / 100 * base_mean
        crossed = not _finite(base_mean, cur_mean) or drop > allowed + EPS
        out.append(_Pending(rule, kind, limit, allowed, base_mean, cur_mean, n, crossed, mde=mde))
    return out


def _attach_p_values(pending: list[_Pending], paired: Paired, significance: Significance) -> None:
    """Run one one-sided paired test per (index, slice, metric), shared by its drop checks,
    with enough resamples for the family they are corrected in (margin checks included)."""
    family = len(paired) + sum(c.kind in MARGIN_KINDS for c in pending)
    samples = resamples_for(family, significance.alpha, significance.samples, False)
    p_of = {
        key: paired_p_value(
            cur,
            base,
            significance.test,
            alternative="less",
            samples=samples,
            seed=seed_for(significance.seed, *key),
        )
        for key, (cur, base) in paired.items()
    }
    for c in pending:
        if c.kind != "min" and c.kind not in MARGIN_KINDS:  # a margin check has its own
            c.p_value = p_of.get(c.key)


def _adjusted_p_values(
    pending: list[_Pending], significance: Significance | None
) -> dict[int, float]:
    """The corrected p-value of every tested check, by the check's id: the drop checks' tests
    (with significance) and the margin checks' in one family; margin checks alone are corrected
    by ``DEFAULT_SIGNIFICANCE``'s correction (Holm) when significance is not configured."""
    tested = [c for c in pending if c.p_value is not None]
    adjusted = adjust_p_values(
        [c.p_value for c in tested if c.p_value is not None],
        (significance or DEFAULT_SIGNIFICANCE).correction,
    )
    return {id(c): float(a) for c, a in zip(tested, adjusted, strict=True)}


def _floor_message(c: _Pending) -> str:
    """What a ``min`` check found."""
    return f"{c.rule.metric} = {_fmt(c.current)}" + (
        f" is {NOT_FINITE}"
        if not _finite(c.current)
        else f" is below the floor {c.threshold:g}"
        if c.crossed
        else f" >= floor {c.threshold:g}"
    )


def _drop_message(
    c: _Pending,
    p_adjusted: float | None,
    significant: bool,
    alpha: float,
    significance: Significance | None,
) -> str:
    """What a drop check found: the change, the allowed drop and, when tested, the test."""
    assert c.baseline is not None
    limit = f"{c.threshold:g}" if c.kind == "max_drop" else f"{c.threshold:g}%"
    change = f"{_fmt(c.baseline)} -> {_fmt(c.current)} ({c.current - c.baseline:+.4f})"
    metric = c.rule.metric
    if not _finite(c.current, c.baseline):
        return f"{metric} {change}: {NOT_FINITE}"
    if not c.crossed:
        return f"{metric} {change}: within the allowed drop {limit}"
    if significance is None:
        return f"{metric} {change}: dropped more than {limit}"
    verdict = "significant" if significant else "not significant"
    return (
        f"{metric} {change}: dropped more than {limit}, {verdict} "
        f"({significance.test}, p = {c.p_value:.4g}, {significance.correction}-adjusted "
        f"{p_adjusted:.4g}, alpha {alpha:g})"
    )


def _finish(
    c: _Pending,
    p_adjusted: float | None,
    alpha: float,
    significance: Significance | None,
    family: int = 1,
) -> Check:
    """The outcome of a pending check once its corrected p-value (if tested) is known."""
    r = c.rule
    delta = None if c.baseline is None else c.current - c.baseline
    underpowered = c.allowed_drop is not None and c.mde is not None and c.mde > c.allowed_drop
    extra: dict[str, object] = {}
    if c.kind == "min":
        passed = not c.crossed
        message = _floor_message(c)
    elif c.kind in MARGIN_KINDS:
        passed, bounds, found, needed = settle(c, p_adjusted, alpha, family)
        correction = (significance or DEFAULT_SIGNIFICANCE).correction
        message = margin_message(c, bounds, p_adjusted, passed, correction, needed)
        extra = _margin_fields(bounds, found, needed)
        underpowered = found == "underpowered"
    else:
        significant = p_adjusted is None or p_adjusted < alpha
        passed = not (c.crossed and significant)
        # a threshold finer than the slice's MDE is flagged once, not in each check's message
        # (pipeline.gate.threshold_notes); ``underpowered`` and ``mde`` keep the figures
        message = _drop_message(c, p_adjusted, significant, alpha, significance)
    return Check(
        name=f"{r.index}/{r.slice}/{r.metric} {c.kind} {c.threshold:g}",
        index=r.index,
        slice=r.slice,
        metric=r.metric,
        kind=c.kind,
        threshold=c.threshold,
        baseline=c.baseline,
        current=c.current,
        delta=delta,
        n_queries=c.n,
        p_value=c.p_value,
        p_adjusted=p_adjusted,
        mde=c.mde,
        underpowered=underpowered,
        passed=passed,
        message=message,
        status="pass" if passed else "fail",
        **extra,  # type: ignore[arg-type]
    )


def _margin_fields(b: Bounds, found: str, needed: int | None) -> dict[str, object]:
    """A margin check's bounds, method, level, evidence and queries needed, as Check fields."""
    return {
        "interval_low": b.low if np.isfinite(b.low) else None,
        "interval_high": b.high if np.isfinite(b.high) else None,
        "interval_method": b.method,
        "interval_confidence": 1 - b.alpha,
        "evidence": found,
        "queries_needed": needed,
    }


# --- when the labels cannot tell ----------------------------------------------------------------
