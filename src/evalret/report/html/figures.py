"""What both report.html pages draw, with "baseline / current" on a run and "A / B" on a
comparison: metric bars with intervals, the per-query change of one metric, query cards with
their top results, and metric@k curves."""

from __future__ import annotations

from collections.abc import Sequence, Set
from dataclasses import dataclass

from evalret.data.schema import MetricCurves, QueryExample, RankedDoc, RunReport
from evalret.report.html.document import num, signed_num
from evalret.report.per_query import DeltaSpread
from evalret.report.run_notes import interval_mark
from evalret.report.svg import (
    BLUE,
    DASHES,
    ORANGE,
    PALETTE,
    Bar,
    BarRow,
    Line,
    Series,
    bar_chart,
    esc,
    figure,
    histogram,
    line_chart,
    sorted_deltas,
)

DOC_CHARS = 120  # document text shown per listed result
CURVE_MARKS = (1, 2, 3, 5, 10, 20, 50, 100, 200, 500, 1000)
FAMILY_COLOR = {"recall": BLUE, "ndcg": ORANGE}


@dataclass(frozen=True)
class Side:
    """One report drawn on a page and its name there (baseline, current, A, B)."""

    name: str
    report: RunReport
    color: str


def confidence_text(report: RunReport) -> str:
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
                label = " ".join(
                    filter(None, (confidence_text(side.report), "CI", interval_mark(mv)))
                )
                ci = f", {label} [{num(mv.ci_low)}, {num(mv.ci_high)}]"
                bars.append(
                    Bar(
                        mv.value,
                        mv.ci_low,
                        mv.ci_high,
                        f"{side.name}: {index} / {name} / {metric} = {num(mv.value)}"
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
                    num(values[-1]),
                    f"{name}: {sl.n_queries} queries, {sl.reliability}",
                    muted=sl.reliability == "unreliable",
                    change=change,
                )
            )
        series = [Series(s.name, s.color) for s in present]
        names = " beside ".join(s.name for s in present)
        conf = confidence_text(present[-1].report)
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
        f"mean change {num(spread.mean, signed=True)}."
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
        head = f'<span class="delta">{num(e.a)}</span>'
        lists = relevant + f"<div><h5>Top results</h5>{_docs(e.a_top, ids)}</div>"
        scores = ""
    else:
        kind = "loss" if e.delta < 0 else "gain"
        head = f'<span class="delta">{signed_num(e.delta)}</span>'
        lists = (
            relevant
            + f"<div><h5>{esc(names[0])}: top results</h5>{_docs(e.a_top, ids)}</div>"
            + f"<div><h5>{esc(names[1])}: top results</h5>{_docs(e.b_top, ids)}</div>"
        )
        before, after = f"{esc(names[0])} {num(e.a)}", f"{esc(names[1])} {num(e.b)}"
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
