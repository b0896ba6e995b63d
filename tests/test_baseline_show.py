"""`evalret baseline show` (#39): a summary of what produced the baseline (evalret, fingerprint,
model), when and at which commit it was saved, its golden set and the headline metrics of each
index; every slice and setting only with --verbose; never a verdict. `run --save-baseline` records
when and at which commit (report.json's ``saved``), a run's report.json does not.

The baseline is the demo scored from a run file (no model), as in test_unjudged_gate.py."""

from __future__ import annotations

import json
import re

import pytest

from evalret.data.baseline import load_baseline
from helpers import invoke
from test_unjudged_gate import REPO, Demo, demo, flat

__all__ = ["demo"]  # the fixture

NO_VERDICT = ("GATE PASSED", "GATE FAILED", "GATE INCONCLUSIVE", "NO BASELINE:")


def show(*args: str) -> str:
    code, output = invoke("baseline", "show", *args)
    assert code == 0, output
    return flat(output)


def test_summary_says_what_produced_it_and_when(demo: Demo) -> None:
    """The summary: saved when (UTC) and at which commit, by which evalret, the fingerprint, the
    golden set's counts and slices, the headline table of slice all (no other slice), the hint
    to --verbose; no verdict."""
    report = json.loads(demo.baseline.read_text())
    saved = report["saved"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", saved["at"])
    text = show(str(demo.baseline))
    commit = f"commit {saved['commit'][:12]}" if saved["commit"] else "no git commit recorded"
    by = f"by evalret {report['evalret_version']} (report schema 2)"
    assert f"saved: {saved['at']} {by}, {commit}" in text
    assert f"fingerprint: {report['fingerprint']['digest']}" in text
    slices = list(report["slices"])
    assert f"338 documents, 244 queries evaluated, 703 judgments; {len(slices)} slices" in text
    assert "indexes: model (run)" in text
    assert "slice all, 244 queries: mean, 95% CI below" in text
    mean = report["indexes"]["model"]["slices"]["all"]["metrics"]["ndcg@10"]["value"]
    assert f"model {mean:.3f}" in text
    assert "torso" in slices and " torso " not in text  # the per-slice table is for --verbose
    assert "--verbose: every setting in full, and every slice and metric of each index" in text
    assert not any(word in text for word in NO_VERDICT)
    assert text.endswith("A baseline is no verdict: `evalret run` gates later runs against it.")


def test_verbose_shows_every_slice_and_setting(demo: Demo) -> None:
    """-v: the full settings (metrics' settings, every index's) and one table per index with
    every slice; still no verdict."""
    report = load_baseline(demo.baseline)
    text = show("-v", str(demo.baseline))
    assert "metrics: names=" in text and "relevance_level=1" in text
    for name, s in report.indexes["model"].slices.items():
        assert f" {name} {s.n_queries}" in text, name
    assert "--verbose:" not in text
    assert not any(word in text for word in NO_VERDICT)


def test_save_baseline_records_when_and_the_commit(
    demo: Demo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """$GITHUB_SHA is the commit recorded (a workflow's); the run's own report.json records no
    ``saved``; a baseline of an older evalret says that neither was recorded."""
    monkeypatch.setenv("GITHUB_SHA", "0123456789abcdef0123")
    saved_to = demo.root / "again.json"
    code, output = invoke(
        "run", "-c", str(demo.config), "--save-baseline", str(saved_to), "--out",
        str(demo.root / "out-again"), "--no-progress",
    )  # fmt: skip
    assert code == 0, output
    assert json.loads(saved_to.read_text())["saved"]["commit"] == "0123456789abcdef0123"
    assert "saved" not in json.loads((demo.root / "out-again" / "report.json").read_text())
    assert "commit 0123456789ab" in show(str(saved_to))
    older = show(str(REPO / "baselines" / "demo.json"))
    assert "when and at which commit not recorded (saved by an older evalret)" in older
    assert "model: all-MiniLM-L6-v2 (packaged), 384 dimensions" in older


def test_a_baseline_without_a_model_says_why(demo: Demo) -> None:
    """A run-file baseline has no model of ours: the summary gives the fingerprint's reason."""
    assert "model: not embedded: no index needs vectors" in show(str(demo.baseline))
