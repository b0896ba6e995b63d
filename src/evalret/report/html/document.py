"""The document every evalret HTML page is (report.html of a run or a comparison, trend.html,
sweep.html): inline CSS, a header with the verdict badge and the contents, the sections, a footer.

No script and nothing fetched: a Content Security Policy in the page forbids every load but inline
styles and data: images, so the file opens the same from a CI artifact with no network. Also here:
the cells the pages' tables are made of (numbers, signed changes, settings as inline code), each
escaping what it shows.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from evalret.data.schema import Change
from evalret.report.numbers import HTML, number
from evalret.report.svg import esc

CSS = """
:root { --ink: #1F2328; --muted: #59636E; --line: #D8DEE4; --soft: #F6F8FA;
  --pass: #1A7F37; --fail: #B42318; --warn: #9A6700; --accent: #0060A0; }
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0; color: var(--ink); background: #fff; font: 15px/1.5 system-ui, -apple-system,
  "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
.wrap { max-width: 1180px; margin: 0 auto; padding: 0 24px; }
header.top { border-bottom: 1px solid var(--line); padding: 20px 0 14px; background: var(--soft); }
header.top h1 { font-size: 22px; margin: 0 12px 0 0; display: inline; vertical-align: middle; }
.meta { margin: 8px 0 0; color: var(--muted); font-size: 14px; }
.badge { display: inline-block; vertical-align: middle; padding: 3px 12px; border-radius: 999px;
  font-weight: 700; font-size: 15px; letter-spacing: .02em; color: #fff; }
.badge.pass { background: var(--pass); } .badge.fail { background: var(--fail); }
.badge.neutral { background: #57606A; }
.verdict-line { font-size: 17px; margin: 6px 0 10px; }
nav.toc { margin: 16px 0 0; font-size: 14px; }
nav.toc ol { margin: 4px 0 0; padding-left: 22px; columns: 2 260px; }
nav.toc a { color: var(--accent); }
section { margin: 30px 0; }
h2 { font-size: 20px; margin: 0 0 10px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
h3 { font-size: 16.5px; margin: 22px 0 8px; }
h4 { font-size: 15px; margin: 0 0 4px; }
p { margin: 6px 0; max-width: 80ch; }
a { color: var(--accent); }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(min(100%, 470px), 1fr));
  gap: 16px 22px; align-items: start; }
figure.chart { margin: 0; padding: 10px 12px; border: 1px solid var(--line); border-radius: 8px;
  background: #fff; break-inside: avoid; }
.chart-title { font-weight: 600; margin-bottom: 4px; }
figure.chart svg { display: block; max-width: 100%; height: auto; margin: 0 auto; }
figcaption { color: var(--muted); font-size: 13px; margin-top: 4px; }
.table-wrap { overflow-x: auto; margin: 8px 0; }
table { border-collapse: collapse; font-size: 13.5px; font-variant-numeric: tabular-nums; }
th, td { padding: 4px 9px; border-bottom: 1px solid var(--line); text-align: right;
  vertical-align: top; }
th { background: var(--soft); font-weight: 600; white-space: nowrap; }
th.l, td.l { text-align: left; }
tr.failed td { background: #FDECEA; }
.result-pass { color: var(--pass); font-weight: 600; }
.result-fail { color: var(--fail); font-weight: 600; }
.neg { color: #B3261E; } .pos { color: #005A8C; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .9em;
  background: var(--soft); padding: 0 3px; border-radius: 4px; overflow-wrap: anywhere; }
pre { overflow-x: auto; background: var(--soft); padding: 12px; border-radius: 6px;
  font-size: 12.5px; line-height: 1.4; }
details { margin: 8px 0; } summary { cursor: pointer; color: var(--accent); }
.warn { color: var(--warn); } .muted { color: var(--muted); }
ul.plain { margin: 4px 0; padding-left: 20px; }
.kv th { text-align: left; width: 14em; } .kv td { text-align: left; }
.query-card { border: 1px solid var(--line); border-left: 5px solid var(--line);
  border-radius: 6px; padding: 10px 12px; margin: 10px 0; break-inside: avoid; }
.query-card.loss { border-left-color: #D55E00; } .query-card.gain { border-left-color: #0072B2; }
.query-card .delta { font-variant-numeric: tabular-nums; font-weight: 700; margin-right: 6px; }
.query-card .qtext { font-weight: 600; overflow-wrap: anywhere; }
.lists { display: grid; grid-template-columns: repeat(auto-fit, minmax(min(100%, 300px), 1fr));
  gap: 8px 18px; margin-top: 6px; }
.lists h5 { margin: 4px 0 2px; font-size: 13px; color: var(--muted); }
.lists ol { margin: 0; padding-left: 22px; font-size: 13px; }
.lists li { margin: 2px 0; overflow-wrap: anywhere; }
.grade { display: inline-block; min-width: 5.4em; font-size: 11.5px; padding: 0 5px;
  border-radius: 4px; margin-right: 4px; text-align: center; border: 1px solid var(--line); }
.grade.rel { background: #DDF4E4; border-color: #8FD1A5; }
.grade.non { background: #F1F3F5; }
.grade.unj { background: #fff; border-style: dashed; color: var(--muted); }
footer { color: var(--muted); font-size: 13px; border-top: 1px solid var(--line);
  padding: 12px 0 28px; margin-top: 36px; }
@media (max-width: 640px) { .wrap { padding: 0 12px; } nav.toc ol { columns: 1; } }
@media print {
  @page { size: A4; margin: 12mm; }
  body { font-size: 10.5pt; }
  .wrap { max-width: none; padding: 0; }
  header.top { background: none; }
  nav.toc { display: none; }
  a { color: inherit; text-decoration: none; }
  .badge, tr.failed td, .grade { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
  .grid { display: block; }
  figure.chart { margin: 0 0 8px; border: none; padding: 4px 0; }
  .table-wrap { overflow: visible; }
  table { font-size: 8pt; width: 100%; }
  th, td { padding: 2px 4px; }
  details > summary { display: none; }
  h2, h3 { break-after: avoid; }
  figure.chart, .query-card, tr { break-inside: avoid; }
}
"""


@dataclass(frozen=True)
class Section:
    """One part of a page: its anchor, its heading (also the contents entry) and its HTML."""

    id: str
    title: str
    body: str


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def num(v: float | None, signed: bool = False, digits: int = 4) -> str:
    """A number on the page: a missing value or NaN is an en dash."""
    return number(v, signed, digits, medium=HTML)


def signed_num(v: float | None) -> str:
    """A signed number, coloured by its sign (text stays readable without the colour)."""
    if v is None:
        return "–"
    cls = "neg" if v < 0 else "pos" if v > 0 else ""
    return f'<span class="{cls}">{num(v, signed=True)}</span>'


def data_table(
    head: Sequence[str],
    rows: Sequence[Sequence[str]],
    left: Collection[int] = (0,),
    row_classes: Sequence[str] | None = None,
    cls: str = "",
) -> str:
    """A table of HTML cells (escaped by the caller); columns in ``left`` align left, the others
    (numbers) right."""

    def align(i: int) -> str:
        return ' class="l"' if i in left else ""

    th = "".join(f"<th{align(i)}>{h}</th>" for i, h in enumerate(head))
    body = "".join(
        f'<tr class="{esc(row_classes[j]) if row_classes else ""}">'
        + "".join(f"<td{align(i)}>{c}</td>" for i, c in enumerate(r))
        + "</tr>"
        for j, r in enumerate(rows)
    )
    return _wrap_table(f"<thead><tr>{th}</tr></thead><tbody>{body}</tbody>", cls)


def _wrap_table(inner: str, cls: str = "") -> str:
    return f'<div class="table-wrap"><table class="{cls}">{inner}</table></div>'


def changes_list(changed: dict[str, Change]) -> str:
    """Changed settings as list items: key, before, after."""
    return "".join(
        f"<li><code>{esc(k)}</code>: {code_value(v.baseline)} → {code_value(v.current)}</li>"
        for k, v in changed.items()
    )


def long_list(items: Sequence[str], shown: int = 8) -> str:
    """A bullet list showing its first ``shown`` items; the rest behind a disclosure."""
    head = "".join(f"<li>{esc(x)}</li>" for x in items[:shown])
    rest = "".join(f"<li>{esc(x)}</li>" for x in items[shown:])
    more = (
        f"<details><summary>{len(items) - shown} more</summary><ul class='plain'>{rest}</ul>"
        "</details>"
        if rest
        else ""
    )
    return f"<ul class='plain'>{head}</ul>{more}"


def kv_table(rows: Sequence[tuple[str, str]]) -> str:
    body = "".join(f"<tr><th>{esc(k)}</th><td>{v}</td></tr>" for k, v in rows)
    return f'<div class="table-wrap"><table class="kv"><tbody>{body}</tbody></table></div>'


def code_value(v: Any) -> str:
    """A config or fingerprint value as escaped inline code."""
    text = v if isinstance(v, str) and v else json.dumps(v, sort_keys=True, default=str)
    return f"<code>{esc(text)}</code>"


def page(title: str, badge: str, meta: str, sections: Sequence[Section], kind: str) -> str:
    """The whole document: header with the verdict badge, contents, sections, footer."""
    toc = "".join(f'<li><a href="#{esc(s.id)}">{esc(s.title)}</a></li>' for s in sections)
    body = "".join(
        f'<section id="{esc(s.id)}"><h2>{esc(s.title)}</h2>{s.body}</section>' for s in sections
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; img-src data:\">"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="color-scheme" content="light">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head>"
        f'<body class="{esc(kind)}"><header class="top"><div class="wrap">'
        f"<h1>{esc(title)}</h1>{badge}{meta}"
        f'<nav class="toc" aria-label="Contents"><strong>Contents</strong><ol>{toc}</ol></nav>'
        f'</div></header><main class="wrap">{body}</main>'
        '<footer class="wrap">Written by evalret. Self-contained: no script, nothing loaded '
        "from the network. Hover a bar, point or label for its exact values.</footer>"
        "</body></html>\n"
    )


def verdict_badge(state: str, text: str) -> str:
    return (
        f'<span id="verdict" class="badge {esc(state)}" data-verdict="{esc(state)}" '
        f'role="status">{esc(text)}</span>'
    )
