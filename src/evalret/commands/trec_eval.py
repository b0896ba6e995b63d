"""`evalret trec_eval` and `evalret score --trec-eval-output`: trec_eval's command line and its
text, from evalret's readers and ``core.treceval`` (trec_eval 10's measures, byte for byte its
output). The flags taken are trec_eval's ``-q -m -c -l -n -J -N -M``; the others (``-D -R -T
-o -Z``, and ``-h -v`` which evalret's ``--help`` and ``--version`` replace) are refused as
unknown options (exit 2)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from evalret.core.treceval import MeasureError, Settings, select_measures, trec_eval_text
from evalret.data.runfile import read_run, run_tag
from evalret.data.trecqrels import read_trec_qrels
from evalret.errors import InputError
from evalret.pipeline.score import run_indexes, utf8_path

ALL_DOCS = 2147483647  # trec_eval's MAXLONG: no -M


def trec_eval_command(
    *, qrels: Path, run: Path, settings: Settings, measures: Sequence[str] = ()
) -> str:
    """What ``trec_eval [settings] -m measures... QRELS RUN`` prints. InputError (exit 2) for
    an unreadable file, a measure trec_eval refuses, a query trec_eval cannot score."""
    utf8_path(qrels, "qrels")
    utf8_path(run, "run")
    try:
        select_measures(measures)  # a bad -m is named before any file is read
    except MeasureError as e:
        raise InputError(f"-m: {e}") from None
    judged = read_trec_qrels(qrels)
    depth = settings.max_docs if settings.max_docs < ALL_DOCS else ALL_DOCS
    columns = read_run(run, "trec", depth)
    try:
        return trec_eval_text(judged, columns, run_tag(run), settings, measures)
    except MeasureError as e:
        raise InputError(f"trec_eval {qrels} {run}: {e}") from None


def score_as_trec_eval(
    *, golden: Path, runs: Sequence[str], relevance_level: int, refused: Mapping[str, object]
) -> str:
    """`evalret score --trec-eval-output`: for each run file in turn, what ``trec_eval -c -q -m
    all_trec -l relevance_level GOLDEN RUN`` prints (GOLDEN a TREC qrels file). ``refused``: the
    score options that this output does not take, by flag, as given (any set: exit 2)."""
    for flag, given in refused.items():
        if given:
            raise InputError(
                f"--trec-eval-output prints trec_eval's text and takes no {flag}: for other "
                "measures use evalret trec_eval -m"
            )
    if golden.is_dir():
        raise InputError(
            f"--trec-eval-output reads a TREC qrels file, and {golden} is a directory: give its "
            "qrels file"
        )
    settings = Settings(relevance_level=relevance_level, average_complete=True, per_query=True)
    return "".join(
        trec_eval_command(qrels=golden, run=path, settings=settings, measures=["all_trec"])
        for path in run_indexes(runs).values()
    )
