"""`evalret hook`: the gate as a `pre-commit` hook (id ``evalret-gate``, stage pre-push).

The hook is `evalret run` with the config and the baseline CI uses: the same ``run_configured``,
so the same sampling (a config's ``sample:`` section), the same checks and the same exit codes
(1 a regression, 2 a wrong input, 3 evalret failed). It differs only in what it demands and what
it prints: it needs a baseline (``--baseline`` or the config's ``gate.baseline``) and never saves
one, draws no progress bars, and prints a short verdict with the path of report.md
(``report/hook_view.py``). Which changed files trigger it is pre-commit's business: the hook's
``files:`` pattern, which ``evalret init --pre-commit`` derives from the config
(``commands/init.py``); the hook itself takes no file names.

What is gated is what is pushed: pre-commit names the commit being pushed in
``$PRE_COMMIT_TO_REF``; the hook checks that commit out into a temporary git worktree and
evaluates the config, golden set, baseline and plug-in modules found there (``sys.path`` entries
inside the checkout point into the worktree while it runs; a Ray actor imports from its own
path); report files still go to the output directory of the checkout, where the user reads them,
and the input guard checks them against the inputs of both trees. Without that variable (the
hook run by hand) the working tree is gated. The verdict is read back from the report.json this
run wrote, recognised by its run id, and must agree with the run's own outcome: a report missing
or left by another run is a failure (exit 3), never a pass.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from evalret.data.baseline import shown_path
from evalret.data.config import Config
from evalret.data.overrides import Override
from evalret.data.paths import Input, config_inputs
from evalret.data.schema import RunReport
from evalret.errors import ConfigError, EvalretError, ExitCode, InputError
from evalret.pipeline.configs import DEFAULT_CONFIG, command_line, config_words, run_config
from evalret.pipeline.precommit import (
    HOOK_ID,
    checked_out,
    git,
    git_root,
    moved_back,
    moved_into,
    shown,
)
from evalret.pipeline.runner import RunOutcome, run_configured
from evalret.report.verdict import gate_exit_code

PUSHED_ENV = "PRE_COMMIT_TO_REF"  # pre-commit's name for the commit a pre-push hook gates
NO_COMMIT = "0" * 40  # git's name for "nothing" (a branch deleted by the push)


@dataclass(frozen=True)
class HookOutcome:
    """A finished hook run: the run itself, the report it wrote (read back from report.json),
    the baseline gated against, report.md's path, and the commit gated (None: the working
    tree)."""

    run: RunOutcome
    report: RunReport
    baseline: Path
    report_md: Path | None
    commit: str | None = None

    @property
    def exit_code(self) -> ExitCode:
        """1 when the gate of the report this run wrote failed, else 0."""
        return gate_exit_code(self.report.gate)


def pushed_commit() -> str | None:
    """The commit pre-commit says is being pushed ($PRE_COMMIT_TO_REF), None outside a push or
    when the push deletes a branch (nothing to gate)."""
    ref = os.environ.get(PUSHED_ENV, "").strip()
    return ref if ref and ref != NO_COMMIT else None


def hook_command(
    *,
    config: Path = DEFAULT_CONFIG,
    baseline: Path | None = None,
    out: Path | None = None,
    commit: str | None = None,
    overrides: Sequence[Override] = (),
) -> HookOutcome:
    """Gate ``config`` against ``baseline`` (default: the config's gate.baseline) exactly as
    `evalret run --config CONFIG [--baseline B] [--out O]` does; a config without a baseline is
    a ConfigError (a hook that checks nothing against the baseline would pass every push).
    With ``commit``, the config, golden set and baseline are those of that commit (see the
    module). ``overrides`` are the command line's settings (``--set``, ``--model``,
    ``--dimension``)."""
    if commit is None:
        cfg = run_config(config, overrides=overrides)
        return _gate(cfg, config, baseline, out, None, overrides=overrides)
    root = git_root()
    sha = git(root, "rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}")
    with checked_out(root, sha) as tree:
        inside = moved_into(config, root, tree)
        if inside is None:
            raise InputError(
                f"{config}: the {HOOK_ID} hook gates the pushed commit, so its config must be "
                f"inside the repository {root}"
            )
        cfg = _outputs_in_checkout(run_config(inside, overrides=overrides), tree, root)
        reference = moved_into(baseline, root, tree) or baseline if baseline is not None else None
        with _imports_from(tree, root):
            outcome = _gate(cfg, config, reference, out, tree, root, overrides=overrides)
    return HookOutcome(outcome.run, outcome.report, outcome.baseline, outcome.report_md, commit=sha)


@contextmanager
def _imports_from(tree: Path, root: Path) -> Iterator[None]:
    """Plug-in modules (a Python retriever, a custom encoder) imported from the pushed commit:
    each ``sys.path`` entry inside the checkout (the working directory, ``PYTHONPATH``) points at
    the same place in ``tree`` while the commit is gated."""
    saved = list(sys.path)
    sys.path[:] = [str(moved_into(Path(entry or "."), root, tree) or entry) for entry in saved]
    try:
        yield
    finally:
        sys.path[:] = saved


def _checkout_inputs(inputs: list[Input], tree: Path | None, root: Path | None) -> list[Input]:
    """``inputs`` of the pushed commit's worktree, and the same files in the checkout: the
    reports are written into the checkout, so they must clobber neither."""
    if tree is None or root is None:
        return inputs
    mirrored = [
        Input(f"{i.role}, in the checkout", back, i.tree)
        for i in inputs
        if (back := moved_back(i.path, tree, root)) is not None and back != i.path
    ]
    return inputs + mirrored


def _gate(
    cfg: Config,
    config: Path,
    baseline: Path | None,
    out: Path | None,
    tree: Path | None,
    root: Path | None = None,
    *,
    overrides: Sequence[Override] = (),
) -> HookOutcome:
    reference = baseline or cfg.gate.baseline
    if reference is None:
        raise ConfigError(
            f"{config}: gate.baseline is not set: the {HOOK_ID} hook gates against a saved "
            "baseline. Save one on purpose (evalret run --config "
            f"{config} --save-baseline baselines/evalret.json), name it in gate.baseline, and "
            "commit it"
        )
    inputs = _checkout_inputs(config_inputs(cfg, config), tree, root)

    def how_to_save(path: Path) -> str:  # the run this hook is, saving the baseline it lacks
        saved = (moved_back(path, tree, root) if tree and root else None) or path
        return command_line(["run"], config, overrides, "--save-baseline", shown_path(saved))

    outcome = run_configured(
        cfg,
        out=out,
        baseline=baseline,
        inputs=inputs,
        command="hook",
        how_to_save=how_to_save,
        config_words=config_words(config, overrides),
    )
    report = report_of_run(outcome)
    report_md = next((p for p in outcome.written if p.name == "report.md"), None)
    return HookOutcome(
        outcome,
        report,
        shown(reference, tree),
        None if report_md is None else shown(report_md),
    )


def report_of_run(outcome: RunOutcome) -> RunReport:
    """The report.json ``outcome`` wrote, read back: it must carry the run's id and the same
    verdict as the run; else an EvalretError (no verdict from a report of another run)."""
    path = next((p for p in outcome.written if p.name == "report.json"), None)
    if path is None:
        raise EvalretError("the run wrote no report.json: no verdict")
    try:
        report = RunReport.model_validate_json(path.read_bytes())
    except (OSError, ValueError) as e:
        raise EvalretError(f"cannot read back this run's report {path}: {e}") from None
    if not outcome.run_id or report.run_id != outcome.run_id:
        raise EvalretError(
            f"{path} carries run id {report.run_id!r}, not this run's {outcome.run_id!r}: "
            "another run wrote it, so it gives no verdict"
        )
    mine = outcome.evaluation.report.gate
    theirs = report.gate
    if (mine is None) != (theirs is None) or (
        mine is not None and theirs is not None and mine.verdict != theirs.verdict
    ):
        raise EvalretError(f"{path} does not hold this run's verdict: no verdict")
    return report


def _outputs_in_checkout(cfg: Config, tree: Path, root: Path) -> Config:
    """The config of the pushed commit with its output directory and cache in the checkout, so
    that the reports outlive the temporary worktree and the cache is kept between pushes."""
    output = cfg.output.model_copy(update={"dir": moved_back(cfg.output.dir, tree, root)})
    cache = cfg.cache.model_copy(update={"dir": moved_back(cfg.cache.dir, tree, root)})
    return cfg.model_copy(update={"output": output, "cache": cache})
