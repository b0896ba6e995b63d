"""report.html of a comparison: the verdict, B - A per slice with intervals, A beside B (with the
two run reports), the per-query changes, metric@k curves, and the settings and fingerprints.

As on the run page, a section is one function in ``COMPARE_SECTIONS``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from evalret.data.schema import CompareReport, CompareSide, RunReport, SliceComparison
from evalret.report.compare_rows import COMPARE_COLUMNS, compare_rows, judged_rows, snippet
from evalret.report.html.document import (
    Section,
    changes_list,
    code_value,
    data_table,
    kv_table,
    long_list,
    num,
    page,
    signed_num,
    verdict_badge,
)
from evalret.report.html.figures import (
    Side,
    curves_block,
    delta_distribution,
    examples_block,
    indexes_curve,
    metric_bars,
)
from evalret.report.numbers import HTML, p_value
from evalret.report.per_query import DeltaSpread
from evalret.report.svg import BLUE, GREY, DeltaRow, delta_chart, esc, figure
from evalret.report.verdict import compare_margin_lines


@dataclass(frozen=True)
class ComparePage:
    """A comparison, the two run reports when known (bars, curves) and the per-query change on
    the primary metric of each compared index (None without the two reports)."""

    comparison: CompareReport
    a: RunReport | None
    b: RunReport | None
    changes: list[DeltaSpread] | None

    @property
    def sides(self) -> list[Side] | None:
        if self.a is None or self.b is None:
            return None
        return [Side("A", self.a, GREY), Side("B", self.b, BLUE)]


def _side_text(side: CompareSide) -> str:
    name = side.model.get("source", side.model.get("name"))
    return f"<code>{esc(side.label)}</code> (model <code>{esc(name)}</code>)"


def compare_verdict_section(p: ComparePage) -> Section:
    c = p.comparison
    v = c.verdict
    parts = [
        f'<p class="verdict-line"><strong>{esc(v.status)}</strong>: {esc(v.reason)}</p>',
        f"<p>A: {_side_text(c.a)}<br>B: {_side_text(c.b)}</p>",
    ]
    if c.changed:
        items = changes_list(c.changed)
        parts.append(f"<p>Changed from A to B:</p><ul class='plain'>{items}</ul>")
    if v.blocking:
        parts.append(f"<h3>Blocking ({len(v.blocking)})</h3>" + long_list(v.blocking))
    if v.regressions:
        parts.append(
            f"<h3>Significant regressions ({len(v.regressions)})</h3>" + long_list(v.regressions)
        )
    margins = compare_margin_lines(c, HTML)
    if margins:  # compare --margin: what B - A proves against it, every index and slice
        items = "".join(f"<li>{esc(line)}</li>" for line in margins)
        parts.append(f"<h3>Margins (B - A)</h3><ul class='plain'>{items}</ul>")
    if c.notes:
        parts.append(
            "<ul class='plain'>" + "".join(f"<li>{esc(n)}</li>" for n in c.notes) + "</ul>"
        )
    return Section("verdict", "Verdict", "".join(parts))


def _compare_charts(index: str, slices: dict[str, SliceComparison], primary: str) -> str:
    """One chart per metric (the primary first): B - A per slice with its interval."""
    first = next(iter(slices.values()), None)
    metrics = list(first.metrics) if first is not None else []
    metrics.sort(key=lambda m: m != primary)
    charts = []
    for metric in metrics:
        rows = []
        for name, sc in slices.items():
            m = sc.metrics[metric]
            mde = sc.mde.get(metric)
            rows.append(
                DeltaRow(
                    f"{name} ({sc.n_queries})",
                    m.delta,
                    m.ci_low,
                    m.ci_high,
                    strong=m.significant,
                    tooltip=(
                        f"{index}/{name}/{metric}: A {num(m.a)}, B {num(m.b)}, "
                        f"delta {num(m.delta, True)} [{num(m.ci_low, True)}, "
                        f"{num(m.ci_high, True)}], p rand. {p_value(m.p_randomization)} "
                        f"(adj. {p_value(m.p_randomization_adjusted)}), p t {p_value(m.p_t_test)} "
                        f"(adj. {p_value(m.p_t_test_adjusted)}), W/T/L {m.wins}/{m.ties}/{m.losses}"
                        + (f", MDE {num(mde, digits=3)}" if mde is not None else "")
                    ),
                    note=num(m.delta, True) + (" *" if m.significant else ""),
                )
            )
        title = f"{metric}: B − A" + (" (primary)" if metric == primary else "")
        charts.append(
            figure(
                title,
                delta_chart(
                    rows, label=f"{index}: {metric}, B − A per slice", x_label=f"{metric} B − A"
                ),
                "Change of the slice mean with its interval (whisker); * significant.",
            )
        )
    return f'<div class="grid">{"".join(charts)}</div>'


def _compare_table(index: str, slices: dict[str, SliceComparison], primary: str) -> str:
    """The primary metric per slice with its tests and diagnosis, behind a disclosure."""
    head = [*COMPARE_COLUMNS, "diagnosis"]
    rows = []
    for row in compare_rows(slices, primary, HTML):
        delta = signed_num(row.metric.delta)
        rows.append(
            [
                esc(row.name),
                row.n,
                row.a,
                row.b,
                f"<strong>{delta}</strong>" if row.metric.significant else delta,
                row.ci,
                row.p_randomization,
                row.p_t_test,
                row.wtl,
                row.mde,
                f'<span style="white-space:normal">{esc(row.diagnosis)}</span>',
            ]
        )
    return (
        f"<details><summary>{esc(index)}: {esc(primary)} per slice, with tests and "
        f"diagnosis</summary>{data_table(head, rows)}</details>"
    )


def compare_changes_section(p: ComparePage) -> Section:
    """B - A per slice for every metric of every compared index, and the primary's table."""
    c = p.comparison
    s = c.settings
    primary = s.primary
    parts = [
        f"<p>B − A per slice with the {s.confidence:.0%} percentile bootstrap "
        f"interval of the paired differences. Solid bars and * are significant after the "
        f"{esc(s.correction)} correction (randomization test, alpha {esc(s.alpha)}); "
        "light bars are not.</p>"
    ]
    for index, slices in c.indexes.items():
        parts.append(f"<h3>{esc(index)}</h3>")
        parts.append(_compare_charts(index, slices, primary))
        parts.append(_compare_table(index, slices, primary))
    return Section("changes", "Changes per slice, B − A", "".join(parts))


def compare_bars_section(p: ComparePage) -> Section | None:
    sides = p.sides
    if sides is None:
        return None
    parts = []
    for index in p.comparison.indexes:
        if index in sides[0].report.indexes and index in sides[1].report.indexes:
            parts.append(f"<h3>{esc(index)}</h3>" + metric_bars(sides, index))
    return Section("metrics", "Metrics per slice, A beside B", "".join(parts))


def compare_per_query_section(p: ComparePage) -> Section:
    c = p.comparison
    primary = c.settings.primary
    parts = []
    if p.changes is not None:
        for spread in p.changes:
            parts.append(
                f"<h3>{esc(spread.index)}</h3>" + delta_distribution(spread, "A", "B", primary)
            )
    else:
        parts.append(
            '<p class="muted">The per-query distribution needs the two run reports; this page '
            "was drawn from compare.json alone.</p>"
        )
    parts.append(examples_block(c.losers, c.gainers, ("A", "B"), f"{c.primary_index}, {primary}"))
    return Section("per-query", "Per-query changes, B − A", "".join(parts))


def compare_curves_section(p: ComparePage) -> Section | None:
    sides = p.sides
    if sides is None:
        return None
    overview = indexes_curve(sides)
    blocks = [f'<div class="grid">{overview}</div>'] if overview else []
    for index in p.comparison.indexes:
        block = curves_block(sides, index)
        if block:
            blocks.append(f"<h3>{esc(index)}</h3>{block}")
    return Section("curves", "Metric@k curves", "".join(blocks)) if blocks else None


def compare_judged_section(p: ComparePage) -> Section | None:
    """judged@k of A beside B per index and slice, and B's most frequent unjudged documents;
    None for a compare.json without judged figures."""
    c = p.comparison
    parts = []
    for index, slices in c.indexes.items():
        key, rows = judged_rows(slices, HTML)
        if key is None:
            continue
        cells = [[esc(r.name), r.a, r.b, r.delta] for r in rows]
        parts.append(
            f"<h3>{esc(index)}: {esc(key)}</h3>" + data_table(["slice", "A", "B", "B − A"], cells)
        )
    u = c.unjudged
    if u is not None and u.documents:
        docs = [[f"<code>{esc(d.id)}</code>", str(d.lists), esc(snippet(d))] for d in u.documents]
        parts.append(
            f"<h3>B's most frequent unjudged documents ({esc(u.index)}, top {u.k})</h3>"
            + data_table(["document", f"in B's top-{u.k} lists (of {u.n_queries})", "text"], docs)
        )
    if not parts:
        return None
    intro = (
        "<p>The share of each top k holding a judged document: where B's is lower, B retrieves "
        "documents nobody judged, which every metric counts as not relevant.</p>"
    )
    return Section("judged", "Judged documents, A beside B", intro + "".join(parts))


def compare_settings_section(p: ComparePage) -> Section:
    c = p.comparison
    rows = [
        ("golden set", code_value(c.golden_set.model_dump())),
        ("primary index", code_value(c.primary_index)),
        *((f"setting {k}", code_value(v)) for k, v in c.settings.model_dump().items()),
        ("A fingerprint", code_value(c.a.fingerprint)),
        ("A model", code_value(c.a.model)),
        ("A indexes", code_value(c.a.indexes)),
        ("B fingerprint", code_value(c.b.fingerprint)),
        ("B model", code_value(c.b.model)),
        ("B indexes", code_value(c.b.indexes)),
        ("evalret", code_value(c.evalret_version)),
    ]
    return Section("settings", "Settings and fingerprints", kv_table(rows))


CompareSection = Callable[[ComparePage], Section | None]
COMPARE_SECTIONS: list[CompareSection] = [
    compare_verdict_section,
    compare_changes_section,
    compare_bars_section,
    compare_per_query_section,
    compare_curves_section,
    compare_judged_section,
    compare_settings_section,
]


def compare_html(
    comparison: CompareReport,
    a: RunReport | None = None,
    b: RunReport | None = None,
    changes: list[DeltaSpread] | None = None,
) -> str:
    """report.html of a comparison; with the run reports ``a`` and ``b``, also their bars with
    intervals and the metric@k curves, and with ``changes`` the per-query distributions."""
    p = ComparePage(comparison, a, b, changes)
    status = comparison.verdict.status
    state = {"candidate": "pass", "not a candidate": "fail"}.get(status, "neutral")
    icon = {"candidate": "✔ ", "not a candidate": "✖ "}.get(status, "")
    badge = verdict_badge(state, f"{icon}{status.upper()}")
    g = comparison.golden_set
    meta = (
        f'<p class="meta">A {_side_text(comparison.a)} · B {_side_text(comparison.b)} · golden '
        f"set <code>{esc(g.source)}</code> ({esc(g.n_queries)} queries) · evalret "
        f"{esc(comparison.evalret_version)}</p>"
    )
    sections = [s for s in (fn(p) for fn in COMPARE_SECTIONS) if s is not None]
    return page("evalret comparison report", badge, meta, sections, "compare")
