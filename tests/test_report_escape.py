"""The escapers of untrusted text: examples for each medium, and properties over any text."""

from __future__ import annotations

import re
import unicodedata
import xml.etree.ElementTree as ET

from hypothesis import given
from hypothesis import strategies as st

from evalret.report.escape import html_text, markdown, markdown_code, terminal, xml_text

HIDDEN = ("Cc", "Cf", "Cs", "Zl", "Zp")


def test_terminal_makes_escape_sequences_and_bidi_visible() -> None:
    """ESC, BEL, newline, tab and a right-to-left override become visible escapes."""
    assert terminal("a\x1b[2Jb\x1b]0;pwned\x07") == "a\\x1b[2Jb\\x1b]0;pwned\\x07"
    assert terminal("x\ny\tz\u202e\u2028\x9b") == "x\\ny\\tz\\u202e\\u2028\\x9b"
    assert terminal("line 1\nline\x002", multiline=True) == "line 1\nline\\x002"
    assert terminal("plain [bold] text") == "plain [bold] text"


def test_markdown_neutralises_html_links_images_tables_and_headings() -> None:
    """Raw HTML becomes entities; links, images, pipes and headings are backslash-escaped; a
    newline is shown, never kept."""
    assert markdown("<script>alert(1)</script>") == "&lt;script&gt;alert\\(1\\)&lt;/script&gt;"
    assert markdown("[x](javascript:alert(1))") == "\\[x\\]\\(javascript:alert\\(1\\)\\)"
    assert markdown("![i](http://evil/x.png)") == "\\!\\[i\\]\\(http://evil/x.png\\)"
    assert markdown("a | b\n# heading") == "a \\| b\\\\n\\# heading"
    assert markdown("1. item") == "1\\. item" and markdown("- item") == "\\- item"
    assert markdown("doc-0001 recall@10 1.5") == "doc-0001 recall@10 1.5"
    assert markdown_code("a`b|c") == "<code>a\\`b\\|c</code>"


def test_xml_text_shows_what_xml_forbids_and_keeps_the_rest() -> None:
    """C0 controls (but tab, newline, return), surrogates, U+FFFE and U+FFFF become escapes."""
    assert xml_text("a\x00b\x1b\tc\nd\ufffe\u202e") == "a\\x00b\\x1b\tc\nd\\ufffe\u202e"


def test_html_text_escapes_markup_quotes_and_controls() -> None:
    """Elements and attribute breakouts are inert; controls visible; newlines kept."""
    assert html_text("\"'><svg/onload=alert(1)>\x1b\n") == (
        "&quot;&#x27;&gt;&lt;svg/onload=alert(1)&gt;\\x1b\n"
    )


@given(st.text())
def test_terminal_output_has_no_hidden_character(text: str) -> None:
    """Whatever the input, the terminal form holds no control, format or separator character."""
    assert not any(unicodedata.category(c) in HIDDEN for c in terminal(text))


@given(st.text())
def test_markdown_output_is_one_inert_table_cell(text: str) -> None:
    """Whatever the input: one line, no raw HTML, no unescaped pipe, bracket or backtick."""
    out = markdown(text)
    assert "<" not in out and ">" not in out
    assert not any(unicodedata.category(c) in HIDDEN for c in out)
    unescaped = re.sub(r"\\.", "", out)  # drop every backslash escape
    assert not set("|[]()`*_#!~$") & set(unescaped)


@given(st.text())
def test_xml_text_is_always_well_formed(text: str) -> None:
    """Any text, once through xml_text, serializes to XML that parses back (text and attribute)."""
    element = ET.Element("case", message=xml_text(text))
    element.text = xml_text(text)
    ET.fromstring(ET.tostring(element, encoding="unicode"))
