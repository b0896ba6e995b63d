"""Embedding cache: hits and misses, invalidation by every vector-changing setting, corrupt
entries, concurrent writers, and a warm run that never imports torch."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from conftest import REPO
from evalret.cli import app
from evalret.data.config import HnswIndexConfig
from evalret.data.config import SentenceTransformersModelConfig as ModelConfig
from evalret.engines.cache import CachedEmbedder, Namespace, cache_info, clear_cache, prune_cache
from evalret.engines.faiss_index import cached_hnsw
from evalret.engines.st_embedder import SentenceTransformerEmbedder
from evalret.errors import InputError
from helpers import HashEmbedder, make_set
from test_atomic import immutable


class CountingEmbedder(HashEmbedder):
    """Records every text it is asked to embed."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def embed(self, texts: Any, kind: str, progress: Any = None) -> np.ndarray:
        self.calls.append(list(texts))
        return super().embed(texts, kind, progress)


TEXTS = [f"passage number {i} about topic {i % 7}" for i in range(40)]


def test_only_new_texts_are_embedded(tmp_path: Path) -> None:
    """A second run embeds nothing; a corpus that gained one text costs one embedding."""
    inner = CountingEmbedder()
    first = CachedEmbedder(inner, tmp_path).embed(TEXTS, "document")
    again = CachedEmbedder(inner, tmp_path)
    assert np.array_equal(again.embed(TEXTS, "document"), first)
    assert len(inner.calls) == 1 and again.report()["document"] == {
        "hits": 40,
        "misses": 0,
        "corrupt_shards": [],
    }
    grown = CachedEmbedder(inner, tmp_path)
    vectors = grown.embed([*TEXTS, "a brand new passage"], "document")
    assert inner.calls[-1] == ["a brand new passage"]
    assert np.array_equal(vectors[:40], first)
    assert grown.report()["document"]["misses"] == 1


@pytest.mark.parametrize(
    "change",
    [
        {"query_prefix": "query: "},
        {"document_prefix": "passage: "},
        {"max_seq_length": 128},
        {"normalize": False},
        {"truncate_dim": 64},
        {"device": "cuda"},
        {"name": "/some/other/model"},
    ],
)
def test_every_vector_changing_setting_selects_another_namespace(
    tmp_path: Path, change: dict[str, Any]
) -> None:
    """Prefixes, max length, normalization, truncation, device and model all miss."""
    base = SentenceTransformerEmbedder(ModelConfig())
    other = SentenceTransformerEmbedder(ModelConfig(**change))
    assert (
        Namespace(tmp_path, base.cache_identity()).digest
        != Namespace(tmp_path, other.cache_identity()).digest
    )
    assert "versions" in base.cache_identity() and base.cache_identity()["weights_sha256"]


@pytest.mark.parametrize("damage", ["truncate", "flip", "delete-meta-field"])
def test_corrupt_entries_are_detected_and_reembedded(tmp_path: Path, damage: str) -> None:
    """A truncated or altered shard is never trusted: set aside, re-embedded, same vectors."""
    inner = CountingEmbedder()
    expected = CachedEmbedder(inner, tmp_path).embed(TEXTS, "document")
    ns_dir = next((tmp_path / "embeddings").iterdir())
    vecs = next(ns_dir.glob("*.vecs.npy"))
    meta = next(p for p in ns_dir.glob("*.json") if p.name != "identity.json")
    if damage == "truncate":
        vecs.write_bytes(vecs.read_bytes()[:-100])
    elif damage == "flip":
        raw = bytearray(vecs.read_bytes())
        raw[-5] ^= 0xFF
        vecs.write_bytes(bytes(raw))
    else:
        meta.write_text(json.dumps({"n": 40}))
    cached = CachedEmbedder(inner, tmp_path)
    assert np.array_equal(cached.embed(TEXTS, "document"), expected)
    assert len(inner.calls) == 2 and len(inner.calls[-1]) == 40
    assert cached.report()["document"]["corrupt_shards"] == [meta.name[: -len(".json")]]
    assert any(p.name.endswith(".corrupt") for p in ns_dir.iterdir())
    assert prune_cache(tmp_path, 30)["corrupt_files"] >= 1


def _worker(root: str, start: int, queue: Any) -> None:
    texts = [f"shared text {i}" for i in range(start, start + 300)]
    vectors = CachedEmbedder(HashEmbedder(), Path(root)).embed(texts, "document")
    queue.put((start, vectors.tolist()))


def test_two_concurrent_runs_share_one_cache(tmp_path: Path) -> None:
    """Two processes writing overlapping texts at once: both succeed, nothing is lost."""
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(str(tmp_path), s, queue)) for s in (0, 150)]
    for p in procs:
        p.start()
    results = dict(queue.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    texts = [f"shared text {i}" for i in range(450)]
    inner = CountingEmbedder()
    warm = CachedEmbedder(inner, tmp_path)
    vectors = warm.embed(texts, "document")
    assert inner.calls == [] and warm.report()["document"]["hits"] == 450
    assert np.allclose(vectors[:300], results[0]) and np.allclose(vectors[150:], results[150])


def test_info_and_clear(tmp_path: Path) -> None:
    """info lists the set with its entries; clear removes it."""
    CachedEmbedder(HashEmbedder(), tmp_path).embed(TEXTS, "document")
    [row] = cache_info(tmp_path)
    assert row["entries"] == 40 and row["model"] == "hash-bow" and row["shards"] == 1
    (tmp_path / "indexes").mkdir()
    (tmp_path / "indexes" / "hnsw-0.faiss").write_bytes(b"graph")
    assert clear_cache(tmp_path) == 1 and cache_info(tmp_path) == []
    assert not (tmp_path / "indexes").exists()  # cached HNSW graphs go too


@pytest.mark.model
def test_warm_run_embeds_nothing_and_never_imports_torch(tmp_path: Path) -> None:
    """After one run, a second run of the demo reads every vector from the cache, says so in
    the report, and leaves torch, sentence-transformers, onnxruntime and openvino unimported."""
    code = f"""
import json, sys
from pathlib import Path
from evalret import evaluate
from evalret.data.config import load_config
cfg = load_config(Path({str(REPO / "configs" / "default.yaml")!r}))
cache = cfg.cache.model_copy(update={{"dir": Path({str(tmp_path)!r})}})
cfg = cfg.model_copy(update={{"cache": cache}})
first = evaluate(cfg).report
if sys.argv[1] == "warm":
    print(json.dumps({{"cache": first.embedding.model_dump()["cache"],
        "heavy": [m for m in ("torch", "sentence_transformers", "onnxruntime", "openvino")
                  if m in sys.modules]}}))
"""
    subprocess.run([sys.executable, "-c", code, "cold"], check=True, capture_output=True)
    out = subprocess.run(
        [sys.executable, "-c", code, "warm"], check=True, capture_output=True, text=True
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["heavy"] == []
    assert result["cache"]["document"]["misses"] == 0 and result["cache"]["query"]["misses"] == 0
    assert result["cache"]["document"]["hits"] == 338


def test_cache_path_that_is_a_file_embeds_without_caching_and_warns_once(tmp_path: Path) -> None:
    """A cache directory that is a regular file (root cannot write into it either): the texts
    are embedded, one warning names the path, and nothing raises."""
    root = tmp_path / "cache"
    root.write_text("not a directory")
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner, root)
    first = cached.embed(TEXTS, "document")
    again = cached.embed(TEXTS[:5], "query")
    assert np.array_equal(first, HashEmbedder().embed(TEXTS, "document"))
    assert len(again) == 5 and len(inner.calls) == 2
    [warning] = cached.report()["warnings"]
    assert f"cannot write the embedding cache {root}" in warning
    assert root.read_text() == "not a directory"


def test_immutable_cache_directory_still_serves_hits_and_warns(tmp_path: Path) -> None:
    """A cache root cannot write (chattr +i on its namespace: immutable even for root): cached
    texts are read, new ones embedded, one warning."""
    CachedEmbedder(HashEmbedder(), tmp_path).embed(TEXTS, "document")
    ns_dir = next((tmp_path / "embeddings").iterdir())
    with immutable(ns_dir):
        cached = CachedEmbedder(HashEmbedder(), tmp_path)
        vectors = cached.embed([*TEXTS, "one more passage"], "document")
        cached.embed(["and another"], "document")
    assert len(vectors) == 41 and cached.report()["document"]["hits"] == 40
    assert len(cached.report()["warnings"]) == 1


def test_info_prune_and_clear_survive_junk(tmp_path: Path) -> None:
    """Stray files, a namespace that is a file, malformed identity and shard metadata: info
    lists what it can, prune and clear skip the junk."""
    CachedEmbedder(HashEmbedder(), tmp_path).embed(TEXTS, "document")
    base = tmp_path / "embeddings"
    ns_dir = next(base.iterdir())
    (base / "README.txt").write_text("a stray file")
    junk = base / ("0" * 32)
    junk.mkdir()
    (junk / "identity.json").write_text("[1, 2]")
    (junk / "x.json").write_text('{"n": "many"}')
    (junk / "y.json").mkdir()
    (ns_dir / "notes.json").write_text("not json")
    rows = {r["namespace"]: r for r in cache_info(tmp_path)}
    assert rows[ns_dir.name]["entries"] == 40 and rows[junk.name]["entries"] == 0
    assert prune_cache(tmp_path, 30)["namespaces"] == 0
    assert (base / "README.txt").exists()
    assert clear_cache(tmp_path) == 2


def test_clear_and_prune_remove_only_what_evalret_named(tmp_path: Path) -> None:
    """`cache clear --dir .` in a project: its own models/, indexes/ and embeddings/ folders
    stay; only the cache's digest-named sets, exported models and hnsw graphs go (clear used to
    remove models/ and indexes/ whole, and every folder under embeddings/)."""
    CachedEmbedder(HashEmbedder(), tmp_path).embed(TEXTS, "document")
    mine = [tmp_path / "models" / "bert" / "weights.bin", tmp_path / "indexes" / "notes.txt"]
    mine.append(tmp_path / "embeddings" / "mine" / "vectors.npy")
    for path in mine:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("the project's own")
    ours = [tmp_path / "models" / ("a" * 32) / "model.onnx", tmp_path / "indexes" / "hnsw-ab.faiss"]
    for path in ours:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("evalret's")
    assert prune_cache(tmp_path, 0)["namespaces"] == 1
    assert clear_cache(tmp_path) == 0
    assert all(p.read_text() == "the project's own" for p in mine)
    assert not any(p.exists() for p in ours)
    assert not (tmp_path / "models" / ("a" * 32)).exists()


@pytest.mark.parametrize("days", [-5, -0.001, float("nan"), float("inf"), 1e9])
def test_prune_refuses_negative_and_absurd_days(tmp_path: Path, days: float) -> None:
    """`prune --days -5` would delete every set: refused, nothing removed."""
    CachedEmbedder(HashEmbedder(), tmp_path).embed(TEXTS, "document")
    with pytest.raises(InputError, match="--days"):
        prune_cache(tmp_path, days)
    assert len(cache_info(tmp_path)) == 1


def test_prune_cli_refuses_negative_days(tmp_path: Path) -> None:
    CachedEmbedder(HashEmbedder(), tmp_path).embed(TEXTS, "document")
    result = CliRunner().invoke(app, ["cache", "prune", "--dir", str(tmp_path), "--days", "-5"])
    assert result.exit_code == 2, result.output
    assert "--days" in result.output and len(cache_info(tmp_path)) == 1


def _age(path: Path, hours: float = 2) -> None:
    then = time.time() - hours * 3600
    os.utime(path, (then, then))


def test_prune_removes_stale_temps_and_orphan_vectors(tmp_path: Path) -> None:
    """Temporary files of killed writes (vectors, graphs, exports) and the vector and key files
    of a shard whose metadata was deleted go once an hour old; fresh ones (a live writer) stay."""
    CachedEmbedder(HashEmbedder(), tmp_path).embed(TEXTS, "document")
    ns_dir = next((tmp_path / "embeddings").iterdir())
    shard = next(p for p in ns_dir.glob("*.json") if p.name != "identity.json")
    shard.unlink()  # its .vecs.npy and .keys.npy are orphans now
    (tmp_path / "indexes").mkdir()
    (tmp_path / "models").mkdir()
    stale = [
        ns_dir / ".x.vecs.npy.dead.tmp",
        tmp_path / "indexes" / ".hnsw-1.faiss.dead.tmp",
        tmp_path / "models" / ".abc.dead.tmp",
    ]
    for p in stale:
        p.write_bytes(b"partial")
    fresh_tmp = ns_dir / ".y.keys.npy.live.tmp"
    fresh_tmp.write_bytes(b"being written")
    fresh_orphan = ns_dir / "20990101T000000-live.vecs.npy"
    fresh_orphan.write_bytes(b"metadata comes last")
    for p in [*stale, *ns_dir.glob(f"{shard.stem}.*.npy")]:
        _age(p)
    removed = prune_cache(tmp_path, 30)
    assert removed["temp_files"] == 3 and removed["orphan_files"] == 2
    assert not any(p.exists() for p in stale) and not list(ns_dir.glob(f"{shard.stem}.*"))
    assert fresh_tmp.exists() and fresh_orphan.exists()


def test_stale_temps_are_removed_by_the_next_cache_write(tmp_path: Path) -> None:
    CachedEmbedder(HashEmbedder(), tmp_path).embed(TEXTS, "document")
    ns_dir = next((tmp_path / "embeddings").iterdir())
    dead = ns_dir / ".x.vecs.npy.dead.tmp"
    dead.write_bytes(b"partial")
    _age(dead)
    CachedEmbedder(HashEmbedder(), tmp_path).embed(["a new text"], "document")
    assert not dead.exists()


def test_hnsw_graph_rebuilt_or_not_storable_is_reported(tmp_path: Path) -> None:
    """A damaged cached graph is rebuilt and says "rebuilt"; a graph that cannot be stored (the
    indexes path is a file) is used all the same, with a warning."""
    vectors = HashEmbedder().embed(TEXTS, "document")
    cfg = HnswIndexConfig()
    _, status = cached_hnsw(vectors, cfg, tmp_path)
    assert status == "built"
    [graph] = (tmp_path / "indexes").iterdir()
    graph.write_bytes(b"garbage")
    index, status = cached_hnsw(vectors, cfg, tmp_path)
    assert status == "rebuilt" and index.ntotal == 40
    assert cached_hnsw(vectors, cfg, tmp_path)[1] == "hit"
    other = tmp_path / "other"
    other.mkdir()
    (other / "indexes").write_text("a file")
    warnings: list[str] = []
    index, status = cached_hnsw(vectors, cfg, other, warnings=warnings)
    assert status == "built" and index.ntotal == 40
    assert len(warnings) == 1 and "cannot store the HNSW graph" in warnings[0]


# --- what a user's cache or model can do to a run: named, never an internal error -----------

DRIFTING_ENCODER = """
import hashlib
import numpy as np

DIM = {dim}


class Encoder:
    def identity(self):
        return {{"kind": "hashed words"}}  # leaves DIM out: the user's bug under test

    def encode(self, texts, kind):
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.split():
                seed = int.from_bytes(hashlib.sha256(word.encode()).digest()[:8], "little")
                out[i] += np.random.default_rng(seed).standard_normal(DIM)
        return out


def make():
    return Encoder()
"""


def test_a_warm_cache_of_another_dimension_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A custom encoder moved from 64 to 32 dimensions without its identity changing: the run
    that reads 64-dimensional vectors from the cache and embeds a new document at 32 exits 2
    naming the cache, both dimensions and the way out (not an internal error, nor vectors
    silently zeroed); --no-cache runs."""
    golden = make_set(tmp_path / "set")
    module = tmp_path / "drifting_encoder_test.py"
    monkeypatch.syspath_prepend(str(tmp_path))
    config = tmp_path / "c.yaml"
    config.write_text(
        f"golden_set: {{path: {golden}}}\ncache: {{dir: {tmp_path / 'cache'}}}\n"
        "model: {provider: python, callable: 'drifting_encoder_test:make'}\n"
        "indexes: {hnsw: {enabled: false}, bm25: {enabled: false}, hybrid: {enabled: false}}\n"
    )

    def run(dim: int, *extra: str) -> Any:
        module.write_text(DRIFTING_ENCODER.format(dim=dim))
        sys.modules.pop("drifting_encoder_test", None)
        out = tmp_path / f"out-{dim}-{len(extra)}"
        return CliRunner().invoke(app, ["run", "-c", str(config), "-o", str(out), *extra])

    first = run(64)
    assert first.exit_code == 0, first.output
    with (golden / "corpus.jsonl").open("a") as f:
        f.write(json.dumps({"id": "d-new", "text": "a brand new document"}) + "\n")
    second = run(32)
    assert second.exit_code == 2, second.output
    text = " ".join(second.output.split())
    assert "holds 64-dimensional vectors" in text and "returns 32-dimensional" in text
    assert str(tmp_path / "cache") in text.replace(" ", "") or "cache clear" in text
    assert "Internal error" not in second.output
    assert run(32, "--no-cache").exit_code == 0


class Dim32(HashEmbedder):
    dim = 32


def test_shards_of_two_dimensions_and_truncate_dim_are_named(tmp_path: Path) -> None:
    """One identity, two shards of different dimensions (written by the cache's own writer):
    a lookup that hits both raises CacheDimensionError; one that hits one is served. A
    namespace whose vectors differ from the identity's truncate_dim is named too."""
    from evalret.engines.cache import CacheDimensionError

    wide = CachedEmbedder(HashEmbedder(), tmp_path)
    wide.embed(TEXTS[:20], "document")
    narrow = CachedEmbedder(Dim32(), tmp_path)
    narrow.namespace.store(narrow.keys(TEXTS[20:], "document"), Dim32().embed(TEXTS[20:], "d"))
    served = CachedEmbedder(HashEmbedder(), tmp_path).embed(TEXTS[20:], "document")
    assert served.shape == (20, 32)  # all hits, from one shard: consistent
    with pytest.raises(CacheDimensionError, match="other cached vectors are") as mixed:
        CachedEmbedder(HashEmbedder(), tmp_path).embed(TEXTS, "document")
    assert "32-dimensional" in str(mixed.value) and "64-dimensional" in str(mixed.value)
    with pytest.raises(CacheDimensionError, match="returns 32-dimensional"):
        CachedEmbedder(Dim32(), tmp_path).embed([*TEXTS[:20], "new text"], "document")

    class Truncated(HashEmbedder):
        def identity(self) -> dict[str, Any]:
            return {**super().identity(), "truncate_dim": 16}

    other = tmp_path / "other"
    cached = CachedEmbedder(Truncated(), other)
    cached.namespace.store(cached.keys(TEXTS, "query"), HashEmbedder().embed(TEXTS, "query"))
    with pytest.raises(CacheDimensionError, match="truncate_dim asks for 16"):
        CachedEmbedder(Truncated(), other).embed(TEXTS, "query")


def test_shard_metadata_of_the_wrong_shape_is_set_aside(tmp_path: Path) -> None:
    """Shard metadata that is a JSON list, keys or vectors of another dtype (checksums right):
    the shard is moved aside as corrupt and its texts embedded again, no TypeError."""
    from evalret.data.atomic import sha256_file

    first = CachedEmbedder(HashEmbedder(), tmp_path).embed(TEXTS, "document")
    [meta] = [p for p in (tmp_path / "embeddings").rglob("*.json") if p.name != "identity.json"]
    meta.write_text("[]")
    again = CachedEmbedder(HashEmbedder(), tmp_path)
    assert np.array_equal(again.embed(TEXTS, "document"), first)
    assert len(again.report()["document"]["corrupt_shards"]) == 1
    [meta] = [p for p in (tmp_path / "embeddings").rglob("*.json") if p.name != "identity.json"]
    vecs = meta.with_name(meta.name[: -len(".json")] + ".vecs.npy")
    np.save(vecs, np.load(vecs).astype(np.float64))
    fields = json.loads(meta.read_text())
    meta.write_text(json.dumps({**fields, "vectors_sha256": sha256_file(vecs)}))
    third = CachedEmbedder(HashEmbedder(), tmp_path)
    assert np.array_equal(third.embed(TEXTS, "document"), first)
    assert len(third.report()["document"]["corrupt_shards"]) == 1


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf], ids=["nan", "inf", "minus-inf"])
def test_a_shard_with_non_finite_vectors_is_set_aside(tmp_path: Path, value: float) -> None:
    """A shard whose vectors hold a NaN or an infinity (its checksums right: written so, not
    damaged since) is read as a model's fresh vectors would be: never used, set aside as
    corrupt, its texts embedded again."""
    from evalret.data.atomic import sha256_file

    inner = CountingEmbedder()
    first = CachedEmbedder(inner, tmp_path).embed(TEXTS, "document")
    [meta] = [p for p in (tmp_path / "embeddings").rglob("*.json") if p.name != "identity.json"]
    vecs = meta.with_name(meta.name[: -len(".json")] + ".vecs.npy")
    poisoned = np.load(vecs)
    poisoned[7, 3] = value
    np.save(vecs, poisoned)
    fields = json.loads(meta.read_text())
    meta.write_text(json.dumps({**fields, "vectors_sha256": sha256_file(vecs)}))
    again = CachedEmbedder(inner, tmp_path)
    vectors = again.embed(TEXTS, "document")
    assert np.isfinite(vectors).all() and np.array_equal(vectors, first)
    assert len(inner.calls) == 2 and len(inner.calls[-1]) == len(TEXTS)
    assert again.report()["document"]["corrupt_shards"] == [meta.name[: -len(".json")]]


MEMORY_CHILD = """
import resource, sys
from pathlib import Path
import numpy as np
sys.path.insert(0, sys.argv[2])
from evalret.engines.cache import CachedEmbedder
from evalret.errors import EvalretError
from helpers import HashEmbedder

class Wide(HashEmbedder):
    dim = 1 << 22

texts = [f"text {i}" for i in range(100_000)]
cached = CachedEmbedder(Wide(), Path(sys.argv[1]))
cached.namespace.store(cached.keys(texts[:1], "document"), np.ones((1, Wide.dim), np.float32))
resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))
try:
    CachedEmbedder(Wide(), Path(sys.argv[1])).embed(texts, "document")
except EvalretError as e:
    print(type(e).__name__, int(e.exit_code), e)
"""


def test_vectors_too_large_for_memory_are_named(tmp_path: Path) -> None:
    """100,000 vectors of 4,194,304 dimensions (1.5 TiB) cannot be assembled (the address space
    is capped at 8 GiB): exit 3, with the size and what to do, not a bare MemoryError."""
    tests = str(Path(__file__).parent)
    args = [sys.executable, "-c", MEMORY_CHILD, str(tmp_path), tests]
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("VectorMemoryError 3 100,000 vectors of dimension 4,194,304")
    assert "1.5 TiB" in done.stdout and "sample" in done.stdout


def test_cache_commands_refuse_a_file_and_clear_says_what_it_cannot_remove(
    tmp_path: Path,
) -> None:
    """`cache info | clear | prune --dir FILE` exit 2 naming the path (not an empty cache);
    `cache clear` on a cache it cannot change exits 2 naming what stayed, not "cleared"."""
    file = tmp_path / "file"
    file.write_text("not a cache")
    for command in (["info"], ["clear"], ["prune", "--days", "1"]):
        result = CliRunner().invoke(app, ["cache", *command, "--dir", str(file)])
        assert result.exit_code == 2, (command, result.output)
        assert "is not a directory" in result.output
    assert file.read_text() == "not a cache"
    root = tmp_path / "cache"
    CachedEmbedder(HashEmbedder(), root).embed(TEXTS, "document")
    with immutable(root / "embeddings"):
        result = CliRunner().invoke(app, ["cache", "clear", "--dir", str(root)])
    assert result.exit_code == 2, result.output
    assert "cannot remove" in result.output and len(cache_info(root)) == 1
