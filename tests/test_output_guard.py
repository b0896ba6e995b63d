"""An input is never an output (issue #23, guarantee 2), a run clears its own earlier files before
it starts (guarantee 1), and write errors exit 2 (item 11).

Every case runs the real CLI on a world that needs no model: a native golden set, a TREC run file
and a config whose only index reads that run file. Each case names an output that is, or writes
into, one of the command's inputs, and checks exit 2, a message naming both roles and both paths,
and every input byte-identical afterwards.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from evalret.errors import InputError
from evalret.pipeline.annotation import prepare_annotation
from helpers import invoke, make_set

GUARD = "an input is never an output"


@dataclass
class World:
    root: Path
    golden: Path  # a native golden-set directory
    run: Path  # a TREC run file of its queries
    qrels: Path  # the same judgments as a TREC qrels file
    config: Path  # a config whose only index is the run file: no model is loaded

    def snapshot(self) -> dict[Path, bytes]:
        """Every file of the world and its bytes."""
        return {p: p.read_bytes() for p in sorted(self.root.rglob("*")) if p.is_file()}


CONFIG = """\
golden_set: {{path: {golden}}}
indexes:
  exact: {{enabled: false}}
  hnsw: {{enabled: false}}
  bm25: {{enabled: false}}
  hybrid: {{enabled: false}}
  x: {{type: run, path: {run}}}
cache: {{enabled: false}}
health: {{enabled: false}}
gate: {{indexes: [x], ann_min_recall: null, health: {{}}}}
"""


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.chdir(tmp_path)
    golden = make_set(tmp_path / "gs")
    queries = [json.loads(line) for line in (golden / "queries.jsonl").read_text().splitlines()]
    run_lines, qrels_lines = [], []
    for q in queries:
        docs = list(q["relevant"])[:2]
        docs += [d for d in ("d0", "d1", "d2", "d3") if d not in docs][:3]
        run_lines += [f"{q['id']} Q0 {d} {r + 1} {10 - r} t\n" for r, d in enumerate(docs)]
        qrels_lines += [f"{q['id']} 0 {d} {g}\n" for d, g in q["relevant"].items()]
    run = tmp_path / "run.trec"
    run.write_text("".join(run_lines))
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(qrels_lines))
    config = tmp_path / "cfg.yaml"
    config.write_text(CONFIG.format(golden=golden, run=run))
    yield World(tmp_path, golden, run, qrels, config)


def refused(world: World, *args: str, names: tuple[str, ...]) -> str:
    """Run ``args``; check exit 2 by the guard naming every one of ``names``, and every file of
    the world as it was."""
    before = world.snapshot()
    code, output = invoke(*args)
    assert code == 2, output
    assert GUARD in output, output
    flat = " ".join(output.split())  # rich wraps long lines
    for name in names:
        assert name in flat, (name, output)
    assert world.snapshot() == before
    return flat


def run_ok(*args: str) -> None:
    code, output = invoke(*args, "--no-progress")
    assert code == 0, output


# --- run, score, hook: the report set, --save-baseline, the step summary --------------------------


def test_run_refuses_a_baseline_inside_its_output_directory(world: World) -> None:
    """`run --baseline OUT/report.json --out OUT` would overwrite the baseline it gates against
    (a failing gate, retried, would then pass): refused before anything is read or written."""
    run_ok("run", "-c", str(world.config), "-o", "out")
    refused(
        world,
        *("run", "-c", str(world.config), "-o", "out", "--baseline", "out/report.json"),
        names=("--out out", "the baseline (--baseline) out/report.json", "report.json"),
    )


def test_gate_baseline_of_the_config_inside_the_output_directory(world: World) -> None:
    run_ok("run", "-c", str(world.config), "-o", "out")
    with world.config.open("a") as f:
        f.write("output: {dir: out}\n")
    config = world.config.read_text().replace("gate: {", "gate: {baseline: out/report.json, ")
    world.config.write_text(config)
    refused(
        world,
        *("run", "-c", str(world.config)),
        names=("output.dir", "gate.baseline", "report.json"),
    )


@pytest.mark.parametrize("target", ["config", "golden-set file", "baseline"])
def test_save_baseline_over_an_input(world: World, target: str) -> None:
    """--save-baseline over the config, a file of the golden set, or the existing baseline this
    run gates against."""
    run_ok("run", "-c", str(world.config), "-o", "first")
    extra: list[str] = []
    if target == "config":
        save, names = str(world.config), ("--save-baseline", "the config (--config)")
    elif target == "golden-set file":
        save = str(world.golden / "queries.jsonl")
        names = ("--save-baseline", "would write into the golden set (golden_set.path)")
    else:
        save, names = "first/report.json", ("--save-baseline", "the baseline (--baseline)")
        extra = ["--baseline", save]
    refused(
        world,
        *("run", "-c", str(world.config), "-o", "out", "--save-baseline", save, *extra),
        names=names,
    )
    assert not Path("out").exists()


def test_first_run_saving_its_own_missing_baseline_is_allowed(world: World) -> None:
    """--baseline X --save-baseline X with X missing is the first run, not a clash."""
    run_ok("run", "-c", str(world.config), "-o", "out", "-b", "b.json", "--save-baseline", "b.json")
    assert Path("b.json").is_file()


def test_output_directory_inside_the_golden_set(world: World) -> None:
    refused(
        world,
        *("run", "-c", str(world.config), "-o", str(world.golden / "reports")),
        names=("--out", "would write into the golden set (golden_set.path)"),
    )
    assert not (world.golden / "reports").exists()


def test_score_into_the_directory_of_its_run_file(world: World) -> None:
    """`score QRELS x=run.x.trec --out .` writes run.x.trec over its own input."""
    (world.root / "run.x.trec").write_bytes(world.run.read_bytes())
    refused(
        world,
        *("score", str(world.qrels), "x=run.x.trec", "--out", ".", "--no-progress"),
        names=("--out .", "the run file of index x (RUNS) run.x.trec", "run.x.trec there"),
    )


def test_score_refuses_an_output_hard_linked_or_symlinked_to_an_input(world: World) -> None:
    """A report file that is a hard link to the qrels, or a symbolic link to the run file, is
    the input itself: atomic writes follow the link, appends write the shared inode."""
    out = world.root / "out"
    out.mkdir()
    os.link(world.qrels, out / "report.md")
    refused(
        world,
        *("score", str(world.qrels), str(world.run), "--out", "out", "--no-progress"),
        names=("--out out", "the golden set (GOLDEN)", "report.md"),
    )
    (out / "report.md").unlink()
    (out / "comment.md").symlink_to(world.run)
    refused(
        world,
        *("score", str(world.qrels), str(world.run), "--out", "out", "--no-progress"),
        names=("--out out", "the run file of index run (RUNS)", "comment.md"),
    )


def test_score_output_directory_that_is_an_input_file(world: World) -> None:
    refused(
        world,
        *("score", str(world.qrels), str(world.run), "--out", str(world.run), "--no-progress"),
        names=(f"--out {world.run} is the run file of index run (RUNS)",),
    )


def test_step_summary_pointing_at_the_baseline(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """$GITHUB_STEP_SUMMARY is appended to: pointing at the baseline, it would grow a report."""
    run_ok("run", "-c", str(world.config), "-o", "first")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(world.root / "first" / "report.json"))
    refused(
        world,
        *("run", "-c", str(world.config), "-o", "out", "-b", "first/report.json"),
        names=("$GITHUB_STEP_SUMMARY", "the baseline (--baseline)"),
    )


def test_hook_refuses_its_baseline_inside_its_output_directory(world: World) -> None:
    run_ok("run", "-c", str(world.config), "-o", "out")
    config = world.config.read_text().replace("gate: {", "gate: {baseline: out/report.json, ")
    world.config.write_text(config)
    refused(
        world,
        *("hook", "-c", str(world.config), "-o", "out"),
        names=("--out out", "the baseline (gate.baseline)"),
    )


def test_save_baseline_over_the_queries_beside_a_trec_qrels_file(world: World) -> None:
    """A TREC golden set named by its qrels file reads the queries and corpus found beside it."""
    trec = world.root / "trec"
    trec.mkdir()
    (trec / "qrels.txt").write_bytes(world.qrels.read_bytes())
    queries = [
        json.loads(line) for line in (world.golden / "queries.jsonl").read_text().splitlines()
    ]
    (trec / "queries.tsv").write_text("".join(f"{q['id']}\t{q['text']}\n" for q in queries))
    (trec / "corpus.jsonl").write_bytes((world.golden / "corpus.jsonl").read_bytes())
    config = world.root / "trec.yaml"
    config.write_text(CONFIG.format(golden=trec / "qrels.txt", run=world.run))
    refused(
        world,
        *("run", "-c", str(config), "-o", "out", "--save-baseline", "trec/queries.tsv"),
        names=("--save-baseline trec/queries.tsv", "the golden set's queries.tsv"),
    )


# --- the other writing commands -------------------------------------------------------------------


def test_compare_writing_into_the_golden_set_of_a_config(world: World) -> None:
    refused(
        world,
        *("compare", str(world.config), str(world.config), "--out", str(world.golden / "cmp")),
        names=("--out", "the golden set (golden_set.path)"),
    )


def test_compare_over_a_saved_report(world: World) -> None:
    run_ok("run", "-c", str(world.config), "-o", "out")
    saved = world.root / "cmp" / "compare.json"  # a saved report.json, kept under this name
    saved.parent.mkdir()
    saved.write_bytes((world.root / "out" / "report.json").read_bytes())
    refused(
        world,
        *("compare", "out/report.json", "cmp/compare.json", "--out", "cmp", "--no-progress"),
        names=("--out cmp", "the saved report (B) cmp/compare.json"),
    )


def test_pool_over_a_golden_set_file(world: World) -> None:
    target = str(world.golden / "queries.jsonl")
    refused(
        world,
        *("pool", str(world.config), "-o", target, "--no-progress"),
        names=(f"--out {target}", "the golden set (golden_set.path)"),
    )


def test_pool_over_its_config(world: World) -> None:
    refused(
        world,
        *("pool", str(world.config), "-o", str(world.config), "--no-progress"),
        names=("--out", "the config (CONFIGS)"),
    )


def test_leakage_over_its_training_file(world: World) -> None:
    train = world.root / "train.jsonl"
    train.write_text('{"text": "alpha beta"}\n{"text": "something else"}\n')
    refused(
        world,
        *("leakage", "--train", str(train), str(world.golden), "--no-embedding"),
        *("--out", str(train)),
        names=(f"--out {train}", f"the training queries (--train) {train}"),
    )


def test_sweep_into_the_golden_set(world: World) -> None:
    refused(
        world,
        *("sweep", "-c", str(world.config), "--set", "indexes.x.enabled=true"),
        *("--out", str(world.golden / "sweep"), "--no-progress"),
        names=("--out", "the golden set (golden_set.path)"),
    )


def test_report_page_linked_to_the_saved_report(world: World) -> None:
    """`report PATH --out D` where D/report.html is a symbolic link to PATH itself."""
    run_ok("run", "-c", str(world.config), "-o", "out")
    pages = world.root / "pages"
    pages.mkdir()
    (pages / "report.html").symlink_to(world.root / "out" / "report.json")
    refused(
        world,
        *("report", "out/report.json", "--out", "pages"),
        names=("--out pages", "the saved report (PATH) out/report.json"),
    )


def test_history_report_over_its_database(world: World) -> None:
    """`history report -o DB` would replace the database with HTML."""
    run_ok("run", "-c", str(world.config), "-o", "out")
    code, output = invoke("history", "add", "out/report.json", "--db", "h.sqlite")
    assert code == 0, output
    refused(
        world,
        *("history", "report", "--db", "h.sqlite", "-o", "h.sqlite"),
        names=("--out h.sqlite", "the history database h.sqlite"),
    )


def annotations(path: Path, annotator: str) -> Path:
    lines = [
        {"query_id": f"q{q}", "doc_id": f"d{d}", "grade": (q + d) % 4, "annotator": annotator}
        for q in range(3)
        for d in range(40, 44)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    return path


def test_judgments_merge_into_its_own_golden_set(world: World) -> None:
    """--out inside --into: the copy of the golden set would be written into it."""
    a = annotations(world.root / "a.jsonl", "a")
    refused(
        world,
        *("judgments", "merge", str(a), "--into", str(world.golden)),
        *("--out", str(world.golden / "merged")),
        names=("--out", "would write into the golden set (--into)"),
    )
    assert not (world.golden / "merged").exists()


def test_judgments_agreement_json_over_an_annotation_file(world: World) -> None:
    a = annotations(world.root / "a.jsonl", "a")
    b = annotations(world.root / "b.jsonl", "b")
    refused(
        world,
        *("judgments", "agreement", str(a), str(b), "--out", str(b)),
        names=(f"--out {b}", f"the annotation file (FILES) {b}"),
    )


def test_annotate_output_that_is_the_pool(world: World) -> None:
    """Grades appended to the pool file itself would corrupt it."""
    pool = world.root / "pool.jsonl"
    pool.write_text(
        json.dumps({"query_id": "q1", "doc_id": "d5", "query": "a", "document": "b", "grade": None})
        + "\n"
    )
    before = world.snapshot()
    with pytest.raises(InputError, match=r"the annotation file \(--out\) .* the pool \(POOL\)"):
        prepare_annotation(pool, "ann", pool, "0-3", 0)
    assert world.snapshot() == before


def test_files_legitimately_read_and_written_pass(world: World) -> None:
    """history add's database is read and written on purpose; a report beside the inputs (not
    over them) is fine; /dev/null as an output clobbers nothing."""
    run_ok("run", "-c", str(world.config), "-o", "out", "--save-baseline", os.devnull)
    for _ in range(2):
        code, output = invoke("history", "add", "out/report.json", "--db", "h.sqlite")
        assert code == 0, output
    run_ok("score", str(world.qrels), str(world.run), "--out", ".")


# --- a run clears its own earlier files before it starts ------------------------------------------


def test_a_failed_run_leaves_none_of_its_earlier_reports(world: World) -> None:
    """A first run writes report.md and comment.md; a second one, whose run file turns out bad
    only while evaluating, must not leave them behind for CI to post. Files it does not write
    stay."""
    run_ok("run", "-c", str(world.config), "-o", "out")
    out = world.root / "out"
    assert {"report.json", "report.md", "comment.md", "run.x.trec"} <= {
        p.name for p in out.iterdir()
    }
    (out / "notes.txt").write_text("mine")
    first = world.run.read_text().splitlines()[0]
    world.run.write_text(world.run.read_text() + first + "\n")  # a document ranked twice
    code, output = invoke("run", "-c", str(world.config), "-o", "out", "--no-progress")
    assert code == 2, output
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]


def test_a_failed_comparison_leaves_none_of_its_earlier_files(world: World) -> None:
    run_ok("run", "-c", str(world.config), "-o", "a")
    run_ok("compare", "a/report.json", "a/report.json", "--out", "cmp")
    assert (world.root / "cmp" / "compare.md").is_file()
    other = make_set(world.root / "gs2")  # another golden set: B cannot be compared with A
    (other / "queries.jsonl").write_text(
        (other / "queries.jsonl").read_text().replace('"q0"', '"q0x"')
    )
    b = world.root / "b.yaml"
    b.write_text(CONFIG.format(golden=other, run=world.run).replace("q0", "q0"))
    code, output = invoke("compare", "a/report.json", str(b), "--out", "cmp", "--no-progress")
    assert code == 2, output
    assert sorted(p.name for p in (world.root / "cmp").iterdir()) == []


def test_a_link_among_the_earlier_reports_stays_a_link(world: World) -> None:
    """report.md linked to a file inside --out (not an input): its target is cleared, the link
    is written through again by the run."""
    out = world.root / "out"
    (out / "published").mkdir(parents=True)
    inside = out / "published" / "report.md"
    inside.write_text("an old report saying pass")
    (out / "report.md").symlink_to(inside)
    run_ok("run", "-c", str(world.config), "-o", "out")
    assert (out / "report.md").is_symlink()
    assert "an old report" not in inside.read_text()


def test_a_link_among_the_earlier_reports_that_leaves_out_is_refused(world: World) -> None:
    """report.md linked to a file outside --out: never written through nor removed (exit 2
    before any work, naming the link, its target and the directory); the target is
    byte-identical and the link stays."""
    elsewhere = world.root / "published" / "report.md"
    elsewhere.parent.mkdir()
    elsewhere.write_text("an old report saying pass")
    out = world.root / "out"
    out.mkdir()
    (out / "report.md").symlink_to(elsewhere)
    code, output = invoke("run", "-c", str(world.config), "-o", "out", "--no-progress")
    assert code == 2, output
    flat = output.replace("\n", "")
    assert "out/report.md" in flat and str(elsewhere) in flat and "outside out" in flat
    assert elsewhere.read_text() == "an old report saying pass"
    assert (out / "report.md").is_symlink() and not (out / "report.json").exists()


# --- write errors exit 2 --------------------------------------------------------------------------


def test_judgments_merge_write_error_is_exit_2(world: World) -> None:
    """--out under a regular file: exit 2 naming it (it was an internal error, exit 3)."""
    a = annotations(world.root / "a.jsonl", "a")
    (world.root / "file").write_text("a file")
    code, output = invoke(
        *("judgments", "merge", str(a), "--into", str(world.golden)),
        *("--out", str(world.root / "file" / "merged")),
    )
    assert code == 2, output
    assert "cannot write" in output and "Internal error" not in output


# --- the guard itself -----------------------------------------------------------------------------


def test_clashes_by_inode_and_by_tree(tmp_path: Path) -> None:
    """A hard link is the same file whatever its name; an output under a directory input lies in
    it even through a symbolic link to it; a missing input clobbers nothing."""
    from evalret.data.paths import Declared, Input, Output, clashes

    tree = tmp_path / "set"
    tree.mkdir()
    (tree / "a.txt").write_text("a")
    os.link(tree / "a.txt", tmp_path / "alias.txt")
    (tmp_path / "via").symlink_to(tree)
    declared = Declared(
        "test",
        [Input("the set", tree, tree=True), Input("the file", tmp_path / "alias.txt")],
        [
            Output("--x", tree / "a.txt"),
            Output("--y", tmp_path / "via" / "out", "dir", ("r.json",)),
            Output("--z", tmp_path / "elsewhere.txt"),
        ],
    )
    found = clashes(declared)
    assert any(f.startswith("--x") and "overwrite the file" in f for f in found)
    assert any(f.startswith("--x") and "write into the set" in f for f in found)
    assert any(f.startswith("--y") and "write into the set" in f for f in found)
    assert not any(f.startswith("--z") for f in found)
    missing = Declared(
        "test", [Input("gone", tmp_path / "gone")], [Output("--o", tmp_path / "gone")]
    )
    assert clashes(missing) == []


def test_annotate_grade_that_cannot_be_written_is_answered_with_the_reason(world: World) -> None:
    """A grade the annotation file cannot take (here the file became a directory) is not
    counted, and the page is told why (it shows ``error``), instead of a bare 500 and a
    traceback."""
    import asyncio

    from evalret.pipeline.annotate_app import AnnotateApp

    pool = world.root / "pool.jsonl"
    pool.write_text(
        json.dumps({"query_id": "q1", "doc_id": "d5", "query": "a", "document": "b", "grade": None})
        + "\n"
    )
    out = world.root / "grades.jsonl"
    setup = prepare_annotation(pool, "ann", out, "0-3", 0)
    out.unlink(missing_ok=True)
    out.mkdir()
    app = AnnotateApp(setup.session, setup.scale)
    app.port = 8765
    item = setup.session.state(setup.scale)["item"]["id"]
    body = json.dumps({"item": item, "grade": 2}).encode()
    scope = {
        "type": "http",
        "http_version": "1.1",
        "method": "POST",
        "path": "/api/grade",
        "raw_path": b"/api/grade",
        "query_string": b"",
        "root_path": "",
        "scheme": "http",
        "server": ("127.0.0.1", 8765),
        "client": ("127.0.0.1", 50000),
        "headers": [
            (b"host", b"127.0.0.1:8765"),
            (b"content-type", b"application/json"),
            (b"x-evalret-token", app.token.encode()),
            (b"content-length", str(len(body)).encode()),
        ],
    }
    sent: list[dict[str, object]] = []

    async def receive() -> dict[str, object]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    asyncio.run(app.starlette()(scope, receive, send))
    assert sent[0]["status"] == 500
    answer = json.loads(b"".join(m.get("body", b"") for m in sent[1:]))  # type: ignore[misc]
    assert f"cannot write annotations {out}" in answer["error"]
    assert setup.session.progress[0] == 0


ENCODER = """
import numpy as np

CALLS = []

class Encoder:
    def identity(self):
        return {"kind": "constant", "dim": 4}

    def encode(self, texts, kind):
        CALLS.append(len(texts))
        return np.ones((len(texts), 4), dtype=np.float32)

def make():
    return Encoder()
"""


def test_embed_into_a_cache_it_cannot_write_is_exit_2_before_embedding(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cache directory under a regular file: exit 2 naming it, and nothing embedded (it was
    exit 3 after embedding everything, the vectors lost)."""
    # a module name of its own: test_plugin_guard's guard_encoder must not be found in
    # sys.modules after this test
    (world.root / "outguard_encoder.py").write_text(ENCODER)
    monkeypatch.syspath_prepend(str(world.root))
    monkeypatch.delitem(sys.modules, "outguard_encoder", raising=False)
    import outguard_encoder  # type: ignore[import-not-found]

    config = world.root / "embed.yaml"
    config.write_text(
        f"golden_set: {{path: {world.golden}}}\n"
        "model: {provider: python, callable: 'outguard_encoder:make'}\n"
    )
    (world.root / "file").write_text("a file")
    cache = world.root / "file" / "cache"
    code, output = invoke("embed", "-c", str(config), "--dir", str(cache), "--no-progress")
    assert code == 2, output
    assert "cannot write the embedding cache" in " ".join(output.split())
    assert outguard_encoder.CALLS == []


def test_two_outputs_that_are_one_file_are_refused(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--save-baseline OUT/report.json (the baseline would replace the run's report.json and
    its run id) and a step summary that is OUT/report.md: exit 2 naming both, nothing written
    (both used to pass, the later write replacing the earlier)."""
    code, output = invoke(
        "run", "-c", str(world.config), "--out", "out", "--save-baseline", "out/report.json"
    )
    assert code == 2, output
    flat = " ".join(output.split())
    assert "--save-baseline out/report.json is also --out" in flat
    assert not Path("out/report.json").exists()
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", "out/report.md")
    code, output = invoke("score", str(world.qrels), str(world.run), "--out", "out")
    assert code == 2, output
    assert "$GITHUB_STEP_SUMMARY out/report.md is also --out" in " ".join(output.split())
    assert not Path("out/report.md").exists()
