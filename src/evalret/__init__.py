"""evalret: evaluation harness that gates embedding-retrieval changes in CI."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalret.version import __version__

if TYPE_CHECKING:
    from pathlib import Path

    from evalret.data.config import Config
    from evalret.pipeline.evaluate import Evaluation

__all__ = ["__version__", "evaluate", "load_config"]


def evaluate(config: Config | None = None, **kwargs: Any) -> Evaluation:
    """Run the whole evaluation for ``config`` (defaults when None) and return the report."""
    from evalret.data.config import Config
    from evalret.pipeline.evaluate import run_evaluation

    return run_evaluation(config or Config(), **kwargs)


def load_config(path: Path) -> Config:
    """Read and validate an evalret YAML config (paths in it are relative to its folder)."""
    from evalret.data.config import load_config as load

    return load(path)
