"""evalret's own stores (data/stores.py): no output lands on a golden-set file or a cache file
(the judge's answers, the reranker's scores, the embedding cache), by path, hard or symbolic link,
or by lying inside one; a file at a cache's path that is not evalret's is refused untouched
before anything writes to it (engines/sqlite_table.py); an older evalret's cache is taken up; and
a cache answers only for what it was asked (every setting that decides an answer is in its key,
and what it gives back is checked as a fresh answer is)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest

from chat_server import ChatServer
from conftest import DEMO
from evalret.data.config import GoldenSetConfig
from evalret.data.goldenset import GoldenSet, load_golden_set
from evalret.data.stores import APPLICATION_ID, JUDGE_ANSWERS, RERANK_SCORES, CacheRoot
from evalret.engines.sqlite_table import SqliteTable
from evalret.errors import InputError
from helpers import HashEmbedder, cranfield_like, invoke, make_set
from rerank_server import RerankServer
from test_judge import judge_config, read_lines, truth_of, write_pool

ANSWERS = JUDGE_ANSWERS.file
SCORES = RERANK_SCORES.file
NOWHERE = "http://127.0.0.1:9/v1"  # nothing listens: a call that reached it would fail


@pytest.fixture(scope="module")
def demo() -> GoldenSet:
    return load_golden_set(GoldenSetConfig(path=DEMO))


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def listing(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (links not followed) and its sha256; SQLite's shared-memory
    index and an empty write-ahead log (no data: a reader may make or drop them) left out."""
    return {
        str(p.relative_to(folder)): digest(p)
        for p in sorted(folder.rglob("*"))
        if p.is_file()
        and not p.is_symlink()
        and not p.name.endswith("-shm")
        and not (p.name.endswith("-wal") and p.stat().st_size == 0)
    }


def judge(pool: Path, config: Path, out: Path, *more: str) -> tuple[int, str]:
    return invoke("judge", str(pool), "-c", str(config), "--out", str(out), "--no-progress", *more)


def flat(output: str) -> str:
    """The output with the terminal's line breaks taken out (a long path wraps)."""
    return output.replace("\n", "")


@pytest.fixture
def filled(tmp_path: Path, demo: GoldenSet) -> tuple[Path, Path, Path]:
    """A golden set copied into tmp_path, a config whose judge filled its answer cache (and a
    score cache and an embedding cache folder beside it), and a pool: (config, pool, cache)."""
    golden = tmp_path / "golden"
    shutil.copytree(DEMO, golden)
    pool = tmp_path / "pool.jsonl"
    write_pool(pool, demo, 2)
    with ChatServer(truth_of(demo)) as server:
        config = judge_config(tmp_path, server)
        code, out = judge(pool, config, tmp_path / "labels.jsonl")
        assert code == 0, out
    text = config.read_text().replace(json.dumps(str(DEMO)), json.dumps(str(golden)))
    config.write_text(text)
    cache = tmp_path / "cache"
    scores = SqliteTable(RERANK_SCORES, CacheRoot(cache, "cache.dir"))
    scores.put([("k", 1.5)])
    scores.close()
    (cache / "embeddings" / ("0" * 32)).mkdir(parents=True)
    (cache / "embeddings" / ("0" * 32) / "identity.json").write_text("{}")
    (cache / "indexes").mkdir()
    return config, pool, cache


# --- outputs never land on the golden set or on a store ---------------------------------------


def _same(path: Path, where: Path) -> Path:
    return path


def _hardlink(path: Path, where: Path) -> Path:
    link = where / f"hard-{path.name}"
    os.link(path, link)
    return link


def _symlink(path: Path, where: Path) -> Path:
    link = where / f"sym-{path.name}"
    link.symlink_to(path)
    return link


WAYS: dict[str, Callable[[Path, Path], Path]] = {
    "is": _same,
    "hardlink": _hardlink,
    "symlink": _symlink,
}


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize(
    ("target", "named"),
    [
        ("golden/queries.jsonl", "the golden set"),
        ("golden/corpus.jsonl", "the golden set"),
        (f"cache/{ANSWERS}", "the judge's answer cache (cache.dir)"),
        (f"cache/{SCORES}", "the reranker's score cache (cache.dir)"),
    ],
)
def test_judge_out_is_never_a_golden_set_file_or_a_cache_file(
    filled: tuple[Path, Path, Path], way: str, target: str, named: str
) -> None:
    """`judge POOL --out` on the config's golden set (read from a pool, so the golden set is
    not otherwise read) or on a cache file, by its path or a hard or symbolic link to it: exit
    2 naming both, before a request; every input byte-identical."""
    config, pool, cache = filled
    root = config.parent
    victim = root / target
    out = WAYS[way](victim, root)
    before = {**listing(root / "golden"), **listing(cache)}
    code, output = judge(pool, config, out)  # its judge's server is gone: a request is exit 3
    assert code == 2, output
    assert named in flat(output) and victim.name in flat(output)
    assert {**listing(root / "golden"), **listing(cache)} == before


@pytest.mark.parametrize(
    "out",
    ["cache/embeddings/labels.jsonl", f"cache/embeddings/{'0' * 32}/labels.jsonl"],
)
def test_judge_out_inside_the_embedding_cache_is_refused(
    filled: tuple[Path, Path, Path], out: str
) -> None:
    """A labels file inside the embedding cache's folder: exit 2 naming it; nothing written."""
    config, pool, cache = filled
    before = listing(cache)
    code, output = judge(pool, config, config.parent / out)
    assert code == 2 and "the embedding cache (cache.dir)" in flat(output), output
    assert listing(cache) == before


def test_judge_out_on_the_cache_directory_is_refused(filled: tuple[Path, Path, Path]) -> None:
    """--out the cache directory itself: a directory, not a file to write (exit 2)."""
    config, pool, cache = filled
    before = listing(cache)
    code, output = judge(pool, config, cache)
    assert code == 2 and "is a directory" in flat(output), output
    assert listing(cache) == before


def test_a_trec_golden_sets_files_are_inputs_of_judge(tmp_path: Path, demo: GoldenSet) -> None:
    """A TREC golden set (its qrels file, queries and corpus beside it): --out on any is refused."""
    qrels = cranfield_like(tmp_path / "trec")
    pool = tmp_path / "pool.jsonl"
    write_pool(pool, demo, 1)
    with ChatServer({}) as server:
        config = judge_config(tmp_path, server)
    config.write_text(config.read_text().replace(json.dumps(str(DEMO)), json.dumps(str(qrels))))
    for victim in sorted(p for p in qrels.parent.iterdir() if p.is_file()):
        before = digest(victim)
        code, output = judge(pool, config, victim)
        assert code == 2 and victim.name in flat(output), output
        assert digest(victim) == before


def test_run_outputs_never_land_on_a_store(filled: tuple[Path, Path, Path], tmp_path: Path) -> None:
    """`run --save-baseline` on the answer cache, `--out` inside the embedding cache: exit 2
    naming the store, before any work."""
    config, _, cache = filled
    before = listing(cache)
    for extra, named in (
        (["--save-baseline", str(cache / ANSWERS)], "the judge's answer cache"),
        (["--out", str(cache / "embeddings" / "reports")], "the embedding cache"),
        (["--out", str(cache / "indexes")], "the cache's index graphs"),
    ):
        args = ["run", "-c", str(config), "--no-progress", *extra]
        if "--out" not in extra:
            args += ["--out", str(tmp_path / "out")]
        code, output = invoke(*args)
        assert code == 2 and named in flat(output), output
    assert listing(cache) == before and not (tmp_path / "out" / "report.json").exists()


def test_the_default_cache_is_an_input_of_every_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Commands that read no config (score, history) still never write over the stores of
    $EVALRET_CACHE_DIR: exit 2 naming it."""
    default = tmp_path / "default-cache"
    monkeypatch.setenv("EVALRET_CACHE_DIR", str(default))
    answers = SqliteTable(JUDGE_ANSWERS, CacheRoot(default, "$EVALRET_CACHE_DIR"))
    answers.put([("k", 2, "##final score: 2", "2026-01-01T00:00:00Z")])
    answers.close()
    (default / "embeddings").mkdir()
    before = listing(default)
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\n")
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d1 1 1.0 x\n")
    code, output = invoke(
        "score", str(qrels), f"x={run}", "--out", str(default / "embeddings"), "--no-progress"
    )
    assert code == 2 and "the embedding cache ($EVALRET_CACHE_DIR)" in flat(output), output
    code, output = invoke("history", "report", "--db", str(default / ANSWERS), "-o", "t.html")
    assert code == 2, output
    report = tmp_path / "report.json"
    shutil.copyfile(DEMO.parent.parent / "baselines" / "demo.json", report)
    code, output = invoke("history", "add", str(report), "--db", str(default / ANSWERS))
    assert code == 2 and "the judge's answer cache ($EVALRET_CACHE_DIR)" in flat(output), output
    assert listing(default) == before


# --- a file at a cache's path that is not evalret's ----------------------------------------------


def _foreign_app(path: Path) -> None:
    with closing(sqlite3.connect(path)) as db, db:
        db.execute("PRAGMA application_id = 42")
        db.execute("CREATE TABLE notes (x)")
        db.execute("INSERT INTO notes VALUES ('keep me')")


def _other_table(path: Path) -> None:
    with closing(sqlite3.connect(path)) as db, db:
        db.execute("CREATE TABLE notes (x)")
        db.execute("INSERT INTO notes VALUES ('keep me')")


def _other_columns(path: Path) -> None:
    with closing(sqlite3.connect(path)) as db, db:
        db.execute("CREATE TABLE answers (key TEXT, grade TEXT)")
        db.execute("INSERT INTO answers VALUES ('k', 'high')")


def _one_table_more(path: Path) -> None:
    with closing(sqlite3.connect(path)) as db, db:
        db.execute(f"CREATE TABLE answers ({JUDGE_ANSWERS.columns})")
        db.execute("CREATE TABLE notes (x)")


def _wal_foreign(path: Path) -> None:
    with closing(sqlite3.connect(path)) as db, db:
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("CREATE TABLE notes (x)")
        db.execute("INSERT INTO notes VALUES ('keep me')")


def _score_cache(path: Path) -> None:
    """The reranker's score cache, made elsewhere and copied to the judge's path."""
    scratch = path.parent.parent.parent / "scratch"
    table = SqliteTable(RERANK_SCORES, CacheRoot(scratch, "cache.dir"))
    table.put([("k", 0.5)])
    table.close()
    shutil.copyfile(scratch / SCORES, path)


def _history(path: Path) -> None:
    report = DEMO.parent.parent / "baselines" / "demo.json"
    code, output = invoke("history", "add", str(report), "--db", str(path))
    assert code == 0, output


def _text(path: Path) -> None:
    path.write_text("a file of my own, not a database\n")


def _torn_sqlite(path: Path) -> None:
    path.write_bytes(b"SQLite format 3\x00" + b"\xff" * 200)


FOREIGN: dict[str, tuple[Callable[[Path], None], str]] = {
    "another-application": (_foreign_app, "another application (application id 42)"),
    "another-table": (_other_table, "holding table notes"),
    "other-columns": (_other_columns, "table answers has other columns"),
    "one-table-more": (_one_table_more, "holding table answers, table notes"),
    "wal-mode": (_wal_foreign, "holding table notes"),
    "score-cache": (_score_cache, "another evalret database holding table scores"),
    "history": (_history, "another evalret database holding"),
    "text": (_text, "not an SQLite file"),
    "torn-sqlite": (_torn_sqlite, "SQLite cannot read it"),
}


@pytest.mark.parametrize("kind", FOREIGN)
def test_judge_refuses_a_foreign_file_at_its_cache_path_untouched(
    tmp_path: Path,
    demo: GoldenSet,
    kind: str,
) -> None:
    """A file at judgments/judge.sqlite that is not evalret's answer cache: exit 2 naming the
    file and cache.dir, before any request, and the file (and any WAL beside it) byte-identical:
    no journal switch, no table made, no checkpoint. A dry run says the same."""
    make, says = FOREIGN[kind]
    store = tmp_path / "cache" / ANSWERS
    store.parent.mkdir(parents=True)
    make(store)
    before = listing(store.parent)
    pool = tmp_path / "pool.jsonl"
    write_pool(pool, demo, 2)
    with ChatServer(truth_of(demo)) as server:
        config = judge_config(tmp_path, server)
        for extra in ((), ("--dry-run",)):
            code, output = judge(pool, config, tmp_path / "labels.jsonl", *extra)
            assert code == 2, output
            text = flat(output)
            assert str(store) in text and "cache.dir" in text and says in text, output
            assert "Nothing was written to it" in text
        assert server.state.requests == 0
    assert listing(store.parent) == before
    assert not (tmp_path / "labels.jsonl").exists()


def test_a_directory_or_a_link_out_of_the_cache_is_refused(
    tmp_path: Path,
    demo: GoldenSet,
) -> None:
    """A directory at the store's path, and a symbolic link that leads out of the cache
    directory (even to an evalret store): exit 2, untouched."""
    pool = tmp_path / "pool.jsonl"
    write_pool(pool, demo, 1)
    store = tmp_path / "cache" / ANSWERS
    store.mkdir(parents=True)
    with ChatServer(truth_of(demo)) as server:
        config = judge_config(tmp_path, server)
        code, output = judge(pool, config, tmp_path / "labels.jsonl")
        assert code == 2 and "not a regular file" in flat(output), output
        store.rmdir()
        elsewhere = tmp_path / "elsewhere"
        real = SqliteTable(JUDGE_ANSWERS, CacheRoot(elsewhere, "cache.dir"))
        real.put([("k", 1, "1", "2026-01-01T00:00:00Z")])
        real.close()
        store.symlink_to(elsewhere / ANSWERS)
        before = listing(elsewhere)
        code, output = judge(pool, config, tmp_path / "labels.jsonl")
        assert code == 2 and "a symbolic link leads it out of" in flat(output), output
        assert server.state.requests == 0
    assert listing(elsewhere) == before and store.is_symlink()


def test_a_link_inside_the_cache_directory_is_followed(
    tmp_path: Path,
    demo: GoldenSet,
) -> None:
    """judge.sqlite a link to a file inside the cache directory: used as the store."""
    pool = tmp_path / "pool.jsonl"
    pairs = write_pool(pool, demo, 1)
    cache = tmp_path / "cache"
    (cache / "judgments").mkdir(parents=True)
    (cache / ANSWERS).symlink_to(cache / "answers-v2.sqlite")
    with ChatServer(truth_of(demo)) as server:
        config = judge_config(tmp_path, server)
        code, output = judge(pool, config, tmp_path / "labels.jsonl")
        assert code == 0, output
        assert server.state.requests == len(pairs)
    with closing(sqlite3.connect(cache / "answers-v2.sqlite")) as db:
        assert db.execute("SELECT count(*) FROM answers").fetchone()[0] == len(pairs)


def _older(path: Path) -> None:
    """The answer cache as an evalret without application ids made it."""
    with closing(sqlite3.connect(path)) as db, db:
        db.execute("PRAGMA journal_mode = WAL")
        db.execute(f"CREATE TABLE IF NOT EXISTS answers ({JUDGE_ANSWERS.columns})")
        db.execute("INSERT INTO answers VALUES ('old', 2, 'kept', '2025-01-01T00:00:00Z')")


def _empty_database(path: Path) -> None:
    with closing(sqlite3.connect(path)) as db, db:
        db.execute("VACUUM")  # a header and nothing else


@pytest.mark.parametrize(
    "make", [_older, _empty_database, lambda p: p.touch()], ids=["older", "empty-db", "empty"]
)
def test_an_older_or_empty_cache_is_taken_up(
    tmp_path: Path,
    demo: GoldenSet,
    make: Callable[[Path], None],
) -> None:
    """An older evalret's answer cache (the same table, no application id), an empty SQLite
    database and an empty file: used, given evalret's application id, their rows kept."""
    store = tmp_path / "cache" / ANSWERS
    store.parent.mkdir(parents=True)
    make(store)
    pool = tmp_path / "pool.jsonl"
    pairs = write_pool(pool, demo, 1)
    with ChatServer(truth_of(demo)) as server:
        config = judge_config(tmp_path, server)
        code, output = judge(pool, config, tmp_path / "labels.jsonl")
        assert code == 0, output
        assert server.state.requests == len(pairs)
    with closing(sqlite3.connect(store)) as db:
        assert db.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
        rows = db.execute("SELECT count(*) FROM answers").fetchone()[0]
        old = db.execute("SELECT answer FROM answers WHERE key = 'old'").fetchall()
    assert rows == len(pairs) + (make is _older) and (old == [("kept",)]) == (make is _older)


def test_a_dry_run_creates_no_cache(tmp_path: Path, demo: GoldenSet) -> None:
    """`judge --dry-run` with no cache yet: nothing is written, the cache file included."""
    pool = tmp_path / "pool.jsonl"
    write_pool(pool, demo, 1)
    with ChatServer(truth_of(demo)) as server:
        config = judge_config(tmp_path, server)
        code, output = judge(pool, config, tmp_path / "labels.jsonl", "--dry-run")
    assert code == 0, output
    assert not (tmp_path / "cache").exists()


def _run_config(tmp_path: Path, body: str) -> Path:
    golden = make_set(tmp_path / "set")
    config = tmp_path / "c.yaml"
    config.write_text(
        f"golden_set: {{path: {golden}}}\nmetrics: [ndcg@10]\nhealth: {{enabled: false}}\n"
        f"cache: {{dir: {tmp_path / 'cache'}}}\n" + body
    )
    return config


BM25 = "indexes:\n  exact: {enabled: false}\n  hnsw: {enabled: false}\n  hybrid: {enabled: false}\n"


@pytest.mark.parametrize("store", ["answers", "scores"])
def test_run_refuses_a_foreign_cache_before_any_work(tmp_path: Path, store: str) -> None:
    """`run --judge` with a foreign file at the answer cache's path, a run with an HTTP
    reranker with one at the score cache's: exit 2 naming it before anything is retrieved, no
    report written, the file byte-identical."""
    body = BM25 + (
        "  rr: {type: rerank, of: bm25, k: 5, reranker: {provider: http, "
        f"base_url: '{NOWHERE}', model: m}}}}\n"
    )
    if store == "answers":
        body += f"judge: {{name: j, base_url: '{NOWHERE}', api_key_env: null}}\n"
        path, extra = tmp_path / "cache" / ANSWERS, ["--judge"]
    else:
        path, extra = tmp_path / "cache" / SCORES, []
    config = _run_config(tmp_path, body)
    path.parent.mkdir(parents=True)
    _foreign_app(path)
    before = listing(path.parent)
    out = tmp_path / "out"
    code, output = invoke("run", "-c", str(config), "--out", str(out), "--no-progress", *extra)
    assert code == 2 and str(path) in flat(output) and "application id 42" in flat(output), output
    assert listing(path.parent) == before and not (out / "report.json").exists()


# --- a cache answers only for what it was asked -------------------------------------------------


def _prompt_config(tmp_path: Path, server: ChatServer, **judge: object) -> Path:
    (tmp_path / "prompt.txt").write_text(
        "Grade it.\nQuery: {query}\n\nPassage: {document}\n\nAnswer: a number.\n"
    )
    server.state.answer_format = "bare"
    return judge_config(tmp_path, server, prompt="prompt.txt", **judge)


@pytest.mark.parametrize(
    "change", [{"scale": "0-1"}, {"temperature": 0.7}, {"request_fields": {"seed": 7}}]
)
def test_a_setting_that_decides_the_answer_asks_again(
    tmp_path: Path,
    demo: GoldenSet,
    change: dict[str, object],
) -> None:
    """The same prompt file (which does not name the scale) under another judge.scale,
    temperature or request fields: nothing is answered from the cache; the labels of a 0-1
    scale are all on it."""
    pool = tmp_path / "pool.jsonl"
    pairs = write_pool(pool, demo, 3)
    labels = tmp_path / "labels.jsonl"
    with ChatServer(truth_of(demo)) as server:
        code, output = judge(pool, _prompt_config(tmp_path, server), labels)
        assert code == 0 and server.state.requests == len(pairs), output
        code, output = judge(pool, _prompt_config(tmp_path, server), labels, "--dry-run")
        assert f"{len(pairs)} answers cached, 0 to ask" in output
        if change.get("scale") == "0-1":
            server.state.scale = (0, 1)
            server.state.truth = {k: min(v, 1) for k, v in server.state.truth.items()}
        config = _prompt_config(tmp_path, server, **change)
        code, output = judge(pool, config, labels, "--dry-run")
        assert f"0 answers cached, {len(pairs)} to ask" in output, output
        code, output = judge(pool, config, labels)
        assert code == 0 and server.state.requests == 2 * len(pairs), output
    if change.get("scale") == "0-1":
        assert {line["grade"] for line in read_lines(labels)} <= {0, 1}


@pytest.mark.parametrize("bad", [99, -1, "two", 2.5], ids=["99", "minus-1", "text", "real"])
def test_a_cached_grade_off_the_scale_is_asked_again(
    tmp_path: Path,
    demo: GoldenSet,
    bad: object,
) -> None:
    """A cached row whose grade is not an integer on the scale (99, -1, text, a real) is read
    as a fresh answer would be: not used, asked again (the dry run and the summary say so), and
    never a label."""
    pool = tmp_path / "pool.jsonl"
    pairs = write_pool(pool, demo, 2)
    labels = tmp_path / "labels.jsonl"
    with ChatServer(truth_of(demo)) as server:
        config = judge_config(tmp_path, server)
        code, output = judge(pool, config, labels)
        assert code == 0, output
        with closing(sqlite3.connect(tmp_path / "cache" / ANSWERS)) as db, db:
            db.execute(
                "UPDATE answers SET grade = ? WHERE rowid = (SELECT min(rowid) FROM answers)",
                (bad,),
            )
        code, output = judge(pool, config, labels, "--dry-run")
        said = flat(output)
        assert f"{len(pairs) - 1} answers cached, 1 to ask" in said, output
        assert "1 cached answer(s) off the scale, not used: asked again" in said
        code, output = judge(pool, config, labels)
        assert code == 0 and server.state.requests == len(pairs) + 1, output
    assert {line["grade"] for line in read_lines(labels)} <= {0, 1, 2, 3}
    code, output = judge(pool, config, labels, "--dry-run")
    assert f"{len(pairs)} answers cached, 0 to ask" in flat(output)


def test_run_judge_does_not_label_with_a_cached_grade_off_the_scale(
    tmp_path: Path,
    demo: GoldenSet,
) -> None:
    """`run --judge-cache-only` with a cached 99: not a label; the run's judge section counts it."""
    from test_judge import run_config

    with ChatServer(truth_of(demo)) as server:
        config = run_config(tmp_path, server)
        base = ["run", "-c", str(config), "--no-progress", "--out"]
        code, output = invoke(*base, str(tmp_path / "judged"), "--judge")
        assert code in (0, 1), output
        with closing(sqlite3.connect(tmp_path / "cache" / ANSWERS)) as db, db:
            db.execute("UPDATE answers SET grade = 99")
        code, output = invoke(*base, str(tmp_path / "cached"), "--judge-cache-only")
        assert code in (0, 1), output
    section = json.loads((tmp_path / "cached" / "report.json").read_text())["judge"]
    assert section["labelled"] == 0 and section["cache_unusable"] == section["pairs"] > 0
    assert "off the scale, not used" in flat(output)


@pytest.mark.parametrize("bad", [None, float("inf"), "high"], ids=["null", "inf", "text"])
def test_a_cached_score_that_is_not_finite_is_scored_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bad: object
) -> None:
    """A cached rerank score that is NULL, infinite or text: not used (that query is asked
    again), the index's cache note says so; no TypeError, no infinite score in the ranking."""
    from evalret.data.config import parse_config
    from evalret.pipeline.evaluate import run_evaluation

    with RerankServer() as server:
        body = BM25.replace("exact: {enabled: false}", "exact: {enabled: true}") + (
            "  rr: {type: rerank, of: bm25, k: 5, reranker: {provider: http, "
            f"base_url: '{server.base_url}', model: rerank-served}}}}\n"
        )
        config = _run_config(tmp_path, body)
        cfg = parse_config(config.read_text(), str(config))
        first = run_evaluation(cfg, embedder=HashEmbedder())
        asked = server.state.requests
        with closing(sqlite3.connect(tmp_path / "cache" / SCORES)) as db, db:
            db.execute(
                "UPDATE scores SET score = ? WHERE rowid = (SELECT min(rowid) FROM scores)", (bad,)
            )
        again = run_evaluation(cfg, embedder=HashEmbedder())
        # only the one document is asked again (for each query of that text: a score is kept
        # by query text)
        assert server.state.requests > asked
        assert [len(b["documents"]) for b in server.state.bodies[asked:]] == [1] * (
            server.state.requests - asked
        )
    assert again.report.indexes["rr"].top_ids == first.report.indexes["rr"].top_ids
    notes = json.dumps(again.report.model_dump(mode="json"))
    assert "1 cached scores were not finite numbers, scored again" in notes


def test_the_cross_encoders_cache_key_holds_its_device_and_libraries(tmp_path: Path) -> None:
    """A CrossEncoder's scores are keyed as the embedding cache keys vectors: its identity (the
    fingerprint) plus the device and library versions, which the identity leaves out."""
    from evalret.data.config import CrossEncoderRerankerConfig
    from evalret.engines.rerankers import CrossEncoderReranker

    (tmp_path / "ce").mkdir()
    (tmp_path / "ce" / "model.safetensors").write_bytes(b"weights")
    keys = []
    for device in ("cpu", "cuda:1"):
        reranker = CrossEncoderReranker(
            CrossEncoderRerankerConfig(
                provider="cross-encoder", path=tmp_path / "ce", device=device
            )
        )
        identity, cached = reranker.identity(), reranker.cache_identity()
        assert "device" not in identity and cached["device"] == device
        assert set(cached["versions"]) == {"sentence-transformers", "transformers", "torch"}
        keys.append(json.dumps(cached, sort_keys=True))
    assert keys[0] != keys[1]


def test_a_store_read_never_writes(tmp_path: Path) -> None:
    """Reading an evalret store (lookups only) leaves it byte-identical; the same file at the
    other store's path is refused, before the write."""
    table = SqliteTable(JUDGE_ANSWERS, CacheRoot(tmp_path, "cache.dir"))
    table.put([("k", 1, "1", "2026-01-01T00:00:00Z")])
    table.close()
    before = listing(tmp_path)
    reader = SqliteTable(JUDGE_ANSWERS, CacheRoot(tmp_path, "cache.dir"))
    assert list(reader.select("grade", ["k", "other"])) == [("k", 1)]
    reader.close()
    assert listing(tmp_path) == before
    (tmp_path / SCORES).parent.mkdir()
    shutil.copyfile(tmp_path / ANSWERS, tmp_path / SCORES)
    scores = SqliteTable(RERANK_SCORES, CacheRoot(tmp_path, "cache.dir"))
    with pytest.raises(InputError, match="another evalret database holding table answers"):
        scores.put([("k", 1.0)])
    assert digest(tmp_path / SCORES) == digest(tmp_path / ANSWERS)


def test_an_answer_cache_that_cannot_be_written_is_exit_2(
    tmp_path: Path,
    demo: GoldenSet,
) -> None:
    """An immutable answer cache (read-only even for root): a dry run reads it; a run that must
    keep an answer stops with exit 2 naming it (a write error), the file byte-identical."""
    from test_atomic import immutable

    pool = tmp_path / "pool.jsonl"
    pairs = write_pool(pool, demo, 1)
    with ChatServer(truth_of(demo)) as server:
        config = judge_config(tmp_path, server)
        code, output = judge(pool, config, tmp_path / "labels.jsonl", "--limit", "1")
        assert code == 0, output
        store = tmp_path / "cache" / ANSWERS
        before = digest(store)
        with immutable(store):
            code, output = judge(pool, config, tmp_path / "labels.jsonl", "--dry-run")
            assert code == 0 and f"1 answers cached, {len(pairs) - 1} to ask" in output, output
            code, output = judge(pool, config, tmp_path / "labels.jsonl")
        assert code == 2, output
        assert "cannot write the judge's answer cache" in flat(output) and str(store) in flat(
            output
        )
    assert digest(store) == before
