"""A golden set from nothing, end to end on the demo corpus (issue #37's "done when"): a query log
sampled (`golden from-logs`), synthetic queries written (`golden synth`), the pool judged
(`golden judge`, killed halfway and resumed), then `validate`, `run --save-baseline`, and the
resulting set gating a `--dimension 32` change (exit 1). The chat model is the loopback server of
tests/chat_server.py: it writes queries from passages and grades pairs by the demo's judgments
(and a query it wrote as relevant to its source passage). Each command runs as a real process
where a kill is involved, in this process otherwise."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from chat_server import ChatServer
from conftest import DEMO
from evalret.data.config import GoldenSetConfig
from evalret.data.goldenset import load_golden_set
from evalret.data.goldenset.draft import read_draft, read_manifest
from helpers import invoke

SRC = Path(__file__).resolve().parents[1] / "src"
N_LOG, N_SYNTH = 80, 30
IN_FLIGHT = 4  # judge.concurrency's default: the answers a kill can lose


def _truth() -> dict[tuple[str, str], int]:
    golden = load_golden_set(GoldenSetConfig(path=DEMO))
    texts = dict(zip(golden.query_ids, golden.query_texts, strict=True))
    return {
        (texts[q], golden.doc_texts[golden.doc_index[d]]): g
        for q in golden.query_ids
        for d, g in golden.qrels[q].items()
    }


def _log(path: Path) -> Path:
    """The demo's query texts as a text log, the first ones typed most often."""
    texts = [json.loads(line)["text"] for line in (DEMO / "queries.jsonl").open(encoding="utf-8")]
    path.write_text(
        "".join(t + "\n" for i, t in enumerate(texts) for _ in range(1 + 40 // (i + 1))),
        encoding="utf-8",
    )
    return path


def _config(tmp: Path, server: ChatServer) -> Path:
    judge = {"name": server.state.name, "base_url": server.base_url, "api_key_env": None}
    path = tmp / "evalret.yaml"
    path.write_text(
        f"golden_set: {{path: {json.dumps(str(DEMO))}}}\n"
        "indexes: {hnsw: {threads: 1}}\n"
        f"output: {{dir: {json.dumps(str(tmp / 'reports'))}}}\n"
        f"judge: {json.dumps(judge)}\n",
        encoding="utf-8",
    )
    return path


def _killed_golden_judge(cfg: Path, draft: Path, out: Path, server: ChatServer) -> None:
    """`golden judge` as a process, SIGKILLed once 40 grades were answered."""
    cmd = [
        sys.executable, "-m", "evalret", "golden", "judge", str(draft), "-c", str(cfg),
        "--out", str(out), "--no-progress",
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    server.state.judge_delay = 0.05
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 300
        while len(server.state.answered) < 40 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(server.state.answered) >= 40, "the judge never reached the server"
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    server.state.judge_delay = 0.0
    assert not out.exists()  # a killed run writes no golden set


@pytest.mark.model
def test_a_golden_set_from_nothing_gates_a_cut_dimension(tmp_path: Path) -> None:
    with ChatServer(_truth(), name="judge-and-writer") as server:
        cfg = _config(tmp_path, server)
        logged, synthetic, golden = tmp_path / "logged", tmp_path / "synthetic", tmp_path / "golden"
        log = _log(tmp_path / "queries.log")
        code, said = invoke(
            "golden", "from-logs", str(log), "--corpus", str(DEMO), "--n", str(N_LOG),
            "--out", str(logged), "--no-progress",
        )  # fmt: skip
        assert code == 0, said
        code, said = invoke(
            "golden", "synth", "-c", str(cfg), "--corpus", str(logged), "--n", str(N_SYNTH),
            "--log", str(log), "--out", str(synthetic), "--no-progress",
        )  # fmt: skip
        assert code == 0, said
        drafted = read_draft(synthetic)
        origins = Counter(q.origin for q in drafted)
        assert origins["log"] == N_LOG and 0 < origins["synthetic"] <= N_SYNTH
        generated_before = server.state.generations

        _killed_golden_judge(cfg, synthetic, golden, server)
        code, said = invoke(
            "golden", "judge", str(synthetic), "-c", str(cfg), "--out", str(golden),
            "--no-progress",
        )  # fmt: skip
        assert code == 0, said
        assert server.state.generations == generated_before  # nothing written twice
        # the resumed run asked only what the killed one had not kept: a pair answered twice
        # is one whose answer was in flight at the kill (the server may record it after the
        # kill), so at most one per request in flight, and none thrice
        to_judge = int(re.search(r"(\d+) to judge", said)[1])  # type: ignore[index]
        sent, cached = map(int, re.search(r"asked (\d+), cached (\d+)", said).groups())  # type: ignore[union-attr]
        assert cached >= 40 - IN_FLIGHT and sent + cached == to_judge, said
        twice = [p for p, g in server.state.answered.items() if len(g) > 1]
        assert len(twice) <= IN_FLIGHT, twice
        assert all(len(g) == 2 for p, g in server.state.answered.items() if p in twice)

    steps = [s["command"] for s in read_manifest(golden)]
    assert steps == ["golden from-logs", "golden synth", "golden judge"]
    graded = read_draft(golden)
    assert [q.id for q in graded] == [q.id for q in drafted]
    assert sum(len(q.relevant) > 1 for q in graded) > len(graded) // 2
    code, said = invoke("validate", str(golden))
    assert code == 0, said
    baseline = tmp_path / "baseline.json"
    run = ["run", "-c", str(cfg), "--set", f"golden_set.path={golden}", "--no-progress"]
    code, said = invoke(*run, "--out", str(tmp_path / "r0"), "--save-baseline", str(baseline))
    assert code == 0, said
    report = json.loads((tmp_path / "r0" / "report.json").read_text(encoding="utf-8"))
    slices = set(report["indexes"]["exact"]["slices"])
    assert {"origin:log", "origin:synthetic", "traffic:head", "traffic:tail"} <= slices
    code, said = invoke(
        *run, "--out", str(tmp_path / "r1"), "--baseline", str(baseline), "--dimension", "32"
    )
    assert code == 1, said
