"""Baselines: reading and writing them, deciding whether a run may be compared with one, their
per-query scores as plain arrays and the core gate's checks in the report's form (the gate itself
runs in pipeline.gate), and the golden set a saved report was computed on.

A baseline file is a saved report.json (schema version, fingerprint, metrics per index and slice,
per-query scores), written atomically: an interrupted save never leaves a broken file.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from evalret.core.gate import DROP_KINDS, Check
from evalret.core.provenance import HUMAN
from evalret.core.relevance import DEFAULT_RELEVANCE_LEVEL
from evalret.data.atomic import atomic_write_text
from evalret.data.config import GoldenSetConfig
from evalret.data.goldenset import GoldenSet, load_golden_set
from evalret.data.schema import READABLE_SCHEMA_VERSIONS, SCHEMA_VERSION, GateCheck, RunReport
from evalret.data.textfile import read_json, schema_problems
from evalret.errors import EvalretError, IncomparableError, InputError, Problem

# metric definitions that must agree for numbers to be comparable (metric lists may differ)
# ``labels`` is in a run's definitions only under gate.labels: human (core/provenance.py)
DEFINITION_KEYS = (
    "ndcg_gain",
    "relevance_level",
    "tie_rule",
    "queries_without_relevant",
    "labels",
)
# the label sources' names in a fingerprint's metric definitions, when one is an LLM judge's
LABEL_SOURCES = "label_sources"
# an LLM judge's labels in a report of an older evalret, which did not record whose they were
UNRECORDED = "llm:(source not recorded)"


def save_baseline(report: RunReport, path: Path) -> None:
    """Write ``report`` as a baseline (atomically; through a symbolic link to its target when
    that lies in the link's directory: data/atomic.py)."""
    atomic_write_text(path, report.model_dump_json(indent=1) + "\n", "baseline")


def load_baseline(path: Path, what: str = "baseline") -> RunReport:
    """Read a baseline (or any saved report.json, ``what`` names it in messages); bad files,
    binary, truncated or inconsistent, are input errors (exit 2) naming the file and field."""
    data = read_json(path, what)
    version = data.get("schema_version", SCHEMA_VERSION) if isinstance(data, dict) else None
    if isinstance(version, int) and version not in READABLE_SCHEMA_VERSIONS:
        readable = ", ".join(map(str, READABLE_SCHEMA_VERSIONS))
        raise InputError(f"{path}: schema version {version}, this evalret reads {readable}")
    try:  # an older layout is read into the current one (RunReport._older_layout)
        return RunReport.model_validate(data)
    except ValidationError as e:
        raise InputError(
            f"{path} is not an evalret baseline or report", schema_problems(e, path)
        ) from None


class MissingBaselineError(InputError):
    """The baseline a run is to gate against does not exist: the message says how to save one,
    ``how`` (the command that saves it, which the caller knows; else a generic hint)."""

    def __init__(self, path: Path, role: str, how: str | None = None) -> None:
        self.path = path
        shown = shown_path(path)
        hint = how or (
            f"evalret run --config CONFIG --save-baseline {shlex.quote(shown)} (the run's own "
            "--config and --set), or copy the report.json of a run you trust there"
        )
        super().__init__(
            f"baseline {shown} ({role}) does not exist; save one on purpose, from a run you trust:",
            [Problem(hint)],
        )


def shown_path(path: Path) -> str:
    """``path`` as a command line may give it: relative to the working directory when inside it."""
    if path.is_absolute():
        try:
            return str(path.relative_to(Path.cwd()))
        except ValueError:
            return str(path)
    return str(path)


def baseline_for_run(
    path: Path | None, save_to: Path | None, role: str = "--baseline"
) -> tuple[RunReport | None, bool]:
    """The baseline a run gates against, read from ``path`` (``role``: where it was named), and
    whether it is missing because this very run is to save it (``save_to`` is the same file):
    then the run gates on fixed bounds only and says so. A baseline missing otherwise is a
    MissingBaselineError; an unreadable one an InputError."""
    if path is None:
        return None, False
    if not path.exists() and not path.is_symlink():
        if save_to is not None and os.path.realpath(path) == os.path.realpath(save_to):
            return None, True
        raise MissingBaselineError(path, role)
    return load_baseline(path), False


def golden_set_of(report: RunReport) -> GoldenSet | None:
    """The golden set a saved report was computed on, when it is still reachable and unchanged
    (texts and grades for listing queries); None otherwise."""
    try:
        golden = load_golden_set(
            GoldenSetConfig.model_validate(report.config["golden_set"]),
            int(report.config.get("relevance_level", DEFAULT_RELEVANCE_LEVEL)),
        )
    except (EvalretError, OSError, ValueError, KeyError):
        return None
    return golden if golden.fingerprint == report.golden_set.fingerprint else None


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
    document; the search depth when both score a metric over the whole ranking) that differ
    between a baseline's and a run's, as ``key: before -> after``."""
    return [
        f"metric definition {key}: {before.get(key)!r} -> {after.get(key)!r}"
        for key in (*DEFINITION_KEYS, *_depth_key(before, after))
        if before.get(key) != after.get(key)
    ]


def definitions_of(metrics: dict[str, Any]) -> dict[str, Any]:
    """The metric definitions in a fingerprint's ``metrics`` that decide whether two runs'
    numbers compare (``DEFINITION_KEYS``, the label sources when one is an LLM judge's, and the
    search depth when a metric has no cutoff)."""
    keys = (*DEFINITION_KEYS, LABEL_SOURCES, *_depth_key(metrics, metrics))
    return {key: metrics.get(key) for key in keys}


def label_sources_of(report: RunReport) -> dict[str, int]:
    """The label sources ``report``'s metrics used, with how many judgments each gave
    (``RunReport.label_sources``). A report of an older evalret records none; it is read from
    what it has: without a ``labels`` section its golden set held no model's label (human
    only); with one, its metrics were on human labels alone under ``gate.labels: human``, else
    on the `run --judge` labels its ``judge`` section names and, for model labels its golden
    set held, on a source it did not record (``UNRECORDED``: never equal to a recorded one)."""
    if report.label_sources is not None:
        return dict(report.label_sources)
    labels = report.labels
    if labels is None:
        return {HUMAN: report.golden_set.n_judgments}
    found = {HUMAN: labels.n_judgments - labels.n_llm_judgments}
    if labels.gate == "human":
        return found
    judge = report.judge or {}
    source, labelled = judge.get("source"), judge.get("labelled")
    judged = labelled if isinstance(source, str) and isinstance(labelled, int) else 0
    if isinstance(source, str):
        found[source] = judged
    if labels.n_llm_judgments > judged:
        found[UNRECORDED] = labels.n_llm_judgments - judged
    return found


def _sources_shown(sources: Mapping[str, int | None]) -> str:
    """``human 412, llm:m@0123456789ab 57``; a count not known yet (the judge of a run still
    to come) is said so."""
    later = "(this run's judge: counted once judged)"
    shown = [f"{name} {later if count is None else count}" for name, count in sources.items()]
    return ", ".join(shown) or "none"


def label_source_differences(
    before: Mapping[str, int | None], after: Mapping[str, int | None], sides: tuple[str, str]
) -> list[str]:
    """Why two runs' numbers are on other labels: their sets of label sources differ (one has
    an LLM judge's labels the other lacks, or another judge's); empty when both drew on the same
    sources, whatever their counts. ``sides`` name ``before`` and ``after``."""
    if set(before) == set(after):
        return []
    return [
        f"label sources: {sides[0]} {_sources_shown(before)}; {sides[1]} "
        f"{_sources_shown(after)}. Compare on human labels alone (gate.labels: human, on both "
        "sides), or label both alike (both with `run --judge` and the same judge, or neither)"
    ]


def _depth_key(a: dict[str, Any], b: dict[str, Any]) -> tuple[str, ...]:
    """``("search_depth",)`` when both definitions name a metric without a cutoff: only those
    depend on how deep the rankings go (a metric@k needs depth >= k, which the config ensures)."""

    def uncut(d: dict[str, Any]) -> bool:
        names = d.get("names")
        return isinstance(names, list) and any("@" not in str(n) for n in names)

    return ("search_depth",) if uncut(a) and uncut(b) else ()


def check_compatible(
    baseline: RunReport,
    golden: GoldenSet,
    definitions: dict[str, Any],
    source: str,
    label_sources: Mapping[str, int | None] | None = None,
) -> None:
    """Refuse (exit 2) a baseline whose golden set, metric definitions or (given the run's
    ``label_sources``) label sources differ."""
    problems = [f"golden set: {d}" for d in golden_set_differences(baseline, golden)]
    problems += definition_differences(baseline.fingerprint.metrics, definitions)
    if label_sources is not None:
        problems += label_source_differences(
            label_sources_of(baseline), label_sources, (f"the baseline {source}", "this run")
        )
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
    fa, fb = a.fingerprint.metrics, b.fingerprint.metrics
    for key in (*DEFINITION_KEYS, "names", *_depth_key(fa, fb)):
        va, vb = fa.get(key), fb.get(key)
        if va != vb:
            problems.append(f"metric definition {key}: {va!r} (A) vs {vb!r} (B)")
    problems += label_source_differences(label_sources_of(a), label_sources_of(b), ("A", "B"))
    common = a.indexes.keys() & b.indexes.keys()
    if not common:
        problems.append(f"no index in common: A has {sorted(a.indexes)}, B has {sorted(b.indexes)}")
    if a.query_ids != b.query_ids and set(a.query_ids) != set(b.query_ids):
        problems.append("the evaluated queries differ")
    corpus_a, corpus_b = ((r.fingerprint.sample or {}).get("document_digest") for r in (a, b))
    if corpus_a != corpus_b:  # a sampled corpus scores every query on other terms
        problems.append("the searched corpora differ (a sample of documents, config sample)")
    if problems:
        raise IncomparableError(
            "cannot compare: A and B must share golden set, metrics, label sources and an "
            "index type",
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


def aligned_scores(report: RunReport, query_ids: list[str]) -> dict[str, dict[str, np.ndarray]]:
    """Per-query scores of ``report``, per index and metric, reordered to ``query_ids`` (plain
    arrays for the core gate)."""
    position = {q: i for i, q in enumerate(report.query_ids)}
    order = np.array([position[q] for q in query_ids], dtype=np.int64)
    return {
        index: {m: np.asarray(v, dtype=np.float64)[order] for m, v in result.per_query.items()}
        for index, result in report.indexes.items()
    }


def aligned_condensed(report: RunReport, query_ids: list[str]) -> dict[str, dict[str, np.ndarray]]:
    """The judged-only form of each metric per query of ``report``, per index and metric (keyed
    by the metric it stands for), reordered to ``query_ids``; an index without them (a report of
    an older evalret) is left out."""
    position = {q: i for i, q in enumerate(report.query_ids)}
    order = np.array([position[q] for q in query_ids], dtype=np.int64)
    return {
        index: {m: np.asarray(v, dtype=np.float64)[order] for m, v in result.condensed.items()}
        for index, result in report.indexes.items()
        if result.condensed is not None
    }


def gate_check(check: Check) -> GateCheck:
    """The report's form of one check of the core gate (the same fields; the judged@k figures
    only on a drop check, the unjudged policy only on an inconclusive one, the margin and
    stability fields only where set)."""
    fields = asdict(check)
    if check.kind not in DROP_KINDS:
        for key in ("judged_k", "judged_baseline", "judged_current"):
            fields.pop(key)
    for key in (
        "unjudged_policy",
        "condensed_baseline",
        "condensed_current",
        "interval_low",
        "interval_high",
        "interval_method",
        "interval_confidence",
        "evidence",
        "queries_needed",
        "flip_probability",
        "inconclusive_reason",
    ):
        if fields[key] is None:
            fields.pop(key)
    return GateCheck(**fields)
