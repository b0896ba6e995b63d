"""An OpenAI-compatible chat-completions endpoint, the LLM judge's transport (``judge:``).

Any server that answers ``POST {base_url}/chat/completions`` as OpenAI does. The requests go
through the same pieces as the embedding provider (engines/openai_api.py): the official
``openai`` client (extra ``evalret[openai]``) with its retries (429, 408, 409, 5xx and timeouts,
exponential backoff with jitter, ``Retry-After`` honoured, ``judge.max_retries``), evalret's HTTP
policy as its transport (engines/http_policy.py: the configured origin only, ``judge.timeout``
bounding a request as a whole, the key masked in every form a server can echo it), and the
endpoint shown without user info, query or fragment (``openai_api.endpoint_of``).

What a caller gets: each prompt's answer text as soon as it arrives (``concurrency`` requests in
flight), so that it can keep the answer at once. A request that fails for good is no exception
for the whole batch: its prompt comes back with ``failed`` set (a message naming the endpoint,
the status and what it likely means, the server's text redacted), and the other prompts go on.
Only a key that is missing, or refused (401, 403) or a model or path not found (404), stops
everything (ModelError, exit 3): every other request would fail the same way.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Generic, TypeVar

from evalret.data.config import JudgeConfig
from evalret.engines.http_policy import LoopThread, Redactor, RequestRefused
from evalret.engines.openai_api import api_key, counted, endpoint_of, key_redactor, openai_client
from evalret.errors import ModelError

K = TypeVar("K")
FATAL = {
    401: "the key was refused: check the key in {key}",
    403: "the key in {key} may not use this model or endpoint",
    404: "not found: check judge.name ({name!r}) and judge.base_url",
}
HINTS = {
    400: "the request was refused (a prompt too long for the model, or a request field the "
    "server does not take)",
    413: "the prompt is too large for the server",
    422: "the request was refused (a setting the server does not take)",
    429: "still rate limited after {retries}: lower judge.concurrency or raise judge.max_retries",
}


@dataclass
class ChatUsage:
    """What the endpoint was asked and billed for."""

    requests: int = 0  # answered (status 200)
    retries: int = 0
    failed: int = 0  # requests that failed for good
    input_tokens: int = 0  # as the answers' usage reports them
    output_tokens: int = 0
    tokens_reported: bool = True  # False once an answer came without usage


@dataclass(frozen=True)
class ChatReply(Generic[K]):
    """The answer to one prompt: its text (None when the answer held none) or why it failed."""

    key: K
    text: str | None
    failed: str | None = None


class ChatClient:
    """Sends prompts to ``{base_url}/chat/completions`` (see the module docstring)."""

    def __init__(self, config: JudgeConfig) -> None:
        self.config = config
        self.endpoint = endpoint_of(config.base_url)
        self.url = f"{self.endpoint}/chat/completions"
        self.usage = ChatUsage()

    @cached_property
    def _key(self) -> str:
        return api_key(self.config.api_key_env, "judge", self.endpoint, "the judge")

    @cached_property
    def redact(self) -> Redactor:
        """Masks the key, in every form a server can echo it, in text to be shown."""
        return key_redactor(self._key)

    def _new_client(self) -> Any:
        c = self.config
        return openai_client(
            c.base_url, self._key, c.max_retries, c.timeout, "judge", "the judge (provider openai)"
        )

    def replies(self, prompts: Sequence[tuple[K, str]]) -> Iterator[ChatReply[K]]:
        """Each prompt's reply as soon as it is in, ``concurrency`` requests in flight. A fatal
        failure (module docstring) is raised after the replies already in were yielded, and
        every other request is cancelled at once."""
        if not prompts:
            return
        client = self._new_client()  # the package and the key are checked before any request
        loop = LoopThread()
        try:
            yield from self._drive(loop, client, prompts)
        finally:
            loop.run(client.close())
            loop.close()

    def _drive(
        self, loop: LoopThread, client: Any, prompts: Sequence[tuple[K, str]]
    ) -> Iterator[ChatReply[K]]:
        pending = iter(prompts)
        running: dict[asyncio.Task[ChatReply[K]], K] = {}
        try:
            while True:
                while len(running) < self.config.concurrency:
                    nxt = next(pending, None)
                    if nxt is None:
                        break
                    running[loop.start(self._ask(client, *nxt))] = nxt[0]
                if not running:
                    return
                done = loop.first_done(running)
                fatal = [e for t in done if (e := t.exception()) is not None]
                for task in done:
                    running.pop(task)
                    if task.exception() is None:
                        yield task.result()
                if fatal:
                    raise fatal[0]
        finally:
            loop.cancel(running)

    async def _ask(self, client: Any, key: K, prompt: str) -> ChatReply[K]:
        """One prompt, with the client's retries: its reply (ModelError when fatal)."""
        import openai

        c = self.config
        options: dict[str, Any] = {
            "model": c.name,
            "messages": [{"role": "user", "content": prompt}],
            "temperature": c.temperature,
        }
        if c.request_fields:
            options["extra_body"] = dict(c.request_fields)
        try:
            raw = await client.chat.completions.with_raw_response.create(**options)
        except openai.APIStatusError as e:
            message = self._status_message(e.status_code, e.body, e.message)
            if e.status_code in FATAL:
                raise ModelError(message) from None
            return self._failed(key, message)
        except openai.APIConnectionError as e:
            cause = f" ({self.redact.shown(str(e.__cause__))})" if e.__cause__ else ""
            return self._failed(
                key,
                f"judge request to {self.url} failed after "
                f"{counted(c.max_retries, 'retry', 'retries')}: "
                f"{type(e).__name__}: {self.redact.shown(str(e))}{cause}",
            )
        except RequestRefused as e:
            raise ModelError(f"judge request to {self.url}: {self.redact(str(e))}") from None
        self.usage.requests += 1
        self.usage.retries += int(getattr(raw, "retries_taken", 0) or 0)
        return ChatReply(key, self._content(raw.http_response))

    def _failed(self, key: K, message: str) -> ChatReply[K]:
        self.usage.failed += 1
        return ChatReply(key, None, message)

    def _status_message(self, status: int, body: object, message: str) -> str:
        said = message
        if isinstance(body, dict):
            error = body.get("error", body)
            said = str(error.get("message", error) if isinstance(error, dict) else error)
        c = self.config
        retries = counted(c.max_retries, "retry", "retries")
        hint = FATAL.get(status) or HINTS.get(status)
        if hint is None:
            retried = status >= 500 or status in (408, 409)
            hint = f"the server failed after {retries}" if retried else "not retried"
        hint = hint.format(key=c.api_key_env, name=c.name, retries=retries)
        return (
            f"judge request to {self.url} failed: HTTP {status}: {hint}. "
            f"The server said: {self.redact.shown(said)}"
        )

    def _content(self, response: Any) -> str | None:
        """The first choice's message text; None when the answer holds none (not JSON, an
        error body, no choices): the caller counts it as an answer it cannot read."""
        try:
            answer = json.loads(response.content.decode("utf-8", errors="replace"))
        except json.JSONDecodeError:
            return None
        if not isinstance(answer, dict):
            return None
        self._count_tokens(answer.get("usage"))
        choices = answer.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            return None
        message = choices[0].get("message")
        content = message.get("content") if isinstance(message, dict) else None
        return content if isinstance(content, str) else None

    def _count_tokens(self, usage: object) -> None:
        prompt = usage.get("prompt_tokens") if isinstance(usage, dict) else None
        completion = usage.get("completion_tokens") if isinstance(usage, dict) else None
        if type(prompt) is int and type(completion) is int and prompt >= 0 and completion >= 0:
            self.usage.input_tokens += prompt
            self.usage.output_tokens += completion
        else:
            self.usage.tokens_reported = False
