"""Declared providers and retriever types (#24): ``model`` is a discriminated union on
``provider`` and the typed indexes one on ``type``, both kept in registries; a provider says what
it can do (``Capabilities``) and the pipeline asks that, never its name. A provider and an index
type are added here, from the test, without touching a module of evalret, and run through
``evalret run`` on the demo."""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pytest
from typer.testing import CliRunner

from conftest import DEMO
from evalret.cli import app
from evalret.core.ranking import SearchResult, top_candidates
from evalret.data.config import (
    BUILTIN_INDEXES,
    INDEX_CONFIGS,
    MODEL_CONFIGS,
    Config,
    ModelConfigBase,
    TypedIndexBase,
    parse_config,
)
from evalret.engines.backends import OnnxEmbedder
from evalret.engines.custom import CustomEmbedder
from evalret.engines.embedders import (
    EMBEDDERS,
    Capabilities,
    api_use,
    backend_check,
    capabilities,
    make_embedder,
    register_provider,
    unregister_provider,
)
from evalret.engines.openai_api import OpenAIEmbedder
from evalret.engines.protocols import (
    ApiEmbedder,
    FeedsText,
    KeepsFiles,
    LocalModel,
    StreamingEmbedder,
    key_texts,
    missing_members,
)
from evalret.engines.retrievers import (
    RETRIEVER_TYPES,
    RETRIEVERS,
    CorpusChecked,
    Costed,
    Probed,
    SearchJob,
    Staged,
    make_retrievers,
    register_retriever_type,
    unregister_retriever_type,
)
from evalret.engines.retrievers.base import BaseRetriever
from evalret.engines.retrievers.bm25 import Bm25Retriever
from evalret.engines.retrievers.faiss import FaissRetriever
from evalret.engines.retrievers.rerank import RerankRetriever
from evalret.engines.st_embedder import SentenceTransformerEmbedder
from evalret.errors import ConfigError
from evalret.pipeline.plan import dry_run

runner = CliRunner()


# --- a provider from outside evalret: its settings, its embedder, its declaration -------------


class HashedModelConfig(ModelConfigBase):
    """The settings of the test provider: only ``dim`` besides the common keys."""

    provider: Literal["hashed"]
    name: str = "hashed-bow"
    dim: int = 64


class HashedEmbedder:
    """Bag-of-words vectors of hashed tokens, sent to a pretend service (it declares itself an
    API, so the report records what it 'sent' and the dry run plans its requests)."""

    PER_REQUEST = 100

    def __init__(self, config: HashedModelConfig, _model_cache: Path | None) -> None:
        self.config = config
        self.sent = 0
        self.endpoint = "test://hashed"

    def identity(self) -> dict[str, Any]:
        return {"provider": "hashed", "name": self.config.name, "dim": self.config.dim}

    def embed(self, texts: Sequence[str], kind: str, progress: Any = None) -> np.ndarray:
        prefix = self.config.query_prefix if kind == "query" else self.config.document_prefix
        out = np.zeros((len(texts), self.config.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for token in (prefix + text).lower().split():
                out[i, int(hashlib.md5(token.encode()).hexdigest(), 16) % self.config.dim] += 1
        self.sent += len(texts)
        if progress:
            progress(len(texts))
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms > 0, norms, 1)

    def requests(self, fed: Sequence[str]) -> int:
        return math.ceil(len(fed) / self.PER_REQUEST)

    def report(self) -> dict[str, Any]:
        return {"endpoint": "test://hashed", "model": self.config.name}


HASHED = Capabilities(api=True, counts_tokens=False, runs_under_ray=False, hashes_weights=False)


@pytest.fixture
def hashed() -> Iterator[str]:
    name = register_provider(HashedModelConfig, HashedEmbedder, HASHED)
    yield name
    unregister_provider(name)


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cfg.yaml"
    path.write_text(f"golden_set: {{path: {json.dumps(str(DEMO))}}}\n{text}")
    return path


def _run(config: Path, *args: str) -> Any:
    return runner.invoke(app, ["run", "-c", str(config), "--no-progress", *args])


HASHED_RUN = (
    "model: {provider: hashed, dim: 48, query_prefix: 'q: '}\n"
    "indexes: {hnsw: {enabled: false}}\n"
    "health: {enabled: false}\n"
)


def test_a_registered_provider_runs_through_evalret_run(tmp_path: Path, hashed: str) -> None:
    """One settings model, one factory and one declaration, registered from here: the config
    takes the provider's keys (and only those), `evalret run` embeds with it, records its
    settings and identity, and the report's API section comes from the declaration."""
    config = _config(tmp_path, HASHED_RUN + f"cache: {{dir: {json.dumps(str(tmp_path))}}}\n")
    result = _run(config, "-o", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["config"]["model"] == {
        "provider": "hashed",
        "name": "hashed-bow",
        "normalize": True,
        "query_prefix": "q: ",
        "document_prefix": "",
        "truncate_dim": None,
        "dim": 48,
    }
    assert report["fingerprint"]["model"] == {"provider": "hashed", "name": "hashed-bow", "dim": 48}
    assert report["embedding"]["dim"] == 48
    assert report["embedding"]["api"] == {"endpoint": "test://hashed", "model": "hashed-bow"}
    assert report["embedding"]["backend"] == {"name": "hashed", "precision": "fp32"}
    assert report["embedding"]["backend_check"] is None  # it declares no reference
    assert set(report["indexes"]) == {"exact", "bm25", "hybrid"}


def test_a_registered_provider_is_asked_what_it_can_do(tmp_path: Path, hashed: str) -> None:
    """The dry run plans the provider's own requests and estimates its tokens (it does not
    count them); Ray refuses it because it declares so, not because of its name."""
    config = _config(tmp_path, HASHED_RUN + "cache: {enabled: false}\n")
    planned = _run(config, "--dry-run")
    assert planned.exit_code == 0, planned.output
    assert "provider hashed" in planned.output
    # 338 documents and 244 queries, 100 a request
    assert re.search(r"documents\W+338\W+0\W+338\W+\d+\W+4\b", planned.output), planned.output
    assert re.search(r"queries\W+244\W+0\W+244\W+\d+\W+3\b", planned.output), planned.output
    assert "tokens: estimate" in planned.output
    assert dry_run(config).endpoint == "test://hashed"  # an ApiEmbedder's endpoint

    ray = _config(tmp_path, HASHED_RUN + "embedding: {engine: ray}\n")
    refused = _run(ray, "-o", str(tmp_path / "out"))
    assert refused.exit_code == 2, refused.output
    assert "model.provider hashed does not run under Ray" in refused.output


def test_a_registered_providers_keys_are_checked(hashed: str) -> None:
    """Strict as the built-in providers: another provider's key names its readers, an unknown
    key is refused, and once the provider is gone its name is refused too."""
    with pytest.raises(ConfigError) as refused:
        parse_config("model:\n  provider: hashed\n  backend: onnx\n  colour: red\n", "c.yaml")
    said = [str(p) for p in refused.value.problems]
    assert said == [
        "c.yaml:3: model.backend: a setting of provider sentence-transformers, not read with "
        "provider hashed",
        "c.yaml:4: model.colour: unknown key",
    ]
    cfg = parse_config("model: {provider: hashed, dim: 8}")
    assert isinstance(cfg.model, HashedModelConfig) and cfg.model.dim == 8
    assert capabilities(cfg.model) is HASHED
    unregister_provider(hashed)
    with pytest.raises(ConfigError, match="'hashed' is no provider: one of sentence-transformers"):
        parse_config("model: {provider: hashed}")
    assert "hashed" not in MODEL_CONFIGS and "hashed" not in EMBEDDERS


def test_the_built_in_providers_declare_what_they_can_do() -> None:
    """Every question once asked of the name is asked of the declaration: only the API counts
    tokens and reports its use, only it stays off Ray, only the exported backends have a
    reference to be checked against; a backend without one is not checked (no model loaded)."""
    models = {
        "torch": "model: {}",
        "onnx": "model: {backend: onnx}",
        "openvino": "model: {backend: openvino}",
        "python": "model: {provider: python, callable: 'a.b:c'}",
        "openai": "model: {provider: openai, name: m}",
    }
    declared = {k: capabilities(parse_config(text).model) for k, text in models.items()}
    assert [k for k, c in declared.items() if c.api] == ["openai"]
    assert [k for k, c in declared.items() if c.counts_tokens] == ["openai"]
    assert [k for k, c in declared.items() if not c.runs_under_ray] == ["openai"]
    assert [k for k, c in declared.items() if c.hashes_weights] == ["torch", "onnx", "openvino"]
    assert {k: c.reference for k, c in declared.items() if c.reference} == {
        "onnx": "torch",
        "openvino": "torch",
    }
    api = OpenAIEmbedder(parse_config(models["openai"]).model)  # type: ignore[arg-type]
    assert api.identity()["weights_sha256"] is None  # what hashes_weights=False declares
    local = parse_config("").model
    assert backend_check(local, ["a text"], np.ones((1, 4), np.float32), None) is None
    assert api_use(local, HashedEmbedder(HashedModelConfig(provider="hashed"), None)) is None


# --- an index type from outside evalret -------------------------------------------------------


class FirstIndexConfig(TypedIndexBase):
    """The settings of the test index type: how many documents every query gets."""

    type: Literal["first"]
    size: int = 3


class FirstDocuments(BaseRetriever):
    """Every query gets the first ``size`` documents of the corpus, scores descending."""

    needs_vectors = False

    def __init__(self, name: str, settings: FirstIndexConfig, config: Config) -> None:
        self.name = name
        self.enabled = settings.enabled
        self.settings = settings

    def params(self) -> dict[str, Any]:
        return {"type": "first", "size": self.settings.size}

    def retrieve(self, job: SearchJob) -> SearchResult:
        ids = np.full((len(job.query_texts), job.depth), -1, dtype=np.int64)
        scores = np.full(ids.shape, -np.inf)
        docs = np.arange(min(self.settings.size, len(job.doc_ids)))
        for qi in range(len(ids)):
            ids[qi], scores[qi] = top_candidates(docs, -docs.astype(float), job.depth, job.rank)
        return SearchResult(ids=ids, scores=scores)


@pytest.fixture
def first() -> Iterator[str]:
    name = register_retriever_type(FirstIndexConfig, FirstDocuments)
    yield name
    unregister_retriever_type(name)


FIRST_RUN = (
    "indexes:\n"
    "  exact: {enabled: false}\n  hnsw: {enabled: false}\n"
    "  bm25: {enabled: false}\n  hybrid: {enabled: false}\n"
    "  mine: {type: first, size: 5}\n"
    "metrics: [ndcg@10, recall@10]\n"
    "gate: {indexes: [mine]}\n"
    "health: {enabled: false}\ncache: {enabled: false}\n"
)


def test_a_registered_index_type_runs_through_evalret_run(tmp_path: Path, first: str) -> None:
    """One settings model and one factory, registered from here: `evalret run` searches with
    the typed index (nothing embedded: it needs no vectors) and records its parameters."""
    result = _run(_config(tmp_path, FIRST_RUN), "-o", str(tmp_path / "out"))
    assert result.exit_code in (0, 1), result.output  # the gate may fail such a ranking
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert list(report["indexes"]) == ["mine"]
    assert report["indexes"]["mine"]["params"] == {"type": "first", "size": 5}
    assert report["config"]["indexes"]["mine"] == {"enabled": True, "type": "first", "size": 5}
    with pytest.raises(ConfigError) as refused:
        parse_config("indexes:\n  mine: {type: first, m: 4}\n  other: {type: first, x: 1}")
    assert [str(p) for p in refused.value.problems] == [
        "<config>:2: indexes.mine.m: a setting of index type pgvector, not read with index type "
        "first",
        "<config>:3: indexes.other.x: unknown key",
    ]


def test_a_missing_registry_entry_is_a_config_error(
    tmp_path: Path, first: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A type the config takes but no retriever serves, or a built-in index without its
    retriever, exits 2 naming the key (it was a KeyError, or an index silently never run)."""
    monkeypatch.delitem(RETRIEVER_TYPES, "first")
    result = _run(_config(tmp_path, FIRST_RUN), "-o", str(tmp_path / "a"))
    assert result.exit_code == 2, result.output
    assert "indexes.mine.type: no retriever is registered for type 'first'" in result.output
    registered = dict(RETRIEVERS)  # restored in its order: the hybrid runs after bm25
    text = FIRST_RUN.replace("  mine: {type: first, size: 5}\n", "")
    text = text.replace("exact: {enabled: false}", "exact: {enabled: true}")
    try:
        del RETRIEVERS["bm25"]
        result = _run(_config(tmp_path, text.replace("gate: {indexes: [mine]}\n", "")))
    finally:
        RETRIEVERS.clear()
        RETRIEVERS.update(registered)
    assert result.exit_code == 2, result.output
    assert "indexes.bm25: no retriever is registered for this index" in result.output


def test_the_index_lists_derive_from_the_models_and_registries(tmp_path: Path) -> None:
    """The built-in index names are the fixed keys of `indexes`, each with its retriever in the
    registry's order; the typed index tags are the union's, each with its retriever; `score`
    disables exactly the built-in ones."""
    assert BUILTIN_INDEXES == ("exact", "hnsw", "bm25", "hybrid")
    assert tuple(RETRIEVERS) == BUILTIN_INDEXES
    assert list(INDEX_CONFIGS) == list(RETRIEVER_TYPES)
    assert list(INDEX_CONFIGS) == [
        "run",
        "python",
        "pgvector",
        "rerank",
        "faiss",
        "quantized",
        "store",
    ]
    from evalret.commands.score import score_config

    run = tmp_path / "r.tsv"
    run.write_text("q1 Q0 d1 1 1.0 t\n")
    scored = score_config(DEMO, [f"r={run}"])
    assert scored.indexes.enabled_names() == ["r"]
    assert all(not getattr(scored.indexes, n).enabled for n in BUILTIN_INDEXES)


def test_strict_messages_name_the_key_and_the_members() -> None:
    """The union's errors read as the file does: the tag is no key of the file, a misplaced
    key names the providers (or index types) that read it, a required key says what it is."""
    cases = {
        "model: {provider: openai, name: m, backend: onnx}": "model.backend: a setting of "
        "provider sentence-transformers, not read with provider openai",
        "model: {name: m, concurrency: 2}": "model.concurrency: a setting of provider openai, "
        "not read with provider sentence-transformers",
        "model: {provider: openai, name: m, batch_size: 3}": "model.batch_size: a setting of "
        "provider sentence-transformers or python, not read with provider openai",
        "model: {provider: openai}": "model.name: provider openai needs name: the model id the "
        "endpoint serves",
        "model: {provider: python}": 'model.callable: provider python needs callable: "pkg.'
        'module:factory", called once with **options',
        "model: {provider: foo}": "model.provider: 'foo' is no provider: one of "
        "sentence-transformers, python, openai",
        "model: null": "model: Input should be a mapping, not null",
        "indexes:\n  r: {type: nope}": "indexes.r.type: 'nope' is no index type: one of run, "
        "python, pgvector, rerank, faiss, quantized, store",
        "indexes:\n  r: {path: x}": "indexes.r.type: required: one of run, python, pgvector, "
        "rerank, faiss, quantized, store",
        "indexes:\n  r: {type: run}": "indexes.r.path: index type run needs path: the run file "
        "(TREC or JSONL, gzipped or not)",
    }
    for text, said in cases.items():
        with pytest.raises(ConfigError) as refused:
            parse_config(text, "c.yaml")
        line = text.count("\n") + 1
        assert [str(p) for p in refused.value.problems] == [f"c.yaml:{line}: {said}"], text
    assert parse_config("model: {}").model.provider == "sentence-transformers"  # the default


# --- what a declaration claims is checked: when registered, and when made ---------------------


class SilentApi:
    """Declares itself an API (``HASHED``) but plans no requests and reports nothing: once, it
    registered and silently planned no requests."""

    def __init__(self, config: HashedModelConfig, _model_cache: Path | None) -> None:
        self.config = config

    def identity(self) -> dict[str, Any]:
        return {"provider": "hashed"}

    def embed(self, texts: Sequence[str], kind: str, progress: Any = None) -> np.ndarray:
        return np.ones((len(texts), 4), dtype=np.float32) / 2


class NoEmbed:
    """Has an identity and nothing to embed with."""

    def __init__(self, config: HashedModelConfig, _model_cache: Path | None) -> None:
        self.config = config

    def identity(self) -> dict[str, Any]:
        return {"provider": "hashed"}


class Unplaced(HashedEmbedder):
    """An API embedder whose ``__init__`` forgets its endpoint (a data member, so it is
    checked on the made embedder, not on the class)."""

    def __init__(self, config: HashedModelConfig, _model_cache: Path | None) -> None:
        self.config = config


LOCAL_ONLY = Capabilities(
    api=False, counts_tokens=False, runs_under_ray=False, hashes_weights=False
)


def test_a_provider_lacking_what_it_claims_is_refused_at_registration() -> None:
    """A class declaring an API without the API's methods, or no embedder at all, is refused
    when registered, naming the provider, the class and every missing method; nothing of it
    is registered. The same class declaring no API registers."""
    cases = [
        (
            SilentApi,
            HASHED,
            "SilentApi is no ApiEmbedder (it declares api=True): it lacks requests, report",
        ),
        (NoEmbed, LOCAL_ONLY, "NoEmbed is no Embedder: it lacks embed"),
        (NoEmbed, HASHED, "NoEmbed is no Embedder: it lacks embed"),
    ]
    for factory, declared, said in cases:
        with pytest.raises(TypeError) as refused:
            register_provider(HashedModelConfig, factory, declared)
        assert str(refused.value) == f"provider 'hashed': {said}"
        assert "hashed" not in MODEL_CONFIGS and "hashed" not in EMBEDDERS
    name = register_provider(HashedModelConfig, SilentApi, LOCAL_ONLY)
    try:
        assert isinstance(make_embedder(parse_config("model: {provider: hashed}").model), SilentApi)
    finally:
        unregister_provider(name)


def test_an_embedder_lacking_what_its_provider_claims_is_refused_when_made() -> None:
    """What registration cannot see (a function factory, an attribute set in ``__init__``) is
    checked on the embedder it makes, before it embeds anything."""

    def silent(config: HashedModelConfig, cache: Path | None) -> SilentApi:
        return SilentApi(config, cache)

    for factory, said in [
        (
            silent,
            "SilentApi is no ApiEmbedder (it declares api=True): it lacks endpoint, "
            "requests, report",
        ),
        (Unplaced, "Unplaced is no ApiEmbedder (it declares api=True): it lacks endpoint"),
    ]:
        name = register_provider(HashedModelConfig, factory, HASHED)
        try:
            with pytest.raises(TypeError) as refused:
                make_embedder(parse_config("model: {provider: hashed}").model)
            assert str(refused.value) == f"provider 'hashed': {said}"
        finally:
            unregister_provider(name)


def test_an_index_type_lacking_a_retrievers_methods_is_refused() -> None:
    """A retriever class without ``retrieve`` is refused when registered; a function factory's
    retriever lacking a declared attribute, when it is made for a config."""

    class NoRetrieve(BaseRetriever):
        def params(self) -> dict[str, Any]:
            return {}

    with pytest.raises(TypeError) as refused:
        register_retriever_type(FirstIndexConfig, NoRetrieve)
    assert str(refused.value) == "index type 'first': NoRetrieve is no Retriever: it lacks retrieve"
    assert "first" not in INDEX_CONFIGS and "first" not in RETRIEVER_TYPES

    class Bare:
        name, enabled = "mine", True

        def params(self) -> dict[str, Any]:
            return {}

    def bare(name: str, settings: FirstIndexConfig, config: Config) -> Bare:
        return Bare()

    registered = register_retriever_type(FirstIndexConfig, bare)  # type: ignore[arg-type]
    try:
        with pytest.raises(TypeError) as refused:
            make_retrievers(parse_config("indexes:\n  mine: {type: first}"))
        assert str(refused.value) == (
            "index type 'first': Bare is no Retriever: it lacks needs_vectors, corpus_bound, "
            "approximate, input_depth, cache_notes, retrieve"
        )
    finally:
        unregister_retriever_type(registered)


def test_the_built_in_engines_declare_their_protocols() -> None:
    """What the pipeline once discovered by name is declared: only the API plans requests and
    streams; the local models (not the API, not a custom encoder, whose vectors the kind may
    move) have the cache key their texts as fed; a faiss index checks the corpus first, a
    rerank index is a stage."""
    embedders = {
        "torch": SentenceTransformerEmbedder,
        "onnx": OnnxEmbedder,
        "python": CustomEmbedder,
        "openai": OpenAIEmbedder,
    }
    protocols = [FeedsText, LocalModel, KeepsFiles, StreamingEmbedder, ApiEmbedder]
    said = {
        k: [p.__name__ for p in protocols if not missing_members(c, p)]
        for k, c in embedders.items()
    }
    assert said == {
        "torch": ["FeedsText", "LocalModel"],
        "onnx": ["FeedsText", "LocalModel", "KeepsFiles"],
        "python": [],
        "openai": ["FeedsText", "StreamingEmbedder", "ApiEmbedder"],
    }
    api = OpenAIEmbedder(parse_config("model: {provider: openai, name: m}").model)  # type: ignore[arg-type]
    assert isinstance(api, ApiEmbedder) and not isinstance(api, LocalModel)
    assert key_texts(api, ["a"], "query") == ["query\0a"]  # its kind also picks request fields
    retrievers = {"faiss": FaissRetriever, "rerank": RerankRetriever, "bm25": Bm25Retriever}
    checks = {
        k: [p.__name__ for p in (CorpusChecked, Costed, Probed) if not missing_members(c, p)]
        for k, c in retrievers.items()
    }
    assert checks == {
        "faiss": ["CorpusChecked", "Costed", "Probed"],
        "rerank": ["Costed", "Probed"],
        "bm25": ["Costed", "Probed"],
    }
    reranked = parse_config(
        "indexes:\n  r: {type: rerank, of: exact, k: 5, reranker: {provider: python, "
        "callable: 'builtins:len'}}"
    )
    stage = make_retrievers(reranked)[-1]
    assert isinstance(stage, Staged) and stage.stage == ("exact", 5)
