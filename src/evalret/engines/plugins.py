"""Code a config names, and the one guard every call into it passes through.

A config names user code by ``"pkg.module:attr.path"``: the Python retriever's function
(``indexes.<name>.callable``) and the custom encoder's factory (``model.callable``). Importing the
module, calling the function or the factory, and every method of the object the factory returns
(``encode``, ``identity``) run inside :func:`plugin_call`, which makes three promises:

- **It cannot end evalret.** Whatever the code raises, other than Ctrl-C (KeyboardInterrupt) and
  evalret's own SIGTERM exception (``Terminated``), becomes a :class:`PluginError` (exit 3) naming
  the callable: an ordinary exception ("... failed: KeyError: ..."), and also ``SystemExit`` with
  any code (``sys.exit(0)`` would otherwise read as a pass, ``sys.exit("msg")`` as a regression),
  ``GeneratorExit`` or any other BaseException. A lazy answer (a generator) is materialised by
  the caller inside the guard, so that it fails there too.
- **It cannot write to evalret's stdout**, which carries the verdict. While it runs, Python's
  ``sys.stdout`` writes to stderr, each line marked ``[plugin <callable>] ``; file descriptor 1
  itself (``print`` from C, a subprocess, a saved reference to the old ``sys.stdout``) is pointed
  at a temporary file whose lines are copied, marked the same way, to stderr when the call ends.
  Output written after the call ends (a thread or a child process the code left running) is not
  covered.
- **It cannot move evalret's ground**: the working directory is restored when the call ends,
  and so is file descriptor 2 (stderr) if the code closed or moved it.
- **Its warnings are marked**: a warning raised during the call is shown on stderr as
  ``[plugin <callable>] file:line: Category: message``.

Calls are serialised (one plug-in call at a time per process); a guard inside a guard (same
thread) only converts exceptions. ``os._exit`` or a signal that kills the process cannot be caught
by any guard: exit 0/1 is then missing its report, which is what the action and the hook check.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import TracebackType
from typing import IO, Any, TextIO

from evalret.errors import ConfigError, PluginError, Problem, Terminated

PASS_THROUGH = (KeyboardInterrupt, Terminated)  # the user's own way to stop evalret
_LOCK = threading.RLock()
_DEPTH = threading.local()


# --- exceptions --------------------------------------------------------------------------------


def _plugin_error(label: str, e: BaseException) -> PluginError:
    """What ``label`` raising ``e`` means, as a PluginError (exit 3)."""
    if isinstance(e, SystemExit):
        return PluginError(
            f"{label} raised SystemExit({e.code!r}) (sys.exit): code a config names cannot end "
            "evalret, so this run has no verdict"
        )
    if not isinstance(e, Exception):  # GeneratorExit, or a BaseException of its own
        return PluginError(
            f"{label} raised {type(e).__name__}: {e}: only evalret ends a run, so this run has "
            "no verdict"
        )
    return PluginError(f"{label} failed: {type(e).__name__}: {e}")


# --- output ------------------------------------------------------------------------------------


class _MarkedLines(io.RawIOBase):
    """A byte sink that writes each complete line to ``target`` after ``prefix``."""

    def __init__(self, prefix: str, target: TextIO) -> None:
        super().__init__()
        self.prefix = prefix
        self.target = target
        self.partial = b""

    def writable(self) -> bool:
        return True

    def write(self, b: Any) -> int:
        data = bytes(b)
        *lines, self.partial = (self.partial + data).split(b"\n")
        for line in lines:
            self._emit(line)
        return len(data)

    def _emit(self, line: bytes) -> None:
        text = line.decode("utf-8", errors="replace").rstrip("\r")
        with contextlib.suppress(Exception):  # a closed stderr must not fail the run
            self.target.write(f"{self.prefix}{text}\n")
            self.target.flush()

    def finish(self) -> None:
        """Write a last line that has no newline."""
        if self.partial:
            line, self.partial = self.partial, b""
            self._emit(line)


def _marked_stream(raw: _MarkedLines) -> io.TextIOWrapper:
    """A text stream (with ``.buffer``, as sys.stdout has) over ``raw``, line by line."""
    return io.TextIOWrapper(
        io.BufferedWriter(raw),
        encoding="utf-8",
        errors="replace",
        line_buffering=True,
        write_through=True,
    )


def _flush_all(*streams: Any) -> None:
    """Flush Python's streams, then the C library's (printf buffers), ignoring failures."""
    for stream in streams:
        with contextlib.suppress(Exception):
            stream.flush()
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None).fflush(None)


def _dup_aside(fd: int, missing_ok: bool = False) -> int | None:
    """A copy of ``fd`` numbered 10 or above (not inheritable), out of the way of the low
    numbers that code closing fd 1 or 2 and opening files would reuse. None when ``fd`` is closed
    and ``missing_ok``."""
    try:
        try:
            import fcntl
        except ImportError:  # not POSIX: a plain duplicate
            return os.dup(fd)
        return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    except OSError:
        if missing_ok:
            return None
        raise


@contextlib.contextmanager
def _fd1_to(raw: _MarkedLines, *streams: Any) -> Iterator[None]:
    """File descriptor 1 points at a temporary file for the block; its lines go to ``raw``
    afterwards. Where fd 1 cannot be moved (closed, no dup), nothing is done."""
    _flush_all(*streams)  # evalret's own pending output goes where it was meant to
    saved = _dup_aside(1, missing_ok=True)
    if saved is None:
        yield
        return
    saved_err = _dup_aside(2, missing_ok=True)
    with tempfile.TemporaryFile() as spool:
        try:
            os.dup2(spool.fileno(), 1)
            yield
        finally:
            _flush_all(*streams)  # what the code left in a buffer is its output too
            os.dup2(saved, 1)
            os.close(saved)
            if saved_err is not None:  # the code may have closed or moved evalret's stderr
                os.dup2(saved_err, 2)
                os.close(saved_err)
            spool.seek(0)
            for chunk in iter(lambda: spool.read(1 << 16), b""):
                raw.write(chunk)


def _show_warning(prefix: str, target: TextIO) -> Callable[..., None]:
    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: IO[str] | None = None,
        line: str | None = None,
    ) -> None:
        text = warnings.formatwarning(message, category, filename, lineno, line).rstrip("\n")
        with contextlib.suppress(Exception):
            for part in text.split("\n"):
                target.write(f"{prefix}{part}\n")
            target.flush()

    return show


@contextlib.contextmanager
def _same_cwd() -> Iterator[None]:
    """The working directory after the block is the one before: code that changes it would
    otherwise move every relative path evalret reads or writes afterwards (reports, the cache)."""
    try:
        before = os.open(".", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:  # an unreadable or removed working directory: nothing to hold on to
        yield
        return
    try:
        yield
    finally:
        try:
            os.fchdir(before)
        finally:
            os.close(before)


@contextlib.contextmanager
def _captured(label: str) -> Iterator[None]:
    """The plug-in's stdout and warnings, marked, on stderr for the block."""
    prefix = f"[plugin {label}] "
    target = sys.stderr
    raw = _MarkedLines(prefix, target)
    stream = _marked_stream(raw)
    original = sys.stdout
    try:
        with (
            warnings.catch_warnings(),
            _same_cwd(),
            _fd1_to(raw, original, sys.__stdout__),
        ):
            warnings.showwarning = _show_warning(prefix, target)
            sys.stdout = stream
            try:
                yield
            finally:
                sys.stdout = original
                with contextlib.suppress(Exception):
                    stream.flush()
    finally:
        raw.finish()


# --- the guard ---------------------------------------------------------------------------------


class plugin_call:
    """The guard around one call into user code (see the module docstring). ``label`` names the
    callable as messages show it ("pkg.module:fn", "pkg.module:factory encode()");
    ``on_exception`` turns an ordinary exception into evalret's error (default: PluginError
    "<label> failed: <type>: <message>")."""

    def __init__(
        self,
        label: str,
        on_exception: Callable[[Exception], Exception] | None = None,
    ) -> None:
        self.label = label
        self.on_exception = on_exception
        self._stack: contextlib.ExitStack | None = None

    def __enter__(self) -> plugin_call:
        depth = getattr(_DEPTH, "n", 0)
        _DEPTH.n = depth + 1
        if depth == 0:  # an outer guard already captures this thread's output
            stack = contextlib.ExitStack()
            stack.enter_context(_LOCK)
            try:
                stack.enter_context(_captured(self.label))
            except BaseException:
                stack.close()
                _DEPTH.n = depth
                raise
            self._stack = stack
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        e: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        _DEPTH.n -= 1
        if self._stack is not None:
            stack, self._stack = self._stack, None
            stack.close()
        if e is None or isinstance(e, (*PASS_THROUGH, PluginError)):
            return  # Ctrl-C, SIGTERM and an inner guard's verdict go on as they are
        if isinstance(e, Exception) and self.on_exception is not None:
            raise self.on_exception(e) from e
        raise _plugin_error(self.label, e) from e


def materialised(value: Any) -> Any:
    """``value`` as a list when it is an iterable other than text (a generator runs now, inside
    the caller's guard), else ``value`` itself."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        return value
    return list(value)


@contextlib.contextmanager
def _searched_first(code_dir: Path | None) -> Iterator[None]:
    """``code_dir`` first on ``sys.path`` while the block runs, then taken off again (sys.path
    as it was, whatever the imported code did to other entries)."""
    if code_dir is None:
        yield
        return
    entry = str(code_dir)
    sys.path.insert(0, entry)
    importlib.invalidate_caches()  # a module written since the directory was last looked at
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(entry)


def import_callable(key: str, spec: str, code_dir: Path | None = None) -> Callable[..., Any]:
    """The callable ``spec`` ("pkg.module:attr.path") names, imported inside the guard.
    ConfigError at the config ``key`` (exit 2) when it cannot be imported (any exception) or is
    not callable; a SystemExit or other BaseException while importing is a PluginError (exit 3).

    The module is looked for first in ``code_dir`` (``Config.code_dir``: the directory of the
    config file that names it, or the working directory for a config without a file), then on
    ``sys.path`` (``PYTHONPATH``, installed packages): a module beside the config imports
    without ``PYTHONPATH``. The directory is on ``sys.path`` only while the module is imported:
    what the module imports then (a sibling module at its top) is found there too; an import it
    makes later, inside a call, is not. A module already imported in this process is used as it
    is."""
    module_name, _, attr = spec.partition(":")

    def config_error(e: Exception) -> Exception:
        return ConfigError(f"{key}: cannot import {spec!r}", [Problem(f"{type(e).__name__}: {e}")])

    with plugin_call(f"{spec} (import)", on_exception=config_error), _searched_first(code_dir):
        target: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            target = getattr(target, part)
        is_callable = callable(target)
    if not is_callable:
        raise ConfigError(f"{key}: {spec!r} is not callable")
    return target  # type: ignore[no-any-return]
