"""``model``: the embedding model's settings, one member of the ``ModelConfig`` union per
provider (sentence-transformers, python, openai), told apart by ``provider``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Self

from pydantic import (
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from evalret.data.config.base import StrictModel
from evalret.data.config.endpoints import (
    MAX_API_NAME,
    MAX_RESPONSE_MB,
    MIB,
    OPENAI_URL,
    checked_base_url,
)
from evalret.data.unions import RegisteredUnion, members_by_tag

PACKAGED_MODEL = "all-MiniLM-L6-v2"
PATH_MAX = 4096  # characters of a path (Linux's PATH_MAX): a longer model name is no directory


class PromptsConfig(StrictModel):
    """Names of the sentence-transformers model's own prompts (``SentenceTransformer.prompts``),
    one per kind of text; an alternative to ``query_prefix`` / ``document_prefix``."""

    query: str | None = Field(None, min_length=1, description="the prompt name for queries")
    document: str | None = Field(None, min_length=1, description="the prompt name for documents")


RESERVED_REQUEST_FIELDS = ("model", "input", "dimensions", "encoding_format")


class RequestFieldsConfig(StrictModel):
    """Extra JSON fields sent with each embedding request, per kind of text (provider openai):
    e.g. Voyage's or Cohere's ``input_type``, Jina's ``task``, Voyage's ``output_dimension``."""

    query: dict[str, Any] = Field(default_factory=dict, description="fields sent with queries")
    document: dict[str, Any] = Field(default_factory=dict, description="fields sent with documents")

    @model_validator(mode="after")
    def _own_fields(self) -> RequestFieldsConfig:
        for kind in ("query", "document"):
            taken = sorted(set(getattr(self, kind)) & set(RESERVED_REQUEST_FIELDS))
            if taken:
                raise ValueError(
                    f"request_fields.{kind}: {', '.join(taken)} are set by evalret "
                    "(use name, dimensions or encoding_format)"
                )
        return self


DEFAULT_PROVIDER = "sentence-transformers"
_CALLABLE = r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$"  # "pkg.module:name"


_PRICE_FIELD = "price_per_million_tokens"  # the key of an API model's price (``price_key``)


class ModelConfigBase(StrictModel):
    """What every provider's settings hold: the model's name and how texts and vectors are
    treated around it. A provider is a subclass that narrows ``provider`` to its ``Literal``
    and adds the keys it reads (any other key is refused, naming the providers that read it),
    then joins the ``ModelConfig`` union; engines/embedders.py registers what embeds with it."""

    # the key whose value picks the embedder in engines/embedders.EMBEDDERS
    selector: ClassVar[str] = "provider"
    # keys dumped first, in this order (the order reports have always shown them in)
    dump_first: ClassVar[tuple[str, ...]] = ()
    # keys left out of the dump while null (reports from before they existed read the same)
    dump_unless_null: ClassVar[tuple[str, ...]] = ()
    # whether ``name`` may be a local directory (relative to the config file's folder)
    name_is_path: ClassVar[bool] = False

    provider: str = Field(description="what embeds the texts")
    name: str = Field(description="the model")
    normalize: bool = Field(True, description="L2-normalize the vectors (inner product = cosine)")
    query_prefix: str = Field("", description="text put before each query")
    document_prefix: str = Field("", description="text put before each document")
    truncate_dim: int | None = Field(
        None, ge=1, description="keep the first N dimensions, then normalize again; null: all"
    )

    @property
    def embedder_key(self) -> str:
        """The registry entry (engines/embedders.EMBEDDERS) that embeds with these settings."""
        key: str = getattr(self, self.selector)
        return key

    # the directory a python provider's module is looked for first (the config file's:
    # ``Config.code_dir``, set by ``Config.resolve_paths``); no key of the file
    _code_dir: Path | None = PrivateAttr(None)

    @property
    def code_dir(self) -> Path | None:
        """Where the module of ``callable`` (provider python) is looked for first: the config
        file's directory (``engines.plugins.import_callable``); None for settings made in
        code."""
        return self._code_dir

    def beside(self, code_dir: Path) -> Self:
        """A copy whose code is looked for first in ``code_dir``."""
        copy = self.model_copy()
        copy._code_dir = code_dir
        return copy

    @property
    def price(self) -> float | None:
        """What a million tokens cost (for the dry run's and the report's cost); None: no price
        (a local model, or an API without one)."""
        return None

    @property
    def price_key(self) -> str | None:
        """The config key that sets ``price`` (``model.price_per_million_tokens``) when these
        settings take one (an API's), else None: a local model has no price, and the key is
        refused there as any unknown key."""
        return f"model.{_PRICE_FIELD}" if _PRICE_FIELD in type(self).model_fields else None

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """The settings as a dict: ``dump_first`` first, ``dump_unless_null`` only when set,
        the default provider unnamed, so that reports of configs without these keys read as they
        did before the keys existed."""
        data: dict[str, Any] = handler(self)
        if self.provider == DEFAULT_PROVIDER:
            data.pop("provider", None)
        for key in self.dump_unless_null:
            if data.get(key) is None:
                data.pop(key, None)
        first = [k for k in self.dump_first if k in data]
        return {k: data[k] for k in [*first, *(k for k in data if k not in first)]}


class SentenceTransformersModelConfig(ModelConfigBase):
    """A local sentence-transformers model, run by torch, onnxruntime or OpenVINO."""

    selector: ClassVar[str] = "backend"
    dump_first: ClassVar[tuple[str, ...]] = (
        "name", "prompts", "batch_size", "normalize", "query_prefix", "document_prefix",
        "max_seq_length",
    )  # fmt: skip
    dump_unless_null: ClassVar[tuple[str, ...]] = ("prompts",)
    name_is_path: ClassVar[bool] = True

    provider: Literal["sentence-transformers"] = Field(
        "sentence-transformers",
        description="sentence-transformers (a local model), python (a custom encoder) or openai "
        "(an OpenAI-compatible /embeddings endpoint)",
    )
    name: str = Field(
        PACKAGED_MODEL,
        min_length=1,
        max_length=PATH_MAX,
        description="packaged MiniLM, a local directory, or a name",
    )
    prompts: PromptsConfig | None = Field(
        None, description="the model's own named prompts, instead of the prefixes"
    )
    batch_size: int = Field(32, ge=1, description="texts per forward pass")
    max_seq_length: int | None = Field(
        256, ge=1, description="tokens kept per text; null: the model's own limit"
    )
    device: str = Field(
        "cpu",
        pattern=r"^(cpu|cuda|cuda:\d+|mps|auto)$",
        description="cpu, cuda, cuda:N, mps, or auto (cuda if torch sees one, else mps, else cpu)",
    )
    backend: Literal["torch", "onnx", "openvino"] = Field(
        "torch", description="torch (sentence-transformers), onnx (onnxruntime) or openvino"
    )
    precision: Literal["fp32", "int8"] = Field(
        "fp32", description="int8: dynamically quantized weights (backend onnx only)"
    )

    @model_validator(mode="after")
    def _prompts_or_prefixes(self) -> SentenceTransformersModelConfig:
        if self.prompts is not None:
            if self.prompts.query is not None and self.query_prefix:
                raise ValueError("prompts.query and query_prefix: set one of them")
            if self.prompts.document is not None and self.document_prefix:
                raise ValueError("prompts.document and document_prefix: set one of them")
        return self

    @model_validator(mode="after")
    def _backend_settings(self) -> SentenceTransformersModelConfig:
        if self.precision == "int8" and self.backend != "onnx":
            raise ValueError(
                "precision int8 needs backend onnx (OpenVINO runs onnxruntime's int8 graph "
                "slower than its own fp32; see benchmarks/RESULTS.md)"
            )
        if self.backend != "torch" and self.device != "cpu":
            raise ValueError(f"backend {self.backend} runs on the CPU: set device: cpu")
        return self


class PythonModelConfig(ModelConfigBase):
    """A custom encoder: a Python factory evalret calls (engines/custom.py)."""

    dump_first: ClassVar[tuple[str, ...]] = (
        "provider",
        "name",
        "callable",
        "options",
        "batch_size",
    )
    dump_unless_null: ClassVar[tuple[str, ...]] = ("options",)

    provider: Literal["python"] = Field(description="python: a custom encoder")
    name: str = Field("", description="a label (default: the callable)")
    callable: str = Field(
        pattern=_CALLABLE, description='"pkg.module:factory", called once with **options'
    )
    options: dict[str, Any] | None = Field(None, description="keyword arguments of the callable")
    batch_size: int = Field(32, ge=1, description="texts per call of the encoder")

    @model_validator(mode="before")
    @classmethod
    def _callable_names(cls, data: Any) -> Any:
        """Without a name, the callable is the label."""
        if isinstance(data, dict) and "name" not in data and isinstance(data.get("callable"), str):
            return {**data, "name": data["callable"]}
        return data


ANSWER_DIMENSIONS = 4096  # an embedding answer's dimension assumed when ``dimensions`` is unset
# the most bytes a float written as JSON takes, its separator included ("-1.2345678901234567e-05,
# "), and those of one vector's item around its numbers
JSON_NUMBER_BYTES = 26
JSON_ITEM_BYTES = 64


class OpenAIModelConfig(ModelConfigBase):
    """An OpenAI-compatible /embeddings endpoint (engines/openai_api.py)."""

    dump_unless_null: ClassVar[tuple[str, ...]] = ("request_fields", "max_response_mb")

    provider: Literal["openai"] = Field(description="openai: an OpenAI-compatible endpoint")
    name: str = Field(
        min_length=1, max_length=MAX_API_NAME, description="the model id the endpoint serves"
    )
    base_url: str = Field(
        OPENAI_URL,
        pattern=r"^https?://[^\s]+$",
        description="the API's base URL (its /embeddings is called)",
    )
    api_key_env: str | None = Field(
        "OPENAI_API_KEY",
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
        description="the environment variable holding the key (null: no key, for a local server)",
    )
    dimensions: int | None = Field(
        None, ge=1, description="sent as dimensions (Matryoshka-capable APIs)"
    )
    request_fields: RequestFieldsConfig | None = Field(
        None, description="extra request fields per kind (input_type, task)"
    )
    max_batch: int = Field(256, ge=1, le=4096, description="texts per request")
    max_batch_tokens: int = Field(
        200_000, ge=1, description="estimated tokens per request, at most"
    )
    concurrency: int = Field(4, ge=1, le=64, description="requests in flight")
    max_retries: int = Field(6, ge=0, le=20, description="retries of a 429, 5xx or timeout")
    timeout: float = Field(60.0, gt=0, le=3600, description="seconds a request may take")
    encoding_format: Literal["base64", "float"] = Field(
        "base64", description="how vectors are requested (float if unsupported)"
    )
    price_per_million_tokens: float | None = Field(
        None, ge=0, description="the price, for the cost in --dry-run and reports"
    )
    max_response_mb: int | None = Field(
        None,
        ge=1,
        le=16384,
        description="MiB an answer may hold, as sent and decoded (gzip, deflate); null: 64, or "
        "what max_batch vectors of dimensions (4096 when unset) take as JSON numbers if more",
    )

    @property
    def price(self) -> float | None:
        return self.price_per_million_tokens

    @property
    def response_limit(self) -> int:
        """The most bytes an answer may hold: ``max_response_mb``, or enough for the largest
        answer ``max_batch`` allows (its vectors as JSON numbers), 64 MiB at least."""
        if self.max_response_mb is not None:
            return self.max_response_mb * MIB
        dims = self.dimensions or ANSWER_DIMENSIONS
        largest = self.max_batch * (dims * JSON_NUMBER_BYTES + JSON_ITEM_BYTES)
        return max(MAX_RESPONSE_MB * MIB, largest)

    @field_validator("base_url")
    @classmethod
    def _no_credentials(cls, value: str) -> str:
        return checked_base_url(value)


# The model settings, told apart by ``provider`` (absent: sentence-transformers). A new provider
# is one more member here (or, from outside evalret, engines.embedders.register_provider)
_MODEL_MEMBERS = SentenceTransformersModelConfig | PythonModelConfig | OpenAIModelConfig
MODEL_CONFIGS: dict[str, type[ModelConfigBase]] = members_by_tag(_MODEL_MEMBERS, "provider")
ModelConfig = Annotated[
    _MODEL_MEMBERS, RegisteredUnion(MODEL_CONFIGS, "provider", DEFAULT_PROVIDER)
]
