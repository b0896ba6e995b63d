"""A comparison of two runs (`evalret compare`): get A and B (run a config or read a report),
compare them (the statistics are the core's, see core.comparison), write compare.json,
compare.md, disagreements.md and report.html."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, get_args

import numpy as np

from evalret.core.comparison import (
    RBO_P,
    CompareVerdict,
    Criteria,
    MetricChange,
    Tested,
    corrected,
    diagnose,
    example_positions,
    pair_notes,
    paired_statistics,
    rank_drift,
    verdict,
)
from evalret.core.gate import Significance, ThresholdMode, margin_family
from evalret.core.ranking import primary_index
from evalret.core.stats import Correction, resamples_for, seed_for
from evalret.data.atomic import append_text, atomic_write_text
from evalret.data.baseline import changed_settings, check_comparable, golden_set_of, load_baseline
from evalret.data.examples import query_examples, unjudged_documents
from evalret.data.goldenset import GoldenSet
from evalret.data.overrides import Override, configured
from evalret.data.schema import (
    COMPARE_SCHEMA_VERSION,
    TOP_KEPT,
    CompareReport,
    JudgedPair,
    MarginComparison,
    MetricComparison,
    RunReport,
    SliceComparison,
    Verdict,
)
from evalret.errors import InputError, Problem
from evalret.pipeline.progress import ProgressBars, ProgressFactory, no_bars
from evalret.version import __version__

# the files `evalret compare` writes into --out (cleared before it starts)
COMPARE_FILES = ("compare.json", "compare.md", "disagreements.md", "report.html")


@dataclass(frozen=True)
class CompareSettings:
    primary: str = "ndcg@10"
    min_gain: float = 0.01
    alpha: float = 0.05
    correction: Correction = "holm"
    samples: int = 10_000
    bootstrap_samples: int = 1000
    confidence: float = 0.95
    seed: int = 0
    power: float = 0.8
    margin: float | None = None  # --margin: test every metric's B - A against it
    margin_mode: ThresholdMode = "non_inferiority"

    def __post_init__(self) -> None:
        """Refuse settings no comparison can use, naming them as `evalret compare` spells them
        (NaN fails every range check: nothing compares true with it)."""
        problems = []
        if self.correction not in get_args(Correction):
            problems.append(f"--correction {self.correction}: choose holm, bonferroni, bh or none")
        if not 0 < self.alpha < 1:
            problems.append(f"--alpha {self.alpha:g}: a significance level between 0 and 1")
        if not 0 <= self.min_gain < float("inf"):
            problems.append(f"--min-gain {self.min_gain:g}: a finite number >= 0")
        if self.samples < 100:
            problems.append(f"--samples {self.samples}: at least 100 resamples")
        if self.seed < 0:
            problems.append(f"--seed {self.seed}: a seed is an integer >= 0")
        if self.margin is not None and not 0 < self.margin < float("inf"):
            problems.append(f"--margin {self.margin:g}: a finite number > 0")
        if self.margin_mode not in ("non_inferiority", "equivalence"):
            problems.append(
                f"--margin-mode {self.margin_mode}: choose non_inferiority or equivalence"
            )
        if problems:
            raise InputError("invalid comparison settings", [Problem(p) for p in problems])

    @property
    def criteria(self) -> Criteria:
        """What counts as a change, for the core's diagnosis and verdict."""
        return Criteria(primary=self.primary, min_gain=self.min_gain, alpha=self.alpha)


def _obtain(
    path: Path, progress: ProgressFactory | None, overrides: Sequence[Override] = ()
) -> tuple[RunReport, GoldenSet | None]:
    """A report for ``path``: a saved report.json as is, or a config evaluated now (with the
    command line's ``overrides``)."""
    if path.suffix == ".json":
        report = load_baseline(path, "report")
        return report, golden_set_of(report)
    from evalret.pipeline.evaluate import run_evaluation

    evaluation = run_evaluation(configured(path, overrides), progress=progress)
    return evaluation.report, evaluation.golden_set


def run_comparison(
    a: Path,
    b: Path,
    out: Path,
    settings: CompareSettings,
    *,
    progress: ProgressBars = no_bars,
    step_summary: Path | None = None,
    overrides: Sequence[Override] = (),
) -> tuple[CompareReport, list[Path]]:
    """Compare B against A and write the comparison files (compare.json, compare.md,
    disagreements.md, report.html) into ``out``; append compare.md to ``step_summary`` (GitHub's
    $GITHUB_STEP_SUMMARY) if given. ``progress`` draws bars while a config is evaluated;
    ``overrides`` (``--set``, ``--model``, ``--dimension``) apply to each side that is a config."""
    from evalret.pipeline.pages import render_compare_html
    from evalret.report.compare_views import render_compare_markdown, render_disagreements

    with progress() as factory:
        report_a, golden = _obtain(a, factory, overrides)
        report_b, golden_b = _obtain(b, factory, overrides)
    comparison = compare_reports(report_a, report_b, settings, golden or golden_b, (str(a), str(b)))
    markdown = render_compare_markdown(comparison)
    texts = (
        comparison.model_dump_json(indent=2) + "\n",
        markdown,
        render_disagreements(comparison),
        render_compare_html(comparison, report_a, report_b),
    )
    files = dict(zip(COMPARE_FILES, texts, strict=True))
    for name, text in files.items():
        atomic_write_text(out / name, text)
    if step_summary is not None:
        append_text(step_summary, markdown + "\n", "step summary")
    return comparison, [out / name for name in files]


# (index, slice) -> the slice's tests, in metric order
SliceTests = dict[tuple[str, str], list[Tested]]
# (index, slice) -> jaccard@k and rbo@k of the two rankings
Drift = dict[tuple[str, str], dict[str, float]]
# index -> slice -> metric -> change
ChangeTable = dict[str, dict[str, dict[str, MetricChange]]]


@dataclass(frozen=True)
class _Plan:
    """What a comparison compares: indexes (and the lexical ones left out), metrics, the
    position in B of each of A's queries, and the randomization resamples per test."""

    indexes: list[str]
    same_lexical: list[str]
    metrics: list[str]
    order_b: np.ndarray
    samples: int


def _plan(a: RunReport, b: RunReport, settings: CompareSettings) -> _Plan:
    """The indexes and metrics to compare; InputError when the primary metric is not computed."""
    order_b = np.array([{q: i for i, q in enumerate(b.query_ids)}[q] for q in a.query_ids])
    # BM25 does not depend on the model: with the same settings it is the same ranking in A and
    # B, and testing it would only dilute the correction across the tests that matter
    same_lexical = [
        i
        for i in a.indexes
        if i in b.indexes and i == "bm25" and a.indexes[i].params == b.indexes[i].params
    ]
    indexes = [i for i in a.indexes if i in b.indexes and i not in same_lexical]
    metrics = list(a.fingerprint.metrics["names"])
    if settings.primary not in metrics:
        raise InputError(
            f"--primary {settings.primary} is not computed; computed: {', '.join(metrics)}"
        )
    n_tests = len(indexes) * len(a.slices) * len(metrics)
    samples = resamples_for(n_tests, settings.alpha, settings.samples, True)
    return _Plan(indexes, same_lexical, metrics, order_b, samples)


def _index_tests(
    a: RunReport, b: RunReport, index: str, plan: _Plan, settings: CompareSettings
) -> tuple[SliceTests, dict[str, dict[str, float]]]:
    """The tests of every slice of one index, and each slice's rank drift."""
    ra, rb = a.indexes[index], b.indexes[index]
    jac, rbo = rank_drift(ra.top_ids, [rb.top_ids[j] for j in plan.order_b], TOP_KEPT)
    per_a = np.column_stack([np.asarray(ra.per_query[m]) for m in plan.metrics])
    per_b = np.column_stack([np.asarray(rb.per_query[m]) for m in plan.metrics])[plan.order_b]
    tests: SliceTests = {}
    drift = {}
    for slice_name, info in a.slices.items():
        members = np.array(info.members, dtype=np.int64)
        drift[slice_name] = {
            f"jaccard@{TOP_KEPT}": float(jac[members].mean()) if len(members) else 1.0,
            f"rbo@{TOP_KEPT}": float(rbo[members].mean()) if len(members) else 1.0,
        }
        tests[(index, slice_name)] = paired_statistics(
            per_a[members],
            per_b[members],
            plan.samples,
            settings.bootstrap_samples,
            settings.confidence,
            seed_for(settings.seed, index, slice_name),
            settings.alpha,
            settings.power,
        )
    return tests, drift


def _changes(
    a: RunReport, b: RunReport, plan: _Plan, settings: CompareSettings
) -> tuple[ChangeTable, SliceTests, Drift]:
    """Every (index, slice, metric) change, corrected across all of them; also the raw tests
    (for the minimum detectable effects) and the rank drift per (index, slice)."""
    tests: SliceTests = {}
    drift: Drift = {}
    for index in plan.indexes:
        index_tests, index_drift = _index_tests(a, b, index, plan, settings)
        tests.update(index_tests)
        drift.update({(index, s): d for s, d in index_drift.items()})
    flat = [t for slice_tests in tests.values() for t in slice_tests]
    changed = iter(corrected(flat, settings.correction, settings.alpha))
    changes: ChangeTable = {}
    for index, slice_name in tests:
        by_metric = {m: next(changed) for m in plan.metrics}
        changes.setdefault(index, {})[slice_name] = by_metric
    return changes, tests, drift


def _margins(
    a: RunReport, b: RunReport, plan: _Plan, settings: CompareSettings
) -> dict[tuple[str, str], dict[str, MarginComparison]]:
    """With --margin, every (index, slice, metric)'s B - A tested against it (the percentile
    bootstrap of the paired differences, corrected across all of them); else nothing."""
    if settings.margin is None:
        return {}
    keys, diffs = [], []
    for index in plan.indexes:
        per_a = [np.asarray(a.indexes[index].per_query[m]) for m in plan.metrics]
        per_b = [np.asarray(b.indexes[index].per_query[m])[plan.order_b] for m in plan.metrics]
        for name, info in a.slices.items():
            members = np.array(info.members, dtype=np.int64)
            for m, va, vb in zip(plan.metrics, per_a, per_b, strict=True):
                keys.append((index, name, m))
                seed = seed_for(settings.seed, "margin", index, name, m)
                diffs.append((vb[members] - va[members], seed))
    tested = Significance(
        "bootstrap", settings.alpha, settings.correction, settings.samples, settings.seed, 0.8
    )
    outcomes = margin_family(diffs, settings.margin_mode, settings.margin, tested)
    out: dict[tuple[str, str], dict[str, MarginComparison]] = {}
    for (index, name, m), o in zip(keys, outcomes, strict=True):
        b_ = o.bounds
        out.setdefault((index, name), {})[m] = MarginComparison(
            low=b_.low if np.isfinite(b_.low) else None,
            high=b_.high if np.isfinite(b_.high) else None,
            method=b_.method,
            confidence=1 - b_.alpha,
            p_value=o.p_value,
            p_adjusted=o.p_adjusted,
            passed=o.passed,
            evidence=o.evidence,
            queries_needed=o.queries_needed,
        )
    return out


def _judged_pairs(a: RunReport, b: RunReport, index: str, name: str) -> dict[str, JudgedPair]:
    """judged@k of one slice in A and in B, at every cutoff both reports computed it at."""
    ja, jb = (
        r.indexes[index].slices[name].judged if name in r.indexes[index].slices else {}
        for r in (a, b)
    )
    return {key: JudgedPair(a=ja[key], b=jb[key]) for key in ja if key in jb}


def _unjudged_k(a: RunReport, index: str) -> int:
    """The k whose unjudged documents a comparison lists: 10 when judged@10 was computed, else
    the smallest cutoff it was (TOP_KEPT without any)."""
    keys = [int(key.split("@", 1)[1]) for s in a.indexes[index].slices.values() for key in s.judged]
    return 10 if 10 in keys or not keys else min(keys)


def _slice_comparisons(
    a: RunReport,
    b: RunReport,
    changes: ChangeTable,
    tests: SliceTests,
    drift: Drift,
    plan: _Plan,
    criteria: Criteria,
    margins: dict[tuple[str, str], dict[str, MarginComparison]],
) -> dict[str, dict[str, SliceComparison]]:
    """The report's per-index, per-slice comparisons, each with its diagnosis, judged@k of A
    and B and, with --margin, its margin tests."""
    return {
        index: {
            name: SliceComparison(
                n_queries=a.slices[name].n_queries,
                reliability=a.slices[name].reliability,
                metrics={m: MetricComparison(**asdict(c)) for m, c in metrics.items()},
                mde={m: t.mde for m, t in zip(plan.metrics, tests[(index, name)], strict=True)},
                drift=drift[(index, name)],
                diagnosis=diagnose(metrics, criteria),
                judged=_judged_pairs(a, b, index, name),
                **({"margins": margins[(index, name)]} if (index, name) in margins else {}),
            )
            for name, metrics in slices.items()
        }
        for index, slices in changes.items()
    }


def _identical(a: RunReport, b: RunReport, plan: _Plan, indexes: list[str]) -> bool:
    """Whether A and B score every query identically on every compared index and metric."""
    return all(
        np.array_equal(
            np.asarray(a.indexes[i].per_query[m]),
            np.asarray(b.indexes[i].per_query[m])[plan.order_b],
        )
        for i in indexes
        for m in a.fingerprint.metrics["names"]
    )


def _side(report: RunReport, label: str) -> dict[str, Any]:
    """How compare.json names one side: its label, fingerprint, model and indexes."""
    f = report.fingerprint
    side = {"label": label, "fingerprint": f.digest, "model": f.model, "indexes": f.indexes}
    return side | ({"overrides": report.overrides} if report.overrides else {})


def _settings_record(settings: CompareSettings, samples: int) -> dict[str, Any]:
    """How compare.json records the settings: as given (the margin only when given), plus what
    the comparison drew and how."""
    given = dict(settings.__dict__)
    if settings.margin is None:
        given.pop("margin")
        given.pop("margin_mode")
    return {
        **given,
        "samples_drawn": samples,
        "rbo_p": RBO_P,
        "tests": "two-sided, paired",
        "ci": "percentile bootstrap of the paired differences",
    }


def _report_verdict(v: CompareVerdict) -> Verdict:
    """The report's form of the core's verdict."""
    return Verdict(
        status=v.status,
        reason=v.reason,
        blocking=list(v.blocking),
        regressions=list(v.regressions),
    )


def compare_reports(
    a: RunReport,
    b: RunReport,
    settings: CompareSettings,
    golden: GoldenSet | None = None,
    labels: tuple[str, str] = ("A", "B"),
) -> CompareReport:
    """Compare B against A query by query. ``golden`` (when known) adds texts and grades to the
    biggest losers and gainers, and lists B's most frequent unjudged documents."""
    check_comparable(a, b)
    plan = _plan(a, b, settings)
    criteria = settings.criteria
    changes, tests, drift = _changes(a, b, plan, settings)
    focus = primary_index(changes)
    notes = [
        f"{i} is not compared: the same settings give the same ranking in A and B"
        for i in plan.same_lexical
    ]
    notes += pair_notes(changes[focus], criteria)
    outcome = verdict(_identical(a, b, plan, list(changes)), changes, focus, criteria)
    ra, rb = a.indexes[focus], b.indexes[focus]
    delta = np.asarray(rb.per_query[settings.primary])[plan.order_b] - np.asarray(
        ra.per_query[settings.primary]
    )
    losers, gainers = example_positions(delta)
    return CompareReport(
        schema_version=COMPARE_SCHEMA_VERSION,
        evalret_version=__version__,
        a=_side(a, labels[0]),
        b=_side(b, labels[1]),
        changed=changed_settings(a, b),
        settings=_settings_record(settings, plan.samples),
        golden_set={
            "source": a.golden_set.source,
            "fingerprint": a.golden_set.fingerprint,
            "n_queries": len(a.query_ids),
        },
        primary_index=focus,
        indexes=_slice_comparisons(
            a, b, changes, tests, drift, plan, criteria, _margins(a, b, plan, settings)
        ),
        notes=notes,
        verdict=_report_verdict(outcome),
        losers=query_examples(a, b, focus, settings.primary, losers, delta, golden),
        gainers=query_examples(a, b, focus, settings.primary, gainers, delta, golden),
        unjudged=unjudged_documents(b, focus, _unjudged_k(a, focus), golden) if golden else None,
    )
