"""External rankings as indexes: typed index config, the run-file reader (TREC and JSONL), the
Python retriever, documents and queries the golden set lacks, and `evalret score` against
trec_eval (pytrec_eval) per query."""

from __future__ import annotations

import gzip
import hashlib
import json
import random
import textwrap
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from conftest import DEMO
from evalret.cli import app
from evalret.commands.score import score_command
from evalret.data.config import Config, parse_config
from evalret.data.goldenset import load_golden_set
from evalret.data.runfile import read_run
from evalret.errors import ConfigError, InputError
from evalret.pipeline.evaluate import run_evaluation
from evalret.pipeline.outputs import write_outputs
from helpers import HashEmbedder, assert_report_matches_trec_eval, make_set, read_trec_run

runner = CliRunner()


def _config(tmp_path: Path, indexes: str, extra: str = "") -> Config:
    """A config over the small test set with the given ``indexes`` YAML block."""
    golden = make_set(tmp_path / "set")
    text = f"golden_set: {{path: {golden}}}\nmetrics: [ndcg@10, recall@20, mrr@5]\n"
    text += "indexes:\n" + textwrap.indent(textwrap.dedent(indexes), "  ") + extra
    return parse_config(text, "c.yaml")


# --- the config --------------------------------------------------------------------------------


def test_typed_indexes_keep_the_default_dump() -> None:
    """A config without typed indexes dumps exactly the four built-in keys (reports unchanged)."""
    assert list(Config().model_dump(mode="json")["indexes"]) == ["exact", "hnsw", "bm25", "hybrid"]


def test_typed_index_errors_name_the_key_line(tmp_path: Path) -> None:
    """A missing path, a built-in name, a bad name and an unknown gated index are refused at
    their line."""
    cases = {
        "indexes:\n  r:\n    type: run\n": ("indexes.r.path", 3),
        "indexes:\n  exact: {type: run, path: x}\n": ("built-in", 2),
        "indexes:\n  'a b': {type: run, path: x}\n": ("index name", 2),
        "gate:\n  indexes:\n    - exact\n    - nope\n": ("unknown index 'nope'", 4),
    }
    for text, (message, line) in cases.items():
        with pytest.raises(ConfigError) as e:
            parse_config(text, "c.yaml")
        problem = e.value.problems[0]
        assert message in problem.message and problem.line == line, (text, problem)


def test_gate_accepts_a_typed_index(tmp_path: Path) -> None:
    """gate.indexes and an override may name a configured typed index."""
    cfg = parse_config(
        "indexes:\n  mine: {type: run, path: r.trec}\n"
        "gate:\n  indexes: [mine]\n  overrides:\n    - {metric: mrr@10, index: mine, min: 0.1}\n"
    )
    assert cfg.gate.indexes == ["mine"] and cfg.indexes.enabled_names()[-1] == "mine"


# --- the reader --------------------------------------------------------------------------------


def test_trec_reader_orders_like_trec_eval(tmp_path: Path) -> None:
    """Comments and blank lines are skipped, the rank column ignored, ties broken by docno
    descending, and only the best ``depth`` kept."""
    path = tmp_path / "r.trec"
    path.write_text(
        "# a comment\n\nq1 Q0 a 1 0.5 t\nq1 Q0 c 2 0.5 t\nq1 Q0 b 9 0.9 t\nq1 Q0 d 3 0.1 t\n"
    )
    run = read_run(path, "trec", depth=3)
    assert run.rankings == {"q1": [("b", 0.9), ("c", 0.5), ("a", 0.5)]}
    assert run.n_lines == 6 and len(run.sha256) == 64


def test_reader_top_depth_equals_a_full_sort(tmp_path: Path) -> None:
    """With many ties and interleaved queries, the streamed top ``depth`` equals sorting
    everything; JSONL reads the same as TREC."""
    rng = random.Random(7)
    rows = [(f"q{rng.randrange(5)}", f"d{i}", round(rng.random(), 1)) for i in range(2000)]
    (tmp_path / "r.trec").write_text("".join(f"{q} Q0 {d} 0 {s} t\n" for q, d, s in rows))
    by_query: dict[str, list[tuple[str, float]]] = {}
    for q, d, s in rows:
        by_query.setdefault(q, []).append((d, s))
    with (tmp_path / "r.jsonl").open("w") as f:
        for q, pairs in by_query.items():
            results = [{"doc_id": d, "score": s} for d, s in pairs]
            f.write(json.dumps({"query_id": q, "results": results}) + "\n")
    want = {
        q: sorted(p, key=lambda x: (x[1], x[0]), reverse=True)[:37] for q, p in by_query.items()
    }
    assert read_run(tmp_path / "r.trec", "trec", 37).rankings == want
    assert read_run(tmp_path / "r.jsonl", "jsonl", 37).rankings == want


@pytest.mark.parametrize(
    ("text", "fmt", "line", "message"),
    [
        ("q1 Q0 a 1 1 t\nq2 Q0 a 1 1 t\nq1 Q0 a 2 0.5 t\n", "trec", 3, "appears twice"),
        ("q1 Q0 a 1 1 t\nq1 Q0 b 1\n", "trec", 2, "6 columns"),
        (
            '{"query_id": "q", "results": [{"doc_id": "a", "score": 1}]}\n'
            '{"query_id": "r", "results": [{"doc_id": "a", "score": 1}, {"doc_id": "b", '
            '"score": 2}, {"doc_id": "a", "score": 0.5}]}\n',
            "jsonl",
            2,
            "appears twice",
        ),
        ("q1 Q0 a 1 nan t\n", "trec", 1, "is not a number"),
        (
            '{"query_id": "q", "results": [{"doc_id": "a", "score": 1}]}\n' * 2,
            "jsonl",
            2,
            "earlier",
        ),
        (
            '{"query_id": "q", "results": [{"doc_id": "a", "score": "x"}]}\n',
            "jsonl",
            1,
            "results[0]",
        ),
    ],
)
def test_reader_refuses_with_file_and_line(
    tmp_path: Path, text: str, fmt: str, line: int, message: str
) -> None:
    """A repeated document, a short line, a NaN score, a repeated JSONL query and a bad result
    are input errors at their line."""
    path = tmp_path / f"r.{fmt}"
    path.write_text(text)
    with pytest.raises(InputError) as e:
        read_run(path, fmt, 10)  # type: ignore[arg-type]
    problem = e.value.problems[0]
    assert problem.file == str(path) and problem.line == line and message in problem.message


# --- run indexes in the pipeline ---------------------------------------------------------------


@pytest.mark.model
def test_demo_exact_run_fed_back_scores_as_exact(tmp_path: Path) -> None:
    """The demo's exported run.exact.trec, read back as a run index, scores exactly as the exact
    index on every query and metric (the real packaged model)."""
    cfg = parse_config(f"golden_set: {{path: {DEMO}}}\n").resolve_paths(tmp_path)
    first = run_evaluation(cfg)
    write_outputs(first, tmp_path / "out")
    fed = parse_config(
        f"golden_set: {{path: {DEMO}}}\nindexes:\n"
        f"  fed: {{type: run, path: {tmp_path / 'out' / 'run.exact.trec'}}}\n"
    ).resolve_paths(tmp_path)
    report = run_evaluation(fed).report
    exact, run = report.indexes["exact"], report.indexes["fed"]
    assert run.per_query == exact.per_query and run.top_ids == exact.top_ids
    assert run.slices == exact.slices and len(run.per_query) == len(cfg.metrics)
    assert run.params["queries_missing"] == 0 and run.params["documents_unknown"] == 0
    assert first.report.fingerprint.indexes == {
        k: v for k, v in report.fingerprint.indexes.items() if k != "fed"
    }


def test_unknown_documents_and_queries_are_counted(tmp_path: Path) -> None:
    """A document the corpus lacks is unjudged but kept under its name, a missing query scores 0,
    an unknown query is ignored; all three are counted in the index params."""
    run = tmp_path / "r.trec"
    run.write_text("q0 Q0 ghost 1 9 t\nq0 Q0 d0 2 8 t\nzz Q0 d1 1 1 t\n")
    cfg = _config(
        tmp_path,
        f"exact: {{enabled: false}}\nhnsw: {{enabled: false}}\nhybrid: {{enabled: false}}\n"
        f"r: {{type: run, path: {run}}}\n",
    )
    ev = run_evaluation(cfg)
    r = ev.report.indexes["r"]
    assert ev.report.embedding.dim == 0 and ev.report.intrinsic is None
    assert r.params["queries_missing"] == len(ev.report.query_ids) - 1
    assert r.params["queries_unknown"] == 1 and r.params["documents_unknown"] == 1
    q0 = ev.report.query_ids.index("q0")
    assert r.top_ids[q0] == ["ghost", "d0"]
    assert r.per_query["mrr@5"][q0] == 0.5  # d0 (relevant, grade 3) at rank 2 behind ghost
    assert sum(r.per_query["mrr@5"]) == 0.5
    written = write_outputs(ev, tmp_path / "out")
    assert "q0 Q0 ghost 1 9.0 evalret-r" in (tmp_path / "out" / "run.r.trec").read_text()
    assert any(p.name == "report.md" for p in written)
    assert "1 retrieved documents not in the corpus" in (tmp_path / "out" / "report.md").read_text()


# --- the Python retriever ----------------------------------------------------------------------


def _plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> None:
    """A module ``evalret_plugin_test`` in tmp_path, importable."""
    (tmp_path / "evalret_plugin_test.py").write_text(textwrap.dedent(body))
    monkeypatch.syspath_prepend(str(tmp_path))
    import sys

    sys.modules.pop("evalret_plugin_test", None)


def test_python_retriever_ranks_with_and_without_vectors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The function gets ids, texts, vectors (None without a dense index) and the depth; its
    pairs are ordered by the tie rule and cut to the depth."""
    _plugin(
        tmp_path,
        monkeypatch,
        """
        CALLS = []
        def search(ids, texts, vectors, depth):
            CALLS.append((list(ids), vectors is None, vectors is None or vectors.shape, depth))
            return [[(f"d{j}", 1.0 if j % 2 else 0.5) for j in range(40)] for _ in ids]
        """,
    )
    import evalret_plugin_test as plugin  # type: ignore[import-not-found]

    no_dense = "exact: {enabled: false}\nhnsw: {enabled: false}\nhybrid: {enabled: false}\n"
    typed = "p: {type: python, callable: 'evalret_plugin_test:search'}\n"
    ev = run_evaluation(_config(tmp_path, no_dense + typed))
    ids, no_vectors, _, depth = plugin.CALLS[-1]
    assert no_vectors and depth == 20 and ids == ev.report.query_ids
    top = ev.report.indexes["p"].top_ids[0]
    assert top[:3] == ["d9", "d7", "d5"] and len(ev.rankings["p"].ids[0]) == 20
    run_evaluation(_config(tmp_path, typed), embedder=HashEmbedder())
    assert plugin.CALLS[-1][1] is False and plugin.CALLS[-1][2] == (24, 64)


def test_python_retriever_failures(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An exception inside the function exits 3 naming it (traceback under EVALRET_DEBUG); an
    unimportable callable exits 2 naming the config key."""
    _plugin(
        tmp_path, monkeypatch, "def boom(ids, texts, vectors, depth):\n    raise KeyError('x')\n"
    )
    golden = make_set(tmp_path / "set")
    base = f"golden_set: {{path: {golden}}}\nindexes:\n  exact: {{enabled: false}}\n"
    base += "  hnsw: {enabled: false}\n  hybrid: {enabled: false}\n"
    bad = tmp_path / "bad.yaml"
    bad.write_text(base + "  p: {type: python, callable: 'evalret_plugin_test:boom'}\n")
    monkeypatch.setenv("EVALRET_DEBUG", "1")
    result = runner.invoke(
        app, ["run", "-c", str(bad), "--no-progress", "--out", str(tmp_path / "o")]
    )
    assert result.exit_code == 3, result.output
    assert "evalret_plugin_test:boom failed: KeyError" in result.output
    assert "Traceback" in result.output and "raise KeyError" in result.output
    missing = tmp_path / "missing.yaml"
    missing.write_text(base + "  p: {type: python, callable: 'no_such_module_xyz:f'}\n")
    result = runner.invoke(app, ["run", "-c", str(missing), "--no-progress"])
    assert result.exit_code == 2 and "indexes.p.callable" in result.output


# --- evalret score against trec_eval -----------------------------------------------------------

_PLAIN = [
    f"{m}@{k}"
    for m in ("ndcg", "recall", "precision", "map", "hit_rate", "mrr", "bpref")
    for k in (1, 5, 10, 100)
] + ["ndcg", "recall", "precision", "map", "hit_rate", "mrr", "bpref"]  # and the whole ranking
METRICS = _PLAIN + [f"{m}:judged" for m in _PLAIN]  # and every one judged-only (trec_eval -J)


def _graded_qrels_and_run(
    scifact: Path, tmp_path: Path
) -> tuple[Path, Path, dict[str, dict[str, int]]]:
    """SciFact's test qrels as a TREC qrels file with grades 1 and 2 (deterministic) plus a few
    judged non-relevant documents (grade 0) per query, and a deterministic run with many tied
    scores over judged and unjudged documents."""
    golden = load_golden_set(parse_config(f"golden_set: {{path: {scifact}}}\n").golden_set)
    qrels: dict[str, dict[str, int]] = {}
    rng = random.Random(13)
    with (tmp_path / "qrels.txt").open("w") as f:
        for n, q in enumerate(golden.query_ids):
            for i, d in enumerate(golden.qrels[q]):
                grade = 2 if (len(q) + i) % 2 == 0 else 1
                qrels.setdefault(q, {})[d] = grade
            for d in rng.sample(golden.doc_ids, n % 7):  # 0 to 6 judged non-relevant
                qrels[q].setdefault(d, 0)
            f.writelines(f"{q} 0 {d} {grade}\n" for d, grade in qrels[q].items())
    with (tmp_path / "sys.trec").open("w") as f:
        for q in golden.query_ids[::-1]:  # not in qrels order; one query left out below
            if q == golden.query_ids[0]:
                continue
            docs = set(rng.sample(golden.doc_ids, 150)) | set(qrels[q])
            for d in sorted(docs):
                f.write(f"{q} Q0 {d} 0 {rng.randrange(20) / 4} sys\n")
    return tmp_path / "qrels.txt", tmp_path / "sys.trec", qrels


def _first_query(qrels: Path) -> str:
    """The first query of a qrels file (the one the test run leaves out)."""
    return qrels.read_text().split()[0]


@pytest.mark.parametrize(
    ("level", "without"), [(1, "exclude"), (1, "zero"), (2, "exclude"), (2, "zero")]
)
def test_score_equals_trec_eval(
    scifact_path: Path, tmp_path: Path, level: int, without: str
) -> None:
    """`evalret score` on a bare qrels file equals pytrec_eval per query for every metric, with
    and without a cutoff, at relevance levels 1 and 2, excluding or zero-scoring queries without
    a relevant document."""
    qrels_path, run_path, qrels = _graded_qrels_and_run(scifact_path, tmp_path)
    outcome = score_command(
        golden=qrels_path,
        runs=[str(run_path)],
        metrics=METRICS,
        relevance_level=level,
        queries_without_relevant=without,  # type: ignore[arg-type]
        out=tmp_path / "out",
    )
    report = outcome.evaluation.report
    evaluated = {q: j for q, j in qrels.items() if without == "zero" or max(j.values()) >= level}
    index = report.indexes["sys"]
    left_out = 1 if _first_query(qrels_path) in report.query_ids else 0
    assert index.params["queries_missing"] == left_out
    compared = assert_report_matches_trec_eval(
        index.per_query, report.query_ids, evaluated, read_trec_run(run_path), level
    )
    assert compared == len(METRICS) * len(evaluated)
    assert (tmp_path / "out" / "report.html").exists()
    assert np.isclose(
        index.slices["all"].metrics["ndcg@10"].value or 0, np.mean(index.per_query["ndcg@10"])
    )


def test_score_cli_refuses_a_duplicate_document(scifact_path: Path, tmp_path: Path) -> None:
    """A run with a document twice for one query exits 2 naming the file and line."""
    run = tmp_path / "dup.trec"
    run.write_text("1 Q0 4983 1 2.0 t\n1 Q0 5836 2 1.0 t\n1 Q0 4983 3 0.5 t\n")
    result = runner.invoke(
        app, ["score", str(scifact_path), str(run), "--no-progress", "--out", str(tmp_path / "o")]
    )
    assert result.exit_code == 2, result.output
    assert f"{run}:3" in result.output.replace("\n", "") and "appears twice" in result.output


def test_score_cli_names_runs_and_prints_tables(scifact_path: Path, tmp_path: Path) -> None:
    """NAME=PATH names an index; the tables print and the report files are written."""
    run = tmp_path / "a.trec"
    run.write_text("1 Q0 31715818 1 2.0 t\n3 Q0 14717500 1 1.0 t\n")
    out = tmp_path / "o"
    result = runner.invoke(
        app,
        [
            "score",
            str(scifact_path),
            f"mine={run}",
            str(run),
            "-m",
            "ndcg@10",
            "--no-progress",
            "--verbose",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "mine (run)" in result.output and "a (run)" in result.output
    report = json.loads((out / "report.json").read_text())
    assert list(report["indexes"]) == ["mine", "a"]
    assert (out / "run.mine.trec").exists() and (out / "report.md").exists()


def test_score_a_run_deeper_than_the_judged_documents(tmp_path: Path) -> None:
    """With a qrels file alone (three judged documents), a relevant document at rank 6 of the
    run still counts at cutoff 10, as trec_eval counts it."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 a 1\nq1 0 b 0\nq2 0 c 2\n")
    run = tmp_path / "deep.trec"
    run.write_text("".join(f"q1 Q0 x{i} {i} {10 - i} t\n" for i in range(5)) + "q1 Q0 a 6 1 t\n")
    outcome = score_command(
        golden=qrels, runs=[str(run)], metrics=["recall@10", "mrr@10"], out=tmp_path / "o"
    )
    report = outcome.evaluation.report
    index = report.indexes["deep"]
    assert report.query_ids == ["q1", "q2"]
    assert index.per_query["recall@10"] == [1.0, 0.0]
    assert index.per_query["mrr@10"] == [pytest.approx(1 / 6), 0.0]
    assert index.params["documents_unknown"] == 5 and index.params["queries_missing"] == 1
    assert index.top_ids[0] == ["x0", "x1", "x2", "x3", "x4", "a"]


# --- trec_eval's tolerance, and what it refuses -------------------------------------------------


def test_trec_reader_takes_every_line_trec_eval_takes(tmp_path: Path) -> None:
    """Tabs, CRLF, vertical tabs and leading spaces separate columns; columns past the sixth and
    the encoding of the ignored ones do not matter; an indented ``#`` line is a comment; the last
    line needs no newline; scores read as C's atof reads them (counted when not wholly a number)."""
    path = tmp_path / "r.trec"
    path.write_bytes(
        b"  # indented comment \xe9\n"
        b"q1\tQ0\ta\t1\t1.5e1\trun\r\n"
        b"q1 Q0 b 2 0x1.8p3 t\xe9 extra columns\n"
        b"\tq1 \x0b Q0 c 3 .5 t\n"
        b"q1 Q0 d 4 12abc t\n"
        b"q1 Q0 e 5 n/a t\n"
        b"q1 Q0 f 6 -inf t\n"
        b"q2 Q0 a 1 1e999 t"
    )
    run = read_run(path, "trec", 10)
    assert run.rankings == {
        "q1": [("a", 15.0), ("d", 12.0), ("b", 12.0), ("c", 0.5), ("e", 0.0), ("f", -np.inf)],
        "q2": [("a", np.inf)],
    }
    assert run.scores_partial == 2 and run.n_lines == 8


def test_a_repeated_document_is_refused_whatever_the_metrics(tmp_path: Path) -> None:
    """A document repeated far below the depth kept, after another query's lines, is refused at
    its line whether the metrics ask for depth 1 or 10 (the verdict once depended on `-m`)."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 a 1\nq2 0 x 1\n")
    run = tmp_path / "dup.trec"
    run.write_text("q1 Q0 a 1 1 t\nq1 Q0 b 2 0.9 t\nq2 Q0 x 1 1 t\nq1 Q0 b 3 0.1 t\n")
    for depth in (1, 10):
        with pytest.raises(InputError) as e:
            read_run(run, "trec", depth)
        assert e.value.problems[0].line == 4 and "first at line 2" in e.value.problems[0].message
    for metric in ("ndcg@1", "ndcg@10"):
        out = tmp_path / metric
        result = runner.invoke(
            app, ["score", str(qrels), str(run), "-m", metric, "--no-progress", "--out", str(out)]
        )
        assert result.exit_code == 2, (metric, result.output)
        assert f"{run}:4" in result.output.replace("\n", "") and "appears twice" in result.output


@pytest.mark.parametrize("content", [b"", b"\n# only a comment\n\n"])
def test_an_empty_run_with_a_baseline_is_an_input_error(tmp_path: Path, content: bytes) -> None:
    """A 0-byte run (or one of blank and comment lines) gated against a baseline exits 2 naming
    the file, not 1 as if every query had regressed to 0."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 a 1\nq2 0 x 1\n")
    good, empty = tmp_path / "good.trec", tmp_path / "empty.trec"
    good.write_text("q1 Q0 a 1 1 t\nq2 Q0 x 1 1 t\n")
    empty.write_bytes(content)
    first = runner.invoke(
        app, ["score", str(qrels), f"sys={good}", "--no-progress", "--out", str(tmp_path / "b")]
    )
    assert first.exit_code == 0, first.output
    args = ["score", str(qrels), f"sys={empty}", "--no-progress", "--out", str(tmp_path / "o")]
    result = runner.invoke(app, [*args, "--baseline", str(tmp_path / "b" / "report.json")])
    assert result.exit_code == 2, result.output
    assert str(empty) in result.output.replace("\n", "") and "no ranking line" in result.output


def test_an_over_long_line_is_refused_at_its_line(tmp_path: Path) -> None:
    """A run line past the format's bound is refused at its line, though trec_eval would read
    it, before it is held whole."""
    path = tmp_path / "long.trec"
    path.write_bytes(b"q1 Q0 a 1 1 t\nq1 Q0 b 2 0.5 " + b"t" * (2 << 20) + b"\n")  # bound: 1 MiB
    with pytest.raises(InputError) as e:
        read_run(path, "trec", 10)
    assert e.value.problems[0].line == 2 and "longer than" in e.value.problems[0].message


def test_score_names_a_path_that_is_not_utf8(tmp_path: Path) -> None:
    """A run, golden set or --out path whose name is not UTF-8 exits 2 naming it with the byte
    escaped, never "Internal error"."""
    qrels, run = tmp_path / "qrels.txt", tmp_path / "r\udcff.trec"
    qrels.write_text("q1 0 a 1\n")
    run.write_text("q1 Q0 a 1 1 t\n")
    for args in (
        [str(qrels), f"x={run}"],
        [str(run), "x=" + str(qrels)],
        [str(qrels), f"x={qrels}", "--out", str(tmp_path / "o\udcff")],
    ):
        result = runner.invoke(app, ["score", *args, "--no-progress"])
        assert result.exit_code == 2, result.output
        assert "not valid UTF-8" in result.output and "\\xff" in result.output
        assert "Internal error" not in result.output


def test_score_on_a_reformatted_run_equals_trec_eval(scifact_path: Path, tmp_path: Path) -> None:
    """The graded SciFact run rewritten with trec_eval's tolerated variations (tabs, CRLF, extra
    columns, scores as ``2.5e0`` and hexadecimal) scores as pytrec_eval scores the plain run, and
    a score column that is not wholly a number is shown in report.md."""
    qrels_path, run_path, qrels = _graded_qrels_and_run(scifact_path, tmp_path)
    odd = tmp_path / "odd.trec"
    with odd.open("wb") as f:
        for i, line in enumerate(run_path.read_text().splitlines()):
            qid, _, doc, rank, score, tag = line.split()
            text = float(score).hex() if i % 3 == 0 else f"{float(score):e}"
            f.write(f"{qid}\tQ0 {doc}  {rank}\t{text} {tag} x{i}\r\n".encode())
        f.write(b"zz Q0 d1 1 7abc t")  # a query not evaluated: counted, not scored
    outcome = score_command(
        golden=qrels_path, runs=[str(odd)], metrics=METRICS, out=tmp_path / "out"
    )
    report = outcome.evaluation.report
    evaluated = {q: j for q, j in qrels.items() if max(j.values()) >= 1}
    compared = assert_report_matches_trec_eval(
        report.indexes["odd"].per_query, report.query_ids, evaluated, read_trec_run(run_path), 1
    )
    assert compared == len(METRICS) * len(evaluated)
    assert report.indexes["odd"].params["scores_partial"] == 1
    md = (tmp_path / "out" / "report.md").read_text()
    assert "odd: 1 TREC scores not wholly a number" in md


@pytest.mark.parametrize("fmt", ["trec", "jsonl"])
def test_score_reads_a_gzipped_run_as_its_content(tmp_path: Path, fmt: str) -> None:
    """``run.trec.gz`` / ``run.jsonl.gz``: the format from the suffix before ``.gz``, the index
    named ``run``, the metrics those of the plain file, the digest that of the file on disk."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 a 1\nq1 0 b 0\nq2 0 c 2\n")
    if fmt == "trec":
        text = "q1 Q0 b 1 0.9 t\nq1 Q0 a 2 0.5 t\nq2 Q0 c 1 0.1 t\n"
    else:
        rows = {"q1": [("b", 0.9), ("a", 0.5)], "q2": [("c", 0.1)]}
        text = "".join(
            json.dumps({"query_id": q, "results": [{"doc_id": d, "score": s} for d, s in r]}) + "\n"
            for q, r in rows.items()
        )
    plain, packed = tmp_path / f"plain.{fmt}", tmp_path / f"run.{fmt}.gz"
    plain.write_text(text)
    packed.write_bytes(gzip.compress(text.encode(), mtime=0))
    reports = {}
    for run in (plain, packed):
        out = tmp_path / run.name.replace(".", "_")
        result = runner.invoke(
            app, ["score", str(qrels), str(run), "-m", "ndcg@10", "-m", "map", "--out", str(out)]
        )
        assert result.exit_code == 0, result.output
        reports[run] = json.loads((out / "report.json").read_text())
    got, want = reports[packed]["indexes"], reports[plain]["indexes"]
    assert list(got) == ["run"] and list(want) == ["plain"]
    assert got["run"]["per_query"] == want["plain"]["per_query"]
    digest = hashlib.sha256(packed.read_bytes()).hexdigest()
    assert got["run"]["params"]["sha256"] == digest
