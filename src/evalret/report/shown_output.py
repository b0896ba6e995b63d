"""A command's output as the documentation shows it, and the check that a page's shown output is
what the command prints. Used by the CLI reference's examples (``cli_reference.py``, which
records them normalised) and by the executed examples of the docs (tests/test_docs_examples.py,
which compares a console block's shown lines with the real output).

The normalisation rules, applied alike to the real output and to the page's lines:

- colours and styles (ANSI escapes) are dropped, each line's trailing blanks too;
- blank lines, and the lines that only draw a table's border (``┏━━┳━━┓``, ``└──┴──┘``), are
  dropped: a page may leave them out; a line's leading blanks are dropped, a run of blanks is
  one blank, and a table row's closing ``│`` is dropped (a cell's padding depends on the widest
  cell, which a page may not show, and a centred title on the width of the text);
  a progress bar's line (``Embedding documents ━━━━ 338/338 0:00:00``) is dropped;
- a path given in ``places`` becomes its placeholder (the example's working directory becomes
  nothing, so paths read relative to it; the embedding cache becomes ``~/.cache/evalret``);
- what varies from run to run or machine to machine becomes a placeholder: a duration
  (``0.0431 ms``, ``12.5 s``) ``…s``; the load average (``load 1.27``) ``load …``; the CPU count
  (``2 CPUs``) ``… CPUs``; a date-time ``<time>``; evalret's version ``<version>``;
- everything else, the figures included, must match as it is: the metrics of the demo are
  deterministic (seeded), and a page that shows one shows the real one.

Matching (``mismatch``): the page's lines must be the real lines in order, from the first to the
last. A page line that is only ``...`` or ``…`` stands for any number of real lines (none
included); inside a line, ``...`` or ``…`` stands for any text (``report files in reports/base:
report.json, ...``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from evalret.version import __version__

ELISION = ("...", "…")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_BORDER = re.compile(r"^[\s┏┓┗┛┡┩┣┫┳┻╇╋━─┃│┌┐└┘├┤┬┴┼═╞╡╪╭╮╯╰]*$")
_BORDER_DRAWING = re.compile(r"[┏┓┗┛┡┩┳┻╇━─┌┐└┘┬┴┼═╭╮╯╰]")
_PROGRESS = re.compile(r"━{4,}.*\b\d+:\d\d:\d\d\b")
_BLANKS = re.compile(r"[ \t]+")
_CLOSING = re.compile(r" ?[│┃]$")
_VARYING = (
    (
        re.compile(
            r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?"
        ),
        "<time>",
    ),
    (re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*\s?(?:ms|s)\b"), "…s"),
    (re.compile(r"\bload \d+(?:\.\d+)?"), "load …"),
    (re.compile(r"\b\d+ CPUs?\b"), "… CPUs"),
)
_VERSION = re.compile(rf"(?<![\w.]){re.escape(__version__)}(?![\w.])")
_WILDCARD = re.compile(r"\\\.\\\.\\\.|…(?!s\b)")


def placeholders(text: str, places: Mapping[str, str] | None = None) -> list[str]:
    """``text``'s lines with what varies replaced (paths, durations, the load, the CPU count,
    dates, the version), colours, progress bars and trailing blanks dropped, and its layout
    kept: what the CLI reference shows of an example's output."""
    text = _VERSION.sub("<version>", _ANSI.sub("", text))
    for path, placeholder in sorted((places or {}).items(), key=lambda p: -len(p[0])):
        text = text.replace(path.rstrip("/") + "/", placeholder + "/" if placeholder else "")
        text = text.replace(path.rstrip("/"), placeholder or ".")
    lines: list[str] = []
    for raw in text.split("\n"):
        line = raw.rstrip()
        if _PROGRESS.search(line) or (not line and (not lines or not lines[-1])):
            continue
        for pattern, placeholder in _VARYING:
            line = pattern.sub(placeholder, line)
        lines.append(line)
    return lines[:-1] if lines and not lines[-1] else lines


def normalise(text: str, places: Mapping[str, str] | None = None) -> list[str]:
    """``text``'s lines after the rules of the module's docstring: what a page's shown output
    and a command's real output are compared as."""
    lines = []
    for line in placeholders(text, places):
        if not line.strip() or (_BORDER.match(line) and _BORDER_DRAWING.search(line)):
            continue
        lines.append(_CLOSING.sub("", _BLANKS.sub(" ", line.strip())))
    return lines


def _line_pattern(line: str) -> str:
    return _WILDCARD.sub("[^\\n]*", re.escape(line)) + "\n"


def _pattern(shown: Sequence[str]) -> str:
    return "".join(
        "(?:[^\\n]*\\n)*?" if line.strip() in ELISION else _line_pattern(line) for line in shown
    )


def mismatch(shown: Sequence[str], real: Sequence[str]) -> str | None:
    """None when the page's lines ``shown`` match the real output's lines ``real`` (both
    normalised), else what differs: the first page line that no longer matches, and the real
    lines around where it should."""
    text = "".join(line + "\n" for line in real)
    if re.fullmatch(_pattern(shown), text, flags=re.DOTALL) is not None:
        return None
    good = 0  # the longest run of the page's first lines that still matches a start of the text
    for count in range(1, len(shown) + 1):
        if re.match(_pattern(shown[:count]), text) is None:
            break
        good = count
    if good == len(shown):
        return "the page's output ends before the command's (end it with a `...` line)"
    return (
        f"shown line {good + 1} ({shown[good]!r}) is not in the command's output where the page "
        f"puts it; the command printed:\n" + "\n".join(real)
    )
