"""evalret history: the trend arithmetic (core.trend), the SQLite store (data.history: WAL, one
transaction per add, concurrent adds, foreign and damaged files refused), `history add | show |
report` on real reports of the packaged model, the trend page in headless Chromium, and the
composite action's history step."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import sqlite3
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from conftest import DEMO, REPO
from evalret.cli import app
from evalret.core.trend import EntryPrint, changed_parts, segments, trend_points
from evalret.data.baseline import load_baseline
from evalret.data.history import (
    APPLICATION_ID,
    DEFAULT_PATH,
    add_report,
    read_history,
)
from evalret.data.schema import RunReport
from evalret.report.numbers import PLAIN, number
from evalret.report.svg import TrendLine, trend_chart
from helpers import invoke, marks_its_users
from test_report_html import assert_clean, open_page

SVG = "{http://www.w3.org/2000/svg}"
runner = CliRunner()


def show(*args: str) -> str:
    """`evalret history show` output, wide enough that no cell is cut."""
    result = runner.invoke(app, ["history", "show", *args], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    return result.output


# --- core.trend --------------------------------------------------------------------------------


def test_changed_parts_and_segments() -> None:
    """Entry 2 changes the model (the trend goes on), entry 3 the metric definitions and entry 4
    the golden set (each starts a new segment)."""
    prints = [
        EntryPrint("g1", "d1", "m1", "i1"),
        EntryPrint("g1", "d1", "m2", "i1"),
        EntryPrint("g1", "d2", "m2", "i1"),
        EntryPrint("g2", "d2", "m2", "i2"),
    ]
    changed = changed_parts(prints)
    assert changed == [(), ("model",), ("metric definitions",), ("golden set", "indexes")]
    assert segments(changed) == [0, 0, 1, 2]


def test_trend_points_change_within_a_segment_only() -> None:
    """Changes are taken from the previous entry with a value in the same segment; a missing
    value is skipped over, a break is not crossed; since_baseline counts from the latest earlier
    baseline of the segment."""
    values = [0.50, 0.60, None, 0.55, 0.70, 0.65]
    segment = [0, 0, 0, 0, 1, 1]
    baseline = [True, False, False, True, False, False]
    points = trend_points(values, segment, baseline)
    # 0.60 - 0.50 = +0.10; None skipped: 0.55 - 0.60 = -0.05; 0.70 starts segment 1
    changes = [p.change for p in points]
    assert changes[0] is None and changes[2] is None and changes[4] is None
    assert changes[1] == pytest.approx(0.10) and changes[3] == pytest.approx(-0.05)
    assert changes[5] == pytest.approx(-0.05)  # 0.65 - 0.70
    since = [p.since_baseline for p in points]
    # entry 1 is the baseline (0.50): entry 2 +0.10, entry 4 +0.05 (its own mark counts later)
    assert since[1] == pytest.approx(0.10) and since[3] == pytest.approx(0.05)
    assert since[0] is None and since[4] is None and since[5] is None  # no baseline in segment 1
    assert trend_points([float("nan"), 0.4], [0, 0], [False, False])[1].change is None


def test_trend_chart_marks_baselines_restarts_and_breaks_lines() -> None:
    """Two lines over four entries with a restart before entry 3: each line is drawn in two
    pieces, a point per value, a ring per baseline point, one dashed restart line; label text
    is escaped."""
    svg = trend_chart(
        ["a", "<b>", "c", "d"],
        [
            TrendLine("exact", [0.5, 0.6, 0.4, 0.45], ["t"] * 4, "#000", [(0.4, 0.6)] * 4),
            TrendLine("hnsw", [0.5, None, 0.4, 0.41], ["u"] * 4, "#111"),
        ],
        segment=[0, 0, 1, 1],
        baseline=[True, False, False, False],
        restarts=["", "", "new golden set", ""],
        label="trend <x>",
        y_label="ndcg@10",
    )
    root = ET.fromstring(svg)

    def count(tag: str, cls: str) -> int:
        return len([e for e in root.iter(f"{SVG}{tag}") if e.get("class") == cls])

    # exact: two 2-point runs; hnsw: a lone point in segment 0 (no path), one run in segment 1
    assert count("path", "trend") == 3 and count("path", "band") == 2
    assert count("circle", "point") == 7 and count("circle", "baseline-mark") == 2
    assert count("g", "restart") == 1
    assert "<b>" in "".join(root.itertext()) and "<b>" not in svg.replace("&lt;b&gt;", "")


# --- real reports ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reports:
    base: Path  # the demo with the packaged model, saved as a baseline
    ef: Path  # hnsw ef_search 16, gated against base: an index setting changed
    level: Path  # relevance_level 2: the metric definitions changed


def _run(tmp: Path, name: str, extra: str, *args: str) -> Path:
    cfg = tmp / f"{name}.yaml"
    cfg.write_text(f"golden_set:\n  path: {DEMO}\n{extra}")
    code, out = invoke("run", "-c", str(cfg), "-o", str(tmp / name), "--no-progress", *args)
    assert code in (0, 1), out
    return tmp / name / "report.json"


@pytest.fixture(scope="module")
@marks_its_users("model")
def reports(tmp_path_factory: pytest.TempPathFactory) -> Reports:
    """Three real runs on the demo set (the test session's embedding cache makes the second and
    third cheap)."""
    tmp = tmp_path_factory.mktemp("history-runs")
    base = _run(tmp, "base", "", "--save-baseline", str(tmp / "baseline.json"))
    ef = _run(tmp, "ef", "indexes:\n  hnsw:\n    ef_search: 16\n", "-b", str(tmp / "baseline.json"))
    level = _run(tmp, "level", "relevance_level: 2\n")
    return Reports(base, ef, level)


def value(report: RunReport, index: str, slice_name: str, metric: str) -> float:
    v = report.indexes[index].slices[slice_name].metrics[metric].value
    assert v is not None
    return v


def test_two_reports_show_up_in_history_show(reports: Reports, tmp_path: Path) -> None:
    """Two added reports: the table lists both, newest last, with each value and the change
    from the previous entry; a filter by metric (any case), slice and index narrows it."""
    db = tmp_path / "h.sqlite"
    code, out = invoke(
        "history",
        "add",
        str(reports.base),
        "--db",
        str(db),
        "--label",
        "main",
        "--commit",
        "0123456789abcdef",
        "--baseline",
    )
    assert code == 0 and "added entry 1 (main)" in out, out
    code, out = invoke("history", "add", str(reports.ef), "--db", str(db), "--commit", "feedbee")
    assert code == 0 and "added entry 2 (feedbee)" in out, out
    base, ef = load_baseline(reports.base), load_baseline(reports.ef)
    out = show("--db", str(db))
    assert "index exact, slice all" in out
    assert out.index("main") < out.index("feedbee"), "newest last"
    assert "0123456789ab" in out and "yes" in out and "indexes" in out  # ef_search changed
    for metric in base.fingerprint.metrics["names"]:
        assert metric in out
        assert number(value(ef, "exact", "all", metric), medium=PLAIN) in out
    out = show("--db", str(db), "-m", "NDCG@10", "-s", "tail", "-i", "hnsw")
    assert "index hnsw, slice tail" in out and "mrr@10" not in out
    change = value(ef, "hnsw", "tail", "ndcg@10") - value(base, "hnsw", "tail", "ndcg@10")
    assert number(change, signed=True, medium=PLAIN) in out
    for option, name in (("-m", "ndcg@11"), ("-s", "nope"), ("-i", "ivf")):
        code, out = invoke("history", "show", "--db", str(db), option, name)
        assert code == 2 and "not in history" in out and "it holds" in out, out


def test_a_changed_metric_definition_restarts_the_trend(reports: Reports, tmp_path: Path) -> None:
    """A report with another relevance level is marked "(trend restarts)": its change is empty
    in the table and in the stored view, while a new index setting keeps the trend going."""
    from evalret.commands.history import history_view

    db = tmp_path / "h.sqlite"
    for path in (reports.base, reports.ef, reports.level):
        assert invoke("history", "add", str(path), "--db", str(db))[0] == 0
    view = history_view(
        db=db, config=None, indexes=None, slices=None, metrics=["recall@10"], all_by_default=False
    )
    # entry 3 also has hnsw's default ef_search again
    assert [r.changed for r in view.rows] == [
        (),
        ("indexes",),
        ("metric definitions", "indexes"),
    ]
    points = view.series[("exact", "all", "recall@10")].points
    level = load_baseline(reports.level)
    assert points[2].value == value(level, "exact", "all", "recall@10")
    assert points[1].change is not None and points[2].change is None
    out = show("--db", str(db), "-m", "recall@10")
    assert "metric definitions, indexes (trend restarts)" in out


# --- the trend page in Chromium ----------------------------------------------------------------

TREND_FACTS = """() => {
  const q = (s) => document.querySelectorAll(s);
  return {
    title: document.title,
    charts: q('svg.trend-chart').length,
    points: q('svg.trend-chart circle.point').length,
    rings: q('svg.trend-chart circle.baseline-mark').length,
    restarts: q('svg.trend-chart g.restart').length,
    rows: q('table.entries tbody tr').length,
    sections: [...q('main > section')].map((s) => s.id),
    images: q('img').length,
    text: document.body.innerText,
  };
}"""


def trend_facts(browser: Any, html: Path) -> dict[str, Any]:
    page = browser.new_page()
    page.goto(html.resolve().as_uri(), wait_until="load")
    facts: dict[str, Any] = page.evaluate(TREND_FACTS)
    page.close()
    return facts


HOSTILE = (
    '<script>document.title="pwned"</script><img src="http://example.invalid/x.png">\x1b[2J\u202e'
)


def test_trend_page_in_chromium(reports: Reports, browser: Any, tmp_path: Path) -> None:
    """Three reports (a baseline, an index change, a definition change) with a hostile label:
    trend.html loads clean (no error, nothing fetched, no script, also on a phone-sized screen),
    has a chart per slice and metric, a point per index and entry, the baseline ringed, the
    restart marked, and shows the label as text."""
    db = tmp_path / "h.sqlite"
    assert invoke("history", "add", str(reports.base), "--db", str(db), "--baseline")[0] == 0
    assert invoke("history", "add", str(reports.ef), "--db", str(db), "--label", HOSTILE)[0] == 0
    assert invoke("history", "add", str(reports.level), "--db", str(db))[0] == 0
    code, out = invoke("history", "report", "--db", str(db), "-o", str(tmp_path / "trend.html"))
    assert code == 0 and "trend.html" in out, out
    html = (tmp_path / "trend.html").read_text(encoding="utf-8")
    assert "<script" not in html and "<img" not in html and "\x1b" not in html
    loaded = open_page(browser, tmp_path / "trend.html", "trend")
    assert_clean(loaded)
    assert loaded.dom["verdict"] == "3 ENTRIES"
    assert_clean(open_page(browser, tmp_path / "trend.html", "trend-narrow", width=390))
    facts = trend_facts(browser, tmp_path / "trend.html")
    base = load_baseline(reports.base)
    n_metrics, n_indexes = len(base.fingerprint.metrics["names"]), len(base.indexes)
    slices = list(base.slices)
    assert facts["title"] == "evalret history" and facts["images"] == 0
    assert facts["sections"] == ["entries", *(f"slice-{s}" for s in slices)]
    assert facts["charts"] == len(slices) * n_metrics
    assert facts["points"] == facts["charts"] * n_indexes * 3
    assert facts["rings"] == facts["charts"] * n_indexes  # entry 1 is the only baseline
    assert facts["restarts"] == facts["charts"] and facts["rows"] == 3
    assert '<script>document.title="pwned"</script>' in facts["text"]
    assert "\\x1b[2J\\u202e" in facts["text"]  # controls shown, not obeyed
    assert "metric definitions, indexes (trend restarts)" in facts["text"]


def test_hostile_label_in_the_terminal(reports: Reports, tmp_path: Path) -> None:
    """A label with an escape sequence and markup is shown, not obeyed, by add and show."""
    db = tmp_path / "h.sqlite"
    code, out = invoke("history", "add", str(reports.base), "--db", str(db), "--label", HOSTILE)
    assert code == 0 and "\x1b" not in out and "\\x1b[2J" in out, out
    out = show("--db", str(db), "-m", "ndcg@10")
    assert "\x1b" not in out and "\u202e" not in out and "\\x1b[2J" in out


# --- concurrency -------------------------------------------------------------------------------


def test_two_concurrent_history_add_processes_both_land(reports: Reports, tmp_path: Path) -> None:
    """Two `evalret history add` processes started at once on a new database both exit 0 and
    both entries are there, whole."""
    db = tmp_path / "h.sqlite"
    children = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "evalret",
                "history",
                "add",
                str(path),
                "--db",
                str(db),
                "--label",
                label,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for path, label in ((reports.base, "one"), (reports.ef, "two"))
    ]
    outputs = [c.communicate(timeout=120)[0] for c in children]
    assert [c.returncode for c in children] == [0, 0], outputs
    history = read_history(db)
    assert sorted(e.label or "" for e in history.entries) == ["one", "two"]
    per_report = {
        e.label: sum(
            len(s.metrics)
            for r in load_baseline(Path(e.source)).indexes.values()
            for s in r.slices.values()
        )
        for e in history.entries
    }
    for e in history.entries:
        assert len([v for v in history.values if v.entry == e.id]) == per_report[e.label]


def _add_many(db: str, report: str, barrier: Any, worker: int, n: int) -> None:
    loaded = load_baseline(Path(report))
    barrier.wait()
    for i in range(n):
        add_report(Path(db), loaded, source=report, report_sha256="-", label=f"{worker}-{i}")


def test_many_writers_at_once_on_a_new_file(reports: Reports, tmp_path: Path) -> None:
    """Six processes released together by a barrier add four entries each to a file none of
    them has created yet: all 24 land, the file is in WAL mode with evalret's application id."""
    db = tmp_path / "h.sqlite"
    barrier = multiprocessing.Barrier(6)
    workers = [
        multiprocessing.Process(target=_add_many, args=(str(db), str(reports.base), barrier, w, 4))
        for w in range(6)
    ]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=120)
    assert [w.exitcode for w in workers] == [0] * 6
    history = read_history(db)
    assert sorted(e.label or "" for e in history.entries) == sorted(
        f"{w}-{i}" for w in range(6) for i in range(4)
    )
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID


# --- refused files -----------------------------------------------------------------------------


def test_foreign_and_damaged_files_are_refused_untouched(reports: Reports, tmp_path: Path) -> None:
    """A file that is not SQLite, another application's SQLite database, a directory, a newer
    schema, a truncated and a garbled history: add, show and report exit 2 naming the file, and
    the foreign files are left byte for byte as they were."""
    junk = tmp_path / "junk.db"
    junk.write_bytes(bytes(range(256)) * 20)
    foreign = tmp_path / "foreign.db"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE notes (x TEXT)")
        conn.execute("INSERT INTO notes VALUES ('mine')")
    conn.close()
    good = tmp_path / "good.sqlite"
    for _ in range(30):  # enough pages that half a file loses some
        add_report(good, load_baseline(reports.base), source="r", report_sha256="-")
    with sqlite3.connect(good) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    data = good.read_bytes()
    truncated = tmp_path / "truncated.sqlite"
    truncated.write_bytes(data[: len(data) // 2])
    garbled = tmp_path / "garbled.sqlite"
    garbled.write_bytes(data[:8192] + b"\x55" * 4096 + data[8192 + 4096 :])
    newer = tmp_path / "newer.sqlite"
    shutil.copy(good, newer)
    with sqlite3.connect(newer) as conn:
        conn.execute("PRAGMA user_version = 99")
    conn.close()
    expected = {
        junk: "not an SQLite file",
        foreign: "another application",
        tmp_path: "not a regular file",
        newer: "use a newer evalret",
        truncated: "is damaged",
        garbled: "is damaged",
    }
    before = {p: p.read_bytes() for p in (junk, foreign)}
    for path, message in expected.items():
        for args in (
            ("history", "add", str(reports.base), "--db", str(path)),
            ("history", "show", "--db", str(path)),
            ("history", "report", "--db", str(path), "-o", str(tmp_path / "t.html")),
        ):
            code, out = invoke(*args)
            assert code == 2 and message in out and path.name in out, (args, out)
    assert {p: p.read_bytes() for p in (junk, foreign)} == before
    assert not (tmp_path / "t.html").exists()


def test_bad_reports_missing_databases_and_empty_histories(tmp_path: Path) -> None:
    """A report that is not JSON or not a run's report is refused naming the file (nothing is
    created); show of a missing database says how to create one; an empty file is an empty
    history."""
    broken = tmp_path / "report.json"
    broken.write_text('{"schema_version": 1,\n')
    db = tmp_path / "h.sqlite"
    code, out = invoke("history", "add", str(broken), "--db", str(db))
    assert code == 2 and "report.json" in out and not db.exists(), out
    compare = tmp_path / "compare.json"
    compare.write_text('{"schema_version": 1, "verdict": {}}\n')
    code, out = invoke("history", "add", str(compare), "--db", str(db))
    assert code == 2 and "is not an evalret baseline or report" in out and not db.exists()
    code, out = invoke("history", "show", "--db", str(db))
    assert code == 2 and "evalret history add REPORT --db" in out and not db.exists()
    db.touch()
    assert "has no entries yet" in show("--db", str(db))
    code, out = invoke("history", "report", "--db", str(db), "-o", str(tmp_path))
    assert code == 0 and "No entries yet" in (tmp_path / "trend.html").read_text()


# --- where the database is ---------------------------------------------------------------------


def test_database_path_from_the_config_and_the_default(
    reports: Reports, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """history.path of --config (relative to the config file) is used without --db; without
    either, evalret-history.sqlite in the current directory; report writes trend.html beside the
    database by default."""
    sub = tmp_path / "conf"
    sub.mkdir()
    (sub / "evalret.yaml").write_text("history:\n  path: store/trend.sqlite\n")
    code, out = invoke("history", "add", str(reports.base), "-c", str(sub / "evalret.yaml"))
    assert code == 0 and (sub / "store" / "trend.sqlite").is_file(), out
    code, out = invoke("history", "report", "-c", str(sub / "evalret.yaml"))
    assert code == 0 and (sub / "store" / "trend.html").is_file(), out
    monkeypatch.chdir(tmp_path)
    code, out = invoke("history", "add", str(reports.base))
    assert code == 0 and (tmp_path / DEFAULT_PATH).is_file(), out
    assert len(read_history(tmp_path / DEFAULT_PATH).entries) == 1


# --- the composite action ----------------------------------------------------------------------


def test_the_composite_action_appends_to_the_history(reports: Reports, tmp_path: Path) -> None:
    """The action's history step, run as GitHub runs it (bash, its env), appends the run's
    report with the commit and writes trend.html into the reports; it runs only when the input
    is set and the gate finished."""
    action = yaml.safe_load((REPO / ".github" / "actions" / "evalret" / "action.yml").read_text())
    assert action["inputs"]["history"]["default"] == ""
    step = next(s for s in action["runs"]["steps"] if s.get("name") == "Append to the history")
    assert "inputs.history != ''" in step["if"] and "exit-code == '1'" in step["if"]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "evalret"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m evalret "$@"\n')
    shim.chmod(0o755)
    out = tmp_path / "evalret-reports"
    out.mkdir()
    shutil.copy(reports.base, out / "report.json")
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "EVALRET_HISTORY": str(tmp_path / "history" / "evalret.sqlite"),
        "EVALRET_OUT": str(out),
        "EVALRET_COMMIT": "c0ffee0123456789",
    }
    for _ in range(2):
        done = subprocess.run(
            ["bash", "-e", "-c", step["run"]], env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stdout + done.stderr
    history = read_history(tmp_path / "history" / "evalret.sqlite")
    assert [e.commit for e in history.entries] == ["c0ffee0123456789"] * 2
    assert "c0ffee012345" in (out / "trend.html").read_text(encoding="utf-8")


# --- a read-only history; a long one (issue #23 items 10 and 11) --------------------------------

DEMO_REPORT = REPO / "baselines" / "demo.json"


def test_a_read_only_history_is_shown_and_drawn(tmp_path: Path) -> None:
    """show and report only read: a history in an immutable directory (a WAL database, whose
    shared-memory file cannot be made there) is shown and drawn, byte for byte untouched,
    instead of "cannot write history database"."""
    from test_atomic import immutable

    store = tmp_path / "store"
    db = store / "h.sqlite"
    for label in ("first", "second"):
        code, out = invoke("history", "add", str(DEMO_REPORT), "--db", str(db), "--label", label)
        assert code == 0, out
    before = db.read_bytes()
    with immutable(db), immutable(store):
        code, out = invoke("history", "show", "--db", str(db), "-m", "ndcg@10")
        assert code == 0 and "second" in out and "cannot" not in out, out
        code, out = invoke("history", "report", "--db", str(db), "-o", str(tmp_path / "t.html"))
        assert code == 0, out
    assert "second" in (tmp_path / "t.html").read_text(encoding="utf-8")
    assert db.read_bytes() == before and sorted(p.name for p in store.iterdir()) == ["h.sqlite"]


def test_the_page_and_the_table_show_the_last_entries_and_say_so(tmp_path: Path) -> None:
    """205 entries: trend.html shows the newest 200 (SHOWN_ENTRIES) and says how many are left
    out; `--last 3` the newest 3, `--last 0` all; a label of 500 characters (written by another
    tool: `history add` refuses it) is shortened."""
    from evalret.report.history_view import LABEL_CHARS, SHOWN_ENTRIES

    db = tmp_path / "h.sqlite"
    add_report(db, load_baseline(DEMO_REPORT), source="demo.json", report_sha256="0" * 64)
    with sqlite3.connect(db) as conn:  # 204 more copies of the entry, in one transaction
        columns = "added_at, commit_sha, baseline, source, report_sha256, evalret_version, "
        columns += "gate_verdict, fingerprint"
        values = "index_name, slice, metric, value, ci_low, ci_high, n_queries"
        copy_entry = f"INSERT INTO entry (label, {columns}) SELECT ?, {columns} FROM entry "
        copy_values = f"INSERT INTO value (entry, {values}) SELECT ?, {values} FROM value "
        for i in range(1, 205):
            label = "L" * 500 if i == 204 else f"entry-{i:03d}"
            conn.execute(copy_entry + "WHERE id = 1", (label,))
            conn.execute(copy_values + "WHERE entry = 1", (i + 1,))
        conn.execute("UPDATE entry SET label = 'entry-000' WHERE id = 1")
    assert SHOWN_ENTRIES == 200
    code, out = invoke(
        "history", "report", "--db", str(db), "-o", str(tmp_path / "t.html"), "-m", "ndcg@10",
        "-s", "all",
    )  # fmt: skip
    assert code == 0, out
    page = (tmp_path / "t.html").read_text(encoding="utf-8")
    assert "showing the last 200 of 205 entries (5 older left out" in page
    assert "entry-005" in page and "entry-004" not in page
    assert "L" * (LABEL_CHARS - 1) + "…" in page and "L" * LABEL_CHARS not in page
    out = show("--db", str(db), "-m", "ndcg@10", "--last", "3")
    assert "showing the last 3 of 205 entries" in out
    assert "entry-203" in out and "entry-201" not in out
    out = show("--db", str(db), "-m", "ndcg@10", "--last", "0")
    assert "showing the last" not in out and "entry-000" in out
    code, out = invoke("history", "show", "--db", str(db), "--last", "-1")
    assert code == 2 and "--last -1" in out, out
    code, out = invoke("history", "add", str(DEMO_REPORT), "--db", str(db), "--label", "L" * 201)
    assert code == 2 and "--label: 201 characters" in out, out


def test_a_database_link_that_leaves_its_directory_is_never_written(tmp_path: Path) -> None:
    """`history add --db LINK` where the link leads out of its directory: exit 2 naming it,
    nothing written there; a link to a file beside it is followed."""
    elsewhere = tmp_path / "elsewhere" / "history.sqlite"
    elsewhere.parent.mkdir()
    (tmp_path / "repo").mkdir()
    link = tmp_path / "repo" / "history.sqlite"
    link.symlink_to(elsewhere)
    code, out = invoke("history", "add", str(DEMO_REPORT), "--db", str(link))
    said = out.replace("\n", "")
    assert code == 2 and "outside" in said and str(elsewhere) in said, out
    assert not elsewhere.exists() and link.is_symlink()
    link.unlink()
    link.symlink_to(tmp_path / "repo" / "v2.sqlite")
    code, out = invoke("history", "add", str(DEMO_REPORT), "--db", str(link))
    assert code == 0 and (tmp_path / "repo" / "v2.sqlite").is_file(), out
