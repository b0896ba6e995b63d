"""Bar charts (one row per slice or index, one bar per series, with intervals) and delta charts
(one signed bar per row around zero)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from evalret.report.numbers import HTML, number
from evalret.report.svg.frame import (
    GAIN,
    GAIN_TEXT,
    INK,
    LOSS,
    LOSS_TEXT,
    MUTED,
    VERMILLION,
    WIDTH,
    _clip_label,
    _label_width,
    _n,
    _svg,
    _text,
    _x_axis,
    esc,
    nice_ticks,
)


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
