"""Baselines: reading and writing them, deciding whether a run may be compared with one, and
turning a run plus a baseline into the gate section of the report.

A baseline file is a saved report.json (schema version, fingerprint, metrics per index and slice,
per-query scores), written atomically: an interrupted save never leaves a broken file.
"""

from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from evalret.core.gate import Check, Rule, evaluate_gate, health_checks, resolve_rules
from evalret.core.slices import Slice
from evalret.data.atomic import atomic_write_text
from evalret.data.config import DENSE_INDEXES, Config
from evalret.data.goldenset import GoldenSet
from evalret.data.schema import SCHEMA_VERSION, GateCheck, GateSection, RunReport
from evalret.data.textfile import read_json, schema_problems
from evalret.errors import IncomparableError, InputError, Problem

# metric definitions that must agree for numbers to be comparable (metric lists may differ)
DEFINITION_KEYS = ("ndcg_gain", "relevance_level", "tie_rule", "queries_without_relevant")


def save_baseline(report: RunReport, path: Path) -> None:
    """Write ``report`` as a baseline (atomically; through a symbolic link to its target)."""
    atomic_write_text(path, report.model_dump_json(indent=1) + "\n", "baseline")


def load_baseline(path: Path, what: str = "baseline") -> RunReport:
    """Read a baseline (or any saved report.json, ``what`` names it in messages); bad files,
    binary, truncated or inconsistent, are input errors (exit 2) naming the file and field."""
    data = read_json(path, what)
    try:
        report = RunReport.model_validate(data)
    except ValidationError as e:
        raise InputError(
            f"{path} is not an evalret baseline or report", schema_problems(e, path)
        ) from None
    if report.schema_version != SCHEMA_VERSION:
        raise InputError(
            f"{path}: schema version {report.schema_version}, this evalret reads {SCHEMA_VERSION}"
        )
    return report


def baseline_for_run(path: Path | None, save_to: Path | None) -> tuple[RunReport | None, bool]:
    """The baseline a run gates against, read from ``path``, and whether it is missing because
    this very run is to save it (``save_to`` is the same file): then the run gates on fixed bounds
    only and says so. Any other missing or unreadable baseline is an InputError."""
    if path is None:
        return None, False
    if (
        save_to is not None
        and not path.exists()
        and os.path.realpath(path) == os.path.realpath(save_to)
    ):
        return None, True
    return load_baseline(path), False


def golden_set_differences(baseline: RunReport, golden: GoldenSet) -> list[str]:
    """What differs between the baseline's golden set and ``golden`` (empty when identical)."""
    b = baseline.golden_set
    if b.fingerprint == golden.fingerprint:
        return []
    out = []
    if b.corpus_fingerprint != golden.corpus_fingerprint:
        out.append(f"corpus: {b.n_documents} -> {len(golden.doc_ids)} documents, content differs")
    before, after = b.query_fingerprints, golden.query_fingerprints
    for label, ids in (
        ("queries added", sorted(after.keys() - before.keys())),
        ("queries removed", sorted(before.keys() - after.keys())),
        (
            "queries whose text, judgments, tags or frequency changed",
            sorted(q for q in before.keys() & after.keys() if before[q] != after[q]),
        ),
    ):
        if ids:
            shown = ", ".join(ids[:10]) + (f" and {len(ids) - 10} more" if len(ids) > 10 else "")
            out.append(f"{label}: {shown}")
    return out or ["golden-set fingerprint differs"]


def definition_differences(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """The metric definitions (gain, relevance level, tie rule, queries without a relevant
    document) that differ between a baseline's and a run's, as ``key: before -> after``."""
    return [
        f"metric definition {key}: {before.get(key)!r} -> {after.get(key)!r}"
        for key in DEFINITION_KEYS
        if before.get(key) != after.get(key)
    ]


def check_compatible(
    baseline: RunReport, golden: GoldenSet, definitions: dict[str, Any], source: str
) -> None:
    """Refuse (exit 2) a baseline whose golden set or metric definitions differ."""
    problems = [f"golden set: {d}" for d in golden_set_differences(baseline, golden)]
    problems += definition_differences(baseline.fingerprint.metrics, definitions)
    if problems:
        raise IncomparableError(
            f"cannot compare with baseline {source}: its numbers were computed on other terms "
            "(save a new baseline on purpose with --save-baseline)",
            [Problem(p) for p in problems],
        )


def check_comparable(a: RunReport, b: RunReport) -> None:
    """Refuse (exit 2) two runs of different golden sets or metric definitions."""
    problems = []
    if a.golden_set.fingerprint != b.golden_set.fingerprint:
        problems.append(
            f"golden sets differ: {a.golden_set.source} ({a.golden_set.fingerprint[:12]}) vs "
            f"{b.golden_set.source} ({b.golden_set.fingerprint[:12]})"
        )
    for key in (*DEFINITION_KEYS, "names"):
        va, vb = a.fingerprint.metrics.get(key), b.fingerprint.metrics.get(key)
        if va != vb:
            problems.append(f"metric definition {key}: {va!r} (A) vs {vb!r} (B)")
    common = a.indexes.keys() & b.indexes.keys()
    if not common:
        problems.append(f"no index in common: A has {sorted(a.indexes)}, B has {sorted(b.indexes)}")
    if a.query_ids != b.query_ids and set(a.query_ids) != set(b.query_ids):
        problems.append("the evaluated queries differ")
    if problems:
        raise IncomparableError(
            "cannot compare: A and B must share golden set, metrics and an index type",
            [Problem(p) for p in problems],
        )


def _differences(before: Any, after: Any, prefix: str) -> dict[str, Any]:
    if isinstance(before, dict) and isinstance(after, dict):
        out: dict[str, Any] = {}
        for key in sorted(before.keys() | after.keys()):
            out.update(_differences(before.get(key), after.get(key), f"{prefix}.{key}"))
        return out
    return {} if before == after else {prefix: {"baseline": before, "current": after}}


def changed_settings(baseline: RunReport, current: RunReport) -> dict[str, Any]:
    """Model, index and version differences: the point of a comparison, shown, not refused."""
    b, c = baseline.fingerprint, current.fingerprint
    return {
        **_differences(b.model, c.model, "model"),
        **_differences(b.indexes, c.indexes, "indexes"),
        **_differences(b.evalret_version, c.evalret_version, "evalret_version"),
    }


def _aligned(report: RunReport, query_ids: list[str]) -> dict[str, dict[str, np.ndarray]]:
    """Per-query scores of ``report`` reordered to ``query_ids``."""
    position = {q: i for i, q in enumerate(report.query_ids)}
    order = np.array([position[q] for q in query_ids], dtype=np.int64)
    return {
        index: {m: np.asarray(v, dtype=np.float64)[order] for m, v in result.per_query.items()}
        for index, result in report.indexes.items()
    }


def check_gate_slices(config: Config, slices: list[Slice]) -> None:
    """Refuse (exit 2) gate.slices or an override naming a slice the run does not have (a typo,
    a tag gone from the golden set): those checks would silently not run or keep the default
    threshold, and the gate could pass on nothing it was asked to check. A slice without a
    query (a custom pattern matching none) has nothing to check either."""
    names = [s.name for s in slices if s.mask.any()]
    named: list[tuple[str, str | None]] = [("gate.slices", n) for n in config.gate.slices or []]
    named += [(f"gate.overrides[{i}].slice", o.slice) for i, o in enumerate(config.gate.overrides)]
    missing = [f"{key}: {name}" for key, name in named if name is not None and name not in names]
    if missing:
        raise InputError(
            "the gate names slices this golden set does not have (its slices with queries: "
            f"{', '.join(names)})",
            [Problem(m) for m in missing],
        )


def _check_drops_answerable(
    rules: list[Rule], base_scores: dict[str, dict[str, np.ndarray]], source: str
) -> None:
    """Refuse (exit 2) a baseline without the index or metric of a drop check the config asks
    for: skipping those checks would let a gate pass that checked nothing it was asked to."""
    problems = {}
    for r in rules:
        if r.threshold.max_drop is None and r.threshold.max_drop_pct is None:
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


def gate_check(check: Check) -> GateCheck:
    """The report's form of one check of the core gate (the same fields)."""
    return GateCheck(**asdict(check))


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
        base_scores = _aligned(baseline, current.query_ids)
        _check_drops_answerable(rules, base_scores, baseline_source or "baseline")
    ann = current.ann
    ann_recall = None
    if ann is not None and "hnsw" in indexes:
        ann_recall = ann.slices["all"].recall.get(f"recall@{gate.ann_k}")
    checks = evaluate_gate(
        _aligned(current, current.query_ids),
        base_scores,
        masks,
        rules,
        gate.significance.to_core() if gate.significance else None,
        ann_recall,
        gate.ann_min_recall,
        gate.ann_k,
    )
    if current.intrinsic is not None:
        i = current.intrinsic
        health = {key: t.to_core() for key, t in gate.health.items()}
        checks += health_checks({"documents": i.documents, "queries": i.queries}, health)
    return checks


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
    gated = gate.indexes if gate.indexes is not None else DENSE_INDEXES
    indexes = [i for i in current.indexes if i in gated]
    wanted = set(gate.slices) if gate.slices is not None else None
    masks = {s.name: s.mask for s in slices if wanted is None or s.name in wanted}
    checks = [
        gate_check(c)
        for c in _gate_checks(config, current, masks, indexes, baseline, baseline_source)
    ]
    notes: list[str] = []
    if missing_baseline is not None:
        notes.insert(
            0,
            f"baseline {missing_baseline} does not exist yet (this run saves it): only the "
            f"{len(checks)} checks against fixed bounds ran, no drop check",
        )
    elif not checks:
        return None
    return GateSection(
        verdict="pass" if all(c.passed for c in checks) else "fail",
        baseline=baseline_source,
        baseline_fingerprint=baseline.fingerprint.digest if baseline else None,
        changed=changed_settings(baseline, current) if baseline else {},
        significance=gate.significance.model_dump() if gate.significance else None,
        checks=checks,
        notes=notes,
    )
