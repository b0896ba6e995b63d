"""Pipeline plumbing with a deterministic stand-in embedder (the real model is tested in
test_cli.py and test_scifact.py): report shape, slices, ANN section, determinism, TREC export."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import pytrec_eval

from evalret.config import Config, GoldenSetConfig, HnswIndexConfig, IndexesConfig
from evalret.pipeline import run_evaluation, topk_overlap
from evalret.report.files import write_outputs
from helpers import HashEmbedder, make_set


@pytest.fixture
def config(tmp_path: Path) -> Config:
    return Config(
        golden_set=GoldenSetConfig(path=make_set(tmp_path)),
        indexes=IndexesConfig(hnsw=HnswIndexConfig(m=8, ef_construction=40, ef_search=16)),
        metrics=["ndcg@10", "mrr@5", "recall@20", "precision@3", "map@20", "hit_rate@1"],
    )


def test_report_shape_and_slices(config: Config) -> None:
    """Both indexes, every slice with n and CI, the query without relevant docs left out."""
    ev = run_evaluation(config, embedder=HashEmbedder())
    r = ev.report
    assert r.golden_set.queries_without_relevant == ["q-none"]
    assert r.golden_set.n_queries_evaluated == len(r.query_ids) == 24
    assert list(r.indexes) == ["exact", "hnsw", "bm25", "hybrid"]
    assert list(r.slices) == ["all", "head", "torso", "tail", "even", "odd"]
    all_ = r.indexes["exact"].slices["all"]
    assert all_.n_queries == 24 and all_.reliability == "unreliable"
    for m, v in all_.metrics.items():
        per_query = r.indexes["exact"].per_query[m]
        assert v.value == pytest.approx(float(np.mean(per_query)))
        assert v.ci_low <= v.value <= v.ci_high
    judged = all_.judged
    assert list(judged) == ["judged@1", "judged@3", "judged@5", "judged@10", "judged@20"]
    assert all(v is not None and 0 <= v <= 1 for v in judged.values())
    assert r.lexical is not None and r.lexical.dense == "exact"
    lex = r.lexical.slices["all"]
    exact, bm25 = r.indexes["exact"].per_query["ndcg@10"], r.indexes["bm25"].per_query["ndcg@10"]
    assert lex.dense_minus_bm25["ndcg@10"] == pytest.approx(np.mean(np.subtract(exact, bm25)))
    assert lex.dense_wins["ndcg@10"] == int(np.sum(np.greater(exact, bm25)))
    assert r.ann is not None and set(r.ann.slices["all"].recall) == {
        "recall@1",
        "recall@3",
        "recall@5",
        "recall@10",
        "recall@20",
    }


def test_runs_are_identical(config: Config) -> None:
    """Same inputs, same numbers and intervals (timings aside)."""
    a = run_evaluation(config, embedder=HashEmbedder()).report.model_dump(exclude={"timings"})
    b = run_evaluation(config, embedder=HashEmbedder()).report.model_dump(exclude={"timings"})
    assert a == b


def test_trec_export_scores_identically_in_trec_eval(config: Config, tmp_path: Path) -> None:
    """run.exact.trec read back and scored by trec_eval gives our per-query values."""
    ev = run_evaluation(config, embedder=HashEmbedder())
    written = write_outputs(ev, tmp_path / "out")
    assert {p.name for p in written} >= {
        "report.json",
        "report.md",
        "report.html",
        "junit.xml",
        "run.exact.trec",
        "run.hnsw.trec",
        "run.bm25.trec",
        "run.hybrid.trec",
    }
    run: dict[str, dict[str, float]] = {}
    for line in (tmp_path / "out" / "run.exact.trec").read_text().splitlines():
        qid, _, doc, _, score, _ = line.split()
        run.setdefault(qid, {})[doc] = float(score)
    g = ev.golden_set
    qrels = {q: g.qrels[q] for q in g.query_ids}
    got = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "P.3"}).evaluate(run)
    ours = ev.report.indexes["exact"].per_query
    for i, q in enumerate(ev.report.query_ids):
        assert ours["ndcg@10"][i] == pytest.approx(got[q]["ndcg_cut_10"], abs=1e-9)
        assert ours["precision@3"][i] == pytest.approx(got[q]["P_3"], abs=1e-9)
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["schema_version"] == 1
    assert report["indexes"]["hnsw"]["slices"]["odd"]["metrics"]["ndcg@10"].keys() == {
        "value",
        "ci_low",
        "ci_high",
    }


def test_topk_overlap() -> None:
    """ANN recall@k: shared documents among the exact top-k, padding ignored."""
    approx = np.array([[1, 2, 3], [4, -1, -1]])
    exact = np.array([[3, 2, 9], [4, 5, -1]])
    assert topk_overlap(approx, exact, 3).tolist() == pytest.approx([2 / 3, 1 / 2])
    assert topk_overlap(approx, exact, 1).tolist() == [0.0, 1.0]


class CollapsedEmbedder(HashEmbedder):
    """Every text lands near one direction: the collapse an embedding bug produces."""

    def identity(self) -> dict[str, Any]:
        return {"name": "collapsed", "source": "test"}

    def embed(self, texts: Sequence[str], kind: str, progress: Any = None) -> np.ndarray:
        healthy = super().embed(texts, kind, progress)
        out = np.ones_like(healthy) + 0.01 * healthy
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def test_collapsed_embedding_trips_the_flag_and_the_default_gate(config: Config) -> None:
    healthy = run_evaluation(config, embedder=HashEmbedder()).report
    assert healthy.intrinsic is not None
    assert healthy.intrinsic.documents["collapsed"] is False
    assert healthy.intrinsic.collapse_reasons["documents"] == []
    # (the toy queries use 8 distinct words, so most hashed query dimensions are truly dead)
    assert healthy.intrinsic.queries is not None and "alignment" in healthy.intrinsic.queries

    report = run_evaluation(config, embedder=CollapsedEmbedder()).report
    assert report.intrinsic is not None
    assert report.intrinsic.documents["collapsed"] is True
    assert report.intrinsic.documents["avg_cosine"] > 0.99
    assert any("cosine" in r for r in report.intrinsic.collapse_reasons["documents"])
    assert report.gate is not None and report.gate.verdict == "fail"
    failed = {c.name for c in report.gate.failed}
    assert "embedding/documents/collapsed max 0" in failed
