"""`evalret run --sample 100` on the demo with the real packaged model: identical on reruns, every
slice represented, gated against the full baseline baselines/demo.json with exit 0; a corpus
sample against that baseline is refused with exit 2 before anything is embedded."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from conftest import REPO
from evalret.cli import app
from helpers import marks_its_users
from test_report_html import assert_clean, open_page

runner = CliRunner()
DEFAULT = str(REPO / "configs" / "default.yaml")
BASELINE = REPO / "baselines" / "demo.json"


@dataclass(frozen=True)
class SampledRun:
    code: int
    output: str
    report: dict[str, Any]
    out_dir: Path


def sampled_run(out_dir: Path, *extra: str) -> SampledRun:
    result = runner.invoke(
        app,
        ["run", "-c", DEFAULT, "-o", str(out_dir), "--no-progress", "--sample", "100", *extra],
    )
    report = json.loads((out_dir / "report.json").read_text()) if result.exit_code < 2 else {}
    return SampledRun(result.exit_code, result.output, report, out_dir)


@pytest.fixture(scope="module")
@marks_its_users("model")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[SampledRun, SampledRun]:
    """Two sampled runs gated against the full demo baseline (the second reads the vectors the
    first cached; test_cli checks that embedding again gives the same vectors)."""
    first = sampled_run(tmp_path_factory.mktemp("sample-a"), "-b", str(BASELINE))
    second = sampled_run(tmp_path_factory.mktemp("sample-b"), "-b", str(BASELINE))
    return first, second


def test_sampled_run_gates_against_the_full_baseline(runs: tuple[SampledRun, SampledRun]) -> None:
    """Exit 0, every drop check paired with the baseline's same queries (same model: the scores
    of the sampled queries are the baseline's), and the sample shown on the terminal."""
    run = runs[0]
    assert run.code == 0, run.output
    assert "GATE PASSED" in run.output
    assert "sample of 100 of 244 queries" in run.output
    report, baseline = run.report, json.loads(BASELINE.read_text())
    assert len(report["query_ids"]) == 100
    position = {q: i for i, q in enumerate(baseline["query_ids"])}
    # the committed baseline was written by an earlier evalret, which summed nDCG and AP in
    # another order: a per-query value may differ in its last bit (1e-16), never more
    for index, result in report["indexes"].items():
        for metric, scores in result["per_query"].items():
            base = baseline["indexes"][index]["per_query"][metric]
            want = [base[position[q]] for q in report["query_ids"]]
            assert scores == pytest.approx(want, rel=0, abs=1e-15), (index, metric)
    drops = [c for c in report["gate"]["checks"] if c["kind"] == "max_drop"]
    assert drops and all(abs(c["delta"]) < 1e-15 and c["passed"] for c in drops)
    assert report["gate"]["baseline"] == str(BASELINE)


def test_every_slice_is_represented(runs: tuple[SampledRun, SampledRun]) -> None:
    """Each slice of the full set keeps at least min(10, its size) queries, and the sample
    section lists each slice's count in the set and in the sample."""
    report = runs[0].report
    full = json.loads(BASELINE.read_text())["slices"]
    section = report["sample"]
    assert set(report["slices"]) == set(full)
    for name, info in full.items():
        sampled = report["slices"][name]["n_queries"]
        assert sampled >= min(10, info["n_queries"]), name
        assert section["slices"][name] == {
            "total": info["n_queries"],
            "sampled": sampled,
            "share": round(100 * info["n_queries"] / 244, 2),
        }
    assert section["n_queries"] == 100 and section["documents"] is None
    assert report["fingerprint"]["sample"]["query_digest"] == section["query_digest"]


def test_sampled_run_is_identical_on_rerun(runs: tuple[SampledRun, SampledRun]) -> None:
    """The rerun draws the same queries and gives the same report, timings and cache use aside;
    report.md and report.html show the sample."""
    a, b = (dict(r.report) for r in runs)
    assert runs[1].code == 0, runs[1].output
    assert a.pop("run_id") != b.pop("run_id")  # each run writes its own id
    for r in (a, b):
        r.pop("timings"), r.pop("latency"), r["embedding"].pop("cache")
    assert a == b
    md = (runs[0].out_dir / "report.md").read_text()
    assert "**Sampled run**: sample of 100 of 244 queries" in md
    html = (runs[0].out_dir / "report.html").read_text()
    assert 'id="sample"' in html and "proportional share" in html


def test_corpus_sample_against_a_full_baseline_exits_2(tmp_path: Path) -> None:
    """sample.documents with a baseline made on the whole set: exit 2 naming why and the fix."""
    cfg = tmp_path / "cfg.yaml"
    golden = REPO / "golden_sets" / "demo"
    cfg.write_text(f"golden_set:\n  path: {golden}\nsample: {{queries: 50, documents: 200}}\n")
    result = runner.invoke(
        app, ["run", "-c", str(cfg), "-o", str(tmp_path), "--no-progress", "-b", str(BASELINE)]
    )
    assert result.exit_code == 2, result.output
    assert "this run samples the corpus (documents: 200)" in result.output
    assert "sample.documents: null" in result.output
    assert not (tmp_path / "report.json").exists()


def test_sampled_page_in_chromium(runs: tuple[SampledRun, SampledRun], browser: Any) -> None:
    """The sampled run's report.html loads clean in Chromium (nothing fetched, no sideways
    scroll) and shows the sample section with its slice table."""
    loaded = open_page(browser, runs[0].out_dir / "report.html", "report-sampled")
    assert_clean(loaded)
    text = loaded.dom["text"]
    assert "Sample of 100 of 244 queries" in text and "proportional share" in text
