"""Hand-built inline SVG charts for the HTML report: pure functions from numbers to SVG text.

Every chart carries an accessible name, axis labels, and an SVG ``<title>`` (the browser's tooltip)
on each mark with its exact values. Colours are presentation attributes, so a chart renders the
same with or without the page's stylesheet; every text that reaches the SVG is escaped. Nothing
here knows about reports: the page module turns reports into rows and series.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evalret.report.escape import html_text
from evalret.report.numbers import HTML, number

# Okabe-Ito colours (distinguishable with the common colour-vision deficiencies)
BLUE = "#0072B2"
ORANGE = "#E69F00"
GREEN = "#009E73"
VERMILLION = "#D55E00"
PINK = "#CC79A7"
SKY = "#56B4E9"
GREY = "#8A8A8A"
INK = "#1F2328"
MUTED = "#59636E"
GRID = "#D8DEE4"
LOSS = VERMILLION
GAIN = BLUE
LOSS_TEXT = "#B3261E"  # darker, for text on white (contrast above 4.5:1)
GAIN_TEXT = "#005A8C"
PALETTE = (BLUE, ORANGE, GREEN, PINK, SKY, VERMILLION, "#000000", GREY)
DASHES = ("", "6 3", "2 3", "8 3 2 3")
FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"
WIDTH = 520
MAX_BARS = 600  # a sorted-delta chart draws at most this many query bars (quantiles beyond)


def esc(text: object) -> str:
    """Text escaped for an HTML or SVG element or a quoted attribute."""
    return html_text(str(text))


def _n(v: float) -> str:
    """A coordinate: short, stable text."""
    return f"{v:.1f}".rstrip("0").rstrip(".") if v == v else "0"


def nice_ticks(lo: float, hi: float, count: int = 5, outward: bool = False) -> list[float]:
    """Round tick values (about ``count`` of them) inside [lo, hi]; with ``outward`` the first
    and last ticks enclose [lo, hi] instead, so that they can bound an axis."""
    if hi <= lo:
        hi = lo + 1.0
    raw = (hi - lo) / max(count, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    if outward:
        start = math.floor(lo / step + 1e-9)
        stop = math.ceil(hi / step - 1e-9)
    else:
        start = math.ceil(lo / step - 1e-9)
        stop = math.floor(hi / step + 1e-9)
    # 12 significant digits drop the float noise of i * step (0.30000000000000004) at any
    # scale: rounding to 10 decimals made every tick of a range below 1e-10 zero
    return [float(f"{i * step:.12g}") + 0.0 for i in range(start, stop + 1)]


def _tick_label(v: float, ticks: Sequence[float]) -> str:
    step = abs(ticks[1] - ticks[0]) if len(ticks) > 1 else 1.0
    if 0 < step < 1e-4:  # float noise and other tiny ranges: 2.5e-16, not a row of zeros
        return "0" if v == 0 else f"{v:.2g}"
    decimals = max(0, min(4, -math.floor(math.log10(step)) + (0 if step >= 1 else 1)))
    if step >= 1 and float(step).is_integer():
        decimals = 0
    text = f"{v:.{decimals}f}"
    return "0" if text.strip("-0.") == "" else text


def _text(
    x: float,
    y: float,
    text: str,
    anchor: str = "start",
    size: float = 12,
    fill: str = INK,
    weight: str = "normal",
    extra: str = "",
) -> str:
    return (
        f'<text x="{_n(x)}" y="{_n(y)}" text-anchor="{anchor}" font-size="{size:g}" '
        f'fill="{fill}" font-weight="{weight}"{extra}>{esc(text)}</text>'
    )


def _svg(width: float, height: float, label: str, body: list[str], cls: str) -> str:
    return (
        f'<svg class="chart-svg {cls}" xmlns="http://www.w3.org/2000/svg" '
        f'viewBox="0 0 {_n(width)} {_n(height)}" width="{_n(width)}" height="{_n(height)}" '
        f'role="img" aria-label="{esc(label)}" font-family="{esc(FONT)}">'
        f"<title>{esc(label)}</title>" + "".join(body) + "</svg>"
    )


def figure(title: str, svg: str, caption: str, cls: str = "") -> str:
    """A chart with its visible title and caption."""
    return (
        f'<figure class="chart {esc(cls)}"><div class="chart-title">{esc(title)}</div>{svg}'
        f"<figcaption>{esc(caption)}</figcaption></figure>"
    )


def _clip_label(label: str, limit: int) -> str:
    return label if len(label) <= limit else label[: limit - 1] + "…"


def _label_width(labels: Sequence[str], limit: int = 24) -> float:
    longest = max((len(_clip_label(s, limit)) for s in labels), default=4)
    return 14 + min(longest, limit) * 7.0


def _x_axis(
    ticks: Sequence[float],
    to_x: Callable[[float], float],
    top: float,
    bottom: float,
    label: str,
    centre: float,
    labels: Sequence[str] | None = None,
) -> list[str]:
    out = []
    for i, t in enumerate(ticks):
        x = to_x(t)
        out.append(
            f'<line class="grid" x1="{_n(x)}" x2="{_n(x)}" y1="{_n(top)}" y2="{_n(bottom)}" '
            f'stroke="{GRID}" stroke-width="1"/>'
        )
        text = labels[i] if labels is not None else _tick_label(t, ticks)
        out.append(_text(x, bottom + 14, text, "middle", 11, MUTED))
    out.append(_text(centre, bottom + 31, label, "middle", 12, INK, extra=' class="axis-label"'))
    return out


def _y_axis(
    ticks: Sequence[float],
    to_y: Callable[[float], float],
    x0: float,
    x1: float,
    plot: tuple[float, float],
    label: str,
    signed: bool = False,
) -> list[str]:
    """Horizontal grid lines with tick labels on the left, and the rotated axis label; ``plot``
    is (top, height) of the plotting area; ``signed`` puts "+" before positive ticks."""
    top, height = plot
    out = []
    for t in ticks:
        y = to_y(t)
        out.append(
            f'<line class="grid" x1="{_n(x0)}" x2="{_n(x1)}" y1="{_n(y)}" y2="{_n(y)}" '
            f'stroke="{GRID}"/>'
        )
        text = _tick_label(t, ticks)
        out.append(_text(x0 - 6, y + 4, "+" + text if signed and t > 0 else text, "end", 11, MUTED))
    middle = top + height / 2
    out.append(
        _text(
            12,
            middle,
            label,
            "middle",
            12,
            extra=f' class="axis-label" transform="rotate(-90 12 {_n(middle)})"',
        )
    )
    return out


@dataclass(frozen=True)
class Series:
    """One series of a bar chart: its name and colour."""

    name: str
    color: str


@dataclass(frozen=True)
class Bar:
    """One bar: a value with an optional interval and the tooltip text."""

    value: float | None
    low: float | None = None
    high: float | None = None
    tooltip: str = ""


@dataclass(frozen=True)
class BarRow:
    """One row of a horizontal bar chart: one bar per series, and a note printed on the right."""

    label: str
    bars: Sequence[Bar]
    note: str = ""
    tooltip: str = ""
    muted: bool = False  # e.g. a slice too small to be reliable
    change: float | None = None  # printed after the note, coloured by its sign


@dataclass(frozen=True)
class _BarFrame:
    """Where a bar chart draws: the plot's left and right edges, the top of the first row, the
    height of a row group, the full width, and the value-to-x mapping."""

    x0: float
    x1: float
    top: float
    group: float
    width: float
    to_x: Callable[[float], float]


BAR_H, BAR_GAP, BAR_PAD = 9.0, 2.0, 7.0  # a bar's height, the gap between bars, a group's pad


def _bar_legend(series: Sequence[Series], x0: float, intervals: bool) -> list[str]:
    """A swatch and name per series across the top, and the interval whisker's key."""
    body = []
    lx = x0
    for s in series:
        body.append(f'<rect x="{_n(lx)}" y="6" width="11" height="11" fill="{s.color}" rx="1"/>')
        body.append(_text(lx + 15, 15.5, s.name, size=11))
        lx += 22 + len(s.name) * 6.4
    if intervals:
        body.append(
            f'<line x1="{_n(lx)}" x2="{_n(lx + 16)}" y1="11.5" y2="11.5" stroke="{INK}" '
            'stroke-width="1.5"/>'
        )
        body.append(_text(lx + 20, 15.5, "interval", size=11, fill=MUTED))
    return body


def _bar(frame: _BarFrame, b: Bar, color: str, by: float, muted: bool) -> list[str]:
    """One bar from the axis at height ``by`` with its tooltip and interval whisker, or the
    note "no queries" when it has no value."""
    x0, to_x = frame.x0, frame.to_x
    if b.value is None:
        return [_text(x0 + 4, by + BAR_H - 2, "no queries", size=10, fill=MUTED)]
    tip = f"<title>{esc(b.tooltip)}</title>" if b.tooltip else ""
    w = max(to_x(b.value) - x0, 0.0)
    opacity = ' fill-opacity="0.55"' if muted else ""
    out = [
        f'<g class="mark">{tip}<rect class="bar" x="{_n(x0)}" y="{_n(by)}" '
        f'width="{_n(w)}" height="{_n(BAR_H)}" fill="{color}"{opacity}/>'
    ]
    if b.low is not None and b.high is not None:
        a, c, cy = to_x(b.low), to_x(b.high), by + BAR_H / 2
        out.append(
            f'<g class="ci" stroke="{INK}" stroke-width="1.4">'
            f'<line class="whisker" x1="{_n(a)}" x2="{_n(c)}" y1="{_n(cy)}" '
            f'y2="{_n(cy)}"/>'
            f'<line x1="{_n(a)}" x2="{_n(a)}" y1="{_n(cy - 4)}" y2="{_n(cy + 4)}"/>'
            f'<line x1="{_n(c)}" x2="{_n(c)}" y1="{_n(cy - 4)}" y2="{_n(cy + 4)}"/></g>'
        )
    out.append("</g>")
    return out


def _bar_row(frame: _BarFrame, i: int, row: BarRow, series: Sequence[Series]) -> list[str]:
    """Row ``i``: its stripe, its label, one bar per series and the note on the right."""
    y = frame.top + i * frame.group
    body = []
    if i % 2:
        body.append(
            f'<rect x="0" y="{_n(y)}" width="{_n(frame.width)}" height="{_n(frame.group)}" '
            'fill="#F6F8FA"/>'
        )
    mid = y + frame.group / 2
    title = f"<title>{esc(row.tooltip)}</title>" if row.tooltip else ""
    label = _clip_label(row.label, 24)
    body.append(
        f'<g class="row-label">{title}'
        + _text(frame.x0 - 8, mid + 4, label, "end", 12, MUTED if row.muted else INK)
        + "</g>"
    )
    for j, (s, b) in enumerate(zip(series, row.bars, strict=True)):
        body += _bar(frame, b, s.color, y + BAR_PAD + j * (BAR_H + BAR_GAP), row.muted)
    if row.note or row.change is not None:
        change = ""
        if row.change is not None:
            color = LOSS_TEXT if row.change < 0 else GAIN_TEXT if row.change > 0 else INK
            shown = esc(number(row.change, signed=True, medium=HTML))
            change = f' <tspan fill="{color}">({shown})</tspan>'
        body.append(
            f'<text class="note" x="{_n(frame.x1 + 8)}" y="{_n(mid + 4)}" font-size="11.5" '
            f'fill="{INK}">{esc(row.note)}{change}</text>'
        )
    return body


def bar_chart(
    rows: Sequence[BarRow],
    series: Sequence[Series],
    *,
    label: str,
    x_label: str,
    x_range: tuple[float, float] = (0.0, 1.0),
    reference: tuple[float, str] | None = None,
    width: float = WIDTH,
) -> str:
    """Horizontal bars, grouped per row (one bar per series), each with its interval whisker.

    ``reference`` draws a dashed vertical line (e.g. a threshold) with its label.
    """
    left = _label_width([r.label for r in rows])
    right = 112.0
    intervals = any(b.low is not None for r in rows for b in r.bars)
    top = 26.0 if len(series) > 1 or intervals else 10.0
    group = len(series) * BAR_H + (len(series) - 1) * BAR_GAP + 2 * BAR_PAD
    plot_h = max(group * len(rows), 20.0)
    height = top + plot_h + 40
    x0, x1 = left, width - right
    lo, hi = x_range
    if hi <= lo:
        hi = lo + 1.0

    def to_x(v: float) -> float:
        return x0 + (min(max(v, lo), hi) - lo) / (hi - lo) * (x1 - x0)

    frame = _BarFrame(x0, x1, top, group, width, to_x)
    body = _x_axis(nice_ticks(lo, hi), to_x, top, top + plot_h, x_label, (x0 + x1) / 2)
    if top > 10:
        body += _bar_legend(series, x0, intervals)
    for i, row in enumerate(rows):
        body += _bar_row(frame, i, row, series)
    if reference is not None:
        rx = to_x(reference[0])
        body.append(
            f'<g class="reference"><title>{esc(reference[1])}</title>'
            f'<line x1="{_n(rx)}" x2="{_n(rx)}" y1="{_n(top - 4)}" y2="{_n(top + plot_h)}" '
            f'stroke="{VERMILLION}" stroke-width="1.6" stroke-dasharray="5 3"/></g>'
        )
    return _svg(width, height, label, body, "bar-chart")


@dataclass(frozen=True)
class DeltaRow:
    """One row of a diverging chart: a change, its interval, and a limit it may cross."""

    label: str
    delta: float | None
    low: float | None = None
    high: float | None = None
    strong: bool = True  # drawn solid (significant / failed); light otherwise
    limit: float | None = None  # e.g. minus the allowed drop
    tooltip: str = ""
    note: str = ""


def delta_chart(rows: Sequence[DeltaRow], *, label: str, x_label: str, width: float = WIDTH) -> str:
    """Changes around zero: bars left (loss) or right (gain), interval whiskers, limit ticks."""
    row_h = 24.0
    left = _label_width([r.label for r in rows], 30)
    right = 92.0
    top = 10.0
    plot_h = max(row_h * len(rows), 20.0)
    height = top + plot_h + 40
    values = [v for r in rows for v in (r.delta, r.low, r.high, r.limit) if v is not None]
    lo, hi = min([0.0, *values]), max([0.0, *values])
    if hi - lo < 2e-3:  # nothing moves: a small symmetric axis around zero
        lo, hi = min(lo, -1e-3), max(hi, 1e-3)
    ticks = nice_ticks(lo, hi, 4, outward=True)
    lo, hi = ticks[0], ticks[-1]
    x0, x1 = left, width - right

    def to_x(v: float) -> float:
        return x0 + (v - lo) / (hi - lo) * (x1 - x0)

    body = _x_axis(ticks, to_x, top, top + plot_h, x_label, (x0 + x1) / 2)
    zero = to_x(0.0)
    for i, r in enumerate(rows):
        y = top + i * row_h
        mid = y + row_h / 2
        if i % 2:
            body.append(
                f'<rect x="0" y="{_n(y)}" width="{_n(width)}" height="{_n(row_h)}" fill="#F6F8FA"/>'
            )
        body.append(_text(left - 8, mid + 4, _clip_label(r.label, 30), "end", 12))
        tip = f"<title>{esc(r.tooltip)}</title>" if r.tooltip else ""
        body.append(f'<g class="mark">{tip}')
        if r.delta is not None:
            x = to_x(r.delta)
            color = LOSS if r.delta < 0 else GAIN
            body.append(
                f'<rect class="bar delta" x="{_n(min(x, zero))}" y="{_n(mid - 6)}" '
                f'width="{_n(max(abs(x - zero), 1.0))}" height="12" fill="{color}" '
                f'fill-opacity="{1.0 if r.strong else 0.4}"/>'
            )
        if r.low is not None and r.high is not None:
            a, c = to_x(r.low), to_x(r.high)
            body.append(
                f'<g class="ci" stroke="{INK}" stroke-width="1.4">'
                f'<line class="whisker" x1="{_n(a)}" x2="{_n(c)}" y1="{_n(mid)}" y2="{_n(mid)}"/>'
                f'<line x1="{_n(a)}" x2="{_n(a)}" y1="{_n(mid - 4)}" y2="{_n(mid + 4)}"/>'
                f'<line x1="{_n(c)}" x2="{_n(c)}" y1="{_n(mid - 4)}" y2="{_n(mid + 4)}"/></g>'
            )
        if r.limit is not None:
            lx = to_x(r.limit)
            body.append(
                f'<line class="limit" x1="{_n(lx)}" x2="{_n(lx)}" y1="{_n(y + 2)}" '
                f'y2="{_n(y + row_h - 2)}" stroke="{INK}" stroke-width="2" '
                'stroke-dasharray="3 2"/>'
            )
        body.append("</g>")
        if r.note:
            body.append(_text(x1 + 8, mid + 4, r.note, size=11.5, extra=' class="note"'))
    body.append(
        f'<line x1="{_n(zero)}" x2="{_n(zero)}" y1="{_n(top)}" y2="{_n(top + plot_h)}" '
        f'stroke="{INK}" stroke-width="1"/>'
    )
    return _svg(width, height, label, body, "delta-chart")


def histogram(
    values: Sequence[float],
    *,
    label: str,
    x_label: str,
    y_label: str = "queries",
    value_range: tuple[float, float] | None = None,
    bins: int = 20,
    signed: bool = True,
    width: float = WIDTH,
) -> str:
    """Counts of ``values`` in equal bins; with ``signed`` bars left of zero are losses."""
    data = np.asarray(values, dtype=np.float64)
    if value_range is None:
        extent = float(np.abs(data).max()) if data.size else 1.0
        extent = extent if extent > 0 else 1.0
        value_range = (-extent, extent)
    counts, edges = np.histogram(data, bins=bins, range=value_range)
    left, right, top = 46.0, 16.0, 10.0
    plot_h = 170.0
    height = top + plot_h + 42
    x0, x1 = left, width - right
    y_ticks = nice_ticks(0, max(int(counts.max(initial=0)), 4), 4, outward=True)
    y_max = y_ticks[-1]
    lo, hi = float(edges[0]), float(edges[-1])

    def to_x(v: float) -> float:
        return x0 + (v - lo) / (hi - lo) * (x1 - x0)

    def to_y(c: float) -> float:
        return top + plot_h - c / y_max * plot_h

    body = _y_axis(y_ticks, to_y, x0, x1, (top, plot_h), y_label)
    x_ticks = nice_ticks(lo, hi, 6)
    for t in x_ticks:
        body.append(_text(to_x(t), top + plot_h + 14, _tick_label(t, x_ticks), "middle", 11, MUTED))
    body.append(_text((x0 + x1) / 2, top + plot_h + 32, x_label, "middle", 12, INK))
    for c, a, b in zip(counts.tolist(), edges[:-1].tolist(), edges[1:].tolist(), strict=True):
        if c == 0:
            continue
        centre = (a + b) / 2
        color = (LOSS if centre < 0 else GAIN) if signed else BLUE
        xa, xb = to_x(a), to_x(b)
        closing = "]" if b == hi else ")"
        body.append(
            f'<g class="mark"><title>{esc(f"[{a:+.3f}, {b:+.3f}{closing}: {c} queries")}</title>'
            f'<rect class="bar hist" x="{_n(xa + 0.5)}" y="{_n(to_y(c))}" '
            f'width="{_n(max(xb - xa - 1, 0.5))}" height="{_n(to_y(0) - to_y(c))}" '
            f'fill="{color}"/></g>'
        )
    body.append(
        f'<line x1="{_n(x0)}" x2="{_n(x1)}" y1="{_n(to_y(0))}" y2="{_n(to_y(0))}" stroke="{INK}"/>'
    )
    if signed and lo < 0 < hi:
        body.append(
            f'<line x1="{_n(to_x(0))}" x2="{_n(to_x(0))}" y1="{_n(top)}" '
            f'y2="{_n(top + plot_h)}" stroke="{INK}" stroke-dasharray="2 2"/>'
        )
    return _svg(width, height, label, body, "histogram")


def sorted_deltas(
    values: Sequence[float],
    ids: Sequence[str],
    *,
    label: str,
    y_label: str,
    width: float = WIDTH,
) -> str:
    """Every query's change, sorted: one thin bar per query (quantiles when there are many)."""
    data = np.asarray(values, dtype=np.float64)
    order = np.argsort(data, kind="stable")
    if len(order) > MAX_BARS:  # evenly spaced order statistics
        order = order[np.linspace(0, len(order) - 1, MAX_BARS).round().astype(np.int64)]
    left, right, top = 56.0, 16.0, 10.0
    plot_h = 170.0
    height = top + plot_h + 42
    x0, x1 = left, width - right
    extent = max(float(np.abs(data).max()) if data.size else 0.0, 1e-3)
    ticks = nice_ticks(-extent, extent, 4, outward=True)
    lo, hi = ticks[0], ticks[-1]

    def to_y(v: float) -> float:
        return top + (hi - v) / (hi - lo) * plot_h

    body = _y_axis(ticks, to_y, x0, x1, (top, plot_h), y_label, signed=True)
    n = len(order)
    step = (x1 - x0) / max(n, 1)
    zero = to_y(0.0)
    for i, q in enumerate(order.tolist()):
        v = float(data[q])
        if v == 0:
            continue
        y = to_y(v)
        body.append(
            f'<rect class="bar query" x="{_n(x0 + i * step)}" y="{_n(min(y, zero))}" '
            f'width="{_n(max(step, 0.6))}" height="{_n(max(abs(zero - y), 0.8))}" '
            f'fill="{LOSS if v < 0 else GAIN}"><title>{esc(f"{ids[q]}: {v:+.4f}")}</title></rect>'
        )
    body.append(
        f'<line x1="{_n(x0)}" x2="{_n(x1)}" y1="{_n(zero)}" y2="{_n(zero)}" stroke="{INK}"/>'
    )
    body.append(_text(x0, top + plot_h + 14, "largest loss", "start", 11, MUTED))
    body.append(_text(x1, top + plot_h + 14, "largest gain", "end", 11, MUTED))
    body.append(
        _text(
            (x0 + x1) / 2,
            top + plot_h + 32,
            f"queries sorted by change (n = {len(data)})",
            "middle",
        )
    )
    return _svg(width, height, label, body, "sorted-deltas")


@dataclass(frozen=True)
class Line:
    """One curve: values at each x (None: not available), with its style."""

    name: str
    values: Sequence[float | None]
    color: str
    dash: str = ""
    marks: Sequence[int] = field(default_factory=tuple)  # x values that get a point + tooltip
    width: float = 2.0


def line_chart(
    xs: Sequence[int],
    lines: Sequence[Line],
    *,
    label: str,
    x_label: str,
    y_label: str,
    width: float = WIDTH,
) -> str:
    """Curves over integer x (log scale when x spans a decade or more), y from 0 to 1."""
    legend_w = min(max((len(s.name) for s in lines), default=4) * 6.4 + 34, 170)
    left, right, top = 46.0, legend_w + 10, 10.0
    plot_h = 190.0
    height = max(top + plot_h + 42, 20 + 17 * len(lines))
    x0, x1 = left, width - right
    log = len(xs) > 1 and xs[0] > 0 and xs[-1] / xs[0] >= 10
    a, b = (math.log10(xs[0]), math.log10(xs[-1])) if log else (xs[0], xs[-1])
    b = b if b > a else a + 1

    def to_x(v: float) -> float:
        return x0 + ((math.log10(v) if log else v) - a) / (b - a) * (x1 - x0)

    def to_y(v: float) -> float:
        return top + (1 - v) * plot_h

    body = _y_axis([0.0, 0.2, 0.4, 0.6, 0.8, 1.0], to_y, x0, x1, (top, plot_h), y_label)
    if log:
        x_ticks = [
            m * 10**e
            for e in range(math.floor(a), math.ceil(b) + 1)
            for m in (1, 2, 5)
            if xs[0] <= m * 10**e <= xs[-1]
        ]
    else:
        x_ticks = [t for t in nice_ticks(xs[0], xs[-1], 6) if xs[0] <= t <= xs[-1]]
    for t in x_ticks:
        body.append(
            f'<line class="grid" x1="{_n(to_x(t))}" x2="{_n(to_x(t))}" y1="{_n(top)}" '
            f'y2="{_n(top + plot_h)}" stroke="{GRID}"/>'
        )
        body.append(_text(to_x(t), top + plot_h + 14, f"{t:g}", "middle", 11, MUTED))
    body.append(
        _text((x0 + x1) / 2, top + plot_h + 32, x_label + (" (log scale)" if log else ""), "middle")
    )
    for i, line in enumerate(lines):
        points = [(to_x(x), to_y(v)) for x, v in zip(xs, line.values, strict=True) if v is not None]
        dash = f' stroke-dasharray="{line.dash}"' if line.dash else ""
        if points:
            path = "M" + " L".join(f"{_n(px)} {_n(py)}" for px, py in points)
            body.append(
                f'<path class="curve" d="{path}" fill="none" stroke="{line.color}" '
                f'stroke-width="{line.width:g}"{dash}><title>{esc(line.name)}</title></path>'
            )
        for x, v in zip(xs, line.values, strict=True):
            if v is None or x not in line.marks:
                continue
            body.append(
                f'<circle class="point" cx="{_n(to_x(x))}" cy="{_n(to_y(v))}" r="3" '
                f'fill="{line.color}"><title>{esc(f"{line.name} @{x}: {v:.4f}")}</title></circle>'
            )
        ly = top + 8 + i * 17
        body.append(
            f'<line x1="{_n(x1 + 12)}" x2="{_n(x1 + 34)}" y1="{_n(ly)}" y2="{_n(ly)}" '
            f'stroke="{line.color}" stroke-width="2.5"{dash}/>'
        )
        body.append(_text(x1 + 38, ly + 4, _clip_label(line.name, 20), size=11))
    return _svg(width, height, label, body, "line-chart")


@dataclass(frozen=True)
class TrendLine:
    """One series of a trend chart: a value per entry (None: none), the tooltip of each point,
    and optionally an interval per entry drawn as a shaded band."""

    name: str
    values: Sequence[float | None]
    tips: Sequence[str]
    color: str
    band: Sequence[tuple[float, float] | None] | None = None


@dataclass(frozen=True)
class _TrendFrame:
    """Where a trend chart draws: x of each entry, the value-to-y mapping, the plot's edges."""

    xs: Sequence[float]
    to_y: Callable[[float], float]
    x0: float
    x1: float
    top: float
    bottom: float


def _trend_range(lines: Sequence[TrendLine]) -> list[float]:
    """Round y ticks enclosing every value and interval (at least 0.02 apart top to bottom)."""
    seen = [v for line in lines for v in line.values if v is not None]
    seen += [x for line in lines for b in (line.band or ()) if b is not None for x in b]
    lo, hi = (min(seen), max(seen)) if seen else (0.0, 1.0)
    if hi - lo < 0.02:
        mid = (lo + hi) / 2
        lo, hi = mid - 0.01, mid + 0.01
    return nice_ticks(lo, hi, 4, outward=True)


def _runs(values: Sequence[Any], segment: Sequence[int]) -> list[list[int]]:
    """Maximal runs of consecutive entries with a value (not None) in one segment."""
    runs: list[list[int]] = []
    for i, v in enumerate(values):
        if v is None:
            continue
        if runs and runs[-1][-1] == i - 1 and segment[i] == segment[i - 1]:
            runs[-1].append(i)
        else:
            runs.append([i])
    return runs


def _trend_line(f: _TrendFrame, line: TrendLine, segment: Sequence[int]) -> list[str]:
    """A line's band, its path (broken at a missing value and where the trend restarts) and a
    point with its tooltip per entry."""
    body = []
    band = line.band or ()
    for run in _runs(band, segment):
        pairs = [(f.xs[i], b) for i in run if (b := band[i]) is not None]
        if len(pairs) == 1:  # a lone entry: its interval as a whisker
            x, (low, high) = pairs[0]
            body.append(
                f'<line class="band" x1="{_n(x)}" x2="{_n(x)}" y1="{_n(f.to_y(low))}" '
                f'y2="{_n(f.to_y(high))}" stroke="{line.color}" stroke-opacity="0.45" '
                'stroke-width="5"/>'
            )
            continue
        upper = [f"{_n(x)} {_n(f.to_y(b[1]))}" for x, b in pairs]
        lower = [f"{_n(x)} {_n(f.to_y(b[0]))}" for x, b in reversed(pairs)]
        body.append(
            f'<path class="band" d="M{" L".join(upper + lower)} Z" fill="{line.color}" '
            'fill-opacity="0.16" stroke="none"/>'
        )
    for run in _runs(line.values, segment):
        if len(run) < 2:  # a lone point: its circle below
            continue
        points = [
            f"{_n(f.xs[i])} {_n(f.to_y(v))}" for i in run if (v := line.values[i]) is not None
        ]
        body.append(
            f'<path class="trend" d="M{" L".join(points)}" fill="none" stroke="{line.color}" '
            f'stroke-width="2"><title>{esc(line.name)}</title></path>'
        )
    for i, v in enumerate(line.values):
        if v is not None:
            body.append(
                f'<circle class="point" cx="{_n(f.xs[i])}" cy="{_n(f.to_y(v))}" r="3.2" '
                f'fill="{line.color}"><title>{esc(line.tips[i])}</title></circle>'
            )
    return body


def _trend_marks(
    f: _TrendFrame, lines: Sequence[TrendLine], baseline: Sequence[bool], restarts: Sequence[str]
) -> list[str]:
    """A ring around every point of a baseline entry, and a dashed vertical line (with what
    changed) before every entry where the trend restarts."""
    body = []
    for i, why in enumerate(restarts):
        if not why or i == 0:
            continue
        x = (f.xs[i - 1] + f.xs[i]) / 2
        body.append(
            f'<g class="restart"><title>{esc(why)}</title>'
            f'<line x1="{_n(x)}" x2="{_n(x)}" y1="{_n(f.top)}" y2="{_n(f.bottom)}" '
            f'stroke="{VERMILLION}" stroke-width="1.5" stroke-dasharray="5 3"/>'
            + _text(
                x - 4,
                f.top + 2,
                _clip_label(why, 30),
                "end",
                9.5,
                LOSS_TEXT,
                extra=f' transform="rotate(-90 {_n(x - 4)} {_n(f.top + 2)})"',
            )
            + "</g>"
        )
    for line in lines:
        for i, v in enumerate(line.values):
            if v is not None and baseline[i]:
                body.append(
                    f'<circle class="baseline-mark" cx="{_n(f.xs[i])}" cy="{_n(f.to_y(v))}" '
                    f'r="7" fill="none" stroke="{INK}" stroke-width="1.6">'
                    f"<title>{esc(line.tips[i])}</title></circle>"
                )
    return body


def _trend_legend(lines: Sequence[TrendLine], x: float, any_baseline: bool) -> list[str]:
    body = []
    for i, line in enumerate(lines):
        y = 18 + i * 17
        body.append(
            f'<line x1="{_n(x)}" x2="{_n(x + 20)}" y1="{_n(y)}" y2="{_n(y)}" '
            f'stroke="{line.color}" stroke-width="2.5"/>'
        )
        body.append(_text(x + 25, y + 4, _clip_label(line.name, 14), size=11))
    if any_baseline:
        y = 18 + len(lines) * 17
        body.append(
            f'<circle cx="{_n(x + 10)}" cy="{_n(y)}" r="6" fill="none" stroke="{INK}" '
            'stroke-width="1.6"/>'
        )
        body.append(_text(x + 25, y + 4, "baseline", size=11))
    return body


def trend_chart(
    labels: Sequence[str],
    lines: Sequence[TrendLine],
    *,
    segment: Sequence[int],
    baseline: Sequence[bool],
    restarts: Sequence[str],
    label: str,
    y_label: str,
    width: float = WIDTH,
) -> str:
    """A metric over history entries, oldest left, one line per series. ``segment`` numbers the
    comparable runs of entries (a line does not join two), ``restarts`` says before which entry
    a new one begins and why, ``baseline`` rings the baseline entries' points."""
    n = len(labels)
    legend_w = min(max((len(s.name) for s in lines), default=8) * 6.4 + 40, 130)
    left, right, top, plot_h = 52.0, legend_w + 12, 14.0, 180.0
    x0, x1 = left + 8, width - right - 8
    xs = [(x0 + x1) / 2] if n == 1 else [x0 + i * (x1 - x0) / (n - 1) for i in range(n)]
    ticks = _trend_range(lines)
    lo, hi = ticks[0], ticks[-1]

    def to_y(v: float) -> float:
        return top + (hi - v) / (hi - lo) * plot_h

    frame = _TrendFrame(xs, to_y, x0, x1, top, top + plot_h)
    body = _y_axis(ticks, to_y, left, width - right, (top, plot_h), y_label)
    step = max(1, math.ceil(n / 6))
    for i in range(0, n, step):
        body.append(_text(xs[i], top + plot_h + 14, _clip_label(labels[i], 14), "middle", 10.5))
    body.append(
        _text((x0 + x1) / 2, top + plot_h + 32, "history entry (oldest left)", "middle", 12)
    )
    for line in reversed(lines):  # the first line (the primary index) drawn on top
        body += _trend_line(frame, line, segment)
    body += _trend_marks(frame, lines, baseline, restarts)
    body += _trend_legend(lines, width - right + 12, any(baseline))
    height = max(top + plot_h + 42, 30 + 17 * (len(lines) + 1))
    return _svg(width, height, label, body, "trend-chart")


@dataclass(frozen=True)
class ScatterPoint:
    """One point of a scatter chart: its place, series (legend and colour), tooltip, and
    whether it is marked (a Pareto point: ringed, and joined by the front's line)."""

    x: float
    y: float
    series: str
    color: str
    tip: str
    marked: bool = False


def _scatter_range(values: Sequence[float]) -> tuple[float, float]:
    lo, hi = min(values), max(values)
    pad = (hi - lo) * 0.08 or abs(hi) * 0.05 or 1.0
    return lo - pad, hi + pad


def _scatter_legend(points: Sequence[ScatterPoint], x: float, marked: str) -> list[str]:
    out, seen = [], dict.fromkeys(p.series for p in points)
    colors = {p.series: p.color for p in points}
    for i, name in enumerate([*seen, marked]):
        ly = 18 + i * 17
        if name == marked and i == len(seen):
            out.append(
                f'<circle cx="{_n(x + 6)}" cy="{_n(ly)}" r="6" fill="none" stroke="{INK}" '
                'stroke-width="1.5"/>'
            )
        else:
            out.append(f'<circle cx="{_n(x + 6)}" cy="{_n(ly)}" r="4" fill="{colors[name]}"/>')
        out.append(_text(x + 16, ly + 4, _clip_label(name, 22), size=11))
    return out


def scatter_chart(
    points: Sequence[ScatterPoint],
    *,
    label: str,
    x_label: str,
    y_label: str,
    marked: str = "Pareto front",
    width: float = WIDTH,
) -> str:
    """Points on linear axes fitted to the data; the marked ones ringed and joined in x order by
    a step line (the front: better is up and to the left)."""
    legend_w = 150.0
    left, top, plot_h = 56.0, 10.0, 220.0
    x0, x1 = left, width - legend_w - 10
    height = top + plot_h + 42
    xa, xb = _scatter_range([p.x for p in points] or [0.0])
    ya, yb = _scatter_range([p.y for p in points] or [0.0])
    x_ticks = [t for t in nice_ticks(xa, xb, 5) if xa <= t <= xb]
    y_ticks = [t for t in nice_ticks(ya, yb, 5) if ya <= t <= yb]

    def to_x(v: float) -> float:
        return x0 + (v - xa) / (xb - xa) * (x1 - x0)

    def to_y(v: float) -> float:
        return top + (1 - (v - ya) / (yb - ya)) * plot_h

    body = _y_axis(y_ticks, to_y, x0, x1, (top, plot_h), y_label)
    body += _x_axis(x_ticks, to_x, top, top + plot_h, x_label, (x0 + x1) / 2)
    front = sorted((p for p in points if p.marked), key=lambda p: (p.x, -p.y))
    if len(front) > 1:
        steps = [f"M{_n(to_x(front[0].x))} {_n(to_y(front[0].y))}"]
        for a, b in itertools.pairwise(front):
            steps.append(f"L{_n(to_x(b.x))} {_n(to_y(a.y))} L{_n(to_x(b.x))} {_n(to_y(b.y))}")
        body.append(
            f'<path class="front" d="{" ".join(steps)}" fill="none" stroke="{INK}" '
            f'stroke-width="1.2" stroke-dasharray="4 3"><title>{esc(marked)}</title></path>'
        )
    for p in points:
        cx, cy = _n(to_x(p.x)), _n(to_y(p.y))
        cls = "point pareto" if p.marked else "point"
        ring = (
            f'<circle cx="{cx}" cy="{cy}" r="7" fill="none" stroke="{INK}" stroke-width="1.5"/>'
            if p.marked
            else ""
        )
        body.append(
            f'<g class="{cls}">{ring}<circle cx="{cx}" cy="{cy}" r="4" fill="{p.color}" '
            f'fill-opacity="0.85"/><title>{esc(p.tip)}</title></g>'
        )
    body += _scatter_legend(points, x1 + 14, marked)
    return _svg(width, height, label, body, "scatter-chart")
