"""The evalret command line: parse options, call one library function, render, exit.

Exit codes: 0 success, 1 regression found by the gate, 2 invalid input or usage, 3 internal or
runtime failure. Heavy libraries (torch, sentence-transformers, faiss) load only inside commands.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console

from evalret import __version__
from evalret.errors import EvalretError, ExitCode

app = typer.Typer(
    name="evalret",
    help="Evaluate embedding retrieval on a golden set and gate changes in CI.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _make_console(stderr: bool = False) -> Console:
    """A rich console; when output is not a terminal (CI logs, pipes) tables get 200 columns."""
    console = Console(stderr=stderr)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = 200
    return console


console = _make_console()
err_console = _make_console(stderr=True)
T = TypeVar("T")


def _guard(fn: Callable[[], T]) -> T:
    """Run ``fn``; turn evalret's errors and unexpected crashes into messages and exit codes."""
    try:
        return fn()
    except EvalretError as e:
        err_console.print(f"[bold red]Error:[/] {e}", highlight=False, markup=True, soft_wrap=True)
        raise typer.Exit(int(e.exit_code)) from None
    except KeyboardInterrupt:
        err_console.print("[bold red]Interrupted[/]")
        raise typer.Exit(int(ExitCode.INTERNAL)) from None
    except Exception as e:  # a crash must never look like a regression or a bad input
        if os.environ.get("EVALRET_DEBUG"):
            traceback.print_exc()
        err_console.print(
            f"[bold red]Internal error:[/] {type(e).__name__}: {e}\n"
            "(set EVALRET_DEBUG=1 for the traceback)",
            highlight=False,
        )
        raise typer.Exit(int(ExitCode.INTERNAL)) from None


@contextmanager
def _progress(enabled: bool) -> Iterator[Any]:
    """A progress-bar factory for the pipeline: (description, total) -> advance(n)."""
    if not enabled:
        yield None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err_console,
        transient=False,
    ) as progress:

        def factory(description: str, total: int) -> Callable[[int], None]:
            task = progress.add_task(description, total=total)
            return lambda n: progress.advance(task, n)

        yield factory


def _version(value: bool) -> None:
    if value:
        console.print(f"evalret {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")
    ] = False,
) -> None:
    """Evaluate embedding retrieval on a golden set and gate changes in CI."""


@app.command()
def run(
    config: Annotated[
        Path | None,
        typer.Option("--config", "-c", help="YAML config; without it, the built-in defaults."),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Directory for report files (overrides output.dir)."),
    ] = None,
    progress: Annotated[
        bool, typer.Option("--progress/--no-progress", help="Show progress bars.")
    ] = True,
) -> None:
    """Embed the golden set, search exact and HNSW indexes, and report metrics per slice."""

    def go() -> None:
        from evalret.config import load_config
        from evalret.pipeline import run_evaluation
        from evalret.report.files import write_outputs
        from evalret.report.terminal import print_run

        cfg = load_config(config)
        with _progress(progress) as factory:
            evaluation = run_evaluation(cfg, progress=factory)
        out_dir = out if out is not None else cfg.output.dir
        written = write_outputs(evaluation, out_dir)
        print_run(console, evaluation.report, written)

    _guard(go)


def main() -> None:
    """Console-script entry point."""
    app()
