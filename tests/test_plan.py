"""One plan of what a run embeds (pipeline/plan.py): `run --dry-run`, `run` and `embed` agree on
the texts, a sample (config ``sample:``, `--sample N`) included. Real model, real cache, the demo
golden set."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from evalret.cli import app
from evalret.core.sharding import distinct_keys
from evalret.data.config import Config, load_config
from evalret.engines.cache import CachedEmbedder
from evalret.engines.st_embedder import SentenceTransformerEmbedder
from evalret.pipeline.plan import KINDS, dry_run, texts_to_embed
from evalret.pipeline.sample import with_sample

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "golden_sets" / "demo"
SAMPLE = {"queries": 20, "documents": 50}

runner = CliRunner()


def invoke(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def write_config(path: Path, cache: Path, sample: dict[str, int] | None) -> Path:
    """The demo with its cache at ``cache`` and ``sample``."""
    settings = {
        "golden_set": {"path": str(DEMO)},
        "cache": {"dir": str(cache)},
        "output": {"dir": str(path.parent / "reports")},
        "sample": sample,
    }
    path.write_text(yaml.safe_dump(settings))
    return path


def planned_rows(output: str) -> dict[str, tuple[int, int, int]]:
    """(texts, cached, to embed) per kind, from the dry run's table."""
    rows = {}
    for label in ("documents", "queries"):
        match = re.search(rf"{label}\s*│\s*(\d+)\s*│\s*(\d+)\s*│\s*(\d+)\s*│", output)
        assert match is not None, output
        a, b, c = (int(g) for g in match.groups())
        rows[label] = (a, b, c)
    return rows


def cache_keys(cfg: Config, cache: Path) -> np.ndarray:
    """The distinct keys the cache at ``cache`` holds for ``cfg``'s model (what was embedded)."""
    namespace = CachedEmbedder(SentenceTransformerEmbedder(cfg.model), cache).namespace.path
    stored = [np.load(p) for p in sorted(namespace.glob("*.keys.npy"))]
    return distinct_keys(np.concatenate(stored)) if stored else np.zeros((0, 16), np.uint8)


def plan_keys(cfg: Config, cache: Path) -> tuple[dict[str, int], np.ndarray]:
    """Per kind the number of texts the plan says a run on ``cfg`` embeds, and their keys."""
    cached = CachedEmbedder(SentenceTransformerEmbedder(cfg.model), cache)
    texts = texts_to_embed(cfg)
    keys = np.concatenate([cached.keys(texts[k], k) for k in KINDS])
    return {k: len(texts[k]) for k in KINDS}, distinct_keys(keys)


@pytest.mark.model
@pytest.mark.parametrize("flag", [None, 60], ids=["config sample", "config sample + --sample"])
def test_dry_run_plans_what_run_and_embed_embed(tmp_path: Path, flag: int | None) -> None:
    """With ``sample: {queries: 20, documents: 50}`` (and `--sample 60` over it), `run --dry-run`
    plans the sampled texts (before: the whole set, 338 and 244, and `--sample` was dropped);
    `run` into an empty cache then embeds exactly those texts (same counts, same cache keys),
    and `embed` on the same sample fills an empty cache with the same keys."""
    extra = ("--sample", str(flag)) if flag is not None else ()
    config = write_config(tmp_path / "run.yaml", tmp_path / "run-cache", SAMPLE)
    cfg = with_sample(load_config(config), flag)
    counts, keys = plan_keys(cfg, tmp_path / "run-cache")
    assert 0 < counts["document"] < 338 and 0 < counts["query"] < 244
    shown = planned_rows(invoke("run", "-c", str(config), "--dry-run", *extra))
    assert shown == {
        "documents": (counts["document"], 0, counts["document"]),
        "queries": (counts["query"], 0, counts["query"]),
    }

    invoke("run", "-c", str(config), "--no-progress", "-o", str(tmp_path / "out"), *extra)
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    embedding = report["embedding"]
    assert (embedding["n_documents"], embedding["n_queries"]) == (
        counts["document"],
        counts["query"],
    )
    assert embedding["cache"]["document"]["misses"] == counts["document"]
    assert embedding["cache"]["query"]["misses"] == counts["query"]
    assert np.array_equal(cache_keys(cfg, tmp_path / "run-cache"), keys)
    again = planned_rows(invoke("run", "-c", str(config), "--dry-run", *extra))
    assert again["documents"] == (counts["document"], counts["document"], 0)
    assert again["queries"] == (counts["query"], counts["query"], 0)

    # `embed` takes the sample from the config: the same sample, written out
    sample = cfg.sample.model_dump() if cfg.sample is not None else None
    embed_config = write_config(tmp_path / "embed.yaml", tmp_path / "embed-cache", sample)
    assert with_sample(load_config(embed_config), None).sample == cfg.sample
    output = invoke("embed", "-c", str(embed_config), "--no-progress")
    assert f"documents: {counts['document']} in the shard, 0 cached" in output
    assert f"queries: {counts['query']} in the shard, 0 cached" in output
    assert np.array_equal(cache_keys(cfg, tmp_path / "embed-cache"), keys)


def test_the_plan_states_the_sample_rule_without_a_model(tmp_path: Path) -> None:
    """The dry run of the demo with ``sample: {queries: 20, documents: 50}`` plans the drawn
    queries (33: the floor of 10 per slice needs more than 20) and the documents judged for
    them (86, more than 50: no distractor); `--sample 60` sets the queries, the judged documents
    and distractors follow. Nothing is embedded or written."""
    config = write_config(tmp_path / "plan.yaml", tmp_path / "cache", SAMPLE)
    plan = dry_run(config)
    assert (plan.document.texts, plan.query.texts) == (86, 33)
    sampled = dry_run(config, sample=60)
    assert (sampled.document.texts, sampled.query.texts) == (148, 60)
    assert sampled.document.to_embed == 148 and sampled.document.cached == 0
    whole = dry_run(write_config(tmp_path / "whole.yaml", tmp_path / "cache", None))
    assert (whole.document.texts, whole.query.texts) == (338, 244)
    assert not (tmp_path / "cache").exists()


ENCODER = """
import numpy as np

class Ones:
    def identity(self):
        return {"kind": "ones"}

    def encode(self, texts, kind):
        return np.ones((len(texts), 4), dtype=np.float32)

def make():
    return Ones()
"""


def test_the_cost_hint_names_a_key_the_model_takes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The dry run's cost hint (#39) only for a model that takes a price: a local model (a
    custom encoder here) gets none, and the key is refused there (exit 2); an API model gets
    the hint, and the key it names is accepted and prices the plan. Nothing is sent."""
    (tmp_path / "evalret_cost_encoder.py").write_text(ENCODER)
    monkeypatch.syspath_prepend(str(tmp_path))
    base = {"golden_set": {"path": str(DEMO)}, "cache": {"dir": str(tmp_path / "cache")}}
    local = tmp_path / "local.yaml"
    model = {"provider": "python", "callable": "evalret_cost_encoder:make"}
    local.write_text(yaml.safe_dump({**base, "model": model}))
    output = invoke("run", "-c", str(local), "--dry-run")
    assert "Dry run" in output and "cost:" not in output and "price" not in output
    priced = ["--set", "model.price_per_million_tokens=0.02"]
    refused = runner.invoke(app, ["run", "-c", str(local), "--dry-run", *priced])
    assert refused.exit_code == 2, refused.output
    api = tmp_path / "api.yaml"
    model = {"provider": "openai", "name": "m", "base_url": "http://127.0.0.1:9/v1"}
    api.write_text(yaml.safe_dump({**base, "model": {**model, "api_key_env": None}}))
    hint = re.search(r"cost: set (\S+) to see it", invoke("run", "-c", str(api), "--dry-run"))
    assert hint is not None and hint.group(1) == "model.price_per_million_tokens"
    output = invoke("run", "-c", str(api), "--dry-run", "--set", f"{hint.group(1)}=0.02")
    assert "cost at 0.02 per million tokens" in output and "cost: set" not in output
