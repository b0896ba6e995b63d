"""`run --judge` and verdicts: labels are part of what is compared (a run and its baseline, or A
and B of `evalret compare`, scored on other label sources are refused, exit 2, naming both), and a
verdict comes only from a complete run (a judge request that failed for good or an answer that
could not be read: exit 3, no report, the answers read kept in the cache). Against the loopback
judge of tests/chat_server.py, on run files of the demo (no model is loaded)."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from chat_server import ChatServer
from conftest import DEMO
from evalret.core.provenance import HUMAN
from evalret.data.baseline import UNRECORDED, label_source_differences, label_sources_of
from evalret.data.config import GoldenSetConfig
from evalret.data.goldenset import GoldenSet, load_golden_set
from evalret.data.schema import RunReport
from helpers import invoke
from test_judge import DEMO_REPORT, run_config, truth_of

SOURCE = re.compile(r"llm:judge-served@[0-9a-f]{12}")
MANY = 5000  # more faults than the demo has pairs to ask


@pytest.fixture(scope="module")
def demo() -> GoldenSet:
    return load_golden_set(GoldenSetConfig(path=DEMO))


@pytest.fixture(scope="module")
def judged_once(tmp_path_factory: pytest.TempPathFactory, demo: GoldenSet) -> Path:
    """A `run --judge` of run_config saved as a baseline, made once for the module (its judge
    asks every unjudged pair of the demo's top 10: the slow part) by the loopback judge a test
    starts too (the same name and prompt: the same label source). Read it through ``judged``."""
    tmp = tmp_path_factory.mktemp("judged")
    with ChatServer(truth_of(demo)) as server:
        config = run_config(tmp, server)
        judged = tmp / "judged.json"
        code, out = run(config, tmp / "a", "--judge", "--save-baseline", str(judged))
        assert code == 0, out
        assert server.state.requests > 0
    judged.chmod(0o444)  # shared: a test changes its own copy (``judged``), never this file
    return judged


@pytest.fixture
def judged(tmp_path: Path, judged_once: Path) -> Path:
    """The test's own copy of the judged baseline (``judged_once``), which it may change."""
    copy = tmp_path / "judged.json"
    shutil.copyfile(judged_once, copy)
    copy.chmod(0o644)
    return copy


def ranking_file(tmp_path: Path, index: str) -> None:
    """prod.trec (what run_config's index ``prod`` reads): the top 10 of the demo report's
    ``index``, so that another index gives the judge other unjudged pairs."""
    report = RunReport.model_validate_json(DEMO_REPORT.read_bytes())
    rows = [
        f"{q} Q0 {d} {rank} {10 - rank} demo\n"
        for q, top in zip(report.query_ids, report.indexes[index].top_ids, strict=True)
        for rank, d in enumerate(top[:10], start=1)
    ]
    (tmp_path / "prod.trec").write_text("".join(rows))


def report_of(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / "report.json").read_text())
    return data


def run(config: Path, out: Path, *more: str) -> tuple[int, str]:
    return invoke("run", "-c", str(config), "--no-progress", "--out", str(out), *more)


# --- labels are part of what is compared -------------------------------------------------------


def test_a_judged_run_is_refused_against_an_unjudged_baseline(
    tmp_path: Path, demo: GoldenSet, judged: Path
) -> None:
    """The issue's case: a baseline saved without --judge, a run with it (a lenient judge would
    lift its figures): refused before anything is sent, exit 2, naming both sides' sources and
    counts; the other way round too (a judged baseline: the module's)."""
    with ChatServer(truth_of(demo)) as server:
        config = run_config(tmp_path, server)
        plain = tmp_path / "plain.json"
        code, out = run(config, tmp_path / "p", "--save-baseline", str(plain))
        assert code == 0, out
        saved = RunReport.model_validate_json(plain.read_bytes())
        assert saved.label_sources == {HUMAN: saved.golden_set.n_judgments}
        code, out = run(config, tmp_path / "j", "--judge", "--baseline", str(plain))
        assert code == 2, out
        assert server.state.requests == 0  # refused before any judging, nothing paid for
        assert not (tmp_path / "j" / "report.json").exists()
        text = " ".join(out.split())
        assert f"the baseline {plain} human {saved.golden_set.n_judgments};" in text
        assert SOURCE.search(text) and "counted once judged" in text
        assert "gate.labels: human" in text
        # a judged baseline and a run without the judge: refused, both counted
        sources = RunReport.model_validate_json(judged.read_bytes()).label_sources
        assert sources is not None and len(sources) == 2
        (name,) = (n for n in sources if n != HUMAN)
        assert SOURCE.fullmatch(name) and sources[name] > 0
        code, out = run(config, tmp_path / "p2", "--baseline", str(judged))
        assert code == 2, out
        text = " ".join(out.split())
        assert f"{name} {sources[name]}; this run human {sources[HUMAN]}." in text


def test_another_judge_is_refused_before_it_is_asked(
    tmp_path: Path, demo: GoldenSet, judged: Path
) -> None:
    """A baseline labelled by one judge, a run by another model (or prompt): other sources."""
    with ChatServer(truth_of(demo)) as server:
        config = run_config(tmp_path, server)
        asked = server.state.requests
        other = ["--judge", "--baseline", str(judged), "--set", "judge.name=judge-other"]
        code, out = run(config, tmp_path / "b", *other)
        assert code == 2 and "llm:judge-other@" in out and SOURCE.search(out), out
        assert server.state.requests == asked


def test_on_human_labels_alone_a_judged_run_meets_an_unjudged_baseline(
    tmp_path: Path, demo: GoldenSet
) -> None:
    """Under gate.labels: human on both sides the judge's labels stay out of the metrics: the
    run is gated against the baseline (its drop checks), with the judge's figures beside."""
    with ChatServer(truth_of(demo)) as server:
        config = run_config(tmp_path, server)
        human = ["--set", "gate.labels=human"]
        plain = tmp_path / "plain.json"
        code, out = run(config, tmp_path / "p", *human, "--save-baseline", str(plain))
        assert code == 0, out
        code, out = run(config, tmp_path / "j", *human, "--judge", "--baseline", str(plain))
        assert code == 0, out
        assert server.state.requests > 0
        report = report_of(tmp_path / "j")
        assert report["label_sources"] == {HUMAN: report["golden_set"]["n_judgments"]}
        assert report["judge"]["labelled"] > 0
        drops = [c for c in report["gate"]["checks"] if c["kind"] == "max_drop"]
        assert drops and report["gate"]["baseline_fingerprint"] is not None
        assert "GATE PASSED" in out


def test_runs_judged_by_the_same_judge_are_compared(tmp_path: Path, demo: GoldenSet) -> None:
    """The normal workflow: baseline and run both judged by the same judge, on other rankings
    (other pairs labelled, other counts): gated against each other, and `evalret compare`
    compares their reports; a judged report against an unjudged one is refused there too."""
    with ChatServer(truth_of(demo), error_rate=0.2, seed=3) as server:
        config = run_config(tmp_path, server)
        judged = tmp_path / "judged.json"
        code, out = run(config, tmp_path / "a", "--judge", "--save-baseline", str(judged))
        assert code == 0, out
        code, out = run(config, tmp_path / "plain")
        assert code == 0, out
        ranking_file(tmp_path, "bm25")
        code, out = run(config, tmp_path / "b", "--judge", "--baseline", str(judged))
        assert code in (0, 1), out
    a, b = report_of(tmp_path / "a"), report_of(tmp_path / "b")
    assert a["label_sources"].keys() == b["label_sources"].keys()
    assert a["label_sources"] != b["label_sources"]  # other pairs judged: other counts
    assert any(c["kind"] == "max_drop" for c in b["gate"]["checks"])
    assert a["fingerprint"]["metrics"]["label_sources"] == sorted(a["label_sources"])
    compared = tmp_path / "cmp"
    args = ["compare", "--out", str(compared), "--no-progress", "--samples", "200"]
    code, out = invoke(*args, *(str(tmp_path / side / "report.json") for side in "ab"))
    assert code == 0 and (compared / "compare.json").exists(), out
    plain = tmp_path / "plain" / "report.json"
    code, out = invoke(*args, str(tmp_path / "a" / "report.json"), str(plain))
    assert code == 2 and "label sources: A human" in " ".join(out.split()), out
    assert "B human" in " ".join(out.split()) and SOURCE.search(out)
    # baseline show says what the baseline was scored with
    code, out = invoke("baseline", "show", str(judged))
    shown = ", ".join(f"{k} {n}" for k, n in a["label_sources"].items())
    assert code == 0 and f"label sources: {shown}" in " ".join(out.split()), out
    # a history trend starts again where the label sources change
    db = str(tmp_path / "history.sqlite")
    for report in (plain, tmp_path / "a" / "report.json", tmp_path / "b" / "report.json"):
        code, out = invoke("history", "add", str(report), "--db", db)
        assert code == 0, out
    code, out = invoke("history", "show", "--db", db, "--metric", "ndcg@10")
    assert code == 0 and out.count("metric definitions (trend restarts)") == 1, out


def test_an_older_report_without_label_sources_is_read_from_what_it_has(
    tmp_path: Path, demo: GoldenSet, judged: Path
) -> None:
    """A report of an older evalret has no ``label_sources``: without a labels section it is
    human only (the committed demo baseline still gates a plain run); a judged one is read from
    its labels and judge sections, so a plain run against it is still refused."""
    old = RunReport.model_validate_json(DEMO_REPORT.read_bytes())
    assert old.label_sources is None and old.labels is None
    assert label_sources_of(old) == {HUMAN: old.golden_set.n_judgments}
    with ChatServer(truth_of(demo)) as server:
        config = run_config(tmp_path, server)
    data = json.loads(judged.read_text())
    recorded = data.pop("label_sources")
    judged.write_text(json.dumps(data))
    assert label_sources_of(RunReport.model_validate(data)) == recorded
    code, out = run(config, tmp_path / "p", "--baseline", str(judged))
    assert code == 2 and "label sources" in out, out
    # model labels its golden set held, whose source an older report did not record
    data["judge"] = None
    assert UNRECORDED in label_sources_of(RunReport.model_validate(data))


def test_same_sources_with_other_counts_are_no_difference() -> None:
    """The rule on its own: the sets of sources are compared, never the counts; a count not
    known yet is said so."""
    before = {HUMAN: 412, "llm:m@0123456789ab": 57}
    assert label_source_differences(before, {HUMAN: 412, "llm:m@0123456789ab": 3}, ("a", "b")) == []
    (line,) = label_source_differences(before, {HUMAN: 412}, ("the baseline x", "this run"))
    assert line.startswith(
        "label sources: the baseline x human 412, llm:m@0123456789ab 57; this run human 412."
    )
    (line,) = label_source_differences({HUMAN: 1}, {HUMAN: 1, "llm:n@0": None}, ("a", "b"))
    assert "llm:n@0 (this run's judge: counted once judged)" in line


# --- a verdict only from a complete run, judge included -----------------------------------------


def stale_report(out: Path) -> None:
    """An earlier run's passing report in the output folder."""
    out.mkdir()
    (out / "report.json").write_text('{"gate": {"verdict": "pass"}}\n')
    (out / "report.md").write_text("GATE PASSED\n")


def test_a_judge_that_fails_every_request_gives_no_verdict(tmp_path: Path, demo: GoldenSet) -> None:
    """Every request answered 503 (the judge is down): exit 3 naming how many failed and why,
    no GATE PASSED, and no report, not even an earlier run's."""
    with ChatServer(truth_of(demo)) as server:
        server.state.faults.extend([("status", 503, 0)] * MANY)
        config = run_config(tmp_path, server)
        out_dir = tmp_path / "out"
        stale_report(out_dir)
        code, out = run(config, out_dir, "--judge", "--set", "judge.max_retries=0")
        asked = server.state.requests
    assert code == 3, out
    text = " ".join(out.split())
    assert f"run --judge: {asked} judge request(s) failed for good (" in text
    assert "HTTP 503: the server failed with no retry (judge.max_retries is 0)" in text
    assert f"({asked} requests))" in text
    assert "no answer was read" in text and "No verdict" in text and "(0 of" in text
    assert "PASSED" not in out
    assert not (out_dir / "report.json").exists() and not (out_dir / "report.md").exists()


def test_answers_that_cannot_be_read_give_no_verdict(tmp_path: Path, demo: GoldenSet) -> None:
    """Every answer prose without a grade (each asked twice): exit 3, nothing passes."""
    with ChatServer(truth_of(demo)) as server:
        server.state.faults.extend([("malformed",)] * MANY)
        config = run_config(tmp_path, server)
        code, out = run(config, tmp_path / "out", "--judge")
        asked = server.state.requests
    assert code == 3, out
    text = " ".join(out.split())
    assert f"{asked // 2} answer(s) could not be read, each asked twice" in text
    assert "PASSED" not in out and not (tmp_path / "out" / "report.json").exists()


def test_a_partial_failure_keeps_what_was_read(tmp_path: Path, demo: GoldenSet) -> None:
    """Three requests fail for good, the rest are answered: exit 3, and the cache holds every
    answer read; --judge-cache-only then scores with them (nothing sent), and a rerun against
    the working judge asks only the three."""
    with ChatServer(truth_of(demo)) as server:
        server.state.faults.extend([("status", 400, 0)] * 3)
        config = run_config(tmp_path, server)
        code, out = run(config, tmp_path / "first", "--judge")
        text = " ".join(out.split())
        assert code == 3 and "3 judge request(s) failed for good" in text, out
        assert f"answers read are kept in {tmp_path / 'cache'}" in text
        asked = server.state.requests
        cache = tmp_path / "cache" / "judgments" / "judge.sqlite"
        with sqlite3.connect(f"file:{cache}?mode=ro", uri=True) as db:
            (stored,) = db.execute("SELECT count(*) FROM answers").fetchone()
        assert stored == asked - 3
        code, out = run(config, tmp_path / "cached", "--judge-cache-only")
        assert code == 0 and server.state.requests == asked, out
        cached = report_of(tmp_path / "cached")["judge"]
        assert cached["labelled"] == stored and cached["unjudged"] == 3
        code, out = run(config, tmp_path / "again", "--judge")
        assert code == 0, out
        assert server.state.requests == asked + 3
        again = report_of(tmp_path / "again")["judge"]
        assert again["asked"] == 3 and again["cached"] == stored and again["unjudged"] == 0


def test_evalret_judge_that_fails_every_request_exits_3(tmp_path: Path, demo: GoldenSet) -> None:
    """The same rule for `evalret judge`: every request failed, exit 3 with the same account."""
    from test_judge import _run, judge_config, write_pool

    pool = tmp_path / "pool.jsonl"
    pairs = write_pool(pool, demo, 2)
    labels = tmp_path / "labels.jsonl"
    with ChatServer(truth_of(demo)) as server:
        server.state.faults.extend([("status", 503, 0)] * MANY)
        code, out = _run(pool, judge_config(tmp_path, server, max_retries=0), labels)
    assert code == 3, out
    assert f"incomplete (exit 3): {len(pairs)} judge request(s) failed for good" in " ".join(
        out.split()
    )
    assert labels.read_text() == ""  # the labels got (none) are written
