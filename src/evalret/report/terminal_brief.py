"""The short terminal summary of a run and of a comparison, the default of `evalret run`, `score`
and `compare` (``--verbose`` prints every table instead).

A run: the verdict first (with the baseline and what changed since it), what was evaluated, one
table of every index on the ``all`` slice with the headline metrics and their intervals, the
checks that failed or moved, one line per approximate index, one line of embedding health, and
the files written. A comparison: the verdict, A and B, one row per index on ``all``, the slices
of the primary index whose primary metric moved significantly, and the biggest losses and gains.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from evalret.data.schema import AnnSection, CompareReport, GateCheck, GateSection, RunReport
from evalret.report.compare_rows import compare_rows, judged_rows
from evalret.report.compare_views import (
    MARGINS_SHOWN,
    UNJUDGED_SHOWN,
    VERDICT_STYLE,
    margin_parts,
    render_compare,
    unjudged_docs_line,
)
from evalret.report.escape import terminal
from evalret.report.filter_view import selectivity_line
from evalret.report.gate_rows import allowed_change, check_rows, result_word
from evalret.report.numbers import PLAIN, number
from evalret.report.rerank_view import rerank_line
from evalret.report.run_notes import (
    cost_text,
    interval_lines,
    latency_text,
    shown_judged,
    stability_text,
)
from evalret.report.terminal import (
    UNRELIABLE_NOTE,
    caveat_lines,
    changed_lines,
    context_parts,
    hint_of,
    labels_parts,
    loss_text,
    metric_cell,
    render_run,
    unjudged_parts,
    verdict_text,
)
from evalret.report.verdict import check_note

HEADLINE_METRICS = 5  # the first metrics of the config's list shown (plus any a check reads)
CHECKS_SHOWN = 10  # rows of the failed-or-moved checks table; report.md lists them all
LOSSES_SHOWN = 5  # per-query losses of B in a comparison
GAINS_SHOWN = 3
BLOCKING_SHOWN = 3  # blocking reasons under a comparison's verdict, after the first
RUN_HINT = (
    "--verbose: every table (each slice of each index, ANN, lexical, beyond accuracy, health)"
)
COMPARE_HINT = "--verbose: every table (each slice of each index, every metric, rank drift)"


# --- a run -------------------------------------------------------------------------------------


def _all_slice(names: list[str]) -> str:
    """The ``all`` slice, else the first (a report always lists ``all`` first)."""
    return "all" if "all" in names else names[0]


def headline_metrics(report: RunReport, index: str) -> list[str]:
    """The first HEADLINE_METRICS metrics of ``index``, then any other a gate check reads."""
    metrics = list(next(iter(report.indexes[index].slices.values())).metrics)
    shown = metrics[:HEADLINE_METRICS]
    gated = {c.metric for c in report.gate.checks} if report.gate is not None else set()
    return shown + [m for m in metrics[HEADLINE_METRICS:] if m in gated]


def headline_table(report: RunReport) -> Table:
    """One row per index on the ``all`` slice: the headline metrics, interval below."""
    first = next(iter(report.indexes))
    name = _all_slice(list(report.indexes[first].slices))
    metrics = headline_metrics(report, first)
    n = report.indexes[first].slices[name].n_queries
    conf = report.bootstrap.confidence
    table = Table(
        title=f"slice {terminal(name)}, {n} queries: mean, {conf:.0%} CI below",
        title_justify="left",
    )
    table.add_column("index", style="bold", no_wrap=True)
    for m in metrics:
        table.add_column(m, justify="right", no_wrap=True)
    judged = shown_judged(report.indexes[first].slices)
    if judged:
        table.add_column(judged, justify="right", no_wrap=True)
    for index, result in report.indexes.items():
        s = result.slices.get(name)
        if s is None:
            continue
        cells = [metric_cell(s.metrics[m]) if m in s.metrics else Text("-") for m in metrics]
        if judged:
            cells.append(Text(number(s.judged.get(judged), medium=PLAIN), style="dim"))
        table.add_row(Text(terminal(index)), *cells)
    return table


def moved(check: GateCheck, alpha: float | None) -> bool:
    """A check against the baseline whose value changed by at least what it allows (up or
    down), or significantly (adjusted p below the gate's alpha)."""
    allowed = allowed_change(check)
    if check.delta is None or allowed is None:
        return False
    significant = alpha is not None and check.p_adjusted is not None and check.p_adjusted < alpha
    return abs(check.delta) >= abs(allowed) or significant


def _shown_checks(gate: GateSection) -> tuple[list[GateCheck], int, int]:
    """The failed checks (gate order), the inconclusive ones that do not block, then those that
    moved; and how many failed and how many passing ones moved."""
    alpha = gate.significance.alpha if gate.significance is not None else None
    failed = gate.failed
    warned = [c for c in gate.checks if c.passed and c.outcome == "inconclusive"]
    passed_moved = [c for c in gate.checks if c.passed and c.outcome == "pass" and moved(c, alpha)]
    return [*failed, *warned, *passed_moved], len(failed), len(passed_moved)


def checks_parts(gate: GateSection) -> list[RenderableType]:
    """The failed checks and those that moved, at most CHECKS_SHOWN rows; else one line."""
    checks, n_failed, n_moved = _shown_checks(gate)
    if not checks:
        against = "against the baseline " if gate.baseline else ""
        return [Text(f"no check failed or moved {against}beyond its threshold", style="dim")]
    n_warned = sum(c.passed and c.outcome == "inconclusive" for c in checks)
    title = f"{n_failed} check(s) failed, {n_moved} passing check(s) moved beyond their threshold"
    if n_warned:
        title += f", {n_warned} inconclusive"
    table = Table(title=title, title_justify="left")
    for col in ("check", "n", "baseline", "current", "delta", "limit", "p (adj.)", "result"):
        table.add_column(col, justify="left" if col in ("check", "result") else "right")
    for row in check_rows(checks[:CHECKS_SHOWN], PLAIN):
        c = row.check
        style = "red" if not c.passed else ("green" if (c.delta or 0) > 0 else "yellow")
        if c.outcome == "inconclusive" and c.passed:
            style = "yellow"
        table.add_row(
            Text(terminal(c.name), style=style),
            str(c.n_queries),
            row.baseline,
            row.current,
            Text(row.delta, style=style),
            row.limit,
            row.p,
            Text(" · ".join(w for w in (result_word(c), check_note(c)) if w), style=style),
        )
    parts: list[RenderableType] = [table]
    if len(checks) > CHECKS_SHOWN:
        more = len(checks) - CHECKS_SHOWN
        parts.append(Text(f"... and {more} more (report.md, --verbose)", style="dim"))
    return parts


def ann_line(ann: AnnSection) -> Text:
    """An approximate index against exact search on ``all``: recall of each top k and the
    change of the first metric."""
    name = _all_slice(list(ann.slices))
    s = ann.slices[name]
    recall = ", ".join(f"{k} {number(v, medium=PLAIN)}" for k, v in s.recall.items())
    delta = next(iter(s.metric_deltas.items()), None)
    change = f"; Δ{delta[0]} {number(delta[1], signed=True, medium=PLAIN)}" if delta else ""
    worst = min(
        ((n, next(iter(x.recall.values()), None)) for n, x in ann.slices.items()),
        key=lambda p: float("inf") if p[1] is None else p[1],
    )
    low, first = "", next(iter(s.recall.items()), None)
    if worst[1] is not None and first is not None and first[1] is not None and worst[1] < first[1]:
        low = f"; lowest {first[0]}: {terminal(worst[0])} {number(worst[1], medium=PLAIN)}"
    return Text(
        f"ANN {terminal(ann.index)} against {terminal(ann.reference)} on {terminal(name)}: "
        f"{recall}{change}{low}{'; ' + cost if (cost := cost_text(ann)) else ''}"
    )


def stability_lines(report: RunReport) -> list[Text]:
    """Per approximate index searched several times: the spread of its figures."""
    lines = (stability_text(report, ann) for ann in report.ann_sections())
    return [Text("ANN spread " + terminal(line)) for line in lines if line is not None]


def selectivity_lines(report: RunReport) -> list[Text]:
    """Per approximate index of a run with filtered queries: its recall by selectivity."""
    lines = (selectivity_line(ann, PLAIN) for ann in report.ann_sections())
    return [Text(terminal(line)) for line in lines if line is not None]


def health_line(report: RunReport) -> Text | None:
    """One line: collapsed (with why), failed health checks, or ok."""
    section = report.intrinsic
    if section is None:
        return None
    reasons = [f"{m}: {r}" for m, rs in section.collapse_reasons.items() for r in rs]
    if reasons:
        why = terminal("; ".join(reasons))
        return Text(f"embedding health: COLLAPSED: {why}", style="bold red")
    checks = [c for c in (report.gate.checks if report.gate else []) if c.kind.startswith("health")]
    failed = [c for c in checks if not c.passed]
    if failed:
        names = ", ".join(terminal(c.name) for c in failed)
        return Text(f"embedding health: {len(failed)} check(s) failed: {names}", style="bold red")
    matrices = "documents and queries" if section.queries is not None else "documents"
    passing = f"; {len(checks)} health check(s) pass" if checks else ""
    return Text(f"embedding health: ok ({matrices} not collapsed{passing})", style="green")


def files_lines(written: list[Path] | list[str]) -> list[Text]:
    """The files written, one line per directory: ``report files in DIR: a, b, c``."""
    groups: dict[str, list[str]] = {}
    for p in map(Path, written):
        groups.setdefault(str(p.parent), []).append(p.name)
    return [
        Text.assemble(
            ("report files in ", "bold"),
            f"{terminal(folder)}: {terminal(', '.join(names))}",
        )
        for folder, names in groups.items()
    ]


def interval_parts(report: RunReport) -> list[Text]:
    """How the headline intervals were computed, per index, when LLM labels are in the golden
    set (PPI or an uncalibrated bootstrap); nothing otherwise."""
    first = next(iter(report.indexes))
    name = _all_slice(list(report.indexes[first].slices))
    return [
        Text(terminal(f"{index}: {line}"), style="dim")
        for index in report.indexes
        for line in interval_lines(report, index, only=name)
    ]


def _unreliable_line(report: RunReport) -> Text | None:
    unreliable = [s for s in report.slices.values() if s.reliability == "unreliable"]
    if not unreliable:
        return None
    n = f"{len(unreliable)} of {len(report.slices)}"
    return Text(f"! {n} slices have {UNRELIABLE_NOTE}", style="yellow")


def rerank_lines(report: RunReport) -> list[Text]:
    """One line per rerank index: its ceiling, oracle and the change of each stage."""
    return [Text(terminal(rerank_line(report, s, PLAIN))) for s in report.rerank.values()]


def brief_run(report: RunReport, written: list[Path], config_words: Sequence[str] = ()) -> Group:
    """The short summary of a run: verdict first, at most about 40 lines for the demo
    (``config_words``: the run's config and settings, which its judge commands repeat)."""
    parts: list[RenderableType] = []
    if report.gate is not None:
        parts += [verdict_text(report.gate), *loss_text(report.gate)]
        parts += changed_lines(report.gate)
    else:
        parts.append(Text("no gate configured (no floors, no baseline)", style="bold"))
    parts += context_parts(report)
    parts += [Text(""), headline_table(report), *interval_parts(report)]
    parts += labels_parts(report, headline_metrics(report, next(iter(report.indexes))))
    parts += rerank_lines(report)
    unreliable = _unreliable_line(report)
    if unreliable is not None:
        parts.append(unreliable)
    if report.gate is not None:
        parts += [Text(""), *checks_parts(report.gate)]
        parts += unjudged_parts(report.gate, hint_of(report, written, config_words))
        parts += caveat_lines(report.gate)
    latency = latency_text(report)
    tail = [
        *map(ann_line, report.ann_sections()),
        *stability_lines(report),
        *selectivity_lines(report),
        Text(terminal(latency), style="dim") if latency is not None else None,
        health_line(report),
    ]
    parts += [Text(""), *(t for t in tail if t is not None)]
    if written:
        parts += files_lines(written)
    parts.append(Text(RUN_HINT, style="dim"))
    return Group(*parts)


def print_run(
    console: Console,
    report: RunReport,
    written: list[Path],
    verbose: bool = False,
    config_words: Sequence[str] = (),
) -> None:
    """Every table with ``verbose``, else the short summary; ``config_words``: the run's config
    and settings as command-line words (``RunOutcome.config_words``)."""
    view = render_run if verbose else brief_run
    # not cropped: a line printed whole for pasting (a judge command) may exceed the width
    console.print(view(report, written, config_words), crop=False)


# --- a comparison ------------------------------------------------------------------------------


def _compare_columns(table: Table, first: str) -> None:
    table.add_column(first, style="bold", no_wrap=True)
    for col in ("n", "A", "B", "delta", "95% CI", "p rand. (adj.)"):
        table.add_column(col, justify="right", no_wrap=True)


def compare_headline(report: CompareReport) -> Table:
    """One row per index on the ``all`` slice: the primary metric of A and B and its change."""
    primary = report.settings.primary
    table = Table(title=f"{primary} on all, B - A", title_justify="left")
    _compare_columns(table, "index")
    table.add_column("W/T/L", justify="right", no_wrap=True)
    for index, slices in report.indexes.items():
        name = _all_slice(list(slices))
        for row in compare_rows({name: slices[name]}, primary, PLAIN):
            m = row.metric
            style = "" if not m.significant else ("green" if m.delta > 0 else "red")
            table.add_row(
                Text(terminal(index)),
                row.n,
                row.a,
                row.b,
                Text(row.delta, style=style),
                row.ci,
                row.p_randomization,
                row.wtl,
            )
    return table


def compare_judged(report: CompareReport) -> Table | None:
    """One row per index on the ``all`` slice: judged@k of A and B; None without figures."""
    rows = []
    key = None
    for index, slices in report.indexes.items():
        name = _all_slice(list(slices))
        key, judged = judged_rows({name: slices[name]}, PLAIN)
        rows += [(index, r) for r in judged]
    if key is None or not rows:
        return None
    table = Table(title=f"{key} on all (share of the top k judged)", title_justify="left")
    for col in ("index", "A", "B", "B - A"):
        table.add_column(col, justify="left" if col == "index" else "right", no_wrap=True)
    for index, r in rows:
        table.add_row(Text(terminal(index)), r.a, r.b, r.delta)
    return table


def compare_moved_parts(report: CompareReport) -> list[RenderableType]:
    """The slices of the primary index whose primary metric changed significantly (after the
    correction), with the diagnosis; at most CHECKS_SHOWN rows, else one line."""
    primary, index = report.settings.primary, report.primary_index
    rows = [r for r in compare_rows(report.indexes[index], primary, PLAIN) if r.metric.significant]
    if not rows:
        return [Text(f"no slice of {terminal(index)} moved significantly on {primary}", "dim")]
    table = Table(
        title=f"{terminal(index)}: slices where {primary} moved significantly "
        f"({report.settings.correction})",
        title_justify="left",
    )
    _compare_columns(table, "slice")
    table.add_column("diagnosis", no_wrap=False)
    for row in rows[:CHECKS_SHOWN]:
        style = "green" if row.metric.delta > 0 else "red"
        table.add_row(
            Text(terminal(row.name)),
            row.n,
            row.a,
            row.b,
            Text(row.delta, style=style),
            row.ci,
            row.p_randomization,
            Text(terminal(row.diagnosis), style="dim"),
        )
    parts: list[RenderableType] = [table]
    if len(rows) > CHECKS_SHOWN:
        more = len(rows) - CHECKS_SHOWN
        parts.append(Text(f"... and {more} more (compare.md, --verbose)", style="dim"))
    return parts


def _examples_parts(report: CompareReport) -> list[RenderableType]:
    """The biggest per-query losses and gains of B on the primary metric."""
    parts: list[RenderableType] = []
    primary = report.settings.primary
    for title, examples in (
        ("biggest losses of B", report.losers[:LOSSES_SHOWN]),
        ("biggest gains of B", report.gainers[:GAINS_SHOWN]),
    ):
        if examples:
            parts.append(Text(f"{title} ({primary}):", style="bold"))
            parts += [
                Text(
                    f"  {number(e.delta, True, 3, medium=PLAIN)}  {terminal(e.query_id)}  "
                    f"{terminal(e.text[:90])}"
                )
                for e in examples
            ]
    return parts


def brief_compare(report: CompareReport, written: list[str]) -> Group:
    """The short summary of a comparison: verdict first."""
    v, a, b = report.verdict, report.a, report.b
    parts: list[RenderableType] = [
        Text(f"VERDICT: {v.status}: {terminal(v.reason)}", VERDICT_STYLE.get(v.status, "bold"))
    ]
    parts += [Text(f"  {terminal(x)}", style="red") for x in v.blocking[1 : 1 + BLOCKING_SHOWN]]
    if len(v.blocking) > 1 + BLOCKING_SHOWN:
        more = len(v.blocking) - 1 - BLOCKING_SHOWN
        parts.append(Text(f"  ... and {more} more (compare.md)", style="dim"))
    parts += [
        Text.assemble(("A ", "bold"), terminal(f"{a.label} ({a.model.get('source')})")),
        Text.assemble(("B ", "bold"), terminal(f"{b.label} ({b.model.get('source')})")),
        *(
            Text(terminal(f"changed: {k}: {c.baseline} -> {c.current}"))
            for k, c in report.changed.items()
        ),
    ]
    parts += [Text(""), compare_headline(report)]
    judged = compare_judged(report)
    if judged is not None:
        parts.append(judged)
    parts += [Text(""), *compare_moved_parts(report)]
    parts += [Text(f"note: {terminal(n)}", style="yellow") for n in report.notes]
    parts += margin_parts(report, MARGINS_SHOWN)
    unjudged = unjudged_docs_line(report, UNJUDGED_SHOWN)
    if unjudged is not None:
        parts += [Text(""), unjudged]
    examples = _examples_parts(report)
    if examples:
        parts += [Text(""), *examples]
    parts += [Text(""), *files_lines(written), Text(COMPARE_HINT, style="dim")]
    return Group(*parts)


def print_compare(
    console: Console, report: CompareReport, written: list[str], verbose: bool = False
) -> None:
    """Every table with ``verbose``, else the short summary."""
    console.print(render_compare(report, written) if verbose else brief_compare(report, written))
