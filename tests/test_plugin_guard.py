"""The plug-in guard (engines/plugins.py): code a config names (a Python retriever, a custom
encoder) can neither end evalret with a verdict nor write to its stdout, and Ctrl-C / SIGTERM are
130 / 143 with no report. The demo golden set, plug-ins written to tmp_path, no model."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import DEMO, REPO
from evalret.cli import app
from evalret.cli_runtime import exit_code
from evalret.errors import ExitCode, Terminated

runner = CliRunner()

RETRIEVER = """
import os, sys, time, warnings
from pathlib import Path

import numpy as np

def _ranking(n):
    return [[("doc-0001", 1.0), ("doc-0002", 0.5)] for _ in range(n)]

def good(ids, texts, vectors, depth):
    return _ranking(len(ids))

def numpy_scores(ids, texts, vectors, depth):
    return [[("doc-0001", np.float32(2.0)), ("doc-0002", np.int64(1))] for _ in ids]

def exit_0(ids, texts, vectors, depth):
    sys.exit(0)

def exit_msg(ids, texts, vectors, depth):
    raise SystemExit("all good, stopping here")

def generator_exit(ids, texts, vectors, depth):
    raise GeneratorExit

def lazy_rows(ids, texts, vectors, depth):
    def rows():
        yield [("doc-0001", 1.0)]
        sys.exit(0)
    return rows()

def lazy_pairs(ids, texts, vectors, depth):
    def pairs():
        yield ("doc-0001", 1.0)
        raise SystemExit(1)
    return [pairs() for _ in ids]

def _one_score(score):
    def search(ids, texts, vectors, depth):
        return [[("doc-0001", score)] for _ in ids]
    return search

inf_score = _one_score(float("inf"))
overflow_score = _one_score(10**400)
str_score = _one_score("1.5")
bool_score = _one_score(True)
none_score = _one_score(None)

def by_mode(ids, texts, vectors, depth):
    if os.environ.get("PLUGIN_MODE") == "exit":
        sys.exit(0)
    return _ranking(len(ids))

def prints(ids, texts, vectors, depth):
    print("PLUGIN: GATE PASSED")
    sys.stdout.buffer.write(b"PLUGIN: GATE PASSED in bytes\\n")
    sys.__stdout__.write("PLUGIN: GATE PASSED via __stdout__\\n")
    os.system("echo PLUGIN: GATE PASSED from a shell")
    warnings.warn("PLUGIN: GATE PASSED as a warning")
    return _ranking(len(ids))

def moves_away(ids, texts, vectors, depth):
    os.chdir(os.environ["PLUGIN_ELSEWHERE"])
    return _ranking(len(ids))

def hangs(ids, texts, vectors, depth):
    try:
        Path(os.environ["PLUGIN_STARTED"]).write_text("started")
        while True:
            time.sleep(0.05)
    finally:
        Path(os.environ["PLUGIN_STARTED"]).write_text("cleaned up")
"""

ENCODER = """
import os, sys, zlib
import numpy as np

class Encoder:
    def __init__(self, where=""):
        self.where = where

    def identity(self):
        if self.where == "identity":
            raise SystemExit("identity says stop")
        return {"kind": "constant"}

    def encode(self, texts, kind):
        if self.where == "encode":
            print("PLUGIN: GATE PASSED")
            sys.exit(0)
        if self.where == "encode-lazy":
            raise GeneratorExit
        if self.where == "close-stderr":
            os.close(2)
        if self.where == "prints":
            print("PLUGIN: GATE PASSED")
            os.system("echo PLUGIN: GATE PASSED from a shell")
        out = np.zeros((len(texts), 32), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                out[i, zlib.crc32(word.encode()) % 32] += 1.0
        return out

def make(where=""):
    if where == "factory":
        sys.exit(0)
    return Encoder(where)
"""

NO_DENSE = "  exact: {enabled: false}\n  hnsw: {enabled: false}\n  hybrid: {enabled: false}\n"
NO_DENSE += "  bm25: {enabled: false}\n"
DENSE_ONLY = "  hnsw: {enabled: false}\n  hybrid: {enabled: false}\n  bm25: {enabled: false}\n"


@pytest.fixture(scope="module")
def plugins(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A directory on sys.path with the plug-in modules: guard_retriever, guard_encoder and two
    modules whose import calls sys.exit."""
    root = tmp_path_factory.mktemp("plugins")
    (root / "guard_retriever.py").write_text(textwrap.dedent(RETRIEVER))
    (root / "guard_encoder.py").write_text(textwrap.dedent(ENCODER))
    (root / "guard_exits_on_import.py").write_text("import sys\nsys.exit(0)\n")
    (root / "guard_exits_on_import_enc.py").write_text("raise SystemExit('bye')\n")
    sys.path.insert(0, str(root))
    yield root
    sys.path.remove(str(root))
    for name in list(sys.modules):
        if name.startswith("guard_"):
            del sys.modules[name]


def retriever_config(directory: Path, callable_: str, extra: str = "") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "cfg.yaml"
    path.write_text(
        f"golden_set: {{path: {DEMO}}}\ncache: {{dir: {directory / 'cache'}}}\n{extra}"
        f"indexes:\n{NO_DENSE}  p: {{type: python, callable: '{callable_}'}}\n"
    )
    return path


def encoder_config(
    directory: Path, where: str, callable_: str = "guard_encoder:make", extra: str = ""
) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "cfg.yaml"
    path.write_text(
        f"golden_set: {{path: {DEMO}}}\ncache: {{dir: {directory / 'cache'}}}\n{extra}"
        f"model: {{provider: python, callable: '{callable_}', options: {{where: '{where}'}}}}\n"
        f"indexes:\n{DENSE_ONLY}"
    )
    return path


def invoke(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, [*args, "--no-progress"] if args[0] == "run" else list(args))
    return result.exit_code, " ".join(result.output.split())


# --- exit 3 naming the callable, and no report -------------------------------------------------

RETRIEVER_CASES = [
    ("exit_0", "guard_retriever:exit_0 raised SystemExit(0)"),
    ("exit_msg", "guard_retriever:exit_msg raised SystemExit('all good, stopping here')"),
    ("generator_exit", "guard_retriever:generator_exit raised GeneratorExit"),
    ("lazy_rows", "guard_retriever:lazy_rows raised SystemExit(0)"),
    ("lazy_pairs", "guard_retriever:lazy_pairs raised SystemExit(1)"),
    ("inf_score", "guard_retriever:inf_score returned score inf for document 'doc-0001'"),
    ("overflow_score", "guard_retriever:overflow_score returned score 1000000"),
    ("str_score", "guard_retriever:str_score returned score '1.5' (str)"),
    ("bool_score", "guard_retriever:bool_score returned score True (bool)"),
    ("none_score", "guard_retriever:none_score returned score None (NoneType)"),
]


@pytest.mark.parametrize(("function", "message"), RETRIEVER_CASES)
def test_a_retriever_cannot_end_the_run_or_pass_a_bad_score(
    plugins: Path, tmp_path: Path, function: str, message: str
) -> None:
    """sys.exit(0) / SystemExit("msg") / GeneratorExit in the function or in its lazy answer,
    and a non-finite, overflowing, string, bool or None score: exit 3 naming the callable (and
    the value), no report."""
    config = retriever_config(tmp_path, f"guard_retriever:{function}")
    code, output = invoke("run", "-c", str(config), "-o", str(tmp_path / "out"))
    assert code == ExitCode.INTERNAL, output
    assert message in output
    assert not (tmp_path / "out" / "report.json").exists()


def test_numpy_scores_are_numbers(plugins: Path, tmp_path: Path) -> None:
    """Strict is not fussy: numpy floats and ints are scores."""
    config = retriever_config(tmp_path, "guard_retriever:numpy_scores")
    code, output = invoke("run", "-c", str(config), "-o", str(tmp_path / "out"))
    assert code == ExitCode.OK, output
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["indexes"]["p"]["top_ids"][0][:2] == ["doc-0001", "doc-0002"]


def test_an_import_that_exits_is_exit_3(plugins: Path, tmp_path: Path) -> None:
    """sys.exit(0) while the retriever's module is imported, SystemExit("bye") while the
    encoder's is: exit 3 naming the callable, where today the first exits 0."""
    config = retriever_config(tmp_path / "r", "guard_exits_on_import:search")
    code, output = invoke("run", "-c", str(config), "-o", str(tmp_path / "r" / "out"))
    assert code == ExitCode.INTERNAL, output
    assert "guard_exits_on_import:search (import) raised SystemExit(0)" in output
    config = encoder_config(tmp_path / "e", "", "guard_exits_on_import_enc:make")
    code, output = invoke("run", "-c", str(config), "-o", str(tmp_path / "e" / "out"))
    assert code == ExitCode.INTERNAL, output
    assert "guard_exits_on_import_enc:make (import) raised SystemExit('bye')" in output
    assert not any(tmp_path.glob("*/out/report.json"))


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ("factory", "guard_encoder:make raised SystemExit(0)"),
        ("identity", "guard_encoder:make identity() raised SystemExit('identity says stop')"),
        ("encode", "guard_encoder:make encode() raised SystemExit(0)"),
        ("encode-lazy", "guard_encoder:make encode() raised GeneratorExit"),
    ],
)
def test_an_encoder_cannot_end_the_run(
    plugins: Path, tmp_path: Path, where: str, message: str
) -> None:
    """sys.exit in a custom encoder's factory, identity() or encode(): exit 3 naming it."""
    config = encoder_config(tmp_path, where)
    code, output = invoke("run", "-c", str(config), "-o", str(tmp_path / "out"), "--no-cache")
    assert code == ExitCode.INTERNAL, output
    assert message in output
    assert not (tmp_path / "out" / "report.json").exists()


def test_the_hook_gives_no_verdict_when_the_retriever_exits(
    plugins: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pre-push hook against a saved baseline: a retriever's sys.exit(0) is exit 3 (with
    the hook's own hint), not a pass."""
    baseline = tmp_path / "baseline.json"
    config = retriever_config(
        tmp_path, "guard_retriever:by_mode", f"gate: {{baseline: {baseline}}}\n"
    )
    code, output = invoke("run", "-c", str(config), "-o", str(tmp_path / "first"),
                          "--save-baseline", str(baseline))  # fmt: skip
    assert code == ExitCode.OK and baseline.exists(), output
    code, output = invoke("hook", "-c", str(config), "-o", str(tmp_path / "hook-ok"))
    assert code == ExitCode.OK, output
    monkeypatch.setenv("PLUGIN_MODE", "exit")
    code, output = invoke("hook", "-c", str(config), "-o", str(tmp_path / "hook"))
    assert code == ExitCode.INTERNAL, output
    assert "guard_retriever:by_mode raised SystemExit(0)" in output and "SKIP=" in output
    assert not (tmp_path / "hook" / "report.json").exists()


def test_a_systemexit_under_a_command_is_never_a_verdict() -> None:
    """Whatever raises SystemExit below a command (a library, not only a plug-in), the command
    exits 3, never the code it carries; Ctrl-C is 130 and SIGTERM 143."""
    assert exit_code(lambda: sys.exit(0)) == ExitCode.INTERNAL
    assert exit_code(lambda: sys.exit(1)) == ExitCode.INTERNAL
    assert exit_code(lambda: sys.exit("message")) == ExitCode.INTERNAL

    def interrupted() -> None:
        raise KeyboardInterrupt

    def terminated() -> None:
        raise Terminated

    assert exit_code(interrupted) == ExitCode.INTERRUPTED == 130
    assert exit_code(terminated) == ExitCode.TERMINATED == 143


# --- a real process: stdout, signals -------------------------------------------------------------


def evalret(
    plugins: Path, *args: str, cwd: Path | None = None, **env: str
) -> subprocess.Popen[str]:
    """``evalret ARGS`` in a process of its own, the plug-ins importable, SIGINT not ignored."""
    environ = {**os.environ, **env}
    environ["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), str(plugins)])
    environ.pop("EVALRET_DEBUG", None)
    return subprocess.Popen(
        [sys.executable, "-c", "from evalret.cli import main; main()", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environ,
        cwd=cwd,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def test_a_retriever_cannot_print_to_stdout(plugins: Path, tmp_path: Path) -> None:
    """print, sys.stdout.buffer, sys.__stdout__, a shell's echo and a warning: none reaches
    evalret's stdout; each is on stderr, marked as the plug-in's."""
    config = retriever_config(tmp_path, "guard_retriever:prints")
    process = evalret(plugins, "run", "-c", str(config), "-o", str(tmp_path / "out"))
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr
    assert "PLUGIN:" not in stdout and "report files in" in stdout
    mark = "[plugin guard_retriever:prints] "
    lines = stderr.splitlines()
    for how in ("", " in bytes", " via __stdout__", " from a shell"):
        assert f"{mark}PLUGIN: GATE PASSED{how}" in lines, stderr
    assert any(line.startswith(mark) and "UserWarning: PLUGIN: GATE PASSED as a warning" in line
               for line in lines), stderr  # fmt: skip
    assert (tmp_path / "out" / "report.json").exists()


def test_an_encoder_cannot_print_to_stdout(plugins: Path, tmp_path: Path) -> None:
    config = encoder_config(tmp_path, "prints")
    process = evalret(plugins, "run", "-c", str(config), "-o", str(tmp_path / "out"), "--no-cache")
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr
    assert "PLUGIN:" not in stdout
    mark = "[plugin guard_encoder:make encode()] "
    assert f"{mark}PLUGIN: GATE PASSED" in stderr.splitlines()
    assert f"{mark}PLUGIN: GATE PASSED from a shell" in stderr.splitlines()


def test_an_exit_in_a_process_is_exit_3(plugins: Path, tmp_path: Path) -> None:
    """The whole process, as CI runs it: sys.exit(0) in the retriever is exit 3, no report."""
    config = retriever_config(tmp_path, "guard_retriever:exit_0")
    process = evalret(plugins, "run", "-c", str(config), "-o", str(tmp_path / "out"))
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 3, stderr
    assert "guard_retriever:exit_0 raised SystemExit(0)" in " ".join(stderr.split())
    assert not (tmp_path / "out").exists()


def test_a_retriever_that_changes_directory_moves_no_output(plugins: Path, tmp_path: Path) -> None:
    """A relative --out is where the user ran evalret, whatever directory the code went to."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    config = retriever_config(tmp_path, "guard_retriever:moves_away")
    process = evalret(
        plugins,
        "run",
        "-c",
        str(config),
        "-o",
        "out",
        cwd=tmp_path,
        PLUGIN_ELSEWHERE=str(elsewhere),
    )
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr
    assert (tmp_path / "out" / "report.json").exists()
    assert list(elsewhere.iterdir()) == []


def test_an_encoder_that_closes_stderr_does_not_change_the_verdict(
    plugins: Path, tmp_path: Path
) -> None:
    """os.close(2) in encode(), called once per batch: evalret's stderr comes back after each
    call; before, the next call's saved copy of fd 1 took number 2, the code closed it, and the
    run ended with exit 1 (a regression) and no report."""
    config = encoder_config(tmp_path, "close-stderr")
    process = evalret(plugins, "run", "-c", str(config), "-o", str(tmp_path / "out"), "--no-cache")
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr
    assert "report files in" in stdout
    assert (tmp_path / "out" / "report.json").exists()


def _reads(path: Path, text: str) -> bool:
    return path.exists() and path.read_text() == text


@pytest.mark.parametrize(
    ("signum", "code", "word"),
    [(signal.SIGTERM, 143, "Terminated"), (signal.SIGINT, 130, "Interrupted")],
)
def test_a_signal_during_a_hanging_plugin(
    plugins: Path, tmp_path: Path, signum: int, code: int, word: str
) -> None:
    """SIGTERM / SIGINT while the retriever hangs: exit 143 / 130, the plug-in's own finally
    ran (clean-up as for an exception), no report."""
    started = tmp_path / "started"
    config = retriever_config(tmp_path, "guard_retriever:hangs")
    process = evalret(
        plugins, "run", "-c", str(config), "-o", str(tmp_path / "out"), PLUGIN_STARTED=str(started)
    )
    deadline = time.monotonic() + 120
    # the plug-in writes "started" inside its try: once the file reads so, its finally runs
    while not _reads(started, "started") and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _reads(started, "started"), process.communicate()[1]
    process.send_signal(signum)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == code, stderr
    assert word in stderr and "Traceback" not in stderr
    assert started.read_text() == "cleaned up"
    assert not (tmp_path / "out" / "report.json").exists()


@pytest.mark.ray
def test_the_guard_holds_in_ray_actors(plugins: Path, tmp_path: Path) -> None:
    """embedding.engine ray builds the encoder in its actors through the same class: a
    sys.exit(0) in encode() there is exit 3 naming the callable (not Ray's wrapping), and what
    it printed never reaches evalret's stdout. (A local Ray runtime: some 20 s.)"""
    ray = "embedding: {engine: ray, workers: 1, batch_size: 64}\n"
    config = encoder_config(tmp_path, "encode", extra=ray)
    out = tmp_path / "out"
    process = evalret(plugins, "run", "-c", str(config), "-o", str(out), "--no-cache")
    stdout, stderr = process.communicate(timeout=600)
    assert process.returncode == 3, stderr
    message = "Error: guard_encoder:make encode() raised SystemExit(0)"
    assert message in stderr and "(in a Ray actor)" in stderr, stderr
    assert "PLUGIN:" not in stdout
    assert not out.exists()


@pytest.mark.parametrize(
    "args",
    [
        ("baseline", "show", str(REPO / "baselines" / "demo.json")),
        ("--show-completion", "bash"),
        ("--help",),
        ("--version",),
        ("run", "--help"),
    ],
    ids=["baseline-show", "show-completion", "help", "version", "run-help"],
)
def test_a_reader_that_closes_stdout_ends_the_command_quietly(
    plugins: Path, tmp_path: Path, args: tuple[str, ...]
) -> None:
    """`evalret baseline show … | head -1`: the reader closes the pipe; the command stops with
    128 + SIGPIPE (141, no verdict) and says nothing on stderr (it was exit 3, an 'internal
    error' of rich's SystemExit). So do the options answered while the command line is parsed
    (`--show-completion`, `--help`, `--version`), where click's and typer's own exit was 1, which
    reads as a regression."""
    # typer otherwise detects the shell from the process's ancestors and ignores "bash" (no
    # shell among them, as under a detached runner: "Shell  not supported", exit 1)
    no_detection = {"_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}
    process = evalret(plugins, *args, HOME=str(tmp_path), **no_detection)
    assert process.stdout is not None
    process.stdout.close()  # before evalret has printed anything
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == ExitCode.BROKEN_PIPE == 141, stderr
    assert stderr == ""
