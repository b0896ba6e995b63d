"""The YAML config, validated by pydantic: every field has a default, unknown keys are rejected.

Relative paths in a config file are resolved against the directory of that file; with no file,
against the current directory.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, get_args
from urllib.parse import urlsplit

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    Strict,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from evalret.core import gate
from evalret.core.gate import UnjudgedPolicy
from evalret.core.metrics import (
    MAX_CUTOFF,
    MAX_GRADE,
    Metric,
    cutoffs,
    parse_metrics,
    search_depth,
)
from evalret.core.relevance import DEFAULT_RELEVANCE_LEVEL
from evalret.core.slices import CustomSlice, Slice, build_slices
from evalret.core.stats import Correction, PairedTest
from evalret.data import yamltext
from evalret.data.faiss_demand import factory_problem
from evalret.data.textfile import read_text
from evalret.data.unions import RegisteredUnion, members_by_tag
from evalret.errors import ConfigError, MetricError, Problem

DEFAULT_METRICS = [
    "ndcg@10",
    "mrr@10",
    "recall@10",
    "recall@100",
    "precision@10",
    "map@100",
    "hit_rate@10",
]
PACKAGED_MODEL = "all-MiniLM-L6-v2"
PATH_MAX = 4096  # characters of a path (Linux's PATH_MAX): a longer model name is no directory


def _usable_path(path: Path) -> Path:
    """``path`` if the operating system can take it: no NUL, nothing the file system cannot
    encode (a lone surrogate from a YAML escape)."""
    try:
        os.fsencode(path)
    except UnicodeEncodeError:
        raise ValueError("not a usable path: characters the file system cannot encode") from None
    if "\x00" in str(path):
        raise ValueError("not a usable path: a NUL character")
    return path


# a path is written as a YAML string: the one field type the strict models take from a str
UsablePath = Annotated[Path, Strict(False), AfterValidator(_usable_path)]


# how queries without a relevant document count: left out of the means, or scored (trec_eval)
WithoutRelevant = Literal["exclude", "zero"]
Labels = Literal["all", "human"]  # gate.labels


# strict: no value is converted to another type (``queries: true`` is no 1, ``'10'`` no 10,
# ``"0.5"`` no float, 1 no boolean); an integer is still a float. No NaN or infinity anywhere: a
# NaN floor passes every check (nothing is below NaN)
_MODEL_CONFIG = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, strict=True)


class _Strict(BaseModel):
    model_config = _MODEL_CONFIG


GoldenFormatName = Literal["auto", "native", "beir", "trec"]
GOLDEN_FORMATS: tuple[str, ...] = get_args(GoldenFormatName)


class GoldenSetConfig(_Strict):
    """Where the golden set is and how to read it."""

    path: UsablePath = Field(Path("golden_sets/demo"), description="directory (or TREC qrels file)")
    format: GoldenFormatName = Field(
        "auto", description="auto (told from the files), native, beir or trec"
    )
    split: str = Field("test", description="BEIR qrels split: qrels/<split>.tsv")
    queries: UsablePath | None = Field(None, description="TREC format: the queries file")
    corpus: UsablePath | None = Field(None, description="TREC format: the corpus file")
    qrels: UsablePath | None = Field(None, description="TREC format: the qrels file")
    # evalret score: a TREC qrels file alone (no queries or corpus beside it) is a golden set of
    # its judged documents and queries without text; left out of the dump (reports unchanged)
    qrels_only: bool = Field(False, exclude=True, description="TREC: the qrels file alone")


class PromptsConfig(_Strict):
    """Names of the sentence-transformers model's own prompts (``SentenceTransformer.prompts``),
    one per kind of text; an alternative to ``query_prefix`` / ``document_prefix``."""

    query: str | None = Field(None, min_length=1, description="the prompt name for queries")
    document: str | None = Field(None, min_length=1, description="the prompt name for documents")


RESERVED_REQUEST_FIELDS = ("model", "input", "dimensions", "encoding_format")


class RequestFieldsConfig(_Strict):
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


OPENAI_URL = "https://api.openai.com/v1"
DEFAULT_PROVIDER = "sentence-transformers"
_CALLABLE = r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$"  # "pkg.module:name"


class ModelConfigBase(_Strict):
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

    @property
    def price(self) -> float | None:
        """What a million tokens cost (for the dry run's and the report's cost); None: no price
        (a local model, or an API without one)."""
        return None

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


def _is_local(base: Path, name: str) -> bool:
    """Whether the relative ``name`` is a path under ``base`` (a name too long to be a path,
    or one the system refuses, is none)."""
    try:
        return not Path(name).is_absolute() and (base / name).exists()
    except (OSError, ValueError):
        return False


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


def checked_base_url(value: str) -> str:
    """An API's ``base_url`` (the embedding provider's and the judge's), refused (never masked)
    with user info, a query string or a fragment: a secret in the URL would travel into every
    report, fingerprint and message that names the endpoint (the message does not repeat it);
    and refused with a port that is no port."""
    parts = urlsplit(value)
    if "@" in parts.netloc:
        raise ValueError("user info (user:password@) is refused: put the key in api_key_env")
    if parts.query or parts.fragment or value.rstrip().endswith(("?", "#")):
        raise ValueError(
            "a query string or fragment is refused (it may hold a credential, and the "
            "request path is appended after it): put the key in api_key_env"
        )
    problem = url_port_problem(value)
    if problem:
        raise ValueError(problem)
    if not parts.hostname:
        raise ValueError("no host: write it as scheme://host[:port]/path")
    return value


# an answer's body, as sent and decoded (engines/http_policy.py), unless max_response_mb says:
# far more than a judge's or a reranker's answer, and more than an embedding answer of 256 texts
# of 4,096 dimensions as JSON numbers (about 27 MB)
MAX_RESPONSE_MB = 64
MIB = 1024 * 1024
ANSWER_DIMENSIONS = 4096  # an embedding answer's dimension assumed when ``dimensions`` is unset
# the most bytes a float written as JSON takes, its separator included ("-1.2345678901234567e-05,
# "), and those of one vector's item around its numbers
JSON_NUMBER_BYTES = 26
JSON_ITEM_BYTES = 64
MAX_API_NAME = 256  # characters of a model name an API is sent (ids, deployments, ARNs)


def _max_response_mb(default: int | None, reads: str) -> Any:
    """The ``max_response_mb`` field of an HTTP section (``reads``: what it bounds)."""
    return Field(
        default,
        ge=1,
        le=16384,
        description=f"MiB an answer of {reads} may hold, as sent and decoded (gzip, deflate)",
    )


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


C_INT_MAX = 2**31 - 1  # faiss takes its graph, search and clustering settings as C ints
MAX_EF = 1 << 24  # efSearch / efConstruction: faiss allocates a candidate list this long
MAX_THREADS = 1024  # faiss's OpenMP starts this many threads (100,000 crash it)
MAX_HNSW_M = 4096  # faiss keeps 2 x m neighbours of every document
MAX_FACTORY = 1000  # characters of a factory string (faiss's std::regex parser crashes on 30,000)


class ExactIndexConfig(_Strict):
    """Brute-force inner-product search over every document vector (faiss IndexFlatIP)."""

    enabled: bool = Field(True, description="search with it")


class HnswIndexConfig(_Strict):
    """An approximate HNSW graph over the document vectors (faiss IndexHNSWFlat, inner product),
    checked against the exact index."""

    enabled: bool = Field(True, description="search with it")
    m: int = Field(32, ge=2, le=MAX_HNSW_M, description="neighbours per node of the graph")
    ef_construction: int = Field(
        200, ge=1, le=MAX_EF, description="candidate list size while building"
    )
    ef_search: int = Field(128, ge=1, le=MAX_EF, description="candidate list size while searching")
    threads: int | None = Field(
        None,
        ge=1,
        le=MAX_THREADS,
        description="threads building the graph: null = all cores; 1 = deterministic "
        "(the same graph every build, what a gate on hnsw metrics wants)",
    )


class Bm25IndexConfig(_Strict):
    """The lexical reference (bm25s): documents as title + " " + text, queries as text."""

    enabled: bool = Field(True, description="search with it")
    k1: float = Field(1.5, ge=0, description="term-frequency saturation")
    b: float = Field(0.75, ge=0, le=1, description="document-length normalization")
    method: Literal["lucene", "robertson", "atire", "bm25l", "bm25+"] = Field(
        "lucene", description="the BM25 variant bm25s computes"
    )
    stemmer: str | None = Field("english", description="a Snowball language, or null")
    stopwords: str | None = Field("en", description="a bm25s stop-word list, or null")


class HybridIndexConfig(_Strict):
    """Reciprocal rank fusion of BM25 and a dense index: sum of 1 / (rrf_k + rank)."""

    enabled: bool = Field(True, description="search with it (needs bm25 and its dense index)")
    dense: Literal["exact", "hnsw"] = Field("exact", description="the dense index fused with BM25")
    rrf_k: float = Field(60, gt=0, description="the constant k of 1 / (k + rank)")
    candidates: int = Field(100, ge=1, description="results taken from each ranking")


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _sql_name(v: str) -> str:
    """A Postgres identifier as given (quoted later with psycopg.sql): 1 to 63 bytes, no NUL."""
    if not v or len(v.encode()) > 63 or "\x00" in v:
        raise ValueError("a Postgres name: 1 to 63 bytes, no NUL character")
    return v


def _table_name(v: str) -> str:
    """``table`` or ``schema.table``, each part a Postgres name."""
    parts = v.split(".")
    if len(parts) > 2:
        raise ValueError("a table name: NAME or SCHEMA.NAME")
    for part in parts:
        _sql_name(part)
    return v


SqlName = Annotated[str, AfterValidator(_sql_name)]

_PORT_TEXT = re.compile(r"\s*\+?\d+\s*")  # what libpq's parse_int_param reads as a number


OUT_OF_RANGE = "the port is out of range (1..65535)"


def port_problem(port: str) -> str | None:
    """Why ``port`` (a URL's or a DSN's, as text) is no TCP port 1..65535, without quoting it;
    None when it is one."""
    if not _PORT_TEXT.fullmatch(port):
        return "the port is not a number"
    if not 1 <= int(port) <= 65535:
        return OUT_OF_RANGE
    return None


def url_port_problem(url: str) -> str | None:
    """Why the port of ``url`` (``scheme://host:port/...``) is no TCP port; None when it is one
    or the URL has none."""
    try:
        port = urlsplit(url).port
    except ValueError as e:  # not a number, or above 65535
        return OUT_OF_RANGE if "out of range" in str(e) else "the port is not a number"
    return OUT_OF_RANGE if port == 0 else None


def dsn_problem(dsn: str) -> str | None:
    """Why libpq would refuse the connection string ``dsn`` before connecting (it does not parse,
    a port is no number or out of range, the ports do not match the hosts); None when it would
    try to connect. The reason never quotes the DSN (it may hold a password). Without psycopg
    installed nothing is checked here: the index then refuses to run, naming the extra."""
    try:
        import psycopg
        from psycopg.conninfo import conninfo_to_dict
    except ImportError:
        return None
    try:
        params = conninfo_to_dict(dsn)
    except psycopg.Error:
        return "libpq cannot parse it"
    ports = str(params.get("port") or "").split(",")
    for port in ports:
        problem = port_problem(port) if port.strip() else None
        if problem:
            return problem
    hosts = str(params.get("host") or params.get("hostaddr") or "").split(",")
    if len(ports) > 1 and len(ports) != len(hosts):
        return f"{len(ports)} ports for {len(hosts)} hosts"
    return None


INDEX_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")  # also a run file's name part


class AtKey(ValueError):
    """A validation problem of a whole model that belongs to one key below it: ``loc`` is that
    key's path from the model (parse_config reports the line of that key)."""

    def __init__(self, message: str, loc: tuple[int | str, ...]) -> None:
        super().__init__(message)
        self.loc = loc


class TypedIndexBase(_Strict):
    """What every typed index (``indexes.<name>: {type: ...}``) has: ``type`` and ``enabled``."""

    enabled: bool = Field(True, description="search with it")
    # an approximate nearest-neighbour search over the model's vectors: measured against exact
    # search, gated by default and held to gate.ann_min_recall (a plug-in's type declares it too)
    approximate: ClassVar[bool] = False

    def resolve_paths(self, base: Path) -> TypedIndexBase:
        """A copy whose relative paths are made absolute against ``base`` (none by default)."""
        return self


class RunIndexConfig(TypedIndexBase):
    """A ranking read from a run file (TREC ``qid Q0 docno rank score tag``, or JSONL)."""

    type: Literal["run"] = Field(description="run: rankings read from a run file")
    path: UsablePath = Field(description="the run file (TREC or JSONL, gzipped or not)")
    format: Literal["trec", "jsonl"] | None = Field(
        None,
        description="default: jsonl for a .jsonl or .json file (gzipped or not), else trec; "
        "a file that starts as gzip does is read through gzip",
    )

    @property
    def file_format(self) -> Literal["trec", "jsonl"]:
        """The format given, else the one the file's suffix says (before a ``.gz``)."""
        if self.format is not None:
            return self.format
        suffixes = [s.lower() for s in self.path.suffixes]
        if suffixes[-1:] == [".gz"]:
            suffixes.pop()
        return "jsonl" if suffixes[-1:] in ([".jsonl"], [".json"]) else "trec"

    def resolve_paths(self, base: Path) -> RunIndexConfig:
        """A copy whose relative ``path`` is made absolute against ``base``."""
        if self.path.is_absolute():
            return self
        return self.model_copy(update={"path": (base / self.path).resolve()})


class PythonIndexConfig(TypedIndexBase):
    """A ranking returned by a Python function (engines.retrievers.python documents the call)."""

    type: Literal["python"] = Field(description="python: rankings returned by a function")
    callable: str = Field(
        pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$", description='"pkg.module:function"'
    )


class PgvectorIndexConfig(TypedIndexBase):
    """An HNSW index in Postgres with pgvector (engines/retrievers/pgvector.py).

    Scratch mode (``table: null``): evalret's document vectors are loaded into a scratch table,
    indexed with these settings, searched, and dropped. Table mode: an existing table is queried
    read-only with the config's query vectors. The DSN is read from the environment variable
    ``dsn_env`` when the index runs, and is never written anywhere."""

    type: Literal["pgvector"] = Field(description="pgvector: HNSW search in Postgres")
    approximate: ClassVar[bool] = True
    dsn_env: str = Field(description="name of the environment variable holding the DSN")
    # pgvector's own bounds (hnsw.c): m 2..100, ef_construction 4..1000, ef_search 1..1000
    m: int = Field(16, ge=2, le=100, description="neighbours per node of the HNSW graph")
    ef_construction: int = Field(
        64, ge=4, le=1000, description="candidate list size while building (>= 2 m)"
    )
    ef_search: int = Field(
        40, ge=1, le=1000, description="hnsw.ef_search: candidate list size while searching"
    )
    metric: Literal["inner_product", "cosine"] = Field(
        "inner_product", description="<#> (vector_ip_ops) or <=> (vector_cosine_ops)"
    )
    table: str | None = Field(None, description="an existing table (read-only); null: scratch")
    id_column: SqlName = Field("id", description="table mode: the column of document ids")
    vector_column: SqlName = Field("embedding", description="table mode: the vector column")
    metadata_column: SqlName = Field(
        "metadata", description="table mode: the jsonb column that filtered queries read"
    )

    @field_validator("dsn_env")
    @classmethod
    def _env_name(cls, v: str) -> str:
        if not _ENV_NAME.fullmatch(v):
            raise ValueError("the name of an environment variable (letters, digits, _), not a DSN")
        return v

    @field_validator("table")
    @classmethod
    def _table(cls, v: str | None) -> str | None:
        return None if v is None else _table_name(v)

    @model_validator(mode="after")
    def _graph_settings(self) -> PgvectorIndexConfig:
        if self.ef_construction < 2 * self.m:
            raise ValueError("ef_construction must be at least 2 * m (pgvector refuses less)")
        return self

    @model_validator(mode="after")
    def _usable_dsn(self) -> PgvectorIndexConfig:
        """The DSN in ``dsn_env``, when set, is one libpq takes (checked when the config is
        loaded, not after the embedding); an unset variable is refused when the index runs."""
        dsn = os.environ.get(self.dsn_env, "")
        problem = dsn_problem(dsn) if self.enabled and dsn.strip() else None
        if problem:
            raise AtKey(
                f"the environment variable {self.dsn_env} holds no usable connection string "
                f"(not shown): {problem}",
                ("dsn_env",),
            )
        return self


class CrossEncoderRerankerConfig(_Strict):
    """A local sentence-transformers CrossEncoder directory, loaded offline (never fetched)."""

    provider: Literal["cross-encoder"] = Field(description="cross-encoder: a local model")
    path: UsablePath = Field(description="a local directory holding a CrossEncoder")
    batch_size: int = Field(32, ge=1, le=4096, description="(query, document) pairs per batch")
    max_length: int | None = Field(None, ge=1, description="tokens per pair; default: the model's")
    device: str = Field(
        "cpu",
        pattern=r"^(cpu|cuda|cuda:\d+|mps|auto)$",
        description="where it scores, as model.device: cpu, cuda, cuda:N, mps, or auto",
    )


class PythonRerankerConfig(_Strict):
    """``fn(query: str, documents: list[str]) -> one score per document``, called per query."""

    provider: Literal["python"] = Field(description="python: a function evalret calls")
    callable: str = Field(
        pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$", description='"pkg.module:function"'
    )


class HttpRerankerConfig(_Strict):
    """``POST {base_url}/rerank`` as Cohere, Jina, Voyage and infinity answer it."""

    provider: Literal["http"] = Field(description="http: a /rerank endpoint")
    base_url: str = Field(pattern=r"^https?://[^\s]+$", description="its /rerank is called")
    model: str = Field(
        min_length=1, max_length=MAX_API_NAME, description="the reranker model the endpoint serves"
    )
    api_key_env: str | None = Field(
        None,
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
        description="the environment variable holding the key (null: no key, a local server)",
    )
    concurrency: int = Field(4, ge=1, le=64, description="requests in flight")
    max_retries: int = Field(6, ge=0, le=20, description="retries of a 429, 5xx or timeout")
    timeout: float = Field(60.0, gt=0, le=3600, description="seconds a request may take")
    max_response_mb: int = _max_response_mb(MAX_RESPONSE_MB, "the endpoint (one query's scores)")

    @property
    def response_limit(self) -> int:
        """The most bytes an answer may hold."""
        return self.max_response_mb * MIB

    @field_validator("base_url")
    @classmethod
    def _safe_base_url(cls, value: str) -> str:
        return checked_base_url(value)


RerankerConfig = Annotated[
    CrossEncoderRerankerConfig | PythonRerankerConfig | HttpRerankerConfig,
    Field(discriminator="provider"),
]
# the reranker's providers: an error's loc carries one after ``reranker`` (no key of the file)
RERANKER_PROVIDERS = frozenset(
    get_args(member.model_fields["provider"].annotation)[0]
    for member in (CrossEncoderRerankerConfig, PythonRerankerConfig, HttpRerankerConfig)
)


class RerankIndexConfig(TypedIndexBase):
    """The first ``k`` documents of index ``of`` reordered by a reranker
    (engines/retrievers/rerank.py); ``of`` runs first."""

    type: Literal["rerank"] = Field(description="rerank: a first stage reordered by a reranker")
    of: str = Field(description="the first stage: another index of this config")
    k: int = Field(100, ge=1, le=MAX_CUTOFF, description="candidates reranked per query")
    reranker: RerankerConfig = Field(description="what scores the candidates, by provider")

    def resolve_paths(self, base: Path) -> RerankIndexConfig:
        """A copy whose relative cross-encoder ``path`` is made absolute against ``base``."""
        r = self.reranker
        if not isinstance(r, CrossEncoderRerankerConfig) or r.path.is_absolute():
            return self
        return self.model_copy(
            update={"reranker": r.model_copy(update={"path": (base / r.path).resolve()})}
        )


def rerank_problem(name: str, indexes: dict[str, Any], enabled: set[str]) -> AtKey | None:
    """Why the rerank index ``name`` cannot run after its first stage: an unknown or disabled
    ``of``, or a chain of ``of`` that comes back to it (a cycle); None when it can."""
    seen, at = [name], indexes[name]
    while isinstance(at, RerankIndexConfig):
        if at.of not in indexes:
            if at is indexes[name]:
                known = ", ".join(sorted(indexes))
                return AtKey(f"unknown index {at.of!r}: one of {known}", (name, "of"))
            return None  # another index's error
        if at.of in seen:
            chain = " -> ".join([*seen[seen.index(at.of) :], at.of])
            return AtKey(f"the first stages form a cycle: {chain}", (name, "of"))
        seen.append(at.of)
        at = indexes[at.of]
    if indexes[name].enabled and seen[1] not in enabled:
        return AtKey(f"the first stage {seen[1]!r} is disabled: enable it", (name, "of"))
    return None


def faiss_error(e: Exception) -> str:
    """The reason in a faiss exception, without its C++ location."""
    text = str(e).strip()
    found = re.search(r"\.(?:cpp|h):\d+: (.*)", text, re.S)
    return " ".join((found.group(1) if found else text).split())


# (factory, params) -> None, or (the key below the index, why faiss refuses it): set by
# engines.faiss_factory, as the data layer does not import faiss. Where the engines are loaded
# (every command that searches) a bad factory string or parameter is refused when the config is
# read; elsewhere when the index is built, naming the same key.
FaissCheck = Callable[[str, dict[str, int | float]], tuple[tuple[str, ...], str] | None]
FAISS_CHECKS: list[FaissCheck] = []

# faiss.ParameterSpace's search parameters (faiss/AutoTune.cpp), each set as a C int: the least
# and the most a search takes ("quantizer_<name>" sets <name> on an IVF's quantizer)
FAISS_PARAM_RANGES: dict[str, tuple[int, int]] = {
    "nprobe": (1, C_INT_MAX),
    "efSearch": (1, MAX_EF),
    "efConstruction": (1, MAX_EF),
    "k_factor_rf": (1, C_INT_MAX),
    "ht": (0, C_INT_MAX),
    "max_codes": (0, C_INT_MAX),
}


def faiss_param_problem(name: str, value: float) -> str | None:
    """Why faiss cannot search with ``name: value``, None when it can (or when faiss alone knows
    the name: check_factory asks it)."""
    base = name
    while base.startswith("quantizer_"):
        base = base.removeprefix("quantizer_")
    if base == "verbose":
        return "verbose is not a search parameter: faiss would print its progress on stdout"
    if base == "k_factor":  # IndexIVFPQR's, a float
        return None if value > 0 else f"k_factor must be greater than 0, not {value!r}"
    if base not in FAISS_PARAM_RANGES:
        return None
    least, most = FAISS_PARAM_RANGES[base]
    if value != int(value) or not least <= value <= most:
        why = "a candidate list this long" if most == MAX_EF else "a C int"
        return (
            f"{name} must be a whole number from {least} to {most:,} (faiss takes {why}), "
            f"not {value!r}"
        )
    return None


class FaissIndexConfig(TypedIndexBase):
    """Any faiss index-factory string over the document vectors (inner product), trained on a
    seeded sample of them and searched with ``params`` (engines/faiss_factory.py)."""

    type: Literal["faiss"] = Field(description="faiss: any faiss index-factory string")
    approximate: ClassVar[bool] = True
    factory: str = Field(
        min_length=1,
        max_length=MAX_FACTORY,
        description='a faiss index_factory string: "IVF256,PQ32"',
    )
    params: dict[str, int | float] = Field(
        default_factory=dict,
        description="search parameters set with faiss.ParameterSpace: {nprobe: 16, efSearch: 64}",
    )
    train_size: int | None = Field(
        None, ge=1, description="documents sampled to train the index (null: all)"
    )
    seed: int = Field(
        0, ge=0, le=C_INT_MAX, description="seed of the training sample and faiss's clustering"
    )
    threads: int | None = Field(
        1,
        ge=1,
        le=MAX_THREADS,
        description="threads building it: 1 = the same index every build; null = all",
    )

    @model_validator(mode="after")
    def _faiss_builds_it(self) -> FaissIndexConfig:
        too_big = factory_problem(self.factory)  # before faiss allocates anything
        if too_big is not None:
            raise AtKey(too_big, ("factory",))
        for name, value in self.params.items():
            if (why := faiss_param_problem(name, value)) is not None:
                raise AtKey(why, ("params", name))
        for check in FAISS_CHECKS:
            problem = check(self.factory, self.params)
            if problem is not None:
                raise AtKey(problem[1], problem[0])
        return self


class QuantizedIndexConfig(TypedIndexBase):
    """The document and query vectors quantized as sentence-transformers' quantize_embeddings
    does, searched over the codes, optionally rescored with the float vectors
    (engines/quantize.py)."""

    type: Literal["quantized"] = Field(description="quantized: search over quantized vectors")
    approximate: ClassVar[bool] = True
    precision: Literal["float32", "int8", "uint8", "binary", "ubinary"] = Field(
        description="int8 / uint8: ranges calibrated on the documents; binary / ubinary: sign "
        "bits, searched by Hamming distance"
    )
    rescore: int | None = Field(
        None, ge=1, description="rescore the top rescore x depth with the float vectors"
    )


# the typed indexes, told apart by ``type``: a new kind is one more member here (or, from outside
# evalret, engines.retrievers.register_retriever_type)
_INDEX_MEMBERS = (
    RunIndexConfig
    | PythonIndexConfig
    | PgvectorIndexConfig
    | RerankIndexConfig
    | FaissIndexConfig
    | QuantizedIndexConfig
)
INDEX_CONFIGS: dict[str, type[TypedIndexBase]] = members_by_tag(_INDEX_MEMBERS, "type")
TypedIndexConfig = Annotated[_INDEX_MEMBERS, RegisteredUnion(INDEX_CONFIGS, "type", None)]


class IndexesConfig(_Strict):
    """The built-in indexes by their fixed keys, and any number of typed indexes by name."""

    # extra keys are typed indexes (validated as TypedIndexConfig); a config without them
    # dumps exactly as before
    model_config = ConfigDict(**{**_MODEL_CONFIG, "extra": "allow"})
    __pydantic_extra__: dict[str, TypedIndexConfig] = Field(init=False)

    exact: ExactIndexConfig = Field(ExactIndexConfig(), description="exact inner-product search")
    hnsw: HnswIndexConfig = Field(HnswIndexConfig(), description="the approximate HNSW index")
    bm25: Bm25IndexConfig = Field(Bm25IndexConfig(), description="the lexical reference")
    hybrid: HybridIndexConfig = Field(
        HybridIndexConfig(), description="BM25 fused with a dense index"
    )

    @property
    def typed(self) -> dict[str, TypedIndexConfig]:
        """The typed indexes by name, in the config's order."""
        return dict(self.__pydantic_extra__ or {})

    def enabled_names(self) -> list[str]:
        """Every enabled index, built-in ones first."""
        builtin = [n for n in BUILTIN_INDEXES if getattr(self, n).enabled]
        return builtin + [n for n, t in self.typed.items() if t.enabled]

    def kind(self, name: str) -> str:
        """What index ``name`` is: a built-in index's name, a typed index's ``type``."""
        typed = self.typed.get(name)
        return typed.type if typed is not None else name

    def approximate_names(self) -> list[str]:
        """Every enabled approximate index (measured against exact search): hnsw, and each typed
        index whose type declares itself approximate (faiss, quantized, pgvector)."""
        typed = self.typed
        return [
            n for n in self.enabled_names() if n == "hnsw" or (n in typed and typed[n].approximate)
        ]

    def resolve_paths(self, base: Path) -> IndexesConfig:
        """A copy whose typed indexes' relative paths are made absolute against ``base``."""
        if not self.typed:
            return self
        resolved = {name: t.resolve_paths(base) for name, t in self.typed.items()}
        return IndexesConfig.model_validate(
            {
                **self.model_dump(exclude=set(resolved)),
                **{n: t.model_dump() for n, t in resolved.items()},
            }
        )

    @model_validator(mode="before")
    @classmethod
    def _builtin_names_untyped(cls, data: Any) -> Any:
        for name in BUILTIN_INDEXES:
            value = data.get(name) if isinstance(data, dict) else None
            if isinstance(value, dict) and "type" in value:
                raise AtKey(
                    f"{name!r} is a built-in index: give a typed index another name", (name,)
                )
        return data

    @model_validator(mode="after")
    def _one_enabled(self) -> IndexesConfig:
        for name in self.typed:
            if not INDEX_NAME.fullmatch(name):
                raise AtKey(
                    f"index name {name!r}: letters, digits, '_', '.' and '-', starting with a "
                    "letter or digit, at most 64 characters",
                    (name,),
                )
        self._rerank_stages()
        typed = any(t.enabled for t in self.typed.values())
        if not (self.exact.enabled or self.hnsw.enabled or typed):
            raise ValueError(
                "at least one dense index (exact or hnsw) or typed index must be enabled"
            )
        if self.hybrid.enabled and not self.bm25.enabled:
            raise ValueError("hybrid fuses BM25 with a dense index: enable bm25 or disable hybrid")
        if self.hybrid.enabled and not getattr(self, self.hybrid.dense).enabled:
            raise ValueError(
                f"hybrid.dense is {self.hybrid.dense!r}, which is disabled: enable it or "
                "choose the other dense index"
            )
        return self

    def _rerank_stages(self) -> None:
        """Every rerank index's first stage exists, is enabled, and leads to no cycle."""
        indexes: dict[str, Any] = {n: getattr(self, n) for n in IndexesConfig.model_fields}
        indexes.update(self.typed)
        enabled = {n for n, t in indexes.items() if t.enabled}
        for name, t in self.typed.items():
            problem = rerank_problem(name, indexes, enabled) if t.type == "rerank" else None
            if problem is not None:
                raise problem


# the built-in indexes: the fixed keys of ``indexes`` (each one a retriever of
# engines/retrievers.RETRIEVERS by the same name)
BUILTIN_INDEXES: tuple[str, ...] = tuple(IndexesConfig.model_fields)


class SliceDefinition(_Strict):
    """A slice declared in the config: queries matching every given criterion."""

    name: str = Field(min_length=1, description="the slice's name in reports and gates")
    tag: str | None = Field(None, description="queries carrying this tag")
    query_ids: list[str] | None = Field(None, description="queries with these ids")
    pattern: str | None = Field(None, description="regular expression searched in the query text")

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                re.compile(v)
            except re.error as e:
                raise ValueError(f"invalid regular expression: {e}") from None
        return v

    @model_validator(mode="after")
    def _has_criterion(self) -> SliceDefinition:
        if self.tag is None and self.query_ids is None and self.pattern is None:
            raise ValueError("a slice needs at least one of: tag, query_ids, pattern")
        return self

    def to_core(self) -> CustomSlice:
        """The plain slice definition the core builds slices from (its ids a tuple)."""
        ids = None if self.query_ids is None else tuple(self.query_ids)
        return CustomSlice(**self.model_dump(exclude={"query_ids"}), query_ids=ids)


class SlicesConfig(_Strict):
    """The slices metrics are reported and gated for, beside ``all``."""

    tags: bool = Field(True, description="one slice per tag found in the golden set")
    frequency: bool = Field(True, description="head/torso/tail when queries carry frequency")
    head_fraction: float = Field(0.05, gt=0, lt=1, description="share of queries in the head")
    tail_fraction: float = Field(0.5, gt=0, lt=1, description="share of queries in the tail")
    custom: list[SliceDefinition] = Field(
        [], description="slices of your own: queries matching every criterion given"
    )

    @model_validator(mode="after")
    def _fractions(self) -> SlicesConfig:
        if self.head_fraction + self.tail_fraction > 1:
            raise ValueError("head_fraction + tail_fraction must not exceed 1")
        names = [s.name for s in self.custom]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"duplicate custom slice names: {', '.join(dupes)}")
        return self


def configured_slices(
    query_ids: Sequence[str],
    query_texts: Sequence[str],
    tags: Sequence[Sequence[str]],
    frequency: Sequence[int | None],
    cfg: SlicesConfig,
) -> list[Slice]:
    """``build_slices`` with the settings of the config's ``slices`` section."""
    return build_slices(
        query_ids,
        query_texts,
        tags,
        frequency,
        use_tags=cfg.tags,
        use_frequency=cfg.frequency,
        head_fraction=cfg.head_fraction,
        tail_fraction=cfg.tail_fraction,
        custom=[d.to_core() for d in cfg.custom],
    )


class BootstrapConfig(_Strict):
    """The bootstrap confidence intervals of every metric."""

    samples: int = Field(1000, ge=100, description="bootstrap resamples")
    seed: int = Field(0, ge=0, description="seed of the resampling")
    confidence: float = Field(0.95, gt=0, lt=1, description="the intervals' confidence level")


class Threshold(_Strict):
    """Limits for one metric: an absolute floor and/or the largest tolerated drop."""

    min: float | None = Field(None, description="fail when the current value is below this")
    max_drop: float | None = Field(None, ge=0, description="fail on a larger absolute drop")
    max_drop_pct: float | None = Field(None, ge=0, description="fail on a larger relative drop, %")

    def to_core(self) -> gate.Threshold:
        """The plain threshold the gate reads (the same fields)."""
        return gate.Threshold(**self.model_dump())


class ThresholdOverride(Threshold):
    """Thresholds for one metric in one slice and/or index, replacing the metric's defaults."""

    metric: str = Field(description="the metric it applies to")
    slice: str | None = Field(None, description="a slice; null: every gated slice")
    index: str | None = Field(None, description="an index of the config")

    @field_validator("metric")
    @classmethod
    def _metric(cls, v: str) -> str:
        try:
            return str(parse_metrics([v])[0])
        except MetricError as e:
            raise ValueError("; ".join(p.message for p in e.problems)) from None

    def to_core(self) -> gate.ThresholdOverride:
        """The plain override the gate reads (the same fields)."""
        return gate.ThresholdOverride(**self.model_dump())


class HealthThreshold(_Strict):
    """Bounds for one intrinsic-health figure (booleans count as 0 / 1)."""

    min: float | None = Field(None, description="fail below this")
    max: float | None = Field(None, description="fail above this")

    def to_core(self) -> gate.HealthBounds:
        """The plain bounds the gate reads (the same fields)."""
        return gate.HealthBounds(**self.model_dump())


def _health_key(key: str) -> str:
    """``figure``, ``documents.figure`` or ``queries.figure``, with a known figure name."""
    from evalret.core.health import HEALTHIER

    figure = key.split(".", 1)[1] if key.startswith(("documents.", "queries.")) else key
    if figure not in HEALTHIER:
        raise ValueError(
            f"unknown health figure {figure!r}; one of {', '.join(sorted(HEALTHIER))} "
            "(optionally prefixed documents. or queries.)"
        )
    return key


class SignificanceConfig(_Strict):
    """Fail a drop only when a paired test against the baseline finds it significant."""

    test: PairedTest = Field("randomization", description="the paired test over queries")
    alpha: float = Field(0.05, gt=0, lt=1, description="significance level")
    correction: Correction = Field(
        "holm", description="multiple-comparison correction over the checks"
    )
    samples: int = Field(10_000, ge=100, description="permutations or resamples of the test")
    seed: int = Field(0, ge=0, description="seed of the test's sampling")
    power: float = Field(
        0.8, gt=0, lt=1, description="power for the minimum detectable effect reported"
    )

    def to_core(self) -> gate.Significance:
        """The plain significance settings the gate reads (the same fields)."""
        return gate.Significance(**self.model_dump())


class UnjudgedConfig(_Strict):
    """When a drop check cannot tell: the run's judged@k fell below the baseline's by more than
    max_drop (a new model retrieving documents nobody judged)."""

    max_drop: float = Field(
        0.10, ge=0, le=1, description="largest fall of judged@k below the baseline's"
    )
    policy: UnjudgedPolicy = Field(
        "warn", description="warn: inconclusive checks exit 0 with a warning; fail: exit 1"
    )
    min_judged: float | None = Field(
        None,
        ge=0,
        le=1,
        description="floor on judged@k (slice all) below which the run fails outright (a random "
        "ranking, wrong document ids); null: a tenth of the baseline's judged@k; 0: none",
    )

    def to_core(self) -> gate.Unjudged:
        """The plain settings the gate reads (the same fields)."""
        return gate.Unjudged(**self.model_dump())


DEFAULT_THRESHOLDS = {"recall@10": Threshold(max_drop=0.01), "mrr@10": Threshold(max_drop=0.01)}


class IndexBudget(_Strict):
    """What one index may cost (``gate.budgets.<index>``): the deterministic figures of its
    search, and the p95 latency only when asked, since latency depends on the machine."""

    max_index_bytes: int | None = Field(
        None, ge=0, description="the serialized index's size in bytes (vectors or codes, graph)"
    )
    max_bytes_per_vector: float | None = Field(
        None, ge=0, description="the index's bytes divided by the corpus's documents"
    )
    max_distances_per_query: float | None = Field(
        None,
        ge=0,
        description="vectors compared per query, as faiss counts them (HNSW and IVF statistics; "
        "every eligible vector for a flat or binary scan)",
    )
    max_p95_ms: float | None = Field(
        None,
        gt=0,
        description="single-query latency, 95th percentile, in ms: machine-dependent, measured "
        "on this run's machine (report.json's latency section)",
    )


BUDGET_INDEX_TYPES = ("hnsw", "faiss", "quantized")  # the indexes whose cost a run measures


class GateConfig(_Strict):
    """The CI gate: checks of the current run against floors and a stored baseline."""

    baseline: UsablePath | None = Field(None, description="baseline file to compare with")
    thresholds: dict[str, Threshold] | None = Field(
        None, description="per metric; default: max_drop 0.01 on recall@10 and mrr@10 when computed"
    )
    overrides: list[ThresholdOverride] = Field(
        [], description="thresholds for a metric in one slice and/or index, replacing its own"
    )
    slices: list[str] | None = Field(None, description="slices to gate; default all")
    indexes: list[str] | None = Field(
        None,
        description="the indexes every check of an index applies to (thresholds, overrides, "
        "ann_min_recall, rerank_min_recall, budgets); default: exact and every approximate "
        "index (hnsw, faiss, quantized, pgvector)",
    )
    ann_min_recall: float | None = Field(
        0.95,
        ge=0,
        le=1,
        description="floor on every gated approximate index's recall@ann_k against exact search "
        "(slice all); written with no approximate index gated, a config error",
    )
    ann_k: int = Field(10, ge=1, description="the k of ann_min_recall")
    rerank_min_recall: float | None = Field(
        None,
        ge=0,
        le=1,
        description="floor on every gated rerank index's candidate ceiling (its first stage's "
        "recall@k); with no rerank index gated, a config error",
    )
    budgets: dict[str, IndexBudget] = Field(
        default_factory=dict,
        description="gated index name -> its budget (hnsw, faiss and quantized indexes): a "
        "figure over its budget fails the gate",
    )
    max_cost_per_run: float | None = Field(
        None,
        ge=0,
        description="API models: the most embedding every text of the run may cost, nothing "
        "cached (tokens counted as --dry-run counts them x model.price_per_million_tokens)",
    )
    labels: Labels = Field(
        "all",
        description="the labels the run's metrics and the gate use: all, or human (an LLM "
        "judge's grades left out; core/provenance.py)",
    )
    significance: SignificanceConfig | None = Field(
        None, description="fail a drop only when significant; null: every drop counts"
    )
    unjudged: UnjudgedConfig | None = Field(
        default_factory=UnjudgedConfig,
        description="inconclusive drop checks when judged@k falls; null: never inconclusive",
    )
    health: dict[str, HealthThreshold] = Field(
        default_factory=lambda: {"collapsed": HealthThreshold(max=0)},
        description="intrinsic-health figure -> {min, max}; default: fail a collapsed embedding",
    )

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """``rerank_min_recall`` only when set: reports of configs without it read as before."""
        data: dict[str, Any] = handler(self)
        if self.rerank_min_recall is None:
            data.pop("rerank_min_recall", None)
        if not self.budgets:
            data.pop("budgets", None)
        if self.max_cost_per_run is None:
            data.pop("max_cost_per_run", None)
        return data

    @field_validator("health")
    @classmethod
    def _health_figures(cls, v: dict[str, HealthThreshold]) -> dict[str, HealthThreshold]:
        for key in v:
            _health_key(key)
        return v

    @field_validator("thresholds")
    @classmethod
    def _metric_names(cls, v: dict[str, Threshold] | None) -> dict[str, Threshold] | None:
        if v is None:
            return None
        try:
            names = [str(m) for m in parse_metrics(v)]
        except MetricError as e:
            raise ValueError("; ".join(p.message for p in e.problems)) from None
        return dict(zip(names, v.values(), strict=True))


class HealthConfig(_Strict):
    """Intrinsic embedding health of the corpus and query vectors (no labels needed)."""

    enabled: bool = Field(True, description="compute the health figures")
    sample: int = Field(20_000, ge=1, description="seeded pairs for avg_cosine and uniformity")
    max_rows: int = Field(50_000, ge=2, description="seeded rows for the spectral figures")


class CacheConfig(_Strict):
    """The embedding cache: vectors kept on disk, keyed by model, settings and text."""

    enabled: bool = Field(True, description="read and write the cache")
    dir: UsablePath | None = Field(
        None, description="default: $EVALRET_CACHE_DIR or the user cache dir"
    )


RAY_ADDRESS = re.compile(r"^ray://[^\s/:@]+(:\d{1,5})?$")


class EmbeddingConfig(_Strict):
    """Where the texts the cache misses are embedded: in this process (local), or on a Ray
    cluster through Ray Data (engines/ray_engine.py). Never part of the vectors' identity: both
    engines load the same model from the same ``model`` settings."""

    engine: Literal["local", "ray"] = Field(
        "local",
        description="local: this process; ray: Ray Data actors (pip install 'evalret[ray]')",
    )
    address: str | None = Field(
        None,
        description="engine ray: null starts a local Ray runtime (shut down after embedding); "
        '"auto" or "ray://host:port" uses an existing cluster',
    )
    workers: int = Field(2, ge=1, le=4096, description="engine ray: actors, one model each")
    batch_size: int = Field(256, ge=1, description="engine ray: texts per batch sent to an actor")
    gpus_per_worker: float = Field(0, ge=0, le=64, description="engine ray: GPUs per actor")

    @field_validator("address")
    @classmethod
    def _known_address(cls, v: str | None) -> str | None:
        if v is not None and RAY_ADDRESS.match(v) and (problem := url_port_problem(v)):
            raise ValueError(f"{v!r}: {problem}")
        if v is None or v == "auto" or RAY_ADDRESS.match(v):
            return v
        raise ValueError(
            f'{v!r} is no Ray address: null (a local runtime), "auto" or "ray://host:port"'
        )

    @model_validator(mode="after")
    def _ray_settings_need_ray(self) -> EmbeddingConfig:
        if self.engine == "local" and self.address is not None:
            raise ValueError("address is set but engine is local: set engine: ray, or drop it")
        return self


class OutputConfig(_Strict):
    """Where report files go."""

    dir: UsablePath = Field(Path("reports"), description="report directory (--out overrides)")


class HistoryConfig(_Strict):
    """`evalret history`: the SQLite database that keeps a metric's trend across commits."""

    path: UsablePath | None = Field(
        None, description="history database; default: evalret-history.sqlite in the current dir"
    )


class LeakageConfig(_Strict):
    """`evalret leakage`: when a training query counts as a copy of a golden query, and when the
    check fails."""

    threshold: float = Field(
        0.85, gt=0, le=1, description="embedding cosine at or above which a pair leaks"
    )
    max_fraction: float | None = Field(
        None, ge=0, le=1, description="exit 1 when a larger fraction of golden queries leaks"
    )


class BeyondAccuracyConfig(_Strict):
    """Corpus coverage and the Gini coefficient of retrieval counts in every index's top k
    (evalret.core.beyond); reported, never gated."""

    k: int = Field(
        10, ge=1, description="the cutoff; lowered to the search depth when rankings are shorter"
    )


class SampleConfig(_Strict):
    """A seeded, stratified sample of the golden set for a fast gate (evalret.core.sampling
    states the rule): ``queries`` queries, and with ``documents`` a corpus of that many."""

    queries: int = Field(ge=1, description="queries drawn, stratified over the slices")
    documents: int | None = Field(
        None,
        ge=1,
        description="documents kept: the judged ones of the sampled queries, then seeded "
        "distractors up to this many; null: the whole corpus",
    )
    seed: int = Field(0, ge=0, description="seed of the draw")
    min_per_slice: int = Field(
        10, ge=0, description="the floor: queries every slice keeps (all of a smaller slice)"
    )


class JudgeConfig(_Strict):
    """`evalret judge` (and `run --judge`): the LLM that grades (query, document) pairs through
    an OpenAI-compatible ``POST {base_url}/chat/completions`` (engines/chat_api.py), under the
    same HTTP policy, retries and redaction as the embedding provider."""

    provider: Literal["openai"] = Field("openai", description="an OpenAI-compatible chat API")
    base_url: str = Field(
        OPENAI_URL,
        pattern=r"^https?://[^\s]+$",
        description="the API's base URL (its /chat/completions is called)",
    )
    name: str = Field(
        min_length=1, max_length=MAX_API_NAME, description="the chat model the endpoint serves"
    )
    api_key_env: str | None = Field(
        "OPENAI_API_KEY",
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
        description="the environment variable holding the key (null: no key, for a local server)",
    )
    prompt: str = Field(
        "umbrela",
        min_length=1,
        description="umbrela (the built-in prompt) or a template file with {query} and {document}",
    )
    scale: Literal["0-1", "0-2", "0-3", "0-4"] = Field("0-3", description="the grades asked for")
    votes: int = Field(1, ge=1, le=25, description="answers asked per pair; the median is kept")
    temperature: float = Field(0.0, ge=0, le=2, description="sampling temperature sent")
    concurrency: int = Field(4, ge=1, le=64, description="requests in flight")
    max_retries: int = Field(6, ge=0, le=20, description="retries of a 429, 5xx or timeout")
    timeout: float = Field(60.0, gt=0, le=3600, description="seconds a request may take")
    price_per_million_input_tokens: float | None = Field(
        None, ge=0, description="the price of prompt tokens, for the cost"
    )
    price_per_million_output_tokens: float | None = Field(
        None, ge=0, description="the price of answer tokens, for the cost"
    )
    request_fields: dict[str, Any] | None = Field(
        None, description="extra fields sent with every request (e.g. seed, top_p)"
    )
    min_kappa: float | None = Field(
        None,
        ge=-1,
        le=1,
        description="with --calibrate: refuse to write labels when Cohen's kappa is below this",
    )
    max_response_mb: int = _max_response_mb(MAX_RESPONSE_MB, "the endpoint (one grade)")

    @property
    def response_limit(self) -> int:
        """The most bytes an answer may hold."""
        return self.max_response_mb * MIB

    @field_validator("base_url")
    @classmethod
    def _safe_base_url(cls, value: str) -> str:
        return checked_base_url(value)


class Config(_Strict):
    """The whole evalret configuration."""

    golden_set: GoldenSetConfig = Field(GoldenSetConfig(), description="the golden set")
    model: ModelConfig = Field(
        SentenceTransformersModelConfig(), description="the embedding model, by provider"
    )
    indexes: IndexesConfig = Field(
        IndexesConfig(), description="the built-in indexes, and typed indexes by name"
    )
    metrics: list[str] = Field(
        default_factory=lambda: list(DEFAULT_METRICS),
        min_length=1,
        description="metric names: a family at a cutoff (ndcg@10), without one (map), "
        "either with :judged",
    )
    search_depth: int | None = Field(
        None,
        ge=1,
        le=MAX_CUTOFF,
        description="ranks searched per query (the whole ranking of uncut metrics); default: "
        "the largest cutoff, or 1000 when a metric has no cutoff or is :judged; capped at the "
        "corpus size",
    )
    ndcg_gain: Literal["linear", "exponential"] = Field(
        "linear", description="nDCG gain: linear (the grade, as trec_eval) or exponential (2^g - 1)"
    )
    relevance_level: int = Field(
        DEFAULT_RELEVANCE_LEVEL,
        ge=1,
        le=MAX_GRADE,  # a higher level could never be reached by a grade
        description="trec_eval's -l: grade >= this is relevant (nDCG uses raw grades)",
    )
    queries_without_relevant: WithoutRelevant = Field(
        "exclude",
        description="exclude: left out of the means; zero: scored (0 on binary metrics), trec_eval",
    )
    slices: SlicesConfig = Field(SlicesConfig(), description="the slices reported and gated")
    bootstrap: BootstrapConfig = Field(BootstrapConfig(), description="confidence intervals")
    health: HealthConfig = Field(HealthConfig(), description="intrinsic embedding health")
    gate: GateConfig = Field(GateConfig(), description="the CI gate's checks")
    cache: CacheConfig = Field(CacheConfig(), description="the embedding cache")
    # where the cache misses are embedded: no part of the vectors or the fingerprint
    embedding: EmbeddingConfig = Field(
        EmbeddingConfig(), description="where cache misses are embedded: here or on Ray"
    )
    output: OutputConfig = Field(OutputConfig(), description="where report files go")
    leakage: LeakageConfig = Field(LeakageConfig(), description="settings of evalret leakage")
    # where `evalret history` keeps its database: not a setting of the run, so left out of the
    # dump (a report's resolved config stays as it was)
    history: HistoryConfig = Field(
        HistoryConfig(), exclude=True, description="the database of evalret history"
    )
    beyond_accuracy: BeyondAccuracyConfig = Field(
        BeyondAccuracyConfig(), description="corpus coverage and Gini of the top k"
    )
    sample: SampleConfig | None = Field(
        None, description="a seeded, stratified sample for fast gates; null: the whole set"
    )
    judge: JudgeConfig | None = Field(
        None, description="the LLM judge of `evalret judge` and `run --judge`; null: none"
    )
    # the settings given on the command line (--set, --model, --dimension; data/overrides.py),
    # by dotted path: no key of the file, recorded in report.json
    _overrides: dict[str, Any] = PrivateAttr(default_factory=dict)

    @property
    def overrides(self) -> dict[str, Any]:
        """The command-line settings this config was made with ({} for a file as written)."""
        return dict(self._overrides)

    def with_overrides(self, overrides: dict[str, Any]) -> Config:
        """A copy that records ``overrides`` as the command-line settings it was made with."""
        copy = self.model_copy()
        copy._overrides = dict(overrides)
        return copy

    @field_validator("metrics")
    @classmethod
    def _known_metrics(cls, v: list[str]) -> list[str]:
        try:
            return [str(m) for m in parse_metrics(v)]
        except MetricError as e:
            raise ValueError("; ".join(p.message for p in e.problems)) from None

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """The config as a dict; ``search_depth`` and ``sample`` only when set, and
        ``embedding`` only when not the default, so that reports of configs without them read
        as they did before the keys existed."""
        data: dict[str, Any] = handler(self)
        for key in ("search_depth", "sample", "judge"):
            if getattr(self, key) is None:
                data.pop(key, None)
        if self.embedding == EmbeddingConfig():  # the default engine: dumps read as before
            data.pop("embedding", None)
        return data

    @field_validator("search_depth")
    @classmethod
    def _search_depth_holds_every_cutoff(cls, v: int | None, info: ValidationInfo) -> int | None:
        """A search depth below a metric's cutoff would score that metric on a cut ranking."""
        metrics = info.data.get("metrics")  # absent when the metrics themselves were refused
        deepest = max(cutoffs(parse_metrics(metrics)), default=0) if metrics else 0
        if v is not None and v < deepest:
            raise ValueError(
                f"search_depth {v} is below the largest metric cutoff {deepest}: raise it to at "
                f"least {deepest}, or leave it out"
            )
        return v

    @model_validator(mode="after")
    def _gated_metrics_are_computed(self) -> Config:
        computed = set(self.metrics)
        missing = [m for m in self.gate.thresholds or {} if m not in computed]
        missing += [o.metric for o in self.gate.overrides if o.metric not in computed]
        if missing:
            raise ValueError(
                f"gate thresholds name metrics that are not computed: {', '.join(missing)} "
                "(add them to metrics)"
            )
        self._gated_indexes_exist()
        enabled = set(self.indexes.enabled_names())
        named = [*(self.gate.indexes or []), *(o.index for o in self.gate.overrides if o.index)]
        disabled = sorted({i for i in named if i not in enabled})
        if disabled:  # their checks would never run: the gate could pass on nothing
            raise ValueError(f"the gate names indexes that are disabled: {', '.join(disabled)}")
        if self.gate.ann_k > self.depth:
            raise ValueError(f"gate.ann_k {self.gate.ann_k} exceeds the search depth {self.depth}")
        self._budgets_are_measured()
        return self

    @model_validator(mode="after")
    def _every_gate_setting_applies(self) -> Config:
        """A gate setting written in the config (or by a --set) that would check nothing in a
        run of it is refused at its key: a gate must never pass on a check that never ran. A
        default that applies to nothing (ann_min_recall 0.95 without an approximate index) is
        no error. Slices are checked once the golden set is read (pipeline.gate)."""
        problem = self._inert_gate_setting()
        if problem is not None:
            raise problem
        return self

    def gated_indexes(self) -> list[str]:
        """The indexes the gate checks, the one rule for every check of an index (thresholds
        and overrides, ann_min_recall, rerank_min_recall, budgets): ``gate.indexes`` when given,
        else every enabled index evalret searches over the model's vectors, exact search and
        every approximate index (hnsw, faiss, quantized, pgvector). bm25, hybrid, run, python
        and rerank indexes are gated only when named."""
        if self.gate.indexes is not None:
            return list(self.gate.indexes)
        approximate = self.indexes.approximate_names()
        return [n for n in self.indexes.enabled_names() if n == "exact" or n in approximate]

    def _gated_text(self) -> str:
        """The gated indexes and where they come from, for messages."""
        gated = ", ".join(self.gated_indexes()) or "none"
        return f"gate.indexes: {gated}" if self.gate.indexes is not None else f"gated: {gated}"

    def _inert_gate_setting(self) -> AtKey | None:
        """The first gate setting given that applies to no gated index, slice or figure."""
        gate, gated = self.gate, self.gated_indexes()
        if gate.thresholds and not gated:
            return AtKey(f"no gated index to check ({self._gated_text()})", ("gate", "thresholds"))
        if gate.unjudged is not None and gate.unjudged.min_judged and not gated:
            return AtKey(
                f"no gated index to check ({self._gated_text()})",
                ("gate", "unjudged", "min_judged"),
            )
        for metric, t in (gate.thresholds or {}).items():
            if t.min is None and t.max_drop is None and t.max_drop_pct is None:
                return AtKey(
                    "sets no bound: give min, max_drop or max_drop_pct (or leave the metric out)",
                    ("gate", "thresholds", metric),
                )
        for n, o in enumerate(gate.overrides):
            problem = self._inert_override(n, o, gated)
            if problem is not None:
                return problem
        return self._inert_floor() or self._inert_budget() or self._inert_health()

    def _inert_override(self, n: int, o: ThresholdOverride, gated: list[str]) -> AtKey | None:
        """Why override ``n`` would replace no gated threshold (None: it applies)."""
        at: tuple[int | str, ...] = ("gate", "overrides", n)
        if o.index is not None and o.index not in gated:
            return AtKey(
                f"index {o.index} is not gated ({self._gated_text()}): add it to gate.indexes, "
                "or drop the override",
                (*at, "index"),
            )
        if not gated:
            return AtKey(f"no gated index to check ({self._gated_text()})", at)
        wanted = self.gate.slices
        if o.slice is not None and wanted is not None and o.slice not in wanted:
            return AtKey(
                f"slice {o.slice} is not gated (gate.slices: {', '.join(wanted) or 'none'}): add "
                "it there, or drop the override",
                (*at, "slice"),
            )
        return None

    def _inert_floor(self) -> AtKey | None:
        """Why ann_min_recall (given) or rerank_min_recall would hold no gated index."""
        gate, gated = self.gate, self.gated_indexes()
        if "ann_min_recall" in gate.model_fields_set and gate.ann_min_recall is not None:
            every = self.indexes.approximate_names()
            if not any(i in every for i in gated):
                fix = (
                    f"add {', '.join(every)} to gate.indexes"
                    if every
                    else "enable an approximate index (hnsw, or a faiss, quantized or pgvector one)"
                )
                return AtKey(
                    f"no gated approximate index to hold to this floor ({self._gated_text()}): "
                    f"{fix}, or set it to null",
                    ("gate", "ann_min_recall"),
                )
            if not self.indexes.exact.enabled:
                return AtKey(
                    "an approximate index's recall is measured against exact search, and "
                    "indexes.exact is disabled: enable it, or set ann_min_recall to null",
                    ("gate", "ann_min_recall"),
                )
        if gate.rerank_min_recall is not None:
            every = [n for n in self.indexes.enabled_names() if self.indexes.kind(n) == "rerank"]
            if not any(i in every for i in gated):
                fix = f"add {', '.join(every)} to gate.indexes" if every else "add a rerank index"
                return AtKey(
                    f"no gated rerank index to hold to this floor ({self._gated_text()}): {fix}, "
                    "or drop it",
                    ("gate", "rerank_min_recall"),
                )
        return None

    def _inert_budget(self) -> AtKey | None:
        """Why a budget would hold nothing: its index is not gated, or it sets no limit."""
        gated = self.gated_indexes()
        for name, budget in self.gate.budgets.items():
            if name not in gated:
                return AtKey(
                    f"index {name} is not gated ({self._gated_text()}): add it to gate.indexes, "
                    "or drop this budget",
                    ("gate", "budgets", name),
                )
            if all(getattr(budget, f) is None for f in IndexBudget.model_fields):
                return AtKey(
                    f"sets no limit: give one of {', '.join(IndexBudget.model_fields)}",
                    ("gate", "budgets", name),
                )
        return None

    def _inert_health(self) -> AtKey | None:
        """Why gate.health (given) would bound nothing: the figures are not computed, or a
        figure's bound sets neither min nor max."""
        health = self.gate.health
        if "health" in self.gate.model_fields_set and health and not self.health.enabled:
            return AtKey(
                "the health figures are not computed (health.enabled is false): enable them, "
                "or leave gate.health out",
                ("gate", "health", next(iter(health))),
            )
        for key, bound in health.items():
            if bound.min is None and bound.max is None:
                return AtKey("sets no bound: give min or max", ("gate", "health", key))
        return None

    def _budgets_are_measured(self) -> None:
        """AtKey at a budget on an index the run does not measure, and at a cost budget for a
        model without a price."""
        enabled = self.indexes.enabled_names()
        for name in self.gate.budgets:
            where = ("gate", "budgets", name)
            if name not in enabled:
                enabled_text = ", ".join(enabled)
                raise AtKey(f"no enabled index {name!r} to budget: one of {enabled_text}", where)
            typed = self.indexes.typed.get(name)
            kind = typed.type if typed is not None else name
            if kind not in BUDGET_INDEX_TYPES:
                raise AtKey(
                    f"{name} is a {kind} index: a run measures the cost of "
                    f"{', '.join(BUDGET_INDEX_TYPES)} indexes only",
                    where,
                )
        if self.gate.max_cost_per_run is not None and self.model.price is None:
            raise AtKey(
                "max_cost_per_run needs an API model with model.price_per_million_tokens",
                ("gate", "max_cost_per_run"),
            )

    def _gated_indexes_exist(self) -> None:
        """AtKey at the first gate key naming an index the config does not have."""
        known = {*BUILTIN_INDEXES, *self.indexes.typed}
        named: list[tuple[str, tuple[int | str, ...]]] = [
            (i, ("gate", "indexes", n)) for n, i in enumerate(self.gate.indexes or [])
        ]
        named += [
            (o.index, ("gate", "overrides", n, "index"))
            for n, o in enumerate(self.gate.overrides)
            if o.index is not None
        ]
        for index, loc in named:
            if index not in known:
                raise AtKey(f"unknown index {index!r}: one of {', '.join(sorted(known))}", loc)

    @property
    def thresholds(self) -> dict[str, Threshold]:
        """The gate's per-metric thresholds; the defaults cover only metrics that are computed."""
        if self.gate.thresholds is not None:
            return dict(self.gate.thresholds)
        return {m: t for m, t in DEFAULT_THRESHOLDS.items() if m in self.metrics}

    # ``metrics`` parsed (core.metrics.parse_metrics), once per list of names: a private
    # attribute, so no part of the schema or the dump; keyed by the names, so a copy with other
    # metrics (model_copy(update=...)) parses its own
    _parsed_metrics: tuple[tuple[str, ...], tuple[Metric, ...]] | None = PrivateAttr(None)

    @property
    def metric_specs(self) -> list[Metric]:
        """The configured metrics, parsed: every stage reads them here (the names are parsed
        once per config, not once per stage)."""
        names = tuple(self.metrics)
        if self._parsed_metrics is None or self._parsed_metrics[0] != names:
            self._parsed_metrics = (names, tuple(parse_metrics(names)))
        return list(self._parsed_metrics[1])

    @property
    def depth(self) -> int:
        """The search depth: ``search_depth``, else the largest metric cutoff, or 1000 when a
        metric has no cutoff (the pipeline searches no deeper than the corpus size)."""
        return search_depth(self.metric_specs, self.search_depth)

    def resolve_paths(self, base: Path) -> Config:
        """A copy whose relative paths are made absolute against ``base``."""

        def fix(p: Path | None) -> Path | None:
            return None if p is None or p.is_absolute() else (base / p).resolve()

        gs = self.golden_set
        updates = {k: fix(getattr(gs, k)) for k in ("path", "queries", "corpus", "qrels")}
        golden = gs.model_copy(update={k: v for k, v in updates.items() if v is not None})
        model = self.model
        if model.name_is_path and _is_local(base, model.name):
            model = model.model_copy(update={"name": str(base / model.name)})
        out = self.output.model_copy(update={"dir": fix(self.output.dir) or self.output.dir})
        gate = self.gate.model_copy(
            update={"baseline": fix(self.gate.baseline) or self.gate.baseline}
        )
        cache = self.cache.model_copy(update={"dir": fix(self.cache.dir) or self.cache.dir})
        history = self.history.model_copy(
            update={"path": fix(self.history.path) or self.history.path}
        )
        judge = self.judge
        if judge is not None and judge.prompt != "umbrela":
            prompt = fix(Path(judge.prompt)) or judge.prompt
            judge = judge.model_copy(update={"prompt": str(prompt)})
        return self.model_copy(
            update={
                "judge": judge,
                "indexes": self.indexes.resolve_paths(base),
                "golden_set": golden,
                "model": model,
                "output": out,
                "gate": gate,
                "cache": cache,
                "history": history,
            }
        )


def refresh_unions() -> None:
    """After a member joined or left ``MODEL_CONFIGS`` or ``INDEX_CONFIGS`` (a plug-in's
    registration): the config models validate with the registries' members from now on."""
    IndexesConfig.model_rebuild(force=True)  # the inner model first: Config takes its schema
    Config.model_rebuild(force=True)


def _node_line(root: yaml.Node | None, loc: tuple[int | str, ...]) -> int | None:
    """1-based line of the YAML node at ``loc`` (or of its deepest existing parent)."""
    node, line = root, (root.start_mark.line + 1 if root is not None else None)
    for part in loc:
        child = None
        if isinstance(node, yaml.MappingNode):
            for key, value in reversed(node.value):  # the last: a merge's key may be overridden
                if key.value == part:
                    child = key if part == loc[-1] else value
                    break
        elif (
            isinstance(node, yaml.SequenceNode)
            and isinstance(part, int)
            and 0 <= part < len(node.value)
        ):
            child = node.value[part]
        if child is None:
            break
        node, line = child, child.start_mark.line + 1
    return line


def _format_loc(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _key_loc(node: yaml.Node | None, mark: Any) -> tuple[int | str, ...] | None:
    """The path of the mapping key under ``node`` that starts at ``mark``."""
    pairs: list[tuple[int | str, yaml.Node, yaml.Node | None]] = []
    if isinstance(node, yaml.MappingNode):
        pairs = [(k.value, k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode)]
    elif isinstance(node, yaml.SequenceNode):
        pairs = [(n, child, child) for n, child in enumerate(node.value)]
    for part, key, value in pairs:
        if key.start_mark.index == mark.index and isinstance(node, yaml.MappingNode):
            return (part,)
        below = _key_loc(value, mark)
        if below is not None:
            return (part, *below)
    return None


def _yaml_problem(
    e: yaml.YAMLError, text: str, root: yaml.Node | None = None
) -> tuple[str, int | None]:
    """The message and 1-based line of a YAML error (a reader error, e.g. a control character,
    carries a character position instead of a mark); a repeated key is named by its path."""
    if isinstance(e, yaml.reader.ReaderError):
        line = text.count("\n", 0, e.position) + 1
        return f"unacceptable character #x{e.character:04x}: {e.reason}", line
    mark = getattr(e, "problem_mark", None)
    message = getattr(e, "problem", None) or str(e)
    first = getattr(e, "context_mark", None)
    if isinstance(e, yamltext.DuplicateKeyError) and mark is not None and first is not None:
        loc = _key_loc(root, mark)
        if loc:
            lines = f"lines {first.line + 1} and {mark.line + 1}"
            message = f"{_format_loc(loc)}: duplicate key on {lines}{yamltext.REPLACED}"
    return message, mark.line + 1 if mark is not None else None


def _unconstructible_line(node: yaml.Node | None) -> int | None:
    """The 1-based line of the first scalar under ``node`` the safe loader cannot construct."""
    if isinstance(node, yaml.ScalarNode):
        try:
            yaml.SafeLoader("").construct_object(node)
        except (yaml.YAMLError, ValueError):
            return node.start_mark.line + 1
        return None
    children = node.value if isinstance(node, yaml.CollectionNode) else []
    for child in children:
        for part in child if isinstance(child, tuple) else (child,):
            line = _unconstructible_line(part)
            if line is not None:
                return line
    return None


def read_yaml_mapping(text: str, source: str) -> tuple[dict[str, Any], yaml.Node | None]:
    """The config's YAML as a mapping ({} when empty) and its node tree (for lines); a
    ConfigError with the line for malformed YAML, a repeated key or a top level that is no
    mapping."""
    root = None
    try:
        root = yamltext.compose(text)
        data: Any = yamltext.construct(root)
    except yaml.YAMLError as e:
        message, line = _yaml_problem(e, text, root)
        raise ConfigError("invalid YAML", [Problem(message, source, line)]) from None
    except RecursionError:
        raise ConfigError("invalid YAML", [Problem("nested too deeply", source)]) from None
    except ValueError as e:  # a scalar the YAML constructor cannot convert: a huge integer
        line = _unconstructible_line(root)
        raise ConfigError("invalid YAML", [Problem(str(e).split(";")[0], source, line)]) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError("invalid config", [Problem("the top level must be a mapping", source, 1)])
    return data, root


# pydantic's error types of a value of the wrong type (the models are strict: nothing converts)
_TYPE_ERRORS = ("int_type", "float_type", "bool_type", "string_type")
# a section that is no mapping (a model's, or a union member's)
_MAPPING_ERRORS = ("model_type", "model_attributes_type")
_YAML_TYPES = {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}
_YAML_SHAPES = {dict: "a mapping", list: "a list", type(None): "null"}


def _given(value: Any) -> str:
    """What a value of the wrong type is, as the YAML reader made it: ``a string ('10')``."""
    kind = _YAML_TYPES.get(type(value))
    if kind is None:
        return _YAML_SHAPES.get(type(value), type(value).__name__)
    shown = str(value).lower() if isinstance(value, bool) else repr(value)
    return f"{kind} ({shown[:60]}{'...' if len(shown) > 60 else ''})"


@dataclass(frozen=True)
class _UnionSite:
    """Where a registered union sits in the config: its errors' ``loc`` carries the member's tag
    at ``depth`` (no key of the file: it is taken out), after ``head``."""

    head: str
    depth: int
    field: str  # the tag's key
    noun: str  # what a tag names, in messages
    registry: dict[str, Any]

    def member_at(self, loc: tuple[int | str, ...]) -> str | None:
        """The tag in ``loc`` when the error lies inside one of this union's members."""
        n = self.depth
        inside = len(loc) > n and loc[0] == self.head and loc[n] in self.registry
        return str(loc[n]) if inside else None

    def holds(self, loc: tuple[int | str, ...]) -> bool:
        """``loc`` is the union itself (an error of its tag)."""
        return len(loc) == self.depth and loc[0] == self.head

    def choices(self) -> str:
        return ", ".join(self.registry)


_UNION_SITES = (
    _UnionSite("model", 1, "provider", "provider", MODEL_CONFIGS),
    _UnionSite("indexes", 2, "type", "index type", INDEX_CONFIGS),
)


def _member_message(site: _UnionSite, tag: str, err: Any, key: int | str) -> str | None:
    """What a key of a union member is missing or misplaced for, naming the members: a key of
    another member, a required key with its description."""
    member = site.registry[tag]
    if err["type"] == "extra_forbidden":
        readers = [t for t, m in site.registry.items() if key in m.model_fields and t != tag]
        if readers:
            return (
                f"a setting of {site.noun} {' or '.join(readers)}, not read with {site.noun} {tag}"
            )
    elif err["type"] == "missing" and key in member.model_fields:
        description = member.model_fields[key].description
        return f"{site.noun} {tag} needs {key}" + (f": {description}" if description else "")
    return None


def _union_problem(
    loc: tuple[int | str, ...], err: Any
) -> tuple[tuple[int | str, ...], str | None]:
    """``loc`` without a union's tag, and the message of an error about the tag or about a key
    of a member (None: the usual message)."""
    for site in _UNION_SITES:
        tag = site.member_at(loc)
        if tag is not None:
            loc = loc[: site.depth] + loc[site.depth + 1 :]  # the tag is no key of the file
            inside = len(loc) == site.depth + 1
            return loc, _member_message(site, tag, err, loc[-1]) if inside else None
        if site.holds(loc) and err["type"] == "union_tag_invalid":
            given = err["ctx"]["tag"]
            return (*loc, site.field), f"{given!r} is no {site.noun}: one of {site.choices()}"
        if site.holds(loc) and err["type"] == "union_tag_not_found":
            return (*loc, site.field), f"required: one of {site.choices()}"
    return loc, None


def _validation_problem(err: Any, root: yaml.Node | None, source: str) -> Problem:
    """One pydantic error as a Problem at its key's path and line."""
    loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function")))
    loc, said = _union_problem(loc, err)
    if len(loc) > 4 and loc[2] == "reranker" and loc[3] in RERANKER_PROVIDERS:
        loc = loc[:3] + loc[4:]  # indexes.<name>.reranker.<provider>.<key>: the tag taken out
    error = (err.get("ctx") or {}).get("error")
    if isinstance(error, AtKey):
        loc = loc + error.loc
    msg = str(error) if isinstance(error, AtKey) else err["msg"]
    if said is not None:
        msg = said
    elif err["type"] == "extra_forbidden":
        msg = "unknown key"
    elif err["type"] in _TYPE_ERRORS:
        msg = f"{msg}, not {_given(err['input'])}"
    elif err["type"] in _MAPPING_ERRORS:
        msg = f"Input should be a mapping, not {_given(err['input'])}"
    return Problem(f"{_format_loc(loc)}: {msg}", source, _node_line(root, loc))


def parse_config(text: str, source: str = "<config>") -> Config:
    """Validate YAML text into a Config; every problem is reported with its key path and line.
    The models are strict: a value of another type is refused, never converted."""
    data, root = read_yaml_mapping(text, source)
    try:
        return Config.model_validate(data)
    except ValidationError as e:
        problems = [_validation_problem(err, root, source) for err in e.errors()]
        raise ConfigError(f"invalid config {source}", problems) from None


def load_config(path: Path | None) -> Config:
    """Read and validate a config file (defaults when ``path`` is None), paths made absolute."""
    if path is None:
        return Config().resolve_paths(Path.cwd())
    text = read_text(path, "config", ConfigError)
    return parse_config(text, str(path)).resolve_paths(path.resolve().parent)
