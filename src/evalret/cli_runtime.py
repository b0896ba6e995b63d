"""The machinery under the evalret command line (``evalret.cli``): the consoles, the progress bars,
the one place where a command's end becomes an exit code, help that reads like click's, command
registration with option groups, and the signal handlers.

Option groups: an ``Annotated[T, OptionGroup(...)]`` parameter of a command (declared in
``evalret.cli_options``, e.g. ``Overrides``, ``Progress``) is several options on the command line,
listed in its place, and one value in the command's function, made by the group's ``make``.

Exit codes: 0 success, 1 regression found by the gate, 2 invalid input or usage, 3 internal or
runtime failure (a plug-in's too, a plug-in's sys.exit included), 130 Ctrl-C, 143 SIGTERM; 0 and
1 are only ever the verdict of a command that ran to its end. This module imports typer and the
standard library (rich only when a console or a bar is first used): `evalret --help` stays light.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import gc
import inspect
import os
import re
import shlex
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, get_type_hints

import typer
import typer.core
from typer.core import TyperCommand, TyperGroup

from evalret.cli_help import EXAMPLES, SECTIONS, START_HERE
from evalret.data import early_runs
from evalret.errors import EvalretError, ExitCode, InputError, Terminated
from evalret.report.escape import markup_safe

if TYPE_CHECKING:
    from evalret.pipeline.progress import ProgressBars

# --- the console -------------------------------------------------------------------------------


class _LazyConsole:
    """A rich Console made on first use, so that `evalret --help` never imports rich; when
    output is not a terminal (CI logs, pipes) tables get 200 columns."""

    def __init__(self, stderr: bool = False) -> None:
        self._stderr = stderr
        self._console: Any = None

    @property
    def real(self) -> Any:
        """The rich Console itself (for rich objects that need it, e.g. as a context manager)."""
        if self._console is None:
            from rich.console import Console

            self._console = Console(stderr=self._stderr)
            if not self._console.is_terminal and "COLUMNS" not in os.environ:
                self._console.width = 200
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


console: Any = _LazyConsole()
err_console: Any = _LazyConsole(stderr=True)


@contextmanager
def progress_bars(enabled: bool) -> Iterator[Any]:
    """A progress-bar factory for the commands: (description, total) -> advance(n)."""
    if not enabled:
        yield None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err_console.real,
        transient=False,
    ) as progress:

        def factory(description: str, total: int) -> Callable[[int], None]:
            task = progress.add_task(description, total=total)
            return lambda n: progress.advance(task, n)

        yield factory


def bars(show: bool) -> ProgressBars:
    """The progress bars a command draws while it works: rich's on stderr, or none."""
    return lambda: progress_bars(show)


# --- errors and exit codes ---------------------------------------------------------------------


def _error_text(e: EvalretError) -> str:
    """An error's message for the terminal: an input error's summary and each of its problems
    escaped one by one, so that a newline quoted from input (a path, a config value) cannot
    start a line of its own."""
    if isinstance(e, InputError):
        return "\n".join(markup_safe(line) for line in e.lines())
    return markup_safe(str(e), multiline=True)


def _say(*args: Any, **kwargs: Any) -> None:
    """Print an error on stderr; a stderr that cannot be written (closed, a broken pipe) must not
    turn the exit code into click's 1, which reads as a regression."""
    with contextlib.suppress(OSError, ValueError):
        err_console.print(*args, **kwargs)


def _reader_left(e: BaseException) -> bool:
    """Whether ``e`` is stdout's reader closing the pipe: a BrokenPipeError, or the SystemExit
    rich raises for one (``Console.on_broken_pipe``, which has sent stdout to /dev/null)."""
    if isinstance(e, SystemExit):
        e = e.__context__ if e.__context__ is not None else e
    if not isinstance(e, BrokenPipeError):
        return False
    with contextlib.suppress(OSError, ValueError):  # later writes and the final flush go nowhere
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return True


def exit_code(fn: Callable[[], ExitCode | None]) -> ExitCode:
    """Run ``fn``; turn evalret's errors and unexpected crashes into messages and exit codes.
    Exit 0 and 1 only come from ``fn`` returning: Ctrl-C is 130, SIGTERM 143, and a SystemExit
    (or any other BaseException) from code that is not evalret's is 3, never the code it carries."""
    try:
        return fn() or ExitCode.OK
    except EvalretError as e:
        if os.environ.get("EVALRET_DEBUG") and e.__cause__ is not None:  # a plugin's own error
            traceback.print_exception(e.__cause__)
        # escaped: a message may hold brackets (pip install 'evalret[onnx]') that are not markup
        _say(f"[bold red]Error:[/] {_error_text(e)}", highlight=False, markup=True, soft_wrap=True)
        return e.exit_code
    except KeyboardInterrupt:
        _say("[bold red]Interrupted[/] (Ctrl-C): no verdict")
        return ExitCode.INTERRUPTED
    except Terminated:
        _say("[bold red]Terminated[/] (SIGTERM): no verdict")
        return ExitCode.TERMINATED
    except BaseException as e:  # a crash, or a SystemExit from a library: never a verdict
        if _reader_left(e):
            return ExitCode.BROKEN_PIPE
        if os.environ.get("EVALRET_DEBUG"):
            traceback.print_exc()
        what = f"{type(e).__name__}: {e}"
        if isinstance(e, SystemExit):
            what = f"SystemExit({e.code!r}) ended the command before it finished: no verdict"
        _say(
            f"[bold red]Internal error:[/] {markup_safe(what, True)}\n"
            "(set EVALRET_DEBUG=1 for the traceback)",
            highlight=False,
        )
        return ExitCode.INTERNAL


# --- help: upper-case argument names and types, as click writes them ---------------------------

_TYPE_NAMES = {"str": "TEXT", "int": "INTEGER", "float": "FLOAT", "path": "PATH"}
_TYPE_LABEL = re.compile(r"<([^<>]+)>")


def _type_label(match: re.Match[str]) -> str:
    """``<path>`` -> ``PATH``, ``<int range>`` -> ``INTEGER RANGE``, ``<a|b>`` -> ``[a|b]``."""
    label = match.group(1)
    if label.startswith("list[") and label.endswith("]"):  # a repeatable option: one value each
        label = label[5:-1]
    if "|" in label:
        return f"[{label}]"
    return " ".join(_TYPE_NAMES.get(word, word.upper()) for word in label.split())


def _argument_name(param: Any, usage: bool) -> str:
    """An argument as help shows it: ``A``, ``[CONFIGS]...`` (brackets only in the usage line)."""
    name = str(param.metavar or param.name).upper()
    if usage and not param.required:
        name = f"[{name}]"
    return name + ("..." if param.nargs != 1 else "")


class _Examples:
    """Help that ends with a block printed as written: a command's (or group's) epilog, its
    examples (``examples``), under the heading ``epilog_title``."""

    epilog: str | None
    epilog_title: ClassVar[str] = "Examples"

    def format_epilog(self, ctx: Any, formatter: Any) -> None:
        if self.epilog:
            with formatter.section(self.epilog_title):
                formatter.write_text(inspect.cleandoc(self.epilog))


def examples(*lines: str) -> str:
    """A help's examples (an epilog): command lines, each runnable as pasted (a ``# note`` may
    follow), kept as written: click rewraps no paragraph that starts with ``\\b``."""
    return "\b\n" + "\n".join(lines)


def short_help(command: Any) -> str:
    """A command's line in its group's list: the first sentence of its help, whole (click's
    rule for where a sentence ends), never cut at the terminal's width."""
    return str(command.get_short_help_str(limit=sys.maxsize))


class HelpGroup(_Examples, TyperGroup):
    """A group whose help lists each command with the whole first sentence of its help, in the
    sections ``sections`` names (title, command names; none: one list), and ends with its
    examples. A command no section names is listed under "Other commands"."""

    sections: ClassVar[tuple[tuple[str, tuple[str, ...]], ...]] = ()

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        listed = {}
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                listed[name] = command
        sections = [(t, [n for n in names if n in listed]) for t, names in self.sections]
        placed = {n for _, names in sections for n in names}
        rest = [n for n in listed if n not in placed]
        if rest:
            sections.append(("Other commands" if sections else "Commands", rest))
        width = max(map(len, listed), default=0)  # one column across the sections
        for title, names in sections:
            with formatter.section(title):
                formatter.write_dl([(n.ljust(width), short_help(listed[n])) for n in names])


class _Command(_Examples, TyperCommand):
    """A command whose help reads like click's: ``Usage: evalret compare [OPTIONS] A B``,
    arguments listed as ``A``, option values as ``PATH``, ``FLOAT`` or ``[holm|bh|...]``; its
    examples last."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        params = self.get_params(ctx)
        return pieces + [_argument_name(p, True) for p in params if p.param_type_name == "argument"]

    def format_options(self, ctx: Any, formatter: Any) -> None:
        arguments, options = [], []
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            names, text = record
            if param.param_type_name == "argument":
                arguments.append((_argument_name(param, False), text))
            else:
                options.append((_TYPE_LABEL.sub(_type_label, names), text))
        for title, rows in (("Arguments", arguments), ("Options", options)):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


# --- did you mean ------------------------------------------------------------------------------

# the click typer runs on: typer >= 0.2x vendors its own copy (typer._click, whose exceptions are
# not click's), older typers use click
_CLICK: Any = getattr(typer.core, "_click", None) or getattr(typer.core, "click")  # noqa: B009
_NO_SUCH_COMMAND = re.compile(r"^No such command (?P<q>['\"])(?P<name>.*?)(?P=q)")
_ARGV = "evalret.argv"  # the root context's meta key: the command line as given


def _pasted(ctx: Any, typo: str, match: str) -> str | None:
    """The command line as given, with its first ``typo`` token (or ``typo=value``) replaced by
    ``match``, ready to paste: ``evalret run --out reports``; None when the token is not found."""
    root = ctx.find_root()
    argv: list[str] = root.meta.get(_ARGV, [])
    for i, token in enumerate(argv):
        if token == typo or (typo.startswith("-") and token.startswith(typo + "=")):
            fixed = [*argv[:i], match + token[len(typo) :], *argv[i + 1 :]]
            return shlex.join([*(root.info_name or "evalret").split(), *fixed])
    return None


class BadChoice(_CLICK.exceptions.BadParameter):  # type: ignore[misc]
    """A value an option's callback refuses that is not one of ``choices`` (then a close one is
    suggested, as for a ``click.Choice``)."""

    def __init__(self, message: str, choices: tuple[str, ...]) -> None:
        super().__init__(message)
        self.choices = choices


def _choice_fixed(e: Any, ctx: Any) -> str | None:
    """For a value refused by an option with choices: the command line with the value replaced
    by the close choice; None when the value or a close choice is not found."""
    from evalret.core.suggest import suggestion

    param = e.param
    if param is None or param.param_type_name != "option":
        return None
    descriptor = getattr(param, "type_descriptor", None)  # typer's: a Literal's values
    offered = descriptor.choices if descriptor is not None and descriptor.is_choice else ()
    choices = getattr(e, "choices", None) or offered
    if not choices:
        return None
    names = [str(c) for c in choices]
    argv: list[str] = ctx.find_root().meta.get(_ARGV, [])
    for i, token in enumerate(argv):
        option, joined, value = token.partition("=")
        if option not in param.opts or (not joined and i + 1 >= len(argv)):
            continue
        value = value if joined else argv[i + 1]
        match = suggestion(value, names)
        if value in names or match is None:
            continue
        fixed = [f"{option}={match}"] if joined else [option, match]
        rest = argv[i + 1 :] if joined else argv[i + 2 :]
        root = ctx.find_root()
        return shlex.join([*(root.info_name or "evalret").split(), *argv[:i], *fixed, *rest])
    return None


def _with_suggestion(e: Any) -> Any:
    """``e`` (an unknown command or option, or a value that is none of an option's choices) with
    click's and typer's own "Did you mean" turned into the whole command line to paste; ``e``
    itself when nothing is close."""
    from evalret.core.suggest import suggestion

    ctx = e.ctx
    if isinstance(e, _CLICK.exceptions.BadParameter) and ctx is not None:
        line = _choice_fixed(e, ctx)
        if line is None:
            return e
        return _CLICK.exceptions.UsageError(f"{e.format_message()}\nDid you mean: {line}", ctx)
    if isinstance(e, _CLICK.exceptions.NoSuchOption) and ctx is not None:
        typo, base = e.option_name, f"No such option: {e.option_name}"
        argv = ctx.find_root().meta.get(_ARGV, [])
        valued = any(t.startswith(f"{typo}=") for t in argv)  # then only an option taking one
        names = [
            n
            for p in ctx.command.get_params(ctx)
            if not (valued and getattr(p, "is_flag", False))
            for n in (*p.opts, *p.secondary_opts)
        ]
    else:
        found = _NO_SUCH_COMMAND.match(e.message)
        if found is None or ctx is None or not isinstance(ctx.command, TyperGroup):
            return e
        group = ctx.command
        names = [n for n in group.list_commands(ctx) if not group.commands[n].hidden]
        typo, base = found.group("name"), f"No such command {found.group('name')!r}."
    match = suggestion(typo, names)
    line = _pasted(ctx, typo, match) if match is not None else None
    if line is None:
        return e
    return _CLICK.exceptions.UsageError(f"{base}\nDid you mean: {line}", ctx)


class SuggestingGroup(HelpGroup):
    """The root command: an unknown command or option anywhere below it, or an option's value
    that is none of its choices, is refused (exit 2) with the corrected command line, ``Did you
    mean: evalret run --out reports``, which runs as pasted (the close name from
    ``core.suggest``). Its help ends with where to start (``epilog_title``)."""

    sections = SECTIONS
    epilog_title: ClassVar[str] = "Start here"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.epilog = examples(*START_HERE)

    def make_context(
        self, info_name: Any, args: list[str], parent: Any = None, **extra: Any
    ) -> Any:
        argv = list(args)
        try:
            ctx = super().make_context(info_name, args, parent, **extra)
        except _CLICK.exceptions.UsageError as e:
            if e.ctx is not None:
                e.ctx.find_root().meta[_ARGV] = argv
            raise _with_suggestion(e) from None
        ctx.meta[_ARGV] = argv
        return ctx

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except _CLICK.exceptions.UsageError as e:
            raise _with_suggestion(e) from None


# --- commands and option groups ----------------------------------------------------------------


@dataclass(frozen=True)
class OptionGroup:
    """Options that a command's function takes as one value: ``members`` are (parameter name,
    ``Annotated`` option alias, default) in the order help lists them, ``make`` turns their values
    (by parameter name) into the one value."""

    members: tuple[tuple[str, Any, Any], ...]
    make: Callable[..., Any]


def _group_of(annotation: Any) -> OptionGroup | None:
    return next(
        (m for m in getattr(annotation, "__metadata__", ()) if isinstance(m, OptionGroup)), None
    )


def _expanded(fn: Callable[..., Any]) -> tuple[inspect.Signature, dict[str, OptionGroup]]:
    """``fn``'s signature as typer reads it, each option group's parameter replaced in place by
    its members (keyword-only: typer passes every value by name), and the groups by parameter."""
    hints = get_type_hints(fn, include_extras=True)
    params: list[inspect.Parameter] = []
    groups: dict[str, OptionGroup] = {}
    for p in inspect.signature(fn).parameters.values():
        annotation = hints.get(p.name, p.annotation)
        group = _group_of(annotation)
        if group is None:
            params.append(p.replace(kind=p.KEYWORD_ONLY, annotation=annotation))
            continue
        groups[p.name] = group
        params += [
            inspect.Parameter(name, p.KEYWORD_ONLY, annotation=alias, default=default)
            for name, alias, default in group.members
        ]
    return inspect.Signature(params), groups


ROOT = "evalret"  # the top-level Typer app's name; a sub-group's is its own (``subgroup``)


def subgroup(name: str, text: str) -> typer.Typer:
    """The group ``evalret NAME`` (the caller adds it to the app): its help ``text``, its
    commands listed whole (``HelpGroup``), its examples from ``cli_help.EXAMPLES``."""
    shown = examples(*EXAMPLES[name])
    return typer.Typer(name=name, help=text, no_args_is_help=True, cls=HelpGroup, epilog=shown)


def _examples_of(group: typer.Typer, name: str) -> str | None:
    """The examples of the command ``name`` of ``group`` (``evalret`` or a ``subgroup``), from
    ``cli_help.EXAMPLES``; None for a group of none of them. ``name`` as called (``trec_eval``
    stays as declared; a function's name reaches here with typer's dashes)."""
    called = name
    prefix = group.info.name if isinstance(group.info.name, str) else None
    path = called if prefix == ROOT else f"{prefix} {called}"
    return examples(*EXAMPLES[path]) if path in EXAMPLES else None


def command(
    group: typer.Typer, name: str | None = None
) -> Callable[[Callable[..., ExitCode | None]], Callable[..., None]]:
    """Register a command on ``group`` whose function returns its exit code (None: 0); an
    EvalretError becomes ``Error: ...`` and its ExitCode, a crash ``Internal error`` and 3. Each
    option group's members reach the function as the group's one value. Its help ends with its
    examples, ``cli_help.EXAMPLES`` of its path (tests/test_help.py: every command has some)."""

    def register(fn: Callable[..., ExitCode | None]) -> Callable[..., None]:
        signature, groups = _expanded(fn)

        @functools.wraps(fn)
        def run(**kwargs: Any) -> None:
            def call() -> ExitCode | None:
                for param, option_group in groups.items():
                    values = {m: kwargs.pop(m) for m, _, _ in option_group.members}
                    kwargs[param] = option_group.make(**values)
                return fn(**kwargs)

            raise typer.Exit(int(exit_code(call)))

        run.__signature__ = signature  # type: ignore[attr-defined]
        run.__annotations__ = {p.name: p.annotation for p in signature.parameters.values()}
        group.command(
            name, cls=_Command, epilog=_examples_of(group, name or fn.__name__.replace("_", "-"))
        )(run)
        return run

    return register


# --- signals and the process's exit code -------------------------------------------------------


_signalled: list[int] = []  # the signals that arrived (SIGINT, SIGTERM), in order


def _on_sigint(signum: int, frame: Any) -> None:
    _signalled.append(signum)
    raise KeyboardInterrupt


def _on_sigterm(signum: int, frame: Any) -> None:
    _signalled.append(signum)
    raise Terminated


def _install_signal_handlers() -> None:
    """SIGTERM raises Terminated and SIGINT KeyboardInterrupt, so that clean-up runs as for an
    exception; each is recorded, for main() to tell click's exit 1 after Ctrl-C. A signal the parent
    ignores (SIG_IGN, e.g. SIGINT for a background job) stays ignored."""
    for signum, handler in ((signal.SIGINT, _on_sigint), (signal.SIGTERM, _on_sigterm)):
        try:
            if signal.getsignal(signum) != signal.SIG_IGN:
                signal.signal(signum, handler)
        except (ValueError, OSError):  # not the main thread, or a platform without it
            continue


# the collector's first generation is collected every GC_GEN0 new objects (Python's default: 700).
# A command's start-up imports its modules and builds its pydantic and dataclass classes: many
# objects that all live on, none garbage, traversed again at every collection (tens of ms of
# `evalret score`'s start). Cycles are still collected, less often.
GC_GEN0 = 10_000
_own_process: list[bool] = []  # [True] once run_app runs: the process is the CLI's own


# OpenBLAS (numpy's BLAS) starts a worker thread for each core but one as numpy is first imported:
# a worker without work spins for 2^28 cycles (~0.1 s) before it sleeps, CPU the start-up needs on a
# small machine (beside `evalret score`'s loading: ~0.1 s of CPU, ~55 ms of its time on two
# cores). The spin's length is read once, as the library loads: 2^4 cycles when it loads in a
# command's ``loading``, so the workers sleep at once and wake for work. How many threads there
# are, and so every result, is unchanged.
BLAS_SPIN = {"OPENBLAS_THREAD_TIMEOUT": "4"}


@contextmanager
def _blas_workers_sleep() -> Iterator[None]:
    """``BLAS_SPIN`` in the environment while numpy loads inside, then taken out again (child
    processes get the environment as it was); nothing where numpy is loaded already or the
    setting is the user's (it, or GOTO_THREAD_TIMEOUT, already set)."""
    names = ("OPENBLAS_THREAD_TIMEOUT", "GOTO_THREAD_TIMEOUT")
    if "numpy" in sys.modules or any(n in os.environ for n in names):
        yield
        return
    os.environ.update(BLAS_SPIN)
    try:
        yield
    finally:
        for name in BLAS_SPIN:
            os.environ.pop(name, None)


@contextmanager
def loading(runs: Iterable[str] = ()) -> Iterator[None]:
    """Import a command's modules inside: the collector pauses while they load (their classes,
    functions and pydantic schemas all live on: nothing to collect), then everything alive is
    frozen (gc.freeze), so that the collections during the command's work never walk it again
    (some 20 ms of a short `evalret score`); numpy's BLAS workers sleep rather than spin
    (``BLAS_SPIN``). Only in the CLI's own process (``run_app``): a caller's collector and
    libraries (``import evalret``, CliRunner) are left alone. The run files named by ``runs``
    (PATH or NAME=PATH arguments) are read meanwhile (``data.early_runs``), in any process."""
    own = bool(_own_process)
    paused = own and gc.isenabled()
    if paused:
        gc.disable()
    try:
        with _blas_workers_sleep() if own else contextlib.nullcontext():
            if runs:
                early_runs.start(runs)
            yield
    finally:
        if paused:
            gc.freeze()
            gc.enable()


def run_app(app: typer.Typer) -> Any:
    """Run ``app`` and end the process with its exit code (``_exit_now``), or return the code
    where Python's own exit must follow (with ``GC_GEN0``: the process is the CLI's own; ``import
    evalret`` leaves a caller's collector alone). SIGTERM is exit 143 wherever it lands; Ctrl-C
    130 in a command (``exit_code``) and during option parsing too, where click would exit 1,
    which reads as a regression. A command that takes Ctrl-C as its normal end (annotate's
    server) exits as it returns."""
    gc.set_threshold(GC_GEN0, *gc.get_threshold()[1:])
    _own_process.append(True)
    _install_signal_handlers()
    code: Any
    try:
        app()
        code = ExitCode.OK
    except SystemExit as e:  # click's and typer's own exit 1 for a closed stdout is 141 too
        code = ExitCode.BROKEN_PIPE if _reader_left(e) else e.code
    except Terminated:
        code = ExitCode.TERMINATED
    if code == ExitCode.REGRESSION and _signalled:  # click's Abort after a signal, no verdict
        code = ExitCode.INTERRUPTED if _signalled[0] == signal.SIGINT else ExitCode.TERMINATED
    _exit_now(code)
    _freeze_for_exit()
    return code


def _exit_now(code: Any) -> None:
    """End the process with ``code`` as Python's exit would, less the interpreter's teardown
    (a last full collection, then every module and object freed one by one: ~40 ms of a short
    `evalret score`): threading's exit hooks and the atexit handlers (logging's, Ray's shutdown,
    temporary directories) run, stdout and stderr are flushed, then ``os._exit``. Only where
    nothing else can still run or print: from the main thread, no other thread that Python's
    exit would wait for (a non-daemon one), no profiler or tracer (coverage, cProfile: they save
    or print at their own end), no interactive prompt to follow (``-i``, PYTHONINSPECT), and an
    exit code os._exit carries as sys.exit does (an int 0-255). Otherwise, or when a stream
    cannot be flushed (Python's own exit reports that, exit 120), it returns and the normal exit
    follows."""
    if not (
        isinstance(code, int)
        and 0 <= code <= 255
        and threading.current_thread() is threading.main_thread()
        and all(t.daemon for t in threading.enumerate() if t is not threading.main_thread())
        and sys.getprofile() is None
        and sys.gettrace() is None
        and not sys.flags.inspect
        and not os.environ.get("PYTHONINSPECT")
    ):
        return
    for hook in reversed(getattr(threading, "_threading_atexits", [])):  # before atexit, as Python
        hook()
    atexit._run_exitfuncs()
    try:
        for stream in dict.fromkeys((sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__)):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        return
    os._exit(code)


def _freeze_for_exit() -> None:
    """Where Python's own exit follows (``_exit_now`` declined): the garbage the command left is
    collected as always, then what is still alive (the modules and their objects) is frozen
    (gc.freeze), so the interpreter's shutdown frees it by reference counts without walking it
    again in its own collections. Atexit handlers, thread joins and the flushing of files run
    as before."""
    gc.collect()
    gc.freeze()
