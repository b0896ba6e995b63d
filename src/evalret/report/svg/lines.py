"""Line charts (metric@k curves) and trend charts (a metric across history entries, with the
baseline marked)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalret.report.svg.frame import (
    GRID,
    INK,
    LOSS_TEXT,
    MUTED,
    VERMILLION,
    WIDTH,
    _clip_label,
    _n,
    _svg,
    _text,
    _y_axis,
    esc,
    nice_ticks,
)


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
