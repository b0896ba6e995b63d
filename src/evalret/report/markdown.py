"""report.md: a concise Markdown summary for a pull-request comment or a CI step summary.

Verdict first, then the failed checks, then every check per slice with baseline, current, delta
and threshold; without a gate, the metrics of each index per slice.
"""

from __future__ import annotations

from evalret.data.schema import GateCheck, GateSection, RunReport
from evalret.report.beyond_view import BEYOND_TITLE, beyond_table
from evalret.report.escape import markdown, markdown_code
from evalret.report.filter_view import SELECTIVITY_MEANING, selectivity_rows
from evalret.report.gate_rows import (
    DEFAULT_HINT,
    JudgeHint,
    check_rows,
    gate_summary,
    judge_commands,
    judge_page,
    threshold_heading,
    threshold_line,
    unjudged_rows,
)
from evalret.report.judge_view import run_judge_text
from evalret.report.numbers import TYPOGRAPHIC, number
from evalret.report.rerank_view import rerank_markdown
from evalret.report.run_notes import (
    alignment_notes,
    api_notes,
    backend_line,
    cache_notes,
    cost_text,
    engine_line,
    interval_lines,
    intrinsic_rows,
    labels_note,
    labels_rows,
    latency_text,
    repeats_word,
    sample_summary,
    shown_judged,
    stability_rows,
    store_line,
    truncation_line,
    warning_lines,
    without_relevant_note,
)
from evalret.report.verdict import (
    CLOSE_TITLE,
    check_note,
    close_lines,
    loss_line,
    margin_lines,
    verdict_words,
)

RESULT_MARKS = {"pass": "✅ pass", "fail": "❌ fail", "inconclusive": "⚠️ inconclusive"}

HEADLINE_LABEL_METRICS = 5  # metrics shown on human and on all labels (as the terminal)


def _num(v: float | None, signed: bool = False) -> str:
    return number(v, signed, medium=TYPOGRAPHIC)


def _checks_table(checks: list[GateCheck], with_message: bool) -> list[str]:
    columns = (
        "index",
        "slice",
        "n",
        "metric",
        "baseline",
        "current",
        "delta",
        "threshold",
        "p (adj.)",
        "result",
    )
    rows = ["| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]
    for row in check_rows(checks, TYPOGRAPHIC):
        c = row.check
        result = RESULT_MARKS[c.outcome]
        if c.outcome == "inconclusive" and not c.passed:
            result += " (fails: policy fail)"
        if check_note(c):
            result += f" · {check_note(c)}"
        rows.append(
            f"| {c.index} | {markdown(c.slice)} | {c.n_queries} | {c.metric} | "
            f"{row.baseline} | {row.current} | {row.delta} | {row.limit} | {row.p} | {result} |"
        )
    if with_message:
        rows += ["", *(f"- {markdown_code(c.name)}: {markdown(c.message)}" for c in checks)]
    return rows


def proof_lines(gate: GateSection, shown: int | None = None) -> list[str]:
    """The margin checks' evidence and the close checks' flip probabilities, as Markdown lists
    (the first ``shown`` of each; None: all); none when there is neither."""
    lines: list[str] = []
    margins = margin_lines(gate, TYPOGRAPHIC)
    if margins:
        lines += ["", "Margins (non-inferiority, equivalence):", ""]
        lines += [f"- {markdown(line)}" for line in margins[:shown]]
    close = close_lines(gate)
    if close:
        lines += ["", f"{CLOSE_TITLE[0].upper()}{CLOSE_TITLE[1:]}", ""]
        lines += [f"- {markdown(line)}" for line in close[:shown]]
    return lines


def verdict_heading(gate: GateSection) -> str:
    """``## evalret gate: ✅ pass (N checks)``, ``no baseline: N fixed checks``, ``⚠️
    inconclusive`` or ``❌ fail`` (report.md and comment.md; the words: ``report.verdict``)."""
    return verdict_words(gate).heading


def loss_lines(gate: GateSection) -> list[str]:
    """How much was lost, under a failed verdict (``report.verdict.loss_line``), then a blank
    line; [] when no drop check failed."""
    line = loss_line(gate, TYPOGRAPHIC)
    return [markdown(line), ""] if line is not None else []


def unjudged_lines(gate: GateSection, hint: JudgeHint) -> list[str]:
    """The inconclusive checks' slices as a table (judged@k of baseline and current, the share
    of the new top k never judged) and the commands that would judge them (``hint``: the run's
    report.json and config words); [] when none."""
    summary = gate_summary(gate)
    rows = unjudged_rows(gate)
    if not summary.inconclusive:
        return []
    lines = [
        f"### Inconclusive checks ({len(summary.inconclusive)})",
        "",
        f"⚠️ {markdown(verdict_words(gate).inconclusive_sentence(summary))}",
        "",
        "| index | slice | k | judged@k baseline | judged@k current | never judged | checks |",
        "|" + " --- |" * 7,
    ]
    lines += [
        f"| {markdown(r.index)} | {markdown(r.slice)} | {r.k} | {_num(r.baseline)} | "
        f"{_num(r.current)} | "
        f"{'–' if r.never_judged is None else f'{r.never_judged:.0%}'} | {r.n_checks} |"
        for r in rows
    ]
    commands = judge_commands(gate, hint)
    if commands:
        intro = "Judge the unjudged documents, then merge the labels and rerun:"
        if not hint.has_judge:  # the link is the site's own address: no text of the run
            intro = (
                f"Add a `judge:` section to the config ([how]({judge_page()})), then judge the "
                "unjudged documents, merge the labels and rerun:"
            )
        lines += ["", intro, ""]
        lines += [f"- {markdown_code(c)}" for c in commands]
    return [*lines, ""]


def threshold_lines(gate: GateSection) -> list[str]:
    """The one warning on thresholds finer than their slices' MDE (``gate_rows``), then a blank
    line; [] when there is none."""
    notes = gate.threshold_notes
    if not notes:
        return []
    lines = [f"⚠️ {markdown(threshold_heading(notes))}", ""]
    return [*lines, *(f"- {markdown(threshold_line(n, TYPOGRAPHIC))}" for n in notes), ""]


def _gate_lines(gate: GateSection, hint: JudgeHint) -> list[str]:
    summary = gate_summary(gate)
    failed = summary.failed
    lines = [verdict_heading(gate), "", *loss_lines(gate)]
    if gate.baseline:
        lines.append(
            f"Baseline {markdown_code(gate.baseline)} "
            f"(fingerprint `{(gate.baseline_fingerprint or '')[:12]}`)."
        )
    if gate.significance:
        s = gate.significance
        lines.append(
            f"A drop fails only when significant: {s.test} test, alpha {s.alpha}, "
            f"{s.correction} correction across checks."
        )
    if gate.changed:
        lines += ["", "Changed since the baseline:", ""]
        lines += [
            f"- {markdown_code(k)}: {markdown_code(str(v.baseline))} → "
            f"{markdown_code(str(v.current))}"
            for k, v in gate.changed.items()
        ]
    if failed:
        lines += ["", "### Failed checks", "", *_checks_table(failed, with_message=True)]
    if summary.inconclusive:
        lines += ["", *unjudged_lines(gate, hint)]
    if gate.threshold_notes:
        lines += ["", *threshold_lines(gate)]
    lines += proof_lines(gate)
    if gate.notes:
        lines += ["", *(f"- {markdown(n)}" for n in gate.notes)]
    lines += [
        "",
        "<details><summary>All checks</summary>",
        "",
        *_checks_table(gate.checks, False),
        "",
        "</details>",
    ]
    return lines


def _metrics_lines(report: RunReport) -> list[str]:
    lines = []
    for index, result in report.indexes.items():
        metrics = list(next(iter(result.slices.values())).metrics)
        judged = shown_judged(result.slices)
        columns = [*metrics, *([judged] if judged else [])]
        lines += [
            "",
            f"### {markdown(index)}",
            "",
            "| slice | n | " + " | ".join(columns) + " |",
            "|" + " --- |" * (len(columns) + 2),
        ]
        for name, s in result.slices.items():
            cells = [_num(s.metrics[m].value) for m in metrics]
            cells += [_num(s.judged.get(judged))] if judged else []
            lines.append(f"| {markdown(name)} | {s.n_queries} | " + " | ".join(cells) + " |")
        store = store_line(report, index)
        if store is not None:
            lines += ["", f"The {markdown(store)}."]
        notes = interval_lines(report, index)
        if notes:
            lines += ["", "Intervals:", "", *(f"- {markdown(n)}" for n in notes)]
    return lines


def _labels_lines(report: RunReport) -> list[str]:
    """The headline metrics on human labels alone beside all labels (an LLM judge graded part
    of the golden set); nothing otherwise."""
    note = labels_note(report)
    if note is None:
        return []
    first = next(iter(report.indexes.values()))
    metrics = list(next(iter(first.slices.values())).metrics)[:HEADLINE_LABEL_METRICS]
    lines = [
        "",
        "### Human labels beside all labels",
        "",
        f"{markdown(note)}.",
        "",
        "| index | labels | n | " + " | ".join(markdown(m) for m in metrics) + " |",
        "|" + " --- |" * (len(metrics) + 3),
    ]
    for index, name, n, cells in labels_rows(report, metrics):
        lines.append(f"| {markdown(index)} | {name} | {n} | " + " | ".join(cells) + " |")
    return lines


def _lexical_lines(report: RunReport) -> list[str]:
    lex = report.lexical
    if lex is None:
        return []
    metric = next(iter(next(iter(lex.slices.values())).dense_minus_bm25))
    lines = [
        "",
        f"### Dense ({lex.dense}) against BM25 on {metric}",
        "",
        "| slice | n | dense − bm25 | hybrid − dense | dense wins | bm25 wins |",
        "|" + " --- |" * 6,
    ]
    for name, s in lex.slices.items():
        lines.append(
            f"| {markdown(name)} | {s.n_queries} | {_num(s.dense_minus_bm25[metric], True)} | "
            f"{_num(s.hybrid_minus_dense.get(metric), True)} | {s.dense_wins[metric]} | "
            f"{s.bm25_wins[metric]} |"
        )
    return lines


def _cost_lines(report: RunReport) -> list[str]:
    """Each approximate index's recall against exact search and what it told of its cost; the
    latency of every timed index, with the machine."""
    lines = []
    for ann in report.ann_sections():
        s = ann.slices.get("all")
        first = next(iter(s.recall.items()), None) if s is not None else None
        recall = f"{first[0]} {_num(first[1])}" if first is not None else "-"
        cost = cost_text(ann)
        lines.append(
            f"- `{markdown(ann.index)}`: {recall}" + (f"; {markdown(cost)}" if cost else "")
        )
    if lines:
        lines = ["", "### Approximate indexes against exact search", "", *lines]
    lines += _stability_lines(report)
    latency = latency_text(report)
    if latency is not None:
        lines += ["", f"{markdown(latency[0].upper() + latency[1:])}."]
    return lines


def _stability_lines(report: RunReport) -> list[str]:
    """Each approximate index searched several times: the mean, worst and best of its recall
    and metric changes over the repeats (slice all)."""
    lines: list[str] = []
    for ann in report.ann_sections():
        rows = stability_rows(ann, TYPOGRAPHIC)
        if not rows or ann.stability is None:
            continue
        over = f"{ann.stability.repeats} {repeats_word(report, ann.index)}"
        lines += [
            "",
            f"{markdown(ann.index)} over {over} (slice all):",
            "",
            "| figure | mean | worst | best |",
            "|" + " --- |" * 4,
            *(
                f"| {markdown(name)} | {mean} | {worst} | {best} |"
                for name, mean, worst, best in rows
            ),
        ]
    return lines


def _selectivity_lines(report: RunReport) -> list[str]:
    """Filtered queries: each approximate index's recall by selectivity bucket."""
    lines: list[str] = []
    for ann in report.ann_sections():
        ks, rows = selectivity_rows(ann, TYPOGRAPHIC)
        if not ks:
            continue
        lines += [
            "",
            f"### {markdown(ann.index)} by filter selectivity",
            "",
            f"{SELECTIVITY_MEANING[0].upper()}{SELECTIVITY_MEANING[1:]}.",
            "",
            "| share eligible | n | " + " | ".join(ks) + " |",
            "|" + " --- |" * (len(ks) + 2),
        ]
        lines += [
            f"| {markdown(r.bucket)} | {r.n_queries} | " + " | ".join(r.cells) + " |" for r in rows
        ]
    return lines


def _beyond_lines(report: RunReport) -> list[str]:
    """Coverage and Gini of every index's top k, per slice (not gated)."""
    view = beyond_table(report, TYPOGRAPHIC)
    if view is None:
        return []
    columns = [f"{markdown(i)} {c}" for i in view.indexes for c in (f"cov@{view.k}", "gini")]
    lines = [
        "",
        f"### {BEYOND_TITLE} (top {view.k})",
        "",
        f"{view.meaning[0].upper()}{view.meaning[1:]}.",
        "",
        "| slice | n | " + " | ".join(columns) + " |",
        "|" + " --- |" * (len(columns) + 2),
    ]
    for row in view.rows:
        cells = [c for pair in row.cells for c in pair]
        lines.append(f"| {markdown(row.slice)} | {row.n_queries} | " + " | ".join(cells) + " |")
    lines += [f"- ⚠️ {markdown(line)}" for line in view.outside]
    return lines


def _intrinsic_lines(report: RunReport) -> list[str]:
    rows = intrinsic_rows(report)
    if not rows:
        return []
    lines = [
        "",
        "### Embedding health",
        "",
        "| figure | documents | queries | |",
        "|" + " --- |" * 4,
    ]
    lines += [f"| {name} | {docs} | {queries} | {hint} |" for name, docs, queries, hint in rows]
    assert report.intrinsic is not None
    for matrix, reasons in report.intrinsic.collapse_reasons.items():
        lines += [f"- ⚠️ {matrix} collapsed: {r}" for r in reasons]
    return lines


def _sample_lines(report: RunReport) -> list[str]:
    """A sampled run: what it evaluated, each slice's share, and how to read the figures."""
    line, s = sample_summary(report), report.sample
    if line is None or s is None:
        return []
    shares = ", ".join(f"{markdown(n)} {v.sampled}/{v.total}" for n, v in s.slices.items())
    lines = ["", f"**Sampled run**: {markdown(line)}.", "", f"Queries per slice: {shares}.", ""]
    return lines + [f"- {markdown(n)}" for n in s.notes]


def render_markdown(report: RunReport, hint: JudgeHint = DEFAULT_HINT) -> str:
    """report.md of ``report``; ``hint``: where its report.json is and the run's config words
    (for the judge commands of inconclusive checks)."""
    g = report.golden_set
    model = report.fingerprint.model.get("source", report.fingerprint.model.get("name"))
    lines = (
        _gate_lines(report.gate, hint) if report.gate else ["## evalret run (no gate configured)"]
    )
    lines += [
        "",
        f"Golden set {markdown_code(g.source)} ({g.format}, {g.n_documents} documents, "
        f"{g.n_queries_evaluated} queries, fingerprint `{g.fingerprint[:12]}`); "
        f"model {markdown_code(str(model))}.",
    ]
    backend = backend_line(report.embedding)
    if backend:
        lines.append(f"Embedding {markdown(backend)}.")
    engine = engine_line(report.embedding)
    if engine:
        lines.append(f"Cache misses {markdown(engine)}.")
    cut = truncation_line(report.embedding)
    if cut:
        lines.append(f"Embedding: {markdown(cut)}.")
    lines += _sample_lines(report)
    if report.judge is not None:  # `run --judge`: the metrics count the judge's labels
        lines += ["", f"**{markdown(run_judge_text(report.judge))}.**", ""]
    notes = cache_notes(report.embedding) + api_notes(report.embedding) + alignment_notes(report)
    if notes:
        lines += ["", *(f"- ⚠️ {markdown(n)}" for n in notes), ""]
    note = without_relevant_note(report)
    if note:
        lines.append(f"{note}.")
    if g.warnings:
        lines += ["", f"Golden-set warnings ({len(g.warnings)}):", ""]
        lines += [f"- {markdown(line)}" for line in warning_lines(g)]
    lines += _labels_lines(report)
    lines += _metrics_lines(report)
    lines += rerank_markdown(report, TYPOGRAPHIC, markdown)
    lines += _lexical_lines(report)
    lines += _cost_lines(report)
    lines += _selectivity_lines(report)
    lines += _beyond_lines(report)
    lines += _intrinsic_lines(report)
    return "\n".join(lines) + "\n"
