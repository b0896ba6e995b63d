"""`evalret run`: load the config, find the baseline to gate against, evaluate, write the report
files and (on request) save the run as a baseline."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from evalret.data.overrides import Override
from evalret.data.paths import config_inputs
from evalret.data.schema import EmbeddingPlan
from evalret.pipeline.configs import run_config
from evalret.pipeline.judge import RunJudging, judge_inputs
from evalret.pipeline.progress import ProgressBars, no_bars
from evalret.pipeline.runner import RunOutcome, run_configured
from evalret.pipeline.sample import with_sample


def run_command(
    *,
    config: Path | None = None,
    out: Path | None = None,
    baseline: Path | None = None,
    save_to: Path | None = None,
    no_cache: bool = False,
    progress: ProgressBars = no_bars,
    sample: int | None = None,
    overrides: Sequence[Override] = (),
    judging: RunJudging | None = None,
) -> RunOutcome:
    """Evaluate ``config`` (default: the built-in defaults), gate against ``baseline`` (default:
    the config's gate.baseline), write the report files into ``out`` (default: output.dir) and,
    with ``save_to``, save the run there as a baseline. Output places are checked first, so that
    a long run never ends unable to write; ``progress`` draws bars while evaluating. ``sample``
    (`--sample N`) evaluates a seeded, stratified sample of N queries (config ``sample``);
    ``overrides`` are the command line's settings (``--set``, ``--model``, ``--dimension``);
    ``judging`` (`--judge`, `--judge-cache-only`) scores with the LLM judge's labels added."""
    cfg = with_sample(run_config(config, no_cache, overrides), sample)
    return run_configured(
        cfg,
        out=out,
        baseline=baseline,
        save_to=save_to,
        progress=progress,
        inputs=config_inputs(cfg, config) + judge_inputs(cfg, judging),
        judging=judging,
    )


def plan_command(
    *,
    config: Path | None = None,
    no_cache: bool = False,
    sample: int | None = None,
    overrides: Sequence[Override] = (),
) -> EmbeddingPlan:
    """`evalret run --dry-run`: what the run would embed (with `--sample` ``sample``), and at
    what cost; nothing is embedded, sent or written."""
    from evalret.pipeline.plan import dry_run

    return dry_run(config, no_cache, sample, overrides)
