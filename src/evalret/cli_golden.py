"""`evalret golden ...`: build a golden set from nothing (a query log, synthetic queries, judged
pools) and ask whether it can catch a regression (the doctor). The same rules as ``evalret.cli``:
options from ``evalret.cli_options``, one function of ``evalret.commands.golden_*`` per command,
imported inside it; rendering from ``evalret.report``. Registered on the main app by ``cli.py``.
"""

from __future__ import annotations

import typer

golden_app = typer.Typer(
    help="Build a golden set from nothing: sample a query log, write synthetic queries, judge "
    "pooled results, and check that the set can catch a regression.",
    no_args_is_help=True,
)
