"""Terminal rendering of a run with rich: every table (``--verbose``): one per index, then the
ANN, lexical, beyond-accuracy and health sections and the gate; the short default summary is
``terminal_brief``, built from the parts here."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from evalret.data.schema import AnnSection, GateSection, MetricValue, RunReport
from evalret.report.beyond_view import BEYOND_TITLE, beyond_table
from evalret.report.escape import terminal
from evalret.report.filter_view import selectivity_line
from evalret.report.gate_rows import (
    DEFAULT_HINT,
    JudgeHint,
    check_rows,
    gate_summary,
    judge_commands,
    judge_hint,
    judge_intro,
    result_word,
    threshold_heading,
    threshold_line,
    unjudged_line,
    unjudged_rows,
)
from evalret.report.numbers import PLAIN, number
from evalret.report.run_notes import (
    alignment_notes,
    api_notes,
    backend_line,
    cache_notes,
    engine_line,
    interval_lines,
    interval_mark,
    intrinsic_rows,
    labels_note,
    labels_rows,
    shown_judged,
    stability_text,
    store_lines,
    truncation_line,
    warning_lines,
    without_relevant_note,
)
from evalret.report.verdict import (
    CLOSE_TITLE,
    close_lines,
    loss_line,
    margin_lines,
    verdict_words,
)

RELIABILITY_STYLE = {"unreliable": "yellow", "minimal": "", "production": "green", "high": "green"}


def metric_cell(v: MetricValue) -> Text:
    """A mean, its interval on a second line (dim); ``-`` for an empty slice."""
    if v.value is None:
        return Text("-", style="dim")
    text = Text(number(v.value, digits=3, medium=PLAIN))
    if v.ci_low is not None and v.ci_high is not None:
        low, high = (number(x, digits=3, medium=PLAIN) for x in (v.ci_low, v.ci_high))
        mark = interval_mark(v)
        text.append(f"\n{low}–{high}{' ' + mark if mark else ''}", style="dim")
    return text


def _fmt(v: float | None, signed: bool = False) -> str:
    return number(v, signed, medium=PLAIN)


def index_table(report: RunReport, index: str) -> Table:
    result = report.indexes[index]
    metrics = list(next(iter(result.slices.values())).metrics)
    conf = report.bootstrap.confidence
    marked = any(v.interval == "ppi" for s in result.slices.values() for v in s.metrics.values())
    method = "CI below (PPI where marked, else bootstrap)" if marked else ""
    table = Table(
        title=f"{index} ({result.params.get('type', index)}): mean, "
        f"{conf:.0%} {method or 'bootstrap CI below'}",
        title_justify="left",
    )
    table.add_column("slice", style="bold", no_wrap=True)
    table.add_column("n", justify="right", no_wrap=True)
    for m in metrics:
        table.add_column(m, justify="right", no_wrap=True)
    judged = shown_judged(result.slices)
    if judged:
        table.add_column(judged, justify="right", no_wrap=True)
    for name, s in result.slices.items():
        flag = "" if s.reliability != "unreliable" else " !"
        n = Text(f"{s.n_queries}{flag}", style=RELIABILITY_STYLE.get(s.reliability, ""))
        extra = [Text(_fmt(s.judged.get(judged)), style="dim")] if judged else []
        cells = [metric_cell(s.metrics[m]) for m in metrics]
        table.add_row(Text(terminal(name)), n, *cells, *extra)
    return table


def lexical_table(report: RunReport) -> Table | None:
    """Dense against BM25 (and the hybrid against dense) per slice, on the first metric."""
    lex = report.lexical
    if lex is None:
        return None
    metric = next(iter(next(iter(lex.slices.values())).dense_minus_bm25))
    table = Table(
        title=f"Dense ({lex.dense}) against lexical (bm25) on {metric}: "
        "means, differences, and queries won by each",
        title_justify="left",
    )
    columns = ["slice", "n", lex.dense, "bm25", "hybrid", "dense - bm25", "hybrid - dense"]
    for col in [*columns, "dense wins", "bm25 wins"]:
        table.add_column(col, justify="left" if col == "slice" else "right", no_wrap=True)
    for name, s in lex.slices.items():

        def value(index: str, slice_name: str = name) -> str:
            result = report.indexes.get(index)
            return _fmt(result.slices[slice_name].metrics[metric].value) if result else "-"

        diff = s.dense_minus_bm25[metric]
        style = "" if diff is None else ("green" if diff > 0 else "red" if diff < 0 else "")
        table.add_row(
            Text(terminal(name)),
            str(s.n_queries),
            value(lex.dense),
            value("bm25"),
            value("hybrid"),
            Text(_fmt(diff, signed=True), style=style),
            _fmt(s.hybrid_minus_dense.get(metric), signed=True),
            str(s.dense_wins[metric]),
            str(s.bm25_wins[metric]),
        )
    return table


def ann_table(ann: AnnSection) -> Table:
    """One approximate index against exact search: recall and metric change per slice."""
    first = next(iter(ann.slices.values()))
    index, reference = terminal(ann.index), terminal(ann.reference)
    table = Table(
        title=f"ANN: {index} against {reference} search "
        f"(recall of the exact top-k; metric change {index} - {reference})",
        title_justify="left",
    )
    table.add_column("slice", style="bold", no_wrap=True)
    table.add_column("n", justify="right", no_wrap=True)
    for k in first.recall:
        table.add_column(k, justify="right", no_wrap=True)
    for m in first.metric_deltas:
        table.add_column(f"Δ{m}", justify="right", no_wrap=True)
    for name, s in ann.slices.items():
        table.add_row(
            Text(terminal(name)),
            str(s.n_queries),
            *(_fmt(v) for v in s.recall.values()),
            *(_fmt(v, signed=True) for v in s.metric_deltas.values()),
        )
    return table


def beyond_parts(report: RunReport) -> list[RenderableType]:
    """Coverage and Gini of every index's top k per slice, two columns per index; then a line
    per index that retrieved documents outside the corpus."""
    view = beyond_table(report, PLAIN, digits=3)
    if view is None:
        return []
    table = Table(title=f"{BEYOND_TITLE} ({view.brief})", title_justify="left")
    table.add_column("slice", style="bold", no_wrap=True)
    table.add_column("n", justify="right", no_wrap=True)
    for index in view.indexes:
        table.add_column(f"{terminal(index)} cov@{view.k}", justify="right", no_wrap=True)
        table.add_column("gini", justify="right", no_wrap=True)
    for row in view.rows:
        cells = [c for pair in row.cells for c in pair]
        table.add_row(Text(terminal(row.slice)), str(row.n_queries), *cells)
    return [Text(""), table, *(Text(terminal(line), style="yellow") for line in view.outside)]


def intrinsic_table(report: RunReport) -> Table | None:
    rows = intrinsic_rows(report)
    if not rows:
        return None
    table = Table(
        title="Embedding health (no labels needed; alignment over query-relevant pairs)",
        title_justify="left",
    )
    for col in ("figure", "documents", "queries", ""):
        table.add_column(col, justify="left" if col in ("figure", "") else "right", no_wrap=True)
    for name, docs, queries, hint in rows:
        style = "bold red" if name == "collapsed" and "yes" in (docs, queries) else ""
        table.add_row(
            name, Text(docs, style=style), Text(queries, style=style), Text(hint, style="dim")
        )
    return table


def labels_parts(report: RunReport, metrics: list[str]) -> list[RenderableType]:
    """``metrics`` on human labels alone beside all labels, when an LLM judge graded part of
    the golden set; nothing otherwise."""
    note = labels_note(report)
    if note is None:
        return []
    table = Table(title="human labels beside all labels: mean", title_justify="left")
    for column in ("index", "labels", "n"):
        table.add_column(column, style="bold" if column == "index" else "", no_wrap=True)
    for m in metrics:
        table.add_column(terminal(m), justify="right", no_wrap=True)
    for index, name, n, cells in labels_rows(report, metrics):
        table.add_row(Text(terminal(index)), name, str(n), *cells)
    return [Text(""), Text(terminal(note), style="yellow"), table]


def _failed_table(gate: GateSection) -> Table:
    """The failed checks with their numbers."""
    table = Table(title="failed checks", title_justify="left", title_style="bold red")
    for col in ("check", "n", "baseline", "current", "delta", "p (adj.)", "result"):
        table.add_column(col, justify="left" if col == "check" else "right", no_wrap=True)
    for row in check_rows(gate.failed, PLAIN):
        table.add_row(
            Text(terminal(row.check.name), style="red"),
            str(row.check.n_queries),
            row.baseline,
            row.current,
            row.delta,
            row.p,
            result_word(row.check),
        )
    return table


VERDICT_STYLE = {
    "pass": "bold green",
    "no baseline": "bold",
    "inconclusive": "bold yellow",
    "fail": "bold red",
}


def verdict_text(gate: GateSection) -> Text:
    """The gate's verdict in colour (its words: ``report.verdict``): ``GATE PASSED: all 43
    checks pass``, ``NO BASELINE: …``, ``GATE INCONCLUSIVE: …`` or ``GATE FAILED: …``."""
    words = verdict_words(gate)
    return Text(words.title, style=VERDICT_STYLE[words.state])


def loss_text(gate: GateSection) -> list[Text]:
    """The line under a failed verdict saying how much was lost (``report.verdict.loss_line``),
    or none."""
    line = loss_line(gate, PLAIN, "->")
    return [Text(terminal(line), style="red")] if line is not None else []


def unjudged_parts(gate: GateSection, hint: JudgeHint) -> list[RenderableType]:
    """The inconclusive checks' slices (judged@k of baseline and current, the share of the new
    top k never judged) and the commands that would judge them (``hint``: the run's report.json
    and config words); nothing when none."""
    summary = gate_summary(gate)
    if not summary.inconclusive:
        return []
    style = "bold red" if summary.policy == "fail" else "yellow"
    sentence = verdict_words(gate).inconclusive_sentence(summary)
    parts: list[RenderableType] = [Text(sentence, style=style)]
    parts += [Text(f"  {terminal(unjudged_line(r, PLAIN))}") for r in unjudged_rows(gate)]
    commands = judge_commands(gate, hint)
    if commands:
        parts.append(Text(f"{judge_intro(hint)} with:", style="bold"))
        # unwrapped (the terminal folds it on screen): a copied line pastes as one command
        parts += [Text(f"  {terminal(c)}", no_wrap=True, overflow="ignore") for c in commands]
    return parts


def report_json_of(written: list[Path] | list[str]) -> str:
    """The report.json among the files written (what a judge command reads), else its name."""
    return next((str(p) for p in written if Path(p).name == "report.json"), "report.json")


def hint_of(
    report: RunReport, written: list[Path] | list[str], config_words: Sequence[str] = ()
) -> JudgeHint:
    """The judge hint of a run that wrote ``written``, given ``config_words`` (its config and
    settings as command-line words)."""
    return judge_hint(report, report_json_of(written), config_words)


def changed_lines(gate: GateSection) -> list[RenderableType]:
    """The baseline's path, then one line per setting changed since it."""
    parts: list[RenderableType] = []
    if gate.baseline:
        parts.append(Text(f"baseline {terminal(gate.baseline)}", style="dim"))
    for key, change in gate.changed.items():
        parts.append(Text(terminal(f"changed: {key}: {change.baseline} -> {change.current}")))
    return parts


def caveat_lines(gate: GateSection) -> list[RenderableType]:
    """The one warning on thresholds finer than their slices' MDE, and the gate's notes."""
    parts: list[RenderableType] = []
    notes = gate.threshold_notes
    if notes:
        parts.append(Text(terminal(f"! {threshold_heading(notes, brief=True)}"), style="yellow"))
        lines = [threshold_line(n, PLAIN, brief=True) for n in notes]
        parts += [Text(terminal(f"  {line}"), style="yellow") for line in lines]
    parts += [Text(f"note: {terminal(n)}", style="yellow") for n in gate.notes]
    return parts + proof_parts(gate)


PROOF_SHOWN = 10  # margin and close-check lines the terminal shows of each (report.md: all)


def proof_parts(gate: GateSection) -> list[RenderableType]:
    """Every margin check's evidence and the close checks' flip probabilities (the first
    ``PROOF_SHOWN`` of each)."""
    parts: list[RenderableType] = []
    margins = [c for c in gate.checks if c.evidence is not None]
    for c, line in zip(margins[:PROOF_SHOWN], margin_lines(gate, PLAIN), strict=False):
        parts.append(Text(terminal(line), style="green" if c.evidence == "proven" else "red"))
    close = close_lines(gate)
    if close:
        parts.append(Text(CLOSE_TITLE, style="yellow"))
        parts += [Text(f"  {terminal(line)}") for line in close[:PROOF_SHOWN]]
    for shown in (margins, close):
        if len(shown) > PROOF_SHOWN:
            more = len(shown) - PROOF_SHOWN
            parts.append(Text(f"  ... and {more} more (report.md)", style="dim"))
    return parts


def sample_parts(report: RunReport) -> list[RenderableType]:
    """One line for a sampled run (config ``sample``): what it evaluated; none otherwise."""
    from evalret.report.run_notes import sample_summary

    line = sample_summary(report)
    return [Text(terminal(line), style="yellow")] if line is not None else []


def gate_parts(gate: GateSection, hint: JudgeHint = DEFAULT_HINT) -> list[RenderableType]:
    """Verdict in colour, then the failed checks, the inconclusive ones, underpowered warning
    and notes."""
    parts: list[RenderableType] = [Text(""), verdict_text(gate), *loss_text(gate)]
    parts += changed_lines(gate)
    if gate.failed:
        parts.append(_failed_table(gate))
    return parts + unjudged_parts(gate, hint) + caveat_lines(gate)


def context_parts(report: RunReport) -> list[RenderableType]:
    """What was evaluated and how: the golden set and model, the cache, then one line per note
    (cache repairs, rankings that missed queries, the backend, queries without a relevant
    document, the readers' warnings)."""
    g = report.golden_set
    parts: list[RenderableType] = [
        Text.assemble(
            ("golden set ", "bold"),
            f"{terminal(g.source)} ({g.format}): {g.n_documents} documents, "
            f"{g.n_queries_evaluated} queries evaluated, {g.n_judgments} judgments; "
            f"model {terminal(str(report.fingerprint.model.get('source')))} "
            f"(dim {report.embedding.dim})",
        )
    ]
    parts += sample_parts(report)
    cache = report.embedding.cache
    if cache is not None:
        counts = "; ".join(
            f"{label} {c.hits} cached, {c.misses} embedded"
            for label, c in (("documents", cache.document), ("queries", cache.query))
            if c is not None
        )
        cut = truncation_line(report.embedding)
        counts += f"; {cut}" if cut is not None else ""
        parts.append(Text(f"embedding cache {terminal(cache.dir)}: {counts}", style="dim"))
    notes = cache_notes(report.embedding) + api_notes(report.embedding)
    parts += [Text(terminal(n), style="yellow") for n in notes]
    parts += [Text(terminal(n), style="yellow") for n in alignment_notes(report)]
    parts += [Text(terminal(line), style="dim") for line in store_lines(report)]
    backend = backend_line(report.embedding)
    if backend:
        parts.append(Text(terminal(backend), style="dim"))
    engine = engine_line(report.embedding)
    if engine:
        parts.append(Text(terminal(engine), style="dim"))
    note = without_relevant_note(report)
    if note:
        shown = ", ".join(terminal(q) for q in g.queries_without_relevant[:10])
        more = "" if len(g.queries_without_relevant) <= 10 else ", ..."
        parts.append(Text(f"{note}: {shown}{more}", style="yellow"))
    if g.warnings:
        parts.append(Text(f"golden set: {len(g.warnings)} warning(s)", style="yellow"))
        parts += [Text(f"  {terminal(line)}", style="yellow") for line in warning_lines(g)]
    return parts


UNRELIABLE_NOTE = "fewer than 200 queries: unreliable, only large changes show"


def render_run(report: RunReport, written: list[Path], config_words: Sequence[str] = ()) -> Group:
    """Every table of a run (``--verbose``): each index per slice, ANN, lexical, beyond
    accuracy, embedding health, then the gate and the files written (``config_words``: the
    run's config and settings, which its judge commands repeat)."""
    parts = context_parts(report)
    for index in report.indexes:
        parts += [Text(""), index_table(report, index)]
        parts += [Text(terminal(line), style="dim") for line in interval_lines(report, index)]
    if any(s.reliability == "unreliable" for s in report.slices.values()):
        parts.append(Text(f"! {UNRELIABLE_NOTE}", style="yellow"))
    first = next(iter(report.indexes.values()))
    parts += labels_parts(report, list(next(iter(first.slices.values())).metrics))
    for extra in (*map(ann_table, report.ann_sections()), lexical_table(report)):
        if extra is not None:
            parts += [Text(""), extra]
    spreads = (stability_text(report, ann) for ann in report.ann_sections())
    parts += [Text("ANN spread " + terminal(line)) for line in spreads if line is not None]
    lines = (selectivity_line(ann, PLAIN) for ann in report.ann_sections())
    parts += [Text(terminal(line)) for line in lines if line is not None]
    parts += beyond_parts(report)
    health = intrinsic_table(report)
    if health is not None:
        parts += [Text(""), health]
    if report.gate is not None:
        parts += gate_parts(report.gate, hint_of(report, written, config_words))
    if written:
        parts += [Text(""), Text("report files:", style="bold")]
        parts += [Text(f"  {terminal(str(p))}") for p in written]
    return Group(*parts)
