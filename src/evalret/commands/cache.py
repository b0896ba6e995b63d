"""`evalret cache info | clear | prune`: inspect and manage the embedding cache. Each returns
what the terminal shows (the table or one line), with the cache directory made safe to print."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalret.engines.cache import cache_info, clear_cache, default_cache_dir, prune_cache
from evalret.report.cache_view import info_table
from evalret.report.escape import markup_safe


def cache_root(directory: Path | None) -> Path:
    """The cache directory: ``directory``, else $EVALRET_CACHE_DIR or the user cache."""
    return directory or default_cache_dir()


def cache_info_command(directory: Path | None = None) -> Any:
    """`evalret cache info`: the table of embedding sets, or one line when the cache is empty."""
    root = cache_root(directory)
    rows = cache_info(root)
    return info_table(root, rows) if rows else f"embedding cache {markup_safe(str(root))} is empty"


def cache_clear_command(directory: Path | None = None) -> str:
    """`evalret cache clear`: delete every cached embedding; the line saying how many sets."""
    root = cache_root(directory)
    return f"removed {clear_cache(root)} embedding set(s) from {markup_safe(str(root))}"


def cache_prune_command(directory: Path | None, days: float) -> str:
    """`evalret cache prune`: remove sets unused for ``days``, corrupt shards and stale files;
    the line saying what went."""
    root = cache_root(directory)
    removed = prune_cache(root, days)
    return (
        ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in removed.items())
        + f" removed from {markup_safe(str(root))}"
    )
