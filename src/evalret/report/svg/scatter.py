"""Scatter charts (a sweep's points, cost against quality, the Pareto front marked)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from evalret.report.svg.frame import (
    INK,
    WIDTH,
    _clip_label,
    _n,
    _svg,
    _text,
    _x_axis,
    _y_axis,
    esc,
    nice_ticks,
)


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
