"""Terminal view of `evalret golden judge`: the pool per retriever, the judge's plan (pairs,
cached, to ask, cost), what was asked, the relevant documents found per query (the source
document and the others), and the path written. Untrusted text (paths, the server's messages)
is escaped."""

from __future__ import annotations

from typing import Any

from evalret.report.escape import markup_safe
from evalret.report.judge_view import answered_lines, render_plan


def _pool_line(o: dict[str, Any]) -> str:
    pooled = dict(o["pooled"])
    total = pooled.pop("all")
    source = pooled.pop("source", 0)
    outside = pooled.pop("source_outside", 0)
    parts = ", ".join(f"{name} {n}" for name, n in pooled.items())
    return (
        f"pool of {o['queries']} queries: {total} pairs (top {o['k']}: {parts}; source "
        f"documents {source}, {outside} of them in no top {o['k']}); "
        f"{o['kept']} graded in the draft already (kept, not sent), {o['to_judge']} to judge"
    )


def _relevant_lines(r: dict[str, Any]) -> list[str]:
    lines = [
        f"relevant documents: {r['relevant']} in {r['queries']} queries, per query mean "
        f"{r['per_query_mean']}, median {r['per_query_median']}, max {r['per_query_max']}; "
        f"{r['several_relevant']} queries with several, {r['without_relevant']} with none"
    ]
    s = r["synthetic"]
    if s["queries"]:
        lines.append(
            f"  synthetic queries {s['queries']}: relevant source documents "
            f"{s['source_relevant']}, other relevant documents {s['other_relevant']}; "
            f"{s['beyond_source']} queries with a relevant document beyond their source, "
            f"{s['source_only']} with only their source, {s['source_not_relevant']} whose "
            "source is not relevant"
        )
    return lines


def render_golden_judge(o: dict[str, Any]) -> str:
    """`evalret golden judge`'s outcome (a GoldenJudgeOutcome as a dict) as terminal lines."""
    lines = [_pool_line(o), *render_plan(o["plan"])]
    if o["dry_run"]:
        lines.append("dry run: nothing was sent, nothing written")
        return "\n".join(lines)
    lines += answered_lines(o, "asked twice")
    if o["incomplete"] is not None:
        lines.append(f"incomplete (exit 3), nothing written: {markup_safe(o['incomplete'])}")
    elif o["refused"] is not None:
        lines.append(f"refused (exit 1), nothing written: {markup_safe(o['refused'])}")
    if o["written"]:
        lines += _relevant_lines(o["relevant"])
        lines.append(f"wrote the golden set {markup_safe(str(o['out']))}")
    return "\n".join(lines)
