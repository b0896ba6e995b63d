"""report.html: one self-contained page for a run or a comparison.

Inline CSS and inline SVG (``evalret.report.svg``), no script, nothing fetched: a Content Security
Policy in the page forbids every load but inline styles and data: images, so the file opens the
same from a CI artifact with no network. Every text from a golden set or a config is escaped.

A page is a list of sections, each built by one function from the page's inputs; a new section
(say, embedding health) is one more function in ``RUN_SECTIONS``. The pieces both pages draw
(metric bars with intervals, per-query deltas, metric@k curves) are shared, with "baseline /
current" on a run and "A / B" on a comparison.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Sequence, Set
from dataclasses import dataclass
from typing import Any

from evalret.data.schema import (
    AnnSection,
    Change,
    CompareReport,
    CompareSide,
    GateCheck,
    GateSection,
    MetricCurves,
    QueryExample,
    RankedDoc,
    RunReport,
    SliceComparison,
)
from evalret.report.beyond_view import BEYOND_TITLE, beyond_table
from evalret.report.common import (
    COMPARE_COLUMNS,
    intrinsic_rows,
    sample_summary,
    shown_judged,
    warning_lines,
    without_relevant_note,
)
from evalret.report.numbers import HTML, number, p_value
from evalret.report.pagedata import DeltaSpread, RunQueries, ScoreSpread
from evalret.report.svg import (
    BLUE,
    DASHES,
    GREY,
    ORANGE,
    PALETTE,
    Bar,
    BarRow,
    DeltaRow,
    Line,
    Series,
    bar_chart,
    delta_chart,
    esc,
    figure,
    histogram,
    line_chart,
    sorted_deltas,
)
from evalret.report.views import (
    GateSummary,
    allowed_change,
    check_rows,
    compare_rows,
    gate_summary,
)

DOC_CHARS = 120  # document text shown per listed result
CURVE_MARKS = (1, 2, 3, 5, 10, 20, 50, 100, 200, 500, 1000)
FAMILY_COLOR = {"recall": BLUE, "ndcg": ORANGE}

CSS = """
:root { --ink: #1F2328; --muted: #59636E; --line: #D8DEE4; --soft: #F6F8FA;
  --pass: #1A7F37; --fail: #B42318; --warn: #9A6700; --accent: #0060A0; }
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0; color: var(--ink); background: #fff; font: 15px/1.5 system-ui, -apple-system,
  "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
.wrap { max-width: 1180px; margin: 0 auto; padding: 0 24px; }
header.top { border-bottom: 1px solid var(--line); padding: 20px 0 14px; background: var(--soft); }
header.top h1 { font-size: 22px; margin: 0 12px 0 0; display: inline; vertical-align: middle; }
.meta { margin: 8px 0 0; color: var(--muted); font-size: 14px; }
.badge { display: inline-block; vertical-align: middle; padding: 3px 12px; border-radius: 999px;
  font-weight: 700; font-size: 15px; letter-spacing: .02em; color: #fff; }
.badge.pass { background: var(--pass); } .badge.fail { background: var(--fail); }
.badge.neutral { background: #57606A; }
.verdict-line { font-size: 17px; margin: 6px 0 10px; }
nav.toc { margin: 16px 0 0; font-size: 14px; }
nav.toc ol { margin: 4px 0 0; padding-left: 22px; columns: 2 260px; }
nav.toc a { color: var(--accent); }
section { margin: 30px 0; }
h2 { font-size: 20px; margin: 0 0 10px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
h3 { font-size: 16.5px; margin: 22px 0 8px; }
h4 { font-size: 15px; margin: 0 0 4px; }
p { margin: 6px 0; max-width: 80ch; }
a { color: var(--accent); }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(min(100%, 470px), 1fr));
  gap: 16px 22px; align-items: start; }
figure.chart { margin: 0; padding: 10px 12px; border: 1px solid var(--line); border-radius: 8px;
  background: #fff; break-inside: avoid; }
.chart-title { font-weight: 600; margin-bottom: 4px; }
figure.chart svg { display: block; max-width: 100%; height: auto; margin: 0 auto; }
figcaption { color: var(--muted); font-size: 13px; margin-top: 4px; }
.table-wrap { overflow-x: auto; margin: 8px 0; }
table { border-collapse: collapse; font-size: 13.5px; font-variant-numeric: tabular-nums; }
th, td { padding: 4px 9px; border-bottom: 1px solid var(--line); text-align: right;
  vertical-align: top; }
th { background: var(--soft); font-weight: 600; white-space: nowrap; }
th.l, td.l { text-align: left; }
tr.failed td { background: #FDECEA; }
.result-pass { color: var(--pass); font-weight: 600; }
.result-fail { color: var(--fail); font-weight: 600; }
.neg { color: #B3261E; } .pos { color: #005A8C; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .9em;
  background: var(--soft); padding: 0 3px; border-radius: 4px; overflow-wrap: anywhere; }
pre { overflow-x: auto; background: var(--soft); padding: 12px; border-radius: 6px;
  font-size: 12.5px; line-height: 1.4; }
details { margin: 8px 0; } summary { cursor: pointer; color: var(--accent); }
.warn { color: var(--warn); } .muted { color: var(--muted); }
ul.plain { margin: 4px 0; padding-left: 20px; }
.kv th { text-align: left; width: 14em; } .kv td { text-align: left; }
.query-card { border: 1px solid var(--line); border-left: 5px solid var(--line);
  border-radius: 6px; padding: 10px 12px; margin: 10px 0; break-inside: avoid; }
.query-card.loss { border-left-color: #D55E00; } .query-card.gain { border-left-color: #0072B2; }
.query-card .delta { font-variant-numeric: tabular-nums; font-weight: 700; margin-right: 6px; }
.query-card .qtext { font-weight: 600; overflow-wrap: anywhere; }
.lists { display: grid; grid-template-columns: repeat(auto-fit, minmax(min(100%, 300px), 1fr));
  gap: 8px 18px; margin-top: 6px; }
.lists h5 { margin: 4px 0 2px; font-size: 13px; color: var(--muted); }
.lists ol { margin: 0; padding-left: 22px; font-size: 13px; }
.lists li { margin: 2px 0; overflow-wrap: anywhere; }
.grade { display: inline-block; min-width: 5.4em; font-size: 11.5px; padding: 0 5px;
  border-radius: 4px; margin-right: 4px; text-align: center; border: 1px solid var(--line); }
.grade.rel { background: #DDF4E4; border-color: #8FD1A5; }
.grade.non { background: #F1F3F5; }
.grade.unj { background: #fff; border-style: dashed; color: var(--muted); }
footer { color: var(--muted); font-size: 13px; border-top: 1px solid var(--line);
  padding: 12px 0 28px; margin-top: 36px; }
@media (max-width: 640px) { .wrap { padding: 0 12px; } nav.toc ol { columns: 1; } }
@media print {
  @page { size: A4; margin: 12mm; }
  body { font-size: 10.5pt; }
  .wrap { max-width: none; padding: 0; }
  header.top { background: none; }
  nav.toc { display: none; }
  a { color: inherit; text-decoration: none; }
  .badge, tr.failed td, .grade { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
  .grid { display: block; }
  figure.chart { margin: 0 0 8px; border: none; padding: 4px 0; }
  .table-wrap { overflow: visible; }
  table { font-size: 8pt; width: 100%; }
  th, td { padding: 2px 4px; }
  details > summary { display: none; }
  h2, h3 { break-after: avoid; }
  figure.chart, .query-card, tr { break-inside: avoid; }
}
"""


@dataclass(frozen=True)
class Section:
    """One part of a page: its anchor, its heading (also the contents entry) and its HTML."""

    id: str
    title: str
    body: str


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def _num(v: float | None, signed: bool = False, digits: int = 4) -> str:
    """A number on the page: a missing value or NaN is an en dash."""
    return number(v, signed, digits, medium=HTML)


def _signed(v: float | None) -> str:
    """A signed number, coloured by its sign (text stays readable without the colour)."""
    if v is None:
        return "–"
    cls = "neg" if v < 0 else "pos" if v > 0 else ""
    return f'<span class="{cls}">{_num(v, signed=True)}</span>'


def _table(
    head: Sequence[str],
    rows: Sequence[Sequence[str]],
    left: Collection[int] = (0,),
    row_classes: Sequence[str] | None = None,
    cls: str = "",
) -> str:
    """A table of HTML cells (escaped by the caller); columns in ``left`` align left, the others
    (numbers) right."""

    def align(i: int) -> str:
        return ' class="l"' if i in left else ""

    th = "".join(f"<th{align(i)}>{h}</th>" for i, h in enumerate(head))
    body = "".join(
        f'<tr class="{esc(row_classes[j]) if row_classes else ""}">'
        + "".join(f"<td{align(i)}>{c}</td>" for i, c in enumerate(r))
        + "</tr>"
        for j, r in enumerate(rows)
    )
    return _wrap_table(f"<thead><tr>{th}</tr></thead><tbody>{body}</tbody>", cls)


def _wrap_table(inner: str, cls: str = "") -> str:
    return f'<div class="table-wrap"><table class="{cls}">{inner}</table></div>'


def _changes(changed: dict[str, Change]) -> str:
    """Changed settings as list items: key, before, after."""
    return "".join(
        f"<li><code>{esc(k)}</code>: {_value(v.baseline)} → {_value(v.current)}</li>"
        for k, v in changed.items()
    )


def _long_list(items: Sequence[str], shown: int = 8) -> str:
    """A bullet list showing its first ``shown`` items; the rest behind a disclosure."""
    head = "".join(f"<li>{esc(x)}</li>" for x in items[:shown])
    rest = "".join(f"<li>{esc(x)}</li>" for x in items[shown:])
    more = (
        f"<details><summary>{len(items) - shown} more</summary><ul class='plain'>{rest}</ul>"
        "</details>"
        if rest
        else ""
    )
    return f"<ul class='plain'>{head}</ul>{more}"


def _kv(rows: Sequence[tuple[str, str]]) -> str:
    body = "".join(f"<tr><th>{esc(k)}</th><td>{v}</td></tr>" for k, v in rows)
    return f'<div class="table-wrap"><table class="kv"><tbody>{body}</tbody></table></div>'


def _value(v: Any) -> str:
    """A config or fingerprint value as escaped inline code."""
    text = v if isinstance(v, str) and v else json.dumps(v, sort_keys=True, default=str)
    return f"<code>{esc(text)}</code>"


def page(title: str, badge: str, meta: str, sections: Sequence[Section], kind: str) -> str:
    """The whole document: header with the verdict badge, contents, sections, footer."""
    toc = "".join(f'<li><a href="#{esc(s.id)}">{esc(s.title)}</a></li>' for s in sections)
    body = "".join(
        f'<section id="{esc(s.id)}"><h2>{esc(s.title)}</h2>{s.body}</section>' for s in sections
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; img-src data:\">"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="color-scheme" content="light">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head>"
        f'<body class="{esc(kind)}"><header class="top"><div class="wrap">'
        f"<h1>{esc(title)}</h1>{badge}{meta}"
        f'<nav class="toc" aria-label="Contents"><strong>Contents</strong><ol>{toc}</ol></nav>'
        f'</div></header><main class="wrap">{body}</main>'
        '<footer class="wrap">Written by evalret. Self-contained: no script, nothing loaded '
        "from the network. Hover a bar, point or label for its exact values.</footer>"
        "</body></html>\n"
    )


def _badge(state: str, text: str) -> str:
    return (
        f'<span id="verdict" class="badge {esc(state)}" data-verdict="{esc(state)}" '
        f'role="status">{esc(text)}</span>'
    )


# --- shared pieces (run and compare) -----------------------------------------------------------


@dataclass(frozen=True)
class Side:
    """One report drawn on a page and its name there (baseline, current, A, B)."""

    name: str
    report: RunReport
    color: str


def _confidence(report: RunReport) -> str:
    return f"{report.bootstrap.confidence:.0%}"


def metric_bars(sides: Sequence[Side], index: str) -> str:
    """One chart per metric: the slices as rows, one bar per side with its bootstrap interval."""
    present = [s for s in sides if index in s.report.indexes]
    last = present[-1].report.indexes[index]
    metrics = list(next(iter(last.slices.values())).metrics) if last.slices else []
    charts = []
    for metric in metrics:
        rows = []
        for name, sl in last.slices.items():
            bars = []
            values: list[float | None] = []
            for side in present:
                res = side.report.indexes[index].slices.get(name)
                mv = res.metrics.get(metric) if res is not None else None
                if mv is None:
                    bars.append(Bar(None, tooltip=f"{side.name}: not computed"))
                    values.append(None)
                    continue
                values.append(mv.value)
                ci = f", {_confidence(side.report)} CI [{_num(mv.ci_low)}, {_num(mv.ci_high)}]"
                bars.append(
                    Bar(
                        mv.value,
                        mv.ci_low,
                        mv.ci_high,
                        f"{side.name}: {index} / {name} / {metric} = {_num(mv.value)}"
                        f"{ci if mv.ci_low is not None else ''}, n = {res.n_queries if res else 0}",
                    )
                )
            change = None
            if len(values) > 1 and values[0] is not None and values[-1] is not None:
                change = values[-1] - values[0]
            flag = " !" if sl.reliability == "unreliable" else ""
            rows.append(
                BarRow(
                    f"{name} ({sl.n_queries}{flag})",
                    bars,
                    _num(values[-1]),
                    f"{name}: {sl.n_queries} queries, {sl.reliability}",
                    muted=sl.reliability == "unreliable",
                    change=change,
                )
            )
        series = [Series(s.name, s.color) for s in present]
        names = " beside ".join(s.name for s in present)
        conf = _confidence(present[-1].report)
        caption = f"Mean {metric} per slice with its {conf} bootstrap interval" + (
            f"; {names}, the change on the right." if len(present) > 1 else "."
        )
        svg = bar_chart(
            rows, series, label=f"{index}: {metric} per slice", x_label=f"{metric} (mean)"
        )
        charts.append(figure(f"{metric}", svg, caption))
    legend = (
        '<p class="muted">Queries per slice in brackets; ! and light bars mark a slice under '
        "200 queries, too small to be reliable. Hover a bar for its exact value and interval.</p>"
    )
    return f'{legend}<div class="grid">{"".join(charts)}</div>'


def metric_table(report: RunReport, index: str) -> str:
    """Every metric of an index per slice, with its interval: the numbers behind the bars."""
    result = report.indexes[index]
    metrics = list(next(iter(result.slices.values())).metrics) if result.slices else []
    judged = shown_judged(result.slices)
    rows = []
    for name, s in result.slices.items():
        cells = [esc(name), str(s.n_queries)]
        for m in metrics:
            v = s.metrics[m]
            interval = (
                f'<br><span class="muted">{_num(v.ci_low)}–{_num(v.ci_high)}</span>'
                if v.ci_low is not None
                else ""
            )
            cells.append(f"{_num(v.value)}{interval}")
        if judged:
            cells.append(_num(s.judged.get(judged)))
        rows.append(cells)
    head = ["slice", "n", *(esc(m) for m in metrics), *([esc(judged)] if judged else [])]
    return (
        f"<details><summary>{esc(index)}: the values ({_confidence(report)} interval below "
        f"each mean)</summary>{_table(head, rows)}</details>"
    )


def delta_distribution(spread: DeltaSpread, before: str, after: str, metric: str) -> str:
    """Histogram and sorted plot of the per-query change (``after`` - ``before``) on one
    metric."""
    index = spread.index
    n = len(spread.deltas)
    if spread.wins == spread.losses == 0:
        return (
            f'<p class="unchanged">{esc(index)}: every one of the {n} queries scores '
            f"the same {esc(metric)} in {esc(after)} as in {esc(before)}.</p>"
        )
    label = f"{index}: per-query change of {metric}, {after} − {before}"
    summary = (
        f"{n} queries: {spread.losses} lose, {spread.ties} unchanged, {spread.wins} gain; "
        f"mean change {_num(spread.mean, signed=True)}."
    )
    hist = histogram(
        spread.changed,
        label=f"{label}: histogram of the changed queries",
        x_label=f"change of {metric} ({after} − {before})",
        value_range=(-spread.extent, spread.extent),
    )
    sorted_svg = sorted_deltas(
        spread.deltas, spread.query_ids, label=f"{label}: sorted", y_label=f"change of {metric}"
    )
    return (
        '<div class="grid">'
        + figure(
            f"{index}: histogram of per-query changes ({metric})",
            hist,
            f"{summary} The {spread.ties} unchanged queries are left out of the histogram; "
            "losses are vermillion, gains blue.",
        )
        + figure(
            f"{index}: every query's change, sorted ({metric})",
            sorted_svg,
            f"One bar per query, from the largest loss (left) to the largest gain (right); "
            f"hover a bar for the query id. {summary}",
        )
        + "</div>"
    )


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _grade(d: RankedDoc, relevant: Set[str]) -> str:
    if d.grade is None:
        return '<span class="grade unj">unjudged</span>'
    cls = "rel" if d.id in relevant else "non"  # the example's relevant documents, at its level
    return f'<span class="grade {cls}">grade {d.grade}</span>'


def _docs(docs: Sequence[RankedDoc], relevant: Set[str]) -> str:
    if not docs:
        return '<p class="muted">(not available)</p>'
    items = "".join(
        f"<li>{_grade(d, relevant)}<code>{esc(d.id)}</code> {esc(_clip(d.text, DOC_CHARS))}</li>"
        for d in docs
    )
    return f"<ol>{items}</ol>"


def query_card(e: QueryExample, names: tuple[str, str] | None) -> str:
    """One query: its text, the scores, the relevant documents and the top results.

    ``names`` (before, after) shows both result lists and the change; None shows one list."""
    ids = {d.id for d in e.relevant}
    relevant = f"<div><h5>Relevant documents</h5>{_docs(e.relevant, ids)}</div>"
    text = esc(e.text) if e.text else '<span class="muted">(text not available)</span>'
    if names is None:
        kind = "loss"
        head = f'<span class="delta">{_num(e.a)}</span>'
        lists = relevant + f"<div><h5>Top results</h5>{_docs(e.a_top, ids)}</div>"
        scores = ""
    else:
        kind = "loss" if e.delta < 0 else "gain"
        head = f'<span class="delta">{_signed(e.delta)}</span>'
        lists = (
            relevant
            + f"<div><h5>{esc(names[0])}: top results</h5>{_docs(e.a_top, ids)}</div>"
            + f"<div><h5>{esc(names[1])}: top results</h5>{_docs(e.b_top, ids)}</div>"
        )
        before, after = f"{esc(names[0])} {_num(e.a)}", f"{esc(names[1])} {_num(e.b)}"
        scores = f'<div class="muted">{before} → {after}</div>'
    return (
        f'<article class="query-card {kind}"><h4>{head}<code>{esc(e.query_id)}</code> '
        f'<span class="qtext">{text}</span></h4>{scores}<div class="lists">{lists}</div></article>'
    )


def examples_block(
    losers: Sequence[QueryExample],
    gainers: Sequence[QueryExample],
    names: tuple[str, str],
    what: str,
) -> str:
    parts = []
    for title, examples in (
        (f"Biggest losses ({what})", losers),
        (f"Biggest gains ({what})", gainers),
    ):
        cards = "".join(query_card(e, names) for e in examples) or '<p class="muted">None.</p>'
        parts.append(f"<h3>{esc(title)}</h3>{cards}")
    return "".join(parts)


def _slice_curves(index: str, curves: MetricCurves, family: str, side: str) -> str:
    """One family's curve per slice of one side: where the index misses relevant documents."""
    per_slice = [
        Line(
            name,
            values,
            PALETTE[i % len(PALETTE)],
            DASHES[(i // len(PALETTE)) % len(DASHES)],
            sorted({1, 10, curves.k[-1]} & set(curves.k)),
            3.0 if name == "all" else 1.6,
        )
        for i, (name, values) in enumerate(curves.values[family].items())
    ]
    return figure(
        f"{index}: {family}@k per slice ({side})",
        line_chart(
            curves.k,
            per_slice,
            label=f"{index}: {family}@k per slice",
            x_label="cutoff k",
            y_label=f"mean {family}@k",
        ),
        f"Mean {family}@k of each slice of {side}; a slice far below the "
        "others is where the index misses relevant documents.",
    )


def curves_block(sides: Sequence[Side], index: str) -> str | None:
    """metric@k over k for all queries (every side), and recall@k per slice (the last side)."""
    present = [s for s in sides if index in s.report.indexes]
    last = present[-1].report.indexes[index].curves
    if last is None:
        return None
    lines = []
    missing = set()
    for fam in last.values:
        for j, side in enumerate(present):
            c = side.report.indexes[index].curves
            # a side without curves (an older report) or searched to another depth is left out
            if c is None or c.k != last.k or "all" not in c.values.get(fam, {}):
                missing.add(side.name)
                continue
            lines.append(
                Line(
                    f"{fam}@k {side.name}" if len(present) > 1 else f"{fam}@k",
                    c.values[fam]["all"],
                    FAMILY_COLOR.get(fam, PALETTE[j]),
                    "" if j == len(present) - 1 else "6 3",
                    sorted(set(CURVE_MARKS) & set(c.k)),
                )
            )
    names = " (dashed) beside ".join(s.name for s in present if s.name not in missing)
    caption = (
        f"Mean over all queries at every cutoff k from 1 to {last.k[-1]}"
        + (f"; {names} (solid)" if len(present) - len(missing) > 1 else "")
        + ". Hover a point for its value."
        + (f" No curves to draw for {', '.join(sorted(missing))}." if missing else "")
    )
    charts = [
        figure(
            f"{index}: metric@k, all queries",
            line_chart(
                last.k,
                lines,
                label=f"{index}: metric@k over k, all queries",
                x_label="cutoff k",
                y_label="mean over queries",
            ),
            caption,
        )
    ]
    family = "recall" if "recall" in last.values else next(iter(last.values), None)
    if family is not None:
        charts.append(_slice_curves(index, last, family, present[-1].name))
    return f'<div class="grid">{"".join(charts)}</div>'


def indexes_curve(sides: Sequence[Side], family: str = "recall") -> str | None:
    """One family's curve over k for all queries, one line per index (and per side)."""
    lines = []
    present = [s for s in sides if any(r.curves for r in s.report.indexes.values())]
    last = present[-1].report if present else None
    if last is None:
        return None
    xs: list[int] | None = None
    for i, index in enumerate(last.indexes):
        for j, side in enumerate(present):
            r = side.report.indexes.get(index)
            c = r.curves if r is not None else None
            if c is None or "all" not in c.values.get(family, {}) or (xs and c.k != xs):
                continue
            xs = xs or c.k
            lines.append(
                Line(
                    f"{index} {side.name}" if len(present) > 1 else index,
                    c.values[family]["all"],
                    PALETTE[i % len(PALETTE)],
                    "" if j == len(present) - 1 else "6 3",
                    sorted(set(CURVE_MARKS) & set(c.k)),
                )
            )
    if xs is None or len(last.indexes) < 2:
        return None
    names = " (dashed) beside ".join(s.name for s in present)
    return figure(
        f"{family}@k of every index, all queries",
        line_chart(
            xs,
            lines,
            label=f"{family}@k over k for every index, all queries",
            x_label="cutoff k",
            y_label=f"mean {family}@k",
        ),
        "Which index finds the relevant documents first, and how deep each must go"
        + (f"; {names} (solid)." if len(present) > 1 else "."),
    )


# --- the run page ------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunPage:
    """What a run page is drawn from: the report, the baseline it was gated against (if known)
    and the queries picked for it (``None``: no per-query section)."""

    report: RunReport
    baseline: RunReport | None
    queries: RunQueries | None

    @property
    def sides(self) -> list[Side]:
        current = Side("current", self.report, BLUE)
        return [Side("baseline", self.baseline, GREY), current] if self.baseline else [current]


def _checks_table(checks: list[GateCheck]) -> str:
    """The checks as report.md lists them: numbers, threshold, p-values and the result."""
    head = ["index", "slice", "n", "metric", "baseline", "current", "delta", "threshold"]
    head += ["p (adj.)", "result"]
    rows = []
    for row in check_rows(checks, HTML):
        c = row.check
        result = (
            '<span class="result-pass">pass</span>'
            if c.passed
            else '<span class="result-fail">FAIL</span>'
        )
        if row.weak:
            result += f' <span class="warn">underpowered (MDE {row.mde})</span>'
        rows.append(
            [
                esc(c.index),
                esc(c.slice),
                str(c.n_queries),
                esc(c.metric),
                row.baseline,
                row.current,
                _signed(c.delta),
                esc(row.limit),
                esc(row.p),
                result,
            ]
        )
    classes = ["" if c.passed else "failed" for c in checks]
    return _table(head, rows, (0, 1, 3, 7, 9), classes, "checks")


def _drops_chart(failed: list[GateCheck]) -> str:
    """The failed drop checks as changes from the baseline beside the drop each allows; "" when
    no failed check is a drop check with a change."""
    drops = [c for c in failed if c.delta is not None and allowed_change(c) is not None]
    if not drops:
        return ""
    rows = [
        DeltaRow(
            f"{c.index}/{c.slice}/{c.metric}",
            c.delta,
            limit=allowed_change(c),
            tooltip=f"{c.name}: baseline {_num(c.baseline)}, current {_num(c.current)}, "
            f"change {_num(c.delta, signed=True)}, allowed {_num(allowed_change(c), True)}",
            note=_num(c.delta, signed=True),
        )
        for c in drops
    ]
    return (
        '<div class="grid">'
        + figure(
            "Failed drop checks: change from the baseline",
            delta_chart(
                rows,
                label="failed drop checks: change from the baseline, allowed drop",
                x_label="current − baseline",
            ),
            "Each bar is a failed check's change of the slice mean; the dashed tick is the "
            "largest drop its threshold allows.",
        )
        + "</div>"
    )


def _gate_head(gate: GateSection, summary: GateSummary) -> list[str]:
    """The verdict line, the baseline, the significance test and what changed."""
    if summary.passed:
        n = summary.n_checks
        line = f"All {n} checks pass." if n != 1 else "The check passes."
    else:
        line = f"{len(summary.failed)} of {summary.n_checks} checks failed."
    parts = [f'<p class="verdict-line"><strong>{esc(line)}</strong></p>']
    if gate.baseline:
        parts.append(
            f"<p>Baseline <code>{esc(gate.baseline)}</code> (fingerprint "
            f"<code>{esc((gate.baseline_fingerprint or '')[:12])}</code>).</p>"
        )
    if gate.significance:
        s = gate.significance
        parts.append(
            f"<p>A drop fails only when significant: {esc(s.test)} test, alpha "
            f"{esc(s.alpha)}, {esc(s.correction)} correction across checks.</p>"
        )
    if gate.changed:
        items = _changes(gate.changed)
        parts.append(f"<p>Changed since the baseline:</p><ul class='plain'>{items}</ul>")
    return parts


def gate_section(p: RunPage) -> Section | None:
    gate: GateSection | None = p.report.gate
    if gate is None:
        return None
    summary = gate_summary(gate)
    failed = summary.failed
    parts = _gate_head(gate, summary)
    if failed:
        parts.append("<h3>Failed checks</h3>" + _checks_table(failed))
        messages = "".join(f"<li><code>{esc(c.name)}</code>: {esc(c.message)}</li>" for c in failed)
        parts.append(
            f"<details><summary>Why each check failed ({len(failed)} messages)</summary>"
            f"<ul class='plain'>{messages}</ul></details>"
        )
        parts.append(_drops_chart(failed))
    if summary.weak:
        parts.append(f'<p class="warn">{esc(summary.weak_sentence)}</p>')
    if gate.notes:
        parts.append(
            "<ul class='plain'>" + "".join(f"<li>{esc(n)}</li>" for n in gate.notes) + "</ul>"
        )
    every = _checks_table(gate.checks)
    opened = " open" if not failed else ""
    parts.append(
        f"<details{opened}><summary>All {len(gate.checks)} checks</summary>{every}</details>"
    )
    return Section("gate", "Gate verdict and failed checks", "".join(parts))


def metrics_section(p: RunPage) -> Section:
    parts = []
    if p.baseline is None:
        parts.append(
            "<p>No baseline: each bar is this run's mean. With <code>--baseline</code> (or "
            "<code>gate.baseline</code>) the baseline's bars are drawn beside it.</p>"
        )
    for index, result in p.report.indexes.items():
        kind = result.params.get("type", index)
        kind_html = f'<span class="muted">({esc(kind)})</span>'
        parts.append(f'<h3 id="index-{slug(index)}">{esc(index)} {kind_html}</h3>')
        parts.append(metric_bars(p.sides, index))
        parts.append(metric_table(p.report, index))
    parts.append(beyond_block(p.report))
    return Section("metrics", "Metrics per index and slice", "".join(parts))


def _ann_recall_chart(ann: AnnSection, floor: GateCheck | None) -> str:
    """Recall of the exact top k by the ANN index, per slice and cutoff, with the gate's floor."""
    first = next(iter(ann.slices.values()))
    cutoffs = list(first.recall)
    series = [Series(k, PALETTE[i % len(PALETTE)]) for i, k in enumerate(cutoffs)]
    rows = [
        BarRow(
            f"{name} ({s.n_queries})",
            [
                Bar(
                    s.recall.get(k),
                    tooltip=f"{name}: {ann.index} {k} against {ann.reference} = "
                    f"{_num(s.recall.get(k))}",
                )
                for k in cutoffs
            ],
            " / ".join(_num(s.recall.get(k)) for k in cutoffs),
        )
        for name, s in ann.slices.items()
    ]
    low = min([v for s in ann.slices.values() for v in s.recall.values() if v is not None] + [1.0])
    reference = None
    if floor is not None:
        reference = (floor.threshold, f"gate floor: {floor.name} ≥ {floor.threshold:g}")
    recall_svg = bar_chart(
        rows,
        series,
        label=f"{ann.index} recall against {ann.reference} search per slice",
        x_label=f"share of the {ann.reference} top k found by {ann.index}",
        x_range=(0.0, 1.0),
        reference=reference,
    )
    caption = (
        f"Recall of the {ann.reference} top k by {ann.index}, per slice and cutoff (lowest "
        f"{_num(low)}); 0.95 is a realistic production figure."
        + (
            f" The dashed line is the gate's floor ({floor.threshold:g}, slice all)."
            if floor
            else ""
        )
    )
    return figure(f"{ann.index} recall@k against {ann.reference}", recall_svg, caption)


def _ann_loss_chart(ann: AnnSection) -> str:
    """The mean change of every metric, ANN - exact, over all queries."""
    all_slice = ann.slices.get("all", next(iter(ann.slices.values())))
    delta_rows = [
        DeltaRow(
            m,
            v,
            tooltip=f"{ann.index} − {ann.reference}, {m}, all queries: {_num(v, signed=True)}",
            note=_num(v, signed=True),
        )
        for m, v in all_slice.metric_deltas.items()
    ]
    loss_svg = delta_chart(
        delta_rows,
        label=f"metric change {ann.index} − {ann.reference}, all queries",
        x_label=f"{ann.index} − {ann.reference} (mean)",
    )
    return figure(
        f"Metric loss: {ann.index} − {ann.reference}, all queries",
        loss_svg,
        "Mean change of each metric when searching the approximate index instead of the "
        "exact one (left: loss). The table below has every slice.",
    )


def _ann_table(ann: AnnSection) -> str:
    """Recall at every cutoff and every metric's change, per slice."""
    first = next(iter(ann.slices.values()))
    cutoffs = list(first.recall)
    head = ["slice", "n", *(esc(k) for k in cutoffs), *(f"Δ{esc(m)}" for m in first.metric_deltas)]
    table_rows = [
        [
            esc(name),
            str(s.n_queries),
            *(_num(v) for v in s.recall.values()),
            *(_signed(v) for v in s.metric_deltas.values()),
        ]
        for name, s in ann.slices.items()
    ]
    return _table(head, table_rows)


def ann_section(p: RunPage) -> Section | None:
    """Each approximate index against exact search: recall, what it costs, every slice."""
    sections = p.report.ann_sections()
    if not sections:
        return None
    floor = next(
        (c for c in (p.report.gate.checks if p.report.gate else []) if c.kind == "ann_min_recall"),
        None,
    )
    body = "".join(_ann_block(ann, floor if ann is p.report.ann else None) for ann in sections)
    first = sections[0]
    title = (
        f"{first.index.upper()} against {first.reference} search"
        if len(sections) == 1
        else f"Approximate indexes against {first.reference} search"
    )
    return Section("ann", title, body)


def _ann_block(ann: AnnSection, floor: GateCheck | None) -> str:
    """One approximate index: its recall and metric-change charts and its table."""
    return (
        f"<p>The approximate index <code>{esc(ann.index)}</code> against exact search "
        f"<code>{esc(ann.reference)}</code> over the same vectors: how many true neighbours it "
        "finds, and what that costs in every metric.</p>"
        '<div class="grid">'
        + _ann_recall_chart(ann, floor)
        + _ann_loss_chart(ann)
        + "</div>"
        + _ann_table(ann)
    )


TEXTS_UNKNOWN = '<p class="muted">Query and document texts: golden set not available.</p>'


def per_query_section(p: RunPage) -> Section | None:
    """Against a baseline, every query's change and the biggest losses and gains; without one,
    the distribution of the scores and the lowest-scoring queries."""
    q = p.queries
    if q is None or not q.metric:
        return None
    if p.baseline is None:
        return _scores_without_baseline(q)
    if not q.comparable:
        return Section(
            "per-query",
            "Per-query changes",
            "<p>The baseline has no per-query scores for these queries and this metric.</p>",
        )
    before, after = (s.name for s in p.sides)
    parts = [
        f"<p>Change of <code>{esc(q.metric)}</code> for every query, current − baseline "
        "(the baseline's per-query scores are in the baseline file).</p>"
    ]
    for spread in q.changes:
        parts.append(
            f"<h3>{esc(spread.index)}</h3>" + delta_distribution(spread, before, after, q.metric)
        )
    if not q.texts:
        parts.append(TEXTS_UNKNOWN)
    parts.append(
        examples_block(q.losers, q.gainers, ("baseline", "current"), f"{q.focus}, {q.metric}")
    )
    return Section("per-query", "Per-query changes against the baseline", "".join(parts))


def _score_chart(spread: ScoreSpread, metric: str) -> str:
    """The histogram of one index's per-query scores, 0 to 1."""
    n = len(spread.values)
    return figure(
        f"{spread.index}: distribution of {metric}",
        histogram(
            spread.values,
            label=f"{spread.index}: histogram of per-query {metric}",
            x_label=f"{metric} of a query",
            value_range=(0.0, 1.0),
            bins=10,
            signed=False,
        ),
        f"{n} queries; mean {_num(spread.mean)}, {spread.zeros} score 0, {spread.ones} score 1.",
    )


def _scores_without_baseline(q: RunQueries) -> Section:
    metric = q.metric
    parts = [
        f"<p>No baseline, so no per-query change: the distribution of <code>{esc(metric)}</code> "
        "over the queries, and the queries it fails most. Gate against a baseline "
        "(<code>--baseline</code>) to see which queries lose and gain.</p>"
    ]
    charts = [_score_chart(spread, metric) for spread in q.scores]
    parts.append(f'<div class="grid">{"".join(charts)}</div>')
    cards = "".join(query_card(e, None) for e in q.losers)
    if not q.texts:
        parts.append(TEXTS_UNKNOWN)
    parts.append(f"<h3>Lowest-scoring queries ({esc(q.focus)}, {esc(metric)})</h3>{cards}")
    return Section("per-query", "Per-query scores", "".join(parts))


def curves_section(p: RunPage) -> Section | None:
    overview = indexes_curve(p.sides)
    blocks = [f'<div class="grid">{overview}</div>'] if overview else []
    for index in p.report.indexes:
        block = curves_block(p.sides, index)
        if block:
            blocks.append(f"<h3>{esc(index)}</h3>{block}")
    if not blocks:
        return None
    return Section("curves", "Metric@k curves", "".join(blocks))


def fingerprint_section(p: RunPage) -> Section:
    r = p.report
    f = r.fingerprint
    g = r.golden_set
    cache = r.embedding.cache
    rows = [
        ("digest", _value(f.digest)),
        (
            "golden set",
            f"{_value(g.source)} ({esc(g.format)}), fingerprint {_value(g.fingerprint)}",
        ),
        (
            "golden set size",
            f"{g.n_documents} documents, {g.n_queries_judged} judged queries, "
            f"{g.n_queries_evaluated} evaluated, {g.n_judgments} judgments",
        ),
        *((f"model.{k}", _value(v)) for k, v in f.model.items()),
        *((f"index {k}", _value(v)) for k, v in f.indexes.items()),
        *((f"metrics.{k}", _value(v)) for k, v in f.metrics.items()),
        *((f"sample.{k}", _value(v)) for k, v in (f.sample or {}).items()),
        ("evalret", _value(f.evalret_version)),
        ("embedding", _value(r.embedding.model_dump(exclude={"cache"}))),
        ("embedding cache", _value(cache.model_dump() if cache is not None else None)),
        ("bootstrap", _value(r.bootstrap.model_dump())),
        ("timings (s)", _value(r.timings)),
    ]
    note = without_relevant_note(r)
    if note:
        rows.append(
            (
                "without relevant",
                f"{esc(note)}: "
                + ", ".join(f"<code>{esc(q)}</code>" for q in g.queries_without_relevant[:20])
                + (" …" if len(g.queries_without_relevant) > 20 else ""),
            )
        )
    if g.warnings:
        rows.append(("golden-set warnings", "<br>".join(esc(x) for x in warning_lines(g))))
    slices = _table(
        ["slice", "kind", "n", "reliability", "definition"],
        [
            [esc(n), esc(s.kind), str(s.n_queries), esc(s.reliability), esc(s.definition)]
            for n, s in r.slices.items()
        ],
        left=(0, 1, 3, 4),
    )
    config = esc(json.dumps(r.config, indent=2, sort_keys=False, default=str))
    body = (
        _kv(rows)
        + "<h3>Slices</h3>"
        + slices
        + f"<details><summary>The resolved config</summary><pre>{config}</pre></details>"
    )
    return Section("fingerprint", "Fingerprint and config", body)


def lexical_section(p: RunPage) -> Section | None:
    """Where the dense index beats or loses to BM25, per slice, and what the hybrid adds."""
    lex = p.report.lexical
    if lex is None:
        return None
    metric = next(iter(next(iter(lex.slices.values())).dense_minus_bm25))
    charts = []
    for key, title, caption in (
        (
            "dense_minus_bm25",
            f"{lex.dense} − bm25",
            "right of zero: the embedding model beats lexical search on this slice; left: BM25 "
            "is better (typical of exact-match queries: codes, identifiers)",
        ),
        (
            "hybrid_minus_dense",
            f"hybrid − {lex.dense}",
            "what fusing BM25 into the dense ranking (reciprocal rank fusion) changes",
        ),
    ):
        rows = [
            DeltaRow(
                label=f"{name} (n={s.n_queries})",
                delta=getattr(s, key).get(metric),
                tooltip=f"{name}: {title} {metric} = {_num(getattr(s, key).get(metric), True)}; "
                f"dense wins {s.dense_wins[metric]}, bm25 wins {s.bm25_wins[metric]}",
            )
            for name, s in lex.slices.items()
        ]
        charts.append(
            figure(
                f"{title}, {metric}, per slice",
                delta_chart(rows, label=f"{title} per slice", x_label=f"Δ {metric}"),
                caption,
            )
        )
    table = _table(
        [
            "slice",
            "n",
            f"{esc(lex.dense)} − bm25",
            f"hybrid − {esc(lex.dense)}",
            "dense wins",
            "bm25 wins",
        ],
        [
            [
                esc(name),
                str(s.n_queries),
                _signed(s.dense_minus_bm25.get(metric)),
                _signed(s.hybrid_minus_dense.get(metric)),
                str(s.dense_wins[metric]),
                str(s.bm25_wins[metric]),
            ]
            for name, s in lex.slices.items()
        ],
    )
    body = f'<div class="grid">{"".join(charts)}</div>{table}'
    return Section("lexical", f"Dense against lexical (BM25) on {esc(metric)}", body)


def beyond_block(report: RunReport) -> str:
    """Corpus coverage and the Gini coefficient of every index's top k, per slice (not gated),
    under the metrics; empty for a report without them."""
    view = beyond_table(report, HTML)
    if view is None:
        return ""
    head = ["slice", "n"]
    head += [f"{esc(i)} {c}" for i in view.indexes for c in (f"coverage@{view.k}", "gini")]
    rows = [
        [esc(r.slice), str(r.n_queries), *(c for pair in r.cells for c in pair)] for r in view.rows
    ]
    notes = "".join(f"<li>{esc(line)}</li>" for line in view.outside)
    body = (
        f'<p class="muted">{esc(view.meaning[0].upper() + view.meaning[1:])}.</p>'
        + _table(head, rows)
        + (f'<ul class="plain">{notes}</ul>' if notes else "")
    )
    title = f"{BEYOND_TITLE}: coverage and popularity (top {view.k})"
    return f'<h3 id="beyond">{esc(title)}</h3>{body}'


def intrinsic_section(p: RunPage) -> Section | None:
    """Label-free health of the document and query vectors, and the collapse verdict."""
    rows = intrinsic_rows(p.report)
    if not rows or p.report.intrinsic is None:
        return None
    reasons = [
        f"<li><strong>{esc(matrix)} collapsed</strong>: {esc(r)}</li>"
        for matrix, found in p.report.intrinsic.collapse_reasons.items()
        for r in found
    ]
    verdict = (
        f'<ul class="result-fail">{"".join(reasons)}</ul>'
        if reasons
        else "<p>Not collapsed: no dead-dimension, effective-rank or cosine condition fired.</p>"
    )
    table = _table(
        ["figure", "documents", "queries", ""],
        [[esc(n), esc(d), esc(q), f'<span class="muted">{esc(h)}</span>'] for n, d, q, h in rows],
        left=(0, 3),
    )
    return Section("health", "Embedding health (no labels needed)", verdict + table)


def sample_section(p: RunPage) -> Section | None:
    """A sampled run: what was drawn, each slice's share, and how to read the figures."""
    line, s = sample_summary(p.report), p.report.sample
    if line is None or s is None:
        return None
    rows = _table(
        ["slice", "queries in the set", "proportional share", "sampled"],
        [
            [esc(n), str(v.total), _num(v.share, digits=2), str(v.sampled)]
            for n, v in s.slices.items()
        ],
    )
    settings = _kv(
        [
            ("queries", f"{s.n_queries} drawn of {s.n_queries_total} ({s.queries} asked)"),
            ("documents", f"{s.n_documents} of {s.n_documents_total}"),
            ("seed, floor", f"{s.seed}, at least {s.min_per_slice} queries per slice"),
            ("method", f"{esc(s.method)}, {s.n_strata} strata (combinations of slices)"),
        ]
    )
    notes = "".join(f"<li>{esc(n)}</li>" for n in s.notes)
    body = f"<p>{esc(line[0].upper() + line[1:])}.</p>{settings}{rows}<ul>{notes}</ul>"
    return Section("sample", "Sample", body)


RunSection = Callable[[RunPage], Section | None]
# The run page, in order. A new section is a function (RunPage) -> Section | None added here.
RUN_SECTIONS: list[RunSection] = [
    gate_section,
    metrics_section,
    sample_section,
    ann_section,
    lexical_section,
    per_query_section,
    curves_section,
    intrinsic_section,
    fingerprint_section,
]


def _run_meta(r: RunReport) -> str:
    g = r.golden_set
    model = r.fingerprint.model.get("source", r.fingerprint.model.get("name"))
    return (
        f'<p class="meta">Golden set <code>{esc(g.source)}</code> ({g.n_documents} documents, '
        f"{g.n_queries_evaluated} queries evaluated{' (a sample)' if r.sample else ''}) · "
        f"model <code>{esc(model)}</code> · "
        f"fingerprint <code>{esc(r.fingerprint.digest[:12])}</code> · evalret "
        f"{esc(r.evalret_version)}</p>"
    )


def run_html(
    report: RunReport, baseline: RunReport | None = None, queries: RunQueries | None = None
) -> str:
    """report.html of a run. With ``baseline`` its bars are drawn beside the run's; ``queries``
    (picked by the caller) fill the per-query section."""
    p = RunPage(report, baseline, queries)
    gate = report.gate
    if gate is None:
        badge = _badge("neutral", "NO GATE")
    else:
        summary = gate_summary(gate)
        if summary.passed:
            badge = _badge("pass", "✔ GATE PASSED")
        else:
            failed = f"{len(summary.failed)} of {summary.n_checks} checks"
            badge = _badge("fail", f"✖ GATE FAILED: {failed}")
    sections = [s for s in (fn(p) for fn in RUN_SECTIONS) if s is not None]
    return page("evalret run report", badge, _run_meta(report), sections, "run")


# --- the compare page --------------------------------------------------------------------------


@dataclass(frozen=True)
class ComparePage:
    """A comparison, the two run reports when known (bars, curves) and the per-query change on
    the primary metric of each compared index (None without the two reports)."""

    comparison: CompareReport
    a: RunReport | None
    b: RunReport | None
    changes: list[DeltaSpread] | None

    @property
    def sides(self) -> list[Side] | None:
        if self.a is None or self.b is None:
            return None
        return [Side("A", self.a, GREY), Side("B", self.b, BLUE)]


def _side_text(side: CompareSide) -> str:
    name = side.model.get("source", side.model.get("name"))
    return f"<code>{esc(side.label)}</code> (model <code>{esc(name)}</code>)"


def compare_verdict_section(p: ComparePage) -> Section:
    c = p.comparison
    v = c.verdict
    parts = [
        f'<p class="verdict-line"><strong>{esc(v.status)}</strong>: {esc(v.reason)}</p>',
        f"<p>A: {_side_text(c.a)}<br>B: {_side_text(c.b)}</p>",
    ]
    if c.changed:
        items = _changes(c.changed)
        parts.append(f"<p>Changed from A to B:</p><ul class='plain'>{items}</ul>")
    if v.blocking:
        parts.append(f"<h3>Blocking ({len(v.blocking)})</h3>" + _long_list(v.blocking))
    if v.regressions:
        parts.append(
            f"<h3>Significant regressions ({len(v.regressions)})</h3>" + _long_list(v.regressions)
        )
    if c.notes:
        parts.append(
            "<ul class='plain'>" + "".join(f"<li>{esc(n)}</li>" for n in c.notes) + "</ul>"
        )
    return Section("verdict", "Verdict", "".join(parts))


def _compare_charts(index: str, slices: dict[str, SliceComparison], primary: str) -> str:
    """One chart per metric (the primary first): B - A per slice with its interval."""
    first = next(iter(slices.values()), None)
    metrics = list(first.metrics) if first is not None else []
    metrics.sort(key=lambda m: m != primary)
    charts = []
    for metric in metrics:
        rows = []
        for name, sc in slices.items():
            m = sc.metrics[metric]
            mde = sc.mde.get(metric)
            rows.append(
                DeltaRow(
                    f"{name} ({sc.n_queries})",
                    m.delta,
                    m.ci_low,
                    m.ci_high,
                    strong=m.significant,
                    tooltip=(
                        f"{index}/{name}/{metric}: A {_num(m.a)}, B {_num(m.b)}, "
                        f"delta {_num(m.delta, True)} [{_num(m.ci_low, True)}, "
                        f"{_num(m.ci_high, True)}], p rand. {p_value(m.p_randomization)} "
                        f"(adj. {p_value(m.p_randomization_adjusted)}), p t {p_value(m.p_t_test)} "
                        f"(adj. {p_value(m.p_t_test_adjusted)}), W/T/L {m.wins}/{m.ties}/{m.losses}"
                        + (f", MDE {_num(mde, digits=3)}" if mde is not None else "")
                    ),
                    note=_num(m.delta, True) + (" *" if m.significant else ""),
                )
            )
        title = f"{metric}: B − A" + (" (primary)" if metric == primary else "")
        charts.append(
            figure(
                title,
                delta_chart(
                    rows, label=f"{index}: {metric}, B − A per slice", x_label=f"{metric} B − A"
                ),
                "Change of the slice mean with its interval (whisker); * significant.",
            )
        )
    return f'<div class="grid">{"".join(charts)}</div>'


def _compare_table(index: str, slices: dict[str, SliceComparison], primary: str) -> str:
    """The primary metric per slice with its tests and diagnosis, behind a disclosure."""
    head = [*COMPARE_COLUMNS, "diagnosis"]
    rows = []
    for row in compare_rows(slices, primary, HTML):
        delta = _signed(row.metric.delta)
        rows.append(
            [
                esc(row.name),
                row.n,
                row.a,
                row.b,
                f"<strong>{delta}</strong>" if row.metric.significant else delta,
                row.ci,
                row.p_randomization,
                row.p_t_test,
                row.wtl,
                row.mde,
                f'<span style="white-space:normal">{esc(row.diagnosis)}</span>',
            ]
        )
    return (
        f"<details><summary>{esc(index)}: {esc(primary)} per slice, with tests and "
        f"diagnosis</summary>{_table(head, rows)}</details>"
    )


def compare_changes_section(p: ComparePage) -> Section:
    """B - A per slice for every metric of every compared index, and the primary's table."""
    c = p.comparison
    s = c.settings
    primary = s.primary
    parts = [
        f"<p>B − A per slice with the {s.confidence:.0%} percentile bootstrap "
        f"interval of the paired differences. Solid bars and * are significant after the "
        f"{esc(s.correction)} correction (randomization test, alpha {esc(s.alpha)}); "
        "light bars are not.</p>"
    ]
    for index, slices in c.indexes.items():
        parts.append(f"<h3>{esc(index)}</h3>")
        parts.append(_compare_charts(index, slices, primary))
        parts.append(_compare_table(index, slices, primary))
    return Section("changes", "Changes per slice, B − A", "".join(parts))


def compare_bars_section(p: ComparePage) -> Section | None:
    sides = p.sides
    if sides is None:
        return None
    parts = []
    for index in p.comparison.indexes:
        if index in sides[0].report.indexes and index in sides[1].report.indexes:
            parts.append(f"<h3>{esc(index)}</h3>" + metric_bars(sides, index))
    return Section("metrics", "Metrics per slice, A beside B", "".join(parts))


def compare_per_query_section(p: ComparePage) -> Section:
    c = p.comparison
    primary = c.settings.primary
    parts = []
    if p.changes is not None:
        for spread in p.changes:
            parts.append(
                f"<h3>{esc(spread.index)}</h3>" + delta_distribution(spread, "A", "B", primary)
            )
    else:
        parts.append(
            '<p class="muted">The per-query distribution needs the two run reports; this page '
            "was drawn from compare.json alone.</p>"
        )
    parts.append(examples_block(c.losers, c.gainers, ("A", "B"), f"{c.primary_index}, {primary}"))
    return Section("per-query", "Per-query changes, B − A", "".join(parts))


def compare_curves_section(p: ComparePage) -> Section | None:
    sides = p.sides
    if sides is None:
        return None
    overview = indexes_curve(sides)
    blocks = [f'<div class="grid">{overview}</div>'] if overview else []
    for index in p.comparison.indexes:
        block = curves_block(sides, index)
        if block:
            blocks.append(f"<h3>{esc(index)}</h3>{block}")
    return Section("curves", "Metric@k curves", "".join(blocks)) if blocks else None


def compare_settings_section(p: ComparePage) -> Section:
    c = p.comparison
    rows = [
        ("golden set", _value(c.golden_set.model_dump())),
        ("primary index", _value(c.primary_index)),
        *((f"setting {k}", _value(v)) for k, v in c.settings.model_dump().items()),
        ("A fingerprint", _value(c.a.fingerprint)),
        ("A model", _value(c.a.model)),
        ("A indexes", _value(c.a.indexes)),
        ("B fingerprint", _value(c.b.fingerprint)),
        ("B model", _value(c.b.model)),
        ("B indexes", _value(c.b.indexes)),
        ("evalret", _value(c.evalret_version)),
    ]
    return Section("settings", "Settings and fingerprints", _kv(rows))


CompareSection = Callable[[ComparePage], Section | None]
COMPARE_SECTIONS: list[CompareSection] = [
    compare_verdict_section,
    compare_changes_section,
    compare_bars_section,
    compare_per_query_section,
    compare_curves_section,
    compare_settings_section,
]


def compare_html(
    comparison: CompareReport,
    a: RunReport | None = None,
    b: RunReport | None = None,
    changes: list[DeltaSpread] | None = None,
) -> str:
    """report.html of a comparison; with the run reports ``a`` and ``b``, also their bars with
    intervals and the metric@k curves, and with ``changes`` the per-query distributions."""
    p = ComparePage(comparison, a, b, changes)
    status = comparison.verdict.status
    state = {"candidate": "pass", "not a candidate": "fail"}.get(status, "neutral")
    icon = {"candidate": "✔ ", "not a candidate": "✖ "}.get(status, "")
    badge = _badge(state, f"{icon}{status.upper()}")
    g = comparison.golden_set
    meta = (
        f'<p class="meta">A {_side_text(comparison.a)} · B {_side_text(comparison.b)} · golden '
        f"set <code>{esc(g.source)}</code> ({esc(g.n_queries)} queries) · evalret "
        f"{esc(comparison.evalret_version)}</p>"
    )
    sections = [s for s in (fn(p) for fn in COMPARE_SECTIONS) if s is not None]
    return page("evalret comparison report", badge, meta, sections, "compare")
