"""The pull-request comment: comment.md (report/comment.py) leads with the verdict, the failed
checks and the biggest per-query losses, stays under its budget with a link to the reports, and
keeps hostile ids inert; the action's comment.sh posts it once and then updates in place its own
comment only (marker and author), never a comment.md of an earlier run, and only warns when it
may not write (a fork's token). The action's gate.sh takes an exit code as the verdict only with
this run's report.json."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from evalret.data.schema import GateCheck, QueryExample, RunReport
from evalret.pipeline.comment import reports_link
from evalret.report.comment import (
    BUDGET,
    GITHUB_LIMIT,
    MARKER,
    RUN_MARKER,
    Losses,
    render_comment,
)
from evalret.report.markdown import render_markdown
from helpers import demo_report, gate_check, send_json
from loopback import Loopback, LoopbackHTTPServer, QuietHandler
from test_hostile import IMG, JS_LINK, SCRIPT, assert_markdown_inert

REPO = Path(__file__).resolve().parents[1]
DEMO = demo_report()
COMMENT_SH = REPO / ".github" / "actions" / "evalret" / "comment.sh"
GATE_SH = REPO / ".github" / "actions" / "evalret" / "gate.sh"


def failed_check(i: int, name: str | None = None) -> GateCheck:
    return gate_check(
        name=name or f"exact/slice-{i}/recall@10 max_drop 0.01",
        slice=f"slice-{i}",
        current=0.6,
        delta=-0.1,
        n_queries=50,
        p_value=0.001,
        p_adjusted=0.01,
        mde=0.05,
        passed=False,
        message="dropped",
    )


def failing(checks: list[GateCheck]) -> RunReport:
    assert DEMO.gate is not None
    gate = DEMO.gate.model_copy(
        update={"checks": checks, "verdict": "fail", "baseline": "baselines/demo.json"}
    )
    return DEMO.model_copy(update={"gate": gate})


def loss(query_id: str, text: str, delta: float) -> QueryExample:
    return QueryExample(
        query_id=query_id, text=text, a=1.0, b=1.0 + delta, delta=delta, relevant=[], a_top=[],
        b_top=[],
    )  # fmt: skip


LOSSES = Losses("exact", "ndcg@10", [loss(f"q-{i}", f"query {i}", -1.0 + i / 10) for i in range(5)])


def test_sections_in_order_under_the_budget() -> None:
    """Marker first; then the verdict, the failed checks, the five losses, report.md folded, and
    the link to the workflow run last."""
    report = failing([failed_check(i) for i in range(3)])
    link = "https://github.com/o/r/actions/runs/42"
    text = render_comment(report, render_markdown(report), LOSSES, link)
    lines = text.splitlines()
    assert lines[0] == MARKER
    assert lines[1] == "## evalret gate: ❌ fail (3 of 3 checks failed)"
    order = [
        "### Failed checks (3)",
        "| exact/slice-0/recall@10 max\\_drop 0.01 | 50 | 0.7000 | 0.6000 | -0.1000 |",
        "### Biggest per-query losses (exact, ndcg@10, against the baseline)",
        "| q-0 | 1.0000 | 0.0000 | -1.0000 | query 0 |",
        "| q-4 |",
        "<details><summary>Full report (report.md)</summary>",
        "</details>",
        f"Full reports: the reports artifact of [this workflow run]({link}).",
    ]
    positions = [text.index(part) for part in order]
    assert positions == sorted(positions)
    assert len(text) <= BUDGET < GITHUB_LIMIT


def test_passing_gate_without_losses_says_so() -> None:
    """A pass against a baseline with no query lower: the verdict and one sentence."""
    report = DEMO.model_copy(
        update={"gate": DEMO.gate.model_copy(update={"baseline": "b.json"}) if DEMO.gate else None}
    )
    text = render_comment(report, render_markdown(report), Losses("exact", "ndcg@10", []))
    assert text.splitlines()[1] == "## evalret gate: ✅ pass (3 checks)"
    assert "### Failed checks" not in text
    assert "No query scores lower than in the baseline." in text


def test_truncated_to_the_budget_with_a_link() -> None:
    """3,000 failed checks and a huge report.md: the rows that fit, a count of the rest, the
    losses still there, report.md left out, each with the link; at most the budget."""
    report = failing([failed_check(i) for i in range(3000)])
    link = "https://github.com/o/r/actions/runs/42"
    text = render_comment(report, "x" * 100_000, LOSSES, link)
    assert len(text) <= BUDGET
    shown = text.count("| exact/slice-")
    assert 100 < shown < 3000
    assert f"… and {3000 - shown} more failed checks, in the reports artifact of [this" in text
    assert "The full report is too long for a comment: see report.md in" in text
    assert "| q-4 |" in text and "x" * 100 not in text
    assert text.index("### Failed checks") < text.index("### Biggest per-query losses")
    small = render_comment(report, "", LOSSES, link, budget=5_000)
    assert len(small) <= 5_000 and small.startswith(MARKER + "\n")


def test_hostile_ids_and_names_are_inert_markdown() -> None:
    """Query ids, texts and check names with HTML, links, pipes and escape sequences: no raw
    HTML, link or broken table; overlong cells shortened."""
    hostile = f"q{SCRIPT}|{JS_LINK}\x1b[2J\n# heading"
    report = failing([failed_check(0, name=f"exact/{IMG}|x/recall@10 max_drop 0.01")])
    losses = Losses("exact", "ndcg@10", [loss(hostile, f"{IMG} " + "long " * 100, -0.5)])
    text = render_comment(report, render_markdown(report), losses, "javascript:alert(1)")
    assert_markdown_inert(text.replace(MARKER, ""))
    assert "javascript:alert(1)" not in text  # an unsafe link is not linked, nor shown
    assert "q&lt;script&gt;alert\\(1\\)&lt;/script&gt;\\|\\[x\\]" in text
    assert "long long …" in text and "long " * 30 not in text


def test_no_gate_no_losses_section() -> None:
    """Without a gate: no checks and no losses, report.md folded."""
    report = DEMO.model_copy(update={"gate": None})
    text = render_comment(report, render_markdown(report))
    assert text.splitlines()[1] == "## evalret: no gate configured"
    assert "per-query" not in text and "<details>" in text
    assert "the reports artifact of this workflow run" in text


def test_reports_link_from_github_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The workflow run's page from GITHUB_SERVER_URL, _REPOSITORY and _RUN_ID; an explicit
    EVALRET_REPORTS_URL wins; nothing outside GitHub Actions."""
    for key in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID", "EVALRET_REPORTS_URL"):
        monkeypatch.delenv(key, raising=False)
    assert reports_link() is None
    monkeypatch.setenv("GITHUB_SERVER_URL", "https://github.com")
    monkeypatch.setenv("GITHUB_REPOSITORY", "o/r")
    monkeypatch.setenv("GITHUB_RUN_ID", "42")
    assert reports_link() == "https://github.com/o/r/actions/runs/42"
    monkeypatch.setenv("EVALRET_REPORTS_URL", "https://example.org/artifact/7")
    assert reports_link() == "https://example.org/artifact/7"


def test_the_run_id_is_the_last_line_and_the_budget_holds() -> None:
    """A report written by a run carries its id on comment.md's last line, hidden, inside the
    budget even when the rest is cut."""
    report = failing([failed_check(i) for i in range(3000)]).model_copy(
        update={"run_id": "0f0e-run"}
    )
    text = render_comment(report, "x" * 100_000, LOSSES, budget=5_000)
    assert len(text) <= 5_000 and text.startswith(MARKER + "\n")
    assert text.endswith(RUN_MARKER.format("0f0e-run") + "\n")
    assert RUN_MARKER.format("0f0e-run") == "<!-- evalret-run: 0f0e-run -->"


# --- comment.sh against a loopback server speaking GitHub's REST API ------------------------
# The few endpoints comment.sh uses: GET /user, the pull request's comments (paginated with a
# Link header, two a page), POST a comment, PATCH a comment (only its author may). comment.sh
# runs with the real curl and jq.

TOKEN = "ghs_test_token"


class GitHub:
    """The state of the fake API: the comments, who the token is (None: an Actions token, which
    may not read /user and writes as github-actions[bot]), the methods answered 403, and every
    request seen."""

    def __init__(self, comments: list[dict[str, Any]], me: str | None, fail: str = "") -> None:
        self.comments, self.me, self.fail = comments, me, fail
        self.calls: list[tuple[str, str, Any]] = []

    @property
    def author(self) -> str:
        return self.me or "github-actions[bot]"


Answer = tuple[int, Any, dict[str, str] | None]


def _comments(state: GitHub, method: str, page: int, base: str, body: Any) -> Answer:
    """GET a page of the pull request's comments (two a page, Link to the next) or POST one."""
    if method == "POST":
        new = {"id": 900 + len(state.comments), "user": {"login": state.author}}
        state.comments.append({**new, "body": body["body"]})
        return 201, new, None
    chunk = state.comments[(page - 1) * 2 : page * 2]
    more = page * 2 < len(state.comments)
    link = {"Link": f'<{base}?per_page=100&page={page + 1}>; rel="next"'}
    return 200, chunk, link if more else None


def _patch(state: GitHub, cid: int, body: Any) -> Answer:
    """PATCH a comment: only its author may."""
    found = next((c for c in state.comments if c["id"] == cid), None)
    if found is None:
        return 404, {"message": "Not Found"}, None
    if found["user"]["login"] != state.author:
        return 403, {"message": "not the author"}, None
    found["body"] = body["body"]
    return 200, {"id": cid}, None


def _route(state: GitHub, method: str, url: Any, body: Any, host: str, auth: str | None) -> Answer:
    if auth != f"Bearer {TOKEN}":
        return 401, {"message": "Bad credentials"}, None
    if method == state.fail:
        return 403, {"message": "Resource not accessible by integration"}, None
    if url.path == "/user":
        if state.me is None:
            return 403, {"message": "Resource not accessible by integration"}, None
        return 200, {"login": state.me}, None
    if url.path == "/repos/o/r/issues/7/comments" and method in ("GET", "POST"):
        page = int(parse_qs(url.query).get("page", ["1"])[0])
        return _comments(state, method, page, f"http://{host}{url.path}", body)
    if url.path.startswith("/repos/o/r/issues/comments/") and method == "PATCH":
        return _patch(state, int(url.path.rsplit("/", 1)[1]), body)
    return 404, {"message": "Not Found"}, None


class _GitHubHandler(QuietHandler):
    server: LoopbackHTTPServer[list[GitHub]]

    def _answer(self, method: str) -> None:
        state = self.server.state[0]
        url = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        state.calls.append((method, url.path, body))
        auth = self.headers.get("Authorization")
        status, answer, headers = _route(state, method, url, body, self.headers["Host"], auth)
        send_json(self, status, answer, headers)

    def do_GET(self) -> None:
        self._answer("GET")

    def do_POST(self) -> None:
        self._answer("POST")

    def do_PATCH(self) -> None:
        self._answer("PATCH")


@pytest.fixture
def github() -> Iterator[tuple[str, list[GitHub]]]:
    """A loopback GitHub API; the test sets its state (index 0 of the list) before running."""
    holder: list[GitHub] = [GitHub([], None)]
    with Loopback(_GitHubHandler, holder) as server:
        yield server.origin, holder


RUN_ID = "11111111-2222-3333-4444-555555555555"


def comment_md(tmp_path: Path, run_id: str = RUN_ID) -> Path:
    comment = tmp_path / "comment.md"
    comment.write_text(
        f"{MARKER}\n## evalret gate: ✅ pass (3 checks)\n{RUN_MARKER.format(run_id)}\n"
    )
    return comment


def run_comment_sh(
    tmp_path: Path, api: tuple[str, list[GitHub]], state: GitHub, **env: str
) -> subprocess.CompletedProcess[str]:
    url, holder = api
    holder[0] = state
    comment = tmp_path / "comment.md"
    if not comment.exists():
        comment_md(tmp_path)
    environment = {
        "PATH": os.environ["PATH"],
        "GITHUB_API_URL": url,
        "GH_TOKEN": TOKEN,
        "COMMENT_FILE": str(comment),
        "PR_NUMBER": "7",
        "REPO": "o/r",
        "EVALRET_RUN_ID": RUN_ID,
        **env,
    }
    return subprocess.run(
        ["bash", str(COMMENT_SH)], env=environment, capture_output=True, text=True, check=False
    )


def mine(cid: int, body: str, login: str = "github-actions[bot]") -> dict[str, Any]:
    return {"id": cid, "body": body, "user": {"login": login}}


def test_comment_sh_posts_a_first_comment(tmp_path: Path, github: Any) -> None:
    """No comment of evalret's yet (another comment quotes the marker): one POST of comment.md,
    its body byte for byte."""
    state = GitHub([mine(1, "looks good", "alice"), mine(2, f"> {MARKER}\n> quoted", "bob")], None)
    done = run_comment_sh(tmp_path, github, state)
    assert done.returncode == 0 and "::warning" not in done.stdout, done.stdout + done.stderr
    assert [(m, p) for m, p, _ in state.calls] == [
        ("GET", "/user"),
        ("GET", "/repos/o/r/issues/7/comments"),
        ("POST", "/repos/o/r/issues/7/comments"),
    ]
    assert state.calls[-1][2] == {"body": (tmp_path / "comment.md").read_text()}
    assert "commented on the pull request" in done.stdout


def test_comment_sh_updates_its_own_comment_on_a_later_page(tmp_path: Path, github: Any) -> None:
    """A later push: the Actions bot's comment with the marker, on the second page, is PATCHed;
    nothing is added."""
    comments = [mine(1, "hi", "alice"), mine(2, "x", "bob"), mine(555, f"{MARKER}\nold")]
    state = GitHub(comments, None)
    done = run_comment_sh(tmp_path, github, state)
    assert done.returncode == 0, done.stdout + done.stderr
    assert [(m, p) for m, p, _ in state.calls][-1] == ("PATCH", "/repos/o/r/issues/comments/555")
    assert len(state.comments) == 3 and state.comments[2]["body"].endswith(
        RUN_MARKER.format(RUN_ID) + "\n"
    )
    assert "updated the pull request comment 555" in done.stdout


@pytest.mark.parametrize("me", [None, "evalret-bot"])
def test_comment_sh_never_edits_a_marker_comment_of_someone_else(
    tmp_path: Path, github: Any, me: str | None
) -> None:
    """The pull request's author posts the marker first: their comment is left alone and the
    verdict is still posted (as the token's user: github-actions[bot], or the user GET /user
    names); the next push updates evalret's own comment, not theirs."""
    planted = mine(3, f"{MARKER}\n## evalret gate: ✅ pass (forged)", "mallory")
    state = GitHub([planted], me)
    done = run_comment_sh(tmp_path, github, state)
    assert done.returncode == 0 and "::warning" not in done.stdout, done.stdout
    assert [m for m, _, _ in state.calls] == ["GET", "GET", "POST"]
    assert state.comments[0]["body"].endswith("(forged)") and len(state.comments) == 2
    assert state.comments[1]["user"]["login"] == state.author
    state.calls.clear()
    done = run_comment_sh(tmp_path, github, state)
    assert [m for m, _, _ in state.calls][-1] == "PATCH", done.stdout
    assert state.calls[-1][1] == f"/repos/o/r/issues/comments/{state.comments[1]['id']}"
    assert state.comments[0]["body"].endswith("(forged)")


@pytest.mark.parametrize("fail", ["GET", "POST"])
def test_comment_sh_warns_when_it_may_not_write(tmp_path: Path, github: Any, fail: str) -> None:
    """A fork's read-only token (HTTP 403): exit 0 with one warning line quoting the error."""
    state = GitHub([], None, fail=fail)
    done = run_comment_sh(tmp_path, github, state)
    assert done.returncode == 0, done.stderr
    warning = [line for line in done.stdout.splitlines() if line.startswith("::warning")]
    assert len(warning) == 1 and "HTTP 403" in warning[0], done.stdout
    assert "Resource not accessible" in warning[0]


def test_comment_sh_skips_what_it_cannot_post(tmp_path: Path, github: Any) -> None:
    """Outside a pull request, without comment.md, with a file not evalret's, or with a
    comment.md of another run (a stale one): a warning, exit 0, and no call to GitHub."""
    state = GitHub([], None)
    done = run_comment_sh(tmp_path, github, state, PR_NUMBER="")
    assert done.returncode == 0 and "not a pull request" in done.stdout and not state.calls
    done = run_comment_sh(tmp_path, github, state, COMMENT_FILE=str(tmp_path / "missing.md"))
    assert done.returncode == 0 and "no " in done.stdout and not state.calls
    comment_md(tmp_path, run_id="an-earlier-run")
    done = run_comment_sh(tmp_path, github, state)
    assert done.returncode == 0 and "was not written by this run" in done.stdout
    assert not state.calls
    done = run_comment_sh(tmp_path, github, state, EVALRET_RUN_ID="")
    assert done.returncode == 0 and "no EVALRET_RUN_ID" in done.stdout and not state.calls
    (tmp_path / "comment.md").write_text("# something else\n")
    done = run_comment_sh(tmp_path, github, state)
    assert done.returncode == 0 and "does not start with" in done.stdout and not state.calls


# --- gate.sh: the action's gate step ------------------------------------------------------------

PLUGIN = """\
import os


def rank(query_ids, query_texts, query_vectors, depth):
    return [[("d1", 1.0), ("d2", 0.5)] for _ in query_ids]


def vanish(query_ids, query_texts, query_vectors, depth):
    os._exit(0)  # ends the process at once: no report, exit status 0
"""


def run_gate_sh(tmp_path: Path, callable_name: str) -> tuple[dict[str, str], str]:
    """The action's gate step (gate.sh, as action.yml runs it) on a golden set ranked by a
    Python index (no model); returns its step outputs and stdout."""
    from helpers import make_set

    golden = make_set(tmp_path / "gs")
    (tmp_path / "gate_plugin.py").write_text(PLUGIN)
    config = tmp_path / "evalret.yaml"
    config.write_text(
        f"golden_set: {{path: {golden}}}\nindexes:\n  exact: {{enabled: false}}\n"
        "  hnsw: {enabled: false}\n  bm25: {enabled: false}\n  hybrid: {enabled: false}\n"
        f"  p: {{type: python, callable: 'gate_plugin:{callable_name}'}}\n"
    )
    outputs = tmp_path / "github_output"
    outputs.write_text("")
    env = {
        **{k: v for k, v in os.environ.items() if k != "EVALRET_RUN_ID"},
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(tmp_path)]),
        "EVALRET_CONFIG": str(config),
        "EVALRET_BASELINE": "",
        "EVALRET_OUT": str(tmp_path / "out"),
        "GITHUB_OUTPUT": str(outputs),
    }
    action = (REPO / ".github" / "actions" / "evalret" / "action.yml").read_text()
    assert 'run: bash "$GITHUB_ACTION_PATH/gate.sh"' in action
    done = subprocess.run(["bash", str(GATE_SH)], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    pairs = [line.split("=", 1) for line in outputs.read_text().splitlines()]
    return dict(pairs), done.stdout


def test_gate_sh_passes_only_with_this_runs_report(tmp_path: Path) -> None:
    """A finished run: exit-code 0 and report.json carries the run-id output. Then a run whose
    plug-in ends the process with status 0 before any report: the first run's report.json was
    removed when the second started (a run clears its earlier outputs), and gate.sh finds no
    report of this run, so the verdict is 3, never a pass."""
    outputs, _ = run_gate_sh(tmp_path, "rank")
    assert outputs["exit-code"] == "0"
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["run_id"] == outputs["run-id"] and len(outputs["run-id"]) == 36
    assert (
        (tmp_path / "out" / "comment.md")
        .read_text()
        .endswith(RUN_MARKER.format(outputs["run-id"]) + "\n")
    )
    stale, stdout = run_gate_sh(tmp_path, "vanish")
    assert stale["exit-code"] == "3", stdout
    assert stale["run-id"] != outputs["run-id"]
    assert "::error::evalret exited 0 but" in stdout
    assert not (tmp_path / "out" / "report.json").exists()
