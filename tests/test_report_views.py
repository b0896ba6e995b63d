"""The typed report schema reads and writes reports unchanged; the view-models (number
formatter, gate summary and rows, compare rows, backend line) give the figures every view
prints."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from evalret.data.schema import (
    CompareReport,
    EmbeddingCache,
    EmbeddingInfo,
    GateCheck,
    GateSection,
    MetricComparison,
    RunReport,
    SliceComparison,
)
from evalret.report.compare_rows import compare_rows
from evalret.report.gate_rows import allowed_change, check_rows, gate_summary, limit_text
from evalret.report.numbers import HTML, PLAIN, TYPOGRAPHIC, number, p_pair, p_value
from evalret.report.run_notes import backend_line
from helpers import gate_check

REPO = Path(__file__).resolve().parents[1]
DASH = "\u2013"  # the en dash report.md and the HTML page write for a missing number


def test_committed_baseline_reads_and_writes_back_unchanged() -> None:
    """baselines/demo.json (an older report, schema version 1: no reader warnings, no cache
    warnings) loads into the typed schema and dumps back to the same JSON, key order included,
    but for what version 2 changed: the version, and ``ann`` keyed by index name."""
    text = (REPO / "baselines" / "demo.json").read_text()
    report = RunReport.model_validate_json(text)
    assert report.embedding.cache is not None and report.embedding.cache.hnsw_index == "hit"
    assert report.bootstrap.confidence == 0.95
    assert report.gate is not None and report.gate.verdict == "pass"
    old = json.loads(text)
    assert old["schema_version"] == 1
    expected = {**old, "schema_version": 2, "ann": {"hnsw": old["ann"]}}
    dumped = json.loads(report.model_dump_json())
    assert dumped == expected and list(dumped) == list(old)
    again = RunReport.model_validate_json(report.model_dump_json(indent=1))
    assert again.model_dump_json(indent=1) == report.model_dump_json(indent=1)


def _embedding(**extra: Any) -> dict[str, Any]:
    return {"dim": 8, "n_documents": 3, "n_queries": 2, "document_text": "title", **extra}


def test_keys_absent_from_an_older_report_stay_absent() -> None:
    """Optional keys a report did not have are not written as null or []; keys it had as null
    stay null."""
    old = EmbeddingInfo.model_validate(_embedding())
    assert old.model_dump() == _embedding()
    cache = {"dir": "/c", "namespace": "n", "document": {"hits": 1, "misses": 2,
             "corrupt_shards": []}, "hnsw_index": "hit"}  # fmt: skip
    newer = EmbeddingInfo.model_validate(_embedding(cache=cache, backend_check=None))
    assert newer.model_dump() == _embedding(cache=cache, backend_check=None)
    assert list(json.loads(newer.model_dump_json())) == [*_embedding(), "cache", "backend_check"]


def test_the_cache_section_keeps_further_retrievers_notes_in_order() -> None:
    """A retriever other than hnsw may add string notes under its own keys: they are read, kept
    after the known keys in their order and written back; a note that is not a string is
    refused, and a cache without hnsw_index is valid (no hnsw retriever reported)."""
    data = {"dir": "/c", "namespace": "n", "warnings": [], "hnsw_index": "hit",
            "ivf_index": "built", "bm25_index": "hit"}  # fmt: skip
    cache = EmbeddingCache.model_validate(data)
    assert json.loads(cache.model_dump_json()) == data
    assert list(json.loads(cache.model_dump_json())) == list(data)
    assert EmbeddingCache.model_validate({"dir": "/c", "namespace": "n"}).model_dump() == {
        "dir": "/c",
        "namespace": "n",
    }
    with pytest.raises(ValueError, match="ivf_index"):
        EmbeddingCache.model_validate({**data, "ivf_index": 3})


def test_number_formatter_per_medium() -> None:
    """The one number formatter writes each medium's missing-value and NaN forms."""
    assert number(0.123456, medium=PLAIN) == "0.1235"
    assert number(0.5, signed=True, medium=PLAIN) == "+0.5000"
    assert number(-0.5, signed=True, medium=TYPOGRAPHIC) == "-0.5000"
    assert number(0.0, signed=True, medium=HTML) == "+0.0000"
    assert number(0.98765, digits=3, medium=HTML) == "0.988"
    assert number(None, medium=PLAIN) == "-"
    assert number(None, medium=TYPOGRAPHIC) == DASH
    assert number(None, medium=HTML) == DASH
    # only the HTML page writes a NaN as missing; the terminal and Markdown print Python's nan
    assert number(math.nan, medium=HTML) == DASH
    assert number(math.nan, medium=PLAIN) == "nan"
    assert number(math.nan, signed=True, medium=TYPOGRAPHIC) == "+nan"
    assert p_pair(0.012345, 0.04567, HTML) == "0.0123 (0.0457)"
    assert p_value(0.012345) == "0.0123"
    assert p_pair(None, None, PLAIN) == "-"
    with pytest.raises(TypeError):  # no default medium: a view that forgets it fails loudly
        number(0.5)  # type: ignore[call-arg]


def _check(**fields: Any) -> GateCheck:
    """A failed check: recall@10 0.70 to 0.68."""
    failed = {"current": 0.68, "delta": -0.02, "passed": False, "message": "dropped"}
    return gate_check(**{**failed, **fields})


def test_gate_summary_and_rows() -> None:
    """The gate's summary line and check rows carry the values every view prints."""
    failed = _check()
    weak = _check(
        name="exact/tail/recall@10 max_drop_pct 2",
        slice="tail",
        kind="max_drop_pct",
        threshold=2,
        baseline=0.5,
        current=0.5,
        delta=0.0,
        p_value=0.4,
        p_adjusted=0.8,
        mde=0.0612,
        underpowered=True,
        passed=True,
    )
    floor = _check(kind="ann_min_recall", threshold=0.95, baseline=None, delta=None, passed=True)
    gate = GateSection.model_validate(
        {
            "verdict": "fail",
            "baseline": "b.json",
            "baseline_fingerprint": "f" * 64,
            "changed": {},
            "significance": None,
            "checks": [c.model_dump() for c in (failed, weak, floor)],
            "notes": [],
        }
    )
    summary = gate_summary(gate)
    assert not summary.passed and summary.n_checks == 3
    assert [c.slice for c in summary.failed] == ["all"]

    rows = check_rows(gate.checks, TYPOGRAPHIC)
    assert [(r.baseline, r.current, r.delta, r.limit, r.p) for r in rows] == [
        ("0.7000", "0.6800", "-0.0200", "drop ≤ 0.01", DASH),
        ("0.5000", "0.5000", "+0.0000", "drop ≤ 2%", "0.4 (0.8)"),
        (DASH, "0.6800", DASH, "≥ 0.95", DASH),
    ]
    assert check_rows([floor], PLAIN)[0].baseline == "-"
    assert limit_text(_check(kind="health_max", threshold=0.5)) == "≤ 0.5"
    assert allowed_change(failed) == -0.01
    assert allowed_change(weak) == pytest.approx(-0.01)
    assert allowed_change(floor) is None


def test_compare_rows() -> None:
    """A comparison's per-slice rows carry the delta, interval and adjusted p-value as printed."""
    m = MetricComparison(
        a=0.5,
        b=0.55,
        delta=0.05,
        ci_low=0.01,
        ci_high=0.09,
        p_randomization=0.0123,
        p_t_test=0.0101,
        p_randomization_adjusted=0.0369,
        p_t_test_adjusted=0.0303,
        significant=True,
        wins=30,
        ties=10,
        losses=5,
    )
    slices = {
        "all": SliceComparison(
            n_queries=45,
            reliability="unreliable",
            mde={"ndcg@10": 0.0456},
            metrics={"ndcg@10": m},
            drift={"jaccard@10": 0.8},
            diagnosis="gains everywhere",
        ),
        "tail": SliceComparison(
            n_queries=0,
            reliability="unreliable",
            mde={"ndcg@10": None},
            metrics={"ndcg@10": m.model_copy(update={"a": math.nan})},
            drift={},
            diagnosis="",
        ),
    }
    plain, html = compare_rows(slices, "ndcg@10", PLAIN), compare_rows(slices, "ndcg@10", HTML)
    first = plain[0]
    assert (first.name, first.n, first.a, first.b, first.delta, first.ci) == (
        "all",
        "45",
        "0.5000",
        "0.5500",
        "+0.0500",
        "[+0.0100, +0.0900]",
    )
    assert (first.p_randomization, first.p_t_test, first.wtl, first.mde) == (
        "0.0123 (0.0369)",
        "0.0101 (0.0303)",
        "30/10/5",
        "0.046",
    )
    assert first.metric.significant and first.diagnosis == "gains everywhere"
    assert (plain[1].a, plain[1].mde) == ("nan", "-")
    assert (html[1].a, html[1].mde) == (DASH, DASH)
    assert compare_rows(slices, "recall@10", PLAIN) == []


def test_backend_line() -> None:
    """The backend line is absent for torch and names the backend and its agreement otherwise."""
    torch = EmbeddingInfo.model_validate(_embedding(backend={"name": "torch", "precision": "fp32"}))
    assert backend_line(torch) is None
    assert backend_line(EmbeddingInfo.model_validate(_embedding())) is None
    onnx = EmbeddingInfo.model_validate(
        _embedding(
            backend={
                "name": "onnx",
                "precision": "int8",
                "threads": 4,
                "model": "read",
                "model_file": "/m.onnx",
            },
            backend_check={
                "reference": "torch",
                "sample": 100,
                "seed": 0,
                "mean_cosine": 0.9991234,
                "min_cosine": 0.98,
            },
        )
    )
    assert backend_line(onnx) == (
        "backend onnx int8, 4 threads, model read from cache: cosine to torch on 100 sampled "
        "documents mean 0.99912, min 0.98000"
    )


def test_compare_json_reads_and_writes_back_unchanged(tmp_path: Path) -> None:
    """A compare.json without samples_drawn (older) keeps it absent; sides, settings and
    changes are typed."""
    side = {"label": "a.json", "fingerprint": "f", "model": {"name": "m"}, "indexes": {}}
    settings = {
        "primary": "ndcg@10",
        "min_gain": 0.01,
        "alpha": 0.05,
        "correction": "holm",
        "samples": 10000,
        "bootstrap_samples": 1000,
        "confidence": 0.95,
        "seed": 0,
        "power": 0.8,
        "rbo_p": 0.9,
        "tests": "two-sided, paired",
        "ci": "percentile bootstrap of the paired differences",
    }
    data = {
        "schema_version": 1,
        "evalret_version": "0.1.0",
        "a": side,
        "b": {**side, "label": "b.json"},
        "changed": {"model.name": {"baseline": "m", "current": "n"}},
        "settings": settings,
        "golden_set": {"source": "g", "fingerprint": "f", "n_queries": 0},
        "primary_index": "exact",
        "indexes": {},
        "notes": [],
        "verdict": {"status": "no difference", "reason": "r", "blocking": [], "regressions": []},
        "losers": [],
        "gainers": [],
    }
    report = CompareReport.model_validate(data)
    assert report.settings.primary == "ndcg@10" and report.b.label == "b.json"
    assert report.changed["model.name"].current == "n"
    assert json.loads(report.model_dump_json()) == data
