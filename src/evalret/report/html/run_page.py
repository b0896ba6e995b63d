"""report.html of a run: the gate's verdict, metrics per index and slice, the sample, approximate
against exact search, dense against lexical, per-query changes, metric@k curves, embedding health
and the fingerprint.

A section is one function from the page's inputs (``RunPage``) to a ``Section`` or None (nothing
to show); a new section is one more function in ``RUN_SECTIONS``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from evalret.data.schema import AnnSection, GateCheck, GateSection, RunReport
from evalret.report.beyond_view import BEYOND_TITLE, beyond_table
from evalret.report.filter_view import SELECTIVITY_MEANING, selectivity_rows
from evalret.report.gate_rows import (
    GateSummary,
    allowed_change,
    check_rows,
    gate_summary,
    threshold_heading,
    threshold_line,
    unjudged_line,
    unjudged_rows,
)
from evalret.report.html.document import (
    Section,
    changes_list,
    code_value,
    data_table,
    kv_table,
    num,
    page,
    signed_num,
    slug,
    verdict_badge,
)
from evalret.report.html.figures import (
    Side,
    confidence_text,
    curves_block,
    delta_distribution,
    examples_block,
    indexes_curve,
    metric_bars,
    query_card,
)
from evalret.report.numbers import HTML
from evalret.report.per_query import RunQueries, ScoreSpread
from evalret.report.rerank_view import COLUMNS, MEANING, rerank_table
from evalret.report.run_notes import (
    cost_text,
    index_notes,
    interval_lines,
    interval_mark,
    intrinsic_rows,
    latency_text,
    repeats_word,
    sample_summary,
    shown_judged,
    stability_rows,
    store_line,
    warning_lines,
    without_relevant_note,
)
from evalret.report.svg import (
    BLUE,
    GREY,
    PALETTE,
    Bar,
    BarRow,
    DeltaRow,
    Series,
    bar_chart,
    delta_chart,
    esc,
    figure,
    histogram,
)
from evalret.report.verdict import (
    CLOSE_TITLE,
    check_note,
    close_lines,
    margin_lines,
    verdict_words,
)


@dataclass(frozen=True)
class RunPage:
    """What a run page is drawn from: the report, the baseline it was gated against (if known)
    and the queries picked for it (``None``: no per-query section)."""

    report: RunReport
    baseline: RunReport | None
    queries: RunQueries | None

    @property
    def sides(self) -> list[Side]:
        current = Side("current", self.report, BLUE)
        return [Side("baseline", self.baseline, GREY), current] if self.baseline else [current]


def metric_table(report: RunReport, index: str) -> str:
    """Every metric of an index per slice, with its interval: the numbers behind the bars."""
    result = report.indexes[index]
    metrics = list(next(iter(result.slices.values())).metrics) if result.slices else []
    judged = shown_judged(result.slices)
    rows = []
    for name, s in result.slices.items():
        cells = [esc(name), str(s.n_queries)]
        for m in metrics:
            v = s.metrics[m]
            mark = f" {esc(interval_mark(v))}" if interval_mark(v) else ""
            interval = (
                f'<br><span class="muted">{num(v.ci_low)}–{num(v.ci_high)}{mark}</span>'
                if v.ci_low is not None
                else ""
            )
            cells.append(f"{num(v.value)}{interval}")
        if judged:
            cells.append(num(s.judged.get(judged)))
        rows.append(cells)
    head = ["slice", "n", *(esc(m) for m in metrics), *([esc(judged)] if judged else [])]
    notes = "".join(f"<li>{esc(line)}</li>" for line in interval_lines(report, index))
    listed = f'<ul class="muted">{notes}</ul>' if notes else ""
    return (
        f"<details><summary>{esc(index)}: the values ({confidence_text(report)} interval below "
        f"each mean)</summary>{data_table(head, rows)}{listed}</details>"
    )


def _checks_table(checks: list[GateCheck]) -> str:
    """The checks as report.md lists them: numbers, threshold, p-values and the result."""
    head = ["index", "slice", "n", "metric", "baseline", "current", "delta", "threshold"]
    head += ["p (adj.)", "result"]
    rows = []
    for row in check_rows(checks, HTML):
        c = row.check
        result = (
            '<span class="warn">INCONCLUSIVE</span>'
            if c.outcome == "inconclusive"
            else '<span class="result-pass">pass</span>'
            if c.passed
            else '<span class="result-fail">FAIL</span>'
        )
        if check_note(c):
            result += f' <span class="muted">{esc(check_note(c))}</span>'
        rows.append(
            [
                esc(c.index),
                esc(c.slice),
                str(c.n_queries),
                esc(c.metric),
                row.baseline,
                row.current,
                signed_num(c.delta),
                esc(row.limit),
                esc(row.p),
                result,
            ]
        )
    classes = ["" if c.passed else "failed" for c in checks]
    return data_table(head, rows, (0, 1, 3, 7, 9), classes, "checks")


def _drops_chart(failed: list[GateCheck]) -> str:
    """The failed drop checks as changes from the baseline beside the drop each allows; "" when
    no failed check is a drop check with a change."""
    drops = [c for c in failed if c.delta is not None and allowed_change(c) is not None]
    if not drops:
        return ""
    rows = [
        DeltaRow(
            f"{c.index}/{c.slice}/{c.metric}",
            c.delta,
            limit=allowed_change(c),
            tooltip=f"{c.name}: baseline {num(c.baseline)}, current {num(c.current)}, "
            f"change {num(c.delta, signed=True)}, allowed {num(allowed_change(c), True)}",
            note=num(c.delta, signed=True),
        )
        for c in drops
    ]
    return (
        '<div class="grid">'
        + figure(
            "Failed drop checks: change from the baseline",
            delta_chart(
                rows,
                label="failed drop checks: change from the baseline, allowed drop",
                x_label="current − baseline",
            ),
            "Each bar is a failed check's change of the slice mean; the dashed tick is the "
            "largest drop its threshold allows.",
        )
        + "</div>"
    )


def _gate_head(gate: GateSection, summary: GateSummary) -> list[str]:
    """The verdict line, the baseline, the significance test and what changed."""
    line = verdict_words(gate).line
    parts = [f'<p class="verdict-line"><strong>{esc(line)}</strong></p>']
    if gate.baseline:
        parts.append(
            f"<p>Baseline <code>{esc(gate.baseline)}</code> (fingerprint "
            f"<code>{esc((gate.baseline_fingerprint or '')[:12])}</code>).</p>"
        )
    if gate.significance:
        s = gate.significance
        parts.append(
            f"<p>A drop fails only when significant: {esc(s.test)} test, alpha "
            f"{esc(s.alpha)}, {esc(s.correction)} correction across checks.</p>"
        )
    if gate.changed:
        items = changes_list(gate.changed)
        parts.append(f"<p>Changed since the baseline:</p><ul class='plain'>{items}</ul>")
    return parts


def _proof_parts(gate: GateSection) -> list[str]:
    """The margin checks' evidence and the close checks' flip probabilities, as lists."""
    parts = []
    margins = margin_lines(gate, HTML)
    if margins:
        items = "".join(f"<li>{esc(line)}</li>" for line in margins)
        parts.append(
            f"<p>Margins (non-inferiority, equivalence):</p><ul class='plain'>{items}</ul>"
        )
    close = close_lines(gate)
    if close:
        items = "".join(f"<li>{esc(line)}</li>" for line in close)
        parts.append(f"<p>{esc(CLOSE_TITLE)}</p><ul class='plain'>{items}</ul>")
    return parts


def gate_section(p: RunPage) -> Section | None:
    gate: GateSection | None = p.report.gate
    if gate is None:
        return None
    summary = gate_summary(gate)
    failed = summary.failed
    parts = _gate_head(gate, summary)
    if failed:
        parts.append("<h3>Failed checks</h3>" + _checks_table(failed))
        messages = "".join(f"<li><code>{esc(c.name)}</code>: {esc(c.message)}</li>" for c in failed)
        parts.append(
            f"<details><summary>Why each check failed ({len(failed)} messages)</summary>"
            f"<ul class='plain'>{messages}</ul></details>"
        )
        parts.append(_drops_chart(failed))
    if summary.inconclusive:
        rows = "".join(f"<li>{esc(unjudged_line(r, HTML))}</li>" for r in unjudged_rows(gate))
        parts.append(
            f'<p class="warn">{esc(verdict_words(gate).inconclusive_sentence(summary))}</p>'
            f"<ul class='plain'>{rows}</ul>"
        )
    if gate.threshold_notes:
        notes = gate.threshold_notes
        lines = "".join(f"<li>{esc(threshold_line(n, HTML))}</li>" for n in notes)
        parts.append(
            f'<p class="warn">{esc(threshold_heading(notes))}</p><ul class="plain">{lines}</ul>'
        )
    parts += _proof_parts(gate)
    if gate.notes:
        parts.append(
            "<ul class='plain'>" + "".join(f"<li>{esc(n)}</li>" for n in gate.notes) + "</ul>"
        )
    every = _checks_table(gate.checks)
    opened = " open" if not failed else ""
    parts.append(
        f"<details{opened}><summary>All {len(gate.checks)} checks</summary>{every}</details>"
    )
    return Section("gate", "Gate verdict and failed checks", "".join(parts))


def metrics_section(p: RunPage) -> Section:
    parts = []
    if p.baseline is None:
        parts.append(
            "<p>No baseline: each bar is this run's mean. With <code>--baseline</code> (or "
            "<code>gate.baseline</code>) the baseline's bars are drawn beside it.</p>"
        )
    for index, result in p.report.indexes.items():
        kind = result.params.get("type", index)
        kind_html = f'<span class="muted">({esc(kind)})</span>'
        parts.append(f'<h3 id="index-{slug(index)}">{esc(index)} {kind_html}</h3>')
        store, notes = store_line(p.report, index), index_notes(p.report, index)
        parts.append(f'<p class="muted">The {esc(store)}.</p>' if store is not None else "")
        items = "".join(f'<li class="warn">{esc(n)}</li>' for n in notes)
        parts.append(f'<ul class="plain">{items}</ul>' if notes else "")
        parts.append(metric_bars(p.sides, index))
        parts.append(metric_table(p.report, index))
    parts.append(beyond_block(p.report))
    return Section("metrics", "Metrics per index and slice", "".join(parts))


def _ann_recall_chart(ann: AnnSection, floor: GateCheck | None) -> str:
    """Recall of the exact top k by the ANN index, per slice and cutoff, with the gate's floor."""
    first = next(iter(ann.slices.values()))
    cutoffs = list(first.recall)
    series = [Series(k, PALETTE[i % len(PALETTE)]) for i, k in enumerate(cutoffs)]
    rows = [
        BarRow(
            f"{name} ({s.n_queries})",
            [
                Bar(
                    s.recall.get(k),
                    tooltip=f"{name}: {ann.index} {k} against {ann.reference} = "
                    f"{num(s.recall.get(k))}",
                )
                for k in cutoffs
            ],
            " / ".join(num(s.recall.get(k)) for k in cutoffs),
        )
        for name, s in ann.slices.items()
    ]
    low = min([v for s in ann.slices.values() for v in s.recall.values() if v is not None] + [1.0])
    reference = None
    if floor is not None:
        reference = (floor.threshold, f"gate floor: {floor.name} ≥ {floor.threshold:g}")
    recall_svg = bar_chart(
        rows,
        series,
        label=f"{ann.index} recall against {ann.reference} search per slice",
        x_label=f"share of the {ann.reference} top k found by {ann.index}",
        x_range=(0.0, 1.0),
        reference=reference,
    )
    caption = (
        f"Recall of the {ann.reference} top k by {ann.index}, per slice and cutoff (lowest "
        f"{num(low)}); 0.95 is a realistic production figure."
        + (
            f" The dashed line is the gate's floor ({floor.threshold:g}, slice all)."
            if floor
            else ""
        )
    )
    return figure(f"{ann.index} recall@k against {ann.reference}", recall_svg, caption)


def _ann_loss_chart(ann: AnnSection) -> str:
    """The mean change of every metric, ANN - exact, over all queries."""
    all_slice = ann.slices.get("all", next(iter(ann.slices.values())))
    delta_rows = [
        DeltaRow(
            m,
            v,
            tooltip=f"{ann.index} − {ann.reference}, {m}, all queries: {num(v, signed=True)}",
            note=num(v, signed=True),
        )
        for m, v in all_slice.metric_deltas.items()
    ]
    loss_svg = delta_chart(
        delta_rows,
        label=f"metric change {ann.index} − {ann.reference}, all queries",
        x_label=f"{ann.index} − {ann.reference} (mean)",
    )
    return figure(
        f"Metric loss: {ann.index} − {ann.reference}, all queries",
        loss_svg,
        "Mean change of each metric when searching the approximate index instead of the "
        "exact one (left: loss). The table below has every slice.",
    )


def _ann_table(ann: AnnSection) -> str:
    """Recall at every cutoff and every metric's change, per slice."""
    first = next(iter(ann.slices.values()))
    cutoffs = list(first.recall)
    head = ["slice", "n", *(esc(k) for k in cutoffs), *(f"Δ{esc(m)}" for m in first.metric_deltas)]
    table_rows = [
        [
            esc(name),
            str(s.n_queries),
            *(num(v) for v in s.recall.values()),
            *(signed_num(v) for v in s.metric_deltas.values()),
        ]
        for name, s in ann.slices.items()
    ]
    return data_table(head, table_rows)


def ann_section(p: RunPage) -> Section | None:
    """Each approximate index against exact search: recall, what it costs, every slice."""
    sections = p.report.ann_sections()
    if not sections:
        return None
    floors = {
        c.index: c
        for c in (p.report.gate.checks if p.report.gate else [])
        if c.kind == "ann_min_recall"
    }
    body = "".join(_ann_block(p, ann, floors.get(ann.index)) for ann in sections)
    latency = latency_text(p.report)
    if latency is not None:
        body += f'<p class="note">{esc(latency)[0].upper()}{esc(latency)[1:]}.</p>'

    first = sections[0]
    title = (
        f"{first.index.upper()} against {first.reference} search"
        if len(sections) == 1
        else f"Approximate indexes against {first.reference} search"
    )
    return Section("ann", title, body)


def _ann_block(p: RunPage, ann: AnnSection, floor: GateCheck | None) -> str:
    """One approximate index: its recall and metric-change charts and its table."""
    return (
        f"<p>The approximate index <code>{esc(ann.index)}</code> against exact search "
        f"<code>{esc(ann.reference)}</code> over the same vectors: how many true neighbours it "
        f"finds, and what that costs in every metric.{_ann_size(ann)}</p>"
        '<div class="grid">'
        + _ann_recall_chart(ann, floor)
        + _ann_loss_chart(ann)
        + "</div>"
        + _ann_table(ann)
        + _stability_table(p, ann)
        + _selectivity_table(ann)
    )


def _stability_table(p: RunPage, ann: AnnSection) -> str:
    """An index searched several times: mean, worst and best of each figure over the repeats."""
    rows = stability_rows(ann, HTML)
    if not rows or ann.stability is None:
        return ""
    over = f"{ann.stability.repeats} {repeats_word(p.report, ann.index)}"
    body = [[esc(name), mean, worst, best] for name, mean, worst, best in rows]
    return f"<p>Over {esc(over)} (slice all):</p>" + data_table(
        ["figure", "mean", "worst", "best"], body
    )


def _ann_size(ann: AnnSection) -> str:
    """What the index told of its cost (" Its cost: index 0.58 MiB (1,807 bytes a vector),
    334 distances a query.")."""
    cost = cost_text(ann)
    return f" Its cost: {esc(cost)}." if cost else ""


def _selectivity_table(ann: AnnSection) -> str:
    """With filtered queries: recall by the share of the corpus each query's filter keeps."""
    ks, rows = selectivity_rows(ann, HTML)
    if not ks:
        return ""
    head = ["share eligible", "n", *(esc(k) for k in ks)]
    body = [[esc(r.bucket), str(r.n_queries), *r.cells] for r in rows]
    return f"<p>By filter selectivity: {esc(SELECTIVITY_MEANING)}.</p>" + data_table(head, body)


TEXTS_UNKNOWN = '<p class="muted">Query and document texts: golden set not available.</p>'


def per_query_section(p: RunPage) -> Section | None:
    """Against a baseline, every query's change and the biggest losses and gains; without one,
    the distribution of the scores and the lowest-scoring queries."""
    q = p.queries
    if q is None or not q.metric:
        return None
    if p.baseline is None:
        return _scores_without_baseline(q)
    if not q.comparable:
        return Section(
            "per-query",
            "Per-query changes",
            "<p>The baseline has no per-query scores for these queries and this metric.</p>",
        )
    before, after = (s.name for s in p.sides)
    parts = [
        f"<p>Change of <code>{esc(q.metric)}</code> for every query, current − baseline "
        "(the baseline's per-query scores are in the baseline file).</p>"
    ]
    for spread in q.changes:
        parts.append(
            f"<h3>{esc(spread.index)}</h3>" + delta_distribution(spread, before, after, q.metric)
        )
    if not q.texts:
        parts.append(TEXTS_UNKNOWN)
    parts.append(
        examples_block(q.losers, q.gainers, ("baseline", "current"), f"{q.focus}, {q.metric}")
    )
    return Section("per-query", "Per-query changes against the baseline", "".join(parts))


def _score_chart(spread: ScoreSpread, metric: str) -> str:
    """The histogram of one index's per-query scores, 0 to 1."""
    n = len(spread.values)
    return figure(
        f"{spread.index}: distribution of {metric}",
        histogram(
            spread.values,
            label=f"{spread.index}: histogram of per-query {metric}",
            x_label=f"{metric} of a query",
            value_range=(0.0, 1.0),
            bins=10,
            signed=False,
        ),
        f"{n} queries; mean {num(spread.mean)}, {spread.zeros} score 0, {spread.ones} score 1.",
    )


def _scores_without_baseline(q: RunQueries) -> Section:
    metric = q.metric
    parts = [
        f"<p>No baseline, so no per-query change: the distribution of <code>{esc(metric)}</code> "
        "over the queries, and the queries it fails most. Gate against a baseline "
        "(<code>--baseline</code>) to see which queries lose and gain.</p>"
    ]
    charts = [_score_chart(spread, metric) for spread in q.scores]
    parts.append(f'<div class="grid">{"".join(charts)}</div>')
    cards = "".join(query_card(e, None) for e in q.losers)
    if not q.texts:
        parts.append(TEXTS_UNKNOWN)
    parts.append(f"<h3>Lowest-scoring queries ({esc(q.focus)}, {esc(metric)})</h3>{cards}")
    return Section("per-query", "Per-query scores", "".join(parts))


def curves_section(p: RunPage) -> Section | None:
    overview = indexes_curve(p.sides)
    blocks = [f'<div class="grid">{overview}</div>'] if overview else []
    for index in p.report.indexes:
        block = curves_block(p.sides, index)
        if block:
            blocks.append(f"<h3>{esc(index)}</h3>{block}")
    if not blocks:
        return None
    return Section("curves", "Metric@k curves", "".join(blocks))


def fingerprint_section(p: RunPage) -> Section:
    r = p.report
    f = r.fingerprint
    g = r.golden_set
    cache = r.embedding.cache
    rows = [
        ("digest", code_value(f.digest)),
        (
            "golden set",
            f"{code_value(g.source)} ({esc(g.format)}), fingerprint {code_value(g.fingerprint)}",
        ),
        (
            "golden set size",
            f"{g.n_documents} documents, {g.n_queries_judged} judged queries, "
            f"{g.n_queries_evaluated} evaluated, {g.n_judgments} judgments",
        ),
        *((f"model.{k}", code_value(v)) for k, v in f.model.items()),
        *((f"index {k}", code_value(v)) for k, v in f.indexes.items()),
        *((f"metrics.{k}", code_value(v)) for k, v in f.metrics.items()),
        *((f"sample.{k}", code_value(v)) for k, v in (f.sample or {}).items()),
        ("evalret", code_value(f.evalret_version)),
        ("embedding", code_value(r.embedding.model_dump(exclude={"cache"}))),
        ("embedding cache", code_value(cache.model_dump() if cache is not None else None)),
        ("bootstrap", code_value(r.bootstrap.model_dump())),
        ("timings (s)", code_value(r.timings)),
    ]
    note = without_relevant_note(r)
    if note:
        rows.append(
            (
                "without relevant",
                f"{esc(note)}: "
                + ", ".join(f"<code>{esc(q)}</code>" for q in g.queries_without_relevant[:20])
                + (" …" if len(g.queries_without_relevant) > 20 else ""),
            )
        )
    if g.warnings:
        rows.append(("golden-set warnings", "<br>".join(esc(x) for x in warning_lines(g))))
    slices = data_table(
        ["slice", "kind", "n", "reliability", "definition"],
        [
            [esc(n), esc(s.kind), str(s.n_queries), esc(s.reliability), esc(s.definition)]
            for n, s in r.slices.items()
        ],
        left=(0, 1, 3, 4),
    )
    config = esc(json.dumps(r.config, indent=2, sort_keys=False, default=str))
    body = (
        kv_table(rows)
        + "<h3>Slices</h3>"
        + slices
        + f"<details><summary>The resolved config</summary><pre>{config}</pre></details>"
    )
    return Section("fingerprint", "Fingerprint and config", body)


def lexical_section(p: RunPage) -> Section | None:
    """Where the dense index beats or loses to BM25, per slice, and what the hybrid adds."""
    lex = p.report.lexical
    if lex is None:
        return None
    metric = next(iter(next(iter(lex.slices.values())).dense_minus_bm25))
    charts = []
    for key, title, caption in (
        (
            "dense_minus_bm25",
            f"{lex.dense} − bm25",
            "right of zero: the embedding model beats lexical search on this slice; left: BM25 "
            "is better (typical of exact-match queries: codes, identifiers)",
        ),
        (
            "hybrid_minus_dense",
            f"hybrid − {lex.dense}",
            "what fusing BM25 into the dense ranking (reciprocal rank fusion) changes",
        ),
    ):
        rows = [
            DeltaRow(
                label=f"{name} (n={s.n_queries})",
                delta=getattr(s, key).get(metric),
                tooltip=f"{name}: {title} {metric} = {num(getattr(s, key).get(metric), True)}; "
                f"dense wins {s.dense_wins[metric]}, bm25 wins {s.bm25_wins[metric]}",
            )
            for name, s in lex.slices.items()
        ]
        charts.append(
            figure(
                f"{title}, {metric}, per slice",
                delta_chart(rows, label=f"{title} per slice", x_label=f"Δ {metric}"),
                caption,
            )
        )
    table = data_table(
        [
            "slice",
            "n",
            f"{esc(lex.dense)} − bm25",
            f"hybrid − {esc(lex.dense)}",
            "dense wins",
            "bm25 wins",
        ],
        [
            [
                esc(name),
                str(s.n_queries),
                signed_num(s.dense_minus_bm25.get(metric)),
                signed_num(s.hybrid_minus_dense.get(metric)),
                str(s.dense_wins[metric]),
                str(s.bm25_wins[metric]),
            ]
            for name, s in lex.slices.items()
        ],
    )
    body = f'<div class="grid">{"".join(charts)}</div>{table}'
    return Section("lexical", f"Dense against lexical (BM25) on {esc(metric)}", body)


def beyond_block(report: RunReport) -> str:
    """Corpus coverage and the Gini coefficient of every index's top k, per slice (not gated),
    under the metrics; empty for a report without them."""
    view = beyond_table(report, HTML)
    if view is None:
        return ""
    head = ["slice", "n"]
    head += [f"{esc(i)} {c}" for i in view.indexes for c in (f"coverage@{view.k}", "gini")]
    rows = [
        [esc(r.slice), str(r.n_queries), *(c for pair in r.cells for c in pair)] for r in view.rows
    ]
    notes = "".join(f"<li>{esc(line)}</li>" for line in view.outside)
    body = (
        f'<p class="muted">{esc(view.meaning[0].upper() + view.meaning[1:])}.</p>'
        + data_table(head, rows)
        + (f'<ul class="plain">{notes}</ul>' if notes else "")
    )
    title = f"{BEYOND_TITLE}: coverage and popularity (top {view.k})"
    return f'<h3 id="beyond">{esc(title)}</h3>{body}'


def intrinsic_section(p: RunPage) -> Section | None:
    """Label-free health of the document and query vectors, and the collapse verdict."""
    rows = intrinsic_rows(p.report)
    if not rows or p.report.intrinsic is None:
        return None
    reasons = [
        f"<li><strong>{esc(matrix)} collapsed</strong>: {esc(r)}</li>"
        for matrix, found in p.report.intrinsic.collapse_reasons.items()
        for r in found
    ]
    verdict = (
        f'<ul class="result-fail">{"".join(reasons)}</ul>'
        if reasons
        else "<p>Not collapsed: no dead-dimension, effective-rank or cosine condition fired.</p>"
    )
    table = data_table(
        ["figure", "documents", "queries", ""],
        [[esc(n), esc(d), esc(q), f'<span class="muted">{esc(h)}</span>'] for n, d, q, h in rows],
        left=(0, 3),
    )
    return Section("health", "Embedding health (no labels needed)", verdict + table)


def sample_section(p: RunPage) -> Section | None:
    """A sampled run: what was drawn, each slice's share, and how to read the figures."""
    line, s = sample_summary(p.report), p.report.sample
    if line is None or s is None:
        return None
    rows = data_table(
        ["slice", "queries in the set", "proportional share", "sampled"],
        [
            [esc(n), str(v.total), num(v.share, digits=2), str(v.sampled)]
            for n, v in s.slices.items()
        ],
    )
    settings = kv_table(
        [
            ("queries", f"{s.n_queries} drawn of {s.n_queries_total} ({s.queries} asked)"),
            ("documents", f"{s.n_documents} of {s.n_documents_total}"),
            ("seed, floor", f"{s.seed}, at least {s.min_per_slice} queries per slice"),
            ("method", f"{esc(s.method)}, {s.n_strata} strata (combinations of slices)"),
        ]
    )
    notes = "".join(f"<li>{esc(n)}</li>" for n in s.notes)
    body = f"<p>{esc(line[0].upper() + line[1:])}.</p>{settings}{rows}<ul>{notes}</ul>"
    return Section("sample", "Sample", body)


def rerank_section(p: RunPage) -> Section | None:
    """Each rerank index beside its first stage: ceiling, oracle, each stage's change."""
    if not p.report.rerank:
        return None
    blocks = []
    for section in p.report.rerank.values():
        table = rerank_table(p.report, section, HTML)
        blocks.append(
            f"<h3>{esc(section.index)} of {esc(section.first_stage)} (top {section.k}) on "
            f"{esc(table.metric)}</h3><p>{esc(MEANING.format(k=section.k))}.</p>"
            + data_table(list(COLUMNS), [[esc(c) for c in row] for row in table.rows])
        )
    return Section("rerank", "Rerank stages against their first stage", "".join(blocks))


RunSection = Callable[[RunPage], Section | None]
# The run page, in order. A new section is a function (RunPage) -> Section | None added here.
RUN_SECTIONS: list[RunSection] = [
    gate_section,
    metrics_section,
    sample_section,
    ann_section,
    rerank_section,
    lexical_section,
    per_query_section,
    curves_section,
    intrinsic_section,
    fingerprint_section,
]


def _run_meta(r: RunReport) -> str:
    g = r.golden_set
    model = r.fingerprint.model.get("source", r.fingerprint.model.get("name"))
    return (
        f'<p class="meta">Golden set <code>{esc(g.source)}</code> ({g.n_documents} documents, '
        f"{g.n_queries_evaluated} queries evaluated{' (a sample)' if r.sample else ''}) · "
        f"model <code>{esc(model)}</code> · "
        f"fingerprint <code>{esc(r.fingerprint.digest[:12])}</code> · evalret "
        f"{esc(r.evalret_version)}</p>"
    )


def run_html(
    report: RunReport, baseline: RunReport | None = None, queries: RunQueries | None = None
) -> str:
    """report.html of a run. With ``baseline`` its bars are drawn beside the run's; ``queries``
    (picked by the caller) fill the per-query section."""
    p = RunPage(report, baseline, queries)
    gate = report.gate
    if gate is None:
        badge = verdict_badge("neutral", "NO GATE")
    else:
        words = verdict_words(gate)
        badge = verdict_badge(words.badge_state, words.badge)
    sections = [s for s in (fn(p) for fn in RUN_SECTIONS) if s is not None]
    return page("evalret run report", badge, _run_meta(report), sections, "run")
