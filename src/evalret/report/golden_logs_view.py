"""Terminal view of `evalret golden from-logs`: the counts at each step, personal data found by
kind, the traffic strata and what was drawn from each, and where the draft went. No query's text
is shown."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from evalret.core.querylog import FromLogsResult
from evalret.report.escape import terminal

PII_VERB = {"drop": "dropped", "mask": "masked", "keep": "kept as logged"}


def _pii_line(r: FromLogsResult) -> Text:
    if not r.pii_queries:
        return Text("personal data: none found")
    kinds = ", ".join(f"{k} {n:,}" for k, n in r.pii_by_kind.items())
    line = Text(f"personal data: {r.pii_queries:,} queries {PII_VERB[r.pii_mode]} ({kinds})")
    if r.pii_mode == "keep":
        line.stylize("bold yellow")
    return line


def _strata_table(r: FromLogsResult) -> Table:
    table = Table(title="traffic strata", title_justify="left")
    for col in ("stratum", "queries", "traffic", "share", "drawn"):
        table.add_column(col, justify="left" if col == "stratum" else "right")
    total = sum(s.traffic for s in r.strata) or 1
    for s in r.strata:
        share = f"{s.traffic / total:.1%}"
        table.add_row(s.name, f"{s.queries:,}", f"{s.traffic:,}", share, f"{s.drawn:,}")
    return table


def render_from_logs(r: FromLogsResult) -> Group:
    """The summary of one `golden from-logs` run."""
    skipped = f", {r.skipped:,} bad lines skipped" if r.skipped else ""
    parts: list[RenderableType] = [
        Text(f"read {r.lines:,} logged queries ({r.log_format}{skipped})"),
        _pii_line(r),
        Text(
            f"{r.distinct:,} distinct queries (normalized), {r.collapsed:,} after collapsing "
            "near-duplicates"
            + (
                f"; {r.no_alphanumeric:,} without a letter or digit left out"
                if r.no_alphanumeric
                else ""
            )
        ),
        _strata_table(r),
        Text(
            "shapes drawn: " + ", ".join(f"{k} {n:,}" for k, n in r.shapes.items()),
            style="dim",
        ),
    ]
    if r.written < r.requested:
        parts.append(
            Text(
                f"note: the log holds {r.collapsed:,} distinct queries, fewer than --n "
                f"{r.requested:,}: all of them are drawn",
                style="yellow",
            )
        )
    if r.pii_mode == "keep" and r.pii_queries:
        parts.append(
            Text(
                f"warning: {r.pii_queries:,} queries with personal data kept (--pii keep): the "
                "draft holds personal data",
                style="bold yellow",
            )
        )
    parts.append(
        Text(
            f"wrote {r.written:,} queries and {r.documents:,} documents to "
            f"{terminal(str(r.out))}; next: evalret golden judge {terminal(str(r.out))} -c CONFIG"
        )
    )
    return Group(*parts)
