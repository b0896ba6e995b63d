"""`evalret compare A B`: its options checked, what it reads and writes declared for the input
guard, then the comparison (pipeline/compare.py)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from evalret.choices import MarginMode
from evalret.core.metrics import parse_metric
from evalret.core.stats import Correction
from evalret.data.atomic import check_writable_dir
from evalret.data.overrides import Override, configured
from evalret.data.paths import (
    Declared,
    Input,
    Output,
    cache_output,
    clear_outputs,
    config_inputs,
    guard,
    unique,
)
from evalret.data.schema import CompareReport
from evalret.errors import InputError
from evalret.pipeline.compare import COMPARE_FILES, CompareSettings, run_comparison
from evalret.pipeline.configs import step_summary
from evalret.pipeline.progress import ProgressBars, no_bars


def compare_command(
    *,
    a: Path,
    b: Path,
    out: Path,
    primary: str,
    min_gain: float,
    alpha: float,
    correction: Correction,
    samples: int,
    seed: int,
    margin: float | None = None,
    margin_mode: MarginMode | None = None,
    progress: ProgressBars = no_bars,
    overrides: Sequence[Override] = (),
) -> tuple[CompareReport, list[Path]]:
    """`evalret compare`: check the options (before anything is evaluated), compare, write the
    files and the CI step summary."""
    settings = CompareSettings(
        primary=str(parse_metric(primary)),
        min_gain=min_gain,
        alpha=alpha,
        correction=correction,
        samples=samples,
        seed=seed,
        margin=margin,
        margin_mode=margin_mode or "non_inferiority",
    )
    if margin_mode is not None and margin is None:
        raise InputError(f"--margin-mode {margin_mode} needs --margin (the margin δ to prove)")
    if overrides and a.suffix == ".json" and b.suffix == ".json":
        raise InputError(
            f"{overrides[0].option}: A and B are saved reports, and a setting applies to a "
            "config (.yaml) only"
        )
    io = compare_io(a, b, out, overrides)
    guard(io)
    check_writable_dir(out, "output directory")
    clear_outputs(io.outputs[0])
    return run_comparison(
        a, b, out, settings, progress=progress, step_summary=step_summary(), overrides=overrides
    )


def compare_io(a: Path, b: Path, out: Path, overrides: Sequence[Override] = ()) -> Declared:
    """What `evalret compare` reads (A and B; for a config, what evaluating it reads) and writes
    (COMPARE_FILES into ``out``, the step summary)."""
    reads: list[Input] = []
    writes = [Output("--out", out, "dir", COMPARE_FILES)]
    for side, path in (("A", a), ("B", b)):
        if path.suffix == ".json":
            reads.append(Input(f"the saved report ({side})", path))
        else:
            cfg = configured(path, overrides)
            reads += config_inputs(cfg, path, side)
            writes += [c for c in cache_output(cfg) if c not in writes]
    summary = step_summary()
    if summary is not None:
        writes.append(Output("$GITHUB_STEP_SUMMARY", summary))
    return Declared("compare", unique(reads), writes)
