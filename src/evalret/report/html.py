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
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from evalret.data.examples import query_examples
from evalret.data.goldenset import GoldenSet
from evalret.data.schema import (
    CompareReport,
    GateCheck,
    GateSection,
    QueryExample,
    RankedDoc,
    RunReport,
)
from evalret.report.common import (
    COMPARE_COLUMNS,
    intrinsic_rows,
    shown_judged,
    warning_lines,
    without_relevant_note,
)
from evalret.report.markdown import _limit, _p
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
    fmt,
    histogram,
    line_chart,
    sorted_deltas,
)

EXAMPLES = 5  # losers and winners listed per page
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


def _signed(v: float | None) -> str:
    """A signed number, coloured by its sign (text stays readable without the colour)."""
    if v is None:
        return "–"
    cls = "neg" if v < 0 else "pos" if v > 0 else ""
    return f'<span class="{cls}">{fmt(v, signed=True)}</span>'


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


def _changes(changed: dict[str, Any]) -> str:
    """Changed settings as list items: key, before, after."""
    return "".join(
        f"<li><code>{esc(k)}</code>: {_value(v.get('baseline'))} → {_value(v.get('current'))}</li>"
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
    return f"{float(report.bootstrap.get('confidence', 0.95)):.0%}"


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
                ci = f", {_confidence(side.report)} CI [{fmt(mv.ci_low)}, {fmt(mv.ci_high)}]"
                bars.append(
                    Bar(
                        mv.value,
                        mv.ci_low,
                        mv.ci_high,
                        f"{side.name}: {index} / {name} / {metric} = {fmt(mv.value)}"
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
                    fmt(values[-1]),
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
                f'<br><span class="muted">{fmt(v.ci_low)}–{fmt(v.ci_high)}</span>'
                if v.ci_low is not None
                else ""
            )
            cells.append(f"{fmt(v.value)}{interval}")
        if judged:
            cells.append(fmt(s.judged.get(judged)))
        rows.append(cells)
    head = ["slice", "n", *(esc(m) for m in metrics), *([esc(judged)] if judged else [])]
    return (
        f"<details><summary>{esc(index)}: the values ({_confidence(report)} interval below "
        f"each mean)</summary>{_table(head, rows)}</details>"
    )


def _aligned(before: RunReport, after: RunReport, index: str, metric: str) -> np.ndarray:
    """after - before per query, in ``before``'s query order."""
    pos = {q: i for i, q in enumerate(after.query_ids)}
    order = np.array([pos[q] for q in before.query_ids], dtype=np.int64)
    b = np.asarray(before.indexes[index].per_query[metric], dtype=np.float64)
    a = np.asarray(after.indexes[index].per_query[metric], dtype=np.float64)[order]
    return a - b


def delta_distribution(before: Side, after: Side, index: str, metric: str) -> str:
    """Histogram and sorted plot of the per-query change (after - before) on one metric."""
    delta = _aligned(before.report, after.report, index, metric)
    ids = before.report.query_ids
    wins, losses = int((delta > 0).sum()), int((delta < 0).sum())
    ties = len(delta) - wins - losses
    if wins == losses == 0:
        return (
            f'<p class="unchanged">{esc(index)}: every one of the {len(delta)} queries scores '
            f"the same {esc(metric)} in {esc(after.name)} as in {esc(before.name)}.</p>"
        )
    changed = delta[delta != 0]
    label = f"{index}: per-query change of {metric}, {after.name} − {before.name}"
    summary = (
        f"{len(delta)} queries: {losses} lose, {ties} unchanged, {wins} gain; "
        f"mean change {fmt(float(delta.mean()) if len(delta) else None, signed=True)}."
    )
    extent = float(np.abs(changed).max()) if changed.size else 1.0
    hist = histogram(
        changed.tolist(),
        label=f"{label}: histogram of the changed queries",
        x_label=f"change of {metric} ({after.name} − {before.name})",
        value_range=(-extent, extent),
    )
    sorted_svg = sorted_deltas(
        delta.tolist(), ids, label=f"{label}: sorted", y_label=f"change of {metric}"
    )
    return (
        '<div class="grid">'
        + figure(
            f"{index}: histogram of per-query changes ({metric})",
            hist,
            f"{summary} The {ties} unchanged queries are left out of the histogram; "
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


def _grade(d: RankedDoc) -> str:
    if d.grade is None:
        return '<span class="grade unj">unjudged</span>'
    cls = "rel" if d.grade >= 1 else "non"
    return f'<span class="grade {cls}">grade {d.grade}</span>'


def _docs(docs: Sequence[RankedDoc]) -> str:
    if not docs:
        return '<p class="muted">(not available)</p>'
    items = "".join(
        f"<li>{_grade(d)}<code>{esc(d.id)}</code> {esc(_clip(d.text, DOC_CHARS))}</li>"
        for d in docs
    )
    return f"<ol>{items}</ol>"


def query_card(e: QueryExample, names: tuple[str, str] | None) -> str:
    """One query: its text, the scores, the relevant documents and the top results.

    ``names`` (before, after) shows both result lists and the change; None shows one list."""
    relevant = f"<div><h5>Relevant documents</h5>{_docs(e.relevant)}</div>"
    text = esc(e.text) if e.text else '<span class="muted">(text not available)</span>'
    if names is None:
        kind = "loss"
        head = f'<span class="delta">{fmt(e.a)}</span>'
        lists = relevant + f"<div><h5>Top results</h5>{_docs(e.a_top)}</div>"
        scores = ""
    else:
        kind = "loss" if e.delta < 0 else "gain"
        head = f'<span class="delta">{_signed(e.delta)}</span>'
        lists = (
            relevant
            + f"<div><h5>{esc(names[0])}: top results</h5>{_docs(e.a_top)}</div>"
            + f"<div><h5>{esc(names[1])}: top results</h5>{_docs(e.b_top)}</div>"
        )
        scores = f'<div class="muted">{esc(names[0])} {fmt(e.a)} → {esc(names[1])} {fmt(e.b)}</div>'
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
        per_slice = [
            Line(
                name,
                values,
                PALETTE[i % len(PALETTE)],
                DASHES[(i // len(PALETTE)) % len(DASHES)],
                sorted({1, 10, last.k[-1]} & set(last.k)),
                3.0 if name == "all" else 1.6,
            )
            for i, (name, values) in enumerate(last.values[family].items())
        ]
        charts.append(
            figure(
                f"{index}: {family}@k per slice ({present[-1].name})",
                line_chart(
                    last.k,
                    per_slice,
                    label=f"{index}: {family}@k per slice",
                    x_label="cutoff k",
                    y_label=f"mean {family}@k",
                ),
                f"Mean {family}@k of each slice of {present[-1].name}; a slice far below the "
                "others is where the index misses relevant documents.",
            )
        )
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


def primary_metric(report: RunReport) -> str:
    names = [str(n) for n in report.fingerprint.metrics.get("names", [])]
    first = next(iter(report.indexes.values()), None)
    available = list(first.per_query) if first is not None else []
    for name in (*names, *available):
        if name in available:
            return name
    return ""


# --- the run page ------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunPage:
    """What a run page is drawn from: the report, the baseline it was gated against (if known)
    and the golden set (for query and document texts, if known)."""

    report: RunReport
    baseline: RunReport | None
    golden: GoldenSet | None

    @property
    def sides(self) -> list[Side]:
        current = Side("current", self.report, BLUE)
        return [Side("baseline", self.baseline, GREY), current] if self.baseline else [current]


def _checks_table(checks: Sequence[GateCheck]) -> str:
    """The checks as report.md lists them: numbers, threshold, p-values and the result."""
    head = ["index", "slice", "n", "metric", "baseline", "current", "delta", "threshold"]
    head += ["p (adj.)", "result"]
    rows = []
    for c in checks:
        result = (
            '<span class="result-pass">pass</span>'
            if c.passed
            else '<span class="result-fail">FAIL</span>'
        )
        if c.underpowered and c.passed:
            result += f' <span class="warn">underpowered (MDE {c.mde:.3f})</span>'
        rows.append(
            [
                esc(c.index),
                esc(c.slice),
                str(c.n_queries),
                esc(c.metric),
                fmt(c.baseline),
                fmt(c.current),
                _signed(c.delta),
                esc(_limit(c)),
                esc(_p(c)),
                result,
            ]
        )
    classes = ["" if c.passed else "failed" for c in checks]
    return _table(head, rows, (0, 1, 3, 7, 9), classes, "checks")


def _allowed_change(c: GateCheck) -> float | None:
    if c.kind == "max_drop":
        return -c.threshold
    if c.kind == "max_drop_pct" and c.baseline is not None:
        return -c.threshold / 100 * c.baseline
    return None


def gate_section(p: RunPage) -> Section | None:
    gate: GateSection | None = p.report.gate
    if gate is None:
        return None
    failed = gate.failed
    if gate.verdict == "pass":
        line = (
            f"All {len(gate.checks)} checks pass." if len(gate.checks) != 1 else "The check passes."
        )
    else:
        line = f"{len(failed)} of {len(gate.checks)} checks failed."
    parts = [f'<p class="verdict-line"><strong>{esc(line)}</strong></p>']
    if gate.baseline:
        parts.append(
            f"<p>Baseline <code>{esc(gate.baseline)}</code> (fingerprint "
            f"<code>{esc((gate.baseline_fingerprint or '')[:12])}</code>).</p>"
        )
    if gate.significance:
        s = gate.significance
        parts.append(
            f"<p>A drop fails only when significant: {esc(s.get('test'))} test, alpha "
            f"{esc(s.get('alpha'))}, {esc(s.get('correction'))} correction across checks.</p>"
        )
    if gate.changed:
        items = _changes(gate.changed)
        parts.append(f"<p>Changed since the baseline:</p><ul class='plain'>{items}</ul>")
    if failed:
        parts.append("<h3>Failed checks</h3>" + _checks_table(failed))
        messages = "".join(f"<li><code>{esc(c.name)}</code>: {esc(c.message)}</li>" for c in failed)
        parts.append(
            f"<details><summary>Why each check failed ({len(failed)} messages)</summary>"
            f"<ul class='plain'>{messages}</ul></details>"
        )
        drops = [c for c in failed if c.delta is not None and _allowed_change(c) is not None]
        if drops:
            rows = [
                DeltaRow(
                    f"{c.index}/{c.slice}/{c.metric}",
                    c.delta,
                    limit=_allowed_change(c),
                    tooltip=f"{c.name}: baseline {fmt(c.baseline)}, current {fmt(c.current)}, "
                    f"change {fmt(c.delta, signed=True)}, allowed {fmt(_allowed_change(c), True)}",
                    note=fmt(c.delta, signed=True),
                )
                for c in drops
            ]
            parts.append(
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
    weak = [c for c in gate.checks if c.underpowered and c.passed]
    if weak:
        parts.append(
            f'<p class="warn">{len(weak)} passing check(s) have slices too small to detect their '
            "threshold (minimum detectable drop, MDE, above it): a pass there is weak evidence.</p>"
        )
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
    return Section("metrics", "Metrics per index and slice", "".join(parts))


def ann_section(p: RunPage) -> Section | None:
    ann = p.report.ann
    if ann is None:
        return None
    floor = next(
        (c for c in (p.report.gate.checks if p.report.gate else []) if c.kind == "ann_min_recall"),
        None,
    )
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
                    f"{fmt(s.recall.get(k))}",
                )
                for k in cutoffs
            ],
            " / ".join(fmt(s.recall.get(k)) for k in cutoffs),
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
        f"{fmt(low)}); 0.95 is a realistic production figure."
        + (
            f" The dashed line is the gate's floor ({floor.threshold:g}, slice all)."
            if floor
            else ""
        )
    )
    all_slice = ann.slices.get("all", first)
    delta_rows = [
        DeltaRow(
            m,
            v,
            tooltip=f"{ann.index} − {ann.reference}, {m}, all queries: {fmt(v, signed=True)}",
            note=fmt(v, signed=True),
        )
        for m, v in all_slice.metric_deltas.items()
    ]
    loss_svg = delta_chart(
        delta_rows,
        label=f"metric change {ann.index} − {ann.reference}, all queries",
        x_label=f"{ann.index} − {ann.reference} (mean)",
    )
    head = ["slice", "n", *(esc(k) for k in cutoffs), *(f"Δ{esc(m)}" for m in first.metric_deltas)]
    table_rows = [
        [
            esc(name),
            str(s.n_queries),
            *(fmt(v) for v in s.recall.values()),
            *(_signed(v) for v in s.metric_deltas.values()),
        ]
        for name, s in ann.slices.items()
    ]
    body = (
        f"<p>The approximate index <code>{esc(ann.index)}</code> against exact search "
        f"<code>{esc(ann.reference)}</code> over the same vectors: how many true neighbours it "
        "finds, and what that costs in every metric.</p>"
        '<div class="grid">'
        + figure(f"{ann.index} recall@k against {ann.reference}", recall_svg, caption)
        + figure(
            f"Metric loss: {ann.index} − {ann.reference}, all queries",
            loss_svg,
            "Mean change of each metric when searching the approximate index instead of the "
            "exact one (left: loss). The table below has every slice.",
        )
        + "</div>"
        + _table(head, table_rows)
    )
    return Section("ann", f"{ann.index.upper()} against {ann.reference} search", body)


def _focus_index(p: RunPage, common: Sequence[str]) -> str:
    gate = p.report.gate
    for c in gate.failed if gate else []:
        if c.index in common:
            return c.index
    return "exact" if "exact" in common else common[0]


def per_query_section(p: RunPage) -> Section | None:
    metric = primary_metric(p.report)
    if not metric:
        return None
    if p.baseline is None:
        return _scores_without_baseline(p, metric)
    base = p.baseline
    common = [
        i for i in p.report.indexes if i in base.indexes and metric in base.indexes[i].per_query
    ]
    if not common or set(base.query_ids) != set(p.report.query_ids):
        return Section(
            "per-query",
            "Per-query changes",
            "<p>The baseline has no per-query scores for these queries and this metric.</p>",
        )
    before, after = p.sides
    parts = [
        f"<p>Change of <code>{esc(metric)}</code> for every query, current − baseline "
        "(the baseline's per-query scores are in the baseline file).</p>"
    ]
    for index in common:
        parts.append(f"<h3>{esc(index)}</h3>" + delta_distribution(before, after, index, metric))
    focus = _focus_index(p, common)
    delta = _aligned(base, p.report, focus, metric)
    order = np.argsort(delta, kind="stable")
    losers = np.array([i for i in order[:EXAMPLES] if delta[i] < 0], dtype=np.int64)
    gainers = np.array([i for i in order[::-1][:EXAMPLES] if delta[i] > 0], dtype=np.int64)
    what = f"{focus}, {metric}"
    if p.golden is None:
        parts.append('<p class="muted">Query and document texts: golden set not available.</p>')
    parts.append(
        examples_block(
            query_examples(base, p.report, focus, metric, losers, delta, p.golden),
            query_examples(base, p.report, focus, metric, gainers, delta, p.golden),
            ("baseline", "current"),
            what,
        )
    )
    return Section("per-query", "Per-query changes against the baseline", "".join(parts))


def _scores_without_baseline(p: RunPage, metric: str) -> Section:
    parts = [
        f"<p>No baseline, so no per-query change: the distribution of <code>{esc(metric)}</code> "
        "over the queries, and the queries it fails most. Gate against a baseline "
        "(<code>--baseline</code>) to see which queries lose and gain.</p>"
    ]
    charts = []
    for index, result in p.report.indexes.items():
        values = result.per_query.get(metric)
        if values is None:
            continue
        arr = np.asarray(values)
        charts.append(
            figure(
                f"{index}: distribution of {metric}",
                histogram(
                    values,
                    label=f"{index}: histogram of per-query {metric}",
                    x_label=f"{metric} of a query",
                    value_range=(0.0, 1.0),
                    bins=10,
                    signed=False,
                ),
                f"{len(arr)} queries; mean {fmt(float(arr.mean()) if len(arr) else None)}, "
                f"{int((arr == 0).sum())} score 0, {int((arr == 1).sum())} score 1.",
            )
        )
    parts.append(f'<div class="grid">{"".join(charts)}</div>')
    focus = "exact" if "exact" in p.report.indexes else next(iter(p.report.indexes))
    scores = np.asarray(p.report.indexes[focus].per_query[metric], dtype=np.float64)
    order = np.argsort(scores, kind="stable")[:EXAMPLES]
    examples = query_examples(p.report, p.report, focus, metric, order, scores, p.golden)
    cards = "".join(query_card(e, None) for e in examples)
    if p.golden is None:
        parts.append('<p class="muted">Query and document texts: golden set not available.</p>')
    parts.append(f"<h3>Lowest-scoring queries ({esc(focus)}, {esc(metric)})</h3>{cards}")
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
        ("evalret", _value(f.evalret_version)),
        ("embedding", _value({k: v for k, v in r.embedding.items() if k != "cache"})),
        ("embedding cache", _value(r.embedding.get("cache"))),
        ("bootstrap", _value(r.bootstrap)),
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
                tooltip=f"{name}: {title} {metric} = {fmt(getattr(s, key).get(metric), True)}; "
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


RunSection = Callable[[RunPage], Section | None]
# The run page, in order. A new section is a function (RunPage) -> Section | None added here.
RUN_SECTIONS: list[RunSection] = [
    gate_section,
    metrics_section,
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
        f"{g.n_queries_evaluated} queries evaluated) · model <code>{esc(model)}</code> · "
        f"fingerprint <code>{esc(r.fingerprint.digest[:12])}</code> · evalret "
        f"{esc(r.evalret_version)}</p>"
    )


def render_run_html(
    report: RunReport, baseline: RunReport | None = None, golden: GoldenSet | None = None
) -> str:
    """report.html of a run. With ``baseline`` its bars and per-query changes are drawn beside
    the run's; with ``golden`` the listed queries show their texts and documents."""
    p = RunPage(report, baseline, golden)
    gate = report.gate
    if gate is None:
        badge = _badge("neutral", "NO GATE")
    elif gate.verdict == "pass":
        badge = _badge("pass", "✔ GATE PASSED")
    else:
        badge = _badge("fail", f"✖ GATE FAILED: {len(gate.failed)} of {len(gate.checks)} checks")
    sections = [s for s in (fn(p) for fn in RUN_SECTIONS) if s is not None]
    return page("evalret run report", badge, _run_meta(report), sections, "run")


# --- the compare page --------------------------------------------------------------------------


@dataclass(frozen=True)
class ComparePage:
    """A comparison, and the two run reports when known (bars, per-query changes, curves)."""

    comparison: CompareReport
    a: RunReport | None
    b: RunReport | None

    @property
    def sides(self) -> list[Side] | None:
        if self.a is None or self.b is None:
            return None
        return [Side("A", self.a, GREY), Side("B", self.b, BLUE)]


def _side_text(side: dict[str, Any]) -> str:
    model = side.get("model", {})
    name = model.get("source", model.get("name"))
    return f"<code>{esc(side.get('label'))}</code> (model <code>{esc(name)}</code>)"


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


def compare_changes_section(p: ComparePage) -> Section:
    c = p.comparison
    s = c.settings
    primary = s.get("primary", "")
    parts = [
        f"<p>B − A per slice with the {float(s.get('confidence', 0.95)):.0%} percentile bootstrap "
        f"interval of the paired differences. Solid bars and * are significant after the "
        f"{esc(s.get('correction'))} correction (randomization test, alpha {esc(s.get('alpha'))}); "
        "light bars are not.</p>"
    ]
    for index, slices in c.indexes.items():
        parts.append(f"<h3>{esc(index)}</h3>")
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
                            f"{index}/{name}/{metric}: A {fmt(m.a)}, B {fmt(m.b)}, "
                            f"delta {fmt(m.delta, True)} [{fmt(m.ci_low, True)}, "
                            f"{fmt(m.ci_high, True)}], p rand. {m.p_randomization:.3g} "
                            f"(adj. {m.p_randomization_adjusted:.3g}), p t {m.p_t_test:.3g} "
                            f"(adj. {m.p_t_test_adjusted:.3g}), W/T/L {m.wins}/{m.ties}/{m.losses}"
                            + (f", MDE {mde:.3f}" if mde is not None else "")
                        ),
                        note=fmt(m.delta, True) + (" *" if m.significant else ""),
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
        parts.append(f'<div class="grid">{"".join(charts)}</div>')
        head = [*COMPARE_COLUMNS, "diagnosis"]
        rows_t = []
        for name, sc in slices.items():
            if primary not in sc.metrics:
                continue
            m = sc.metrics[primary]
            mde = sc.mde.get(primary)
            delta = f"<strong>{_signed(m.delta)}</strong>" if m.significant else _signed(m.delta)
            rows_t.append(
                [
                    esc(name),
                    str(sc.n_queries),
                    fmt(m.a),
                    fmt(m.b),
                    delta,
                    f"[{fmt(m.ci_low, True)}, {fmt(m.ci_high, True)}]",
                    f"{m.p_randomization:.3g} ({m.p_randomization_adjusted:.3g})",
                    f"{m.p_t_test:.3g} ({m.p_t_test_adjusted:.3g})",
                    f"{m.wins}/{m.ties}/{m.losses}",
                    "–" if mde is None else f"{mde:.3f}",
                    f'<span style="white-space:normal">{esc(sc.diagnosis)}</span>',
                ]
            )
        parts.append(
            f"<details><summary>{esc(index)}: {esc(primary)} per slice, with tests and "
            f"diagnosis</summary>{_table(head, rows_t)}</details>"
        )
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
    primary = c.settings.get("primary", "")
    parts = []
    sides = p.sides
    if sides is not None:
        for index in c.indexes:
            parts.append(
                f"<h3>{esc(index)}</h3>" + delta_distribution(sides[0], sides[1], index, primary)
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
        ("golden set", _value(c.golden_set)),
        ("primary index", _value(c.primary_index)),
        *((f"setting {k}", _value(v)) for k, v in c.settings.items()),
        ("A fingerprint", _value(c.a.get("fingerprint"))),
        ("A model", _value(c.a.get("model"))),
        ("A indexes", _value(c.a.get("indexes"))),
        ("B fingerprint", _value(c.b.get("fingerprint"))),
        ("B model", _value(c.b.get("model"))),
        ("B indexes", _value(c.b.get("indexes"))),
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


def render_compare_html(
    comparison: CompareReport, a: RunReport | None = None, b: RunReport | None = None
) -> str:
    """report.html of a comparison; with the run reports ``a`` and ``b``, also their bars with
    intervals, the per-query distribution and the metric@k curves."""
    p = ComparePage(comparison, a, b)
    status = comparison.verdict.status
    state = {"candidate": "pass", "not a candidate": "fail"}.get(status, "neutral")
    icon = {"candidate": "✔ ", "not a candidate": "✖ "}.get(status, "")
    badge = _badge(state, f"{icon}{status.upper()}")
    g = comparison.golden_set
    meta = (
        f'<p class="meta">A {_side_text(comparison.a)} · B {_side_text(comparison.b)} · golden '
        f"set <code>{esc(g.get('source'))}</code> ({esc(g.get('n_queries'))} queries) · evalret "
        f"{esc(comparison.evalret_version)}</p>"
    )
    sections = [s for s in (fn(p) for fn in COMPARE_SECTIONS) if s is not None]
    return page("evalret comparison report", badge, meta, sections, "compare")
