"""`evalret sweep`'s views: the terminal table (a row per grid point and index) and sweep.html
(the Pareto scatter plots of quality against latency and against memory, the table of every
point, and how the figures were measured), in report.html's style (``html.document.page``). Every
setting, index name and path is escaped."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from evalret.core.metrics import is_plain_cut, parse_metrics
from evalret.data.sweep import SweepIndex, SweepPoint, SweepReport
from evalret.report.escape import markup_safe
from evalret.report.html.document import Section, page
from evalret.report.numbers import HTML, PLAIN, Medium, number
from evalret.report.svg import PALETTE, ScatterPoint, esc, figure, scatter_chart

MIB = 1024 * 1024
MACHINE_NOTE = (
    "Latency, QPS and build time are machine-dependent: measured on this machine under its "
    "load at the time; compare them within one sweep, not across machines."
)


def settings_text(point: SweepPoint) -> str:
    """A point's --set values as ``key=value`` pairs (values as JSON)."""
    return ", ".join(f"{k}={json.dumps(v)}" for k, v in point.settings.items())


def _recall_keys(report: SweepReport) -> list[str]:
    """The points' plain recall@k metrics, shallowest first (names parsed by the registry: a
    judged-only ``recall@10:judged`` is not one)."""
    keys = {m for p in report.points for i in p.indexes.values() for m in i.metrics}
    return [str(m) for m in sorted(parse_metrics(keys)) if is_plain_cut(m, "recall")]


def _ann_key(report: SweepReport) -> str | None:
    keys = {k for p in report.points for i in p.indexes.values() for k in (i.ann_recall or {})}
    if not keys:
        return None
    ordered = sorted(keys, key=lambda k: int(k.split("@")[1]))
    return "recall@10" if "recall@10" in keys else ordered[0]


def _value(index: SweepIndex, metric: str) -> float | None:
    v = index.metrics.get(metric)
    return v.value if v is not None else None


def _front(index: SweepIndex) -> str:
    return "/".join(
        n for n, on in (("latency", index.pareto_latency), ("memory", index.pareto_memory)) if on
    )


def _row(report: SweepReport, point: SweepPoint, name: str, medium: Medium) -> list[str]:
    """The figures of one index at one point, formatted for ``medium`` (not escaped)."""
    index = point.indexes[name]
    c = index.cost
    ann = _ann_key(report)
    cells = [
        number(_value(index, report.quality_metric), medium=medium),
        *(number(_value(index, m), medium=medium) for m in _recall_keys(report)),
    ]
    if ann is not None:
        cells.append(number((index.ann_recall or {}).get(ann), medium=medium))
    if c is None:
        return cells + [medium.missing] * 7
    return [
        *cells,
        f"{c.p50_ms:.3f}",
        f"{c.p95_ms:.3f}",
        f"{c.qps:,.0f}",
        medium.missing if c.distances_per_query is None else f"{c.distances_per_query:,.0f}",
        f"{c.build_s:.2f}",
        medium.missing if c.index_bytes is None else f"{c.index_bytes / MIB:.2f}",
        f"{c.vector_bytes / MIB:.2f}",
    ]


def _head(report: SweepReport) -> list[str]:
    ann = _ann_key(report)
    return [
        report.quality_metric,
        *_recall_keys(report),
        *([f"ANN {ann}"] if ann else []),
        "p50 ms",
        "p95 ms",
        "QPS",
        "distances/q",
        "build s",
        "index MiB",
        "vectors MiB",
    ]


def sweep_table(report: SweepReport) -> Any:
    """A rich Table: a row per point and index, slice all; the Pareto fronts it is on."""
    from rich.table import Table

    table = Table(
        title=f"evalret sweep: {len(report.points)} points, slice {report.slice} "
        f"({report.n_queries} queries); timings machine-dependent",
        title_justify="left",
    )
    table.add_column("#", justify="right")
    for axis in report.axes:
        table.add_column(markup_safe(axis), justify="right")
    table.add_column("index")
    for h in _head(report):
        table.add_column(h, justify="right")
    table.add_column("Pareto")
    for p in report.points:
        for name in p.indexes:
            table.add_row(
                str(p.id),
                *(markup_safe(json.dumps(p.settings.get(a))) for a in report.axes),
                markup_safe(name),
                *_row(report, p, name, PLAIN),
                _front(p.indexes[name]),
            )
    return table


def _scatter(report: SweepReport, memory: bool) -> str:
    """Quality against p50 latency (or index size) of every (point, faiss index)."""
    q = report.quality_metric
    names = list(dict.fromkeys(n for p in report.points for n, i in p.indexes.items() if i.cost))
    points = []
    for p in report.points:
        for name, index in p.indexes.items():
            value = _value(index, q)
            size = index.cost.index_bytes if index.cost is not None else None
            if index.cost is None or value is None or (memory and size is None):
                continue
            x = size / MIB if memory and size is not None else index.cost.p50_ms
            tip = f"#{p.id} {name} · {settings_text(p)} · {q} {value:.4f}"
            tip += f" · p50 {index.cost.p50_ms:.3f} ms"
            if size is not None:
                tip += f" · {size / MIB:.2f} MiB"
            marked = index.pareto_memory if memory else index.pareto_latency
            color = PALETTE[names.index(name) % len(PALETTE)]
            points.append(ScatterPoint(x, value, name, color, tip, marked))
    what = "index size" if memory else "p50 single-query latency"
    if not points:
        return f'<p class="muted">No faiss index to draw against {esc(what)}.</p>'
    svg = scatter_chart(
        points,
        label=f"{q} against {what} per sweep point and index",
        x_label="index size (MiB)" if memory else "p50 latency (ms, machine-dependent)",
        y_label=q,
    )
    caption = (
        f"{q} (slice {report.slice}) against {what}, one dot per point and index; ringed and "
        "joined: the Pareto front (no other point has higher quality at lower cost)."
    )
    return figure(
        f"{q} against {what}", svg, caption, "pareto-" + ("memory" if memory else "latency")
    )


def _points_table(report: SweepReport) -> str:
    head = ["#", *report.axes, "index", *_head(report), "Pareto front"]
    rows = []
    for p in report.points:
        for name, index in p.indexes.items():
            front = _front(index)
            rows.append(
                [
                    str(p.id),
                    *(f"<code>{esc(json.dumps(p.settings.get(a)))}</code>" for a in report.axes),
                    esc(name),
                    *(esc(c) for c in _row(report, p, name, HTML)),
                    f'<strong class="pareto-mark">{esc(front)}</strong>' if front else "",
                ]
            )
    th = "".join(f"<th>{esc(h)}</th>" for h in head)
    cell = '<td style="white-space: nowrap">'
    body = "".join("<tr>" + "".join(f"{cell}{c}</td>" for c in r) + "</tr>" for r in rows)
    return (
        f'<div class="table-wrap"><table class="sweep-points"><thead><tr>{th}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )


def _kv(rows: Sequence[tuple[str, str]]) -> str:
    body = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in rows)
    return f'<div class="table-wrap"><table class="kv"><tbody>{body}</tbody></table></div>'


def sweep_html(report: SweepReport) -> str:
    """The whole sweep page."""
    note = f'<p class="warn machine-note">{esc(MACHINE_NOTE)}</p>'
    plots = '<div class="grid">' + _scatter(report, False) + _scatter(report, True) + "</div>"
    measured = _kv(
        [*report.timing.items(), ("repeats", str(report.repeats))]
        + [(f"machine {k}", str(v)) for k, v in report.machine.items()]
    )
    sections = [
        Section("pareto", "Quality against cost", note + plots),
        Section("points", "Points", _points_table(report)),
        Section("measured", "How it was measured", note + measured),
    ]
    axes = " · ".join(
        f"<code>{esc(k)}</code> = {esc(', '.join(json.dumps(v) for v in vs))}"
        for k, vs in report.axes.items()
    )
    meta = (
        f'<p class="meta">Config <code>{esc(report.config)}</code> · {axes} · '
        f"{report.n_queries} queries, {report.n_documents} documents · slice {esc(report.slice)}"
        "</p>"
    )
    badge = (
        '<span id="verdict" class="badge neutral" data-verdict="neutral" role="status">'
        f"{len(report.points)} POINTS</span>"
    )
    return page("evalret sweep", badge, meta, sections, "sweep")
