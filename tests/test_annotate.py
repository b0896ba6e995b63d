"""`evalret annotate`: the pool reader, the seeded order, resuming, and the page itself in the
real headless Chromium (Debian's, driven by Playwright as tests/test_report_html.py does) against
the real server started as a subprocess: grade with the keyboard, go back and regrade, skip,
reload, SIGKILL the server, restart it, finish, and read every grade back from the file."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from conftest import REPO
from evalret.cli import app
from evalret.data.judgments import parse_scale
from evalret.errors import InputError
from evalret.pipeline.annotation import (
    Session,
    annotator_order,
    default_output,
    item_id,
    prepare_annotation,
    read_grades,
    read_pool,
)

runner = CliRunner()


def pool_line(i: int, **extra: Any) -> dict[str, Any]:
    line: dict[str, Any] = {
        "query_id": f"q{i % 3}",
        "doc_id": f"d{i}",
        "grade": None,
        "query": f"query number {i % 3}",
        "document": f"the text of document {i}",
        "best_rank": i + 1,
        "retrieved_by": {"default:exact": i + 1},
    }
    line.update(extra)
    return line


def write_pool(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def small_pool(tmp_path: Path, n: int = 8) -> Path:
    """``n`` items, the last a gold item (known grade 2, no runs)."""
    lines = [pool_line(i) for i in range(n - 1)]
    lines.append(pool_line(n - 1, best_rank=None, retrieved_by={}, gold_grade=2))
    return write_pool(tmp_path / "pool.jsonl", lines)


# --- the logic, without a server ---------------------------------------------------------------


def test_scale_and_annotator_checks(tmp_path: Path) -> None:
    scale = parse_scale("0-3")
    assert (scale.lo, scale.hi) == (0, 3) and 3 in scale and 4 not in scale and True not in scale
    assert scale.definitions()[0] == {"grade": 0, "label": "not relevant"}
    assert parse_scale("0-1").hi == 1 and parse_scale("0-4").hi == 4
    for bad in ("1-3", "0-9", "three"):
        with pytest.raises(InputError, match="--scale"):
            parse_scale(bad)
    pool = small_pool(tmp_path)
    for bad in ("", "../x", "a b", ".hidden"):
        with pytest.raises(InputError, match="--annotator"):
            prepare_annotation(pool, bad, None, "0-3", 0)


def test_pool_errors_name_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(
        json.dumps(pool_line(0))
        + "\nnot json\n"
        + json.dumps({"query_id": "q", "doc_id": "d", "query": "x"})  # no document
        + "\n"
        + json.dumps(pool_line(0))  # the same pair again
        + "\n"
        + json.dumps(pool_line(5, gold_grade=9))
        + "\n",
        encoding="utf-8",
    )
    with pytest.raises(InputError) as info:
        read_pool(path, parse_scale("0-3"))
    shown = [str(p) for p in info.value.problems]
    assert [s.split(": ")[0] for s in shown] == [f"{path}:{n}" for n in (2, 3, 4, 5)]
    assert "document" in shown[1] and "also on line 1" in shown[2] and "gold_grade" in shown[3]


def test_cli_pool_error_exits_2_before_serving(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(pool_line(0)) + "\n[1, 2]\n", encoding="utf-8")
    result = runner.invoke(app, ["annotate", str(path), "--annotator", "ann", "--no-browser"])
    assert result.exit_code == 2, result.output
    assert f"{path.name}:2" in result.output.replace("\n", "")
    assert "annotate: http" not in result.output  # no server was started


def test_missing_extra_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without uvicorn (the extra not installed) the command says which extra to install."""
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # what an absent package looks like
    monkeypatch.delitem(sys.modules, "evalret.pipeline.annotate_app", raising=False)
    result = runner.invoke(
        app, ["annotate", str(small_pool(tmp_path)), "--annotator", "ann", "--no-browser"]
    )
    assert result.exit_code == 2, result.output
    assert "pip install 'evalret[annotate]'" in result.output.replace("\n", "")


def test_order_is_seeded_per_annotator() -> None:
    a = annotator_order(50, "alice", 0)
    assert sorted(a) == list(range(50))
    assert a == annotator_order(50, "alice", 0)  # the same after a restart
    assert a != annotator_order(50, "bob", 0)  # each annotator their own order
    assert a != annotator_order(50, "alice", 1)
    assert a != list(range(50))


def test_session_grades_skips_goes_back_and_resumes(tmp_path: Path) -> None:
    scale = parse_scale("0-3")
    pool = small_pool(tmp_path)
    items = read_pool(pool, scale)
    out = default_output(pool, "ann")
    assert out == tmp_path / "pool.ann.jsonl"
    session = Session(items, "ann", 0, out, clock=lambda: "2026-01-01T00:00:00Z")
    first = session.current()
    assert first is not None
    session.grade(first.id, 1, scale)
    second = session.current()
    assert second is not None and second.id != first.id
    session.skip(second.id)
    third = session.current()
    assert third is not None and third.id not in (first.id, second.id)
    session.back()  # to the skipped one
    assert session.current() == second
    session.back()  # to the graded one, showing its grade
    assert session.current() == first and session.state(scale)["grade"] == 1
    session.grade(first.id, 3, scale)
    assert session.current() == second  # the first ungraded in order again
    with pytest.raises(ValueError):
        session.grade(first.id, 4, scale)
    with pytest.raises(ValueError):
        session.grade("nope", 1, scale)
    lines = [json.loads(t) for t in out.read_text().splitlines()]
    assert [(x["doc_id"], x["grade"]) for x in lines] == [(first.doc_id, 1), (first.doc_id, 3)]
    assert lines[0]["annotator"] == "ann" and lines[0]["graded_at"] == "2026-01-01T00:00:00Z"
    assert lines[0]["retrieved_by"] == first.record["retrieved_by"]
    resumed = Session(items, "ann", 0, out, read_grades(out, "ann").grades)
    assert resumed.progress == (1, 8) and resumed.grades[first.id] == 3
    assert read_grades(out, "someone else").grades == {}


def test_torn_last_line_is_ignored_and_cut(tmp_path: Path) -> None:
    pool = small_pool(tmp_path)
    out = tmp_path / "grades.jsonl"
    whole = json.dumps(pool_line(0, grade=2, annotator="ann", graded_at="x"))
    out.write_text(whole + "\n" + whole[:25], encoding="utf-8")  # a write killed mid-line
    assert read_grades(out, "ann").torn
    setup = prepare_annotation(pool, "ann", out, "0-3", 0)
    assert setup.session.grades == {item_id("q0", "d0"): 2}
    assert setup.notes and "torn" in setup.notes[0]
    assert out.read_text(encoding="utf-8") == whole + "\n"  # the whole line kept, the tear cut
    # a malformed line that is not the last is an error with file:line
    out.write_text("{oops\n" + whole + "\n", encoding="utf-8")
    with pytest.raises(InputError) as info:
        prepare_annotation(pool, "ann", out, "0-3", 0)
    assert str(info.value.problems[0]).startswith(f"{out}:1")


def test_a_torn_line_left_by_another_server_is_repaired_before_appending(tmp_path: Path) -> None:
    """Two servers on one --out file: the other one is killed mid-line while this one serves.
    This one's next grade cuts the tear (a note says so) and lands on a line of its own; a
    whole last line missing only its newline is kept and ended."""
    scale = parse_scale("0-3")
    items = read_pool(small_pool(tmp_path), scale)
    out = tmp_path / "shared.jsonl"
    session = Session(items, "ann", 0, out)
    other = json.dumps(pool_line(7, grade=1, annotator="bob", graded_at="x"))
    for expected_lines, tail in ((2, other[:30]), (5, other)):
        first = session.current()
        assert first is not None
        session.grade(first.id, 2, scale)
        with out.open("a", encoding="utf-8") as f:
            f.write(tail)  # the other server's last write, without its newline
        second = session.current()
        assert second is not None
        session.grade(second.id, 3, scale)
        lines = [json.loads(t) for t in out.read_text(encoding="utf-8").splitlines()]
        assert len(lines) == expected_lines and lines[-1]["doc_id"] == second.doc_id
        assert len(session.notes) == 1 and "cut a torn last line" in session.notes[0]
    assert lines[-2]["annotator"] == "bob"  # a whole line of the other server's is kept
    assert read_grades(out, "ann").grades == {
        item_id(x["query_id"], x["doc_id"]): x["grade"]
        for x in map(json.loads, out.read_text().splitlines())
        if x["annotator"] == "ann"
    }


# --- the server and the page -------------------------------------------------------------------


class Server:
    """`evalret annotate ... --port 0 --no-browser` as a child process; ``url`` from its output
    (the page's, with the token), ``base`` the server's root, ``token`` the token."""

    def __init__(self, pool: Path, annotator: str, out: Path) -> None:
        env = {
            **os.environ,
            "PYTHONPATH": f"{REPO / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        }
        self.process = subprocess.Popen(
            [sys.executable, "-m", "evalret", "annotate", str(pool), "--annotator", annotator,
             "--port", "0", "--no-browser", "--out", str(out)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
        )  # fmt: skip
        self.output: list[str] = []
        assert self.process.stdout is not None
        for line in self.process.stdout:  # blocks until the URL line (or the process ends)
            self.output.append(line)
            found = re.search(r"(http://127\.0\.0\.1:(\d+)/)(?:\?token=([0-9a-f]{32}))?", line)
            if found:
                self.base, self.port, self.token = found.group(1), int(found.group(2)), found[3]
                self.url = f"{self.base}?token={self.token}"  # the page needs the token
                return
        raise AssertionError(f"no URL printed: {''.join(self.output)}")

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> str:
        """Ctrl-C; the rest of its output."""
        self.process.send_signal(signal.SIGINT)
        rest, _ = self.process.communicate(timeout=30)
        return rest


@pytest.fixture
def servers() -> Iterator[list[Server]]:
    started: list[Server] = []
    yield started
    for server in started:
        if server.process.poll() is None:
            server.kill()


class Page:
    """One browser tab on the server; records console errors and every request's URL."""

    def __init__(self, browser: Any, url: str) -> None:
        self.context = browser.new_context()
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.acts = 0
        self.page.goto(url, wait_until="load")
        self.wait()

    def wait(self) -> None:
        """Until the page has had its next answer from the server (a selector, not a script:
        the page's Content-Security-Policy refuses the eval that wait_for_function needs)."""
        self.acts += 1
        self.page.wait_for_selector(f'body[data-acts="{self.acts}"]', state="attached")

    def press(self, key: str) -> None:
        self.page.keyboard.press(key)
        self.wait()

    def reload(self) -> None:
        self.page.reload(wait_until="load")
        self.acts = 0
        self.wait()

    def item(self) -> str | None:
        if self.page.evaluate("document.body.dataset.state") == "done":
            return None
        return str(self.page.evaluate("document.body.dataset.item"))

    def progress(self) -> str:
        return str(self.page.inner_text("#progress"))

    def close(self) -> None:
        self.context.close()


def _first_sitting(page: Page, items: dict[str, Any]) -> tuple[dict[str, int], str]:
    """Grade two items by keyboard, go back and regrade the second, skip one (then go back to
    it and skip it again), grade one more. Returns the grades given and the skipped item."""
    assert page.progress() == "0 / 8 graded"
    assert page.page.locator("#scale button").count() == 4
    assert "perfectly relevant" in page.page.inner_text("#scale")
    expected: dict[str, int] = {}
    shown: list[str] = []
    for grade in ("1", "2"):
        current = page.item()
        assert current is not None and current not in shown
        shown.append(current)
        assert page.page.inner_text("#text") == items[current].record["document"]
        page.press(grade)
        expected[current] = int(grade)
    page.press("b")  # back to the second item, its grade shown
    assert page.item() == shown[1]
    assert page.page.inner_text("#scale button.chosen").startswith("2")
    page.press("3")  # regrade: appended, the last one wins
    expected[shown[1]] = 3
    skipped = page.item()
    assert skipped is not None and skipped not in expected
    page.press("s")
    assert page.item() not in (None, skipped)
    page.press("Backspace")  # back to the skipped one, then skip it again
    assert page.item() == skipped
    page.press("s")
    current = page.item()
    assert current is not None
    page.press("0")
    expected[current] = 0
    assert page.progress() == "3 / 8 graded"
    return expected, skipped


def _finish(page: Page, expected: dict[str, int]) -> None:
    """Grade every item left (none graded before comes back) until the page says done."""
    digits = iter("0123012301230123")
    while (current := page.item()) is not None:
        assert current not in expected
        grade = next(digits)
        page.press(grade)
        expected[current] = int(grade)
    assert page.progress() == "8 / 8 graded"
    assert "Done" in page.page.inner_text("#done")


def _assert_clean(page: Page, url: str) -> None:
    assert page.errors == []
    assert all(u.startswith(url) for u in page.requests), page.requests


def test_grade_back_skip_reload_kill_restart_finish(
    browser: Any, servers: list[Server], tmp_path: Path
) -> None:
    pool = small_pool(tmp_path)
    items = {it.id: it for it in read_pool(pool, parse_scale("0-3"))}
    out = tmp_path / "grades.jsonl"
    servers.append(Server(pool, "ann", out))
    page = Page(browser, servers[-1].url)
    expected, skipped = _first_sitting(page, items)
    on_screen = page.item()
    page.reload()  # resumes where it was
    assert page.item() == on_screen and page.progress() == "3 / 8 graded"
    _assert_clean(page, servers[-1].base)
    page.close()

    servers[-1].kill()  # SIGKILL: nothing but the file survives
    servers.append(Server(pool, "ann", out))
    assert "3 of 8 items graded" in "".join(servers[-1].output)
    page = Page(browser, servers[-1].url)
    assert page.progress() == "3 / 8 graded"
    _finish(page, expected)
    assert skipped in expected  # a skip brings the item back later, not never
    _assert_clean(page, servers[-1].base)
    page.close()
    rest = servers[-1].stop()
    assert servers[-1].process.returncode == 0 and "stopped: 8 of 8 items graded" in rest

    lines = [json.loads(t) for t in out.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 9  # eight items once, one of them regraded
    last: dict[str, int] = {}
    for line in lines:
        assert line["annotator"] == "ann"
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", line["graded_at"])
        last[item_id(line["query_id"], line["doc_id"])] = line["grade"]
    assert last == expected and set(last) == set(items)
    gold = [line for line in lines if "gold_grade" in line]
    assert len(gold) == 1 and gold[0]["gold_grade"] == 2


HOSTILE_QUERY = '<script>window.__pwned = "query"</script><b>bold?</b>'
HOSTILE_DOC = "<img src=x onerror=\"window.__pwned = 'doc'\">&lt;still text&gt;"


def test_hostile_pool_text_is_shown_as_text(
    browser: Any, servers: list[Server], tmp_path: Path
) -> None:
    pool = write_pool(
        tmp_path / "pool.jsonl",
        [
            pool_line(
                0,
                query=HOSTILE_QUERY,
                document=HOSTILE_DOC,
                title="<svg onload=\"window.__pwned='title'\">",
                doc_id='"><script>window.__pwned="id"</script>',
            ),
            pool_line(1, gold_grade=3, query=HOSTILE_QUERY),
        ],
    )
    servers.append(Server(pool, "ann", tmp_path / "out.jsonl"))
    page = Page(browser, servers[-1].url)
    for _ in range(2):
        if page.page.inner_text("#query") == HOSTILE_QUERY and page.page.inner_text("#text") == (
            HOSTILE_DOC
        ):
            break
        page.press("s")
    assert page.page.inner_text("#query") == HOSTILE_QUERY
    assert page.page.inner_text("#text") == HOSTILE_DOC
    assert page.page.inner_text("#title") == "<svg onload=\"window.__pwned='title'\">"
    facts = page.page.evaluate(
        """() => ({pwned: window.__pwned === undefined ? null : window.__pwned,
                   scripts: document.scripts.length, imgs: document.images.length,
                   svgs: document.querySelectorAll('svg, b').length,
                   text: document.body.innerText})"""
    )
    assert facts["pwned"] is None
    assert (facts["scripts"], facts["imgs"], facts["svgs"]) == (1, 0, 0)
    assert "gold" not in facts["text"].lower()  # a gold item looks like any other
    answer = page.page.evaluate(
        "fetch('/api/next', {headers: {'X-Evalret-Token': "
        "document.querySelector('meta[name=\"evalret-token\"]').content}}).then((r) => r.json())"
    )
    assert "gold_grade" not in answer["item"] and "gold_grade" not in json.dumps(answer)
    assert page.errors == []
    page.close()


def _request(
    url: str, data: Any = None, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, Any] | str]:
    body = None if data is None else json.dumps(data).encode()
    request = urllib.request.Request(url, body, headers or {}, method="POST" if body else "GET")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            text = response.read().decode()
            status = response.status
    except urllib.error.HTTPError as e:
        text, status = e.read().decode(), e.code
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text


def test_server_listens_on_loopback_only_and_refuses_bad_posts(
    servers: list[Server], tmp_path: Path
) -> None:
    out = tmp_path / "out.jsonl"
    servers.append(Server(small_pool(tmp_path), "ann", out))
    server = servers[-1]
    listening = _listening_addresses(server.port)
    assert listening == ["127.0.0.1"], listening
    for url in (server.base, server.base + "?token=" + "0" * 32):  # no page without the token
        status, refused = _request(url)
        assert status == 403 and server.token not in str(refused), refused
    for headers in ({}, {"X-Evalret-Token": "0" * 32}):
        status, refused = _request(server.base + "api/next", headers=headers)
        assert status == 403 and "query" not in str(refused), refused
    status, page = _request(server.url)
    assert status == 200 and isinstance(page, str)
    token = re.search(r'name="evalret-token" content="([0-9a-f]+)"', page)
    assert token is not None and token.group(1) == server.token
    status, state = _request(server.base + "api/next", headers={"X-Evalret-Token": server.token})
    assert status == 200 and isinstance(state, dict)
    item = state["item"]["id"]
    good = {"Content-Type": "application/json", "X-Evalret-Token": token.group(1)}
    grade_url = server.base + "api/grade"
    for body in (
        {"item": item, "grade": 4},
        {"item": item, "grade": -1},
        {"item": item, "grade": "2"},
        {"item": item, "grade": 1.0},
        {"item": item, "grade": True},
        {"item": "not-an-item", "grade": 1},
        {"grade": 1},
    ):
        status, answer = _request(grade_url, body, good)
        assert status == 400, (body, answer)
    status, _ = _request(grade_url, {"item": item, "grade": 1}, {**good, "X-Evalret-Token": "0"})
    assert status == 403
    status, _ = _request(grade_url, {"item": item, "grade": 1}, {"Content-Type": "text/plain"})
    assert status == 403
    status, _ = _request(
        grade_url, {"item": item, "grade": 1}, {**good, "Origin": "http://evil.example"}
    )
    assert status == 403
    status, _ = _request(
        server.base + "api/next", headers={"Host": "evil.example", "X-Evalret-Token": server.token}
    )
    assert status == 403  # a DNS-rebound name is refused
    for raw in (b"[" * 100_000, b'{"item": ' + b"[" * 50_000, b" " * 70_000 + b"{}"):
        status, answer = _raw_post(grade_url, raw, good)
        assert status == 400 and "Traceback" not in str(answer), answer  # never a 500
    assert server.process.poll() is None
    assert not out.exists()  # nothing refused was written
    status, answer = _request(grade_url, {"item": item, "grade": 1}, good)
    assert status == 200 and isinstance(answer, dict) and answer["graded"] == 1
    assert len(out.read_text().splitlines()) == 1
    assert "Content-Security-Policy" in _headers(server.url)


def test_a_stalled_request_does_not_hold_sigterm(servers: list[Server], tmp_path: Path) -> None:
    """A POST that announces a long body and stalls (the tab's own token) kept annotate alive
    after SIGTERM for as long as the client kept the connection (uvicorn waits for requests in
    flight); it now ends within the grace period, exit 143."""
    import socket
    import time

    servers.append(Server(small_pool(tmp_path), "ann", tmp_path / "out.jsonl"))
    server = servers[-1]
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as stalled:
        stalled.sendall(
            f"POST /api/grade HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
            f"X-Evalret-Token: {server.token}\r\nContent-Type: application/json\r\n"
            "Content-Length: 60000\r\n\r\n{".encode()
        )
        time.sleep(0.5)
        server.process.send_signal(signal.SIGTERM)
        try:
            code = server.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            code = None
    assert code == 143
    rest, _ = server.process.communicate(timeout=30)
    assert "Traceback" not in rest, rest


def _raw_post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, str]:
    request = urllib.request.Request(url, body, headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def _headers(url: str) -> dict[str, str]:
    with urllib.request.urlopen(url, timeout=30) as response:
        headers = {k.title(): v for k, v in response.headers.items()}
    csp = headers["Content-Security-Policy"]
    assert csp.startswith("default-src 'self'") and "http" not in csp
    return headers


def _listening_addresses(port: int) -> list[str]:
    """The local addresses listening on ``port`` (TCP, IPv4 and IPv6), from /proc/net."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not Path(table).exists():
            continue
        for row in Path(table).read_text().splitlines()[1:]:
            fields = row.split()
            address, port_hex = fields[1].rsplit(":", 1)
            if int(port_hex, 16) == port and fields[3] == "0A":  # LISTEN
                if len(address) == 8:
                    found.append(".".join(str(b) for b in reversed(bytes.fromhex(address))))
                else:
                    found.append(address)
    if not found:
        pytest.fail("no /proc/net/tcp entry for the server: cannot check the address")
    return found
