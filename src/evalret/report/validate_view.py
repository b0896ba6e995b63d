"""Terminal rendering of `evalret validate`: errors first (file:line), then warnings, then the
summary tables and the verdict."""

from __future__ import annotations

from collections import Counter

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from evalret.data.validation import RELIABILITY_MEANING, Validation
from evalret.errors import Problem
from evalret.report.escape import terminal

SHOWN_PER_CODE = 50  # per kind of problem; --json lists every one
RELIABILITY_STYLE = {"unreliable": "yellow", "minimal": "", "production": "green", "high": "green"}


def _problems(title: str, problems: list[Problem], style: str) -> list[RenderableType]:
    if not problems:
        return []
    counts = Counter(p.code for p in problems)
    summary = ", ".join(f"{n} {code}" for code, n in counts.most_common())
    parts: list[RenderableType] = [Text(f"{title} ({len(problems)}): {summary}", style=style)]
    shown: Counter[str | None] = Counter()
    hidden: Counter[str | None] = Counter()
    for p in problems:
        if shown[p.code] < SHOWN_PER_CODE:
            shown[p.code] += 1
            parts.append(Text.assemble("  ", (f"[{p.code}] ", "dim"), terminal(str(p))))
        else:
            hidden[p.code] += 1
    for code, n in hidden.items():
        parts.append(Text(f"  ... and {n} more {code} (--json lists all)", style="dim"))
    return parts


def _summary_table(v: Validation) -> Table | None:
    s = v.summary
    if s is None:
        return None
    # the title on one line, however long the path (a table's title wraps to the table's width)
    title = Text(f"golden set {terminal(v.source)} ({s.format})", no_wrap=True, overflow="ignore")
    table = Table(title=title, title_justify="left")
    table.add_column("", style="bold", no_wrap=True)
    table.add_column("", overflow="fold")
    table.show_header = False
    rel = s.relevant_per_query
    rows = [
        ("documents", f"{s.n_documents:,}"),
        ("queries in the files", f"{s.n_queries:,}"),
        ("queries evaluated (judged)", f"{s.n_evaluated:,}"),
        ("  with a relevant document", f"{s.n_scored:,}"),
        ("judgments", f"{s.n_judgments:,}"),
        ("grades", ", ".join(f"{g}: {n:,}" for g, n in s.grades.items()) or "-"),
        (
            "relevant docs per query",
            (
                f"min {rel['min']:g}, median {rel['median']:g}, mean {rel['mean']:.2f}, "
                f"max {rel['max']:g}"
            )
            if rel
            else "-",
        ),
        (
            "  queries by relevant docs",
            ", ".join(f"{k}: {n}" for k, n in s.relevant_histogram.items() if n) or "-",
        ),
        ("tags", ", ".join(f"{terminal(t)}: {n}" for t, n in s.tags.items()) or "none"),
        ("queries with a frequency", f"{s.n_with_frequency:,}"),
    ]
    for k, val in rows:
        table.add_row(k, Text(val))
    return table


def _slice_table(v: Validation) -> Table | None:
    if not v.slices:
        return None
    m = v.mde
    table = Table(
        title=(
            f"slices: size, reliability, minimum detectable {m['metric']} difference "
            f"(two-sided, alpha {m['alpha']}, power {m['power']})"
        ),
        title_justify="left",
    )
    for col in ("slice", "kind", "n", "reliability", "sd", "sd from", "MDE"):
        table.add_column(col, justify="right" if col in ("n", "sd", "MDE") else "left")
    for s in v.slices:
        style = RELIABILITY_STYLE.get(s.reliability, "")
        table.add_row(
            Text(terminal(s.name)),
            s.kind,
            str(s.n_queries),
            Text(s.reliability, style=style),
            f"{s.sd:.3f}",
            Text(terminal(s.sd_source)),
            "-" if s.mde is None else f"{s.mde:.3f}",
        )
    return table


def render_validation(v: Validation) -> Group:
    parts: list[RenderableType] = []
    parts += _problems("Errors", v.errors, "bold red")
    parts += _problems("Warnings", v.warnings, "bold yellow")
    for table in (_summary_table(v), _slice_table(v)):
        if table is not None:
            parts += [Text(""), table]
    if v.slices:
        labels = dict.fromkeys(s.reliability for s in v.slices)
        legend = "; ".join(f"{k}: {RELIABILITY_MEANING[k]}" for k in labels)
        parts.append(Text(f"reliability by queries per slice: {legend}", style="dim"))
        if v.mde.get("report") is None:
            parts.append(
                Text(
                    f"sd assumed {v.mde['assumed_sd']} (per-query nDCG@10 sd on real sets); "
                    "pass --report REPORT.json for this set's own",
                    style="dim",
                )
            )
    parts.append(Text(""))
    if v.draft is not None:
        parts.append(
            Text(
                f"a draft: {v.draft:,} queries, none judged yet; next: evalret golden judge "
                f"{terminal(v.source)} -c CONFIG"
            )
        )
    if v.errors:
        parts.append(
            Text(
                f"INVALID: {len(v.errors)} error(s), {len(v.warnings)} warning(s)",
                style="bold red",
            )
        )
    else:
        parts.append(
            Text(
                f"VALID: no errors, {len(v.warnings)} warning(s)",
                style="bold green" if not v.warnings else "bold yellow",
            )
        )
    return Group(*parts)
