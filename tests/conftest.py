"""Shared fixtures and Hypothesis strategies."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from helpers import LANE_MARKS, marks_its_users

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

# The fast lane, `pytest -m "not (model or browser or postgres or ray)"`: each marker names the
# modules only its tests may load. A session none of whose tests carries a marker must not import
# that marker's modules: a test that does fails (mark it, or the fixture that loads them, with
# helpers.marks_its_users), and so does a test module that imports them while being collected.
LANES = {
    "model": ("torch", "sentence_transformers", "transformers", "onnxruntime", "openvino", "onnx"),
    "browser": ("playwright",),
    "postgres": ("pgserver",),
    "ray": ("ray",),
}
FORBIDDEN = pytest.StashKey[dict[str, str]]()

# pytest-xdist's workers get COLUMNS=80 and LINES=24 from execnet; without them evalret's output,
# which is not a terminal here, is as wide as in a serial run (200 columns)
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.pop("COLUMNS", None)
    os.environ.pop("LINES", None)
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def pytest_configure(config: pytest.Config) -> None:
    """A fresh embedding cache for the test session: no test reads vectors a developer left
    behind. One for the whole session: pytest-xdist's workers (``config.workerinput``) are
    started after this ran in the controller and keep the one they inherit, so a collection is
    embedded once, not once per worker (the cache is content-addressed and written shard by
    shard, atomically: tests/test_cache.py::test_two_concurrent_runs_share_one_cache)."""
    if not hasattr(config, "workerinput"):
        # scripts/test.sh hands the heavy lanes a fresh cache it filled with SciFact beside the
        # fast lane; it is this session's alone (a pytest a test starts makes its own)
        given = os.environ.pop("EVALRET_TEST_CACHE_DIR", None)
        os.environ["EVALRET_CACHE_DIR"] = given or tempfile.mkdtemp(prefix="evalret-test-cache-")


# Hypothesis's profiles (docs/how-to/development.md): "ci" (where $CI is set) a fixed budget and
# fixed examples, "dev" (elsewhere) a fresh draw each run, "hunt" many more; EVALRET_HYPOTHESIS
# names one. No deadline in any: a loaded machine is no failure. A test's own @settings (its own
# max_examples) still counts.
settings.register_profile("ci", max_examples=100, derandomize=True, database=None, deadline=None)
settings.register_profile("dev", max_examples=100, deadline=None)
settings.register_profile("hunt", max_examples=5000, deadline=None)
settings.load_profile(
    os.environ.get("EVALRET_HYPOTHESIS") or ("ci" if os.environ.get("CI") else "dev")
)


@pytest.fixture(scope="session")
@marks_its_users("data")
def scifact_path() -> Path:
    """The shared BEIR SciFact collection (CI has ../shared beside the checkout); its users carry
    the ``data`` marker. Missing, its tests fail in CI (``CI`` set: a skip there would hide the
    failure) and are skipped elsewhere, the reason naming ../shared."""
    if not (SCIFACT / "corpus.jsonl").exists():
        missing = f"SciFact not found at {SCIFACT}: ../shared must sit beside the checkout"
        if os.environ.get("CI"):
            pytest.fail(missing)
        pytest.skip(f"{missing} (skipped outside CI; with CI set it fails)")
    return SCIFACT


@pytest.fixture(scope="module")
@marks_its_users("browser")
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


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(
    config: pytest.Config, items: list[pytest.Item]
) -> Iterator[None]:
    """A test using a fixture declared with helpers.marks_its_users carries its marks (first, so
    that ``-m`` deselects by them). The tests that read SciFact form one xdist group: under
    ``--dist loadgroup`` (scripts/test.sh) they run on one worker, which embeds the collection
    once into the session's embedding cache."""
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        for definitions in info.name2fixturedefs.values() if info else ():
            for mark in getattr(definitions[-1].func, LANE_MARKS, ()):
                item.add_marker(mark)
        if info and "scifact_path" in info.name2fixturedefs:
            item.add_marker(pytest.mark.xdist_group("scifact"))
    yield
    if getattr(config.option, "loadgroup", False):  # an xdist worker under --dist loadgroup
        _name_the_groups(items)


def _name_the_groups(items: list[pytest.Item]) -> None:
    """pytest-xdist tells its controller a test's group as a ``@GROUP`` suffix of the test's id,
    written to ``item._nodeid``, which pytest 9.2 no longer reads (pytest-xdist issue 1386: the
    groups are then silently ignored). Where the suffix did not take, it is written to the id
    pytest reads. tests/test_lanes.py checks that the group runs on one worker."""
    for item in items:
        marks = item.iter_markers("xdist_group")
        groups = sorted(
            {str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in marks}
        )
        suffix = f"@{'_'.join(groups)}"
        if groups and not item.nodeid.endswith(suffix):
            structured = getattr(item, "_id", None)
            if structured is not None and hasattr(structured, "parse"):
                item._id = type(structured).parse(item.nodeid + suffix)
            else:
                item._nodeid = item.nodeid + suffix


def pytest_collection_finish(session: pytest.Session) -> None:
    """The modules of every lane no selected test is marked for are forbidden from here on."""
    selected = {mark.name for item in session.items for mark in item.iter_markers()}
    forbidden = {
        module: lane
        for lane, modules in LANES.items()
        if lane not in selected
        for module in modules
    }
    session.stash[FORBIDDEN] = forbidden
    early = sorted(module for module in forbidden if module in sys.modules)
    if early:
        raise pytest.UsageError(
            f"collecting the tests imported {', '.join(early)}, which no selected test is marked "
            "for: import them inside the tests or fixtures that need them"
        )


@pytest.fixture(autouse=True)
def _stays_in_its_lane(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fails the test after which a forbidden module is loaded (once a module: the tests after it
    would only repeat the news)."""
    yield
    forbidden = request.session.stash.get(FORBIDDEN, {})
    loaded = sorted(module for module in forbidden if module in sys.modules)
    if loaded:
        lanes = sorted({forbidden.pop(module) for module in loaded})
        pytest.fail(
            f"this test loaded {', '.join(loaded)} but is not marked {' or '.join(lanes)}: mark "
            "the test, its module (pytestmark) or the fixture that loads them "
            "(helpers.marks_its_users)",
            pytrace=False,
        )
