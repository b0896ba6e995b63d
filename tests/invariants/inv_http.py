"""Loopback HTTP servers speaking the OpenAI embeddings protocol, for the HTTP situations.

``POST /v1/embeddings`` answers, by the server's ``mode``:

- ``ok``: one hashed bag-of-words vector per input (the plug-in encoder's hashing, so that an
  HTTP model scores as the Python one), base64 float32 when asked, with ``usage``;
- ``redirect``: 307 to the same path on another loopback server (``elsewhere``), which records
  what reaches it: a client that follows sends it every text of the golden set;
- ``drip``: a 200 whose body comes a byte every DRIP_S seconds, for DRIP_FOR seconds at most
  (then the connection closes): a per-read timeout never fires, a whole-request one does;
- ``echo-key``: a 401 whose message quotes the Authorization header in every form a server may
  echo it: verbatim, URL-encoded, base64, and the key as a Basic credential;
- ``huge``, ``gzip-bomb``: a 200 whose body no client should read whole
  (helpers.send_hostile_body): 256 MiB of whitespace ending with the connection, or a gzip
  bomb (256 MiB of zeros in 260 KB, then padding on the wire). These two answer any POST (an
  embedding, a rerank or a chat request alike), and keep (bytes sent, bytes in the body) in
  ``sent``: a client that stopped reading closed the connection before all was sent.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from helpers import bomb, send_hostile_body, send_json
from loopback import Loopback, LoopbackHTTPServer, QuietHandler

DIM = 32
DRIP_S = 0.5
DRIP_FOR = 8.0
HOSTILE = {"huge": "huge", "gzip-bomb": "gzip"}  # a mode: its helpers.send_hostile_body body


def embed_texts(texts: list[str]) -> np.ndarray:
    """The plug-in encoder's vectors (inv_plugin_source.hash_vectors)."""
    out = np.zeros((len(texts), DIM), dtype=np.float32)
    for i, text in enumerate(texts):
        for token in text.lower().split():
            h = hashlib.sha256(token.encode()).digest()
            out[i, int.from_bytes(h[:4], "little") % DIM] += 1.0
    return out


def echoed_forms(value: str) -> list[str]:
    """The forms a server may echo a credential in (and that must never be shown)."""
    b64 = lambda s: base64.b64encode(s.encode()).decode()  # noqa: E731
    forms = [
        value,
        urllib.parse.quote(value, safe=""),
        urllib.parse.quote_plus(value),
        b64(value),
        b64(f"Bearer {value}"),
        b64(f"user:{value}"),
    ]
    return list(dict.fromkeys(forms))


@dataclass
class ServerState:
    mode: str = "ok"
    redirect_to: str = ""
    requests: list[dict[str, Any]] = field(default_factory=list)
    first_at: float | None = None  # time.monotonic() of the first request
    sent: list[tuple[int, int]] = field(default_factory=list)  # hostile bodies: (sent, size)
    lock: threading.Lock = field(default_factory=threading.Lock)
    answering: int = 0  # requests whose handler has not returned yet
    idle: threading.Condition = field(default_factory=threading.Condition)

    def settled(self, timeout: float = 60.0) -> bool:
        """Wait until no request is being answered: a handler still writing a body its client
        gave up on records what it sent when its write fails, maybe after the call ended."""
        with self.idle:
            return self.idle.wait_for(lambda: self.answering == 0, timeout)


class _Handler(QuietHandler):
    server: LoopbackHTTPServer[ServerState]

    def _send(self, code: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        send_json(self, code, body, headers)

    def do_POST(self) -> None:
        state = self.server.state
        with state.idle:
            state.answering += 1
        try:
            self._answer(state)
        finally:
            with state.idle:
                state.answering -= 1
                state.idle.notify_all()

    def _answer(self, state: ServerState) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        auth = self.headers.get("Authorization") or ""
        with state.lock:
            if state.first_at is None:
                state.first_at = time.monotonic()
            state.requests.append({"path": self.path, "body": body, "authorization": auth})
        if state.mode in HOSTILE:
            sent = send_hostile_body(self, HOSTILE[state.mode])
            with state.lock:
                state.sent.append(sent)
        elif state.mode == "redirect":
            self.send_response(307)
            self.send_header("Location", state.redirect_to + self.path)
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif state.mode == "drip":
            self._drip()
        elif state.mode == "echo-key":
            key = auth.removeprefix("Bearer ")
            message = "invalid key: " + " ".join([auth, *echoed_forms(key)])
            self._send(401, {"error": {"message": message, "type": "invalid_request_error"}})
        else:
            self._embeddings(body)

    def _embeddings(self, body: dict[str, Any]) -> None:
        texts = body.get("input") or []
        vectors = embed_texts(list(texts))
        as_b64 = body.get("encoding_format") == "base64"
        data = [
            {
                "object": "embedding",
                "index": i,
                "embedding": base64.b64encode(v.tobytes()).decode() if as_b64 else v.tolist(),
            }
            for i, v in enumerate(vectors)
        ]
        tokens = sum(len(t.split()) for t in texts)
        self._send(
            200,
            {
                "object": "list",
                "data": data,
                "model": body.get("model"),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            },
        )

    def _drip(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "100000")
        self.end_headers()
        end = time.monotonic() + DRIP_FOR
        try:
            while time.monotonic() < end:
                self.wfile.write(b" ")
                self.wfile.flush()
                time.sleep(DRIP_S)
        except OSError:
            pass  # the client gave up: what it should do


@contextmanager
def serve(mode: str = "ok", redirect_to: str = "") -> Iterator[tuple[str, ServerState]]:
    """A server on a free loopback port: (its base URL ending in /v1, its state)."""
    if HOSTILE.get(mode, "huge") != "huge":
        bomb(HOSTILE[mode])  # made now, not while a client waits for its answer
    with Loopback(_Handler, ServerState(mode=mode, redirect_to=redirect_to)) as server:
        yield server.base_url, server.state
