"""The documentation's examples run: every fenced block marked ``<!-- run -->`` on the line before
it is executed against a copy of the demo (golden_sets/, configs/, baselines/ in a temporary
directory; nothing is written into the repository), command by command, in the page's order, and
each command must end with the exit code the page writes after it (``# exit 1``; none written:
0). A failure names the page and the line of the command.

Markers (an HTML comment on the line right before the opening fence, so the site does not show it):

- ``<!-- run -->``: run here, in the fast lane (no model is loaded);
- ``<!-- run model -->``: it embeds with the packaged model (pytest mark ``model``);
- either followed by ``; output shown only: REASON`` (``<!-- run; output shown only: a server's
  log -->``): run, but its shown output is not compared, for a reason a reader can check;
- ``<!-- norun: REASON -->``: shown only, for a reason a reader can check (a hosted API, a Ray
  cluster, the reader's own files).

In a ``console`` block the commands are the lines starting with ``$ ``, and the lines after a
command (up to the next command or ``# exit N``) are its output as the page shows it: they must be
what the command prints (stdout and stderr together), after the normalisation and with the ``...``
elisions of ``evalret.report.shown_output`` (paths, durations, the load average, versions and
dates become placeholders; a line ``...`` stands for any lines, ``...`` inside a line for any
text; blank lines and tables' border lines are left out). In a ``bash`` block the commands are
every line that is not a comment, and nothing is compared. A command may go on over lines ending
with a backslash. Every block of a tutorial or how-to page that shows an
``evalret`` command carries one of the markers (``test_every_shown_command_is_run_or_says_why``), so
a new example is run or says why not.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from evalret.report.shown_output import mismatch, normalise

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
MARKER = re.compile(r"^<!-- (run|run model|norun: .+?)(; output shown only: .+)? -->$")
FENCE = re.compile(r"^```(\w*)")
EXIT = re.compile(r"^# exit (\d+)$")
EVALRET_LINE = re.compile(r"^(\$ )?(\.venv/bin/)?evalret ")
# the demo a command runs against: the repository's own files, copied
DEMO = ("golden_sets", "configs", "baselines")
SHOWN_PAGES = ("tutorial", "how-to")
# the terminal's width the commands see: wide enough that no line wraps, whatever the length of
# the temporary directory's path (which the placeholders remove after the line is printed)
WIDTH = "1000"
# pages whose model blocks start from an empty embedding cache of their own, as their reader does:
# the tutorial shows its first run embedding the demo ("0 cached, 338 embedded")
FRESH_CACHE = ("tutorial/first-gate.md",)


@dataclass
class Command:
    line: int  # 1-based line of the page where the command starts
    text: str
    exit_code: int = 0
    shown: list[str] = field(default_factory=list)  # the output the page shows after it


@dataclass
class Block:
    page: str
    line: int  # the opening fence
    language: str
    marker: str | None
    body: list[tuple[int, str]] = field(default_factory=list)
    output_checked: bool = True  # False: marked "output shown only: REASON"

    @property
    def shows_evalret(self) -> bool:
        return any(EVALRET_LINE.match(text) for _, text in self.body)

    def commands(self) -> list[Command]:
        """The commands of the block, each with the exit code written after it and (in a
        console block) the output shown between it and the next command or exit code."""
        console = self.language == "console"
        commands: list[Command] = []
        pending: Command | None = None
        closed = True  # the last command's output has ended (an exit code was written)
        for number, text in self.body:
            code = EXIT.match(text.strip())
            if code and commands:
                commands[-1].exit_code = int(code.group(1))
                closed = True
                continue
            if pending is not None:
                pending.text += "\n" + text
            elif console and text.startswith("$ "):
                pending = Command(number, text[2:])
            elif not console and text.strip() and not text.lstrip().startswith("#"):
                pending = Command(number, text)
            elif console and commands and not closed:
                commands[-1].shown.append(text)
            if pending is not None and not text.endswith("\\"):
                commands.append(pending)
                pending, closed = None, False
        return commands


def blocks(page: Path, root: Path = DOCS) -> list[Block]:
    """The fenced blocks of a page, each with the marker on the line before it (if any)."""
    name = page.relative_to(root).as_posix()
    found: list[Block] = []
    current: Block | None = None
    previous = ""
    for number, text in enumerate(page.read_text(encoding="utf-8").split("\n"), start=1):
        opening = FENCE.match(text)
        if current is None and opening:
            marker = MARKER.match(previous.strip())
            current = Block(name, number, opening.group(1), marker.group(1) if marker else None)
            current.output_checked = not (marker and marker.group(2))
        elif current is not None and text.startswith("```"):
            found.append(current)
            current = None
        elif current is not None:
            current.body.append((number, text))
        previous = text
    return found


def all_blocks() -> list[Block]:
    return [block for page in sorted(DOCS.rglob("*.md")) for block in blocks(page)]


def page_params() -> list[object]:
    """One case per page and lane: the page's ``run`` blocks (the fast lane) and its
    ``run model`` blocks (marked ``model``), each lane in a copy of the demo of its own, so a
    fast block never depends on what a model block wrote."""
    lanes: dict[tuple[str, str], int] = {}
    for block in all_blocks():
        if block.marker in ("run", "run model"):
            key = (block.page, block.marker)
            lanes[key] = lanes.get(key, 0) + 1
    return [
        pytest.param(
            page,
            marker,
            marks=[pytest.mark.model] if marker == "run model" else [],
            id=f"{page}:{marker}",
        )
        for page, marker in sorted(lanes)
    ]


def demo_copy(directory: Path) -> Path:
    for name in DEMO:
        shutil.copytree(REPO / name, directory / name)
    return directory


def run_command(
    command: Command, cwd: Path, page: str, cache: Path | None, check_output: bool = True
) -> None:
    """``bash -c COMMAND`` in the demo's copy, with this environment's evalret first on PATH;
    its exit code must be the page's, and its output (stdout and stderr as one stream, WIDTH
    columns wide: no line is wrapped, however long the temporary directory's path in it) what
    the page shows, normalised (``shown_output``).
    ``cache``: an embedding cache of the block's own (a fast block's ``evalret cache clear``
    clears only it); None: the test session's (tests/conftest.py), shared by the model blocks of
    every page so that the demo is embedded once per model setting."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    env = {**os.environ, "PATH": path, "COLUMNS": WIDTH, "NO_COLOR": "1"}
    if cache is not None:
        env["EVALRET_CACHE_DIR"] = str(cache)
    done = subprocess.run(
        ["bash", "-c", command.text],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=900,
    )
    where = f"docs/{page}:{command.line}: `{command.text}`"
    assert done.returncode == command.exit_code, (
        f"{where} exited {done.returncode}, the page says {command.exit_code}\n"
        f"--- output\n{done.stdout[-6000:]}"
    )
    if not (check_output and command.shown):
        return
    places = {str(cwd): "", str(cache or env.get("EVALRET_CACHE_DIR", cwd)): "~/.cache/evalret"}
    differs = mismatch(normalise("\n".join(command.shown)), normalise(done.stdout, places))
    assert differs is None, f"{where}: the output shown differs from the real one: {differs}"


@pytest.mark.parametrize(("page", "marker"), page_params())
def test_marked_examples_run(page: str, marker: str, tmp_path: Path) -> None:
    """Every command of the page's blocks of one lane, in order, in one copy of the demo."""
    cwd = demo_copy(tmp_path / "demo")
    marked = [b for b in blocks(DOCS / page) if b.marker == marker]
    commands = [(c, b.output_checked) for b in marked for c in b.commands()]
    assert commands, f"docs/{page}: a marked block without a command"
    cache = tmp_path / "cache" if marker == "run" or page in FRESH_CACHE else None
    for command, checked in commands:
        run_command(command, cwd, page, cache, checked)


def test_every_shown_command_is_run_or_says_why() -> None:
    """A tutorial or how-to block that shows an ``evalret`` command carries a marker; the counts
    of commands run and shown are printed (``pytest -rP``)."""
    unmarked: list[str] = []
    shown = run = 0
    for block in all_blocks():
        if not block.shows_evalret or not block.page.startswith(SHOWN_PAGES):
            continue
        count = sum(1 for _, text in block.body if EVALRET_LINE.match(text))
        shown += count
        if block.marker is None:
            unmarked.append(f"docs/{block.page}:{block.line}")
        elif block.marker.startswith("run"):
            run += count
    print(f"docs examples: {run} of {shown} evalret commands of tutorial and how-to pages run")
    assert unmarked == [], f"blocks with an evalret command but no run/norun marker: {unmarked}"
    assert run > 0


def test_the_parser_reads_commands_exit_codes_and_markers(tmp_path: Path) -> None:
    """The block reader itself: a console block's ``$`` lines, continuations, ``# exit N`` after a
    command; a bash block's non-comment lines; the marker on the line before the fence."""
    page = tmp_path / "case.md"
    text = (
        "<!-- run model -->\n```console\n$ evalret run \\\n    --out x\nGATE FAILED\n# exit 1\n"
        "$ evalret report x/report.json\n```\n\n```bash\n# a comment\nevalret validate d\n```\n"
    )
    page.write_text(text)
    first, second = blocks(page, tmp_path)
    assert first.marker == "run model" and first.line == 2 and second.marker is None
    assert [(c.line, c.text, c.exit_code) for c in first.commands()] == [
        (3, "evalret run \\\n    --out x", 1),
        (7, "evalret report x/report.json", 0),
    ]
    assert [(c.line, c.text) for c in second.commands()] == [(12, "evalret validate d")]


def test_a_shown_output_that_is_not_printed_fails(tmp_path: Path) -> None:
    """A console block's shown output is compared with the real one: the real lines pass (with
    an elision and the table's padding left out), a changed figure fails naming the page's line;
    ``output shown only`` runs the command without comparing."""
    page = tmp_path / "case.md"
    right = (
        "golden set golden_sets/demo (native)\n│ documents │ 338\n...\n"
        "VALID: no errors, 0 warning(s)"
    )
    text = (
        f"<!-- run -->\n```console\n$ evalret validate golden_sets/demo\n{right}\n```\n\n"
        f"<!-- run -->\n```console\n$ evalret validate golden_sets/demo\n"
        f"{right.replace('338', '339')}\n```\n\n"
        "<!-- run; output shown only: the reason -->\n```console\n"
        "$ evalret validate golden_sets/demo\nnot what it prints\n```\n"
    )
    page.write_text(text)
    good, bad, unchecked = blocks(page, tmp_path)
    assert (good.output_checked, unchecked.output_checked) == (True, False)
    cwd = demo_copy(tmp_path / "demo")
    run_command(good.commands()[0], cwd, "case.md", tmp_path / "cache")
    with pytest.raises(AssertionError, match=r"case.md:12: .*shown line 2 \('│ documents │ 339'\)"):
        run_command(bad.commands()[0], cwd, "case.md", tmp_path / "cache")
    run_command(unchecked.commands()[0], cwd, "case.md", tmp_path / "cache", check_output=False)
