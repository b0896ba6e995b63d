"""`evalret embed --shard I/N` (sharded CI jobs filling one cache) and `model.device` (cpu, cuda,
cuda:N, mps, auto) with the sentence-transformers provider."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evalret.commands.embed import embed_command
from evalret.core.sharding import distinct_keys, first_rows_in, in_keys, parse_shard, shard_keys
from evalret.data.config import load_config
from evalret.data.schema import EmbeddingInfo
from evalret.engines.cache import CachedEmbedder, text_keys
from evalret.engines.st_embedder import SentenceTransformerEmbedder, check_device, resolve_device
from evalret.errors import InputError, ModelError
from evalret.pipeline.plan import texts_to_embed
from evalret.report.run_notes import backend_line
from helpers import invoke, marks_its_users

REPO = Path(__file__).resolve().parent.parent


def torch_sees(device: str) -> bool:
    """Whether torch sees a CUDA device (``cuda``) or any accelerator (``any``); a skipif
    condition string calls it at setup, so collecting this file does not import torch."""
    import torch

    cuda = torch.cuda.is_available()
    return cuda if device == "cuda" else cuda or torch.backends.mps.is_available()


def demo_config(directory: Path, cache: Path, device: str = "cpu") -> Path:
    """configs/default.yaml (the demo) with its paths made absolute, the cache at ``cache`` and
    ``model.device: device``."""
    text = (REPO / "configs" / "default.yaml").read_text()
    text = text.replace("path: ../golden_sets/demo", f"path: {REPO / 'golden_sets' / 'demo'}")
    text = text.replace("dir: ../reports", f"dir: {directory / 'reports'}")
    text, replaced = re.subn(r"(?m)^  device: cpu\b.*$", f"  device: {device}", text)
    assert replaced == 1
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{device.replace(':', '-')}.yaml"
    path.write_text(text + f"cache:\n  dir: {cache}\n")
    return path


def run_report(config: Path, out: Path, *extra: str) -> dict[str, Any]:
    code, output = invoke("run", "-c", str(config), "--no-progress", "-o", str(out), *extra)
    assert code == 0, output
    report: dict[str, Any] = json.loads((out / "report.json").read_text())
    return report


def metrics(report: dict[str, Any]) -> dict[str, Any]:
    """Every index's metrics per slice and per query."""
    return {
        name: {"slices": section["slices"], "per_query": section["per_query"]}
        for name, section in report["indexes"].items()
    }


@dataclass
class Sharded:
    config: Path
    cache: Path
    shard_outputs: list[str]
    run: dict[str, Any]  # the run after the two shards


@pytest.fixture(scope="module")
@marks_its_users("model")
def sharded(tmp_path_factory: pytest.TempPathFactory) -> Sharded:
    """Two `evalret embed --shard i/2` jobs into a fresh cache, then `evalret run`."""
    base = tmp_path_factory.mktemp("sharded")
    cache = base / "cache"
    config = demo_config(base, cache)
    outputs = []
    for shard in ("1/2", "2/2"):
        code, output = invoke("embed", "-c", str(config), "--shard", shard, "--no-progress")
        assert code == 0, output
        outputs.append(output)
    return Sharded(config, cache, outputs, run_report(config, base / "run"))


def embedded(output: str) -> tuple[int, int, int, int]:
    """(texts in the shard, of all, already cached, embedded) from embed's first line."""
    match = re.search(r"(\d+) text\(s\) of (\d+), (\d+) already cached, (\d+) embedded", output)
    assert match is not None, output
    a, b, c, d = (int(g) for g in match.groups())
    return a, b, c, d


def test_two_shards_then_run_embeds_nothing(sharded: Sharded, tmp_path: Path) -> None:
    """After shards 1/2 and 2/2, the run embeds nothing (every document and query a cache hit),
    and its metrics equal those of a plain run without the cache."""
    first, second = (embedded(o) for o in sharded.shard_outputs)
    assert first[1] == second[1] and first[0] + second[0] == first[1]
    assert abs(first[0] - second[0]) <= 1  # round-robin: sizes differ by one at most
    assert first[2] == second[2] == 0 and first[3] == first[0] and second[3] == second[0]
    assert "shard 1/2" in sharded.shard_outputs[0] and "shard 2/2" in sharded.shard_outputs[1]
    cache = sharded.run["embedding"]["cache"]
    n_docs, n_queries = (
        sharded.run["embedding"]["n_documents"],
        sharded.run["embedding"]["n_queries"],
    )
    assert cache["document"] == {"hits": n_docs, "misses": 0, "corrupt_shards": []}
    assert cache["query"] == {"hits": n_queries, "misses": 0, "corrupt_shards": []}
    plain = run_report(sharded.config, tmp_path / "plain", "--no-cache")
    assert plain["embedding"]["cache"] is None
    assert metrics(sharded.run) == metrics(plain)
    assert sharded.run["fingerprint"]["digest"] == plain["fingerprint"]["digest"]


def test_a_shard_again_embeds_nothing(sharded: Sharded) -> None:
    code, output = invoke("embed", "-c", str(sharded.config), "--shard", "1/2", "--no-progress")
    assert code == 0, output
    texts, _, cached, done = embedded(output)
    assert texts > 0 and cached == texts and done == 0
    code, output = invoke("embed", "-c", str(sharded.config), "--no-progress")  # no --shard
    assert code == 0, output
    texts, total, cached, done = embedded(output)
    assert texts == total == cached and done == 0 and "every text" in output


def test_shards_are_disjoint_and_cover_every_key(sharded: Sharded) -> None:
    """The shards' keys (as the command deals them, for N = 1..4) are disjoint and together are
    the distinct cache keys of every document and query the run embeds."""
    cfg = load_config(sharded.config)
    texts = texts_to_embed(cfg)
    cached = CachedEmbedder(SentenceTransformerEmbedder(cfg.model), sharded.cache)
    every = distinct_keys(
        np.concatenate(
            [cached.keys(texts["document"], "document"), cached.keys(texts["query"], "query")]
        )
    )
    assert len(every) == embedded(sharded.shard_outputs[0])[1]
    for n in (1, 2, 3, 4):
        dealt: list[np.ndarray] = []
        for i in range(1, n + 1):
            embed_command(sharded.config, shard=f"{i}/{n}", on_keys=dealt.append)
        joined = np.concatenate(dealt)
        assert len(joined) == len(every)  # disjoint: no key twice
        assert (distinct_keys(joined) == every).all()  # and together every key


def test_slicing_ignores_order_duplicates_and_the_cache() -> None:
    """shard_keys depends on the set of keys only; in_keys finds the chosen rows."""
    keys = text_keys([f"text {i}" for i in range(101)])
    rng = np.random.default_rng(0)
    shuffled = np.concatenate([keys[rng.permutation(len(keys))], keys[:7]])
    for i in (1, 2, 3):
        a, b = shard_keys(keys, i, 3), shard_keys(shuffled, i, 3)
        assert (a == b).all() and len(a) in (33, 34)
        assert in_keys(keys, a).sum() == len(a)
    assert len(shard_keys(keys[:0], 1, 2)) == 0


def test_first_rows_in_keeps_the_first_row_of_each_chosen_key_in_input_order() -> None:
    keys = text_keys(["a", "b", "c", "b", "a", "d"])
    chosen = text_keys(["b", "a", "x"])
    assert first_rows_in(keys, chosen).tolist() == [0, 1]
    assert first_rows_in(keys, chosen[2:]).tolist() == []
    assert first_rows_in(keys[:0], chosen).tolist() == []


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("0/2", "the shard I must be from 1 to 2"),
        ("3/2", "the shard I must be from 1 to 2"),
        ("1/0", "the number of shards N must be at least 1"),
        ("x", "give I/N"),
        ("1/2/3", "give I/N"),
        ("-1/2", "give I/N"),
    ],
)
def test_bad_shard_exits_2(spec: str, message: str) -> None:
    code, output = invoke("embed", "--shard", spec, "--no-progress")
    assert code == 2, output
    assert message in output and f"--shard {spec!r}" in output
    with pytest.raises(InputError):
        parse_shard(spec)


def test_embed_refuses_no_cache() -> None:
    code, output = invoke("embed", "--no-cache", "--no-progress")
    assert code == 2 and "only fills the embedding cache" in output


@pytest.mark.parametrize("shape", ["file", "embeddings is a file", "under a file", "immutable"])
def test_embed_refuses_an_unusable_cache_dir_before_embedding(tmp_path: Path, shape: str) -> None:
    """`embed --dir` a regular file, a cache whose embeddings/ is a file, a path under a file, a
    directory that cannot be written (chattr +i): exit 2 naming the path before any text is
    embedded (today: every text embedded, then exit 3), the file untouched."""
    from test_atomic import immutable

    config = demo_config(tmp_path, tmp_path / "unused")
    target = tmp_path / "cache"
    blocker = target / "embeddings"
    if shape == "file":
        blocker = target
    elif shape == "under a file":
        blocker, target = tmp_path / "plain", tmp_path / "plain" / "cache"
    else:
        target.mkdir()
    if shape == "immutable":
        blocker.mkdir()
        with immutable(blocker):
            code, output = invoke("embed", "-c", str(config), "--dir", str(target))
    else:
        blocker.write_text("a regular file")
        code, output = invoke("embed", "-c", str(config), "--dir", str(target))
        assert blocker.read_text() == "a regular file"
    assert code == 2, output
    text = " ".join(output.split())
    assert "cannot write the embedding cache" in text and "give --dir" in text
    assert "Embedding" not in output and "Internal error" not in output


def test_config_refuses_an_unknown_device(tmp_path: Path) -> None:
    config = demo_config(tmp_path, tmp_path / "cache")
    config.write_text(config.read_text().replace("device: cpu", "device: gpu"))
    code, output = invoke("embed", "-c", str(config), "--no-progress")
    assert code == 2 and "model.device" in output, output


@pytest.mark.skipif("torch_sees('any')", reason="torch sees an accelerator here")
def test_auto_resolves_to_cpu_and_equals_cpu(sharded: Sharded, tmp_path: Path) -> None:
    """`device: auto` on a CPU-only machine is cpu: the same cache namespace (no text embedded
    again), the report's backend says cpu, and the metrics equal the `device: cpu` run's."""
    assert resolve_device("auto") == "cpu" and resolve_device("cuda:1") == "cuda:1"
    auto = run_report(demo_config(tmp_path, sharded.cache, "auto"), tmp_path / "auto")
    assert auto["config"]["model"]["device"] == "auto"
    assert auto["embedding"]["backend"]["device"] == "cpu"
    assert sharded.run["embedding"]["backend"]["device"] == "cpu"
    assert auto["embedding"]["cache"]["namespace"] == sharded.run["embedding"]["cache"]["namespace"]
    assert auto["embedding"]["cache"]["document"]["misses"] == 0
    assert metrics(auto) == metrics(sharded.run)


@pytest.mark.model
@pytest.mark.skipif("torch_sees('cuda')", reason="torch sees a CUDA device here")
@pytest.mark.parametrize("device", ["cuda", "cuda:1"])
def test_cuda_without_cuda_exits_3_when_embedding(tmp_path: Path, device: str) -> None:
    """device cuda where torch has no CUDA: exit 3 naming the device and what torch sees."""
    import torch

    config = demo_config(tmp_path, tmp_path / "cache", device)
    code, output = invoke("embed", "-c", str(config), "--shard", "1/4", "--no-progress")
    assert code == 3, output
    text = " ".join(output.split())
    assert f"model.device '{device}' is not available" in text
    assert f"torch {torch.__version__} sees no CUDA device" in text
    with pytest.raises(ModelError, match="is not available"):
        check_device(device)
    check_device("cpu")


@pytest.mark.skipif("torch_sees('cuda')", reason="torch sees a CUDA device here")
def test_warm_cuda_run_passes_without_cuda(sharded: Sharded, tmp_path: Path) -> None:
    """A cache filled on a CUDA machine (its namespace has device cuda) serves a run configured
    for cuda on a machine without one: nothing is embedded, so the device is never needed."""
    cfg = load_config(demo_config(tmp_path, sharded.cache, "cuda"))
    cuda = CachedEmbedder(SentenceTransformerEmbedder(cfg.model), sharded.cache)
    cpu = CachedEmbedder(
        SentenceTransformerEmbedder(cfg.model.model_copy(update={"device": "cpu"})), sharded.cache
    )
    assert (
        cuda.cache_identity()["device"] == "cuda" and cuda.namespace.digest != cpu.namespace.digest
    )
    texts = texts_to_embed(cfg)
    for kind in ("document", "query"):  # as a GPU job would have left them (here: cpu vectors)
        vectors = cpu.embed(texts[kind], kind)
        cuda.namespace.store(cuda.keys(texts[kind], kind), vectors)
    assert cpu.stats["document"].misses == 0
    report = run_report(demo_config(tmp_path, sharded.cache, "cuda"), tmp_path / "cuda")
    assert report["embedding"]["cache"]["document"]["misses"] == 0
    assert report["embedding"]["cache"]["query"]["misses"] == 0
    assert report["embedding"]["backend"]["device"] == "cuda"
    assert metrics(report) == metrics(sharded.run)


ENCODER = """
import hashlib
import numpy as np

class HashEncoder:
    def identity(self):
        return {"kind": "hashed words", "dim": 64}

    def encode(self, texts, kind):
        out = np.zeros((len(texts), 64), dtype=np.float32)
        for i, t in enumerate(texts):
            for tok in t.lower().split():
                h = hashlib.sha256(tok.encode()).digest()
                out[i, int.from_bytes(h[:4], "little") % 64] += 1.0
        return out

def make():
    return HashEncoder()
"""


def test_shard_caches_merge_by_copying(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Shards embedded into separate cache directories (CI jobs uploading one artifact each),
    copied together into one directory, serve a run that embeds nothing: the cache is
    content-addressed (unique shard file names), so copying is merging. A custom encoder
    (provider python) with prefixes goes through the same factory and cache."""
    (tmp_path / "evalret_shard_encoder.py").write_text(ENCODER)
    monkeypatch.syspath_prepend(str(tmp_path))
    base = demo_config(tmp_path, tmp_path / "unused")
    model = (
        "model:\n  provider: python\n  callable: 'evalret_shard_encoder:make'\n"
        "  query_prefix: 'query: '\n  document_prefix: 'passage: '\n"
    )
    text = re.sub(r"model:\n(  .*\n)+", model, base.read_text())
    caches = [tmp_path / f"cache{i}" for i in (1, 2, 3)]
    sizes = []
    for i, cache in enumerate(caches, start=1):
        config = tmp_path / f"shard{i}.yaml"
        config.write_text(text.replace(f"dir: {tmp_path / 'unused'}", f"dir: {cache}"))
        code, output = invoke("embed", "-c", str(config), "--shard", f"{i}/3", "--no-progress")
        assert code == 0, output
        sizes.append(embedded(output))
    assert sum(s[0] for s in sizes) == sizes[0][1] and all(s[3] == s[0] for s in sizes)
    merged = tmp_path / "merged"
    for cache in caches:
        shutil.copytree(cache, merged, dirs_exist_ok=True)
    config = tmp_path / "merged.yaml"
    config.write_text(text.replace(f"dir: {tmp_path / 'unused'}", f"dir: {merged}"))
    report = run_report(config, tmp_path / "run")
    assert report["embedding"]["cache"]["document"]["misses"] == 0
    assert report["embedding"]["cache"]["query"]["misses"] == 0
    plain = run_report(config, tmp_path / "plain", "--no-cache")
    assert metrics(report) == metrics(plain)


def test_docs_recipe_passes_actionlint(tmp_path: Path) -> None:
    """The sharded GitHub Actions recipe of docs/how-to/ray-and-shards.md is a valid workflow
    (actionlint) that embeds the four shards in a matrix and merges their caches before
    `evalret run`."""
    page = (REPO / "docs" / "how-to" / "ray-and-shards.md").read_text(encoding="utf-8")
    blocks = [b for b in re.findall(r"```yaml\n(.*?)```", page, re.S) if "--shard" in b]
    assert len(blocks) == 1
    recipe = blocks[0]
    assert "shard: [1, 2, 3, 4]" in recipe
    assert "evalret embed -c evalret.yaml --shard ${{ matrix.shard }}/4" in recipe
    assert "merge-multiple: true" in recipe and "evalret run -c evalret.yaml" in recipe
    workflow = tmp_path / "sharded.yml"
    workflow.write_text(recipe)
    actionlint = str(Path(sys.executable).parent / "actionlint")
    lint = subprocess.run([actionlint, str(workflow)], capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_the_report_names_a_device_other_than_the_cpu() -> None:
    """The backend line (terminal, report.md) says where torch ran when it was not the CPU."""
    base = {"dim": 4, "n_documents": 1, "n_queries": 1, "document_text": "t"}
    gpu = {"name": "torch", "precision": "fp32", "device": "cuda:1"}
    info = EmbeddingInfo.model_validate({**base, "backend": gpu})
    assert backend_line(info) == "backend torch fp32 on cuda:1"
    assert info.model_dump(mode="json")["backend"]["device"] == "cuda:1"
    cpu = EmbeddingInfo.model_validate({**base, "backend": {**gpu, "device": "cpu"}})
    assert backend_line(cpu) is None
    old = EmbeddingInfo.model_validate({**base, "backend": {"name": "torch", "precision": "fp32"}})
    assert "device" not in old.model_dump(mode="json")["backend"]  # older reports read back as is
