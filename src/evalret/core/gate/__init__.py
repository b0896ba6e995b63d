"""The gate: (current scores, baseline scores, thresholds) -> one verdict with one entry per check.

Pure: per-query arrays and plain frozen settings in (the config's ``to_core()`` values), ``Check``
values out (the data layer turns them into the report's GateCheck); no files, models or printing.

Checks, for every gated index, slice and metric with a threshold:

* ``min``: fails when the slice's current mean is below the floor (no baseline needed);
* ``max_drop``: fails when baseline - current exceeds the allowed absolute drop;
* ``max_drop_pct``: fails when (baseline - current) / baseline * 100 exceeds the allowed percentage;
* ``ann_min_recall``: fails when a gated approximate index (hnsw, faiss, quantized, pgvector,
  a python one declared approximate) keeps less than the floor of the exact top-k (slice ``all``);
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
clear drop to survive that correction, see stats.resamples_for). Every drop check also carries
the minimum detectable drop for its slice (``mde``: from the spread of the per-query differences,
at the gate's alpha and power) and is marked ``underpowered`` when that exceeds its threshold; its
message does not repeat it: a threshold finer than the MDE is flagged once per run, beside the
checks (``pipeline.gate.threshold_notes``).

Margin checks (a threshold of ``mode`` ``non_inferiority`` or ``equivalence``, with its
``margin``) replace the drop limits of their rule: they pass only when the confidence bounds of
the paired difference prove the margin (``margins``). Every check over per-query values carries
its flip probability under resampling of the queries, and ``gate.min_stability`` can make a
flip-prone check inconclusive (``stability``).

The parts: ``model`` (the settings, rules, ``Check`` values and the verdict), ``drops`` (the floor
and drop checks of every rule), ``bounds`` (the fixed bounds: ANN recall, budgets, ceilings,
health), ``inconclusive`` (when the labels cannot tell, and the ``judged_min`` floor),
``margins`` (non-inferiority and equivalence) and ``stability`` (flip probabilities). Every
name is importable from here.
"""

from __future__ import annotations

from evalret.core.gate.bounds import (
    amount,
    ann_check,
    budget_check,
    ceiling_check,
    health_checks,
)
from evalret.core.gate.drops import (
    evaluate_gate,
)
from evalret.core.gate.inconclusive import (
    CondensedSides,
    JudgedSides,
    judged_cutoff,
    judged_floor_checks,
    mark_inconclusive,
)
from evalret.core.gate.margins import Bounds, MarginOutcome, margin_family
from evalret.core.gate.model import (
    DEFAULT_SIGNIFICANCE,
    DROP_KINDS,
    EPS,
    MARGIN_KINDS,
    MIN_JUDGED_SHARE,
    NOT_FINITE,
    Check,
    CheckKind,
    CheckStatus,
    Evidence,
    GateVerdict,
    HealthBounds,
    InconclusiveReason,
    JudgedFigures,
    Paired,
    Rule,
    Scores,
    Significance,
    Threshold,
    ThresholdMode,
    ThresholdOverride,
    Unjudged,
    UnjudgedPolicy,
    gate_verdict,
    resolve_rules,
)
from evalret.core.gate.stability import (
    RESAMPLED_KINDS,
    Stability,
    flip_probability,
    resample_indices,
    with_stability,
)

__all__ = [
    "DEFAULT_SIGNIFICANCE",
    "DROP_KINDS",
    "EPS",
    "MARGIN_KINDS",
    "MIN_JUDGED_SHARE",
    "NOT_FINITE",
    "RESAMPLED_KINDS",
    "Bounds",
    "Check",
    "CheckKind",
    "CheckStatus",
    "CondensedSides",
    "Evidence",
    "GateVerdict",
    "HealthBounds",
    "InconclusiveReason",
    "JudgedFigures",
    "JudgedSides",
    "MarginOutcome",
    "Paired",
    "Rule",
    "Scores",
    "Significance",
    "Stability",
    "Threshold",
    "ThresholdMode",
    "ThresholdOverride",
    "Unjudged",
    "UnjudgedPolicy",
    "amount",
    "ann_check",
    "budget_check",
    "ceiling_check",
    "evaluate_gate",
    "flip_probability",
    "gate_verdict",
    "health_checks",
    "judged_cutoff",
    "judged_floor_checks",
    "margin_family",
    "mark_inconclusive",
    "resample_indices",
    "resolve_rules",
    "with_stability",
]
