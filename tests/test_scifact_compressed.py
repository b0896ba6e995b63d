"""Compressed indexes on BEIR SciFact (test split) with the packaged all-MiniLM-L6-v2: a faiss
``IVF64,PQ16`` index and binary embeddings with and without rescoring, each reported against
float exact search (recall of its top k, metric change, index bytes). The figures are printed
(run with ``-s`` to see them); embedding 5,183 abstracts takes minutes on 2 cores.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import REPO
from evalret.data.config import load_config
from evalret.data.schema import RunReport
from evalret.pipeline.evaluate import run_evaluation

pytestmark = [pytest.mark.slow, pytest.mark.model]

COMPRESSED = {
    "ivfpq": {"type": "faiss", "factory": "IVF64,PQ16", "params": {"nprobe": 16}},
    "binary": {"type": "quantized", "precision": "binary"},
    "binary_rescore": {"type": "quantized", "precision": "binary", "rescore": 4},
}


@pytest.fixture(scope="module")
def report(scifact_path: Path) -> RunReport:
    cfg = load_config(REPO / "configs" / "scifact.yaml")
    assert cfg.golden_set.path == scifact_path
    data = cfg.model_dump(mode="json")
    data["indexes"].update(
        {"hnsw": {"enabled": False}, "bm25": {"enabled": False}, "hybrid": {"enabled": False}}
    )
    data["indexes"].update(COMPRESSED)
    return run_evaluation(type(cfg).model_validate(data)).report


def test_compressed_indexes_report_recall_metric_change_and_bytes(report: RunReport) -> None:
    exact = report.indexes["exact"].slices["all"].metrics["ndcg@10"].value
    assert exact == pytest.approx(0.645, abs=0.003)
    float_bytes = 5183 * 384 * 4
    print(
        f"\nSciFact test (300 queries, 5,183 documents), exact ndcg@10 {exact:.4f}, "
        f"float32 vectors {float_bytes:,} bytes"
    )
    for name in COMPRESSED:
        s = report.ann[name]
        a = s.slices["all"]
        assert s.index_bytes is not None and s.bytes_per_vector is not None
        print(
            f"{name:15s} recall@10 {a.recall['recall@10']:.4f} recall@100 "
            f"{a.recall['recall@100']:.4f} ndcg@10 change {a.metric_deltas['ndcg@10']:+.4f} "
            f"index bytes {s.index_bytes:,} ({s.bytes_per_vector:.1f} per vector)"
        )
    sections = report.ann
    binary, rescored = sections["binary"].slices["all"], sections["binary_rescore"].slices["all"]
    assert sections["binary"].bytes_per_vector == pytest.approx(48, abs=1)  # 384 bits
    # 16-byte codes and 8-byte ids a document, plus the 64 centroids and the PQ codebooks
    assert sections["ivfpq"].index_bytes < float_bytes / 10  # type: ignore[operator]
    assert rescored.recall["recall@10"] > binary.recall["recall@10"]  # type: ignore[operator]
    assert rescored.recall["recall@10"] >= 0.9  # type: ignore[operator]
    for s in sections.values():
        assert s.slices["all"].metric_deltas["ndcg@10"] is not None
