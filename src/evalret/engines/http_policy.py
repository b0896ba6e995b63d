"""The policy of every HTTP request evalret sends to a service the user named (an embedding
API today; any HTTP provider builds its client here), enforced in the client's transport, which
sees each request and each redirect hop:

- **origin**: a request goes only to the origin (scheme, host and port) of the configured URL.
  A redirect within that origin is followed (a 307 or 308 keeps the method and the body: a
  server moving ``/v1/embeddings`` to ``/v1/embeddings/``); a redirect to any other origin,
  ``http`` to ``https`` of the same host included, is refused before anything is sent there
  (``RequestRefused``, never retried): the texts of a golden set go nowhere the config does not
  name.
- **deadline**: ``timeout`` seconds bound one request as a whole (connecting, sending, the
  headers and the whole body), not each read: a server that drips its answer a byte at a
  time is cut at the deadline, with the library's own timeout error, so the client retries it
  as it retries any timeout.
- **size**: an answer's body may hold ``max_bytes`` at most, as sent and once decoded
  (gzip, deflate: decoded piece by piece as it arrives, never whole): a ``Content-Length``
  over the limit is refused before the body is read, and a body that passes it, or that
  inflates past it, is cut there, its connection closed (``AnswerTooLarge``, never retried:
  the same request would get the same answer). Errors name the setting that raises it.
- **redaction**: ``Redactor`` masks a secret in every form a server can echo back: verbatim,
  JSON-escaped, URL-encoded (either hex case, ``+`` for spaces) and inside base64 at any byte
  offset (HTTP Basic of ``user:key`` or ``:key``, standard or URL-safe alphabet). Every text
  shown from a server or a client error passes through ``Redactor.shown``, also bounded.

Requests run as asyncio tasks on a ``LoopThread``: cancelling one stops it at once, a retry's
wait included, and none holds the process at exit.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import threading
from collections.abc import Coroutine, Iterable
from typing import Any, TypeVar
from urllib.parse import quote, quote_plus, urlsplit
from urllib.request import getproxies_environment, proxy_bypass

MASK = "***"
MIN_FORM = 8  # shorter encoded forms are not masked (they would mask ordinary text); the
# secret itself always is
SHOWN_CHARS = 300  # of a server's text in a message
MAX_REDIRECTS = 5
MIB = 1024 * 1024
T = TypeVar("T")


class PolicyError(Exception):
    """What the policy refuses. Deliberately not an HTTP library error: a client's retry loop
    lets it through instead of retrying."""


class RequestRefused(PolicyError):
    """A request the policy does not send (a redirect to another origin)."""


class AnswerTooLarge(PolicyError):
    """An answer whose body, as sent or once decoded, is larger than the limit."""


def mib(n: int) -> str:
    """``64 MiB``; ``1,000 bytes`` below one MiB."""
    return f"{n / MIB:,.6g} MiB" if n >= MIB else f"{n:,} bytes"


def origin_of(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) with the scheme's default port made explicit."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    port = parts.port or {"http": 80, "https": 443}.get(scheme)
    return scheme, (parts.hostname or "").lower(), port


def _base64_cores(data: bytes) -> set[str]:
    """The base64 characters that depend on ``data`` alone, wherever it starts in a longer
    string (at offset 0, 1 or 2 modulo 3), in the standard and URL-safe alphabets."""
    cores = set()
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + data).decode()
        start = -(-8 * shift // 6)  # the first character made of data bits only
        end = 8 * (shift + len(data)) // 6  # past the last one
        core = encoded[start:end]
        cores |= {core, core.translate(str.maketrans("+/", "-_"))}
    return cores


def secret_forms(secret: str) -> set[str]:
    """Every form of ``secret`` a server may echo back (see the module docstring)."""
    forms = {secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]}
    for encoded in (quote(secret, safe=""), quote_plus(secret, safe="")):
        forms |= {encoded, re.sub(r"%[0-9A-F]{2}", lambda m: m.group().lower(), encoded)}
    forms |= _base64_cores(secret.encode())
    return {f for f in forms if len(f) >= MIN_FORM} | {secret}


class Redactor:
    """Masks the given secrets, in all their forms, in any text."""

    def __init__(self, secrets: Iterable[str]) -> None:
        forms = set().union(*(secret_forms(s) for s in secrets if s))
        ordered = sorted(forms, key=len, reverse=True)  # the longest form first
        self.pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None

    def __call__(self, text: str) -> str:
        return self.pattern.sub(MASK, text) if self.pattern is not None else text

    def shown(self, text: str, limit: int = SHOWN_CHARS) -> str:
        """``text`` masked, then shortened to ``limit`` characters (masked first, so that a cut
        cannot leave part of a secret)."""
        text = self(text)
        return text if len(text) <= limit else text[:limit] + "..."


class _PolicyTransport:
    """Wraps the library's transport: each hop's origin checked, each request under one
    deadline, its body read within it."""

    def __init__(
        self,
        inner: Any,
        httpx: Any,
        base_url: str,
        timeout: float,
        section: str,
        max_bytes: int,
    ) -> None:
        self.inner, self.httpx = inner, httpx
        self.origin = origin_of(base_url)
        self.timeout = timeout
        self.section = section  # the config section whose base_url and timeout apply
        self.max_bytes = max_bytes

    async def handle_async_request(self, request: Any) -> Any:
        import anyio

        origin = origin_of(str(request.url))
        if origin != self.origin:
            scheme, host, port = origin
            raise RequestRefused(
                f"a redirect to {scheme}://{host}:{port} "
                f"(another origin than {self.section}.base_url's) was not followed: nothing was "
                f"sent there; set {self.section}.base_url to that address if it is the one to use"
            )
        try:
            with anyio.fail_after(self.timeout):
                response = await self.inner.handle_async_request(request)
                try:
                    body = await self._read(response)
                finally:
                    await response.aclose()  # a body cut short: its connection is closed
        except TimeoutError:
            raise self.httpx.ReadTimeout(
                f"no complete answer within {self.section}.timeout ({self.timeout:g} s)",
                request=request,
            ) from None
        # the body is decoded here: the answer handed on says so
        headers = [
            (k, v)
            for k, v in response.headers.multi_items()
            if k.lower() not in ("content-encoding", "content-length")
        ]
        return self.httpx.Response(
            response.status_code,
            headers=headers,
            content=body,
            extensions=response.extensions,
            request=request,
        )

    async def _read(self, response: Any) -> bytes:
        """The body, decoded piece by piece (the library's decoders yield at most 1 MiB a
        piece), refused as soon as the bytes sent or decoded pass ``max_bytes``."""
        declared = response.headers.get("content-length", "")
        if declared.isascii() and declared.isdigit():
            size = int(declared) if len(declared) <= 18 else None
            if size is None or size > self.max_bytes:
                shown = f"{size:,}" if size is not None else "more than 10^18"
                raise self._too_large(f"it declares {shown} bytes (Content-Length)")
        body = bytearray()
        async for piece in response.aiter_bytes():
            body += piece
            sent = response.num_bytes_downloaded
            if len(body) > self.max_bytes or sent > self.max_bytes:
                how = f"{max(len(body), sent):,} bytes"
                if encoding := _codings(response.headers.get("content-encoding", "")):
                    how = f"{len(body):,} bytes decoded from {sent:,} bytes of {encoding}"
                raise self._too_large(f"reading stopped at {how}")
        return bytes(body)

    def _too_large(self, what: str) -> AnswerTooLarge:
        key = f"{self.section}.max_response_mb"
        return AnswerTooLarge(
            f"the answer is larger than {key} ({mib(self.max_bytes)}): {what}; not retried "
            f"(the same request would get the same answer). Raise {key} if answers this "
            "large are expected"
        )

    async def aclose(self) -> None:
        await self.inner.aclose()


def _codings(header: str) -> str:
    """The known content codings a ``Content-Encoding`` header names (a server's text is shown
    only as one of these names)."""
    named = [c.strip().lower() for c in header.split(",")]
    return ", ".join(c for c in named if c in ("gzip", "x-gzip", "deflate", "br", "zstd"))


def http_module() -> Any:
    """The HTTP library the ``openai`` client speaks: httpx2 (openai 3; the extra requires the
    release this policy was tested with)."""
    import httpx2

    return httpx2


def proxy_for(url: str) -> str | None:
    """The proxy the environment names for ``url`` (``HTTPS_PROXY``, ``HTTP_PROXY``,
    ``ALL_PROXY``, less ``NO_PROXY``), as the HTTP library would pick it without a transport
    of evalret's: the policy's transport does not take that choice away."""
    parts = urlsplit(url)
    if proxy_bypass(parts.hostname or ""):
        return None
    proxies = getproxies_environment()
    return proxies.get(parts.scheme) or proxies.get("all")


def async_client(base_url: str, timeout: float, section: str, max_bytes: int) -> Any:
    """An async HTTP client under this policy for the service at ``base_url`` (``section``: the
    config section that names it, for messages: ``model``, ``judge``; ``max_bytes``: the most
    an answer's body may hold, as sent and decoded: the section's ``response_limit``)."""
    httpx = http_module()
    inner = httpx.AsyncHTTPTransport(proxy=proxy_for(base_url))
    return httpx.AsyncClient(
        transport=_PolicyTransport(inner, httpx, base_url, timeout, section, max_bytes),
        timeout=timeout,
        follow_redirects=True,
        max_redirects=MAX_REDIRECTS,
    )


class LoopThread:
    """An event loop on a daemon thread, for synchronous code to run requests as tasks: it
    works where the calling thread already runs a loop (a notebook), and a request left in
    flight never holds the process at exit."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self.loop.run_forever, name="evalret-http", daemon=True
        )
        self._thread.start()

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """``coroutine`` run on the loop; its result here."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    def start(self, coroutine: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        """``coroutine`` started as a task on the loop."""
        return self.run(_as_task(coroutine))

    def first_done(self, tasks: Iterable[asyncio.Task[Any]]) -> set[asyncio.Task[Any]]:
        """Waits for at least one of ``tasks``: those that are done (answered or failed)."""
        return self.run(_first_done(set(tasks)))

    def cancel(self, tasks: Iterable[asyncio.Task[Any]]) -> None:
        """Cancels ``tasks`` and waits until each has stopped (at once: its socket closed)."""
        if tasks := set(tasks):
            self.run(_cancel(tasks))

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()


async def _as_task(coroutine: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
    return asyncio.create_task(coroutine)


async def _first_done(tasks: set[asyncio.Task[Any]]) -> set[asyncio.Task[Any]]:
    done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    return done


async def _cancel(tasks: set[asyncio.Task[Any]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.wait(tasks)
