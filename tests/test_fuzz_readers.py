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
from evalret.commands.compare import CompareSettings, _obtain, run_comparison
from evalret.commands.evaluate import run_evaluation
from evalret.commands.report import render_saved
from evalret.data.baseline import load_baseline, save_baseline
from evalret.data.config import Config, GoldenSetConfig, SlicesConfig, load_config
from evalret.data.goldenset import load_golden_set
from evalret.errors import GoldenSetError, InputError, Problem
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
