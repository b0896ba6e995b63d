"""When the labels cannot tell: drop checks made inconclusive by judged@k falling, unless the
metric's judged-only form shows the drop too, and the ``judged_min`` floor. The rule is stated
in the package's docstring (``evalret.core.gate``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from evalret.core.gate.bounds import (
    _at_least,
)
from evalret.core.gate.model import (
    DROP_KINDS,
    EPS,
    MARGIN_KINDS,
    MIN_JUDGED_SHARE,
    Check,
    JudgedFigures,
    Paired,
    Scores,
    Significance,
    Unjudged,
    _finite,
    _fmt,
    made_inconclusive,
)
from evalret.core.metrics import parse_metric
from evalret.core.stats import (
    adjust_p_values,
    paired_p_value,
    resamples_for,
    seed_for,
)


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
    if c.kind in MARGIN_KINDS and not c.passed:
        return False  # a margin not proven stays failed: the burden of proof is the change's
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
        # a margin check's condensed form is held to its margin as a drop limit
        allowed = c.threshold / 100 * base_mean if c.kind == "max_drop_pct" else c.threshold
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
    limit = f"{c.threshold:g}%" if c.kind == "max_drop_pct" else f"{c.threshold:g}"
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
    why = (
        f"{fell}, more than gate.unjudged.max_drop {unjudged.max_drop:g}: {1 - current:.0%} of "
        f"the new top {k} was never judged, and the {judged_only} {moved}{reason.test}, so the "
        "labels cannot tell"
    )
    return made_inconclusive(c, unjudged.policy, "unjudged", why)


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
