"""`evalret sweep`: the grid of --set values validated (every point's config), what it reads
and writes declared for the input guard, then the sweep (pipeline/sweep.py)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from evalret.data.atomic import check_writable_dir
from evalret.data.overrides import Override
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
from evalret.pipeline.progress import ProgressBars, no_bars
from evalret.pipeline.sweep import SWEEP_FILES, SweepOutcome, run_sweep, sweep_configs


def sweep_command(
    *,
    config: Path | None,
    sets: list[str],
    out: Path,
    repeats: int = 3,
    no_cache: bool = False,
    max_points: int | None = None,
    progress: ProgressBars = no_bars,
    fixed: Sequence[Override] = (),
) -> SweepOutcome:
    """Evaluate every grid point of ``sets`` (and the ``fixed`` settings) and write
    ``out``/sweep.json and sweep.html (pipeline/sweep.py)."""
    axes, points, configs = sweep_configs(config, sets, no_cache, max_points, fixed)
    reads = [Input("the config (--config)", config)] if config is not None else []
    reads += [i for c in configs for i in config_inputs(c, None)]
    files = Output("--out", out, "dir", SWEEP_FILES)
    caches = list(dict.fromkeys(c for cfg in configs for c in cache_output(cfg)))
    guard(Declared("sweep", unique(reads), [files, *caches]))
    check_writable_dir(out, "output directory")
    clear_outputs(files)
    with progress() as factory:
        return run_sweep(config, axes, points, configs, out, repeats, factory)
