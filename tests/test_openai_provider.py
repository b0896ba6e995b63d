"""The OpenAI-compatible provider (``model.provider: openai``) against a loopback server that
serves the packaged MiniLM's real vectors (tests/openai_server.py) with injected faults: the
demo's metrics through HTTP equal the local run's; retries, refusals and malformed answers; the
key kept out of every output; a run killed midway resumes from the cache; the dry run sends no
request."""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import numpy as np
import pytest
from typer.testing import CliRunner

from conftest import DEMO, REPO
from evalret.cli import app
from evalret.data.config import OpenAIModelConfig as ModelConfig
from evalret.data.config import load_config, parse_config
from evalret.data.schema import ApiKindUse, ApiUse
from evalret.engines.openai_api import OpenAIEmbedder, endpoint_of, plan_batches
from evalret.engines.tokens import ESTIMATE, estimate_tokens, token_counter
from evalret.errors import ConfigError, ModelError
from evalret.pipeline.evaluate import run_evaluation
from evalret.pipeline.plan import dry_run
from evalret.report.run_notes import api_line
from helpers import bomb, cut_short, marks_its_users, metric_table
from openai_server import EmbeddingServer, packaged_model

runner = CliRunner()
KEY = "sk-evalret-test-5f1c9a7e3b"
SERVED = "minilm-served"


@pytest.fixture(scope="module")
@marks_its_users("model")
def server() -> Iterator[EmbeddingServer]:
    with EmbeddingServer(packaged_model(), SERVED) as s:
        yield s


@pytest.fixture
def api(server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch) -> EmbeddingServer:
    """The server with no faults and no requests logged, and the key in the environment."""
    server.reset()
    monkeypatch.setenv("EVALRET_TEST_KEY", KEY)
    return server


def write_config(tmp: Path, base_url: str, golden: Path = DEMO, **model: Any) -> Path:
    settings = {
        "provider": "openai",
        "name": SERVED,
        "base_url": base_url,
        "api_key_env": "EVALRET_TEST_KEY",
        "max_retries": 4,
        "timeout": 300,  # generous: the shared test machine can be slow
        **model,
    }
    config = {
        "golden_set": {"path": str(golden)},
        "model": settings,
        "cache": {"dir": str(tmp / "cache")},
        "output": {"dir": str(tmp / "out")},
    }
    path = tmp / "evalret.yaml"
    path.write_text(json.dumps(config))
    return path


def fast_retry(code: int, message: str = "busy") -> tuple[Any, ...]:
    return ("status", code, {"retry-after-ms": "20"}, message)


def files_holding(root: Path, text: str) -> list[Path]:
    needle = text.encode()
    return [p for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


def test_demo_through_http_equals_local_after_faults(api: EmbeddingServer, tmp_path: Path) -> None:
    """429s (Retry-After in seconds and in ms) and a 500 are retried; the demo's
    metrics then equal the local sentence-transformers run's within 1e-4 on every index, slice
    and metric; tokens and requests are reported; the key is in no output or cache file and
    not in the terminal output, though the server received it."""
    api.state.faults.extend(
        [
            ("status", 429, {"Retry-After": "1"}, "rate limited"),
            fast_retry(429),
            fast_retry(500, "internal"),
        ]
    )
    path = write_config(tmp_path, api.base_url, max_batch=48, concurrency=4)
    result = runner.invoke(app, ["run", "-c", str(path), "--no-progress"])
    assert result.exit_code == 0, result.output
    assert all(r.authorization == f"Bearer {KEY}" for r in api.state.requests)
    assert all(r.options.get("encoding_format") == "base64" for r in api.state.requests)
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    use = report["embedding"]["api"]
    assert use["document"]["texts"] == 338 and use["query"]["texts"] == 244
    assert use["document"]["requests"] == 8  # ceil(338 / 48)
    assert use["document"]["retries"] + use["query"]["retries"] == 3
    assert use["document"]["tokens"] > 338
    assert "API minilm-served at http://127.0.0.1" in result.output
    assert "not hashable" in report["fingerprint"]["model"]["weights"]
    assert files_holding(tmp_path, KEY) == [] and KEY not in result.output

    from evalret.data.schema import RunReport

    http = metric_table(RunReport.model_validate(report))
    local_path = tmp_path / "local.yaml"
    local_path.write_text(json.dumps({"golden_set": {"path": str(DEMO)}}))
    local = metric_table(run_evaluation(load_config(local_path)).report)
    assert http.keys() == local.keys() and len(http) > 100
    worst = max(abs(http[k] - local[k]) for k in http)
    assert worst < 1e-4, worst
    assert http[("exact", "all", "ndcg@10")] == pytest.approx(local[("exact", "all", "ndcg@10")])


def _run_error(api: EmbeddingServer, tmp: Path, **model: Any) -> str:
    path = write_config(tmp, api.base_url, **model)
    result = runner.invoke(app, ["run", "-c", str(path), "--no-progress"])
    assert result.exit_code == 3, result.output
    return " ".join(result.output.split())


@pytest.mark.parametrize(
    ("code", "said"),
    [
        (401, "the key was refused: check the key in EVALRET_TEST_KEY"),
        (403, "may not use this model"),
        (400, "an input may be too long"),
        (400, f"check model.name ({SERVED!r})"),
        (413, "lower model.max_batch (256)"),
        (422, "the batch may be too large (lower model.max_batch, now 256)"),
    ],
)
def test_refusals_are_not_retried(
    api: EmbeddingServer, tmp_path: Path, code: int, said: str
) -> None:
    """401, 403, 400, 413 and 422 fail at once (one request), exit 3, naming the endpoint, the
    status and what is wrong; a key the server echoes back is masked."""
    api.state.faults.append(("status", code, {}, f"Incorrect API key provided: {KEY}"))
    output = _run_error(api, tmp_path, concurrency=1)
    assert len(api.state.requests) == 1
    assert f"{api.base_url}/embeddings" in output and f"HTTP {code}" in output
    assert said in output and "Incorrect API key provided: ***" in output
    assert KEY not in output


def test_unknown_model_and_spent_retries(api: EmbeddingServer, tmp_path: Path) -> None:
    """A model the server does not serve is a 404 naming model.name; a 500 that persists is
    retried max_retries times, then fails with exit 3 (never 1)."""
    output = _run_error(api, tmp_path, name="no-such-model", concurrency=1)
    assert "HTTP 404" in output and "check model.name ('no-such-model')" in output
    api.reset()
    api.state.faults.extend([fast_retry(500, "down")] * 3)
    output = _run_error(api, tmp_path, concurrency=1, max_retries=2)
    assert len(api.state.requests) == 3
    assert "HTTP 500" in output and "failed after 2 retries" in output
    api.reset()
    api.state.faults.extend([fast_retry(429, "slow down")] * 2)
    output = _run_error(api, tmp_path, concurrency=1, max_retries=1)
    assert "still rate limited after 1 retry:" in output


@pytest.mark.parametrize("mode", ["huge", "gzip"])
def test_an_answer_past_the_limit_is_refused(
    api: EmbeddingServer, tmp_path: Path, mode: str
) -> None:
    """A 256 MiB answer or a gzip bomb stops at model.max_response_mb's default (64 MiB for
    max_batch 256): exit 3 naming the endpoint, the limit and what lowers an answer's size,
    one request (not retried), and the body not read whole."""
    bomb("gzip")  # made before the client waits for it
    api.state.faults.append(("hostile", mode))
    output = _run_error(api, tmp_path, concurrency=1)
    assert len(api.state.requests) == 1
    assert f"embedding request to {api.base_url}/embeddings:" in output
    assert "larger than model.max_response_mb (64 MiB)" in output
    assert "(or lower model.max_batch, 256 texts a request)" in output
    cut_short(api.state.sent)


def test_a_huge_retry_after_is_not_retried(api: EmbeddingServer, tmp_path: Path) -> None:
    """A 429 asking to wait 10**9 s: one request, and the message says it was not retried."""
    api.state.faults.append(("status", 429, {"Retry-After": str(10**9)}, "slow down"))
    output = _run_error(api, tmp_path, concurrency=1, max_retries=3)
    assert len(api.state.requests) == 1
    assert "rate limited with no retry: the server asked to wait 1,000,000,000 s" in output
    assert "3 retries" not in output


@pytest.mark.parametrize(
    ("fault", "said"),
    [
        ("count", "answered 31 vectors for 32 inputs"),
        ("dim", "answered vectors of dimension 192 after 384"),
        ("bad_index", "indexes that are not 0..31 once each"),
    ],
)
def test_malformed_answers_are_refused(
    api: EmbeddingServer, tmp_path: Path, fault: str, said: str
) -> None:
    """A wrong count, a changed dimension or broken indexes fail the run (exit 3)."""
    api.state.faults.extend([("none",), (fault,)])
    output = _run_error(api, tmp_path, concurrency=1, max_batch=32)
    assert said in output and api.base_url in output


def test_order_base64_fallback_and_dimensions(api: EmbeddingServer) -> None:
    """Items answered out of order come back in input order by their index; a server refusing
    base64 is asked in float (same vectors); dimensions is sent and checked."""
    texts = ["a cat sat", "quantum chromodynamics", "tax law in 1990", "the cat"]
    model = ModelConfig(
        provider="openai",
        name=SERVED,
        base_url=api.base_url,
        api_key_env="EVALRET_TEST_KEY",
        max_batch=4,
    )
    plain = OpenAIEmbedder(model).embed(texts, "document")
    api.state.faults.append(("shuffle",))
    shuffled = OpenAIEmbedder(model).embed(texts, "document")
    np.testing.assert_array_equal(plain, shuffled)
    api.reset()
    api.state.refuse_base64 = True
    floats = OpenAIEmbedder(model).embed(texts, "document")
    assert [r.options.get("encoding_format") for r in api.state.requests] == ["base64", "float"]
    np.testing.assert_allclose(floats, plain, atol=1e-6)
    api.reset()
    cut = OpenAIEmbedder(model.model_copy(update={"dimensions": 64})).embed(texts, "query")
    assert cut.shape == (4, 64) and api.state.requests[0].options["dimensions"] == 64
    local = packaged_model().encode(texts, normalize_embeddings=True)
    cosine = (plain * local).sum(axis=1)
    assert cosine.min() > 0.9999


def test_timeouts_are_retried(api: EmbeddingServer) -> None:
    """A request that outlasts model.timeout is sent again; the answer is the same."""
    model = ModelConfig(
        provider="openai", name=SERVED, base_url=api.base_url, api_key_env=None, timeout=2
    )
    embedder = OpenAIEmbedder(model)
    api.state.faults.append(("slow", 5.0))
    slow = embedder.embed(["one text", "another"], "query")
    assert embedder.usage["query"].retries == 1 and len(api.state.requests) == 2
    deadline = time.monotonic() + 30
    while api.state.answered < 2 and time.monotonic() < deadline:
        time.sleep(0.05)  # the slow answer, to nobody, before the next test's counts
    assert api.state.requests[0].authorization == "Bearer evalret-no-key"
    np.testing.assert_array_equal(
        slow, OpenAIEmbedder(model).embed(["one text", "another"], "query")
    )


def test_killed_run_resumes_from_the_cache(api: EmbeddingServer, tmp_path: Path) -> None:
    """A run killed (SIGKILL) after 5 answered batches keeps them: the rerun reads those 80
    documents from the cache and sends only the rest."""
    path = write_config(tmp_path, api.base_url, max_batch=16, concurrency=1)
    api.state.hold_after = 5
    env = {**os.environ, "EVALRET_TEST_KEY": KEY}
    cmd = [sys.executable, "-m", "evalret", "run", "-c", str(path), "--no-progress"]
    process = subprocess.Popen(
        cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 120
    while len(api.state.requests) < 6 and time.monotonic() < deadline:
        time.sleep(0.05)  # the 6th request is sent once the 5th answer is stored
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert api.state.answered == 5 and len(api.state.requests) == 6
    api.reset()
    result = runner.invoke(app, ["run", "-c", str(path), "--no-progress"])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    cache = report["embedding"]["cache"]
    assert cache["document"] == {"hits": 80, "misses": 258, "corrupt_shards": []}
    sent = [r.inputs for r in api.state.requests]
    assert sum(len(b) for b in sent) == 258 + 244  # the other documents, then the queries
    assert report["embedding"]["api"]["document"]["texts"] == 258


def test_dry_run_on_scifact_sends_nothing(
    api: EmbeddingServer, tmp_path: Path, scifact_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--dry-run on SciFact counts texts, cached texts, tokens, requests and cost, and sends no
    request (no key needed either)."""
    path = write_config(
        tmp_path, api.base_url, scifact_path, price_per_million_tokens=0.02, max_batch=100
    )
    monkeypatch.delenv("EVALRET_TEST_KEY")
    result = runner.invoke(app, ["run", "-c", str(path), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert api.state.requests == []
    assert not (tmp_path / "out").exists() and not (tmp_path / "cache").exists()
    plan = dry_run(path)
    assert (plan.document.texts, plan.document.to_embed, plan.document.cached) == (5183, 5183, 0)
    assert (plan.query.texts, plan.query.to_embed) == (300, 300)
    assert plan.document.requests == 52 and plan.query.requests == 3
    assert plan.document.tokens > 5183 * 50 and plan.tokenizer == ESTIMATE
    assert plan.document.cost == pytest.approx(plan.document.tokens * 0.02 / 1e6, abs=1e-6)
    lines = result.output
    assert "nothing embedded, no request sent" in lines and "5183" in lines
    assert str(plan.document.tokens) in lines and api.state.requests == []


def test_dry_run_counts_the_cache(api: EmbeddingServer, tmp_path: Path) -> None:
    """After a run, the dry run finds every text cached and nothing to embed; with another
    dimensions setting (another identity) nothing is cached."""
    path = write_config(tmp_path, api.base_url, max_batch=64)
    assert runner.invoke(app, ["run", "-c", str(path), "--no-progress"]).exit_code == 0
    sent = len(api.state.requests)
    plan = dry_run(path)
    assert (plan.document.cached, plan.document.to_embed, plan.document.tokens) == (338, 0, 0)
    assert (plan.query.cached, plan.query.to_embed) == (244, 0)
    other = write_config(tmp_path, api.base_url, max_batch=64, dimensions=128)
    assert dry_run(other).document.to_embed == 338
    assert len(api.state.requests) == sent
    local = tmp_path / "local.yaml"
    local.write_text(json.dumps({"golden_set": {"path": str(DEMO)}}))
    plan = dry_run(local, no_cache=True)
    assert plan.document.to_embed == 338 and plan.document.requests is None
    assert plan.cache is None and plan.provider == "sentence-transformers"


def test_identity_and_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Provider, endpoint (port-less default), model, dimensions, prefixes and request fields
    are the identity; the config refuses other providers' keys, reserved request fields, a
    provider openai without a name and credentials in base_url (user info, a query string: the
    message does not repeat them); an unset key variable is an exit-2 error naming it."""
    base = {"provider": "openai", "name": "m", "base_url": "https://api.x.com/v1/"}
    one = OpenAIEmbedder(ModelConfig(**base)).identity()
    assert one["endpoint"] == "https://api.x.com/v1"
    assert endpoint_of("http://localhost:8080/v1/") == "http://localhost:8080/v1"
    for change in (
        {"dimensions": 256},
        {"query_prefix": "q: "},
        {"base_url": "https://api.y.com/v1"},
        {"request_fields": {"query": {"input_type": "query"}}},
        {"name": "m2"},
    ):
        assert OpenAIEmbedder(ModelConfig(**{**base, **change})).identity() != one
    dump = ModelConfig(**base).model_dump()
    assert "max_seq_length" not in dump and dump["concurrency"] == 4
    assert "base_url" not in parse_config("").model.model_dump()
    for bad in (
        "model: {provider: openai}",
        "model: {provider: openai, name: m, backend: onnx}",
        "model: {name: m, concurrency: 2}",
        "model: {provider: openai, name: m, request_fields: {query: {model: x}}}",
        "model: {provider: openai, name: m, base_url: 'ftp://x'}",
        "model: {provider: openai, name: m, concurrency: 0}",
        "model: {provider: openai, name: m, base_url: 'https://u:pw-77x@api.x.com/v1'}",
        "model: {provider: openai, name: m, base_url: 'https://api.x.com/v1?key=pw-77x'}",
    ):
        with pytest.raises(ConfigError) as refused:
            parse_config(bad, "c.yaml")
        assert "pw-77x" not in str(refused.value) + repr(refused.value.problems)
    monkeypatch.delenv("NOT_SET_KEY", raising=False)
    embedder = OpenAIEmbedder(ModelConfig(**base, api_key_env="NOT_SET_KEY"))
    with pytest.raises(ConfigError, match="NOT_SET_KEY is not set"):
        embedder.embed(["x"], "query")


def test_batches_and_tokens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches hold at most max_batch texts and max_batch_tokens estimated tokens (a single
    larger text goes alone); the estimate is ceil(UTF-8 bytes / 4); without a cached tiktoken
    encoding the estimate is used and says why."""
    texts = ["a" * 40] * 10 + ["b" * 400] + ["c"] * 3
    sizes = [len(b) for b in plan_batches(texts, 4, 30)]
    assert sizes == [3, 3, 3, 1, 1, 3]
    assert [len(b) for b in plan_batches(texts, 100, 10**6)] == [14]
    assert estimate_tokens("abcd") == 1 and estimate_tokens("abcde") == 2
    assert estimate_tokens("") == 1 and estimate_tokens("日本") == 2
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    counter = token_counter("text-embedding-3-small")
    assert counter.method == ESTIMATE
    assert counter.total(["abcdefgh", "x"]) == 3


def test_missing_extra_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the openai package, the error names the extra (exit 2)."""
    monkeypatch.setitem(sys.modules, "openai", None)
    embedder = OpenAIEmbedder(ModelConfig(provider="openai", name="m", api_key_env=None))
    with pytest.raises(ConfigError, match=r"evalret\[openai\]"):
        embedder.embed(["x"], "query")


def test_config_file_round_trip(tmp_path: Path) -> None:
    """A provider openai config loads from YAML as written in docs/how-to/embedding-apis.md."""
    path = tmp_path / "c.yaml"
    path.write_text(
        "model:\n"
        "  provider: openai\n"
        "  name: voyage-3-large\n"
        "  base_url: https://api.voyageai.com/v1\n"
        "  api_key_env: VOYAGE_API_KEY\n"
        "  request_fields:\n"
        "    query: {input_type: query, output_dimension: 1024}\n"
        "    document: {input_type: document, output_dimension: 1024}\n"
        "  max_batch: 128\n"
        "  price_per_million_tokens: 0.18\n"
    )
    model = load_config(path).model
    assert model.request_fields is not None
    assert model.request_fields.query == {"input_type": "query", "output_dimension": 1024}


def _embedder(api: EmbeddingServer, **model: Any) -> OpenAIEmbedder:
    settings = {"max_retries": 0, "api_key_env": "EVALRET_TEST_KEY", **model}
    return OpenAIEmbedder(
        ModelConfig(provider="openai", name=SERVED, base_url=api.base_url, **settings)
    )


def test_redirects_stay_within_the_origin(api: EmbeddingServer) -> None:
    """A 307 to the same origin is followed; a 307 to another origin (a server on another
    port) is refused before anything is sent there, and not retried."""
    api.state.faults.append(("redirect", f"{api.base_url}/embeddings/"))
    vectors = _embedder(api).embed(["a cat sat"], "query")
    assert vectors.shape == (1, 384) and len(api.state.requests) == 2
    with EmbeddingServer(api.state.model, SERVED) as other:
        api.reset()
        api.state.faults.append(("redirect", f"{other.base_url}/embeddings"))
        with pytest.raises(ModelError, match="another origin") as refused:
            _embedder(api, max_retries=3).embed(["a secret text"], "query")
        assert other.state.requests == [] and len(api.state.requests) == 1
        assert other.base_url.rsplit("/", 1)[0] in str(refused.value)


def test_timeout_is_a_deadline(api: EmbeddingServer) -> None:
    """A server dripping its answer a byte every 0.2 s (12 s in all) is cut at model.timeout
    (2 s) for the whole request, though no single read waits that long."""
    api.state.faults.append(("drip", 12.0))
    start = time.monotonic()
    with pytest.raises(ModelError, match=r"within model.timeout \(2 s\)"):
        _embedder(api, timeout=2).embed(["one text"], "query")
    assert time.monotonic() - start < 8


def test_key_masked_in_every_echoed_form(api: EmbeddingServer, monkeypatch: Any) -> None:
    """A server echoing the key verbatim, as HTTP Basic of user:key and :key, URL-encoded
    and JSON-escaped has every form masked in the message."""
    key = 'sk-odd/key+with"quote=5f1c9a7e'
    monkeypatch.setenv("EVALRET_TEST_KEY", key)
    forms = [
        key,
        base64.b64encode(f"user:{key}".encode()).decode(),
        base64.b64encode(f":{key}".encode()).decode(),
        base64.urlsafe_b64encode(f"ab:{key}".encode()).decode(),
        quote(key, safe=""),
        quote_plus(key),
        json.dumps(key)[1:-1],
    ]
    said = "you sent: " + " | ".join(forms)
    api.state.faults.append(("status", 401, {}, said))
    with pytest.raises(ModelError, match="you sent") as refused:
        _embedder(api).embed(["x"], "query")
    message = str(refused.value)
    assert api.state.requests[0].authorization == f"Bearer {key}"
    assert message.count("***") >= len(forms)
    assert not [f for f in forms if f[2:-2] in message]  # nor a recognisable part of one


@pytest.mark.parametrize(
    ("fault", "said"),
    [
        (("html",), "with text/html; charset=utf-8, not JSON: <html><body><h1>Sign in</h1>"),
        (("error200", "quota exhausted for sk-evalret-test-5f1c9a7e3b"), "quota exhausted for ***"),
        (("truncate",), "answered JSON that cannot be read"),
        (("usage", -5), "usage.total_tokens -5 for 2 texts: not a token count"),
        (("usage", 10**12), "usage.total_tokens 1000000000000 for 2 texts"),
        (("usage", "12"), "usage.total_tokens '12'"),
        (("usage", 10**400), f"usage.total_tokens 1{'0' * 39}... for 2 texts"),
        # numpy would read "0.5" and true as numbers
        (("numbers_as", "str"), "answered a vector evalret cannot read: str '"),
        (("numbers_as", "bool"), "answered a vector evalret cannot read: bool "),
        (("numbers_as", "huge"), "answered a vector evalret cannot read: int too large"),
    ],
)
def test_bad_answers_with_status_200(
    api: EmbeddingServer, fault: tuple[Any, ...], said: str
) -> None:
    """An HTML page, an error body or cut-short JSON with status 200, and a token count that
    is none, fail naming the endpoint and showing the server's text (key masked)."""
    api.state.faults.append(fault)
    with pytest.raises(ModelError) as refused:
        _embedder(api).embed(["one text", "another"], "document")
    message = str(refused.value)
    assert said in message and f"{api.base_url}/embeddings" in message and KEY not in message


def test_failure_keeps_answered_batches_and_stops_at_once(
    api: EmbeddingServer, tmp_path: Path
) -> None:
    """With 4 requests in flight, two answered and then a 401: the run fails at once (the
    three requests still held by the server are cancelled, not waited for) and the two answered
    batches are in the cache: the rerun reads them and sends only the rest. The rerun's answers
    name another model: report.json, the terminal and report.md say so."""
    api.state.faults.extend([("none",), ("none",), ("fail_after", 2, 401, "bad key")])
    api.state.hold_after = 3  # the 4th request and the next ones wait for a release
    release = threading.Timer(20, api.state.release.set)
    release.start()
    path = write_config(tmp_path, api.base_url, max_batch=16, concurrency=4)
    start = time.monotonic()
    try:
        output = _run_error(api, tmp_path, max_batch=16, concurrency=4)
        elapsed = time.monotonic() - start
    finally:
        release.cancel()
    assert "HTTP 401" in output and elapsed < 12, elapsed
    assert api.state.answered == 2 and len(api.state.requests) == 6
    api.reset()
    api.state.faults.append(("model", "text-embedding-other"))
    result = runner.invoke(app, ["run", "-c", str(path), "--no-progress"])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["embedding"]["cache"]["document"]["hits"] == 32
    assert report["embedding"]["api"]["served_model"] == "text-embedding-other"
    said = "answers named model text-embedding-other, not minilm-served"
    assert said in " ".join(result.output.split())
    assert said in (tmp_path / "out" / "report.md").read_text()


def test_api_line_counts() -> None:
    """One request, one text, one retry: singular nouns."""
    one = ApiKindUse(requests=1, retries=1, texts=1, tokens=3)
    line = api_line(ApiUse(endpoint="http://h/v1", model="m", query=one))
    assert "queries 1 text in 1 request, 3 tokens, 1 retried" in line
