"""What comment.md needs beyond the report: the biggest per-query losses against the baseline
(positions picked by ``core.comparison.example_positions``) and, in GitHub Actions, a link to the
workflow run that holds the reports."""

from __future__ import annotations

import os

import numpy as np

from evalret.core.comparison import example_positions
from evalret.core.ranking import primary_index
from evalret.data.examples import query_examples
from evalret.pipeline.evaluate import Evaluation
from evalret.report.comment import LOSSES_SHOWN, Losses


def baseline_losses(evaluation: Evaluation) -> Losses | None:
    """The LOSSES_SHOWN queries that lost most against the baseline on the first metric of the
    primary index (exact when present), biggest loss first; None without a baseline or without
    an index and metric that both runs scored."""
    base, report = evaluation.baseline, evaluation.report
    if base is None:
        return None
    common = [i for i in report.indexes if i in base.indexes]
    if not common:
        return None
    index = primary_index(common)
    current, before = report.indexes[index].per_query, base.indexes[index].per_query
    metric = next((m for m in current if m in before), None)
    if metric is None:
        return None
    position = {q: i for i, q in enumerate(report.query_ids)}
    # one change per baseline query, in the baseline's order; a query the run lacks is no loss
    delta = np.array(
        [
            current[metric][position[q]] - b if q in position else 0.0
            for q, b in zip(base.query_ids, before[metric], strict=True)
        ],
        dtype=np.float64,
    )
    losers, _ = example_positions(delta, LOSSES_SHOWN)
    golden = evaluation.golden_set
    return Losses(index, metric, query_examples(base, report, index, metric, losers, delta, golden))


def reports_link() -> str | None:
    """The workflow run's page (its artifacts hold the reports), from GitHub Actions'
    environment; $EVALRET_REPORTS_URL overrides it; None outside GitHub Actions."""
    override = os.environ.get("EVALRET_REPORTS_URL")
    if override:
        return override
    parts = [os.environ.get(k) for k in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID")]
    if not all(parts):
        return None
    server, repository, run_id = parts
    return f"{server}/{repository}/actions/runs/{run_id}"
