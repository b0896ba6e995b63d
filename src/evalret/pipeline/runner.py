"""A run from a built Config to its report files: the input guard, the baseline, the evaluation and
the files written (``run_configured``), shared by `evalret run`, `score` and `hook`."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from evalret.data.atomic import check_writable_dir, check_writable_file
from evalret.data.baseline import MissingBaselineError, baseline_for_run, save_baseline
from evalret.data.config import Config
from evalret.data.paths import (
    Declared,
    Input,
    Output,
    cache_output,
    clear_outputs,
    guard,
)
from evalret.data.schema import BaselineSaved
from evalret.errors import EvalretError, ExitCode
from evalret.pipeline.configs import step_summary
from evalret.pipeline.evaluate import Evaluation, check_caches, run_evaluation
from evalret.pipeline.outputs import new_run_id, report_names, write_outputs
from evalret.pipeline.precommit import git
from evalret.pipeline.progress import ProgressBars, no_bars
from evalret.report.verdict import gate_exit_code

if TYPE_CHECKING:
    from evalret.pipeline.judge import RunJudging


@dataclass(frozen=True)
class RunOutcome:
    """A finished `evalret run`: the evaluation, every file written, the run id that its
    report.json and comment.md carry, and the words that gave the run its config
    (``pipeline.configs.config_words``), which the judge commands it prints repeat."""

    evaluation: Evaluation
    written: list[Path]
    run_id: str = ""
    config_words: tuple[str, ...] = ()

    @property
    def exit_code(self) -> ExitCode:
        """1 when the gate failed, else 0."""
        gate = self.evaluation.report.gate
        return gate_exit_code(gate)


def saved_now() -> BaselineSaved:
    """When (now, UTC, to the second) and at which commit a baseline is saved: $GITHUB_SHA in a
    workflow, else git HEAD of the directory evalret runs in, else none (not a git checkout, no
    git)."""
    commit = os.environ.get("GITHUB_SHA", "").strip() or None
    if commit is None:
        try:
            commit = git(Path.cwd(), "rev-parse", "--verify", "--quiet", "HEAD") or None
        except EvalretError:
            commit = None
    at = datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    return BaselineSaved(at=at, commit=commit)


def run_io(
    cfg: Config,
    inputs: Sequence[Input],
    *,
    out: Path | None,
    baseline: Path | None,
    save_to: Path | None,
    command: str = "run",
) -> Declared:
    """What a run reads (``inputs``: what evaluating ``cfg`` reads, and the baseline) and writes
    (its report set into the output directory, the baseline saved, the step summary)."""
    baseline_path = baseline or cfg.gate.baseline
    reads = list(inputs)
    if baseline_path is not None:
        role = "--baseline" if baseline is not None else "gate.baseline"
        reads.append(Input(f"the baseline ({role})", baseline_path))
    out_dir = out if out is not None else cfg.output.dir
    out_role = "--out" if out is not None else "output.dir"
    writes = [Output(out_role, out_dir, "dir", report_names(cfg.indexes.enabled_names()))]
    writes += cache_output(cfg)
    if save_to is not None:
        writes.append(Output("--save-baseline", save_to))
    summary = step_summary()
    if summary is not None:
        writes.append(Output("$GITHUB_STEP_SUMMARY", summary))
    return Declared(command, reads, writes)


def run_configured(
    cfg: Config,
    *,
    out: Path | None = None,
    baseline: Path | None = None,
    save_to: Path | None = None,
    progress: ProgressBars = no_bars,
    inputs: Sequence[Input] = (),
    command: str = "run",
    judging: RunJudging | None = None,
    how_to_save: Callable[[Path], str] | None = None,
    config_words: Sequence[str] = (),
) -> RunOutcome:
    """``run_command`` on a Config already built (``evalret score`` builds one), which reads
    ``inputs`` (besides the baseline). Before any work: the input guard, the output places
    checked, and this run's files from an earlier run removed. A baseline that does not exist
    is an error that says how to save one: ``how_to_save(path)``, the command that would (the
    caller's own command line), else a generic hint. ``config_words``: the caller's config and
    settings as command-line words, which the judge commands of inconclusive checks repeat."""
    io = run_io(cfg, inputs, out=out, baseline=baseline, save_to=save_to, command=command)
    guard(io)
    reports = io.outputs[0]
    out_dir = reports.path
    run_id = new_run_id()  # a bad $EVALRET_RUN_ID is refused before any work
    check_writable_dir(out_dir, "output directory")
    if save_to is not None:
        check_writable_file(save_to, "baseline")
    check_caches(cfg, judging)  # before this run's earlier files are removed
    baseline_path = baseline or cfg.gate.baseline
    role = "--baseline" if baseline is not None else "gate.baseline"
    try:
        reference, missing = baseline_for_run(baseline_path, save_to, role)
    except MissingBaselineError as e:
        if how_to_save is None:
            raise
        raise MissingBaselineError(e.path, role, how_to_save(e.path)) from None
    clear_outputs(reports)
    with progress() as factory:
        evaluation = run_evaluation(
            cfg,
            progress=factory,
            baseline=reference,
            baseline_source=str(baseline_path) if reference is not None else None,
            missing_baseline=str(baseline_path) if missing else None,
            judging=judging,
        )
    written = write_outputs(evaluation, out_dir, step_summary(), run_id, config_words)
    if save_to is not None:
        save_baseline(evaluation.report.model_copy(update={"saved": saved_now()}), save_to)
        written.append(save_to)
    return RunOutcome(evaluation, written, run_id, tuple(config_words))
