"""The fast lane (tests/conftest.py): a session that selects no test of a lane fails the test that
loads that lane's libraries unmarked, and a test file that imports them while being collected; a
marked test, or one using a fixture declared with helpers.marks_its_users, may load them, and
``-m`` deselects it. Run in a child pytest on files written here, with this conftest as a plug-in
(the lane's library here is playwright's top-level package, which imports in a millisecond)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from conftest import REPO

TESTS = REPO / "tests"

UNMARKED = """
def test_unmarked_loads_the_browser_library():
    import playwright  # noqa: F401
"""

MARKED = """
import pytest

from helpers import marks_its_users


@pytest.fixture
@marks_its_users("browser")
def page():
    import playwright

    return playwright


def test_through_a_marked_fixture(page):
    assert page.__name__ == "playwright"


@pytest.mark.browser
def test_marked():
    import playwright

    assert playwright.__name__ == "playwright"


def test_plain():
    assert True
"""

AT_COLLECTION = """
import playwright  # noqa: F401


def test_anything():
    assert True
"""


def pytest_in(directory: Path, *args: str) -> tuple[int, str]:
    """A child ``pytest ARGS`` in ``directory`` with the project's markers and conftest."""
    settings = ["-c", str(REPO / "pyproject.toml"), "--rootdir", str(directory)]
    plugins = ["-p", "conftest", "-p", "no:cacheprovider"]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *settings, *plugins, "-q", *args],
        cwd=directory,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), str(REPO / "src")])},
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done.returncode, done.stdout + done.stderr


def write(directory: Path, name: str, text: str) -> str:
    (directory / name).write_text(textwrap.dedent(text))
    return name


def test_an_unmarked_test_that_loads_a_lane_library_fails(tmp_path: Path) -> None:
    name = write(tmp_path, "test_unmarked.py", UNMARKED)
    code, out = pytest_in(tmp_path, name)
    assert code == 1, out
    assert "1 error" in out, out  # at the test's teardown: the test body itself passed
    assert "loaded playwright but is not marked browser" in out, out


def test_marked_tests_and_fixtures_may_load_it_and_the_fast_lane_deselects_them(
    tmp_path: Path,
) -> None:
    name = write(tmp_path, "test_marked.py", MARKED)
    code, out = pytest_in(tmp_path, name)
    assert code == 0 and "3 passed" in out, out
    code, out = pytest_in(tmp_path, name, "-m", "not (model or browser or postgres or ray)")
    assert code == 0 and "1 passed, 2 deselected" in out, out


def test_a_file_that_imports_a_lane_library_at_collection_is_refused(tmp_path: Path) -> None:
    name = write(tmp_path, "test_collected.py", AT_COLLECTION)
    code, out = pytest_in(tmp_path, name)
    assert code != 0 and "1 passed" not in out, out
    assert "collecting the tests imported playwright" in out, out


WORKERS = """
import json
import os
from pathlib import Path

import pytest


@pytest.fixture
def scifact_path(tmp_path):  # the name groups its users (tests/conftest.py), not the data
    return tmp_path


def record(name):
    seen = {"worker": os.environ["PYTEST_XDIST_WORKER"], "cache": os.environ["EVALRET_CACHE_DIR"]}
    Path(os.environ["RECORD_DIR"], name).write_text(json.dumps(seen))


@pytest.mark.parametrize("n", range(6))
def test_reads_scifact(scifact_path, n):
    record(f"scifact-{n}")


@pytest.mark.parametrize("n", range(6))
def test_other(n):
    record(f"other-{n}")
"""


def test_xdist_workers_share_one_cache_and_the_scifact_tests_run_on_one_worker(
    tmp_path: Path,
) -> None:
    """Under scripts/test.sh's ``-n 2 --dist loadgroup`` both workers see the controller's fresh
    embedding cache (not the one this session's conftest made), and every test using the
    ``scifact_path`` fixture runs on the same worker."""
    name = write(tmp_path, "test_workers.py", WORKERS)
    record = tmp_path / "record"
    record.mkdir()
    os.environ["RECORD_DIR"] = str(record)
    try:
        code, out = pytest_in(tmp_path, name, "-n", "2", "--dist", "loadgroup")
    finally:
        del os.environ["RECORD_DIR"]
    assert code == 0 and "12 passed" in out, out
    seen = {p.name: json.loads(p.read_text()) for p in record.iterdir()}
    assert len({s["worker"] for s in seen.values()}) == 2, seen  # the work was shared
    assert len({s["cache"] for s in seen.values()}) == 1, seen
    assert next(iter(seen.values()))["cache"] != os.environ["EVALRET_CACHE_DIR"]
    assert len({s["worker"] for n, s in seen.items() if n.startswith("scifact")}) == 1, seen


def test_ci_runs_the_test_command_of_the_readme() -> None:
    """README.md (and the site's home page) give one command to set up and run the tests, and
    .ci/run runs its parts, in order, each as a line of its own (lint goes between them)."""
    commands = []
    for page in ("README.md", "docs/index.md"):
        text = (REPO / page).read_text(encoding="utf-8")
        block = text.split("Set up and run the tests", 1)[1].split("```bash\n", 1)[1]
        commands.append(block.split("\n```", 1)[0].strip())
    assert commands[0] == commands[1], commands
    lines = [line.strip() for line in (REPO / ".ci" / "run").read_text().splitlines()]
    at = [lines.index(part) for part in commands[0].split(" && ")]
    assert at == sorted(at), (commands[0], at)


READS_SCIFACT = """
def test_reads_scifact(scifact_path):
    assert (scifact_path / "corpus.jsonl").exists()


def test_plain():
    assert True
"""


def test_without_shared_the_data_tests_skip_outside_ci_and_fail_in_ci(tmp_path: Path) -> None:
    """A checkout with no ../shared beside it (conftest.py and helpers.py copied into
    clone/tests): a test reading SciFact carries the ``data`` marker (``-m "not data"`` deselects
    it); without ``CI`` it is skipped, the reason naming ../shared; with ``CI=true`` it errs,
    as a skip there would hide that CI lacks its data."""
    tests = tmp_path / "clone" / "tests"
    tests.mkdir(parents=True)
    for name in ("conftest.py", "helpers.py"):
        (tests / name).write_bytes((TESTS / name).read_bytes())
    name = write(tests, "test_data.py", READS_SCIFACT)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    path = os.pathsep.join([str(tests), str(REPO / "src")])

    def child(*args: str, ci: bool = False) -> tuple[int, str]:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-c",
                str(REPO / "pyproject.toml"),
                "--rootdir",
                str(tests),
                "-p",
                "no:cacheprovider",
                "-q",
                "-rs",
                name,
                *args,
            ],
            cwd=tests,
            env={**env, "PYTHONPATH": path, **({"CI": "true"} if ci else {})},
            capture_output=True,
            text=True,
            timeout=300,
        )
        return done.returncode, done.stdout + done.stderr

    code, out = child()
    assert code == 0 and "1 passed, 1 skipped" in out, out
    assert "../shared must sit beside the checkout" in out and "skipped outside CI" in out, out
    code, out = child("-m", "not data")
    assert code == 0 and "1 passed, 1 deselected" in out, out
    code, out = child(ci=True)
    assert code == 1 and "1 passed, 1 error" in out, out  # failed in the fixture: an error
    assert "SciFact not found" in out, out
