"""`evalret cache info | clear | prune`: inspect and manage the embedding cache. Each returns the
cache directory it worked on and what it found or removed (report/cache_view.py draws them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalret.engines.cache import (
    cache_info,
    check_cache_root,
    clear_cache,
    default_cache_dir,
    prune_cache,
)


def cache_dir(directory: Path | None) -> Path:
    """The cache directory: ``directory``, else $EVALRET_CACHE_DIR or the user cache; InputError
    when it is a file (or anything but a directory)."""
    root = directory or default_cache_dir()
    check_cache_root(root)
    return root


def cache_info_command(*, directory: Path | None = None) -> tuple[Path, list[dict[str, Any]]]:
    """`evalret cache info`: one row per cached embedding set."""
    root = cache_dir(directory)
    return root, cache_info(root)


def cache_clear_command(*, directory: Path | None = None) -> tuple[Path, int]:
    """`evalret cache clear`: delete every cached embedding; how many sets went."""
    root = cache_dir(directory)
    return root, clear_cache(root)


def cache_prune_command(*, directory: Path | None, days: float) -> tuple[Path, dict[str, int]]:
    """`evalret cache prune`: remove sets unused for ``days``, corrupt shards and stale files;
    how many of each went."""
    root = cache_dir(directory)
    return root, prune_cache(root, days)
