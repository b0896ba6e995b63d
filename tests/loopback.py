"""The base of the tests' loopback HTTP servers (openai_server, chat_server, rerank_server, the
invariants harness's inv_http and test_comment's GitHub API): a threaded server on 127.0.0.1 and
a free port, serving in a daemon thread while its ``with`` block runs, with the test's state
object on it (``self.server.state`` in a handler). Nothing of evalret is imported.

A client that gives up (a timeout, a killed run, a hostile body cut short) is expected: the
server prints no traceback for it, and handlers log nothing.
"""

from __future__ import annotations

import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Generic, Self, TypeVar

S = TypeVar("S")


class LoopbackHTTPServer(ThreadingHTTPServer, Generic[S]):
    daemon_threads = True
    state: S

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that closed the connection early is expected: no traceback."""
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


class QuietHandler(BaseHTTPRequestHandler):
    """A request handler that logs nothing; ``self.server.state`` is the server's state."""

    def log_message(self, format: str, *args: Any) -> None:
        pass


class Loopback(Generic[S]):
    """A server of ``handler`` with ``state`` on 127.0.0.1 and a free port, serving in a thread
    from ``__enter__`` to ``__exit__``; ``origin`` is its ``http://host:port``, ``base_url``
    that and /v1."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], state: S) -> None:
        self.httpd: LoopbackHTTPServer[S] = LoopbackHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.state = state
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def state(self) -> S:
        return self.httpd.state

    @property
    def origin(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
