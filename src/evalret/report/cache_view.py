"""Terminal views of `evalret cache`: the table of cached embedding sets, and the line saying
what a clear or prune removed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalret.report.escape import markup_safe

INFO_COLUMNS = ("namespace", "model", "settings", "entries", "MB", "shards", "last used")


def info_table(root: Path, rows: list[dict[str, Any]]) -> Any:
    """A rich Table of the cached embedding sets (one row per namespace)."""
    from rich.table import Table

    table = Table(title=f"embedding cache {markup_safe(str(root))}", title_justify="left")
    for col in INFO_COLUMNS:
        table.add_column(col, no_wrap=col != "settings")
    for r in rows:
        settings = ", ".join(f"{k}={v!r}" for k, v in r["settings"].items())
        table.add_row(
            r["namespace"][:12],
            markup_safe(str(r["model"])),
            markup_safe(settings),
            str(r["entries"]),
            f"{r['bytes'] / 1e6:.1f}",
            str(r["shards"]),
            r["last_used"],
        )
    return table


def info_view(root: Path, rows: list[dict[str, Any]]) -> Any:
    """`cache info`: the table, or one line when the cache is empty."""
    return info_table(root, rows) if rows else f"embedding cache {markup_safe(str(root))} is empty"


def cleared_line(root: Path, removed: int) -> str:
    """`cache clear`: how many embedding sets went."""
    return f"removed {removed} embedding set(s) from {markup_safe(str(root))}"


def pruned_line(root: Path, removed: dict[str, int]) -> str:
    """`cache prune`: what went, by kind."""
    return (
        ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in removed.items())
        + f" removed from {markup_safe(str(root))}"
    )
