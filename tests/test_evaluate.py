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

from evalret.core.metrics import MAX_CUTOFF
from evalret.data.config import (
    Config,
    GoldenSetConfig,
    HnswIndexConfig,
    HybridIndexConfig,
    IndexesConfig,
)
from evalret.data.schema import RunReport
from evalret.pipeline.evaluate import run_evaluation
from evalret.pipeline.outputs import write_outputs
from helpers import HashEmbedder, assert_report_matches_trec_eval, make_set, read_trec_run


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
    assert "hnsw" in r.ann and set(r.ann["hnsw"].slices["all"].recall) == {
        "recall@1",
        "recall@3",
        "recall@5",
        "recall@10",
        "recall@20",
    }


def test_runs_are_identical(config: Config) -> None:
    """Same inputs, same numbers and intervals (timings and latency aside). A first run fills
    the session's cache (the HNSW graph), so the two compared runs read it alike whatever ran
    before."""
    run_evaluation(config, embedder=HashEmbedder())
    machine_dependent = {"timings", "latency"}
    a = run_evaluation(config, embedder=HashEmbedder()).report.model_dump(exclude=machine_dependent)
    b = run_evaluation(config, embedder=HashEmbedder()).report.model_dump(exclude=machine_dependent)
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
    run = read_trec_run(tmp_path / "out" / "run.exact.trec")
    g = ev.golden_set
    qrels = {q: g.qrels[q] for q in g.query_ids}
    got = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "P.3"}).evaluate(run)
    ours = ev.report.indexes["exact"].per_query
    for i, q in enumerate(ev.report.query_ids):
        assert ours["ndcg@10"][i] == pytest.approx(got[q]["ndcg_cut_10"], abs=1e-9)
        assert ours["precision@3"][i] == pytest.approx(got[q]["P_3"], abs=1e-9)
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["schema_version"] == 2
    assert report["indexes"]["hnsw"]["slices"]["odd"]["metrics"]["ndcg@10"].keys() == {
        "value",
        "ci_low",
        "ci_high",
    }


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


def test_cutoffs_beyond_the_corpus_and_zero_mode_equal_trec_eval(
    config: Config, tmp_path: Path
) -> None:
    """On a 60-document corpus, precision@500 divides by 500 and every metric at k > 60 equals
    trec_eval's (-l 2) on every index's run file; rankings stop at the corpus size (curves,
    judged@k and ANN overlap included). Zero mode scores the query without a relevant document."""
    config = config.model_copy(
        update={
            "metrics": [
                "precision@500",
                f"ndcg@{MAX_CUTOFF}",
                "recall@500",
                "map@500",
                "hit_rate@500",
            ],
            "relevance_level": 2,
            "queries_without_relevant": "zero",
        }
    )
    ev = run_evaluation(config, embedder=HashEmbedder())
    r = ev.report
    assert r.golden_set.queries_without_relevant == ["q-none"]
    assert r.golden_set.n_queries_evaluated == len(r.query_ids) == 25
    assert r.fingerprint.metrics["relevance_level"] == 2
    assert r.fingerprint.metrics["queries_without_relevant"] != "excluded from means"
    assert all(ranking.ids.shape[1] == 60 for ranking in ev.rankings.values())
    assert r.indexes["exact"].curves.k[-1] == 60
    assert set(r.indexes["exact"].slices["all"].judged) == {"judged@500", f"judged@{MAX_CUTOFF}"}
    assert "hnsw" in r.ann and r.ann["hnsw"].slices["all"].recall["recall@500"] is not None
    write_outputs(ev, tmp_path / "out")
    g = ev.golden_set
    qrels = {q: g.qrels[q] for q in g.query_ids}
    for name, index in r.indexes.items():
        run = read_trec_run(tmp_path / "out" / f"run.{name}.trec")
        assert assert_report_matches_trec_eval(index.per_query, r.query_ids, qrels, run, 2) == 125
    p500 = r.indexes["exact"].per_query["precision@500"]
    assert max(p500) <= 2 / 500 and p500[r.query_ids.index("q-none")] == 0


def test_a_cutoff_beyond_the_bound_is_refused_naming_the_metric() -> None:
    """ndcg@100000000000 once tried to allocate 2.9 TiB: cutoffs above MAX_CUTOFF are refused."""
    from evalret.data.config import parse_config
    from evalret.errors import ConfigError

    assert parse_config(f"metrics: [ndcg@{MAX_CUTOFF}]\n").depth == MAX_CUTOFF
    with pytest.raises(ConfigError) as e:
        parse_config("metrics: [recall@10, ndcg@100000000000]\n", "cfg.yaml")
    assert "cfg.yaml:1: metrics: Value error, metric 'ndcg@100000000000'" in str(e.value)


UNCUT = ["map", "ndcg", "mrr", "recall", "precision", "hit_rate"]


@pytest.mark.parametrize("level", [1, 2])
def test_metrics_without_a_cutoff_equal_trec_eval_on_the_run_files(
    config: Config, tmp_path: Path, level: int
) -> None:
    """map, ndcg, mrr, recall, precision and hit_rate without a cutoff score the whole ranking:
    searched 1000 deep by default (the 60-document corpus caps it), each index's exported run
    file scored by trec_eval (map, ndcg, recip_rank, set_recall, set_P) gives the same value per
    query, BM25's shorter rankings included; the depth enters the fingerprint."""
    config = config.model_copy(update={"metrics": [*UNCUT, "ndcg@10"], "relevance_level": level})
    ev = run_evaluation(config, embedder=HashEmbedder())
    r = ev.report
    assert r.fingerprint.metrics["search_depth"] == 1000
    assert r.fingerprint.metrics["names"] == [*UNCUT, "ndcg@10"]
    assert all(ranking.ids.shape[1] == 60 for ranking in ev.rankings.values())
    assert (ev.rankings["bm25"].ids < 0).any()  # BM25 retrieves only matching documents
    assert list(r.indexes["exact"].slices["all"].judged) == ["judged@10"]
    assert "hnsw" in r.ann and set(r.ann["hnsw"].slices["all"].recall) == {"recall@10", "recall@60"}
    assert "search_depth" not in r.config
    write_outputs(ev, tmp_path / "out")
    g = ev.golden_set
    qrels = {q: g.qrels[q] for q in g.query_ids}
    for name, index in r.indexes.items():
        run = read_trec_run(tmp_path / "out" / f"run.{name}.trec")
        compared = assert_report_matches_trec_eval(index.per_query, r.query_ids, qrels, run, level)
        assert compared == 7 * len(r.query_ids)
    exact = r.indexes["exact"].per_query
    assert exact["recall"] == [1.0] * len(r.query_ids)  # the whole corpus is ranked
    assert exact["precision"] == pytest.approx([3 / 60 if level == 1 else 2 / 60] * 24)


def test_search_depth_cuts_the_whole_ranking_and_is_fingerprinted(
    config: Config, tmp_path: Path
) -> None:
    """search_depth: 7 searches every index 7 deep: map over the whole ranking equals map@7,
    trec_eval agrees on the 7-deep run files, and the depth is in the fingerprint and config."""
    config = config.model_copy(
        update={"metrics": ["map", "map@7", "ndcg", "precision"], "search_depth": 7}
    )
    ev = run_evaluation(config, embedder=HashEmbedder())
    r = ev.report
    assert r.fingerprint.metrics["search_depth"] == 7 and r.config["search_depth"] == 7
    assert all(ranking.ids.shape[1] == 7 for ranking in ev.rankings.values())
    assert r.indexes["exact"].curves is not None and r.indexes["exact"].curves.k[-1] == 7
    for index in r.indexes.values():
        assert index.per_query["map"] == index.per_query["map@7"]
    write_outputs(ev, tmp_path / "out")
    run = read_trec_run(tmp_path / "out" / "run.hnsw.trec")
    assert {len(docs) for docs in run.values()} == {7}
    g = ev.golden_set
    qrels = {q: g.qrels[q] for q in g.query_ids}
    per_query = r.indexes["hnsw"].per_query
    assert assert_report_matches_trec_eval(per_query, r.query_ids, qrels, run, 1) == 4 * 24


def test_bm25_without_hybrid_reports_the_lexical_comparison(tmp_path: Path) -> None:
    """With HNSW and the hybrid disabled, the report still builds (it was refused as
    inconsistent) and the lexical section compares exact with BM25 alone; the report reads back."""
    config = Config(
        golden_set=GoldenSetConfig(path=make_set(tmp_path / "set")),
        indexes=IndexesConfig(
            hnsw=HnswIndexConfig(enabled=False), hybrid=HybridIndexConfig(enabled=False)
        ),
    )
    report = run_evaluation(config, embedder=HashEmbedder()).report
    assert list(report.indexes) == ["exact", "bm25"]
    assert report.lexical is not None
    for s in report.lexical.slices.values():
        assert s.hybrid_minus_dense == {} and set(s.dense_minus_bm25) == set(
            report.indexes["exact"].per_query
        )
    assert RunReport.model_validate_json(report.model_dump_json()) == report
