"""Prediction-powered intervals in a run (pipeline/intervals.py): with LLM labels in the golden set
and some of them checked by a person, the slice intervals are PPI ones and every report says so;
with none checked, today's bootstrap, marked uncalibrated; without LLM labels, nothing changes.

The golden set is read from files by the real reader, then given the provenance fields the
golden-set files will carry (sources, llm_qrels: core/provenance.py), as the reader of the "prov"
part of #25 fills them."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate
from rich.console import Console

import evalret.pipeline.evaluate as evaluate
from evalret.core.provenance import human_source, llm_source, prediction_view
from evalret.data.config import Config, GoldenSetConfig, IndexesConfig
from evalret.data.goldenset import GoldenSet, load_golden_set
from evalret.pipeline.evaluate import Evaluation, run_evaluation
from evalret.pipeline.intervals import query_groups
from evalret.pipeline.outputs import write_outputs
from evalret.report.escape import html_text, markdown
from evalret.report.terminal_brief import brief_run
from helpers import HashEmbedder, make_set

JUDGE = llm_source("judge-model", "0123456789ab")
CHECKED = [f"q{i}" for i in range(10)]  # queries whose LLM labels a person also graded


def with_llm_labels(golden: GoldenSet, checked: list[str]) -> GoldenSet:
    """The judge graded four more documents of every query relevant (grade 1): an over-grading
    judge. On the ``checked`` queries a person graded the same documents non-relevant (qrels keep
    the human 0); elsewhere qrels hold the judge's grade."""
    qrels = {q: dict(g) for q, g in golden.qrels.items()}
    sources: dict[str, dict[str, str]] = {}
    llm: dict[str, dict[str, int]] = {}
    for q in golden.query_ids:
        if q == "q-none":  # no relevant document: not scored
            continue
        n = int(q[1:])
        extra = {f"d{(n * 5 + j) % 60}": 1 for j in range(3, 7)}
        llm[q] = extra
        human = 0 if q in checked else None
        qrels[q].update({d: human if human is not None else g for d, g in extra.items()})
        who = human_source("ann") if q in checked else JUDGE
        sources[q] = {d: human_source("ann") for d in golden.qrels[q]} | dict.fromkeys(extra, who)
    return replace(golden, qrels=qrels, sources=sources, llm_qrels=llm)


@pytest.fixture
def config(tmp_path: Path) -> Config:
    return Config(
        golden_set=GoldenSetConfig(path=make_set(tmp_path / "set")),
        indexes=IndexesConfig(hnsw={"enabled": False}),
        metrics=["ndcg@10", "recall@10"],
    )


def run_with(
    config: Config, monkeypatch: pytest.MonkeyPatch, labels: list[str] | None
) -> Evaluation:
    """A run whose golden set carries LLM labels (``labels``: the checked queries), or none."""

    def load(cfg: GoldenSetConfig, level: int) -> GoldenSet:
        golden = load_golden_set(cfg, level)
        return golden if labels is None else with_llm_labels(golden, labels)

    monkeypatch.setattr(evaluate, "load_golden_set", load)
    return run_evaluation(config, embedder=HashEmbedder())


def scores_on(config: Config, monkeypatch: pytest.MonkeyPatch, view: str) -> dict[str, np.ndarray]:
    """Per-query scores of a plain run (no LLM marks) on the golden set's prediction view (the
    judge's grade wherever it graded) or on its labels as they are (human where checked)."""

    def load(cfg: GoldenSetConfig, level: int) -> GoldenSet:
        marked = with_llm_labels(load_golden_set(cfg, level), CHECKED)
        qrels = prediction_view(marked.qrels, marked.llm_qrels) if view == "f" else marked.qrels
        return replace(marked, qrels=qrels, sources={}, llm_qrels={})

    monkeypatch.setattr(evaluate, "load_golden_set", load)
    report = run_evaluation(config, embedder=HashEmbedder()).report
    return {m: np.array(v) for m, v in report.indexes["exact"].per_query.items()}


def test_the_interval_is_prediction_powered_and_matches_ppi_python(
    config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = run_with(config, monkeypatch, CHECKED).report
    f = scores_on(config, monkeypatch, "f")
    y = scores_on(config, monkeypatch, "y")  # human labels on the checked queries
    checked = np.isin(report.query_ids, CHECKED)
    for metric in ("ndcg@10", "recall@10"):
        v = report.indexes["exact"].slices["all"].metrics[metric]
        assert (v.interval, v.n_labelled, v.n_predicted) == ("ppi", 10, 14)
        args = (y[metric][checked], f[metric][checked], f[metric][~checked])
        assert v.estimate == pytest.approx(float(ppi_mean_pointestimate(*args, lam=1)[0]), 1e-12)
        low, high = (float(x[0]) for x in ppi_mean_ci(*args, alpha=0.05, lam=1))
        assert v.ci_low is not None and v.ci_high is not None
        assert v.ci_low < v.estimate < v.ci_high
        # the bootstrap of the same parts, against the normal interval on 10 labelled queries
        assert abs(v.ci_low - low) < 0.2 * (high - low) and abs(v.ci_high - high) < 0.2 * (
            high - low
        )
        # the correction moved the estimate off the judge's own mean
        assert abs(f[metric].mean() - v.estimate) > 0.01
    odd = report.indexes["exact"].slices["odd"].metrics["ndcg@10"]
    assert (odd.interval, odd.n_labelled, odd.n_predicted) == ("ppi", 5, 7)


def test_every_report_names_the_interval_method(
    config: Config, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ev = run_with(config, monkeypatch, CHECKED)
    written = write_outputs(ev, tmp_path / "out")
    data = json.loads((tmp_path / "out" / "report.json").read_text())
    value = data["indexes"]["exact"]["slices"]["all"]["metrics"]["ndcg@10"]
    assert value["interval"] == "ppi" and value["n_labelled"] == 10
    wanted = "slice all: prediction-powered (PPI) interval (10 labelled, 14 with LLM labels"
    assert markdown(wanted) in (tmp_path / "out" / "report.md").read_text()
    page = (tmp_path / "out" / "report.html").read_text()
    assert html_text(wanted) in page and "95% CI PPI [" in page  # the table and the bars' titles
    console = Console(file=io.StringIO(), width=240)
    console.print(brief_run(ev.report, written))
    shown = console.file.getvalue()  # type: ignore[attr-defined]
    assert "PPI" in shown and f"exact: {wanted}" in shown


def test_without_checked_labels_the_interval_is_the_bootstrap_marked_uncalibrated(
    config: Config, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ev = run_with(config, monkeypatch, [])
    v = ev.report.indexes["exact"].slices["all"].metrics["ndcg@10"]
    assert (v.interval, v.n_labelled, v.n_predicted, v.estimate) == ("bootstrap", 0, 24, None)
    write_outputs(ev, tmp_path / "out")
    assert (
        markdown("slice all: bootstrap interval, LLM labels uncalibrated")
        in (tmp_path / "out" / "report.md").read_text()
    )


def test_without_llm_labels_the_report_is_unchanged(
    config: Config, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ev = run_with(config, monkeypatch, None)
    write_outputs(ev, tmp_path / "out")
    data = json.loads((tmp_path / "out" / "report.json").read_text())
    for index in data["indexes"].values():
        for s in index["slices"].values():
            assert all(set(v) == {"value", "ci_low", "ci_high"} for v in s["metrics"].values())
    assert "Intervals:" not in (tmp_path / "out" / "report.md").read_text()


def test_each_query_falls_in_one_label_group() -> None:
    """exact: no LLM label; labelled: every judged pair also graded by a person (an imported
    grade counts as a person's); predicted: an LLM label nobody checked, in qrels or only in
    llm_qrels."""
    golden = GoldenSet(
        source="mem",
        format="native",
        doc_ids=["a", "b"],
        doc_texts=["a", "b"],
        query_ids=["none", "checked", "imported", "llm_in_qrels", "partly"],
        query_texts=["q"] * 5,
        qrels={
            "none": {"a": 1},
            "checked": {"a": 0},
            "imported": {"a": 2},
            "llm_in_qrels": {"a": 1},
            "partly": {"a": 1},
        },
        sources={
            "checked": {"a": human_source("ann")},
            "llm_in_qrels": {"a": JUDGE},
            "partly": {"a": human_source("ann")},
        },
        llm_qrels={"checked": {"a": 1}, "imported": {"a": 3}, "partly": {"a": 1, "b": 2}},
    )
    exact, labelled, predicted = query_groups(golden)
    assert exact.tolist() == [True, False, False, False, False]
    assert labelled.tolist() == [False, True, True, False, False]
    assert predicted.tolist() == [False, False, False, True, True]


def test_no_prediction_powered_interval_when_the_gate_scores_human_labels(
    config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under gate.labels: human the metrics hold no LLM label: nothing to correct, so the slice
    intervals are the plain bootstrap, and the report does not call them PPI."""
    human = config.model_copy(update={"gate": config.gate.model_copy(update={"labels": "human"})})
    report = run_with(human, monkeypatch, CHECKED).report
    for v in report.indexes["exact"].slices["all"].metrics.values():
        assert v.interval is None and v.estimate is None
        assert v.ci_low is not None and v.ci_high is not None
