"""Escapers for untrusted text (golden-set ids, texts and tags, paths, config values), one per
medium. Renderers call them at the edge; the data itself is never changed.

Every one makes control and format characters visible the same way (``\\x1b``, ``\\u202e``), so
an escape sequence or a bidi override reads the same in the terminal, Markdown and XML.
"""

from __future__ import annotations

import html
import re
import unicodedata

# C0/C1 controls, DEL, format characters (bidi overrides, zero-width), line and paragraph
# separators, and lone surrogates (which cannot even be encoded)
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
# what XML 1.0 forbids: C0 except tab, newline and return; surrogates; U+FFFE and U+FFFF
_XML_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
# Markdown punctuation that can start a construct anywhere in a line: emphasis, code, links and
# images, headings, tables, strikethrough, math; & < > become entities, so raw HTML is inert
_MARKDOWN = str.maketrans(
    {
        **{c: "\\" + c for c in "\\`*_[]()#+!|~$"},
        "&": "&amp;",
        "<": "&lt;",
        ">": "&gt;",
    }
)
# a list marker or a numbered-list marker at the start of a piece of text
_LEADING_MARKER = re.compile(r"^(\d{0,9})([-=.)])")


_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _visible_char(c: str) -> str:
    if c in _NAMED:
        return _NAMED[c]
    code = ord(c)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _visible(text: str) -> str:
    if text.isprintable():  # the common case, and fast
        return text
    return "".join(
        _visible_char(c) if unicodedata.category(c) in _INVISIBLE_CATEGORIES else c for c in text
    )


def terminal(text: str, multiline: bool = False) -> str:
    """``text`` for one line of a terminal: every control character (escape sequences, newlines,
    tabs included), format character and line separator written as a visible escape; with
    ``multiline``, newlines are kept (for messages of several lines)."""
    if multiline:
        return "\n".join(_visible(line) for line in text.split("\n"))
    return _visible(text)


def html_text(text: str) -> str:
    """``text`` for an HTML or SVG element or a quoted attribute: controls and format characters
    visible (newlines kept, HTML folds them), ``& < > " '`` as character references."""
    return html.escape(terminal(text, multiline=True), quote=True)


def markdown(text: str) -> str:
    """``text`` as inert inline Markdown, safe in a table cell: controls visible, newlines
    included (so it can neither end the line nor start a heading), Markdown punctuation
    backslash-escaped, ``&``, ``<`` and ``>`` as entities (no raw HTML), a leading list marker
    escaped."""
    escaped = _visible(text).translate(_MARKDOWN)
    return _LEADING_MARKER.sub(r"\1\\\2", escaped, count=1)


def markdown_code(text: str) -> str:
    """``text`` in monospace, as inert as ``markdown``: an HTML ``<code>`` element (a Markdown
    code span would show backslash escapes literally and could be closed by a backtick)."""
    return f"<code>{markdown(text)}</code>"


def xml_text(text: str) -> str:
    """``text`` well-formed in XML 1.0 (text or attribute, before ElementTree's own escaping of
    ``&``, ``<``, ``>`` and quotes): the characters XML forbids written as visible escapes."""
    return _XML_FORBIDDEN.sub(lambda m: _visible_char(m.group(0)), text)


def _json_escape(c: str) -> str:
    code = ord(c)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000  # a UTF-16 surrogate pair, as JSON spells characters beyond the BMP
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def json_document(text: str) -> str:
    """A JSON document (``json.dumps(..., ensure_ascii=False)``) safe to print: every control,
    format or separator character json.dumps leaves raw (bidi overrides, C1 controls, U+2028)
    written as a ``\\u`` escape. Such characters can only sit inside strings, so the parsed
    data are unchanged."""
    return "\n".join(
        line
        if line.isprintable()  # the common case, and fast
        else "".join(
            _json_escape(c) if unicodedata.category(c) in _INVISIBLE_CATEGORIES else c for c in line
        )
        for line in text.split("\n")  # raw newlines are JSON's own whitespace
    )


def markup_safe(text: str, multiline: bool = False) -> str:
    """``text`` safe inside rich markup: controls visible (newlines too, unless ``multiline``),
    brackets not taken as markup. rich is imported only when this is called."""
    from rich.markup import escape

    return escape(terminal(text, multiline=multiline))
