"""report.html: the SVG charts, and real pages (a plain run, a gate that fails, a comparison)
opened in headless Chromium (Debian's package, driven by Playwright over the DevTools protocol):
no errors, nothing fetched, verdict and charts in the DOM, a screenshot kept in test-artifacts/.
Golden-set text is escaped; `evalret report` redraws the same pages from the saved JSON without
importing a model library. The metric@k curves' numbers are tested in test_curves.py."""

from __future__ import annotations

import dataclasses
import itertools
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import DEMO, REPO
from evalret.data.baseline import golden_set_of, load_baseline
from evalret.data.schema import CompareReport
from evalret.pipeline.pages import render_compare_html, render_run_html
from evalret.report.svg import (
    Bar,
    BarRow,
    DeltaRow,
    Line,
    Series,
    bar_chart,
    delta_chart,
    histogram,
    line_chart,
    nice_ticks,
    sorted_deltas,
)
from helpers import demo_report, invoke, marks_its_users

ARTIFACTS = REPO / "test-artifacts"  # screenshots and PDFs of the pages (gitignored)
SVG = "{http://www.w3.org/2000/svg}"


# --- charts ------------------------------------------------------------------------------------


def parse_svg(svg: str) -> ET.Element:
    """The chart as XML: a chart that is not well-formed would not render."""
    return ET.fromstring(svg)


def test_nice_ticks_cover_the_range() -> None:
    """Inner ticks stay inside the range; outward ticks enclose it; steps are round."""
    assert nice_ticks(0, 1, 5) == [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert nice_ticks(-0.31, 0.02, 4, outward=True) == [-0.4, -0.3, -0.2, -0.1, 0.0, 0.1]
    assert nice_ticks(0, 21, 4, outward=True) == [0.0, 10.0, 20.0, 30.0]
    inner = nice_ticks(-0.37, 0.52, 4)
    assert inner[0] >= -0.37 and inner[-1] <= 0.52


@pytest.mark.parametrize("extent", [1e-15, 3e-12, 2e-9, 5e-5])
def test_ticks_of_a_tiny_range_stay_distinct(extent: float) -> None:
    """A range far below 1e-10 (float noise, as a run's per-query change against a baseline
    summed in another order) gets distinct ticks and labels: rounding ticks to 10 decimals
    made them all 0 and the labels divided by zero (report.html crashed, exit 3)."""
    ticks = nice_ticks(-extent, extent, 6)
    assert len(ticks) >= 3 and all(a < b for a, b in itertools.pairwise(ticks))
    svg = histogram(
        [-extent, extent / 2, extent], label="tiny", x_label="change", value_range=(-extent, extent)
    )
    # the x axis' tick labels: the texts on the line below the plot (y 194, font size 11)
    axis = [
        e.text
        for e in parse_svg(svg).iter(f"{SVG}text")
        if e.get("y") == "194" and e.get("font-size") == "11"
    ]
    assert len(axis) == len(ticks) and len(set(axis)) == len(axis) and "0" in axis, axis


def test_run_page_against_a_baseline_that_differs_by_float_noise() -> None:
    """The demo against its committed baseline, where one query's nDCG differs by 1e-15: the
    page renders (it raised a math domain error), and the noise is no change (core/comparison
    FLOAT_NOISE)."""
    baseline = demo_report()
    report = demo_report()
    scores = report.indexes["exact"].per_query["ndcg@10"]
    scores[0] = scores[0] + 1e-15 if scores[0] < 1 else scores[0] - 1e-15
    html = render_run_html(report, baseline, golden_set_of(report))
    assert f"every one of the {len(scores)} queries scores the same ndcg@10" in html


def test_bar_chart_draws_a_bar_and_whisker_per_value_with_exact_tooltips() -> None:
    """Two series over three rows: six bars, six whiskers, a tooltip with each exact value; a
    missing value draws no bar; label text is escaped."""
    rows = [
        BarRow(
            f"s{i} <b>",
            [Bar(0.5 + i / 10, 0.4, 0.7, f"base {0.5 + i / 10:.4f}"), Bar(0.25, 0.2, 0.3, "cur")],
            "0.2500",
            change=-0.25,
        )
        for i in range(3)
    ] + [BarRow("empty", [Bar(None), Bar(None)])]
    svg = bar_chart(
        rows,
        [Series("baseline", "#888"), Series("current", "#07b")],
        label="t",
        x_label="ndcg@10",
        reference=(0.95, "floor"),
    )
    root = parse_svg(svg)
    bars = [r for r in root.iter(f"{SVG}rect") if "bar" in (r.get("class") or "").split()]
    assert len(bars) == 6
    assert len([w for w in root.iter(f"{SVG}line") if w.get("class") == "whisker"]) == 6
    tips = [t.text for t in root.iter(f"{SVG}title")]
    assert "base 0.7000" in tips and "floor" in tips
    assert "s0 <b>" in "".join(root.itertext()) and "<b>" not in svg.replace("&lt;b&gt;", "")
    # a bar's length is proportional to its value: 0.25 is half of 0.5 on a 0..1 axis
    widths = [float(b.get("width") or 0) for b in bars]
    assert widths[1] == pytest.approx(widths[0] / 2, abs=0.2)


def test_delta_histogram_sorted_and_line_charts_are_well_formed() -> None:
    """Each chart parses, has its title, and draws one mark per non-empty bin / changed query /
    marked point."""
    delta = delta_chart(
        [DeltaRow("all", -0.3, -0.35, -0.25, limit=-0.01), DeltaRow("tail", 0.1, strong=False)],
        label="d",
        x_label="B - A",
    )
    root = parse_svg(delta)
    assert len([r for r in root.iter(f"{SVG}rect") if "delta" in (r.get("class") or "")]) == 2
    assert len([x for x in root.iter(f"{SVG}line") if x.get("class") == "limit"]) == 1
    values = [-0.5, -0.1, 0.0, 0.0, 0.2]
    hist = parse_svg(histogram([v for v in values if v], label="h", x_label="x"))
    assert len([r for r in hist.iter(f"{SVG}rect") if "hist" in (r.get("class") or "")]) == 3
    ranked = parse_svg(sorted_deltas(values, [f"q{i}" for i in range(5)], label="s", y_label="y"))
    marks = [r for r in ranked.iter(f"{SVG}rect") if "query" in (r.get("class") or "")]
    assert [m.find(f"{SVG}title").text for m in marks] == [
        "q0: -0.5000",
        "q1: -0.1000",  # type: ignore[union-attr]
        "q4: +0.2000",
    ]
    curve = parse_svg(
        line_chart(
            [1, 2, 5, 10],
            [Line("recall", [0.1, 0.2, None, 0.5], "#000", marks=[1, 10])],
            label="c",
            x_label="k",
            y_label="v",
        )
    )
    assert len(list(curve.iter(f"{SVG}circle"))) == 2
    assert len(list(curve.iter(f"{SVG}path"))) == 1


# --- real pages in a real browser --------------------------------------------------------------


@dataclass(frozen=True)
class Runs:
    plain: Path  # out dir of a run with no gate
    gated: Path  # out dir of a run whose gate fails (truncate_dim 32 against the plain run)
    compare: Path  # out dir of `evalret compare plain gated`
    baseline: Path


def write_config(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
@marks_its_users("model")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    """Three real runs with the packaged model on the demo set (the embedding cache of the test
    session makes the second and third cheap when tests/test_cli.py ran before)."""
    tmp = tmp_path_factory.mktemp("html")
    plain_cfg = write_config(
        tmp / "plain.yaml", f"golden_set:\n  path: {DEMO}\ngate:\n  ann_min_recall: null\n"
    )
    baseline = tmp / "baseline.json"
    code, out = invoke(
        "run",
        "-c",
        str(plain_cfg),
        "-o",
        str(tmp / "plain"),
        "--no-progress",
        "--save-baseline",
        str(baseline),
    )
    assert code == 0, out
    worse_cfg = write_config(
        tmp / "worse.yaml",
        f"golden_set:\n  path: {DEMO}\nmodel:\n  truncate_dim: 32\n"
        "gate:\n  significance: {test: randomization, samples: 2000, seed: 3}\n",
    )
    code, out = invoke(
        "run", "-c", str(worse_cfg), "-o", str(tmp / "gated"), "--no-progress", "-b", str(baseline)
    )
    assert code == 1, out
    code, out = invoke(
        "compare",
        str(tmp / "plain" / "report.json"),
        str(tmp / "gated" / "report.json"),
        "-o",
        str(tmp / "compare"),
        "--no-progress",
        "--samples",
        "2000",
    )
    assert code == 0, out
    return Runs(tmp / "plain", tmp / "gated", tmp / "compare", baseline)


@dataclass(frozen=True)
class Loaded:
    """What the browser saw: console errors, uncaught exceptions, failed requests, every
    requested URL, and facts read from the DOM."""

    errors: list[str]
    requests: list[str]
    dom: dict[str, Any]
    screenshot: Path


DOM_FACTS = """() => {
  const q = (s) => document.querySelectorAll(s);
  const figures = [...q('figure.chart')];
  return {
    title: document.title,
    verdict: document.querySelector('#verdict')?.textContent ?? null,
    verdictState: document.querySelector('#verdict')?.dataset.verdict ?? null,
    verdictTop: document.querySelector('#verdict')?.getBoundingClientRect().top ?? null,
    sections: [...q('main > section')].map((s) => s.id),
    charts: q('svg.chart-svg').length,
    bars: q('svg rect.bar').length,
    whiskers: q('svg g.ci line.whisker').length,
    deltaBars: q('svg.delta-chart rect.delta').length,
    histogramBars: q('svg.histogram rect.hist').length,
    queryBars: q('svg.sorted-deltas rect.query').length,
    curves: q('svg.line-chart path.curve').length,
    queryCards: q('article.query-card').length,
    failedRows: q('#gate h3 + .table-wrap tr.failed').length,
    legend: [...q('svg.bar-chart text')].some((t) => t.textContent === 'baseline'),
    figuresWithoutTitleOrCaption: figures.filter((f) =>
      !f.querySelector('.chart-title')?.textContent.trim() ||
      !f.querySelector('figcaption')?.textContent.trim()).length,
    emptyCharts: [...q('svg.chart-svg')].filter((s) => {
      const r = s.getBoundingClientRect(); return r.width < 50 || r.height < 50; }).length,
    scripts: q('script').length,
    images: q('img').length,
    text: document.body.innerText,
    overflow: document.documentElement.scrollWidth - window.innerWidth,
  };
}"""


def open_page(browser: Any, html: Path, name: str, width: int = 1280) -> Loaded:
    """Load ``html`` from file://, collect what went wrong, read the DOM and keep a full-page
    screenshot as test-artifacts/<name>.png. Any request that is not file: or data: is
    recorded (and aborted, so that nothing can leave the machine)."""
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    requests: list[str] = []
    page.on(
        "console",
        lambda m: (
            errors.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning") else None
        ),
    )
    page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: errors.append(f"request failed: {r.url}"))
    page.on("request", lambda r: requests.append(r.url))
    context.route(lambda url: not url.startswith(("file:", "data:")), lambda route: route.abort())
    page.goto(html.resolve().as_uri(), wait_until="load")
    dom = page.evaluate(DOM_FACTS)
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(shot), full_page=True)
    print(f"screenshot: {shot}")
    context.close()
    return Loaded(errors, requests, dom, shot)


def assert_clean(loaded: Loaded) -> None:
    """No console error, no exception, nothing but the file itself (and data:) requested, no
    script on the page, every chart titled, captioned and drawn at a visible size."""
    assert loaded.errors == []
    assert all(u.startswith(("file:", "data:")) for u in loaded.requests), loaded.requests
    dom = loaded.dom
    assert dom["scripts"] == 0
    assert dom["figuresWithoutTitleOrCaption"] == 0 and dom["emptyCharts"] == 0
    assert dom["overflow"] <= 0, "the page scrolls sideways"
    assert dom["verdictTop"] is not None and dom["verdictTop"] < 100, "verdict not at the top"
    assert loaded.screenshot.stat().st_size > 50_000


def test_plain_run_page_in_chromium(runs: Runs, browser: Any, tmp_path: Path) -> None:
    """`evalret run` writes report.html; without a gate it shows "NO GATE", bars with whiskers
    for every index and metric, the ANN section, per-query scores, curves, fingerprint."""
    report = load_baseline(runs.plain / "report.json")
    written = open_page(browser, runs.plain / "report.html", "report-run-as-written")
    assert_clean(written)
    if report.gate is not None:  # a check on by default (none is asked for here): draw without
        # no baseline: the fixed checks alone, a neutral badge that says so (a failed one: fail)
        state = "neutral" if report.gate.verdict == "pass" else "fail"
        assert written.dom["verdictState"] == state and written.dom["sections"][0] == "gate"
        assert state == "fail" or written.dom["verdict"].startswith("no baseline: ")
        path = tmp_path / "report.html"
        path.write_text(
            render_run_html(report.model_copy(update={"gate": None}), None, golden_set_of(report))
        )
    else:
        path = runs.plain / "report.html"
    loaded = open_page(browser, path, "report-run")
    assert_clean(loaded)
    dom = loaded.dom
    assert dom["verdictState"] == "neutral" and dom["verdict"] == "NO GATE"
    assert dom["sections"] == [
        "metrics",
        "ann",
        "lexical",
        "per-query",
        "curves",
        "health",
        "fingerprint",
    ]
    assert dom["deltaBars"] >= len(report.slices)  # dense - bm25 per slice
    assert "Embedding health" in dom["text"] and "partition_isotropy" in dom["text"]
    assert "Not collapsed" in dom["text"]
    n_bars = sum(
        len(r.slices) * len(next(iter(r.slices.values())).metrics) for r in report.indexes.values()
    )
    assert dom["bars"] >= n_bars and dom["whiskers"] >= n_bars - len(report.indexes)
    assert dom["histogramBars"] > 0 and dom["curves"] > 0 and dom["queryCards"] == 5
    assert "HNSW against exact search" in dom["text"] and report.fingerprint.digest in dom["text"]


def test_failing_gate_page_in_chromium(runs: Runs, browser: Any) -> None:
    """A gate that fails: the verdict and the failed checks first, baseline bars beside the
    current ones, the per-query change (histogram and sorted) and the biggest losers with their
    texts; also readable on a phone-sized screen."""
    report = load_baseline(runs.gated / "report.json")
    assert report.gate is not None and report.gate.verdict == "fail"
    loaded = open_page(browser, runs.gated / "report.html", "report-gate-fail")
    assert_clean(loaded)
    dom = loaded.dom
    failed = report.gate.failed
    assert dom["verdictState"] == "fail"
    assert dom["verdict"] == f"✖ GATE FAILED: {len(failed)} of {len(report.gate.checks)} checks"
    assert dom["sections"][0] == "gate" and dom["failedRows"] == len(failed)
    assert dom["legend"], "no baseline series in the bar charts"
    assert dom["deltaBars"] >= len([c for c in failed if c.kind == "max_drop"])
    assert dom["histogramBars"] > 0 and dom["queryBars"] > 0 and dom["queryCards"] == 10
    golden = golden_set_of(report)
    assert golden is not None
    text = dict(zip(golden.query_ids, golden.query_texts, strict=True))
    base = load_baseline(runs.baseline)
    delta = np.asarray(report.indexes["exact"].per_query["ndcg@10"]) - np.asarray(
        base.indexes["exact"].per_query["ndcg@10"]
    )
    worst = report.query_ids[int(np.argmin(delta))]
    assert text[worst] in dom["text"], "the biggest loser's text is not shown"
    narrow = open_page(browser, runs.gated / "report.html", "report-gate-fail-narrow", width=390)
    assert_clean(narrow)


def test_compare_page_in_chromium(runs: Runs, browser: Any) -> None:
    """`evalret compare` writes report.html: verdict, B - A per slice with intervals, A beside
    B, per-query changes with the biggest losses and gains, judged@k of A and B with B's most
    frequent unjudged documents; it prints to PDF."""
    comparison = CompareReport.model_validate_json((runs.compare / "compare.json").read_text())
    loaded = open_page(browser, runs.compare / "report.html", "report-compare")
    assert_clean(loaded)
    dom = loaded.dom
    assert dom["verdictState"] == "fail" and dom["verdict"] == "✖ NOT A CANDIDATE"
    assert dom["sections"] == [
        *("verdict", "changes", "metrics", "per-query", "curves", "judged", "settings")
    ]
    if comparison.unjudged is not None and comparison.unjudged.documents:
        assert "most frequent unjudged documents" in dom["text"]
        assert comparison.unjudged.documents[0].id in dom["text"]
    n_deltas = sum(
        len(slices) * len(next(iter(slices.values())).metrics)
        for slices in comparison.indexes.values()
    )
    assert dom["deltaBars"] == n_deltas and dom["whiskers"] > n_deltas
    assert dom["queryCards"] == len(comparison.losers) + len(comparison.gainers) > 0
    assert comparison.losers[0].text in dom["text"]


def test_pages_print(runs: Runs, browser: Any) -> None:
    """The print stylesheet gives a PDF (kept beside the screenshots)."""
    page = browser.new_page()
    page.goto((runs.gated / "report.html").resolve().as_uri())
    pdf = ARTIFACTS / "report-gate-fail.pdf"
    page.pdf(path=str(pdf), format="A4")
    page.close()
    assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 100_000


def test_golden_set_text_is_escaped(runs: Runs, browser: Any, tmp_path: Path) -> None:
    """Query and document texts with markup are shown as text: no script runs, no image
    loads, nothing is fetched."""
    report = load_baseline(runs.gated / "report.json")
    base = load_baseline(runs.baseline)
    golden = golden_set_of(report)
    assert golden is not None
    evil = '<script>document.title="pwned"</script><img src="http://example.invalid/x.png">'
    golden = dataclasses.replace(
        golden,
        query_texts=[t + evil for t in golden.query_texts],
        doc_texts=[evil + t for t in golden.doc_texts],
    )
    html = render_run_html(report, base, golden)
    assert "<script" not in html and "<img" not in html
    path = tmp_path / "report.html"
    path.write_text(html, encoding="utf-8")
    loaded = open_page(browser, path, "report-escaped")
    assert_clean(loaded)
    assert loaded.dom["images"] == 0 and loaded.dom["title"] == "evalret run report"
    assert '<script>document.title="pwned"</script>' in loaded.dom["text"]


# --- evalret report ----------------------------------------------------------------------------


def test_evalret_report_redraws_the_same_pages_without_model_libraries(
    runs: Runs, tmp_path: Path
) -> None:
    """`evalret report` of the saved report.json and compare.json writes the very pages the
    run and the comparison wrote (baseline, golden set and A/B reports found again), and
    imports neither torch, sentence-transformers nor faiss."""
    for source, name in (
        (runs.gated / "report.json", "run"),
        (runs.compare / "compare.json", "cmp"),
    ):
        out = tmp_path / name
        code = (
            "import sys\n"
            "from evalret.cli import app\n"
            "try:\n"
            f"    app(['report', {str(source)!r}, '-o', {str(out)!r}])\n"
            "except SystemExit as e:\n"
            "    assert e.code == 0, e.code\n"
            "print(sorted(m for m in ('torch', 'sentence_transformers', 'faiss') "
            "if m in sys.modules))"
        )
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip().splitlines()[-1] == "[]"
        assert (out / "report.html").read_bytes() == (source.parent / "report.html").read_bytes()


def test_compare_page_from_compare_json_alone(runs: Runs) -> None:
    """Without the two run reports the comparison page still has the verdict, the changes with
    intervals and the listed queries, and says what it cannot draw."""
    comparison = CompareReport.model_validate_json((runs.compare / "compare.json").read_text())
    html = render_compare_html(comparison)
    assert 'data-verdict="fail"' in html and 'class="chart-svg delta-chart' in html
    assert "drawn from compare.json alone" in html and 'id="curves"' not in html


def test_evalret_report_bad_input_exits_2(runs: Runs, tmp_path: Path) -> None:
    """Broken JSON names file and line; --baseline with a compare.json, and a baseline of
    another golden set, are refused; all exit 2."""
    broken = tmp_path / "report.json"
    broken.write_text('{\n  "schema_version": 1,\n  oops\n}\n')
    code, out = invoke("report", str(broken))
    assert code == 2 and f"{broken}:3" in out.replace("\n", "")
    code, out = invoke("report", str(runs.compare / "compare.json"), "-b", str(runs.baseline))
    assert code == 2 and "not to compare.json" in out
    other = json.loads(runs.baseline.read_text())
    other["golden_set"]["fingerprint"] = "0" * 64
    (tmp_path / "other.json").write_text(json.dumps(other))
    code, out = invoke(
        "report",
        str(runs.gated / "report.json"),
        "-b",
        str(tmp_path / "other.json"),
        "-o",
        str(tmp_path / "x"),
    )
    assert code == 2 and "another golden set" in out
