"""One case of the harness (a row of the table in a situation): its copy of the world, how it is
run (in this process with typer's CliRunner, or as a real process when signals, kills or a
server are involved), and the invariants every case must keep:

1. the exit code has its documented meaning (the situation says which codes that allows);
2. exit 0 or 1 only with a fresh, complete report of this run (newer than the call, parsed whole;
   an evalret run report carries a ``run_id``), and no earlier output left saying otherwise;
3. every input byte-identical afterwards (files, and every file of an input directory);
4. no secret (the value of the variable the config names, in any form a server may echo it) in
   any file written or in stdout / stderr;
5. no traceback without EVALRET_DEBUG;
6. an error names what it is about (the input an output would clobber, the plug-in's callable,
   both lines of a duplicate key).

Every broken invariant of a case is listed in one failure message.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest
import typer.main
import typer.testing
import yaml
from inv_http import echoed_forms
from inv_table import Row
from inv_world import PLUGIN, SECRET, SECRET_ENV
from typer.testing import CliRunner

import evalret
from evalret.cli import app

SRC = Path(evalret.__file__).resolve().parent.parent
T = TypeVar("T")
TRACEBACK = "Traceback (most recent call last)"
# environment a case never inherits: a debug switch, and the GitHub files a run appends to
SCRUBBED = (
    "EVALRET_DEBUG",
    "GITHUB_STEP_SUMMARY",
    "GITHUB_OUTPUT",
    "INV_PLUGIN_MODE",
    "INV_PLUGIN_TARGET",
    "INV_PLUGIN_READY",
)


@dataclass
class Outcome:
    code: int
    stdout: str
    stderr: str
    seconds: float
    exception: BaseException | None = None
    ended: float = field(default_factory=time.monotonic)  # time.monotonic() at its end


@dataclass
class Case:
    row: Row
    root: Path
    paths: dict[str, Path]
    env: dict[str, str] = field(default_factory=dict)
    # what an error must name: a text, or a tuple of texts any one of which will do
    must_name: list[str | tuple[str, ...]] = field(default_factory=list)
    must_lines: tuple[int, ...] = ()
    stop_with: signal.Signals | None = None
    wait_ready: bool = False
    stale: dict[Path, bytes] = field(default_factory=dict)
    servers: tuple[Any, ...] = ()
    _stack: ExitStack = field(default_factory=ExitStack)
    _read_only: list[Path] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)  # options a situation adds (e.g. a --set)
    drop: tuple[str, ...] = ()  # options of the row's argv a situation takes out (--dry-run)
    stdout_closed: bool = False  # its reader closed stdout before anything was printed

    def ask_judge(self, *, own_baseline: bool = True) -> None:
        """Make the row call its config's judge (``Row.judges``: the options it adds and takes
        out). A judged run meets no unjudged baseline (exit 2 before anything is sent), so with
        ``own_baseline`` a row that saves a baseline gates on that one (fixed bounds only)."""
        asks = self.row.judges
        assert asks is not None, f"{self.row.name} does not call a judge"
        self.extra += asks.add
        self.drop = asks.drop
        if own_baseline and {"baseline", "save-baseline"} <= self.paths.keys():
            self.paths["baseline"] = self.paths["save-baseline"]

    def argv(self) -> list[str]:
        values = {role.replace("-", "_"): str(path) for role, path in self.paths.items()}
        kept = [arg for arg in self.row.argv if arg not in self.drop]
        return [arg.format(**values) for arg in kept] + self.extra

    def config_path(self) -> Path:
        assert self.row.config is not None
        return self.paths[self.row.config]

    def config_text(self) -> str:
        return self.config_path().read_text()

    def write_config(self, text: str) -> None:
        self.config_path().write_text(text)

    def enter(self, manager: AbstractContextManager[T]) -> T:
        return self._stack.enter_context(manager)

    def make_read_only(self, path: Path) -> None:
        """Read-only even for root: immutable (chattr +i) as root, else without write bits."""
        if os.geteuid() == 0:
            done = subprocess.run(["chattr", "-R", "+i", str(path)], capture_output=True)
            if done.returncode != 0:
                pytest.skip(f"chattr +i is not available here: {done.stderr.decode().strip()}")
        else:
            subprocess.run(["chmod", "-R", "a-w", str(path)], check=True)
        self._read_only.append(path)

    def close(self) -> None:
        for path in self._read_only:
            if os.geteuid() == 0:
                subprocess.run(["chattr", "-R", "-i", str(path)], check=True)
            else:
                subprocess.run(["chmod", "-R", "u+w", str(path)], check=True)
        self._stack.close()


# what every case's copy of the world holds whatever its row: the config's world (its golden
# set, plug-in, baseline and cache directory, the stores of inv_table.STORES in it)
CONFIG_WORLD = ("cfg.yaml", "golden", PLUGIN + ".py", "baseline.json", "cache")


def copy_world(row: Row, template: Path, root: Path) -> None:
    """The part of the world ``row`` meets into ``root``: CONFIG_WORLD and the top-level entry of
    each of its inputs and outputs the world has (fewer files to copy than the whole world)."""
    names = {*CONFIG_WORLD, *(item.rel.split("/")[0] for item in (*row.inputs, *row.outputs))}
    root.mkdir()
    for name in sorted(names):
        source = template / name
        if source.is_dir():
            shutil.copytree(source, root / name, symlinks=True)
        elif source.exists():
            shutil.copy2(source, root / name)


def new_case(row: Row, template: Path, tmp_path: Path) -> Case:
    root = tmp_path / "w"
    copy_world(row, template, root)
    paths = {item.role: root / item.rel for item in (*row.inputs, *row.outputs)}
    # the default cache directory is the world's: its stores are those of inv_table.STORES
    env = {SECRET_ENV: SECRET, "EVALRET_CACHE_DIR": str(root / "cache")}
    return Case(row, root, paths, env=env)


# --- snapshots -------------------------------------------------------------------------------


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _files(path: Path) -> Iterator[Path]:
    """The files at ``path``: itself, or every file below a directory (links not followed)."""
    if path.is_dir() and not path.is_symlink():
        for below in sorted(path.rglob("*")):
            if below.is_file() and not below.is_symlink() and "__pycache__" not in below.parts:
                yield below
    elif path.is_file():
        yield path


def snapshot(paths: list[Path]) -> dict[str, str]:
    found = {}
    for path in paths:
        if not path.exists():
            found[str(path)] = "missing"
            continue
        if path.is_file():  # a file input, followed through any link
            found[str(path)] = _digest(path)
        for file in _files(path.resolve() if path.is_dir() else path):
            found[str(file)] = _digest(file)
    return found


def input_snapshot(case: Case) -> dict[str, str]:
    return snapshot([case.paths[item.role] for item in case.row.inputs])


def tree_snapshot(root: Path) -> dict[str, str]:
    return {str(p): _digest(p) for p in _files(root)}


# --- running ---------------------------------------------------------------------------------


def _show_warning(message: Any, category: Any, filename: str, lineno: int, *_: Any) -> None:
    """Python's own warning display (pytest replaces it while a test runs)."""
    sys.stderr.write(warnings.formatwarning(message, category, filename, lineno))


@functools.cache
def _command() -> Any:
    """evalret's click command, built once, as `evalret` builds it once a process (Typer's test
    runner builds it anew for every call: a tenth of a second a case)."""
    return typer.main.get_command(app)


def run_in_process(case: Case, monkeypatch: pytest.MonkeyPatch) -> Outcome:
    monkeypatch.setattr(typer.testing, "_get_command", lambda _app: _command())
    for name in SCRUBBED:
        monkeypatch.delenv(name, raising=False)
    for name, value in case.env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(case.root)
    monkeypatch.syspath_prepend(str(case.root))
    sys.modules.pop(PLUGIN, None)
    start = time.monotonic()
    with warnings.catch_warnings():
        warnings.resetwarnings()
        warnings.simplefilter("default")
        warnings.showwarning = _show_warning
        result = CliRunner().invoke(app, case.argv())
    sys.modules.pop(PLUGIN, None)
    exception = None if isinstance(result.exception, SystemExit) else result.exception
    return Outcome(
        result.exit_code, result.stdout, result.stderr, time.monotonic() - start, exception
    )


def _wait_for(condition: Any, process: subprocess.Popen[bytes], seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end and process.poll() is None and not condition():
        time.sleep(0.05)


def _default_signals() -> None:
    """In the child: Ctrl-C and SIGTERM as a terminal delivers them, even when the test runner
    was started in the background (a shell starts background jobs with SIGINT ignored, and a
    Python started with SIGINT ignored never raises KeyboardInterrupt)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def run_process(case: Case) -> Outcome:
    """``python -m evalret`` in the case's world; once the plug-in hangs (or the server prints
    its URL) the situation's signal is sent; a process still alive 60 s later is killed."""
    streams = case.root.parent / "streams"
    streams.mkdir(exist_ok=True)
    ready = case.root.parent / "ready"
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED}
    env.update(
        case.env,
        INV_PLUGIN_READY=str(ready),
        PYTHONPATH=os.pathsep.join([str(SRC), str(case.root)]),
    )
    out_path, err_path = streams / "stdout", streams / "stderr"
    start = time.monotonic()
    with out_path.open("wb") as out, err_path.open("wb") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "evalret", *case.argv()],
            cwd=case.root,
            env=env,
            stdout=subprocess.PIPE if case.stdout_closed else out,
            stderr=err,
            preexec_fn=_default_signals,
        )
        if process.stdout is not None:
            process.stdout.close()  # `evalret ... | head -0`
        try:
            if case.wait_ready:
                _wait_for(ready.exists, process, 90)
            elif case.stop_with is not None:  # a server: stopped once it serves
                _wait_for(lambda: b"http://" in out_path.read_bytes(), process, 90)
            if case.stop_with is not None and process.poll() is None:
                time.sleep(0.3)
                process.send_signal(case.stop_with)
            code = process.wait(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    return Outcome(
        code,
        out_path.read_text(errors="replace"),
        err_path.read_text(errors="replace"),
        time.monotonic() - start,
    )


# --- the invariants --------------------------------------------------------------------------


def _find_key(data: Any, key: str) -> Any:
    if isinstance(data, dict):
        if key in data:
            return data[key]
        for value in data.values():
            found = _find_key(value, key)
            if found is not None:
                return found
    return None


def _complete(path: Path, suffix: str, run_report: bool) -> str | None:
    """Why ``path``, a report of the kind ``suffix`` says, is not complete (None: it is)."""
    text = path.read_bytes()
    if suffix == ".json":
        data = json.loads(text)
        if not data:
            return "empty JSON"
        if run_report and not _find_key(data, "run_id"):
            return "report.json carries no run_id (the run that wrote it cannot be told)"
    elif suffix == ".jsonl":
        if not text.endswith(b"\n"):
            return "the last line is cut short"
        for line in text.splitlines():
            json.loads(line)
    elif suffix == ".html":
        if not text.rstrip().endswith(b"</html>"):
            return "the page is cut short"
    elif suffix in (".yaml", ".yml"):
        yaml.safe_load(text)
    elif suffix == ".sqlite":
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            if db.execute("PRAGMA integrity_check").fetchone()[0] != "ok":
                return "the database is damaged"
    return None


def _report_problems(case: Case, started_ns: int) -> list[str]:
    if case.row.report is None:
        return []
    role, name = case.row.report
    path = case.paths[role] / name if name else case.paths[role]
    declared = next(item for item in case.row.outputs if item.role == role)
    suffix = Path(name or declared.rel).suffix
    if not path.is_file():
        return [f"exit 0/1 without its report {path}"]
    if path.stat().st_mtime_ns < started_ns:
        return [f"exit 0/1 with a report older than the call: {path}"]
    try:
        why = _complete(path, suffix, case.row.run_report)
    except (ValueError, UnicodeDecodeError, sqlite3.Error, yaml.YAMLError) as e:
        why = f"does not parse: {e}"
    return [f"exit 0/1 with an incomplete report {path}: {why}"] if why else []


def _secret_problems(case: Case, outcome: Outcome, before: dict[str, str]) -> list[str]:
    forms = [form.encode() for form in echoed_forms(SECRET)]
    found = []
    for stream, text in (("stdout", outcome.stdout), ("stderr", outcome.stderr)):
        found += [
            f"the secret ({form.decode()!r}) in {stream}" for form in forms if form in text.encode()
        ]
    for name, digest in tree_snapshot(case.root).items():
        if before.get(name) == digest:
            continue  # not written by the call
        data = Path(name).read_bytes()
        found += [
            f"the secret ({form.decode()!r}) in the written file {name}"
            for form in forms
            if form in data
        ]
    return found


def _named_problems(case: Case, outcome: Outcome) -> list[str]:
    text = outcome.stdout + outcome.stderr
    problems = []
    for name in case.must_name:
        either = (name,) if isinstance(name, str) else name
        if not any(one in text for one in either):
            problems.append(f"the error does not name {' or '.join(map(repr, either))}")
    text = text.replace(str(case.root.parent), "")  # no number of pytest's folders counts
    for line in case.must_lines:
        if not re.search(rf"\b{line}\b", text):
            problems.append(f"the error does not name line {line}")
    return problems


def check_invariants(
    case: Case,
    outcome: Outcome,
    expect: frozenset[int],
    inputs_before: dict[str, str],
    tree_before: dict[str, str],
    started_ns: int,
) -> list[str]:
    """Every invariant the case breaks, one line each (empty: all hold)."""
    problems = []
    if outcome.code not in expect:
        problems.append(f"exit {outcome.code}, expected {sorted(expect)}")
    streams = outcome.stdout + outcome.stderr
    if TRACEBACK in streams or outcome.exception is not None:
        problems.append(f"a traceback without EVALRET_DEBUG ({outcome.exception!r})")
    inputs_after = input_snapshot(case)
    changed = [name for name, digest in inputs_before.items() if inputs_after.get(name) != digest]
    changed += [name for name in inputs_after if name not in inputs_before]
    problems += [f"input changed: {name}" for name in changed]
    problems += _secret_problems(case, outcome, tree_before)
    if outcome.code in (0, 1):
        problems += _report_problems(case, started_ns)
    elif outcome.code in (2, 3) and outcome.code in expect:
        problems += _named_problems(case, outcome)
    for path, stale in case.stale.items():
        if path.is_file() and path.read_bytes() == stale:
            problems.append(f"an earlier run's output is left in place: {path}")
    return problems


def tail(outcome: Outcome, n: int = 1500) -> str:
    return f"--- stdout:\n{outcome.stdout[-n:]}\n--- stderr:\n{outcome.stderr[-n:]}"
