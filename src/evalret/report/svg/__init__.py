"""Hand-built inline SVG charts for the HTML report: pure functions from numbers to SVG text.

Every chart carries an accessible name, axis labels, and an SVG ``<title>`` (the browser's tooltip)
on each mark with its exact values. Colours are presentation attributes, so a chart renders the
same with or without the page's stylesheet; every text that reaches the SVG is escaped. Nothing
here knows about reports: the page module turns reports into rows and series.

The parts: ``frame`` (palette, escaping, ticks, axes, wrappers), ``bars`` (bar and delta charts),
``distributions`` (histogram, sorted per-query deltas), ``lines`` (curves and trends) and
``scatter``. Every name is importable from here.
"""

from __future__ import annotations

from evalret.report.svg.bars import (
    Bar,
    BarRow,
    DeltaRow,
    Series,
    bar_chart,
    delta_chart,
)
from evalret.report.svg.distributions import (
    histogram,
    sorted_deltas,
)
from evalret.report.svg.frame import (
    BLUE,
    DASHES,
    FONT,
    GAIN,
    GAIN_TEXT,
    GREEN,
    GREY,
    GRID,
    INK,
    LOSS,
    LOSS_TEXT,
    MAX_BARS,
    MUTED,
    ORANGE,
    PALETTE,
    PINK,
    SKY,
    VERMILLION,
    WIDTH,
    esc,
    figure,
    nice_ticks,
)
from evalret.report.svg.lines import (
    Line,
    TrendLine,
    line_chart,
    trend_chart,
)
from evalret.report.svg.scatter import (
    ScatterPoint,
    scatter_chart,
)

__all__ = [
    "BLUE",
    "DASHES",
    "FONT",
    "GAIN",
    "GAIN_TEXT",
    "GREEN",
    "GREY",
    "GRID",
    "INK",
    "LOSS",
    "LOSS_TEXT",
    "MAX_BARS",
    "MUTED",
    "ORANGE",
    "PALETTE",
    "PINK",
    "SKY",
    "VERMILLION",
    "WIDTH",
    "Bar",
    "BarRow",
    "DeltaRow",
    "Line",
    "ScatterPoint",
    "Series",
    "TrendLine",
    "bar_chart",
    "delta_chart",
    "esc",
    "figure",
    "histogram",
    "line_chart",
    "nice_ticks",
    "scatter_chart",
    "sorted_deltas",
    "trend_chart",
]
