"""Faster embedding backends: the packaged sentence-transformers model run by onnxruntime (fp32
or int8 weights) or by OpenVINO (fp32).

The model directory holds safetensors weights, not an ONNX graph, so evalret exports the
transformer once (``torch.onnx.export``), optionally quantizes it (onnxruntime's dynamic
quantization), and keeps the result under ``<cache dir>/models/<key>/``, keyed by the weights'
sha256 and every export setting. Later runs, and other processes at the same time, reuse it; a
file that fails its checksum is set aside and exported again. Texts are tokenized with the model's
own ``tokenizer.json`` exactly as sentence-transformers does (same special tokens, truncation to
``max_seq_length``; a long text is cut first to a prefix that tokenizes alike, engines/clip.py),
pooled as the model's pooling config says, then finished by
``finish_vectors`` like the torch path.

Nothing heavy is imported until a text is embedded: a run that finds every vector in the cache
imports neither torch nor onnxruntime nor openvino.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import logging
import os
import shutil
import tempfile
import uuid
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from evalret.core.digest import json_digest
from evalret.data.atomic import publish_dir, sha256_file, temp_dir_beside
from evalret.data.config import ModelConfig, SentenceTransformersModelConfig
from evalret.engines.clip import TextClipper
from evalret.engines.st_embedder import (
    Embedder,
    Kind,
    Progress,
    SentenceTransformerEmbedder,
    VectorMemoryError,
    finish_vectors,
    force_offline,
    resolve_model,
    vector_matrix,
    vectors_fit,
)
from evalret.errors import ConfigError, ModelError

OPSET = 17
EXPORT_FORMAT = 2  # bump when the export or quantization recipe changes
# eager attention exports as plain MatMul/Softmax, which onnxruntime and OpenVINO run faster than
# transformers' SDPA path traced to ONNX (about 12% less CPU time measured here, same vectors)
ATTENTION = "eager"
# int8: dynamic quantization of the MatMul weights, one scale per output channel. On this project's
# machines (AVX2, no VNNI) it kept cosine >= 0.98 to fp32, where quantizing every op (the default,
# embeddings included) fell to about 0.92.
QUANT_OPS = ["MatMul"]
QUANT_PER_CHANNEL = True
QUANT_REDUCE_RANGE = False
QUANTIZATION = {
    "method": "onnxruntime.quantize_dynamic",
    "weight_type": "QInt8",
    "op_types": QUANT_OPS,
    "per_channel": QUANT_PER_CHANNEL,
    "reduce_range": QUANT_REDUCE_RANGE,
}
# what each backend needs, as (import name, the extra that installs it)
REQUIREMENTS: dict[str, list[tuple[str, str]]] = {
    "onnx": [("onnxruntime", "onnx"), ("onnx", "onnx")],
    "openvino": [("openvino", "openvino"), ("onnx", "openvino")],
}
SUPPORTED_POOLING = ("mean", "cls", "max")


def usable_cores() -> int:
    """CPUs this process may run on (its affinity mask), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # ValueError: blocked in sys.modules
        return False


def check_requirements(backend: str, precision: str) -> None:
    """Raise ConfigError (exit 2) naming the pip command when the backend's packages are absent."""
    needed = REQUIREMENTS.get(backend, [])
    missing = sorted({m for m, _ in needed if not _importable(m)})
    if missing:
        extras = ",".join(sorted({e for m, e in needed if m in missing}))
        raise ConfigError(
            f"model.backend {backend} (precision {precision}) needs {', '.join(missing)}, "
            f"which is not installed: pip install 'evalret[{extras}]'"
        )


def _version(package: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


@dataclass(frozen=True)
class ModelLayout:
    """What sentence-transformers' modules.json and module configs say about a model."""

    transformer_dir: Path
    pooling: str
    normalize: bool
    max_seq_length: int
    pad_id: int


def _module_kind(entry: dict[str, Any]) -> str:
    return str(entry.get("type", "")).rsplit(".", 1)[-1]


def read_layout(source: str, max_seq_length: int | None) -> ModelLayout:
    """Read the model's module stack; refuse (ConfigError) what the ONNX path cannot reproduce."""
    root = Path(source)
    if not root.is_dir():
        raise ConfigError(
            f"model {source!r}: the onnx and openvino backends need a local model directory "
            "(the packaged default, or a sentence-transformers directory)"
        )
    modules_file = root / "modules.json"
    if modules_file.exists():
        modules = json.loads(modules_file.read_text(encoding="utf-8"))
    else:  # a plain transformers directory: sentence-transformers adds mean pooling
        modules = [{"type": "Transformer", "path": ""}, {"type": "Pooling", "path": None}]
    kinds = [_module_kind(m) for m in modules]
    unsupported = [k for k in kinds if k not in ("Transformer", "Pooling", "Normalize")]
    if kinds[:2] != ["Transformer", "Pooling"] or unsupported or kinds.count("Normalize") > 1:
        raise ConfigError(
            f"model {source!r} has modules {kinds}: the onnx and openvino backends support "
            "Transformer, Pooling and an optional Normalize; use model.backend: torch"
        )
    transformer_dir = root / (modules[0].get("path") or "")
    pooling = "mean"
    pooling_path = modules[1].get("path")
    if pooling_path is not None:
        pooling = _pooling_mode(json.loads((root / pooling_path / "config.json").read_text()))
    if pooling not in SUPPORTED_POOLING:
        raise ConfigError(
            f"model {source!r} pools with {pooling!r}: the onnx and openvino backends support "
            f"{', '.join(SUPPORTED_POOLING)} pooling; use model.backend: torch"
        )

    def load(name: str, where: Path = transformer_dir) -> dict[str, Any]:
        p = where / name
        return dict(json.loads(p.read_text(encoding="utf-8"))) if p.exists() else {}

    st_config = load("sentence_bert_config.json") or load("sentence_bert_config.json", root)
    if st_config.get("do_lower_case"):
        raise ConfigError(
            f"model {source!r} sets do_lower_case in sentence_bert_config.json, which the onnx "
            "and openvino backends do not reproduce; use model.backend: torch"
        )
    if not (transformer_dir / "tokenizer.json").exists():
        raise ConfigError(
            f"model {source!r} has no tokenizer.json (a fast tokenizer), which the onnx and "
            "openvino backends need; use model.backend: torch"
        )
    positions = int(load("config.json").get("max_position_embeddings", 512))
    tokenizer_config = load("tokenizer_config.json")
    length = max_seq_length or st_config.get("max_seq_length")
    if length is None:
        length = min(int(tokenizer_config.get("model_max_length", positions)), positions)
    if int(length) > positions:
        raise ConfigError(
            f"model.max_seq_length {length} exceeds the model's {positions} positions"
        )
    tokenizer = json.loads((transformer_dir / "tokenizer.json").read_text(encoding="utf-8"))
    pad_id = (tokenizer.get("padding") or {}).get("pad_id")
    if pad_id is None:
        pad_token = tokenizer_config.get("pad_token")
        vocab = (tokenizer.get("model") or {}).get("vocab") or {}
        pad_id = vocab.get(pad_token, 0) if isinstance(vocab, dict) else 0
    return ModelLayout(
        transformer_dir=transformer_dir,
        pooling=pooling,
        normalize="Normalize" in kinds,
        max_seq_length=int(length),
        pad_id=int(pad_id),
    )


def _pooling_mode(config: dict[str, Any]) -> str:
    """The single pooling mode of a Pooling config (new ``pooling_mode`` or legacy flags)."""
    mode = config.get("pooling_mode")
    if mode is None:
        legacy = {
            "pooling_mode_cls_token": "cls",
            "pooling_mode_max_tokens": "max",
            "pooling_mode_mean_tokens": "mean",
            "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
            "pooling_mode_weightedmean_tokens": "weightedmean",
            "pooling_mode_lasttoken": "lasttoken",
        }
        active = [v for k, v in legacy.items() if config.get(k)]
        mode = active[0] if len(active) == 1 else "+".join(active) or "none"
    if isinstance(mode, list):
        mode = mode[0] if len(mode) == 1 else "+".join(mode)
    return str(mode)


def pool(hidden: np.ndarray, mask: np.ndarray, mode: str) -> np.ndarray:
    """Sentence vectors [b, d] from token vectors [b, t, d] and the attention mask [b, t],
    as sentence-transformers' Pooling does: masked mean, first token (cls), or masked max."""
    if mode == "cls":
        return np.ascontiguousarray(hidden[:, 0], dtype=np.float32)
    m = mask[..., None].astype(np.float32)
    if mode == "max":
        masked = np.where(m > 0, hidden, np.float32(-np.inf))
        return np.asarray(masked.max(axis=1), dtype=np.float32)
    if mode == "mean":
        total = (hidden * m).sum(axis=1)
        return np.asarray(total / np.clip(m.sum(axis=1), 1e-9, None), dtype=np.float32)
    raise ConfigError(f"pooling {mode!r} is not supported by the onnx and openvino backends")


def _l2(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.asarray(vectors / np.maximum(norms, 1e-12), dtype=np.float32)


def export_onnx(transformer_dir: Path, target: Path) -> None:
    """Export the transformer (token vectors out) to ``target`` with torch's TorchScript exporter:
    fp32, dynamic batch and sequence axes, opset ``OPSET``. Works offline."""
    import inspect

    force_offline()
    try:
        import torch
        from transformers import AutoModel
        from transformers.utils import logging as hf_logging
    except ImportError as e:  # pragma: no cover - torch and transformers are core dependencies
        raise ModelError(f"exporting the model to ONNX needs torch and transformers: {e}") from e
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # transformers is untyped here
    model = AutoModel.from_pretrained(
        str(transformer_dir), dtype=torch.float32, attn_implementation=ATTENTION
    )
    model.eval()
    takes_types = "token_type_ids" in inspect.signature(model.forward).parameters
    names = ["input_ids", "attention_mask"] + (["token_type_ids"] if takes_types else [])

    class TokenVectors(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, *inputs: Any) -> Any:
            return self.inner(**dict(zip(names, inputs, strict=True))).last_hidden_state

    # two rows of different lengths, so that padding and masking are traced
    ids = torch.tensor([[101, 2023, 2003, 1037, 3231, 102], [101, 7592, 102, 0, 0, 0]])
    ids = ids.clamp(max=model.config.vocab_size - 1)
    mask = (torch.arange(6)[None, :] < torch.tensor([[6], [3]])).long()
    args = (ids, mask, torch.zeros_like(ids))[: len(names)]
    dynamic = {n: {0: "batch", 1: "sequence"} for n in [*names, "token_vectors"]}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            TokenVectors(model),
            args,
            str(target),
            input_names=names,
            output_names=["token_vectors"],
            dynamic_axes=dynamic,
            opset_version=OPSET,
            dynamo=False,
        )


def quantize_int8(source: Path, target: Path) -> None:
    """Dynamic int8 quantization of ``source`` into ``target`` (see QUANTIZATION)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    logging.getLogger("root").setLevel(logging.ERROR)  # the quantizer logs advice at WARNING
    quantize_dynamic(
        str(source),
        str(target),
        weight_type=QuantType.QInt8,
        op_types_to_quantize=list(QUANT_OPS),
        per_channel=QUANT_PER_CHANNEL,
        reduce_range=QUANT_REDUCE_RANGE,
    )


class ModelStore:
    """Exported ONNX files under ``<root>/models/<key>/``, each written once (a temporary
    directory, then a rename) with its sha256 in ``export.json``."""

    def __init__(self, root: Path) -> None:
        self.root = root / "models"
        self.warnings: list[str] = []  # what could not be stored; the run went on without it
        self._scratch: tempfile.TemporaryDirectory[str] | None = None

    def get(self, key: dict[str, Any], build: Callable[[Path], None]) -> tuple[Path, str]:
        """(path of model.onnx for ``key``, "read" or "exported"); ``build(path)`` writes it."""
        digest = json_digest(key)[:32]
        final = self.root / digest
        if self._valid(final):
            return final / "model.onnx", "read"
        if final.exists():  # a damaged or partial export: set it aside, never trust it
            with contextlib.suppress(OSError):
                os.replace(final, final.with_name(f"{digest}.corrupt-{uuid.uuid4().hex[:8]}"))
        try:
            tmp = temp_dir_beside(final)
        except OSError as e:  # an unwritable cache must not fail the run: export for it alone
            return self._export_unstored(build, e), "exported"
        try:
            build(tmp / "model.onnx")
            files = {
                p.name: sha256_file(p) for p in sorted(tmp.iterdir()) if p.name != "export.json"
            }
            meta = {"key": key, "files": files}
            (tmp / "export.json").write_text(json.dumps(meta, indent=1, sort_keys=True))
            try:
                publish_dir(tmp, final)
            except OSError:  # another process finished the same export first: use theirs
                if not self._valid(final):
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return final / "model.onnx", "exported"

    def _export_unstored(self, build: Callable[[Path], None], error: OSError) -> Path:
        """Export into a temporary directory that lives as long as this store, and say so."""
        self.warnings.append(
            f"cannot write the exported model under {self.root} ({error.strerror or error}): "
            "exported for this run only"
        )
        self._scratch = tempfile.TemporaryDirectory(prefix="evalret-model-")
        path = Path(self._scratch.name) / "model.onnx"
        build(path)
        return path

    @staticmethod
    def _valid(directory: Path) -> bool:
        try:
            meta = json.loads((directory / "export.json").read_text())
            files: dict[str, str] = meta["files"]
            return "model.onnx" in files and all(
                sha256_file(directory / name) == sha for name, sha in files.items()
            )
        except (OSError, ValueError, KeyError, TypeError):
            return False


class _Runner:
    """One compiled model: feeds named int64 arrays, returns the token vectors [b, t, d]."""

    def __init__(self, backend: str, path: Path, threads: int) -> None:
        self.backend = backend
        if backend == "onnx":
            import onnxruntime as ort

            options = ort.SessionOptions()
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
            options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            options.log_severity_level = 3
            self._session = ort.InferenceSession(
                str(path), options, providers=["CPUExecutionProvider"]
            )
            self.input_names = [i.name for i in self._session.get_inputs()]
        else:
            import openvino as ov

            compiled = ov.Core().compile_model(
                str(path),
                "CPU",
                {
                    "INFERENCE_NUM_THREADS": threads,
                    "PERFORMANCE_HINT": "LATENCY",
                    # fp32 math everywhere: on CPUs with bf16 units OpenVINO would default to bf16
                    "INFERENCE_PRECISION_HINT": "f32",
                },
            )
            self._compiled = compiled
            self._request = compiled.create_infer_request()
            self.input_names = [i.get_any_name() for i in compiled.inputs]

    def __call__(self, feeds: dict[str, np.ndarray]) -> np.ndarray:
        feeds = {k: v for k, v in feeds.items() if k in self.input_names}
        if self.backend == "onnx":
            return np.asarray(self._session.run(None, feeds)[0])
        result = self._request.infer(feeds)
        return np.array(result[self._compiled.output(0)], dtype=np.float32)


class OnnxEmbedder:
    """Embeds with the exported model on onnxruntime (``backend="onnx"``) or OpenVINO."""

    def __init__(self, config: SentenceTransformersModelConfig, model_cache: Path | None) -> None:
        if config.backend == "torch":
            raise ValueError("OnnxEmbedder runs the onnx and openvino backends")
        check_requirements(config.backend, config.precision)
        self.config = config
        self.torch = SentenceTransformerEmbedder(config)  # identity and texts as fed
        self.source, self.description = resolve_model(config.name)
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        if model_cache is None:  # --no-cache: export for this run only
            self._scratch = tempfile.TemporaryDirectory(prefix="evalret-model-")
            model_cache = Path(self._scratch.name)
        self.store = ModelStore(model_cache)
        self.threads = usable_cores()
        self.model_status = "not loaded"
        self.model_file: Path | None = None

    @property
    def warnings(self) -> list[str]:
        """What the model store could not write (the run went on with a temporary export)."""
        return self.store.warnings

    @cached_property
    def layout(self) -> ModelLayout:
        return read_layout(self.source, self.config.max_seq_length)

    def identity(self) -> dict[str, Any]:
        return {
            **self.torch.identity(),
            "backend": self.config.backend,
            "precision": self.config.precision,
        }

    def export_key(self) -> dict[str, Any]:
        """Everything that decides the exported file's contents."""
        key: dict[str, Any] = {
            "format": EXPORT_FORMAT,
            "weights_sha256": self.torch.identity()["weights_sha256"],
            "source": self.description if self.description.endswith("(packaged)") else self.source,
            "opset": OPSET,
            "exporter": "torch.onnx.export (TorchScript)",
            "attention": ATTENTION,
            "torch": _version("torch"),
            "transformers": _version("transformers"),
            "onnx": _version("onnx"),
            "precision": self.config.precision,
        }
        if self.config.precision == "int8":
            key["quantization"] = {**QUANTIZATION, "onnxruntime": _version("onnxruntime")}
        return key

    def cache_identity(self) -> dict[str, Any]:
        """identity() plus the export and the library versions that can move a vector."""
        runtime = "onnxruntime" if self.config.backend == "onnx" else "openvino"
        return {
            **self.identity(),
            "device": "cpu",
            "export": self.export_key(),
            "versions": {p: _version(p) for p in (runtime, "tokenizers")},
        }

    def fed(self, texts: Sequence[str], kind: Kind) -> list[str]:
        return self.torch.fed(texts, kind)

    def _export(self, target: Path) -> None:
        export_onnx(self.layout.transformer_dir, target)

    def _quantize(self, target: Path) -> None:
        """int8 from the cached fp32 export (exported first when missing)."""
        key = {**self.export_key(), "precision": "fp32"}
        key.pop("quantization")
        fp32, _ = self.store.get(key, self._export)
        quantize_int8(fp32, target)

    @cached_property
    def runner(self) -> _Runner:
        build = self._export if self.config.precision == "fp32" else self._quantize
        try:
            path, status = self.store.get(self.export_key(), build)
            runner = _Runner(self.config.backend, path, self.threads)
        except (ConfigError, ModelError):
            raise
        except Exception as e:
            raise ModelError(
                f"cannot prepare model {self.config.name!r} for the {self.config.backend} "
                f"backend: {e}"
            ) from e
        self.model_status, self.model_file = status, path
        return runner

    @cached_property
    def tokenizer(self) -> Any:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(self.layout.transformer_dir / "tokenizer.json"))
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=self.layout.max_seq_length)
        return tokenizer

    @cached_property
    def clipper(self) -> TextClipper:
        """Cuts each text to a prefix that tokenizes as the whole text up to max_seq_length
        (engines/clip.py): a huge document is never tokenized whole."""
        return TextClipper(self.tokenizer, self.layout.max_seq_length)

    def _clipped(self, texts: Sequence[str], kind: Kind) -> list[str]:
        """The texts as fed to the model (``fed``), each cut to a prefix that tokenizes alike."""
        return self.clipper.fed(texts, self.torch.prefix(kind))

    def embed(
        self, texts: Sequence[str], kind: Kind, progress: Progress | None = None
    ) -> np.ndarray:
        """Embed ``texts`` in batches of similar token length (little padding), in input order."""
        inputs = self._clipped(texts, kind)
        layout, runner = self.layout, self.runner
        encodings = self.tokenizer.encode_batch(inputs)
        order = np.argsort([-len(e.ids) for e in encodings], kind="stable")
        size = self.config.batch_size
        out: np.ndarray | None = None
        try:
            for start in range(0, len(inputs), size):
                rows = order[start : start + size]
                batch = [encodings[i] for i in rows]
                width = max(len(e.ids) for e in batch)
                ids = np.full((len(batch), width), layout.pad_id, dtype=np.int64)
                types = np.zeros((len(batch), width), dtype=np.int64)
                mask = np.zeros((len(batch), width), dtype=np.int64)
                for j, e in enumerate(batch):
                    n = len(e.ids)
                    ids[j, :n], types[j, :n], mask[j, :n] = e.ids, e.type_ids, 1
                hidden = runner({"input_ids": ids, "attention_mask": mask, "token_type_ids": types})
                vectors = pool(hidden, mask, layout.pooling)
                if out is None:
                    out = vector_matrix(len(inputs), vectors.shape[1])
                out[rows] = vectors
                if progress is not None:
                    progress(len(batch))
        except VectorMemoryError:
            raise
        except Exception as e:
            raise ModelError(f"embedding failed ({self.config.backend}): {e}") from e
        if out is None:
            out = np.zeros((0, 0), dtype=np.float32)
        with vectors_fit(*out.shape):
            if layout.normalize and len(out):
                out = _l2(out)
            return finish_vectors(out, self.config.truncate_dim, self.config.normalize)

    def report(self) -> dict[str, Any]:
        """What the run's report says about the backend."""
        return {
            "name": self.config.backend,
            "precision": self.config.precision,
            "threads": self.threads,
            "model": self.model_status,
            "model_file": str(self.model_file) if self.model_file else None,
        }


def agreement(vectors: np.ndarray, reference: np.ndarray) -> dict[str, float]:
    """Mean and minimum cosine between matching rows of two [n, d] arrays."""
    cos = (_l2(vectors) * _l2(reference)).sum(axis=1)
    return {"mean_cosine": float(cos.mean()), "min_cosine": float(cos.min())}


def describe_backend(config: ModelConfig, embedder: Embedder) -> dict[str, Any]:
    """The report's ``embedding.backend``: name and precision, and for onnx / openvino the
    threads and whether the exported model was read from the cache or exported in this run."""
    if isinstance(embedder, OnnxEmbedder):
        return embedder.report()
    if not isinstance(config, SentenceTransformersModelConfig):  # no backends to tell apart
        return {"name": config.provider, "precision": "fp32"}
    device = embedder.device if isinstance(embedder, SentenceTransformerEmbedder) else None
    return {
        "name": config.backend,
        "precision": config.precision,
        **({"device": device} if device is not None else {}),
    }
