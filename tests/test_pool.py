"""`evalret pool`: the unjudged top-k of several runs, merged per (query, document)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from evalret.commands.pool import pool_records, pool_unjudged
from evalret.core.ranking import SearchResult
from evalret.data.goldenset import GoldenSet
from helpers import invoke


def _golden() -> GoldenSet:
    return GoldenSet(
        source="mem",
        format="native",
        doc_ids=["a", "b", "c", "d"],
        doc_texts=["text a", "text b", "text c", "text d"],
        query_ids=["q1", "q2"],
        query_texts=["first", "second"],
        qrels={"q1": {"a": 2, "b": 0}, "q2": {"d": 1}},
    )


def test_pool_merges_runs_and_skips_judged_documents() -> None:
    golden = _golden()
    one = SearchResult(ids=np.array([[0, 2, 3], [3, 1, -1]]), scores=np.zeros((2, 3), np.float32))
    two = SearchResult(ids=np.array([[3, 1, 2], [0, 2, 1]]), scores=np.zeros((2, 3), np.float32))
    items = pool_unjudged(golden, {"one": one, "two": two}, k=3)
    got = [(it.query_id, it.doc_id, it.sources) for it in items]
    assert got == [
        # q1 judges a (grade 2) and b (grade 0): both skipped, judged is judged
        ("q1", "d", {"one": 3, "two": 1}),  # two runs each; d's best rank 1 beats c's 2
        ("q1", "c", {"one": 2, "two": 3}),
        ("q2", "b", {"one": 2, "two": 3}),  # two runs, best rank 2
        ("q2", "a", {"two": 1}),
        ("q2", "c", {"two": 2}),
    ]
    assert [it.doc_id for it in pool_unjudged(golden, {"one": one}, k=1)] == []  # a, d judged
    record = pool_records(golden, items[1:2])[0]
    assert record == {
        "query_id": "q1",
        "doc_id": "c",
        "grade": None,
        "query": "first",
        "document": "text c",
        "best_rank": 2,
        "retrieved_by": {"one": 2, "two": 3},
    }


@pytest.mark.model
def test_pool_command_pools_two_configs(tmp_path: Path) -> None:
    """Real model, two configs on the scaffolded example set: one JSONL line per unjudged
    (query, document) of any run's top 3, labelled by config and index."""
    assert invoke("init", str(tmp_path))[0] == 0
    a = tmp_path / "a.yaml"
    a.write_text("golden_set:\n  path: golden_sets/example\n")
    b = tmp_path / "b.yaml"
    b.write_text("golden_set:\n  path: golden_sets/example\nmodel:\n  query_prefix: 'query: '\n")
    out = tmp_path / "pool.jsonl"
    code, output = invoke("pool", str(a), str(b), "-k", "3", "-i", "exact", "-o", str(out))
    assert code == 0, output
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert records and f"{len(records)} unjudged documents" in output
    assert {label for r in records for label in r["retrieved_by"]} <= {"a:exact", "b:exact"}
    for r in records:
        assert r["grade"] is None and r["query"] and r["document"]
        assert 1 <= r["best_rank"] <= 3
    pairs = [(r["query_id"], r["doc_id"]) for r in records]
    assert len(pairs) == len(set(pairs))
    code, output = invoke("pool", str(a), "-i", "ivf", "-o", str(out))
    assert code == 2 and "--index ivf" in output


@pytest.mark.model
def test_pool_configs_that_score_different_queries(tmp_path: Path) -> None:
    """Two configs on one golden set at relevance levels 1 and 3 score different queries (under
    exclude, level 3 keeps only q1). Each run's rows are matched to its own queries: level 1
    first was an IndexError (exit 3), level 3 first pooled q2's documents under another query."""
    gs = tmp_path / "gs"
    gs.mkdir()
    docs = [{"id": f"d{i}", "text": f"topic {i % 3} item {i}"} for i in range(8)]
    queries = [
        {"id": "q1", "text": "topic 0", "relevant": {"d0": 3}},
        {"id": "q2", "text": "topic 1", "relevant": {"d1": 1}},
        {"id": "q3", "text": "topic 2", "relevant": {"d2": 1}},
    ]
    (gs / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (gs / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    for level in (1, 3):
        (tmp_path / f"l{level}.yaml").write_text(
            f"golden_set: {{path: gs}}\nrelevance_level: {level}\n"
        )

    def pooled(*names: str) -> dict[tuple[str, str], dict[str, int]]:
        out = tmp_path / "pool.jsonl"
        args = [str(tmp_path / f"{n}.yaml") for n in names]
        code, output = invoke(
            "pool", *args, "-k", "3", "-i", "exact", "-o", str(out), "--no-progress"
        )
        assert code == 0, output
        records = [json.loads(line) for line in out.read_text().splitlines()]
        return {(r["query_id"], r["doc_id"]): r["retrieved_by"] for r in records}

    alone = {1: pooled("l1"), 3: pooled("l3")}
    assert {q for q, _ in alone[3]} == {"q1"}
    for order in (("l1", "l3"), ("l3", "l1")):
        both = pooled(*order)
        for level in (1, 3):
            label = f"l{level}:exact"
            mine = {key: s[label] for key, s in both.items() if label in s}
            assert mine == {key: s[label] for key, s in alone[level].items()}, order
