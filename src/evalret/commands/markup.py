"""Text quoted from input (paths, model names, config values) made safe for the terminal: control
characters shown visibly and brackets not taken as rich markup."""

from __future__ import annotations


def markup_safe(text: str, multiline: bool = False) -> str:
    """``text`` safe inside rich markup: controls visible (newlines too, unless ``multiline``),
    brackets not taken as markup."""
    from rich.markup import escape

    from evalret.report.escape import terminal

    return escape(terminal(text, multiline=multiline))
