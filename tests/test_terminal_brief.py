"""The short terminal summary (report/terminal_brief.py) on the committed demo baseline, a real
report of the demo run: verdict first, one table on `all`, the failed and moved checks capped,
one line each for ANN and health, hostile text escaped; --verbose keeps every table."""

from __future__ import annotations

import io
import unicodedata
from pathlib import Path
from typing import Any

from rich.console import Console

from evalret.data.schema import GateCheck, GateSection, GateSignificance, RunReport
from evalret.report.terminal import render_run
from evalret.report.terminal_brief import (
    CHECKS_SHOWN,
    brief_run,
    files_lines,
    headline_metrics,
    moved,
)
from helpers import demo_report, gate_check

REPO = Path(__file__).resolve().parents[1]
DEMO = demo_report()


def text_of(renderable: Any) -> str:
    """What a 200-column console (a CI log) prints."""
    out = io.StringIO()
    Console(file=out, width=200, color_system=None).print(renderable)
    return out.getvalue()


check = gate_check


def with_gate(checks: list[GateCheck], **fields: Any) -> RunReport:
    assert DEMO.gate is not None
    verdict = "pass" if all(c.passed for c in checks) else "fail"
    gate = DEMO.gate.model_copy(update={"checks": checks, "verdict": verdict, **fields})
    return DEMO.model_copy(update={"gate": gate})


def test_demo_summary_is_short_and_leads_with_the_verdict() -> None:
    """The demo report: the verdict, one row per index on `all` with intervals, ANN and health
    in a line each, under 40 lines; the per-slice tables only with --verbose."""
    lines = text_of(brief_run(DEMO, [Path("reports/report.json")])).splitlines()
    assert lines[0] == "NO BASELINE: all 3 fixed checks pass (nothing compared)"
    assert len(lines) <= 40, len(lines)
    text = "\n".join(lines)
    # the first five metrics of the config's list, intervals below each mean
    assert headline_metrics(DEMO, "exact") == [
        "ndcg@10",
        "mrr@10",
        "recall@10",
        "recall@100",
        "precision@10",
    ]
    exact = DEMO.indexes["exact"].slices["all"].metrics["ndcg@10"]
    assert f"{exact.ci_low:.3f}\u2013{exact.ci_high:.3f}" in text  # an en dash between
    assert "map@100" not in text and "exact-match" not in text
    assert "ANN hnsw against exact on all: recall@10 1.0000, recall@100 0.9998" in text
    health = "embedding health: ok (documents and queries not collapsed; 2 health check(s) pass)"
    assert health in text
    assert "no check failed or moved beyond its threshold" in text
    assert "report files in reports: report.json" in text
    full = text_of(render_run(DEMO, [])).splitlines()
    assert len(full) > 150 and any(line.startswith("│ exact-match") for line in full)


def test_a_gated_metric_beyond_the_first_five_joins_the_headline() -> None:
    """A check on map@100 (the sixth metric) adds its column to the table on `all`."""
    report = with_gate([check(metric="map@100", name="exact/all/map@100 max_drop 0.01")])
    assert headline_metrics(report, "exact")[-1] == "map@100"
    assert "map@100" in text_of(brief_run(report, []))


def test_moved_means_at_least_the_allowed_change_or_significant() -> None:
    """A drop check moved when |delta| reaches what it allows (up or down) or its adjusted p
    is below alpha; a floor never moved."""
    assert not moved(check(delta=-0.005), alpha=0.05)
    assert moved(check(delta=-0.01), alpha=None)
    assert moved(check(delta=+0.02), alpha=None)
    assert moved(check(delta=-0.005, p_adjusted=0.01), alpha=0.05)
    assert not moved(check(delta=-0.005, p_adjusted=0.01), alpha=None)
    # drop <= 2% of a 0.5 baseline allows -0.01
    assert moved(check(kind="max_drop_pct", threshold=2, baseline=0.5, delta=-0.012), None)
    assert not moved(check(kind="max_drop_pct", threshold=2, baseline=0.5, delta=-0.008), None)
    assert not moved(check(kind="min", threshold=0.5, baseline=None, delta=None), 0.05)


def test_failed_then_moved_checks_are_capped() -> None:
    """Failed checks first, then those that moved; CHECKS_SHOWN rows and a count of the rest;
    a check that did not move is left out."""
    failed = [
        check(name=f"exact/s{i}/recall@10 max_drop 0.01", delta=-0.2, passed=False)
        for i in range(CHECKS_SHOWN + 2)
    ]
    gained = check(name="exact/up/recall@10 max_drop 0.01", delta=0.05)
    still = check(name="exact/still/recall@10 max_drop 0.01", delta=0.0)
    significance = GateSignificance(
        test="randomization", alpha=0.05, correction="holm", samples=1000, seed=0, power=0.8
    )
    report = with_gate([gained, *failed, still], significance=significance)
    lines = text_of(brief_run(report, [])).splitlines()
    assert lines[0] == f"GATE FAILED: {CHECKS_SHOWN + 2} of {CHECKS_SHOWN + 4} checks failed"
    text = "\n".join(lines)
    assert f"{CHECKS_SHOWN + 2} check(s) failed, 1 passing check(s) moved" in text
    shown = [line for line in lines if line.startswith("│ exact/")]
    assert len(shown) == CHECKS_SHOWN and all("FAIL" in line for line in shown)
    assert "... and 3 more (report.md, --verbose)" in text
    assert "exact/still" not in text


def test_hostile_names_are_escaped() -> None:
    """A slice name with an escape sequence, a bidi override and rich markup, in a failed
    check and in the baseline path: visible escapes, markup shown as written."""
    name = "exact/\x1b[2J[bold]x[/]\u202e/recall@10 max_drop 0.01"
    report = with_gate([check(name=name, passed=False, delta=-0.3)], baseline="b\x07.json")
    text = text_of(brief_run(report, [Path("out\x1b]0;t\x07/report.md")]))
    assert "exact/\\x1b[2J[bold]x[/]\\u202e/recall@10" in text
    assert "baseline b\\x07.json" in text and "out\\x1b]0;t\\x07: report.md" in text
    assert not [c for c in text if c != "\n" and unicodedata.category(c) in ("Cc", "Cf")]


def test_health_line_names_a_collapse() -> None:
    """A collapsed embedding reads as COLLAPSED with its reason, on one line."""
    assert DEMO.intrinsic is not None
    intrinsic = DEMO.intrinsic.model_copy(
        update={"collapse_reasons": {"documents": ["avg_cosine 0.97 >= 0.9"], "queries": []}}
    )
    text = text_of(brief_run(DEMO.model_copy(update={"intrinsic": intrinsic}), []))
    assert "embedding health: COLLAPSED: documents: avg_cosine 0.97 >= 0.9" in text


def test_no_gate_says_so_first() -> None:
    """Without a gate the first line says there is none."""
    report = DEMO.model_copy(update={"gate": None})
    assert text_of(brief_run(report, [])).startswith("no gate configured")


def test_files_are_grouped_by_directory() -> None:
    """One line per directory, the names in the order written."""
    lines = [t.plain for t in files_lines([Path("a/x.json"), Path("a/y.md"), Path("b/z.json")])]
    assert lines == ["report files in a: x.json, y.md", "report files in b: z.json"]


def test_a_gate_section_round_trips_the_changes_above_the_table() -> None:
    """Settings changed since the baseline are listed under the verdict, before the table."""
    assert DEMO.gate is not None
    changed = {"model.truncate_dim": {"baseline": None, "current": 32}}
    gate = GateSection.model_validate(
        {**DEMO.gate.model_dump(), "changed": changed, "baseline": "baselines/demo.json"}
    )
    lines = text_of(brief_run(DEMO.model_copy(update={"gate": gate}), [])).splitlines()
    assert lines[1:3] == [
        "baseline baselines/demo.json",
        "changed: model.truncate_dim: None -> 32",
    ]
