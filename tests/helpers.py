"""Builders and assertions shared by the tests (the Hypothesis strategies are in strategies.py)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from evalret.core.metrics import RankedJudgments, build_judgments


def judgments_from_lists(
    ranked_grades: list[list[int]], all_grades: list[list[int]]
) -> RankedJudgments:
    """RankedJudgments from per-query grade lists (ranked list; every judged grade of the query).

    Each ranked list holds the grades of the retrieved documents in rank order (0 = non-relevant
    or unjudged); ``all_grades`` lists every judged grade of the query, retrieved or not.
    """
    depth = max(len(r) for r in ranked_grades)
    grades = np.zeros((len(ranked_grades), depth), dtype=np.int64)
    ideal = np.zeros((len(ranked_grades), depth), dtype=np.int64)
    for i, r in enumerate(ranked_grades):
        grades[i, : len(r)] = r
        top = sorted(all_grades[i], reverse=True)[:depth]
        ideal[i, : len(top)] = top
    n_rel = np.array([sum(g >= 1 for g in a) for a in all_grades], dtype=np.int64)
    return RankedJudgments(grades=grades, judged=grades > 0, ideal=ideal, n_relevant=n_rel)


def case_judgments(case: dict) -> RankedJudgments:
    """RankedJudgments for a ``retrieval_cases`` example, through the production lookup."""
    qi, di, gr = [], [], []
    for i, judged in enumerate(case["qrels"]):
        for d, g in judged.items():
            qi.append(i)
            di.append(d)
            gr.append(g)
    return build_judgments(
        np.array(case["rankings"], dtype=np.int64),
        np.array(qi, dtype=np.int64),
        np.array(di, dtype=np.int64),
        np.array(gr, dtype=np.int64),
        n_docs=case["n_docs"],
    )


class HashEmbedder:
    """Bag-of-words vectors from hashed tokens: deterministic, lexical, good enough for plumbing."""

    dim = 64

    def identity(self) -> dict[str, Any]:
        return {"name": "hash-bow", "source": "test"}

    def embed(self, texts: Sequence[str], kind: str, progress: Any = None) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for tok in t.lower().split():
                out[i, int(hashlib.md5(tok.encode()).hexdigest(), 16) % self.dim] += 1
            if progress:
                progress(1)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms > 0, norms, 1)


def gate_check(**fields: Any) -> Any:
    """A passing ``exact/all/recall@10 max_drop 0.01`` GateCheck on 244 queries (0.70 to 0.69,
    delta -0.005, no p-value), with ``fields`` changed."""
    from evalret.data.schema import GateCheck

    base: dict[str, Any] = {
        "name": "exact/all/recall@10 max_drop 0.01",
        "index": "exact",
        "slice": "all",
        "metric": "recall@10",
        "kind": "max_drop",
        "threshold": 0.01,
        "baseline": 0.70,
        "current": 0.69,
        "delta": -0.005,
        "n_queries": 244,
        "p_value": None,
        "p_adjusted": None,
        "mde": None,
        "underpowered": False,
        "passed": True,
        "message": "",
    }
    return GateCheck.model_validate({**base, **fields})


def demo_report() -> Any:
    """baselines/demo.json, the committed report of the demo run, as a RunReport (a fresh one
    each call)."""
    from evalret.data.schema import RunReport

    path = Path(__file__).resolve().parents[1] / "baselines" / "demo.json"
    return RunReport.model_validate_json(path.read_text())


def send_json(handler: Any, code: int, body: Any, headers: dict[str, str] | None = None) -> None:
    """Answer an http.server request with ``body`` as JSON (status ``code``, extra ``headers``)."""
    data = json.dumps(body).encode()
    handler.send_response(code)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    for key, value in (headers or {}).items():
        handler.send_header(key, value)
    handler.end_headers()
    handler.wfile.write(data)


def invoke(*args: str) -> tuple[int, str]:
    """``evalret ARGS`` in this process (Typer's CliRunner): the exit code and the output."""
    from typer.testing import CliRunner

    from evalret.cli import app

    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def make_set(tmp_path: Path) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
    docs = [
        {"id": f"d{i}", "text": f"{words[i % 8]} {words[(i * 3) % 8]} item {i}"} for i in range(60)
    ]
    queries = []
    for q in range(24):
        relevant = {f"d{(q * 5 + j) % 60}": (3 - j) for j in range(3)}
        queries.append(
            {
                "id": f"q{q}",
                "text": f"{words[q % 8]} {words[(q * 5) % 8]}",
                "relevant": relevant,
                "tags": ["even" if q % 2 == 0 else "odd"],
                "frequency": 1000 - q * 40,
            }
        )
    queries.append({"id": "q-none", "text": "alpha", "relevant": {"d1": 0}})
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (tmp_path / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    return tmp_path


def cranfield_like(directory: Path) -> Path:
    """A tiny TREC golden set shaped like the classic Cranfield collection as it comes: two empty
    documents, -1 and -2 grades, ``#`` comments and blank lines in the qrels, decimal grades and a
    query judged only non-relevant. Returns the qrels file."""
    directory.mkdir(parents=True, exist_ok=True)
    texts = [
        "experimental investigation of the aerodynamics of a wing in a slipstream",
        "",
        "simple shear flow past a flat plate in an incompressible fluid",
        "boundary layer in simple shear flow past a flat plate",
        "the boundary layer on a flat plate at high mach number",
        "",
        "heat transfer in hypersonic flow over a blunt body",
        "buckling of thin cylindrical shells under axial compression",
        "supersonic flow past a cone at incidence",
        "transition of the laminar boundary layer to turbulence",
    ]
    rows = [{"_id": str(i + 1), "title": "", "text": t} for i, t in enumerate(texts)]
    (directory / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (directory / "queries.tsv").write_text(
        "1\tboundary layer on a flat plate\n"
        "2\tshear flow past a plate\n"
        "3\theat transfer at hypersonic speed\n"
        "4\twing aerodynamics in a slipstream\n"
        "5\tbuckling of shells\n"
    )
    qrels = directory / "qrels.txt"
    qrels.write_text(
        "# Cranfield-style judgments: -1 and -2 mean not relevant\n"
        "1 0 4 2\n"
        "1 0 5 1.5\n"
        "1 0 10 -1\n"
        "\n"
        "1 0 3 1\n"
        "2 0 3 2\n"
        "2 0 4 -2\n"
        "  # an indented comment\n"
        "2 0 2 0\n"
        "3 0 7 3\n"
        "3 0 9 -0.5\n"
        "4 0 1 2.\n"
        "4 0 6 1\n"
        "5 0 8 -1\n"
        "5 0 1 -2\n"
    )
    return qrels


def read_trec_run(path: Path) -> dict[str, dict[str, float]]:
    """A TREC run file (``qid Q0 docno rank score tag``) as trec_eval reads it: scores by query."""
    run: dict[str, dict[str, float]] = {}
    for line in path.read_text().splitlines():
        qid, _, doc, _, score, _ = line.split()
        run.setdefault(qid, {})[doc] = float(score)
    return run


def assert_report_matches_trec_eval(
    per_query: dict[str, list[float]],
    query_ids: list[str],
    qrels: dict[str, dict[str, int]],
    run: dict[str, dict[str, float]],
    relevance_level: int,
) -> int:
    """Every metric of ``per_query`` (no mrr@k; any metric without a cutoff) equals trec_eval's
    on ``run`` for every qrels query (a query absent from the run scores 0, trec_eval -c);
    returns the number of values compared."""
    import pytest
    import pytrec_eval

    from evalret.core.metrics import REGISTRY, parse_metric

    metrics = {name: parse_metric(name) for name in per_query}
    trec = {name: REGISTRY[m.family].trec_eval for name, m in metrics.items()}
    assert not any(t.cut_run and metrics[n].k is not None for n, t in trec.items()), "no mrr@k"
    measures = {name: t.measure(metrics[name].k) for name, t in trec.items()}
    full_run = {q: run.get(q) or {"__none__": 0.0} for q in qrels}
    got = pytrec_eval.RelevanceEvaluator(
        qrels, set(measures.values()), relevance_level=relevance_level
    ).evaluate(full_run)
    assert sorted(query_ids) == sorted(qrels)
    for name, measure in measures.items():
        key = measure.replace(".", "_")
        for i, q in enumerate(query_ids):
            theirs = got[q][key]
            if trec[name].positive and metrics[name].k is None:
                theirs = float(theirs > 0)
            assert per_query[name][i] == pytest.approx(theirs, abs=1e-9), (name, q)
    return len(measures) * len(query_ids)


def metric_table(report: Any) -> dict[tuple[str, str, str], float]:
    """Every mean (index, slice, metric) and every per-query value (index, query, metric)."""
    table = {}
    for index, section in report.indexes.items():
        for name, s in section.slices.items():
            for metric, value in s.metrics.items():
                if value.value is not None:
                    table[(index, name, metric)] = value.value
        for metric, values in section.per_query.items():
            for query, v in zip(report.query_ids, values, strict=True):
                table[(index, f"query {query}", metric)] = v
    return table


LANE_MARKS = "__evalret_lane_marks__"


def marks_its_users(*marks: str) -> Any:
    """Put under ``@pytest.fixture``: every test that uses the fixture, directly or through
    another fixture, carries ``marks`` (tests/conftest.py adds them before ``-m`` selects), so a
    file whose slow part is one fixture (a Postgres server, a warm model) marks only that part."""

    def declare(function: Any) -> Any:
        setattr(function, LANE_MARKS, marks)
        return function

    return declare
