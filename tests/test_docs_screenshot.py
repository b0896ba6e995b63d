"""The documentation site at 1280 px, in headless Chromium (the browser of test_report_html.py):
every page of the built site is opened at a 1280 x 800 viewport and no code block may be cut off
(a `pre > code` wider than its box: `scrollWidth > clientWidth`), nor may the copy button lie over
any of a block's text. A block that fails is fixed by shortening its lines or, for terminal output
and JSON Lines, by the wrapping of docs/assets/extra.css. Screenshots of the home page and of every
page that fails are kept in test-artifacts/docs-site/."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO
from helpers import build_site

ARTIFACTS = REPO / "test-artifacts" / "docs-site"
VIEWPORT = {"width": 1280, "height": 800}

# Material's script adds a copy button to every code block once the page is loaded
# (.md-code__button in Material 9.7 and later, .md-clipboard before)
COPY_BUTTON = ".md-code__button, .md-clipboard"
COPY_BUTTONS_ADDED = """(button) => [...document.querySelectorAll("pre > code")].every(
  (code) => !!code.parentElement.querySelector(button))"""

# Run in the page: each visible code block that is cut off, and each one whose copy button covers
# some of its text (the boxes of the text's line fragments against the button's box).
MEASURE = """(copyButton) => {
  const found = [];
  const label = (code) => (code.textContent || "").trim().split("\\n")[0].slice(0, 80);
  for (const code of document.querySelectorAll("pre > code")) {
    if (code.clientWidth === 0) continue;  // in a closed details block or a hidden tab
    if (code.scrollWidth > code.clientWidth + 1) {
      found.push(`cut off (${code.scrollWidth} > ${code.clientWidth} px): ${label(code)}`);
    }
    const button = code.parentElement.querySelector(copyButton);
    if (!button) continue;
    const b = button.getBoundingClientRect();
    const walker = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
    let covered = false;
    while (!covered && walker.nextNode()) {
      // the words only: a wrapped line's trailing space may hang into the gutter, unseen
      const text = walker.currentNode;
      const words = /\\S+/g;
      const range = document.createRange();
      for (let m = words.exec(text.data); m && !covered; m = words.exec(text.data)) {
        range.setStart(text, m.index);
        range.setEnd(text, m.index + m[0].length);
        for (const r of range.getClientRects()) {
          if (r.left < b.right && r.right > b.left && r.top < b.bottom && r.bottom > b.top) {
            covered = true;
            break;
          }
        }
      }
    }
    if (covered) found.push(`copy button over the text: ${label(code)}`);
  }
  return found;
}"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built strict into a temporary directory (never into the repository)."""
    out = tmp_path_factory.mktemp("site")
    build_site(out)
    return out


def site_pages(site: Path) -> list[Path]:
    """Every page of the site (the search page and 404 have no content of ours)."""
    pages = sorted(site.rglob("index.html"))
    return [p for p in pages if p.parent.name != "search"]


def test_no_code_block_is_cut_off_at_1280_px(site: Path, browser: Any) -> None:
    pages = site_pages(site)
    assert len(pages) > 40 and (site / "glossary" / "index.html") in pages
    shutil.rmtree(ARTIFACTS, ignore_errors=True)  # the screenshots of this run only
    ARTIFACTS.mkdir(parents=True)
    page = browser.new_page(viewport=VIEWPORT)
    problems: dict[str, list[str]] = {}
    blocks = 0
    try:
        for path in pages:
            page.goto(path.as_uri(), wait_until="load")
            page.wait_for_function(COPY_BUTTONS_ADDED, arg=COPY_BUTTON)
            blocks += page.locator("pre > code").count()
            found = page.evaluate(MEASURE, COPY_BUTTON)
            where = path.parent.relative_to(site)
            name = where.as_posix() if where.parts else "home"
            if found:
                problems[name] = found
            if found or name == "home":
                shot = ARTIFACTS / f"{name.replace('/', '_')}.png"
                page.screenshot(path=str(shot), full_page=True)
    finally:
        page.close()
    assert blocks > 100, f"only {blocks} code blocks found: is the site built whole?"
    listed = "\n".join(f"{name}:\n  " + "\n  ".join(found) for name, found in problems.items())
    assert not problems, f"code blocks cut off at 1280 px (screenshots in {ARTIFACTS}):\n{listed}"


def test_the_check_sees_a_block_that_is_cut_off(site: Path, browser: Any, tmp_path: Path) -> None:
    """The measure finds what it must: a page of the built site with one over-long line in a
    block that does not wrap (bash) is reported, cut off and under the copy button; the same line
    in a console block, which wraps, is not."""
    html = (site / "glossary" / "index.html").read_text(encoding="utf-8")
    long_line = "evalret run " + " ".join(f"--set key{i}=value" for i in range(30))

    def block(language: str) -> str:
        return (
            f'<div class="language-{language} highlight"><pre><span></span>'
            f"<code>{long_line}</code></pre></div>"
        )

    marker = '<h1 id="glossary">'
    assert marker in html
    page = browser.new_page(viewport=VIEWPORT)
    try:
        for language, cut_off in (("bash", True), ("console", False)):
            probe = site / "glossary" / f"probe-{language}.html"
            probe.write_text(html.replace(marker, block(language) + marker), encoding="utf-8")
            page.goto(probe.as_uri(), wait_until="load")
            page.wait_for_function(COPY_BUTTONS_ADDED, arg=COPY_BUTTON)
            found = page.evaluate(MEASURE, COPY_BUTTON)
            assert any("cut off" in f for f in found) is cut_off, (language, found)
            assert any("copy button" in f for f in found) is cut_off, (language, found)
    finally:
        page.close()
