"""Annotation files, `evalret judgments agreement` and `merge` (issue #17): the reader's rules,
the agreement figures against published examples AND against their formulas computed here, the
merge policies and what a merge writes."""

from __future__ import annotations

import json
from collections import Counter
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import DEMO
from evalret.commands.agreement import agreement_report
from evalret.commands.merge_judgments import merge_command
from evalret.core.judgments import dispute_reason, merged_grade
from evalret.data.config import GoldenSetConfig
from evalret.data.goldenset import load_golden_set
from evalret.data.judgments import Scale, label_studio_tasks, parse_scale, read_annotations
from evalret.errors import InputError
from evalret.pipeline.merge import MergeOptions
from helpers import invoke

# --- helpers ------------------------------------------------------------------------------------


def line(annotator: str, q: str, d: str, grade: int, **extra: Any) -> dict[str, Any]:
    return {
        "query_id": q,
        "doc_id": d,
        "grade": grade,
        "query": f"text of {q}",
        "document": f"text of {d}",
        "best_rank": 1,
        "retrieved_by": {"run": 1},
        "annotator": annotator,
        "graded_at": "2026-11-23T12:00:00Z",
        **extra,
    }


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def rater_files(tmp_path: Path, matrix: list[list[float]], lo: int = 0) -> list[Path]:
    """One annotation file per rater (row) of ``matrix`` (items as columns, NaN: not graded)."""
    paths = []
    for r, row in enumerate(matrix):
        recs = [
            line(f"r{r}", f"q{j:03d}", "d", int(g)) for j, g in enumerate(row) if not np.isnan(g)
        ]
        paths.append(write_jsonl(tmp_path / f"r{r}.jsonl", recs))
    return paths


def cohen_by_hand(x: list[int], y: list[int], cats: list[int], power: int = 0) -> float:
    """Cohen's kappa (power 0), or weighted kappa with |i-j|^power disagreement weights."""
    k, n = len(cats), len(x)
    obs = np.zeros((k, k))
    for a, b in zip(x, y, strict=True):
        obs[cats.index(a), cats.index(b)] += 1
    obs /= n
    exp = np.outer(obs.sum(1), obs.sum(0))
    i, j = np.indices((k, k))
    w = (i != j).astype(float) if power == 0 else np.abs(i - j).astype(float) ** power
    return float(1 - (w * obs).sum() / (w * exp).sum())


def fleiss_by_hand(table: np.ndarray) -> float:
    """Fleiss (1971): items x categories counts, the same number of raters per item."""
    n_items, m = table.shape[0], table[0].sum()
    p_j = table.sum(0) / (n_items * m)
    p_i = ((table**2).sum(1) - m) / (m * (m - 1))
    p_bar, p_e = p_i.mean(), (p_j**2).sum()
    return float((p_bar - p_e) / (1 - p_e))


def ordinal_alpha_by_hand(matrix: list[list[float]]) -> float:
    """Krippendorff's alpha, ordinal metric, from the coincidence matrix (Krippendorff 2011)."""
    data = np.array(matrix, dtype=float)
    values = sorted({v for v in data.ravel() if not np.isnan(v)})
    idx = {v: i for i, v in enumerate(values)}
    o = np.zeros((len(values), len(values)))
    for unit in data.T:
        vals = [v for v in unit if not np.isnan(v)]
        if len(vals) < 2:
            continue
        for a in range(len(vals)):
            for b in range(len(vals)):
                if a != b:
                    o[idx[vals[a]], idx[vals[b]]] += 1 / (len(vals) - 1)
    n_c = o.sum(1)
    n = n_c.sum()
    delta = np.zeros_like(o)
    for c in range(len(values)):
        for k in range(len(values)):
            lo, hi = min(c, k), max(c, k)
            delta[c, k] = (n_c[lo : hi + 1].sum() - (n_c[c] + n_c[k]) / 2) ** 2
    d_o = (o * delta).sum()
    d_e = (np.outer(n_c, n_c) * delta).sum() / (n - 1)
    return float(1 - d_o / d_e)


# --- the reader ----------------------------------------------------------------------------------


def test_last_line_wins_across_files_and_torn_last_line_is_ignored(tmp_path: Path) -> None:
    one = write_jsonl(
        tmp_path / "one.jsonl", [line("ann", "q1", "d1", 1), line("ann", "q1", "d2", 0)]
    )
    two = tmp_path / "two.jsonl"
    two.write_text(json.dumps(line("ann", "q1", "d1", 3)) + "\n" + '{"query_id": "q1", "doc')
    got = read_annotations([one, two], Scale(0, 3))
    assert {(a.query_id, a.doc_id): a.grade for a in got.items} == {
        ("q1", "d1"): 3,
        ("q1", "d2"): 0,
    }
    assert len(got.warnings) == 1 and f"{two}:2" in got.warnings[0]


def test_malformed_lines_are_named_with_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        json.dumps(line("ann", "q1", "d1", 1))
        + "\n{not json\n"
        + json.dumps(line("ann", "q1", "d2", 7))
        + "\n"
        + json.dumps({**line("ann", "q1", "d3", 1), "annotator": ""})
        + "\n"
    )
    with pytest.raises(InputError) as e:
        read_annotations([bad], Scale(0, 3))
    text = str(e.value)
    assert f"{bad}:2" in text and f"{bad}:3" in text and "outside the scale 0-3" in text
    assert f"{bad}:4" in text and "annotator" in text
    # a torn line that is not the last one is an error, not a warning
    bad.write_text('{"query_id": "q1"\n' + json.dumps(line("ann", "q1", "d1", 1)))
    with pytest.raises(InputError, match=f"{bad}:1"):
        read_annotations([bad], Scale(0, 3))


def test_parse_scale() -> None:
    assert parse_scale("0-3") == Scale(0, 3) and parse_scale("0-1").grades == [0, 1]
    for bad in ("3-0", "0", "a-b", "1-1"):
        with pytest.raises(InputError):
            parse_scale(bad)


def test_label_studio_round_trip(tmp_path: Path) -> None:
    """Pool records -> Label Studio import tasks; an export of them (choices and ratings, a
    cancelled annotation, completed_by as id or object) -> annotations."""
    records: list[dict[str, object]] = [
        {"query_id": "q1", "doc_id": "d1", "grade": None, "query": "Q", "document": None}
    ]
    tasks = json.loads(label_studio_tasks(records))
    assert tasks == [{"data": {"query_id": "q1", "doc_id": "d1", "query": "Q", "document": ""}}]
    export = [
        {
            "id": 1,
            "data": tasks[0]["data"],
            "annotations": [
                {
                    "completed_by": 7,
                    "result": [{"type": "choices", "value": {"choices": ["2 high"]}}],
                },
                {"completed_by": {"id": 8, "email": "b@x"}, "result": [{"value": {"rating": 4}}]},
                {
                    "completed_by": 9,
                    "was_cancelled": True,
                    "result": [{"value": {"choices": ["0"]}}],
                },
            ],
        }
    ]
    path = tmp_path / "export.json"
    path.write_text(json.dumps(export))
    got = read_annotations([path], Scale(0, 3))
    assert {a.annotator: a.grade for a in got.items} == {"7": 2, "b@x": 3}
    export[0]["annotations"][0]["result"][0]["value"]["choices"] = ["high"]  # type: ignore[index]
    path.write_text(json.dumps(export))
    with pytest.raises(InputError, match="does not start with a grade"):
        read_annotations([path], Scale(0, 3))
    # the import file (no annotations) is not an export: said, not read as nothing
    path.write_text(json.dumps(tasks))
    with pytest.raises(InputError, match="not a Label Studio export"):
        read_annotations([path], Scale(0, 3))


TASK = {
    "id": 1,
    "data": {"query_id": "q1", "doc_id": "d1"},
    "annotations": [{"completed_by": 7, "result": [{"value": {"choices": ["2"]}}]}],
}


@pytest.mark.parametrize(
    ("text", "names"),
    [
        (json.dumps(TASK, indent=2), "a JSON object with 'annotations', 'data' over 21 lines"),
        (json.dumps(TASK), "a JSON object with 'annotations', 'data', not annotations"),
        (json.dumps({"tasks": [TASK]}), "a JSON object with 'tasks'"),
        (json.dumps(line("alice", "q1", "d1", 2), indent=1), "one JSON object over 13 lines"),
    ],
    ids=["export-object-pretty", "one-task-object", "object-holding-tasks", "annotation-pretty"],
)
def test_an_object_root_is_said_to_be_no_export_nor_json_lines(
    tmp_path: Path, text: str, names: str
) -> None:
    """A Label Studio export whose root is a JSON object (one task, or an object holding the
    tasks) was read as JSON Lines: one 'invalid JSON' per line of it, or an annotation without
    its annotator. It is refused as what it is, naming the file and what is expected (exit 2)."""
    path = tmp_path / "export.json"
    path.write_text(text)
    with pytest.raises(InputError) as e:
        read_annotations([path], Scale(0, 3))
    message = str(e.value)
    assert f"annotation file {path}: {names}" in message
    assert "a Label Studio export is a JSON list of tasks" in message
    assert "JSON Lines" in message and "invalid JSON" not in message
    for command in ("agreement", "merge"):
        into = ["--into", str(DEMO), "--out", str(tmp_path / "merged")]
        code, out = invoke("judgments", command, str(path), *(into if command == "merge" else []))
        assert code == 2 and f"annotation file {path}" in out.replace("\n", ""), out


def test_one_annotation_on_one_line_is_still_json_lines(tmp_path: Path) -> None:
    """A file of one annotation line (a JSON object on one line, no Label Studio key) reads as
    before; so does a JSON Lines file of several."""
    one = write_jsonl(tmp_path / "one.jsonl", [line("alice", "q1", "d1", 2)])
    assert [(a.annotator, a.grade) for a in read_annotations([one], Scale(0, 3)).items] == [
        ("alice", 2)
    ]
    two = write_jsonl(
        tmp_path / "two.jsonl", [line("bob", "q1", "d1", 1), line("bob", "q2", "d", 3)]
    )
    assert len(read_annotations([two], Scale(0, 3)).items) == 2


# --- agreement against published examples and the formulas ----------------------------------------


def test_cohen_kappa_textbook_2x2(tmp_path: Path) -> None:
    """50 items, yes/yes 20, yes/no 5, no/yes 10, no/no 15: p_o = 0.7, p_e = 0.5, kappa 0.4."""
    pairs = [(1, 1)] * 20 + [(1, 0)] * 5 + [(0, 1)] * 10 + [(0, 0)] * 15
    x, y = [a for a, _ in pairs], [b for _, b in pairs]
    paths = rater_files(tmp_path, [list(map(float, x)), list(map(float, y))])
    report = agreement_report(read_annotations(paths, Scale(0, 1)), Scale(0, 1))
    pair = report["pairs"][0]
    assert pair["items"] == 50 and pair["raw_agreement"] == pytest.approx(0.7)
    assert pair["cohen_kappa"] == pytest.approx(0.4)
    assert pair["cohen_kappa"] == pytest.approx(cohen_by_hand(x, y, [0, 1]))
    assert report["fleiss"]["items"] == 50 and report["fleiss"]["items_left_out"] == 0


def test_weighted_kappa_by_formula(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    x = rng.integers(0, 4, 200)
    y = np.clip(x + rng.integers(-1, 2, 200), 0, 3)
    paths = rater_files(tmp_path, [x.astype(float).tolist(), y.astype(float).tolist()])
    pair = agreement_report(read_annotations(paths, Scale(0, 3)), Scale(0, 3))["pairs"][0]
    xs, ys = x.tolist(), y.tolist()
    assert pair["cohen_kappa"] == pytest.approx(cohen_by_hand(xs, ys, [0, 1, 2, 3]))
    assert pair["weighted_kappa_linear"] == pytest.approx(cohen_by_hand(xs, ys, [0, 1, 2, 3], 1))
    assert pair["weighted_kappa_quadratic"] == pytest.approx(cohen_by_hand(xs, ys, [0, 1, 2, 3], 2))


# Fleiss (1971), Table 1: 30 patients, 6 psychiatrists each, 5 diagnoses (coded 0..4 here)
FLEISS_1971 = [
    [4, 4, 4, 4, 4, 4], [2, 2, 2, 5, 5, 5], [2, 3, 3, 3, 3, 5], [5, 5, 5, 5, 5, 5],
    [2, 2, 2, 4, 4, 4], [1, 1, 3, 3, 3, 3], [3, 3, 3, 3, 5, 5], [1, 1, 3, 3, 3, 4],
    [1, 1, 4, 4, 4, 4], [5, 5, 5, 5, 5, 5], [1, 4, 4, 4, 4, 4], [1, 2, 4, 4, 4, 4],
    [2, 2, 2, 3, 3, 3], [1, 4, 4, 4, 4, 4], [2, 2, 4, 4, 4, 5], [3, 3, 3, 3, 3, 5],
    [1, 1, 1, 4, 5, 5], [1, 1, 1, 1, 1, 2], [2, 2, 4, 4, 4, 4], [1, 3, 3, 5, 5, 5],
    [5, 5, 5, 5, 5, 5], [2, 4, 4, 4, 4, 4], [2, 2, 4, 5, 5, 5], [1, 1, 4, 4, 4, 4],
    [1, 4, 4, 4, 4, 5], [2, 2, 2, 2, 2, 4], [1, 1, 1, 1, 5, 5], [2, 2, 4, 4, 4, 4],
    [1, 3, 3, 3, 3, 3], [5, 5, 5, 5, 5, 5],
]  # fmt: skip


def test_fleiss_kappa_fleiss_1971(tmp_path: Path) -> None:
    """Kappa 0.430 (Fleiss 1971); Fleiss is blind to which rater gave which grade, so rater r
    gives the r-th diagnosis of each patient. A seventh rater grading one item makes every
    item rated by fewer than all: left out, and counted."""
    matrix = [[float(row[r] - 1) for row in FLEISS_1971] for r in range(6)]
    paths = rater_files(tmp_path, matrix)
    report = agreement_report(read_annotations(paths, Scale(0, 4)), Scale(0, 4))
    table = np.array([[Counter(row)[c] for c in range(1, 6)] for row in FLEISS_1971])
    assert report["fleiss"]["kappa"] == pytest.approx(fleiss_by_hand(table))
    assert round(report["fleiss"]["kappa"], 3) == 0.430
    assert report["fleiss"]["items"] == 30
    extra = write_jsonl(tmp_path / "extra.jsonl", [line("r6", "q000", "d", 3)])
    report = agreement_report(read_annotations([*paths, extra], Scale(0, 4)), Scale(0, 4))
    assert report["fleiss"]["items"] == 1 and report["fleiss"]["items_left_out"] == 29


def test_krippendorff_alpha_published_example(tmp_path: Path) -> None:
    """Krippendorff (2011), 'Computing Krippendorff's alpha-reliability', section C: 4 observers,
    12 units, values 1..5 with missing data; ordinal alpha 0.815."""
    nan = float("nan")
    matrix = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
        [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
    ]
    paths = rater_files(tmp_path, matrix)
    report = agreement_report(read_annotations(paths, Scale(1, 5)), Scale(1, 5))
    alpha = report["krippendorff_ordinal"]
    assert round(alpha["alpha"], 3) == 0.815
    assert alpha["alpha"] == pytest.approx(ordinal_alpha_by_hand(matrix))
    assert alpha["items"] == 11  # units 1-11 have two values or more, unit 12 one
    # widest disagreement: unit 6 (grades 1, 2, 3, 4)
    top = report["widest_disagreement"][0]
    assert (top["query_id"], top["spread"]) == ("q005", 3)
    assert top["grades"] == {"r0": 1, "r1": 2, "r2": 3, "r3": 4}


def test_gold_accuracy_and_undefined_kappa(tmp_path: Path) -> None:
    recs = [
        line("a", "q1", "d1", 2, gold_grade=2),
        line("a", "q1", "d2", 1, gold_grade=0),
        line("b", "q1", "d1", 2, gold_grade=2),
        line("c", "q9", "d9", 1),
    ]
    path = write_jsonl(tmp_path / "all.jsonl", recs)
    report = agreement_report(read_annotations([path], Scale(0, 3)), Scale(0, 3))
    gold = report["gold_accuracy"]
    assert gold["a"] == {"gold_items": 2, "correct": 1, "accuracy": 0.5}
    assert gold["b"]["accuracy"] == 1.0 and gold["c"]["accuracy"] is None
    ab = next(p for p in report["pairs"] if (p["a"], p["b"]) == ("a", "b"))
    assert ab["items"] == 1 and ab["raw_agreement"] == 1.0
    assert ab["cohen_kappa"] is None  # one category only: chance agreement 1, kappa undefined
    ac = next(p for p in report["pairs"] if (p["a"], p["b"]) == ("a", "c"))
    assert ac["items"] == 0 and ac["cohen_kappa"] is None


def test_agreement_cli_prints_four_decimals_and_writes_json(tmp_path: Path) -> None:
    pairs = [(1, 1)] * 20 + [(1, 0)] * 5 + [(0, 1)] * 10 + [(0, 0)] * 15
    paths = rater_files(tmp_path, [[float(a) for a, _ in pairs], [float(b) for _, b in pairs]])
    out = tmp_path / "agreement.json"
    code, text = invoke(
        "judgments", "agreement", *map(str, paths), "--scale", "0-1", "--json", str(out)
    )
    assert code == 0, text
    assert "Cohen's kappa 0.4000" in text and "agreement 0.7000" in text
    assert json.loads(out.read_text())["pairs"][0]["cohen_kappa"] == pytest.approx(0.4)
    code, text = invoke("judgments", "agreement", str(tmp_path / "missing.jsonl"))
    assert code == 2


# --- merge ------------------------------------------------------------------------------------


def test_merge_policies_and_disputes() -> None:
    assert merged_grade([1, 2], "median") == 1  # lower median of an even count
    assert merged_grade([0, 1, 2, 3], "median") == 1
    assert merged_grade([1, 2, 2], "median") == 2
    assert merged_grade([1, 2], "mean") == 2  # 1.5 rounds half up
    assert merged_grade([0, 1, 1], "mean") == 1 and merged_grade([0, 0, 1], "mean") == 0
    assert merged_grade([1, 2], "majority") is None
    assert merged_grade([2, 2, 1], "majority") == 2
    assert dispute_reason([0, 2], "median", 1) is not None  # span 2
    assert dispute_reason([1, 2], "median", 1) is None
    assert dispute_reason([1, 2], "majority", 1) == "no majority"
    assert dispute_reason([1], "median", 2) is not None


def _native_set(path: Path) -> Path:
    path.mkdir()
    docs = [{"id": f"d{i}", "text": f"document {i}"} for i in range(6)]
    (path / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    queries = [
        {"id": "q1", "text": "first", "relevant": {"d0": 2}, "tags": ["t"]},
        {"id": "q2", "text": "second", "relevant": ["d1"]},
    ]
    (path / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    return path


def test_merge_into_native_set(tmp_path: Path) -> None:
    gold_dir = _native_set(tmp_path / "gs")
    recs = [
        # gold item (already judged d0 = 2): never merged, scores annotator accuracy
        line("a", "q1", "d0", 2, gold_grade=2),
        line("b", "q1", "d0", 0, gold_grade=2),
        line("c", "q1", "d0", 2, gold_grade=2),
        line("a", "q1", "d2", 1),
        line("c", "q1", "d2", 2),  # median of 1, 2: 1
        line("a", "q2", "d3", 0),
        line("c", "q2", "d3", 3),  # span 3: disputed
        line("a", "q2", "d1", 3),  # already judged 1: kept without --overwrite
        line("b", "q2", "d4", 3),  # b is dropped (gold accuracy 0)
        line("a", "q2", "d99", 1),  # not in the corpus
    ]
    files = [write_jsonl(tmp_path / "ann.jsonl", recs)]
    cfg = GoldenSetConfig(path=gold_dir)
    options = MergeOptions("median", 1, drop_below=0.5)
    outcome = merge_command(files, cfg, tmp_path / "out", Scale(0, 3), options)
    assert (outcome.merged, outcome.disputed, outcome.kept_existing) == (1, 1, 1)
    assert (outcome.gold_items, outcome.unknown, outcome.dropped_annotators) == (1, 1, ["b"])
    merged = load_golden_set(GoldenSetConfig(path=tmp_path / "out"))
    assert merged.qrels == {"q1": {"d0": 2, "d2": 1}, "q2": {"d1": 1}}
    assert merged.tags == {"q1": ("t",)}
    assert merged.fingerprint != load_golden_set(cfg).fingerprint
    disputed = [
        json.loads(x) for x in (tmp_path / "out" / "disputed.jsonl").read_text().splitlines()
    ]
    assert [(d["query_id"], d["doc_id"], d["grades"]) for d in disputed] == [
        ("q2", "d3", {"a": 0, "c": 3})
    ]
    # the query line that gained nothing is kept byte for byte
    assert (tmp_path / "out" / "queries.jsonl").read_text().splitlines()[1] == (
        gold_dir / "queries.jsonl"
    ).read_text().splitlines()[1]
    # --overwrite replaces q2/d1 (list form becomes a map); b kept (no --drop): d4 merged
    outcome = merge_command(
        files, cfg, tmp_path / "out2", Scale(0, 3), MergeOptions("median", 1, None, True)
    )
    merged = load_golden_set(GoldenSetConfig(path=tmp_path / "out2"))
    assert merged.qrels["q2"] == {"d1": 3, "d4": 3} and outcome.overwritten == 1
    with pytest.raises(InputError, match="not an empty directory"):
        merge_command(files, cfg, tmp_path / "out2", Scale(0, 3), options)


def test_merge_into_beir_set_and_min_annotators(tmp_path: Path) -> None:
    root = tmp_path / "beir"
    (root / "qrels").mkdir(parents=True)
    docs = [{"_id": f"d{i}", "title": "", "text": f"doc {i}"} for i in range(4)]
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (root / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "hello"}) + "\n")
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td0\t1\n")
    recs = [line("a", "q1", "d1", 2), line("b", "q1", "d1", 2), line("a", "q1", "d2", 1)]
    files = [write_jsonl(tmp_path / "ann.jsonl", recs)]
    outcome = merge_command(
        files, GoldenSetConfig(path=root), tmp_path / "out", Scale(0, 3), MergeOptions("mean", 2)
    )
    assert (outcome.format, outcome.merged, outcome.disputed) == ("beir", 1, 1)
    merged = load_golden_set(GoldenSetConfig(path=tmp_path / "out"))
    assert merged.qrels == {"q1": {"d0": 1, "d1": 2}}


def test_pairwise_helper_covers_every_pair(tmp_path: Path) -> None:
    paths = rater_files(tmp_path, [[0.0, 1.0], [0.0, 1.0], [1.0, 1.0]])
    report = agreement_report(read_annotations(paths, Scale(0, 1)), Scale(0, 1))
    assert [(p["a"], p["b"]) for p in report["pairs"]] == list(combinations(["r0", "r1", "r2"], 2))
    assert report["raw_agreement"] == 0.5


def test_agreement_without_the_extra_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A missing library of evalret[judgments] is exit 2 naming the extra."""
    import sys

    monkeypatch.setitem(sys.modules, "krippendorff", None)  # import krippendorff: ImportError
    path = write_jsonl(tmp_path / "a.jsonl", [line("a", "q1", "d1", 1)])
    code, text = invoke("judgments", "agreement", str(path))
    assert code == 2 and "evalret[judgments]" in text and "krippendorff" in text


def test_gold_records_are_seeded_judged_pairs() -> None:
    from evalret.commands.pool import gold_records
    from test_pool import _golden

    golden = _golden()  # judges q1: a 2, b 0; q2: d 1
    first = gold_records(golden, n_pool=4, fraction=0.5, seed=7)
    assert first == gold_records(golden, n_pool=4, fraction=0.5, seed=7)
    assert len(first) == 2 and all(
        r["best_rank"] is None and r["retrieved_by"] == {} for r in first
    )
    for r in first:
        assert r["gold_grade"] == golden.qrels[str(r["query_id"])][str(r["doc_id"])]
    assert len(gold_records(golden, n_pool=100, fraction=0.5, seed=7)) == 3  # all there are
    assert gold_records(golden, n_pool=4, fraction=0.0, seed=7) == []


def test_merge_refuses_a_trec_set(tmp_path: Path) -> None:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\n")
    path = write_jsonl(tmp_path / "a.jsonl", [line("a", "q1", "d1", 1)])
    code, text = invoke(
        "judgments", "merge", str(path), "--into", str(qrels), "--out", str(tmp_path / "o")
    )
    assert code == 2 and "TREC" in text, text
    code, text = invoke(
        "judgments", "merge", str(path), "--into", str(qrels), "--out", str(tmp_path / "o"),
        "--policy", "vote",
    )  # fmt: skip
    assert code == 2 and "--policy" in text


# --- messages (issue #23 item 11) -------------------------------------------------------------


def test_one_annotator_leaves_no_negative_count(tmp_path: Path) -> None:
    """One annotator's 40 grades: Fleiss' kappa is undefined over 0 items and 0 are left out
    (it said "-40 graded by fewer left out")."""
    paths = rater_files(tmp_path, [[float(i % 2) for i in range(40)]])
    scale = parse_scale("0-1")
    report = agreement_report(read_annotations(paths, scale), scale)
    assert report["fleiss"] == {"kappa": None, "items": 0, "items_left_out": 0}
    code, text = invoke("judgments", "agreement", *map(str, paths), "--scale", "0-1")
    assert code == 0, text
    assert "(0 graded by fewer left out)" in text and "-40" not in text


def test_merge_that_changes_nothing_says_the_fingerprint_is_unchanged(tmp_path: Path) -> None:
    """Every grade already judged: the fingerprint is the same, and the message says so
    instead of showing "fingerprint X -> X" as a change."""
    gold_dir = _native_set(tmp_path / "gs")
    files = [write_jsonl(tmp_path / "ann.jsonl", [line("a", "q1", "d0", 2)])]
    code, text = invoke(
        "judgments", "merge", str(files[0]), "--into", str(gold_dir), "--out",
        str(tmp_path / "out"),
    )  # fmt: skip
    assert code == 0, text
    fingerprint = load_golden_set(GoldenSetConfig(path=gold_dir)).fingerprint[:16]
    assert f"fingerprint {fingerprint} unchanged" in text
    assert f"{fingerprint} -> {fingerprint}" not in text


@pytest.mark.parametrize("value", ["nan", "inf", "-0.5", "1.5"])
def test_drop_annotators_below_must_be_an_accuracy(tmp_path: Path, value: str) -> None:
    """NaN (which no accuracy is below: nobody dropped), infinity and numbers outside 0..1 are
    exit 2 naming the option, before anything is written."""
    gold_dir = _native_set(tmp_path / "gs")
    files = [write_jsonl(tmp_path / "ann.jsonl", [line("a", "q1", "d2", 2)])]
    code, text = invoke(
        "judgments", "merge", str(files[0]), "--into", str(gold_dir), "--out",
        str(tmp_path / "out"), "--drop-annotators-below", value,
    )  # fmt: skip
    assert code == 2, text
    assert "--drop-annotators-below" in text and not (tmp_path / "out").exists()
