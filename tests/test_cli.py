"""CLI tests through Typer's runner: bad input exits 2 naming file and line, and `evalret run`
with the real packaged model on the demo golden set prints both tables and writes the reports."""

from __future__ import annotations

import contextlib
import json
import shutil
import stat
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from conftest import DEMO, REPO
from evalret.cli import app
from evalret.data.config import load_config
from evalret.data.goldenset import load_golden_set
from evalret.report.comment import GITHUB_LIMIT, MARKER
from evalret.report.escape import markdown
from helpers import (
    HashEmbedder,
    assert_report_matches_trec_eval,
    cranfield_like,
    invoke,
    make_set,
    marks_its_users,
    read_trec_run,
)
from test_atomic import immutable, private_null

ACTIONLINT = str(Path(sys.executable).parent / "actionlint")

runner = CliRunner()


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
            '{"id": "q1", "text": "t", "relevant": {"d1": 1000000000000000000000000000000}}\n',
            "queries.jsonl:1",
            "out of range",
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


@pytest.mark.model
def test_unloadable_model_exits_3(tmp_path: Path) -> None:
    """A model that cannot be loaded offline is a runtime failure: exit 3, not 1 or 2."""
    cfg = write_config(
        tmp_path, f"golden_set:\n  path: {DEMO}\nmodel:\n  name: {tmp_path / 'no-such-model'}\n"
    )
    code, out = invoke("run", "-c", str(cfg), "--no-progress")
    assert code == 3, out
    assert "cannot load model" in out


def test_default_config_file_equals_builtin_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    """configs/default.yaml states exactly what `evalret run` uses with no --config, but for one
    key: it builds the HNSW graph on one thread (the same graph every build, for the CI gate)
    where the built-in default uses all cores. (The settings are compared: where their code is
    looked for, ``Config.code_dir``, is the file's directory for one, the working directory for
    the other.)"""
    monkeypatch.chdir(REPO)
    stated = load_config(REPO / "configs" / "default.yaml")
    builtin = load_config(None)
    assert (stated.indexes.hnsw.threads, builtin.indexes.hnsw.threads) == (1, None)
    hnsw = builtin.indexes.hnsw.model_copy(update={"threads": 1})
    expected = builtin.model_copy(
        update={"indexes": builtin.indexes.model_copy(update={"hnsw": hnsw})}
    )
    assert stated.model_dump() == expected.model_dump()
    assert (stated.code_dir, builtin.code_dir) == (REPO / "configs", REPO)


def test_importing_the_cli_loads_no_heavy_library() -> None:
    """`evalret --help` stays fast: torch, sentence-transformers and faiss are not imported."""
    code = (
        "import sys, evalret.cli; "
        "print(sorted(m for m in ('torch','sentence_transformers','faiss','transformers') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_help_imports_neither_rich_nor_numpy() -> None:
    """`evalret --help` is typer (click) alone: rich (typer's rich help formatter pulls in
    markdown-it), numpy and pydantic load only in commands that use them."""
    code = (  # printed at exit: `python -m evalret` ends the process (cli_runtime._exit_now)
        "import atexit, sys, runpy; sys.argv = ['evalret', '--help']\n"
        "atexit.register(lambda: print(sorted(m for m in ('rich', 'numpy', 'pydantic', "
        "'typer.rich_utils') if m in sys.modules), file=sys.stderr))\n"
        "runpy.run_module('evalret', run_name='__main__')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "Gate a change:" in out.stdout and "Start here:" in out.stdout
    assert out.stderr.strip().splitlines()[-1] == "[]"


DEFAULT = str(REPO / "configs" / "default.yaml")


@dataclass(frozen=True)
class DemoRun:
    code: int
    output: str
    out_dir: Path
    baseline: Path


@pytest.fixture(scope="module")
@marks_its_users("model")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> DemoRun:
    """One real `evalret run` on the demo set with the packaged model, saved as a baseline."""
    out_dir = tmp_path_factory.mktemp("demo-report")
    baseline = out_dir.parent / "baselines" / "demo.json"
    code, output = invoke(
        "run", "-c", DEFAULT, "-o", str(out_dir), "--no-progress", "--save-baseline", str(baseline)
    )
    return DemoRun(code, output, out_dir, baseline)


def test_demo_run_prints_a_short_summary_and_writes_reports(demo_run: DemoRun) -> None:
    """By default: the verdict on the first line, one table of every index on `all`, the ANN and
    health lines and the files, in at most 60 lines; the per-slice tables are left out."""
    assert demo_run.code == 0, demo_run.output
    lines = demo_run.output.splitlines()
    assert lines[0].startswith("NO BASELINE: all 3 fixed checks pass (nothing compared)"), lines[0]
    assert len(lines) <= 60, len(lines)
    for text in (
        "golden set ",
        "slice all, 244 queries: mean, 95% CI below",
        "ndcg@10",
        "judged@10",
        "│ hybrid ",
        "ANN hnsw against exact on all: recall@10 ",
        "embedding health: ok (documents and queries not collapsed",
        f"report files in {demo_run.out_dir}: report.json, report.md, report.html",
        "--verbose: every table",
    ):
        assert text in demo_run.output, text
    for text in ("Dense (exact) against lexical", "exact-match", "Embedding health"):
        assert text not in demo_run.output, text
    assert {p.name for p in demo_run.out_dir.iterdir()} == {
        "report.json",
        "report.md",
        "report.html",
        "comment.md",
        "junit.xml",
        "run.exact.trec",
        "run.hnsw.trec",
        "run.bm25.trec",
        "run.hybrid.trec",
    }
    report = json.loads((demo_run.out_dir / "report.json").read_text())
    # the demo's judgments are shallow: most of a top 10 is unjudged, and the report says so
    assert 0 < report["indexes"]["exact"]["slices"]["all"]["judged"]["judged@10"] < 0.5
    # BM25 is the reference on exact-match queries, the model on semantic ones
    lexical = report["lexical"]["slices"]
    assert lexical["exact-match"]["dense_minus_bm25"]["ndcg@10"] < 0
    assert lexical["semantic"]["dense_minus_bm25"]["ndcg@10"] > 0
    # real MiniLM vectors are healthy
    assert report["intrinsic"]["collapse_reasons"] == {"documents": [], "queries": []}
    ndcg = report["indexes"]["exact"]["slices"]["all"]["metrics"]["ndcg@10"]
    assert 0.3 < ndcg["value"] < 0.95, "the demo set must be neither trivial nor hopeless"
    assert ndcg["ci_low"] < ndcg["value"] < ndcg["ci_high"]
    assert report["fingerprint"]["model"]["weights_sha256"]
    # the saved baseline is this report, less the run's id (a baseline outlives its run), plus
    # when and at which commit it was saved (a run's own report.json has no `saved`)
    saved = json.loads(demo_run.baseline.read_text())
    assert "saved" not in report and set(saved.pop("saved")) == {"at", "commit"}
    assert saved == {k: v for k, v in report.items() if k != "run_id"}


def test_demo_run_verbose_prints_every_table(demo_run: DemoRun, tmp_path: Path) -> None:
    """--verbose: every index per slice, the ANN, lexical, beyond-accuracy and health tables,
    the gate's verdict last and one line per report file."""
    code, output = invoke("run", "-c", DEFAULT, "-o", str(tmp_path), "--no-progress", "--verbose")
    assert code == 0, output
    for text in (
        "exact (faiss.IndexFlatIP)",
        "hnsw (faiss.IndexHNSWFlat)",
        "ANN: hnsw against exact",
        "bm25 (bm25s)",
        "hybrid (reciprocal rank fusion)",
        "Dense (exact) against lexical (bm25)",
        "Beyond accuracy",
        "Embedding health",
        "judged@10",
        "ndcg@10",
        "head",
        "tail",
        "exact-match",
        "semantic",
        "report files:",
        f"  {tmp_path / 'report.md'}",
    ):
        assert text in output, text
    # the verdict after the tables, as before the short summary was the default
    assert output.index("NO BASELINE") > output.index("Embedding health")
    assert len(output.splitlines()) > 150


def test_same_config_against_its_baseline_exits_0_and_is_reproducible(
    demo_run: DemoRun, tmp_path: Path
) -> None:
    """A second run gates against the first (exit 0) and gives identical metrics and CIs."""
    summary = tmp_path / "step-summary.md"
    result = runner.invoke(
        app,
        # --no-cache: embed again, so that this checks the embedding is deterministic too
        [
            "run",
            "-c",
            DEFAULT,
            "-o",
            str(tmp_path),
            "--no-progress",
            "--no-cache",
            "-b",
            str(demo_run.baseline),
        ],
        env={"GITHUB_STEP_SUMMARY": str(summary)},
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "GATE PASSED: all 45 checks pass" and len(lines) <= 60, result.output
    assert "no check failed or moved against the baseline beyond its threshold" in result.output
    a = json.loads((demo_run.out_dir / "report.json").read_text())
    b = json.loads((tmp_path / "report.json").read_text())
    assert b["gate"]["verdict"] == "pass" and b["gate"]["changed"] == {}
    assert a.pop("run_id") != b.pop("run_id")  # each run writes its own id
    for key in ("timings", "latency", "config", "gate"):
        a.pop(key), b.pop(key)
    documents = a["embedding"].pop("cache")["document"]  # cold or warm: other files may run first
    assert documents["misses"] + documents["hits"] == 338 and b["embedding"].pop("cache") is None
    assert a == b
    assert (demo_run.out_dir / "run.exact.trec").read_text() == (
        tmp_path / "run.exact.trec"
    ).read_text()
    assert summary.read_text().startswith("## evalret gate: ✅ pass")


@pytest.fixture(scope="module")
def worse_run(demo_run: DemoRun, tmp_path_factory: pytest.TempPathFactory) -> DemoRun:
    """The demo set with 32-dimensional vectors, gated against the demo baseline."""
    tmp_path = tmp_path_factory.mktemp("worse")
    cfg = write_config(
        tmp_path,
        f"golden_set:\n  path: {DEMO}\nmodel:\n  truncate_dim: 32\n"
        "gate:\n  significance: {test: randomization, samples: 2000, seed: 3}\n",
    )
    out = tmp_path / "out"
    code, output = invoke(
        "run", "-c", str(cfg), "-o", str(out), "--no-progress", "-b", str(demo_run.baseline)
    )
    return DemoRun(code, output, out, demo_run.baseline)


def test_worse_model_setting_exits_1_and_names_the_failures(worse_run: DemoRun) -> None:
    """truncate_dim 32 against the baseline: exit 1; metric, slice and index named in the
    terminal, report.md and junit.xml; a randomization test with Holm backs each failure."""
    code, output, out = worse_run.code, worse_run.output, worse_run.out_dir
    assert code == 1, output
    lines = output.splitlines()
    # short: the failed checks' table is cut at its first rows; the inconclusive slices, the
    # thresholds finer than the MDE and the close checks add a few lines each
    assert lines[0].startswith("GATE FAILED: ") and len(lines) <= 70, output
    # 32 dimensions also push unjudged documents into the top 10: on some slices the drop checks
    # are inconclusive, which under policy warn (the default) do not block and are not counted
    # among the failed (they once read "N inconclusive, policy fail")
    gate = json.loads((out / "report.json").read_text())["gate"]
    warned = [c for c in gate["checks"] if c.get("status") == "inconclusive"]
    assert warned and all(c["passed"] for c in warned)
    assert f"; {len(warned)} more inconclusive (policy warn, not blocking)" in lines[0]
    assert "policy fail" not in output
    assert "exact/all/recall@10 max_drop 0.01" in output
    assert "changed: model.truncate_dim: None -> 32" in output
    md = (out / "report.md").read_text()
    assert md.startswith("## evalret gate: ❌ fail")
    assert "| exact | all | 244 | recall@10 |" in md
    junit = ET.parse(out / "junit.xml").getroot()
    failed = [c for c in junit.iter("testcase") if c.find("failure") is not None]
    names = {(c.get("classname"), c.get("name")) for c in failed}
    assert ("evalret.exact.all", "recall@10 max_drop 0.01") in names
    message = next(c for c in failed if c.get("classname") == "evalret.exact.all").find("failure")
    assert message is not None and "significant" in (message.get("message") or "")
    report = json.loads((out / "report.json").read_text())
    check = next(
        c for c in report["gate"]["checks"] if c["name"] == "exact/all/recall@10 max_drop 0.01"
    )
    assert check["passed"] is False and check["p_adjusted"] < 0.05 and check["delta"] < -0.01


def test_compare_prints_a_short_summary_or_every_table(
    demo_run: DemoRun, worse_run: DemoRun, tmp_path: Path
) -> None:
    """compare of the demo and its 32-dimensional variant: by default the verdict first, one row
    per index on `all`, the slices that moved, the five biggest losses, at most 60 lines;
    --verbose prints every table and the diagnosis of each slice."""
    a, b = demo_run.out_dir / "report.json", worse_run.out_dir / "report.json"
    args = ("compare", str(a), str(b), "--no-progress", "--samples", "1000")
    code, output = invoke(*args, "-o", str(tmp_path / "short"))
    assert code == 0, output
    lines = output.splitlines()
    assert lines[0].startswith("VERDICT: not a candidate: blocked by all: ndcg@10 -"), lines[0]
    assert len(lines) <= 60, len(lines)
    assert "ndcg@10 on all, B - A" in output and "│ hybrid " in output
    assert "exact: slices where ndcg@10 moved significantly (holm)" in output
    losses = lines.index("biggest losses of B (ndcg@10):")
    assert all(line.startswith("  -") for line in lines[losses + 1 : losses + 6])
    assert "every metric, B - A" not in output and "diagnosis\n" not in output
    code, full = invoke(*args, "-o", str(tmp_path / "full"), "--verbose")
    assert code == 0, full
    assert "exact: every metric, B - A" in full and "\ndiagnosis\n" in full
    assert full.index("VERDICT: not a candidate") > full.index("biggest losses of B")


def test_worse_run_comment_leads_with_verdict_failures_and_losses(worse_run: DemoRun) -> None:
    """comment.md of the failing run: the hidden marker, the verdict, every failed check, then
    the five queries whose nDCG@10 (exact) fell most against the baseline, as report.json and
    the baseline say query by query; under GitHub's comment limit."""
    text = (worse_run.out_dir / "comment.md").read_text()
    lines = text.splitlines()
    assert lines[0] == MARKER and lines[1].startswith("## evalret gate: ❌ fail (")
    report = json.loads((worse_run.out_dir / "report.json").read_text())
    failed = [c for c in report["gate"]["checks"] if not c["passed"]]
    start = lines.index(f"### Failed checks ({len(failed)})")
    losses = lines.index("### Biggest per-query losses (exact, ndcg@10, against the baseline)")
    assert 1 < start < losses < lines.index("<details><summary>Full report (report.md)</summary>")
    rows = [
        line
        for line in lines[start:losses]
        if line.startswith("| exact/") or line.startswith("| hnsw/")
    ]
    assert len(rows) == len(failed)
    base = json.loads(worse_run.baseline.read_text())
    ids, now = base["query_ids"], report["query_ids"]
    before = dict(zip(ids, base["indexes"]["exact"]["per_query"]["ndcg@10"], strict=True))
    after = dict(zip(now, report["indexes"]["exact"]["per_query"]["ndcg@10"], strict=True))
    deltas = sorted((after[q] - before[q], ids.index(q), q) for q in before)
    expected = [markdown(q) for _, _, q in deltas[:5]]
    shown = [line.split(" | ")[0].removeprefix("| ") for line in lines[losses + 4 : losses + 9]]
    assert shown == expected
    assert len(text) < GITHUB_LIMIT


def test_golden_set_changed_by_one_judgment_exits_2(demo_run: DemoRun, tmp_path: Path) -> None:
    """Comparing with a baseline of another golden set is refused with what differs."""
    gs = tmp_path / "demo"
    shutil.copytree(DEMO, gs)
    lines = (gs / "queries.jsonl").read_text().splitlines()
    q = json.loads(lines[0])
    doc = next(iter(q["relevant"]))
    q["relevant"][doc] = 0 if q["relevant"][doc] else 1
    lines[0] = json.dumps(q)
    (gs / "queries.jsonl").write_text("\n".join(lines) + "\n")
    cfg = write_config(tmp_path, f"golden_set:\n  path: {gs}\n")
    code, output = invoke(
        "run",
        "-c",
        str(cfg),
        "--no-progress",
        "-b",
        str(demo_run.baseline),
        "-o",
        str(tmp_path / "out"),
    )
    assert code == 2, output
    assert "cannot compare with baseline" in output and q["id"] in output


def test_missing_baseline_exits_2(tmp_path: Path) -> None:
    """A baseline path that does not exist is an input error, which prints the line that saves
    it (tests/test_demo_package.py pastes it)."""
    code, output = invoke("run", "--no-progress", "-c", DEFAULT, "-b", str(tmp_path / "nope.json"))
    assert code == 2 and f"baseline {tmp_path / 'nope.json'} (--baseline) does not exist" in output
    assert "--save-baseline" in output


def test_baseline_show(demo_run: DemoRun) -> None:
    """`evalret baseline show` prints the fingerprint, settings and metric tables."""
    code, output = invoke("baseline", "show", str(demo_run.baseline))
    assert code == 0, output
    report = json.loads(demo_run.baseline.read_text())
    assert report["fingerprint"]["digest"] in output
    assert "exact (faiss.IndexFlatIP)" in output and "golden set" in output


def test_init_scaffolds_refuses_to_overwrite_and_passes_actionlint(tmp_path: Path) -> None:
    """init writes config, golden set and (with --action-ref) the workflow; a second init exits
    2 unless --force."""
    code, output = invoke("init", str(tmp_path), "--action-ref", "acme/evalret@v0.1.0")
    assert code == 0, output
    for rel in (
        "evalret.yaml",
        "golden_sets/example/corpus.jsonl",
        "golden_sets/example/queries.jsonl",
        ".github/workflows/evalret.yml",
    ):
        assert (tmp_path / rel).is_file(), rel
    config = load_config(tmp_path / "evalret.yaml")
    assert config.gate.baseline == (tmp_path / "baselines" / "evalret.json").resolve()
    assert len(load_golden_set(config.golden_set).query_ids) == 3
    (tmp_path / "evalret.yaml").write_text("# mine\n")
    code, output = invoke("init", str(tmp_path))
    assert code == 2 and "--force" in output
    assert (tmp_path / "evalret.yaml").read_text() == "# mine\n"
    code, _ = invoke("init", str(tmp_path), "--force")
    assert code == 0 and (tmp_path / "evalret.yaml").read_text() != "# mine\n"
    lint = subprocess.run(
        [ACTIONLINT, str(tmp_path / ".github/workflows/evalret.yml")],
        capture_output=True,
        text=True,
    )
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_project_workflows_pass_actionlint() -> None:
    """The project's workflows (and the composite action they use) pass actionlint."""
    workflows = sorted(str(p) for p in (REPO / ".github" / "workflows").glob("*.yml"))
    assert workflows
    lint = subprocess.run([ACTIONLINT, *workflows], capture_output=True, text=True, cwd=REPO)
    assert lint.returncode == 0, lint.stdout + lint.stderr


def compare_reports_cli(a: DemoRun, b: DemoRun, out: Path) -> tuple[int, str]:
    """`evalret compare` of two saved reports, failing on a significant regression."""
    return invoke(
        "compare",
        str(a.out_dir / "report.json"),
        str(b.out_dir / "report.json"),
        "-o",
        str(out),
        "--no-progress",
        "--samples",
        "2000",
        "--fail-on-regression",
    )


def test_compare_degraded_model_shows_significant_losses(
    demo_run: DemoRun, worse_run: DemoRun, tmp_path: Path
) -> None:
    """Default vs truncate_dim 32 (saved reports): significant corrected losses, the biggest
    losing queries with both result lists, and a verdict against the candidate."""
    code, output = compare_reports_cli(demo_run, worse_run, tmp_path)
    assert code == 1, output  # --fail-on-regression: a significant regression exits 1
    assert "VERDICT: not a candidate" in output and "worse across the board" in output
    data = json.loads((tmp_path / "compare.json").read_text())
    m = data["indexes"]["exact"]["all"]["metrics"]["ndcg@10"]
    assert m["delta"] < -0.1 and m["significant"] and m["p_randomization_adjusted"] < 0.05
    assert m["ci_high"] < 0 and m["losses"] > m["wins"]
    assert data["changed"]["model.truncate_dim"] == {"baseline": None, "current": 32}
    loser = data["losers"][0]
    assert loser["delta"] < 0 and loser["text"] and loser["relevant"]
    assert len(loser["a_top"]) == len(loser["b_top"]) == 5
    assert any(d["grade"] is not None for d in loser["a_top"] + loser["b_top"])
    listing = (tmp_path / "disagreements.md").read_text()
    assert loser["query_id"] in listing and "A's top results:" in listing
    assert (
        (tmp_path / "compare.md").read_text().startswith("## evalret compare: ❌ not a candidate")
    )


def test_compare_improvement_is_a_candidate(
    demo_run: DemoRun, worse_run: DemoRun, tmp_path: Path
) -> None:
    """The other way round (32 dims as A, full model as B) B gains in every slice."""
    code, output = compare_reports_cli(worse_run, demo_run, tmp_path)
    assert code == 0, output
    data = json.loads((tmp_path / "compare.json").read_text())
    assert data["verdict"]["status"] == "candidate", data["verdict"]


def test_compare_with_itself_shows_no_difference(demo_run: DemoRun, tmp_path: Path) -> None:
    """A report against itself: zero deltas, p = 1, no drift, verdict "no difference"."""
    report = str(demo_run.out_dir / "report.json")
    code, output = invoke("compare", report, report, "-o", str(tmp_path), "--no-progress")
    assert code == 0, output
    data = json.loads((tmp_path / "compare.json").read_text())
    assert data["verdict"]["status"] == "no difference"
    for slices in data["indexes"].values():
        for sc in slices.values():
            assert sc["drift"] == {"jaccard@10": 1.0, "rbo@10": 1.0}
            for m in sc["metrics"].values():
                assert m["delta"] == 0 and m["p_randomization"] == 1 and m["p_t_test"] == 1
    assert data["losers"] == [] and data["gainers"] == []


@pytest.mark.model
def test_compare_two_configs_runs_both(tmp_path: Path) -> None:
    """Two configs are evaluated (real model) on a tiny golden set and compared."""
    assert invoke("init", str(tmp_path))[0] == 0
    a = write_config(tmp_path, "golden_set:\n  path: golden_sets/example\n")
    b = tmp_path / "b.yaml"
    b.write_text("golden_set:\n  path: golden_sets/example\nmodel:\n  query_prefix: 'query: '\n")
    code, output = invoke("compare", str(a), str(b), "-o", str(tmp_path / "cmp"), "--no-progress")
    assert code == 0, output
    data = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert data["changed"]["model.query_prefix"] == {"baseline": "", "current": "query: "}
    assert data["golden_set"]["n_queries"] == 3


def test_compare_refuses_different_golden_sets(demo_run: DemoRun, tmp_path: Path) -> None:
    """Reports of different golden sets are refused with exit 2."""
    data = json.loads((demo_run.out_dir / "report.json").read_text())
    data["golden_set"]["fingerprint"] = "0" * 64
    other = tmp_path / "other.json"
    other.write_text(json.dumps(data))
    code, output = invoke(
        "compare",
        str(demo_run.out_dir / "report.json"),
        str(other),
        "-o",
        str(tmp_path / "cmp"),
        "--no-progress",
    )
    assert code == 2 and "golden sets differ" in output


def test_comparing_saved_reports_loads_no_heavy_library(demo_run: DemoRun, tmp_path: Path) -> None:
    """`evalret compare` of two saved reports never imports torch, sentence-transformers or
    faiss: it only reads JSON."""
    report = str(demo_run.out_dir / "report.json")
    code = (
        "import sys\n"
        "from evalret.cli import app\n"
        "try:\n"
        f"    app(['compare', {report!r}, {report!r}, '-o', {str(tmp_path)!r}, '--no-progress'])\n"
        "except SystemExit as e:\n"
        "    assert e.code == 0, e.code\n"
        "print(sorted(m for m in ('torch', 'sentence_transformers', 'faiss') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_progress_bars_draw_on_the_lazy_console() -> None:
    """The progress factory the commands use works with the console made on first use."""
    from evalret.cli_runtime import progress_bars

    with progress_bars(True) as factory:
        advance = factory("Embedding documents", 3)
        advance(2)
        advance(1)
    with progress_bars(False) as nothing:
        assert nothing is None


class _NoEmbedding(HashEmbedder):
    """Fails if asked to embed: proves a refusal came before any embedding."""

    def embed(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("embedding should not have started")


@pytest.fixture
def small(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A config for a small golden set, its cache in tmp_path/cache, embedded by HashEmbedder
    (no model: these tests are about files, not vectors)."""
    monkeypatch.setattr("evalret.engines.embedders.make_embedder", lambda *_: HashEmbedder())
    gs = make_set(tmp_path / "gs")
    return write_config(
        tmp_path, f"golden_set:\n  path: {gs}\ncache:\n  dir: {tmp_path / 'cache'}\n"
    )


def run_small(config: Path, out: Path, *extra: str) -> tuple[int, str]:
    return invoke("run", "-c", str(config), "-o", str(out), "--no-progress", *extra)


@pytest.mark.parametrize(
    "case", ["out is a file", "out under a file", "out immutable", "save-baseline is a directory"]
)
def test_unwritable_output_is_refused_before_any_embedding(
    small: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """An output location that cannot be written, as root too: exit 2 naming the path, before
    the model is loaded or anything embedded."""
    monkeypatch.setattr("evalret.engines.embedders.make_embedder", lambda *_: _NoEmbedding())
    (tmp_path / "file").write_text("x")
    out, extra, named = tmp_path / "out", [], tmp_path / "out"
    if case == "out is a file":
        out = named = tmp_path / "file"
    elif case == "out under a file":
        out = named = tmp_path / "file" / "out"
    elif case == "save-baseline is a directory":
        extra, named = ["--save-baseline", str(tmp_path)], tmp_path
    if case == "out immutable":
        out.mkdir()
    with immutable(out) if case == "out immutable" else contextlib.nullcontext():
        code, output = run_small(small, out, *extra)
    assert code == 2, output
    assert "cannot write" in output and str(named) in output


def test_save_baseline_through_a_link_and_to_a_device(small: Path, tmp_path: Path) -> None:
    """--save-baseline writes a symlink's target (the link stays) and writes /dev/null-like
    devices in place (root would otherwise replace the device with a regular file)."""
    target = tmp_path / "store" / "b.json"
    target.parent.mkdir()
    link = tmp_path / "b.json"
    link.symlink_to(target)
    code, output = run_small(small, tmp_path / "out", "--save-baseline", str(link))
    assert code in (0, 1), output
    assert link.is_symlink() and json.loads(target.read_text())["schema_version"]
    null = private_null(tmp_path)
    code, output = run_small(small, tmp_path / "out", "--save-baseline", str(null))
    assert code in (0, 1), output
    assert stat.S_ISCHR(null.lstat().st_mode)


def test_baseline_this_run_saves_gates_floors_only_and_says_so(small: Path, tmp_path: Path) -> None:
    """--baseline X --save-baseline X with X missing (the first run of `evalret init`'s
    config): the fixed-bound checks run, and the terminal, report.md and the gate section say
    the baseline was missing and no drop check ran."""
    baseline = tmp_path / "baselines" / "b.json"
    out = tmp_path / "out"
    code, output = run_small(small, out, "-b", str(baseline), "--save-baseline", str(baseline))
    assert code in (0, 1), output
    said = f"baseline {baseline} does not exist yet (this run saves it)"
    assert said in output.replace("\n", "")
    gate = json.loads((out / "report.json").read_text())["gate"]
    assert gate["notes"][0].startswith(said) and gate["baseline"] is None
    assert {c["kind"] for c in gate["checks"]} <= {
        "min",
        "ann_min_recall",
        "health_min",
        "health_max",
    }
    assert f"only the {len(gate['checks'])} checks against fixed bounds ran" in gate["notes"][0]
    assert markdown(said) in (out / "report.md").read_text()  # escaped: the path is input
    assert baseline.exists()


def test_cache_that_cannot_be_written_never_exits_3(small: Path, tmp_path: Path) -> None:
    """A cache directory path that is a regular file: the run goes on, warns once on the
    terminal, in report.md and report.json, and exits as the evaluation says."""
    (tmp_path / "cache").write_text("a file where the cache should be")
    out = tmp_path / "out"
    code, output = run_small(small, out)
    assert code in (0, 1), output
    assert "embedding cache warning: cannot write the embedding cache" in output
    report = json.loads((out / "report.json").read_text())
    warnings = report["embedding"]["cache"]["warnings"]
    assert len(warnings) == 2  # the vectors, and the HNSW graph
    assert "embedding cache warning" in (out / "report.md").read_text()


def test_repaired_cache_is_shown_on_the_terminal_and_in_report_md(
    small: Path, tmp_path: Path
) -> None:
    """A corrupt shard set aside and a rebuilt HNSW graph: one line each, not only in JSON."""
    out = tmp_path / "out"
    assert run_small(small, out)[0] in (0, 1)
    cache = tmp_path / "cache"
    vecs = next(cache.glob("embeddings/*/*.vecs.npy"))
    vecs.write_bytes(vecs.read_bytes()[:-8])
    next(cache.glob("indexes/*.faiss")).write_bytes(b"garbage")
    code, output = run_small(small, out)
    assert code in (0, 1), output
    md = (out / "report.md").read_text()
    for text in (
        "1 corrupt shard(s) set aside",
        "cached HNSW graph was unreadable or did not fit, rebuilt",
    ):
        assert text in output.replace("\n", " ") and markdown(text) in md, output


def test_init_counts_a_dangling_link_as_an_existing_file(tmp_path: Path) -> None:
    """A starter file that is a link to nothing exists for init: without --force it wrote
    through the link, creating a file outside the directory it was told to scaffold."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "evalret.yaml").symlink_to(tmp_path / "outside.yaml")
    code, output = invoke("init", str(repo))
    assert code == 2 and "evalret.yaml: exists" in output, output
    assert not (tmp_path / "outside.yaml").exists()


@pytest.mark.parametrize("link", ["evalret.schema.json", ".github"])
def test_init_force_never_writes_through_a_link_out_of_the_directory(
    tmp_path: Path, link: str
) -> None:
    """`init --force` where a starter file (the schema) or a folder of one (.github, the
    workflow's, written with --action-ref) is a link
    out of the directory: exit 2 naming it, before any file is written; what it points at is
    byte-identical and the link stays."""
    repo = tmp_path / "repo"
    repo.mkdir()
    outside = tmp_path / "outside"
    if link == ".github":
        outside.mkdir()
        (repo / link).symlink_to(outside, target_is_directory=True)
    else:
        outside.write_text("my own file\n")
        (repo / link).symlink_to(outside)
    code, output = invoke("init", str(repo), "--force", "--action-ref", "acme/evalret@v0.1.0")
    assert code == 2, output
    flat = output.replace("\n", "")
    assert link in flat and str(outside) in flat and "outside" in flat
    assert (repo / link).is_symlink() and sorted(p.name for p in repo.iterdir()) == [link]
    if link == ".github":
        assert list(outside.iterdir()) == []
    else:
        assert outside.read_text() == "my own file\n"


def test_init_onto_a_file_exits_2(tmp_path: Path) -> None:
    somefile = tmp_path / "somefile.txt"
    somefile.write_text("keep me")
    code, output = invoke("init", str(somefile))
    assert code == 2, output
    assert str(somefile) in output and somefile.read_text() == "keep me"


def test_pool_out_directory_exits_2_before_embedding(
    small: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pool -o a directory: exit 2 naming it, before anything is embedded."""
    monkeypatch.setattr("evalret.engines.embedders.make_embedder", lambda *_: _NoEmbedding())
    code, output = invoke("pool", str(small), "-o", str(tmp_path), "--no-progress")
    assert code == 2 and str(tmp_path) in output, output


def test_leakage_out_symlink_keeps_the_link(tmp_path: Path) -> None:
    """leakage -o a symlink: written to its target, the link stays a link."""
    train = tmp_path / "train.txt"
    train.write_text("alpha beta\nsomething else entirely\n")
    target = tmp_path / "result.json"
    link = tmp_path / "link.json"
    link.symlink_to(target)
    code, output = invoke(
        "leakage",
        str(make_set(tmp_path / "gs2")),
        "--train",
        str(train),
        "--no-embedding",
        "-o",
        str(link),
        "--no-progress",
    )
    assert code in (0, 1), output
    assert link.is_symlink() and json.loads(target.read_text())


def cranfield_config(tmp_path: Path, extra: str = "") -> tuple[Path, Path]:
    """The Cranfield-like set (helpers.cranfield_like) and a small config for it: (qrels, cfg)."""
    qrels = cranfield_like(tmp_path / "cranfield")
    cfg = write_config(
        tmp_path,
        f"golden_set:\n  path: {qrels}\nindexes:\n  hnsw:\n    enabled: false\n{extra}",
    )
    return qrels, cfg


@pytest.mark.model
def test_cranfield_like_set_runs_end_to_end_and_equals_trec_eval(tmp_path: Path) -> None:
    """Two empty documents, -1/-2 grades, comments and a 1.5 grade: `evalret run` with the real
    model goes through, lists the readers' warnings (terminal, report.json, report.md), and at
    relevance_level 2 with queries_without_relevant: zero every index's per-query metrics equal
    trec_eval -l 2 on its run file, precision@500 on 10 documents included."""
    qrels, cfg = cranfield_config(
        tmp_path,
        "relevance_level: 2\nqueries_without_relevant: zero\n"
        "metrics: [ndcg@10, precision@500, recall@5, map@100, hit_rate@1]\n",
    )
    out = tmp_path / "out"
    result = runner.invoke(
        app, ["run", "-c", str(cfg), "-o", str(out), "--no-progress"], env={"COLUMNS": "250"}
    )
    assert result.exit_code == 0, result.output
    corpus = qrels.parent / "corpus.jsonl"
    assert "golden set: 4 warning(s)" in result.output
    assert f"{corpus}:2: document '2' has no text" in result.output
    assert f"{qrels}:3: non-integer grades truncated toward zero" in result.output
    assert "1 judged queries have no relevant document (grade >= 2) and are scored" in result.output
    report = json.loads((out / "report.json").read_text())
    g = report["golden_set"]
    assert sorted((w["code"], w["line"]) for w in g["warnings"]) == [
        ("empty-document", 2),
        ("empty-document", 6),
        ("no-relevant-document", 15),
        ("non-integer-grade", 3),
    ]
    assert g["queries_without_relevant"] == ["5"] and report["query_ids"] == list("12345")
    assert "Golden-set warnings (4)" in (out / "report.md").read_text()
    judged = load_golden_set(load_config(cfg).golden_set).qrels
    compared = 0
    for name, index in report["indexes"].items():
        run = read_trec_run(out / f"run.{name}.trec")
        compared += assert_report_matches_trec_eval(
            index["per_query"], report["query_ids"], judged, run, 2
        )
    assert compared == 3 * 5 * 5


def test_nothing_to_evaluate_exits_2_without_a_verdict(tmp_path: Path) -> None:
    """No query has a grade >= relevance_level and queries are excluded: exit 2 before any
    embedding, saying why and how to fix it, never GATE PASSED."""
    _, cfg = cranfield_config(tmp_path, "relevance_level: 4\n")
    code, out = invoke("run", "-c", str(cfg), "--no-progress")
    assert code == 2, out
    assert "nothing to evaluate" in out and "GATE PASSED" not in out
    assert "relevance_level" in out and "queries_without_relevant" in out
    code, out = invoke("validate", str(cfg))
    assert code == 2 and "nothing to evaluate" in out, out
    _, zero = cranfield_config(tmp_path, "relevance_level: 4\nqueries_without_relevant: zero\n")
    code, out = invoke("validate", str(zero), "--json")
    assert code == 0 and "nothing to evaluate" not in out, out
    assert json.loads(out)["slices"][0]["n_queries"] == 5  # zero mode: every judged query


@pytest.mark.parametrize("command", ["run", "validate"])
def test_grade_beyond_the_bound_exits_2_with_file_and_line(tmp_path: Path, command: str) -> None:
    """Grade 10^30 (it crashed int64 before) is refused by run and validate with file:line."""
    qrels, cfg = cranfield_config(tmp_path)
    lines = qrels.read_text().splitlines()
    lines[4] = f"1 0 3 {10**30}"
    qrels.write_text("\n".join(lines) + "\n")
    args = ["run", "-c", str(cfg), "--no-progress"] if command == "run" else ["validate", str(cfg)]
    result = runner.invoke(app, args)
    out = result.output.replace("\n", "")
    assert result.exit_code == 2, out
    assert f"{qrels}:5: grade {10**30} for ('1', '3') is out of range" in out


def test_metric_cutoff_beyond_the_bound_exits_2_naming_it(tmp_path: Path) -> None:
    """ndcg@100000000000 (it tried to allocate 2.9 TiB) is a config error naming the metric."""
    _, cfg = cranfield_config(tmp_path, "metrics: [ndcg@10, ndcg@100000000000]\n")
    code, out = invoke("run", "-c", str(cfg), "--no-progress")
    assert code == 2, out
    assert "ndcg@100000000000" in out.replace("\n", "")
