"""The gate's settings (thresholds, significance, health bounds, the unjudged policy), its
rules and its ``Check`` values, and the verdict over them. The gate as a whole is described in
the package's docstring (``evalret.core.gate``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from evalret.choices import ThresholdMode as ThresholdMode
from evalret.core.stats import (
    Correction,
    IntervalMethod,
    PairedTest,
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
    "non_inferiority",
    "equivalence",
]
# pass: every check passed; inconclusive: none failed, some could not tell (policy warn)
GateVerdict = Literal["pass", "fail", "inconclusive"]
CheckStatus = Literal["pass", "fail", "inconclusive"]
UnjudgedPolicy = Literal["warn", "fail"]
# the checks of a change against the baseline, over the slice's paired queries
DROP_KINDS: tuple[CheckKind, ...] = ("max_drop", "max_drop_pct", "non_inferiority", "equivalence")
MARGIN_KINDS: tuple[CheckKind, ...] = ("non_inferiority", "equivalence")
# a threshold's drop rule: today's drop limits (max_drop, max_drop_pct, tested when significance
# is configured), or a margin the paired difference's confidence bounds must prove
# what a margin check's bounds showed: the margin is proven; not proven, the observed difference
# itself at or past it; or not proven although the observed difference is within it, so more
# queries at the observed spread would prove it (underpowered)
Evidence = Literal["proven", "not_proven", "underpowered"]
# why a check is inconclusive: judged@k fell (core.gate.inconclusive), or its verdict flips
# under resampling of the queries more often than gate.min_stability allows (core.gate.stability)
InconclusiveReason = Literal["unjudged", "unstable"]
# mean judged@k per index, slice and cutoff k (None: the slice has no query, or no figure)
JudgedFigures = Mapping[str, Mapping[str, Mapping[int, float | None]]]


@dataclass(frozen=True)
class Threshold:
    """Limits for one metric: an absolute floor and/or the largest tolerated drop (None: none);
    with ``mode`` non_inferiority or equivalence, the ``margin`` δ the paired difference's
    bounds must prove instead of a drop limit (core.gate.margins)."""

    min: float | None = None
    max_drop: float | None = None
    max_drop_pct: float | None = None
    mode: ThresholdMode = "drop"
    margin: float | None = None


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


# the settings a margin check reads when gate.significance is not configured (its defaults)
DEFAULT_SIGNIFICANCE = Significance("randomization", 0.05, "holm", 10_000, 0, 0.8)


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
    # a margin check: the one-sided (1 - alpha) bounds of the paired difference (current -
    # baseline), how they were drawn, what they showed and how many queries would prove the
    # margin at the observed spread (None: no number would)
    interval_low: float | None = None
    interval_high: float | None = None
    interval_method: IntervalMethod | None = None
    interval_confidence: float | None = None
    evidence: Evidence | None = None
    queries_needed: int | None = None
    # the share of resamples of the slice's queries in which the check's rule decides otherwise
    # (core.gate.stability; None: not a check over per-query values)
    flip_probability: float | None = None
    inconclusive_reason: InconclusiveReason | None = None  # set on an inconclusive check


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
                        min=o.min,
                        max_drop=o.max_drop,
                        max_drop_pct=o.max_drop_pct,
                        mode=o.mode,
                        margin=o.margin,
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
    margin: object = None  # a margin check's test (core.gate.margins.Tested)

    @property
    def key(self) -> tuple[str, str, str]:
        """The (index, slice, metric) the check is about: one paired test per key."""
        return (self.rule.index, self.rule.slice, self.rule.metric)


def gate_verdict(checks: Sequence[Check]) -> GateVerdict:
    """fail when a check blocks the gate, else inconclusive when a check could not tell, else
    pass."""
    if not all(c.passed for c in checks):
        return "fail"
    if any(c.status == "inconclusive" for c in checks):
        return "inconclusive"
    return "pass"


def made_inconclusive(
    c: Check, policy: UnjudgedPolicy, reason: InconclusiveReason, why: str
) -> Check:
    """``c`` turned inconclusive for ``reason`` (the one rule of both ways in): it blocks the gate
    only under policy fail; its message gains ``why`` and the policy."""
    return replace(
        c,
        status="inconclusive",
        passed=policy == "warn",
        unjudged_policy=policy,
        inconclusive_reason=reason,
        message=f"{c.message}; INCONCLUSIVE: {why} (policy {policy})",
    )
