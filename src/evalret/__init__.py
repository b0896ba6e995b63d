"""evalret: evaluation harness that gates embedding-retrieval changes in CI.

The Python API: ``evaluate`` (a run from a config, its report), ``validate`` (a golden set's
checks), ``merge`` (annotators' grades into a new golden set), ``score`` (run files against qrels
or a golden set) and ``load_config``. Each imports what it needs when called, so ``import
evalret`` stays cheap (`evalret score`'s start-up imports no model or index library); none goes
through evalret.commands, and none prints or exits: errors are EvalretError subclasses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalret.version import __version__

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from evalret.core.judgments import MergeOutcome
    from evalret.data.config import Config, WithoutRelevant
    from evalret.data.validation import Validation
    from evalret.pipeline.evaluate import Evaluation

__all__ = ["__version__", "evaluate", "load_config", "merge", "score", "validate"]


def evaluate(config: Config | None = None, **kwargs: Any) -> Evaluation:
    """Run the whole evaluation for ``config`` (defaults when None) and return the report."""
    from evalret.data.config import Config
    from evalret.pipeline.evaluate import run_evaluation

    return run_evaluation(config or Config(), **kwargs)


def load_config(path: Path) -> Config:
    """Read and validate an evalret YAML config (paths in it are relative to its folder)."""
    from evalret.data.config import load_config as load

    return load(path)


def validate(golden: Path | Config, report: Path | None = None) -> Validation:
    """Check a golden set as `evalret validate` does: ``golden`` is a directory, a qrels file, a
    config file or a Config; ``report`` (a report.json) gives the per-query nDCG@10 the minimum
    detectable differences are computed from. Problems are in the result, not raised."""
    from evalret.data.config import Config
    from evalret.pipeline.configs import golden_config
    from evalret.pipeline.validate import run_validation

    cfg = golden if isinstance(golden, Config) else golden_config(golden, None, None, ())
    return run_validation(cfg, report)


def merge(
    files: Sequence[Path],
    into: Path,
    out: Path,
    *,
    scale: str = "0-3",
    policy: str = "median",
    min_annotators: int = 1,
    drop_below: float | None = None,
    overwrite: bool = False,
    golden_format: str = "auto",
    split: str = "test",
) -> MergeOutcome:
    """Merge annotation ``files`` into the golden set ``into``, written as a new golden set into
    ``out`` (absent or empty), as `evalret judgments merge` does (its options, same names)."""
    from evalret.data.config import GoldenSetConfig
    from evalret.data.judgments import parse_scale
    from evalret.pipeline.merge import MergeOptions, check_policy, merge_judgments

    chosen = check_policy(policy)
    parsed = parse_scale(scale)
    cfg = GoldenSetConfig(path=into, format=golden_format, split=split)
    options = MergeOptions(chosen, min_annotators, drop_below, overwrite)
    return merge_judgments(files, cfg, out, parsed, options)


def score(
    golden: Path,
    runs: Sequence[str],
    *,
    metrics: Sequence[str] | None = None,
    relevance_level: int | None = None,
    queries_without_relevant: WithoutRelevant = "exclude",
) -> Evaluation:
    """Score run files (``PATH`` or ``NAME=PATH``) against ``golden`` (a qrels file or a golden
    set) as `evalret score` does, and return the evaluation; no file is written."""
    from evalret.core.relevance import DEFAULT_RELEVANCE_LEVEL
    from evalret.pipeline.evaluate import run_evaluation
    from evalret.pipeline.score import score_config

    cfg = score_config(
        golden,
        runs,
        metrics=metrics,
        relevance_level=DEFAULT_RELEVANCE_LEVEL if relevance_level is None else relevance_level,
        queries_without_relevant=queries_without_relevant,
    )
    return run_evaluation(cfg)
