"""report.html, one self-contained page for a run (``run_page``) or a comparison
(``compare_page``), and the document every evalret HTML page shares (``document``: also
trend.html and sweep.html). ``shared`` holds what both report pages draw.

Inline CSS and inline SVG (``evalret.report.svg``), no script, nothing fetched. Every text from a
golden set or a config is escaped.
"""

from evalret.report.html.compare_page import compare_html
from evalret.report.html.document import Section, page, slug
from evalret.report.html.run_page import run_html

__all__ = ["Section", "compare_html", "page", "run_html", "slug"]
