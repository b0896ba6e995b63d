"""The pull-request comment: comment.md (report/comment.py) leads with the verdict, the failed
checks and the biggest per-query losses, stays under its budget with a link to the reports, and
keeps hostile ids inert; the action's comment.sh posts it once and then updates it in place, and
only warns when it may not write (a fork's token)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evalret.commands.comment import reports_link
from evalret.data.schema import GateCheck, QueryExample, RunReport
from evalret.report.comment import BUDGET, GITHUB_LIMIT, MARKER, Losses, render_comment
from evalret.report.markdown import render_markdown
from test_hostile import IMG, JS_LINK, SCRIPT, assert_markdown_inert

REPO = Path(__file__).resolve().parents[1]
DEMO = RunReport.model_validate_json((REPO / "baselines" / "demo.json").read_text())
COMMENT_SH = REPO / ".github" / "actions" / "evalret" / "comment.sh"


def failed_check(i: int, name: str | None = None) -> GateCheck:
    return GateCheck(
        name=name or f"exact/slice-{i}/recall@10 max_drop 0.01",
        index="exact",
        slice=f"slice-{i}",
        metric="recall@10",
        kind="max_drop",
        threshold=0.01,
        baseline=0.7,
        current=0.6,
        delta=-0.1,
        n_queries=50,
        p_value=0.001,
        p_adjusted=0.01,
        mde=0.05,
        underpowered=False,
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


# --- comment.sh, with a stand-in for the gh CLI --------------------------------------------
# GitHub cannot be reached from the tests: `gh` is replaced by a script that serves the
# pull request's comments from a JSON file (filtered by the real jq with comment.sh's own
# expression, as gh --jq does) and records what comment.sh writes.

GH_STUB = f"""#!{sys.executable}
import json, os, subprocess, sys
from pathlib import Path

state = Path(os.environ["GH_STATE"])
args = sys.argv[1:]
method, fields, jq, path = "GET", [], None, None
i = 1
while i < len(args):
    if args[i] == "--method":
        method, i = args[i + 1], i + 2
    elif args[i] == "-F":
        fields.append(args[i + 1]); i += 2
    elif args[i] == "--jq":
        jq, i = args[i + 1], i + 2
    elif args[i] == "--paginate":
        i += 1
    else:
        path, i = args[i], i + 1
body = None
for field in fields:
    name, _, value = field.partition("=")
    if name == "body" and value.startswith("@"):
        body = Path(value[1:]).read_text()
with open(state / "calls.jsonl", "a") as log:
    log.write(json.dumps({{"method": method, "path": path, "body": body}}) + "\\n")
if (state / f"fail-{{method}}").exists():
    print("gh: Resource not accessible by integration (HTTP 403)\\nsecond line", file=sys.stderr)
    sys.exit(1)
if method == "GET":
    comments = (state / "comments.json").read_text()
    sys.stdout.write(subprocess.run(["jq", "-r", jq], input=comments, text=True,
                                    capture_output=True, check=True).stdout)
"""


def run_comment_sh(
    tmp_path: Path, comments: list[dict[str, Any]], fail: str = "", **env: str
) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    state = tmp_path / "state"
    state.mkdir(exist_ok=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    gh = bin_dir / "gh"
    gh.write_text(GH_STUB)
    gh.chmod(0o755)
    (state / "comments.json").write_text(json.dumps(comments))
    if fail:
        (state / f"fail-{fail}").touch()
    comment = tmp_path / "comment.md"
    if not comment.exists():
        comment.write_text(f"{MARKER}\n## evalret gate: ✅ pass (3 checks)\n")
    environment = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "GH_STATE": str(state),
        "COMMENT_FILE": str(comment),
        "PR_NUMBER": "7",
        "REPO": "o/r",
        **env,
    }
    done = subprocess.run(
        ["bash", str(COMMENT_SH)], env=environment, capture_output=True, text=True, check=False
    )
    calls_file = state / "calls.jsonl"
    calls = (
        [json.loads(x) for x in calls_file.read_text().splitlines()] if calls_file.exists() else []
    )
    return done, calls


def test_comment_sh_posts_a_first_comment(tmp_path: Path) -> None:
    """No comment of evalret's yet (another comment quotes the marker): one POST of comment.md."""
    others = [{"id": 1, "body": "looks good"}, {"id": 2, "body": f"> {MARKER}\n> quoted"}]
    done, calls = run_comment_sh(tmp_path, others)
    assert done.returncode == 0, done.stderr
    assert [c["method"] for c in calls] == ["GET", "POST"]
    assert calls[0]["path"] == "repos/o/r/issues/7/comments"
    assert calls[1]["path"] == "repos/o/r/issues/7/comments"
    assert calls[1]["body"] == (tmp_path / "comment.md").read_text()
    assert "commented on the pull request" in done.stdout


def test_comment_sh_updates_its_comment_in_place(tmp_path: Path) -> None:
    """A later push: the comment that starts with the marker is PATCHed, nothing is added."""
    comments = [{"id": 1, "body": "hi"}, {"id": 555, "body": f"{MARKER}\nold"}]
    done, calls = run_comment_sh(tmp_path, comments)
    assert done.returncode == 0, done.stderr
    assert [(c["method"], c["path"]) for c in calls] == [
        ("GET", "repos/o/r/issues/7/comments"),
        ("PATCH", "repos/o/r/issues/comments/555"),
    ]
    assert "updated the pull request comment 555" in done.stdout


@pytest.mark.parametrize("fail", ["GET", "POST"])
def test_comment_sh_warns_when_it_may_not_write(tmp_path: Path, fail: str) -> None:
    """A fork's read-only token (HTTP 403): exit 0 with one warning line, the error quoted
    on that line."""
    done, _ = run_comment_sh(tmp_path, [], fail=fail)
    assert done.returncode == 0, done.stderr
    warning = [line for line in done.stdout.splitlines() if line.startswith("::warning")]
    assert len(warning) == 1 and "HTTP 403" in warning[0] and "%0Asecond line" in warning[0]


def test_comment_sh_skips_what_it_cannot_post(tmp_path: Path) -> None:
    """Outside a pull request, without comment.md, or with a file not evalret's: a warning,
    exit 0, and no call to GitHub."""
    done, calls = run_comment_sh(tmp_path, [], PR_NUMBER="")
    assert done.returncode == 0 and "not a pull request" in done.stdout and not calls
    done, calls = run_comment_sh(tmp_path, [], COMMENT_FILE=str(tmp_path / "missing.md"))
    assert done.returncode == 0 and "no " in done.stdout and not calls
    (tmp_path / "comment.md").write_text("# something else\n")
    done, calls = run_comment_sh(tmp_path, [])
    assert done.returncode == 0 and "does not start with" in done.stdout and not calls
