"""Take the screenshot of report.html shown in README.md and the tutorial
(docs/assets/report-html.png): the top of the page of the tutorial's failing run, in Debian's
Chromium driven by Playwright (pip install playwright; no browser is downloaded).

    evalret run -c configs/default.yaml --save-baseline /tmp/t/base.json --out /tmp/t/base
    evalret run -c configs/default.yaml --baseline /tmp/t/base.json --dimension 32 --out /tmp/t/try
    python scripts/report_screenshot.py /tmp/t/try/report.html docs/assets/report-html.png
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

CHROMIUM = os.environ.get("EVALRET_CHROMIUM", "/usr/bin/chromium")


def main(page_path: str, png: str) -> None:
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=["--no-sandbox", "--disable-gpu"],
            chromium_sandbox=False,
        )
        page = browser.new_page(viewport={"width": 1100, "height": 600})
        page.goto(Path(page_path).resolve().as_uri())
        page.screenshot(path=png)
        browser.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
