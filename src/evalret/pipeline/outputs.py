"""Writing a run's files: report.json, report.md, comment.md, report.html, junit.xml and one TREC
run file per index (rendered by report/), and the step summary. Their names are declared here
(``report_names``): the input guard checks them and ``data.paths.clear_outputs`` removes a run's
earlier ones before it starts."""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path

from evalret.data.atomic import AtomicFiles, append_text
from evalret.errors import InputError
from evalret.pipeline.comment import baseline_losses, reports_link
from evalret.pipeline.evaluate import Evaluation
from evalret.pipeline.pages import render_run_html
from evalret.report.comment import render_comment
from evalret.report.gate_rows import judge_hint
from evalret.report.markdown import render_markdown
from evalret.report.trec import trec_run_blocks

RUN_TAG = "evalret"
# the files of a run's report set, besides one run.<index>.trec per index (junit.xml: with a gate)
REPORT_FILES = ("report.json", "report.md", "comment.md", "report.html", "junit.xml")


def report_names(indexes: Iterable[str]) -> tuple[str, ...]:
    """Every file name a run with these indexes writes into its output directory."""
    return (*REPORT_FILES, *(f"run.{name}.trec" for name in indexes))


RUN_ID_ENV = "EVALRET_RUN_ID"  # a caller's id for this run (the action sets one per run)
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def new_run_id() -> str:
    """This run's id: $EVALRET_RUN_ID when the caller chose one (the action and the hook check
    that report.json carries theirs), else a fresh uuid4. A run id that is not a short token
    (letters, digits, ``. _ -``) is an InputError."""
    chosen = os.environ.get(RUN_ID_ENV)
    if not chosen:
        return str(uuid.uuid4())
    if not _RUN_ID.fullmatch(chosen):
        raise InputError(
            f"${RUN_ID_ENV} {chosen[:40]!r}: a run id is up to 128 letters, digits, . _ or -"
        )
    return chosen


def write_outputs(
    evaluation: Evaluation,
    out_dir: Path,
    step_summary: Path | None = None,
    run_id: str | None = None,
    config_words: Sequence[str] = (),
) -> list[Path]:
    """Write report.json, report.md, comment.md (the pull-request comment), report.html,
    run.<index>.trec and (with a gate) junit.xml into ``out_dir``; append report.md to
    ``step_summary`` (GitHub's $GITHUB_STEP_SUMMARY) if given. report.json and comment.md carry
    ``run_id`` (default: ``new_run_id()``); the judge commands of inconclusive checks repeat
    ``config_words`` (the run's config and settings). Returns the paths written.

    The files are one set (data.atomic.AtomicFiles): they appear together once every one is
    written, and none on an error. The run files are made first, their flushing to disk going
    on while the reports are made."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"cannot create output directory {out_dir}: {e.strerror or e}") from None
    report = evaluation.report.model_copy(update={"run_id": run_id or new_run_id()})
    report_path = out_dir / "report.json"
    texts = ["report.json", "report.md", "report.html", "comment.md"]
    if report.gate is not None:
        texts.append("junit.xml")
    runs = {index: out_dir / f"run.{index}.trec" for index in evaluation.rankings}
    with AtomicFiles() as files:
        opened = {name: files.open(out_dir / name) for name in texts}
        # the run files first: their flushing to disk goes on while the reports are made
        for index, ranking in evaluation.rankings.items():
            blocks = trec_run_blocks(evaluation.golden_set, ranking, f"{RUN_TAG}-{index}")
            files.open(runs[index]).write(blocks)
        opened["report.json"].write([(report.model_dump_json(indent=2) + "\n").encode("utf-8")])
        hint = judge_hint(report, str(report_path), config_words)
        markdown = render_markdown(report, hint)
        comment = render_comment(
            report, markdown, baseline_losses(evaluation), reports_link(), hint=hint
        )
        outputs = {
            "report.md": markdown,
            "report.html": render_run_html(report, evaluation.baseline, evaluation.golden_set),
            "comment.md": comment,
        }
        if report.gate is not None:
            from evalret.report.junit import render_junit  # XML, with a gate only

            outputs["junit.xml"] = render_junit(report.gate, hint)
        for name, text in outputs.items():
            opened[name].write([text.encode("utf-8")])
        files.commit()
    written = [out_dir / name for name in texts] + list(runs.values())
    if step_summary is not None:
        append_text(step_summary, markdown + "\n", "step summary")
    return written
