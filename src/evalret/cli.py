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
from evalret.choices import (
    DEFAULT_CONFIG,
    GOLDEN_FORMATS,
    MAX_SAMPLES,
    SHOWN_ENTRIES,
    Correction,
    TrainFormat,
)
from evalret.cli_golden import golden_app
from evalret.cli_judgments import judgments_app
from evalret.cli_runtime import (
    SuggestingGroup,
    bars,
    console,
    err_console,
    exit_code,
    loading,
    run_app,
    subgroup,
)
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
    # commands in sections, "Start here"; "Did you mean: evalret run ..." for an unknown command,
    # option or choice
    cls=SuggestingGroup,
)
baseline_app = subgroup("baseline", "Show what a saved baseline holds.")
app.add_typer(baseline_app, name="baseline")
cache_app = subgroup("cache", "Inspect and manage the embedding cache.")
app.add_typer(cache_app, name="cache")
history_app = subgroup("history", "Keep a metric's trend across commits in a SQLite database.")
app.add_typer(history_app, name="history")
app.add_typer(judgments_app, name="judgments")
config_app = subgroup("config", "Print the config file's JSON Schema.")
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
    """Evaluate a config on its golden set and gate the result.

    Searches every enabled index (exact, HNSW, faiss, quantized, BM25, hybrid, vector stores,
    pgvector, Python retrievers, run files, rerankers), reports metrics per slice and gates them
    against the config's floors and a baseline (--baseline, default: gate.baseline). --set
    KEY=VALUE (--model, --dimension) changes a setting for this run, recorded in report.json.
    Exit 1 when a check fails. Writes into --out (default: output.dir): report.json, report.md,
    comment.md, report.html, junit.xml (with a gate) and run.INDEX.trec per index; with
    --save-baseline FILE, also the run as a baseline."""
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
    report = outcome.evaluation.report
    print_run(console, report, outcome.written, verbose, outcome.config_words)
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
    """Fill the embedding cache for a config, and stop.

    Embeds what `evalret run` embeds, or one shard of it (--shard I/N, for a CI matrix): once
    the N shards share one cache, `evalret run` embeds nothing. Writes into the embedding cache
    (--dir); with --export FILE, also the documents' vectors and the model's identity (Parquet
    or .npz), to load a vector store with."""
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
    """Score TREC or JSONL run files against qrels, with no model.

    As trec_eval: each run is an index named after its file stem (or NAME=PATH), gated against
    --baseline. Exit 1 when a check fails. Writes into --out: report.json, report.md,
    comment.md, report.html, junit.xml (with a baseline) and run.INDEX.trec per run;
    --trec-eval-output prints trec_eval's own text instead and writes nothing."""
    if trec_eval_output:  # (without the pipeline's modules: none of them is used)
        with loading(runs):
            from evalret.commands.trec_eval import score_as_trec_eval
        refused = {"--metric": metric, "--out": out, "--baseline": baseline}
        text = score_as_trec_eval(
            golden=golden, runs=runs, relevance_level=relevance_level, refused=refused
        )
        sys.stdout.write(text)
        return ExitCode.OK
    with loading(runs):  # (the runs read while the modules import)
        from evalret.commands.score import score_command
        from evalret.report.terminal_brief import print_run
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
    """Score a run as trec_eval does, with its flags and its text.

    trec_eval 10's whole measure set and its output byte for byte: -q -m -c -l -n -J -N -M as
    trec_eval reads them (-m official by default, all_trec for the whole set, name.params for a
    measure's cutoffs or gains). Other trec_eval flags are refused (exit 2), as are its errors
    (exit 2, not trec_eval's own codes). Writes nothing: the text goes to stdout."""
    with loading([str(run)]):
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
    out: Annotated[Path, o.out("Directory for the comparison's files.")] = Path("reports/compare"),
    primary: o.Primary = "ndcg@10",
    min_gain: o.MinGain = 0.01,
    alpha: o.Alpha = 0.05,
    correction: o.CorrectionOption = "holm",
    samples: o.Samples = 10_000,
    seed: o.CompareSeed = 0,
    margin: o.Margin = None,
    margin_mode: o.MarginModeOption = None,
    fail_on_regression: o.FailOnRegression = False,
    progress: o.Progress,
    verbose: o.Verbose = False,
    settings: o.Overrides,
) -> ExitCode:
    """Compare two models or configs with paired statistics.

    A and B are configs (run here) or saved report.json files; --set (--model, --dimension)
    applies to each side that is a config. Exit 1 on a significant regression only with
    --fail-on-regression. Writes into --out: compare.json, compare.md, disagreements.md and
    report.html."""
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
        margin=margin,
        margin_mode=margin_mode,
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
    """Export unjudged top-k documents for annotators to grade.

    Writes to --out the unjudged documents of every run's top k, per query, across configs and
    indexes: JSONL with grade null to fill in, or a Label Studio import."""
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
    """Grade (query, document) pairs with an LLM judge.

    Grades a pool's pairs, or the unjudged top k of a run (--from-report), with the config's
    judge: section. Exit 1 when --calibrate finds kappa below judge.min_kappa; exit 3 when a
    request failed for good or an answer could not be read (the labels got are written and
    cached: a rerun asks the rest). Writes the labels to --out (annotation JSONL for `evalret
    judgments merge`); the answers are kept in the judge's answer cache."""
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
    """Grade a pool's (query, document) pairs in a browser.

    Serves one pair at a time on 127.0.0.1 until Ctrl-C (needs evalret[annotate]). Writes
    every grade at once to --out (default: POOL.ANNOTATOR.jsonl beside the pool)."""
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
    """Render report.html from a saved report.json or compare.json.

    Self-contained; --baseline draws that saved report beside the run (default: the gate's
    baseline, if found). Writes report.html into --out (default: beside PATH)."""
    from evalret.commands.report import write_saved_html

    written = write_saved_html(path=path, out_dir=out, baseline=baseline)
    console.print(f"wrote {markup_safe(str(written))}")


@_command(baseline_app, "show")
def baseline_show(
    *,
    path: Annotated[Path, typer.Argument(help="A baseline (or saved report.json).")],
    verbose: o.Verbose = False,
) -> None:
    """Show what a baseline holds.

    What saved it and when, the golden set and each index's headline metrics (--verbose: every
    setting, slice and metric). No verdict."""
    from evalret.commands.baseline import baseline_show_command
    from evalret.report.baseline_view import print_baseline

    print_baseline(console, baseline_show_command(path=path), path, verbose)


@_command(cache_app, "info")
def cache_info(*, directory: o.CacheDir = None) -> None:
    """List the cached embedding sets with their size and last use."""
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
    """Remove unused embedding sets and broken cache files.

    The sets unused for --days, corrupt shards and stale temporary files."""
    from evalret.commands.cache import cache_prune_command
    from evalret.report.cache_view import pruned_line

    console.print(pruned_line(*cache_prune_command(directory=directory, days=days)))


@_command(app)
def init(
    *,
    directory: Annotated[Path, typer.Argument(help="Repository root to scaffold.")] = Path("."),
    force: o.Force = False,
    pre_commit: o.PreCommit = False,
    config: o.InitConfig = DEFAULT_CONFIG,
    watch: o.Watch = None,
    action_ref: o.ActionRef = None,
    install: o.Install = None,
    workflow_only: o.WorkflowOnly = False,
) -> None:
    """Scaffold a config, a golden-set template and a CI workflow.

    Paths are relative to DIRECTORY; an existing file is refused unless --force. Writes
    evalret.yaml, evalret.schema.json, golden_sets/example/corpus.jsonl and queries.jsonl, and,
    with --action-ref, .github/workflows/evalret.yml using evalret's action from that repository
    and ref; with --pre-commit, only adds the evalret-gate hook (stage pre-push) to
    .pre-commit-config.yaml, run when the config, golden set, baseline or a --watch path
    changes."""
    from evalret.commands.init import init_command

    lines = init_command(
        root=directory,
        force=force,
        pre_commit=pre_commit,
        config=config,
        watch=watch or [],
        action_ref=action_ref,
        install=install,
        workflow_only=workflow_only,
    )
    for line in lines:
        console.print(line, markup=False, highlight=False)


@_command(config_app, "schema")
def config_schema() -> None:
    """Print the config file's JSON Schema (draft-07).

    Editors complete and check a config with it; evalret init writes it beside the config."""
    from evalret.commands.config import config_schema_command

    typer.echo(config_schema_command(), nl=False)


@_command(app)
def hook(
    *,
    config: o.HookConfig = DEFAULT_CONFIG,
    baseline: o.Baseline = None,
    out: Annotated[Path | None, o.out("Directory for report files (overrides output.dir).")] = None,
    settings: o.Overrides,
) -> ExitCode:
    """Run the gate as the pre-commit hook evalret-gate (pre-push).

    `evalret run` against the config's baseline, then a short verdict and the path of
    report.md; exit 1 when a check fails. Writes into --out (default: output.dir) as `evalret
    run`: report.json, report.md, comment.md, report.html, junit.xml and run.INDEX.trec."""
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
    """Check a golden set without a model.

    Every error and warning with file:line, counts, slice reliability and the minimum
    detectable nDCG@10 difference. Exit 2 on errors."""
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
    """Find training queries that copy golden-set queries.

    Exact and near-identical text, and embedding cosine above a threshold (not with
    --no-embedding). Exit 1 above --max-fraction. Writes the result as JSON to --out."""
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
    """Evaluate a grid of config settings: quality, latency and memory.

    Runs every point (--set KEY=V1,V2,...; --model, --dimension fix one setting for all) from
    one embedding cache, timing each faiss index (p50, p95, QPS, build time, size), with the
    Pareto fronts of nDCG@10 against latency and memory (timings are machine-dependent).
    Writes sweep.json and sweep.html into --out."""
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
    """Append a saved report.json to the history database.

    Its fingerprint and every metric per index and slice, in one transaction (safe to run
    concurrently). Writes the database (--db), created when missing."""
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
    """Print the history as a table per index and slice.

    Newest last: each metric's value and its change from the previous entry (default: the exact
    index, slice all, every metric)."""
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
    """Write a page of trend charts from the history.

    Per slice a chart per metric with a line per index, baselines ringed, golden-set or
    metric-definition changes marked. Writes trend.html to --out (default: beside the database)."""
    from evalret.commands.history import history_report_command

    path = history_report_command(
        db=db, config=config, out=out, indexes=index, slices=slice_name, metrics=metric, last=last
    )
    console.print(f"wrote {markup_safe(str(path))}", highlight=False)


def main() -> None:
    """Console-script entry point: the exit code of ``cli_runtime.run_app``."""
    sys.exit(run_app(app))
