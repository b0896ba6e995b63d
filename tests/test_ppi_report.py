"""Prediction-powered intervals in a run (pipeline/intervals.py): with LLM labels in the golden set
and some of them checked by a person, the slice intervals are PPI ones and every report says so;
with none checked, today's bootstrap, marked uncalibrated; without LLM labels, nothing changes.

The golden set is a native set whose query lines carry the provenance fields (``sources``,
``llm_relevant``: data/goldenset.py), read by the real reader."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate
from rich.console import Console

from evalret.core.provenance import human_source, llm_source
from evalret.data.config import Config, GoldenSetConfig, IndexesConfig
from evalret.data.goldenset import GoldenSet
from evalret.pipeline.evaluate import Evaluation, run_evaluation
from evalret.pipeline.intervals import query_groups
from evalret.pipeline.outputs import write_outputs
from evalret.report.escape import html_text, markdown
from evalret.report.terminal_brief import brief_run
from helpers import HashEmbedder, make_set

JUDGE = llm_source("judge-model", "0123456789ab")
CHECKED = [f"q{i}" for i in range(10)]  # queries whose LLM labels a person also graded


def with_llm_labels(directory: Path, checked: list[str]) -> None:
    """Give the native set in ``directory`` an over-grading judge, in the golden-set file's own
    provenance fields: the judge graded four more documents of every query relevant (grade 1).
    On the ``checked`` queries a person graded the same documents non-relevant (``relevant``
    keeps the human 0, ``llm_relevant`` the judge's 1); elsewhere ``relevant`` holds the judge's
    grade with the judge as its source."""
    path = directory / "queries.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for q in lines:
        if q["id"] == "q-none":  # no relevant document: not scored
            continue
        n = int(q["id"][1:])
        extra = [f"d{(n * 5 + j) % 60}" for j in range(3, 7)]
        q["sources"] = dict.fromkeys(q["relevant"], human_source("ann"))
        if q["id"] in checked:
            q["relevant"] |= dict.fromkeys(extra, 0)
            q["sources"] |= dict.fromkeys(extra, human_source("ann"))
            q["llm_relevant"] = {d: {"grade": 1, "source": JUDGE} for d in extra}
        else:
            q["relevant"] |= dict.fromkeys(extra, 1)
            q["sources"] |= dict.fromkeys(extra, JUDGE)
    path.write_text("".join(json.dumps(q) + "\n" for q in lines))


@pytest.fixture
def config(tmp_path: Path) -> Config:
    return Config(
        golden_set=GoldenSetConfig(path=make_set(tmp_path / "set")),
        indexes=IndexesConfig(hnsw={"enabled": False}),
        metrics=["ndcg@10", "recall@10"],
    )


def run_with(config: Config, labels: list[str] | None) -> Evaluation:
    """A run whose golden set carries LLM labels (``labels``: the checked queries), or none."""
    if labels is not None:
        with_llm_labels(Path(config.golden_set.path), labels)
    return run_evaluation(config, embedder=HashEmbedder())


def scores_on(config: Config, tmp_path: Path, view: str) -> dict[str, np.ndarray]:
    """Per-query scores of a plain run (a copy of the set with no provenance) on the marked
    set's prediction view (the judge's grade wherever it graded: ``f``) or on its labels as they
    are (human where checked: ``y``)."""
    plain = make_set(tmp_path / f"plain-{view}")
    with_llm_labels(plain, CHECKED)
    path = plain / "queries.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for q in lines:
        q.pop("sources", None)
        llm = q.pop("llm_relevant", {})
        if view == "f":
            q["relevant"] |= {d: g["grade"] for d, g in llm.items()}
    path.write_text("".join(json.dumps(q) + "\n" for q in lines))
    cfg = config.model_copy(update={"golden_set": GoldenSetConfig(path=plain)})
    report = run_evaluation(cfg, embedder=HashEmbedder()).report
    return {m: np.array(v) for m, v in report.indexes["exact"].per_query.items()}


def test_the_interval_is_prediction_powered_and_matches_ppi_python(
    config: Config, tmp_path: Path
) -> None:
    report = run_with(config, CHECKED).report
    f = scores_on(config, tmp_path, "f")
    y = scores_on(config, tmp_path, "y")  # human labels on the checked queries
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


def test_every_report_names_the_interval_method(config: Config, tmp_path: Path) -> None:
    ev = run_with(config, CHECKED)
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
    config: Config, tmp_path: Path
) -> None:
    ev = run_with(config, [])
    v = ev.report.indexes["exact"].slices["all"].metrics["ndcg@10"]
    assert (v.interval, v.n_labelled, v.n_predicted, v.estimate) == ("bootstrap", 0, 24, None)
    write_outputs(ev, tmp_path / "out")
    assert (
        markdown("slice all: bootstrap interval, LLM labels uncalibrated")
        in (tmp_path / "out" / "report.md").read_text()
    )


def test_without_llm_labels_the_report_is_unchanged(config: Config, tmp_path: Path) -> None:
    ev = run_with(config, None)
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
    config: Config, tmp_path: Path
) -> None:
    """Under gate.labels: human the metrics hold no LLM label: nothing to correct, so the slice
    intervals are the plain bootstrap, and the report does not call them PPI."""
    human = config.model_copy(update={"gate": config.gate.model_copy(update={"labels": "human"})})
    report = run_with(human, CHECKED).report
    for v in report.indexes["exact"].slices["all"].metrics.values():
        assert v.interval is None and v.estimate is None
        assert v.ci_low is not None and v.ci_high is not None
