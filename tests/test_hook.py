"""The pre-commit hook evalret-gate: `evalret init --pre-commit` writes it into a real git
repository, the real `pre-commit` package runs it before `git push` to a bare local remote, and
`evalret hook` gives `evalret run`'s verdict with the real packaged model."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

import evalret
from conftest import REPO
from evalret.commands.init import files_pattern
from helpers import invoke, make_set, marks_its_users

SRC = str(Path(evalret.__file__).resolve().parents[1])

# the tiny golden set (tests/helpers.make_set) with the packaged model and the exact index only;
# with truncate_dim 32 its recall@10 drops from 0.3056 to 0.2222 (exact, all 24 queries), far
# past max_drop 0.01: the degraded push must fail on that check
CONFIG = """\
golden_set:
  path: golden_sets/tiny
indexes:
  hnsw: {enabled: false}
  bm25: {enabled: false}
  hybrid: {enabled: false}
gate:
  baseline: baselines/tiny.json
  thresholds:
    recall@10: {max_drop: 0.01}
    mrr@10: {max_drop: 0.01}
output:
  dir: reports
"""


@dataclass(frozen=True)
class Repo:
    """A git repository with a pushed `origin` (a bare repository beside it)."""

    root: Path
    origin: Path
    env: dict[str, str]

    def git(self, *args: str, extra_env: dict[str, str] | None = None) -> tuple[int, str]:
        done = subprocess.run(
            ["git", *args],
            cwd=self.root,
            env={**self.env, **(extra_env or {})},
            capture_output=True,
            text=True,
        )
        return done.returncode, done.stdout + done.stderr

    def commit(self, message: str) -> None:
        for args in (("add", "-A"), ("commit", "-q", "-m", message)):
            code, output = self.git(*args)
            assert code == 0, output

    def remote_head(self) -> str:
        return subprocess.run(
            ["git", "--git-dir", str(self.origin), "rev-parse", "main"],
            env=self.env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()

    def head(self) -> str:
        return self.git("rev-parse", "HEAD")[1].strip()


def isolated_env(tmp: Path) -> dict[str, str]:
    """The environment of git and pre-commit: no global or system git config, pre-commit's
    store in ``tmp``, and this evalret (its `evalret` script and its source) on the paths."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PRE_COMMIT"))}
    env.pop("SKIP", None)
    env.update(
        HOME=str(tmp / "home"),
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_CONFIG_NOSYSTEM="1",
        PRE_COMMIT_HOME=str(tmp / "pre-commit"),
        PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
        PYTHONPATH=os.pathsep.join(p for p in (SRC, env.get("PYTHONPATH", "")) if p),
    )
    (tmp / "home").mkdir()
    return env


@pytest.fixture(scope="module")
@marks_its_users("model")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Repo:
    """A repository with a golden set, a config, a saved baseline and the evalret-gate hook
    (written by `evalret init --pre-commit`, installed by pre-commit for pre-push), pushed once
    before the hook was installed."""
    tmp = tmp_path_factory.mktemp("hook")
    root, origin = tmp / "repo", tmp / "origin.git"
    env = isolated_env(tmp)
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], env=env, check=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], env=env, check=True)
    make_set(root / "golden_sets" / "tiny")
    (root / "evalret.yaml").write_text(CONFIG)
    (root / ".gitignore").write_text("reports/\n")
    code, output = invoke(
        "run", "-c", str(root / "evalret.yaml"), "--no-progress", "-o", str(tmp / "first"),
        "--save-baseline", str(root / "baselines" / "tiny.json"),
    )  # fmt: skip
    assert code == 0, output
    code, output = invoke("init", str(root), "--pre-commit")
    assert code == 0, output
    r = Repo(root, origin, env)
    for args in (
        ("config", "user.name", "Hook Test"),
        ("config", "user.email", "hook@example.com"),
        ("remote", "add", "origin", str(origin)),
    ):
        assert r.git(*args)[0] == 0
    r.commit("golden set, config, baseline and the evalret-gate hook")
    code, output = r.git("push", "-q", "origin", "main")
    assert code == 0, output
    install = subprocess.run(
        [sys.executable, "-m", "pre_commit", "install", "--hook-type", "pre-push"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    return r


def test_written_hook_is_a_valid_local_pre_push_hook(repo: Repo) -> None:
    """`evalret init --pre-commit` wrote a local, pre-push, no-file-names hook that runs the
    config's gate and watches the config, the golden set and the baseline."""
    config = yaml.safe_load((repo.root / ".pre-commit-config.yaml").read_text())
    [local] = config["repos"]
    [hook] = local["hooks"]
    assert local["repo"] == "local" and hook["id"] == "evalret-gate"
    assert hook["entry"] == "evalret hook --config evalret.yaml"
    assert hook["stages"] == ["pre-push"] and hook["pass_filenames"] is False
    pattern = re.compile(hook["files"])
    for path in ("evalret.yaml", "golden_sets/tiny/queries.jsonl", "baselines/tiny.json"):
        assert pattern.search(path), path
    for path in ("notes.txt", "golden_sets/tiny2/queries.jsonl", "old/evalret.yaml"):
        assert not pattern.search(path), path
    check = subprocess.run(
        [sys.executable, "-m", "pre_commit", "validate-config", ".pre-commit-config.yaml"],
        cwd=repo.root,
        env=repo.env,
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout + check.stderr


def test_pushes_run_the_gate_only_when_it_matters_and_block_a_regression(repo: Repo) -> None:
    """An unrelated change pushes without running evalret; a golden-set change runs the gate and
    passes; truncate_dim 32 blocks the push with exit 1 naming the failed checks; SKIP lets it
    through."""
    (repo.root / "notes.txt").write_text("unrelated\n")
    repo.commit("an unrelated file")
    code, output = repo.git("push", "origin", "main")
    assert code == 0, output
    assert re.search(r"evalret gate .*\(no files to check\)Skipped", output), output
    assert not (repo.root / "reports").exists()  # evalret never ran
    assert repo.remote_head() == repo.head()

    # the corpus file rewritten in another order: a golden-set change with the same content
    corpus = repo.root / "golden_sets" / "tiny" / "corpus.jsonl"
    corpus.write_text("".join(reversed(corpus.read_text().splitlines(keepends=True))))
    repo.commit("golden set: documents in another order")
    code, output = repo.git("push", "origin", "main")
    assert code == 0, output
    assert "evalret-gate: PASS: " in output and "against baselines/tiny.json" in output
    assert "report: reports/report.md" in output
    assert (repo.root / "reports" / "report.md").read_text().startswith("## evalret gate: ✅")
    assert repo.remote_head() == repo.head()

    pushed = repo.remote_head()
    config = repo.root / "evalret.yaml"
    config.write_text(config.read_text() + "model:\n  truncate_dim: 32\n")
    repo.commit("a smaller model dimension")
    code, output = repo.git("push", "origin", "main")
    assert code != 0, output
    assert "evalret gate" in output and "Failed" in output and "- exit code: 1" in output
    assert "evalret-gate: FAIL: " in output and "the push is blocked" in output
    assert "  exact/all/recall@10 max_drop 0.01: 0.3056 -> 0.2222 (-0.0833" in output
    assert "changed: model.truncate_dim: None -> 32" in output
    assert repo.remote_head() == pushed  # nothing was pushed

    code, output = repo.git("push", "origin", "main", extra_env={"SKIP": "evalret-gate"})
    assert code == 0, output
    assert re.search(r"evalret gate .*Skipped", output), output
    assert repo.remote_head() == repo.head()


def test_hook_needs_a_baseline(tmp_path: Path) -> None:
    """A config that names no baseline: exit 2, the key to set, and what to do next."""
    make_set(tmp_path / "gs")
    (tmp_path / "evalret.yaml").write_text("golden_set:\n  path: gs\n")
    code, output = invoke("hook", "-c", str(tmp_path / "evalret.yaml"))
    assert code == 2, output
    assert "gate.baseline is not set" in output and "evalret-gate: an input is wrong" in output


def test_hook_exit_3_says_how_to_skip(repo: Repo, tmp_path: Path) -> None:
    """A model that cannot load is evalret's failure, not the change's: exit 3 and the SKIP=
    variable that pushes past the hook once."""
    make_set(tmp_path / "gs")  # the content of the repository's golden set: its baseline fits
    (tmp_path / "evalret.yaml").write_text(
        f"golden_set:\n  path: gs\nmodel:\n  name: {tmp_path / 'no-such-model'}\n"
        f"gate:\n  baseline: {repo.root / 'baselines' / 'tiny.json'}\n"
        f"output:\n  dir: {tmp_path / 'reports'}\n"
    )
    code, output = invoke("hook", "-c", str(tmp_path / "evalret.yaml"))
    assert code == 3, output
    assert "cannot load model" in output
    assert "evalret itself failed (exit 3)" in output
    assert "SKIP=evalret-gate git push" in output


def scaffold(root: Path) -> Path:
    """A repository root with a tiny golden set and a config naming its baseline."""
    make_set(root / "golden_sets" / "tiny")
    (root / "evalret.yaml").write_text(CONFIG)
    return root / ".pre-commit-config.yaml"


THEIRS = """\
# our hooks
default_install_hook_types: [pre-commit, pre-push]
repos:
- repo: https://github.com/astral-sh/ruff-pre-commit
  rev: v0.5.0
  hooks:
  - id: ruff   # lint
# - repo: local   (commented out for now)

ci:
  autofix_prs: false
"""


def test_init_pre_commit_keeps_the_users_hooks_and_comments(tmp_path: Path) -> None:
    """The hook block is added at the end of `repos:` in the file's own list style; every
    line of the user's file stays, and a second run changes nothing."""
    path = scaffold(tmp_path)
    path.write_text(THEIRS)
    code, output = invoke("init", str(tmp_path), "--pre-commit", "--watch", "prompts/query.txt")
    assert code == 0, output
    assert "added the evalret-gate hook" in output
    text = path.read_text()
    added = re.search(r"^- repo: local\n(?:  .*\n)+", text, re.MULTILINE)
    assert added is not None and text.replace(added.group(0), "", 1) == THEIRS
    data = yaml.safe_load(text)
    assert data["ci"] == {"autofix_prs": False}
    assert [r["repo"] for r in data["repos"]] == [
        "https://github.com/astral-sh/ruff-pre-commit",
        "local",
    ]
    assert "\n- repo: local\n  hooks:\n    - id: evalret-gate\n" in text  # column-0 items
    hook = data["repos"][1]["hooks"][0]
    assert re.search(hook["files"], "prompts/query.txt")
    assert invoke("init", str(tmp_path), "--pre-commit", "--watch", "prompts/query.txt") == (
        0,
        output.replace("added the evalret-gate hook to", "evalret-gate is already in"),
    )
    assert path.read_text() == text


def test_init_pre_commit_refuses_a_different_evalret_gate(tmp_path: Path) -> None:
    """An evalret-gate hook that differs from the one init would write is never overwritten:
    exit 2 naming the file and its line."""
    path = scaffold(tmp_path)
    assert invoke("init", str(tmp_path), "--pre-commit")[0] == 0
    mine = path.read_text().replace("--config evalret.yaml", "--config other.yaml")
    path.write_text(mine)
    code, output = invoke("init", str(tmp_path), "--pre-commit")
    assert code == 2, output
    assert "already has a different evalret-gate hook" in output
    assert f"{path}:4:" in output.replace("\n", "")
    assert path.read_text() == mine


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("repos:\n  - repo: local\n    hooks: [\n", "invalid YAML"),
        ("- just a list\n", "is not a pre-commit config"),
    ],
)
def test_init_pre_commit_refuses_a_broken_config(tmp_path: Path, text: str, message: str) -> None:
    """A .pre-commit-config.yaml that is not valid YAML, or not a mapping with `repos:`: exit 2,
    the file left alone."""
    path = scaffold(tmp_path)
    path.write_text(text)
    code, output = invoke("init", str(tmp_path), "--pre-commit")
    assert code == 2 and message in output, output
    assert path.read_text() == text


def test_init_pre_commit_needs_a_baseline_and_notes_paths_outside(tmp_path: Path) -> None:
    """A config naming no baseline is refused (exit 2); a golden set outside the repository
    cannot be watched and is listed as such."""
    root = tmp_path / "repo"
    root.mkdir()
    make_set(tmp_path / "elsewhere")
    (root / "evalret.yaml").write_text("golden_set:\n  path: ../elsewhere\n")
    code, output = invoke("init", str(root), "--pre-commit")
    assert code == 2 and "gate.baseline is not set" in output, output
    assert not (root / ".pre-commit-config.yaml").exists()
    (root / "evalret.yaml").write_text(
        "golden_set:\n  path: ../elsewhere\ngate:\n  baseline: baselines/b.json\n"
    )
    code, output = invoke("init", str(root), "--pre-commit")
    assert code == 0, output
    assert "not watched (outside the repository):" in output and "elsewhere" in output
    assert "watched: evalret.yaml, baselines/b.json" in output


@pytest.mark.parametrize(
    ("args", "source", "shown"),
    [
        (("--watch", "prompts/a\nb.txt"), "--watch", "'prompts/a\\nb.txt'"),
        (("--watch", "p\rq"), "--watch", "'p\\rq'"),
        (("--watch", "tab\tname"), "--watch", "'tab\\tname'"),
        (("--watch", "x\u2028y"), "--watch", "'x\\u2028y'"),
        (("--config", "odd\nname.yaml"), "--config", "'odd\\nname.yaml'"),
    ],
    ids=["newline", "carriage-return", "tab", "line-separator", "config-newline"],
)
def test_init_pre_commit_refuses_a_path_with_a_line_break(
    tmp_path: Path, args: tuple[str, ...], source: str, shown: str
) -> None:
    """A watched path with a line break or another control character cannot be matched by the
    hook's one-line files: pattern: exit 2 naming the option and the path (it was reported as
    a .pre-commit-config.yaml layout evalret cannot edit). Nothing is written."""
    path = scaffold(tmp_path)
    if source == "--config":
        (tmp_path / args[1]).write_text(CONFIG)
    code, output = invoke("init", str(tmp_path), "--pre-commit", *args)
    flat = output.replace("\n", "")
    assert code == 2, output
    assert f"{source}: the path {shown} holds a line break or control character" in flat
    assert "without rewriting it" not in flat
    assert not path.exists()


def test_init_pre_commit_refuses_a_golden_set_path_with_a_line_break(tmp_path: Path) -> None:
    """The same for a path the config names: the message names its key."""
    path = scaffold(tmp_path)
    (tmp_path / "golden_sets" / "tiny").rename(tmp_path / "golden_sets" / "ti\nny")
    config = tmp_path / "evalret.yaml"
    config.write_text(CONFIG.replace("path: golden_sets/tiny", 'path: "golden_sets/ti\\nny"'))
    code, output = invoke("init", str(tmp_path), "--pre-commit")
    assert code == 2, output
    assert "golden_set.path: the path 'golden_sets/ti\\nny'" in output.replace("\n", "")
    assert not path.exists()


def test_files_pattern_matches_paths_and_what_is_under_them() -> None:
    """A watched path matches itself and everything below it, never a longer sibling name."""
    pattern = re.compile(files_pattern(["golden_sets/a.b", "evalret.yaml"]))
    assert pattern.search("golden_sets/a.b") and pattern.search("golden_sets/a.b/q.jsonl")
    assert pattern.search("evalret.yaml")
    assert not pattern.search("golden_sets/a.bc/q.jsonl") and not pattern.search("golden_sets/axb")
    assert not pattern.search("x/evalret.yaml")


def test_hook_manifest_is_valid() -> None:
    """The repository's .pre-commit-hooks.yaml (the `repo:` route) passes pre-commit's own
    check and runs `evalret hook` at pre-push without file names."""
    manifest = REPO / ".pre-commit-hooks.yaml"
    check = subprocess.run(
        [sys.executable, "-m", "pre_commit", "validate-manifest", str(manifest)],
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    [hook] = yaml.safe_load(manifest.read_text())
    assert hook["id"] == "evalret-gate" and hook["entry"] == "evalret hook"
    assert hook["stages"] == ["pre-push"] and hook["pass_filenames"] is False
    assert re.search(hook["files"], "golden_sets/example/queries.jsonl")


def test_init_pre_commit_fills_an_empty_list_and_refuses_a_flow_list(tmp_path: Path) -> None:
    """`repos: []` becomes a block list holding the hook; a flow-style list it cannot edit line
    by line is left alone: exit 2 with the block to paste."""
    path = scaffold(tmp_path)
    path.write_text("repos: []\n")
    assert invoke("init", str(tmp_path), "--pre-commit")[0] == 0
    assert [r["repo"] for r in yaml.safe_load(path.read_text())["repos"]] == ["local"]
    flow = "repos: [{repo: local, hooks: [{id: x, name: x, entry: x, language: system}]}]\n"
    path.write_text(flow)
    code, output = invoke("init", str(tmp_path), "--pre-commit")
    assert code == 2 and "add this block under `repos:` by hand" in output, output
    assert "- id: evalret-gate" in output and "stages: [pre-push]" in output
    assert path.read_text() == flow


def test_verdict_escapes_names_from_the_golden_set_and_caps_the_list() -> None:
    """A slice named by a golden-set tag holding an escape sequence reaches the terminal as
    visible text; past 20 failed checks the rest are counted, not listed."""
    from evalret.data.schema import GateCheck, GateSection
    from evalret.report.hook_view import hook_lines

    def check(i: int) -> GateCheck:
        return GateCheck(
            name=f"exact/\x1b[2Jtag{i}/recall@10 max_drop 0.01", index="exact",
            slice=f"\x1b[2Jtag{i}", metric="recall@10", kind="max_drop", threshold=0.01,
            baseline=0.5, current=0.25, delta=-0.25, n_queries=3, p_value=None,
            p_adjusted=None, mde=None, underpowered=False, passed=False, message="",
        )  # fmt: skip

    gate = GateSection(
        verdict="fail", baseline="b.json", baseline_fingerprint=None, changed={},
        significance=None, checks=[check(i) for i in range(23)], notes=[],
    )  # fmt: skip
    lines = hook_lines("evalret-gate", gate, Path("b.json"), Path("reports/report.md"))
    assert lines[0] == (
        "evalret-gate: FAIL: 23 of 23 checks failed against b.json; the push is blocked"
    )
    assert lines[1] == "  exact/\\x1b[2Jtag0/recall@10 max_drop 0.01: 0.5000 -> 0.2500 " + (
        "(-0.2500; allowed drop ≤ 0.01)"
    )
    assert len(lines) == 1 + 20 + 1 + 1 and lines[21] == "  ... and 3 more (see report.md)"
    assert lines[-1] == "report: reports/report.md" and not any("\x1b" in ln for ln in lines)


def test_the_hook_gates_the_pushed_commit_not_the_checked_out_tree(repo: Repo) -> None:
    """`git push origin bad` from a good checkout is blocked by bad's own regression, and a good
    branch pushed from a bad checkout passes: the hook evaluates the commit pre-commit names
    ($PRE_COMMIT_TO_REF) in a temporary worktree, and leaves no worktree behind."""
    config = repo.root / "evalret.yaml"
    corpus = repo.root / "golden_sets" / "tiny" / "corpus.jsonl"
    assert repo.git("checkout", "-q", "-b", "good-side", "main")[0] == 0
    config.write_text(CONFIG)  # the baseline's own settings
    corpus.write_text("".join(reversed(corpus.read_text().splitlines(keepends=True))))
    repo.commit("good: the golden set's documents in another order")
    assert repo.git("checkout", "-q", "-b", "bad-side", "good-side")[0] == 0
    config.write_text(CONFIG + "model:\n  truncate_dim: 32\n")
    repo.commit("bad: a smaller model dimension")
    bad = repo.head()

    assert repo.git("checkout", "-q", "good-side")[0] == 0  # a good tree checked out
    code, output = repo.git("push", "origin", "bad-side")
    assert code != 0, output
    assert "evalret-gate: FAIL: " in output and "the push is blocked" in output
    assert f"gated: the pushed commit {bad[:12]}" in output
    assert "changed: model.truncate_dim: None -> 32" in output
    assert repo.git("ls-remote", "--heads", "origin", "bad-side")[1].strip() == ""

    assert repo.git("checkout", "-q", "bad-side")[0] == 0  # a bad tree checked out
    code, output = repo.git("push", "origin", "good-side")
    assert code == 0, output
    assert "evalret-gate: PASS: " in output and "against baselines/tiny.json" in output
    assert "report: reports/report.md" in output
    assert repo.git("ls-remote", "--heads", "origin", "good-side")[1].strip() != ""
    worktrees = repo.git("worktree", "list", "--porcelain")[1]
    assert worktrees.count("worktree ") == 1, worktrees
    assert repo.git("checkout", "-q", "main")[0] == 0


# --- the verdict comes from this run's report.json (its run id) ------------------------------

RANKER = """\
def rank(query_ids, query_texts, query_vectors, depth):
    return [[("d1", 1.0), ("d2", 0.5)] for _ in query_ids]
"""


def python_index_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A golden set ranked by a Python index (no model), with a saved baseline; the config."""
    make_set(tmp_path / "gs")
    (tmp_path / "hook_ranker.py").write_text(RANKER)
    monkeypatch.syspath_prepend(str(tmp_path))
    config = tmp_path / "evalret.yaml"
    config.write_text(
        "golden_set: {path: gs}\nindexes:\n  exact: {enabled: false}\n  hnsw: {enabled: false}\n"
        "  bm25: {enabled: false}\n  hybrid: {enabled: false}\n"
        "  p: {type: python, callable: 'hook_ranker:rank'}\n"
        "gate:\n  indexes: [p]\n  baseline: base.json\n"
        "  thresholds:\n    ndcg@10: {max_drop: 0.01}\n"
        "output:\n  dir: reports\n"
    )
    code, output = invoke(
        "run", "-c", str(config), "--no-progress", "--save-baseline", str(tmp_path / "base.json")
    )
    assert code == 0, output
    return config


def test_the_hook_takes_its_verdict_from_this_runs_report_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hook reads report.json back: it carries this run's id and verdict. A report.json
    that another run wrote in the meantime (another id, or another verdict) gives no verdict:
    exit 3, never a pass."""
    from evalret.commands.hook import hook_command, report_of_run
    from evalret.errors import EvalretError

    config = python_index_set(tmp_path, monkeypatch)
    monkeypatch.delenv("EVALRET_RUN_ID", raising=False)
    done = hook_command(config=config)
    assert done.exit_code == 0 and done.report.run_id == done.run.run_id
    report_json = tmp_path / "reports" / "report.json"
    assert json.loads(report_json.read_text())["run_id"] == done.run.run_id
    stale = json.loads(report_json.read_text())
    report_json.write_text(json.dumps({**stale, "run_id": "an-earlier-run"}))
    with pytest.raises(EvalretError, match="not this run's"):
        report_of_run(done.run)
    assert stale["gate"]["verdict"] == "pass"  # the same ranking as the baseline's
    demo_gate = json.loads((REPO / "baselines" / "demo.json").read_text())["gate"]
    failed = {**stale, "gate": {**demo_gate, "verdict": "fail"}}
    report_json.write_text(json.dumps(failed))
    with pytest.raises(EvalretError, match="does not hold this run's verdict"):
        report_of_run(done.run)
    report_json.unlink()
    with pytest.raises(EvalretError, match="cannot read back"):
        report_of_run(done.run)


def test_a_chosen_run_id_is_written_and_a_bad_one_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """$EVALRET_RUN_ID names the run in report.json; one that is not a short token is exit 2
    before any work."""
    config = python_index_set(tmp_path, monkeypatch)
    monkeypatch.setenv("EVALRET_RUN_ID", "ci-42.attempt_1")
    code, output = invoke("hook", "-c", str(config))
    assert code == 0 and "evalret-gate: PASS" in output, output
    report = json.loads((tmp_path / "reports" / "report.json").read_text())
    assert report["run_id"] == "ci-42.attempt_1"
    monkeypatch.setenv("EVALRET_RUN_ID", "bad id\n<!--")
    code, output = invoke("run", "-c", str(config), "--no-progress", "-o", str(tmp_path / "o"))
    assert code == 2 and "EVALRET_RUN_ID" in output, output
    assert not (tmp_path / "o").exists()


# --- the pushed commit's plug-in code, and the checkout's files, under the hook ----------------

HOOK_RETRIEVER = """
def search(ids, texts, vectors, depth):
    return [[("doc-0001", 1.0), ("doc-0002", 0.5)] for _ in ids]
"""
PLUGIN_CONFIG = """\
golden_set: {path: golden}
indexes:
  exact: {enabled: false}
  hnsw: {enabled: false}
  bm25: {enabled: false}
  hybrid: {enabled: false}
  p: {type: python, callable: 'hookpushed_retriever:search'}
gate:
  indexes: [p]
  baseline: baselines/b.json
  thresholds:
    recall@10: {max_drop: 0.01}
output: {dir: reports}
"""


def _plugin_repo(root: Path) -> tuple[Path, str]:
    """A repository whose config ranks with a Python retriever kept in it (its baseline saved
    with that code), and a branch `bad` whose retriever fails; main checked out. Returns the
    checkout and bad's commit."""
    import shutil

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout.strip()

    root.mkdir()
    shutil.copytree(REPO / "golden_sets" / "demo", root / "golden")
    (root / "evalret.yaml").write_text(PLUGIN_CONFIG)
    (root / "hookpushed_retriever.py").write_text(HOOK_RETRIEVER)
    git("init", "-q", "-b", "main")
    code, output = invoke(
        "run", "-c", str(root / "evalret.yaml"), "--save-baseline", str(root / "baselines/b.json"),
        "--out", str(root / "first"), "--no-progress",
    )  # fmt: skip
    assert code == 0, output
    git("add", "evalret.yaml", "hookpushed_retriever.py", "golden", "baselines")
    git("commit", "-q", "-m", "good")
    git("checkout", "-q", "-b", "bad")
    (root / "hookpushed_retriever.py").write_text(
        "def search(ids, texts, vectors, depth):\n    raise RuntimeError('the pushed code ran')\n"
    )
    git("commit", "-q", "-am", "bad retriever")
    bad = git("rev-parse", "HEAD")
    git("checkout", "-q", "main")
    return root, bad


def test_the_hook_imports_the_pushed_commits_plugin_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A retriever changed only in the pushed commit is the one that runs: the checkout's own
    (good) module on sys.path is swapped for the worktree's while the commit is gated (before,
    the checkout's code ran and the bad push passed)."""
    monkeypatch.syspath_prepend(str(tmp_path / "repo"))
    monkeypatch.delitem(sys.modules, "hookpushed_retriever", raising=False)
    root, bad = _plugin_repo(tmp_path / "repo")
    monkeypatch.delitem(sys.modules, "hookpushed_retriever", raising=False)
    monkeypatch.chdir(root)
    monkeypatch.setenv("PRE_COMMIT_TO_REF", bad)
    code, output = invoke("hook", "-c", "evalret.yaml")
    assert code == 3, output
    assert "the pushed code ran" in output
    monkeypatch.delenv("PRE_COMMIT_TO_REF")
    monkeypatch.delitem(sys.modules, "hookpushed_retriever", raising=False)
    code, output = invoke("hook", "-c", "evalret.yaml")  # the checkout itself: the good code
    assert code == 0, output
    assert str(root) in sys.path and not any("evalret-hook-" in p for p in sys.path)


def test_the_hook_guards_the_checkouts_files_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pushed commit whose output directory is its golden set: the reports go to the
    checkout, so the guard refuses them against the checkout's golden set as well as the
    worktree's (exit 2, the checkout's files intact)."""
    monkeypatch.syspath_prepend(str(tmp_path / "repo"))
    monkeypatch.delitem(sys.modules, "hookpushed_retriever", raising=False)
    root, _ = _plugin_repo(tmp_path / "repo")
    (root / "evalret.yaml").write_text(PLUGIN_CONFIG.replace("dir: reports", "dir: golden"))
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-am", "out"],
        cwd=root,
        check=True,
    )
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
    ).stdout.strip()
    before = {p: p.read_bytes() for p in (root / "golden").iterdir()}
    monkeypatch.chdir(root)
    monkeypatch.setenv("PRE_COMMIT_TO_REF", head)
    code, output = invoke("hook", "-c", "evalret.yaml")
    assert code == 2, output
    assert "in the checkout" in " ".join(output.split())
    assert {p: p.read_bytes() for p in (root / "golden").iterdir()} == before


def test_the_hook_gates_the_config_run_reads_by_default() -> None:
    """One default config name (#39): `evalret hook`, `evalret init --pre-commit` and `evalret
    run` without --config all use evalret.choices.DEFAULT_CONFIG; no module keeps a copy."""
    import inspect

    import typer.main

    from evalret.choices import DEFAULT_CONFIG
    from evalret.cli import app
    from evalret.commands.hook import hook_command

    assert inspect.signature(hook_command).parameters["config"].default is DEFAULT_CONFIG
    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    for name in ("hook", "init"):
        option = next(p for p in commands[name].params if p.name == "config")
        assert Path(option.default) == DEFAULT_CONFIG, name
    copies = [
        path
        for path in (REPO / "src" / "evalret").rglob("*.py")
        if re.search(r"Path\(\s*['\"]evalret\.yaml['\"]\s*\)", path.read_text(encoding="utf-8"))
    ]
    assert copies == [REPO / "src" / "evalret" / "choices.py"]
