"""Bounded bytes at the HTTP edge (issue 35): the one HTTP policy (engines/http_policy.py) caps an
answer's body as sent and as decoded, for every client built on it (the judge, an HTTP reranker;
the embedding provider in test_openai_provider.py, under the model marker, and all three in the
invariants harness); what a server answers is read as a server's answer (a number too long for
Python, a token count no tokenizer makes: a failed request, never a crash or a price); a request
that failed says how often it was sent again, and why not; bad settings of an HTTP section are
exit 2 naming the key.

The servers are the loopback ones of tests/ (chat_server, rerank_server), with the hostile
bodies of helpers.send_hostile_body: the cap is shown by behaviour (the error naming the
endpoint and the limit, one request only, and the server seeing the connection closed before
it sent the whole body), never by timing."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from chat_server import ChatServer
from conftest import DEMO
from evalret.data.config import MIB, parse_config
from evalret.pipeline.judge import parse_grade
from helpers import HOSTILE_BYTES, HOSTILE_MODES, bomb, cut_short, invoke, make_set
from rerank_server import RerankServer

PAIRS = [("q1", "d1", "what is a kernel", "a kernel is the core of an operating system")] + [
    (f"q{i}", f"d{i}", f"query {i}", f"document {i}") for i in range(2, 5)
]


def _pool(tmp_path: Path, n: int = 1) -> Path:
    path = tmp_path / "pool.jsonl"
    lines = [
        {"query_id": q, "doc_id": d, "grade": None, "query": qt, "document": dt}
        for q, d, qt, dt in PAIRS[:n]
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _judge(tmp_path: Path, server: ChatServer, pairs: int = 1, **judge: Any) -> tuple[int, str]:
    """`evalret judge` of ``pairs`` pairs against ``server`` (no answer cache)."""
    settings = {
        "name": server.state.name,
        "base_url": server.base_url,
        "api_key_env": None,
        "max_retries": 2,
        "concurrency": 1,
        **judge,
    }
    config = tmp_path / "judge.yaml"
    config.write_text(
        f"golden_set: {{path: {json.dumps(str(DEMO))}}}\ncache: {{enabled: false}}\n"
        f"judge: {json.dumps(settings)}\n"
    )
    labels = tmp_path / "labels.jsonl"
    return invoke(
        "judge", str(_pool(tmp_path, pairs)), "-c", str(config), "--out", str(labels),
        "--no-progress",
    )  # fmt: skip


def _truth() -> dict[tuple[str, str], int]:
    return {(qt, dt): 2 for _, _, qt, dt in PAIRS}


# --- the cap -------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", HOSTILE_MODES)
def test_the_judge_stops_reading_at_its_default_limit(tmp_path: Path, mode: str) -> None:
    """A 256 MiB answer (with or without its Content-Length) or a gzip or deflate bomb (256 MiB
    of zeros in 260 KB): exit 3 naming the endpoint and judge.max_response_mb's default (64 MiB),
    not retried though judge.max_retries is 2, and the body not read whole."""
    if mode in ("gzip", "deflate"):
        bomb(mode)  # made before the client waits for it
    with ChatServer(_truth()) as server:
        server.state.faults.append(("hostile", mode))
        code, out = _judge(tmp_path, server)
        assert server.state.requests == 1
    assert code == 3, out
    line = " ".join(out.split())
    assert f"judge request to {server.base_url}/chat/completions:" in line
    assert "larger than judge.max_response_mb (64 MiB)" in line and "not retried" in line
    if mode == "huge-declared":  # refused from its header: nothing of it read
        assert f"it declares {HOSTILE_BYTES:,} bytes (Content-Length)" in line
    elif mode == "huge":
        assert "reading stopped at 67," in line  # 64 MiB and the piece that passed it
    else:
        assert "bytes decoded from" in line and f"bytes of {mode}" in line
    cut_short(server.state.sent)


@pytest.mark.parametrize("mode", ["huge", "gzip"])
def test_an_http_reranker_stops_reading_at_its_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """The reranker's own limit (indexes.<name>.reranker.max_response_mb) applies: exit 3 naming
    the endpoint and the key, the body cut short."""
    monkeypatch.delenv("EVALRET_TEST_RERANK_KEY", raising=False)
    bomb("gzip")
    golden = make_set(tmp_path / "set")
    with RerankServer() as server:
        server.state.faults.append(("hostile", mode))
        config = tmp_path / "c.yaml"
        config.write_text(
            f"golden_set: {{path: {golden}}}\nmetrics: [ndcg@10]\n"
            f"cache: {{dir: {tmp_path / 'cache'}}}\n"
            "indexes:\n"
            + textwrap.indent(
                "exact: {enabled: false}\nhnsw: {enabled: false}\nhybrid: {enabled: false}\n"
                f"rr: {{type: rerank, of: bm25, k: 8, reranker: {{provider: http, "
                f"base_url: '{server.base_url}', model: rerank-served, max_response_mb: 2, "
                "concurrency: 1}}\n",
                "  ",
            )
        )
        code, out = invoke("run", "-c", str(config), "--no-progress", "--out", str(tmp_path / "o"))
        assert server.state.requests == 1
    line = " ".join(out.split())
    assert code == 3, out
    assert f"rerank request to {server.base_url}/rerank:" in line
    assert "larger than indexes.rr.reranker.max_response_mb (2 MiB)" in line
    cut_short(server.state.sent)


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_compressed_answers_within_the_limit_are_read(tmp_path: Path, encoding: str) -> None:
    """The policy decodes what it reads: a gzip or deflate answer of the normal kind is read as
    before (the grades written, the tokens counted)."""
    with ChatServer(_truth()) as server:
        server.state.encoding = encoding
        code, out = _judge(tmp_path, server, pairs=2, max_response_mb=1)
    assert code == 0, out
    assert [json.loads(line)["grade"] for line in (tmp_path / "labels.jsonl").open()] == [2, 2]


def test_an_answer_of_exactly_the_limit_is_read_one_byte_more_is_not(tmp_path: Path) -> None:
    """The limit is inclusive: 1 MiB is read, 1 MiB and a byte is refused (from its
    Content-Length)."""
    answer = {
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "2"}}],
        "usage": {"prompt_tokens": 300, "completion_tokens": 1},
    }
    data = json.dumps(answer).encode()
    for size, code_expected in ((MIB, 0), (MIB + 1, 3)):
        with ChatServer(_truth()) as server:
            server.state.faults.append(("raw", data + b" " * (size - len(data))))
            code, out = _judge(tmp_path, server, max_response_mb=1)
        assert code == code_expected, out
    assert f"it declares {MIB + 1:,} bytes" in " ".join(out.split())


# --- what a server answers is a server's answer --------------------------------------------------

LONG = "9" * 5000  # more digits than Python converts to an int (4,300)


def test_a_number_of_5000_digits_is_an_unreadable_answer(tmp_path: Path) -> None:
    """A 5,000-digit grade, or a 5,000-digit number anywhere in the JSON, is an answer that
    cannot be read (asked once more, then left unjudged), never an internal error."""
    with ChatServer(_truth()) as server:
        raw = (
            '{"choices": [{"message": {"content": "2"}}], "usage": {"prompt_tokens": '
            + LONG
            + ', "completion_tokens": 1}}'
        ).encode()
        # the first pair's answer, the second's (normal), the first's again
        server.state.faults.extend([("raw", raw), ("ok",), ("raw", raw)])
        code, out = _judge(tmp_path, server, pairs=2)
    assert code == 3, out  # incomplete: the labels got are written, no answer is guessed
    assert "unparseable 1 " in out and "failed 0" in out and "could not be read" in out
    assert "Internal error" not in out
    assert parse_grade(f"##final score: {LONG}", parse_scale_03()) is None
    assert parse_grade("0" * 5000 + "2", parse_scale_03()) is None


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('{"usage": {"total_tokens": ' + LONG + "}}", "a number of too many digits"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ],
)
def test_json_python_cannot_hold_is_malformed_json(text: str, said: str) -> None:
    """What every client reads an answer with: a number past Python's 4,300 digits, or nesting
    past its recursion limit, is a JSONDecodeError (the clients' "cannot be read"), at the
    number's position when there is one; never a bare ValueError or RecursionError."""
    from evalret.engines.openai_api import answer_json

    with pytest.raises(json.JSONDecodeError, match=said) as refused:
        answer_json(text)
    if "digits" in said:
        assert refused.value.pos == text.index("9")


def parse_scale_03() -> Any:
    from evalret.data.judgments import parse_scale

    return parse_scale("0-3")


def test_a_rerank_answer_with_a_5000_digit_score_fails_cleanly(tmp_path: Path) -> None:
    """A rerank answer that Python cannot read as JSON is refused naming the endpoint (exit 3),
    as any answer without a results list is."""
    golden = make_set(tmp_path / "set")
    with RerankServer() as server:
        server.state.faults.append(
            ("raw", ('{"results": [{"index": 0, "relevance_score": ' + LONG + "}]}").encode())
        )
        config = tmp_path / "c.yaml"
        config.write_text(
            f"golden_set: {{path: {golden}}}\nmetrics: [ndcg@10]\ncache: {{enabled: false}}\n"
            "indexes: {exact: {enabled: false}, hnsw: {enabled: false}, hybrid: {enabled: false},"
            f" rr: {{type: rerank, of: bm25, k: 8, reranker: {{provider: http, base_url: "
            f"'{server.base_url}', model: rerank-served, concurrency: 1}}}}}}\n"
        )
        code, out = invoke("run", "-c", str(config), "--no-progress", "--out", str(tmp_path / "o"))
    assert code == 3, out
    assert f"rerank answer from {server.base_url}/rerank holds no results list" in out
    assert "Internal error" not in out


@pytest.mark.parametrize("tokens", [10**15, 10**400, -1])
def test_a_token_count_no_tokenizer_makes_fails_the_request(tmp_path: Path, tokens: int) -> None:
    """usage.prompt_tokens is bounded as the embedding provider bounds its counts (one per byte of
    the prompt and 256 more): 10**15 or 10**400 tokens is no count. That request fails (exit 3,
    naming the endpoint and the bound); the cost comes from the counts that are counts: never
    1.5 billion dollars, never an overflow."""
    with ChatServer(_truth()) as server:
        server.state.faults.append(("usage", tokens, 1))
        code, out = _judge(
            tmp_path,
            server,
            pairs=2,
            max_retries=0,
            price_per_million_input_tokens=1.5,
            price_per_million_output_tokens=1.5,
        )
    line = " ".join(out.split())
    assert code == 3, out
    assert "failed 1" in line and "the answer's usage.prompt_tokens" in line
    assert "is no token count (0 to " in line and "Internal error" not in line
    # the other answer's own counts: (300 + 6) tokens at $1.5 a million
    assert f"cost ${306 * 1.5 / 1e6:.4f} (usage)" in line


def test_a_reasoning_models_hidden_output_is_a_token_count(tmp_path: Path) -> None:
    """A completion that counts far more tokens than its text (a reasoning model's hidden
    output, within HIDDEN_OUTPUT_TOKENS) is a count: priced, not refused."""
    with ChatServer(_truth()) as server:
        server.state.faults.append(("usage", 300, 100_000))
        code, out = _judge(
            tmp_path,
            server,
            price_per_million_input_tokens=1.0,
            price_per_million_output_tokens=10.0,
        )
    assert code == 0, out
    assert f"cost ${(300 * 1.0 + 100_000 * 10.0) / 1e6:.4f} (usage)" in " ".join(out.split())


# --- what happened to the retries ----------------------------------------------------------------


def test_a_huge_retry_after_is_reported_as_not_retried(tmp_path: Path) -> None:
    """A 429 asking to wait 10**9 s is not retried (the client waits 120 s at most): the message
    says so, never "after 3 retries" that did not happen."""
    with ChatServer(_truth()) as server:
        server.state.faults.append(("status", 429, 10**9))
        code, out = _judge(tmp_path, server, max_retries=3)
        assert server.state.requests == 1
    line = " ".join(out.split())
    assert code == 3, out
    assert (
        "HTTP 429: rate limited with no retry: the server asked to wait 1,000,000,000 s "
        "(Retry-After), more than the 120 s a retry waits at most; lower judge.concurrency"
    ) in line
    assert "3 retries" not in line


def test_retries_are_counted_as_taken(tmp_path: Path) -> None:
    """A 503 retried once, then a 503 asking to wait too long: "after 1 retry, then no more";
    429s until the retries are spent: "still rate limited after 2 retries"."""
    with ChatServer(_truth()) as server:
        server.state.faults.extend([("status", 503, 0), ("status", 503, 10**6)])
        code, out = _judge(tmp_path, server, max_retries=3)
        assert server.state.requests == 2
    line = " ".join(out.split())
    assert code == 3, out
    assert (
        "HTTP 503: the server failed after 1 retry, then no more: the server asked to wait "
        "1,000,000 s (Retry-After)"
    ) in line
    with ChatServer(_truth()) as server:
        server.state.faults.extend([("status", 429, 0)] * 3)
        code, out = _judge(tmp_path, server, max_retries=2)
        assert server.state.requests == 3
    line = " ".join(out.split())
    assert "HTTP 429: still rate limited after 2 retries: lower judge.concurrency" in line


def test_the_longest_wait_is_the_clients() -> None:
    """MAX_WAIT_S is the openai client's own limit: a Retry-After beyond it is not retried."""
    from openai._constants import MAX_RETRY_AFTER_DELAY

    from evalret.engines.openai_api import MAX_WAIT_S

    assert MAX_WAIT_S == MAX_RETRY_AFTER_DELAY


# --- settings of an HTTP section -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("section", "key"),
    [
        ("model: {provider: openai, name: m, base_url: '%s'}", "model.base_url"),
        ("judge: {name: j, base_url: '%s'}", "judge.base_url"),
        (
            "indexes: {rr: {type: rerank, of: exact, k: 5, reranker: {provider: http, model: r, "
            "base_url: '%s'}}}",
            "indexes.rr.reranker.base_url",
        ),
    ],
)
@pytest.mark.parametrize("url", ["http:///v1", "http://:8080/v1"])
def test_a_base_url_without_a_host_is_exit_2(
    tmp_path: Path, section: str, key: str, url: str
) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(f"golden_set: {{path: {json.dumps(str(DEMO))}}}\n" + section % url + "\n")
    code, out = invoke("run", "-c", str(config), "--no-progress", "--out", str(tmp_path / "o"))
    assert code == 2, out
    assert f"c.yaml:2: {key}" in out and "no host" in out


@pytest.mark.parametrize(
    ("section", "key"),
    [
        ("model: {provider: openai, name: '%s', api_key_env: null}", "model.name"),
        ("model: {name: '%s'}", "model.name"),  # sentence-transformers: no such path
        ("judge: {name: '%s'}", "judge.name"),
        (
            "indexes: {rr: {type: rerank, of: exact, k: 5, reranker: {provider: http, "
            "base_url: 'http://127.0.0.1:9/v1', model: '%s'}}}",
            "indexes.rr.reranker.model",
        ),
    ],
)
def test_a_5000_character_model_name_is_exit_2(tmp_path: Path, section: str, key: str) -> None:
    """Refused when the config is read, naming the key (it was an internal error: the name
    taken for a path too long for the system)."""
    config = tmp_path / "c.yaml"
    config.write_text(
        f"golden_set: {{path: {json.dumps(str(DEMO))}}}\n" + section % ("x" * 5000) + "\n"
    )
    code, out = invoke("run", "-c", str(config), "--no-progress", "--out", str(tmp_path / "o"))
    assert code == 2, out
    assert f"c.yaml:2: {key}: String should have at most" in out


def test_an_api_model_name_is_never_taken_for_a_local_path(tmp_path: Path) -> None:
    """Only a sentence-transformers name may be a directory beside the config: an API's model
    name that happens to be one is sent as written."""
    (tmp_path / "text-embedding-3-small").mkdir()
    (tmp_path / "mini").mkdir()
    config = tmp_path / "c.yaml"
    config.write_text("model: {provider: openai, name: text-embedding-3-small}\n")
    from evalret.data.config import load_config

    assert load_config(config).model.name == "text-embedding-3-small"
    config.write_text("model: {name: mini}\n")
    assert load_config(config).model.name == str(tmp_path / "mini")


def test_response_limits() -> None:
    """max_response_mb when set; else 64 MiB, or what max_batch vectors of the dimension (4,096
    unset) take as JSON numbers when that is more; the judge's and a reranker's 64 MiB."""
    model = parse_config("model: {provider: openai, name: m}").model
    assert model.response_limit == 64 * MIB  # type: ignore[union-attr]
    wide = parse_config("model: {provider: openai, name: m, max_batch: 4096}").model
    assert wide.response_limit == 4096 * (4096 * 26 + 64)  # type: ignore[union-attr]
    narrow = parse_config(
        "model: {provider: openai, name: m, max_batch: 4096, dimensions: 256}"
    ).model
    assert narrow.response_limit == 64 * MIB  # type: ignore[union-attr]
    set_ = parse_config("model: {provider: openai, name: m, max_response_mb: 8}").model
    assert set_.response_limit == 8 * MIB  # type: ignore[union-attr]
    judge = parse_config("judge: {name: j}").judge
    assert judge is not None and judge.response_limit == 64 * MIB
    with pytest.raises(Exception, match="max_response_mb"):
        parse_config("judge: {name: j, max_response_mb: 0}")
