"""The gate's section of report.json: each check with its outcome and the verdict."""

from __future__ import annotations

from typing import Literal

# the closed vocabularies are the core's, defined once there
from evalret.core.gate import (
    CheckKind,
    CheckStatus,
    Evidence,
    GateVerdict,
    InconclusiveReason,
    UnjudgedPolicy,
)
from evalret.core.stats import Correction, IntervalMethod, PairedTest
from evalret.data.schema.base import (
    Change,
    _Model,
    _Sparse,
)


class GateCheck(_Sparse):
    """One named check of the gate and its outcome. ``passed``: the check does not block the
    gate; ``status`` says pass, fail or inconclusive (absent in reports of older versions, where
    it follows ``passed``)."""

    name: str  # the check's name, as the terminal and report.md show it
    index: str  # the index checked
    slice: str  # the slice checked
    metric: str  # the metric checked
    kind: CheckKind  # what is checked
    threshold: float  # the limit from the config
    baseline: float | None  # the baseline's value; null for a check without one
    current: float | None  # None in a saved report: the value was not a finite number
    delta: float | None  # current - baseline
    n_queries: int  # queries behind the value
    p_value: float | None  # paired test, one-sided (a drop), when significance is configured
    p_adjusted: float | None  # after the correction across all tested checks
    mde: float | None  # minimum detectable drop for this slice (alpha, power of the gate)
    underpowered: bool  # the slice is too small for its threshold to be detectable
    passed: bool  # whether the check does not block the gate
    message: str  # the outcome in words
    # pass | fail | inconclusive (the current judged@k fell too far below the baseline's)
    status: CheckStatus | None = None
    # drop checks: judged@k of the baseline and of the current run on the check's index and
    # slice (absent in older reports; None where a figure is missing)
    judged_k: int | None = None
    judged_baseline: float | None = None  # judged@k of the baseline
    judged_current: float | None = None  # judged@k of this run
    unjudged_policy: UnjudgedPolicy | None = None  # gate.unjudged.policy, on an inconclusive check
    # a drop check whose judged@k fell: the judged-only (condensed) form of its metric, which
    # decided between inconclusive and failed (absent where not read); the baseline's mean
    condensed_baseline: float | None = None
    condensed_current: float | None = None  # the judged-only form's mean in this run
    # margin checks (non_inferiority, equivalence; core.gate.margins), absent on other kinds:
    # the one-sided lower bound of the paired difference current - baseline, at the level the
    # correction held the check to (null: fewer than two queries)
    interval_low: float | None = None
    interval_high: float | None = None  # the one-sided upper bound of the paired difference
    interval_method: IntervalMethod | None = None  # how the bounds were drawn: t or bootstrap
    interval_confidence: float | None = None  # their one-sided level, 1 - the held alpha
    # what the bounds showed: proven, not_proven (the observed difference past the margin) or
    # underpowered (within it, but the bound is not)
    evidence: Evidence | None = None
    # queries that would prove the margin at the observed spread (absent: none would)
    queries_needed: int | None = None
    # a check over per-query values: the share of resamples of its slice's queries in which its
    # rule decides otherwise (core.gate.stability; absent in older reports)
    flip_probability: float | None = None
    # an inconclusive check: unjudged (judged@k fell) or unstable (gate.min_stability)
    inconclusive_reason: InconclusiveReason | None = None

    @property
    def outcome(self) -> CheckStatus:
        """pass, fail or inconclusive (an older report's check: from ``passed``)."""
        if self.status is not None:
            return self.status
        return "pass" if self.passed else "fail"


class GateSignificance(_Model):
    """The paired test a drop must pass to fail the gate (the config's gate.significance)."""

    test: PairedTest  # the paired test over queries
    alpha: float  # significance level
    correction: Correction  # multiple-comparison correction
    samples: int  # permutations or resamples
    seed: int  # seed of the test
    power: float  # power behind the minimum detectable effect


class GateUnjudged(_Model):
    """The config's gate.unjudged: how far judged@k may fall below the baseline's before a drop
    check is inconclusive, and whether that blocks the gate."""

    max_drop: float  # largest fall of judged@k below the baseline's
    policy: UnjudgedPolicy  # warn or fail
    # the floor on judged@k (slice all); null: a tenth of the baseline's (absent in older reports)
    min_judged: float | None = None


class UnderpoweredSlice(_Model):
    """One slice on which a drop threshold is finer than the slice can detect."""

    index: str  # the index the threshold applies to
    slice: str  # the slice
    n_queries: int  # the slice's queries
    sd: float  # the standard deviation of the baseline's per-query metric on the slice
    mde: float  # the minimum detectable drop (one-sided, the gate's alpha and power)
    allowed_drop: float  # the threshold as an absolute drop (max_drop_pct: of the baseline mean)


class ThresholdNote(_Model):
    """A drop threshold finer than the minimum detectable drop of some slices it applies to,
    flagged once when the baseline is read (pipeline.gate.threshold_notes): a drop smaller
    than the MDE may be noise there. A note, never a check: it changes no verdict."""

    # the config key that sets it: gate.thresholds.<metric>.<kind> or gate.overrides[i].<kind>
    key: str
    default: bool  # evalret's default threshold (the config sets no gate.thresholds)
    metric: str  # the metric it applies to
    kind: Literal["max_drop", "max_drop_pct"]  # the drop check it sets
    threshold: float  # its value in the config
    alpha: float  # the level behind the MDE
    power: float  # the power behind the MDE
    slices: list[UnderpoweredSlice]  # the slices whose MDE exceeds it, in check order


class GateStability(_Model):
    """How the checks' flip probabilities were drawn (the run's bootstrap settings) and the
    config's gate.min_stability."""

    samples: int  # resamples of each slice's queries
    seed: int  # seed of the resampling
    min_stability: float | None  # below it a check is inconclusive; null: reported only


class GateSection(_Sparse):
    # the gate's outcome: inconclusive when no check failed but some could not tell
    verdict: GateVerdict
    baseline: str | None  # path of the baseline file
    baseline_fingerprint: str | None  # the fingerprint of the baseline's run
    changed: dict[
        str, Change
    ]  # what differs from the baseline (model, indexes): shown, not refused
    # the paired test drops had to pass; null without gate.significance
    significance: GateSignificance | None
    checks: list[GateCheck]  # every check, in order
    notes: list[str]  # what the reader should know about this verdict
    unjudged: GateUnjudged | None = None  # absent in older reports and with gate.unjudged null
    # drop thresholds finer than some slice's minimum detectable drop, from the baseline (absent
    # when there is none: no baseline, no such threshold, or a report of an older evalret)
    threshold_notes: list[ThresholdNote] = []
    stability: GateStability | None = None  # absent in older reports

    @property
    def failed(self) -> list[GateCheck]:
        """The checks that block the gate (an inconclusive one under policy fail included)."""
        return [c for c in self.checks if not c.passed]

    @property
    def inconclusive(self) -> list[GateCheck]:
        """The checks that could not tell: labels too thin (too few of the new top k judged) or
        a verdict that flips under resampling (``inconclusive_reason``)."""
        return [c for c in self.checks if c.outcome == "inconclusive"]
