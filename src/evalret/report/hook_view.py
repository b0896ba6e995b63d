"""The short verdict `evalret hook` prints (the pre-commit hook ``evalret-gate``): one line of
verdict, the failed checks with their numbers, the settings changed since the baseline, and the
path of report.md. Plain text, every piece quoted from input escaped for the terminal."""

from __future__ import annotations

from pathlib import Path

from evalret.data.schema import GateSection
from evalret.report.escape import terminal
from evalret.report.gate_rows import check_rows, unjudged_line, unjudged_rows
from evalret.report.numbers import PLAIN
from evalret.report.verdict import verdict_words

# failed checks listed one per line before "... and N more (see report.md)"
MAX_LISTED = 20


def _failed_lines(gate: GateSection) -> list[str]:
    rows = check_rows(gate.failed, PLAIN)
    lines = [
        f"  {terminal(r.check.name)}: {r.baseline} -> {r.current} ({r.delta}; allowed {r.limit})"
        for r in rows[:MAX_LISTED]
    ]
    if len(rows) > MAX_LISTED:
        lines.append(f"  ... and {len(rows) - MAX_LISTED} more (see report.md)")
    return lines


def hook_lines(
    hook_id: str, gate: GateSection | None, baseline: Path, report_md: Path | None
) -> list[str]:
    """The hook's output, one string per line (already escaped for a terminal)."""
    where = terminal(str(baseline))
    if gate is None:  # no check configured: nothing was gated
        lines = [f"{hook_id}: PASS: no gate check is configured (baseline {where})"]
    else:
        words = verdict_words(gate)
        lines = [f"{hook_id}: {words.hook.format(where=where)}"]
        if words.state == "fail":
            lines += _failed_lines(gate)
        lines += [f"  {terminal(unjudged_line(r, PLAIN))}" for r in unjudged_rows(gate)]
        lines += [terminal(note) for note in gate.notes]
        lines += [
            terminal(f"changed: {key}: {change.baseline} -> {change.current}")
            for key, change in gate.changed.items()
        ]
    if report_md is not None:
        lines.append(f"report: {terminal(str(report_md))}")
    return lines
