"""Provenance of judgments (issue #25, scope 4): `judgments merge` keeps each grade's source and
an LLM judge's grades of pairs a person graded; the native, BEIR and TREC readers read them
back strictly; the fingerprint covers them (an old set's stays byte for byte); gate.labels
chooses the labels a run scores, and a run with LLM labels shows the headline on human labels
beside all labels."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO
from evalret.commands.merge_judgments import merge_command
from evalret.data.config import Config, GateConfig, GoldenSetConfig, Threshold
from evalret.data.goldenset import GoldenSet, load_golden_set, scan_trec
from evalret.data.judgments import Scale, read_annotations
from evalret.data.schema import RunReport
from evalret.errors import GoldenSetError, IncomparableError, InputError
from evalret.pipeline.evaluate import run_evaluation
from evalret.pipeline.merge import MergeOptions
from evalret.report.markdown import render_markdown
from evalret.report.terminal_brief import brief_run
from helpers import HashEmbedder, invoke, make_set

HASH = "0123456789ab"
JUDGE = f"llm:judge-1@{HASH}"


def line(annotator: str, q: str, d: str, grade: int, **extra: Any) -> dict[str, Any]:
    return {
        "query_id": q,
        "doc_id": d,
        "grade": grade,
        "query": f"text of {q}",
        "document": f"text of {d}",
        "annotator": annotator,
        "graded_at": "2026-11-25T12:00:00Z",
        **extra,
    }


def llm(q: str, d: str, grade: int) -> dict[str, Any]:
    return line("llm:judge-1", q, d, grade, prompt_hash=HASH, votes=[grade, grade, grade])


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def native_set(root: Path) -> Path:
    root.mkdir(parents=True)
    docs = [{"id": f"d{i}", "text": f"doc {i}"} for i in range(6)]
    queries = [
        {"id": "q1", "text": "first", "relevant": {"d0": 2}},
        {"id": "q2", "text": "second", "relevant": ["d1"]},
    ]
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    return root


def beir_set(root: Path) -> Path:
    (root / "qrels").mkdir(parents=True)
    docs = [{"_id": f"d{i}", "title": "", "text": f"doc {i}"} for i in range(6)]
    queries = [{"_id": "q1", "text": "first"}, {"_id": "q2", "text": "second"}]
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td0\t2\nq2\td1\t1\n")
    return root


def annotation_files(tmp_path: Path) -> list[Path]:
    """Two people and an LLM judge: the judge alone on q1/d3 and q2/d5, beside both people on
    q1/d2, beside the golden set's own grade on q1/d0."""
    people = [line("alice", "q1", "d2", 2), line("bob", "q1", "d2", 3)]
    judge = [llm("q1", "d2", 0), llm("q1", "d3", 3), llm("q2", "d5", 1), llm("q1", "d0", 1)]
    return [
        write_jsonl(tmp_path / "people.jsonl", people),
        write_jsonl(tmp_path / "j.jsonl", judge),
    ]


EXPECTED_QRELS = {"q1": {"d0": 2, "d2": 2, "d3": 3}, "q2": {"d1": 1, "d5": 1}}
EXPECTED_SOURCES = {
    "q1": {"d2": "human:alice+bob", "d3": JUDGE},
    "q2": {"d5": JUDGE},
}
EXPECTED_LLM = {"q1": {"d3": 3, "d2": 0, "d0": 1}, "q2": {"d5": 1}}


def assert_provenance(golden: GoldenSet) -> None:
    assert golden.qrels == EXPECTED_QRELS
    assert golden.sources == EXPECTED_SOURCES
    assert golden.llm_qrels == EXPECTED_LLM
    assert golden.llm_sources == {
        "q1": dict.fromkeys(("d3", "d2", "d0"), JUDGE),
        "q2": {"d5": JUDGE},
    }


# --- annotation lines ---------------------------------------------------------------------------


def test_judge_lines_carry_their_source_and_are_read_strictly(tmp_path: Path) -> None:
    good = write_jsonl(tmp_path / "good.jsonl", [llm("q", "d", 2), line("alice", "q", "d", 1)])
    by = {a.annotator: a for a in read_annotations([good], Scale(0, 3)).items}
    assert by["llm:judge-1"].source == JUDGE and by["llm:judge-1"].votes == (2, 2, 2)
    assert by["alice"].source == "human:alice" and by["alice"].prompt_hash is None
    bad = [
        line("llm:judge-1", "q", "d", 2),  # a judge's line without its prompt hash
        line("alice", "q", "d", 2, prompt_hash=HASH),  # a person's line with one
        line("llm:judge-1", "q", "d", 2, prompt_hash="XYZ"),
        line("llm:judge-1", "q", "d", 2, prompt_hash=HASH, votes=[2, 7]),
        line("llm:", "q", "d", 2, prompt_hash=HASH),
    ]
    path = write_jsonl(tmp_path / "bad.jsonl", bad)
    with pytest.raises(InputError) as e:
        read_annotations([path], Scale(0, 3))
    assert [(p.file, p.line) for p in e.value.problems] == [(str(path), n) for n in range(1, 6)]
    messages = " ".join(p.message for p in e.value.problems)
    assert "prompt_hash" in messages and "votes 7 is outside the scale" in messages


# --- merge writes, the readers read back -------------------------------------------------------


def test_merge_into_native_set_keeps_sources_and_llm_grades(tmp_path: Path) -> None:
    cfg = GoldenSetConfig(path=native_set(tmp_path / "gs"))
    outcome = merge_command(
        annotation_files(tmp_path), cfg, tmp_path / "out", Scale(0, 3), MergeOptions()
    )
    assert (outcome.merged, outcome.llm_graded, outcome.llm_beside_human) == (3, 2, 2)
    merged = load_golden_set(GoldenSetConfig(path=tmp_path / "out"))
    assert_provenance(merged)
    first = json.loads((tmp_path / "out" / "queries.jsonl").read_text().splitlines()[0])
    assert first["sources"] == EXPECTED_SOURCES["q1"]
    assert first["llm_relevant"] == {
        "d2": {"grade": 0, "source": JUDGE},
        "d0": {"grade": 1, "source": JUDGE},
    }
    # a merge that adds nothing carries every source and LLM grade over unchanged
    nothing = write_jsonl(tmp_path / "none.jsonl", [line("carol", "q9", "d0", 1)])
    merge_command(
        [nothing],
        GoldenSetConfig(path=tmp_path / "out"),
        tmp_path / "again",
        Scale(0, 3),
        MergeOptions(),
    )
    again = load_golden_set(GoldenSetConfig(path=tmp_path / "again"))
    assert_provenance(again)
    assert again.fingerprint == merged.fingerprint


def test_merge_into_beir_set_writes_judgments_sources(tmp_path: Path) -> None:
    root = beir_set(tmp_path / "beir")
    code, out = invoke(
        "judgments", "merge", *map(str, annotation_files(tmp_path)),
        "--into", str(root), "--out", str(tmp_path / "out"),
    )  # fmt: skip
    assert code == 0, out
    assert "2 of the merged grades are its own" in out and "2 of its grades kept beside" in out
    merged = load_golden_set(GoldenSetConfig(path=tmp_path / "out"))
    assert_provenance(merged)
    lines = [
        json.loads(x)
        for x in (tmp_path / "out" / "judgments.sources.jsonl").read_text().splitlines()
    ]
    assert {"query_id": "q1", "doc_id": "d2", "source": "human:alice+bob"} in lines
    assert {"query_id": "q1", "doc_id": "d2", "source": JUDGE, "grade": 0} in lines
    # the native and the BEIR copy of the same merge fingerprint alike (content, not format)
    cfg = GoldenSetConfig(path=native_set(tmp_path / "gs"))
    merge_command(annotation_files(tmp_path), cfg, tmp_path / "n", Scale(0, 3), MergeOptions())
    native = load_golden_set(GoldenSetConfig(path=tmp_path / "n"))
    assert native.query_fingerprints == merged.query_fingerprints


def test_a_persons_grade_replaces_the_judges_which_is_kept_apart(tmp_path: Path) -> None:
    cfg = GoldenSetConfig(path=native_set(tmp_path / "gs"))
    judge = write_jsonl(tmp_path / "j.jsonl", [llm("q1", "d3", 3)])
    merge_command([judge], cfg, tmp_path / "a", Scale(0, 3), MergeOptions())
    person = write_jsonl(tmp_path / "p.jsonl", [line("alice", "q1", "d3", 1)])
    out = merge_command(
        [person], GoldenSetConfig(path=tmp_path / "a"), tmp_path / "b", Scale(0, 3), MergeOptions()
    )
    assert out.merged == 1 and out.kept_existing == 0  # no --overwrite needed over a judge
    b = load_golden_set(GoldenSetConfig(path=tmp_path / "b"))
    assert b.qrels["q1"]["d3"] == 1 and b.sources["q1"]["d3"] == "human:alice"
    assert b.llm_qrels["q1"] == {"d3": 3}
    # a judge never replaces a person's grade, even with --overwrite: its grade is kept apart
    again = write_jsonl(tmp_path / "j2.jsonl", [llm("q1", "d3", 0)])
    options = MergeOptions(overwrite=True)
    merge_command(
        [again], GoldenSetConfig(path=tmp_path / "b"), tmp_path / "c", Scale(0, 3), options
    )
    c = load_golden_set(GoldenSetConfig(path=tmp_path / "c"))
    assert c.qrels["q1"]["d3"] == 1 and c.llm_qrels["q1"] == {"d3": 0}


# --- the readers' strictness --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"sources": {"d4": "human:alice"}}, "which has no judgment"),
        ({"sources": {"d0": "robot"}}, "expected 'import', 'human:<annotator>'"),
        ({"sources": {"d0": "llm:model-without-hash"}}, "expected 'import'"),
        ({"llm_relevant": {"d0": {"grade": 1, "source": "human:bob"}}}, "must come from an llm"),
        ({"llm_relevant": {"d0": {"grade": 1}}}, "source: Field required"),
        (
            {"sources": {"d0": JUDGE}, "llm_relevant": {"d0": {"grade": 1, "source": JUDGE}}},
            "itself an LLM's",
        ),
    ],
)
def test_native_provenance_is_read_strictly(
    tmp_path: Path, fields: dict[str, Any], message: str
) -> None:
    root = native_set(tmp_path / "gs")
    first = {"id": "q1", "text": "first", "relevant": {"d0": 2}, **fields}
    rest = (root / "queries.jsonl").read_text().splitlines(keepends=True)[1:]
    (root / "queries.jsonl").write_text(json.dumps(first) + "\n" + "".join(rest))
    with pytest.raises(GoldenSetError) as e:
        load_golden_set(GoldenSetConfig(path=root))
    (problem,) = e.value.problems
    assert message in problem.message
    assert (problem.file, problem.line) == (str(root / "queries.jsonl"), 1)


def test_beir_sources_file_is_strict_and_skips_other_splits(tmp_path: Path) -> None:
    root = beir_set(tmp_path / "beir")
    (root / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\nq3\td2\t1\n")
    with (root / "queries.jsonl").open("a") as f:
        f.write(json.dumps({"_id": "q3", "text": "third"}) + "\n")
    sources = root / "judgments.sources.jsonl"
    records = [
        {"query_id": "q1", "doc_id": "d0", "source": "human:alice"},
        {"query_id": "q3", "doc_id": "d2", "source": JUDGE},  # the dev split's
        {"query_id": "q1", "doc_id": "d0", "source": JUDGE, "grade": 1},
    ]
    write_jsonl(sources, records)
    test = load_golden_set(GoldenSetConfig(path=root))
    assert test.sources == {"q1": {"d0": "human:alice"}} and test.llm_qrels == {"q1": {"d0": 1}}
    dev = load_golden_set(GoldenSetConfig(path=root, split="dev"))
    assert dev.sources == {"q3": {"d2": JUDGE}} and dev.llm_qrels == {"q3": {"d2": 1}}
    write_jsonl(sources, [*records, {"query_id": "q1", "doc_id": "d5", "source": JUDGE, "x": 1}])
    with pytest.raises(GoldenSetError) as e:
        load_golden_set(GoldenSetConfig(path=root))
    assert [(p.file, p.line) for p in e.value.problems] == [(str(sources), 4)]
    assert "x: unknown field" in e.value.problems[0].message


def test_trec_qrels_read_the_sources_beside_them(tmp_path: Path) -> None:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d0 1\nq1 0 d1 2\n")
    write_jsonl(
        tmp_path / "judgments.sources.jsonl",
        [{"query_id": "q1", "doc_id": "d1", "source": JUDGE}],
    )
    golden = scan_trec(qrels, None, None, qrels_only=True).golden_set()
    assert golden.sources == {"q1": {"d1": JUDGE}} and golden.llm_qrels == {"q1": {"d1": 2}}


# --- the fingerprint ----------------------------------------------------------------------------


def test_fingerprint_covers_sources_and_an_old_set_keeps_its_own(tmp_path: Path) -> None:
    demo = load_golden_set(GoldenSetConfig(path=REPO / "golden_sets" / "demo"))
    # the value main computed for the demo before provenance existed (baselines/demo.json)
    assert demo.fingerprint == "251b01c239ab4ee9f878e8edc10681be730d3282aa5d221de8390d7eaa0450cf"
    root = native_set(tmp_path / "gs")
    plain = load_golden_set(GoldenSetConfig(path=root))

    def with_sources(sources: dict[str, str], name: str) -> GoldenSet:
        target = tmp_path / name
        target.mkdir()
        (target / "corpus.jsonl").write_text((root / "corpus.jsonl").read_text())
        lines = (root / "queries.jsonl").read_text().splitlines()
        first = {**json.loads(lines[0]), "sources": sources}
        (target / "queries.jsonl").write_text(json.dumps(first) + "\n" + lines[1] + "\n")
        return load_golden_set(GoldenSetConfig(path=target))

    imported = with_sources({"d0": "import"}, "imported")
    alice = with_sources({"d0": "human:alice"}, "alice")
    bob = with_sources({"d0": "human:bob"}, "bob")
    judge = with_sources({"d0": JUDGE}, "judge")
    assert plain.qrels == alice.qrels == bob.qrels == judge.qrels  # the same grades
    assert imported.fingerprint == plain.fingerprint  # import is what no source means
    assert len({plain.fingerprint, alice.fingerprint, bob.fingerprint, judge.fingerprint}) == 4
    assert alice.query_fingerprints["q2"] == plain.query_fingerprints["q2"]


# --- gate.labels and the human-only headline ----------------------------------------------------


def judged_by_llm(tmp_path: Path) -> tuple[Path, Config]:
    """make_set's golden set, with an LLM judge's grade 3 on the top 3 documents exact search
    ranks for each query that no one judged: LLM labels that add relevant documents."""
    plain = make_set(tmp_path / "gs")
    base = Config(golden_set=GoldenSetConfig(path=plain))
    first = run_evaluation(base, embedder=HashEmbedder())
    golden, exact = first.golden_set, first.report.indexes["exact"]
    recs = []
    for q, top in zip(golden.query_ids, exact.top_ids, strict=True):
        unjudged = [d for d in top if d not in golden.qrels[q]][:3]
        recs += [llm(q, d, 3) for d in unjudged]
    files = [write_jsonl(tmp_path / "judge.jsonl", recs)]
    merge_command(
        files, GoldenSetConfig(path=plain), tmp_path / "judged", Scale(0, 3), MergeOptions()
    )
    return tmp_path / "judged", base


def test_gate_labels_choose_the_labels_and_the_report_shows_both(tmp_path: Path) -> None:
    judged, base = judged_by_llm(tmp_path)
    floor = {"ndcg@10": Threshold(min=0.0)}

    def run(labels: str) -> RunReport:
        gate = GateConfig(
            labels=labels,
            thresholds=floor,
            ann_min_recall=None,
            indexes=["exact"],
            slices=["all"],
            health={},
        )
        cfg = base.model_copy(update={"golden_set": GoldenSetConfig(path=judged), "gate": gate})
        return run_evaluation(cfg, embedder=HashEmbedder()).report

    every, human = run("all"), run("human")

    def value(r: RunReport) -> float | None:
        return r.indexes["exact"].slices["all"].metrics["ndcg@10"].value

    v_all, v_human = value(every), value(human)
    assert v_all is not None and v_human is not None and v_all > v_human + 0.1
    # each run shows the other labelling, scored as a run on those labels scores it
    assert every.labels is not None and human.labels is not None
    assert (every.labels.gate, human.labels.gate) == ("all", "human")
    for report in (every, human):
        assert report.labels is not None
        assert report.labels.human.indexes["exact"]["ndcg@10"].value == pytest.approx(v_human)
        assert report.labels.all.indexes["exact"]["ndcg@10"].value == pytest.approx(v_all)
    assert every.labels.n_llm_judgments == sum(
        len(m) for m in load_golden_set(GoldenSetConfig(path=judged)).llm_qrels.values()
    )
    # the same golden set, so one fingerprint; the labels are a metric definition
    assert every.golden_set.fingerprint == human.golden_set.fingerprint
    assert (
        "labels" not in every.fingerprint.metrics and human.fingerprint.metrics["labels"] == "human"
    )
    # report.json, report.md and the terminal show the human-only headline beside all labels
    assert "labels" in json.loads(every.model_dump_json())
    md = render_markdown(every)
    assert "### Human labels beside all labels" in md and "| exact | human only | " in md
    from rich.console import Console

    console = Console(width=160, record=True)
    console.print(brief_run(every, []))
    text = console.export_text()
    assert "human labels beside all labels" in text and "human only" in text
    assert f"{v_human:.3f}" in text and f"{v_all:.3f}" in text


def test_gate_labels_decide_the_verdict(tmp_path: Path) -> None:
    judged, base = judged_by_llm(tmp_path)
    every = run_evaluation(
        base.model_copy(update={"golden_set": GoldenSetConfig(path=judged)}),
        embedder=HashEmbedder(),
    ).report
    v_all = every.indexes["exact"].slices["all"].metrics["ndcg@10"].value
    assert every.labels is not None and v_all is not None
    v_human = every.labels.human.indexes["exact"]["ndcg@10"].value
    assert v_human is not None and v_human < v_all
    floor = {"ndcg@10": Threshold(min=(v_all + v_human) / 2)}
    verdicts = {}
    for labels in ("all", "human"):
        gate = GateConfig(
            labels=labels,
            thresholds=floor,
            ann_min_recall=None,
            indexes=["exact"],
            slices=["all"],
            health={},
        )
        cfg = base.model_copy(update={"golden_set": GoldenSetConfig(path=judged), "gate": gate})
        report = run_evaluation(cfg, embedder=HashEmbedder()).report
        assert report.gate is not None
        verdicts[labels] = report.gate.verdict
    assert verdicts == {"all": "pass", "human": "fail"}
    # a baseline on all labels is refused by a run on human labels (other terms)
    gate = GateConfig(labels="human", ann_min_recall=None)
    cfg = base.model_copy(update={"golden_set": GoldenSetConfig(path=judged), "gate": gate})
    with pytest.raises(IncomparableError, match="labels"):
        run_evaluation(cfg, embedder=HashEmbedder(), baseline=every, baseline_source="b")


def test_a_set_without_llm_labels_reports_as_before(tmp_path: Path) -> None:
    cfg = Config(golden_set=GoldenSetConfig(path=make_set(tmp_path / "gs")))
    report = run_evaluation(cfg, embedder=HashEmbedder()).report
    assert report.labels is None and "labels" not in json.loads(report.model_dump_json())
    assert "labels" not in report.fingerprint.metrics
    human = cfg.model_copy(update={"gate": GateConfig(labels="human")})
    same = run_evaluation(human, embedder=HashEmbedder()).report
    assert same.indexes["exact"].per_query == report.indexes["exact"].per_query
    with pytest.raises(Exception, match="labels"):
        GateConfig.model_validate({"labels": "llm"})


def test_merge_keeps_the_sources_of_other_splits(tmp_path: Path) -> None:
    root = beir_set(tmp_path / "beir")
    (root / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\nq3\td2\t1\n")
    with (root / "queries.jsonl").open("a") as f:
        f.write(json.dumps({"_id": "q3", "text": "third"}) + "\n")
    write_jsonl(
        root / "judgments.sources.jsonl", [{"query_id": "q3", "doc_id": "d2", "source": JUDGE}]
    )
    files = annotation_files(tmp_path)
    merge_command(files, GoldenSetConfig(path=root), tmp_path / "out", Scale(0, 3), MergeOptions())
    assert_provenance(load_golden_set(GoldenSetConfig(path=tmp_path / "out")))
    dev = load_golden_set(GoldenSetConfig(path=tmp_path / "out", split="dev"))
    assert dev.sources == {"q3": {"d2": JUDGE}}
