"""The documentation site builds: `mkdocs build --strict` with mkdocs.yml's validation fails on a
link to a missing page or heading and on a page left out of the nav; README.md stays a short
entrance (at most 150 lines) whose links all lead somewhere."""

from __future__ import annotations

import re
from pathlib import Path

from helpers import build_site

REPO = Path(__file__).resolve().parents[1]
README_MAX_LINES = 150


def test_readme_is_short_and_its_links_resolve() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= README_MAX_LINES
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    local = [t for t in targets if not re.match(r"[a-z]+://", t)]
    assert local, "README.md links into the documentation"
    missing = [t for t in local if not (REPO / t).exists()]
    # the generated reference pages are written by tests/test_docs_generated.py's generator
    assert missing == [], f"README.md links to missing files: {missing}"


def test_mkdocs_build_strict(tmp_path: Path) -> None:
    """The site builds with no warning (strict): every link and anchor resolves, every page is
    in the nav. Built into a temporary directory, never into the repository."""
    build_site(tmp_path / "site")
    assert (tmp_path / "site" / "tutorial" / "first-gate" / "index.html").is_file()
