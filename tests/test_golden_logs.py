"""`evalret golden from-logs`: logs in every format to a draft, bad lines named or skipped,
counting and near-duplicates, traffic strata and allocation, seeded reproducibility, shapes,
personal data that never reaches a file or the terminal, and `validate` on the draft."""

from __future__ import annotations

import base64
import gzip
import html
import json
import os
import random
import subprocess
import sys
import urllib.parse
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import REPO
from evalret.cli import app
from evalret.core.querylog import (
    LoggedQuery,
    allocate,
    by_traffic,
    collapse_near_duplicates,
    count_queries,
    draw,
    strata,
)
from evalret.data.goldenset.draft import read_draft, read_manifest
from invariants.inv_http import echoed_forms

DOCS = [
    ("d1", "How to reset your password from the sign-in page."),
    ("d2", "Single sign-on (SSO) is included in the Team and Enterprise plans."),
    ("d3", "Error LMW-4031 means the licence server cannot be reached."),
    ("d4", "Pricing: the Team plan costs 8 dollars per seat and month."),
    ("d5", "Export your data as CSV from the settings page."),
]


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in DOCS))
    return path


def _run(log: Path, corpus: Path, out: Path, *more: str) -> tuple[int, str]:
    args = ["golden", "from-logs", str(log), "--corpus", str(corpus), "--out", str(out)]
    return _invoke(*args, "--no-progress", *more)


def _queries(out: Path) -> list[tuple[str, int | None, tuple[str, ...]]]:
    return [(q.text, q.frequency, q.tags) for q in read_draft(out)]


# --- formats and bad lines ---------------------------------------------------------------------

LOGGED = ["reset password"] * 3 + ["sso pricing"] * 2 + ["export csv"]


@pytest.mark.parametrize("kind", ["text", "jsonl", "csv", "text.gz", "jsonl.gz"])
def test_every_format_gives_the_same_draft(tmp_path: Path, corpus: Path, kind: str) -> None:
    base = kind.removesuffix(".gz")
    if base == "text":
        data = "".join(q + "\n" for q in LOGGED)
    elif base == "jsonl":
        data = "".join(json.dumps({"q": q}) + "\n" for q in LOGGED)
    else:
        data = "q,user\n" + "".join(f"{q},u{i}\n" for i, q in enumerate(LOGGED))
    suffix = {"text": ".txt", "jsonl": ".jsonl", "csv": ".csv"}[base]
    log = tmp_path / f"log{suffix}{'.gz' if kind.endswith('.gz') else ''}"
    log.write_bytes(gzip.compress(data.encode()) if kind.endswith(".gz") else data.encode())
    field = () if base == "text" else ("--query-field", "q")
    code, output = _run(log, corpus, tmp_path / "out", "--n", "10", *field)
    assert code == 0, output
    assert [(t, f) for t, f, _ in _queries(tmp_path / "out")] == [
        ("reset password", 3),
        ("sso pricing", 2),
        ("export csv", 1),
    ]
    assert "read 6 logged queries" in output


def test_counts_and_kept_fields_from_jsonl(tmp_path: Path, corpus: Path) -> None:
    log = tmp_path / "log.jsonl"
    rows = [
        {"query": "reset password", "n": 40, "lang": "en"},
        {"query": "Reset Password!", "n": 2, "lang": "de"},
        {"query": "sso pricing", "n": 5, "lang": "en"},
        {"query": "reset passwords", "n": 50, "lang": "de"},  # merged into the first
    ]
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, output = _run(log, corpus, tmp_path / "out", "--count-field", "n", "--keep-field", "lang")
    assert code == 0, output
    found = _queries(tmp_path / "out")
    assert [(t, f) for t, f, _ in found] == [("reset passwords", 92), ("sso pricing", 5)]
    # the value typed most often over every spelling merged: de 52 times, en 40
    assert "lang:de" in found[0][2] and "traffic:head" in found[0][2]


def test_bad_lines_are_named_or_skipped_and_counted(tmp_path: Path, corpus: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_bytes(b'{"query": "sso pricing"}\n{"query": \n{"text": "x"}\n{"query": "export"}\n')
    code, output = _run(log, corpus, tmp_path / "out")
    assert code == 2
    assert "log.jsonl:2: invalid JSON" in output and "log.jsonl:3: no query field" in output
    assert not (tmp_path / "out").exists()
    code, output = _run(log, corpus, tmp_path / "out", "--skip-bad-lines")
    assert code == 0, output
    assert "2 bad lines skipped" in output
    counts = read_manifest(tmp_path / "out")[0]["counts"]
    assert (counts["lines"], counts["skipped"]) == (2, 2)


def test_a_missing_csv_column_and_a_bad_option_are_input_errors(
    tmp_path: Path, corpus: Path
) -> None:
    log = tmp_path / "log.csv"
    log.write_text("text\nsso\n")
    code, output = _run(log, corpus, tmp_path / "out")
    assert code == 2 and "log.csv:1: the header row has no column 'query'" in output
    code, output = _run(log, corpus, tmp_path / "out", "--traffic-cuts", "0.8,0.5")
    assert code == 2 and "--traffic-cuts" in output


# --- counting, near-duplicates, strata, allocation ---------------------------------------------


def test_near_duplicates_collapse_to_the_most_frequent_spelling_with_summed_counts() -> None:
    entries = [
        ("reset password", 2),
        ("Reset Password", 5),  # the same normalized text: 7 in all, spelled as typed most
        ("reset passwords", 3),  # a near-duplicate (Jaccard >= 0.8)
        ("reset pasword", 1),  # another
        ("LMW-4031", 4),
        ("LMW-4032", 4),  # 0.60: a different error code, kept apart
    ]
    counted = count_queries(entries)
    assert [(q.text, q.count) for q in counted.queries][:2] == [
        ("Reset Password", 7),
        ("reset passwords", 3),
    ]
    collapsed = collapse_near_duplicates(counted.queries)
    assert sorted((q.text, q.count, q.members) for q in collapsed) == [
        ("LMW-4031", 4, 1),
        ("LMW-4032", 4, 1),
        ("Reset Password", 11, 3),
    ]
    # the result does not depend on the log's order
    shuffled = entries[:]
    random.Random(1).shuffle(shuffled)
    again = collapse_near_duplicates(count_queries(shuffled).queries)
    assert sorted((q.text, q.count) for q in again) == sorted((q.text, q.count) for q in collapsed)


def test_a_chain_of_near_duplicates_is_one_group_kept_as_its_most_frequent() -> None:
    # a ~ b and b ~ c, a and c further apart: one group (connected components)
    a, b, c = (
        "configure the single sign on",
        "configure the single sign-on now",
        "configure single sign-on now",
    )
    queries = [
        LoggedQuery(t, count_queries([(t, 1)]).queries[0].normalized, n)
        for t, n in ((a, 1), (b, 2), (c, 5))
    ]
    collapsed = collapse_near_duplicates(queries)
    assert [(q.text, q.count, q.members) for q in collapsed] == [(c, 8, 3)]


def _ranked(counts: list[int]) -> list[LoggedQuery]:
    return by_traffic([LoggedQuery(f"q{i:03d}", f"q{i:03d}", n) for i, n in enumerate(counts)])


def test_strata_by_cumulative_share_of_traffic() -> None:
    ranked = _ranked([50, 20, 10, 10, 5, 5])  # 100 in all
    # the head: the queries before which under 50 % of traffic lies (the 50 itself); the torso:
    # under 80 % before it (20, 10); the tail: the rest
    assert strata(ranked) == ["head", "torso", "torso", "tail", "tail", "tail"]
    assert strata(ranked, (0.6, 0.9)) == ["head", "head", "torso", "torso", "tail", "tail"]


def test_allocation_proportional_equal_and_surplus() -> None:
    # proportional to traffic 50/30/20 of 10
    assert allocate(10, [100, 100, 100], [50, 30, 20]) == [5, 3, 2]
    # the head has 2 queries only: it gives both, its surplus goes to the others by weight
    assert allocate(10, [2, 100, 100], [50, 30, 20]) == [2, 5, 3]
    assert allocate(9, [100, 100, 100], [1, 1, 1]) == [3, 3, 3]
    assert allocate(9, [1, 100, 2], [1, 1, 1]) == [1, 6, 2]
    assert allocate(500, [1, 2, 3], [1, 1, 1]) == [1, 2, 3]  # fewer than n: all


def test_the_draw_is_seeded_and_follows_the_allocation() -> None:
    ranked = _ranked([100] * 10 + [10] * 30 + [1] * 300)  # 1,600 typed
    a, b = draw(ranked, 30, seed=7), draw(ranked, 30, seed=7)
    assert a.positions == b.positions
    assert a.sizes == {"head": 8, "torso": 30, "tail": 302}
    assert a.traffic == {"head": 800, "torso": 480, "tail": 320}
    # proportional: 15 / 9 / 6, the head has 8 only: its surplus of 7 goes 480:320
    assert a.drawn == {"head": 8, "torso": 13, "tail": 9}
    assert sum(1 for i in a.positions if a.strata[i] == "tail") == 9
    # equal: 10 each, the head's 2 left over shared equally: the tail gets more
    assert draw(ranked, 30, seed=7, allocation="equal").drawn == {
        "head": 8,
        "torso": 11,
        "tail": 11,
    }
    assert draw(ranked, 30, seed=8).positions != a.positions


# --- the command end to end ---------------------------------------------------------------------


def _zipf_log(path: Path, n: int = 120) -> None:
    lines = []
    for i in range(n):
        lines += [f"question number {i} about topic {i * 7919 % 1000}"] * max(1, 200 // (i + 1))
    lines += ["LMW-4031 error", "how do I reset my password?", "sso"]
    random.Random(0).shuffle(lines)
    path.write_text("\n".join(lines) + "\n")


def test_same_inputs_and_seed_give_a_byte_identical_draft(tmp_path: Path, corpus: Path) -> None:
    log = tmp_path / "log.txt"
    _zipf_log(log)
    for out in ("a", "b"):
        code, output = _run(log, corpus, tmp_path / out, "--n", "30", "--seed", "3")
        assert code == 0, output
    for name in ("corpus.jsonl", "queries.jsonl", "manifest.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    _run(log, corpus, tmp_path / "c", "--n", "30", "--seed", "4")
    assert (tmp_path / "c" / "queries.jsonl").read_bytes() != (
        tmp_path / "a" / "queries.jsonl"
    ).read_bytes()
    step = read_manifest(tmp_path / "a")[0]
    assert step["command"] == "golden from-logs" and step["seed"] == 3
    assert [i["role"] for i in step["inputs"]] == ["log", "corpus"]
    assert step["counts"]["drawn"] == {
        s: sum(1 for q in read_draft(tmp_path / "a") if f"traffic:{s}" in q.tags)
        for s in ("head", "torso", "tail")
    }
    assert step["rules"]["traffic_cuts"] == [0.5, 0.8]
    queries = read_draft(tmp_path / "a")
    assert [q.id for q in queries] == [f"log-{i:04d}" for i in range(1, 31)]
    assert all(q.origin == "log" for q in queries)
    freqs = [q.frequency or 0 for q in queries]
    assert freqs == sorted(freqs, reverse=True)  # written in traffic order
    # the corpus copied as native lines
    assert [
        json.loads(x)["id"] for x in (tmp_path / "a" / "corpus.jsonl").read_text().splitlines()
    ] == [d for d, _ in DOCS]


def test_fewer_queries_than_n_draws_all_with_a_note(tmp_path: Path, corpus: Path) -> None:
    log = tmp_path / "log.txt"
    log.write_text("sso\nreset password\n")
    code, output = _run(log, corpus, tmp_path / "out", "--n", "300")
    assert code == 0, output
    assert "fewer than --n 300: all of them are drawn" in output
    assert len(read_draft(tmp_path / "out")) == 2


def test_shape_tags_with_rare_terms_against_the_corpus(tmp_path: Path, corpus: Path) -> None:
    log = tmp_path / "log.txt"
    log.write_text(
        "LMW-4031 error\nhow do I reset my password?\nsso\n"
        "what does single sign on cost for a team of twenty people in europe\n"
    )
    _run(log, corpus, tmp_path / "out")
    tags = {t: set(g) for t, _, g in _queries(tmp_path / "out")}
    assert {"shape:short", "shape:identifier", "shape:rare-terms"} <= tags["LMW-4031 error"]
    assert "shape:question" in tags["how do I reset my password?"]
    assert (
        "shape:long" in tags["what does single sign on cost for a team of twenty people in europe"]
    )


def test_the_draft_validates_and_says_it_is_a_draft(tmp_path: Path, corpus: Path) -> None:
    log = tmp_path / "log.txt"
    _zipf_log(log)
    _run(log, corpus, tmp_path / "out", "--n", "20")
    code, output = _invoke("validate", str(tmp_path / "out"))
    assert code == 0, output
    assert "a draft: 20 queries, none judged yet; next: evalret golden judge" in output
    assert "judges no document" not in output and "no query to evaluate" not in output
    code, output = _invoke("validate", str(tmp_path / "out"), "--json")
    assert json.loads(output)["draft"] == {"queries": 20, "judged": 0}


def test_validate_still_checks_a_draft(tmp_path: Path) -> None:
    draft = tmp_path / "draft"
    draft.mkdir()
    (draft / "corpus.jsonl").write_text(json.dumps({"id": "d1", "text": "a document"}) + "\n")
    lines = [
        {"id": "q1", "text": "reset the password of my account", "relevant": {}},
        {"id": "q2", "text": "reset the passwords of my account", "relevant": {}},
    ]
    (draft / "queries.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    code, output = _invoke("validate", str(draft))
    assert code == 0 and "near-duplicate-query" in output and "a draft: 2 queries" in output
    lines.append({"id": "q1", "text": "another", "relevant": {}})
    (draft / "queries.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    code, output = _invoke("validate", str(draft))
    assert code == 2 and "duplicate" in output


# --- personal data -----------------------------------------------------------------------------

PLANTED = {
    "email": ["alice.smith@example.com", "bob+tag@corp.example.org"],
    "phone": ["(415) 555-0123", "+44 20 7946 0958"],
    "card": ["4111 1111 1111 1111", "5500-0000-0000-0004"],
    "ip": ["192.168.10.77", "2001:db8::beef"],
    "custom": ["EMP-883311"],
}


def _pii_log(path: Path) -> None:
    lines = ["reset password", "sso pricing", "export csv", "LMW-4031 error"] * 3
    lines += [
        f"contact {PLANTED['email'][0]} about sso",
        f"refund to {PLANTED['card'][0]} please",
        f"call me on {PLANTED['phone'][0]}",
        f"server {PLANTED['ip'][0]} cannot reach licence",
        f"{PLANTED['email'][1]} {PLANTED['phone'][1]}",
        f"card {PLANTED['card'][1]} ip {PLANTED['ip'][1]}",
        f"employee {PLANTED['custom'][0]} password reset",
    ]
    path.write_text("\n".join(lines) + "\n")


def _forms(secret: str) -> set[str]:
    """Every form a secret may leak in: the harness's (plain, URL-encoded, base64), JSON- and
    HTML-escaped, and a number without its separators."""
    forms = set(echoed_forms(secret))
    forms |= {json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]}
    forms |= {
        html.escape(secret),
        urllib.parse.quote(secret),
        base64.b64encode(secret.encode()).decode(),
    }
    digits = "".join(c for c in secret if c.isdigit())
    if len(digits) >= 10 and "@" not in secret:
        forms.add(digits)
    return forms


def _leaks(texts: dict[str, str]) -> list[str]:
    return [
        f"{where}: {kind}"
        for where, text in texts.items()
        for kind, secrets in PLANTED.items()
        for secret in secrets
        for form in _forms(secret)
        if form in text
    ]


@pytest.mark.parametrize("mode", ["drop", "mask"])
def test_planted_personal_data_never_reaches_a_file_or_the_terminal(
    tmp_path: Path, corpus: Path, mode: str
) -> None:
    log = tmp_path / "log.txt"
    _pii_log(log)
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "COLUMNS": "200"}
    proc = subprocess.run(
        [sys.executable, "-m", "evalret", "golden", "from-logs", str(log), "--corpus", str(corpus),
         "--out", str(out), "--pii", mode, "--pii-pattern", r"EMP-\d{6}", "--progress"],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    texts = {"stdout": proc.stdout, "stderr": proc.stderr}
    for path in out.rglob("*"):
        if path.is_file():
            texts[str(path)] = path.read_bytes().decode("utf-8", "replace")
    assert len(texts) == 5  # stdout, stderr, corpus.jsonl, queries.jsonl, manifest.json
    assert _leaks(texts) == []
    # the planted data was found, by kind, and counted on the terminal and in the manifest
    step = read_manifest(out)[0]
    key = "pii_dropped" if mode == "drop" else "pii_masked"
    assert step["counts"][key] == {
        "queries": 7,
        "by_kind": {"email": 2, "ip": 2, "card": 2, "phone": 2, "custom": 1},
    }
    assert "email 2, ip 2, card 2, phone 2, custom 1" in proc.stdout
    texts_written = [q.text for q in read_draft(out)]
    if mode == "mask":
        assert "refund to [CARD] please" in texts_written
        assert "[EMAIL] [PHONE]" in texts_written
        assert "employee [PII] password reset" in texts_written
    else:
        assert not any("[" in t for t in texts_written)
    assert "--pii-pattern" not in json.dumps(step) and r"EMP-\d{6}" not in json.dumps(step)


def test_keep_warns_and_keeps(tmp_path: Path, corpus: Path) -> None:
    log = tmp_path / "log.txt"
    _pii_log(log)
    code, output = _run(log, corpus, tmp_path / "out", "--pii", "keep")
    assert code == 0, output
    assert "the draft holds personal data" in output
    assert any(PLANTED["email"][0] in t for t, _, _ in _queries(tmp_path / "out"))
    # the leak check sees what keep writes (so its silence under drop and mask means something)
    written = (tmp_path / "out" / "queries.jsonl").read_text()
    assert {"email", "phone", "card", "ip", "custom"} <= {
        w.split(": ")[1] for w in _leaks({"q": written})
    }


def test_a_bad_pattern_or_a_bad_line_never_echoes_what_it_holds(
    tmp_path: Path, corpus: Path
) -> None:
    log = tmp_path / "log.txt"
    _pii_log(log)
    secret = "(alice@example\\.com"
    code, output = _run(
        log, corpus, tmp_path / "out", "--pii-pattern", "x+", "--pii-pattern", secret
    )
    assert code == 2
    assert "--pii-pattern #2 is not a valid regular expression" in output
    assert "alice" not in output
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(
        json.dumps({"query": "fine"}).encode() + b"\n"
        + b'{"query": "' + PLANTED["email"][0].encode() + b"\n"
        + json.dumps({"query": PLANTED["card"][0], "count": -3}).encode() + b"\n"
        + b"\xff" + PLANTED["phone"][0].encode() + b"\n"
    )  # fmt: skip
    code, output = _run(bad, corpus, tmp_path / "out", "--count-field", "count")
    assert code == 2
    assert "bad.jsonl:2" in output and "bad.jsonl:3" in output and "bad.jsonl:4" in output
    assert _leaks({"output": output}) == []
