"""Help that helps (#39): `evalret --help` lists every command once, in sections, each with the
whole first sentence of its help on one line, and ends with where to start; every command and
group ends its help with examples (``evalret.cli_help``), printed as written, each a complete
command line that parses as the command it is listed under."""

from __future__ import annotations

import re
import shlex
from typing import Any

import pytest
import typer.main

from evalret.cli import app
from evalret.cli_help import EXAMPLES, SECTIONS, START_HERE
from evalret.cli_runtime import short_help
from helpers import command_tree, invoke, is_group

WIDTH = 80  # click's help width (at most 80 columns)
TREE = command_tree()
NAMES = {name.removeprefix("evalret ").removeprefix("evalret"): c for name, c in TREE}


def _rows(output: str, title: str) -> list[str]:
    """The lines of the help section ``title`` (up to the next blank line)."""
    lines = output.splitlines()
    start = lines.index(f"{title}:") + 1
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
    return lines[start:end]


def test_the_top_level_help_lists_every_command_once_in_its_section() -> None:
    code, output = invoke("--help")
    assert code == 0, output
    top = [n for n in NAMES if n and " " not in n]
    placed = [n for _, names in SECTIONS for n in names]
    assert sorted(placed) == sorted(top), "every top-level command in exactly one section"
    assert "Other commands:" not in output and "\nCommands:" not in output
    for title, names in SECTIONS:
        rows = _rows(output, title)
        assert [row.split()[0] for row in rows] == list(names), (title, rows)
        for row, name in zip(rows, names, strict=True):
            text = row.split(None, 1)[1]
            assert text == short_help(NAMES[name]), row  # the whole sentence, on one line
            assert text.endswith(".") and "..." not in text, row
            assert len(row) <= WIDTH, row
    widths = {
        len(row) - len(row.split(None, 1)[1]) for t, _ in SECTIONS for row in _rows(output, t)
    }
    assert len(widths) == 1, "the sections' descriptions start in one column"


def test_the_top_level_help_ends_with_where_to_start() -> None:
    _, output = invoke("--help")
    assert _rows(output, "Start here") == [f"  {line}" for line in START_HERE]


@pytest.mark.parametrize("name", [n for n, c in NAMES.items() if n and is_group(c)])
def test_a_group_lists_its_commands_whole(name: str) -> None:
    code, output = invoke(*name.split(), "--help")
    assert code == 0, output
    group = NAMES[name]
    rows = _rows(output, "Commands")
    assert len(rows) == len([c for c in group.commands.values() if not c.hidden]), rows
    for row in rows:
        sub, text = row.split(None, 1)
        assert text == short_help(NAMES[f"{name} {sub}"]) and text.endswith("."), row
        assert len(row) <= WIDTH, row


def test_every_command_and_group_has_examples() -> None:
    assert set(EXAMPLES) == {n for n in NAMES if n}, "EXAMPLES names every command path once"
    for name, lines in EXAMPLES.items():
        commands = [line for line in lines if not line.startswith("#")]
        assert commands, name
        assert all(c.startswith(f"evalret {name}") for c in commands), (name, commands)


@pytest.mark.parametrize("name", [n for n in NAMES if n])
def test_examples_are_printed_as_written(name: str) -> None:
    """The examples end the help, not rewrapped, within the help's width."""
    code, output = invoke(*name.split(), "--help")
    assert code == 0, output
    assert output.rstrip("\n").splitlines()[-len(EXAMPLES[name]) - 1 :] == [
        "Examples:",
        *(f"  {line}" for line in EXAMPLES[name]),
    ]
    assert all(len(f"  {line}") <= WIDTH for line in EXAMPLES[name])


def _parsed(argv: list[str]) -> tuple[str, Any]:
    """The command path and context of ``evalret ARGV`` as click parses it (every option,
    value, choice and required argument checked), without running it."""
    command: Any = typer.main.get_command(app)
    ctx = command.make_context("evalret", argv)
    path = []
    while is_group(command):
        rest = [*getattr(ctx, "_protected_args", []), *ctx.args]
        name, command, rest = command.resolve_command(ctx, rest)
        path.append(name)
        ctx = command.make_context(name, rest, parent=ctx)
    return " ".join(path), ctx


@pytest.mark.parametrize(
    "line",
    sorted(
        {
            line
            for lines in (*EXAMPLES.values(), START_HERE)
            for line in lines
            if not line.startswith("#")
        }
    ),
)
def test_every_example_parses_as_pasted(line: str) -> None:
    """An example is a whole command line: pasted (a redirection aside), click accepts it."""
    command_line = re.split(r"\s[>|]\s", line)[0]
    argv = shlex.split(command_line, comments=True)
    assert argv[0] == "evalret"
    if "--help" in argv:  # click's --help exits as it is parsed: run it
        code, output = invoke(*argv[1:])
        assert code == 0, output
        return
    path, ctx = _parsed(argv[1:])
    assert line.startswith(f"evalret {path}"), (line, path)
    assert ctx.params is not None
