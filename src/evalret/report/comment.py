"""comment.md: the one pull-request comment of a run, which the composite action posts and then
updates in place on later pushes (found by ``MARKER``, its first line).

It leads with the verdict, then the failed checks, then the biggest per-query losses against the
baseline, then the whole of report.md folded in a ``<details>`` block. It stays under
``BUDGET`` characters, well inside GitHub's 65,536-character limit on a comment: failed checks past
what fits are counted, not listed, and report.md is left out when it does not fit, each with a
note pointing to the reports (``link``: the workflow run that holds them as an artifact).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from evalret.data.schema import GateCheck, QueryExample, RunReport
from evalret.report.escape import markdown, markdown_code
from evalret.report.gate_rows import DEFAULT_HINT, JudgeHint, check_rows
from evalret.report.markdown import (
    loss_lines,
    proof_lines,
    threshold_lines,
    unjudged_lines,
    verdict_heading,
)
from evalret.report.numbers import TYPOGRAPHIC, number

MARKER = "<!-- evalret-comment -->"  # hidden in the rendered comment; the action finds it
# the last line, hidden too: the run that wrote the comment (the action posts it only when the
# id is the one it gave the run, so a comment.md left by an earlier run is never posted)
RUN_MARKER = "<!-- evalret-run: {} -->"
GITHUB_LIMIT = 65_536  # characters GitHub accepts in one comment body
BUDGET = 60_000  # what comment.md holds at most: a margin under GITHUB_LIMIT
LOSSES_SHOWN = 5
CHECKS_HEADER = "| check | n | baseline | current | delta | threshold | p (adj.) |"
CELL_CHARS = 120  # characters of an untrusted cell (check name, query id, query text) shown
# a link the comment may carry: http(s), nothing that could end the Markdown link or start HTML
_SAFE_URL = re.compile(r"https?://[^\s()<>\[\]\"'`\\]+")


@dataclass(frozen=True)
class Losses:
    """The queries of ``index`` that lost most on ``metric`` against the baseline (at most
    LOSSES_SHOWN, biggest loss first; empty when no query lost)."""

    index: str
    metric: str
    examples: list[QueryExample]


def _cell(text: str) -> str:
    """Untrusted text for a table cell: shortened to CELL_CHARS, then escaped."""
    short = text if len(text) <= CELL_CHARS else text[: CELL_CHARS - 1] + "…"
    return markdown(short)


def _num(v: float | None, signed: bool = False) -> str:
    return number(v, signed, medium=TYPOGRAPHIC)


def _reports(link: str | None) -> str:
    """Where the full reports are: the run's artifact (linked when ``link`` is a safe URL)."""
    if link is not None and _SAFE_URL.fullmatch(link):
        return f"the reports artifact of [this workflow run]({link})"
    return "the reports artifact of this workflow run (`report.md`, `report.html`)"


PROOF_SHOWN = 5  # margin and close-check lines the comment lists of each (report.md: all)


def _head(report: RunReport) -> list[str]:
    """The marker, the verdict and what the gate compared against."""
    gate = report.gate
    if gate is None:
        return [MARKER, "## evalret: no gate configured", ""]
    lines = [MARKER, verdict_heading(gate), "", *loss_lines(gate)]
    if gate.baseline:
        lines += [f"Baseline {markdown_code(gate.baseline)}.", ""]
    if gate.changed:
        lines += [
            f"- changed: {markdown_code(k)}: {markdown_code(str(c.baseline))} → "
            f"{markdown_code(str(c.current))}"
            for k, c in gate.changed.items()
        ]
        lines.append("")
    proof = proof_lines(gate, PROOF_SHOWN)
    return lines + threshold_lines(gate) + proof[1:] + ([""] if proof else [])


def _failed_rows(checks: list[GateCheck]) -> list[str]:
    return [
        f"| {_cell(row.check.name)} | {row.check.n_queries} | {row.baseline} | {row.current} | "
        f"{row.delta} | {row.limit} | {row.p} |"
        for row in check_rows(checks, TYPOGRAPHIC)
    ]


def _losses_lines(report: RunReport, losses: Losses | None) -> list[str]:
    if report.gate is None or not report.gate.baseline:
        return []
    if losses is None:
        return ["### Biggest per-query losses", "", "No per-query scores to compare with.", ""]
    title = (
        f"### Biggest per-query losses ({markdown(losses.index)}, {losses.metric}, "
        "against the baseline)"
    )
    if not losses.examples:
        return [title, "", "No query scores lower than in the baseline.", ""]
    lines = [title, "", "| query | baseline | current | delta | text |", "|" + " --- |" * 5]
    lines += [
        f"| {_cell(e.query_id)} | {_num(e.a)} | {_num(e.b)} | {_num(e.delta, True)} | "
        f"{_cell(e.text)} |"
        for e in losses.examples[:LOSSES_SHOWN]
    ]
    return [*lines, ""]


def _details(report_md: str) -> list[str]:
    return [
        "<details><summary>Full report (report.md)</summary>",
        "",
        report_md.rstrip("\n"),
        "",
        "</details>",
        "",
    ]


def _size(lines: list[str]) -> int:
    return sum(len(line) + 1 for line in lines)


def _fit(text: str, budget: int, note: str) -> str:
    """``text`` if it fits in ``budget`` characters, else its first lines that fit with
    ``note`` after them (a last guard: the sections are sized to fit before this)."""
    if len(text) <= budget:
        return text
    cut = text.rfind("\n", 0, max(0, budget - len(note) - 2)) + 1
    return text[:cut] + "\n" + note + "\n"


def render_comment(
    report: RunReport,
    report_md: str,
    losses: Losses | None = None,
    link: str | None = None,
    budget: int = BUDGET,
    hint: JudgeHint = DEFAULT_HINT,
) -> str:
    """The comment: ``MARKER``, the verdict, the failed checks, the inconclusive ones with the
    command that would judge them (``hint``: the run's report.json and config words), the
    biggest per-query ``losses``, then ``report_md`` folded, and the report's run id
    (``RUN_MARKER``) last; at most ``budget`` characters (see the module)."""
    if report.run_id is not None:
        run_line = RUN_MARKER.format(report.run_id) + "\n"
        unmarked = report.model_copy(update={"run_id": None})
        return (
            render_comment(unmarked, report_md, losses, link, budget - len(run_line), hint)
            + run_line
        )
    reports = _reports(link)
    head, tail, footer = _head(report), _losses_lines(report, losses), [f"Full reports: {reports}."]
    if report.gate is not None:
        tail = unjudged_lines(report.gate, hint) + tail
    failed = report.gate.failed if report.gate is not None else []
    rows = _failed_rows(failed)
    table = [
        "| check | n | baseline | current | delta | threshold | p (adj.) |",
        "|" + " --- |" * 7,
    ]
    more = f"… and {len(rows)} more failed checks, in {reports}."  # the longest it can be
    room = budget - _size([*head, *tail, *footer, *table, more, more, "", "", ""])
    shown = 0
    while shown < len(rows) and _size(rows[: shown + 1]) <= room:
        shown += 1
    checks = []
    if failed:
        checks = [f"### Failed checks ({len(failed)})", "", *table, *rows[:shown], ""]
        if shown < len(rows):
            checks += [f"… and {len(rows) - shown} more failed checks, in {reports}.", ""]
    body = head + checks + tail
    details = _details(report_md)
    if _size(body) + _size(details) + _size(footer) <= budget:
        body += details
    else:
        body += [f"The full report is too long for a comment: see report.md in {reports}.", ""]
    return _fit("\n".join(body + footer) + "\n", budget, f"(truncated: see {reports})")
