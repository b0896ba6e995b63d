"""A new metric family is one function and one registry line: R-precision (trec_eval's ``Rprec``),
defined here and registered by ``register_family``, parses, scores (with a cutoff, without one,
judged-only) and equals trec_eval per query, with no other file of evalret touched."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from evalret.core.metrics import (
    REGISTRY,
    Family,
    Gain,
    Metric,
    RankedJudgments,
    TrecEval,
    build_judgments,
    compute,
    known_metrics,
    parse_metric,
    parse_metrics,
    register_family,
    unregister_family,
)
from evalret.errors import MetricError
from helpers import trec_eval_values, trec_ranked


def r_precision(j: RankedJudgments, k: int | None, gain: Gain = "linear") -> np.ndarray:
    """R-precision = |relevant in the top R| / R, R the query's relevant documents (0 when R is
    0); with a cutoff, of the ranking cut at k first (trec_eval's ``Rprec`` on the run cut at
    k). Ties: the ranking as given; gain: none (binary)."""
    hits = j.relevant_hits.cut(k)
    within = hits.rank < j.n_relevant[hits.query]
    found = np.bincount(hits.query[within], minlength=hits.n_queries).astype(np.float64)
    out = np.zeros(hits.n_queries, dtype=np.float64)
    np.divide(found, j.n_relevant, out=out, where=j.n_relevant > 0)
    return out


RPREC = Family(
    "rprec",
    r_precision,
    TrecEval("Rprec", "Rprec", cut_run=True),
    ("r_precision",),
    at_k="relevant documents in the top R of the ranking cut at k / R",
    whole="relevant documents in the top R / R",
)


@pytest.fixture
def rprec() -> Iterator[Family]:
    """R-precision registered for one test, then removed (other tests iterate the registry)."""
    register_family(RPREC)  # the one registry line a new family needs
    yield RPREC
    unregister_family(RPREC.name)


def _judgments(
    doc_ids: list[str], qrels: dict[str, dict[str, int]], ranked: dict[str, list[str]]
) -> RankedJudgments:
    """Judgments of rankings given as document ids in rank order, padded with -1."""
    index = {d: i for i, d in enumerate(doc_ids)}
    queries = list(ranked)
    depth = max(len(r) for r in ranked.values())
    table = np.full((len(queries), depth), -1, dtype=np.int64)
    for qi, q in enumerate(queries):
        table[qi, : len(ranked[q])] = [index[d] for d in ranked[q]]
    rows = [(qi, index[d], g) for qi, q in enumerate(queries) for d, g in qrels[q].items()]
    qi_, di_, g_ = (np.array(c, dtype=np.int64) for c in zip(*rows, strict=True))
    return build_judgments(table, qi_, di_, g_, len(doc_ids))


def test_a_registered_family_parses_and_scores(rprec: Family) -> None:
    """``Rprec@3``, ``rprec`` and ``r_precision:judged`` parse to the new family, the unknown-name
    message lists it, and compute scores it by the function's arithmetic."""
    assert parse_metric("Rprec@3") == Metric("rprec", 3)
    assert parse_metrics(["rprec", "r_precision:judged"]) == [
        Metric("rprec"),
        Metric("rprec", judged=True),
    ]
    assert "rprec@k" in known_metrics()
    # R = 2 (a, b); ranking a, x (unjudged), b: the top R = 2 holds a only -> 1/2; cut at 1 the
    # top 2 of [a] holds a -> 1/2; judged-only, the condensed ranking a, b -> 2/2
    j = _judgments(["a", "b", "x"], {"q": {"a": 1, "b": 2}}, {"q": ["a", "x", "b"]})
    got = compute(parse_metrics(["rprec", "rprec@1", "rprec:judged"]), j)
    assert {name: v.tolist() for name, v in got.items()} == {
        "rprec": [0.5],
        "rprec@1": [0.5],
        "rprec:judged": [1.0],
    }


def test_a_registered_family_equals_trec_eval(rprec: Family) -> None:
    """On seeded graded runs (grades -1..3, unjudged documents, queries without a relevant
    document), R-precision with a cutoff, without one and judged-only equals trec_eval's
    ``Rprec`` per query, read through the family's declared ``TrecEval``."""
    rng = np.random.default_rng(7)
    doc_ids = [f"d{i:02d}" for i in range(12)]
    for _ in range(20):
        queries = [f"q{i}" for i in range(4)]
        qrels = {
            q: {d: int(rng.integers(-1, 4)) for d in rng.choice(doc_ids, 6, replace=False)}
            for q in queries
        }
        run = {
            q: {d: float(rng.random()) for d in rng.choice(doc_ids, 9, replace=False)}
            for q in queries
        }
        ranked = trec_ranked(run)
        j = _judgments(doc_ids, qrels, {q: [d for d, _ in r] for q, r in ranked.items()})
        metrics = [Metric("rprec", k, judged) for k in (1, 3, None) for judged in (False, True)]
        got = compute(metrics, j)
        for metric in metrics:
            expected = trec_eval_values(qrels, ranked, metric)
            assert got[str(metric)].tolist() == pytest.approx([expected[q] for q in queries])


def test_a_clashing_name_registers_nothing(rprec: Family) -> None:
    """A family whose alias is taken (``p`` is precision's) is refused, and the registry and the
    parser are as before; a built-in family cannot be unregistered."""
    clash = Family("rprec2", r_precision, TrecEval("Rprec", "Rprec", cut_run=True), ("p",))
    with pytest.raises(ValueError, match="'p' of family 'rprec2' is already taken by family"):
        register_family(clash)
    assert "rprec2" not in REGISTRY and parse_metric("p@5") == Metric("precision", 5)
    with pytest.raises(ValueError, match="built in"):
        unregister_family("ndcg")


def test_an_unregistered_family_is_unknown_again() -> None:
    """Outside the fixture, R-precision is not a metric: the parser refuses it by the registry."""
    assert "rprec" not in REGISTRY
    with pytest.raises(MetricError, match="unknown metric 'rprec@5'"):
        parse_metric("rprec@5")
