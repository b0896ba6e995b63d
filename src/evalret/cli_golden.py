"""`evalret golden ...`: build a golden set from nothing (a query log, synthetic queries, judged
pools) and ask whether it can catch a regression (the doctor). The same rules as ``evalret.cli``:
options from ``evalret.cli_options``, one function of ``evalret.commands.golden_*`` per command,
imported inside it; rendering from ``evalret.report``. Registered on the main app by ``cli.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evalret import cli_options as o
from evalret.cli_runtime import command as _command
from evalret.cli_runtime import console
from evalret.errors import ExitCode

golden_app = typer.Typer(
    help="Build a golden set from nothing: sample a query log, write synthetic queries, judge "
    "pooled results, and check that the set can catch a regression.",
    no_args_is_help=True,
)


@_command(golden_app, "synth")
def golden_synth(
    *,
    corpus: o.SynthCorpus,
    n: o.SynthN,
    out: Annotated[Path, o.out("The draft directory to write (new or empty).")],
    config: o.SynthConfigFile = None,
    log: o.SynthLog = None,
    dry_run: o.SynthDryRun = False,
    seed: o.SynthSeed = 0,
    progress: o.Progress,
    settings: o.Overrides,
) -> ExitCode:
    """Write synthetic queries with a chat model (synth.chat, else the judge: section) for
    documents drawn to cover the corpus (k-means of the embeddings), few-shot from a log's
    queries; drop duplicates and queries the judge finds unanswerable, tag (or drop) too-easy
    ones; write a draft with provenance on every query. Exit 3 when the endpoint fails for good
    (the answers got are cached: a rerun asks only the rest)."""
    from dataclasses import asdict

    from evalret.commands.golden_synth import SynthRequest, synth_command
    from evalret.report.synth_view import render_synth

    request = SynthRequest(
        corpus=corpus,
        n=n,
        out=out,
        config=config,
        log=log,
        dry_run=dry_run,
        seed=seed,
        overrides=settings.overrides(),
    )
    outcome = synth_command(request, progress=progress)
    console.print(render_synth(asdict(outcome)), highlight=False, soft_wrap=True)
    return ExitCode.OK
