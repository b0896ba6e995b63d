"""The invariants harness: every command of the table (inv_table) in every hostile situation that
applies to it (inv_situations), each case checked for the invariants of inv_case: the exit code
means what the README says, exit 0/1 only with a fresh complete report, inputs byte-identical,
no secret written or printed, no traceback. And the table itself covers every command of the
Typer app, so that a new command without a row fails here."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from inv_case import (
    check_invariants,
    input_snapshot,
    new_case,
    run_in_process,
    run_process,
    tail,
    tree_snapshot,
)
from inv_situations import Situation, all_cases
from inv_table import ROWS, Row
from inv_world import build_world

from helpers import command_tree, is_group

CASES = all_cases()


@pytest.fixture(scope="session")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_world(tmp_path_factory.mktemp("invariants") / "world")


@pytest.mark.parametrize(("row", "situation"), CASES, ids=[f"{row.id}-{s.id}" for row, s in CASES])
def test_invariant(
    row: Row,
    situation: Situation,
    world: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    case = new_case(row, world, tmp_path)
    try:
        situation.prepare(case)
        inputs_before = input_snapshot(case)
        tree_before = tree_snapshot(case.root)
        marker = tmp_path / "started"
        marker.touch()
        time.sleep(0.01)  # a report written by the call is strictly newer than the marker
        started_ns = marker.stat().st_mtime_ns
        outcome = run_process(case) if situation.process else run_in_process(case, monkeypatch)
        expect = situation.expect or frozenset({row.exit})
        problems = check_invariants(case, outcome, expect, inputs_before, tree_before, started_ns)
        for check in situation.checks:
            try:
                check(case, outcome)
            except AssertionError as e:
                problems.append(str(e))
    finally:
        case.close()
    assert not problems, "\n".join(problems) + "\n" + tail(outcome)


def test_the_table_has_a_row_for_every_command() -> None:
    """Every command and sub-command of `evalret --help` has its row (a new command joins the
    harness by adding one), and no row names a command that is gone."""
    commands = {name.removeprefix("evalret ") for name, c in command_tree() if not is_group(c)}
    rows = {row.name for row in ROWS}
    assert commands - rows == set(), "commands without a row in tests/invariants/inv_table.py"
    assert rows - commands == set(), "rows of commands the app no longer has"
    assert len(commands) >= 21


def test_every_row_meets_the_catalogue() -> None:
    """Each row is crossed with the situations its declaration makes applicable: the outputs
    with every input, the plug-ins it calls, its config, its model."""
    by_row: dict[str, list[str]] = {}
    for row, situation in CASES:
        by_row.setdefault(row.name, []).append(situation.id)
    assert set(by_row) == {row.name for row in ROWS}
    assert "out-holds-baseline" in by_row["run"]
    assert "out-is-folder-of-run-file" in by_row["score"]
    assert "out-inside-into" in by_row["judgments merge"]
    assert "exit-0-in-retriever" in by_row["hook"]
    assert "duplicate-gate-key" in by_row["run"]
    assert "http-redirect-elsewhere" in by_row["embed"]
    for row in ("run", "judge"):
        assert {"judge-fails-every-request", "judge-answers-unreadable"} <= set(by_row[row])
    assert "judged-report-unjudged-report" in by_row["compare"]
    for row in ("run", "hook"):  # every HTTP client of a row meets a body bomb
        assert {"http-gzip-bomb", "rerank-http-huge", "rerank-http-gzip-bomb"} <= set(by_row[row])
    assert {"judge-http-huge", "judge-http-gzip-bomb"} <= set(by_row["run"])
    assert {"judge-http-huge", "judge-http-gzip-bomb"} <= set(by_row["judge"])
    assert "faiss-nprobe-negative" in by_row["history show"]
    assert "faiss-untrainable" in by_row["sweep"]
    assert "huge-vectors-from-encoder" in by_row["hook"]
    assert "stdout-closed" in by_row["config schema"]
    assert "floor-on-no-gated-index" in by_row["history show"]
    assert "set-of-disabled-index" in by_row["judge"]
    assert "custom-slice-matches-no-query" in by_row["validate"]
