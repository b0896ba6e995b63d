"""The harness's world: one directory of real inputs that every command of the table can read,
built once per session with evalret itself and copied for each case.

``golden/`` a small golden set cut from the demo's (every tenth query and the documents they
judge: 25 queries, 67 documents, so that a case's call takes a fraction of a second, and
`run --judge --sample 20` still samples); ``inv_plugin.py`` the plug-in module (a hashing
encoder and a Python retriever, see inv_plugin_source); ``cfg.yaml`` a config that runs them,
with a baseline (``baseline.json``, saved by a real run of that config); ``judge.yaml`` the
same with a ``judge:`` section; ``saved/report.json`` and
``saved/a.json`` / ``saved/b.json`` saved reports; ``qrels.txt`` and ``run.prod.trec`` for
`score`; ``history.sqlite`` with one entry; ``pool.jsonl`` (a real pool of the config) and two
annotators' label files ``alice.jsonl`` / ``bob.jsonl``; ``train.txt`` for `leakage`;
``cachefull/`` a filled embedding cache; ``cache/``, the config's cache directory (and every
case's $EVALRET_CACHE_DIR), holding evalret's stores as evalret writes them: the judge's answer
cache, the query writer's (golden synth) and the reranker's score cache with a row each, and an
embedding set of a model no row embeds with (inv_table.STORES).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
from inv_plugin_source import SOURCE
from inv_table import OTHER_IDENTITY
from typer.testing import CliRunner

from conftest import DEMO
from evalret.cli import app
from evalret.data.stores import JUDGE_ANSWERS, RERANK_SCORES, SYNTH_ANSWERS, CacheRoot
from evalret.engines.cache import Namespace, text_keys
from evalret.engines.sqlite_table import SqliteTable

PLUGIN = "inv_plugin"
ENCODER = f"{PLUGIN}:make_encoder"
RETRIEVER = f"{PLUGIN}:search"
SETUP = f"{PLUGIN}:setup"  # the retriever's setup and close hooks
CLOSE = f"{PLUGIN}:close"
RERANKER = f"{PLUGIN}:rerank"
SECRET_ENV = "INV_API_KEY"
# characters a URL, a header and base64 each treat differently, so every echoed form differs
SECRET = "sk-inv/S3cr3t+key=42&x"

CONFIG_HEAD = """\
golden_set:
  path: golden
model:
{model}
indexes:
  exact: {{enabled: true}}
  hnsw: {{enabled: true, m: 16, ef_construction: 64, ef_search: 64, threads: 1}}
  bm25: {{enabled: false}}
  hybrid: {{enabled: false}}
  service: {{type: python, callable: "{retriever}", setup: "{setup}", close: "{close}"}}
  reranked:
    {{type: rerank, of: service, k: 20, reranker: {{provider: python, callable: "{reranker}"}}}}
metrics: [ndcg@10, mrr@10, recall@10]
bootstrap: {{samples: 100}}
health: {{enabled: false}}
cache: {{dir: cache}}
output: {{dir: reports}}
"""
# the gate block starts on a known line, so that a duplicate key's both lines can be checked
GATE_BLOCK = """\
gate:
  baseline: baseline.json
  indexes: [exact, service]
  ann_min_recall: null
  thresholds:
    recall@10: {max_drop: 0.5}
    mrr@10: {max_drop: 0.5}
"""
# `evalret judge`'s settings (its row runs --dry-run: nothing is sent to this address)
JUDGE_BLOCK = "judge: {name: inv-judge, base_url: 'http://127.0.0.1:9/v1', api_key_env: null}\n"
PYTHON_MODEL = f'  provider: python\n  callable: "{ENCODER}"\n  name: hash-32'


def config_text(model: str = PYTHON_MODEL, retriever: str = RETRIEVER) -> str:
    """The world's config with ``model`` (the YAML body of the model: block)."""
    head = CONFIG_HEAD.format(
        model=model, retriever=retriever, reranker=RERANKER, setup=SETUP, close=CLOSE
    )
    return head + GATE_BLOCK


def gate_line() -> int:
    """The 1-based line of the config's ``gate:`` key."""
    return config_text().splitlines().index("gate:") + 1


def _invoke(world: Path, *args: str) -> None:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, (args, result.output)


def _label_files(world: Path) -> None:
    """Two annotators' grades of every pool line (alice: a hash of the pair; bob: one off)."""
    lines = [json.loads(line) for line in (world / "pool.jsonl").read_text().splitlines()]
    for name, shift in (("alice", 0), ("bob", 1)):
        rows = []
        for i, line in enumerate(lines):
            grade = (i + shift) % 4 if i % 3 else i % 4
            rows.append(
                {**line, "grade": grade, "annotator": name, "graded_at": "2026-01-01T00:00:00Z"}
            )
        (world / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def _qrels(world: Path) -> None:
    rows = []
    for line in (world / "golden" / "queries.jsonl").read_text().splitlines():
        query = json.loads(line)
        relevant = query["relevant"]
        if isinstance(relevant, list):
            relevant = dict.fromkeys(relevant, 1)
        rows += [f"{query['id']} 0 {doc} {grade}\n" for doc, grade in relevant.items()]
    (world / "qrels.txt").write_text("".join(rows))


def _stores(cache: Path) -> None:
    """evalret's stores in ``cache``, written by evalret's own writers."""
    root = CacheRoot(cache, "cache.dir")
    answers = SqliteTable(JUDGE_ANSWERS, root, durable=True)
    answers.put([("inv-answer", 2, "##final score: 2", "2026-01-01T00:00:00Z")])
    answers.close()
    scores = SqliteTable(RERANK_SCORES, root)
    scores.put([("inv-score", 0.5)])
    scores.close()
    written = SqliteTable(SYNTH_ANSWERS, root, durable=True)
    written.put([("inv-written", "loom install", "2026-01-01T00:00:00Z")])
    written.close()
    vectors = np.eye(3, 8, dtype=np.float32)
    Namespace(cache, OTHER_IDENTITY).store(text_keys(["a", "b", "c"]), vectors)


# the world's golden set: every QUERY_STEP-th query of the demo set
QUERY_STEP = 10


def _small_golden(golden: Path) -> None:
    """Every QUERY_STEP-th query of the demo golden set, and the documents they judge (their
    lines as the demo has them, in its order): tags, grades, frequencies and the sections'
    metadata of the demo, a small fraction of its size."""
    golden.mkdir()
    lines = (DEMO / "queries.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    queries = lines[::QUERY_STEP]
    judged = {doc for line in queries for doc in json.loads(line)["relevant"]}
    corpus = [
        line
        for line in (DEMO / "corpus.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
        if json.loads(line)["id"] in judged
    ]
    (golden / "queries.jsonl").write_text("".join(queries), encoding="utf-8")
    (golden / "corpus.jsonl").write_text("".join(corpus), encoding="utf-8")


def build_world(world: Path) -> Path:
    """Build the template world in ``world`` (a new directory) with real evalret commands."""
    world.mkdir(parents=True)
    _small_golden(world / "golden")
    (world / f"{PLUGIN}.py").write_text(SOURCE)
    (world / "cfg.yaml").write_text(config_text())
    (world / "judge.yaml").write_text(config_text() + JUDGE_BLOCK)
    sys.path.insert(0, str(world))
    try:
        cfg = str(world / "cfg.yaml")
        seed = world / "seed"
        _invoke(
            world,
            "run",
            "-c",
            cfg,
            "--no-progress",
            "--out",
            str(seed),
            "--save-baseline",
            str(world / "baseline.json"),
        )
        (world / "saved").mkdir()
        shutil.copyfile(seed / "report.json", world / "saved" / "report.json")
        shutil.copyfile(seed / "run.exact.trec", world / "run.prod.trec")
        _qrels(world)
        # compare's A and B: one index and one slice, so that its paired tests are few and fast
        _invoke(
            world,
            "score",
            str(world / "qrels.txt"),
            f"prod={world / 'run.prod.trec'}",
            "--out",
            str(world / "scored"),
            "--no-progress",
            "-m",
            "ndcg@10",
        )
        for name in ("a.json", "b.json"):
            shutil.copyfile(world / "scored" / "report.json", world / "saved" / name)
        shutil.rmtree(world / "scored")
        _invoke(
            world,
            "history",
            "add",
            str(world / "saved" / "report.json"),
            "--db",
            str(world / "history.sqlite"),
            "--label",
            "main",
        )
        _invoke(world, "pool", cfg, "-k", "3", "--out", str(world / "pool.jsonl"), "--no-progress")
        _label_files(world)
        shutil.copytree(world / "cache", world / "cachefull")
        shutil.rmtree(world / "cache")
        _stores(world / "cache")
        shutil.rmtree(seed)
    finally:
        sys.path.remove(str(world))
        sys.modules.pop(PLUGIN, None)
    texts = [
        json.loads(line)["text"]
        for line in (world / "golden" / "queries.jsonl").read_text().splitlines()
    ]
    (world / "train.txt").write_text("\n".join([*texts[:3], "an unrelated training query"]) + "\n")
    return world
