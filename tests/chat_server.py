"""A loopback server that speaks the OpenAI chat-completions protocol as an LLM relevance judge
whose answers come from known grades.

``POST /v1/chat/completions`` reads the query and the passage out of the prompt (the lines
``Query: ...`` and ``Passage: ...`` of evalret's built-in prompt, or of a test's template written
the same way), looks the pair up in ``truth`` ({(query text, document text): grade}; a pair it
does not know is grade 0) and answers ``##final score: N``. With ``error_rate`` > 0, a seeded
share of the pairs is answered wrong, the same wrong grade for every ask of a pair and vote
(a hash of seed, query and document decides): the agreement a judge should measure is known.

Faults are queued (``server.faults.append(...)``), each request taking the next one:
``("status", code, retry_after)`` answers ``code`` with an OpenAI-style error body that echoes
the Authorization header (a 429 with ``Retry-After``); ``("malformed",)`` answers prose without
a grade; ``("redirect", url)`` answers a 307 to ``url``; ``("hostile", mode)`` answers a body
no client should read whole (helpers.send_hostile_body: a huge one or a gzip bomb; what was sent
of it is kept in ``sent``); ``("raw", body)`` answers status 200 with the bytes ``body`` (JSON
that ``json.dumps`` cannot write: a number of 5,000 digits); ``("usage", prompt, completion)``
answers with those token counts; ``("ok",)`` answers normally. With ``encoding`` (gzip or
deflate) every answer is compressed so.
``always_malformed`` holds query texts whose every answer is prose. ``answer_format`` "bare"
answers a bare integer. Every request is counted (``requests``), and every grade answered
kept (``answered``: (query, document) -> list of grades). Nothing of evalret is imported.

It also writes queries, for `evalret golden synth`: a prompt with ``Passage: ...`` (or ``Passage
1: ...`` and ``Passage 2: ...``) lines and no ``Query:`` line is a generation prompt. The answer
is a plausible query derived from the (first) passage: a seeded choice of words from its start
(its title) and a word of the user's own (``EVERYDAY``), as keywords, as a question when the
prompt asks for one (``a natural question``), or, for a seeded share ``copy_rate`` of the
passages, a run of the passage's own words copied (too easy for BM25); ``written`` ({passage
text: answer}) plants an answer for a passage. A prompt asking for JSON (``{"query": ...}``) is
answered ``{"query": "..."}`` (``{"queries": [...]}`` with ``json_list``). Each query written is
remembered with its passages (``generated``), and a judge prompt for (that query, one of its
passages) that ``truth`` does not know is graded ``generated_grade`` (3), or 0 for a query in
``unanswerable``: the judge confirms what was written from a passage. ``generations`` counts the
generation prompts answered (a status fault is no answer); ``delay`` holds each generation
answer that long, ``judge_delay`` each grade.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from helpers import answer_body_fault, send_json
from loopback import Loopback, LoopbackHTTPServer, QuietHandler

PAIR = re.compile(r"Query: (.*?)\n\nPassage: (.*)\n\n(?:Work through|Answer)", re.DOTALL)
PASSAGE = re.compile(r"^Passage(?: \d+)?: (.*)$", re.MULTILINE)
WORD = re.compile(r"[A-Za-z][A-Za-z0-9-]{3,}")
EVERYDAY = ("help", "tips", "howto", "trouble", "guide")


@dataclass
class ChatState:
    truth: dict[tuple[str, str], int]
    name: str
    error_rate: float = 0.0
    seed: int = 0
    scale: tuple[int, int] = (0, 3)
    answer_format: str = "final"
    encoding: str | None = None  # gzip or deflate: answers compressed
    faults: deque[tuple[Any, ...]] = field(default_factory=deque)
    always_malformed: set[str] = field(default_factory=set)
    requests: int = 0
    bodies: list[dict[str, Any]] = field(default_factory=list)
    answered: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    sent: list[tuple[int, int]] = field(default_factory=list)  # hostile bodies: (sent, size)
    lock: threading.Lock = field(default_factory=threading.Lock)
    # golden synth's query writer (the module docstring)
    copy_rate: float = 0.0
    written: dict[str, str] = field(default_factory=dict)
    json_list: bool = False
    generated: dict[str, set[str]] = field(default_factory=dict)
    generated_grade: int = 3
    unanswerable: set[str] = field(default_factory=set)
    generations: int = 0
    delay: float = 0.0  # seconds before each generation answer
    judge_delay: float = 0.0  # seconds before each grade

    def write_query(self, prompt: str, passages: list[str]) -> str:
        """The query written for ``passages`` (the module docstring), remembered."""
        first = passages[0]
        digest = hashlib.sha256(f"gen\0{self.seed}\0{first}".encode()).digest()
        if first in self.written:
            query = self.written[first]
        elif int.from_bytes(digest[:8], "big") / 2**64 < self.copy_rate:
            start = digest[8] % 4
            query = " ".join(first.split()[start : start + 12])
        else:
            words = list(dict.fromkeys(WORD.findall(first)[:8])) or first.split()[:3]
            picked = [w for i, w in enumerate(words) if digest[9 + i] % 3]  # about two in three
            query = " ".join((picked or words)[:3]).lower()
            query += f" {EVERYDAY[digest[20] % len(EVERYDAY)]}"  # a word of the user's own
            if "a natural question" in prompt:
                query = f"how does {query} work?"
        with self.lock:
            self.generated.setdefault(query, set()).update(passages)
        return query

    def grade(self, query: str, document: str) -> int:
        if (query, document) not in self.truth and document in self.generated.get(query, ()):
            return 0 if query in self.unanswerable else self.generated_grade
        return self._grade(query, document)

    def wrong(self, query: str, document: str) -> bool:
        """Whether the server answers this pair wrong (seeded, the same on every ask)."""
        digest = hashlib.sha256(f"{self.seed}\0{query}\0{document}".encode()).digest()
        return int.from_bytes(digest[:8], "big") / 2**64 < self.error_rate

    def _grade(self, query: str, document: str) -> int:
        true = self.truth.get((query, document), 0)
        if not self.wrong(query, document):
            return true
        lo, hi = self.scale
        digest = hashlib.sha256(f"wrong\0{self.seed}\0{query}\0{document}".encode()).digest()
        shift = 1 + digest[0] % (hi - lo)  # another grade of the scale, never the true one
        return lo + (true - lo + shift) % (hi - lo + 1)


class _Handler(QuietHandler):
    server: LoopbackHTTPServer[ChatState]

    def _error(self, code: int, message: str, headers: dict[str, str] | None = None) -> None:
        error = {"message": message, "type": "test", "code": code}
        send_json(self, code, {"error": error}, headers)

    def do_POST(self) -> None:
        state = self.server.state
        if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self._error(404, f"no route {self.path}")
            return
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        with state.lock:
            state.requests += 1
            state.bodies.append(body)
            fault = state.faults.popleft() if state.faults else None
        if fault is not None and fault[0] == "status":
            said = f"refused {self.headers.get('Authorization')}"  # a server echoing the key
            self._error(fault[1], said, {"Retry-After": str(fault[2])})
            return
        if answer_body_fault(self, fault, state):
            return
        if fault is not None and fault[0] == "redirect":
            self.send_response(307)
            self.send_header("Location", fault[1])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if body.get("model") != state.name:
            self._error(404, f"The model {body.get('model')!r} does not exist")
            return
        prompt = body["messages"][-1]["content"]
        m = PAIR.search(prompt)
        passages = PASSAGE.findall(prompt) if m is None else []
        if passages:
            self._write(state, fault, prompt, passages)
            return
        if m is None:
            self._error(400, "no query and passage in the prompt")
            return
        query, document = m.group(1), m.group(2)
        if (fault is not None and fault[0] == "malformed") or query in state.always_malformed:
            self._reply(state, "The passage seems quite relevant to me, I would say.")
            return
        if state.judge_delay:
            time.sleep(state.judge_delay)
        grade = state.grade(query, document)
        with state.lock:
            state.answered.setdefault((query, document), []).append(grade)
        text = str(grade) if state.answer_format == "bare" else f"##final score: {grade}"
        usage = fault[1:] if fault is not None and fault[0] == "usage" else (300, 6)
        self._reply(state, text, usage)

    def _write(
        self, state: ChatState, fault: tuple[Any, ...] | None, prompt: str, passages: list[str]
    ) -> None:
        if state.delay:
            time.sleep(state.delay)
        with state.lock:
            state.generations += 1
        if fault is not None and fault[0] == "malformed":
            self._reply(state, "")
            return
        query = state.write_query(prompt, passages)
        if '{"query"' in prompt:
            answer = {"queries": [query]} if state.json_list else {"query": query}
            text = "```json\n" + json.dumps(answer) + "\n```"
        else:
            text = f"{query}\n"
        self._reply(state, text, (400, 12))

    def _reply(self, state: ChatState, text: str, usage: tuple[int, ...] = (300, 6)) -> None:
        send_json(
            self,
            200,
            {
                "id": "chatcmpl-test",
                "object": "chat.completion",
                "model": state.name,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": usage[0],
                    "completion_tokens": usage[1],
                    "total_tokens": usage[0] + usage[1],
                },
            },
            encoding=state.encoding,
        )


class ChatServer(Loopback[ChatState]):
    """The judge on 127.0.0.1 and a free port, in a thread; ``base_url`` ends in /v1."""

    def __init__(
        self,
        truth: dict[tuple[str, str], int],
        name: str = "judge-served",
        error_rate: float = 0.0,
        seed: int = 0,
    ) -> None:
        super().__init__(
            _Handler, ChatState(truth=truth, name=name, error_rate=error_rate, seed=seed)
        )
