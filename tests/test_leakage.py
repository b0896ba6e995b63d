"""`evalret leakage`: planted exact copies and paraphrases of demo queries are found with the
packaged model, a clean training file gives none, --max-fraction gates (exit 1), bad training
lines are named (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from conftest import DEMO, REPO
from evalret.cli import app
from evalret.core.leakage import TrainQuery, find_leaks
from evalret.data.config import SentenceTransformersModelConfig as ModelConfig
from evalret.data.training import read_training_queries
from evalret.engines.cache import CachedEmbedder, default_cache_dir
from evalret.engines.st_embedder import SentenceTransformerEmbedder
from evalret.errors import InputError

runner = CliRunner()
DEFAULT = str(REPO / "configs" / "default.yaml")

# (golden query id, training text): exact copies up to case, punctuation and apostrophes
EXACT = [
    ("q-108", "How do I install the command-line tool on my Mac?"),
    ("q-111", "i forgot my password and cant get into my account"),
    ("q-229", "Discount for paying yearly!"),
]
NEAR_TEXT = [("q-217", "how long are the pipeline logs kept")]  # one added word, Jaccard 0.88
# hand-written paraphrases; all-MiniLM-L6-v2 puts each at cosine 0.92-0.95 from its original
PARAPHRASES = [
    ("q-135", "make a read-only key for a script that cannot delete anything"),
    ("q-207", "trigger a pipeline from python and wait for it to finish"),
    ("q-210", "disable sending usage statistics from the tool"),
    ("q-171", "uploading millions of small files is very slow"),
    ("q-189", "restrict access to our office network only"),
    ("q-138", "I am an admin yet I keep getting access denied"),
]
# no copies: off-topic, or on-topic with another intent (nearest demo query at cosine <= 0.63);
# LMW-3107 sits at cosine 0.98 from LMW-3106 but names another error code
CLEAN = [
    "what is the best pizza in naples",
    "recipe for banana bread",
    "who won the football world cup in 2018",
    "cancel my subscription",
    "export all audit logs to a csv",
    "change the billing currency to euros",
    "invite a new employee to the workspace",
    "make a bucket public",
    "LMW-3107",
]


def leakage_json(*args: str) -> tuple[int, dict[str, Any]]:
    result = runner.invoke(app, ["leakage", *args, "--json", "--no-progress"])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


@pytest.fixture(scope="module")
def leaky_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A JSONL training file: clean queries with the planted copies spread among them."""
    path = tmp_path_factory.mktemp("leakage") / "train.jsonl"
    planted = [t for _, t in EXACT + NEAR_TEXT + PARAPHRASES]
    lines: list[str] = []
    for k, text in enumerate(planted):
        lines.append(json.dumps({"text": CLEAN[k % len(CLEAN)], "source": "log"}))
        lines.append(json.dumps({"query": text} if k % 2 else {"text": text}))
        lines.append("")  # blank lines are skipped, line numbers still count
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def leaky_run(leaky_file: Path) -> tuple[int, dict[str, Any]]:
    """One real run with the packaged model: the leaky file against the demo set."""
    return leakage_json("--train", str(leaky_file), DEFAULT, "--max-fraction", "0.02")


@pytest.mark.model
def test_planted_copies_and_paraphrases_are_found(leaky_run: tuple[int, dict[str, Any]]) -> None:
    """Every planted exact copy, near-text copy and paraphrase is found with its kind and line;
    no clean line is paired; 10 of 244 queries leak, above --max-fraction 0.02: exit 1."""
    code, out = leaky_run
    found = {(p["query_id"], p["train_text"]): p for p in out["pairs"]}
    expected = {
        **{pair: "exact" for pair in EXACT},
        **{pair: "near-text" for pair in NEAR_TEXT},
        **{pair: "embedding" for pair in PARAPHRASES},
    }
    assert {k: p["kind"] for k, p in found.items()} == expected
    for k, p in found.items():
        planted_index = list(expected).index(k)
        assert p["train_line"] == 3 * planted_index + 2  # its line in the file
        assert p["cosine"] is not None
        if p["kind"] == "embedding":
            assert p["cosine"] >= 0.85 and p["text_similarity"] < 0.8
    assert out["n_train_queries"] == 2 * len(expected)
    assert out["n_leaked_queries"] == len(expected) == 10
    assert out["fraction"] == pytest.approx(10 / 244)
    assert out["pairs_by_kind"] == {"exact": 3, "near-text": 1, "embedding": 6}
    assert code == 1 and out["failed"] and out["max_fraction"] == 0.02
    by_slice = {s["name"]: s for s in out["slices"]}
    assert by_slice["all"]["n_leaked"] == 10
    assert by_slice["exact-match"]["n_leaked"] == 0  # every planted query is semantic
    assert by_slice["semantic"]["n_leaked"] == 10


@pytest.mark.model
def test_identifier_guard_drops_another_error_code() -> None:
    """LMW-3107 is not paired with LMW-3106 although the model puts them above the threshold."""
    embedder = CachedEmbedder(SentenceTransformerEmbedder(ModelConfig()), default_cache_dir())
    a, b = embedder.embed(["LMW-3107", "LMW-3106"], "query")
    assert float(a @ b) >= 0.85

    def embed(texts: Any) -> np.ndarray:
        return embedder.embed(list(texts), "query")

    pairs = find_leaks(["q-x"], ["LMW-3106"], [TrainQuery(1, "LMW-3107")], embed)
    assert pairs == []
    pairs = find_leaks(["q-x"], ["LMW-3106"], [TrainQuery(1, "lmw 3106")], embed)
    assert [p.kind for p in pairs] == ["exact"]


@pytest.mark.model
def test_clean_file_finds_nothing_and_exits_0(tmp_path: Path) -> None:
    """A plain-text training file of clean queries: no pair, fraction 0, exit 0 with a limit."""
    train = tmp_path / "clean.txt"
    train.write_text("\n".join(CLEAN) + "\n")
    code, out = leakage_json("--train", str(train), DEFAULT, "--max-fraction", "0")
    assert code == 0 and out["pairs"] == [] and out["fraction"] == 0 and not out["failed"]
    assert out["n_train_queries"] == len(CLEAN)


def test_text_only_check_and_config_limit(tmp_path: Path, leaky_file: Path) -> None:
    """--no-embedding loads no model and finds the text copies only; leakage.max_fraction in a
    config gates like the option; --out writes the JSON."""
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(f"golden_set:\n  path: {DEMO}\nleakage:\n  max_fraction: 0.01\n")
    out_file = tmp_path / "leak.json"
    result = runner.invoke(
        app,
        ["leakage", "--train", str(leaky_file), str(cfg), "--no-embedding", "-o", str(out_file)],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 1, result.output  # 4 of 244 = 1.6% > 1%
    assert "LEAKAGE FAILED: 4 of 244 golden queries (1.64%)" in result.output
    out = json.loads(out_file.read_text())
    assert out["pairs_by_kind"] == {"exact": 3, "near-text": 1, "embedding": 0}
    assert all(p["cosine"] is None for p in out["pairs"])
    assert out["settings"]["cosine_threshold"] is None

    code, out = leakage_json(
        "--train", str(leaky_file), str(cfg), "--no-embedding", "--max-fraction", "0.05"
    )
    assert code == 0 and out["max_fraction"] == 0.05


def test_bad_training_lines_exit_2_with_their_lines(tmp_path: Path) -> None:
    """Invalid JSON, a non-object, a missing or non-string text, an empty text, bad UTF-8: each
    named with file:line; the command exits 2."""
    train = tmp_path / "train.jsonl"
    train.write_bytes(
        b'{"text": "fine"}\n'
        b'{"text": "unterminated}\n'
        b"[1, 2]\n"
        b'{"question": "wrong field"}\n'
        b'{"text": 42}\n'
        b"\n"
        b'{"query": "  "}\n'
        b'{"text": "\xff"}\n'
    )
    with pytest.raises(InputError) as e:
        read_training_queries(train)
    assert [(p.line, p.message.split(" (")[0].split(":")[0]) for p in e.value.problems] == [
        (2, "invalid JSON"),
        (3, "each line must be a JSON object"),
        (4, "needs a 'text' or 'query' string"),
        (5, "needs a 'text' or 'query' string"),
        (7, "empty query"),
        (8, "not valid UTF-8"),
    ]
    result = runner.invoke(app, ["leakage", "--train", str(train), "--no-embedding"])
    assert result.exit_code == 2
    assert f"{train}:2: invalid JSON" in result.output.replace("\n", "")


def test_text_format_detection(tmp_path: Path) -> None:
    """Plain text keeps each non-blank line (stripped) with its number; a .txt whose first line
    is a JSON object reads as JSON Lines; --train-format forces either."""
    plain = tmp_path / "queries.txt"
    plain.write_text("  first query \n\nsecond {not json}\n")
    assert read_training_queries(plain) == [
        TrainQuery(1, "first query"),
        TrainQuery(3, "second {not json}"),
    ]
    jsonish = tmp_path / "log.txt"
    jsonish.write_text('{"text": "a"}\n{"query": "b"}\n')
    assert [q.text for q in read_training_queries(jsonish)] == ["a", "b"]
    assert [q.text for q in read_training_queries(jsonish, "text")] == [
        '{"text": "a"}',
        '{"query": "b"}',
    ]
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    with pytest.raises(InputError, match="holds no query"):
        read_training_queries(empty)


def test_find_leaks_pairs_every_line_of_a_repeated_text() -> None:
    """Two training lines with one text give two pairs; one text embedded once."""
    calls: list[int] = []

    def embed(texts: Any) -> np.ndarray:  # a stand-in embedding: one-hot of the first letter
        calls.append(len(texts))
        out = np.zeros((len(texts), 26), dtype=np.float32)
        for i, t in enumerate(texts):
            out[i, ord(t[0].lower()) - ord("a")] = 1
        return out

    train = [TrainQuery(1, "alpha beta"), TrainQuery(2, "apple pie"), TrainQuery(5, "apple pie")]
    pairs = find_leaks(["g1", "g2"], ["Alpha, beta!", "zulu"], train, embed, 0.9)
    assert [(p.query_id, p.train_line, p.kind) for p in pairs] == [
        ("g1", 1, "exact"),
        ("g1", 2, "embedding"),
        ("g1", 5, "embedding"),
    ]
    assert calls == [2, 2]  # the golden queries, then the two distinct training texts


def _judged_only_non_relevant(tmp_path: Path, mode: str, level: int) -> Path:
    """A config over two queries: one with a relevant document, one judged only non-relevant."""
    gs = tmp_path / "gs"
    gs.mkdir()
    docs = [{"id": "d1", "text": "resetting a password"}, {"id": "d2", "text": "billing"}]
    queries = [
        {"id": "q1", "text": "forgot my password", "relevant": {"d1": 1}},
        {"id": "q2", "text": "where is my invoice", "relevant": {"d2": 0}},
    ]
    (gs / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (gs / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    config = tmp_path / "cfg.yaml"
    config.write_text(
        f"golden_set: {{path: gs}}\nrelevance_level: {level}\nqueries_without_relevant: {mode}\n"
    )
    (tmp_path / "train.txt").write_text("Where is my invoice?\n")
    return config


def test_leakage_checks_the_queries_a_run_scores(tmp_path: Path) -> None:
    """With queries_without_relevant: zero a run scores the query judged only non-relevant, so
    leakage checks it too (it was skipped, as under exclude)."""
    config = _judged_only_non_relevant(tmp_path, "zero", 1)
    _, data = leakage_json("--train", str(tmp_path / "train.txt"), str(config), "--no-embedding")
    assert data["n_golden_queries"] == 2
    assert [(p["query_id"], p["kind"]) for p in data["pairs"]] == [("q2", "exact")]


def test_leakage_with_nothing_to_evaluate_is_exit_2(tmp_path: Path) -> None:
    """No query has a grade >= relevance_level under exclude: exit 2 as for `evalret run`, never
    "LEAKAGE PASSED: 0 of 0 golden queries"."""
    config = _judged_only_non_relevant(tmp_path, "exclude", 2)
    result = runner.invoke(
        app,
        ["leakage", "--train", str(tmp_path / "train.txt"), str(config), "--no-embedding",
         "--max-fraction", "0", "--no-progress"],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "nothing to evaluate" in result.output
