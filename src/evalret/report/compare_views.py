"""Renderings of a comparison: terminal (rich), compare.md, the per-query disagreement list."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from evalret.data.schema import (
    CompareReport,
    MetricComparison,
    QueryExample,
    RankedDoc,
    SliceComparison,
)
from evalret.report.compare_rows import COMPARE_COLUMNS, compare_rows, judged_rows, snippet
from evalret.report.escape import markdown, markdown_code, terminal
from evalret.report.numbers import PLAIN, TYPOGRAPHIC, number
from evalret.report.verdict import compare_margin_lines

UNJUDGED_SHOWN = 3  # B's unjudged documents on the short terminal summary's line

VERDICT_STYLE = {"candidate": "bold green", "not a candidate": "bold red", "no difference": "bold"}


def _num(v: float, signed: bool = False, digits: int = 4) -> str:
    """A number of a comparison (terminal, compare.md and disagreements.md write one form)."""
    return number(v, signed, digits, medium=PLAIN)


def _delta_style(m: MetricComparison) -> str:
    if not m.significant:
        return ""
    return "green" if m.delta > 0 else "red"


def _primary_table(report: CompareReport, index: str) -> Table:
    primary = report.settings.primary
    t = Table(title=f"{index}: {primary}, B - A", title_justify="left")
    for col in COMPARE_COLUMNS:
        t.add_column(col, justify="left" if col == "slice" else "right", no_wrap=True)
    for row in compare_rows(report.indexes[index], primary, PLAIN):
        t.add_row(
            Text(terminal(row.name)),
            row.n,
            row.a,
            row.b,
            Text(row.delta, style=_delta_style(row.metric)),
            row.ci,
            row.p_randomization,
            row.p_t_test,
            row.wtl,
            row.mde,
        )
    return t


def _overview_table(report: CompareReport, index: str) -> Table:
    slices = report.indexes[index]
    first = next(iter(slices.values()))
    t = Table(
        title=f"{index}: every metric, B - A (colour: significant after "
        f"{report.settings.correction}), rank drift",
        title_justify="left",
    )
    t.add_column("slice", no_wrap=True)
    for m in first.metrics:
        t.add_column(m, justify="right", no_wrap=True)
    for d in first.drift:
        t.add_column(d, justify="right", no_wrap=True)
    for name, sc in slices.items():
        t.add_row(
            Text(terminal(name)),
            *(Text(_num(m.delta, True), style=_delta_style(m)) for m in sc.metrics.values()),
            *(_num(v, digits=3) for v in sc.drift.values()),
        )
    return t


def judged_table(report: CompareReport, index: str) -> Table | None:
    """judged@k of A beside B on every slice of ``index``; None without judged figures."""
    key, rows = judged_rows(report.indexes[index], PLAIN)
    if key is None:
        return None
    t = Table(title=f"{terminal(index)}: {key}, A beside B", title_justify="left")
    for col in ("slice", "A", "B", "B - A"):
        t.add_column(col, justify="left" if col == "slice" else "right", no_wrap=True)
    for row in rows:
        t.add_row(Text(terminal(row.name)), row.a, row.b, row.delta)
    return t


def unjudged_docs_parts(report: CompareReport) -> list[RenderableType]:
    """B's most frequent unjudged documents: id, how many of B's top-k lists hold it, the start
    of its text; nothing when none were listed."""
    u = report.unjudged
    if u is None or not u.documents:
        return []
    parts: list[RenderableType] = [
        Text(
            f"B's most frequent unjudged documents ({terminal(u.index)}, top {u.k} of "
            f"{u.n_queries} queries):",
            style="bold",
        )
    ]
    parts += [
        Text(
            f"  {terminal(d.id)}  in {d.lists} list{'s' if d.lists != 1 else ''}  "
            f"{terminal(snippet(d))}"
        )
        for d in u.documents
    ]
    return parts


def unjudged_docs_line(report: CompareReport, limit: int) -> Text | None:
    """B's ``limit`` most frequent unjudged documents on one line, without their texts (the
    short summary; compare.md, report.html and --verbose list them with a snippet)."""
    u = report.unjudged
    if u is None or not u.documents:
        return None
    docs = ", ".join(
        f"{terminal(d.id)} in {d.lists} list{'s' if d.lists != 1 else ''}"
        for d in u.documents[:limit]
    )
    return Text(
        f"B's most frequent unjudged documents ({terminal(u.index)}, top {u.k}): {docs}"
        + (" (more: compare.md)" if len(u.documents) > limit else "")
    )


MARGINS_SHOWN = 10  # margin lines the terminal's short summary shows (compare.md: all)


def margin_parts(report: CompareReport, shown: int | None = None) -> list[RenderableType]:
    """With --margin, B - A on the primary metric against the margin, per index and slice (the
    first ``shown``; None: all)."""
    lines = compare_margin_lines(report, PLAIN)
    if not lines:
        return []
    parts: list[RenderableType] = [Text(""), Text("margins (B - A):", style="bold")]
    parts += [Text(f"  {terminal(line)}") for line in lines[:shown]]
    if shown is not None and len(lines) > shown:
        parts.append(Text(f"  ... and {len(lines) - shown} more (compare.md)", style="dim"))
    return parts


def render_compare(report: CompareReport, written: list[str]) -> Group:
    a, b = report.a, report.b
    parts: list[RenderableType] = [
        Text.assemble(("A ", "bold"), terminal(f"{a.label} ({a.model.get('source')})")),
        Text.assemble(("B ", "bold"), terminal(f"{b.label} ({b.model.get('source')})")),
    ]
    parts += [
        Text(terminal(f"changed: {k}: {v.baseline} -> {v.current}"))
        for k, v in report.changed.items()
    ]
    for index in report.indexes:
        parts += [Text(""), _primary_table(report, index), _overview_table(report, index)]
        judged = judged_table(report, index)
        if judged is not None:
            parts.append(judged)
    unjudged = unjudged_docs_parts(report)
    if unjudged:
        parts += [Text(""), *unjudged]
    parts += [Text(""), Text("diagnosis", style="bold")]
    parts += [
        Text(f"  {terminal(name)}: {terminal(sc.diagnosis)}")
        for name, sc in report.indexes[report.primary_index].items()
    ]
    parts += [Text(f"  {terminal(n)}") for n in report.notes]
    parts += margin_parts(report)
    for title, examples in (
        ("biggest losses of B", report.losers),
        ("biggest gains of B", report.gainers),
    ):
        if examples:
            parts += [Text(""), Text(f"{title} ({report.settings.primary}):", style="bold")]
            parts += [
                Text(f"  {_num(e.delta, True, 3)}  {terminal(e.query_id)}  {terminal(e.text[:90])}")
                for e in examples
            ]
    v = report.verdict
    parts += [
        Text(""),
        Text(
            f"VERDICT: {v.status}: {terminal(v.reason)}", style=VERDICT_STYLE.get(v.status, "bold")
        ),
    ]
    parts += [Text(f"  {terminal(x)}", style="red") for x in v.blocking[1:6]]
    if written:
        parts += [Text(""), Text("report files:", style="bold")]
        parts += [Text(f"  {terminal(p)}") for p in written]
    return Group(*parts)


def _judged_lines(slices: dict[str, SliceComparison]) -> list[str]:
    """judged@k of A beside B per slice (compare.md); [] without judged figures."""
    key, rows = judged_rows(slices, PLAIN)
    if key is None:
        return []
    lines = [
        "",
        f"Share of the top k judged ({key}), A beside B:",
        "",
        "| slice | A | B | B − A |",
        "|" + " --- |" * 4,
    ]
    lines += [f"| {markdown(r.name)} | {r.a} | {r.b} | {r.delta} |" for r in rows]
    return lines


def _unjudged_lines(report: CompareReport) -> list[str]:
    """B's most frequent unjudged documents (compare.md); [] when none were listed."""
    u = report.unjudged
    if u is None or not u.documents:
        return []
    lines = [
        "",
        f"### B's most frequent unjudged documents ({markdown(u.index)}, top {u.k})",
        "",
        f"| document | in B's top-{u.k} lists (of {u.n_queries}) | text |",
        "|" + " --- |" * 3,
    ]
    lines += [
        f"| {markdown_code(d.id)} | {d.lists} | {markdown(snippet(d))} |" for d in u.documents
    ]
    return lines


def render_compare_markdown(report: CompareReport) -> str:
    v, primary = report.verdict, report.settings.primary
    icon = {"candidate": "✅", "not a candidate": "❌", "no difference": "⚪"}.get(v.status, "")
    lines = [f"## evalret compare: {icon} {v.status}", "", markdown(v.reason), ""]
    lines += [
        f"- {side}: {markdown_code(str(r.label))} ({markdown(str(r.model.get('source')))})"
        for side, r in (("A", report.a), ("B", report.b))
    ]
    lines += [
        f"- changed: {markdown_code(k)}: {markdown_code(str(c.baseline))} → "
        f"{markdown_code(str(c.current))}"
        for k, c in report.changed.items()
    ]
    if v.blocking:
        lines += ["", "Blocking:", "", *(f"- {markdown(x)}" for x in v.blocking)]
    for index, slices in report.indexes.items():
        lines += [
            "",
            f"### {index}: {primary}",
            "",
            "| slice | n | A | B | delta | 95% CI | p rand. (adj.) | p t-test (adj.) | W/T/L "
            "| MDE | diagnosis |",
            "|" + " --- |" * 11,
        ]
        for row in compare_rows(slices, primary, PLAIN):
            delta = f"**{row.delta}**" if row.metric.significant else row.delta
            lines.append(
                f"| {markdown(row.name)} | {row.n} | {row.a} | {row.b} | {delta} | {row.ci} | "
                f"{row.p_randomization} | {row.p_t_test} | {row.wtl} | {row.mde} | "
                f"{markdown(row.diagnosis)} |"
            )
        first = next(iter(slices.values()))
        lines += [
            "",
            f"Every metric (B − A, bold: significant after "
            f"{report.settings.correction}) and rank drift:",
            "",
            "| slice | " + " | ".join([*first.metrics, *first.drift]) + " |",
            "|" + " --- |" * (1 + len(first.metrics) + len(first.drift)),
        ]
        for name, sc in slices.items():
            cells = [
                f"**{_num(m.delta, True)}**" if m.significant else _num(m.delta, True)
                for m in sc.metrics.values()
            ]
            cells += [_num(d, digits=3) for d in sc.drift.values()]
            lines.append(f"| {markdown(name)} | " + " | ".join(cells) + " |")
        lines += _judged_lines(slices)
    lines += _unjudged_lines(report)
    margins = compare_margin_lines(report, TYPOGRAPHIC)
    if margins:
        s = report.settings
        lines += ["", f"### Margins (B - A on {s.primary}, all metrics in compare.json)", ""]
        lines += [f"- {markdown(line)}" for line in margins]
    if report.notes:
        lines += ["", *(f"- {markdown(n)}" for n in report.notes)]
    lines += ["", "Per-query disagreements: `disagreements.md`."]
    return "\n".join(lines) + "\n"


def _doc_lines(docs: list[RankedDoc]) -> list[str]:
    out = []
    for rank, d in enumerate(docs, start=1):
        grade = "unjudged" if d.grade is None else f"grade {d.grade}"
        out.append(f"  {rank}. {markdown_code(d.id)} ({grade}) {markdown(d.text[:120])}")
    return out


def _example_lines(e: QueryExample) -> list[str]:
    lines = [
        f"#### {markdown(e.query_id)}: {markdown(e.text) if e.text else '(text not available)'}",
        "",
        f"A {_num(e.a)} → B {_num(e.b)} ({_num(e.delta, True)})",
        "",
        "Relevant:",
    ]
    lines += [
        f"- {markdown_code(d.id)} grade {d.grade}: {markdown(d.text[:120])}" for d in e.relevant
    ] or ["- (unknown)"]
    lines += [
        "",
        "A's top results:",
        *_doc_lines(e.a_top),
        "",
        "B's top results:",
        *_doc_lines(e.b_top),
        "",
    ]
    return lines


def render_disagreements(report: CompareReport) -> str:
    primary = report.settings.primary
    lines = [f"# Per-query disagreements ({report.primary_index}, {primary})", ""]
    for title, examples in (
        ("Biggest losses of B", report.losers),
        ("Biggest gains of B", report.gainers),
    ):
        lines += [f"## {title}", ""]
        if not examples:
            lines += ["None.", ""]
        for e in examples:
            lines += _example_lines(e)
    return "\n".join(lines)
