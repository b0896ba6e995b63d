"""Terminal view of `evalret embed`: which shard, how many texts it holds, how many the cache
already had, how many were embedded, and how long it took."""

from __future__ import annotations

from typing import Any

from evalret.report.escape import markup_safe

KIND_LABELS = {"document": "documents", "query": "queries"}


def embed_lines(summary: dict[str, Any]) -> list[str]:
    """The lines printed after an `evalret embed` job (``summary``: EmbedOutcome.summary())."""
    shard = summary["shard"]
    head = "every text" if shard == "all" else f"shard {shard}"
    lines = [
        f"{head}: {summary['keys']} text(s) of {summary['total_keys']}, "
        f"{summary['cached']} already cached, {summary['embedded']} embedded "
        f"in {summary['seconds']:.1f} s"
    ]
    for kind, count in summary["kinds"].items():
        lines.append(
            f"  {KIND_LABELS.get(kind, kind)}: {count['texts']} in the shard, "
            f"{count['cached']} cached, {count['embedded']} embedded"
        )
    where = markup_safe(summary["cache_dir"])
    if summary["namespace"]:
        where += f" (namespace {summary['namespace'][:12]})"
    lines.append(f"  cache: {where}")
    export = summary.get("export")
    if export is not None:
        lines.append(
            f"  export: {export['rows']} document vector(s) of dimension {export['dimension']} "
            f"({export['format']}) to {markup_safe(export['path'])}"
        )
    lines.extend(f"  [yellow]warning:[/] {markup_safe(w)}" for w in summary["warnings"])
    return lines
