"""Thresholds finer than a slice can detect (#39): flagged once, from the config and the baseline
(``pipeline.gate.threshold_notes``), in the terminal, report.md, report.html and comment.md, and
machine-readably in report.json's ``gate.threshold_notes``; never per check, and never changing
the verdict or the exit code (a broken ranking still fails, an unchanged one still passes).

The runs are the demo scored from run files (no model), as in test_unjudged_gate.py."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np

from evalret.core.stats import minimum_detectable_effect
from evalret.data.baseline import load_baseline
from test_unjudged_gate import Demo, demo, flat

__all__ = ["demo"]  # the fixture

HEADING = "finer than some slices can detect"
CAVEAT = "slice too small for this threshold"  # the per-check note it replaces


def texts(output: str, out: Path) -> dict[str, str]:
    """The terminal and every report file that shows the verdict (Markdown escapes dropped)."""
    files = ("report.md", "report.html", "comment.md", "junit.xml")
    return {"terminal": flat(output)} | {
        name: (out / name).read_text().replace("\\", "") for name in files
    }


def visible(comment: str) -> str:
    """comment.md without the folded copy of report.md (its ``<details>`` block)."""
    return comment.split("<details><summary>Full report (report.md)</summary>")[0]


def test_a_broken_ranking_fails_and_the_flag_is_shown_once(demo: Demo) -> None:
    """A reversed top 10 (a broken system) exits 1 with the drop thresholds 0.01 flagged once
    in each view, naming the key, the slices and their MDE; no check carries the old caveat."""
    reversed_ = {q: ids[::-1] + demo.deep(q)[10:] for q, ids in demo.top.items()}
    code, output, out = demo.gate("reversed", reversed_)
    assert code == 1, output
    report = json.loads((out / "report.json").read_text())
    gate = report["gate"]
    assert gate["verdict"] == "fail"
    notes = {n["key"]: n for n in gate["threshold_notes"]}
    assert set(notes) == {"gate.thresholds.recall@10.max_drop", "gate.thresholds.map.max_drop"}
    note = notes["gate.thresholds.recall@10.max_drop"]
    assert (note["metric"], note["kind"], note["threshold"], note["default"]) == (
        "recall@10",
        "max_drop",
        0.01,
        False,
    )
    # the MDE of slice all from the baseline's per-query recall@10: one-sided, alpha 0.05,
    # power 0.8, (1.645 + 0.842) * sd / sqrt(n)
    baseline = load_baseline(demo.baseline)
    values = np.asarray(baseline.indexes["model"].per_query["recall@10"])
    sd = float(values.std(ddof=1))
    all_ = next(s for s in note["slices"] if s["slice"] == "all")
    assert all_["n_queries"] == len(values) == 244
    assert all_["mde"] == round(minimum_detectable_effect(sd, 244, 0.05, 0.8), 4)
    assert 0.01 < all_["mde"] < 0.1 and all_["allowed_drop"] == 0.01
    assert all(c["message"].find(CAVEAT) < 0 for c in gate["checks"])
    shown = texts(output, out)
    shown["comment.md"] = visible(shown["comment.md"])
    for name in ("terminal", "report.md", "report.html", "comment.md"):
        assert shown[name].count(HEADING) == 1, name
        assert "it changes no verdict" in shown[name], name
        assert "gate.thresholds.recall@10.max_drop 0.01 is below the MDE of" in shown[name], name
        assert f"model/all {all_['mde']:.3f} (244 queries)" in shown[name], name
    for name, text in shown.items():
        assert CAVEAT not in text, name
    assert "GATE FAILED" in shown["terminal"]


def test_the_flag_never_fails_an_unchanged_ranking(demo: Demo) -> None:
    """The baseline's own ranking passes (exit 0) with the same flag shown: a floor that may
    not apply is a note, never a check."""
    code, output, out = demo.gate("same", {q: demo.deep(q) for q in demo.top})
    assert code == 0, output
    gate = json.loads((out / "report.json").read_text())["gate"]
    assert gate["verdict"] == "pass" and gate["threshold_notes"]
    assert "GATE PASSED" in flat(output) and HEADING in flat(output)


def test_thresholds_the_slices_can_detect_are_not_flagged(demo: Demo) -> None:
    """Thresholds above every slice's MDE: no flag, and no threshold_notes key in report.json;
    an override is named by its own key, and a relative drop by the allowed absolute drop."""
    same = {q: demo.deep(q) for q in demo.top}
    coarse = ("gate.thresholds.recall@10.max_drop=0.5", "gate.thresholds.map.max_drop=0.5")
    code, output, out = demo.gate("coarse", same, *coarse)
    assert code == 0, output
    assert "threshold_notes" not in json.loads((out / "report.json").read_text())["gate"]
    assert HEADING not in flat(output)
    config = demo.root / "override.yaml"
    config.write_text(
        demo.config.read_text()
        + "  overrides:\n    - {metric: recall@10, slice: all, max_drop: null, max_drop_pct: 1}\n"
    )
    code, output, out = replace(demo, config=config).gate("override", same, *coarse)
    assert code == 0, output
    (note,) = json.loads((out / "report.json").read_text())["gate"]["threshold_notes"]
    assert note["key"] == "gate.overrides[0].max_drop_pct" and note["kind"] == "max_drop_pct"
    ((s),) = note["slices"]
    assert s["slice"] == "all" and s["allowed_drop"] < s["mde"]
    assert "gate.overrides[0].max_drop_pct 1% is below the MDE of 1 slice" in flat(output)
