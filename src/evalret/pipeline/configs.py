"""The config a command works on: a run's config (optionally without the embedding cache), the
config whose golden set `validate` and `leakage` read, and GitHub's step-summary file."""

from __future__ import annotations

import os
from pathlib import Path

from evalret.data.config import Config, GoldenSetConfig, load_config
from evalret.errors import ConfigError

CONFIG_SUFFIXES = (".yaml", ".yml")


def without_cache(cfg: Config) -> Config:
    """``cfg`` with the embedding cache turned off (``--no-cache``)."""
    return cfg.model_copy(update={"cache": cfg.cache.model_copy(update={"enabled": False})})


def run_config(path: Path | None, no_cache: bool = False) -> Config:
    """The config of a run: ``path`` (or the built-in defaults), without the cache if asked."""
    cfg = load_config(path)
    return without_cache(cfg) if no_cache else cfg


def golden_config(path: Path | None, fmt: str | None = None, split: str | None = None) -> Config:
    """The config to validate: an evalret config file (``.yaml``/``.yml``), else the default
    config pointed at ``path`` (a golden-set directory or TREC qrels file); ``fmt`` and ``split``
    override the golden set's format and BEIR split."""
    if path is not None and path.suffix in CONFIG_SUFFIXES:
        cfg = load_config(path)
    else:
        cfg = load_config(None)
        if path is not None:
            cfg = cfg.model_copy(update={"golden_set": GoldenSetConfig(path=path.resolve())})
    updates = {k: v for k, v in (("format", fmt), ("split", split)) if v is not None}
    if updates:
        try:
            golden = GoldenSetConfig.model_validate({**cfg.golden_set.model_dump(), **updates})
        except ValueError as e:
            raise ConfigError(f"invalid option: {e}") from None
        cfg = cfg.model_copy(update={"golden_set": golden})
    return cfg


def step_summary() -> Path | None:
    """GitHub's step-summary file ($GITHUB_STEP_SUMMARY), when running in GitHub Actions."""
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    return Path(summary) if summary else None
