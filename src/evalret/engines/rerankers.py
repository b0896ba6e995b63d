"""The rerankers of a rerank index (``indexes.<name>.reranker``): each scores one query's
candidates, one score per (query, document text), and the scores are kept in a SQLite cache.

- ``cross-encoder``: a local sentence-transformers CrossEncoder directory, loaded offline like the
  embedding model (the Hugging Face libraries are kept offline: nothing is fetched). Its identity
  is the sha256 of its weight files, so retrained weights are never answered from the cache.
- ``python``: ``fn(query: str, documents: list[str]) -> one score per document`` (an int or a
  float, finite), called once per query inside evalret's plug-in guard (engines/plugins.py). The
  documents are the candidates' texts as evalret embeds them (title + " " + text). It may be
  called with only the candidates the cache does not hold: a score depends on its (query,
  document) pair alone. Its scores are not cached (the code may change under the same name).
- ``http``: ``POST {base_url}/rerank`` with ``{model, query, documents, top_n}``, answered with
  ``{results: [{index, relevance_score}, ...]}`` (the shape Cohere, Jina, Voyage and infinity
  share), one request per query, ``concurrency`` in flight, through the openai client and
  evalret's HTTP policy as the embedding provider and the judge use them (engines/openai_api.py,
  engines/http_policy.py: the configured origin only, retries of 429/5xx/timeouts, the key masked
  in every message). Each answer is cached as it arrives: a run that fails half-way keeps what
  was paid for, and a rerun asks only the rest.

The cache (``rerank/scores.sqlite`` in the cache directory) keys a score by the sha256 of the
reranker's cache identity (its identity, and for a CrossEncoder also the device it scores on and
the versions of the libraries that compute it, as the embedding cache keys vectors), the query
text and the document text. A score read back is checked as a fresh one is: one that is not a
finite number is not used (that document is scored again, and the report's note counts it).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from evalret.data.config import (
    CacheConfig,
    CrossEncoderRerankerConfig,
    HttpRerankerConfig,
    PythonRerankerConfig,
    RerankerConfig,
)
from evalret.data.stores import RERANK_SCORES, CacheRoot, cache_root
from evalret.engines.http_policy import LoopThread, PolicyError, Redactor
from evalret.engines.openai_api import (
    answer_json,
    api_key,
    connection_failure,
    endpoint_of,
    key_redactor,
    openai_client,
    status_failure,
)
from evalret.engines.plugins import import_callable, materialised, plugin_call
from evalret.engines.sqlite_table import SqliteTable
from evalret.errors import ModelError, PluginError

RAW_RESPONSE = {"X-Stainless-Raw-Response": "true"}  # the openai client's raw answer (its retries)
Query = tuple[str, list[str]]  # a query's text and the texts of the documents to score


class Reranker(Protocol):
    """Scores documents for a query."""

    cached: bool  # whether its scores are kept in the cache

    def identity(self) -> dict[str, Any]:
        """What decides its scores (the fingerprint)."""
        ...

    def cache_identity(self) -> dict[str, Any]:
        """What keys its scores in the cache: identity(), and whatever else can move a score."""
        ...

    def score(self, queries: Sequence[Query]) -> Iterator[tuple[int, list[float]]]:
        """(position in ``queries``, one score per document) for every query, in any order."""
        ...


def checked_score(who: str, value: Any) -> float:
    """A score as a float: an int or a float (numpy's too), finite; anything else refused."""
    number = isinstance(value, (int, float, np.integer, np.floating))
    if not number or isinstance(value, (bool, np.bool_)):
        raise PluginError(f"{who} returned score {value!r} ({type(value).__name__}): not a number")
    try:
        out = float(value)
    except OverflowError:
        out = math.inf
    if not math.isfinite(out):
        raise PluginError(f"{who} returned score {value!r}: a score is a finite float")
    return out


class CrossEncoderReranker:
    """A local CrossEncoder directory, loaded offline when first used."""

    cached = True

    def __init__(self, settings: CrossEncoderRerankerConfig) -> None:
        self.settings = settings

    @cached_property
    def _weights(self) -> str:
        from evalret.engines.st_embedder import weights_hash

        digest = weights_hash(str(self.settings.path))
        if digest is None:
            raise ModelError(
                f"reranker.path {self.settings.path}: no CrossEncoder weights in this directory"
            )
        return digest

    def identity(self) -> dict[str, Any]:
        return {
            "provider": "cross-encoder",
            "path": self.settings.path.name,
            "weights_sha256": self._weights,
            "max_length": self.settings.max_length,
        }

    def cache_identity(self) -> dict[str, Any]:
        """identity() plus what else can move a score (as the embedding cache keys vectors): the
        device (``auto`` resolved) and the versions of the libraries that compute it."""
        from evalret.engines.st_embedder import library_versions, resolve_device

        device = resolve_device(self.settings.device)
        return {**self.identity(), "device": device, "versions": library_versions()}

    @cached_property
    def model(self) -> Any:
        from evalret.engines.st_embedder import check_device, force_offline, resolve_device

        force_offline()
        device = resolve_device(self.settings.device)
        check_device(device, "reranker.device")
        try:
            from sentence_transformers import CrossEncoder

            kwargs = {"max_length": self.settings.max_length} if self.settings.max_length else {}
            return CrossEncoder(str(self.settings.path), device=device, **kwargs)
        except Exception as e:
            raise ModelError(
                f"cannot load the CrossEncoder {self.settings.path} offline on device {device}: {e}"
            ) from e

    def score(self, queries: Sequence[Query]) -> Iterator[tuple[int, list[float]]]:
        for i, (query, documents) in enumerate(queries):
            if not documents:
                yield i, []
                continue
            pairs = [(query, d) for d in documents]
            scores = self.model.predict(
                pairs, batch_size=self.settings.batch_size, show_progress_bar=False
            )
            yield i, [float(s) for s in np.asarray(scores, dtype=np.float64).reshape(-1)]


class PythonReranker:
    """A function of the user's, called per query inside the plug-in guard."""

    cached = False

    def __init__(
        self, key: str, settings: PythonRerankerConfig, code_dir: Path | None = None
    ) -> None:
        self.spec = settings.callable
        self.function: Callable[..., Any] = import_callable(key, settings.callable, code_dir)

    def identity(self) -> dict[str, Any]:
        return {"provider": "python", "callable": self.spec}

    def cache_identity(self) -> dict[str, Any]:
        return self.identity()  # never cached (``cached`` is False)

    def score(self, queries: Sequence[Query]) -> Iterator[tuple[int, list[float]]]:
        for i, (query, documents) in enumerate(queries):
            if not documents:  # a query without candidates: nothing to ask
                yield i, []
                continue
            with plugin_call(self.spec):
                answer = materialised(self.function(query, list(documents)))
            if isinstance(answer, np.ndarray):
                answer = answer.tolist()
            if not isinstance(answer, list) or len(answer) != len(documents):
                shape = len(answer) if isinstance(answer, list) else type(answer).__name__
                raise PluginError(
                    f"{self.spec} returned {shape} for {len(documents)} documents of query "
                    f"{query[:60]!r}: one score per document, in their order"
                )
            yield i, [checked_score(self.spec, s) for s in answer]


FATAL = {
    401: "the key was refused: check the key in {key}",
    403: "the key in {key} may not use this model or endpoint",
    404: "not found: check reranker.model ({name!r}) and reranker.base_url",
}


@dataclass
class HttpUsage:
    """What the endpoint was asked."""

    requests: int = 0
    retries: int = 0
    documents: int = 0
    errors: list[str] = field(default_factory=list)


class HttpReranker:
    """``POST {base_url}/rerank`` (see the module docstring)."""

    cached = True

    def __init__(self, key: str, settings: HttpRerankerConfig) -> None:
        self.key = key  # indexes.<name>.reranker
        self.settings = settings
        self.endpoint = endpoint_of(settings.base_url)
        self.url = f"{self.endpoint}/rerank"
        self.usage = HttpUsage()

    def identity(self) -> dict[str, Any]:
        return {"provider": "http", "model": self.settings.model, "endpoint": self.endpoint}

    def cache_identity(self) -> dict[str, Any]:
        """identity(): the endpoint and model decide a score (``top_n`` is every document, and
        the other settings only how it is asked)."""
        return self.identity()

    @cached_property
    def _key(self) -> str:
        return api_key(self.settings.api_key_env, self.key, self.endpoint, "the reranker")

    @cached_property
    def redact(self) -> Redactor:
        return key_redactor(self._key)

    def score(self, queries: Sequence[Query]) -> Iterator[tuple[int, list[float]]]:
        asked = [(i, q) for i, q in enumerate(queries) if q[1]]
        yield from ((i, []) for i, q in enumerate(queries) if not q[1])
        if not asked:
            return
        s = self.settings
        client = openai_client(
            s.base_url, self._key, s.max_retries, s.timeout, self.key, self.key, s.response_limit
        )
        loop = LoopThread()
        try:
            yield from self._drive(loop, client, asked)
        finally:
            loop.run(client.close())
            loop.close()

    def _drive(
        self, loop: LoopThread, client: Any, asked: list[tuple[int, Query]]
    ) -> Iterator[tuple[int, list[float]]]:
        pending = iter(asked)
        running: dict[asyncio.Task[list[float]], int] = {}
        try:
            while True:
                while len(running) < self.settings.concurrency:
                    nxt = next(pending, None)
                    if nxt is None:
                        break
                    running[loop.start(self._ask(client, *nxt[1]))] = nxt[0]
                if not running:
                    return
                done = loop.first_done(running)
                failed = [e for t in done if (e := t.exception()) is not None]
                for task in done:
                    i = running.pop(task)
                    if task.exception() is None:
                        yield i, task.result()
                if failed:
                    raise failed[0]
        finally:
            loop.cancel(running)

    async def _ask(self, client: Any, query: str, documents: list[str]) -> list[float]:
        import openai

        body = {
            "model": self.settings.model,
            "query": query,
            "documents": documents,
            "top_n": len(documents),
        }
        try:
            raw = await client.post(
                "/rerank", body=body, cast_to=object, options={"headers": RAW_RESPONSE}
            )
        except openai.APIStatusError as e:
            raise ModelError(self._status_message(e)) from None
        except openai.APIConnectionError as e:
            said = connection_failure(e, self.settings.max_retries, self.key, self.redact)
            raise ModelError(f"rerank request to {self.url} failed {said}") from None
        except PolicyError as e:
            raise ModelError(f"rerank request to {self.url}: {self.redact(str(e))}") from None
        self.usage.requests += 1
        self.usage.retries += int(getattr(raw, "retries_taken", 0) or 0)
        self.usage.documents += len(documents)
        return self._scores(raw.http_response.content, len(documents))

    def _status_message(self, error: Any) -> str:
        s = self.settings
        hints = {code: hint.format(key=s.api_key_env, name=s.model) for code, hint in FATAL.items()}
        said = status_failure(error, hints, self.key, s.max_retries, self.redact)
        return f"rerank request to {self.url} failed: {said}"

    def _scores(self, content: bytes, n: int) -> list[float]:
        """One score per document from the answer's ``results``; ModelError for another
        shape (an index twice or out of range, a document without a score)."""
        try:
            answer = answer_json(content.decode("utf-8", errors="replace"))
        except json.JSONDecodeError:
            answer = None
        results = answer.get("results") if isinstance(answer, dict) else None
        if not isinstance(results, list):
            shown = self.redact.shown(content.decode("utf-8", errors="replace"))
            raise ModelError(f"rerank answer from {self.url} holds no results list: {shown}")
        out: list[float | None] = [None] * n
        for item in results:
            index = item.get("index") if isinstance(item, dict) else None
            value = item.get("relevance_score") if isinstance(item, dict) else None
            if type(index) is not int or not 0 <= index < n or out[index] is not None:
                raise ModelError(f"rerank answer from {self.url}: result index {index!r} unusable")
            try:
                out[index] = checked_score(self.url, value)
            except PluginError as e:
                raise ModelError(f"rerank answer: {e}") from None
        missing = [i for i, v in enumerate(out) if v is None]
        if missing:
            raise ModelError(
                f"rerank answer from {self.url} scored {n - len(missing)} of {n} documents "
                f"(none for index {missing[0]}): top_n was {n}"
            )
        return [v for v in out if v is not None]


def make_reranker(key: str, settings: RerankerConfig, code_dir: Path | None = None) -> Reranker:
    """The reranker ``settings`` describe (``key``: where they are in the config; ``code_dir``:
    where a python reranker's module is looked for first, ``plugins.import_callable``)."""
    if isinstance(settings, CrossEncoderRerankerConfig):
        return CrossEncoderReranker(settings)
    if isinstance(settings, PythonRerankerConfig):
        return PythonReranker(f"{key}.callable", settings, code_dir)
    return HttpReranker(key, settings)


def score_key(identity: str, query: str, document: str) -> str:
    text = json.dumps([identity, query, document], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class ScoreCache:
    """Scores by key, one SQLite row each, committed as each query's scores arrive."""

    def __init__(self, root: CacheRoot | None) -> None:  # None: nothing is kept
        self.table = SqliteTable(RERANK_SCORES, root)
        self.path = self.table.path

    @classmethod
    def of(cls, cache: CacheConfig) -> ScoreCache:
        return cls(cache_root(cache) if cache.enabled else None)

    def check(self) -> None:
        """Refuse (InputError, exit 2) a file at the cache's path that is not evalret's score
        cache, before anything is read from or written to it."""
        self.table.check()

    def lookup(self, keys: Sequence[str]) -> tuple[dict[str, float], int]:
        """(key -> score of the keys cached with a finite number, how many cached rows were not
        used: a score that is not a finite number, read back as a fresh answer is read)."""
        found: dict[str, float] = {}
        unusable = 0
        for key, score in self.table.select("score", keys):
            usable = isinstance(score, (int, float)) and not isinstance(score, bool)
            if usable and math.isfinite(score):
                found[key] = float(score)
            else:
                unusable += 1
        return found, unusable

    def store(self, rows: Sequence[tuple[str, float]]) -> None:
        self.table.put(rows)

    def close(self) -> None:
        self.table.close()


@dataclass
class Scored:
    """Every query's scores, and how many came from the cache."""

    scores: list[list[float]]
    from_cache: int = 0
    computed: int = 0
    unusable: int = 0  # cached scores not used (not a finite number): scored again


def scores_for(reranker: Reranker, cache: ScoreCache, queries: Sequence[Query]) -> Scored:
    """One score per document of every query: the cache's where it holds them, the rest asked
    of the reranker (and kept as each query's answer arrives)."""
    if not reranker.cached:
        out = [list(s) for _, s in sorted(reranker.score(queries))]
        return Scored(out, computed=sum(len(d) for _, d in queries))
    identity = json.dumps(reranker.cache_identity(), sort_keys=True)
    keys = [[score_key(identity, q, d) for d in docs] for q, docs in queries]
    try:
        held, unusable = cache.lookup([k for row in keys for k in row])
        result = [[held.get(k) for k in row] for row in keys]
        todo = [i for i, row in enumerate(result) if None in row]
        asked = [
            (queries[i][0], [d for d, s in zip(queries[i][1], result[i], strict=True) if s is None])
            for i in todo
        ]
        for j, scores in reranker.score(asked):
            row, missing = result[todo[j]], [n for n, s in enumerate(result[todo[j]]) if s is None]
            for n, value in zip(missing, scores, strict=True):
                row[n] = value
            cache.store([(keys[todo[j]][n], row[n]) for n in missing])  # type: ignore[misc]
    finally:
        cache.close()
    computed = sum(len(a[1]) for a in asked)
    total = sum(len(d) for _, d in queries)
    return Scored(
        [[float(s) for s in row if s is not None] for row in result],
        total - computed,
        computed,
        unusable,
    )
