"""`evalret golden synth` on a slice of the demo corpus, embedded with the packaged model, against
the loopback chat server (tests/chat_server.py) writing queries and judging them: the draft, its
provenance and manifest, the filters (a planted too-easy answer, a duplicate, an unanswerable
one), seeded reproducibility, the dry run's counts, a run failing halfway then resumed without
paying an answer twice, a template's hash, JSON answers. The pure rules (the allocation over
clusters, the reading of answers) are at the end, in the fast lane."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from chat_server import ChatServer
from conftest import DEMO
from evalret.core.query_shapes import shape_tags
from evalret.pipeline.synth import read_answer
from evalret.pipeline.synth_filters import allocate
from helpers import invoke

N_DOCS = 40  # the first documents of the demo corpus
KEPT = 6  # demo queries the input draft holds (origin: log)
WRITER = "writer-served"
SRC = Path(__file__).resolve().parents[1] / "src"


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def warm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache directory holding the slice's embeddings (embedded once for the module)."""
    root = tmp_path_factory.mktemp("synth-warm")
    corpus = root / "corpus.jsonl"
    corpus.write_text(
        "".join((DEMO / "corpus.jsonl").read_text(encoding="utf-8").splitlines(True)[:N_DOCS])
    )
    cfg = root / "cfg.yaml"
    cfg.write_text(
        f"cache: {{dir: {json.dumps(str(root / 'cache'))}}}\n"
        "judge: {name: w, base_url: 'http://127.0.0.1:9/v1', api_key_env: null}\n"
    )
    code, said = _synth(cfg, corpus, root / "out", 1, "--dry-run")  # the dry run embeds
    assert code == 0, said
    return root / "cache"


@pytest.fixture
def draft(tmp_path: Path) -> Path:
    """A draft of the corpus slice with KEPT demo queries (origin log) and one manifest step."""
    d = tmp_path / "draft"
    d.mkdir()
    lines = (DEMO / "corpus.jsonl").read_text(encoding="utf-8").splitlines(True)[:N_DOCS]
    (d / "corpus.jsonl").write_text("".join(lines), encoding="utf-8")
    queries = [
        {"id": q["id"], "text": q["text"], "relevant": {}, "origin": "log"}
        for q in _lines(DEMO / "queries.jsonl")[:KEPT]
    ]
    (d / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    step = {"command": "golden from-logs", "seed": 0, "inputs": [], "counts": {"drawn": KEPT}}
    manifest = {"format": "evalret-golden-draft/1", "steps": [step]}
    (d / "manifest.json").write_text(json.dumps(manifest))
    return d


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer({}, name=WRITER) as s:
        yield s


def _config(tmp: Path, warm: Path, server: ChatServer, synth: str = "{}") -> Path:
    cache = tmp / "cache"
    if not cache.exists():
        shutil.copytree(warm, cache)
    endpoint = {
        "name": WRITER,
        "base_url": server.base_url,
        "api_key_env": None,
        "max_retries": 0,
    }
    path = tmp / "synth.yaml"
    path.write_text(
        f"cache: {{dir: {json.dumps(str(cache))}}}\njudge: {json.dumps(endpoint)}\nsynth: {synth}\n"
    )
    return path


def _synth(cfg: Path, corpus: Path, out: Path, n: int, *extra: str) -> tuple[int, str]:
    return invoke(
        "golden", "synth", "-c", str(cfg), "--corpus", str(corpus), "--n", str(n),
        "--out", str(out), "--no-progress", *extra,
    )  # fmt: skip


def _doc_texts(corpus: Path) -> dict[str, str]:
    """id -> the text a prompt shows (title and text)."""
    return {d["id"]: f"{d.get('title', '')} {d['text']}".strip() for d in _lines(corpus)}


@pytest.mark.model
def test_a_draft_with_provenance_filters_counted(
    tmp_path: Path, warm: Path, draft: Path, server: ChatServer
) -> None:
    """Every document of the slice asked for: the draft's queries kept first, the synthetic ones
    appended with their provenance, shapes and ids; the planted too-easy answer tagged, the
    planted duplicate and unanswerable answers dropped and counted; the draft validates; the
    judge's answers are in its cache."""
    texts = _doc_texts(draft / "corpus.jsonl")
    ids = list(texts)
    kept = _lines(draft / "queries.jsonl")
    copy = " ".join(texts[ids[3]].split()[:14])
    server.state.written = {
        texts[ids[3]]: copy,  # too easy: the passage's own words
        texts[ids[5]]: kept[2]["text"],  # a duplicate of a draft query
        texts[ids[7]]: "anything at all about nothing",  # the judge says unanswerable
    }
    server.state.unanswerable = {"anything at all about nothing"}
    cfg = _config(tmp_path, warm, server, "{multi_document: 0.1}")
    out = tmp_path / "out"
    code, said = _synth(cfg, draft, out, N_DOCS)
    assert code == 0, said
    lines = _lines(out / "queries.jsonl")
    assert lines[:KEPT] == kept  # kept first, unchanged
    synthetic = lines[KEPT:]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["steps"][0]["command"] == "golden from-logs"
    step = manifest["steps"][1]
    counts = step["counts"]
    assert step["command"] == "golden synth" and step["seed"] == 0
    assert counts["asked"] == N_DOCS and counts["two_document"] == 4
    assert counts["duplicates"] >= 1 and counts["unanswerable"] >= 1 and counts["too_easy"] >= 1
    dropped = counts["unreadable"] + counts["duplicates"] + counts["unanswerable"]
    assert counts["written"] == len(synthetic) == N_DOCS - dropped - counts["too_easy_dropped"]
    written = [q["text"] for q in synthetic]
    assert kept[2]["text"] not in written and "anything at all about nothing" not in written
    easy = [q for q in synthetic if "too-easy" in q.get("tags", [])]
    assert len(easy) == counts["too_easy"] and copy in [q["text"] for q in easy]
    shapes = shape_tags(written, list(texts.values()))
    for i, (q, tags) in enumerate(zip(synthetic, shapes, strict=True)):
        assert q["id"] == f"syn-{i + 1:04d}" and q["relevant"] == {}
        assert q["origin"] == "synthetic"
        gen = q["generated"]
        assert gen["model"] == WRITER and gen["prompt_hash"] == step["prompt_hash"]
        assert gen["style"] in ("keyword", "question", "identifier")
        assert set(gen["source_docs"]) <= set(ids) and len(gen["source_docs"]) in (1, 2)
        assert [t for t in q.get("tags", []) if t.startswith("shape:")] == list(tags)
    roles = {i["role"]: i["sha256"] for i in step["inputs"]}
    assert roles["corpus"] == hashlib.sha256((draft / "corpus.jsonl").read_bytes()).hexdigest()
    assert roles["config"] == hashlib.sha256(cfg.read_bytes()).hexdigest()
    assert "query writer" in said and f"wrote {len(synthetic)} synthetic queries" in said
    code, shown = invoke("validate", str(out), "--json")
    assert code == 0 and json.loads(shown)["errors"] == [], shown
    # the judge's answers are in its own cache: `evalret judge` on the same pairs asks nothing
    pool = tmp_path / "pool.jsonl"
    pairs = [
        {"query_id": q["id"], "doc_id": d, "query": q["text"], "document": texts[d]}
        for q in synthetic
        for d in q["generated"]["source_docs"]
    ]
    pool.write_text("".join(json.dumps(p) + "\n" for p in pairs))
    labels = str(tmp_path / "labels.jsonl")
    code, shown = invoke("judge", str(pool), "-c", str(cfg), "--dry-run", "--out", labels)
    assert code == 0 and f"{len(pairs)} answers cached, 0 to ask" in shown, shown


@pytest.mark.model
def test_seeded_rerun_pays_nothing_and_dry_run_counts(
    tmp_path: Path, warm: Path, server: ChatServer
) -> None:
    """The dry run counts the requests and sends nothing; a run sends them; a second run with
    the same seed writes the same draft and sends nothing; another seed draws other documents;
    the dry run then counts nothing to send."""
    corpus = tmp_path / "corpus.jsonl"
    shutil.copyfile(DEMO / "corpus.jsonl", corpus)
    lines = corpus.read_text(encoding="utf-8").splitlines(True)[:N_DOCS]
    corpus.write_text("".join(lines), encoding="utf-8")
    cfg = _config(tmp_path, warm, server, "{multi_document: 3}")
    code, said = _synth(cfg, corpus, tmp_path / "dry", 12, "--dry-run")
    assert code == 0, said
    assert server.state.requests == 0 and not (tmp_path / "dry").exists()
    assert "generation: 12 request(s) to send, 0 answer(s) cached" in said
    assert "judge checks: at most 15 request(s) to send" in said  # 3 two-document questions
    code, said = _synth(cfg, corpus, tmp_path / "a", 12)
    assert code == 0, said
    sent = server.state.requests
    assert server.state.generations == 12 and sent >= 12
    code, said = _synth(cfg, corpus, tmp_path / "b", 12)
    assert code == 0, said
    assert server.state.requests == sent  # nothing paid twice
    assert "generation: 0 request(s) made, 12 answer(s) cached" in said
    a, b = (_lines(tmp_path / d / "queries.jsonl") for d in ("a", "b"))
    assert a == b
    assert (tmp_path / "a" / "manifest.json").read_text() == (
        tmp_path / "b" / "manifest.json"
    ).read_text()
    code, said = _synth(cfg, corpus, tmp_path / "c", 12, "--seed", "7")
    assert code == 0, said
    other = _lines(tmp_path / "c" / "queries.jsonl")
    assert {tuple(q["generated"]["source_docs"]) for q in other} != {
        tuple(q["generated"]["source_docs"]) for q in a
    }
    code, said = _synth(cfg, corpus, tmp_path / "dry", 12, "--dry-run")
    assert "generation: 0 request(s) to send, 12 answer(s) cached" in said


@pytest.mark.model
def test_a_run_failing_halfway_resumes_without_paying_twice(
    tmp_path: Path, warm: Path, draft: Path, server: ChatServer
) -> None:
    """The endpoint fails for good after 7 answers: exit 3, nothing written, the answers kept;
    the rerun asks only the rest: every document's query is paid for once."""
    server.state.faults.extend([("ok",)] * 7 + [("status", 503, 0)] * 1000)
    cfg = _config(tmp_path, warm, server)
    out = tmp_path / "out"
    code, said = _synth(cfg, draft, out, 16)
    assert code == 3, said
    assert "failed for good" in said and "a rerun asks only the rest" in said
    assert not out.exists()
    assert server.state.generations == 7
    server.state.faults.clear()
    code, said = _synth(cfg, draft, out, 16)
    assert code == 0, said
    assert server.state.generations == 16  # each document's answer paid for once
    assert "generation: 9 request(s) made, 7 answer(s) cached" in said


@pytest.mark.model
def test_a_killed_process_keeps_its_answers(
    tmp_path: Path, warm: Path, draft: Path, server: ChatServer
) -> None:
    """A run killed (SIGKILL) while answers arrive loses none of those it got: the rerun pays
    only for the rest."""
    cfg = _config(tmp_path, warm, server, "{check_answerable: false}")
    server.state.delay = 0.5  # each generation answer takes half a second
    cmd = [
        sys.executable, "-m", "evalret", "golden", "synth", "-c", str(cfg), "--corpus",
        str(draft), "--n", "20", "--out", str(tmp_path / "out"), "--no-progress",
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while server.state.generations < 6 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.state.generations >= 6, "the run did not reach the server"
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    with closing(sqlite3.connect(tmp_path / "cache" / "judgments" / "synth.sqlite")) as db:
        kept = db.execute("SELECT count(*) FROM generations").fetchone()[0]
    assert 0 < kept < 20 and not (tmp_path / "out").exists()
    server.state.delay = 0.0
    code, said = _synth(cfg, draft, tmp_path / "out", 20)
    assert code == 0, said
    # every answer the killed run got is kept: the rerun asks for the others only
    assert f"generation: {20 - kept} request(s) made, {kept} answer(s) cached" in said


@pytest.mark.model
def test_a_template_and_json_answers(
    tmp_path: Path, warm: Path, draft: Path, server: ChatServer
) -> None:
    """synth.template replaces the prompt (its sha256 recorded, its hash on every query); with
    answer_format json the answers are read from a JSON object's queries list."""
    template = tmp_path / "prompt.txt"
    template.write_text(
        'Write a {style} query for this text.\n\n{document}\n\nReply as JSON: {"query": "..."}\n',
        encoding="utf-8",
    )
    server.state.json_list = True
    synth = f"{{template: {json.dumps(str(template))}, answer_format: json}}"
    cfg = _config(tmp_path, warm, server, synth)
    out = tmp_path / "out"
    code, said = _synth(cfg, draft, out, 8)
    assert code == 0, said
    step = json.loads((out / "manifest.json").read_text())["steps"][-1]
    digest = hashlib.sha256(template.read_bytes()).hexdigest()
    assert {"role": "template", "path": str(template), "sha256": digest} in step["inputs"]
    assert step["prompt_hash"] == digest[:12]
    synthetic = _lines(out / "queries.jsonl")[KEPT:]
    assert synthetic and step["counts"]["unreadable"] == 0
    assert all(q["generated"]["prompt_hash"] == digest[:12] for q in synthetic)
    assert all(not q["text"].startswith(("{", "`")) for q in synthetic)
    prompt = server.state.bodies[0]["messages"][-1]["content"]
    assert prompt.startswith("Write a ") and "Passage: " in prompt


@pytest.mark.model
def test_synth_chat_is_its_own_endpoint(
    tmp_path: Path, warm: Path, draft: Path, server: ChatServer
) -> None:
    """With synth.chat, the queries are written there (its model in their provenance) and only
    the judge's checks go to the judge: section's endpoint."""
    with ChatServer({}, name="other-writer") as writer:
        server.state.generated = writer.state.generated  # the judge knows what was written
        chat = {"name": "other-writer", "base_url": writer.base_url, "api_key_env": None}
        cfg = _config(tmp_path, warm, server, f"{{chat: {json.dumps(chat)}}}")
        code, said = _synth(cfg, draft, tmp_path / "out", 6)
        assert code == 0, said
        assert writer.state.generations == writer.state.requests == 6
    assert server.state.generations == 0 and server.state.requests >= 6  # the judge's checks
    synthetic = _lines(tmp_path / "out" / "queries.jsonl")[KEPT:]
    assert synthetic and {q["generated"]["model"] for q in synthetic} == {"other-writer"}


def test_the_synth_section_is_strict(tmp_path: Path) -> None:
    """An unknown key, a style of no weight at all, a count of two-document questions that is
    no whole number: each refused (exit 2) at its key."""
    cases = {
        "{stlyes: {keyword: 1}}": "stlyes",
        "{styles: {keyword: 0}}": "styles",
        "{multi_document: 1.5}": "multi_document",
        "{styles: {shouting: 1}}": "shouting",
    }
    for synth, key in cases.items():
        cfg = tmp_path / "bad.yaml"
        cfg.write_text(f"synth: {synth}\n")
        code, said = _synth(cfg, DEMO, tmp_path / "out", 5, "--dry-run")
        assert code == 2 and key in said, (synth, said)


def test_a_dry_run_sends_no_text_to_an_embedding_api(tmp_path: Path) -> None:
    """With an API model (nothing listens at its address) and an empty cache, the dry run draws
    no documents, says its figures are estimated, and sends nothing: exit 0, nothing written."""
    nowhere = "'http://127.0.0.1:9/v1'"
    cfg = tmp_path / "api.yaml"
    cfg.write_text(
        f"cache: {{dir: {json.dumps(str(tmp_path / 'cache'))}}}\n"
        f"model: {{provider: openai, name: m, base_url: {nowhere}, api_key_env: null}}\n"
        f"judge: {{name: w, base_url: {nowhere}, api_key_env: null}}\n"
    )
    code, said = _synth(cfg, DEMO, tmp_path / "out", 5, "--dry-run")
    assert code == 0, said
    assert "estimated: the corpus is not in the embedding cache" in said
    assert "generation: 5 request(s) to send, 0 answer(s) cached" in said
    assert "judge checks: at most 5 request(s) to send" in said
    assert not (tmp_path / "out").exists()


# --- the pure rules (fast lane) ----------------------------------------------------------------


def test_allocation_gives_every_cluster_one_then_shares() -> None:
    """Clusters of 10, 4 and 1 documents, 7 drawn: one each, then the 4 left over the two with
    room, by size (10:4 of 14 -> 2.86 and 1.14: 3 and 1 by largest remainder), or equally
    (2 and 2)."""
    assert allocate([10, 4, 1], 7, "proportional") == [4, 2, 1]
    assert allocate([10, 4, 1], 7, "equal") == [3, 3, 1]
    assert allocate([10, 5, 1], 2, "proportional") == [1, 1, 0]  # the largest first
    assert allocate([2, 1], 10, "proportional") == [2, 1]  # never more than there is
    assert sum(allocate([7, 7, 7, 7], 13, "proportional")) == 13


@pytest.mark.parametrize(
    ("answer", "fmt", "query"),
    [
        ("\n\n  reset the api token  \nbecause...", "line", "reset the api token"),
        ('"loom install on linux"', "line", "loom install on linux"),
        ("Query: sso team plan", "line", "sso team plan"),
        ("   \n", "line", None),
        ('{"query": "rotate keys"}', "json", "rotate keys"),
        ('```json\n{"queries": ["", "first one", "second"]}\n```', "json", "first one"),
        ("rotate keys", "json", None),
        ('{"q": "x"}', "json", None),
        (None, "line", None),
    ],
)
def test_answers_are_read_strictly(answer: str | None, fmt: str, query: str | None) -> None:
    """The first non-empty line, or a JSON object's query string or queries list; else none."""
    assert read_answer(answer, fmt) == query


@pytest.mark.model
def test_few_shot_from_the_log_never_personal(
    tmp_path: Path, warm: Path, draft: Path, server: ChatServer
) -> None:
    """--log's queries are the few-shot examples (a seeded handful, the same in every prompt),
    except those holding personal data, which never reach a prompt; the log's sha256 is in the
    manifest; without --log the draft's log queries serve."""
    log = tmp_path / "log.txt"
    personal = "reset password for jane.doe@example.com"
    log.write_text(f"loom sync dry run\nspool quota exceeded\n{personal}\nLMW-4031\n")
    cfg = _config(tmp_path, warm, server, "{examples: 10, check_answerable: false}")
    code, said = _synth(cfg, draft, tmp_path / "out", 6, "--log", str(log))
    assert code == 0, said
    prompts = [b["messages"][-1]["content"] for b in server.state.bodies]
    assert len(prompts) == 6
    for prompt in prompts:
        assert "- loom sync dry run\n" in prompt and "- LMW-4031\n" in prompt
        assert "jane.doe" not in prompt
    assert "1 log quer(ies) holding personal data left out" in said
    step = json.loads((tmp_path / "out" / "manifest.json").read_text())["steps"][-1]
    digest = hashlib.sha256(log.read_bytes()).hexdigest()
    assert {"role": "log", "path": str(log), "sha256": digest} in step["inputs"]
    assert step["counts"]["examples"] == 3 and step["counts"]["examples_dropped_pii"] == 1
    code, said = _synth(cfg, draft, tmp_path / "out2", 6)
    assert code == 0, said
    kept = [q["text"] for q in _lines(draft / "queries.jsonl")]
    prompt = server.state.bodies[-1]["messages"][-1]["content"]
    assert all(f"- {text}\n" in prompt for text in kept)  # KEPT < synth.examples
