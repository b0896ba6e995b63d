"""`evalret golden judge` on a draft made from the demo (its corpus, some of its query texts with
no judgment, a few synthetic ones naming their source document, one with a person's grade)
against the loopback chat server (tests/chat_server.py) whose truth is the demo's qrels: the
grades written, the pool, the manifest, resuming after a failure, the dry run, the kept grade.
The BM25-only pool embeds nothing (the fast lane); the full pool (dense, BM25, hybrid) and the
run on the set written are model-marked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from chat_server import ChatServer
from conftest import DEMO
from evalret.core.relevance import is_relevant
from evalret.data.config import GoldenSetConfig
from evalret.data.goldenset import GoldenSet, load_golden_set
from evalret.data.goldenset.draft import (
    DraftQuery,
    read_corpus,
    read_draft,
    read_manifest,
    write_draft,
)
from helpers import invoke

N_LOG, N_SYNTH = 12, 6  # the draft's queries: the demo's first 12 as logged, the next 6 synthetic
HUMAN_QUERY = 2  # the draft's third query carries a person's grade of one document


@pytest.fixture(scope="module")
def demo() -> GoldenSet:
    return load_golden_set(GoldenSetConfig(path=DEMO))


def truth_of(golden: GoldenSet) -> dict[tuple[str, str], int]:
    """(query text, document text) -> grade of every judged pair of the demo."""
    texts = dict(zip(golden.query_ids, golden.query_texts, strict=True))
    return {
        (texts[q], golden.doc_texts[golden.doc_index[d]]): g
        for q in golden.query_ids
        for d, g in golden.qrels[q].items()
    }


def _human(golden: GoldenSet) -> tuple[str, str, int]:
    """The person's grade in the draft: a relevant document of the third query, graded 1 below
    its truth (so a judge's grade would differ)."""
    q = golden.query_ids[HUMAN_QUERY]
    d, g = max(golden.qrels[q].items(), key=lambda item: (item[1], item[0]))
    return q, d, g - 1


def make_draft(path: Path, golden: GoldenSet, n_log: int = N_LOG, n_synth: int = N_SYNTH) -> Path:
    """A draft: the demo's corpus and its first queries' texts with no judgment (the synthetic
    ones name their most relevant document as the source), one with a person's grade."""
    hq, hd, hg = _human(golden)
    queries = []
    for i, (q, text) in enumerate(zip(golden.query_ids, golden.query_texts, strict=True)):
        if i >= n_log + n_synth:
            break
        relevant, sources = ({hd: hg}, {hd: "human:ann"}) if q == hq else ({}, {})
        if i < n_log:
            queries.append(DraftQuery(q, text, origin="log", relevant=relevant, sources=sources))
            continue
        best = max(golden.qrels[q].items(), key=lambda item: (item[1], item[0]))[0]
        generated = {"model": "writer", "prompt_hash": "0123456789ab", "source_docs": [best]}
        queries.append(DraftQuery(q, text, origin="synthetic", generated=generated))
    step = {"command": "golden from-logs", "seed": 0, "inputs": [], "counts": {"drawn": 1}}
    write_draft(path, read_corpus(DEMO), queries, [step])
    return path


def judge_config(tmp_path: Path, server: ChatServer, cache: bool = True, **judge: Any) -> Path:
    settings = {
        "name": server.state.name,
        "base_url": server.base_url,
        "api_key_env": None,
        "max_retries": 2,
        **judge,
    }
    path = tmp_path / "judge.yaml"
    cache_line = f"cache: {{dir: {json.dumps(str(tmp_path / 'cache'))}}}\n" if cache else ""
    path.write_text(
        f"golden_set: {{path: {json.dumps(str(DEMO))}}}\n"
        "indexes: {hnsw: {threads: 1}}\n"
        f"output: {{dir: {json.dumps(str(tmp_path / 'reports'))}}}\n"
        f"{cache_line}"
        f"judge: {json.dumps(settings)}\n"
    )
    return path


def golden_judge(draft: Path, config: Path, out: Path, *more: str) -> tuple[int, str]:
    return invoke(
        "golden", "judge", str(draft), "-c", str(config), "--out", str(out), "--no-progress", *more
    )


def check_written(
    out: Path, golden: GoldenSet, server: ChatServer, draft: Path, calibrated: bool = False
) -> None:
    """Every judge grade in ``out`` is the server's truth; the person's grade is kept (and not
    sent, but to calibrate); the sources name the judge; every synthetic query's source document
    is graded."""
    hq, hd, hg = _human(golden)
    truth = truth_of(golden)
    docs = {d.id: d.embedded for d in read_corpus(out)}
    queries = read_draft(out)
    assert [q.id for q in queries] == [q.id for q in read_draft(draft)]
    for q in queries:
        assert q.relevant, q.id
        for d, g in q.relevant.items():
            if (q.id, d) == (hq, hd):
                assert g == hg and q.sources[d] == "human:ann"
                continue
            assert g == truth.get((q.text, docs[d]), 0), (q.id, d)
            assert q.sources[d].startswith(f"llm:{server.state.name}@")
        for d in (q.generated or {}).get("source_docs", []):
            assert d in q.relevant
    asked = {(query, doc) for query, doc in server.state.answered}
    human_pair = (golden.query_texts[HUMAN_QUERY], golden.doc_texts[golden.doc_index[hd]])
    assert calibrated or human_pair not in asked  # kept, never sent


def test_a_bm25_pool_is_graded_as_the_server_knows_and_written_whole(
    tmp_path: Path, demo: GoldenSet
) -> None:
    """BM25's top 10 and the source documents, graded by the judge: the grades are the truth on
    the pooled pairs (0 included), several relevant documents per query are found, the
    manifest keeps the draft's step and adds this one, and `evalret validate` passes."""
    draft = make_draft(tmp_path / "draft", demo)
    out = tmp_path / "golden"
    with ChatServer(truth_of(demo)) as server:
        config = judge_config(tmp_path, server)
        code, text = golden_judge(draft, config, out, "--retrievers", "bm25")
        assert code == 0, text
        check_written(out, demo, server, draft)
        n_sent = server.state.requests
    queries = read_draft(out)
    n_pairs = sum(len(q.relevant) for q in queries)
    assert n_sent == n_pairs - 1  # every pooled pair once, but the person's
    relevant = [sum(is_relevant(g, 1) for g in q.relevant.values()) for q in queries]
    assert sum(r > 1 for r in relevant) > len(queries) // 2  # the source is not the only one
    steps = read_manifest(out)
    assert [s["command"] for s in steps] == ["golden from-logs", "golden judge"]
    step = steps[-1]
    assert step["retrievers"] == ["bm25"] and step["k"] == 10
    counts = step["counts"]
    assert counts["pooled"]["bm25"] == 10 * len(queries) and counts["pooled"]["all"] == n_pairs
    assert counts["sent"] == n_sent and counts["cached"] == 0 and counts["kept"] == 1
    assert counts["relevant"]["synthetic"]["queries"] == N_SYNTH
    assert counts["relevant"]["without_relevant"] == sum(r == 0 for r in relevant)
    assert {i["role"] for i in step["inputs"]} >= {"the draft's queries (DRAFT)"}
    assert all(len(i["sha256"]) == 64 for i in step["inputs"])
    assert not any(q.text in json.dumps(steps) for q in queries)  # counts only, never a text
    assert "pool of 18 queries" in text and f"wrote the golden set {out}" in text
    code, text = invoke("validate", str(out))
    assert code == 0, text


def test_a_rerun_after_a_failure_pays_no_pair_twice(tmp_path: Path, demo: GoldenSet) -> None:
    """A request refused halfway (401) stops the run: exit 3, no golden set; the answers got are
    cached, the dry run says what is left, and the rerun sends only that."""
    draft = make_draft(tmp_path / "draft", demo)
    out = tmp_path / "golden"
    with ChatServer(truth_of(demo)) as server:
        config = judge_config(tmp_path, server, concurrency=1)
        server.state.faults.extend([("ok",)] * 40 + [("status", 401, 0)])
        code, text = golden_judge(draft, config, out, "--retrievers", "bm25")
        assert code == 3 and "HTTP 401" in text, text
        assert not out.exists() and not list(tmp_path.glob(".golden.*"))
        assert server.state.requests == 41
        code, dry = golden_judge(draft, config, out, "--retrievers", "bm25", "--dry-run")
        assert code == 0 and server.state.requests == 41 and not out.exists(), dry
        assert "40 answers cached" in dry and "dry run: nothing was sent" in dry
        code, text = golden_judge(draft, config, out, "--retrievers", "bm25")
        assert code == 0, text
        n_pairs = sum(len(q.relevant) for q in read_draft(out)) - 1  # the person's kept
        assert server.state.requests == 41 + n_pairs - 40
        assert all(len(v) == 1 for v in server.state.answered.values())  # none paid twice
        check_written(out, demo, server, draft)
    assert read_manifest(out)[-1]["counts"]["cached"] == 40


def test_a_failed_request_leaves_the_set_unwritten(tmp_path: Path, demo: GoldenSet) -> None:
    """A request that fails for good (HTTP 400) is counted, the rest judged and cached: exit 3,
    no golden set (no verdict from part of the pool); the rerun asks that pair alone."""
    draft = make_draft(tmp_path / "draft", demo, 3, 1)
    out = tmp_path / "golden"
    with ChatServer(truth_of(demo)) as server:
        config = judge_config(tmp_path, server, concurrency=1)
        server.state.faults.append(("status", 400, 0))
        code, text = golden_judge(draft, config, out, "--retrievers", "bm25")
        assert code == 3 and "failed 1" in text and "nothing written" in text, text
        assert not out.exists()
        first = server.state.requests
        code, text = golden_judge(draft, config, out, "--retrievers", "bm25")
        assert code == 0 and server.state.requests == first + 1, text
        check_written(out, demo, server, draft)


def test_the_dry_run_sends_nothing_and_writes_nothing(tmp_path: Path, demo: GoldenSet) -> None:
    draft = make_draft(tmp_path / "draft", demo, 4, 2)
    out = tmp_path / "golden"
    with ChatServer(truth_of(demo)) as server:
        config = judge_config(
            tmp_path,
            server,
            price_per_million_input_tokens=1.0,
            price_per_million_output_tokens=2.0,
        )
        code, text = golden_judge(draft, config, out, "--retrievers", "bm25", "--dry-run")
        assert code == 0, text
        assert server.state.requests == 0 and not out.exists()
        assert "0 answers cached" in text and "cost $" in text and "to ask in" in text


def test_refusals_write_nothing(tmp_path: Path, demo: GoldenSet) -> None:
    """An output that is not new, the draft as the output, an unknown retriever, a config
    without a judge: exit 2 before anything is sent."""
    draft = make_draft(tmp_path / "draft", demo, 2, 1)
    with ChatServer(truth_of(demo)) as server:
        config = judge_config(tmp_path, server)
        code, text = golden_judge(draft, config, draft, "--retrievers", "bm25")
        assert code == 2 and "draft" in text.lower(), text
        full = tmp_path / "full"
        full.mkdir()
        (full / "x").write_text("x")
        code, text = golden_judge(draft, config, full, "--retrievers", "bm25")
        assert code == 2 and "not an empty directory" in text, text
        code, text = golden_judge(draft, config, tmp_path / "g", "--retrievers", "bm25,colbert")
        assert code == 2 and "--retrievers" in text, text
        bare = tmp_path / "bare.yaml"
        bare.write_text(f"cache: {{dir: {json.dumps(str(tmp_path / 'cache'))}}}\n")
        code, text = golden_judge(draft, bare, tmp_path / "g", "--retrievers", "bm25")
        assert code == 2 and "judge: section" in text, text
        assert server.state.requests == 0
    assert not (tmp_path / "g").exists()


@pytest.mark.model
def test_the_full_pool_builds_a_set_that_gates_a_cut_dimension(
    tmp_path: Path, demo: GoldenSet
) -> None:
    """Dense, BM25 and hybrid pooled on 60 demo queries: source documents always pooled, the
    grades the truth, more than one relevant document per query; the set validates, runs, and
    gates `--dimension 32` against its baseline (exit 1)."""
    draft = make_draft(tmp_path / "draft", demo, 40, 20)
    out = tmp_path / "golden"
    with ChatServer(truth_of(demo)) as server:
        config = judge_config(tmp_path, server, cache=False)  # the session's embedding cache
        code, text = golden_judge(draft, config, out)
        assert code == 0, text
        check_written(out, demo, server, draft)
    step = read_manifest(out)[-1]
    pooled = step["counts"]["pooled"]
    assert {"dense", "bm25", "hybrid", "source"} <= set(pooled) and pooled["source"] == 20
    assert pooled["all"] > pooled["dense"] >= 10 * 60 - 1
    assert step["counts"]["relevant"]["per_query_mean"] > 1
    assert step["counts"]["relevant"]["synthetic"]["beyond_source"] > 0
    code, text = invoke("validate", str(out))
    assert code == 0, text
    baseline = tmp_path / "baseline.json"
    run = ["run", "-c", str(config), "--set", f"golden_set.path={out}", "--no-progress"]
    code, text = invoke(*run, "--out", str(tmp_path / "r0"), "--save-baseline", str(baseline))
    assert code == 0, text
    code, text = invoke(*run, "--out", str(tmp_path / "r1"), "--baseline", str(baseline))
    assert code == 0, text
    code, text = invoke(
        *run, "--out", str(tmp_path / "r2"), "--baseline", str(baseline), "--dimension", "32"
    )
    assert code == 1, text


def test_calibration_below_min_kappa_writes_nothing(tmp_path: Path, demo: GoldenSet) -> None:
    """--calibrate asks the judge about the humans' pairs too (as `evalret judge` does): a judge
    that agrees writes the set; one below judge.min_kappa is refused (exit 1, nothing written)."""
    draft = make_draft(tmp_path / "draft", demo, 3, 1)
    out = tmp_path / "golden"
    with ChatServer(truth_of(demo), error_rate=0.6, seed=3) as server:
        config = judge_config(tmp_path, server, min_kappa=0.9)
        more = ("--retrievers", "bm25", "--k", "3")
        code, text = golden_judge(draft, config, out, *more)
        assert code == 2 and "--calibrate" in text and server.state.requests == 0, text
        code, text = golden_judge(draft, config, out, *more, "--calibrate", str(DEMO))
        assert code == 1 and "below judge.min_kappa 0.9" in text, text
        assert "nothing written" in text and not out.exists()
    with ChatServer(truth_of(demo), name="judge-true") as server:
        config = judge_config(tmp_path, server, min_kappa=0.9)
        code, text = golden_judge(draft, config, out, *more, "--calibrate", str(DEMO))
        assert code == 0 and "Cohen's kappa 1.0000" in text, text
        check_written(out, demo, server, draft, calibrated=True)
