"""A rerank stage on a real collection: BEIR SciFact (test split), the packaged all-MiniLM-L6-v2's
exact top 100 reranked by a deterministic Python reranker (word overlap). The report's ceiling,
oracle and attribution are checked against direct computations (the oracle's metrics by
trec_eval on the candidates sorted by grade)."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import numpy as np
import pytest

from evalret.core.metrics import parse_metrics
from evalret.data.config import parse_config
from evalret.pipeline.evaluate import Evaluation, run_evaluation
from helpers import trec_eval_values

pytestmark = [pytest.mark.slow, pytest.mark.model]
METRICS = ["ndcg@10", "mrr@10", "recall@10", "recall@100"]
WORD = re.compile(r"[a-z0-9]+")


def overlap(query: str, documents: list[str]) -> list[float]:
    """The reranker: how many of the query's distinct words each document holds, a shorter
    document first among equals (deterministic, cheap, and not the embedding's order)."""
    words = set(WORD.findall(query.lower()))
    return [len(words & set(WORD.findall(d.lower()))) + 1.0 / (1.0 + len(d)) for d in documents]


@pytest.fixture(scope="module")
def scifact_rerank(scifact_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Evaluation:
    text = textwrap.dedent(
        f"""\
        golden_set: {{path: {scifact_path}, format: beir, split: test}}
        model: {{name: all-MiniLM-L6-v2, max_seq_length: 256, batch_size: 32}}
        metrics: {METRICS}
        indexes:
          hnsw: {{enabled: false}}
          bm25: {{enabled: false}}
          hybrid: {{enabled: false}}
          overlap:
            type: rerank
            of: exact
            k: 100
            reranker: {{provider: python, callable: "test_rerank_scifact:overlap"}}
        gate:
          baseline: null
          indexes: [exact, overlap]
          ann_min_recall: null
          rerank_min_recall: 0.9
        output: {{dir: {tmp_path_factory.mktemp("out")}}}
        """
    )
    return run_evaluation(parse_config(text, "scifact-rerank.yaml"))


def test_scifact_rerank_reports_ceiling_oracle_and_attribution(scifact_rerank: Evaluation) -> None:
    ev = scifact_rerank
    g, report = ev.golden_set, ev.report
    section = report.rerank["overlap"]
    assert (section.first_stage, section.k) == ("exact", 100)
    s = section.slices["all"]
    exact = report.indexes["exact"].slices["all"].metrics
    rerank = report.indexes["overlap"].slices["all"].metrics
    # the ceiling is exact search's recall@100 (0.925, MTEB's figure for this model and split)
    assert s.ceiling == pytest.approx(exact["recall@100"].value, abs=1e-12)
    assert s.ceiling == pytest.approx(0.925, abs=0.005)
    # the oracle: exact's top 100 sorted by grade (ties: document id descending), by trec_eval
    oracle_run = {}
    for qi, q in enumerate(g.query_ids):
        pool = [g.doc_ids[d] for d in ev.rankings["exact"].ids[qi][:100] if d >= 0]
        ordered = sorted(pool, key=lambda d: (g.qrels[q].get(d, 0), d), reverse=True)
        oracle_run[q] = [(d, float(100 - i)) for i, d in enumerate(ordered)]
    qrels = {q: g.qrels[q] for q in g.query_ids}
    for metric in parse_metrics(METRICS):
        name = str(metric)
        direct = float(np.mean(list(trec_eval_values(qrels, oracle_run, metric).values())))
        assert s.oracle[name] == pytest.approx(direct, abs=1e-9)
        assert s.stage2[name] == pytest.approx(rerank[name].value - exact[name].value, abs=1e-12)
        total = s.ideal[name] + s.stage1[name] + s.stage2[name]
        assert total == pytest.approx(rerank[name].value, abs=1e-12)
        assert s.headroom[name] == pytest.approx(s.oracle[name] - rerank[name].value, abs=1e-12)
    assert s.oracle["recall@100"] == pytest.approx(s.ceiling, abs=1e-12)
    assert s.oracle["ndcg@10"] > exact["ndcg@10"].value > 0.6
    # the gate's floor on the first stage: 0.925 passes 0.9
    assert report.gate is not None
    (check,) = [c for c in report.gate.checks if c.kind == "rerank_min_recall"]
    assert check.passed and check.name == "overlap/all/candidate_recall@100 min 0.9"
    figures = {
        "ceiling": s.ceiling,
        **{f"{k}.ndcg@10": getattr(s, k)["ndcg@10"] for k in ("oracle", "ideal", "stage1")},
        "stage2.ndcg@10": s.stage2["ndcg@10"],
        "headroom.ndcg@10": s.headroom["ndcg@10"],
        "exact.ndcg@10": exact["ndcg@10"].value,
        "overlap.ndcg@10": rerank["ndcg@10"].value,
    }
    print("SciFact rerank figures:", {k: round(v, 4) for k, v in figures.items()})
