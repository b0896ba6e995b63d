"""The interval of a slice mean: today's percentile bootstrap, or the prediction-powered one
(core/ppi.py) when the golden set holds LLM labels and a person also graded some of them.

Per query (unit of PPI), by the labels of the golden set (core/provenance.py):

- exact: no LLM label touches the query; its score is a human score;
- labelled: every pair the judge graded also has a human grade (at least one such pair): the
  human score Y (on ``human_view``) and the prediction f (on ``prediction_view``) are both known;
- predicted: the rest; the judge graded a pair nobody checked, only f is known.

A slice with predicted queries and at least ``MIN_LABELLED`` labelled ones gets the PPI bootstrap
interval; with predicted queries and fewer labelled ones, today's interval, and the report says
the LLM labels are uncalibrated there. A golden set without LLM labels is scored exactly as
before, and its report gains no field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from evalret.core.metrics import Metric, build_judgments, compute
from evalret.core.ppi import MIN_LABELLED, ppi_bootstrap_ci
from evalret.core.provenance import Qrels, has_llm_labels, human_view, is_llm, prediction_view
from evalret.core.ranking import judgeable_ids
from evalret.core.stats import bootstrap_ci, seed_for
from evalret.data.config import Config
from evalret.data.goldenset import GoldenSet


@dataclass(frozen=True)
class LabelScores:
    """One ranking's per-query scores on the two label views, and each query's group."""

    predicted: dict[str, np.ndarray]  # metric -> f [Q], on prediction_view
    human: dict[str, np.ndarray]  # metric -> Y [Q], on human_view (read on labelled queries)
    exact: np.ndarray  # bool [Q]
    labelled: np.ndarray  # bool [Q]
    unchecked: np.ndarray  # bool [Q]: the predicted group


def query_groups(golden: GoldenSet) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(exact, labelled, unchecked) bool masks over ``golden.query_ids``."""
    groups = np.zeros((3, len(golden.query_ids)), dtype=bool)
    for i, q in enumerate(golden.query_ids):
        sources = golden.sources.get(q, {})
        by_llm = set(golden.llm_qrels.get(q, {})) | {d for d, s in sources.items() if is_llm(s)}
        by_human = {d for d in golden.qrels.get(q, {}) if not is_llm(sources.get(d))}
        groups[0 if not by_llm else 1 if by_llm <= by_human else 2, i] = True
    return groups[0], groups[1], groups[2]


def _arrays(golden: GoldenSet, view: Qrels) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A label view as (query index, document index, grade) arrays; pairs outside the corpus
    are left out, as no ranking can hold them."""
    index = golden.doc_index
    rows = [
        (i, index[d], g)
        for i, q in enumerate(golden.query_ids)
        for d, g in view.get(q, {}).items()
        if d in index
    ]
    qi, di, gr = np.array(rows, dtype=np.int64).reshape(-1, 3).T
    return qi, di, gr


def label_scores(
    golden: GoldenSet, ranked: np.ndarray, metrics: list[Metric], config: Config
) -> LabelScores | None:
    """The scores PPI needs for one ranking (document indices [Q, depth], -1 for none); None
    when the metrics use no LLM label: the golden set holds none, or ``gate.labels: human`` scores
    the human labels alone (nothing to correct)."""
    if config.gate.labels == "human" or not has_llm_labels(golden.sources, golden.llm_qrels):
        return None
    n_docs = len(golden.doc_ids)
    ids = judgeable_ids(ranked, n_docs)

    def scored(view: Qrels) -> dict[str, np.ndarray]:
        judgments = build_judgments(
            ids, *_arrays(golden, view), n_docs=n_docs, relevance_level=config.relevance_level
        )
        return compute(metrics, judgments, config.ndcg_gain)

    exact, labelled, unchecked = query_groups(golden)
    return LabelScores(
        predicted=scored(prediction_view(golden.qrels, golden.llm_qrels)),
        human=scored(human_view(golden.qrels, golden.sources)),
        exact=exact,
        labelled=labelled,
        unchecked=unchecked,
    )


@dataclass(frozen=True)
class SliceInterval:
    low: np.ndarray  # [m]
    high: np.ndarray
    notes: list[dict[str, Any]]  # per metric: the report's interval fields ({} without LLM labels)


def slice_interval(
    names: list[str],
    values: np.ndarray,
    mask: np.ndarray,
    seed_label: str,
    labels: LabelScores | None,
    config: Config,
) -> SliceInterval:
    """The interval of each metric's mean over the slice ``mask`` (``values`` [n in slice, m]):
    PPI where it applies (see the module), else today's percentile bootstrap."""
    b = config.bootstrap
    seed = seed_for(b.seed, seed_label)
    if labels is None:
        low, high = bootstrap_ci(values, b.samples, b.confidence, seed)
        return SliceInterval(low, high, [{} for _ in names])
    n_labelled = int((labels.labelled & mask).sum())
    n_unchecked = int((labels.unchecked & mask).sum())
    counts = {"n_labelled": n_labelled, "n_predicted": n_unchecked}
    if n_unchecked == 0 or n_labelled < MIN_LABELLED:
        low, high = bootstrap_ci(values, b.samples, b.confidence, seed)
        return SliceInterval(low, high, [{"interval": "bootstrap", **counts} for _ in names])

    def part(scores: dict[str, np.ndarray], group: np.ndarray) -> np.ndarray:
        return np.column_stack([scores[m][group & mask] for m in names])

    estimate, low, high = ppi_bootstrap_ci(
        part(labels.human, labels.exact),
        part(labels.predicted, labels.unchecked),
        part(labels.human, labels.labelled),
        part(labels.predicted, labels.labelled),
        b.samples,
        b.confidence,
        seed,
    )
    notes = [{"interval": "ppi", **counts, "estimate": float(e)} for e in estimate]
    return SliceInterval(low, high, notes)
