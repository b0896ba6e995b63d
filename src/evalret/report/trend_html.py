"""trend.html: a history database as one self-contained page, in report.html's style (its CSS,
header and sections, ``html.document.page``): the entries with what changed in each
fingerprint, then per slice one trend chart per metric with a line per index, baselines ringed,
and a dashed line where the golden set or the metric definitions changed (the lines start again
there). Every label, commit and name is escaped."""

from __future__ import annotations

from collections.abc import Sequence

from evalret.core.trend import BREAKING
from evalret.report.history_view import EntryRow, HistoryView, point_tip
from evalret.report.html.document import Section, page, slug
from evalret.report.svg import PALETTE, TrendLine, esc, figure, trend_chart

ENTRY_COLUMNS = (
    "#",
    "added",
    "entry",
    "commit",
    "baseline",
    "gate",
    "golden set",
    "model",
    "evalret",
    "changed",
)


def _code(text: str | None) -> str:
    return f"<code>{esc(text)}</code>" if text else ""


def _entry_cells(row: EntryRow) -> list[str]:
    e = row.entry
    model = e.fingerprint.get("model")
    model_name = model.get("name") if isinstance(model, dict) else None
    note = esc(row.change_note())
    return [
        str(row.position),
        esc(e.added_at.replace("T", " ").removesuffix("Z")),
        esc(row.name),
        _code(e.commit[:12] if e.commit else None),
        '<span class="result-pass">baseline</span>' if e.baseline else "",
        esc(e.gate_verdict or ""),
        _code(str(e.fingerprint.get("golden_set", ""))[:12]),
        esc(model_name or ""),
        esc(e.evalret_version),
        f'<span class="warn">{note}</span>' if row.restarts else note,
    ]


def _table(
    head: Sequence[str],
    rows: Sequence[Sequence[str]],
    left: Sequence[int],
    nowrap: Sequence[int] = (),
) -> str:
    """A table of HTML cells (escaped by the caller) in the page's table style; the columns in
    ``nowrap`` are kept on one line."""

    def cell(tag: str, i: int, text: str) -> str:
        align = ' class="l"' if i in left else ""
        keep = ' style="white-space: nowrap"' if i in nowrap else ""
        return f"<{tag}{align}{keep}>{text}</{tag}>"

    th = "".join(cell("th", i, esc(h)) for i, h in enumerate(head))
    body = "".join(
        "<tr>" + "".join(cell("td", i, c) for i, c in enumerate(r)) + "</tr>" for r in rows
    )
    return (
        f'<div class="table-wrap"><table class="entries"><thead><tr>{th}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )


def entries_section(view: HistoryView) -> Section:
    """Every entry, oldest first, with its fingerprint's golden set and model and what changed."""
    if not view.rows:
        return Section("entries", "Entries", '<p class="muted">No entries yet.</p>')
    restarts = sum(r.restarts for r in view.rows)
    said = f"The trend restarts {restarts} time(s): a" if restarts else "A"
    shown = (
        f'<p class="warn" id="shown">The page is bounded: {esc(view.shown_note())}.</p>'
        if view.omitted
        else ""
    )
    intro = shown + (
        f"<p>{len(view.rows)} entries, oldest first. {said} change of the golden set or of the "
        "metric definitions makes the numbers before and after incomparable, so the charts "
        "start their lines again there; a new model or index setting is what the trend shows."
        "</p>"
    )
    rows = [_entry_cells(r) for r in view.rows]
    return Section(
        "entries",
        "Entries",
        intro + _table(ENTRY_COLUMNS, rows, left=range(1, 10), nowrap=(1, 3, 6, 7, 8)),
    )


def _chart(view: HistoryView, slice_name: str, metric: str) -> str | None:
    """The trend of one metric in one slice: a line per index that has it."""
    lines: list[TrendLine] = []
    for j, index in enumerate(view.indexes):
        series = view.series.get((index, slice_name, metric))
        if series is None:
            continue
        band = None
        if not lines:  # the first index drawn (the primary one) shows its interval
            band = [
                (v.ci_low, v.ci_high)
                if v is not None and v.ci_low is not None and v.ci_high is not None
                else None
                for v in series.values
            ]
        tips = [point_tip(row, series, i) for i, row in enumerate(view.rows)]
        values = [p.value for p in series.points]
        lines.append(TrendLine(index, values, tips, PALETTE[j % len(PALETTE)], band))
    if not lines:
        return None
    restarts = [
        "new " + ", ".join(p for p in row.changed if p in BREAKING) if row.restarts else ""
        for row in view.rows
    ]
    svg = trend_chart(
        [row.name for row in view.rows],
        lines,
        segment=view.segment,
        baseline=[row.entry.baseline for row in view.rows],
        restarts=restarts,
        label=f"{metric} of slice {slice_name} per history entry",
        y_label=metric,
    )
    caption = [
        f"{metric} of slice {slice_name} in each of {len(view.rows)} entries, oldest left; "
        f"shaded: the interval of {lines[0].name}."
    ]
    if any(row.entry.baseline for row in view.rows):
        caption.append("Ringed: baseline entries.")
    if any(restarts):
        caption.append("Dashed line: the golden set or metric definitions changed.")
    return figure(f"{metric} · {slice_name}", svg, " ".join(caption))


def slice_section(view: HistoryView, slice_name: str) -> Section | None:
    """One chart per metric for one slice."""
    charts = [c for m in view.metrics if (c := _chart(view, slice_name, m)) is not None]
    if not charts:
        return None
    return Section(f"slice-{slug(slice_name)}", f"Slice {slice_name}", _grid(charts))


def _grid(charts: Sequence[str]) -> str:
    return '<div class="grid">' + "".join(charts) + "</div>"


def _meta(view: HistoryView) -> str:
    parts = [f"History <code>{esc(view.path)}</code>"]
    if view.rows:
        first, last = view.rows[0].entry, view.rows[-1].entry
        count = f"the last {len(view.rows)} of {view.total}" if view.omitted else len(view.rows)
        parts.append(f"{count} entries from {esc(first.added_at)} to {esc(last.added_at)}")
        parts.append(f"newest: {esc(view.rows[-1].name)}")
    parts.append("indexes " + ", ".join(f"<code>{esc(i)}</code>" for i in view.indexes))
    return f'<p class="meta">{" · ".join(parts)}</p>'


def trend_html(view: HistoryView) -> str:
    """The whole trend page of ``view``."""
    sections = [entries_section(view)]
    sections += [s for name in view.slices if (s := slice_section(view, name)) is not None]
    badge = (
        f'<span id="verdict" class="badge neutral" data-verdict="neutral" role="status">'
        f"{len(view.rows)} ENTRIES</span>"
    )
    return page("evalret history", badge, _meta(view), sections, "trend")
