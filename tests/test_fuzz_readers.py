"""Fuzzing every reader: any bytes, and valid content with random mutations, either load or fail
with an InputError (exit 2) whose problems name the file and, inside a file, the line (a field
path for whole JSON documents); never another exception, never exit 3.

The properties hold whatever the grade policy is (negative or decimal grades loading or refused):
they only say how a refusal looks.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from evalret.cli import app
from evalret.commands.report import render_saved
from evalret.data.baseline import load_baseline, save_baseline
from evalret.data.config import Config, GoldenSetConfig, SlicesConfig, load_config
from evalret.data.goldenset import load_golden_set
from evalret.errors import GoldenSetError, InputError, Problem
from evalret.pipeline.compare import CompareSettings, _obtain, run_comparison
from evalret.pipeline.evaluate import run_evaluation
from helpers import HashEmbedder, make_set
from strategies import config_text, fuzzed_file, report_bytes

# a fixed budget and seed in the suite; EVALRET_FUZZ_EXAMPLES=2000 hunts longer, with random seeds
HUNT = int(os.environ.get("EVALRET_FUZZ_EXAMPLES", "0"))
FUZZ = settings(
    max_examples=HUNT or 150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=not HUNT,
)
CLI_FUZZ = settings(FUZZ, max_examples=HUNT // 5 or 25)
# problems that are about a file as a whole, or about no file: they carry no line
WHOLE_FILE = {"missing-file", "empty-corpus", "no-queries"}

DOCS = [
    {"id": "d1", "title": "Reset", "text": "How to reset a password.", "metadata": {"s": 1}},
    {"id": "d2", "text": "Billing cycles start on the first."},
]
QUERIES = [
    {"id": "q1", "text": "forgot password", "relevant": {"d1": 3, "d2": 0}, "tags": ["a"]},
    {"id": "q2", "text": "billing", "relevant": ["d2"], "frequency": 3},
]
BEIR_DOCS = [{"_id": "A", "title": "Alpha", "text": "first"}, {"_id": "B", "text": "second"}]
BEIR_QUERIES = [{"_id": "1", "text": "alpha?", "metadata": {}}, {"_id": "2", "text": "b?"}]
QRELS_TSV = ["query-id\tcorpus-id\tscore", "1\tA\t1", "2\tB\t2"]
TREC_QRELS = ["q1 0 d1 2", "q1 0 d2 0", "q2 0 d2 1"]
TREC_QUERIES = ["q1\tfirst query", "q2\tsecond query"]
TREC_CORPUS = ["d1\tdoc one", "d2\tdoc two"]
COMPARE_SETTINGS = CompareSettings(samples=200)


def assert_located(error: InputError, files: list[Path], line_needed: bool = True) -> None:
    """Every problem names one of ``files`` (or, without problems, the summary names one), and
    carries a line unless it is about a whole file."""
    names = [str(f) for f in files]
    if not error.problems:
        assert any(n in error.summary for n in names), error.summary
        return
    for p in error.problems:
        assert_problem(p, names, line_needed)


def assert_problem(p: Problem, names: list[str], line_needed: bool) -> None:
    if p.code in WHOLE_FILE and p.file is None:
        return
    assert p.file is not None and any(p.file.startswith(n) for n in names), p
    if line_needed and p.code not in WHOLE_FILE:
        assert p.line is not None and p.line >= 1, p


def load_or_located(cfg: GoldenSetConfig, files: list[Path]) -> None:
    """Loads (and what a run does next with the set works) or is refused, located."""
    try:
        golden = load_golden_set(cfg)
    except GoldenSetError as e:
        assert_located(e, files)
        return
    golden.qrel_arrays()
    golden.slices(SlicesConfig())


def write(directory: Path, contents: dict[str, bytes]) -> list[Path]:
    paths = []
    for name, data in contents.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        paths.append(path)
    return paths


@FUZZ
@given(corpus=fuzzed_file(DOCS), queries=fuzzed_file(QUERIES))
def test_native_reader(corpus: bytes, queries: bytes) -> None:
    with tempfile.TemporaryDirectory() as d:
        files = write(Path(d), {"corpus.jsonl": corpus, "queries.jsonl": queries})
        load_or_located(GoldenSetConfig(path=Path(d), format="native"), files)
        load_or_located(GoldenSetConfig(path=Path(d)), [*files, Path(d)])


@FUZZ
@given(
    corpus=fuzzed_file(BEIR_DOCS),
    queries=fuzzed_file(BEIR_QUERIES),
    qrels=fuzzed_file(None, QRELS_TSV),
)
def test_beir_reader(corpus: bytes, queries: bytes, qrels: bytes) -> None:
    with tempfile.TemporaryDirectory() as d:
        files = write(
            Path(d), {"corpus.jsonl": corpus, "queries.jsonl": queries, "qrels/test.tsv": qrels}
        )
        load_or_located(GoldenSetConfig(path=Path(d)), files)


@FUZZ
@given(
    qrels=fuzzed_file(None, TREC_QRELS),
    queries=fuzzed_file(None, TREC_QUERIES),
    corpus=fuzzed_file(None, TREC_CORPUS),
    jsonl=st.booleans(),
    jsonl_records=fuzzed_file(BEIR_DOCS),
)
def test_trec_reader(
    qrels: bytes, queries: bytes, corpus: bytes, jsonl: bool, jsonl_records: bytes
) -> None:
    with tempfile.TemporaryDirectory() as d:
        contents = {"qrels.txt": qrels, "queries.tsv": queries}
        contents.update({"corpus.jsonl": jsonl_records} if jsonl else {"corpus.tsv": corpus})
        files = write(Path(d), contents)
        load_or_located(GoldenSetConfig(path=Path(d)), files)


@FUZZ
@given(text=config_text())
def test_config_reader(text: bytes) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "evalret.yaml"
        path.write_bytes(text)
        try:
            load_config(path)
        except InputError as e:
            # "nested too deeply" is the one YAML problem without a line
            assert_located(e, [path], line_needed="nested too deeply" not in str(e))


@pytest.fixture(scope="module")
def report_data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A saved report.json of a small run (exact, HNSW, BM25, hybrid; slices), as JSON data."""
    root = tmp_path_factory.mktemp("fuzz-report")
    config = Config(golden_set=GoldenSetConfig(path=make_set(root / "gs")))
    save_baseline(run_evaluation(config, embedder=HashEmbedder()).report, root / "r.json")
    data: dict[str, Any] = json.loads((root / "r.json").read_text())
    return data


@pytest.fixture(scope="module")
def compare_data(report_data: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A compare.json of the report against itself, as JSON data."""
    root = tmp_path_factory.mktemp("fuzz-compare")
    (root / "a.json").write_text(json.dumps(report_data))
    run_comparison(root / "a.json", root / "a.json", root, COMPARE_SETTINGS)
    return json.loads((root / "compare.json").read_text())


def located_report_error(path: Path, call: Any) -> None:
    """``call()`` loads or raises an InputError naming ``path``."""
    try:
        call()
    except InputError as e:
        assert_located(e, [path], line_needed=False)
        assert str(path) in str(e)


@FUZZ
@given(data=st.data())
def test_baseline_and_compare_loaders(report_data: dict[str, Any], data: st.DataObject) -> None:
    content = data.draw(report_bytes(report_data))
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "baseline.json"
        path.write_bytes(content)
        located_report_error(path, lambda: load_baseline(path))
        located_report_error(path, lambda: _obtain(path, None))


@FUZZ
@given(data=st.data())
def test_saved_report_renders_or_is_refused(
    report_data: dict[str, Any], data: st.DataObject
) -> None:
    content = data.draw(report_bytes(report_data))
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "report.json"
        path.write_bytes(content)
        located_report_error(path, lambda: render_saved(path))


@FUZZ
@given(data=st.data())
def test_saved_comparison_renders_or_is_refused(compare_data: Any, data: st.DataObject) -> None:
    content = data.draw(report_bytes(compare_data))
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "compare.json"
        path.write_bytes(content)
        located_report_error(path, lambda: render_saved(path))


runner = CliRunner()


def exit_0_or_2(*args: str) -> None:
    result = runner.invoke(app, list(args))
    assert result.exit_code in (0, 2), (args, result.output)
    assert "Internal error" not in result.output and "Traceback" not in result.output


@CLI_FUZZ
@given(data=st.data())
def test_cli_on_fuzzed_files(report_data: dict[str, Any], data: st.DataObject) -> None:
    """`validate`, `baseline show` and `report` on fuzzed inputs exit 0 or 2."""
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        write(
            root / "gs",
            {
                "corpus.jsonl": data.draw(fuzzed_file(DOCS)),
                "queries.jsonl": data.draw(fuzzed_file(QUERIES)),
            },
        )
        write(root, {"report.json": data.draw(report_bytes(report_data))})
        exit_0_or_2("validate", str(root / "gs"))
        exit_0_or_2("validate", str(root / "gs"), "--report", str(root / "report.json"))
        exit_0_or_2("baseline", "show", str(root / "report.json"))
        exit_0_or_2("report", str(root / "report.json"), "--out", str(root / "html"))


# --- run files against a model of trec_eval's reader ---------------------------------------------

C_SPACE = b" \t\n\v\f\r"  # C's isspace in the C locale
_LIBC_ATOF = None


def libc_atof(text: bytes) -> float:
    """C's own atof (the C library through ctypes): the score oracle of the model below."""
    global _LIBC_ATOF
    if _LIBC_ATOF is None:
        import ctypes
        import ctypes.util

        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        libc.atof.restype, libc.atof.argtypes = ctypes.c_double, [ctypes.c_char_p]
        _LIBC_ATOF = libc.atof
    return float(_LIBC_ATOF(text))


def _field(data: bytes, pos: int) -> tuple[bytes, int]:
    """The field at ``pos`` (after the spaces, not the newline, before it) and the position after
    it, as parse_results_line walks: spaces up to the newline, then non-spaces."""
    while data[pos] != 10 and data[pos] in C_SPACE:
        pos += 1
    start = pos
    while data[pos] not in C_SPACE:
        pos += 1
    return data[start:pos], pos


def trec_eval_reads(data: bytes) -> dict[str, dict[str, float]] | None:
    """What trec_eval's get_trec_results makes of ``data``, walking its bytes the way the C code
    does (None: a malformed line), plus evalret's documented stricter rules (no ranking line, a
    NUL, a NaN score, a qid or docno not UTF-8) and form_res_rels's duplicate refusal."""
    if not data.strip(C_SPACE) or b"\0" in data:
        return None
    data = data.removeprefix(b"\xef\xbb\xbf")
    data += b"" if data.endswith(b"\n") else b"\n"
    pos, run = 0, {}
    while pos < len(data):
        while data[pos] != 10 and data[pos] in C_SPACE:
            pos += 1
        if data[pos] == 10 or data[pos] == ord("#"):
            pos = data.index(b"\n", pos) + 1
            continue
        fields = []
        for _ in range(6):
            field, pos = _field(data, pos)
            if not field:
                return None  # the newline came before the sixth column
            fields.append(field)
        pos = data.index(b"\n", pos) + 1  # the rest of the line is ignored
        score = libc_atof(fields[4])
        try:
            qid, doc = fields[0].decode(), fields[2].decode()
        except UnicodeDecodeError:
            return None
        if score != score or doc in run.setdefault(qid, {}):
            return None  # NaN; a document twice in one query
        run[qid][doc] = score
    return run or None


def run_line(draw: st.DrawFn) -> bytes:
    """A TREC run line with trec_eval's tolerated variations: separators, extra columns, scores
    in every C number format or none, comments, blanks, a missing column now and then."""
    space = st.sampled_from([b" ", b"\t", b"  ", b"\v", b"\f", b"\r", b" \t", b"\xa0", b"\x1c"])
    score = st.sampled_from(
        [b"1", b"0.5", b"2.5e1", b".5", b"7.", b"+2", b"-1E-2", b"0x1.8p1", b"0x", b"1e", b"inf",
         b"-Infinity", b"1e999", b"12abc", b"n/a", b"nan", b"0", b"-0", b"3.25"]
    )  # fmt: skip
    kind = draw(st.integers(0, 19))
    if kind == 0:
        return draw(st.sampled_from([b"", b"  ", b"# a comment \xff", b"  #x y", b"\xef\xbb\xbf"]))
    if kind == 1:
        return draw(st.binary(max_size=12))
    cols = [
        draw(st.sampled_from([b"q1", b"q2", b"q\xc3\xa9", b"#q"])),
        draw(st.sampled_from([b"Q0", b"0", b"\xff"])),
        draw(st.sampled_from([b"a", b"b", b"c", b"d", b"e", b"\xc3\xa9", b"\xe9"])),
        draw(st.sampled_from([b"1", b"x"])),
        draw(score),
        draw(st.sampled_from([b"run", b"t\xe9"])),
    ]
    cols += draw(st.lists(st.sampled_from([b"x", b"1.0", b"\xff"]), max_size=2))
    if kind == 2:
        cols = cols[: draw(st.integers(1, 5))]
    lead = draw(st.sampled_from([b"", b" ", b"\t"]))
    return lead + b"".join(c + draw(space) for c in cols[:-1]) + cols[-1]


@st.composite
def run_bytes(draw: st.DrawFn) -> bytes:
    lines = [run_line(draw) for _ in range(draw(st.integers(0, 12)))]
    ends = [draw(st.sampled_from([b"\n", b"\r\n", b" \n"])) for _ in lines]
    data = b"".join(line + end for line, end in zip(lines, ends, strict=True))
    return data[:-1] if data and draw(st.booleans()) else data


@FUZZ
@given(data=run_bytes())
def test_trec_run_reader_reads_what_trec_eval_reads(data: bytes) -> None:
    """Any TREC run: evalret's reader accepts it exactly when trec_eval's reader does (less
    evalret's documented stricter rules), with the same scores (C's atof, through ctypes) and
    trec_eval's order; a refusal names the file and, inside it, the line."""
    from evalret.data.runfile import read_run

    want = trec_eval_reads(data)
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "r.trec"
        path.write_bytes(data)
        try:
            got = read_run(path, "trec", 1000)
        except InputError as e:
            assert want is None, (e.problems, want)
            assert_located(e, [path], line_needed=e.problems[0].code != "empty-run")
            return
    assert want is not None, got.rankings
    assert {q: dict(pairs) for q, pairs in got.rankings.items()} == want
    for pairs in got.rankings.values():
        assert pairs == sorted(pairs, key=lambda p: (p[1], p[0]), reverse=True)


@FUZZ
@given(
    queries=st.lists(
        st.tuples(
            st.sampled_from(["q1", "q2", "q3"]),
            st.lists(st.tuples(st.sampled_from("abcdef"), st.integers(-3, 3)), max_size=6),
        ),
        max_size=4,
    ),
    depth=st.integers(1, 4),
)
def test_jsonl_run_reader_refuses_every_repeat(
    queries: list[tuple[str, list[tuple[str, int]]]], depth: int
) -> None:
    """A JSONL run is read exactly when no query is given twice and no query repeats a document
    (at any depth kept), and then holds each query's best ``depth`` under the tie rule."""
    from evalret.data.runfile import read_run

    lines = [
        json.dumps({"query_id": q, "results": [{"doc_id": d, "score": s} for d, s in results]})
        for q, results in queries
    ]
    qids = [q for q, _ in queries]
    valid = len(set(qids)) == len(qids) and all(
        len({d for d, _ in results}) == len(results) for _, results in queries
    )
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "r.jsonl"
        path.write_text("".join(line + "\n" for line in lines))
        try:
            got = read_run(path, "jsonl", depth)
        except InputError as e:
            assert not valid or not queries, e.problems
            assert_located(e, [path], line_needed=e.problems[0].code != "empty-run")
            return
    assert valid and queries
    want = {
        q: sorted(((d, float(s)) for d, s in r), key=lambda p: (p[1], p[0]), reverse=True)[:depth]
        for q, r in queries
    }
    assert got.rankings == want
