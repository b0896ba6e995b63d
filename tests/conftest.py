"""Shared fixtures and Hypothesis strategies."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

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
