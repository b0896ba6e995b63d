"""The web side of `evalret annotate`: a Starlette app served by uvicorn on 127.0.0.1 only.

``GET /`` is the page (``templates/annotate.html``: inline CSS and JS under a per-server nonce,
texts put in with ``textContent`` only); ``GET /api/next`` the item on screen and progress;
``POST /api/grade``, ``/api/skip``, ``/api/back`` act on it. Every request needs the per-server
random token: the page's in its URL (``/?token=...``, the URL the command prints, as Jupyter
does), the API's in ``X-Evalret-Token``; without it nothing is served, so another local process
cannot read the token, the items or the grades. A request whose Host is not this server's
loopback address is refused (against DNS rebinding); a POST also needs a JSON body (at most
MAX_BODY bytes; JSON nested too deep to parse is a 400) and no foreign Origin (so another site
open in the same browser cannot grade). Every handler runs on the event loop's one thread, so
grades are appended one at a time.

starlette and uvicorn are the extra ``evalret[annotate]``; ``commands/annotate.py`` imports this
module inside the command and names the extra when they are missing.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import socket
import threading
import webbrowser
from collections.abc import Callable
from importlib import resources
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from evalret.data.judgments import Scale
from evalret.errors import InputError
from evalret.pipeline.annotation import Session

HOST = "127.0.0.1"
MAX_BODY = 64 * 1024  # bytes of a POST body: a grade is a few dozen


def _csp(nonce: str) -> str:
    return (
        f"default-src 'self'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; "
        "img-src 'none'; object-src 'none'; base-uri 'none'; form-action 'none'; "
        "frame-ancestors 'none'"
    )


def _headers(nonce: str) -> dict[str, str]:
    return {
        "Content-Security-Policy": _csp(nonce),
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-store",
        "X-Frame-Options": "DENY",
    }


def page_html(token: str, nonce: str) -> str:
    """The page: the template with the token and nonce (both hex) filled in."""
    template = (resources.files("evalret") / "templates" / "annotate.html").read_text("utf-8")
    return template.replace("__TOKEN__", token).replace("__NONCE__", nonce)


class AnnotateApp:
    """The routes over one Session. ``port`` is set once the socket is bound."""

    def __init__(self, session: Session, scale: Scale) -> None:
        self.session, self.scale = session, scale
        self.token = secrets.token_hex(16)
        self.nonce = secrets.token_hex(16)
        self.port = 0

    def _host_ok(self, request: Request) -> bool:
        host = request.headers.get("host", "")
        return host in (f"{HOST}:{self.port}", f"localhost:{self.port}")

    def _token_ok(self, request: Request, page: bool) -> bool:
        given = request.query_params.get("token", "") if page else ""
        given = given or request.headers.get("x-evalret-token", "")
        return secrets.compare_digest(given.encode(), self.token.encode())

    def _refused(self, request: Request, post: bool, page: bool = False) -> Response | None:
        if not self._host_ok(request):
            return JSONResponse({"error": "wrong Host"}, 403, self._json_headers())
        if not self._token_ok(request, page):
            message = "missing or wrong token: open the URL evalret annotate printed"
            if page:
                return HTMLResponse(f"<p>{message}</p>", 403, headers=_headers(self.nonce))
            return JSONResponse({"error": message}, 403, self._json_headers())
        if not post:
            return None
        origin = request.headers.get("origin")
        if origin is not None and origin not in (
            f"http://{HOST}:{self.port}",
            f"http://localhost:{self.port}",
        ):
            return JSONResponse({"error": "cross-site request"}, 403, self._json_headers())
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return JSONResponse({"error": "JSON body expected"}, 415, self._json_headers())
        return None

    def _json_headers(self) -> dict[str, str]:
        return _headers(self.nonce)

    def _state(self) -> JSONResponse:
        return JSONResponse(self.session.state(self.scale), headers=self._json_headers())

    async def page(self, request: Request) -> Response:
        refused = self._refused(request, post=False, page=True)
        if refused is not None:
            return refused
        return HTMLResponse(page_html(self.token, self.nonce), headers=_headers(self.nonce))

    async def next(self, request: Request) -> Response:
        return self._refused(request, post=False) or self._state()

    async def _body(self, request: Request) -> dict[str, Any] | None:
        """The JSON object of a POST; None when it is none (or too big, or nested too deep)."""
        data = b""
        try:
            async for chunk in request.stream():
                data += chunk
                if len(data) > MAX_BODY:
                    return None
        except (ClientDisconnect, asyncio.CancelledError):  # gone, or stopped by Ctrl-C/SIGTERM
            return None
        try:
            body = json.loads(data)
        except (ValueError, UnicodeDecodeError, RecursionError):
            return None
        return body if isinstance(body, dict) else None

    def _bad(self, message: str) -> JSONResponse:
        return JSONResponse({"error": message}, 400, self._json_headers())

    async def grade(self, request: Request) -> Response:
        refused = self._refused(request, post=True)
        if refused is not None:
            return refused
        body = await self._body(request)
        if body is None or not isinstance(body.get("item"), str):
            return self._bad("expected {item: id, grade: integer}")
        try:
            self.session.grade(body["item"], body.get("grade"), self.scale)  # type: ignore[arg-type]
        except ValueError as e:
            return self._bad(str(e))
        except InputError as e:  # the annotation file cannot be written: the page shows why
            return JSONResponse({"error": str(e)}, 500, self._json_headers())
        return self._state()

    async def skip(self, request: Request) -> Response:
        refused = self._refused(request, post=True)
        if refused is not None:
            return refused
        body = await self._body(request)
        if body is None or not isinstance(body.get("item"), str):
            return self._bad("expected {item: id}")
        try:
            self.session.skip(body["item"])
        except ValueError as e:
            return self._bad(str(e))
        return self._state()

    async def back(self, request: Request) -> Response:
        refused = self._refused(request, post=True)
        if refused is not None:
            return refused
        self.session.back()
        return self._state()

    def starlette(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/", self.page, methods=["GET"]),
                Route("/api/next", self.next, methods=["GET"]),
                Route("/api/grade", self.grade, methods=["POST"]),
                Route("/api/skip", self.skip, methods=["POST"]),
                Route("/api/back", self.back, methods=["POST"]),
            ]
        )


def bind(port: int) -> socket.socket:
    """A listening socket on 127.0.0.1:``port`` (0: a free port the system picks)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, port))
    except OSError as e:
        sock.close()
        raise InputError(f"--port {port}: cannot listen on {HOST}:{port}: {e.strerror}") from None
    sock.listen(128)
    return sock


def serve(
    session: Session, scale: Scale, port: int, open_browser: bool, say: Callable[[str], None]
) -> None:
    """Serve until Ctrl-C (uvicorn stops cleanly on SIGINT and SIGTERM), printing the URL."""
    app = AnnotateApp(session, scale)
    sock = bind(port)
    app.port = sock.getsockname()[1]
    url = f"http://{HOST}:{app.port}/?token={app.token}"  # the page is served with it only
    config = uvicorn.Config(
        app.starlette(),
        log_level="warning",
        access_log=False,
        lifespan="off",
        # a request still in flight (a client that stalls mid-body) cannot hold Ctrl-C or SIGTERM
        timeout_graceful_shutdown=2,
    )
    server = uvicorn.Server(config)
    say(f"annotate: {url}  (Ctrl-C stops; every grade is already saved)")
    if open_browser:
        threading.Thread(target=webbrowser.open, args=(url,), daemon=True).start()
    try:
        server.run(sockets=[sock])  # stops on Ctrl-C, then raises KeyboardInterrupt again
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
    for note in session.notes:
        say(note)
    graded, total = session.progress
    say(f"stopped: {graded} of {total} items graded")
