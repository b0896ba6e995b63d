"""Terminal view of `evalret judge`: the plan (pairs, cached, to ask, tokens, requests, cost),
then what was asked, read, failed and written, and the calibration against human labels.
Untrusted text (paths, the server's messages) is escaped."""

from __future__ import annotations

from typing import Any

from evalret.report.escape import markup_safe
from evalret.report.judgments_view import fig


def money(x: float | None) -> str:
    if x is None:
        return "n/a (no judge.price_per_million_input_tokens and _output_tokens)"
    return f"${x:.4f}"


def _unusable(n: int, asked: bool = True) -> str:
    """What the cache held but could not give (a grade off the scale), when anything."""
    again = ": asked again" if asked else ""
    return f" ({n} cached answer(s) off the scale, not used{again})" if n else ""


def render_plan(p: dict[str, Any]) -> list[str]:
    return [
        f"judge {markup_safe(p['model'])} at {markup_safe(p['endpoint'])}, prompt "
        f"{markup_safe(p['prompt'])} ({p['prompt_hash']}), {p['votes']} vote(s) per pair",
        f"{p['pairs']} pairs: {p['cached']} answers cached, {p['to_ask']} to ask in "
        f"{p['requests']} requests{_unusable(p.get('cache_unusable', 0))}",
        f"input tokens {p['input_tokens']} ({markup_safe(p['token_count'])}), output tokens "
        f"{p['output_tokens']} (assumed {markup_safe(p['output_assumed'])}); cost "
        f"{money(p['cost'])}",
    ]


def calibration_lines(c: dict[str, Any]) -> list[str]:
    grades = c["grades"]
    bias = "n/a" if c["bias"] is None else f"{c['bias']:+.4f}"
    lines = [
        f"calibration on {c['items']} pairs graded by humans and the judge (of "
        f"{c['human_pairs']} human-graded): agreement {fig(c['raw_agreement'])}, Cohen's kappa "
        f"{fig(c['cohen_kappa'])}, weighted kappa linear {fig(c['weighted_kappa_linear'])}, "
        f"quadratic {fig(c['weighted_kappa_quadratic'])}, mean bias (judge - human) "
        f"{bias}",
        "  confusion (rows: human grade, columns: judge grade): "
        + "  ".join(str(g) for g in grades),
    ]
    for g, row in zip(grades, c["confusion"], strict=True):
        lines.append(f"    {g}: " + " ".join(f"{n:>5}" for n in row))
    return lines


def answered_lines(o: dict[str, Any], unparseable: str) -> list[str]:
    """What a judging asked, found cached, could not read (``unparseable`` says what became of
    those) and failed, its cost, and the calibration when there is one (a judge's outcome as a
    dict: `evalret judge`, `evalret golden judge`)."""
    cost = money(o["cost"]) + (f" ({o['cost_from']})" if o["cost_from"] else "")
    lines = [
        f"asked {o['asked']}, cached {o['plan']['cached']}, unparseable {o['unparseable']} "
        f"({unparseable}), failed {o['failed']}; cost {cost}"
    ]
    if o["calibration"] is not None:
        lines += calibration_lines(o["calibration"])
    return lines


def render_judge(o: dict[str, Any]) -> str:
    """`evalret judge`'s outcome (a JudgeOutcome as a dict) as terminal lines."""
    lines = render_plan(o["plan"])
    if o["skipped"]:
        lines.append(f"{o['skipped']} pair(s) without a document text were not asked")
    if o["dry_run"]:
        lines.append("dry run: nothing was sent, nothing written")
        return "\n".join(lines)
    lines += answered_lines(o, "asked twice, left unjudged")
    if o["refused"] is not None:
        lines.append(f"refused: {markup_safe(o['refused'])}")
    else:
        lines.append(f"wrote {o['written']} labels to {markup_safe(str(o['out']))}")
    if o["incomplete"] is not None:
        lines.append(f"incomplete (exit 3): {markup_safe(o['incomplete'])}")
    return "\n".join(lines)


def run_judge_text(j: dict[str, Any]) -> str:
    """What `run --judge` adds to a run's summary (plain text: each medium escapes it): whose
    labels the metrics were scored with."""
    how = "from the cache only" if j["cache_only"] else f"{j['asked']} asked, {j['cached']} cached"
    how += _unusable(j.get("cache_unusable", 0), not j["cache_only"])
    line = (
        f"LLM judge: scored with {j['labelled']} labels by {j['source']} added, of "
        f"{j['pairs']} unjudged pairs in the top {j['k']} of {', '.join(j['indexes'])} ({how})"
    )
    if j["unjudged"]:
        line += f"; {j['unjudged']} left unjudged"
        if j["unparseable"] or j["failed"]:
            line += f" ({j['unparseable']} unparseable, {j['failed']} failed)"
    return line


def render_run_judge(j: dict[str, Any]) -> str:
    """The terminal line of ``run_judge_text``."""
    return markup_safe(run_judge_text(j))
