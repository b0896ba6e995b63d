"""Writing a run's files: report.json, report.md, comment.md, report.html, junit.xml and one TREC
run file per index (rendered by report/), and the step summary. Their names are declared here
(``report_names``): the input guard checks them and ``data.paths.clear_outputs`` removes a run's
earlier ones before it starts."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from evalret.commands.comment import baseline_losses, reports_link
from evalret.commands.evaluate import Evaluation
from evalret.commands.report import render_run_html
from evalret.data.atomic import append_text, atomic_write_text
from evalret.errors import InputError
from evalret.report.comment import render_comment
from evalret.report.junit import render_junit
from evalret.report.markdown import render_markdown
from evalret.report.trec import trec_run

RUN_TAG = "evalret"
# the files of a run's report set, besides one run.<index>.trec per index (junit.xml: with a gate)
REPORT_FILES = ("report.json", "report.md", "comment.md", "report.html", "junit.xml")


def report_names(indexes: Iterable[str]) -> tuple[str, ...]:
    """Every file name a run with these indexes writes into its output directory."""
    return (*REPORT_FILES, *(f"run.{name}.trec" for name in indexes))


def write_outputs(
    evaluation: Evaluation, out_dir: Path, step_summary: Path | None = None
) -> list[Path]:
    """Write report.json, report.md, comment.md (the pull-request comment), report.html,
    run.<index>.trec and (with a gate) junit.xml into ``out_dir``; append report.md to
    ``step_summary`` (GitHub's $GITHUB_STEP_SUMMARY) if given. Returns the paths written."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"cannot create output directory {out_dir}: {e.strerror or e}") from None
    written = []
    report_path = out_dir / "report.json"
    atomic_write_text(report_path, evaluation.report.model_dump_json(indent=2) + "\n")
    written.append(report_path)
    report = evaluation.report
    markdown = render_markdown(report)
    outputs = {
        "report.md": markdown,
        "report.html": render_run_html(report, evaluation.baseline, evaluation.golden_set),
        "comment.md": render_comment(report, markdown, baseline_losses(evaluation), reports_link()),
    }
    if report.gate is not None:
        outputs["junit.xml"] = render_junit(report.gate)
    for name, ranking in evaluation.rankings.items():
        outputs[f"run.{name}.trec"] = trec_run(evaluation.golden_set, ranking, f"{RUN_TAG}-{name}")
    for name, text in outputs.items():
        atomic_write_text(out_dir / name, text)
        written.append(out_dir / name)
    if step_summary is not None:
        append_text(step_summary, markdown + "\n", "step summary")
    return written
