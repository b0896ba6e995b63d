"""Orchestration of `evalret compare`: get A and B (run a config or read a report), compare,
write compare.json, compare.md and disagreements.md."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalret.core.comparison import CompareSettings, compare_reports
from evalret.data.atomic import append_text, atomic_write_text
from evalret.data.baseline import load_baseline
from evalret.data.config import GoldenSetConfig, load_config
from evalret.data.goldenset import GoldenSet, load_golden_set
from evalret.data.schema import CompareReport, RunReport
from evalret.errors import EvalretError


def golden_set_of(report: RunReport) -> GoldenSet | None:
    """The golden set a saved report was computed on, when it is still reachable and unchanged
    (texts and grades for listing queries); None otherwise."""
    try:
        golden = load_golden_set(
            GoldenSetConfig.model_validate(report.config["golden_set"]),
            int(report.config.get("relevance_level", 1)),
        )
    except (EvalretError, OSError, ValueError, KeyError):
        return None
    return golden if golden.fingerprint == report.golden_set.fingerprint else None


def _obtain(path: Path, progress: Any) -> tuple[RunReport, GoldenSet | None]:
    """A report for ``path``: a saved report.json as is, or a config evaluated now."""
    if path.suffix == ".json":
        report = load_baseline(path, "report")
        return report, golden_set_of(report)
    from evalret.commands.evaluate import run_evaluation

    evaluation = run_evaluation(load_config(path), progress=progress)
    return evaluation.report, evaluation.golden_set


def run_comparison(
    a: Path,
    b: Path,
    out: Path,
    *,
    progress: Any = None,
    step_summary: Path | None = None,
    **settings: Any,
) -> tuple[CompareReport, list[Path]]:
    """Compare B against A and write the comparison files (compare.json, compare.md,
    disagreements.md, report.html) into ``out``; append compare.md to ``step_summary`` (GitHub's
    $GITHUB_STEP_SUMMARY) if given."""
    from evalret.commands.report import render_compare_html
    from evalret.report.compare_views import render_compare_markdown, render_disagreements

    checked = CompareSettings(**settings)  # before anything is evaluated
    report_a, golden = _obtain(a, progress)
    report_b, golden_b = _obtain(b, progress)
    comparison = compare_reports(report_a, report_b, checked, golden or golden_b, (str(a), str(b)))
    markdown = render_compare_markdown(comparison)
    files = {
        "compare.json": comparison.model_dump_json(indent=2) + "\n",
        "compare.md": markdown,
        "disagreements.md": render_disagreements(comparison),
        "report.html": render_compare_html(comparison, report_a, report_b),
    }
    for name, text in files.items():
        atomic_write_text(out / name, text)
    if step_summary is not None:
        append_text(step_summary, markdown + "\n", "step summary")
    return comparison, [out / name for name in files]
