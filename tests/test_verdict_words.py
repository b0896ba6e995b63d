"""Words match verdicts (#39): no output of a run (terminal, report.md, comment.md, junit.xml,
report.html) holds a sentence that contradicts its exit code, for runs that exit 0, exit 1 and
have no baseline; every verdict word comes from ``evalret.report.verdict``.

The runs are the demo scored from run files (no model), as in test_unjudged_gate.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalret.data.schema import GateSection
from evalret.errors import ExitCode
from evalret.report.gate_rows import gate_summary
from evalret.report.verdict import words_for
from helpers import invoke
from test_unjudged_gate import REPO, Demo, demo, flat, mostly_unjudged, write_run

__all__ = ["demo"]  # the fixture

FILES = ("report.md", "comment.md", "junit.xml", "report.html")

# sentences that only a run exiting 0 may hold, and only one exiting 1
SAYS_EXIT_0 = ("exit 0", "GATE PASSED", "✅ pass (", 'data-verdict="pass"', "do not block the gate")
SAYS_EXIT_1 = ("exit 1", "GATE FAILED", "❌ fail (", 'data-verdict="fail"', "the push is blocked")
SAYS_COMPARED = ("GATE PASSED", "✅ pass", "All ", "against the baseline")


def outputs(terminal: str, out: Path) -> dict[str, str]:
    """Every text a run gave: the terminal and each report file (Markdown's escapes dropped)."""
    texts = {"terminal": flat(terminal)}
    texts |= {
        name: (out / name).read_text().replace("\\", "") for name in FILES if (out / name).exists()
    }
    return texts


def contradictions(texts: dict[str, str], code: int) -> list[str]:
    """Each (file, sentence) that says another exit code than ``code``."""
    wrong = SAYS_EXIT_1 if code == 0 else SAYS_EXIT_0
    return [f"{name}: {w!r}" for name, text in texts.items() for w in wrong if w in text]


def floor_fails(demo: Demo) -> str:
    """A floor no ranking of the demo reaches: a fixed check that fails without a baseline."""
    del demo
    return "gate.thresholds.map.min=0.999"


def no_baseline_run(demo: Demo, name: str, *settings: str) -> tuple[int, str, Path]:
    """`evalret run` of the baseline's own ranking without a baseline: only fixed checks."""
    run = write_run(demo.root / f"{name}.trec", {q: demo.deep(q) for q in demo.top})
    out = demo.root / f"out-{name}"
    sets = [x for s in settings for x in ("--set", s)]
    code, output = invoke(
        "run", "-c", str(demo.config), "--out", str(out), "--no-progress",
        "--set", f"indexes.model.path={run}", "--set", "gate.thresholds.recall@10.min=0.1", *sets,
    )  # fmt: skip
    return code, output, out


def test_runs_exiting_0_and_1_never_say_the_other_code(demo: Demo) -> None:
    """Pass (exit 0), regression (exit 1), inconclusive under policy warn (exit 0), and the
    case #39 found: inconclusive under policy warn beside a failed floor (exit 1), whose
    policy sentence said "(exit 0)"."""
    same = {q: demo.deep(q) for q in demo.top}
    reversed_ = {q: ids[::-1] for q, ids in demo.top.items()}
    runs = {
        "pass": (demo.gate("same", same), 0),
        "fail": (demo.gate("reversed", reversed_), 1),
        "inconclusive": (demo.gate("warn", mostly_unjudged(demo)), 0),
        "mixed": (demo.gate("mixed", mostly_unjudged(demo), floor_fails(demo)), 1),
    }
    for name, ((code, output, out), expected) in runs.items():
        assert code == expected, (name, output)
        report = json.loads((out / "report.json").read_text())
        texts = outputs(output, out)
        assert set(texts) == {"terminal", *FILES}, name
        assert contradictions(texts, code) == [], name
        if report["gate"]["verdict"] == "fail":  # every view says it failed
            assert "GATE FAILED" in texts["terminal"] and "❌ fail (" in texts["report.md"]
            assert texts["comment.md"].splitlines()[1].startswith("## evalret gate: ❌ fail")
            assert 'data-verdict="fail"' in texts["report.html"]
        lost = [n for n in ("terminal", "report.md", "comment.md") if "lost: " in texts[n]]
        assert lost == (["terminal", "report.md", "comment.md"] if name == "fail" else []), name
    mixed = outputs(runs["mixed"][0][1], runs["mixed"][0][2])
    said = "they alone would not fail the gate, but other checks failed it (exit 1)"
    assert said in mixed["report.md"] and said in mixed["report.html"]
    worst = min(
        (
            c
            for c in json.loads((runs["fail"][0][2] / "report.json").read_text())["gate"]["checks"]
            if not c["passed"]
        ),
        key=lambda c: c["delta"],
    )
    line = (
        f"lost: model/{worst['slice']}/{worst['metric']} fell most, {worst['baseline']:.4f} -> "
        f"{worst['current']:.4f} ({worst['delta']:+.4f}); the 10 failed drops range from"
    )
    assert line in outputs(runs["fail"][0][1], runs["fail"][0][2])["terminal"]
    warned = outputs(runs["inconclusive"][0][1], runs["inconclusive"][0][2])
    assert "Policy warn: they do not block the gate (exit 0)." in warned["report.md"]


def test_a_run_without_a_baseline_is_badged_no_baseline(demo: Demo) -> None:
    """No baseline: its fixed checks pass as "no baseline: N fixed checks" in every view, never
    as GATE PASSED (nothing was compared); a failing floor fails it (exit 1) and says so."""
    code, output, out = no_baseline_run(demo, "fixed")
    assert code == 0, output
    report = json.loads((out / "report.json").read_text())
    gate = report["gate"]
    assert gate["baseline"] is None and gate["verdict"] == "pass"
    n = len(gate["checks"])
    texts = outputs(output, out)
    assert contradictions(texts, 0) == []
    for name, text in texts.items():
        for word in SAYS_COMPARED:
            assert word not in text.split("<details")[0] or name == "junit.xml", (name, word)
    assert f"NO BASELINE: all {n} fixed checks pass (nothing compared)" in texts["terminal"]
    assert texts["report.md"].startswith(f"## evalret gate: no baseline: {n} fixed checks")
    assert f"## evalret gate: no baseline: {n} fixed checks" in texts["comment.md"]
    html = texts["report.html"]
    assert f"no baseline: {n} fixed checks</span>" in html and 'data-verdict="neutral"' in html

    code, output, out = no_baseline_run(demo, "floor", floor_fails(demo))
    assert code == 1, output
    texts = outputs(output, out)
    assert contradictions(texts, 1) == []
    assert "(no baseline: fixed checks only)" in texts["terminal"]


def test_baseline_show_says_what_a_baseline_is(demo: Demo) -> None:
    """`evalret baseline show` is no verdict: no GATE PASSED, but what the saving run's gate
    found (the committed demo baseline: 3 fixed checks, no baseline of its own), or that it had
    none (the fixture's baseline)."""
    shown = {}
    for path in (REPO / "baselines" / "demo.json", demo.baseline):
        code, output = invoke("baseline", "show", str(path))
        assert code == 0, output
        shown[path] = text = flat(output)
        assert "GATE PASSED" not in text and "GATE FAILED" not in text
        assert text.endswith("A baseline is no verdict: `evalret run` gates later runs against it.")
    assert (
        "the run that saved this baseline: its 3 fixed checks passed (it had no baseline to "
        "compare with)" in shown[REPO / "baselines" / "demo.json"]
    )
    assert "the run that saved this baseline had no gate check." in shown[demo.baseline]


def test_words_refuse_an_exit_code_that_contradicts_the_checks() -> None:
    """The one source refuses to word a passed gate for exit 1."""
    gate = GateSection.model_validate(
        {
            "verdict": "pass",
            "baseline": "b.json",
            "baseline_fingerprint": None,
            "changed": {},
            "significance": None,
            "checks": [],
            "notes": [],
        }
    )
    summary = gate_summary(gate)
    assert words_for(summary, ExitCode.OK).exit_code == ExitCode.OK
    with pytest.raises(ValueError, match="cannot exit"):
        words_for(summary, ExitCode.REGRESSION)
