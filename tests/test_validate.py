"""`evalret validate`: SciFact is clean with its real counts; broken copies of the demo set get
every planted problem named with its file and line (exit 2); JSON output; the MDE; no torch."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats as sps
from typer.testing import CliRunner

from conftest import DEMO, REPO
from evalret.cli import app
from evalret.core.duplicates import jaccard, ngrams, normalize_text, similar_pairs

runner = CliRunner()


def validate_json(*args: str) -> tuple[int, dict[str, Any]]:
    result = runner.invoke(app, ["validate", *args, "--json"])
    assert result.exit_code in (0, 2), result.output
    return result.exit_code, json.loads(result.stdout)


def where(problems: list[dict[str, Any]]) -> set[tuple[str, str, int | None]]:
    """(code, file name, line) of each problem."""
    return {(p["code"], Path(p["file"]).name, p["line"]) for p in problems}


def mde(sd: float, n: int) -> float:
    # two-sided alpha 0.05, power 0.8: (1.95996 + 0.84162) * sd / sqrt(n)
    return float((sps.norm.ppf(0.975) + sps.norm.ppf(0.8)) * sd / np.sqrt(n))


def test_scifact_is_valid_with_its_real_counts(scifact_path: Path) -> None:
    """SciFact (test split): no error, counts read off the files, a minimal-grade slice of 300
    queries; its only warnings are the near-duplicate claim pairs a brute-force search finds."""
    code, out = validate_json(str(scifact_path))
    assert code == 0 and out["ok"] and out["errors"] == []

    corpus = (scifact_path / "corpus.jsonl").read_text().splitlines()
    queries = [
        json.loads(line) for line in (scifact_path / "queries.jsonl").read_text().splitlines()
    ]
    rows = [
        r.split("\t") for r in (scifact_path / "qrels" / "test.tsv").read_text().splitlines()[1:]
    ]
    judged = list(dict.fromkeys(r[0] for r in rows))
    per_query = Counter(r[0] for r in rows if int(r[2]) >= 1)
    s = out["summary"]
    assert (s["format"], s["n_documents"], s["n_queries"]) == ("beir", len(corpus), len(queries))
    assert (s["n_evaluated"], s["n_scored"], s["n_judgments"]) == (len(judged), 300, len(rows))
    assert (len(corpus), len(queries), len(judged), len(rows)) == (5183, 1109, 300, 339)
    assert s["grades"] == {str(g): n for g, n in Counter(int(r[2]) for r in rows).items()}
    assert s["relevant_per_query"]["max"] == max(per_query.values())
    assert s["relevant_per_query"]["mean"] == pytest.approx(len(rows) / 300, abs=1e-4)

    [all_slice] = out["slices"]
    assert (all_slice["name"], all_slice["n_queries"], all_slice["reliability"]) == (
        "all",
        300,
        "minimal",
    )
    assert all_slice["sd_source"] == "assumed"
    assert all_slice["mde"] == pytest.approx(mde(0.40, 300))  # 0.0647

    text = {q["_id"]: q["text"] for q in queries}
    line = {q["_id"]: n for n, q in enumerate(queries, start=1)}
    grams = {q: ngrams(normalize_text(text[q])) for q in judged}
    brute = {
        (line[b], line[a]) for a, b in combinations(judged, 2) if jaccard(grams[a], grams[b]) >= 0.8
    }
    found = {
        (w["line"], int(w["message"].split("(line ")[1].split(";")[0])) for w in out["warnings"]
    }
    assert {w["code"] for w in out["warnings"]} == {"near-duplicate-query"}
    assert found == brute and len(found) == 10
    # the clearest one: the same claim with its two terms swapped
    assert any("Venules have" in w["message"] and w["line"] == 1101 for w in out["warnings"])


def write_jsonl(path: Path, rows: list[Any]) -> None:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))


def broken_demo(tmp_path: Path) -> tuple[Path, set[Any], set[Any]]:
    """A copy of the demo set with problems appended at known lines: (dir, errors, warnings)."""
    gs = tmp_path / "broken"
    gs.mkdir()
    corpus = (DEMO / "corpus.jsonl").read_text().splitlines()
    queries = (DEMO / "queries.jsonl").read_text().splitlines()
    first_doc = json.loads(corpus[0])
    n_c, n_q = len(corpus), len(queries)  # planted lines follow the originals
    write_jsonl(
        gs / "corpus.jsonl",
        [
            *corpus,
            {"id": "doc-0002", "text": "a second document with an existing id"},
            {"id": "doc-empty", "title": "", "text": "   "},
            '{"id": "doc-bad", "text": "unterminated}',
            {"id": "doc-copy", "title": first_doc["title"].upper(), "text": first_doc["text"]},
        ],
    )
    write_jsonl(
        gs / "queries.jsonl",
        [
            *queries,
            {"id": "p-1", "text": "typo in a field", "relevent": {"doc-0001": 1}},
            {"id": "q-001", "text": "an existing query id", "relevant": ["doc-0001"]},
            {"id": "p-3", "text": "judges a missing document", "relevant": {"doc-9999": 2}},
            {"id": "p-4", "text": "  ", "relevant": ["doc-0001"]},
            {"id": "p-5", "text": "negative grade", "relevant": {"doc-0001": -1}},
            {"id": "p-6", "text": "only non-relevant judgments", "relevant": {"doc-0001": 0}},
            {"id": "p-7", "text": "How do I upload a FILE?!", "relevant": ["doc-0021"]},
            {"id": "p-8", "text": "how long are the pipeline logs kept", "relevant": ["doc-0029"]},
            {"id": "p-9", "text": "?!", "relevant": ["doc-0021"]},
        ],
    )
    errors = {
        ("duplicate-document-id", "corpus.jsonl", n_c + 1),
        ("invalid-json", "corpus.jsonl", n_c + 3),
        ("schema", "queries.jsonl", n_q + 1),
        ("duplicate-query-id", "queries.jsonl", n_q + 2),
        ("unknown-document", "queries.jsonl", n_q + 3),
    }
    warnings = {
        ("empty-document", "corpus.jsonl", n_c + 2),  # embedded as the empty string
        ("empty-query", "queries.jsonl", n_q + 4),
        ("duplicate-document-text", "corpus.jsonl", n_c + 4),  # same as doc-0001 (line 1)
        ("no-relevant-document", "queries.jsonl", n_q + 5),  # grade -1: judged non-relevant
        ("no-relevant-document", "queries.jsonl", n_q + 6),
        ("duplicate-query-text", "queries.jsonl", n_q + 7),  # = q-231 "how do I upload a file"
        ("near-duplicate-query", "queries.jsonl", n_q + 8),  # ~ q-217 (Jaccard 0.88)
        ("no-alphanumeric-text", "queries.jsonl", n_q + 9),
    }
    return gs, errors, warnings


def test_broken_demo_copy_lists_every_planted_problem_with_its_line(tmp_path: Path) -> None:
    """Every planted error and warning is reported with file and line, nothing else; exit 2."""
    gs, errors, warnings = broken_demo(tmp_path)
    code, out = validate_json(str(gs))
    assert code == 2 and not out["ok"]
    assert where(out["errors"]) == errors
    assert where(out["warnings"]) == warnings
    dup = next(w for w in out["warnings"] if w["code"] == "duplicate-query-text")
    assert "'q-231'" in dup["message"] and "(line 231)" in dup["message"]
    # doc-empty and doc-copy are counted; the duplicate id and the invalid line are not
    assert out["summary"]["n_documents"] == 338 + 2


def test_broken_demo_terminal_output_lists_errors_first(tmp_path: Path) -> None:
    """Human output: errors (file:line) before warnings, then the summary, then INVALID."""
    gs, _, _ = broken_demo(tmp_path)
    result = runner.invoke(app, ["validate", str(gs)], env={"COLUMNS": "250"})
    assert result.exit_code == 2
    out = result.output
    assert out.index("Errors (5)") < out.index("Warnings (8)") < out.index("documents")
    assert f"{gs / 'queries.jsonl'}:247: judgment for unknown document 'doc-9999'" in out
    assert "INVALID: 5 error(s), 8 warning(s)" in out


def test_broken_beir_and_trec_sets_name_their_lines(tmp_path: Path) -> None:
    """BEIR and TREC layouts go through the same checks: qrels problems carry their line."""
    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    write_jsonl(beir / "corpus.jsonl", [{"_id": "d1", "text": "x"}, {"_id": "d2", "text": "x"}])
    write_jsonl(beir / "queries.jsonl", [{"_id": "q1", "text": "a"}, {"_id": "q2", "text": "b"}])
    (beir / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td9\t1\nq2\td1\tx\nq3\td1\t1\nq2\td2\n"
    )
    code, out = validate_json(str(beir))
    assert code == 2
    assert where(out["errors"]) == {
        ("unknown-document", "test.tsv", 3),
        ("qrels-format", "test.tsv", 4),
        ("unknown-query", "test.tsv", 5),
        ("qrels-format", "test.tsv", 6),
    }
    assert where(out["warnings"]) == {("duplicate-document-text", "corpus.jsonl", 2)}

    trec = tmp_path / "trec"
    trec.mkdir()
    (trec / "qrels.txt").write_text("q1 0 d1 1\nq1 0 d1 2\nq2 0 d1\n")
    (trec / "queries.tsv").write_text("q1\tfirst query\nq2 no tab\n")
    (trec / "corpus.tsv").write_text("d1\tsome text\n")
    code, out = validate_json(str(trec / "qrels.txt"))
    assert code == 2
    assert where(out["errors"]) == {
        ("duplicate-judgment", "qrels.txt", 2),
        ("qrels-format", "qrels.txt", 3),
        ("tsv-format", "queries.tsv", 2),
    }


def test_demo_is_valid_and_a_missing_path_exits_2(tmp_path: Path) -> None:
    """The demo set: exit 0, no warning, its slices; a path that does not exist: exit 2."""
    code, out = validate_json(str(DEMO))
    assert code == 0 and out["errors"] == [] and out["warnings"] == []
    sizes = {s["name"]: (s["n_queries"], s["reliability"]) for s in out["slices"]}
    assert sizes["all"] == (244, "minimal") and sizes["multi-hop"] == (8, "unreliable")
    code, out = validate_json(str(tmp_path / "nowhere"))
    assert code == 2 and "golden set not found" in out["errors"][0]["message"]


def test_config_path_uses_its_slices_and_report_sets_the_mde(tmp_path: Path) -> None:
    """Given a config, its custom slices are checked; --report takes each slice's sd from the
    report's per-query nDCG@10 (exact index), matched by query id."""
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(
        f"golden_set:\n  path: {DEMO}\nslices:\n  tags: false\n  frequency: false\n"
        "  custom:\n    - {name: questions, pattern: '^how '}\n"
    )
    ids = [json.loads(line)["id"] for line in (DEMO / "queries.jsonl").read_text().splitlines()]
    rng = np.random.default_rng(0)
    scores = rng.uniform(0, 1, len(ids)).round(4)
    report = tmp_path / "report.json"
    report.write_text(
        json.dumps(
            {
                "query_ids": ids,
                "indexes": {
                    "hnsw": {"per_query": {"ndcg@10": [0.0] * len(ids)}},
                    "exact": {"per_query": {"ndcg@10": scores.tolist()}},
                },
            }
        )
    )
    code, out = validate_json(str(cfg), "--report", str(report))
    assert code == 0
    questions = [
        i
        for i, line in enumerate((DEMO / "queries.jsonl").read_text().splitlines())
        if json.loads(line)["text"].startswith("how ")
    ]
    by_name = {s["name"]: s for s in out["slices"]}
    assert list(by_name) == ["all", "questions"]
    sd_all = float(np.std(scores, ddof=1))
    assert by_name["all"]["sd"] == pytest.approx(sd_all, abs=1e-4)
    assert by_name["all"]["mde"] == pytest.approx(mde(sd_all, 244))
    sd_q = float(np.std(scores[questions], ddof=1))
    assert by_name["questions"]["n_queries"] == len(questions)
    assert by_name["questions"]["mde"] == pytest.approx(mde(sd_q, len(questions)))
    assert by_name["questions"]["sd_source"] == f"report ({len(questions)} queries)"

    report.write_text(json.dumps({"query_ids": ids, "indexes": {"exact": {"per_query": {}}}}))
    result = runner.invoke(app, ["validate", str(cfg), "--report", str(report)])
    assert result.exit_code == 2 and "no per-query ndcg@10" in result.output


def test_similar_pairs_equal_brute_force_on_the_demo_and_random_texts() -> None:
    """Prefix filtering finds exactly the pairs a brute-force comparison finds."""
    texts = [
        normalize_text(json.loads(line)["text"])
        for line in (DEMO / "queries.jsonl").read_text().splitlines()
    ]
    rng = np.random.default_rng(1)
    words = ["ab", "abc", "b", "cd", "x", "yy", "zzz", "q"]
    randoms = [" ".join(rng.choice(words, rng.integers(0, 5))) for _ in range(120)]
    for left, right in ((texts, None), (randoms, None), (randoms[:60], randoms[60:])):
        for threshold in (0.3, 0.55, 0.8, 1.0):
            others = left if right is None else right
            expected = [
                (i, j)
                for i, a in enumerate(left)
                for j, b in enumerate(others)
                if (right is not None or i < j)
                and a
                and b
                and jaccard(ngrams(a), ngrams(b)) >= threshold
            ]
            got = [(i, j) for i, j, _ in similar_pairs(left, right, threshold)]
            assert got == expected, threshold


def test_normalization() -> None:
    """NFKC, case folding, apostrophes dropped, punctuation and whitespace collapsed."""
    assert (
        normalize_text("  I can't  log-in: \uff26\uff55\uff4c\uff4cwidth_x ÉCOLE! ")
        == "i cant log in fullwidth x école"
    )
    assert normalize_text("?!") == ""


def test_validate_imports_no_heavy_library(tmp_path: Path) -> None:
    """`evalret validate` (and the text-only leakage check) never imports torch, faiss or
    sentence-transformers."""
    train = tmp_path / "train.txt"
    train.write_text("how do I upload a file\n")
    code = (
        "import sys\n"
        "from evalret.cli import app\n"
        'for args in (["validate", sys.argv[1], "--json"],\n'
        '             ["leakage", "--train", sys.argv[2], sys.argv[1], "--no-embedding"]):\n'
        "    try:\n"
        "        app(args)\n"
        "    except SystemExit as e:\n"
        "        assert e.code == 0, e.code\n"
        "print(sorted(m for m in ('torch', 'sentence_transformers', 'faiss', 'transformers')"
        " if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(DEMO), str(train)],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_validate_runs_from_a_copy_without_the_repository(tmp_path: Path) -> None:
    """A golden set copied elsewhere validates the same (paths are the copy's)."""
    copy = tmp_path / "demo"
    shutil.copytree(DEMO, copy)
    code, out = validate_json(str(copy))
    assert code == 0 and out["source"] == str(copy)


def test_word_difference_names_what_tells_near_duplicates_apart() -> None:
    from evalret.core.duplicates import word_difference

    assert word_difference("x reduces y", "x increases y") == (
        "differing words: 'reduces' vs 'increases'"
    )
    assert word_difference("a is larger than b", "b is larger than a") == (
        "the same words, reordered"
    )
    assert word_difference("is not effective", "is effective") == (
        "differing words: 'not' vs '(nothing)'"
    )


@pytest.mark.parametrize(
    ("value", "problem"),
    [(1e308, "is not a score in [0, 1]"), (-5.0, "is not a score in [0, 1]"),
     (2.0, "is not a score in [0, 1]"), (True, "is not a number")],
)  # fmt: skip
def test_a_report_score_outside_0_1_is_refused(value: Any, problem: str) -> None:
    """validate --report reads only query_ids and per-query scores: a forged 1e308 overflowed the
    sd (a RuntimeWarning and a meaningless minimum detectable effect, exit 0). Refused, exit 2."""
    from evalret.errors import InputError
    from evalret.pipeline.validate import report_scores

    report = {"query_ids": ["a", "b"], "indexes": {"exact": {"per_query": {}}}}
    report["indexes"]["exact"]["per_query"]["ndcg@10"] = [0.5, value]  # type: ignore[index]
    with pytest.raises(InputError, match=re.escape(f"per_query.ndcg@10[1]: {value!r} {problem}")):
        report_scores(report, "r.json", "ndcg@10")
    report["indexes"]["exact"]["per_query"]["ndcg@10"] = [0.5, None]  # type: ignore[index]
    assert report_scores(report, "r.json", "ndcg@10") == {"a": 0.5}
