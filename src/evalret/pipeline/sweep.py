"""A sweep (`evalret sweep`): every point of a grid of config settings, evaluated through the
normal pipeline (``run_evaluation``), each faiss index's search cost read from the point's run
(its latency section, its ANN section's bytes and distances, its timings), and the Pareto fronts
of quality against latency and against memory.

The points share one embedding cache, so vectors are embedded once per model setting (points
that differ only in index settings read them back), and the HNSW graph cache serves every
point with the same graph settings. Intrinsic health is skipped (it does not depend on the
index settings a sweep varies). Exact search does not change with index settings: its cost is
the first run's of each model setting.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from evalret.core.digest import json_digest
from evalret.core.metrics import is_plain_cut, parse_metric
from evalret.core.pareto import pareto_front
from evalret.data.atomic import atomic_write_text
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
from evalret.data.schema import IndexLatency, RunReport
from evalret.data.sweep import IndexCost, SweepIndex, SweepPoint, SweepReport
from evalret.engines.faiss_index import TIE_MARGIN
from evalret.engines.search_cost import LATENCY_QUERIES, machine
from evalret.errors import ConfigError
from evalret.pipeline.configs import without_cache
from evalret.pipeline.evaluate import run_evaluation
from evalret.pipeline.progress import ProgressFactory
from evalret.version import __version__

QUALITY = "ndcg@10"
SWEEP_FILES = ("sweep.json", "sweep.html")  # written into --out (cleared before it starts)


@dataclass(frozen=True)
class SweepOutcome:
    report: SweepReport
    written: list[Path]


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


TIMING = {
    "latency": "single-query latency from each point's run (its report's latency section): each "
    f"of the first {LATENCY_QUERIES} queries searched alone as the run searches it (tie rule "
    "included, without filters), one thread, --repeats times after one untimed search; p50 and "
    "p95 over all those searches",
    "qps": "throughput: the run's search of all queries as one batch (its timings' "
    "search_<index>, tie rule included, timed to 0.1 ms); queries / those seconds",
    "fetch": "results asked per query: the search depth plus the tie margin (16), at most the "
    "corpus, as evalret's search asks; HNSW's efSearch is raised to it when lower",
    "build": "the run's build_<index> timing (quantize_<index> for a quantized index): the "
    "index built, or read back when the cache holds it (the run's embedding.cache says which); "
    "exact: 0, the run searches the document vectors in place",
    "index_bytes": "the run's ANN section: len(faiss.serialize_index(index)), vectors (or their "
    "codes) plus graph links or inverted lists; a quantized index: its codes; exact: the "
    "document vectors it searches",
    "quantized": "a quantized index is timed as the run searches it: its codes, then its "
    "rescoring when configured",
    "vector_bytes": "the document vectors as float32 (n_documents x dim x 4)",
    "warm_up": "one untimed search before the timed ones",
}
HNSW_EF_SEARCH = 16  # faiss's efSearch of an HNSW index built by a factory string
TIMER_RESOLUTION = 1e-4  # a run's timings are rounded to 0.1 ms


def _costs(cfg: Config, report: RunReport, exact: dict[str, IndexCost]) -> dict[str, IndexCost]:
    """The cost of every enabled faiss index of this point, as its run measured it; exact
    search's from ``exact`` when a point of this model setting measured it (by model)."""
    n_docs, dim, n_queries = (
        report.embedding.n_documents,
        report.embedding.dim,
        len(report.query_ids),
    )
    timed = report.latency.indexes if report.latency is not None else {}
    if dim == 0 or n_queries == 0 or not timed:
        return {}
    ann = report.ann
    fetch = min(n_docs, cfg.depth + TIE_MARGIN)
    vector_bytes = n_docs * dim * 4
    figures = _Figures(report.timings, n_queries, fetch, vector_bytes)
    out: dict[str, IndexCost] = {}
    if "exact" in report.indexes and "exact" in timed:
        key = json_digest(cfg.model.model_dump(mode="json"))
        exact.setdefault(key, figures.cost("exact", timed["exact"], vector_bytes, n_docs, 0.0))
        out["exact"] = exact[key]
    # the faiss indexes besides exact: the timing of their build and the efSearch searched with
    builds: dict[str, tuple[str, int | None]] = {
        "hnsw": ("build_hnsw", max(cfg.indexes.hnsw.ef_search, fetch))
    }
    for name, settings in cfg.indexes.typed.items():
        if isinstance(settings, FaissIndexConfig):
            ef = settings.params.get("efSearch", HNSW_EF_SEARCH)
            hnsw = settings.factory.upper().startswith("HNSW")
            builds[name] = (f"build_{name}", max(int(ef), fetch) if hnsw else None)
        elif isinstance(settings, QuantizedIndexConfig):
            builds[name] = (f"quantize_{name}", None)
    for name, (build, ef_search) in builds.items():
        section = ann.get(name)
        if name not in report.indexes or name not in timed or section is None:
            continue
        if section.index_bytes is None or section.distances_per_query is None:
            continue
        build_s = report.timings.get(build, 0.0)
        cost = figures.cost(
            name, timed[name], section.index_bytes, section.distances_per_query, build_s
        )
        out[name] = cost.model_copy(update={"ef_search": ef_search})
    for name in _timed_elsewhere(cfg, report, builds):  # a store's search: its latency alone
        out[name] = figures.cost(
            name, timed[name], None, None, report.timings.get(f"open_{name}", 0.0)
        )
    return out


def _timed_elsewhere(cfg: Config, report: RunReport, faiss: dict[str, Any]) -> list[str]:
    """The approximate indexes of the point that were timed but are no faiss index: stores and
    approximate Python indexes (no size, no vectors compared)."""
    timed = report.latency.indexes if report.latency is not None else {}
    return [
        name
        for name in cfg.indexes.approximate_names()
        if name not in faiss and name in report.indexes and name in timed
    ]


@dataclass(frozen=True)
class _Figures:
    """What every index's cost at one point shares: the run's timings and sizes."""

    timings: dict[str, float]
    n_queries: int
    fetch: int
    vector_bytes: int

    def cost(
        self,
        name: str,
        latency: IndexLatency,
        index_bytes: int | None,
        distances: float | None,
        build_s: float,
    ) -> IndexCost:
        seconds = max(self.timings.get(f"search_{name}", 0.0), TIMER_RESOLUTION)
        return IndexCost(
            p50_ms=latency.p50_ms,
            p95_ms=latency.p95_ms,
            qps=self.n_queries / seconds,
            fetch=self.fetch,
            ef_search=None,
            distances_per_query=distances,
            build_s=build_s,
            index_bytes=index_bytes,
            vector_bytes=self.vector_bytes,
        )


def quality_metric(cfg: Config) -> str:
    """nDCG@10 when the config computes it, else its first metric."""
    return QUALITY if QUALITY in cfg.metrics else cfg.metrics[0]


def _point(
    pid: int, settings: dict[str, Any], report: RunReport, costs: dict[str, IndexCost], q: str
) -> SweepPoint:
    ann = report.ann
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
    """Mark every (point, timed index) on the quality/latency front, and every one whose size is
    known on the quality/memory front; return both fronts as [point id, index] pairs, in point
    order."""
    fronts = []
    figures: tuple[tuple[str, Callable[[IndexCost], float | int | None]], ...] = (
        ("pareto_latency", lambda c: c.p50_ms),
        ("pareto_memory", lambda c: c.index_bytes),
    )
    for attr, figure in figures:
        cands = [
            (p, n, i, float(f))
            for p in points
            for n, i in p.indexes.items()
            if i.cost is not None and (f := figure(i.cost)) is not None
        ]
        quality = [
            v if (v := i.metrics[q].value) is not None else float("nan") for *_, i, _ in cands
        ]
        costs = [c for *_, c in cands]
        on = pareto_front(quality, costs) if cands else np.zeros(0, dtype=bool)
        for (_, _, index, _), flag in zip(cands, on, strict=True):
            setattr(index, attr, bool(flag))
        fronts.append([[p.id, n] for (p, n, _, _), flag in zip(cands, on, strict=True) if flag])
    return fronts[0], fronts[1]


def _no_progress(_: str, __: int) -> Callable[[int], None]:
    return lambda _n: None


def _evaluate_points(
    points: list[dict[str, Any]],
    configs: list[Config],
    repeats: int,
    factory: ProgressFactory | None,
) -> tuple[list[SweepPoint], list[RunReport]]:
    tick = (factory or _no_progress)("Sweep points", len(points))
    exact: dict[str, IndexCost] = {}
    out, reports = [], []
    for pid, (settings, cfg) in enumerate(zip(points, configs, strict=True)):
        cfg = _for_sweep(cfg)
        ev = run_evaluation(cfg, progress=factory, latency_repeats=repeats)
        costs = _costs(cfg, ev.report, exact)
        out.append(_point(pid, settings, ev.report, costs, quality_metric(cfg)))
        reports.append(ev.report)
        tick(1)
    return out, reports


def run_sweep(
    config: Path | None,
    axes: list[Axis],
    points: list[dict[str, Any]],
    configs: list[Config],
    out: Path,
    repeats: int = 3,
    factory: ProgressFactory | None = None,
) -> SweepOutcome:
    """Evaluate every grid point (``sweep_configs`` made them from ``config``) and write
    ``out``/sweep.json and sweep.html. ``repeats``: the searches of each timed query."""
    from evalret.report.sweep_view import sweep_html

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
