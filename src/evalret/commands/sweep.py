"""`evalret sweep`: every point of a grid of config settings, evaluated through the normal
pipeline (``run_evaluation``), with each faiss index's search cost measured, and the Pareto
fronts of quality against latency and against memory.

The points share one embedding cache, so vectors are embedded once per model setting (points
that differ only in index settings read them back), and the HNSW graph cache serves every
point with the same graph settings. Intrinsic health is skipped (it does not depend on the
index settings a sweep varies). Each index's cost is measured once per setting that changes it:
exact search once per model setting, an HNSW graph built once per model and graph setting (its
build timed here, on the threads the pipeline builds it with) and searched at each point's
efSearch.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from evalret.core.digest import json_digest
from evalret.core.metrics import is_plain_cut, parse_metric
from evalret.core.pareto import pareto_front
from evalret.data.atomic import atomic_write_text, check_writable_dir
from evalret.data.config import Config, FaissIndexConfig, QuantizedIndexConfig, load_config
from evalret.data.overrides import (
    Axis,
    Override,
    check_size,
    grid,
    point_config,
    raw_config,
    sweep_axes,
)
from evalret.data.paths import (
    Declared,
    Input,
    Output,
    cache_output,
    clear_outputs,
    config_inputs,
    guard,
    unique,
)
from evalret.data.schema import RunReport
from evalret.data.sweep import IndexCost, SweepIndex, SweepPoint, SweepReport
from evalret.engines.search_cost import SearchCost, machine, measure
from evalret.errors import ConfigError
from evalret.pipeline.configs import without_cache
from evalret.pipeline.evaluate import Evaluation, run_evaluation
from evalret.pipeline.progress import ProgressBars, ProgressFactory, no_bars
from evalret.version import __version__

QUALITY = "ndcg@10"
FAISS_INDEXES = ("exact", "hnsw")  # and every typed index of these settings:
FAISS_TYPED = (FaissIndexConfig, QuantizedIndexConfig)
SWEEP_FILES = ("sweep.json", "sweep.html")  # written into --out (cleared before it starts)
TIMING = {
    "latency": "single-query latency: each query searched alone with faiss's index.search on one "
    "OpenMP thread, every query --repeats times; p50 and p95 over all those searches",
    "qps": "throughput: all queries searched as one batch with faiss's default threads, "
    "--repeats times; queries / median batch seconds",
    "fetch": "results asked per query: the search depth plus the tie margin (16), at most the "
    "corpus, as evalret's search asks; HNSW's efSearch is raised to it when lower; evalret's "
    "tie handling after faiss is not timed",
    "build": "exact: faiss.IndexFlatIP add; hnsw: the graph built on indexes.hnsw.threads "
    "threads (once per model and graph setting), as the pipeline builds it",
    "index_bytes": "len(faiss.serialize_index(index)): vectors (or their codes) plus graph "
    "links or inverted lists; a quantized index: its codes (binary: the IndexBinaryFlat)",
    "quantized": "a quantized index is timed on its codes (binary: faiss.IndexBinaryFlat, "
    "int8 / uint8: a flat inner-product index over them); its rescoring is not timed",
    "vector_bytes": "the document vectors as float32 (n_documents x dim x 4)",
    "warm_up": "one untimed batch search before the timed ones",
}


@dataclass(frozen=True)
class SweepOutcome:
    report: SweepReport
    written: list[Path]


@dataclass
class _Built:
    """Indexes built so far, with their build seconds, by what shapes them."""

    indexes: dict[str, tuple[Any, float]] = field(default_factory=dict)
    exact_costs: dict[str, SearchCost] = field(default_factory=dict)


def _no_progress(_: str, __: int) -> Callable[[int], None]:
    return lambda _n: None


def sweep_configs(
    config: Path | None,
    sets: list[str],
    no_cache: bool = False,
    max_points: int | None = None,
    fixed: Sequence[Override] = (),
) -> tuple[list[Axis], list[dict[str, Any]], list[Config]]:
    """The axes, the grid points and each point's validated config (all validated before
    anything runs: a bad value fails at once, naming its --set; a grid over ``max_points``
    points, by default MAX_POINTS, is refused before any point is made). ``fixed`` (``--model``,
    ``--dimension``) are single-valued axes."""
    axes = sweep_axes(sets, fixed)
    check_size(axes, max_points)
    data = raw_config(config)
    base = config.resolve().parent if config is not None else Path.cwd()
    points = grid(axes)
    try:
        configs = [point_config(data, base, axes, p) for p in points]
    except ConfigError:
        if config is not None:
            load_config(config)  # the file's own problems first, at their lines
        raise
    if no_cache:
        configs = [without_cache(c) for c in configs]
    return axes, points, configs


def _for_sweep(cfg: Config) -> Config:
    """A point's config as evaluated: no health figures, no gate baseline."""
    return cfg.model_copy(
        update={
            "health": cfg.health.model_copy(update={"enabled": False}),
            "gate": cfg.gate.model_copy(update={"baseline": None}),
        }
    )


def _hnsw_index(cfg: Config, docs: np.ndarray, built: _Built) -> tuple[Any, float]:
    """The HNSW graph of this model and graph setting (built once, timed), at this efSearch."""
    from evalret.engines.faiss_index import build_hnsw, hnsw_threads

    h = cfg.indexes.hnsw
    key = json_digest(
        {
            "model": cfg.model.model_dump(mode="json"),
            "m": h.m,
            "efc": h.ef_construction,
            "threads": hnsw_threads(h),
        }
    )
    if key not in built.indexes:
        start = time.perf_counter()
        index = build_hnsw(docs, h)
        built.indexes[key] = (index, time.perf_counter() - start)
    index, seconds = built.indexes[key]
    index.hnsw.efSearch = h.ef_search
    return index, seconds


def _exact_index(cfg: Config, docs: np.ndarray, built: _Built) -> tuple[Any, float, str]:
    from evalret.engines.faiss_index import build_exact

    key = json_digest({"model": cfg.model.model_dump(mode="json"), "exact": True})
    if key not in built.indexes:
        start = time.perf_counter()
        index = build_exact(docs)
        built.indexes[key] = (index, time.perf_counter() - start)
    index, seconds = built.indexes[key]
    return index, seconds, key


def _costs(cfg: Config, ev: Evaluation, repeats: int, built: _Built) -> dict[str, IndexCost]:
    """The measured cost of every enabled faiss index of this point."""
    docs, queries = ev.doc_vectors, ev.query_vectors
    if docs is None or queries is None or docs.shape[1] == 0 or len(queries) == 0:
        return {}
    out: dict[str, IndexCost] = {}
    depth = cfg.depth
    if "exact" in ev.report.indexes:
        index, build_s, key = _exact_index(cfg, docs, built)
        if key not in built.exact_costs:  # exact search does not change with index settings
            built.exact_costs[key] = measure(index, queries, depth, repeats)
        out["exact"] = _index_cost(built.exact_costs[key], build_s, docs)
    if "hnsw" in ev.report.indexes:
        index, build_s = _hnsw_index(cfg, docs, built)
        out["hnsw"] = _index_cost(measure(index, queries, depth, repeats), build_s, docs)
    for name, settings in cfg.indexes.typed.items():
        if name in ev.report.indexes and isinstance(settings, FAISS_TYPED):
            index, query_input, build_s = _typed_index(cfg, name, settings, docs, queries, built)
            cost = measure(index, query_input, depth, repeats)
            ann = ev.report.ann_others.get(name)
            if ann is not None and ann.index_bytes is not None:  # int8 codes: not the float index
                cost = replace(cost, index_bytes=ann.index_bytes)
            out[name] = _index_cost(cost, build_s, docs)
    return out


def _typed_index(
    cfg: Config,
    name: str,
    settings: FaissIndexConfig | QuantizedIndexConfig,
    docs: np.ndarray,
    queries: np.ndarray,
    built: _Built,
) -> tuple[Any, np.ndarray, float]:
    """A typed faiss index (built once per model and build setting, its search parameters set at
    each point) or a quantized index's codes, with the queries it is searched with."""
    from evalret.engines.faiss_factory import build_factory_index, set_params
    from evalret.engines.faiss_index import build_exact
    from evalret.engines.quantize import BINARY, binary_index, quantize

    shape = settings.model_dump(mode="json", exclude={"params", "enabled"})
    key = json_digest({"model": cfg.model.model_dump(mode="json"), "typed": shape})
    if key not in built.indexes:
        start = time.perf_counter()
        if isinstance(settings, FaissIndexConfig):
            index: Any = build_factory_index(docs, settings, name)
            codes = queries
        else:
            doc_codes, codes = quantize(docs, queries, settings.precision)
            binary = settings.precision in BINARY
            index = binary_index(doc_codes) if binary else build_exact(doc_codes.astype("f4"))
        built.indexes[key] = ((index, codes), time.perf_counter() - start)
    (index, codes), seconds = built.indexes[key]
    if isinstance(settings, FaissIndexConfig):
        set_params(index, settings)
    return index, codes, seconds


def _index_cost(c: SearchCost, build_s: float, docs: np.ndarray) -> IndexCost:
    return IndexCost(
        p50_ms=c.p50_ms,
        p95_ms=c.p95_ms,
        qps=c.qps,
        fetch=c.fetch,
        ef_search=c.ef_search,
        distances_per_query=c.distances_per_query,
        build_s=build_s,
        index_bytes=c.index_bytes,
        vector_bytes=int(docs.shape[0]) * int(docs.shape[1]) * 4,
    )


def quality_metric(cfg: Config) -> str:
    """nDCG@10 when the config computes it, else its first metric."""
    return QUALITY if QUALITY in cfg.metrics else cfg.metrics[0]


def _point(
    pid: int, settings: dict[str, Any], report: RunReport, costs: dict[str, IndexCost], q: str
) -> SweepPoint:
    ann = {report.ann.index: report.ann} if report.ann is not None else {}
    ann.update(report.ann_others)
    indexes = {}
    for name, result in report.indexes.items():
        metrics = result.slices["all"].metrics
        kept = {
            m: v for m, v in metrics.items() if m == q or is_plain_cut(parse_metric(m), "recall")
        }
        section = ann.get(name)
        indexes[name] = SweepIndex(
            params=result.params,
            metrics=kept,
            ann_recall=dict(section.slices["all"].recall) if section is not None else None,
            cost=costs.get(name),
        )
    return SweepPoint(
        id=pid,
        settings=settings,
        dim=int(report.embedding.dim),
        indexes=indexes,
        fingerprint=report.fingerprint.digest,
        embedded=_embedded(report),
    )


def _embedded(report: RunReport) -> dict[str, int] | None:
    """Texts the point embedded (cache misses), from the run's cache report."""
    cache = report.embedding.cache
    if cache is None:
        return None
    return {
        "documents": cache.document.misses if cache.document is not None else 0,
        "queries": cache.query.misses if cache.query is not None else 0,
    }


def mark_pareto(points: list[SweepPoint], q: str) -> tuple[list[list[Any]], list[list[Any]]]:
    """Mark every (point, faiss index) on the quality/latency and quality/memory fronts; return
    both fronts as [point id, index] pairs, in point order."""
    cands = [(p, n, i) for p in points for n, i in p.indexes.items() if i.cost is not None]
    quality = [v if (v := i.metrics[q].value) is not None else float("nan") for _, _, i in cands]
    fronts = []
    for attr, cost in (
        ("pareto_latency", [i.cost.p50_ms for _, _, i in cands if i.cost is not None]),
        ("pareto_memory", [float(i.cost.index_bytes) for _, _, i in cands if i.cost is not None]),
    ):
        on = pareto_front(quality, cost) if cands else np.zeros(0, dtype=bool)
        for (_, _, index), flag in zip(cands, on, strict=True):
            setattr(index, attr, bool(flag))
        fronts.append([[p.id, n] for (p, n, _), flag in zip(cands, on, strict=True) if flag])
    return fronts[0], fronts[1]


def _evaluate_points(
    points: list[dict[str, Any]],
    configs: list[Config],
    repeats: int,
    factory: ProgressFactory | None,
) -> tuple[list[SweepPoint], list[RunReport]]:
    progress = factory or _no_progress
    tick = progress("Sweep points", len(points))
    built = _Built()
    out, reports = [], []
    for pid, (settings, cfg) in enumerate(zip(points, configs, strict=True)):
        cfg = _for_sweep(cfg)
        ev = run_evaluation(cfg, progress=factory)
        costs = _costs(cfg, ev, repeats, built)
        out.append(_point(pid, settings, ev.report, costs, quality_metric(cfg)))
        reports.append(ev.report)
        tick(1)
    return out, reports


def sweep_command(
    *,
    config: Path | None,
    sets: list[str],
    out: Path,
    repeats: int = 3,
    no_cache: bool = False,
    max_points: int | None = None,
    progress: ProgressBars = no_bars,
    fixed: Sequence[Override] = (),
) -> SweepOutcome:
    """Evaluate every grid point of ``sets`` (and the ``fixed`` settings) and write
    ``out``/sweep.json and sweep.html."""
    from evalret.report.sweep_view import sweep_html

    axes, points, configs = sweep_configs(config, sets, no_cache, max_points, fixed)
    reads = [Input("the config (--config)", config)] if config is not None else []
    reads += [i for c in configs for i in config_inputs(c, None)]
    files = Output("--out", out, "dir", SWEEP_FILES)
    caches = list(dict.fromkeys(c for cfg in configs for c in cache_output(cfg)))
    guard(Declared("sweep", unique(reads), [files, *caches]))
    check_writable_dir(out, "output directory")
    clear_outputs(files)
    with progress() as factory:
        swept, reports = _evaluate_points(points, configs, repeats, factory)
    q = quality_metric(configs[0])
    front_latency, front_memory = mark_pareto(swept, q)
    first = reports[0]
    report = SweepReport(
        evalret_version=__version__,
        config=str(config) if config is not None else "(built-in defaults)",
        axes={a.path: list(a.values) for a in axes},
        quality_metric=q,
        n_queries=len(first.query_ids),
        n_documents=first.golden_set.n_documents,
        repeats=repeats,
        machine=machine(),
        timing=TIMING,
        points=swept,
        pareto_latency=front_latency,
        pareto_memory=front_memory,
    )
    written = [out / name for name in SWEEP_FILES]
    atomic_write_text(written[0], report.model_dump_json(indent=2) + "\n", "sweep.json")
    atomic_write_text(written[1], sweep_html(report), "sweep.html")
    return SweepOutcome(report, written)
