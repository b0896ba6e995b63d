"""One exception hierarchy for evalret and the exit codes the CLI maps them to.

The library raises these; only the CLI turns them into a message and an exit code.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum


class ExitCode(IntEnum):
    """Process exit codes, shared by every command."""

    OK = 0
    # a verdict of failure: a gate check failed (run, score, hook), or a command's own check
    # (compare --fail-on-regression, leakage, judge --calibrate); docs/reference/exit-codes.md
    # says which command gives it when
    REGRESSION = 1
    INVALID_INPUT = 2  # bad config, golden set, arguments, or an incompatible baseline
    INTERNAL = 3  # runtime or internal failure, e.g. the model cannot be loaded, or a plug-in
    # (code the config names) failed or tried to end the process
    INTERRUPTED = 130  # Ctrl-C (SIGINT): 128 + 2, as shells report it; no verdict
    TERMINATED = 143  # SIGTERM (a CI job cancelled, a timeout): 128 + 15; no verdict
    # stdout closed by its reader (``evalret ... | head``): 128 + 13, as a process killed by
    # SIGPIPE; what was left to print is dropped, and it is no verdict
    BROKEN_PIPE = 141


# the documentation site (pyproject.toml's Documentation URL): a message that points to more
# reading names one of its pages (``docs_page``), never the README
DOCS_URL = "https://evalret.github.io/evalret/"


def docs_page(page: str, section: str = "") -> str:
    """The address of a page of the documentation site, ``page`` its path under docs/ without
    ``.md`` (``how-to/annotate-and-judgments``), ``section`` a heading's anchor on it
    (tests/test_demo_package.py checks that both exist)."""
    return f"{DOCS_URL}{page}/" + (f"#{section}" if section else "")


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input, with where it is."""

    message: str
    file: str | None = None
    line: int | None = None
    code: str | None = None  # a stable name for the kind of problem, e.g. "duplicate-query-id"

    def __str__(self) -> str:
        where = self.file or ""
        if self.file and self.line is not None:
            where = f"{self.file}:{self.line}"
        return f"{where}: {self.message}" if where else self.message


class EvalretError(Exception):
    """Base of every error evalret raises on purpose."""

    exit_code: ExitCode = ExitCode.INTERNAL


class InputError(EvalretError):
    """The user's input is wrong: config, golden set or arguments. Carries every problem found."""

    exit_code = ExitCode.INVALID_INPUT

    def __init__(self, summary: str, problems: Iterable[Problem] = ()) -> None:
        self.summary = summary
        self.problems = list(problems)
        super().__init__(self.__str__())

    def lines(self) -> list[str]:
        """The summary, then each problem shown (indented): one line each, unless a text quoted
        from input holds a newline (renderers escape each line on its own)."""
        shown = self.problems[:50]
        lines = [self.summary, *(f"  {p}" for p in shown)]
        if len(self.problems) > len(shown):
            lines.append(f"  ... and {len(self.problems) - len(shown)} more")
        return lines

    def __str__(self) -> str:
        return "\n".join(self.lines())


class ConfigError(InputError):
    """The YAML config is malformed or does not validate."""


class GoldenSetError(InputError):
    """The golden set cannot be read or is inconsistent."""


class MetricError(InputError):
    """A metric name cannot be parsed or is unknown."""


class IncomparableError(InputError):
    """Two runs (a run and its baseline, or A and B of a comparison) cannot be compared: another
    golden set or other metric definitions."""


class ModelError(EvalretError):
    """The embedding model cannot be loaded or fails while embedding."""

    exit_code = ExitCode.INTERNAL


class PluginError(EvalretError):
    """Code the config names (a Python retriever, a custom encoder) failed, tried to end the
    process (SystemExit with any code) or returned something unusable; its exception is the
    ``__cause__`` (its traceback is printed under EVALRET_DEBUG=1). ``message`` is the message
    as raised, kept when a library appends to the exception's arguments (Ray does, on its way
    from an actor)."""

    exit_code = ExitCode.INTERNAL

    def __init__(self, message: str, *more: object) -> None:
        super().__init__(message, *more)
        self.message = message


class IncompleteError(EvalretError):
    """Work a verdict needs was not done: an LLM judge's request failed for good, or its answer
    could not be read (pipeline/judge.py ``shortfall``). Exit 3, as for any work left undone: no
    verdict is drawn from part of the labels."""

    exit_code = ExitCode.INTERNAL


class Terminated(BaseException):
    """SIGTERM arrived: raised by the CLI's signal handler so that clean-up (finally blocks,
    context managers) runs as for Ctrl-C; a BaseException, so that no ``except Exception`` takes
    it for a failure. The CLI exits 143 (ExitCode.TERMINATED)."""
