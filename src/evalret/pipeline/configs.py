"""The config a command works on: a run's config (optionally without the embedding cache), the
config whose golden set `validate` and `leakage` read, and GitHub's step-summary file."""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalret.choices import DEFAULT_CONFIG as DEFAULT_CONFIG
from evalret.data.config import Config

if TYPE_CHECKING:  # data.overrides (and YAML) load with a config read or given settings
    from evalret.data.overrides import Override

CONFIG_SUFFIXES = (".yaml", ".yml")
# DEFAULT_CONFIG (evalret.choices): the config `evalret run` reads without --config when the
# working directory holds it; without either, the built-in defaults (the packaged demo golden set)


def config_or_default(path: Path | None) -> Path | None:
    """``path``, else ./evalret.yaml when it exists (None: the built-in defaults)."""
    if path is None and DEFAULT_CONFIG.is_file():
        return DEFAULT_CONFIG
    return path


def config_words(config: Path | None, overrides: Sequence[Override]) -> list[str]:
    """The command-line words that give a command the config of a run: ``--config PATH`` (none
    for the built-in defaults) and each of the run's settings as given (``--set``, ``--model``,
    ``--dimension``). A setting that holds a secret cannot be among them: a URL with a password
    is refused in every config key that takes one (``base_url``, ``dsn``: keys come from
    ``*_env`` variables), so no setting of a run that got this far was masked in its words."""
    words = ["--config", str(config)] if config is not None else []
    for o in overrides:
        words += o.words
    return words


def command_line(
    command: Sequence[str], config: Path | None, overrides: Sequence[Override], *more: str
) -> str:
    """The shell line of ``evalret COMMAND`` with the config and the command line's settings of
    a run (``config_words``) and ``more`` words, quoted to paste."""
    return shlex.join(["evalret", *command, *config_words(config, overrides), *more])


def without_cache(cfg: Config) -> Config:
    """``cfg`` with the embedding cache turned off (``--no-cache``)."""
    return cfg.model_copy(update={"cache": cfg.cache.model_copy(update={"enabled": False})})


def run_config(
    path: Path | None, no_cache: bool = False, overrides: Sequence[Override] = ()
) -> Config:
    """The config of a run: ``path`` (or the built-in defaults) with the command line's
    ``overrides`` (``--set``, ``--model``, ``--dimension``), without the cache if asked."""
    from evalret.data.overrides import configured

    cfg = configured(path, overrides)
    return without_cache(cfg) if no_cache else cfg


def golden_options(fmt: str | None = None, split: str | None = None) -> list[Override]:
    """The golden-set options ``--format`` and ``--split`` as the settings they override."""
    from evalret.data.overrides import Override

    pairs = (("format", "--format", fmt), ("split", "--split", split))
    return [Override(f"golden_set.{k}", v, f"{o} {v}") for k, o, v in pairs if v is not None]


def golden_config(
    path: Path | None,
    fmt: str | None = None,
    split: str | None = None,
    overrides: Sequence[Override] = (),
) -> Config:
    """The config to validate: an evalret config file (``.yaml``/``.yml``), else the default
    config pointed at ``path`` (a golden-set directory or TREC qrels file); ``fmt`` and ``split``
    override the golden set's format and BEIR split, ``overrides`` any setting."""
    from evalret.data.overrides import configured

    settings = [*golden_options(fmt, split), *overrides]
    if path is not None and path.suffix in CONFIG_SUFFIXES:
        return configured(path, settings)
    data: dict[str, Any] = {}
    if path is not None:
        data = {"golden_set": {"path": str(path.resolve())}}
    return configured(None, settings, data)


def step_summary() -> Path | None:
    """GitHub's step-summary file ($GITHUB_STEP_SUMMARY), when running in GitHub Actions."""
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    return Path(summary) if summary else None
