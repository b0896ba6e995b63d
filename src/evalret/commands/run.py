"""`evalret run`: load the config, find the baseline to gate against, evaluate, write the report
files and (on request) save the run as a baseline."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from evalret.data.baseline import shown_path
from evalret.data.overrides import Override
from evalret.data.paths import config_inputs
from evalret.data.schema import EmbeddingPlan
from evalret.pipeline.configs import command_line, config_or_default, config_words, run_config
from evalret.pipeline.judge import RunJudging, judge_inputs
from evalret.pipeline.progress import ProgressBars, no_bars
from evalret.pipeline.runner import RunOutcome, run_configured
from evalret.pipeline.sample import with_sample


@dataclass(frozen=True, kw_only=True)
class RunRequest:
    """What `evalret run` is asked for (``run_command``'s and ``plan_command``'s one argument,
    every field named): evaluate ``config`` (default: ./evalret.yaml when present, else the
    built-in defaults), gate against ``baseline`` (default: the config's gate.baseline), write
    the report files into ``out`` (default: output.dir) and, with ``save_to``, save the run there
    as a baseline. ``sample``
    (`--sample N`) evaluates a seeded, stratified sample of N queries (config ``sample``);
    ``overrides`` are the command line's settings (``--set``, ``--model``, ``--dimension``);
    ``judging`` (`--judge`, `--judge-cache-only`) scores with the LLM judge's labels added."""

    config: Path | None = None
    out: Path | None = None
    baseline: Path | None = None
    save_to: Path | None = None
    no_cache: bool = False
    sample: int | None = None
    overrides: Sequence[Override] = ()
    judging: RunJudging | None = None


def run_command(request: RunRequest, *, progress: ProgressBars = no_bars) -> RunOutcome:
    """Run ``request`` (``RunRequest``; no config: ./evalret.yaml when present, else the
    built-in defaults). Output places are checked first, so that a long run never ends unable to
    write; ``progress`` draws bars while evaluating. A missing baseline is an error that prints
    this very run's command line with ``--save-baseline`` (``save_line``)."""
    r = request
    config = config_or_default(r.config)
    cfg = with_sample(run_config(config, r.no_cache, r.overrides), r.sample)
    return run_configured(
        cfg,
        out=r.out,
        baseline=r.baseline,
        save_to=r.save_to,
        progress=progress,
        inputs=config_inputs(cfg, config) + judge_inputs(cfg, r.judging),
        judging=r.judging,
        how_to_save=lambda path: save_line(r, config, path),
        config_words=config_words(config, r.overrides),
    )


def save_line(request: RunRequest, config: Path | None, baseline: Path) -> str:
    """The `evalret run` line that saves the missing ``baseline``: the run's own config,
    settings and sample (with the run's --baseline, which that run then saves, not reads)."""
    shown = shown_path(baseline)
    more = ["--sample", str(request.sample)] if request.sample is not None else []
    if request.baseline is not None:
        more += ["--baseline", shown]
    return command_line(["run"], config, request.overrides, *more, "--save-baseline", shown)


def plan_command(request: RunRequest) -> EmbeddingPlan:
    """`evalret run --dry-run`: what ``request`` would embed (with `--sample`), and at what cost;
    nothing is embedded, sent or written (its outputs and judging play no part)."""
    from evalret.pipeline.plan import dry_run

    r = request
    return dry_run(config_or_default(r.config), r.no_cache, r.sample, r.overrides)
