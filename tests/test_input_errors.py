"""Bad input in every reader is exit 2 with the file and line (or key, option, JSON path): bad
UTF-8, duplicate JSON keys, a BEIR directory without qrels/, inconsistent or binary baselines and
saved reports, control characters in a config, an unknown --format."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalret.data.baseline import load_baseline, save_baseline
from evalret.data.config import Config, GoldenSetConfig, load_config
from evalret.errors import ConfigError, InputError
from evalret.pipeline.evaluate import run_evaluation
from helpers import HashEmbedder, invoke, make_set
from test_goldenset import beir, load, native, problems_of


@pytest.fixture(scope="module")
def saved_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A report.json of a small run, as JSON data."""
    root = tmp_path_factory.mktemp("report")
    config = Config(golden_set=GoldenSetConfig(path=make_set(root / "gs")))
    report = run_evaluation(config, embedder=HashEmbedder()).report
    save_baseline(report, root / "report.json")
    data: dict[str, Any] = json.loads((root / "report.json").read_text())
    return data


def test_invalid_utf8_is_reported_by_line_and_column_and_reading_goes_on(
    tmp_path: Path,
) -> None:
    """A bad byte on line 2 names line 2 and its column; line 3's duplicate id is still found."""
    native(tmp_path)
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_bytes(
        b'{"id": "d1", "text": "a"}\n{"id": "d2", "text": "caf\xe9"}\n{"id": "d1", "text": "b"}\n'
    )
    got = problems_of(tmp_path)
    assert f"{corpus}:2: not valid UTF-8 (invalid continuation byte) at column 26" in got
    assert any(p.startswith(f"{corpus}:3: duplicate document id 'd1'") for p in got)


def test_a_byte_order_mark_is_not_an_error(tmp_path: Path) -> None:
    """A UTF-8 byte-order mark at the start of a JSONL file is dropped, not a JSON error."""
    native(tmp_path)
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_bytes(b"\xef\xbb\xbf" + corpus.read_bytes())
    assert load(tmp_path).doc_ids == ["d1", "d2", "d3"]  # type: ignore[attr-defined]


def test_duplicate_key_in_relevant_is_an_error(tmp_path: Path) -> None:
    """{"d1": 3, "d1": 0} is not "last one wins": the line and the key are named."""
    native(tmp_path)
    queries = tmp_path / "queries.jsonl"
    queries.write_text('{"id": "q1", "text": "t", "relevant": {"d1": 3, "d1": 0}}\n')
    assert f"{queries}:1: duplicate key 'd1' in one JSON object" in problems_of(tmp_path)


def test_integers_beyond_int64_are_refused_where_read(tmp_path: Path) -> None:
    """A frequency of 10**30 in queries.jsonl is a schema error at its line (an OverflowError in
    `validate` before), a grade of 10**30 is out of range at its line (an OverflowError in every
    run before)."""
    native(tmp_path)
    queries = tmp_path / "queries.jsonl"
    huge = 10**30
    queries.write_text(
        json.dumps({"id": "q1", "text": "t", "relevant": {"d1": 1}, "frequency": huge})
        + "\n"
        + json.dumps({"id": "q2", "text": "t", "relevant": {"d1": huge}})
        + "\n"
    )
    got = problems_of(tmp_path)
    assert any(p.startswith(f"{queries}:1: frequency: Input should be less than") for p in got)
    assert any(
        p.startswith(f"{queries}:2: grade {huge} for ('q2', 'd1') is out of range") for p in got
    )
    code, out = invoke("validate", str(tmp_path))
    assert code == 2 and "Internal error" not in out


def test_beir_directory_without_qrels_says_so(tmp_path: Path) -> None:
    """corpus.jsonl with _id records and no qrels/: named as a BEIR layout, not a schema error."""
    beir(tmp_path)
    for split in (tmp_path / "qrels").iterdir():
        split.unlink()
    (tmp_path / "qrels").rmdir()
    got = problems_of(tmp_path)
    assert len(got) == 1 and "BEIR layout without qrels/ directory" in got[0]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00", "not valid UTF-8"),
        (b'{"schema_version": 1,\n "query_ids": [\xff]}', "not valid UTF-8"),
    ],
)
def test_binary_baseline_is_an_input_error(tmp_path: Path, content: bytes, message: str) -> None:
    """A binary or non-UTF-8 baseline: exit 2 naming the file and line (was a traceback)."""
    path = tmp_path / "b.json"
    path.write_bytes(content)
    with pytest.raises(InputError, match=message) as e:
        load_baseline(path)
    assert e.value.problems[0].file == str(path) and e.value.problems[0].line is not None
    code, out = invoke("baseline", "show", str(path))
    assert code == 2 and "Internal error" not in out


def _mutated(data: dict[str, Any], tmp_path: Path, change: Any) -> Path:
    data = json.loads(json.dumps(data))
    change(data)
    path = tmp_path / "report.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda d: d["indexes"]["exact"]["per_query"]["ndcg@10"].pop(), "per_query.ndcg@10"),
        (lambda d: d["indexes"]["hnsw"]["top_ids"].pop(), "indexes.hnsw.top_ids"),
        (lambda d: d["query_ids"].append("extra"), "per_query"),
        (lambda d: d["slices"]["all"]["members"].append(999), "slices.all.members"),
        (lambda d: d["slices"]["all"]["members"].append(-1), "slices.all.members"),
        # found by the fuzzer (tests/test_fuzz_readers.py): each was an internal error in the
        # HTML report
        (lambda d: d["indexes"]["exact"]["slices"]["odd"]["metrics"].pop("mrr@10"), "odd.metrics"),
        (lambda d: d["indexes"]["bm25"]["curves"]["values"]["ndcg"]["all"].pop(), "curves"),
        (lambda d: d["fingerprint"]["metrics"].update(names=None), "fingerprint.metrics"),
        (lambda d: d["lexical"]["slices"]["odd"]["dense_wins"].clear(), "odd.dense_wins"),
        (lambda d: d["ann"]["hnsw"]["slices"].clear(), "ann.hnsw.slices: empty"),
    ],
)
def test_report_arrays_out_of_line_with_query_ids_are_input_errors(
    saved_report: dict[str, Any], tmp_path: Path, change: Any, field: str
) -> None:
    """Per-query arrays or top_ids of another length than query_ids, slice members outside it:
    refused where the report is loaded, naming the file and the field, for `baseline show`,
    `report` and `compare` alike (exit 2, never an internal error)."""
    path = _mutated(saved_report, tmp_path, change)
    with pytest.raises(InputError) as e:
        load_baseline(path)
    assert e.value.problems[0].file == str(path) and field in e.value.problems[0].message
    for args in (
        ("baseline", "show", str(path)),
        ("report", str(path), "--out", str(tmp_path / "html")),
        ("compare", str(path), str(path), "--out", str(tmp_path / "cmp"), "--no-progress"),
    ):
        code, out = invoke(*args)
        assert code == 2 and field in out, (args, out)


def test_validate_report_that_is_not_utf8_or_holds_non_numbers(
    saved_report: dict[str, Any], tmp_path: Path
) -> None:
    """`validate --report`: bad UTF-8 named by line; a per-query value that is not a number is
    named by its JSON path (was an internal error)."""
    gs = make_set(tmp_path / "gs")
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{\n"query_ids": "\xc3"}')
    code, out = invoke("validate", str(gs), "--report", str(bad))
    assert code == 2 and f"{bad}:2: not valid UTF-8" in out
    path = _mutated(
        saved_report, tmp_path, lambda d: d["indexes"]["exact"]["per_query"]["ndcg@10"].append({})
    )
    data = json.loads(path.read_text())
    data["query_ids"].append("extra")
    path.write_text(json.dumps(data))
    code, out = invoke("validate", str(gs), "--report", str(path))
    assert code == 2 and "per_query.ndcg@10[24]: {} is not a number" in out, out


def test_config_that_is_not_utf8_or_holds_a_control_character(tmp_path: Path) -> None:
    """A config with a bad byte or a NUL: ConfigError (exit 2) with the line."""
    path = tmp_path / "cfg.yaml"
    path.write_bytes(b"model:\n  name: caf\xe9\n")
    with pytest.raises(ConfigError) as e:
        load_config(path)
    assert str(e.value.problems[0]).startswith(f"{path}:2: not valid UTF-8")
    path.write_bytes(b"model:\n  name: a\x00b\n")
    with pytest.raises(ConfigError) as e:
        load_config(path)
    assert str(e.value.problems[0]).startswith(f"{path}:2: unacceptable character #x0000")


def test_config_integer_too_long_to_convert_is_located(tmp_path: Path) -> None:
    """Found by the fuzzer: a 5000-digit integer made PyYAML raise a bare ValueError (exit 3)."""
    path = tmp_path / "cfg.yaml"
    path.write_text("bootstrap:\n  seed: " + "9" * 5000 + "\n")
    with pytest.raises(ConfigError) as e:
        load_config(path)
    assert str(e.value.problems[0]).startswith(f"{path}:2: Exceeds the limit (4300 digits)")


def test_unknown_format_names_the_option_and_the_choices(tmp_path: Path) -> None:
    """`validate --format xml`: exit 2 naming --format and the four choices, no pydantic dump."""
    code, out = invoke("validate", str(make_set(tmp_path)), "--format", "xml")
    assert code == 2
    assert "'--format'" in out and "choose auto, native, beir, trec" in out
    assert "pydantic" not in out and "validation error" not in out


def test_training_lines_too_deep_or_too_long_a_number_are_located(tmp_path: Path) -> None:
    """`evalret leakage --train`: deep nesting and a 5000-digit number are bad lines with their
    numbers (were a RecursionError and a ValueError: exit 3)."""
    from evalret.data.training import read_training_queries

    train = tmp_path / "train.jsonl"
    deep = "[" * 100_000 + "]" * 100_000
    train.write_text('{"text": "fine"}\n' + deep + "\n" + '{"text": ' + "9" * 5000 + "}\n")
    with pytest.raises(InputError) as e:
        read_training_queries(train)
    got = [(p.line, p.message) for p in e.value.problems]
    assert got == [
        (2, "invalid JSON: nested too deeply"),
        (
            3,
            "invalid JSON: Exceeds the limit (4300 digits) for integer string conversion: "
            "value has 5000 digits",
        ),
    ]


def test_compare_json_whose_slices_disagree_is_refused(
    saved_report: dict[str, Any], tmp_path: Path
) -> None:
    """Found by the fuzzer: a compare.json slice without the primary metric, a side whose model
    is not an object, a changed setting that is not an object, an index without slices each
    crashed `evalret report` (exit 3); now exit 2 naming the file and the field."""
    from evalret.pipeline.compare import CompareSettings, run_comparison

    (tmp_path / "a.json").write_text(json.dumps(saved_report))
    settings = CompareSettings(primary="ndcg@10", min_gain=0.01, alpha=0.05, samples=200)
    run_comparison(tmp_path / "a.json", tmp_path / "a.json", tmp_path, settings)
    path = tmp_path / "compare.json"
    data = json.loads(path.read_text())
    for change, field in (
        (lambda d: d["indexes"]["exact"]["tail"].update(metrics={}), "indexes.exact.tail.metrics"),
        (lambda d: d["a"].update(model=None), "a.model: not an object"),
        (lambda d: d["changed"].update(x=1), "changed.x: not an object"),
        (lambda d: d["indexes"].update(exact={}), "indexes.exact: no slice"),
    ):
        _mutated(data, tmp_path, change).rename(path)
        code, out = invoke("report", str(path))
        assert code == 2 and field in out and str(path) in out, out


def test_config_path_the_file_system_cannot_take_is_located(tmp_path: Path) -> None:
    """Found by the fuzzer: a YAML escape giving a lone surrogate (or a NUL) in a path was a
    UnicodeEncodeError when the path was resolved (exit 3); now exit 2 at the key's line."""
    path = tmp_path / "cfg.yaml"
    path.write_text('golden_set: {path: "\\ud800"}\noutput:\n  dir: "a\\0b"\n')
    with pytest.raises(ConfigError) as e:
        load_config(path)
    got = [str(p) for p in e.value.problems]
    assert got[0].startswith(f"{path}:1: golden_set.path: Value error, not a usable path")
    assert got[1].startswith(f"{path}:3: output.dir: Value error, not a usable path")


def test_non_finite_numbers_in_a_saved_report_are_refused(
    saved_report: dict[str, Any], tmp_path: Path
) -> None:
    """Found by the fuzzer: an Infinity in compare.json crashed the HTML charts (exit 3).
    evalret writes a non-finite number as null, so NaN, Infinity or 1e309 in a report or
    compare.json is refused where it is read, naming the file and the number."""
    from evalret.pipeline.compare import CompareSettings, run_comparison

    (tmp_path / "a.json").write_text(json.dumps(saved_report))
    settings = CompareSettings(primary="ndcg@10", min_gain=0.01, alpha=0.05, samples=200)
    run_comparison(tmp_path / "a.json", tmp_path / "a.json", tmp_path, settings)
    compare = tmp_path / "compare.json"
    text = compare.read_text()
    compare.write_text(text.replace('"delta": 0.0', '"delta": Infinity', 1))
    code, out = invoke("report", str(compare))
    assert code == 2 and "Infinity is not a JSON number" in out and str(compare) in out
    report = tmp_path / "a.json"
    report.write_text(json.dumps(saved_report).replace('"value": 1.0', '"value": 1e309', 1))
    code, out = invoke("baseline", "show", str(report))
    assert code == 2 and "number 1e309 is out of range" in out


def test_lone_surrogate_escapes_are_refused_at_their_line(
    saved_report: dict[str, Any], tmp_path: Path
) -> None:
    """Found by the fuzzer: "\\ud800" in a report.json made `evalret report` fail writing
    report.html (exit 3); the same in a corpus text would fail a run's cache keys. Refused where
    read, at the escape's line; a real pair (an emoji) still loads."""
    report = tmp_path / "r.json"
    report.write_text(json.dumps(saved_report, indent=1).replace('"0.1.0"', '"\\ud800"', 1))
    code, out = invoke("report", str(report), "--out", str(tmp_path / "html"))
    assert code == 2 and "\\ud800 is half a surrogate pair" in out
    (tmp_path / "gs").mkdir()
    native(tmp_path / "gs")
    corpus = tmp_path / "gs" / "corpus.jsonl"
    corpus.write_text('{"id": "d1", "text": "\\ud83d\\ude00"}\n{"id": "d2", "text": "a\\udc00"}\n')
    got = problems_of(tmp_path / "gs")
    assert f"{corpus}:2: \\udc00 is half a surrogate pair, not a character" in got


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--alpha", "0"),  # was ZeroDivisionError, exit 3
        ("--alpha", "nan"),  # was ValueError, exit 3
        ("--alpha", "1"),
        ("--samples", "0"),
        ("--samples", "-3"),
        ("--min-gain", "nan"),  # no gain is >= NaN: silently "not a candidate"
        ("--min-gain", "inf"),
        ("--min-gain", "-1"),  # a loss would make B a candidate
        ("--seed", "-1"),  # was ValueError from numpy, exit 3
    ],
)
def test_compare_options_out_of_range_name_the_option(
    saved_report: dict[str, Any], tmp_path: Path, option: str, value: str
) -> None:
    """Each `evalret compare` setting is checked before anything is compared: exit 2 naming the
    option and its value, never an internal error, never a silent run."""
    path = tmp_path / "report.json"
    path.write_text(json.dumps(saved_report))
    code, out = invoke(
        "compare", str(path), str(path), "--out", str(tmp_path / "cmp"), "--no-progress",
        option, value,
    )  # fmt: skip
    assert code == 2 and f"{option} {value}" in out, out
    assert not (tmp_path / "cmp").exists()


def test_report_refuses_a_baseline_with_other_metric_definitions(
    saved_report: dict[str, Any], tmp_path: Path
) -> None:
    """`evalret report --baseline` drew a baseline computed at another relevance level (or mode,
    or gain) beside the run, bars and per-query changes of numbers that do not compare: refused
    (exit 2) like the gate and `evalret compare` refuse it, naming what differs."""
    run = tmp_path / "report.json"
    run.write_text(json.dumps(saved_report))
    other = json.loads(json.dumps(saved_report))
    other["fingerprint"]["metrics"]["relevance_level"] = 2
    other["config"]["relevance_level"] = 2
    base = tmp_path / "base.json"
    base.write_text(json.dumps(other))
    code, out = invoke("report", str(run), "--baseline", str(base), "--out", str(tmp_path / "h"))
    assert code == 2, out
    assert "relevance_level: 2 -> 1" in out
    assert not (tmp_path / "h" / "report.html").exists()
