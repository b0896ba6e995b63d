"""report.html's pages: what they show of single queries. The views draw; this module picks what
they draw (the per-query changes against a baseline, the biggest losses and gains, the lowest
scores) with numpy and the golden set, and hands the page plain values
(``evalret.report.per_query``)."""

from __future__ import annotations

import numpy as np

from evalret.core.comparison import EXAMPLES, changes, example_positions
from evalret.core.ranking import primary_index
from evalret.data.examples import query_examples
from evalret.data.goldenset import GoldenSet
from evalret.data.schema import CompareReport, RunReport
from evalret.report.html.compare_page import compare_html
from evalret.report.html.run_page import run_html
from evalret.report.per_query import DeltaSpread, RunQueries, ScoreSpread


def _aligned(before: RunReport, after: RunReport, index: str, metric: str) -> np.ndarray:
    """after - before per query, in ``before``'s query order."""
    pos = {q: i for i, q in enumerate(after.query_ids)}
    order = np.array([pos[q] for q in before.query_ids], dtype=np.int64)
    b = np.asarray(before.indexes[index].per_query[metric], dtype=np.float64)
    a = np.asarray(after.indexes[index].per_query[metric], dtype=np.float64)[order]
    return changes(a, b)


def delta_spread(before: RunReport, after: RunReport, index: str, metric: str) -> DeltaSpread:
    """The per-query change of ``metric`` on ``index`` from ``before`` to ``after``, counted."""
    delta = _aligned(before, after, index, metric)
    wins, losses = int((delta > 0).sum()), int((delta < 0).sum())
    changed = delta[delta != 0]
    return DeltaSpread(
        index=index,
        deltas=delta.tolist(),
        query_ids=before.query_ids,
        wins=wins,
        losses=losses,
        ties=len(delta) - wins - losses,
        mean=float(delta.mean()) if len(delta) else None,
        changed=changed.tolist(),
        extent=float(np.abs(changed).max()) if changed.size else 1.0,
    )


def score_spread(report: RunReport, index: str, metric: str) -> ScoreSpread | None:
    """The per-query scores of ``metric`` on ``index``; None when not computed there."""
    values = report.indexes[index].per_query.get(metric)
    if values is None:
        return None
    arr = np.asarray(values)
    return ScoreSpread(
        index=index,
        values=values,
        mean=float(arr.mean()) if len(arr) else None,
        zeros=int((arr == 0).sum()),
        ones=int((arr == 1).sum()),
    )


def primary_metric(report: RunReport) -> str:
    """The metric a run page shows per query: the first configured one with per-query scores
    ("" when there is none)."""
    names = [str(n) for n in report.fingerprint.metrics.get("names", [])]
    first = next(iter(report.indexes.values()), None)
    available = list(first.per_query) if first is not None else []
    for name in (*names, *available):
        if name in available:
            return name
    return ""


def _focus_index(report: RunReport, common: list[str]) -> str:
    """The index whose queries are listed: the first with a failed check, else exact."""
    gate = report.gate
    for c in gate.failed if gate else []:
        if c.index in common:
            return c.index
    return primary_index(common)


def _lowest_scores(report: RunReport, metric: str, golden: GoldenSet | None) -> RunQueries:
    """Without a baseline: the scores per index and the lowest-scoring queries."""
    spreads = [score_spread(report, index, metric) for index in report.indexes]
    focus = primary_index(report.indexes)
    scores = np.asarray(report.indexes[focus].per_query[metric], dtype=np.float64)
    order = np.argsort(scores, kind="stable")[:EXAMPLES]  # as many lowest as losses and gains
    return RunQueries(
        metric=metric,
        texts=golden is not None,
        focus=focus,
        scores=[s for s in spreads if s is not None],
        losers=query_examples(report, report, focus, metric, order, scores, golden),
    )


def run_queries(
    report: RunReport, baseline: RunReport | None, golden: GoldenSet | None
) -> RunQueries:
    """What a run page shows per query on its primary metric: against ``baseline`` the change
    of every query and the biggest losses and gains, else the scores and the lowest ones."""
    metric = primary_metric(report)
    if not metric:
        return RunQueries(metric="", texts=golden is not None)
    if baseline is None:
        return _lowest_scores(report, metric, golden)
    common = [
        i
        for i in report.indexes
        if i in baseline.indexes and metric in baseline.indexes[i].per_query
    ]
    if not common or set(baseline.query_ids) != set(report.query_ids):
        return RunQueries(metric=metric, texts=golden is not None, comparable=False)
    focus = _focus_index(report, common)
    delta = _aligned(baseline, report, focus, metric)
    losers, gainers = example_positions(delta)
    return RunQueries(
        metric=metric,
        texts=golden is not None,
        focus=focus,
        changes=[delta_spread(baseline, report, index, metric) for index in common],
        losers=query_examples(baseline, report, focus, metric, losers, delta, golden),
        gainers=query_examples(baseline, report, focus, metric, gainers, delta, golden),
    )


def render_run_html(
    report: RunReport, baseline: RunReport | None = None, golden: GoldenSet | None = None
) -> str:
    """report.html of a run. With ``baseline`` its bars and per-query changes are drawn beside
    the run's; with ``golden`` the listed queries show their texts and documents."""
    return run_html(report, baseline, run_queries(report, baseline, golden))


def render_compare_html(
    comparison: CompareReport, a: RunReport | None = None, b: RunReport | None = None
) -> str:
    """report.html of a comparison; with the run reports ``a`` and ``b``, also their bars with
    intervals, the per-query distribution and the metric@k curves."""
    changes = None
    if a is not None and b is not None:
        primary = comparison.settings.primary
        changes = [delta_spread(a, b, index, primary) for index in comparison.indexes]
    return compare_html(comparison, a, b, changes)
