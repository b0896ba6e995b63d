"""A loopback server that speaks the ``/rerank`` protocol Cohere, Jina, Voyage and infinity share.

``POST /v1/rerank`` with ``{model, query, documents, top_n}`` answers
``{results: [{index, relevance_score}, ...]}``, best first, ``top_n`` of them: the score of a
document is the number of the query's words it holds plus a small, fixed tie-breaker from a hash
of the pair (deterministic, independent of the other documents). Every request is counted and
its body kept.

Faults are queued (``server.faults.append(...)``), each request taking the next one:
``("status", code)`` answers ``code`` with an error body that echoes the Authorization header (a
429 or 503 with ``Retry-After: 0``); ``("drop_index",)`` answers one result fewer;
``("bad_index",)`` answers an index out of range; ``("hostile", mode)`` answers a body no client
should read whole (helpers.send_hostile_body: a huge one or a gzip bomb; what was sent of it is
kept in ``sent``); ``("raw", body)`` answers status 200 with the bytes ``body`` (JSON that
``json.dumps`` cannot write: a number of 5,000 digits); ``("ok",)`` answers normally. A query
text in ``always_fail`` is answered 500 on every request. Nothing of evalret is imported.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from helpers import answer_body_fault, send_json
from loopback import Loopback, LoopbackHTTPServer, QuietHandler


def pair_score(query: str, document: str) -> float:
    """The server's score of one pair (tests compute it directly)."""
    words = set(query.lower().split())
    overlap = sum(1 for w in set(document.lower().split()) if w in words)
    digest = hashlib.sha256(f"{query}\0{document}".encode()).digest()
    return overlap + int.from_bytes(digest[:4], "big") / 2**33


@dataclass
class RerankState:
    name: str
    faults: deque[tuple[Any, ...]] = field(default_factory=deque)
    always_fail: set[str] = field(default_factory=set)
    requests: int = 0
    bodies: list[dict[str, Any]] = field(default_factory=list)
    sent: list[tuple[int, int]] = field(default_factory=list)  # hostile bodies: (sent, size)
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Handler(QuietHandler):
    server: LoopbackHTTPServer[RerankState]

    def _error(self, code: int, message: str) -> None:
        send_json(self, code, {"error": {"message": message}}, {"Retry-After": "0"})

    def do_POST(self) -> None:
        state = self.server.state
        if self.path.rstrip("/") != "/v1/rerank":
            self._error(404, f"no route {self.path}")
            return
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        with state.lock:
            state.requests += 1
            state.bodies.append(body)
            fault = state.faults.popleft() if state.faults else None
        if fault is not None and fault[0] == "status":
            self._error(fault[1], f"refused {self.headers.get('Authorization')}")
            return
        if answer_body_fault(self, fault, state):
            return
        if body.get("model") != state.name:
            self._error(404, f"model {body.get('model')!r} not found")
            return
        if body["query"] in state.always_fail:
            self._error(500, "internal error")
            return
        scored = [(pair_score(body["query"], d), i) for i, d in enumerate(body["documents"])]
        scored.sort(reverse=True)
        results = [{"index": i, "relevance_score": s} for s, i in scored[: body["top_n"]]]
        if fault is not None and fault[0] == "drop_index":
            results = results[:-1]
        if fault is not None and fault[0] == "bad_index":
            results[0]["index"] = len(body["documents"])
        send_json(self, 200, {"model": state.name, "results": results})


class RerankServer(Loopback[RerankState]):
    """The reranker on 127.0.0.1 and a free port, in a thread; ``base_url`` ends in /v1."""

    def __init__(self, name: str = "rerank-served") -> None:
        super().__init__(_Handler, RerankState(name=name))
