"""An OpenAI-compatible embeddings endpoint as an embedder (``model.provider: openai``).

Any server that answers ``POST {base_url}/embeddings`` as OpenAI does: OpenAI and Azure OpenAI,
Voyage, the OpenAI-compatible endpoints of Cohere, Gemini and Jina, and the servers teams run
themselves (vLLM, Text Embeddings Inference, Ollama, infinity). Requests go through the official
``openai`` client (extra ``evalret[openai]``): it brings the retries this provider needs (429,
408, 409, 5xx and timeouts, exponential backoff with jitter, ``Retry-After`` honoured) and the
request conventions; evalret adds only its HTTP policy, as the client's transport.

What a run can trust:

- texts go ``max_batch`` at a time (fewer when a batch would pass ``max_batch_tokens``
  estimated tokens), ``concurrency`` requests in flight, and every answered batch is handed on
  at once (the embedding cache stores it: a run stopped midway resumes where it stopped);
- requests follow evalret's HTTP policy (engines/http_policy.py): nothing is sent to another
  origin than ``base_url``'s (a redirect there is refused), ``timeout`` bounds each request as
  a whole, and the key is masked in every form a server can echo it;
- when a request fails for good, the batches already answered are handed on (cached) before
  the run fails, and every other request is cancelled at once;
- vectors are asked for as base64 (``encoding_format``); a server that refuses base64 with a
  400 naming it is asked again in float for the rest of the run;
- an answer is checked: a JSON object (an HTML page, cut-short JSON or an ``error`` body with
  status 200 fails, showing the server's text), one vector per input (``index`` fields, when
  present, put them in order and must cover the batch exactly once), one dimension throughout
  (``dimensions`` when set), finite values, a token count that is one; anything else fails
  the run (exit 3) naming the endpoint. An answer naming another model than ``name`` is
  recorded (``served_model``) and shown with the report;
- a status that is not retried (400, 401, 403, 404, 413, 422), or a retryable one still
  failing after ``max_retries``, fails the run (exit 3) with what the status likely means;
- the key is read from ``api_key_env`` when the first request is made (a dry run needs none)
  and is kept out of every message, report and cache file.

The model's identity (fingerprint, cache namespace) is the provider, the endpoint's host and
path, the model name, ``dimensions``, the prefixes, the request fields, truncation and
normalization. An API model's weights cannot be hashed: the identity says so, and a provider
that changes the model behind its name shows up as a change of the metrics.
"""

from __future__ import annotations

import asyncio
import base64
import email.utils
import json
import math
import os
import re
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from evalret.data.config import OpenAIModelConfig
from evalret.engines.http_policy import (
    AnswerTooLarge,
    LoopThread,
    PolicyError,
    Redactor,
    async_client,
)
from evalret.engines.protocols import Batch, Kind, Progress
from evalret.engines.st_embedder import finish_vectors
from evalret.engines.tokens import TOKENS_PER_TEXT, estimate_tokens, max_tokens
from evalret.errors import ConfigError, ModelError

NO_KEY = "evalret-no-key"  # sent when api_key_env is null (the client insists on some key)
WEIGHTS_NOTE = "not hashable: an API model (the provider can change it behind its name)"
SERVED_MODEL_CHARS = 100  # of the model name an answer gives
# the longest Retry-After the openai client waits (its MAX_RETRY_AFTER_DELAY): a server asking
# for more is not retried
MAX_WAIT_S = 120
HINTS = {
    400: "the request was refused: check model.name ({name!r}), which some servers refuse "
    "with a 400; else an input may be too long for the model, or a setting (dimensions, "
    "request_fields) is not supported",
    401: "the key was refused: check the key in {key}",
    403: "the key in {key} may not use this model or endpoint",
    404: "not found: check model.name ({name!r}) and model.base_url",
    413: "the request is too large: lower model.max_batch ({max_batch}) or model.max_batch_tokens",
    422: "the request was refused: the batch may be too large (lower model.max_batch, now "
    "{max_batch}), an input too long for the model, or a setting not supported",
}


def endpoint_of(base_url: str) -> str:
    """``base_url`` without user info, query or fragment: safe to show and to fingerprint."""
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path.rstrip('/')}"


def counted(n: int, one: str, many: str) -> str:
    """``1 retry``, ``2 retries``."""
    return f"{n} {one if n == 1 else many}"


# --- what every client of an OpenAI-compatible service shares: reading an answer, and saying
# what happened to a request that failed -------------------------------------------------------


def answer_json(text: str) -> Any:
    """``text`` read as JSON; json.JSONDecodeError for anything Python cannot hold as JSON, also
    a number of more digits than it converts (json raises a bare ValueError for it) and arrays
    nested deeper than its recursion allows."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except ValueError:  # an integer past sys.get_int_max_str_digits()
        long = re.search(rf"\d{{{sys.get_int_max_str_digits() + 1},}}", text)
        where = long.start() if long else 0
        raise json.JSONDecodeError("a number of too many digits", text, where) from None
    except RecursionError:
        raise json.JSONDecodeError("arrays or objects nested too deeply", text, 0) from None


def retries_taken(error: Any) -> int:
    """How many times the request behind ``error`` (an openai client error) was sent again
    before it failed: the count the client puts on each try (``x-stainless-retry-count``)."""
    request = getattr(error, "request", None)
    value = request.headers.get("x-stainless-retry-count", "") if request is not None else ""
    return int(value) if value.isascii() and value.isdigit() and len(value) < 4 else 0


def _asked_wait(headers: Mapping[str, str]) -> float | None:
    """The seconds a server's ``retry-after-ms`` or ``Retry-After`` asks to wait (None: none)."""
    for name, divisor in (("retry-after-ms", 1000), ("retry-after", 1)):
        try:
            return float(headers.get(name) or "") / divisor
        except ValueError:
            continue
    try:
        when = email.utils.parsedate_to_datetime(headers.get("retry-after") or "")
        return when.timestamp() - time.time()
    except (TypeError, ValueError, OverflowError):
        return None


def _why_not_retried(response: Any) -> str:
    """Why the client sent a retryable answer's request no more, from the answer's headers."""
    headers = response.headers if response is not None else {}
    if headers.get("x-should-retry") == "false":
        return "the server said not to (x-should-retry: false)"
    wait = _asked_wait(headers)
    if wait is not None and wait > MAX_WAIT_S:
        shown = f"{wait:,.0f} s" if math.isfinite(wait) and wait < 1e15 else "forever"
        return (
            f"the server asked to wait {shown} (Retry-After), more than the {MAX_WAIT_S} s a "
            "retry waits at most"
        )
    return ""


def retry_story(error: Any, max_retries: int, section: str) -> tuple[str, bool]:
    """What happened to the request behind ``error`` before it failed for good, as counted, to
    follow "failed" (``after 2 retries``; ``with no retry: the server asked to wait ...``), and
    whether its retries were spent."""
    taken = retries_taken(error)
    done = f"after {counted(taken, 'retry', 'retries')}" if taken else "with no retry"
    if taken >= max_retries:
        return (done if max_retries else f"{done} ({section}.max_retries is 0)"), True
    why = _why_not_retried(getattr(error, "response", None))
    if not why:
        return done, False
    return (f"{done}, then no more: {why}" if taken else f"{done}: {why}"), False


def status_failure(
    error: Any, hints: Mapping[int, str], section: str, max_retries: int, redact: Redactor
) -> str:
    """What an answer with a failing status (an openai ``APIStatusError``) says, for a message:
    ``HTTP 429: ...``: the status, what it likely means (``hints``, formatted by the caller;
    for a retried status, what happened to the retries) and the server's own text, redacted."""
    said, body = error.message, error.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        said = str(inner.get("message", inner) if isinstance(inner, dict) else inner)
    status = error.status_code
    hint = hints.get(status)
    if hint is None and (status >= 500 or status in (408, 409, 429)):
        story, spent = retry_story(error, max_retries, section)
        if status != 429:
            hint = f"the server failed {story}"
        elif spent:
            hint = (
                f"still rate limited {story}: lower {section}.concurrency or raise "
                f"{section}.max_retries"
            )
        else:
            hint = f"rate limited {story}; lower {section}.concurrency, or try later"
    return f"HTTP {status}: {hint or 'not retried'}. The server said: {redact.shown(said)}"


def connection_failure(error: Any, max_retries: int, section: str, redact: Redactor) -> str:
    """What a request that got no answer (an openai ``APIConnectionError``, a timeout included)
    says, for a message: what happened to its retries and why it failed, redacted."""
    story, _ = retry_story(error, max_retries, section)
    cause = f" ({redact.shown(str(error.__cause__))})" if error.__cause__ else ""
    return f"{story}: {type(error).__name__}: {redact.shown(str(error))}{cause}"


@dataclass
class ApiUsage:
    """What the endpoint was asked and billed for, per kind of text."""

    requests: int = 0
    retries: int = 0
    texts: int = 0
    tokens: int = 0  # as the API's usage reports them (0 when a server reports none)
    tokens_reported: bool = True  # False once an answer came without usage


def plan_batches(inputs: Sequence[str], max_texts: int, max_tokens: int) -> list[np.ndarray]:
    """Consecutive batches of positions: at most ``max_texts`` texts and, where more than one
    text, at most ``max_tokens`` estimated tokens each."""
    batches: list[np.ndarray] = []
    start, tokens = 0, 0
    for i, text in enumerate(inputs):
        cost = estimate_tokens(text)
        if i > start and (i - start >= max_texts or tokens + cost > max_tokens):
            batches.append(np.arange(start, i))
            start, tokens = i, 0
        tokens += cost
    if start < len(inputs):
        batches.append(np.arange(start, len(inputs)))
    return batches


def api_key(variable: str | None, section: str, endpoint: str, reader: str) -> str:
    """The API key from the environment variable ``variable`` (``<section>.api_key_env``);
    NO_KEY when none is named; ConfigError naming the variable when it is not set."""
    if variable is None:
        return NO_KEY
    key = os.environ.get(variable, "")
    if not key:
        raise ConfigError(
            f"{section}.api_key_env: the environment variable {variable} is not set "
            f"({reader} reads the key for {endpoint} from it)"
        )
    return key


def key_redactor(key: str) -> Redactor:
    """Masks ``key``, in every form a server can echo it, in text to be shown."""
    return Redactor([] if key == NO_KEY else [key])


def openai_client(
    base_url: str,
    key: str,
    max_retries: int,
    timeout: float,
    section: str,
    user: str,
    max_bytes: int,
) -> Any:
    """The openai package's async client under evalret's HTTP policy (engines/http_policy.py),
    shared by the embedding provider, the judge and the reranker; ConfigError naming the extra
    when the package is missing (``user``: who needs it; ``max_bytes``: the most an answer may
    hold, the section's ``response_limit``)."""
    try:
        import openai
    except ImportError:
        missing = f"{user} needs the openai package: pip install 'evalret[openai]'"
        raise ConfigError(missing) from None
    return openai.AsyncOpenAI(
        api_key=key,
        base_url=base_url,
        max_retries=max_retries,
        timeout=timeout,
        http_client=async_client(base_url, timeout, section, max_bytes),
    )


class OpenAIEmbedder:
    """Embeds through an OpenAI-compatible ``/embeddings`` endpoint (see the module docstring):
    an ``ApiEmbedder`` and a ``StreamingEmbedder`` that says the text it sends (``fed``), not a
    ``LocalModel``: the kind also picks its ``request_fields``, so the cache keys a text by kind
    and text (engines/protocols.py)."""

    endpoint: str  # engines/protocols.ApiEmbedder

    def __init__(self, config: OpenAIModelConfig, _model_cache: Path | None = None) -> None:
        self.config = config
        self.endpoint = endpoint_of(config.base_url)
        self.url = f"{self.endpoint}/embeddings"
        self.usage: dict[str, ApiUsage] = {}
        self.encoding = config.encoding_format
        self.dim: int | None = None
        self.served_model: str | None = None  # the answers' model, when not config.name

    @cached_property
    def _key(self) -> str:
        return api_key(self.config.api_key_env, "model", self.endpoint, "provider openai")

    @cached_property
    def redact(self) -> Redactor:
        """Masks the key, in every form a server can echo it, in text to be shown."""
        return key_redactor(self._key)

    def _new_client(self) -> Any:
        """An async client under evalret's HTTP policy (engines/http_policy.py); one per
        event loop (a run of ``embed_batches``)."""
        c = self.config
        return openai_client(
            c.base_url,
            self._key,
            c.max_retries,
            c.timeout,
            "model",
            "model.provider openai",
            c.response_limit,
        )

    def requests(self, fed: Sequence[str]) -> int:
        """How many requests the texts ``fed`` (as sent: ``fed()``) take (the dry run's plan)."""
        return len(plan_batches(fed, self.config.max_batch, self.config.max_batch_tokens))

    def identity(self) -> dict[str, Any]:
        c = self.config
        return {
            "provider": "openai",
            "name": c.name,
            "endpoint": self.endpoint,
            "source": f"{c.name} at {self.endpoint}",
            "weights_sha256": None,
            "weights": WEIGHTS_NOTE,
            "dimensions": c.dimensions,
            "request_fields": c.request_fields.model_dump() if c.request_fields else None,
            "normalize": c.normalize,
            "query_prefix": c.query_prefix,
            "document_prefix": c.document_prefix,
            "truncate_dim": c.truncate_dim,
        }

    def fed(self, texts: Sequence[str], kind: Kind) -> list[str]:
        """The texts as they are fed to the model (sent): after their kind's prefix."""
        prefix = self.config.query_prefix if kind == "query" else self.config.document_prefix
        return [prefix + t for t in texts]

    def report(self) -> dict[str, Any]:
        """The report's ``embedding.api``: the endpoint, the model the answers named when it is
        not ``model.name`` (``served_model``), and what each kind of text used."""
        price = self.config.price_per_million_tokens
        kinds: dict[str, dict[str, Any]] = {}
        for kind, u in self.usage.items():
            kinds[kind] = {
                "requests": u.requests,
                "retries": u.retries,
                "texts": u.texts,
                "tokens": u.tokens if u.tokens_reported else None,
            }
            if price is not None and u.tokens_reported:
                kinds[kind]["cost"] = round(u.tokens * price / 1e6, 6)
        served = {"served_model": self.served_model} if self.served_model is not None else {}
        return {"endpoint": self.endpoint, "model": self.config.name, **served, **kinds}

    def embed_batches(self, texts: Sequence[str], kind: Kind) -> Iterator[Batch]:
        """Each batch of ``texts`` as soon as its answer is in (in the order answers arrive),
        ``concurrency`` requests in flight; finished (truncated, normalized) vectors. When a
        request fails for good, the batches answered so far are yielded first (the cache keeps
        them), then the error is raised and every other request is cancelled at once."""
        inputs = self.fed(texts, kind)
        batches = plan_batches(inputs, self.config.max_batch, self.config.max_batch_tokens)
        if not batches:
            return
        client = self._new_client()  # the package and the key are checked before any request
        loop = LoopThread()
        try:
            yield from self._drive(loop, client, inputs, batches, kind)
        finally:
            loop.run(client.close())
            loop.close()

    def _drive(
        self,
        loop: LoopThread,
        client: Any,
        inputs: list[str],
        batches: list[np.ndarray],
        kind: Kind,
    ) -> Iterator[Batch]:
        pending = iter(batches)
        running: dict[asyncio.Task[np.ndarray], np.ndarray] = {}
        try:
            while True:
                while len(running) < self.config.concurrency:
                    rows = next(pending, None)
                    if rows is None:
                        break
                    request = self._request(client, [inputs[int(i)] for i in rows], kind)
                    running[loop.start(request)] = rows
                if not running:
                    return
                done = loop.first_done(running)
                failed = [e for t in done if (e := t.exception()) is not None]
                for task in done:  # every answered batch is kept before a failure is raised
                    rows = running.pop(task)
                    if task.exception() is None:
                        try:
                            vectors = self._finish(task.result())
                        except ModelError as e:  # another dimension: the other batches still count
                            failed.append(e)
                            continue
                        yield rows, vectors
                if failed:
                    raise failed[0]
        finally:
            loop.cancel(running)  # requests in flight, or waiting for a retry, stop now

    def _finish(self, vectors: np.ndarray) -> np.ndarray:
        """A batch's vectors truncated and normalized, after checking that their dimension is
        the run's (the first answer sets it)."""
        if self.dim is not None and vectors.shape[1] != self.dim:
            raise ModelError(
                f"{self.url} answered vectors of dimension {vectors.shape[1]} after {self.dim}"
            )
        self.dim = int(vectors.shape[1])
        return finish_vectors(vectors, self.config.truncate_dim, self.config.normalize)

    def embed(
        self, texts: Sequence[str], kind: Kind, progress: Progress | None = None
    ) -> np.ndarray:
        """``texts`` embedded, rows in input order."""
        out: np.ndarray | None = None
        for rows, vectors in self.embed_batches(texts, kind):
            if out is None:
                out = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
            out[rows] = vectors
            if progress is not None:
                progress(len(rows))
        return out if out is not None else np.zeros((0, self.dim or 0), np.float32)

    async def _request(self, client: Any, batch: list[str], kind: Kind) -> np.ndarray:
        """One request, with the client's retries; its answer checked."""
        import openai

        c = self.config
        fields = getattr(c.request_fields, kind) if c.request_fields else {}
        options: dict[str, Any] = {"model": c.name, "input": batch}
        if c.dimensions is not None:
            options["dimensions"] = c.dimensions
        if fields:
            options["extra_body"] = fields
        try:
            raw = await self._send(client, options)
        except openai.APIStatusError as e:
            raise ModelError(self._status_message(e)) from None
        except openai.APIConnectionError as e:
            said = connection_failure(e, c.max_retries, "model", self.redact)
            raise ModelError(f"embedding request to {self.url} failed {said}") from None
        except PolicyError as e:
            more = (
                f" (or lower model.max_batch, {c.max_batch} texts a request)"
                if isinstance(e, AnswerTooLarge)
                else ""
            )
            raise ModelError(
                f"embedding request to {self.url}: {self.redact(str(e))}{more}"
            ) from None
        answer = self._answer(raw.http_response)
        vectors = self._vectors(answer.get("data"), len(batch))
        tokens = self._tokens(answer.get("usage"), batch)
        self._note_model(answer.get("model"))
        use = self.usage.setdefault(kind, ApiUsage())
        use.requests += 1
        use.retries += int(getattr(raw, "retries_taken", 0) or 0)
        use.texts += len(batch)
        if tokens is None:
            use.tokens_reported = False
        else:
            use.tokens += tokens
        return vectors

    async def _send(self, client: Any, options: dict[str, Any]) -> Any:
        """Post ``options``; a 400 that refuses base64 switches this run to float and asks
        once more."""
        import openai

        create = client.embeddings.with_raw_response.create
        encoding = self.encoding
        try:
            return await create(**options, encoding_format=encoding)
        except openai.BadRequestError as e:
            refused = "base64" in str(e.body) or "encoding_format" in str(e.body)
            if encoding != "base64" or not refused:
                raise
            self.encoding = "float"
            return await create(**options, encoding_format="float")

    def _status_message(self, error: Any) -> str:
        c = self.config
        names = {"key": c.api_key_env, "name": c.name, "max_batch": c.max_batch}
        hints = {status: hint.format(**names) for status, hint in HINTS.items()}
        said = status_failure(error, hints, "model", c.max_retries, self.redact)
        return f"embedding request to {self.url} failed: {said}"

    def _answer(self, response: Any) -> dict[str, Any]:
        """The answer's JSON object; ModelError for anything else a status 200 may carry: an
        HTML page, cut-short JSON, an ``{"error": ...}`` body."""
        text = response.content.decode("utf-8", errors="replace")
        try:
            answer = answer_json(text)
        except json.JSONDecodeError as e:
            if text.lstrip()[:1] in ("{", "["):
                raise ModelError(
                    f"{self.url} answered JSON that cannot be read ({e.msg} at character "
                    f"{e.pos} of {len(text)}): the answer was cut short or is malformed"
                ) from None
            kind = response.headers.get("content-type") or "no content type"
            raise ModelError(
                f"{self.url} answered status {response.status_code} with "
                f"{self.redact.shown(kind, 80)}, not JSON: "
                f"{self.redact.shown(' '.join(text.split()))}"
            ) from None
        if isinstance(answer, dict) and "error" in answer:
            error = answer["error"]
            said = error.get("message", error) if isinstance(error, dict) else error
            raise ModelError(
                f"{self.url} answered status {response.status_code} with an error: "
                f"{self.redact.shown(str(said))}"
            )
        if not isinstance(answer, dict):
            raise ModelError(f"{self.url} answered JSON that is not an object")
        return answer

    def _tokens(self, usage: object, batch: list[str]) -> int | None:
        """The answer's ``usage.total_tokens`` (None when not reported), refused when it is no
        token count: negative, not an integer, or more than any tokenizer makes of the batch."""
        tokens = usage.get("total_tokens") if isinstance(usage, dict) else None
        if tokens is None:
            return None
        bound = max_tokens(batch)
        if type(tokens) is not int or not 0 <= tokens <= bound:
            raise ModelError(
                f"{self.url} answered usage.total_tokens {self.redact.shown(repr(tokens), 40)} "
                f"for {counted(len(batch), 'text', 'texts')}: not a token count "
                f"(0 to {bound}, one per byte and {TOKENS_PER_TEXT} per text at most)"
            )
        return tokens

    def _note_model(self, model: object) -> None:
        """Keeps the first model name an answer gives that is not ``model.name`` (a server
        serving one model answers to any name)."""
        if self.served_model is None and isinstance(model, str) and model != self.config.name:
            self.served_model = self.redact.shown(model, SERVED_MODEL_CHARS)

    def _vectors(self, data: object, n: int) -> np.ndarray:
        """The answer's vectors as float32 [n, dim], in input order; ModelError naming the
        endpoint for a wrong count, order, dimension or value."""
        if not isinstance(data, list) or not all(isinstance(d, dict) for d in data):
            raise ModelError(f"{self.url} answered without a list of embeddings (data)")
        if len(data) != n:
            raise ModelError(f"{self.url} answered {len(data)} vectors for {n} inputs")
        indexes: list[Any] = [d.get("index") for d in data]
        if any(i is not None for i in indexes):  # in input order by index, each once
            by_index = dict(zip(indexes, data, strict=True))
            exact = all(type(i) is int for i in by_index) and set(by_index) == set(range(n))
            if len(by_index) != n or not exact:
                raise ModelError(
                    f"{self.url} answered with indexes that are not 0..{n - 1} once each"
                )
            data = [by_index[i] for i in range(n)]
        rows = [self._decode(d.get("embedding")) for d in data]
        dims = {len(r) for r in rows}
        expected = self.config.dimensions
        if len(dims) != 1 or (expected is not None and dims != {expected}):
            shown = ", ".join(str(d) for d in sorted(dims))
            raise ModelError(
                f"{self.url} answered vectors of dimension {shown}"
                + (f" (expected {expected})" if expected is not None else " in one batch")
            )
        vectors = np.stack(rows)
        if not np.isfinite(vectors).all() or vectors.shape[1] == 0:
            raise ModelError(f"{self.url} answered empty or non-finite vectors")
        return vectors

    def _decode(self, embedding: object) -> np.ndarray:
        """One vector: base64 of little-endian float32, or a list of numbers."""
        try:
            if isinstance(embedding, str):
                return np.frombuffer(base64.b64decode(embedding, validate=True), dtype="<f4")
            if not isinstance(embedding, list):
                raise TypeError(f"a {type(embedding).__name__}, not a list or base64")
            # numbers only: numpy would take "0.5" and true as 0.5 and 1.0
            odd = next((x for x in embedding if type(x) not in (int, float)), None)
            if odd is not None:
                raise TypeError(f"{type(odd).__name__} {odd!r} where a number belongs")
            return np.asarray(embedding, dtype=np.float32).reshape(-1)
        except (ValueError, TypeError, OverflowError) as e:  # 10**400 overflows a float
            raise ModelError(
                f"{self.url} answered a vector evalret cannot read: {self.redact.shown(str(e))}"
            ) from None
