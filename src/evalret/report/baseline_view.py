"""`evalret baseline show`: what a baseline holds, as a summary (what produced it and when, the
golden set, the headline metrics of every index on slice ``all``) or, verbose, every setting and
every slice of every index. It states no verdict of its own: a baseline is the reference later
runs are gated against (``report.verdict.recorded_verdict`` says what the run that saved it found).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from evalret.data.baseline import label_sources_of
from evalret.data.schema import RunReport
from evalret.report.escape import terminal
from evalret.report.terminal import index_table
from evalret.report.terminal_brief import headline_table
from evalret.report.verdict import recorded_verdict

VERBOSE_HINT = "--verbose: every setting in full, and every slice and metric of each index"
COMMIT_SHOWN = 12  # characters of a commit shown in the summary


def saved_text(report: RunReport) -> str:
    """Who saved the baseline, when and at which commit, as far as it records them (a baseline
    of an older evalret records neither time nor commit)."""
    f = report.fingerprint
    by = f"evalret {f.evalret_version} (report schema {report.schema_version})"
    s = report.saved
    if s is None:
        return f"by {by}; when and at which commit not recorded (saved by an older evalret)"
    commit = f"commit {s.commit[:COMMIT_SHOWN]}" if s.commit else "no git commit recorded"
    return f"{s.at} by {by}, {commit}"


def model_text(model: dict[str, Any], dim: int) -> str:
    """The model in a few words: its name (and source when it differs), the vectors' dimension,
    and a truncation; the full settings are for --verbose."""
    name = str(model.get("name") or "")
    source = str(model.get("source") or "")
    if not name:  # run files, a python retriever: no model of ours; the source says why
        return source or _pairs(model) or "none"
    # the source names the model as loaded ("all-MiniLM-L6-v2 (packaged)", a path, a hub id)
    shown = source if source.startswith(name) else f"{name} ({source})" if source else name
    truncated = model.get("truncate_dim")
    return f"{shown}, {dim} dimensions" + (" (truncated)" if truncated else "")


def _pairs(d: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in d.items())


def _summary_lines(report: RunReport, path: Path) -> list[tuple[str, str]]:
    f, g = report.fingerprint, report.golden_set
    any_index = next(iter(report.indexes.values()), None)
    slices = list(any_index.slices.values()) if any_index is not None else []
    small = sum(1 for s in slices if s.reliability == "unreliable")
    under = f" ({small} under 200 queries: only large changes show)" if small else ""
    indexes = report.indexes.items()
    return [
        ("baseline", str(path)),
        ("saved", saved_text(report)),
        ("fingerprint", f"{f.digest} (golden set, model, indexes, metrics)"),
        ("model", model_text(f.model, report.embedding.dim)),
        (
            "golden set",
            f"{g.source} ({g.format}): {g.n_documents} documents, {g.n_queries_evaluated} "
            f"queries evaluated, {g.n_judgments} judgments; {len(slices)} slices{under}",
        ),
        ("indexes", ", ".join(f"{k} ({r.params.get('type', k)})" for k, r in indexes)),
        ("label sources", ", ".join(f"{k} {n}" for k, n in label_sources_of(report).items())),
    ]


def _verbose_lines(report: RunReport, path: Path) -> list[tuple[str, str]]:
    f, g = report.fingerprint, report.golden_set
    return [
        ("baseline", str(path)),
        ("saved", saved_text(report)),
        ("fingerprint", f.digest),
        (
            "golden set",
            f"{g.source} ({g.format}): {g.n_documents} documents, "
            f"{g.n_queries_evaluated} queries, fingerprint {g.fingerprint[:16]}",
        ),
        ("model", _pairs(f.model)),
        ("indexes", "; ".join(f"{k}: {v}" for k, v in f.indexes.items())),
        ("metrics", _pairs(f.metrics)),
        ("label sources", ", ".join(f"{k} {n}" for k, n in label_sources_of(report).items())),
    ]


def print_baseline(console: Console, report: RunReport, path: Path, verbose: bool = False) -> None:
    """What a baseline holds: a summary, then the headline metrics of each index on slice all
    (``verbose``: every setting, then every slice and metric of each index), then what the run
    that saved it found, which is no verdict."""
    lines = _verbose_lines(report, path) if verbose else _summary_lines(report, path)
    for label, value in lines:
        console.print(Text.assemble((f"{label}: ", "bold"), terminal(value)))
    console.print(Text(""))
    if verbose:
        for index in report.indexes:
            console.print(index_table(report, index))
            console.print(Text(""))
    elif report.indexes:
        console.print(headline_table(report))
        console.print(Text(VERBOSE_HINT, style="dim"))
        console.print(Text(""))
    console.print(Text(terminal(recorded_verdict(report.gate))))
