"""The gate stage of a run: check that the gate's configuration fits the golden set, resolve the
configured thresholds into the core's rules, run the core gate (core.gate) on the run and its
baseline, and assemble the report's gate section.

The checks themselves are the core's; data.baseline reads the baseline and turns each core
``Check`` into the schema's ``GateCheck``.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from evalret.core.gate import (
    DEFAULT_SIGNIFICANCE,
    Check,
    CondensedSides,
    JudgedFigures,
    JudgedSides,
    Rule,
    Stability,
    Threshold,
    ann_check,
    budget_check,
    ceiling_check,
    evaluate_gate,
    gate_verdict,
    health_checks,
    judged_floor_checks,
    mark_inconclusive,
    resolve_rules,
    with_stability,
)
from evalret.core.slices import Slice
from evalret.core.stats import minimum_detectable_effect
from evalret.data.baseline import (
    aligned_condensed,
    aligned_scores,
    changed_settings,
    gate_check,
)
from evalret.data.config import Config, GateConfig
from evalret.data.schema import (
    AnnSection,
    GateSection,
    GateStability,
    GateUnjudged,
    RunReport,
    Spread,
    ThresholdNote,
    UnderpoweredSlice,
)
from evalret.errors import IncomparableError, InputError, Problem
from evalret.report.run_notes import machine_text


def slice_setting_problems(config: Config, names: list[str]) -> list[Problem]:
    """The slice settings of ``config`` that match none of the run's slices with queries
    (``names``), once the golden set's slices are known (what the config alone can tell,
    data.config refuses when it is read): gate.slices or an override naming a slice the run
    does not have (a typo, a tag gone from the golden set), whose checks would silently not run
    or keep the default threshold, and a custom slice rule (slices.custom) that matches no
    query the run scores. A slice without a query has nothing to check either."""
    named: list[tuple[str, str | None]] = [("gate.slices", n) for n in config.gate.slices or []]
    named += [(f"gate.overrides[{i}].slice", o.slice) for i, o in enumerate(config.gate.overrides)]
    named += [(f"slices.custom[{i}]", d.name) for i, d in enumerate(config.slices.custom)]
    return [
        Problem(f"{key}: {name}: no query of the run is in it", code="slice-without-queries")
        for key, name in named
        if name is not None and name not in names
    ]


def check_gate_slices(config: Config, slices: list[Slice]) -> None:
    """Refuse (exit 2) a slice setting that matches no query of the run
    (``slice_setting_problems``): the gate could pass on nothing it was asked to check."""
    names = [s.name for s in slices if s.mask.any()]
    problems = slice_setting_problems(config, names)
    if problems:
        raise InputError(
            "the config names slices with no query in this run (its slices with queries: "
            f"{', '.join(names)})",
            problems,
        )


def _check_drops_answerable(
    rules: list[Rule], base_scores: dict[str, dict[str, np.ndarray]], source: str
) -> None:
    """Refuse (exit 2) a baseline without the index or metric of a drop check the config asks
    for: skipping those checks would let a gate pass that checked nothing it was asked to."""
    problems = {}
    for r in rules:
        t = r.threshold
        if t.max_drop is None and t.max_drop_pct is None and t.mode == "drop":
            continue  # a floor needs no baseline
        if r.index not in base_scores:
            problems[r.index] = f"{r.index}: no results in the baseline"
        elif r.metric not in base_scores[r.index]:
            problems[f"{r.index} {r.metric}"] = f"{r.index}: no {r.metric} in the baseline"
    if problems:
        raise IncomparableError(
            f"cannot gate against baseline {source}: it lacks what drop checks of the config "
            "compare with (save a new baseline on purpose with --save-baseline)",
            [Problem(p) for p in problems.values()],
        )


def _gate_checks(
    config: Config,
    current: RunReport,
    masks: dict[str, np.ndarray],
    indexes: list[str],
    baseline: RunReport | None,
    baseline_source: str | None,
) -> list[Check]:
    """Every check of the configured gate on ``current`` (drop checks only with a baseline,
    which must hold what they compare with)."""
    gate = config.gate
    thresholds = {m: t.to_core() for m, t in config.thresholds.items()}
    overrides = [o.to_core() for o in gate.overrides]
    rules = resolve_rules(thresholds, overrides, indexes, list(masks))
    base_scores = None
    if baseline is not None:
        base_scores = aligned_scores(baseline, current.query_ids)
        _check_drops_answerable(rules, base_scores, baseline_source or "baseline")
    significance = gate.significance.to_core() if gate.significance else None
    current_scores = aligned_scores(current, current.query_ids)
    checks = evaluate_gate(
        current_scores,
        base_scores,
        masks,
        rules,
        significance,
    )
    checks += _ann_checks(current, gate, indexes)
    judged = JudgedSides(judged_figures(current), judged_figures(baseline) if baseline else None)
    unjudged = gate.unjudged.to_core() if gate.unjudged else None
    condensed = CondensedSides(
        aligned_condensed(current, current.query_ids),
        aligned_condensed(baseline, current.query_ids) if baseline is not None else {},
        masks,
    )
    checks = mark_inconclusive(checks, judged, unjudged, condensed, significance)
    stability = Stability(
        samples=config.bootstrap.samples,
        seed=config.bootstrap.seed,
        alpha=(significance or DEFAULT_SIGNIFICANCE).alpha,
        min_stability=gate.min_stability,
        policy=unjudged.policy if unjudged is not None else "warn",
    )
    checks = with_stability(checks, current_scores, base_scores, masks, stability)
    checks += judged_floor_checks(judged, unjudged, indexes, len(current.query_ids))
    if current.intrinsic is not None:
        i = current.intrinsic
        health = {key: t.to_core() for key, t in gate.health.items()}
        checks += health_checks({"documents": i.documents, "queries": i.queries}, health)
    ceilings = _ceiling_checks(current, gate.rerank_min_recall, indexes)
    return checks + ceilings + _budget_checks(current, gate)


def _ann_checks(current: RunReport, gate: GateConfig, indexes: list[str]) -> list[Check]:
    """``gate.ann_min_recall`` on every gated approximate index, HNSW as any other (slice
    ``all``). An index searched several times (its section's ``stability``) is held to the
    floor on the mean recall over its repeats, or with ``gate.ann_floor_on: worst`` on its
    worst repeat's (every repeat counts: one whose recall is not a number fails the check)."""
    if gate.ann_min_recall is None:
        return []
    out = []
    key = f"recall@{gate.ann_k}"
    for section in current.ann_sections():
        name, all_ = section.index, section.slices.get("all")
        recall = all_.recall.get(key) if all_ is not None else None
        over = ""
        spread = _repeat_spread(section, key)
        if spread is not None and all_ is not None:
            recall = spread.mean if gate.ann_floor_on == "mean" else spread.min
            recall = float("nan") if recall is None and all_.n_queries else recall
            over = f" ({gate.ann_floor_on} of {len(spread.values)} repeats)"
        if name in indexes and all_ is not None and recall is not None:
            check = ann_check(name, recall, gate.ann_min_recall, gate.ann_k, all_.n_queries, over)
            out.append(check)
    return out


def _repeat_spread(section: AnnSection, key: str) -> Spread | None:
    """The spread of ``key`` on slice ``all`` over the index's repeats (None: searched once)."""
    if section.stability is None or "all" not in section.stability.slices:
        return None
    return section.stability.slices["all"].recall.get(key)


def _budget_checks(current: RunReport, gate: GateConfig) -> list[Check]:
    """Every budget of ``gate.budgets`` (each on a gated index: the config refuses others) and
    ``gate.max_cost_per_run`` on the run's measured figures (a figure not measured fails its
    budget)."""
    n = len(current.query_ids)
    anns = current.ann
    timed = current.latency.indexes if current.latency is not None else {}
    out = []
    for index, budget in gate.budgets.items():
        ann = anns.get(index)
        for figure in ("index_bytes", "bytes_per_vector", "distances_per_query"):
            limit = getattr(budget, f"max_{figure}")
            if limit is not None:
                value = getattr(ann, figure) if ann is not None else None
                out.append(budget_check(index, figure, limit, value, n))
        if budget.max_p95_ms is not None:
            t = timed.get(index)
            note = (
                f" (machine-dependent: {machine_text(current.latency)})" if current.latency else ""
            )
            p95 = t.p95_ms if t is not None else None
            out.append(budget_check(index, "p95_ms", budget.max_p95_ms, p95, n, note))
    if gate.max_cost_per_run is not None:
        api = current.embedding.api
        cold = api.cold_cost if api is not None else None
        out.append(budget_check("run", "embedding_cost", gate.max_cost_per_run, cold, n))
    return out


def _ceiling_checks(current: RunReport, floor: float | None, indexes: list[str]) -> list[Check]:
    """``gate.rerank_min_recall`` on every gated rerank index of the run (slice ``all``)."""
    if floor is None:
        return []
    out = []
    for section in current.rerank.values():
        all_ = section.slices.get("all")
        if section.index in indexes and all_ is not None and all_.ceiling is not None:
            out.append(
                ceiling_check(
                    section.index,
                    section.first_stage,
                    section.k,
                    all_.ceiling,
                    floor,
                    all_.n_queries,
                )
            )
    return out


def judged_figures(report: RunReport) -> JudgedFigures:
    """Mean judged@k of every index and slice of ``report``, by cutoff k (a report of an older
    evalret may have none: empty)."""
    return {
        index: {
            name: {int(key.split("@", 1)[1]): v for key, v in s.judged.items()}
            for name, s in result.slices.items()
        }
        for index, result in report.indexes.items()
    }


def threshold_notes(
    config: Config,
    baseline: RunReport,
    query_ids: list[str],
    masks: dict[str, np.ndarray],
    indexes: list[str],
) -> list[ThresholdNote]:
    """The drop thresholds finer than the minimum detectable drop (MDE) of a slice they apply
    to, one note per threshold key naming those slices: flagged once, from the config and the
    baseline alone, when the baseline is read (not per check, nor from the current run).

    A slice's MDE is ``core.stats.minimum_detectable_effect`` (one-sided, the gate's alpha and
    power, 0.05 and 0.8 without gate.significance, as ``core.gate.evaluate_gate``) with sd the
    standard deviation of the baseline's per-query metric on the slice: the sd of the per-query
    differences equals it when two systems' scores correlate at 0.5, `evalret validate
    --report`'s rule. A drop smaller than the MDE may be noise there, so such a threshold is a
    floor that may not apply: a note, never a check, it changes no verdict or exit code."""
    gate = config.gate
    sig = gate.significance
    alpha, power = (sig.alpha, sig.power) if sig else (0.05, 0.8)
    thresholds = {m: t.to_core() for m, t in config.thresholds.items()}
    rules = resolve_rules(thresholds, [o.to_core() for o in gate.overrides], indexes, list(masks))
    scores = aligned_scores(baseline, query_ids)
    notes: dict[str, ThresholdNote] = {}
    for r in rules:
        values, mask = scores.get(r.index, {}).get(r.metric), masks.get(r.slice)
        v = values[mask] if values is not None and mask is not None else np.empty(0)
        if len(v) < 2 or not np.isfinite(v).all():
            continue  # no spread from fewer than two values, nor from one that is not finite
        sd = float(v.std(ddof=1))
        mde = minimum_detectable_effect(sd, len(v), alpha, power)
        for kind, limit, allowed in _drop_limits(r.threshold, float(v.mean())):
            if mde <= allowed:
                continue
            key, default = _threshold_key(config, r, kind)
            if key not in notes:
                notes[key] = ThresholdNote(
                    key=key,
                    default=default,
                    metric=r.metric,
                    kind=kind,
                    threshold=limit,
                    alpha=alpha,
                    power=power,
                    slices=[],
                )
            notes[key].slices.append(
                UnderpoweredSlice(
                    index=r.index,
                    slice=r.slice,
                    n_queries=len(v),
                    sd=round(sd, 4),
                    mde=round(mde, 4),
                    allowed_drop=round(allowed, 6),
                )
            )
    return list(notes.values())


DropKind = Literal["max_drop", "max_drop_pct"]


def _drop_limits(t: Threshold, base_mean: float) -> list[tuple[DropKind, float, float]]:
    """Each drop limit of ``t``, its value and the absolute drop it allows (``max_drop_pct``:
    that share of the baseline's mean, as the core's drop checks read it)."""
    out: list[tuple[DropKind, float, float]] = []
    if t.max_drop is not None:
        out.append(("max_drop", t.max_drop, t.max_drop))
    if t.max_drop_pct is not None:
        out.append(("max_drop_pct", t.max_drop_pct, t.max_drop_pct / 100 * base_mean))
    return out


def _threshold_key(config: Config, rule: Rule, kind: DropKind) -> tuple[str, bool]:
    """The config key that sets ``rule``'s ``kind`` threshold (the last override matching it
    wins, as ``core.gate.resolve_rules``), and whether it is evalret's default."""
    for i in reversed(range(len(config.gate.overrides))):
        o = config.gate.overrides[i]
        if (
            o.metric == rule.metric
            and o.index in (None, rule.index)
            and o.slice in (None, rule.slice)
        ):
            return f"gate.overrides[{i}].{kind}", False
    return f"gate.thresholds.{rule.metric}.{kind}", config.gate.thresholds is None


def run_gate(
    config: Config,
    current: RunReport,
    slices: list[Slice],
    baseline: RunReport | None,
    baseline_source: str | None,
    missing_baseline: str | None = None,
) -> GateSection | None:
    """The gate section for ``current``; None when nothing is configured to be checked.
    ``missing_baseline``: the baseline this run was to gate against but that does not exist yet
    (the run saves it); the section then says that only the fixed-bound checks ran."""
    gate = config.gate
    gated = config.gated_indexes()  # one rule for every check of an index
    indexes = [i for i in current.indexes if i in gated]
    wanted = set(gate.slices) if gate.slices is not None else None
    masks = {s.name: s.mask for s in slices if wanted is None or s.name in wanted}
    core_checks = _gate_checks(config, current, masks, indexes, baseline, baseline_source)
    checks = [gate_check(c) for c in core_checks]
    notes: list[str] = []
    if missing_baseline is not None:
        notes.insert(
            0,
            f"baseline {missing_baseline} does not exist yet (this run saves it): only the "
            f"{len(checks)} checks against fixed bounds ran, no drop check",
        )
    elif not checks:
        return None
    weak = threshold_notes(config, baseline, current.query_ids, masks, indexes) if baseline else []
    return GateSection(
        verdict=gate_verdict(core_checks),
        baseline=baseline_source,
        baseline_fingerprint=baseline.fingerprint.digest if baseline else None,
        changed=changed_settings(baseline, current) if baseline else {},
        significance=gate.significance.model_dump() if gate.significance else None,
        checks=checks,
        notes=notes,
        **({"unjudged": GateUnjudged(**gate.unjudged.model_dump())} if gate.unjudged else {}),
        **({"threshold_notes": weak} if weak else {}),
        stability=GateStability(
            samples=config.bootstrap.samples,
            seed=config.bootstrap.seed,
            min_stability=gate.min_stability,
        ),
    )
