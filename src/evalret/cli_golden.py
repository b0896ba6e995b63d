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


@_command(golden_app, "doctor")
def doctor(
    *,
    config: o.ConfigFile = None,
    log: o.DoctorLog = None,
    log_sample: o.LogSample = 1000,
    seed: o.DoctorSeed = 0,
    out: Annotated[
        Path | None,
        o.out("Directory for doctor.json and doctor.html (default: the config's output.dir)."),
    ] = None,
    as_json: o.AsJson = False,
    progress: o.Progress,
    settings: o.Overrides,
) -> ExitCode:
    """Ask whether the config's golden set can catch a regression: headroom (queries already
    perfect, per slice), discrimination (a zoo: the model, its quarter dimension, BM25, a random
    ranking, paired tests and the queries needed), edge-case coverage by query shape, and with
    --log the share of logged queries the set covers, the uncovered traffic clusters and the
    drift. Writes doctor.json and doctor.html into --out (default: the config's output.dir).
    Exit 1 when coverage is below gate.coverage.min."""
    from evalret.commands.golden_doctor import doctor_command
    from evalret.pipeline.doctor import DoctorSettings
    from evalret.report.doctor_view import render_doctor

    done = doctor_command(
        config=config,
        settings=DoctorSettings(log=log, log_sample=log_sample, seed=seed),
        out=out,
        progress=progress,
        overrides=settings.overrides(),
    )
    if as_json:
        typer.echo(done.json_text)
    else:
        console.print(
            render_doctor(done.result.data, [str(p) for p in done.written]), highlight=False
        )
    return done.exit_code
