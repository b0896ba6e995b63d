"""`evalret score`: trec_eval's job with evalret's reports. Run files scored against a qrels file
or a golden set, with no model and no embedding: each run is a typed ``run`` index of a Config
(pipeline/score.py), and the ordinary pipeline does the rest (slices, intervals, the gate against
a baseline, every report file)."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from evalret.core.relevance import DEFAULT_RELEVANCE_LEVEL
from evalret.data.config import WithoutRelevant
from evalret.data.paths import Input, golden_inputs
from evalret.pipeline.progress import ProgressBars, no_bars
from evalret.pipeline.runner import RunOutcome, run_configured
from evalret.pipeline.score import run_indexes, score_config, utf8_path


def score_command(
    *,
    golden: Path,
    runs: Sequence[str],
    metrics: Sequence[str] | None = None,
    relevance_level: int = DEFAULT_RELEVANCE_LEVEL,
    queries_without_relevant: WithoutRelevant = "exclude",
    out: Path | None = None,
    baseline: Path | None = None,
    progress: ProgressBars = no_bars,
) -> RunOutcome:
    """Score ``runs`` against ``golden`` and write the report files into ``out`` (default
    reports/), gated against ``baseline`` when given."""
    utf8_path(golden, "golden set")
    for path, role in ((out, "--out"), (baseline, "--baseline")):
        if path is not None:
            utf8_path(path, role)
    cfg = score_config(
        golden,
        runs,
        metrics=metrics,
        relevance_level=relevance_level,
        queries_without_relevant=queries_without_relevant,
        out=out,
    )
    reads = golden_inputs(cfg, "GOLDEN")
    reads += [Input(f"the run file of index {n} (RUNS)", p) for n, p in run_indexes(runs).items()]
    saved = out if out is not None else cfg.output.dir

    def how_to_save(path: Path) -> str:  # a baseline is a saved report.json
        return (
            f"a baseline is the report.json of a run: score the runs you trust without "
            f"--baseline, then {shlex.join(['cp', str(saved / 'report.json'), str(path)])}"
        )

    return run_configured(
        cfg,
        out=out,
        baseline=baseline,
        progress=progress,
        inputs=reads,
        command="score",
        how_to_save=how_to_save,
    )
