"""Budgets beside quality (``gate.budgets``, ``gate.max_cost_per_run``): each index's bytes,
bytes per vector and distances compared per query as the run measured them, the p95 latency only
when asked (machine-dependent), and an API model's embedding cost with nothing cached. A budget
on a figure the run cannot measure is refused at its config key; one the run did not measure
fails; ``ann_min_recall`` holds every gated approximate index, not HNSW alone."""

from __future__ import annotations

import json
from pathlib import Path

import faiss
import numpy as np
import pytest

import evalret.engines.retrievers  # noqa: F401  # registers the faiss factory check
from conftest import DEMO
from evalret.core.gate import budget_check
from evalret.core.ranking import id_rank
from evalret.data.config import parse_config
from evalret.data.goldenset import load_golden_set
from evalret.data.schema import RunReport
from evalret.engines.faiss_index import build_hnsw, search
from evalret.errors import ConfigError
from evalret.pipeline.evaluate import Evaluation, run_evaluation
from evalret.pipeline.plan import cold_cost
from helpers import HashEmbedder

BASE = f"""golden_set: {{path: {DEMO}}}
cache: {{enabled: false}}
metrics: [ndcg@10, recall@10]
indexes:
  bm25: {{enabled: false}}
  hybrid: {{enabled: false}}
  ivf: {{type: faiss, factory: "IVF8,Flat", params: {{nprobe: 2}}}}
"""


def _run(gate: str) -> Evaluation:
    return run_evaluation(parse_config(BASE + gate, "c.yaml"), embedder=HashEmbedder())


@pytest.fixture(scope="module")
def budgeted() -> Evaluation:
    """Budgets on hnsw and ivf: some within, some over."""
    return _run(
        "gate:\n  indexes: [exact, hnsw, ivf]\n  ann_min_recall: 0.5\n  budgets:\n"
        "    hnsw: {max_index_bytes: 1000, max_distances_per_query: 1000000, max_p95_ms: 60000}\n"
        "    ivf: {max_bytes_per_vector: 1000000, max_distances_per_query: 1}\n"
    )


def _checks(ev: Evaluation, kind: str) -> dict[str, tuple[bool, str, float | None]]:
    assert ev.report.gate is not None
    return {
        c.name: (c.passed, c.message, c.current) for c in ev.report.gate.checks if c.kind == kind
    }


def test_budgets_check_the_figures_the_run_measured(budgeted: Evaluation) -> None:
    """Each budget is one check against the figure in the report's ANN sections; over its
    budget it fails the gate, within it passes; the latency check says it depends on the
    machine."""
    report = budgeted.report
    assert "hnsw" in report.ann and report.ann["hnsw"].index_bytes is not None
    ivf = report.ann["ivf"]
    checks = _checks(budgeted, "budget_max")
    assert set(checks) == {
        "hnsw/budget/index_bytes max 1,000",
        "hnsw/budget/distances_per_query max 1,000,000",
        "hnsw/budget/p95_ms max 60,000",
        "ivf/budget/bytes_per_vector max 1,000,000",
        "ivf/budget/distances_per_query max 1",
    }
    passed, message, current = checks["hnsw/budget/index_bytes max 1,000"]
    assert not passed and current == report.ann["hnsw"].index_bytes and "over the budget" in message
    assert checks["hnsw/budget/distances_per_query max 1,000,000"][0]
    assert checks["ivf/budget/bytes_per_vector max 1,000,000"][2] == ivf.bytes_per_vector
    assert not checks["ivf/budget/distances_per_query max 1"][0]
    passed, message, current = checks["hnsw/budget/p95_ms max 60,000"]
    assert report.latency is not None and current == report.latency.indexes["hnsw"].p95_ms
    assert passed and "machine-dependent: " in message and "CPUs" in message
    assert report.gate is not None and report.gate.verdict == "fail"


def test_distances_are_faiss_counts(budgeted: Evaluation) -> None:
    """HNSW's distances per query are faiss's own count for the same search; the IVF's are
    the codes its nprobe lists hold, fewer than the corpus; both are deterministic."""
    report = budgeted.report
    assert "hnsw" in report.ann and report.ann["hnsw"].distances_per_query is not None
    n_docs = len(budgeted.golden_set.doc_ids)
    assert 0 < report.ann["hnsw"].distances_per_query < n_docs * 1.5
    ivf = report.ann["ivf"].distances_per_query
    assert ivf is not None and 0 < ivf < n_docs
    again = _run("gate: {indexes: [exact, hnsw, ivf], ann_min_recall: 0.5}\n").report
    assert (
        "hnsw" in again.ann
        and again.ann["hnsw"].distances_per_query == report.ann["hnsw"].distances_per_query
    )
    assert again.ann["ivf"].distances_per_query == ivf

    # the same graph searched the same way, counted by faiss's statistics directly
    docs, queries = budgeted.doc_vectors, budgeted.query_vectors
    assert docs is not None and queries is not None
    config = parse_config(BASE, "c.yaml")
    index = build_hnsw(docs, config.indexes.hnsw)
    stats = faiss.cvar.hnsw_stats  # type: ignore[attr-defined]  # not in its stubs
    stats.reset()
    search(index, queries, config.depth, id_rank(budgeted.golden_set.doc_ids))
    assert report.ann["hnsw"].distances_per_query == stats.ndis / len(queries)


def test_latency_is_reported_with_the_machine(budgeted: Evaluation) -> None:
    """Every faiss-backed index and exact search is timed, at most 100 queries, with the
    machine's description; report.md and the terminal show it on one line."""
    from evalret.report.markdown import render_markdown

    latency = budgeted.report.latency
    assert latency is not None and set(latency.indexes) == {"exact", "hnsw", "ivf"}
    n = min(100, len(budgeted.report.query_ids))
    for t in latency.indexes.values():
        assert t.n_queries == n and 0 < t.p50_ms <= t.p95_ms
    assert latency.machine["cpu_count"] and "machine-dependent" in latency.note
    md = render_markdown(budgeted.report)
    assert "Latency \\(machine-dependent;" in md and "distances a query" in md


def test_ann_floor_holds_every_gated_approximate_index(budgeted: Evaluation) -> None:
    """``ann_min_recall`` gives a gated faiss index its recall floor, as HNSW has."""
    checks = _checks(budgeted, "ann_min_recall")
    assert set(checks) == {"hnsw/all/ann_recall@10 min 0.5", "ivf/all/ann_recall@10 min 0.5"}
    recall = budgeted.report.ann["ivf"].slices["all"].recall["recall@10"]
    assert checks["ivf/all/ann_recall@10 min 0.5"][2] == recall
    assert checks["ivf/all/ann_recall@10 min 0.5"][1].startswith("ivf keeps ")


def test_a_figure_not_measured_fails_its_budget() -> None:
    check = budget_check("x", "p95_ms", 5.0, None, 3)
    assert not check.passed and "was not measured" in check.message
    assert budget_check("x", "index_bytes", 10, 10, 3).passed  # the limit itself is within


@pytest.mark.parametrize(
    ("gate", "error"),
    [
        ("{budgets: {nope: {max_index_bytes: 1}}}", "gate.budgets.nope: no enabled index 'nope'"),
        (
            "{budgets: {exact: {max_p95_ms: 1}}}",
            "gate.budgets.exact: exact is a exact index: a run measures the cost of hnsw, faiss",
        ),
        (
            "{budgets: {plain: {max_p95_ms: 1}}}",
            "gate.budgets.plain: plain is a python index: a run measures",
        ),
        (
            "{budgets: {store: {max_index_bytes: 1000, max_p95_ms: 5}}}",
            "gate.budgets.store.max_index_bytes: store is searched outside evalret (store): its "
            "size and vectors compared are not measured, only its latency (max_p95_ms)",
        ),
        ("{budgets: {hnsw: {max_bytes: 1}}}", "gate.budgets.hnsw.max_bytes"),
        ("{budgets: {hnsw: {max_p95_ms: 0}}}", "gate.budgets.hnsw.max_p95_ms"),
        ("{max_cost_per_run: 1.0}", "gate.max_cost_per_run: max_cost_per_run needs an API model"),
    ],
)
def test_budgets_are_strict(gate: str, error: str) -> None:
    with pytest.raises(ConfigError) as e:
        parse_config(BASE + STORES + f"gate: {gate}\n", "c.yaml")
    assert error in str(e.value)


# a store and a python index not declared approximate, beside BASE's indexes
STORES = (
    "  store: {type: store, driver: lancedb, mode: scratch}\n"
    "  plain: {type: python, callable: 'os.path:join'}\n"
)


def test_a_store_takes_a_latency_budget() -> None:
    """A store (and a python index declared approximate) is timed, so max_p95_ms budgets it."""
    text = BASE + STORES.replace("'os.path:join'}", "'os.path:join', approximate: true}")
    config = parse_config(
        text + "gate: {budgets: {store: {max_p95_ms: 5}, plain: {max_p95_ms: 9}}}\n", "c.yaml"
    )
    assert config.gate.budgets["store"].max_p95_ms == 5


def test_configs_without_budgets_dump_as_before() -> None:
    config = parse_config(BASE, "c.yaml")
    assert {"budgets", "max_cost_per_run"}.isdisjoint(config.model_dump()["gate"])


def test_cold_cost_counts_every_text_as_the_dry_run(tmp_path: Path) -> None:
    """An API model's cost of the run with nothing cached: its texts after their prefix,
    counted as --dry-run counts them, times the price; no request is sent."""
    from evalret.engines.embedders import make_embedder
    from evalret.engines.tokens import estimate_tokens

    config = parse_config(
        f"golden_set: {{path: {DEMO}}}\nmodel: {{provider: openai, name: some-model, "
        "base_url: 'http://127.0.0.1:9/v1', api_key_env: EVALRET_NO_KEY, "
        "query_prefix: 'query: ', price_per_million_tokens: 2.0}\n"
        "gate: {max_cost_per_run: 0.5}\n",
        "c.yaml",
    )
    golden = load_golden_set(config.golden_set, config.relevance_level)
    texts = {"document": golden.doc_texts, "query": golden.query_texts}
    backend = make_embedder(config.model, None)
    tokens = sum(estimate_tokens(t) for t in golden.doc_texts)
    tokens += sum(estimate_tokens("query: " + t) for t in golden.query_texts)
    assert cold_cost(config.model, backend, texts) == pytest.approx(tokens * 2.0 / 1e6, abs=1e-6)


def test_cost_budget_reads_the_cold_cost() -> None:
    """The cost check reads embedding.api.cold_cost; a report without it fails the check."""
    from evalret.pipeline.gate import _budget_checks

    config = parse_config(
        f"golden_set: {{path: {DEMO}}}\nmodel: {{provider: openai, name: m, "
        "base_url: 'http://127.0.0.1:9/v1', price_per_million_tokens: 1.0}\n"
        "gate: {max_cost_per_run: 0.01}\n",
        "c.yaml",
    )
    report = json.loads((Path(__file__).parents[1] / "baselines" / "demo.json").read_text())
    report["embedding"]["api"] = {"endpoint": "e", "model": "m", "cold_cost": 0.004}
    [check] = _budget_checks(RunReport.model_validate(report), config.gate)
    assert check.passed and check.name == "run/budget/embedding_cost max 0.01"
    report["embedding"]["api"]["cold_cost"] = 0.02
    [check] = _budget_checks(RunReport.model_validate(report), config.gate)
    assert not check.passed and "over the budget" in check.message
    del report["embedding"]["api"]
    [check] = _budget_checks(RunReport.model_validate(report), config.gate)
    assert not check.passed and "not measured" in check.message
    assert np.isnan(check.current)
