"""The Config of `evalret score` (and ``evalret.score``): run files scored against a qrels file
or a golden set, with no model and no embedding: each run is a typed ``run`` index, and the
ordinary pipeline does the rest (slices, intervals, the gate)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from evalret.core.relevance import DEFAULT_RELEVANCE_LEVEL
from evalret.data.config import (
    BUILTIN_INDEXES,
    DEFAULT_METRICS,
    INDEX_NAME,
    CacheConfig,
    Config,
    GateConfig,
    GoldenSetConfig,
    WithoutRelevant,
)
from evalret.errors import InputError, Problem

DISABLED = {"enabled": False}


def utf8_path(path: Path, role: str) -> Path:
    """``path`` when its name is UTF-8; else InputError naming ``role`` and the path with its
    undecodable bytes as ``\\xNN`` (reports hold paths as UTF-8 text, which cannot write it)."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        shown = os.fsencode(path).decode("utf-8", "backslashreplace")
        raise InputError(
            f"{role} {shown}: the path is not valid UTF-8 (evalret writes paths into its reports "
            "as UTF-8 text): rename it, or give a link whose name is UTF-8"
        ) from None
    return path


def run_indexes(runs: Sequence[str]) -> dict[str, Path]:
    """Index name -> run file, from ``PATH`` (named after the file's stem, a ``.gz`` dropped
    first) or ``NAME=PATH``; InputError for a name that is not an index name or is given
    twice."""
    out: dict[str, Path] = {}
    for arg in runs:
        utf8_path(Path(arg), "run")
        name, sep, path = arg.partition("=")
        if not sep or not INDEX_NAME.fullmatch(name):
            name, path = Path(arg.removesuffix(".gz")).stem, arg
        if not INDEX_NAME.fullmatch(name):
            raise InputError(
                f"run {arg!r}: {name!r} is not an index name (letters, digits, '_', '.', '-'): "
                "give one as NAME=PATH"
            )
        if name in out:
            raise InputError(f"run {arg!r}: index name {name!r} is given twice: use NAME=PATH")
        out[name] = Path(path)
    return out


def score_config(
    golden: Path,
    runs: Sequence[str],
    *,
    metrics: Sequence[str] | None = None,
    relevance_level: int = DEFAULT_RELEVANCE_LEVEL,
    queries_without_relevant: WithoutRelevant = "exclude",
    out: Path | None = None,
) -> Config:
    """The Config of `evalret score`: the golden set (a qrels file alone will do), one run index
    per run file and no other index, the gate on every run, no cache and no health figures."""
    named = run_indexes(runs)
    indexes: dict[str, Any] = dict.fromkeys(BUILTIN_INDEXES, DISABLED)
    indexes |= {n: {"type": "run", "path": p.resolve()} for n, p in named.items()}
    settings: dict[str, Any] = {
        "golden_set": GoldenSetConfig(path=golden.resolve(), qrels_only=True),
        "indexes": indexes,
        "metrics": list(metrics) if metrics else list(DEFAULT_METRICS),
        "relevance_level": relevance_level,
        "queries_without_relevant": queries_without_relevant,
        # no approximate index here, so ann_k is unused: 1 fits every depth (``-m ndcg@1``)
        "gate": GateConfig(indexes=list(named), ann_min_recall=None, ann_k=1, health={}),
        "cache": CacheConfig(enabled=False),
        "health": {"enabled": False},
    }
    if out is not None:
        settings["output"] = {"dir": out}
    try:
        return Config.model_validate(settings)
    except ValidationError as e:  # a metric unknown, a level out of range
        problems = [
            Problem(f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}") for err in e.errors()
        ]
        raise InputError("invalid score options", problems) from None
