"""What `evalret history show` and the trend page draw: the entries of a history database with
what changed in each fingerprint, and per index, slice and metric a series of values with their
change from the previous entry and from the latest baseline (computed by ``core.trend``); and the
terminal table of `history show`."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from evalret.choices import SHOWN_ENTRIES as SHOWN_ENTRIES
from evalret.core.trend import BREAKING, TrendPoint, changed_parts, segments, trend_points
from evalret.data.history import History, HistoryEntry, HistoryValue
from evalret.report.escape import markup_safe
from evalret.report.numbers import PLAIN, number

SeriesKey = tuple[str, str, str]  # (index, slice, metric)
# entries drawn at most: SHOWN_ENTRIES (evalret.choices; `--last N` chooses; the trends are
# computed over every entry), so that the page and the table stay readable however long a history
# grows
# characters of an entry's label: `history add --label` refuses a longer one, and a longer one in
# a database written otherwise is shown shortened
LABEL_CHARS = 200


@dataclass(frozen=True)
class EntryRow:
    """One entry as the views show it: its position (1 = oldest), a short name, and what
    changed in its fingerprint since the previous entry."""

    position: int
    entry: HistoryEntry
    name: str
    changed: tuple[str, ...]

    @property
    def restarts(self) -> bool:
        """The trend starts again here: the golden set or the metric definitions changed."""
        return any(part in BREAKING for part in self.changed)

    def change_note(self) -> str:
        """What changed since the previous entry: "golden set, model (trend restarts)",
        "model", or "" (nothing)."""
        note = ", ".join(self.changed)
        return note + " (trend restarts)" if self.restarts else note


@dataclass(frozen=True)
class Series:
    """One index, slice and metric across the entries: the stored value (None where the entry
    has none) and the trend point of each entry."""

    key: SeriesKey
    values: list[HistoryValue | None]
    points: list[TrendPoint]


@dataclass(frozen=True)
class HistoryView:
    """A history database as the views show it, for the selected indexes, slices and metrics."""

    path: str
    rows: list[EntryRow]
    segment: list[int]
    indexes: list[str]
    slices: list[str]
    metrics: list[str]
    series: dict[SeriesKey, Series]
    total: int = 0  # entries in the history; ``rows`` are its last len(rows)

    @property
    def omitted(self) -> int:
        """How many older entries are not shown."""
        return max(0, self.total - len(self.rows))

    def shown_note(self) -> str:
        """What part of the history is shown: "" when all of it."""
        if not self.omitted:
            return ""
        return (
            f"showing the last {len(self.rows)} of {self.total} entries ({self.omitted} older "
            "left out; --last N shows more, --last 0 all)"
        )


def entry_name(entry: HistoryEntry) -> str:
    """The label (its first LABEL_CHARS characters), else the commit's first 12 characters,
    else ``#<id>``."""
    if entry.label:
        label = entry.label
        return label if len(label) <= LABEL_CHARS else label[: LABEL_CHARS - 1] + "…"
    return entry.commit[:12] if entry.commit else f"#{entry.id}"


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def names_in(history: History) -> tuple[list[str], list[str], list[str]]:
    """The indexes, slices and metrics of a history: in the newest entry's order, then those
    only older entries have (newest first)."""
    newest_first = sorted(history.values, key=lambda v: -v.entry)  # stable: report order kept
    return (
        _unique(v.index for v in newest_first),
        _unique(v.slice for v in newest_first),
        _unique(v.metric for v in newest_first),
    )


def build_view(
    history: History,
    indexes: Sequence[str],
    slices: Sequence[str],
    metrics: Sequence[str],
    last: int = SHOWN_ENTRIES,
) -> HistoryView:
    """The view of ``history`` for these indexes, slices and metrics (names it holds): its
    ``last`` newest entries (0: every one), their changes and trends computed over all."""
    full = _full_view(history, indexes, slices, metrics)
    if last <= 0 or len(full.rows) <= last:
        return full
    cut = len(full.rows) - last
    series = {key: Series(key, s.values[cut:], s.points[cut:]) for key, s in full.series.items()}
    return replace(full, rows=full.rows[cut:], segment=full.segment[cut:], series=series)


def _full_view(
    history: History, indexes: Sequence[str], slices: Sequence[str], metrics: Sequence[str]
) -> HistoryView:
    entries = history.entries
    changed = changed_parts([e.trend_print() for e in entries])
    segment = segments(changed)
    baseline = [e.baseline for e in entries]
    position = {e.id: i for i, e in enumerate(entries)}
    by_key: dict[SeriesKey, list[HistoryValue | None]] = {}
    wanted = {(i, s, m) for i in indexes for s in slices for m in metrics}
    for v in history.values:
        key = (v.index, v.slice, v.metric)
        if key in wanted and v.entry in position:
            by_key.setdefault(key, [None] * len(entries))[position[v.entry]] = v
    series = {
        key: Series(
            key,
            values,
            trend_points([v.value if v else None for v in values], segment, baseline),
        )
        for key, values in by_key.items()
    }
    rows = [EntryRow(i + 1, e, entry_name(e), changed[i]) for i, e in enumerate(entries)]
    return HistoryView(
        str(history.path),
        rows,
        segment,
        list(indexes),
        list(slices),
        list(metrics),
        series,
        total=len(rows),
    )


def point_tip(row: EntryRow, series: Series, i: int) -> str:
    """The tooltip of one point: entry, value with its interval, changes, commit, date."""
    index, slice_name, metric = series.key
    v, p = series.values[i], series.points[i]
    parts = [f"{row.name}: {index} {metric}, slice {slice_name}"]
    if v is not None and p.value is not None:
        interval = ""
        if v.ci_low is not None and v.ci_high is not None:
            interval = f" [{number(v.ci_low, medium=PLAIN)}, {number(v.ci_high, medium=PLAIN)}]"
        parts.append(f"{number(p.value, medium=PLAIN)}{interval} over {v.n_queries} queries")
    if p.change is not None:
        parts.append(f"change {number(p.change, signed=True, medium=PLAIN)}")
    if p.since_baseline is not None:
        parts.append(f"vs baseline {number(p.since_baseline, signed=True, medium=PLAIN)}")
    if row.entry.baseline:
        parts.append("baseline")
    if row.entry.commit:
        parts.append(f"commit {row.entry.commit}")
    parts.append(f"added {row.entry.added_at}")
    if row.changed:
        parts.append(f"changed: {row.change_note()}")
    return " · ".join(parts)


# --- the terminal table of `evalret history show` ------------------------------------------


def _styled_change(v: float | None) -> str:
    if v is None:
        return "[dim]-[/]"
    text = number(v, signed=True, medium=PLAIN)
    return f"[red]{text}[/]" if v < 0 else f"[green]{text}[/]" if v > 0 else text


def _cell(point: TrendPoint | None) -> str:
    """A metric's cell: the value, and below it the change from the previous entry."""
    if point is None or point.value is None:
        return "[dim]-[/]"
    return f"{number(point.value, medium=PLAIN)}\n{_styled_change(point.change)}"


def history_table(view: HistoryView, index: str, slice_name: str) -> Any:
    """A rich Table of one index and slice: one row per entry (newest last), each metric's
    value with its change from the previous entry below it, and what changed in the
    fingerprint."""
    from rich.table import Table

    table = Table(
        caption="each metric: its value, and below it the change from the previous entry",
        caption_justify="left",
    )
    for col in ("#", "added (UTC)", "entry", "commit", "baseline", "gate"):
        table.add_column(col, no_wrap=col not in ("entry", "commit"))
    for metric in view.metrics:
        table.add_column(markup_safe(metric), justify="right", no_wrap=True)
    table.add_column("changed")
    for i, row in enumerate(view.rows):
        e = row.entry
        cells = [
            str(row.position),
            e.added_at.replace("T", " ")[:16],
            markup_safe(row.name),
            markup_safe((e.commit or "")[:12]),
            "yes" if e.baseline else "",
            markup_safe(e.gate_verdict or ""),
        ]
        for metric in view.metrics:
            series = view.series.get((index, slice_name, metric))
            cells.append(_cell(series.points[i] if series else None))
        cells.append(f"[yellow]{row.change_note()}[/]" if row.restarts else row.change_note())
        table.add_row(*cells)
    return table


def history_tables(view: HistoryView) -> list[Any]:
    """`history show`: per selected index and slice a heading line and its table; a line when
    the history is empty."""
    if not view.rows:
        return [f"history {markup_safe(view.path)} has no entries yet"]
    out: list[Any] = [f"[yellow]{view.shown_note()}[/]"] if view.omitted else []
    for index in view.indexes:
        for slice_name in view.slices:
            out.append(
                f"history {markup_safe(view.path)}: index {markup_safe(index)}, slice "
                f"{markup_safe(slice_name)}"
            )
            out.append(history_table(view, index, slice_name))
    return out
