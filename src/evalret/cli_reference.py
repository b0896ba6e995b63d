"""The CLI reference page (docs/reference/cli.md), generated from the Typer app: every command
and sub-command with its usage, help, arguments and options (their help, type, choices, bounds
and default). It walks the command tree Typer builds (``typer.main.get_command``) and reads each
parameter's declaration, never the text of ``--help``: nothing depends on the terminal's width or
colours. The page's cog block calls ``cli_reference``; tests/test_docs_generated.py checks it.

The one module above ``cli.py``: it imports the app, and nothing imports it.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args, get_origin

import typer.main

from evalret.cli import app
from evalret.report.reference_docs import code, md_text, table

_TYPES = {bool: "flag", int: "integer", float: "number", str: "text", Path: "path"}


def _context(command: Any, name: str, parent: Any | None) -> Any:
    return type(command).context_class(command, info_name=name, parent=parent)


def _commands(command: Any, ctx: Any) -> Iterator[tuple[Any, Any]]:
    """Every command below ``command`` (itself first), each with its context, in the order
    ``--help`` lists them."""
    yield command, ctx
    if hasattr(command, "list_commands"):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from _commands(sub, _context(sub, name, ctx))


def _type_text(param: Any) -> str:
    """A parameter's type as the page writes it: ``integer (≥ 1)``, one of its choices,
    ``path, repeatable``."""
    descriptor = param.type_descriptor
    annotation = descriptor.annotation
    many = get_origin(annotation) is list
    if many:
        annotation = get_args(annotation)[0]
    if descriptor.is_choice:
        text = "one of " + ", ".join(code(str(c)) for c in descriptor.choices or ())
    else:
        text = _TYPES.get(annotation, str(getattr(annotation, "__name__", annotation)))
    bounds = [f"≥ {param.min}" if param.min is not None else "", ""]
    bounds[1] = f"≤ {param.max}" if param.max is not None else ""
    if any(bounds):
        text += " (" + ", ".join(b for b in bounds if b) + ")"
    if many and param.param_type_name == "option":
        text += ", repeatable"
    return text


def _default_text(param: Any) -> str:
    default = param.default
    if param.required:
        return "required"
    if default is None or default == [] or callable(default):
        return ""
    if isinstance(default, bool):
        if param.secondary_opts:  # --progress / --no-progress
            return code((param.opts if default else param.secondary_opts)[0])
        return "" if default is False else "on"
    if isinstance(default, Path):
        default = default.as_posix()
    return code(str(default))


def _name_text(param: Any) -> str:
    if param.param_type_name == "argument":
        name = str(param.metavar or param.name).upper()
        return code(name + ("..." if param.nargs != 1 else ""))
    return " / ".join(code(n) for n in (*param.opts, *param.secondary_opts))


def _usage(command: Any, ctx: Any) -> str:
    return " ".join([ctx.command_path, *command.collect_usage_pieces(ctx)])


def _help_paragraphs(text: str | None) -> list[str]:
    paragraphs = inspect.cleandoc(text or "").split("\n\n")
    return [md_text(p) for p in paragraphs if p.strip()]


def command_section(command: Any, ctx: Any) -> str:
    """One command: its heading, usage, help and the table of its parameters."""
    out = [f"## `{ctx.command_path}`\n", f"```\n{_usage(command, ctx)}\n```\n"]
    out += [p + "\n" for p in _help_paragraphs(command.help)]
    params = [p for p in command.get_params(ctx) if not p.hidden and p.name != "help"]
    rows = [
        (_name_text(p), _type_text(p), _default_text(p), md_text(getattr(p, "help", "") or ""))
        for p in params
    ]
    if rows:
        out.append(table(("name", "type", "default", "meaning"), rows))
    if hasattr(command, "list_commands"):
        subs = [(n, command.get_command(ctx, n)) for n in command.list_commands(ctx)]
        listed = [
            (code(f"{ctx.command_path} {name}"), md_text(sub.get_short_help_str(limit=1000)))
            for name, sub in subs
            if sub is not None and not sub.hidden
        ]
        out.append(table(("command", "what it does"), listed))
    return "\n".join(out)


def cli_reference() -> str:
    """Every command of `evalret`, the top level first, then each command and group in the
    order of ``--help``."""
    root = typer.main.get_command(app)
    ctx = _context(root, "evalret", None)
    return "\n".join(command_section(command, c) for command, c in _commands(root, ctx))
