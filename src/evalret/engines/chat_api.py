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
The same client sends `evalret golden synth`'s generation requests (``synth.chat``, or the
judge's endpoint): ``section`` names the config section in every message (``judge.name``,
``synth.chat.max_retries``). Only a key that is missing, or refused (401, 403) or a model or
path not found (404), or what the HTTP policy refuses (a redirect elsewhere, an answer larger
than ``judge.max_response_mb``) stops everything (ModelError, exit 3): every other request would
fail the same way.

An answer's token counts (``usage``) are checked as the embedding provider checks its own
(engines/tokens.max_tokens): the prompt's at most one per byte of the prompt and 256 more, the
answer's at most one per byte of its text, 256 more and a reasoning model's hidden output
(``HIDDEN_OUTPUT_TOKENS``). A figure beyond them is no token count: the request fails (its
answer is not used), and no cost is ever computed from it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Generic, TypeVar

from evalret.data.config import ChatEndpointConfig
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
from evalret.engines.tokens import HIDDEN_OUTPUT_TOKENS, TOKENS_PER_TEXT, max_tokens
from evalret.errors import ModelError

K = TypeVar("K")
FATAL = {
    401: "the key was refused: check the key in {key}",
    403: "the key in {key} may not use this model or endpoint",
    404: "not found: check {section}.name ({name!r}) and {section}.base_url",
}
TOKEN_FIELDS = ("prompt_tokens", "completion_tokens")
BEYOND = ("", f", and {HIDDEN_OUTPUT_TOKENS:,} of hidden reasoning")  # what each bound adds
HINTS = {
    400: "the request was refused (a prompt too long for the model, or a request field the "
    "server does not take)",
    413: "the prompt is too large for the server",
    422: "the request was refused (a setting the server does not take)",
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

    def __init__(self, config: ChatEndpointConfig, section: str = "judge") -> None:
        self.config = config
        self.section = section  # the config section named in messages
        self.who = "the judge" if section == "judge" else "the query writer"
        self.endpoint = endpoint_of(config.base_url)
        self.url = f"{self.endpoint}/chat/completions"
        self.usage = ChatUsage()

    @cached_property
    def _key(self) -> str:
        return api_key(self.config.api_key_env, self.section, self.endpoint, self.who)

    @cached_property
    def redact(self) -> Redactor:
        """Masks the key, in every form a server can echo it, in text to be shown."""
        return key_redactor(self._key)

    def _new_client(self) -> Any:
        c = self.config
        return openai_client(
            c.base_url,
            self._key,
            c.max_retries,
            c.timeout,
            self.section,
            f"{self.who} (provider openai)",
            c.response_limit,
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
            message = self._status_message(e)
            if e.status_code in FATAL:
                raise ModelError(message) from None
            return self._failed(key, message)
        except openai.APIConnectionError as e:
            said = connection_failure(e, c.max_retries, self.section, self.redact)
            return self._failed(key, f"{self.section} request to {self.url} failed {said}")
        except PolicyError as e:
            raise ModelError(
                f"{self.section} request to {self.url}: {self.redact(str(e))}"
            ) from None
        self.usage.requests += 1
        self.usage.retries += int(getattr(raw, "retries_taken", 0) or 0)
        answer = self._answer(raw.http_response)
        content = self._text(answer)
        problem = self._count_tokens(answer, prompt, content)
        if problem is not None:
            return self._failed(key, problem)
        return ChatReply(key, content)

    def _failed(self, key: K, message: str) -> ChatReply[K]:
        self.usage.failed += 1
        return ChatReply(key, None, message)

    def _status_message(self, error: Any) -> str:
        c = self.config
        hints = {
            status: hint.format(key=c.api_key_env, name=c.name, section=self.section)
            for status, hint in (FATAL | HINTS).items()
        }
        said = status_failure(error, hints, self.section, c.max_retries, self.redact)
        return f"{self.section} request to {self.url} failed: {said}"

    def _answer(self, response: Any) -> dict[str, Any] | None:
        """The answer's JSON object; None when it is none (not JSON, a number Python cannot
        read, not an object)."""
        try:
            answer = answer_json(response.content.decode("utf-8", errors="replace"))
        except json.JSONDecodeError:
            return None
        return answer if isinstance(answer, dict) else None

    @staticmethod
    def _text(answer: dict[str, Any] | None) -> str | None:
        """The first choice's message text; None when the answer holds none (not JSON, an
        error body, no choices): the caller counts it as an answer it cannot read."""
        choices = answer.get("choices") if answer is not None else None
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            return None
        message = choices[0].get("message")
        content = message.get("content") if isinstance(message, dict) else None
        return content if isinstance(content, str) else None

    def _count_tokens(
        self, answer: dict[str, Any] | None, prompt: str, content: str | None
    ) -> str | None:
        """Adds the answer's token counts to the usage; why they are no token counts (module
        docstring) when they are not, None when they are or when the answer gives none."""
        if answer is None:
            return None
        usage = answer.get("usage")
        given = [usage.get(k) if isinstance(usage, dict) else None for k in TOKEN_FIELDS]
        counts = [n for n in given if type(n) is int]
        if len(counts) != len(TOKEN_FIELDS):
            self.usage.tokens_reported = False
            return None
        bounds = (max_tokens([prompt]), max_tokens([content or ""]) + HIDDEN_OUTPUT_TOKENS)
        for name, n, bound, beyond in zip(TOKEN_FIELDS, counts, bounds, BEYOND, strict=True):
            if not 0 <= n <= bound:
                return (
                    f"{self.section} request to {self.url}: the answer's usage.{name} "
                    f"{self.redact.shown(str(n), 40)} is no token count (0 to {bound:,}: one per "
                    f"byte and {TOKENS_PER_TEXT} more{beyond})"
                )
        self.usage.input_tokens += counts[0]
        self.usage.output_tokens += counts[1]
        return None
