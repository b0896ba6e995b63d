"""`evalret golden ...`: build a golden set from nothing (a query log, synthetic queries, judged
pools) and ask whether it can catch a regression (the doctor). The same rules as ``evalret.cli``:
options from ``evalret.cli_options``, one function of ``evalret.commands.golden_*`` per command,
imported inside it; rendering from ``evalret.report``. Registered on the main app by ``cli.py``.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer

from evalret import cli_options as o
from evalret.cli_runtime import command as _command
from evalret.cli_runtime import console, subgroup
from evalret.errors import ExitCode

golden_app = subgroup(
    "golden",
    "Build a golden set from nothing, and check what it can catch.\n\nSample a query log, write "
    "synthetic queries, judge the pooled results, and ask the doctor whether the set can catch "
    "a regression.",
)


@_command(golden_app, "judge")
def golden_judge(
    *,
    draft: o.GoldenJudgeDraft,
    config: o.GoldenJudgeConfig = None,
    out: Annotated[Path, o.out("The golden set written: a new directory (the draft, graded).")],
    k: o.TopK = 10,
    retrievers: o.PoolRetrievers = "dense,bm25,hybrid",
    votes: o.Votes = None,
    calibrate: o.Calibrate = None,
    dry_run: o.JudgeDryRun = False,
    progress: o.Progress,
    settings: o.Overrides,
) -> ExitCode:
    """Grade a draft's pooled results with the LLM judge.

    Pools the top k of several retrievers (and each synthetic query's source documents) for
    every query of DRAFT, grades the pool with the config's judge (as `evalret judge`: its
    cache, votes, calibration); pairs the draft grades already are kept and not sent. Exit 1
    when --calibrate finds kappa below judge.min_kappa; exit 3 when a request failed for good
    or an answer could not be read: nothing is written, the answers read are cached, a rerun
    asks the rest.

    Writes the graded golden set into --out: corpus.jsonl, queries.jsonl and manifest.json."""
    from evalret.commands.golden_judge import (
        GoldenJudgeRequest,
        golden_judge_command,
        parse_retrievers,
    )
    from evalret.report.golden_judge_view import render_golden_judge

    request = GoldenJudgeRequest(
        draft=draft,
        out=out,
        config=config,
        k=k,
        retrievers=parse_retrievers(retrievers),
        votes=votes,
        calibrate=calibrate,
        dry_run=dry_run,
        overrides=settings.overrides(),
    )
    outcome = golden_judge_command(request, progress=progress)
    console.print(render_golden_judge(asdict(outcome)), highlight=False, soft_wrap=True)
    return outcome.exit_code


# --- golden from-logs ---------------------------------------------------------------------------


@_command(golden_app, "from-logs")
def from_logs(
    *,
    log: Annotated[
        Path,
        typer.Argument(help="The query log: text (a query a line), JSONL or CSV; gzip too."),
    ],
    corpus: o.GoldenCorpus,
    n: o.LogQueriesN = 300,
    out: Annotated[Path, o.out("The draft directory written (new or empty).")],
    seed: o.LogSeed = 0,
    pii: o.PiiOption = "drop",
    pii_pattern: o.PiiPattern = None,
    allocation: o.AllocationOption = "proportional",
    traffic_cuts: o.TrafficCuts = "0.5,0.8",
    reading: o.LogOptions,
    progress: o.Progress,
) -> None:
    """Sample a query log into a golden-set draft.

    Personal data is found first (--pii); queries are counted by normalized text,
    near-duplicates collapsed, split into traffic strata (head, torso, tail), and --n drawn,
    seeded.

    Writes the draft into --out: corpus.jsonl, queries.jsonl and manifest.json."""
    from evalret.commands.golden_logs import FromLogsRequest, from_logs_command, parse_cuts
    from evalret.report.golden_logs_view import render_from_logs

    request = FromLogsRequest(
        log=log,
        corpus=corpus,
        n=n,
        out=out,
        seed=seed,
        pii=pii,
        pii_patterns=tuple(pii_pattern or ()),
        allocation=allocation,
        cuts=parse_cuts(traffic_cuts),
        log_format=reading.log_format(),
    )
    result = from_logs_command(request, progress=progress)
    console.print(render_from_logs(result), highlight=False)


@_command(golden_app, "synth")
def golden_synth(
    *,
    corpus: o.GoldenCorpus,
    n: o.SynthN,
    out: Annotated[Path, o.out("The draft directory to write (new or empty).")],
    config: o.SynthConfigFile = None,
    log: o.SynthLog = None,
    dry_run: o.SynthDryRun = False,
    seed: o.SynthSeed = 0,
    reading: o.LogOptions,
    progress: o.Progress,
    settings: o.Overrides,
) -> ExitCode:
    """Write synthetic queries for a corpus with a chat model.

    Asks the chat model (synth.chat, else the judge: section) for queries about documents
    drawn to cover the corpus (k-means of the embeddings), few-shot from a log's queries; drops
    duplicates and queries the judge finds unanswerable, and tags (or drops) too-easy ones.
    Exit 3 when the endpoint fails for good (the answers got are cached: a rerun asks only the
    rest).

    Writes the draft into --out, with provenance on every query: corpus.jsonl, queries.jsonl
    and manifest.json."""
    from evalret.commands.golden_synth import SynthRequest, synth_command
    from evalret.report.synth_view import render_synth

    request = SynthRequest(
        corpus=corpus,
        n=n,
        out=out,
        config=config,
        log=log,
        log_format=reading.log_format(),
        dry_run=dry_run,
        seed=seed,
        overrides=settings.overrides(),
    )
    outcome = synth_command(request, progress=progress)
    console.print(render_synth(asdict(outcome)), highlight=False, soft_wrap=True)
    return ExitCode.OK


@_command(golden_app, "doctor")
def doctor(
    *,
    config: o.ConfigFile = None,
    log: o.DoctorLog = None,
    reading: o.LogOptions,
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
    """Check whether the golden set can catch a regression.

    Measures headroom (queries already perfect, per slice), discrimination (a zoo: the model,
    its quarter dimension, BM25, a random ranking, paired tests and the queries needed),
    edge-case coverage by query shape, and with --log the share of logged queries the set
    covers, the uncovered traffic clusters and the drift. Exit 1 when coverage is below
    gate.coverage.min.

    Writes doctor.json and doctor.html into --out (default: output.dir)."""
    from evalret.commands.golden_doctor import doctor_command
    from evalret.pipeline.doctor import DoctorSettings
    from evalret.report.doctor_view import render_doctor

    log_format = reading.log_format()
    done = doctor_command(
        config=config,
        settings=DoctorSettings(log, log_sample, seed, log_format),
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
