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

from evalret.errors import EvalretError, ExitCode
from evalret.version import __version__

app = typer.Typer(
    name="evalret",
    help="Evaluate embedding retrieval on a golden set and gate changes in CI.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # plain help: typer's rich help formatter imports rich.markdown and markdown-it (~0.1 s)
    rich_markup_mode=None,
)


class _LazyConsole:
    """A rich Console made on first use, so that `evalret --help` never imports rich; when
    output is not a terminal (CI logs, pipes) tables get 200 columns."""

    def __init__(self, stderr: bool = False) -> None:
        self._stderr = stderr
        self._console: Any = None

    @property
    def real(self) -> Any:
        """The rich Console itself (for rich objects that need it, e.g. as a context manager)."""
        if self._console is None:
            from rich.console import Console

            self._console = Console(stderr=self._stderr)
            if not self._console.is_terminal and "COLUMNS" not in os.environ:
                self._console.width = 200
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


console: Any = _LazyConsole()
err_console: Any = _LazyConsole(stderr=True)
T = TypeVar("T")


def _escape(text: str, multiline: bool = False) -> str:
    """``text`` safe inside rich markup: controls visible (newlines too, unless ``multiline``),
    brackets not taken as markup."""
    from rich.markup import escape

    from evalret.report.escape import terminal

    return escape(terminal(text, multiline=multiline))


def _error_text(e: EvalretError) -> str:
    """An error's message for the terminal: an input error's summary and each of its problems
    escaped one by one, so that a newline quoted from input (a path, a config value) cannot
    start a line of its own."""
    from evalret.errors import InputError

    if isinstance(e, InputError):
        return "\n".join(_escape(line) for line in e.lines())
    return _escape(str(e), multiline=True)


def _guard(fn: Callable[[], T]) -> T:
    """Run ``fn``; turn evalret's errors and unexpected crashes into messages and exit codes."""
    try:
        return fn()
    except EvalretError as e:
        # escaped: a message may hold brackets (pip install 'evalret[onnx]') that are not markup
        err_console.print(
            f"[bold red]Error:[/] {_error_text(e)}", highlight=False, markup=True, soft_wrap=True
        )
        raise typer.Exit(int(e.exit_code)) from None
    except KeyboardInterrupt:
        err_console.print("[bold red]Interrupted[/]")
        raise typer.Exit(int(ExitCode.INTERNAL)) from None
    except Exception as e:  # a crash must never look like a regression or a bad input
        if os.environ.get("EVALRET_DEBUG"):
            traceback.print_exc()
        err_console.print(
            f"[bold red]Internal error:[/] {type(e).__name__}: {_escape(str(e), multiline=True)}\n"
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
        console=err_console.real,
        transient=False,
    ) as progress:

        def factory(description: str, total: int) -> Callable[[int], None]:
            task = progress.add_task(description, total=total)
            return lambda n: progress.advance(task, n)

        yield factory


def _without_cache(cfg: Any) -> Any:
    return cfg.model_copy(update={"cache": cfg.cache.model_copy(update={"enabled": False})})


def _step_summary() -> Path | None:
    """GitHub's step-summary file, when running in GitHub Actions."""
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    return Path(summary) if summary else None


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
    baseline: Annotated[
        Path | None,
        typer.Option(
            "--baseline", "-b", help="Gate against this baseline (overrides gate.baseline)."
        ),
    ] = None,
    save_baseline: Annotated[
        Path | None,
        typer.Option("--save-baseline", help="Save this run as a baseline file (never implicit)."),
    ] = None,
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Neither read nor write the embedding cache.")
    ] = False,
    progress: Annotated[
        bool, typer.Option("--progress/--no-progress", help="Show progress bars.")
    ] = True,
) -> None:
    """Embed the golden set, search exact and HNSW indexes, report metrics per slice, and gate
    against floors and a baseline. Exit 1 when a check fails."""

    def go() -> ExitCode:
        from evalret.commands.evaluate import run_evaluation
        from evalret.commands.outputs import write_outputs
        from evalret.data.atomic import check_writable_dir, check_writable_file
        from evalret.data.baseline import baseline_for_run
        from evalret.data.baseline import save_baseline as save
        from evalret.data.config import load_config
        from evalret.report.terminal import print_run

        cfg = _without_cache(load_config(config)) if no_cache else load_config(config)
        out_dir = out if out is not None else cfg.output.dir
        check_writable_dir(out_dir, "output directory")
        if save_baseline is not None:
            check_writable_file(save_baseline, "baseline")
        baseline_path = baseline or cfg.gate.baseline
        reference, missing = baseline_for_run(baseline_path, save_baseline)
        with _progress(progress) as factory:
            evaluation = run_evaluation(
                cfg,
                progress=factory,
                baseline=reference,
                baseline_source=str(baseline_path) if reference is not None else None,
                missing_baseline=str(baseline_path) if missing else None,
            )
        written = write_outputs(evaluation, out_dir, _step_summary())
        if save_baseline is not None:
            save(evaluation.report, save_baseline)
            written.append(save_baseline)
        print_run(console, evaluation.report, written)
        gate = evaluation.report.gate
        return ExitCode.REGRESSION if gate is not None and gate.verdict == "fail" else ExitCode.OK

    raise typer.Exit(int(_guard(go)))


@app.command()
def compare(
    a: Annotated[Path, typer.Argument(help="A: a config (.yaml) to run, or a saved report.json.")],
    b: Annotated[Path, typer.Argument(help="B: a config (.yaml) to run, or a saved report.json.")],
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Directory for compare.json and compare.md.")
    ] = Path("reports/compare"),
    primary: Annotated[str, typer.Option(help="Metric the verdict is decided on.")] = "ndcg@10",
    min_gain: Annotated[
        float, typer.Option(help="Gain B needs on the primary metric in every slice.")
    ] = 0.01,
    alpha: Annotated[float, typer.Option(help="Significance level.")] = 0.05,
    correction: Annotated[
        str, typer.Option(help="holm, bonferroni, bh or none, across every test.")
    ] = "holm",
    samples: Annotated[int, typer.Option(help="Randomization-test resamples.")] = 10_000,
    seed: Annotated[int, typer.Option(help="Seed of every resampling.")] = 0,
    fail_on_regression: Annotated[
        bool, typer.Option("--fail-on-regression", help="Exit 1 on a significant regression.")
    ] = False,
    progress: Annotated[
        bool, typer.Option("--progress/--no-progress", help="Show progress bars.")
    ] = True,
) -> None:
    """Compare two model versions (configs or saved reports) with paired statistics."""

    def go() -> ExitCode:
        from evalret.commands.compare import run_comparison
        from evalret.core.metrics import parse_metric
        from evalret.report.compare_views import render_compare

        with _progress(progress) as factory:
            report, written = run_comparison(
                a,
                b,
                out,
                primary=str(parse_metric(primary)),
                min_gain=min_gain,
                alpha=alpha,
                correction=correction,
                samples=samples,
                seed=seed,
                progress=factory,
                step_summary=_step_summary(),
            )
        console.print(render_compare(report, [str(p) for p in written]))
        if fail_on_regression and report.verdict.regressions:
            return ExitCode.REGRESSION
        return ExitCode.OK

    raise typer.Exit(int(_guard(go)))


@app.command()
def pool(
    configs: Annotated[
        list[Path] | None,
        typer.Argument(help="Configs whose rankings are pooled; none: the built-in defaults."),
    ] = None,
    k: Annotated[int, typer.Option("--k", "-k", min=1, help="Top k of each ranking.")] = 10,
    index: Annotated[
        list[str] | None,
        typer.Option("--index", "-i", help="Pool only this index (repeatable); default all."),
    ] = None,
    out: Annotated[
        Path, typer.Option("--out", "-o", help="JSONL file of documents to label.")
    ] = Path("pool.jsonl"),
    progress: Annotated[
        bool, typer.Option("--progress/--no-progress", help="Show progress bars.")
    ] = True,
) -> None:
    """Export the unjudged documents of every run's top k, per query, for annotators (JSONL with
    grade null to fill in): pooling across configs and indexes."""

    def go() -> ExitCode:
        import json

        from evalret.commands.pool import run_pool
        from evalret.data.atomic import atomic_write_text, check_writable_file

        check_writable_file(out, "pool file")
        with _progress(progress) as factory:
            golden, records, labels = run_pool(configs or [None], k, index, factory)
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
        atomic_write_text(out, text, "pool file")
        queries = len({r["query_id"] for r in records})
        console.print(
            f"{len(records)} unjudged documents for {queries} of {len(golden.query_ids)} "
            f"queries, from the top {k} of {_escape(', '.join(labels))} -> {_escape(str(out))}",
            highlight=False,
        )
        return ExitCode.OK

    raise typer.Exit(int(_guard(go)))


@app.command("report")
def report_command(
    path: Annotated[Path, typer.Argument(help="A saved report.json (or compare.json).")],
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Directory for report.html (default: beside PATH)."),
    ] = None,
    baseline: Annotated[
        Path | None,
        typer.Option(
            "--baseline",
            "-b",
            help="Draw this saved report beside the run (default: the gate's baseline, if found).",
        ),
    ] = None,
) -> None:
    """Render report.html (charts, self-contained) from a saved report.json or compare.json."""

    def go() -> None:
        from evalret.commands.report import write_saved_html

        console.print(f"wrote {_escape(str(write_saved_html(path, out, baseline)))}")

    _guard(go)


baseline_app = typer.Typer(help="Inspect baseline files.", no_args_is_help=True)
app.add_typer(baseline_app, name="baseline")


@baseline_app.command("show")
def baseline_show(
    path: Annotated[Path, typer.Argument(help="A baseline (or saved report.json).")],
) -> None:
    """Show what a baseline holds: fingerprint, settings and metrics per index and slice."""

    def go() -> None:
        from evalret.data.baseline import load_baseline
        from evalret.report.terminal import print_baseline

        print_baseline(console, load_baseline(path), path)

    _guard(go)


cache_app = typer.Typer(help="Inspect and manage the embedding cache.", no_args_is_help=True)
app.add_typer(cache_app, name="cache")
CacheDir = Annotated[
    Path | None,
    typer.Option("--dir", help="Cache directory (default: $EVALRET_CACHE_DIR or the user cache)."),
]


@cache_app.command("info")
def cache_info_command(directory: CacheDir = None) -> None:
    """List the cached embedding sets: model, settings, entries, size, last use."""

    def go() -> None:
        from rich.table import Table

        from evalret.engines.cache import cache_info, default_cache_dir

        root = directory or default_cache_dir()
        rows = cache_info(root)
        table = Table(title=f"embedding cache {_escape(str(root))}", title_justify="left")
        for col in ("namespace", "model", "settings", "entries", "MB", "shards", "last used"):
            table.add_column(col, no_wrap=col != "settings")
        for r in rows:
            settings = ", ".join(f"{k}={v!r}" for k, v in r["settings"].items())
            table.add_row(
                r["namespace"][:12],
                _escape(str(r["model"])),
                _escape(settings),
                str(r["entries"]),
                f"{r['bytes'] / 1e6:.1f}",
                str(r["shards"]),
                r["last_used"],
            )
        console.print(table if rows else f"embedding cache {_escape(str(root))} is empty")

    _guard(go)


@cache_app.command("clear")
def cache_clear_command(directory: CacheDir = None) -> None:
    """Delete every cached embedding."""

    def go() -> None:
        from evalret.engines.cache import clear_cache, default_cache_dir

        root = directory or default_cache_dir()
        console.print(f"removed {clear_cache(root)} embedding set(s) from {_escape(str(root))}")

    _guard(go)


@cache_app.command("prune")
def cache_prune_command(
    directory: CacheDir = None,
    days: Annotated[float, typer.Option(help="Remove sets unused for this many days.")] = 30,
) -> None:
    """Remove embedding sets unused for a while, corrupt shards and stale temporary files."""

    def go() -> None:
        from evalret.engines.cache import default_cache_dir, prune_cache

        root = directory or default_cache_dir()
        removed = prune_cache(root, days)
        console.print(
            ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in removed.items())
            + f" removed from {_escape(str(root))}"
        )

    _guard(go)


@app.command()
def init(
    directory: Annotated[Path, typer.Argument(help="Repository root to scaffold.")] = Path("."),
    force: Annotated[bool, typer.Option("--force", help="Overwrite existing files.")] = False,
) -> None:
    """Write a starter config, a tiny golden-set template and a GitHub workflow."""

    def go() -> None:
        from evalret.commands.init import write_scaffold

        for path in write_scaffold(directory, force=force):
            console.print(f"wrote {_escape(str(path))}")
        console.print(
            "next: put your corpus and queries in golden_sets/example, then run "
            "`evalret run --config evalret.yaml --save-baseline baselines/evalret.json` once, "
            "on purpose, and commit the baseline."
        )

    _guard(go)


# evalret.data.config.GOLDEN_FORMATS, not imported so that the CLI module stays light (a test keeps
# the two equal); every command taking --format checks it here, before anything runs
GOLDEN_FORMATS = ("auto", "native", "beir", "trec")


def _golden_format(value: str | None) -> str | None:
    if value is not None and value not in GOLDEN_FORMATS:
        raise typer.BadParameter(
            f"{value!r} is not a golden-set format; choose {', '.join(GOLDEN_FORMATS)}"
        )
    return value


GoldenFormat = Annotated[
    str | None,
    typer.Option(
        "--format",
        callback=_golden_format,
        help="Golden-set format: auto, native, beir or trec.",
    ),
]
GoldenSplit = Annotated[str | None, typer.Option("--split", help="BEIR split (default: test).")]
AsJson = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]


@app.command()
def validate(
    path: Annotated[
        Path,
        typer.Argument(help="A golden-set directory (or TREC qrels file), or an evalret config."),
    ],
    report: Annotated[
        Path | None,
        typer.Option(help="A report.json whose per-query nDCG@10 spread sets the MDE."),
    ] = None,
    golden_format: GoldenFormat = None,
    split: GoldenSplit = None,
    as_json: AsJson = False,
) -> None:
    """Check a golden set without a model: every error and warning with file:line, counts,
    slice reliability and minimum detectable nDCG@10 difference. Exit 2 on errors."""

    def go() -> ExitCode:
        import json

        from evalret.commands.validate import golden_config, run_validation
        from evalret.report.escape import json_document
        from evalret.report.validate_view import render_validation

        result = run_validation(golden_config(path, golden_format, split), report)
        if as_json:
            typer.echo(json_document(json.dumps(result.to_json(), indent=1, ensure_ascii=False)))
        else:
            console.print(render_validation(result), highlight=False)
        return ExitCode.OK if result.ok else ExitCode.INVALID_INPUT

    raise typer.Exit(int(_guard(go)))


@app.command()
def leakage(
    train: Annotated[
        Path, typer.Option("--train", help="Training queries: JSONL (text or query) or text.")
    ],
    golden: Annotated[
        Path | None,
        typer.Argument(help="A golden-set directory or an evalret config (default: the demo)."),
    ] = None,
    train_format: Annotated[
        str, typer.Option("--train-format", help="auto, jsonl or text.")
    ] = "auto",
    threshold: Annotated[
        float | None,
        typer.Option(help="Embedding cosine at or above which a pair leaks (leakage.threshold)."),
    ] = None,
    max_fraction: Annotated[
        float | None,
        typer.Option(help="Exit 1 when a larger fraction of golden queries leaks."),
    ] = None,
    no_embedding: Annotated[
        bool, typer.Option("--no-embedding", help="Text checks only: no model is loaded.")
    ] = False,
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Neither read nor write the embedding cache.")
    ] = False,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write the full result as JSON here.")
    ] = None,
    as_json: AsJson = False,
    progress: Annotated[
        bool, typer.Option("--progress/--no-progress", help="Show progress bars.")
    ] = True,
) -> None:
    """Find training queries that copy golden-set queries (exact, near-identical text, or
    embedding cosine above a threshold); exit 1 above --max-fraction."""

    def go() -> ExitCode:
        import json

        from evalret.commands.leakage import run_leakage
        from evalret.commands.validate import golden_config
        from evalret.data.atomic import atomic_write_text, check_writable_file
        from evalret.errors import InputError
        from evalret.report.escape import json_document
        from evalret.report.leakage_view import render_leakage

        if train_format not in ("auto", "jsonl", "text"):
            raise InputError(f"--train-format {train_format!r}: choose auto, jsonl or text")
        if out is not None:
            check_writable_file(out, "leakage result")
        cfg = golden_config(golden)
        if no_cache:
            cfg = _without_cache(cfg)
        with _progress(progress and not as_json) as factory:
            result = run_leakage(
                cfg,
                train,
                train_format,  # type: ignore[arg-type]  # checked above
                use_embedding=not no_embedding,
                threshold=threshold,
                max_fraction=max_fraction,
                progress=factory,
            )
        data = json_document(json.dumps(result.to_json(), indent=1, ensure_ascii=False))
        if out is not None:
            atomic_write_text(out, data + "\n", "leakage result")
        if as_json:
            typer.echo(data)
        else:
            console.print(render_leakage(result), highlight=False)
            if out is not None:
                console.print(f"wrote {_escape(str(out))}")
        return ExitCode.REGRESSION if result.failed else ExitCode.OK

    raise typer.Exit(int(_guard(go)))


def main() -> None:
    """Console-script entry point."""
    app()
