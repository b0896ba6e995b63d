"""bpref and the judged-only (``:judged``) metrics end to end: through the config, the gate, every
report file, `evalret score` and `evalret compare`, and equal to trec_eval (-J) on the runs the
pipeline exports. The per-metric conformance lives in test_trec_eval_conformance.py."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from evalret.data.config import Config
from evalret.data.schema import RunReport
from evalret.pipeline.evaluate import Evaluation, run_evaluation
from evalret.pipeline.outputs import write_outputs
from helpers import HashEmbedder, assert_report_matches_trec_eval, invoke, make_set, read_trec_run

METRICS = [
    "ndcg@10",
    "ndcg@10:judged",
    "map:judged",
    "recall@5:judged",
    "mrr@3:judged",
    "precision:judged",
    "bpref",
    "bpref@5:judged",
]


def _golden(tmp_path: Path) -> Path:
    """make_set's golden set with three judged non-relevant documents (grade 0) per query, so
    bpref's N and the condensed rankings hold more than the relevant documents."""
    path = make_set(tmp_path / "set")
    queries = [json.loads(line) for line in (path / "queries.jsonl").read_text().splitlines()]
    for n, q in enumerate(queries):
        for j in range(1, 4):
            q["relevant"].setdefault(f"d{(n * 7 + j * 11) % 60}", 0)
    (path / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    return path


def _config(golden: Path, gate: dict | None = None) -> Config:
    return Config.model_validate(
        {
            "golden_set": {"path": str(golden)},
            "indexes": {"hnsw": {"enabled": False}},
            "metrics": METRICS,
            "gate": gate or {},
        }
    )


@pytest.fixture(scope="module")
def gated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Evaluation, Path]:
    """A baseline run, then a run gated on it with thresholds on judged-only metrics and bpref
    (the bpref floor fails), its report files written."""
    tmp = tmp_path_factory.mktemp("holes")
    golden = _golden(tmp)
    baseline = run_evaluation(_config(golden), embedder=HashEmbedder()).report
    gate = {
        "thresholds": {
            "ndcg@10:judged": {"max_drop": 0.01},
            "map:judged": {"min": 0.0},
            "bpref": {"min": 0.999},
        }
    }
    ev = run_evaluation(_config(golden, gate), embedder=HashEmbedder(), baseline=baseline)
    write_outputs(ev, tmp / "out")
    return ev, tmp / "out"


def test_the_names_are_the_reports_keys_and_the_gate_checks_them(
    gated: tuple[Evaluation, Path],
) -> None:
    """Every metric is a per-query key and a slice mean under its normalized name; the gate
    checks the judged-only and bpref thresholds (against the baseline for max_drop)."""
    ev, _ = gated
    exact = ev.report.indexes["exact"]
    assert list(exact.per_query) == METRICS and list(exact.slices["all"].metrics) == METRICS
    assert ev.report.fingerprint.metrics["search_depth"] == 1000  # :judged reads the whole run
    assert ev.report.gate is not None
    checks = {(c.index, c.slice, c.metric, c.kind): c for c in ev.report.gate.checks}
    assert checks[("exact", "all", "ndcg@10:judged", "max_drop")].passed
    assert checks[("exact", "all", "ndcg@10:judged", "max_drop")].baseline is not None
    assert checks[("exact", "all", "map:judged", "min")].passed
    assert not checks[("exact", "all", "bpref", "min")].passed
    # the judged-only metrics differ from the plain ones here: the test is not vacuous
    assert exact.per_query["ndcg@10:judged"] != exact.per_query["ndcg@10"]


def test_exported_runs_score_as_trec_eval_minus_j(gated: tuple[Evaluation, Path]) -> None:
    """run.<index>.trec read back and scored by trec_eval (-J for the judged-only metrics) gives
    every per-query value of the report, for the dense and the lexical index."""
    ev, out = gated
    g = ev.golden_set
    qrels = {q: g.qrels[q] for q in g.query_ids}
    for index in ("exact", "bm25", "hybrid"):
        run = read_trec_run(out / f"run.{index}.trec")
        per_query = ev.report.indexes[index].per_query
        compared = assert_report_matches_trec_eval(per_query, ev.report.query_ids, qrels, run, 1)
        assert compared == len(METRICS) * 24


def test_colons_break_no_report_file(gated: tuple[Evaluation, Path]) -> None:
    """JUnit names the checks with the metric as written; every Markdown table row has as many
    cells as its header; every HTML id is a plain token, none repeated; no file is named after a
    metric."""
    _, out = gated
    assert {p.name for p in out.iterdir()} == {
        "report.json",
        "report.md",
        "report.html",
        "comment.md",
        "junit.xml",
        "run.exact.trec",
        "run.bm25.trec",
        "run.hybrid.trec",
    }
    cases = {c.get("name"): c for c in ET.parse(out / "junit.xml").getroot().iter("testcase")}
    assert cases["bpref min 0.999"].find("failure") is not None
    assert cases["ndcg@10:judged max_drop 0.01"].find("failure") is None
    for name in ("report.md", "comment.md"):
        text = (out / name).read_text()
        assert "ndcg@10:judged" in text and "bpref" in text
        for table in re.findall(r"(?:^\|.*\|\n)+", text, flags=re.M):
            widths = {len(re.split(r"(?<!\\)\|", row)) for row in table.splitlines()}
            assert len(widths) == 1, table
    html = (out / "report.html").read_text()
    ids = re.findall(r'\sid="([^"]*)"', html)
    assert ids and len(ids) == len(set(ids))
    assert all(re.fullmatch(r"[A-Za-z0-9_-]+", i) for i in ids), ids
    assert "ndcg@10:judged" in html and "map:judged" in html


def test_score_and_compare_take_the_names(gated: tuple[Evaluation, Path], tmp_path: Path) -> None:
    """`evalret score -m ndcg@10:judged -m bpref` on an exported run prints them and reproduces
    the run's values; `evalret compare --primary ndcg@10:judged` decides on it."""
    ev, out = gated
    golden = ev.report.golden_set.source
    code, text = invoke(
        "score",
        golden,
        f"ex={out / 'run.exact.trec'}",
        "-m",
        "NDCG@10:Judged",
        "-m",
        "bpref",
        "--no-progress",
        "--out",
        str(tmp_path / "score"),
    )
    assert code == 0, text
    assert "ndcg@10:judged" in text and "bpref" in text
    scored = RunReport.model_validate_json((tmp_path / "score" / "report.json").read_text())
    for name in ("ndcg@10:judged", "bpref"):
        assert scored.indexes["ex"].per_query[name] == pytest.approx(
            ev.report.indexes["exact"].per_query[name], abs=1e-12
        )
    code, text = invoke(
        "compare",
        str(out / "report.json"),
        str(out / "report.json"),
        "--primary",
        "ndcg@10:judged",
        "--no-progress",
        "--out",
        str(tmp_path / "cmp"),
    )
    assert code == 0, text
    compared = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert compared["settings"]["primary"] == "ndcg@10:judged"
