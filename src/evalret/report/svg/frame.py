"""The parts every chart shares: the palette (Okabe-Ito), escaping, ticks, text, axes, and the
``<svg>`` and ``<figure>`` wrappers."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from evalret.report.escape import html_text

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
