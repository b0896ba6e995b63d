"""`evalret leakage`: check a training file against a config's golden set, with the config's model
through the embedding cache (the pairs themselves are found in ``evalret.core.leakage``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from evalret.core.duplicates import NEAR_DUPLICATE_JACCARD
from evalret.core.leakage import Embed, LeakageResult, find_leaks, slice_leaks
from evalret.data.atomic import atomic_write_text, check_writable_file
from evalret.data.config import Config
from evalret.data.overrides import Override
from evalret.data.paths import Declared, Input, Output, cache_output, config_inputs, guard
from evalret.data.training import TrainFormat, read_training_queries
from evalret.errors import InputError
from evalret.pipeline.configs import CONFIG_SUFFIXES, golden_config, without_cache
from evalret.pipeline.progress import ProgressBars, ProgressFactory, no_bars
from evalret.report.escape import json_document


@dataclass(frozen=True)
class LeakageOutcome:
    """What `evalret leakage` found, and the JSON document it prints or writes."""

    result: LeakageResult
    json_text: str


def run_leakage(
    cfg: Config,
    train_path: Path,
    train_format: TrainFormat = "auto",
    use_embedding: bool = True,
    threshold: float | None = None,
    max_fraction: float | None = None,
    progress: ProgressFactory | None = None,
) -> LeakageResult:
    """Check ``train_path`` against the config's golden set (its evaluated queries), with the
    config's model through the embedding cache; ``threshold`` and ``max_fraction`` override
    ``leakage.threshold`` and ``leakage.max_fraction``."""
    from evalret.data.goldenset import load_golden_set

    cosine = cfg.leakage.threshold if threshold is None else threshold
    if not 0 < cosine <= 1:
        raise InputError(f"--threshold {cosine}: a cosine in (0, 1]")
    limit = cfg.leakage.max_fraction if max_fraction is None else max_fraction
    if limit is not None and not 0 <= limit <= 1:
        raise InputError(f"--max-fraction {limit}: a fraction in [0, 1]")
    train = read_training_queries(train_path, train_format)
    full = load_golden_set(cfg.golden_set, cfg.relevance_level)
    golden = full.scored(cfg.queries_without_relevant)
    slices = golden.slices(cfg.slices)

    embed: Embed | None = None
    if use_embedding:
        from evalret.engines.embedders import open_embedder

        embedder = open_embedder(cfg.model, cfg.cache).embedder  # the configured backend, cached

        def embed_queries(texts: Sequence[str]) -> np.ndarray:
            tick = progress("Embedding queries", len(texts)) if progress else None
            return embedder.embed(texts, "query", tick)

        embed = embed_queries

    pairs = find_leaks(golden.query_ids, golden.query_texts, train, embed, cosine)
    leaked = {p.query_id for p in pairs}
    return LeakageResult(
        golden_source=golden.source,
        train_source=str(train_path),
        n_golden=len(golden.query_ids),
        n_train=len(train),
        pairs=pairs,
        slices=slice_leaks(slices, golden.query_ids, leaked),
        settings={
            "normalization": "NFKC, case-folded, punctuation and whitespace collapsed",
            "text_threshold": NEAR_DUPLICATE_JACCARD,
            "text_similarity": "character 3-gram Jaccard",
            "cosine_threshold": cosine if use_embedding else None,
            "model": cfg.model.name if use_embedding else None,
            "identifier_guard": use_embedding,
        },
        max_fraction=limit,
    )


def leakage_command(
    *,
    golden: Path | None,
    train: Path,
    train_format: TrainFormat = "auto",
    use_embedding: bool = True,
    threshold: float | None = None,
    max_fraction: float | None = None,
    no_cache: bool = False,
    out: Path | None = None,
    progress: ProgressBars = no_bars,
    overrides: Sequence[Override] = (),
) -> LeakageOutcome:
    """`evalret leakage`: check ``train`` against the golden set of ``golden`` (a golden-set
    directory or a config; default the demo; with the command line's ``overrides``) and write the
    full result to ``out`` if given."""
    cfg = golden_config(golden, overrides=overrides)
    config = golden if golden is not None and golden.suffix in CONFIG_SUFFIXES else None
    reads = [*config_inputs(cfg, config, "GOLDEN"), Input("the training queries (--train)", train)]
    writes = [Output("--out", out)] if out is not None else []
    guard(Declared("leakage", reads, writes + (cache_output(cfg) if use_embedding else [])))
    if out is not None:
        check_writable_file(out, "leakage result")
    if no_cache:
        cfg = without_cache(cfg)
    with progress() as factory:
        result = run_leakage(
            cfg,
            train,
            train_format,
            use_embedding=use_embedding,
            threshold=threshold,
            max_fraction=max_fraction,
            progress=factory,
        )
    text = json_document(json.dumps(result.to_json(), indent=1, ensure_ascii=False))
    if out is not None:
        atomic_write_text(out, text + "\n", "leakage result")
    return LeakageOutcome(result, text)
