"""The gate: (current scores, baseline scores, thresholds) -> one verdict with one entry per check.

Pure: per-query arrays and plain frozen settings in (the config's ``to_core()`` values), ``Check``
values out (the data layer turns them into the report's GateCheck); no files, models or printing.

Checks, for every gated index, slice and metric with a threshold:

* ``min``: fails when the slice's current mean is below the floor (no baseline needed);
* ``max_drop``: fails when baseline - current exceeds the allowed absolute drop;
* ``max_drop_pct``: fails when (baseline - current) / baseline * 100 exceeds the allowed percentage;
* ``ann_min_recall``: fails when a gated approximate index (hnsw, faiss, quantized, pgvector)
  keeps less than the floor of the exact top-k (slice ``all``);
* ``rerank_min_recall``: fails when a rerank index's first stage puts less than the floor of the
  relevant documents among its k candidates (recall@k, slice ``all``);
* ``budget_max``: fails when an index's cost figure (index bytes, bytes per vector, distances
  compared per query, p95 latency) or the run's embedding cost is above its budget, or was not
  measured; the latency check is marked machine-dependent in its message;
* ``health_min`` / ``health_max``: an intrinsic-health figure of the document or query vectors
  outside its bounds (by default: a collapsed embedding fails).

Every drop check records judged@k of the baseline and of the current run on its index and slice
(the share of the top k holding a judged document), k being the metric's cutoff or, for a metric
over the whole ranking (``map``, ``mrr``), the largest cutoff the run computed judged@k at (the
largest cutoff among the configured metrics). When the current judged@k is below the baseline's by
more than ``Unjudged.max_drop``, the labels cannot tell whether the ranking got worse: every drop
check on that index and slice is **inconclusive** (status ``inconclusive``), whatever its numbers
say. Under policy ``warn`` an inconclusive check does not block the gate (its ``passed`` stays
true, the verdict becomes ``inconclusive``); under ``fail`` it blocks it as a failed check does.
A baseline without judged@k figures (an older file) cannot make a check inconclusive: the check's
message says so.

Inconclusive needs a reason: unjudged documents can only hide a drop that the metric's judged-only
(condensed) form, which ranks the judged documents alone and so cannot be moved by unjudged ones,
does not show. A check whose judged@k fell is inconclusive only while the condensed form of its
metric (``ndcg@10`` -> ``ndcg@10:judged``, per query for baseline and run) stays within the
check's threshold (and, with significance configured, only while that condensed drop is not
significant after the correction across the condensed tests); when the condensed form drops past
the threshold too, the check fails as a regression, whatever the policy. Without condensed figures
(a baseline of an older evalret) a check cannot be inconclusive and keeps its own verdict.

``judged_min``: judged@k of a gated index collapsing toward zero is a failure of its own (a
random ranking, document ids that do not match the corpus): the run's judged@k on slice ``all``
must be at least ``Unjudged.min_judged``, by default ``MIN_JUDGED_SHARE`` of the baseline's.

A value that is not a finite number (NaN or infinite, current or baseline) fails its check, of
every kind, and the message says so: no comparison with NaN may pass by accident.

With significance configured, a drop check fails only when the drop crosses its threshold AND a
one-sided paired test of current against baseline over the slice's queries is significant after
the correction across all drop checks (randomization tests draw at least enough resamples for a
clear drop to survive that correction, see stats.resamples_for). Every drop check also states the
minimum detectable drop for its slice (from the spread of the per-query differences, at the gate's
alpha and power) and is marked underpowered when that exceeds its threshold.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from evalret.core.metrics import parse_metric
from evalret.core.stats import (
    Correction,
    PairedTest,
    adjust_p_values,
    minimum_detectable_effect,
    paired_p_value,
    resamples_for,
    seed_for,
)

EPS = 1e-12  # float noise: a drop equal to its threshold passes
Scores = Mapping[str, Mapping[str, np.ndarray]]  # index -> metric -> per-query values
Paired = dict[tuple[str, str, str], tuple[np.ndarray, np.ndarray]]  # rule key -> (current, base)
CheckKind = Literal[
    "min",
    "max_drop",
    "max_drop_pct",
    "ann_min_recall",
    "rerank_min_recall",
    "budget_max",
    "health_min",
    "health_max",
    "judged_min",
]
# pass: every check passed; inconclusive: none failed, some could not tell (policy warn)
GateVerdict = Literal["pass", "fail", "inconclusive"]
CheckStatus = Literal["pass", "fail", "inconclusive"]
UnjudgedPolicy = Literal["warn", "fail"]
DROP_KINDS: tuple[CheckKind, ...] = ("max_drop", "max_drop_pct")
# mean judged@k per index, slice and cutoff k (None: the slice has no query, or no figure)
JudgedFigures = Mapping[str, Mapping[str, Mapping[int, float | None]]]


@dataclass(frozen=True)
class Threshold:
    """Limits for one metric: an absolute floor and/or the largest tolerated drop (None: none)."""

    min: float | None = None
    max_drop: float | None = None
    max_drop_pct: float | None = None


@dataclass(frozen=True, kw_only=True)
class ThresholdOverride(Threshold):
    """A threshold for one metric in one slice and/or index (None: every one), replacing the
    metric's default there."""

    metric: str
    slice: str | None = None
    index: str | None = None


@dataclass(frozen=True)
class Significance:
    """The paired test a drop must pass to fail the gate, and its correction, level and power."""

    test: PairedTest
    alpha: float
    correction: Correction
    samples: int
    seed: int
    power: float


@dataclass(frozen=True)
class HealthBounds:
    """Bounds for one intrinsic-health figure (None: unbounded on that side)."""

    min: float | None = None
    max: float | None = None


# the default floor on judged@k: this share of the baseline's (a run whose top k holds less than
# a tenth of the judged documents the baseline's did is not a new model retrieving new documents,
# but a ranking that has lost touch with the corpus: random, or with the wrong document ids)
MIN_JUDGED_SHARE = 0.1


@dataclass(frozen=True)
class Unjudged:
    """When a drop check cannot tell: the current judged@k below the baseline's by more than
    ``max_drop``; ``policy`` warn lets the gate go on (exit 0), fail blocks it (exit 1).
    ``min_judged``: the floor on judged@k (slice ``all``) below which the run fails outright
    (None: ``MIN_JUDGED_SHARE`` of the baseline's judged@k; 0: no floor)."""

    max_drop: float = 0.10
    policy: UnjudgedPolicy = "warn"
    min_judged: float | None = None


@dataclass(frozen=True)
class Check:
    """One named check of the gate and its outcome (the report's GateCheck, field for field)."""

    name: str
    index: str
    slice: str
    metric: str
    kind: CheckKind
    threshold: float
    baseline: float | None
    current: float
    delta: float | None  # current - baseline
    n_queries: int
    p_value: float | None
    p_adjusted: float | None
    mde: float | None
    underpowered: bool
    passed: bool  # the check does not block the gate (an inconclusive one under policy warn)
    message: str
    status: CheckStatus = "pass"
    # judged@k of the baseline and of the current run on the check's index and slice (drop
    # checks only; None where a figure is missing)
    judged_k: int | None = None
    judged_baseline: float | None = None
    judged_current: float | None = None
    unjudged_policy: UnjudgedPolicy | None = None  # set on an inconclusive check
    # the judged-only form of the metric, baseline and current (a drop check whose judged@k fell;
    # None where not read)
    condensed_baseline: float | None = None
    condensed_current: float | None = None


@dataclass(frozen=True)
class Rule:
    index: str
    slice: str
    metric: str
    threshold: Threshold


def resolve_rules(
    thresholds: Mapping[str, Threshold],
    overrides: Sequence[ThresholdOverride],
    indexes: Sequence[str],
    slices: Sequence[str],
) -> list[Rule]:
    """The threshold of every (index, slice, metric): the metric's default unless an override
    matches; later overrides win, and an override replaces the whole threshold."""
    table: dict[tuple[str, str, str], Threshold] = {}
    for index in indexes:
        for slice_name in slices:
            for metric, t in thresholds.items():
                table[(index, slice_name, metric)] = t
            for o in overrides:
                if o.index in (None, index) and o.slice in (None, slice_name):
                    table[(index, slice_name, o.metric)] = Threshold(
                        min=o.min, max_drop=o.max_drop, max_drop_pct=o.max_drop_pct
                    )
    return [Rule(i, s, m, t) for (i, s, m), t in table.items()]


def _fmt(v: float) -> str:
    return f"{v:.4f}"


def _finite(*values: float | None) -> bool:
    """True when every given value is a finite number (None: absent, not checked)."""
    return all(v is None or bool(np.isfinite(v)) for v in values)


NOT_FINITE = "not a finite number, so the check fails"


@dataclass
class _Pending:
    """A check whose verdict may wait for the corrected p-value."""

    rule: Rule
    kind: CheckKind
    threshold: float
    allowed_drop: float | None
    baseline: float | None
    current: float
    n: int
    crossed: bool  # the threshold is crossed, or a value is not finite
    p_value: float | None = None
    mde: float | None = None

    @property
    def key(self) -> tuple[str, str, str]:
        """The (index, slice, metric) the check is about: one paired test per key."""
        return (self.rule.index, self.rule.slice, self.rule.metric)


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
    return [_finish(c, p_adj.get(id(c)), alpha, significance) for c in pending]


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
    if base_values is not None:
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
    """Run one one-sided paired test per (index, slice, metric), shared by its drop checks."""
    samples = resamples_for(len(paired), significance.alpha, significance.samples, False)
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
        if c.kind != "min":
            c.p_value = p_of.get(c.key)


def _adjusted_p_values(
    pending: list[_Pending], significance: Significance | None
) -> dict[int, float]:
    """The corrected p-value of every tested check, by the check's id."""
    tested = [c for c in pending if c.p_value is not None]
    adjusted = adjust_p_values(
        [c.p_value for c in tested if c.p_value is not None],
        significance.correction if significance else "none",
    )
    return {id(c): float(a) for c, a in zip(tested, adjusted, strict=True)}


def ann_check(index: str, recall: float, floor: float, k: int, n_all: int) -> Check:
    """The recall floor of approximate index ``index`` against exact search's top k: one check
    on slice ``all``."""
    who = "HNSW" if index == "hnsw" else index
    return _at_least(
        (index, "all", f"ann_recall@{k}", "ann_min_recall"),
        floor,
        recall,
        n_all,
        f"{who} keeps {_fmt(recall)} of the exact top-{k}",
    )


def _at_least(
    where: tuple[str, str, str, CheckKind],
    floor: float,
    value: float,
    n: int,
    found: str,
    qualifier: str = "",
) -> Check:
    """``value`` at least ``floor`` (``where``: index, slice, metric, kind), the message
    ``found`` followed by ``qualifier`` and the floor, or by why the value cannot be read."""
    index, slice_name, metric, _ = where
    passed = _finite(value) and value >= floor - EPS
    tail = (
        f"{qualifier}{'' if passed else ', below'} the floor {floor:g}"
        if _finite(value)
        else f": {NOT_FINITE}"
    )
    return _bound_check(
        f"{index}/{slice_name}/{metric} min {floor:g}",
        where,
        floor,
        value,
        n,
        passed,
        found + tail,
    )


def amount(v: float) -> str:
    """A budget's figure or limit as a reader counts it: whole numbers with thousands
    separators (bytes, distances), others to 4 significant digits (ms, cost)."""
    if float(v).is_integer():
        return f"{v:,.0f}"
    return f"{v:,.1f}" if abs(v) >= 100 else f"{v:.4g}"


def budget_check(
    index: str, figure: str, limit: float, value: float | None, n: int, note: str = ""
) -> Check:
    """A budget: ``figure`` of ``index`` (``run`` for the run's own cost) at most ``limit``.
    A figure the run did not measure (``value`` None) fails: a budget never passes on nothing.
    ``note`` follows the message (the latency budget says it depends on the machine)."""
    passed = value is not None and _finite(value) and value <= limit + EPS
    if value is None:
        found = f"{figure} of {index} was not measured in this run"
    elif not _finite(value):
        found = f"{figure} of {index}: {NOT_FINITE}"
    else:
        found = f"{figure} of {index} = {amount(value)}" + (
            f", within the budget {amount(limit)}"
            if passed
            else f", over the budget {amount(limit)}"
        )
    return _bound_check(
        f"{index}/budget/{figure} max {amount(limit)}",
        (index, "all", figure, "budget_max"),
        limit,
        float("nan") if value is None else value,
        n,
        passed,
        found + note,
    )


def ceiling_check(
    index: str, first_stage: str, k: int, recall: float, floor: float, n: int
) -> Check:
    """The floor on a rerank index's candidate ceiling (its first stage's recall@k, slice
    ``all``): one check per rerank index."""
    return _at_least(
        (index, "all", f"candidate_recall@{k}", "rerank_min_recall"),
        floor,
        recall,
        n,
        f"{first_stage} puts {_fmt(recall)} of the relevant documents in {index}'s top-{k}",
        " candidates",
    )


def _bound_check(
    name: str,
    where: tuple[str, str, str, CheckKind],
    threshold: float,
    current: float,
    n: int,
    passed: bool,
    message: str,
) -> Check:
    """A check of one value against a fixed bound: no baseline, no test. ``where`` is
    (index, slice, metric, kind)."""
    index, slice_name, metric, kind = where
    return Check(
        name=name,
        index=index,
        slice=slice_name,
        metric=metric,
        kind=kind,
        threshold=threshold,
        baseline=None,
        current=current,
        delta=None,
        n_queries=n,
        p_value=None,
        p_adjusted=None,
        mde=None,
        underpowered=False,
        passed=passed,
        message=message,
        status="pass" if passed else "fail",
    )


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


def _underpowered_note(c: _Pending, alpha: float, significance: Significance | None) -> str:
    """Why a drop check's slice cannot show a drop of its threshold's size."""
    return (
        f"; slice too small for this threshold: with {c.n} queries the minimum "
        f"detectable drop is {c.mde:.4f} (alpha {alpha:g}, power "
        f"{significance.power if significance else 0.8:g})"
    )


def _finish(
    c: _Pending, p_adjusted: float | None, alpha: float, significance: Significance | None
) -> Check:
    """The outcome of a pending check once its corrected p-value (if tested) is known."""
    r = c.rule
    delta = None if c.baseline is None else c.current - c.baseline
    underpowered = c.allowed_drop is not None and c.mde is not None and c.mde > c.allowed_drop
    if c.kind == "min":
        passed = not c.crossed
        message = _floor_message(c)
    else:
        significant = p_adjusted is None or p_adjusted < alpha
        passed = not (c.crossed and significant)
        message = _drop_message(c, p_adjusted, significant, alpha, significance)
        if underpowered:
            message += _underpowered_note(c, alpha, significance)
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
    )


# --- when the labels cannot tell ----------------------------------------------------------------


@dataclass(frozen=True)
class JudgedSides:
    """judged@k of the current run and of the baseline (None: no baseline), per index, slice
    and cutoff."""

    current: JudgedFigures
    baseline: JudgedFigures | None


@dataclass(frozen=True)
class CondensedSides:
    """The judged-only (condensed) form of each metric, per query, of the current run and of
    the baseline (aligned with the current run's queries; an index or metric missing: no
    figure), keyed by the metric it stands for (``ndcg@10`` holds ``ndcg@10:judged``'s values),
    and the slices' query masks."""

    current: Scores
    baseline: Scores
    slices: Mapping[str, np.ndarray]


def judged_cutoff(metric: str, available: Iterable[int]) -> int | None:
    """The k of the judged@k a check on ``metric`` reads: the metric's cutoff; for a metric over
    the whole ranking, the largest of the ``available`` cutoffs (those of the configured
    metrics); None when there is none."""
    k = parse_metric(metric).k
    if k is not None:
        return k
    ks = list(available)
    return max(ks) if ks else None


def mark_inconclusive(
    checks: Sequence[Check],
    judged: JudgedSides,
    unjudged: Unjudged | None,
    condensed: CondensedSides | None = None,
    significance: Significance | None = None,
) -> list[Check]:
    """``checks`` with judged@k of baseline and current on every drop check, and the drop
    checks of a slice whose current judged@k fell more than ``unjudged.max_drop`` below the
    baseline's marked inconclusive (None: never inconclusive, the figures still recorded) -
    unless the judged-only form of the check's metric (``condensed``) drops past the check's
    threshold too: then the check fails, whatever the policy; without condensed figures the
    check keeps its own verdict."""
    out = [_with_judged(c, judged) if c.kind in DROP_KINDS else c for c in checks]
    if unjudged is None:
        return out
    fell = [i for i, c in enumerate(out) if _judged_fell(c, unjudged)]
    reasons = _condensed_drops([out[i] for i in fell], condensed, significance)
    for i, reason in zip(fell, reasons, strict=True):
        out[i] = _unjudged_outcome(out[i], unjudged, reason)
    return out


def _with_judged(c: Check, judged: JudgedSides) -> Check:
    """One drop check with its judged@k figures (a message when one is missing)."""
    figures = judged.current.get(c.index, {}).get(c.slice, {})
    k = judged_cutoff(c.metric, figures)
    if k is None:
        return replace(c, message=f"{c.message}; no judged@k figure, so it cannot be inconclusive")
    current = figures.get(k)
    base = (judged.baseline or {}).get(c.index, {}).get(c.slice, {}).get(k)
    c = replace(c, judged_k=k, judged_baseline=base, judged_current=current)
    if base is None or current is None:
        whose = "the baseline (from an older evalret?)" if base is None else "this run"
        return replace(
            c,
            message=f"{c.message}; {whose} has no judged@{k} figure for this slice, so this "
            "check cannot be inconclusive",
        )
    return c


def _judged_fell(c: Check, unjudged: Unjudged) -> bool:
    """Whether a drop check's judged@k fell more than ``unjudged.max_drop`` (both figures read,
    every value finite)."""
    base, current = c.judged_baseline, c.judged_current
    if c.kind not in DROP_KINDS or base is None or current is None:
        return False
    if not _finite(c.current, c.baseline, base, current):
        return False
    return current < base - unjudged.max_drop - EPS


@dataclass(frozen=True)
class _Condensed:
    """The judged-only form of a check's metric on its slice: means, and whether its drop
    crosses the check's threshold (significantly, when tested)."""

    baseline: float
    current: float
    crossed: bool  # past the threshold and, when tested, significant: a regression
    beyond: bool  # past the threshold
    test: str = ""  # the paired test's outcome, in words (with significance)


def _condensed_drops(
    checks: Sequence[Check], condensed: CondensedSides | None, significance: Significance | None
) -> list[_Condensed | None]:
    """For each check, the drop of its metric's judged-only form over its slice (None: no such
    figure for the run or the baseline)."""
    found: list[_Condensed | None] = []
    paired: Paired = {}
    for c in checks:
        cur = base = mask = None
        if condensed is not None:
            cur = condensed.current.get(c.index, {}).get(c.metric)
            base = condensed.baseline.get(c.index, {}).get(c.metric)
            mask = condensed.slices.get(c.slice)
        if cur is None or base is None or mask is None or not mask.any():
            found.append(None)
            continue
        cur_mean, base_mean = float(cur[mask].mean()), float(base[mask].mean())
        allowed = c.threshold if c.kind == "max_drop" else c.threshold / 100 * base_mean
        crossed = not _finite(cur_mean, base_mean) or base_mean - cur_mean > allowed + EPS
        found.append(_Condensed(base_mean, cur_mean, crossed, crossed))
        if crossed and significance is not None and _finite(cur_mean, base_mean):
            paired[(c.index, c.slice, c.metric)] = (cur[mask], base[mask])
    if not paired or significance is None:
        return found
    keys = list(paired)
    samples = resamples_for(len(keys), significance.alpha, significance.samples, False)
    p = [
        paired_p_value(
            *paired[key],
            significance.test,
            alternative="less",
            samples=samples,
            seed=seed_for(significance.seed, "judged", *key),
        )
        for key in keys
    ]
    adjusted = dict(zip(keys, adjust_p_values(p, significance.correction), strict=True))
    for i, (c, f) in enumerate(zip(checks, found, strict=True)):
        q = adjusted.get((c.index, c.slice, c.metric))
        if f is not None and f.crossed and q is not None:
            significant = q < significance.alpha
            found[i] = replace(
                f,
                crossed=significant,
                test=f", {'significant' if significant else 'not significant'} "
                f"({significance.test}, {significance.correction}-adjusted p = {q:.4g})",
            )
    return found


def _unjudged_outcome(c: Check, unjudged: Unjudged, reason: _Condensed | None) -> Check:
    """A drop check whose judged@k fell: failed when the judged-only form of its metric drops
    past the threshold too, inconclusive when it does not, its own verdict when there is no
    judged-only figure to tell."""
    k, base, current = c.judged_k, c.judged_baseline, c.judged_current
    assert base is not None and current is not None
    fell = f"judged@{k} fell from {_fmt(base)} to {_fmt(current)}"
    if reason is None:
        return replace(
            c,
            message=f"{c.message}; {fell}, but the baseline or this run has no judged-only "
            f"{c.metric}:judged figure to tell whether unjudged documents explain the drop (a "
            "baseline of an older evalret: save a new one; or rankings no deeper than the "
            "cutoff, which cannot show where the judged documents went: raise search_depth), "
            "so this check cannot be inconclusive",
        )
    c = replace(c, condensed_baseline=reason.baseline, condensed_current=reason.current)
    limit = f"{c.threshold:g}" if c.kind == "max_drop" else f"{c.threshold:g}%"
    judged_only = f"judged-only {c.metric}:judged {_fmt(reason.baseline)} -> {_fmt(reason.current)}"
    if reason.crossed:
        return replace(
            c,
            status="fail",
            passed=False,
            message=f"{c.message}; FAILED although {fell}: the {judged_only} dropped more than "
            f"{limit}{reason.test} too, and unjudged documents cannot move it",
        )
    moved = f"dropped more than {limit}" if reason.beyond else f"stays within {limit}"
    return replace(
        c,
        status="inconclusive",
        passed=unjudged.policy == "warn",
        unjudged_policy=unjudged.policy,
        message=f"{c.message}; INCONCLUSIVE: {fell}, more than gate.unjudged.max_drop "
        f"{unjudged.max_drop:g}: {1 - current:.0%} of the new top {k} was never judged, and the "
        f"{judged_only} {moved}{reason.test}, so the labels cannot tell "
        f"(policy {unjudged.policy})",
    )


def judged_floor_checks(
    judged: JudgedSides, unjudged: Unjudged | None, indexes: Sequence[str], n_all: int
) -> list[Check]:
    """``judged_min`` on every gated index that has judged@k figures (slice ``all``, the
    largest k computed): judged@k collapsing toward zero fails the gate. The floor is
    ``unjudged.min_judged``, or ``MIN_JUDGED_SHARE`` of the baseline's judged@k (no check
    without a baseline figure); 0 and ``unjudged`` None: no check."""
    if unjudged is None or unjudged.min_judged == 0:
        return []
    out = []
    for index in indexes:
        figures = judged.current.get(index, {}).get("all", {})
        base_figures = (judged.baseline or {}).get(index, {}).get("all", {})
        # a default floor compares like with like: the largest k both sides have
        ks = [k for k in figures if unjudged.min_judged is not None or k in base_figures]
        k = max(ks, default=None)
        current = figures.get(k) if k is not None else None
        if k is None or current is None:
            continue
        base = base_figures.get(k)
        if unjudged.min_judged is not None:
            floor, origin = unjudged.min_judged, "gate.unjudged.min_judged"
        elif base is not None and _finite(base):
            floor = MIN_JUDGED_SHARE * base
            origin = f"{MIN_JUDGED_SHARE:g} x the baseline's {_fmt(base)}"
        else:
            continue
        check = _at_least(
            (index, "all", f"judged@{k}", "judged_min"),
            floor,
            current,
            n_all,
            f"judged@{k} = {_fmt(current)},",
        )
        why = (
            ""
            if check.passed or not _finite(current)
            else f": the top {k} holds almost no judged document, which no new model explains; "
            "check the run's document ids and its retrieval (a random ranking, ids that do not "
            "match the corpus)"
        )
        out.append(replace(check, message=f"{check.message} ({origin}){why}"))
    return out


def gate_verdict(checks: Sequence[Check]) -> GateVerdict:
    """fail when a check blocks the gate, else inconclusive when a check could not tell, else
    pass."""
    if not all(c.passed for c in checks):
        return "fail"
    if any(c.status == "inconclusive" for c in checks):
        return "inconclusive"
    return "pass"


def health_checks(
    figures: Mapping[str, Mapping[str, float | int | bool] | None],
    thresholds: Mapping[str, HealthBounds],
) -> list[Check]:
    """Checks of intrinsic-health figures. ``figures`` maps "documents" / "queries" to their
    figures (None: not computed); a threshold key names a figure for both, or one of them as
    "documents.<figure>" / "queries.<figure>". Booleans compare as 0 / 1."""
    checks = []
    for key, t in thresholds.items():
        which, _, figure = key.rpartition(".")
        for matrix in (which,) if which else ("documents", "queries"):
            values = figures.get(matrix)
            if values is None or figure not in values:
                continue
            bounds: tuple[tuple[CheckKind, float | None], ...] = (
                ("health_min", t.min),
                ("health_max", t.max),
            )
            for kind, limit in bounds:
                if limit is not None:
                    checks.append(_health_check(matrix, figure, values, kind, limit))
    return checks


def _health_check(
    matrix: str,
    figure: str,
    values: Mapping[str, float | int | bool],
    kind: CheckKind,
    limit: float,
) -> Check:
    """One bound (``health_min`` or ``health_max``) on one figure of one matrix."""
    current = float(values[figure])
    n = int(values.get("n_vectors", 0))
    within = current >= limit - EPS if kind == "health_min" else current <= limit + EPS
    passed = _finite(current) and within
    bound = f"{'>=' if kind == 'health_min' else '<='} {limit:g}"
    shown = str(bool(current)).lower() if isinstance(values[figure], bool) else _fmt(current)
    outcome = (
        NOT_FINITE if not _finite(current) else f"within {bound}" if passed else f"outside {bound}"
    )
    return _bound_check(
        f"embedding/{matrix}/{figure} {kind.split('_')[1]} {limit:g}",
        ("embedding", matrix, figure, kind),
        limit,
        current,
        n,
        passed,
        f"{matrix} {figure} = {shown}: {outcome}",
    )
