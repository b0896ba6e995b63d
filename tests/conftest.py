"""Shared fixtures and Hypothesis strategies."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = os.environ.get("EVALRET_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--no-first-run",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-default-browser-check",
]

REPO = Path(__file__).resolve().parent.parent
SCIFACT = (REPO.parent / "shared" / "data" / "scifact").resolve()
DEMO = REPO / "golden_sets" / "demo"

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# a fresh embedding cache for the test session: no test reads vectors a developer left behind
os.environ["EVALRET_CACHE_DIR"] = tempfile.mkdtemp(prefix="evalret-test-cache-")


@pytest.fixture(scope="session")
def scifact_path() -> Path:
    """The shared BEIR SciFact collection (CI has ../shared beside the checkout)."""
    if not (SCIFACT / "corpus.jsonl").exists():
        pytest.fail(f"SciFact not found at {SCIFACT}: ../shared must sit beside the checkout")
    return SCIFACT


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's Chromium, headless, no sandbox, GPU and background networking off, a fresh
    profile (Playwright's temporary user-data-dir). Missing Chromium fails: CI must have it."""
    if not Path(CHROMIUM).is_file():
        pytest.fail(
            f"Chromium not found at {CHROMIUM}: `bash scripts/setup.sh --test` installs Debian's "
            "chromium package (or set EVALRET_CHROMIUM to a Chromium binary)"
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS, chromium_sandbox=False
        )
        yield chromium
        chromium.close()
