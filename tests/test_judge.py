"""`evalret judge` against a loopback chat-completions server (tests/chat_server.py) whose answers
come from the demo golden set's grades with a seeded error rate: the labels, the agreement they
recover, the dry run's count of requests, the cache, votes, faults and calibration."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from chat_server import ChatServer
from conftest import DEMO, REPO
from evalret.data.config import GoldenSetConfig, parse_config
from evalret.data.goldenset import GoldenSet, load_golden_set
from evalret.data.judgments import Scale
from evalret.data.schema import RunReport
from evalret.pipeline.judge import Prompt, built_in_prompt, parse_grade, vote_grade
from helpers import invoke

DEMO_REPORT = REPO / "baselines" / "demo.json"
SCALE = Scale(0, 3)


@pytest.fixture(scope="module")
def demo() -> GoldenSet:
    return load_golden_set(GoldenSetConfig(path=DEMO))


def truth_of(golden: GoldenSet) -> dict[tuple[str, str], int]:
    """(query text, document text) -> grade of every judged pair of the golden set."""
    texts = dict(zip(golden.query_ids, golden.query_texts, strict=True))
    return {
        (texts[q], golden.doc_texts[golden.doc_index[d]]): g
        for q in golden.query_ids
        for d, g in golden.qrels.get(q, {}).items()
        if d in golden.doc_index
    }


def judge_config(tmp_path: Path, server: ChatServer, **judge: Any) -> Path:
    settings = {
        "name": server.state.name,
        "base_url": server.base_url,
        "api_key_env": None,
        "max_retries": 2,
        **judge,
    }
    path = tmp_path / "judge.yaml"
    path.write_text(
        f"golden_set: {{path: {json.dumps(str(DEMO))}}}\n"
        f"cache: {{dir: {json.dumps(str(tmp_path / 'cache'))}}}\n"
        f"judge: {json.dumps(settings)}\n"
    )
    return path


def write_pool(path: Path, golden: GoldenSet, queries: int) -> list[tuple[str, str]]:
    """A pool of the judged pairs of the first ``queries`` queries; their (query, doc) ids."""
    texts = dict(zip(golden.query_ids, golden.query_texts, strict=True))
    lines, pairs = [], []
    for q in golden.query_ids[:queries]:
        for d in golden.qrels.get(q, {}):
            if d in golden.doc_index:
                document = golden.doc_texts[golden.doc_index[d]]
                lines.append({"query_id": q, "doc_id": d, "grade": None, "query": texts[q]})
                lines[-1]["document"] = document
                pairs.append((q, d))
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return pairs


def read_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


# --- the pieces --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "grade"),
    [
        ("2", 2),
        (" 3\n", 3),
        ("0.", 0),
        ("##final score: 1", 1),
        ("The passage answers it.\n##final score: 3", 3),
        ("##Final Score: **2**", 2),
        ("4", None),  # off the scale
        ("##final score: 7", None),
        ("-1", None),
        ("relevant", None),
        ("I would say 2", None),  # a number in prose is not an answer
        ("##final score: 2\nbut maybe 3", None),  # the closing form must close the answer
        ("", None),
        (None, None),
    ],
)
def test_answers_are_read_strictly(answer: str | None, grade: int | None) -> None:
    assert parse_grade(answer, SCALE) == grade


def test_the_median_of_votes_is_rounded_down() -> None:
    assert vote_grade([2]) == 2
    assert vote_grade([1, 3]) == 2
    assert vote_grade([1, 2]) == 1
    assert vote_grade([0, 3, 3]) == 3
    assert vote_grade([0, 1, 2, 3]) == 1


def test_built_in_prompt_puts_texts_in_once() -> None:
    prompt = Prompt(built_in_prompt(SCALE), "umbrela")
    text = prompt.render("what is {document}?", "a text with {query}")
    assert "Query: what is {document}?\n\nPassage: a text with {query}\n\n" in text
    assert text.rstrip().endswith("##final score: N")
    assert len(prompt.hash) == 12 and prompt.hash == Prompt(built_in_prompt(SCALE), "x").hash
    assert Prompt(built_in_prompt(Scale(0, 2)), "umbrela").hash != prompt.hash


def test_judge_config_is_strict() -> None:
    with pytest.raises(Exception, match=r"judge\.temprature"):
        parse_config("judge: {name: m, temprature: 0}\n")
    with pytest.raises(Exception, match="user info"):
        parse_config("judge: {name: m, base_url: 'https://u:secret@example.com/v1'}\n")
    assert "judge" not in parse_config("").model_dump()  # reports without it read as before


# --- against the loopback judge ----------------------------------------------------------------


def judged_at_10(report: RunReport, golden: GoldenSet) -> float:
    top = report.indexes["exact"].top_ids
    shares = [
        sum(d in golden.qrels.get(q, {}) for d in t[:10]) / 10
        for q, t in zip(report.query_ids, top, strict=True)
    ]
    return float(np.mean(shares))


def test_from_report_labels_raise_judged_at_10(tmp_path: Path, demo: GoldenSet) -> None:
    """The demo's run (baselines/demo.json): the judge labels the unjudged pairs of exact
    search's top 10; merged into a new golden set, judged@10 goes from 0.19 to 1; the dry run
    said exactly how many requests the server would count; a rerun sends nothing."""
    report = RunReport.model_validate_json(DEMO_REPORT.read_bytes())
    assert judged_at_10(report, demo) == pytest.approx(0.1889, abs=1e-3)
    labels = tmp_path / "labels.jsonl"
    with ChatServer(truth_of(demo), error_rate=0.1, seed=1) as server:
        config = judge_config(tmp_path, server)
        args = ["judge", "--from-report", str(DEMO_REPORT), "--index", "exact", "--k", "10"]
        args += ["-c", str(config), "--out", str(labels), "--no-progress"]
        code, dry = invoke(*args, "--dry-run")
        assert code == 0, dry
        assert server.state.requests == 0 and not labels.exists()
        predicted = int(dry.split(" to ask in ")[1].split()[0])
        code, out = invoke(*args)
        assert code == 0, out
        assert server.state.requests == predicted > 0
        code, again = invoke(*args)
        assert code == 0 and server.state.requests == predicted, again
        assert f"{predicted} answers cached, 0 to ask" in again
    lines = read_lines(labels)
    assert len(lines) == predicted
    first = lines[0]
    assert first["annotator"] == "llm:judge-served" and len(first["prompt_hash"]) == 12
    assert first["votes"] == [first["grade"]] and first["retrieved_by"]
    merged = tmp_path / "merged"
    code, out = invoke("judgments", "merge", str(labels), "--into", str(DEMO), "--out", str(merged))
    assert code == 0, out
    after = load_golden_set(GoldenSetConfig(path=merged))
    assert judged_at_10(report, after) >= 0.95


def test_agreement_recovers_the_seeded_error_rate(tmp_path: Path, demo: GoldenSet) -> None:
    """The judge's labels against the demo's own grades: `judgments agreement` gives the kappa
    scikit-learn computes on what the server answered against the truth; --calibrate too."""
    from sklearn.metrics import cohen_kappa_score

    pool = tmp_path / "pool.jsonl"
    write_pool(pool, demo, 80)
    labels = tmp_path / "labels.jsonl"
    with ChatServer(truth_of(demo), error_rate=0.3, seed=7) as server:
        config = judge_config(tmp_path, server)
        code, out = invoke(
            "judge",
            str(pool),
            "-c",
            str(config),
            "--out",
            str(labels),
            "--no-progress",
            "--calibrate",
            str(DEMO),
        )
        assert code == 0, out
        answered = dict(server.state.answered)
    truth = truth_of(demo)
    assert set(answered) == set(truth)  # the pool's pairs and every judged pair of --calibrate
    keys = sorted(answered)
    every = cohen_kappa_score([truth[k] for k in keys], [answered[k][0] for k in keys])
    assert 0.4 < every < 0.8  # the seeded errors show
    shown = out.split("Cohen's kappa ")[1].split(",")[0]
    assert float(shown) == pytest.approx(every, abs=0.02)
    texts = dict(zip(demo.query_ids, demo.query_texts, strict=True))
    lines = read_lines(pool)
    pooled = [(texts[r["query_id"]], r["document"]) for r in lines]
    expected = cohen_kappa_score([truth[k] for k in pooled], [answered[k][0] for k in pooled])
    human = tmp_path / "human.jsonl"
    human.write_text("".join(json.dumps(r) + "\n" for r in human_rows(lines, demo, "demo")))
    figures = tmp_path / "agreement.json"
    code, out = invoke("judgments", "agreement", str(labels), str(human), "--out", str(figures))
    assert code == 0, out
    pair = json.loads(figures.read_text())["pairs"][0]
    assert pair["items"] == len(pooled)
    assert pair["cohen_kappa"] == pytest.approx(expected, abs=0.02)


def human_rows(lines: list[dict[str, Any]], golden: GoldenSet, name: str) -> list[dict[str, Any]]:
    """The pool's lines graded as the golden set grades them, by annotator ``name``."""
    return [
        {**r, "grade": golden.qrels[r["query_id"]][r["doc_id"]], "annotator": name} for r in lines
    ]


def test_min_kappa_refuses_to_write(tmp_path: Path, demo: GoldenSet) -> None:
    pool = tmp_path / "pool.jsonl"
    write_pool(pool, demo, 30)
    human = tmp_path / "human.jsonl"
    rows = human_rows(read_lines(pool), demo, "ann")
    human.write_text("".join(json.dumps(r) + "\n" for r in rows))
    labels = tmp_path / "labels.jsonl"
    with ChatServer(truth_of(demo), error_rate=0.6, seed=2) as server:
        config = judge_config(tmp_path, server, min_kappa=0.8)
        code, out = invoke("judge", str(pool), "-c", str(config), "--out", str(labels))
        assert code == 2 and "--calibrate" in out  # a floor without labels to hold it to
        code, out = invoke(
            "judge",
            str(pool),
            "-c",
            str(config),
            "--out",
            str(labels),
            "--no-progress",
            "--calibrate",
            str(human),
        )
        assert code == 1, out
        assert "below judge.min_kappa 0.8" in out and not labels.exists()
        assert "confusion" in out
        ok = judge_config(tmp_path, server, min_kappa=-1.0)
        code, out = invoke(
            "judge",
            str(pool),
            "-c",
            str(ok),
            "--out",
            str(labels),
            "--no-progress",
            "--calibrate",
            str(human),
        )
        assert code == 0 and labels.exists(), out


def _run(pool: Path, config: Path, labels: Path, *more: str) -> tuple[int, str]:
    return invoke(
        "judge", str(pool), "-c", str(config), "--out", str(labels), "--no-progress", *more
    )


def test_faults_are_retried_counted_and_never_guessed(tmp_path: Path, demo: GoldenSet) -> None:
    """429s are retried (Retry-After honoured); an answer without a grade is asked once more,
    and a pair whose answers never give one is counted and left unjudged: the labels read are
    written, and the command exits 3 (work left undone), as for a request that failed."""
    pool = tmp_path / "pool.jsonl"
    pairs = write_pool(pool, demo, 6)
    labels = tmp_path / "labels.jsonl"
    texts = dict(zip(demo.query_ids, demo.query_texts, strict=True))
    prose = demo.query_ids[5]
    n_prose = sum(1 for q, _ in pairs if q == prose)
    with ChatServer(truth_of(demo)) as server:
        server.state.faults.extend([("status", 429, 0), ("status", 429, 0), ("malformed",)])
        server.state.always_malformed.add(texts[prose])
        config = judge_config(tmp_path, server, concurrency=1)
        code, out = _run(pool, config, labels)
        assert code == 3, out
        # every pair once, the two 429s and the malformed one again, the prose pairs twice
        assert server.state.requests == len(pairs) + 3 + n_prose
    assert f"unparseable {n_prose} " in out and "failed 0" in out
    assert f"{n_prose} answer(s) could not be read" in out
    lines = read_lines(labels)
    assert len(lines) == len(pairs) - n_prose
    assert all(r["query_id"] != prose for r in lines)
    assert all(r["grade"] == demo.qrels[r["query_id"]][r["doc_id"]] for r in lines)


def test_a_request_that_fails_for_good_is_counted_and_redacted(
    tmp_path: Path, demo: GoldenSet, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-judge/S3cr3t+key=42"
    monkeypatch.setenv("JUDGE_TEST_KEY", secret)
    pool = tmp_path / "pool.jsonl"
    pairs = write_pool(pool, demo, 3)
    labels = tmp_path / "labels.jsonl"
    with ChatServer(truth_of(demo)) as server:
        server.state.faults.append(("status", 400, 0))
        config = judge_config(tmp_path, server, concurrency=1, api_key_env="JUDGE_TEST_KEY")
        code, out = _run(pool, config, labels)
        assert code == 3, out  # not a silent success: the labels got are written all the same
        assert "failed 1" in out and "HTTP 400" in out
        assert secret not in out and "***" in out
        assert len(read_lines(labels)) == len(pairs) - 1
        server.state.faults.append(("status", 401, 0))  # the pair that failed, asked again
        code, out = _run(pool, config, labels)
        assert code == 3 and "the key was refused" in out and secret not in out


def test_a_stopped_run_keeps_its_answers(tmp_path: Path, demo: GoldenSet) -> None:
    """A run that stops midway (here a 401 after some answers) kept every answer it got: the
    next run asks only the rest."""
    pool = tmp_path / "pool.jsonl"
    pairs = write_pool(pool, demo, 8)
    labels = tmp_path / "labels.jsonl"
    with ChatServer(truth_of(demo)) as server:
        server.state.faults.extend([("ok",)] * 10 + [("status", 401, 0)])
        config = judge_config(tmp_path, server, concurrency=1)
        code, out = _run(pool, config, labels)
        assert code == 3 and not labels.exists(), out
        assert server.state.requests == 11
        code, dry = _run(pool, config, labels, "--dry-run")
        assert f"10 answers cached, {len(pairs) - 10} to ask" in dry
        code, out = _run(pool, config, labels)
        assert code == 0 and server.state.requests == 11 + len(pairs) - 10, out
    assert len(read_lines(labels)) == len(pairs)


def test_votes_ask_each_pair_n_times(tmp_path: Path, demo: GoldenSet) -> None:
    pool = tmp_path / "pool.jsonl"
    pairs = write_pool(pool, demo, 4)
    labels = tmp_path / "labels.jsonl"
    with ChatServer(truth_of(demo), error_rate=0.5, seed=4) as server:
        config = judge_config(tmp_path, server)
        code, out = _run(pool, config, labels, "--votes", "3", "--limit", "5")
        assert code == 0, out
        assert server.state.requests == 15
        sent = {b["temperature"] for b in server.state.bodies}
        assert sent == {0.0}
    lines = read_lines(labels)
    assert [(r["query_id"], r["doc_id"]) for r in lines] == pairs[:5]
    for r in lines:
        assert len(r["votes"]) == 3
        assert r["grade"] == math.floor(statistics.median(r["votes"]))


def test_a_prompt_file_needs_both_placeholders(tmp_path: Path, demo: GoldenSet) -> None:
    pool = tmp_path / "pool.jsonl"
    pairs = write_pool(pool, demo, 2)
    labels = tmp_path / "labels.jsonl"
    template = tmp_path / "prompt.txt"
    template.write_text("Grade 0-3.\nQuery: {query}\n\nAnswer with a number.\n")
    with ChatServer(truth_of(demo)) as server:
        config = judge_config(tmp_path, server, prompt="prompt.txt")
        code, out = _run(pool, config, labels)
        assert code == 2 and "prompt.txt" in out and "{document}" in out, out
        template.write_text(
            "Grade 0-3.\nQuery: {query}\n\nPassage: {document}\n\nAnswer: a number.\n"
        )
        server.state.answer_format = "bare"
        code, out = _run(pool, config, labels)
        assert code == 0, out
    assert len(read_lines(labels)) == len(pairs)
    assert "prompt.txt" in out


def test_the_labels_file_is_never_an_input(tmp_path: Path, demo: GoldenSet) -> None:
    pool = tmp_path / "pool.jsonl"
    write_pool(pool, demo, 2)
    with ChatServer(truth_of(demo)) as server:
        config = judge_config(tmp_path, server)
        before = pool.read_bytes()
        code, out = _run(pool, config, pool)
        assert code == 2 and server.state.requests == 0, out
        assert pool.read_bytes() == before


@pytest.mark.model
def test_the_demo_loop_raises_exact_judged_at_10(tmp_path: Path, demo: GoldenSet) -> None:
    """The issue's loop on the demo with the real model: run, judge the unjudged top 10 of exact
    search, merge, run again on the merged set: judged@10 from 0.19 to at least 0.95."""
    fast = ["--set", "indexes.hnsw.enabled=false", "--set", "indexes.hybrid.enabled=false"]
    fast += ["--set", "health.enabled=false"]
    first = tmp_path / "first"
    code, out = invoke(
        "run",
        "-c",
        str(REPO / "configs" / "default.yaml"),
        "--out",
        str(first),
        "--no-progress",
        *fast,
    )
    assert code == 0, out
    before = json.loads((first / "report.json").read_text())
    assert before["indexes"]["exact"]["slices"]["all"]["judged"]["judged@10"] == pytest.approx(
        0.1889, abs=1e-3
    )
    labels = tmp_path / "labels.jsonl"
    with ChatServer(truth_of(demo), error_rate=0.1, seed=5) as server:
        config = judge_config(tmp_path, server)
        args = [
            "judge",
            "--from-report",
            str(first / "report.json"),
            "--index",
            "exact",
            "--k",
            "10",
        ]
        code, out = invoke(*args, "-c", str(config), "--out", str(labels), "--no-progress")
        assert code == 0, out
    merged = tmp_path / "merged"
    code, out = invoke("judgments", "merge", str(labels), "--into", str(DEMO), "--out", str(merged))
    assert code == 0, out
    second = tmp_path / "second"
    code, out = invoke(
        "run",
        "-c",
        str(REPO / "configs" / "default.yaml"),
        "--out",
        str(second),
        "--no-progress",
        *fast,
        "--set",
        f"golden_set.path={merged}",
    )
    assert code == 0, out
    after = json.loads((second / "report.json").read_text())
    assert after["indexes"]["exact"]["slices"]["all"]["judged"]["judged@10"] >= 0.95


def run_config(tmp_path: Path, server: ChatServer) -> Path:
    """A config that gates a run file (exact search's top 10 of the demo, from its committed
    report: no model is loaded), with the loopback judge."""
    report = RunReport.model_validate_json(DEMO_REPORT.read_bytes())
    rows = [
        f"{q} Q0 {d} {rank} {10 - rank} demo\n"
        for q, top in zip(report.query_ids, report.indexes["exact"].top_ids, strict=True)
        for rank, d in enumerate(top[:10], start=1)
    ]
    (tmp_path / "prod.trec").write_text("".join(rows))
    settings = {"name": server.state.name, "base_url": server.base_url, "api_key_env": None}
    path = tmp_path / "run.yaml"
    path.write_text(
        f"golden_set: {{path: {json.dumps(str(DEMO))}}}\n"
        f"cache: {{dir: {json.dumps(str(tmp_path / 'cache'))}}}\n"
        "indexes:\n  exact: {enabled: false}\n  hnsw: {enabled: false}\n"
        "  bm25: {enabled: false}\n  hybrid: {enabled: false}\n"
        "  prod: {type: run, path: prod.trec}\n"
        "metrics: [ndcg@10, recall@10]\nhealth: {enabled: false}\n"
        "gate: {indexes: [prod]}\n"
        f"judge: {json.dumps(settings)}\n"
    )
    return path


def judged_10(out: Path) -> float:
    report = json.loads((out / "report.json").read_text())
    value: float = report["indexes"]["prod"]["slices"]["all"]["judged"]["judged@10"]
    return value


def test_run_judge_scores_with_the_judges_labels(tmp_path: Path, demo: GoldenSet) -> None:
    """`run --judge` labels the unjudged top 10 of the gated index and scores with them (the
    report says so); `--judge-cache-only` sends nothing and uses only what the cache has."""
    with ChatServer(truth_of(demo), error_rate=0.1, seed=9) as server:
        config = run_config(tmp_path, server)
        base = ["run", "-c", str(config), "--no-progress", "--out"]
        code, out = invoke(*base, str(tmp_path / "plain"))
        assert code == 0, out
        assert judged_10(tmp_path / "plain") == pytest.approx(0.1889, abs=1e-3)
        assert "judge" not in json.loads((tmp_path / "plain" / "report.json").read_text())
        code, out = invoke(*base, str(tmp_path / "cold"), "--judge-cache-only")
        assert code == 0 and server.state.requests == 0, out
        cold = json.loads((tmp_path / "cold" / "report.json").read_text())["judge"]
        assert cold["labelled"] == 0 and cold["unjudged"] == cold["pairs"] > 0
        code, out = invoke(*base, str(tmp_path / "judged"), "--judge")
        assert code == 0, out
        asked = server.state.requests
        assert asked == cold["pairs"]
        assert "LLM judge: scored with" in out and "llm:judge-served@" in out
        assert judged_10(tmp_path / "judged") >= 0.95
        section = json.loads((tmp_path / "judged" / "report.json").read_text())["judge"]
        assert section["source"].startswith("llm:judge-served@") and section["indexes"] == ["prod"]
        assert "LLM judge: scored with" in (tmp_path / "judged" / "report.md").read_text()
        code, out = invoke(*base, str(tmp_path / "warm"), "--judge-cache-only")
        assert code == 0 and server.state.requests == asked, out
        warm = json.loads((tmp_path / "warm" / "report.json").read_text())
        judged = json.loads((tmp_path / "judged" / "report.json").read_text())
        assert warm["indexes"]["prod"]["per_query"] == judged["indexes"]["prod"]["per_query"]
        plain = json.loads((tmp_path / "plain" / "report.json").read_text())
        # the judged run shows its headline on human labels alone beside all labels
        human = judged["labels"]["human"]["indexes"]["prod"]["ndcg@10"]["value"]
        assert human == plain["indexes"]["prod"]["slices"]["all"]["metrics"]["ndcg@10"]["value"]
        # under gate.labels human the judge's labels stay out of the metrics and the gate
        code, out = invoke(
            *base, str(tmp_path / "human"), "--judge-cache-only", "--set", "gate.labels=human"
        )
        assert code == 0 and server.state.requests == asked, out
        kept = json.loads((tmp_path / "human" / "report.json").read_text())
        assert kept["indexes"]["prod"]["per_query"] == plain["indexes"]["prod"]["per_query"]
        assert kept["labels"]["gate"] == "human" and kept["judge"]["labelled"] > 0


def test_run_judge_needs_a_judge_section(tmp_path: Path) -> None:
    config = tmp_path / "plain.yaml"
    config.write_text(f"golden_set: {{path: {json.dumps(str(DEMO))}}}\n")
    code, out = invoke("run", "-c", str(config), "--judge", "--out", str(tmp_path / "o"))
    assert code == 2 and "judge: section" in out


def test_from_report_is_checked_against_the_config(tmp_path: Path, demo: GoldenSet) -> None:
    """A report of another golden set, an index it lacks, a k deeper than a report keeps and a
    POOL together with --from-report are refused (exit 2) before anything is sent."""
    other = tmp_path / "other"
    other.mkdir()
    for name in ("corpus.jsonl", "queries.jsonl"):
        (other / name).write_text((DEMO / name).read_text())
    with (other / "queries.jsonl").open("a") as f:
        f.write(json.dumps({"id": "q-extra", "text": "extra", "relevant": {"doc-0001": 1}}) + "\n")
    labels = tmp_path / "labels.jsonl"
    pool = tmp_path / "pool.jsonl"
    write_pool(pool, demo, 1)
    with ChatServer(truth_of(demo)) as server:
        config = judge_config(tmp_path, server)
        args = ["judge", "-c", str(config), "--out", str(labels), "--from-report", str(DEMO_REPORT)]
        for extra, said in (
            (["--index", "nope"], "--index nope"),
            (["--k", "11"], "--k 11"),
            ([str(pool)], "one of them"),
        ):
            code, out = invoke(*args, *extra)
            assert code == 2 and said in out, out
        moved = config.read_text().replace(json.dumps(str(DEMO)), json.dumps(str(other)))
        config.write_text(moved)
        code, out = invoke(*args)
        assert code == 2 and "another golden set" in out, out
        assert server.state.requests == 0 and not labels.exists()


def test_gold_lines_keep_their_gold_grade(tmp_path: Path, demo: GoldenSet) -> None:
    """The judge's lines keep the pool line's fields, gold_grade too: `judgments agreement`
    then gives the judge's accuracy on gold items."""
    pool = tmp_path / "pool.jsonl"
    write_pool(pool, demo, 3)
    lines = [{**r, "gold_grade": demo.qrels[r["query_id"]][r["doc_id"]]} for r in read_lines(pool)]
    pool.write_text("".join(json.dumps(r) + "\n" for r in lines))
    labels = tmp_path / "labels.jsonl"
    with ChatServer(truth_of(demo)) as server:
        code, out = _run(pool, judge_config(tmp_path, server), labels)
        assert code == 0, out
    figures = tmp_path / "agreement.json"
    code, out = invoke("judgments", "agreement", str(labels), "--out", str(figures))
    assert code == 0, out
    gold = json.loads(figures.read_text())["gold_accuracy"]["llm:judge-served"]
    assert gold == {"gold_items": len(lines), "correct": len(lines), "accuracy": 1.0}


def test_a_redirect_to_another_origin_is_refused(tmp_path: Path, demo: GoldenSet) -> None:
    """The embedding provider's HTTP policy: nothing goes where the config does not point."""
    pool = tmp_path / "pool.jsonl"
    write_pool(pool, demo, 1)
    labels = tmp_path / "labels.jsonl"
    with ChatServer(truth_of(demo)) as server, ChatServer(truth_of(demo)) as elsewhere:
        server.state.faults.append(("redirect", f"{elsewhere.base_url}/chat/completions"))
        code, out = _run(pool, judge_config(tmp_path, server, concurrency=1), labels)
        assert code == 3 and "another origin than judge.base_url's) was not followed" in out, out
        assert elsewhere.state.requests == 0 and not labels.exists()


def test_run_labels_carry_their_source(demo: GoldenSet) -> None:
    """`run --judge`'s labels join qrels with source llm:<model>@<hash>, and llm_qrels; the
    other grades stay as they were, and the golden set read is not changed."""
    from evalret.pipeline.judge import Pair, with_labels

    q = demo.query_ids[0]
    judged = next(iter(demo.qrels[q]))
    fresh = next(d for d in demo.doc_ids if d not in demo.qrels[q])
    pair = Pair(q, fresh, "query", "document", {})
    labelled = with_labels(demo, [(pair, [1, 3], "2026-01-01T00:00:00Z")], "llm:m@0123456789ab")
    assert labelled.qrels[q][fresh] == 2 and labelled.llm_qrels == {q: {fresh: 2}}
    assert labelled.sources[q] == {fresh: "llm:m@0123456789ab"}
    assert labelled.qrels[q][judged] == demo.qrels[q][judged]
    assert fresh not in demo.qrels[q]  # the golden set read is left as it was
