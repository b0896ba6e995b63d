"""Run files read while the command's modules import (data.early_runs): what `evalret score` and
`evalret trec_eval` read early is what the reader would have read, and whatever the thread
cannot read (a FIFO, a gzipped, changed or too large file, an error) is read as without it."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from evalret.data import early_runs, runcolumns
from evalret.data.runfile import read_run, read_run_lines
from helpers import invoke

QRELS = "q1 0 d1 1\nq1 0 d3 2\nq2 0 d2 1\nq2 0 d4 0\n"
RUN = "".join(
    f"{q} Q0 {d} {r} {s} t\n"
    for q, ranked in {"q1": ["d3", "d2", "d1"], "q2": ["d4", "d2", "d1"]}.items()
    for r, (d, s) in enumerate(zip(ranked, ["3.5", "2", "2"], strict=True), 1)
)


@pytest.fixture
def taken(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """What every ``take`` gave, in order (None: the file was read as without the thread)."""
    got: list[Any] = []
    original = early_runs.take

    def take(path: Path) -> Any:
        got.append(original(path))
        return got[-1]

    monkeypatch.setattr(early_runs, "take", take)
    return got


def _ranked(path: Path) -> tuple[Any, ...]:
    """What read_run makes of the file: its rankings, sha256 and line count."""
    run = read_run(path, "trec", 1000)
    return run.rankings, run.sha256, run.n_lines


def _score(tmp: Path, run: Path, out: str) -> dict[str, Any]:
    qrels = tmp / "qrels.txt"
    qrels.write_text(QRELS)
    code, output = invoke("score", str(qrels), f"sys={run}", "--out", str(tmp / out))
    assert code == 0, output
    return json.loads((tmp / out / "report.json").read_text())


def test_score_reads_its_runs_early_and_scores_them_as_without(
    tmp_path: Path, taken: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`evalret score qrels NAME=PATH`: the run is read by the thread and taken by the reader;
    the report (metrics per query, the run's sha256) is the one made without the thread."""
    run = tmp_path / "run.trec"
    run.write_bytes(b"\xef\xbb\xbf" + RUN.replace("\n", "\r\n").encode())  # a BOM, CRLF lines
    early = _score(tmp_path, run, "early")
    assert len(taken) == 1 and taken[0] is not None
    monkeypatch.setattr(early_runs, "start", lambda runs: None)
    taken.clear()
    plain = _score(tmp_path, run, "plain")
    assert taken == [None]
    assert early["indexes"] == plain["indexes"]  # every figure, and the run's sha256
    assert (
        early["indexes"]["sys"]["params"]["sha256"] == hashlib.sha256(run.read_bytes()).hexdigest()
    )


def test_trec_eval_reads_its_run_early(
    tmp_path: Path, taken: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`evalret trec_eval qrels run` and `score --trec-eval-output` take the early read too,
    and print the text they print without it."""
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.trec"
    qrels.write_text(QRELS)
    run.write_text(RUN)
    commands = [
        ("trec_eval", "-q", "-m", "all_trec", str(qrels), str(run)),
        ("score", str(qrels), str(run), "--trec-eval-output"),
    ]
    early = [invoke(*command) for command in commands]
    assert len(taken) == 2 and None not in taken
    monkeypatch.setattr(early_runs, "start", lambda runs: None)
    assert [invoke(*command) for command in commands] == early
    assert [code for code, _ in early] == [0, 0]


@pytest.mark.parametrize(
    "data",
    [
        RUN.encode(),
        RUN.encode()[:-1],  # the last line without its newline
        RUN.replace(" ", "\t", 1).encode(),  # a tab: the line reader reads it
        RUN.replace("3.5", "x", 1).encode(),  # pyarrow refuses the score: the line reader
        b"\xef\xbb\xbf" + RUN.encode(),
    ],
)
def test_an_early_read_reads_as_the_reader_reads(tmp_path: Path, data: bytes) -> None:
    """Plain, unterminated, refused by the columnar checks or by pyarrow: the same rankings,
    digest and line count as the line reader's (the refused ones are read by it)."""
    path = tmp_path / "r.trec"
    path.write_bytes(data)
    early_runs.start([str(path)])
    want = read_run_lines(path, "trec", 1000)
    assert _ranked(path) == (want.rankings, want.sha256, want.n_lines)


def test_a_file_changed_after_its_early_read_is_read_again(tmp_path: Path) -> None:
    """The file rewritten (same size, another time) after the thread read it: the reader reads
    the new content, not the early one."""
    path = tmp_path / "r.trec"
    path.write_text(RUN)
    early_runs.start([str(path)])
    early_runs.take(tmp_path / "elsewhere")  # (waits for the thread)
    path.write_text(RUN.replace("3.5", "1.5"))
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    run = read_run(path, "trec", 1000)
    assert run.rankings["q1"][0] == ("d2", 2.0)


def test_a_fifo_is_not_read_early(tmp_path: Path) -> None:
    """A FIFO is passed over when the thread starts, and, were a file replaced by one since,
    opened without waiting for a writer and not read."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    early_runs.start([str(fifo)])
    assert early_runs._threads == []
    early_runs._read_all([str(fifo)])  # the thread's own work, at once: no writer is waited for
    assert early_runs._read == {}


def test_gzipped_large_and_failing_reads_are_left_to_the_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A gzipped file, files past EARLY_BYTES together, and a read that fails in the thread:
    nothing is taken, and each file reads as without the thread."""
    packed, big, failing = tmp_path / "r.trec.gz", tmp_path / "big.trec", tmp_path / "f.trec"
    packed.write_bytes(gzip.compress(RUN.encode(), mtime=0))
    big.write_text("".join(RUN.replace("q", f"q{n}_") for n in range(3)))
    failing.write_text(RUN)
    monkeypatch.setattr(early_runs, "EARLY_BYTES", len(RUN) * 2)
    early_runs.start([str(packed), str(big)])
    assert early_runs.take(packed) is None and early_runs.take(big) is None

    def broken(file: Any, size: int) -> Any:
        raise MemoryError

    monkeypatch.setattr(runcolumns, "read_early", broken)
    early_runs.start([str(failing)])
    assert early_runs.take(failing) is None
    for path in (packed, big, failing):
        want = read_run_lines(path, "trec", 1000)
        assert _ranked(path) == (want.rankings, want.sha256, want.n_lines)


def test_a_new_start_drops_what_no_reader_took(tmp_path: Path) -> None:
    """What one command read and did not take (it failed before reading) is not kept by the
    next: each start forgets the one before."""
    first, second = tmp_path / "a.trec", tmp_path / "b.trec"
    first.write_text(RUN)
    second.write_text(RUN)
    early_runs.start([str(first)])
    early_runs.start([f"b={second}"])
    assert early_runs.take(first) is None
    assert early_runs.take(second) is not None
