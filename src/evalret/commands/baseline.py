"""`evalret baseline show`: read a baseline (or a saved report.json) to show what it holds."""

from __future__ import annotations

from pathlib import Path

from evalret.data.baseline import load_baseline
from evalret.data.schema import RunReport


def baseline_show_command(*, path: Path) -> RunReport:
    """The baseline at ``path``, checked as a baseline (InputError when it is not one)."""
    return load_baseline(path)
