"""Terminal views of `evalret judgments agreement` and `merge`: every figure to four decimals,
untrusted names and texts escaped."""

from __future__ import annotations

from typing import Any

from evalret.core.judgments import MergeOutcome
from evalret.report.escape import markup_safe


def fig(x: float | None) -> str:
    """A figure to four decimals; n/a when undefined."""
    return "n/a" if x is None else f"{x:.4f}"


def _short(text: str, width: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def render_agreement(r: dict[str, Any]) -> str:
    """The agreement report as terminal lines."""
    names = ", ".join(r["annotators"])
    lines = [
        f"{len(r['annotators'])} annotators ({markup_safe(names)}), {r['items']} items, "
        f"{r['items_multiply_graded']} graded by two or more; scale {r['scale']}",
        f"raw agreement (all agree, items graded by 2+): {fig(r['raw_agreement'])}",
    ]
    for w in r["warnings"]:
        lines.append(f"warning: {markup_safe(w)}")
    for p in r["pairs"]:
        lines.append(
            f"  {markup_safe(p['a'])} vs {markup_safe(p['b'])}: {p['items']} shared items, "
            f"agreement {fig(p['raw_agreement'])}, Cohen's kappa {fig(p['cohen_kappa'])}, "
            f"weighted kappa linear {fig(p['weighted_kappa_linear'])}, "
            f"quadratic {fig(p['weighted_kappa_quadratic'])}"
        )
    f, a = r["fleiss"], r["krippendorff_ordinal"]
    lines.append(
        f"Fleiss' kappa {fig(f['kappa'])} over {f['items']} items graded by every annotator "
        f"({f['items_left_out']} graded by fewer left out)"
    )
    lines.append(f"Krippendorff's alpha (ordinal) {fig(a['alpha'])} over {a['items']} items")
    for name, g in r["gold_accuracy"].items():
        acc = "no gold items" if g["accuracy"] is None else fig(g["accuracy"])
        lines.append(
            f"  gold accuracy {markup_safe(name)}: {acc} ({g['correct']}/{g['gold_items']})"
        )
    if r["widest_disagreement"]:
        lines.append("widest disagreement:")
    for w in r["widest_disagreement"]:
        grades = ", ".join(f"{markup_safe(k)}={v}" for k, v in w["grades"].items())
        lines.append(
            f"  {markup_safe(w['query_id'])} / {markup_safe(w['doc_id'])} spread {w['spread']}: "
            f"{grades}  {markup_safe(_short(w['query']))}"
        )
    return "\n".join(lines)


def _fingerprint_line(o: MergeOutcome) -> str:
    """The golden set's fingerprint before and after, or that it did not change."""
    before, after = o.fingerprint_before[:16], o.fingerprint_after[:16]
    if o.fingerprint_before == o.fingerprint_after:
        return f"fingerprint {before} unchanged (no grade merged: baselines made before still fit)"
    return f"fingerprint {before} -> {after} (a baseline made before is refused)"


def render_merge(o: MergeOutcome) -> str:
    """What `judgments merge` wrote and left out."""
    lines = [
        f"merged {o.merged} grades ({o.overwritten} overwritten) into {markup_safe(str(o.out))} "
        f"({o.format}); {o.disputed} disputed -> disputed.jsonl; {o.kept_existing} already "
        f"judged kept; {o.gold_items} gold items not merged; {o.unknown} not in the golden set",
        _fingerprint_line(o),
    ]
    if o.llm_graded or o.llm_beside_human:
        lines.append(
            f"LLM judge: {o.llm_graded} of the merged grades are its own (source llm:...); "
            f"{o.llm_beside_human} of its grades kept beside a person's (the person's grade is "
            "the golden one)"
        )
    if o.dropped_annotators:
        lines.append(f"dropped (gold accuracy): {markup_safe(', '.join(o.dropped_annotators))}")
    if o.annotators_without_gold:
        names = markup_safe(", ".join(o.annotators_without_gold))
        lines.append(f"kept without gold items: {names}")
    lines.extend(f"warning: {markup_safe(w)}" for w in o.warnings)
    return "\n".join(lines)
