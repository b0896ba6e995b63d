"""The demo everywhere (issue 39): the demo golden set is package data (one copy in the repository,
golden_sets/demo links to it) and the built-in default; `evalret run` without --config reads
./evalret.yaml when present; a missing baseline prints the command that saves it, which runs as
pasted; messages point to pages of the documentation site, never to the README. The wheel itself
is built, installed and run in an empty directory by scripts/check_package.sh."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

from conftest import DEMO, REPO
from evalret.data.config import DEMO_GOLDEN_SET
from evalret.errors import DOCS_URL
from evalret.pipeline.configs import config_or_default, run_config
from helpers import HashEmbedder, invoke, make_set

PACKAGED = REPO / "src" / "evalret" / "demo"


def test_the_demo_is_one_copy_in_the_package() -> None:
    """The default golden set is the package's demo/, which the wheel carries (package data);
    golden_sets/demo is a link to it, not a second copy."""
    assert PACKAGED.resolve() == DEMO_GOLDEN_SET
    assert DEMO.is_symlink() and DEMO.resolve() == PACKAGED.resolve()
    assert {"corpus.jsonl", "queries.jsonl"} <= {p.name for p in PACKAGED.iterdir()}
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert "demo/*" in pyproject["tool"]["setuptools"]["package-data"]["evalret"]


def test_the_script_regenerates_the_demo_byte_for_byte(tmp_path: Path) -> None:
    """scripts/make_demo_golden_set.py writes the packaged files again, byte for byte, and by
    default into the package (the one copy)."""
    script = REPO / "scripts" / "make_demo_golden_set.py"
    subprocess.run([sys.executable, script, "--out", tmp_path], check=True, capture_output=True)
    for name in ("corpus.jsonl", "queries.jsonl"):
        assert (tmp_path / name).read_bytes() == (PACKAGED / name).read_bytes(), name
    assert '/ "src" / "evalret" / "demo"' in script.read_text(encoding="utf-8")


def test_without_a_config_the_built_in_defaults_read_the_packaged_demo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In an empty directory `evalret run` has no config to read: the built-in defaults, whose
    golden set is the packaged demo (not ./golden_sets/demo)."""
    monkeypatch.chdir(tmp_path)
    assert config_or_default(None) is None
    assert run_config(None).golden_set.path == DEMO_GOLDEN_SET
    code, out = invoke("validate", "--json", str(DEMO_GOLDEN_SET))
    assert code == 0, out


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project directory as `evalret init` leaves it (evalret.yaml naming a golden set and
    gate.baseline baselines/evalret.json, not saved yet), the working directory; embedded by
    HashEmbedder (these tests are about the command line, not vectors)."""
    monkeypatch.setattr("evalret.engines.embedders.make_embedder", lambda *_: HashEmbedder())
    make_set(tmp_path / "gs")
    (tmp_path / "evalret.yaml").write_text(
        "golden_set: {path: gs}\n"
        f"cache: {{dir: {tmp_path / 'cache'}}}\n"
        "indexes: {hnsw: {enabled: false}}\nhealth: {enabled: false}\n"
        "gate:\n  baseline: baselines/evalret.json\n"
        "  thresholds: {recall@10: {max_drop: 0.01}}\n"
        "output: {dir: reports}\n"
    )
    monkeypatch.chdir(tmp_path)
    return tmp_path


def pasted(output: str) -> list[str]:
    """The `evalret ...` line an error printed, as the shell splits it (without "evalret")."""
    lines = [line.strip() for line in output.splitlines() if line.strip().startswith("evalret ")]
    assert len(lines) == 1, output
    words = shlex.split(lines[0])
    assert words[0] == "evalret"
    return words[1:]


def test_run_without_config_reads_evalret_yaml(project: Path) -> None:
    """`evalret run` without --config in a directory with evalret.yaml runs that config: its
    golden set, its output.dir, its gate.baseline (missing here: exit 2 naming it)."""
    assert config_or_default(None) == Path("evalret.yaml")
    code, out = invoke("run", "--no-progress", "--save-baseline", "baselines/evalret.json")
    assert code == 0, out
    report = json.loads((project / "reports" / "report.json").read_text())
    assert report["config"]["golden_set"]["path"] == str(project / "gs")
    assert (project / "baselines" / "evalret.json").is_file()
    code, out = invoke("run", "--no-progress")
    assert code == 0, out
    assert report_baseline(project) == str(project / "baselines" / "evalret.json")


def report_baseline(project: Path) -> str:
    return str(json.loads((project / "reports" / "report.json").read_text())["gate"]["baseline"])


@pytest.mark.parametrize("given", [[], ["--config", "evalret.yaml"]])
def test_a_missing_baseline_prints_the_run_that_saves_it_and_it_runs_as_pasted(
    project: Path, given: list[str]
) -> None:
    """A run whose gate.baseline does not exist exits 2 and prints its own command line with
    --save-baseline (its config and its --set and --dimension, quoted); pasted, that line exits 0
    and saves the baseline; the first command then gates against it."""
    first = [*given, "--set", "bootstrap.samples=100", "--set", "output.dir=my reports"]
    code, out = invoke("run", "--no-progress", *first)
    assert code == 2, out
    assert "baseline baselines/evalret.json (gate.baseline) does not exist" in out
    words = pasted(out)
    assert words == [
        "run",
        "--config",
        "evalret.yaml",
        "--set",
        "bootstrap.samples=100",
        "--set",
        "output.dir=my reports",
        "--save-baseline",
        "baselines/evalret.json",
    ]
    code, out = invoke(*words, "--no-progress")
    assert code == 0, out
    assert (project / "baselines" / "evalret.json").is_file()
    code, out = invoke("run", "--no-progress", *first)
    assert code == 0, out
    gate = json.loads((project / "my reports" / "report.json").read_text())["gate"]
    assert gate["baseline"] == str(project / "baselines" / "evalret.json")


def test_a_missing_given_baseline_is_saved_where_it_was_given(project: Path) -> None:
    """--baseline b.json that does not exist: the printed line saves b.json (naming it as the
    baseline too, so that gate.baseline is not read instead), with --sample and --dimension."""
    code, out = invoke("run", "--no-progress", "--baseline", "b.json", "--sample", "4")
    assert code == 2, out
    assert "baseline b.json (--baseline) does not exist" in out
    words = pasted(out)
    assert words[-6:] == ["--sample", "4", "--baseline", "b.json", "--save-baseline", "b.json"]
    code, out = invoke(*words, "--no-progress")
    assert code == 0, out
    code, out = invoke("run", "--no-progress", "--baseline", "b.json", "--sample", "4")
    assert code == 0, out


def test_a_missing_score_baseline_says_a_baseline_is_a_saved_report(project: Path) -> None:
    """`evalret score --baseline X` with X missing: exit 2, saying how to make X."""
    run = project / "run.trec"
    run.write_text("q1 Q0 d1 1 1.0 r\n")
    code, out = invoke("score", "gs", str(run), "--baseline", "nope.json", "--no-progress")
    assert code == 2, out
    assert "baseline nope.json (--baseline) does not exist" in out
    assert "cp reports/report.json nope.json" in out


# --- messages point to the documentation site ---------------------------------------------------

DOCS_PAGE_CALL = re.compile(
    r"docs_page\(\s*['\"]([^'\"]+)['\"](?:,\s*([A-Z_]+|['\"][^'\"]*['\"]))?"
)


def heading_anchors(page: Path) -> set[str]:
    """The anchors of a page's headings as MkDocs' toc makes them (lower case, words joined by
    hyphens, punctuation dropped)."""
    anchors = set()
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("#") and " " in line:
            text = line.lstrip("#").strip().lower()
            text = re.sub(r"[^\w\s-]", "", text)
            anchors.add(re.sub(r"[\s]+", "-", text).strip("-"))
    return anchors


def test_messages_name_docs_pages_that_exist_never_the_readme() -> None:
    """No message of the package says "see the README": each points to a page of the site
    (errors.docs_page), and every page and section so named exists under docs/."""
    sources = [
        *(REPO / "src" / "evalret").rglob("*.py"),
        REPO / "src/evalret/templates/evalret.yaml",
    ]
    constants = {}
    for path in sources:
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"see the README|evalret README|README,", text), path
        constants.update(re.findall(r'^([A-Z_]+) = "([^"]*)"', text, re.MULTILINE))
    named = []
    for path in sources:
        for page, section in DOCS_PAGE_CALL.findall(path.read_text(encoding="utf-8")):
            named.append((page, constants.get(section, section.strip("'\""))))
    assert ("how-to/annotate-and-judgments", "judging-with-an-llm") in named
    for page, section in named:
        doc = REPO / "docs" / f"{page}.md"
        assert doc.is_file(), page
        assert not section or section in heading_anchors(doc), (page, section)
    template = (REPO / "src/evalret/templates/evalret.yaml").read_text(encoding="utf-8")
    for url in re.findall(re.escape(DOCS_URL) + r"([\w/-]+)/", template):
        assert (REPO / "docs" / f"{url}.md").is_file(), url
