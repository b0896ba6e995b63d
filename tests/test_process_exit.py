"""The evalret process ends as Python's own exit would (cli_runtime._exit_now skips only the
interpreter's teardown): the exit code of each outcome, everything printed (stdout block-buffered
in a pipe, as without PYTHONUNBUFFERED), the atexit handlers, a thread the exit must wait for, a
profiler's own report, and a reader that leaves the pipe early. Each case runs `evalret` in a
process of its own."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

from conftest import REPO
from evalret.cli_runtime import loading
from evalret.errors import ExitCode


def _environ() -> dict[str, str]:
    """The environment of a user's shell: evalret importable, stdout buffered as in a pipe."""
    environ = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    for name in ("PYTHONUNBUFFERED", "EVALRET_DEBUG", "PYTHONINSPECT"):
        environ.pop(name, None)
    return environ


def _process(tmp_path: Path, argv: list[str]) -> subprocess.CompletedProcess[str]:
    """``argv`` run to its end in ``tmp_path``, its output captured."""
    return subprocess.run(
        argv, capture_output=True, text=True, check=False, cwd=tmp_path, env=_environ(), timeout=300
    )


def _evalret(tmp_path: Path, *args: str, before: str = "") -> subprocess.CompletedProcess[str]:
    """``evalret ARGS`` run as its console script runs it (``before``: Python run first)."""
    code = f"{before}\nfrom evalret.cli import main\nmain()\n"
    return _process(tmp_path, [sys.executable, "-c", code, *args])


def _data(tmp_path: Path) -> None:
    """qrels.txt of 30 queries, each with one relevant document; good.trec finds each first,
    bad.trec none."""
    qrels, good, bad = [], [], []
    for i in range(30):
        qrels.append(f"q{i} 0 d{i} 1\n")
        good.append(f"q{i} Q0 d{i} 1 2.0 t\nq{i} Q0 x{i} 2 1.0 t\n")
        bad.append(f"q{i} Q0 x{i} 1 2.0 t\nq{i} Q0 y{i} 2 1.0 t\n")
    (tmp_path / "qrels.txt").write_text("".join(qrels))
    (tmp_path / "good.trec").write_text("".join(good))
    (tmp_path / "bad.trec").write_text("".join(bad))


def _score(tmp_path: Path, run: str, out: str, *more: str) -> subprocess.CompletedProcess[str]:
    args = ("score", "qrels.txt", f"run={run}", "--out", out, "--no-progress", *more)
    return _evalret(tmp_path, *args)


def test_a_score_that_passes_exits_0_with_all_its_output(tmp_path: Path) -> None:
    _data(tmp_path)
    done = _score(tmp_path, "good.trec", "out")
    assert done.returncode == ExitCode.OK == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.startswith("no gate configured")
    assert done.stdout.rstrip().endswith("health)")  # the last line printed, flushed at the end
    written = "report.json, report.md, report.html, comment.md, run.run.trec"
    assert f"report files in out: {written}" in done.stdout
    assert (tmp_path / "out" / "run.run.trec").read_text().startswith("q0 Q0 d0 1 2.0 evalret-run")


def test_a_regression_exits_1_with_its_verdict(tmp_path: Path) -> None:
    _data(tmp_path)
    assert _score(tmp_path, "good.trec", "before").returncode == 0
    done = _score(tmp_path, "bad.trec", "after", "--baseline", "before/report.json")
    assert done.returncode == ExitCode.REGRESSION == 1, done.stderr
    assert "FAIL" in done.stdout and done.stdout.rstrip().endswith("health)")
    assert (tmp_path / "after" / "junit.xml").is_file()


def test_bad_input_and_bad_usage_exit_2_with_their_message(tmp_path: Path) -> None:
    _data(tmp_path)
    done = _evalret(tmp_path, "score", "lost.txt", "good.trec", "--out", "out", "--no-progress")
    assert done.returncode == ExitCode.INVALID_INPUT == 2
    assert done.stderr.startswith(f"Error: golden set not found: {tmp_path / 'lost.txt'} ")
    assert done.stdout == ""
    done = _evalret(tmp_path, "score", "--bogus")
    assert done.returncode == 2 and "No such option: --bogus" in done.stderr


def test_atexit_handlers_run_and_what_they_print_is_kept(tmp_path: Path) -> None:
    """A library's atexit handler (logging's, Ray's shutdown) runs after the command, its output
    flushed; the exit code stays the command's."""
    _data(tmp_path)
    before = (
        "import atexit, logging, sys\n"
        "logging.basicConfig(filename='log.txt', level=logging.INFO)\n"
        "logging.getLogger('lib').info('logged')\n"
        "atexit.register(lambda: sys.stdout.write('handler ran'))"
    )
    done = _evalret(tmp_path, "score", "qrels.txt", "lost.trec", "--no-progress", before=before)
    assert done.returncode == 2, done.stderr
    assert done.stdout == "handler ran"
    assert (tmp_path / "log.txt").read_text() == "INFO:lib:logged\n"


def test_the_exit_waits_for_a_thread_that_is_not_a_daemon(tmp_path: Path) -> None:
    _data(tmp_path)
    before = (
        "import sys, threading, time\n"
        "def late():\n"
        "    time.sleep(1)\n"
        "    sys.stdout.write('thread done')\n"
        "threading.Thread(target=late).start()"
    )
    done = _evalret(tmp_path, "--version", before=before)
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith("thread done")


def test_a_profiler_still_writes_its_report(tmp_path: Path) -> None:
    """`python -m cProfile -o FILE -m evalret ...` (a developer's profile) saves at its own end."""
    _data(tmp_path)
    profile = tmp_path / "score.prof"
    argv = [sys.executable, "-m", "cProfile", "-o", str(profile), "-m", "evalret", "--version"]
    done = _process(tmp_path, argv)
    assert done.returncode == 0, done.stderr
    assert profile.stat().st_size > 0


def test_a_reader_that_takes_one_byte_and_leaves(tmp_path: Path) -> None:
    """`evalret score ... | head -c 1`: the reader gets the first byte; evalret ends with its
    verdict (its output fits the pipe before head leaves) or 141 when a write finds the pipe
    closed, and never with a traceback or Python's exit 120 for a failed flush."""
    _data(tmp_path)
    whole = _score(tmp_path, "good.trec", "first").stdout
    line = f"{sys.executable} -m evalret score qrels.txt run=good.trec --out out --no-progress"
    done = _process(tmp_path, ["bash", "-c", f'{line} | head -c 1; echo " ${{PIPESTATUS[0]}}"'])
    first, code = done.stdout.split(" ")
    assert first == whole[0]
    assert int(code) in (0, ExitCode.BROKEN_PIPE), done.stderr
    assert done.stderr == ""


def test_a_reader_that_leaves_before_anything_is_printed(tmp_path: Path) -> None:
    _data(tmp_path)
    line = [sys.executable, "-m", "evalret", "score", "qrels.txt", "run=good.trec", "--out", "o"]
    process = subprocess.Popen(
        [*line, "--no-progress"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env=_environ(),
    )
    assert process.stdout is not None
    process.stdout.close()
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == ExitCode.BROKEN_PIPE == 141, stderr
    assert stderr == ""


def test_in_process_the_collector_is_left_alone() -> None:
    """Outside the CLI's own process (a test's CliRunner, a notebook) a command's imports
    neither pause nor freeze the caller's collector."""
    frozen = gc.get_freeze_count()
    with loading():
        assert gc.isenabled()
    assert gc.isenabled() and gc.get_freeze_count() == frozen


def test_the_cli_process_freezes_what_its_command_imported(tmp_path: Path) -> None:
    _data(tmp_path)
    before = "import atexit, gc, sys\natexit.register(lambda: print(gc.get_freeze_count() > 0))"
    done = _evalret(tmp_path, "score", "qrels.txt", "good.trec", "--out", "o", before=before)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "True"
