"""`evalret validate PATH`: the golden set a path names, checked (pipeline/validate.py holds the
checks and what they report)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from evalret.data.overrides import Override
from evalret.data.validation import Validation
from evalret.pipeline.configs import golden_config
from evalret.pipeline.validate import run_validation, validation_json

__all__ = ["validate_command", "validation_json"]


def validate_command(
    *,
    path: Path,
    fmt: str | None = None,
    split: str | None = None,
    report: Path | None = None,
    overrides: Sequence[Override] = (),
) -> Validation:
    """`evalret validate PATH`: the golden set of ``path`` (a directory, a qrels file or a
    config; ``fmt`` and ``split`` override its format and BEIR split, ``overrides`` any
    setting), checked."""
    return run_validation(golden_config(path, fmt, split, overrides), report)
