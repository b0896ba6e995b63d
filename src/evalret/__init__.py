"""evalret: evaluation harness that gates embedding-retrieval changes in CI."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from evalret.config import Config
    from evalret.pipeline import Evaluation

__all__ = ["__version__", "evaluate"]


def evaluate(config: Config | None = None, **kwargs: Any) -> Evaluation:
    """Run the whole evaluation for ``config`` (defaults when None) and return the report."""
    from evalret.config import Config
    from evalret.pipeline import run_evaluation

    return run_evaluation(config or Config(), **kwargs)
