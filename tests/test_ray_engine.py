"""embedding.engine ray: the demo golden set embedded by Ray Data actors on a local Ray runtime
(2 CPUs, 2 workers) gives the local engine's vectors (cosine >= 0.99999) and identical metrics;
its cache serves a warm run of either engine; config errors and a missing ray name their line
or the extra."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from conftest import DEMO
from evalret.cli import app
from evalret.data.config import CacheConfig
from evalret.data.config import SentenceTransformersModelConfig as ModelConfig
from evalret.data.goldenset import load_golden_set
from evalret.engines.embedders import open_embedder
from evalret.engines.ray_engine import in_row_order
from evalret.errors import EvalretError
from helpers import marks_its_users

runner = CliRunner()
N_DOCS, N_QUERIES = 338, 244  # the demo set
RAY = "embedding:\n  engine: ray\n  workers: 2\n  batch_size: 64\n"


def write_config(directory: Path, cache: Path, extra: str = "") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "cfg.yaml"
    path.write_text(f"golden_set:\n  path: {DEMO}\ncache:\n  dir: {cache}\n{extra}")
    return path


def run(config: Path, out: Path) -> tuple[int, str, dict[str, Any]]:
    result = runner.invoke(app, ["run", "-c", str(config), "-o", str(out), "--no-progress"])
    report = out / "report.json"
    data = json.loads(report.read_text()) if result.exit_code == 0 else {}
    return result.exit_code, result.output, data


@dataclass(frozen=True)
class Runs:
    local: dict[str, Any]  # engine local, its own fresh cache
    ray: dict[str, Any]  # engine ray, another fresh cache
    ray_output: str
    local_cache: Path
    ray_cache: Path
    ray_left_running: bool  # whether a Ray runtime was still up after the ray run
    root: Path


@pytest.fixture(scope="module")
@marks_its_users("ray", "model")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    import ray

    root = tmp_path_factory.mktemp("ray-engine")
    local_cache, ray_cache = root / "local-cache", root / "ray-cache"
    code, output, local = run(write_config(root / "local", local_cache), root / "local-out")
    assert code == 0, output
    code, output, ray_report = run(write_config(root / "ray", ray_cache, RAY), root / "ray-out")
    assert code == 0, output
    return Runs(local, ray_report, output, local_cache, ray_cache, ray.is_initialized(), root=root)


def cached_vectors(cache: Path) -> dict[str, np.ndarray]:
    """The demo's document and query vectors as the cache at ``cache`` holds them (nothing may
    be embedded: every text must be a hit)."""
    golden = load_golden_set(load_config_golden())
    opened = open_embedder(ModelConfig(), CacheConfig(dir=cache))
    out = {
        "document": opened.embedder.embed(golden.doc_texts, "document"),
        "query": opened.embedder.embed(golden.query_texts, "query"),
    }
    assert opened.cached is not None
    assert all(s.misses == 0 for s in opened.cached.stats.values()), opened.cached.stats
    return out


def load_config_golden() -> Any:
    from evalret.data.config import GoldenSetConfig

    return GoldenSetConfig(path=DEMO)


def test_ray_engine_gives_the_local_engines_vectors_and_metrics(runs: Runs) -> None:
    """Every text went through Ray (2 workers on a local runtime that evalret shut down after
    embedding); the vectors are the local engine's (cosine >= 0.99999 on every row), in the
    same cache namespace, and every metric, interval and fingerprint is identical."""
    engine = runs.ray["embedding"]["engine"]
    assert engine["name"] == "ray" and engine["workers"] == 2 and engine["batch_size"] == 64
    assert engine["address"] == "local runtime" and engine["texts"] == N_DOCS + N_QUERIES
    assert engine["startup_s"] is not None
    assert not runs.ray_left_running
    assert "embedded on Ray (a local Ray runtime): 2 workers, batches of 64" in runs.ray_output
    cache = runs.ray["embedding"]["cache"]
    assert cache["document"]["misses"] == N_DOCS and cache["query"]["misses"] == N_QUERIES
    assert cache["namespace"] == runs.local["embedding"]["cache"]["namespace"]
    assert "engine" not in runs.local["embedding"] and "embedding" not in runs.local["config"]
    assert runs.ray["config"]["embedding"]["engine"] == "ray"
    assert runs.ray["fingerprint"] == runs.local["fingerprint"]
    assert runs.ray["indexes"] == runs.local["indexes"]
    assert runs.ray["ann"] == runs.local["ann"]
    local, ray_vectors = cached_vectors(runs.local_cache), cached_vectors(runs.ray_cache)
    for kind in ("document", "query"):
        a, b = local[kind], ray_vectors[kind]
        assert a.shape == b.shape == (N_DOCS if kind == "document" else N_QUERIES, 384)
        cosine = np.sum(a * b, axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
        assert cosine.min() >= 0.99999, (kind, cosine.min())


def test_a_ray_filled_cache_serves_a_warm_run_of_either_engine(runs: Runs) -> None:
    """After the Ray run, a local run and a Ray run on its cache embed nothing (the Ray run
    starts no runtime) and report the local engine's metrics."""
    code, output, warm_local = run(
        write_config(runs.root / "warm-local", runs.ray_cache), runs.root / "warm-local-out"
    )
    assert code == 0, output
    code, output, warm_ray = run(
        write_config(runs.root / "warm-ray", runs.ray_cache, RAY), runs.root / "warm-ray-out"
    )
    assert code == 0, output
    for report in (warm_local, warm_ray):
        cache = report["embedding"]["cache"]
        assert cache["document"] == {"hits": N_DOCS, "misses": 0, "corrupt_shards": []}
        assert cache["query"] == {"hits": N_QUERIES, "misses": 0, "corrupt_shards": []}
        assert report["indexes"] == runs.local["indexes"]
        assert report["fingerprint"] == runs.local["fingerprint"]
    assert warm_ray["embedding"]["engine"]["texts"] == 0
    assert warm_ray["embedding"]["engine"]["startup_s"] is None  # Ray was never started


@pytest.mark.parametrize(
    ("section", "expected"),
    [
        ("embedding:\n  engine: ray\n  wokers: 2\n", "cfg.yaml:7: embedding.wokers: unknown key"),
        ("embedding:\n  engine: ray\n  workers: 0\n", "cfg.yaml:7: embedding.workers"),
        (
            "embedding:\n  engine: ray\n  address: http://head:10001\n",
            "cfg.yaml:7: embedding.address: Value error, 'http://head:10001' is no Ray address",
        ),
        ("embedding:\n  engine: spark\n", "cfg.yaml:6: embedding.engine"),
    ],
)
def test_config_errors_exit_2_at_their_line(tmp_path: Path, section: str, expected: str) -> None:
    """Unknown keys, zero workers, an address that is not Ray's and an unknown engine are
    refused (exit 2) at their line, before anything is embedded."""
    config = write_config(tmp_path, tmp_path / "cache", section)
    result = runner.invoke(app, ["run", "-c", str(config), "-o", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert expected in " ".join(result.output.split()), result.output
    assert not (tmp_path / "cache").exists()


def test_missing_ray_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without ray, engine ray exits 2 naming the extra, and embeds nothing."""
    monkeypatch.setitem(sys.modules, "ray", None)  # makes ray unimportable
    config = write_config(tmp_path, tmp_path / "cache", RAY)
    result = runner.invoke(app, ["run", "-c", str(config), "-o", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert "pip install 'evalret[ray]'" in result.output
    assert not (tmp_path / "cache" / "embeddings").exists()


def test_rows_out_of_order_are_put_back_and_gaps_refused() -> None:
    """Answers arrive in any order: they are put back by row; a missing or repeated row is an
    error, never a misplaced vector."""
    vectors = np.arange(8, dtype=np.float32).reshape(4, 2)
    rows = np.array([2, 0, 3, 1])
    back = in_row_order(rows, vectors, 4)
    assert back.tolist() == [[2, 3], [6, 7], [0, 1], [4, 5]]
    with pytest.raises(EvalretError, match="not each row once"):
        in_row_order(np.array([0, 1, 1, 3]), vectors, 4)
    with pytest.raises(EvalretError, match="3 rows for 4 texts"):
        in_row_order(rows[:3], vectors[:3], 4)


@pytest.mark.ray
def test_a_failing_actor_exits_3_and_the_runtime_is_shut_down(tmp_path: Path) -> None:
    """A model the actors cannot load fails the run with exit 3 naming the failure, and the
    local runtime the run started is shut down all the same."""
    import ray

    missing = tmp_path / "no-such-model"
    config = write_config(tmp_path, tmp_path / "cache", f"{RAY}model:\n  name: {missing}\n")
    result = runner.invoke(app, ["run", "-c", str(config), "-o", str(tmp_path / "out")])
    assert result.exit_code == 3, result.output
    assert "embedding on Ray failed" in result.output and "cannot load model" in result.output
    assert not ray.is_initialized()
