"""CLI tests through Typer's runner: bad input exits 2 naming file and line, and `evalret run`
with the real packaged model on the demo golden set prints both tables and writes the reports."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import DEMO, REPO
from evalret.cli import app
from evalret.config import load_config

runner = CliRunner()


def invoke(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.output


def write_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cfg.yaml"
    path.write_text(text)
    return path


def test_help_lists_run() -> None:
    """`evalret --help` documents the run command; --version prints the version."""
    code, out = invoke("--help")
    assert code == 0 and "run" in out
    code, out = invoke("--version")
    assert code == 0 and out.startswith("evalret ")


def test_bad_config_key_exits_2_with_line(tmp_path: Path) -> None:
    """An unknown config key: exit 2, message with file:line and the key path."""
    cfg = write_config(tmp_path, "model:\n  nmae: x\n")
    code, out = invoke("run", "--config", str(cfg), "--no-progress")
    assert code == 2
    assert f"{cfg}:2: model.nmae: unknown key" in out


@pytest.mark.parametrize(
    ("corpus", "queries", "where", "message"),
    [
        (
            '{"id": "d1", "text": "x"}\n{"id": "d1", "text": "y"}\n',
            '{"id": "q1", "text": "t", "relevant": ["d1"]}\n',
            "corpus.jsonl:2",
            "duplicate document id",
        ),
        (
            '{"id": "d1", "text": "x"}\n',
            '{"id": "q1", "text": "t", "relevant": ["d9"]}\n',
            "queries.jsonl:1",
            "judgment for unknown document 'd9'",
        ),
        (
            '{"id": "d1", "text": "x"}\n',
            '{"id": "q1", "relevant": ["d1"]}\n',
            "queries.jsonl:1",
            "text: Field required",
        ),
        (
            '{"id": "d1", "text": "x"}\n',
            '{"id": "q1", "text": "", "relevant": ["d1"]}\n',
            "queries.jsonl:1",
            "has no text",
        ),
        (
            '{"id": "d1", "text": "x"}\n{"id": "d2", "text": "x",}\n',
            '{"id": "q1", "text": "t", "relevant": ["d1"]}\n',
            "corpus.jsonl:2",
            "invalid JSON",
        ),
    ],
)
def test_malformed_golden_set_exits_2_naming_file_and_line(
    tmp_path: Path, corpus: str, queries: str, where: str, message: str
) -> None:
    """Each malformed file: exit 2 and a message naming the file and line."""
    gs = tmp_path / "gs"
    gs.mkdir()
    (gs / "corpus.jsonl").write_text(corpus)
    (gs / "queries.jsonl").write_text(queries)
    cfg = write_config(tmp_path, "golden_set:\n  path: gs\n")
    code, out = invoke("run", "-c", str(cfg), "--no-progress")
    assert code == 2, out
    assert f"{gs / where}" in out.replace("\n", "") or where in out
    assert message in out


def test_unloadable_model_exits_3(tmp_path: Path) -> None:
    """A model that cannot be loaded offline is a runtime failure: exit 3, not 1 or 2."""
    cfg = write_config(
        tmp_path, f"golden_set:\n  path: {DEMO}\nmodel:\n  name: {tmp_path / 'no-such-model'}\n"
    )
    code, out = invoke("run", "-c", str(cfg), "--no-progress")
    assert code == 3, out
    assert "cannot load model" in out


def test_default_config_file_equals_builtin_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    """configs/default.yaml states exactly what `evalret run` uses with no --config."""
    monkeypatch.chdir(REPO)
    assert load_config(REPO / "configs" / "default.yaml") == load_config(None)


def test_importing_the_cli_loads_no_heavy_library() -> None:
    """`evalret --help` stays fast: torch, sentence-transformers and faiss are not imported."""
    code = (
        "import sys, evalret.cli; "
        "print(sorted(m for m in ('torch','sentence_transformers','faiss','transformers') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str, Path]:
    """One real `evalret run` on the demo set with the packaged model."""
    out_dir = tmp_path_factory.mktemp("demo-report")
    result = runner.invoke(
        app,
        ["run", "-c", str(REPO / "configs" / "default.yaml"), "-o", str(out_dir), "--no-progress"],
    )
    return result.exit_code, result.output, out_dir


def test_demo_run_prints_tables_and_writes_reports(demo_run: tuple[int, str, Path]) -> None:
    """Both index tables, slices with counts, the ANN section, and the report files."""
    code, out, out_dir = demo_run
    assert code == 0, out
    for text in (
        "exact (faiss.IndexFlatIP)",
        "hnsw (faiss.IndexHNSWFlat)",
        "ANN: hnsw against exact",
        "ndcg@10",
        "head",
        "tail",
        "exact-match",
        "semantic",
        "report files:",
    ):
        assert text in out, text
    assert {p.name for p in out_dir.iterdir()} == {"report.json", "run.exact.trec", "run.hnsw.trec"}
    report = json.loads((out_dir / "report.json").read_text())
    ndcg = report["indexes"]["exact"]["slices"]["all"]["metrics"]["ndcg@10"]
    assert 0.3 < ndcg["value"] < 0.95, "the demo set must be neither trivial nor hopeless"
    assert ndcg["ci_low"] < ndcg["value"] < ndcg["ci_high"]
    assert report["fingerprint"]["model"]["weights_sha256"]


def test_demo_run_is_reproducible(demo_run: tuple[int, str, Path], tmp_path: Path) -> None:
    """A second run gives identical metrics and intervals."""
    _, _, first_dir = demo_run
    result = runner.invoke(
        app,
        ["run", "-c", str(REPO / "configs" / "default.yaml"), "-o", str(tmp_path), "--no-progress"],
    )
    assert result.exit_code == 0, result.output
    a = json.loads((first_dir / "report.json").read_text())
    b = json.loads((tmp_path / "report.json").read_text())
    for key in ("timings", "config"):
        a.pop(key), b.pop(key)
    assert a == b
    assert (first_dir / "run.exact.trec").read_text() == (tmp_path / "run.exact.trec").read_text()


def test_every_command_has_help_and_is_documented() -> None:
    """Each command has a help text and is shown in the README as `evalret <command>`."""
    import typer.main

    readme = (REPO / "README.md").read_text()
    group = typer.main.get_command(app)
    assert group.commands  # type: ignore[attr-defined]
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        assert command.help, name
        assert f"evalret {name}" in readme, name
