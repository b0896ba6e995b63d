"""onnx and OpenVINO backends: vectors against torch on real demo texts, tokenization and pooling
as sentence-transformers does them, the exported model cached and reused, cache invalidation by
backend and precision, a clear error for a missing extra, and `model.backend: onnx` end to end
(a warm re-run imports none of torch, sentence-transformers, onnxruntime, openvino)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from conftest import DEMO
from evalret.cli import app
from evalret.data.config import SentenceTransformersModelConfig as ModelConfig
from evalret.data.config import parse_config
from evalret.engines import backends
from evalret.engines.backends import (
    ModelStore,
    OnnxEmbedder,
    agreement,
    pool,
    read_layout,
)
from evalret.engines.cache import CachedEmbedder, Namespace, cache_info, clear_cache
from evalret.engines.embedders import make_embedder
from evalret.engines.st_embedder import SentenceTransformerEmbedder, resolve_model
from evalret.errors import ConfigError
from helpers import HashEmbedder, marks_its_users

HEAVY = ("torch", "sentence_transformers", "onnxruntime", "openvino", "transformers")


def _demo(name: str) -> list[dict[str, Any]]:
    lines = (DEMO / name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


DOCS = [(d.get("title", "") + " " + d["text"]).strip() for d in _demo("corpus.jsonl")]
QUERIES = [q["text"] for q in _demo("queries.jsonl")]
# a few dozen real texts, the longest documents first, plus edge cases: a text past the
# 256-token truncation, an empty string, accents, CJK characters and an emoji
TEXTS = [
    *sorted(DOCS, key=len, reverse=True)[:6],
    *DOCS[::60],
    " ".join(DOCS[:6]),
    "",
    "Café naïve, Straße résumé of 東京 uploads 🚀",
]
QUERY_TEXTS = QUERIES[::12]


@pytest.fixture(scope="module")
@marks_its_users("model")
def model_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache directory for the module: each model is exported (and quantized) once."""
    return tmp_path_factory.mktemp("backends-cache")


@pytest.fixture(scope="module")
@marks_its_users("model")
def torch_vectors() -> dict[str, np.ndarray]:
    """The reference: sentence-transformers (torch) vectors of the same texts."""
    reference = SentenceTransformerEmbedder(ModelConfig())
    return {
        "document": reference.embed(TEXTS, "document"),
        "query": reference.embed(QUERY_TEXTS, "query"),
    }


@pytest.mark.parametrize(
    ("backend", "precision", "bound", "mean_bound"),
    [
        ("onnx", "fp32", 0.9999, 0.99999),
        ("openvino", "fp32", 0.9999, 0.99999),
        # int8: activations are quantized per batch, so a vector moves a little with its batch
        # mates. Measured on these texts: mean about 0.991, min 0.986 for real texts and 0.968
        # for the empty string; the stated floors below
        ("onnx", "int8", 0.95, 0.985),
    ],
)
def test_vectors_agree_with_torch(
    backend: str,
    precision: str,
    bound: float,
    mean_bound: float,
    model_root: Path,
    torch_vectors: dict[str, np.ndarray],
) -> None:
    """Every document and query vector is within the stated cosine of torch's, and so is the
    mean."""
    embedder = OnnxEmbedder(ModelConfig(backend=backend, precision=precision), model_root)
    docs = embedder.embed(TEXTS, "document")
    queries = embedder.embed(QUERY_TEXTS, "query")
    assert docs.shape == torch_vectors["document"].shape and docs.dtype == np.float32
    for got, kind in ((docs, "document"), (queries, "query")):
        check = agreement(got, torch_vectors[kind])
        assert check["min_cosine"] >= bound and check["mean_cosine"] >= mean_bound, (kind, check)
    np.testing.assert_allclose(np.linalg.norm(docs, axis=1), 1.0, rtol=1e-5)
    if precision == "int8":  # quantized: close, but visibly not the same vectors
        assert agreement(docs, torch_vectors["document"])["mean_cosine"] < 0.9999


@pytest.mark.model
def test_tokenization_matches_sentence_transformers() -> None:
    """Token ids, truncation at max_seq_length and special tokens are sentence-transformers'."""
    from sentence_transformers import SentenceTransformer

    source, _ = resolve_model("all-MiniLM-L6-v2")
    for length in (256, 16):
        st = SentenceTransformer(source, device="cpu")
        st.max_seq_length = length
        features = st.preprocess(TEXTS)
        embedder = OnnxEmbedder(ModelConfig(backend="onnx", max_seq_length=length), None)
        ours = embedder.tokenizer.encode_batch(TEXTS)
        for row, encoding in enumerate(ours):
            n = int(features["attention_mask"][row].sum())
            assert encoding.ids == features["input_ids"][row][:n].tolist()
        assert max(len(e.ids) for e in ours) == length  # the long text was truncated


@pytest.mark.parametrize("mode", ["mean", "cls", "max"])
@pytest.mark.model
def test_pooling_matches_sentence_transformers(mode: str) -> None:
    """Masked mean, first token and masked max equal sentence-transformers' Pooling module."""
    import torch
    from sentence_transformers.sentence_transformer.modules import Pooling

    rng = np.random.default_rng(0)
    hidden = rng.normal(size=(3, 5, 8)).astype(np.float32)
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 0, 0, 0, 0]], dtype=np.int64)
    features = {"token_embeddings": torch.tensor(hidden), "attention_mask": torch.tensor(mask)}
    expected = Pooling(8, pooling_mode=mode)(features)["sentence_embedding"].numpy()
    np.testing.assert_allclose(pool(hidden, mask, mode), expected, rtol=1e-6, atol=1e-6)


def test_exported_model_is_read_from_the_cache(
    model_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After one export, later embedders (onnx and openvino alike) read the cached file and
    never export again."""
    first = OnnxEmbedder(ModelConfig(backend="onnx"), model_root)
    expected = first.embed(QUERY_TEXTS[:4], "query")
    assert first.model_file is not None and first.model_file.is_file()

    def no_export(*_: Any) -> None:
        raise AssertionError("exported again")

    monkeypatch.setattr(backends, "export_onnx", no_export)
    monkeypatch.setattr(backends, "quantize_int8", no_export)
    for backend in ("onnx", "openvino"):
        again = OnnxEmbedder(ModelConfig(backend=backend), model_root)
        np.testing.assert_allclose(again.embed(QUERY_TEXTS[:4], "query"), expected, atol=1e-5)
        assert again.model_status == "read" and again.model_file == first.model_file


def test_model_store_that_cannot_be_written_exports_for_the_run_and_warns(tmp_path: Path) -> None:
    """A cache path that is a regular file (unwritable, as root too): the model is exported to a
    temporary directory for this run, with one warning, never an internal error; the cache's
    report carries the warning with its own."""
    blocker = tmp_path / "cache"
    blocker.write_text("a file where the cache should be")
    store = ModelStore(blocker)
    path, status = store.get({"model": "k"}, lambda target: target.write_bytes(b"onnx"))
    assert (status, path.read_bytes()) == ("exported", b"onnx")
    assert not path.is_relative_to(blocker) and len(store.warnings) == 1
    assert "cannot write the exported model" in store.warnings[0]

    class WithStore(HashEmbedder):
        warnings = store.warnings

    cached = CachedEmbedder(WithStore(), tmp_path / "vectors")
    cached.embed(["alpha"], "document")
    assert cached.report()["warnings"] == store.warnings


def test_model_store_distrusts_damage_and_survives_a_race(tmp_path: Path) -> None:
    """A file that fails its checksum is set aside and built again; when another process
    finishes the same export first, its file is used; clearing the cache removes them."""
    store = ModelStore(tmp_path)
    key = {"model": "k"}
    builds: list[str] = []

    def build(target: Path) -> None:
        builds.append("outer")
        target.write_bytes(b"outer")

    path, status = store.get(key, build)
    assert (status, path.read_bytes()) == ("exported", b"outer")
    assert store.get(key, build) == (path, "read") and builds == ["outer"]
    path.write_bytes(b"damaged")
    path, status = store.get(key, build)
    assert (status, path.read_bytes()) == ("exported", b"outer") and len(builds) == 2
    assert any(".corrupt-" in p.name for p in (tmp_path / "models").iterdir())

    def racing(target: Path) -> None:  # another process completes the export meanwhile
        store.get({"model": "race"}, lambda t: t.write_bytes(b"theirs"))
        target.write_bytes(b"mine")

    path, _ = store.get({"model": "race"}, racing)
    assert path.read_bytes() == b"theirs"
    assert not [p for p in (tmp_path / "models").iterdir() if p.name.endswith(".tmp")]
    clear_cache(tmp_path)  # `evalret cache clear` drops exported models too
    assert not (tmp_path / "models").exists()


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ({}, {"backend": "onnx"}),
        ({"backend": "onnx"}, {"backend": "openvino"}),
        ({"backend": "onnx"}, {"backend": "onnx", "precision": "int8"}),
        ({"backend": "onnx"}, {"backend": "onnx", "max_seq_length": 128}),
        ({"backend": "onnx"}, {"backend": "onnx", "query_prefix": "query: "}),
        ({"backend": "onnx"}, {"backend": "onnx", "truncate_dim": 64}),
    ],
)
def test_backend_and_precision_changes_miss_the_cache(
    tmp_path: Path, before: dict[str, Any], after: dict[str, Any]
) -> None:
    """Switching backend or precision (or any vector setting under onnx) selects another
    namespace; the identity in the report names backend and precision."""
    a = make_embedder(ModelConfig(**before), tmp_path)
    b = make_embedder(ModelConfig(**after), tmp_path)
    assert Namespace(tmp_path, a.cache_identity()).digest != (  # type: ignore[attr-defined]
        Namespace(tmp_path, b.cache_identity()).digest  # type: ignore[attr-defined]
    )
    assert b.identity()["backend"] == after["backend"]
    assert b.identity()["precision"] == after.get("precision", "fp32")


def test_torch_identity_is_unchanged_by_the_new_keys() -> None:
    """backend torch, precision fp32 add nothing to the model's identity: baselines and caches
    written before these keys existed stay valid."""
    identity = make_embedder(ModelConfig()).identity()
    assert "backend" not in identity and "precision" not in identity


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("model:\n  precision: int8\n", "precision int8 needs backend onnx"),
        ("model:\n  backend: openvino\n  precision: int8\n", "precision int8 needs backend onnx"),
        ("model:\n  backend: onnx\n  device: cuda\n", "backend onnx runs on the CPU"),
        ("model:\n  backend: tensorrt\n", "model.backend"),
    ],
)
def test_invalid_backend_settings_are_config_errors(text: str, message: str) -> None:
    """Impossible combinations fail validation with the key's line."""
    with pytest.raises(ConfigError) as e:
        parse_config(text, "cfg.yaml")
    assert message in str(e.value) and "cfg.yaml:" in str(e.value)


@pytest.mark.parametrize(
    ("backend", "module", "extra"),
    [("onnx", "onnxruntime", "onnx"), ("openvino", "openvino", "openvino")],
)
def test_missing_extra_exits_2_with_the_pip_command(
    backend: str, module: str, extra: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the backend's package, `evalret run` exits 2 and says what to install."""
    monkeypatch.setitem(sys.modules, module, None)  # makes the package unimportable
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(f"golden_set:\n  path: {DEMO}\nmodel:\n  backend: {backend}\n")
    result = CliRunner().invoke(app, ["run", "-c", str(cfg), "-o", str(tmp_path), "--no-progress"])
    assert result.exit_code == 2, result.output
    assert f"pip install 'evalret[{extra}]'" in result.output and module in result.output


@pytest.mark.parametrize(
    ("modules", "pooling", "message"),
    [
        (["Transformer", "Pooling", "Dense", "Normalize"], "mean", "use model.backend: torch"),
        (["Transformer", "Pooling"], "lasttoken", "pools with 'lasttoken'"),
    ],
)
def test_unsupported_model_layouts_are_refused(
    tmp_path: Path, modules: list[str], pooling: str, message: str
) -> None:
    """A module stack or pooling the ONNX path cannot reproduce is refused, naming the fix."""
    source, _ = resolve_model("all-MiniLM-L6-v2")
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        (tmp_path / name).write_bytes((Path(source) / name).read_bytes())
    entries = [
        {"idx": i, "name": str(i), "path": "" if i == 0 else f"{i}_{m}", "type": m}
        for i, m in enumerate(modules)
    ]
    (tmp_path / "modules.json").write_text(json.dumps(entries))
    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode": pooling}))
    with pytest.raises(ConfigError, match=message):
        read_layout(str(tmp_path), 256)


def _small_golden_set(target: Path) -> tuple[int, int]:
    """The first 12 demo queries and the documents they judge, plus 12 others."""
    queries = _demo("queries.jsonl")[:12]
    wanted = {d for q in queries for d in q["relevant"]}
    docs = [d for i, d in enumerate(_demo("corpus.jsonl")) if d["id"] in wanted or i < 12]
    target.mkdir()
    (target / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (target / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    return len(docs), len(queries)


def test_onnx_backend_end_to_end_and_warm_rerun(model_root: Path, tmp_path: Path) -> None:
    """`model.backend: onnx` runs a small golden set: the report states the backend and its
    agreement with torch, nDCG@10 matches torch's; a warm re-run embeds nothing and imports none
    of torch, sentence-transformers, transformers, onnxruntime or openvino."""
    n_docs, n_queries = _small_golden_set(tmp_path / "golden")
    cfg = tmp_path / "cfg.yaml"
    base = f"golden_set:\n  path: {tmp_path / 'golden'}\ncache:\n  dir: {model_root}\n"
    cfg.write_text(base + "model:\n  backend: onnx\n")
    result = CliRunner().invoke(app, ["run", "-c", str(cfg), "-o", str(tmp_path / "cold")])
    assert result.exit_code == 0, result.output
    assert "backend onnx fp32" in result.output and "cosine to torch" in result.output
    cold = json.loads((tmp_path / "cold" / "report.json").read_text())
    emb = cold["embedding"]
    assert emb["cache"]["document"]["misses"] == n_docs
    assert emb["backend"]["name"] == "onnx" and emb["backend"]["threads"] >= 1
    check = emb["backend_check"]
    assert check["sample"] == n_docs and check["min_cosine"] >= 0.9999
    assert cold["fingerprint"]["model"]["backend"] == "onnx"
    assert "Embedding backend onnx fp32" in (tmp_path / "cold" / "report.md").read_text()

    torch_cfg = tmp_path / "torch.yaml"
    torch_cfg.write_text(base)
    result = CliRunner().invoke(app, ["run", "-c", str(torch_cfg), "-o", str(tmp_path / "t")])
    assert result.exit_code == 0, result.output
    reference = json.loads((tmp_path / "t" / "report.json").read_text())
    # the torch run found the check's sample (here every document) in the cache
    assert reference["embedding"]["cache"]["document"]["misses"] == 0

    def ndcg(report: dict[str, Any]) -> float:
        return float(report["indexes"]["exact"]["slices"]["all"]["metrics"]["ndcg@10"]["value"])

    assert abs(ndcg(cold) - ndcg(reference)) < 1e-4

    code = f"""
import json, sys
from pathlib import Path
from evalret import evaluate
from evalret.data.config import load_config
report = evaluate(load_config(Path({str(cfg)!r}))).report
embedding = report.embedding.model_dump()
print(json.dumps({{"cache": embedding["cache"], "check": embedding["backend_check"],
    "heavy": [m for m in {HEAVY!r} if m in sys.modules]}}))
"""
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    warm = json.loads(out.stdout.strip().splitlines()[-1])
    assert warm["heavy"] == []
    assert warm["cache"]["document"] == {"hits": n_docs, "misses": 0, "corrupt_shards": []}
    assert warm["cache"]["query"]["misses"] == 0 and warm["cache"]["query"]["hits"] == n_queries
    assert warm["check"] == check  # the agreement comes from cached vectors: same numbers
    settings = [row["settings"] for row in cache_info(model_root)]
    assert any(s.get("backend") == "onnx" and s.get("precision") == "fp32" for s in settings)
    assert any("backend" not in s for s in settings)  # the torch namespace of the reference


# --- cutting long texts before tokenizing (engines/clip.py) ---------------------------------

WORDS = " ".join(DOCS)  # the demo corpus: some 300 KB of prose
# hostile shapes for a cut: whitespace runs, a word longer than WordPiece's 100 characters,
# combining accents, CJK, emoji, contractions, digits, punctuation runs
PIECES = [" " * 3000, "\n\n\t", "a" * 150, "e\u0301", "東京", "🚀", "don't", "U.S.A.", "1234567"]


def _trained_tokenizers() -> dict[str, Any]:
    """A byte-level BPE (GPT-2 / RoBERTa style) and a metaspace Unigram (SentencePiece style),
    trained here on the demo corpus with the tokenizers library, beside the packaged WordPiece."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    source, _ = resolve_model("all-MiniLM-L6-v2")
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    bpe.train_from_iterator(
        DOCS, trainers.BpeTrainer(vocab_size=800, initial_alphabet=alphabet, show_progress=False)
    )
    unigram = Tokenizer(models.Unigram())
    unigram.normalizer = normalizers.NFKC()
    unigram.pre_tokenizer = pre_tokenizers.Metaspace()
    unigram.train_from_iterator(
        DOCS,
        trainers.UnigramTrainer(
            vocab_size=800, unk_token="<unk>", special_tokens=["<unk>"], show_progress=False
        ),
    )
    wordpiece = Tokenizer.from_file(str(Path(source) / "tokenizer.json"))
    wordpiece.no_padding()
    return {"wordpiece": wordpiece, "bytelevel": bpe, "unigram": unigram}


def _hostile_texts(seed: int, count: int) -> list[str]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        parts = []
        for _ in range(int(rng.integers(1, 40))):
            if rng.random() < 0.4:
                parts.append(PIECES[int(rng.integers(len(PIECES)))])
            else:
                start = int(rng.integers(len(WORDS) - 500))
                parts.append(WORDS[start : start + int(rng.integers(0, 400))])
        out.append(("" if rng.random() < 0.5 else " ").join(parts))
    return out


def test_a_cut_text_tokenizes_as_the_whole_text() -> None:
    """For three kinds of tokenizer, many limits and hostile texts (whitespace runs, huge words,
    accents), the cut text gives exactly the whole text's tokens up to the limit, after any
    prefix; most texts are actually cut."""
    from evalret.engines.clip import TextClipper

    texts = _hostile_texts(0, 120)
    for name, tokenizer in _trained_tokenizers().items():
        cut = 0
        for limit in (3, 16, 64):
            tokenizer.enable_truncation(max_length=limit)
            clipper = TextClipper(tokenizer, limit)
            for prefix in ("", "query: "):
                for text in texts:
                    fed = clipper.fed([text], prefix)[0]
                    whole = tokenizer.encode(prefix + text).ids
                    assert tokenizer.encode(fed).ids == whole, (name, limit, prefix, text[:60])
                    cut += len(fed) < len(prefix + text)
        assert cut > len(texts) * 3, name  # the cut is not a no-op
        assert tokenizer.truncation["max_length"] == 64  # the clipper's copy changed nothing


def _long_texts() -> dict[str, str]:
    """Texts past the 256-token limit: just over it, with a long whitespace run before the
    limit is reached, the whole demo corpus, and 5 MB of it."""
    from tokenizers import Tokenizer

    source, _ = resolve_model("all-MiniLM-L6-v2")
    tokenizer = Tokenizer.from_file(str(Path(source) / "tokenizer.json"))
    tokenizer.no_truncation()
    words = WORDS.split(" ")
    n = 150
    while len(tokenizer.encode(" ".join(words[:n])).ids) <= 257:
        n += 1
    return {
        "just over": " ".join(words[:n]),
        "whitespace run": " ".join(words[:120]) + " " * 200_000 + " ".join(words[120:400]),
        "corpus": WORDS,
        "5 MB": WORDS * (5_000_000 // len(WORDS) + 1),
    }


@pytest.mark.model
def test_long_documents_embed_as_sentence_transformers_does() -> None:
    """The torch backend: each long text's vector equals sentence-transformers' own (today's
    behaviour, the whole text tokenized) and its cut form's; 5 MB of text is cut to a few
    kilobytes before tokenizing, and embeds as the corpus it repeats."""
    from sentence_transformers import SentenceTransformer

    texts = _long_texts()
    embedder = SentenceTransformerEmbedder(ModelConfig())
    ours = embedder.embed(list(texts.values()), "document")
    reference = SentenceTransformer(embedder.source, device="cpu")
    small = ["just over", "whitespace run", "corpus"]
    expected = reference.encode([texts[k] for k in small], normalize_embeddings=True)
    np.testing.assert_allclose(ours[:3], expected, rtol=0, atol=1e-6)
    np.testing.assert_allclose(ours[3], ours[2], rtol=0, atol=1e-6)
    clipper = embedder.clipper
    assert clipper is not None
    assert len(clipper.cut(texts["5 MB"])) < 20_000
    assert len(clipper.cut(texts["whitespace run"])) > 200_000  # the run is kept, not cut into
    cut = [clipper.cut(t) for t in texts.values()]
    np.testing.assert_allclose(embedder.embed(cut, "document"), ours, rtol=0, atol=1e-6)


@pytest.mark.parametrize("backend", ["onnx", "openvino"])
def test_long_documents_embed_alike_on_onnx_and_openvino(backend: str, model_root: Path) -> None:
    """onnx and OpenVINO: the cut texts' token ids are the whole texts' (so the vectors are),
    the 5 MB text is cut short, and it embeds as the corpus it repeats."""
    texts = _long_texts()
    embedder = OnnxEmbedder(ModelConfig(backend=backend), model_root)
    fed = embedder._clipped(list(texts.values()), "document")
    whole = embedder.tokenizer.encode_batch(list(texts.values())[:3])
    assert [e.ids for e in embedder.tokenizer.encode_batch(fed[:3])] == [e.ids for e in whole]
    assert len(fed[3]) < 20_000
    vectors = embedder.embed([texts["corpus"], texts["5 MB"]], "document")
    np.testing.assert_allclose(vectors[0], vectors[1], rtol=0, atol=1e-6)


@pytest.mark.model
def test_torch_refuses_a_max_seq_length_past_the_models_positions() -> None:
    """model.max_seq_length 1000 on a 512-position model: a config error naming both (exit 2),
    where the first long text used to fail deep inside torch (exit 3, a tensor size mismatch);
    512 itself embeds."""
    long_text = " ".join(DOCS[:20])
    at_limit = SentenceTransformerEmbedder(ModelConfig(max_seq_length=512))
    assert at_limit.embed([long_text], "document").shape == (1, 384)
    with pytest.raises(ConfigError, match="max_seq_length 1000 exceeds the model's 512 positions"):
        SentenceTransformerEmbedder(ModelConfig(max_seq_length=1000)).embed([long_text], "document")
