"""Quantized indexes (``indexes.<name>: {type: quantized, precision, rescore}``): the vectors
quantized by sentence-transformers' quantize_embeddings (int8 / uint8 calibrated on the corpus),
binary codes searched by Hamming distance on a faiss binary index, rescoring of the top
rescore x depth with the float vectors, each checked against a direct computation, and reported
like every approximate index (recall against float exact search, metric change, index bytes).

Marked ``model``: sentence-transformers (and torch) are imported for quantize_embeddings; the
vectors come from a hashed bag of words (no model weights are loaded).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import DEMO
from evalret.core.ranking import id_rank
from evalret.data.config import parse_config
from evalret.engines.quantize import quantize, quantized_search, rescore
from evalret.errors import ConfigError
from evalret.pipeline.evaluate import Evaluation, run_evaluation
from test_faiss_indexes import ENCODER

pytestmark = pytest.mark.model

INDEXES = """  bin: {type: quantized, precision: binary}
  ubin: {type: quantized, precision: ubinary}
  bin4: {type: quantized, precision: binary, rescore: 4}
  i8: {type: quantized, precision: int8}
  u8: {type: quantized, precision: uint8, rescore: 2}
"""


def _yaml(tmp_path: Path, indexes: str) -> str:
    return (
        f"golden_set: {{path: {DEMO}}}\ncache: {{dir: {tmp_path / 'cache'}}}\n"
        "model: {provider: python, callable: 'quantized_encoder:make'}\n"
        "metrics: [ndcg@10, recall@10]\n"
        "indexes:\n  hnsw: {enabled: false}\n  bm25: {enabled: false}\n"
        "  hybrid: {enabled: false}\n" + indexes
    )


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Evaluation:
    tmp = tmp_path_factory.mktemp("quantized")
    (tmp / "quantized_encoder.py").write_text(ENCODER)
    sys.path.insert(0, str(tmp))
    try:
        return run_evaluation(parse_config(_yaml(tmp, INDEXES), "c.yaml"))
    finally:
        sys.path.remove(str(tmp))


def _vectors() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    docs = rng.standard_normal((300, 32)).astype(np.float32)
    queries = rng.standard_normal((20, 32)).astype(np.float32)
    return docs, queries


def test_codes_are_sentence_transformers_with_ranges_from_the_corpus() -> None:
    """int8 / uint8: the queries are quantized with the documents' per-dimension ranges; binary:
    the sign bits packed (binary's int8 bytes shifted by 128, the same bits as ubinary)."""
    from sentence_transformers.util.quantization import quantize_embeddings

    docs, queries = _vectors()
    ranges = np.vstack([docs.min(axis=0), docs.max(axis=0)])
    for precision in ("int8", "uint8"):
        d, q = quantize(docs, queries, precision)
        assert np.array_equal(d, quantize_embeddings(docs, precision, ranges=ranges))
        assert np.array_equal(q, quantize_embeddings(queries, precision, ranges=ranges))
    b, _ = quantize(docs, queries, "binary")
    u, _ = quantize(docs, queries, "ubinary")
    assert np.array_equal(b, u) and np.array_equal(u, np.packbits(docs > 0, axis=-1))


def test_binary_search_is_hamming_distance_under_the_tie_rule() -> None:
    """Each query's ranking is the documents by Hamming distance ascending, ties by document id
    descending (evalret's tie rule), computed here with numpy."""
    docs, queries = _vectors()
    d, q = quantize(docs, queries, "binary")
    ids = [f"d{i:03d}" for i in range(len(docs))]
    rank = id_rank(ids)
    found, _ = quantized_search(d, q, "binary", 25, rank)
    bits_d, bits_q = np.unpackbits(d, axis=1), np.unpackbits(q, axis=1)
    for i in range(len(queries)):
        hamming = (bits_d != bits_q[i]).sum(axis=1)
        order = sorted(range(len(docs)), key=lambda j: (hamming[j], -rank[j]))[:25]
        assert found.ids[i].tolist() == order
        assert found.scores[i].tolist() == [-float(hamming[j]) for j in order]


def test_rescore_ranks_the_quantized_candidates_by_the_float_inner_product() -> None:
    """The top rescore x depth of the binary search, re-ranked by the float vectors; with every
    document a candidate, rescoring is exact search."""
    docs, queries = _vectors()
    d, q = quantize(docs, queries, "binary")
    rank = id_rank([f"d{i:03d}" for i in range(len(docs))])
    candidates, _ = quantized_search(d, q, "binary", 40, rank)
    out = rescore(candidates, docs, queries, 10, rank)
    for i in range(len(queries)):
        pool = candidates.ids[i]
        scores = docs[pool] @ queries[i]
        expected = pool[np.lexsort((-rank[pool], -scores))][:10]
        assert out.ids[i].tolist() == expected.tolist()
    everything, _ = quantized_search(d, q, "binary", len(docs), rank)
    full = rescore(everything, docs, queries, 10, rank)
    exact = np.argsort(-(queries @ docs.T), axis=1, kind="stable")[:, :10]
    assert np.array_equal(full.ids, exact)


def test_reported_against_float_exact_search(run: Evaluation) -> None:
    """Every quantized index has its ANN section against (float) exact search with recall,
    metric change, index bytes and distances a query (and a latency): binary codes 8 bytes a
    64-dimensional vector, int8 64;
    rescoring wins back recall; binary and ubinary rank alike."""
    r = run.report
    sections = r.ann
    assert set(sections) == {"bin", "ubin", "bin4", "i8", "u8"}
    for s in sections.values():
        assert s.reference == "exact" and s.index_bytes is not None
        assert s.slices["all"].recall["recall@10"] is not None
        assert "ndcg@10" in s.slices["all"].metric_deltas
    assert sections["bin"].bytes_per_vector == pytest.approx(8, abs=0.5)  # + faiss's header
    assert sections["i8"].index_bytes == 338 * 64
    # a scan of every code, then the float products of the rescored candidates (4 x depth 10)
    assert sections["i8"].distances_per_query == 338
    assert sections["bin4"].distances_per_query == 338 + 40
    assert r.latency is not None and set(r.latency.indexes) == {"exact", *sections}
    recall = {n: s.slices["all"].recall["recall@10"] for n, s in sections.items()}
    assert recall["bin4"] > recall["bin"]  # type: ignore[operator]
    assert np.array_equal(run.rankings["bin"].ids, run.rankings["ubin"].ids)
    assert r.indexes["bin4"].params == {
        "type": "faiss.IndexBinaryFlat",
        "precision": "binary",
        "metric": "hamming",
        "quantizer": "sentence_transformers quantize_embeddings",
        "rescore": 4,
    }


def test_a_precision_change_changes_the_fingerprint(tmp_path: Path, run: Evaluation) -> None:
    """The quantized index's precision and rescore are in the fingerprint (its index params)."""
    (tmp_path / "quantized_encoder.py").write_text(ENCODER)
    sys.path.insert(0, str(tmp_path))
    try:
        other = INDEXES.replace("precision: binary, rescore: 4", "precision: binary, rescore: 8")
        report = run_evaluation(parse_config(_yaml(tmp_path, other), "c.yaml")).report
    finally:
        sys.path.remove(str(tmp_path))
    assert report.fingerprint.digest != run.report.fingerprint.digest
    assert report.fingerprint.indexes["bin4"]["rescore"] == 8


@pytest.mark.parametrize(
    ("index", "key"),
    [
        ("{type: quantized, precision: int4}", "indexes.q.precision"),
        ("{type: quantized, precision: binary, rescore: 0}", "indexes.q.rescore"),
        ("{type: quantized}", "indexes.q.precision"),
    ],
)
def test_bad_settings_are_config_errors_at_their_key(tmp_path: Path, index: str, key: str) -> None:
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        parse_config(_yaml(tmp_path, f"  q: {index}\n"), "c.yaml")


def test_a_quantized_index_below_the_floor_fails_the_gate(
    tmp_path: Path, run: Evaluation, monkeypatch: pytest.MonkeyPatch
) -> None:
    """#35: ``gate.ann_min_recall: 0.99`` with a binary index (recall of the exact top 10 well
    below) and no gate.indexes printed "no gate configured" and exited 0. The quantized index
    is gated by default, as every approximate index: exit 1 on its floor; left out of
    gate.indexes, the floor holds nothing and the config is refused (exit 2)."""
    from helpers import invoke

    recall = run.report.ann["bin"].slices["all"].recall["recall@10"]
    assert recall is not None and recall < 0.9
    (tmp_path / "quantized_encoder.py").write_text(ENCODER)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("quantized_encoder", None)
    config = tmp_path / "c.yaml"
    index = "  bin: {type: quantized, precision: binary}\n"
    config.write_text(_yaml(tmp_path, index) + "gate: {ann_min_recall: 0.99}\n")
    out = tmp_path / "out"
    code, said = invoke("run", "-c", str(config), "--out", str(out), "--no-progress")
    assert code == 1, said
    gate = json.loads((out / "report.json").read_text())["gate"]
    [floor] = [c for c in gate["checks"] if c["kind"] == "ann_min_recall"]
    assert floor["name"] == "bin/all/ann_recall@10 min 0.99" and floor["status"] == "fail"
    assert floor["current"] == pytest.approx(recall)
    config.write_text(_yaml(tmp_path, index) + "gate: {indexes: [exact], ann_min_recall: 0.99}\n")
    code, said = invoke("run", "-c", str(config), "--out", str(out), "--no-progress")
    assert code == 2 and "gate.ann_min_recall: no gated approximate index" in said, said
