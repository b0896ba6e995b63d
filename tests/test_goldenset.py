"""Golden-set readers: three formats, auto-detection, every malformed input named by line."""

from __future__ import annotations

import hashlib
import json
import unicodedata
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalret.data.config import GoldenSetConfig
from evalret.data.goldenset import (
    GoldenSet,
    GoldenSetScan,
    detect_format,
    load_golden_set,
    scan_golden_set,
)
from evalret.errors import GoldenSetError
from helpers import cranfield_like


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def native(tmp_path: Path, docs: list | None = None, queries: list | None = None) -> Path:
    write_jsonl(
        tmp_path / "corpus.jsonl",
        docs
        if docs is not None
        else [
            {"id": "d1", "title": "Reset", "text": "How to reset a password."},
            {"id": "d2", "text": "Billing cycles start on the first."},
            {
                "id": "d3",
                "text": "Error E42 means the disk is full.",
                "metadata": {"section": "errors"},
            },
        ],
    )
    write_jsonl(
        tmp_path / "queries.jsonl",
        queries
        if queries is not None
        else [
            {
                "id": "q1",
                "text": "forgot password",
                "relevant": {"d1": 3, "d2": 0},
                "tags": ["semantic"],
                "frequency": 100,
            },
            {
                "id": "q2",
                "text": "E42",
                "relevant": ["d3"],
                "tags": ["exact-match"],
                "frequency": 3,
            },
            {"id": "q3", "text": "nothing relevant", "relevant": {"d2": 0}},
        ],
    )
    return tmp_path


def load(path: Path, **kw: object) -> object:
    return load_golden_set(GoldenSetConfig(path=path, **kw))


def problems_of(path: Path, **kw: object) -> list[str]:
    with pytest.raises(GoldenSetError) as e:
        load(path, **kw)
    return [str(p) for p in e.value.problems] or [e.value.summary]


def test_native_reads_grades_tags_frequency(tmp_path: Path) -> None:
    """Native: dict and list forms of `relevant`, tags, frequency, title joined to text."""
    g = load(native(tmp_path))
    assert g.format == "native"
    assert g.doc_texts[0] == "Reset How to reset a password."
    assert g.qrels == {"q1": {"d1": 3, "d2": 0}, "q2": {"d3": 1}, "q3": {"d2": 0}}
    assert g.tags == {"q1": ("semantic",), "q2": ("exact-match",)}
    assert g.frequency == {"q1": 100, "q2": 3}
    assert g.queries_without_relevant == ["q3"]


def test_fingerprint_changes_with_content_only(tmp_path: Path) -> None:
    """The fingerprint is the same for equal content in two places and moves with a judgment."""
    for name in ("a", "b", "c"):
        (tmp_path / name).mkdir()
    a = load(native(tmp_path / "a"))
    b = load(native(tmp_path / "b"))
    assert a.fingerprint == b.fingerprint
    c = load(
        native(
            tmp_path / "c", queries=[{"id": "q1", "text": "forgot password", "relevant": {"d1": 2}}]
        )
    )
    assert c.fingerprint != a.fingerprint


def _dumps_fingerprints(g: GoldenSet) -> tuple[str, str]:
    """The corpus's and the set's fingerprints as json.dumps made them record by record (a set
    without filters): the values stored in users' baselines."""

    def canonical(obj: object) -> bytes:
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"

    corpus = hashlib.sha256(b"evalret-corpus-1\n")
    for d, t in sorted(zip(g.doc_ids, g.doc_texts, strict=True)):
        corpus.update(canonical(["d", d, t]))
    whole = hashlib.sha256(b"evalret-golden-set-1\n")
    whole.update(corpus.hexdigest().encode())
    for q, digest in sorted(g.query_fingerprints.items()):
        whole.update(canonical([q, digest]))
    return corpus.hexdigest(), whole.hexdigest()


@given(st.lists(st.tuples(st.text(), st.text()), max_size=12), st.text())
def test_fingerprints_are_those_of_the_json_records(docs: list[tuple[str, str]], q: str) -> None:
    """Any ids and texts (quotes, backslashes, control and non-ASCII characters) fingerprint as
    their JSON records always did."""
    g = GoldenSet(
        source="t",
        format="native",
        doc_ids=[d for d, _ in docs],
        doc_texts=[t for _, t in docs],
        query_ids=[q],
        query_texts=[q + "?"],
        qrels={q: {d: 1 for d, _ in docs}},
    )
    assert (g.corpus_fingerprint, g.fingerprint) == _dumps_fingerprints(g)


def test_fingerprint_of_a_known_set_is_unchanged() -> None:
    """A set's fingerprint stays the value saved baselines hold."""
    g = GoldenSet(
        source="t",
        format="native",
        doc_ids=["d1", 'd"2', "d\\3", "dé4"],
        doc_texts=["a\nb", "\u2028", "😀", ""],
        query_ids=["q1"],
        query_texts=["forgot password"],
        qrels={"q1": {"d1": 2, "dé4": 0}},
    )
    assert g.fingerprint == _dumps_fingerprints(g)[1]
    assert g.fingerprint == "15d815c1362a481491006fdf27437343c510916d2dc1e9e29a28d93d6243eee9"


def test_native_every_problem_with_file_and_line(tmp_path: Path) -> None:
    """All problems are collected at once, each with file:line."""
    native(
        tmp_path,
        docs=[
            {"id": "d1", "text": "one"},
            "{not json",
            {"id": "d1", "text": "duplicate"},
            {"id": "d4", "txt": "typo key"},
        ],
        queries=[
            {"id": "q1", "text": "ok", "relevant": {"d1": 1}},
            {"id": "q2", "text": "  ", "relevant": {"d1": 1}},
            {"id": "q1", "text": "dup", "relevant": {"d1": 1}},
            {"id": "q4", "text": "unknown doc", "relevant": {"nope": 2}},
            {"id": "q5", "text": "bad grade", "relevant": {"d1": "high"}},
            {"id": "q6", "text": "huge grade", "relevant": {"d1": 10**30}},
            [1, 2],
        ],
    )
    got = "\n".join(problems_of(tmp_path))
    corpus, queries = tmp_path / "corpus.jsonl", tmp_path / "queries.jsonl"
    for expected in [
        f"{corpus}:2: invalid JSON",
        f"{corpus}:3: duplicate document id 'd1' (first at line 1)",
        f"{corpus}:4: text: Field required",
        f"{queries}:3: duplicate query id 'q1'",
        f"{queries}:4: judgment for unknown document 'nope'",
        f"{queries}:5: relevant",
        f"{queries}:6: grade {10**30} for ('q6', 'd1') is out of range",
        f"{queries}:7: each line must be a JSON object",
    ]:
        assert expected in got, f"missing {expected!r} in\n{got}"


def beir(
    tmp_path: Path, qrels: str = "query-id\tcorpus-id\tscore\n1\tA\t1\n1\tB\t0\n2\tC\t2\n"
) -> Path:
    write_jsonl(
        tmp_path / "corpus.jsonl",
        [
            {"_id": "A", "title": "Alpha", "text": "first"},
            {"_id": "B", "title": "", "text": "second"},
            {"_id": "C", "title": "Gamma", "text": ""},
        ],
    )
    write_jsonl(
        tmp_path / "queries.jsonl",
        [
            {"_id": "1", "text": "alpha?", "metadata": {"A": "leak"}},
            {"_id": "2", "text": "gamma?"},
            {"_id": "3", "text": "not in the split"},
        ],
    )
    (tmp_path / "qrels").mkdir(exist_ok=True)
    (tmp_path / "qrels" / "test.tsv").write_text(qrels)
    return tmp_path


def test_beir_evaluates_only_judged_queries(tmp_path: Path) -> None:
    """BEIR: split qrels with header; title + ' ' + text; unjudged queries are not evaluated."""
    g = load(beir(tmp_path))
    assert detect_format(GoldenSetConfig(path=tmp_path)) == "beir"
    assert g.query_ids == ["1", "2"]
    assert g.doc_texts == ["Alpha first", "second", "Gamma"]
    assert g.qrels == {"1": {"A": 1, "B": 0}, "2": {"C": 2}}


def test_beir_unknown_split_lists_available(tmp_path: Path) -> None:
    """A missing split names the splits that exist."""
    beir(tmp_path)
    assert "available splits: test" in problems_of(tmp_path, split="dev")[0]


def test_beir_bad_qrels_lines(tmp_path: Path) -> None:
    """Bad qrels rows are reported with their line numbers."""
    beir(tmp_path, "query-id\tcorpus-id\tscore\n1\tA\tx\n1\tZ\t1\n9\tA\t1\n1\tA\n")
    got = "\n".join(problems_of(tmp_path))
    q = tmp_path / "qrels" / "test.tsv"
    assert f"{q}:2: grade 'x' is not a number" in got
    assert f"{q}:3: judgment for unknown document 'Z'" in got
    assert f"{q}:4: judgment for unknown query '9'" in got
    assert f"{q}:5: expected 3 columns, found 2" in got


def test_trec_format(tmp_path: Path) -> None:
    """TREC: qrels `qid iter docno rel` + queries.tsv + corpus.tsv beside it, auto-detected."""
    (tmp_path / "qrels.txt").write_text("q1 0 d1 2\nq1 0 d2 0\nq2 0 d2 1\n")
    (tmp_path / "queries.tsv").write_text("q1\tfirst query\nq2\tsecond query\n")
    (tmp_path / "corpus.tsv").write_text("d1\tdoc one\nd2\tdoc two\n")
    g = load(tmp_path)
    assert g.format == "trec"
    assert g.qrels == {"q1": {"d1": 2, "d2": 0}, "q2": {"d2": 1}}
    assert g.query_texts == ["first query", "second query"]
    also = load(tmp_path / "qrels.txt")
    assert also.fingerprint == g.fingerprint


def test_trec_missing_queries_file_is_explained(tmp_path: Path) -> None:
    """Without a queries file the error says how to provide one."""
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\n")
    (tmp_path / "corpus.tsv").write_text("d1\tdoc\n")
    assert "golden_set.queries" in problems_of(tmp_path)[0]


def test_unknown_layout_is_explained(tmp_path: Path) -> None:
    """A directory in no known format says what was expected."""
    assert "cannot tell the format" in problems_of(tmp_path)[0]
    assert "not found" in problems_of(tmp_path / "missing")[0]


def test_scifact_counts(scifact_path: Path) -> None:
    """SciFact test split: 5,183 documents, 300 judged queries, 339 judgments, all relevant."""
    g = load(scifact_path)
    assert (len(g.doc_ids), len(g.query_ids)) == (5183, 300)
    assert sum(len(j) for j in g.qrels.values()) == 339
    assert g.queries_without_relevant == []


def test_trec_malformed_lines_are_located(tmp_path: Path) -> None:
    """TREC files: a queries line without a tab and a qrels line with 3 columns, by line."""
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\nq1 d1 1\n")
    (tmp_path / "queries.tsv").write_text("q1\tfine\nq2 no tab here\n")
    (tmp_path / "corpus.tsv").write_text("d1\tdoc\n")
    got = "\n".join(problems_of(tmp_path))
    assert f"{tmp_path / 'queries.tsv'}:2: expected 'query_id<TAB>text'" in got
    assert f"{tmp_path / 'qrels.txt'}:2: expected 4 columns, found 3" in got


def _native_bad_ids(tmp_path: Path) -> list[tuple[str, int]]:
    native(
        tmp_path,
        docs=[{"id": "d1", "text": "x"}, {"id": "d 2", "text": "y"}],
        queries=[{"id": "q\t1", "text": "t", "relevant": ["d1"]}],
    )
    return [("corpus.jsonl", 2), ("queries.jsonl", 1)]


def _beir_bad_ids(tmp_path: Path) -> list[tuple[str, int]]:
    beir(tmp_path)
    write_jsonl(
        tmp_path / "corpus.jsonl", [{"_id": "A", "text": "a"}, {"_id": "B\u00a0", "text": "b"}]
    )
    write_jsonl(tmp_path / "queries.jsonl", [{"_id": "1\x1b[2J", "text": "alpha?"}])
    return [("corpus.jsonl", 2), ("queries.jsonl", 1)]


def _trec_bad_ids(tmp_path: Path) -> list[tuple[str, int]]:
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\n")
    (tmp_path / "queries.tsv").write_text("q1\tfine\nq 2\tspace in the id\n")
    (tmp_path / "corpus.tsv").write_text("d1\tdoc\nd\x002\tdoc\n")
    return [("corpus.tsv", 2), ("queries.tsv", 2)]


@pytest.mark.parametrize("write", [_native_bad_ids, _beir_bad_ids, _trec_bad_ids])
def test_ids_with_whitespace_or_controls_are_refused_with_file_and_line(
    tmp_path: Path, write: Callable[[Path], list[tuple[str, int]]]
) -> None:
    """Every reader refuses a document or query id that a TREC run file cannot hold (whitespace,
    a control character), naming file and line."""
    expected = write(tmp_path)
    got = problems_of(tmp_path)
    for name, line in expected:
        where = f"{tmp_path / name}:{line}: "
        assert any(p.startswith(where) and "contains whitespace" in p for p in got), got


def test_every_ascii_character_is_judged_as_the_unicode_rule_judges_it(tmp_path: Path) -> None:
    """check_id's shortcut for printable ASCII refuses exactly what its Unicode rule refuses
    (whitespace and the Cc category), one character at a time, inside an id and alone."""
    for code in range(128):
        c = chr(code)
        refused = c.isspace() or unicodedata.category(c) == "Cc"
        for value in (c, f"d{c}1"):
            scan = GoldenSetScan(1)
            scan.check_id("document", value, tmp_path / "qrels.txt", 1)
            assert bool(scan.problems) == refused, (code, value)


def scan_warnings(scan: GoldenSetScan) -> set[tuple[str | None, str, int | None]]:
    return {(w.code, Path(w.file or "").name, w.line) for w in scan.warnings}


def test_trec_qrels_are_read_as_trec_eval_reads_them(tmp_path: Path) -> None:
    """Comments and blank lines skipped, negative grades judged non-relevant, decimal grades
    truncated toward zero with one warning naming the lines, empty documents embedded as ""."""
    qrels = cranfield_like(tmp_path)
    scan = scan_golden_set(GoldenSetConfig(path=qrels))
    assert scan.problems == []
    g = scan.golden_set()
    assert g.qrels == {
        "1": {"4": 2, "5": 1, "10": -1, "3": 1},
        "2": {"3": 2, "4": -2, "2": 0},
        "3": {"7": 3, "9": 0},
        "4": {"1": 2, "6": 1},
        "5": {"8": -1, "1": -2},
    }
    assert g.doc_texts[1] == "" and g.doc_texts[5] == ""
    assert g.queries_without_relevant == ["5"]
    assert scan_warnings(scan) == {
        ("empty-document", "corpus.jsonl", 2),
        ("empty-document", "corpus.jsonl", 6),
        ("non-integer-grade", "qrels.txt", 3),
        ("no-relevant-document", "qrels.txt", 15),
    }
    truncated = next(w for w in scan.warnings if w.code == "non-integer-grade")
    assert truncated.message.endswith("at lines 3, 12, 13")
    assert set(g.warnings) == set(scan.warnings)  # the run keeps them for its report


def test_relevance_level_decides_which_queries_have_a_relevant_document(tmp_path: Path) -> None:
    """At level 2 a query whose best grade is 1 has no relevant document, and the warning says
    which level."""
    qrels = cranfield_like(tmp_path)
    scan = scan_golden_set(GoldenSetConfig(path=qrels), relevance_level=2)
    g = scan.golden_set()
    assert g.relevance_level == 2 and g.n_relevant("1") == 1
    assert g.queries_without_relevant == ["5"]
    assert g.evaluated().query_ids == ["1", "2", "3", "4"]
    (qrels.parent / "qrels.txt").write_text("1 0 5 1\n2 0 3 2\n")
    scan = scan_golden_set(GoldenSetConfig(path=qrels), relevance_level=2)
    assert scan.golden_set().queries_without_relevant == ["1"]
    (w,) = [w for w in scan.warnings if w.code == "no-relevant-document"]
    assert "grade >= 2" in w.message and w.line == 1
    # the reader does not know the mode: the message may claim neither (under zero, query "1"
    # with its grade-1 document keeps a positive nDCG, so "scores it 0" was wrong too)
    assert w.message.endswith(
        "left out of the means under queries_without_relevant: exclude, scored as trec_eval "
        "scores it under zero"
    )


def test_many_decimal_grades_make_one_warning(tmp_path: Path) -> None:
    """One warning per file, naming the first ten lines and how many more."""
    qrels = cranfield_like(tmp_path)
    qrels.write_text("".join(f"1 0 {d} 0.{d}\n" for d in range(1, 11)) + "2 0 3 1.0\n2 0 4 1.9\n")
    scan = scan_golden_set(GoldenSetConfig(path=qrels))
    (w,) = [w for w in scan.warnings if w.code == "non-integer-grade"]
    assert w.message.endswith("at lines 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 (+2 more)")
    assert scan.golden_set().qrels["2"] == {"3": 1, "4": 1}


def test_beir_and_native_accept_negative_grades(tmp_path: Path) -> None:
    """BEIR qrels and native `relevant` maps take negative grades as judged non-relevant; a
    decimal grade on the first line is a grade, not a header."""
    (tmp_path / "b").mkdir()
    beir(tmp_path / "b", "1\tA\t1.5\n1\tB\t-2\n2\tC\t-1\n2\tA\t1\n")
    g = load(tmp_path / "b")
    assert g.qrels == {"1": {"A": 1, "B": -2}, "2": {"C": -1, "A": 1}}
    (tmp_path / "n").mkdir()
    g = load(native(tmp_path / "n", queries=[{"id": "q1", "text": "t", "relevant": {"d1": -1}}]))
    assert g.qrels == {"q1": {"d1": -1}} and g.queries_without_relevant == ["q1"]


@pytest.mark.parametrize("grade", [str(10**30), "1001", "-1001", "1e3", "high", "1_0"])
def test_grades_out_of_range_or_not_numbers_are_errors_with_line(
    tmp_path: Path, grade: str
) -> None:
    """A grade beyond +-1000 (whose gains would overflow) or that is not a number is an error
    naming file and line, never a traceback; +-1000 itself is accepted."""
    qrels = cranfield_like(tmp_path)
    qrels.write_text(f"1 0 4 1000\n1 0 3 -1000\n1 0 5 {grade}\n")
    (problem,) = problems_of(qrels)
    assert problem.startswith(f"{qrels}:3: grade ")
    out_of_range = grade.lstrip("-").isdigit()
    assert ("out of range" if out_of_range else "is not a number") in problem


def test_empty_texts_are_warnings_not_errors(tmp_path: Path) -> None:
    """An empty document or query is embedded as the empty string; the scan warns with line."""
    native(
        tmp_path,
        docs=[{"id": "d1", "text": "x"}, {"id": "d2", "title": "", "text": ""}],
        queries=[
            {"id": "q1", "text": "t", "relevant": ["d1"]},
            {"id": "q2", "text": " ", "relevant": ["d2"]},
        ],
    )
    scan = scan_golden_set(GoldenSetConfig(path=tmp_path))
    assert scan.problems == []
    assert scan_warnings(scan) == {
        ("empty-document", "corpus.jsonl", 2),
        ("empty-query", "queries.jsonl", 2),
    }
    assert scan.golden_set().doc_texts == ["x", ""]


def test_native_query_without_any_judgment_is_not_evaluated(tmp_path: Path) -> None:
    """`relevant: {}` (or `[]`) judges nothing: trec_eval would never see the query, as BEIR and
    TREC sets leave out their unjudged queries. Under queries_without_relevant: zero it was scored
    0 and pulled the means below trec_eval's; it is now left out, with a warning at its line."""
    queries = [
        {"id": "q1", "text": "reset password", "relevant": {"d1": 1}},
        {"id": "q2", "text": "billing", "relevant": {}},
        {"id": "q3", "text": "disk full", "relevant": []},
        {"id": "q4", "text": "invoices", "relevant": {"d2": 0}},
    ]
    path = native(tmp_path, queries=queries)
    scan = scan_golden_set(GoldenSetConfig(path=path))
    g = scan.golden_set()
    assert g.query_ids == ["q1", "q4"]  # q4 is judged (non-relevant): scored under zero
    unjudged = [(w.line, w.message) for w in scan.warnings if w.code == "unjudged-query"]
    assert unjudged == [
        (2, "query 'q2' judges no document: it is not evaluated"),
        (3, "query 'q3' judges no document: it is not evaluated"),
    ]
