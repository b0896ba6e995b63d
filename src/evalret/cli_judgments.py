"""`evalret judgments ...`: annotators' agreement and merging their grades into a golden set
(issue #17). The same rules as ``evalret.cli``: options from ``evalret.cli_options``, one function
of ``evalret.commands`` per command, imported inside it; rendering from ``evalret.report``.
Registered on the main app by ``cli.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from evalret import cli_options as o
from evalret.cli_runtime import command as _command
from evalret.cli_runtime import console, subgroup

judgments_app = subgroup("judgments", "Measure annotators' agreement and merge their grades.")


@_command(judgments_app, "agreement")
def judgments_agreement(
    *,
    files: o.AnnotationFiles,
    scale: o.Scale = "0-3",
    top: o.Top = 10,
    out: Annotated[Path | None, o.out("Write the figures here as JSON.")] = None,
    old_json: o.OldAgreementJson = None,
) -> None:
    """Measure how far annotators agree.

    Cohen's and weighted kappa per pair, Fleiss' kappa and Krippendorff's alpha over all, raw
    agreement, gold accuracy, the widest disagreements. Writes them as JSON to --out."""
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
    """Merge annotators' grades into a new golden set.

    Grades merge by --policy; items that need adjudication are listed apart, not merged. Writes
    into --out a copy of the golden set --into with the merged grades (a native set's
    queries.jsonl; a BEIR set's qrels/SPLIT.tsv and judgments.sources.jsonl), and
    disputed.jsonl."""
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
