"""Per-query distributions: a histogram of values and the sorted per-query deltas (quantiles
beyond ``MAX_BARS`` queries)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from evalret.report.svg.frame import (
    BLUE,
    GAIN,
    INK,
    LOSS,
    MAX_BARS,
    MUTED,
    WIDTH,
    _n,
    _svg,
    _text,
    _tick_label,
    _y_axis,
    esc,
    nice_ticks,
)


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
