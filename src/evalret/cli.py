"""The evalret command line: parse options, call one function of ``evalret.commands`` (by
keyword, or with its request dataclass), render, exit. Every option is declared once, in
``evalret.cli_options`` (one meaning per option name); a command that reads a config takes the
option group ``Overrides`` (``--set KEY=VALUE``, ``--model``, ``--dimension``: one
``ConfigSettings``, ``evalret.data.overrides``), and ``Progress`` its bars. The consoles, the exit
codes (``cli_runtime.exit_code``) and the registration of commands are ``evalret.cli_runtime``'s.
Heavy libraries (torch, sentence-transformers, faiss) load only inside commands; `evalret --help`
imports neither rich, numpy nor pydantic.

Numeric options and their bounds (checked before anything runs, exit 2 naming the option):
``compare --alpha`` in (0, 1), ``--min-gain`` finite and >= 0, ``--samples`` from 100 to
MAX_SAMPLES, ``--seed`` >= 0 (any size); ``pool -k`` >= 1 (a k beyond a run's ranking depth
takes the whole ranking); ``cache prune --days`` from 0 to 36,500; ``leakage --threshold`` in
(0, 1], ``--max-fraction`` in [0, 1].
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from evalret import cli_options as o
from evalret.choices import GOLDEN_FORMATS, MAX_SAMPLES, SHOWN_ENTRIES, Correction, TrainFormat
from evalret.cli_golden import golden_app
from evalret.cli_runtime import SuggestingGroup, bars, console, err_console, exit_code, run_app
from evalret.cli_runtime import command as _command
from evalret.core.relevance import DEFAULT_RELEVANCE_LEVEL
from evalret.errors import ExitCode
from evalret.report.escape import markup_safe
from evalret.version import __version__

__all__ = ["GOLDEN_FORMATS", "MAX_SAMPLES", "Correction", "TrainFormat", "app", "main"]

app = typer.Typer(
    name="evalret",
    help="Evaluate embedding retrieval on a golden set and gate changes in CI.",
    no_args_is_help=True,
    # --install-completion / --show-completion for bash, zsh, fish and PowerShell
    # (docs/how-to/shell-completion.md); typer imports its completion code either way
    add_completion=True,
    pretty_exceptions_enable=False,
    # plain help: typer's rich help formatter imports rich.markdown and markdown-it (~0.1 s)
    rich_markup_mode=None,
    cls=SuggestingGroup,  # "Did you mean: evalret run ..." for an unknown command or option
)
baseline_app = typer.Typer(help="Inspect baseline files.", no_args_is_help=True)
app.add_typer(baseline_app, name="baseline")
cache_app = typer.Typer(help="Inspect and manage the embedding cache.", no_args_is_help=True)
app.add_typer(cache_app, name="cache")
history_app = typer.Typer(
    help="Keep a metric's trend across commits in a SQLite database.", no_args_is_help=True
)
app.add_typer(history_app, name="history")
judgments_app = typer.Typer(
    help="Annotators' judgments: agreement, and merging into a golden set.", no_args_is_help=True
)
app.add_typer(judgments_app, name="judgments")
config_app = typer.Typer(help="The config file: its JSON Schema.", no_args_is_help=True)
app.add_typer(config_app, name="config")
app.add_typer(golden_app, name="golden")


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


# --- the commands ------------------------------------------------------------------------------


@_command(app)
def run(
    *,
    config: o.RunConfigFile = None,
    out: Annotated[Path | None, o.out("Directory for report files (overrides output.dir).")] = None,
    baseline: o.Baseline = None,
    save_baseline: o.SaveBaseline = None,
    no_cache: o.NoCache = False,
    progress: o.Progress,
    verbose: o.Verbose = False,
    dry_run: o.DryRun = False,
    sample: o.Sample = None,
    settings: o.Overrides,
    judge: o.Judge = False,
    judge_cache_only: o.JudgeCacheOnly = False,
) -> ExitCode:
    """Embed the golden set, search exact and HNSW indexes, report metrics per slice, and gate
    against floors and a baseline (--baseline, default: the config's gate.baseline). Report
    files go to --out (default: the config's output.dir); --set KEY=VALUE (or --model,
    --dimension) changes a config setting for this run. Exit 1 when a check fails."""
    from evalret.commands.run import RunRequest, plan_command, run_command
    from evalret.report.terminal_brief import print_run

    request = RunRequest(
        config=config,
        out=out,
        baseline=baseline,
        save_to=save_baseline,
        no_cache=no_cache,
        sample=sample,
        overrides=settings.overrides(),
        judging=None if dry_run else _judging(judge, judge_cache_only),
    )
    if dry_run:
        from evalret.report.plan_view import print_plan

        print_plan(console, plan_command(request))
        return ExitCode.OK
    outcome = run_command(request, progress=progress)
    print_run(console, outcome.evaluation.report, outcome.written, verbose)
    if outcome.evaluation.report.judge is not None:
        from evalret.report.judge_view import render_run_judge

        console.print(render_run_judge(outcome.evaluation.report.judge), highlight=False)
    return outcome.exit_code


def _judging(judge: bool, cache_only: bool) -> Any:
    """`run --judge` / `--judge-cache-only` as the pipeline takes it (None: neither)."""
    if not (judge or cache_only):
        return None
    from evalret.pipeline.judge import RunJudging

    return RunJudging(cache_only=cache_only)


@_command(app)
def embed(
    *,
    config: o.ConfigFile = None,
    shard: o.Shard = None,
    directory: o.CacheDir = None,
    no_cache: o.NoCache = False,
    progress: o.Progress,
    settings: o.Overrides,
    export: o.Export = None,
) -> None:
    """Fill the embedding cache with what `evalret run` on the config embeds (documents and
    queries), or with one shard of it (--shard I/N, for a CI matrix), and stop. After the N
    shards share one cache directory, `evalret run` embeds nothing. --export FILE also writes
    the documents' vectors with the model's identity (Parquet or .npz), to load a store with."""
    from evalret.commands.embed import embed_command
    from evalret.report.embed_view import embed_lines

    outcome = embed_command(
        config=config,
        shard=shard,
        cache_dir=directory,
        no_cache=no_cache,
        progress=progress,
        overrides=settings.overrides(),
        export=export,
    )
    for line in embed_lines(outcome.summary()):
        console.print(line, highlight=False, soft_wrap=True)


@_command(app)
def score(
    *,
    golden: Annotated[
        Path, typer.Argument(help="A TREC qrels file (alone will do) or a golden set directory.")
    ],
    runs: Annotated[
        list[str],
        typer.Argument(help="Run files (TREC or .jsonl), each PATH or NAME=PATH.", min=1),
    ],
    metric: o.ScoreMetric = None,
    relevance_level: o.RelevanceLevel = DEFAULT_RELEVANCE_LEVEL,
    queries_without_relevant: o.WithoutRelevant = "exclude",
    out: Annotated[Path | None, o.out("Directory for report files (default reports/).")] = None,
    baseline: o.ScoreBaseline = None,
    trec_eval_output: o.TrecEvalOutput = False,
    progress: o.Progress,
    verbose: o.Verbose = False,
) -> ExitCode:
    """Score run files against qrels like trec_eval, with no model and no embedding: each run is
    an index named after its file stem (or NAME=PATH); writes the same report files as run into
    --out and gates against --baseline. Exit 1 when a check fails. --trec-eval-output prints
    trec_eval's own text instead (commands.trec_eval)."""
    from evalret.commands.score import score_command
    from evalret.report.terminal_brief import print_run

    if trec_eval_output:
        return _trec_eval_output(golden, runs, relevance_level, metric, out, baseline)
    outcome = score_command(
        golden=golden,
        runs=runs,
        metrics=metric,
        relevance_level=relevance_level,
        queries_without_relevant=queries_without_relevant,
        out=out,
        baseline=baseline,
        progress=progress,
    )
    print_run(console, outcome.evaluation.report, outcome.written, verbose)
    return outcome.exit_code


def _trec_eval_output(
    golden: Path,
    runs: list[str],
    level: int,
    metric: list[str] | None,
    out: Path | None,
    baseline: Path | None,
) -> ExitCode:
    from evalret.commands.trec_eval import score_as_trec_eval
    from evalret.errors import InputError

    for given, flag in ((metric, "--metric"), (out, "--out"), (baseline, "--baseline")):
        if given:
            raise InputError(
                f"--trec-eval-output prints trec_eval's text and takes no {flag}: for other "
                "measures use evalret trec_eval -m"
            )
    sys.stdout.write(score_as_trec_eval(golden=golden, runs=runs, relevance_level=level))
    return ExitCode.OK


@_command(app, "trec_eval")
def trec_eval(
    *,
    qrels: Annotated[Path, typer.Argument(help="A TREC qrels file.")],
    run: Annotated[Path, typer.Argument(help="A TREC run file.")],
    query_eval_wanted: o.TrecQuery = False,
    measure: o.TrecMeasure = None,
    complete_rel_info_wanted: o.TrecComplete = False,
    level_for_rel: o.TrecLevel = 1,
    nosummary: o.TrecNoSummary = False,
    judged_docs_only: o.TrecJudgedOnly = False,
    number_docs_in_coll: o.TrecCollection = 0,
    max_retrieved_per_topic: o.TrecMaxDocs = None,
) -> ExitCode:
    """trec_eval's command line, with trec_eval 10's measures and its text byte for byte:
    -q -m -c -l -n -J -N -M as trec_eval reads them (-m official by default; all_trec for the
    whole set; name.params for a measure's cutoffs or gains). Other trec_eval flags are refused
    (exit 2); errors exit 2, not trec_eval's own codes."""
    from evalret.commands.trec_eval import ALL_DOCS, trec_eval_command
    from evalret.core.treceval import Settings

    settings = Settings(
        relevance_level=level_for_rel,
        judged_only=judged_docs_only,
        max_docs=ALL_DOCS if max_retrieved_per_topic is None else max_retrieved_per_topic,
        docs_in_collection=number_docs_in_coll,
        average_complete=complete_rel_info_wanted,
        per_query=query_eval_wanted,
        summary=not nosummary,
    )
    text = trec_eval_command(qrels=qrels, run=run, settings=settings, measures=measure or ())
    sys.stdout.write(text)
    return ExitCode.OK


@_command(app)
def compare(
    *,
    a: Annotated[Path, typer.Argument(help="A: a config (.yaml) to run, or a saved report.json.")],
    b: Annotated[Path, typer.Argument(help="B: a config (.yaml) to run, or a saved report.json.")],
    out: Annotated[Path, o.out("Directory for compare.json and compare.md.")] = Path(
        "reports/compare"
    ),
    primary: o.Primary = "ndcg@10",
    min_gain: o.MinGain = 0.01,
    alpha: o.Alpha = 0.05,
    correction: o.CorrectionOption = "holm",
    samples: o.Samples = 10_000,
    seed: o.CompareSeed = 0,
    fail_on_regression: o.FailOnRegression = False,
    progress: o.Progress,
    verbose: o.Verbose = False,
    settings: o.Overrides,
) -> ExitCode:
    """Compare two model versions (configs or saved reports) with paired statistics; writes
    compare.json, compare.md, disagreements.md and report.html into --out. --set (--model,
    --dimension) applies to each side that is a config."""
    from evalret.commands.compare import compare_command
    from evalret.report.terminal_brief import print_compare

    report, written = compare_command(
        a=a,
        b=b,
        out=out,
        primary=primary,
        min_gain=min_gain,
        alpha=alpha,
        correction=correction,
        samples=samples,
        seed=seed,
        progress=progress,
        overrides=settings.overrides(),
    )
    print_compare(console, report, [str(p) for p in written], verbose)
    regressed = fail_on_regression and report.verdict.regressions
    return ExitCode.REGRESSION if regressed else ExitCode.OK


@_command(app)
def pool(
    *,
    configs: Annotated[
        list[Path] | None,
        typer.Argument(help="Configs whose rankings are pooled; none: the built-in defaults."),
    ] = None,
    k: o.TopK = 10,
    index: o.PoolIndex = None,
    out: Annotated[Path, o.out("JSONL file of documents to label.")] = Path("pool.jsonl"),
    progress: o.Progress,
    gold_fraction: o.GoldFraction = 0.0,
    seed: o.PoolSeed = 0,
    output_format: o.PoolFormat = None,
    old_format: o.OldPoolFormat = None,
    settings: o.Overrides,
) -> None:
    """Export the unjudged documents of every run's top k, per query, for annotators (JSONL with
    grade null to fill in, into --out): pooling across configs and indexes."""
    from evalret.commands.pool import PoolRequest, pool_command
    from evalret.report.pool_view import pool_line

    fmt = o.renamed(output_format, old_format, "--output-format")
    request = PoolRequest(
        configs=configs or [],
        k=k,
        out=out,
        indexes=index,
        gold_fraction=gold_fraction,
        seed=seed,
        fmt="label-studio" if fmt == "label-studio" else "jsonl",
        overrides=settings.overrides(),
    )
    pooled = pool_command(request, progress=progress)
    line = pool_line(
        pooled.n_documents, pooled.n_queries, pooled.n_total_queries, k, pooled.labels, out
    )
    if pooled.n_gold:
        line += f" (+ {pooled.n_gold} gold lines)"
    console.print(line, highlight=False)


@_command(app)
def judge(
    *,
    out: Annotated[Path, o.out("Annotation JSONL the judge's labels are written to.")],
    pool_file: o.JudgePool = None,
    config: o.JudgeConfigFile = None,
    dry_run: o.JudgeDryRun = False,
    votes: o.Votes = None,
    limit: o.Limit = None,
    from_report: o.FromReport = None,
    index: o.JudgeIndex = None,
    k: o.TopK = 10,
    calibrate: o.Calibrate = None,
    progress: o.Progress,
    settings: o.SetsOnly,
) -> ExitCode:
    """Grade (query, document) pairs with an LLM (the config's judge: section): a pool's pairs,
    or the unjudged top k of a run (--from-report); writes annotation JSONL for `evalret
    judgments merge`. Exit 1 when --calibrate finds kappa below judge.min_kappa; exit 3 when a
    request failed for good or an answer could not be read (the labels got are written and
    cached: a rerun asks the rest)."""
    from dataclasses import asdict

    from evalret.commands.judge import JudgeRequest, judge_command
    from evalret.report.judge_view import render_judge

    request = JudgeRequest(
        pool=pool_file,
        out=out,
        config=config,
        dry_run=dry_run,
        votes=votes,
        limit=limit,
        from_report=from_report,
        index=index,
        k=k,
        calibrate=calibrate,
        overrides=settings.overrides(),
    )
    outcome = judge_command(request, progress=progress)
    console.print(render_judge(asdict(outcome)), highlight=False, soft_wrap=True)
    return outcome.exit_code


@_command(app)
def annotate(
    *,
    pool_file: Annotated[
        Path, typer.Argument(metavar="POOL", help="A pool file (JSONL) from `evalret pool`.")
    ],
    annotator: o.Annotator,
    port: o.Port = 8765,
    out: Annotated[
        Path | None, o.out("File the grades are appended to (default POOL.ANNOTATOR.jsonl).")
    ] = None,
    scale: o.Scale = "0-3",
    seed: o.AnnotateSeed = 0,
    no_browser: o.NoBrowser = False,
) -> None:
    """Grade a pool's (query, document) pairs in a browser, one at a time, on 127.0.0.1 (needs
    evalret[annotate]); every grade is appended to the annotation file at once."""
    from evalret.commands.annotate import AnnotateRequest, annotate_command

    def say(text: str) -> None:
        console.print(text, highlight=False, markup=False, soft_wrap=True)

    request = AnnotateRequest(
        pool=pool_file,
        annotator=annotator,
        out=out,
        scale=scale,
        seed=seed,
        port=port,
        open_browser=not no_browser,
    )
    annotate_command(request, say=say)


@_command(app, "report")
def report_command(
    *,
    path: o.SavedReport,
    out: Annotated[Path | None, o.out("Directory for report.html (default: beside PATH).")] = None,
    baseline: o.DrawnBaseline = None,
) -> None:
    """Render report.html (charts, self-contained) from a saved report.json or compare.json, into
    --out (default: beside PATH); --baseline draws that saved report beside the run (default:
    the gate's baseline, if found)."""
    from evalret.commands.report import write_saved_html

    written = write_saved_html(path=path, out_dir=out, baseline=baseline)
    console.print(f"wrote {markup_safe(str(written))}")


@_command(baseline_app, "show")
def baseline_show(
    *,
    path: Annotated[Path, typer.Argument(help="A baseline (or saved report.json).")],
) -> None:
    """Show what a baseline holds: fingerprint, settings and metrics per index and slice."""
    from evalret.commands.baseline import baseline_show_command
    from evalret.report.terminal import print_baseline

    print_baseline(console, baseline_show_command(path=path), path)


@_command(cache_app, "info")
def cache_info(*, directory: o.CacheDir = None) -> None:
    """List the cached embedding sets: model, settings, entries, size, last use."""
    from evalret.commands.cache import cache_info_command
    from evalret.report.cache_view import info_view

    console.print(info_view(*cache_info_command(directory=directory)))


@_command(cache_app, "clear")
def cache_clear(*, directory: o.CacheDir = None) -> None:
    """Delete every cached embedding."""
    from evalret.commands.cache import cache_clear_command
    from evalret.report.cache_view import cleared_line

    console.print(cleared_line(*cache_clear_command(directory=directory)))


@_command(cache_app, "prune")
def cache_prune(*, directory: o.CacheDir = None, days: o.Days = 30) -> None:
    """Remove embedding sets unused for a while, corrupt shards and stale temporary files."""
    from evalret.commands.cache import cache_prune_command
    from evalret.report.cache_view import pruned_line

    console.print(pruned_line(*cache_prune_command(directory=directory, days=days)))


@_command(app)
def init(
    *,
    directory: Annotated[Path, typer.Argument(help="Repository root to scaffold.")] = Path("."),
    force: o.Force = False,
    pre_commit: o.PreCommit = False,
    config: o.InitConfig = Path("evalret.yaml"),
    watch: o.Watch = None,
) -> None:
    """Write a starter config, a tiny golden-set template and a GitHub workflow; with
    --pre-commit, add the evalret-gate hook (stage pre-push) to .pre-commit-config.yaml instead,
    run when the config, golden set, baseline or a --watch path changes. Paths are relative to
    DIRECTORY."""
    if pre_commit:
        from evalret.commands.init import PRE_COMMIT_NEXT_STEPS, add_pre_commit_hook

        added = add_pre_commit_hook(root=directory, config=config, extra=watch or [])
        state = "added the evalret-gate hook to" if added.added else "evalret-gate is already in"
        console.print(f"{state} {markup_safe(str(added.path))}", highlight=False)
        console.print(f"watched: {markup_safe(', '.join(added.watched))}", highlight=False)
        for path in added.outside:
            console.print(f"not watched (outside the repository): {markup_safe(str(path))}")
        console.print(PRE_COMMIT_NEXT_STEPS, highlight=False)
        return
    from evalret.commands.init import NEXT_STEPS, write_scaffold

    for path in write_scaffold(root=directory, force=force):
        console.print(f"wrote {markup_safe(str(path))}")
    console.print(NEXT_STEPS)


@_command(config_app, "schema")
def config_schema() -> None:
    """Print the config file's JSON Schema (draft-07): editors complete and check a config with
    it (evalret init writes it beside the starter config); the package ships the same file."""
    from evalret.commands.config import config_schema_command

    typer.echo(config_schema_command(), nl=False)


@_command(app)
def hook(
    *,
    config: o.HookConfig = Path("evalret.yaml"),
    baseline: o.Baseline = None,
    out: Annotated[Path | None, o.out("Directory for report files (overrides output.dir).")] = None,
    settings: o.Overrides,
) -> ExitCode:
    """The pre-commit hook evalret-gate (stage pre-push): `evalret run` against the config's
    baseline, then a short verdict and the path of report.md. Exit 1 when a check fails."""
    from evalret.commands.hook import hook_command, pushed_commit
    from evalret.pipeline.precommit import HOOK_ID, INPUT_HINT, SKIP_HINT
    from evalret.report.hook_view import hook_lines

    def gate() -> ExitCode:
        overrides = settings.overrides()
        done = hook_command(
            config=config, baseline=baseline, out=out, commit=pushed_commit(), overrides=overrides
        )
        lines = hook_lines(HOOK_ID, done.report.gate, done.baseline, done.report_md)
        if done.commit is not None:
            lines.insert(1, f"  gated: the pushed commit {done.commit[:12]}")
        for line in lines:
            console.print(line, highlight=False, markup=False, soft_wrap=True)
        return done.exit_code

    code = exit_code(gate)  # an error is printed there; the hint says what to do next
    hint = {ExitCode.INTERNAL: SKIP_HINT, ExitCode.INVALID_INPUT: INPUT_HINT}.get(code)
    if hint:
        err_console.print(hint, highlight=False, markup=False, soft_wrap=True)
    return code


@_command(app)
def validate(
    *,
    path: Annotated[
        Path,
        typer.Argument(help="A golden-set directory (or TREC qrels file), or an evalret config."),
    ],
    report: o.MdeReport = None,
    golden_format: o.GoldenFormat = None,
    split: o.GoldenSplit = None,
    as_json: o.AsJson = False,
    settings: o.Overrides,
) -> ExitCode:
    """Check a golden set without a model: every error and warning with file:line, counts,
    slice reliability and minimum detectable nDCG@10 difference. Exit 2 on errors."""
    from evalret.commands.validate import validate_command, validation_json
    from evalret.report.validate_view import render_validation

    result = validate_command(
        path=path,
        fmt=golden_format,
        split=split,
        report=report,
        overrides=settings.overrides(),
    )
    if as_json:
        typer.echo(validation_json(result))
    else:
        console.print(render_validation(result), highlight=False)
    return ExitCode.OK if result.ok else ExitCode.INVALID_INPUT


@_command(app)
def leakage(
    *,
    train: o.Train,
    golden: Annotated[
        Path | None,
        typer.Argument(help="A golden-set directory or an evalret config (default: the demo)."),
    ] = None,
    train_format: o.TrainFormatOption = "auto",
    threshold: o.Threshold = None,
    max_fraction: o.MaxFraction = None,
    no_embedding: o.NoEmbedding = False,
    no_cache: o.NoCache = False,
    out: Annotated[Path | None, o.out("Write the full result as JSON here.")] = None,
    as_json: o.AsJson = False,
    progress: o.Progress,
    settings: o.Overrides,
) -> ExitCode:
    """Find training queries that copy golden-set queries (exact, near-identical text, or
    embedding cosine above a threshold); --out writes the full result as JSON; exit 1 above
    --max-fraction."""
    from evalret.commands.leakage import leakage_command
    from evalret.report.leakage_view import render_leakage

    found = leakage_command(
        golden=golden,
        train=train,
        train_format=train_format,
        use_embedding=not no_embedding,
        threshold=threshold,
        max_fraction=max_fraction,
        no_cache=no_cache,
        out=out,
        progress=bars(False) if as_json else progress,
        overrides=settings.overrides(),
    )
    if as_json:
        typer.echo(found.json_text)
    else:
        console.print(render_leakage(found.result), highlight=False)
        if out is not None:
            console.print(f"wrote {markup_safe(str(out))}")
    return ExitCode.REGRESSION if found.result.failed else ExitCode.OK


@_command(app)
def sweep(
    *,
    out: Annotated[Path, o.out("Directory for sweep.json and sweep.html.")],
    set_: o.SweepSets = None,
    config: o.ConfigFile = None,
    repeats: o.Repeats = 3,
    max_points: o.MaxPoints = None,
    no_cache: o.NoCache = False,
    progress: o.Progress,
    fixed: o.FixedSettings,
) -> None:
    """Evaluate every point of a grid of config settings (--set, repeatable; --model and
    --dimension fix one setting for every point) from one embedding cache, measure each faiss
    index's latency (p50, p95), QPS, build time and size, and write sweep.json and sweep.html
    with the Pareto fronts of nDCG@10 against latency and memory into --out (required).
    Timing figures are machine-dependent."""
    from evalret.commands.sweep import sweep_command
    from evalret.report.sweep_view import sweep_table

    outcome = sweep_command(
        config=config,
        sets=set_ or [],
        out=out,
        repeats=repeats,
        no_cache=no_cache,
        max_points=max_points,
        progress=progress,
        fixed=fixed.overrides(),
    )
    console.print(sweep_table(outcome.report))
    for path in outcome.written:
        console.print(f"wrote {markup_safe(str(path))}", highlight=False)


# --- evalret history ---------------------------------------------------------------------------


@_command(history_app, "add")
def history_add(
    *,
    report: Annotated[Path, typer.Argument(help="A report.json written by evalret run.")],
    db: o.HistoryDb = None,
    config: o.HistoryConfigFile = None,
    label: o.Label = None,
    commit: o.Commit = None,
    mark_baseline: o.MarkBaseline = False,
    old_baseline: o.OldMarkBaseline = False,
) -> None:
    """Append a saved report.json (its fingerprint and every metric per index and slice) to the
    history database, creating it when missing; one transaction, safe to run concurrently."""
    from evalret.commands.history import history_add_command
    from evalret.report.history_view import entry_name

    baseline = o.renamed(mark_baseline, old_baseline, "--mark-baseline")
    path, entry = history_add_command(
        report_path=report, db=db, config=config, label=label, commit=commit, baseline=baseline
    )
    console.print(
        f"added entry {entry.id} ({markup_safe(entry_name(entry))}) to {markup_safe(str(path))}",
        highlight=False,
    )


@_command(history_app, "show")
def history_show(
    *,
    db: o.HistoryDb = None,
    config: o.HistoryConfigFile = None,
    metric: o.HistoryMetric = None,
    slice_name: o.HistorySlice = None,
    index: o.HistoryIndex = None,
    last: o.HistoryLast = SHOWN_ENTRIES,
) -> None:
    """Print the history as a table per index and slice, newest last: each metric's value and
    its change from the previous entry (default: the exact index, slice all, every metric)."""
    from evalret.commands.history import history_view
    from evalret.report.history_view import history_tables

    view = history_view(
        db=db, config=config, indexes=index, slices=slice_name, metrics=metric,
        all_by_default=False, last=last,
    )  # fmt: skip
    for table in history_tables(view):
        console.print(table, highlight=False)


@_command(history_app, "report")
def history_report(
    *,
    db: o.HistoryDb = None,
    config: o.HistoryConfigFile = None,
    out: Annotated[
        Path | None, o.out("The page to write (default: trend.html beside the database).")
    ] = None,
    metric: o.HistoryMetric = None,
    slice_name: o.HistorySlice = None,
    index: o.HistoryIndex = None,
    last: o.HistoryLast = SHOWN_ENTRIES,
) -> None:
    """Write trend.html: the entries, and per slice a trend chart per metric with a line per
    index, baselines ringed and golden-set or metric-definition changes marked (self-contained)."""
    from evalret.commands.history import history_report_command

    path = history_report_command(
        db=db, config=config, out=out, indexes=index, slices=slice_name, metrics=metric, last=last
    )
    console.print(f"wrote {markup_safe(str(path))}", highlight=False)


# --- judgments (issue #17) ---------------------------------------------------------------------


@_command(judgments_app, "agreement")
def judgments_agreement(
    *,
    files: o.AnnotationFiles,
    scale: o.Scale = "0-3",
    top: o.Top = 10,
    out: Annotated[Path | None, o.out("Write the figures here as JSON.")] = None,
    old_json: o.OldAgreementJson = None,
) -> None:
    """Agreement between annotators: Cohen's and weighted kappa per pair, Fleiss' kappa and
    Krippendorff's alpha over all, raw agreement, gold accuracy, widest disagreements."""
    from evalret.commands.agreement import agreement_command
    from evalret.report.judgments_view import render_agreement

    json_out = o.renamed(out, old_json, "--out")
    report = agreement_command(files=files, scale=scale, top=top, json_out=json_out)
    console.print(render_agreement(report), highlight=False)


@_command(judgments_app, "merge")
def judgments_merge(
    *,
    files: o.AnnotationFiles,
    into: o.Into,
    out: Annotated[Path, o.out("New golden set directory (new or empty).")],
    policy: o.Policy = "median",
    min_annotators: o.MinAnnotators = 1,
    drop_below: o.DropBelow = None,
    overwrite: o.Overwrite = False,
    scale: o.Scale = "0-3",
    golden_format: o.GoldenFormat = None,
    split: o.GoldenSplit = None,
) -> None:
    """Merge annotators' grades into a new golden set (native or BEIR, as the input), with
    disputed.jsonl listing the items that need adjudication."""
    from evalret.commands.merge_judgments import merge_judgments_command
    from evalret.report.judgments_view import render_merge

    outcome = merge_judgments_command(
        files=files,
        into=into,
        out=out,
        scale=scale,
        policy=policy,
        min_annotators=min_annotators,
        drop_below=drop_below,
        overwrite=overwrite,
        golden_format=golden_format,
        split=split,
    )
    console.print(render_merge(outcome), highlight=False)


def main() -> None:
    """Console-script entry point: the exit code of ``cli_runtime.run_app``."""
    sys.exit(run_app(app))
